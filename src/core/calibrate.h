/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one probe hit costs on this machine: gpuprobe times a function of its own with
 * and without a uprobe on it, at start-up, so reports can price the probe hits they
 * count (an estimate: the trap dominates; the mode's own BPF work is not in it).
 */
#ifndef GP_CALIBRATE_H
#define GP_CALIBRATE_H

/* Seconds per uprobe hit (entry probe, empty program), or a negative errno. */
double calibrate__probe_cost(int iterations);

#endif
