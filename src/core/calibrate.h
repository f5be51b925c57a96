/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one probe hit costs on this machine: gpuprobe times a function of its own with
 * and without a uprobe on it, at start-up, so reports can price the probe hits they
 * count (an estimate: the trap, cold, dominates; the mode's own BPF work is not in it).
 */
#ifndef GP_CALIBRATE_H
#define GP_CALIBRATE_H

/* Seconds per uprobe hit (entry probe, empty program), 0 where no difference was measured:
 * in a tight loop (warm), in a program that touches its memory between calls (cold), and
 * in one that touches more of it than the caches hold (sparse: a probe hit once a step;
 * calibrate.c), timed over `calls` probed calls and as many unprobed. */
struct gp_probe_cost {
	double warm, cold, sparse;
	/* how long a sweep before a cold and before a sparse call took (seconds, medians; 0
	 * when not measured): a program whose hits are further apart than that may have
	 * evicted as much between them */
	double cold_gap, sparse_gap;
};

/* 0 or a negative errno; about 0.1-0.3 s. sparse is left as cold. */
int calibrate__probe_costs(int calls, struct gp_probe_cost *c);
/* The same, with the sparse price measured too (the budget's): about 0.2-0.6 s. */
int calibrate__budget_costs(int calls, struct gp_probe_cost *c);
/* The cold price (what reports charge a hit), or a negative errno. */
double calibrate__probe_cost(int calls);
#define GP_CALIBRATE_CALLS 200 /* what gpuprobe times */

#endif
