/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakecuda_ext.h - what the stand-in driver (libcuda.so.1 from fakecuda.c)
 * exports beyond the CUDA driver API: its own account of what ran, for the
 * workloads to check their ground truth against and print it, and one knob
 * the stand-in NCCL uses to give its kernels a duration.
 *
 * No real driver has these symbols.  Call them through dlsym() where a
 * program must also run on a real driver (the stand-in NCCL does).  All are
 * thread-safe; none is probed by gpuprobe.
 */
#ifndef FAKECUDA_EXT_H
#define FAKECUDA_EXT_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per kernel name, summed over every handle with that name. */
struct fakecuda_kernel_stats {
	uint64_t launched;	/* ran from a launch call (cuLaunchKernel*, ...) */
	uint64_t captured;	/* launch calls recorded by stream capture (did not run) */
	uint64_t graph_executed;	/* ran as a kernel node of a cuGraphLaunch */
};

/* 0 and *out filled; -1 when no module or library of this process named it. */
int fakecuda_kernel_stats(const char *name, struct fakecuda_kernel_stats *out);

/* Copies that completed or were queued, per (source, destination). */
struct fakecuda_copy_stats {
	uint64_t copies, bytes;	/* from copy calls */
	uint64_t graph_copies, graph_bytes;	/* copy nodes of graph launches */
};

/* src/dst: device ordinals, -1 for host memory.  0, or -1 for a bad ordinal. */
int fakecuda_copy_stats(int src, int dst, struct fakecuda_copy_stats *out);

/* Successful cuGraphLaunch* calls that ran (not captured ones). */
uint64_t fakecuda_graph_launches(void);

/* What the stand-in was configured with (FAKECUDA_* environment, read by cuInit). */
struct fakecuda_config {
	int devices;
	double bw;	/* bytes/s: host<->device and same-device copies */
	double peer_bw;	/* bytes/s: copies between two devices */
	int d2d_async;	/* device-to-device copies return before they complete */
	uint64_t kernel_ns;	/* default duration of one kernel */
};

/* 0, or -1 before a successful cuInit. */
int fakecuda_config(struct fakecuda_config *out);

/* Everything above as one JSON object on one line (no newline). */
void fakecuda_stats_json(FILE *f);

/*
 * The next launch call on this thread (direct or captured) gets this
 * duration instead of FAKECUDA_KERNEL_NS; 0 clears it.  The stand-in NCCL
 * sizes its kernels with it.
 */
void fakecuda_set_next_kernel_ns(uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif /* FAKECUDA_EXT_H */
