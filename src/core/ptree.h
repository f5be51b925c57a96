/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The processes a run follows: a command and every process it starts, -p PIDs (with
 * --tree their descendants, present and future), processes named --comm or living in
 * --cgroup. bpf/procs.bpf.c keeps the `traced` map every BPF object filters on (a child is
 * in it before it runs) and reports forks, execs and exits on the run's shared ring buffer;
 * this side seeds the map and keeps the tree (parent, root, image) for the reports.
 */
#ifndef GP_PTREE_H
#define GP_PTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"

struct ptree;
struct attach_set;
struct objshare;

struct ptree_opts {
	bool filter;       /* follow only the seeded processes (else every process, execs reported) */
	bool follow_forks; /* children of followed processes are followed */
	const char *comm;  /* --comm: processes with this name (at start, and at each exec) */
	const char *cgroup; /* --cgroup: processes in this cgroup v2 path (subtree) */
	/* the ring buffer its records go to, its reader, the `traced` map's size (the
	 * traced_fd, ended_fd and hits_fd of it are not used: the tree makes `traced`) */
	const struct objshare *share;
};

struct pt_proc {
	uint32_t pid, ppid, root, img;
	char comm[GP_COMM_LEN];
	bool exited;
};

/* o and o->share are copied. */
int ptree__open(struct ptree **out, const struct ptree_opts *o, char *err, size_t len);
/* The shared `traced` map, for the other objects to reuse before they load. */
int ptree__traced_fd(const struct ptree *pt);
/* Follows pid (its own root); with descendants, the processes it has started already. */
int ptree__seed(struct ptree *pt, uint32_t pid, bool descendants, char *err, size_t len);
/* Raw tracepoints in (their links into links), records read from the shared ring buffer;
 * after the seeds. */
int ptree__start(struct ptree *pt, struct attach_set *links, char *err, size_t len);
/* What the tree knows of pid, or NULL. */
const struct pt_proc *ptree__get(const struct ptree *pt, uint32_t pid);
/* The followed processes not known to have exited, up to cap of them into out; returns
 * how many were written. */
size_t ptree__pids(const struct ptree *pt, uint32_t *out, size_t cap);
/* How many followed processes still run (those gone without an exit record are marked
 * exited here); 0 for no tree. */
size_t ptree__live(struct ptree *pt);
/* Lost records (ring buffer) and processes not followed (table full). */
void ptree__drops(const struct ptree *pt, uint64_t *lost_records, uint64_t *table_full);
/* Forgets exited processes (exited before cutoff_ns; UINT64_MAX: all). */
void ptree__reap(struct ptree *pt, uint64_t cutoff_ns);
void ptree__free(struct ptree *pt);

#endif
