/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --bandwidth-util aggregation: copies per process, GPU and direction. Directions of
 * unified copies come from the allocations tracked (never guessed); host pointers inside
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

enum bw_dir { BW_H2D, BW_D2H, BW_D2D, BW_PEER, BW_H2H, BW__COUNT };

#define BW_HIST_SLOTS 48

struct bw_stat {
	int gpu; /* -1: unknown (H2H) */
	enum bw_dir dir;
	uint64_t copies, bytes;
	uint64_t sync_copies, sync_bytes, sync_ns;
	uint64_t async_copies, async_bytes;
	uint64_t async_done_copies, async_done_bytes, async_ns; /* completed by a sync */
	uint64_t pageable_copies, pageable_bytes;
	uint64_t pageable_sync_bytes, pageable_sync_ns; /* the pageable part of sync_* */
	uint64_t size_hist[BW_HIST_SLOTS]; /* log2 bytes */
	uint64_t rate_hist[BW_HIST_SLOTS]; /* log2 MiB/s of synchronous copies */
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
void bandwidth__reap_exited(struct bandwidth *bw, uint32_t keep_pid);
/* gpuprobe daemon's retention: forgets processes whose exit (CLOCK_MONOTONIC ns, from
 * the exit record) is before cutoff_ns. */
void bandwidth__reap_exited_before(struct bandwidth *bw, uint64_t cutoff_ns);

const char *bw_dir_name(enum bw_dir d);

/* --csv: one row per GPU with the bytes of the interval since the previous row; writes
 * the header when the file is empty. Returns 0 or -errno. */
int bandwidth__csv_rows(struct bandwidth *bw, FILE *f, double unix_time, double interval_s);

#endif
