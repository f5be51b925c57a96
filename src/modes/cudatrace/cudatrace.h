/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --cudatrace aggregation: launches per process and kernel name, with grid x block
 * shapes, graph launches and latency histograms. Launch counts are read from BPF maps
 * at report time (a snapshot); names arrive as events when handles are created. Pure C.
 */
#ifndef GP_CUDATRACE_H
#define GP_CUDATRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"
#include "cuda_launch.h"

struct u64map;

struct ct_shape {
	uint32_t grid[3], block[3];
	uint64_t launches;       /* launched directly */
	uint64_t captured;       /* launched on a capturing stream: a graph node, not run */
	uint64_t graph_executed; /* run as a node of a launched graph */
};

enum ct_name_source {
	CT_NAME_DRIVER = 0, /* from cuModuleGetFunction / cuLibraryGetKernel */
	CT_NAME_HOST = 1,   /* from the host-side stub on the launch stack */
	CT_NAME_NONE = 2,   /* unknown@0x... */
	CT_NAME_MEMORY = 3, /* read from the process's memory through a learned layout (midname.h) */
};

/* What may still name an unnamed kernel. Its launches are read from the BPF table, its
 * names from records that BPF submits before the launch that needs them is counted (its
 * naming's GP_EV_NAME, its first launch's GP_EV_STUB), so while a record is unread a
 * kernel counted now may be named by it; and a name read from memory is used only once a
 * launch of the handle returned (verified). */
enum ct_await {
	CT_AWAIT_NONE = 0,
	CT_AWAIT_RECORD, /* its naming's record, or its stub's, not read yet */
	CT_AWAIT_VERIFY, /* no launch of the handle has returned yet */
};

struct ct_kernel {
	char *name;
	enum ct_name_source source;
	bool no_layout;  /* unnamed: no layout learned for its libcuda build and kind (midname.h) */
	bool unread;     /* unnamed: its process went before its name was read, and the copy of
			  * its object made at its first launch lacked it (midname.h) */
	enum ct_await await; /* unnamed: what may still name it (cudatrace__set_unread) */
	bool held;       /* unnamed, and a record or check may still name it: the daemon holds
			  * its series back (a series once served never goes) */
	uint64_t handle; /* the first handle seen under this name */
	uint64_t launches, captured, graph_executed; /* as in struct ct_shape */
	struct ct_shape *shapes; /* sorted, most frequent first */
	size_t nr_shapes, cap_shapes;
};

/* One CUgraphExec launched (its current and earlier versions summed). */
struct ct_graph {
	uint64_t handle, launches;
	size_t nodes;           /* kernel nodes of its latest version seen */
	int source;             /* enum ct_gsource (graphs.h) */
	bool partial;           /* some nodes could not be followed (child graphs, updates) */
};

/* Counts that outlive the BPF tables they came from (captures, retired graph versions),
 * per kernel and shape. */
struct ct_acc;

struct ct_proc {
	uint32_t pid;
	uint32_t img; /* the process image (gp_image()): an exec starts a new record */
	char comm[GP_COMM_LEN];
	bool unnamed;     /* made from the BPF tables after its process was gone (gp_snap_pid's) */
	bool exited;
	bool exec;        /* ended by an exec, not an exit (the PID lives on in a new image) */
	uint64_t exit_ns; /* CLOCK_MONOTONIC, from the exit record */
	struct u64map *names;      /* naming generation -> name (see gp_name_event) */
	struct u64map *host_names; /* handle -> name from the host stub */
	struct u64map *mem_names;  /* handle -> name read from memory ("" : checked, none) */
	struct u64map *stubs;      /* handles whose GP_EV_STUB record was read */
	uint64_t held_ns;          /* the first snapshot of a run of them that held kernels back */
	bool holding;              /* the last snapshot held kernels back: not reaped */
	struct cudatrace *ct;
	struct ct_gstore *gs;      /* its CUDA graphs (graphs.h), made at its first graph record */
	struct ct_acc *acc;        /* captured and retired graph-executed counts */
	size_t nr_acc, cap_acc;
	struct u64map *acc_idx;    /* hash of an acc key -> index + 1 */
	struct u64map *retired;    /* CUgraphExec -> launches of its retired versions */
	uint64_t captured_total, graph_overflows;
	uint64_t unexpanded_retired; /* launches of retired graph versions whose nodes were unknown */
	/* the snapshot */
	struct ct_kernel *kernels;
	size_t nr_kernels, cap_kernels;
	struct ct_graph *graphs;
	size_t nr_graphs, cap_graphs;
	uint64_t launches, unnamed_launches, graph_launches;
	uint64_t unnamed_no_layout;   /* of the unnamed: no layout learned for the driver build */
	uint64_t unnamed_unread;      /* of the unnamed: the process went before the name was read */
	uint64_t graph_executed;      /* kernel executions inside graph launches */
	uint64_t unexpanded_graph_launches; /* of graphs made before the attach */
	struct gp_hist hist[GP_HIST__COUNT];
	double launches_per_s; /* since the previous snapshot */
	uint64_t prev_launches, prev_ns;
};

