/* SPDX-License-Identifier: BSD-3-Clause */
/* "These functions in this file, for this PID" -> BPF links, all released together. */
#ifndef GP_ATTACH_H
#define GP_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct bpf_program;
struct bpf_link;
struct attach_set;

struct attach_set *attach_set__new(void);
/* Detaches everything; safe on NULL. */
void attach_set__free(struct attach_set *s);
/* Links added from now on carry tag (0, the default: only attach_set__free ends them);
 * returns the tag before. A front end tags one library's probes to detach them alone. */
int attach_set__tag(struct attach_set *s, int tag);
/* Destroys the links tagged tag (non-zero); returns the probes they held. */
int attach_set__detach_tag(struct attach_set *s, int tag);
/* Keeps a link made elsewhere (tracepoints). */
int attach_set__add(struct attach_set *s, struct bpf_link *link);
/* The one line for a BPF object that would not load (r: its -errno). */
void attach__load_error(int r, char *err, size_t len);
/* Auto-attaches prog (a tracepoint's SEC) and keeps its link; 0 or -errno with a
 * reason in err. */
int attach_set__auto(struct attach_set *s, struct bpf_program *prog, char *err, size_t len);
/* Probes attached (one per function and direction, whatever the link type). */
int attach_set__count(const struct attach_set *s);
/* Counts probes attached elsewhere (the budget's links) in that number. */
void attach_set__note(struct attach_set *s, int probes);

/*
 * Whether the kernel has uprobe_multi links (Linux 6.6): one link for many functions
 * of a file, attached and detached in one system call each. Without them every probe is
 * its own perf event, and removing each waits for an RCU grace period (~0.1 s) under a
 * global lock. GPUPROBE_NO_UPROBE_MULTI=1 forces the fallback (tests use it).
 */
bool attach__has_uprobe_multi(void);
/* One uprobe_multi link: prog (loaded with attach__uprobe_multi_type()) at offset of path,
 * for pid; the link's fd or -errno. */
int attach__uprobe_multi_one(int prog_fd, const char *path, unsigned long long offset, pid_t pid);
unsigned int attach__uprobe_multi_type(void);
/* One uprobe_multi link of prog_fd on cnt functions of path (offsets and cookies compacted,
 * no -1), entry or return probes, for pid (0: every process); the link's fd or -errno.
 * The overhead budget makes and closes these per window (src/core/budget.c). */
int attach__multi_fd(int prog_fd, const char *path, const __u64 *offsets, const __u64 *cookies, int cnt,
		     __u32 pid, bool retprobe);
/* Programs used with uprobe_multi must say so before load. */
int attach__prepare_prog(struct bpf_program *prog, bool multi);

/* File offsets of the exported functions names[0..n) of path; -1 for those missing.
 * Returns the number found, or -errno with a reason in err. */
int attach__resolve(const char *path, const char *const *names, int n, long long *offsets,
		    char *err, size_t len);

/* Attaches prog at the entry (or return) of the n functions at offsets (-1 entries are
 * skipped), each with its cookie, for pid (-1: every process). 0 or -errno. */
int attach_set__uprobes(struct attach_set *s, struct bpf_program *prog, const char *path,
			const long long *offsets, const __u64 *cookies, int n, pid_t pid,
			bool retprobe, bool multi);

/* An entry program and a return program that probe the same functions of each library,
 * dispatching on the attach cookie (one uprobe_multi link each per library). */
struct attach_pair {
	struct bpf_program *enter, *leave;
	bool multi;
	const char *what; /* "memory", "launch"...: for error lines */
};

/* Before the object loads: uprobe_multi links where the kernel has them. */
void attach_pair__prepare(struct attach_pair *p, struct bpf_program *enter, struct bpf_program *leave,
			  const char *what);
/* Entry probes at offsets and return probes at ret_offsets (NULL: the same), each with its
 * cookie, for pid (-1: every process). 0 or -errno with one line in err. */
int attach_pair__attach(const struct attach_pair *p, struct attach_set *s, const char *lib,
			const long long *offsets, const long long *ret_offsets, const __u64 *cookies,
			int n, pid_t pid, char *err, size_t len);
/* A debug line for each of names[0..n) that lib does not export (offsets[i] < 0). */
void attach__log_missing(const char *lib, const char *const *names, const long long *offsets, int n);

/* Mounts tracefs at /sys/kernel/tracing when it is not there (the syscall tracepoints of
 * --ioctl need its event ids; nothing else does). 0, or -errno with one line in err that
 * names the permission missing (-EACCES: mounted, not readable; -EPERM: cannot mount). */
int attach__ensure_tracefs(char *err, size_t len);
/* Whether this process could mount tracefs (root or CAP_SYS_ADMIN). */
bool attach__tracefs_mountable(char *err, size_t len);

#endif
