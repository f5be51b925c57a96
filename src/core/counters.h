/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Samples of the counters the modes offer (struct gp_counter, src/core/mode.h), tick after
 * tick: one tick's values summed per (process, track, series), the change of a running
 * total since the previous tick, and one last row for a series that stopped (its process
 * was forgotten), so a curve drops to zero instead of holding its last value. The --trace
 * timeline draws the rows as counter tracks; gpuprobe top turns them into rates.
 */
#ifndef GP_COUNTERS_H
#define GP_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/mode.h"

struct gp_counter_row {
	uint32_t pid;
	const char *track, *series; /* the set's copies, valid until the next begin */
	unsigned int flags;         /* enum gp_counter_flag */
	double value;               /* this tick's (0 for a series that stopped) */
	/* GP_CTR_TOTAL: value minus the previous tick's; the whole value on the series' first
	 * tick; 0 when the total went down (a record the mode forgot: an exec'd image).
	 * A gauge: value minus the previous tick's, 0 on its first */
	double delta;
	bool first; /* the series' first tick */
	bool gone;  /* not seen this tick: its last row, value and delta 0 */
	/* says nothing new to a curve that holds its last point: a gauge whose value, or a
	 * total whose delta, is 0, as it was at the previous tick; a gauge unchanged */
	bool quiet;
};

struct gp_counters;

/* A set that keeps at most max_series series (more are counted, never stored). */
struct gp_counters *gp_counters__new(size_t max_series);
void gp_counters__free(struct gp_counters *cs);
/* One tick: begin, every counter through gp_counters__add (a gp_counter_fn: cs is its
 * ctx), end. */
void gp_counters__begin(struct gp_counters *cs, uint64_t now_ns);
void gp_counters__add(void *cs, const struct gp_counter *c);
/* The tick's rows, sorted by pid, track, series; valid until the next begin. */
size_t gp_counters__end(struct gp_counters *cs, const struct gp_counter_row **rows);
/* The previous tick's time (the first: the set's first begin) and this tick's. */
uint64_t gp_counters__prev_ns(const struct gp_counters *cs);
uint64_t gp_counters__now_ns(const struct gp_counters *cs);
/* Counters not stored: over max_series, or out of memory. */
uint64_t gp_counters__dropped(const struct gp_counters *cs);

#endif
