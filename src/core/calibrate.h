/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one probe hit costs on this machine: gpuprobe times a function of its own with
 * and without a uprobe on it, at start-up, so reports can price the probe hits they
 * count (an estimate: the trap, cold, dominates; the mode's own BPF work is not in it).
 */
#ifndef GP_CALIBRATE_H
#define GP_CALIBRATE_H

/* Seconds per uprobe hit (entry probe, empty program), 0 where no difference was measured:
 * in a tight loop (warm), and in a program that touches its memory between calls (cold:
 * calibrate.c), timed over `calls` probed calls and as many unprobed. */
struct gp_probe_cost {
	double warm, cold;
};

/* 0 or a negative errno; about 0.1-0.3 s. */
int calibrate__probe_costs(int calls, struct gp_probe_cost *c);
/* The cold price (what reports charge a hit), or a negative errno. */
double calibrate__probe_cost(int calls);
#define GP_CALIBRATE_CALLS 200 /* what gpuprobe times */

#endif
