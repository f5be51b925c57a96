/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copies per process, GPU and direction: --bandwidth-util's aggregation, and the copy
 * directions of --trace (src/modes/trace/apitrace.c). Directions of unified copies come from the allocations tracked (never guessed); host pointers inside
 * pinned ranges are pinned, others pageable. Synchronous copies are timed entry to
 * return; asynchronous ones from submission to the return of the first synchronization
 * covering their stream — an upper bound. Pure C.
 */
#ifndef GP_BANDWIDTH_H
#define GP_BANDWIDTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "gpuprobe.h"
#include "cuda_copy.h"
#include "cuda_mem.h"

enum bw_dir { BW_H2D, BW_D2H, BW_D2D, BW_PEER, BW_H2H, BW__COUNT };

#define BW_HIST_SLOTS 48

/* What completed an asynchronous copy (or one that returned early): the first completion
 * signal that covered it (enum cu_sync). */
enum bw_sync_kind {
	BW_SYNC_STREAM,
	BW_SYNC_CONTEXT,
	BW_SYNC_EVENT,
	BW_SYNC_STREAM_QUERY,
	BW_SYNC_EVENT_QUERY,
	BW_SYNC_ELAPSED,
	BW_SYNC__COUNT
};

/* What completion signals and CUDA events tell of a row's or a pair's copies that
 * returned before they completed: per signal, the copies' bytes and their batches'
 * windows (each a bound); per completed batch its rate, log2 MB/s (slot k: [2^k, 2^k+1)
 * MB/s; two links' speeds show as two modes); the bytes that ran between two events on
 * their stream, over the GPU's time between them (cuEventElapsedTime). */
struct bw_signals {
	uint64_t bytes[BW_SYNC__COUNT], ns[BW_SYNC__COUNT];
	uint64_t window_hist[BW_HIST_SLOTS];
	uint64_t event_bytes, event_ns, event_windows;
};


struct bw_stat {
	int gpu; /* -1: unknown (H2H) */
	enum bw_dir dir;
	uint64_t copies, bytes;
	uint64_t sync_copies, sync_bytes, sync_ns;
	uint64_t async_copies, async_bytes;
	uint64_t async_done_copies, async_done_bytes, async_ns; /* completed by a sync */
	uint64_t async_done_by[BW_SYNC__COUNT]; /* which kind of sync completed them */
	struct bw_signals sig;
	uint64_t pageable_copies, pageable_bytes;
	uint64_t pageable_sync_bytes, pageable_sync_ns; /* the pageable part of sync_* */
	uint64_t size_hist[BW_HIST_SLOTS]; /* log2 bytes */
	uint64_t rate_hist[BW_HIST_SLOTS]; /* log2 MiB/s of synchronous copies */
};

/*
 * Copies between device memory, per (source GPU, destination GPU): peer copies off the
 * diagonal, copies within a GPU on it. These return before they complete (the real driver
 * does), so their time is never the call's: it is the window from the first submission of a
 * batch to the return of the synchronization that covered it, an upper bound.
 */
struct bw_pair {
	int src, dst; /* GPUs; -1: unknown */
	uint64_t copies, bytes;
	uint64_t api_ns; /* the calls' own durations: shown, never a bandwidth */
	uint64_t done_copies, done_bytes, window_ns; /* completed by a covering sync */
	uint64_t done_by[BW_SYNC__COUNT];
	struct bw_signals sig;
};

struct bw_proc;
struct bandwidth;

struct bandwidth *bandwidth__new(void);
void bandwidth__free(struct bandwidth *bw);

void bandwidth__on_alloc(struct bandwidth *bw, const struct gp_alloc_event *e);
void bandwidth__on_free(struct bandwidth *bw, const struct gp_free_event *e); /* FREE, MAP, UNMAP */
void bandwidth__on_copy(struct bandwidth *bw, const struct gp_copy_event *e);
void bandwidth__on_aux(struct bandwidth *bw, const struct gp_aux_event *e);
void bandwidth__on_exit(struct bandwidth *bw, const struct gp_exit_event *e);
/* pid replaced its image (GP_EV_EXEC): its record ends; the new image starts another. */
void bandwidth__on_exec(struct bandwidth *bw, const struct gp_proc_event *e);

/* The direction a copy would be counted under, without counting it (--trace decodes
 * its calls with the ranges this object tracks); *gpu gets the GPU or -1. */
enum bw_dir bandwidth__direction(struct bandwidth *bw, const struct gp_copy_event *e, int *gpu);

/* Reading: processes (live first, by pid) and each one's stats (by gpu, direction). */
size_t bandwidth__procs(struct bandwidth *bw, struct bw_proc ***out);
uint32_t bw_proc__pid(const struct bw_proc *p);
const char *bw_proc__comm(const struct bw_proc *p);
bool bw_proc__exited(const struct bw_proc *p);
/* Async copies never covered by a synchronization (yet). */
uint64_t bw_proc__unsynced(const struct bw_proc *p);
size_t bw_proc__stats(struct bw_proc *p, struct bw_stat ***out);
/* Device-to-device pairs, by source then destination GPU. */
size_t bw_proc__pairs(struct bw_proc *p, struct bw_pair ***out);
/* Marks exited, at now_ns, the processes gone without an exit record (kill(pid, 0)). */
void bandwidth__sweep(struct bandwidth *bw, uint64_t now_ns);
/* Forgets exited processes whose exit (CLOCK_MONOTONIC ns) is before cutoff_ns
 * (UINT64_MAX: every exited one, once reported), except keep_pid. */
void bandwidth__reap(struct bandwidth *bw, uint64_t cutoff_ns, uint32_t keep_pid);

/* A snapshot of the reports' data, plain arrays. */
struct bw_snap_proc {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	bool unnamed; /* gp_snap_pid's */
	bool exited, exec;
	uint64_t exit_ns; /* when it exited (CLOCK_MONOTONIC) */
	uint64_t unsynced; /* async copies not yet covered by a synchronization */
	uint64_t untimed, untimed_bytes; /* async copies whose synchronization a budget left unseen */
	size_t nr_stats;
	struct bw_stat *stats; /* by gpu, then direction */
	size_t nr_pairs;
	struct bw_pair *pairs; /* by source, then destination GPU */
};

struct bw_snap_data {
	size_t nr_procs;
	struct bw_snap_proc *procs; /* live first, by pid */
};

/* pid 0: every process; 0 or -ENOMEM. Free with bw_snap_data__clear. */
int bandwidth__snapshot(struct bandwidth *bw, uint32_t pid, struct bw_snap_data *out);
void bw_snap_data__clear(struct bw_snap_data *d);

const char *bw_dir_name(enum bw_dir d);
/* cu_sync_name's: "stream", "context", "event", "stream_query", "event_query", "event_elapsed" */
const char *bw_sync_kind_name(enum bw_sync_kind k);

/* --csv: one row per GPU with the bytes of the interval since the previous row; writes
 * the header when the file is empty. Returns 0 or -errno. */
int bandwidth__csv_rows(struct bandwidth *bw, FILE *f, double unix_time, double interval_s);

#endif