struct cudatrace;

struct cudatrace *cudatrace__new(void);
void cudatrace__free(struct cudatrace *ct);

void cudatrace__on_name(struct cudatrace *ct, const struct gp_name_event *e);
void cudatrace__on_graph(struct cudatrace *ct, const struct gp_graph_event *e);
/* Takes the final count of a graph exec's version out of BPF (read and delete), called
 * when the version stops being launched; the counts then live on in user space. */
typedef uint64_t (*ct_take_fn)(void *ctx, uint32_t pid, uint32_t img, uint64_t exec, uint32_t version);
void cudatrace__set_take(struct cudatrace *ct, ct_take_fn take, void *ctx);
/* A name for an unnamed handle, found on its launch stack (see cudatrace__stub_name). */
void cudatrace__on_host_name(struct cudatrace *ct, uint32_t pid, uint32_t img, uint64_t handle,
			     const char *name);
/* The GP_EV_STUB record of handle's first launch was read (before any name it gives). */
void cudatrace__on_stub(struct cudatrace *ct, uint32_t pid, uint32_t img, uint64_t handle);
void cudatrace__on_exit(struct cudatrace *ct, const struct gp_exit_event *e);
/* pid replaced its image (GP_EV_EXEC): the old image's record ends; true if there was one. */
bool cudatrace__on_exec(struct cudatrace *ct, const struct gp_proc_event *e);

/* When tracing began (CLOCK_MONOTONIC ns): the first rate of a process counts from it. */
void cudatrace__set_start(struct cudatrace *ct, uint64_t start_ns);
/* Rebuilds the counts from the in-kernel tables: begin, add every key, end. */
void cudatrace__snapshot_begin(struct cudatrace *ct);
void cudatrace__add_launch(struct cudatrace *ct, const struct gp_launch_key *k, uint64_t count);
void cudatrace__set_hist(struct cudatrace *ct, const struct gp_hist_key *k, const struct gp_hist *h);
/* Whether records were still unread once the tables were (events.h: gp_events__more or
 * gp_events__unread, asked after the launches were read): an unnamed kernel awaiting a
 * record is then held back (ct_kernel.held), a process for CT_HOLD_S at most. Set before
 * cudatrace__snapshot_end; false (the default) holds back only those awaiting a check. */
void cudatrace__set_unread(struct cudatrace *ct, bool unread);
#define CT_HOLD_S 10  /* the longest a process's unnamed kernels are held back */
#define CT_VERIFY_S 1 /* the longest for a launch's return (CT_AWAIT_VERIFY) */
void cudatrace__snapshot_end(struct cudatrace *ct, uint64_t now_ns);
/* The same without moving the launch rates' window (a look at the probe hits between two
 * reports: the next report's launches/s still covers the time since the previous one). */
void cudatrace__snapshot_end_counts(struct cudatrace *ct, uint64_t now_ns);

/* Processes sorted by pid (live first); the array is owned by ct. */
size_t cudatrace__procs(struct cudatrace *ct, struct ct_proc ***out);
/* The name of a launch of handle under naming generation gen (0: none valid); *source
 * says where it came from. NULL when unnamed. */
const char *cudatrace__name_of(struct ct_proc *p, uint64_t handle, uint32_t gen,
			       enum ct_name_source *source);
/* Marks exited, at now_ns, the processes gone without an exit record (kill(pid, 0)). */
void cudatrace__sweep(struct cudatrace *ct, uint64_t now_ns);
/* Drops exited processes whose exit is before cutoff_ns (UINT64_MAX: every exited one,
 * once reported), except keep_pid (0: none); forget(ctx, pid, img) lets the caller clear
 * its BPF map entries: the PID's, or with img those of that image only. */
void cudatrace__reap(struct cudatrace *ct, uint64_t cutoff_ns, uint32_t keep_pid,
		     void (*forget)(void *ctx, uint32_t pid, const uint32_t *img), void *ctx);

/* From symbolized launch-stack frames ("func+0x1a (lib)", innermost first), the host-side
 * kernel name: nvcc's stub __device_stub_<mangled>, demangled. Writes "" when there is
 * none (any other frame would name the launcher, not the kernel). */
void cudatrace__stub_name(const char *const *frames, size_t n, char *buf, size_t len);
/* The same, also giving the mangled name the stub carries (mangled may be NULL). */
void cudatrace__stub_name2(const char *const *frames, size_t n, char *buf, size_t len, char *mangled,
			   size_t mlen);
/* Names an unnamed handle at snapshot time (off the hot path): 0 with the raw (mangled)
 * name in buf; -EAGAIN to try again at the next snapshot; another -errno: never. */
typedef int (*ct_resolve_fn)(void *ctx, uint32_t pid, uint32_t img, uint64_t handle, char *buf, size_t len);
void cudatrace__set_resolve(struct cudatrace *ct, ct_resolve_fn resolve, void *ctx);

#endif
