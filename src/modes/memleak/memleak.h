/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --memleak aggregation: outstanding allocations per process (tgid), fed with the events
 * of bpf/cuda_mem.bpf.c and the stacks the mode resolved for them (src/core/ustack.h).
 * Stacks are kept once per process (interned) and shared by the allocations made from
 * them, so a snapshot groups outstanding allocations by stack. Pure C over plain structs
 * so it is unit-tested without BPF.
 */
#ifndef GP_MEMLEAK_H
#define GP_MEMLEAK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"
#include "lib/proctab.h"

struct u64map;

/* One stack of a process, shared by its allocations (frames owned by it). */
struct ml_stack {
	uint64_t hash;
	uint32_t refs;     /* outstanding allocations made from it */
	uint32_t nr;
	uint32_t flags;    /* enum ustack_flags: partial, Python placement... */
	uint32_t _pad;
	char **frames;     /* nr texts, innermost first */
};

/* A stack as the mode resolved it: frames innermost first (copied). */
struct ml_stack_in {
	const char *const *frames;
	uint32_t nr;
	uint32_t flags;
};

struct ml_alloc {
	uint64_t addr; /* address, or handle for GP_KIND_PHYSICAL */
	uint64_t size;
	uint64_t ts_ns;
	uint32_t api;
	uint32_t kind;
	uint32_t tid;
	struct ml_stack *stack;
};

struct ml_mapping {
	uint64_t addr, size, handle;
};

/* A process's totals: what its reports and metrics print. */
struct ml_stats {
	uint64_t outstanding_bytes;
	uint64_t outstanding_allocs;
	uint64_t bytes_by_kind[GP_KIND__COUNT];
	uint64_t allocs_by_kind[GP_KIND__COUNT];
	uint64_t allocs_total, frees_total;
	uint64_t alloc_bytes_total, freed_bytes_total;
	uint64_t untracked_frees; /* frees of addresses allocated before gpuprobe attached */
	uint64_t graph_relaunch_frees; /* frees of a graph allocation node's memory that a
					* later launch of its graph made again (not untracked) */
	uint64_t mapped_bytes;
	uint64_t maps_total, unmaps_total;
};

struct ml_proc {
	struct gp_proc_head h; /* pid, comm, exited, exec, exit_ns */
	struct u64map *allocs;   /* address -> struct ml_alloc (device, managed, host) */
	struct u64map *handles;  /* handle -> struct ml_alloc (physical) */
	struct u64map *mappings; /* address -> struct ml_mapping */
	struct u64map *stacks;   /* hash -> struct ml_stack */
	struct u64map *graph_mem; /* address of each graph allocation node seen (up to
				   * ML_GRAPH_NODES): every launch of its graph makes it again */
	struct ml_stats st;
};

#define ML_GRAPH_NODES 65536

struct memleak;

struct memleak *memleak__new(size_t max_allocs);
void memleak__free(struct memleak *ml);

/* An allocation and its stack (NULL: none). */
void memleak__on_alloc(struct memleak *ml, const struct gp_alloc_event *e, const struct ml_stack_in *stack);
void memleak__on_free(struct memleak *ml, const struct gp_free_event *e);
/* Marks the process exited and detaches it from its PID, so a new process that reuses
 * the PID starts clean. Returns it (still owned by ml) for an exit report, or NULL. */
struct ml_proc *memleak__on_exit(struct memleak *ml, const struct gp_exit_event *e);
/* The same at an exec (GP_EV_EXEC): the old image's allocations went with it. */
struct ml_proc *memleak__on_exec(struct memleak *ml, const struct gp_proc_event *e);

/* Processes, live then exited, sorted by pid; returns the count (array owned by ml,
 * valid until the next call that changes ml). */
size_t memleak__procs(struct memleak *ml, struct ml_proc ***out);
/* Allocations of one process sorted by size (largest first), physical handles too. */
size_t memleak__proc_allocs(struct ml_proc *p, struct ml_alloc ***out);
void memleak__free_allocs_array(struct ml_alloc **arr);
/* Marks exited, at now_ns, the processes gone without an exit record (kill(pid, 0)). */
void memleak__sweep(struct memleak *ml, uint64_t now_ns);
/* Forgets exited processes whose exit (CLOCK_MONOTONIC) is before cutoff_ns (UINT64_MAX:
 * every exited one, once reported), except keep_pid (the traced command or -p target,
 * whose record the final report must still show; 0: none). */
void memleak__reap(struct memleak *ml, uint64_t cutoff_ns, uint32_t keep_pid);
/* Allocations not tracked because --max-allocs was reached. */
uint64_t memleak__table_full(const struct memleak *ml);

/* A snapshot of the reports' data: plain arrays; the frame texts are the aggregator's,
 * valid until the next record changes it. */
struct ml_snap_alloc {
	uint64_t addr, size;
	double age_s; /* an exited process's allocations stop ageing at its exit */
	uint32_t api, kind, tid;
};

/* Outstanding allocations of one process made from one stack. */
struct ml_snap_stack {
	uint64_t bytes, allocs;
	double oldest_age_s;
	uint64_t apis;   /* gp_mem_api_bit() of each entry point among them */
	uint32_t kinds;  /* bit (1 << enum gp_mem_kind) of each kind among them */
	uint32_t flags;  /* enum ustack_flags */
	uint32_t nr_frames;
	const char *const *frames; /* innermost first */
	size_t first;    /* its allocations: allocs[first, first + allocs), largest first */
};

struct ml_snap_proc {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	bool unnamed; /* gp_snap_pid's */
	bool exited, exec;
	uint64_t exit_ns; /* when it exited (CLOCK_MONOTONIC) */
	struct ml_stats st;
	/* with ML_SNAP_ALLOCS: the allocations older than the snapshot's min_age_ns, by stack */
	uint64_t shown_bytes, shown_allocs;
	size_t nr_allocs;
	struct ml_snap_alloc *allocs; /* grouped by stack, in the order of stacks[] */
	size_t nr_stacks;
	struct ml_snap_stack *stacks; /* most bytes first */
};

struct ml_snap_data {
	size_t nr_procs;
	struct ml_snap_proc *procs;
};

enum {
	ML_SNAP_ALLOCS = 1 << 0, /* with the allocations by stack, not only the totals */
	ML_SNAP_EXITED = 1 << 1, /* exited processes only */
};

/* The processes (pid 0: all); with ML_SNAP_ALLOCS only the allocations outstanding for
 * longer than min_age_ns. 0 or -ENOMEM. Free with ml_snap_data__clear. */
int memleak__snapshot(struct memleak *ml, uint64_t now_ns, uint32_t pid, unsigned int flags,
		      uint64_t min_age_ns, struct ml_snap_data *out);
void ml_snap_data__clear(struct ml_snap_data *d);

#endif
