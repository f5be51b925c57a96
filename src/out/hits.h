/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Processes and their probe hits summed over the modes' snapshots and the allocation
 * probes (part of the report assembly, src/out/report.c): /metrics' probe hits and tracked
 * processes, the CLI's overhead record, gpuprobe top's rates, NVML's report.
 */
#ifndef GP_HITS_H
#define GP_HITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/mode.h"

struct gp_run;

/* Probe hits per process summed over the allocation probes and snaps[i] (slot i's
 * snapshot, NULL: none) of the modes that count them (all modes with all_modes), by PID:
 * the sources see an exit at different times, so a process is exited once every source
 * says so. cb gets each process once; returns how many. */
size_t gp_hits__pids(struct gp_run *run, const struct gp_snap *const *snaps, bool all_modes,
		     void (*cb)(void *ctx, const struct gp_snap_pid *p), void *ctx);
/* Probe hits per process of every mode (the allocation probes included). cb gets each
 * process once, hits summed; returns how many processes. */
size_t gp_hits__run(struct gp_run *run, void (*cb)(void *ctx, const struct gp_snap_pid *p), void *ctx);
/* The same, and in dropped[i] (GP_MAX_MODES) the sum of slot i's drop counters, the run's
 * own among them (a live view's "what did this mode lose"). */
size_t gp_hits__run_drops(struct gp_run *run, void (*cb)(void *ctx, const struct gp_snap_pid *p), void *ctx,
			  uint64_t *dropped);

#endif
