/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-in NCCL's profiler-plugin host (profhook.c): NCCL_PROFILER_PLUGIN is loaded
 * at the first communicator's init and its ncclProfiler_v4 called as NCCL 2.26+ does:
 * init per communicator, per collective a Coll event with one KernelCh child whose GPU
 * timers (start, KernelChStop) span the stand-in kernel's scripted time, finalize at the
 * communicator's end.
 */
#ifndef FAKENCCL_PROFHOOK_H
#define FAKENCCL_PROFHOOK_H

#include <stddef.h>
#include <stdint.h>

struct prof_comm {
	void *ctx;
	int mask;
	int on;
};

void fakenccl_prof_init(struct prof_comm *pc, const void *id, size_t id_len, int nranks, int rank);
/* one collective: func ("AllReduce"), count elements of dtype ("ncclFloat32"), ns on the GPU */
void fakenccl_prof_coll(struct prof_comm *pc, int rank, const char *func, size_t count, const char *dtype,
			uint64_t ns);
void fakenccl_prof_end(struct prof_comm *pc);

#endif
