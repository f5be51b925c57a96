// SPDX-License-Identifier: BSD-3-Clause
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ncclprof_decl.h"
#include "profhook.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static gpt_profiler_v4 *prof;

static void load(void)
{
	const char *path = getenv("NCCL_PROFILER_PLUGIN");
	void *h;

	if (!path || !*path)
		return;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "fakenccl: NCCL_PROFILER_PLUGIN: %s\n", dlerror());
		return;
	}
	prof = dlsym(h, "ncclProfiler_v4");
	if (!prof)
		fprintf(stderr, "fakenccl: %s has no ncclProfiler_v4\n", path);
}

static uint64_t gpu_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fakenccl_prof_init(struct prof_comm *pc, const void *id, size_t id_len, int nranks, int rank)
{
	uint64_t hash = 1469598103934665603ull; /* FNV-1a of the unique id: the same on every rank */
	const unsigned char *b = id;

	pthread_once(&once, load);
	memset(pc, 0, sizeof(*pc));
	if (!prof)
		return;
	for (size_t i = 0; i < id_len; i++)
		hash = (hash ^ b[i]) * 1099511628211ull;
	if (prof->init(&pc->ctx, &pc->mask, "fakenccl", hash, 1, nranks, rank, NULL) == GPT_NCCL_SUCCESS)
		pc->on = 1;
}

void fakenccl_prof_coll(struct prof_comm *pc, int rank, const char *func, size_t count, const char *dtype,
			uint64_t ns)
{
	gpt_prof_descr_v4 d;
	gpt_prof_state_args_v4 a;
	void *coll = NULL, *kch = NULL;
	uint64_t t = gpu_clock();

	if (!pc->on || !(pc->mask & GPT_PROF_COLL))
		return;
	memset(&d, 0, sizeof(d));
	d.type = GPT_PROF_COLL;
	d.rank = rank;
	d.coll.func = func;
	d.coll.count = count;
	d.coll.datatype = dtype;
	d.coll.nChannels = 1;
	d.coll.algo = "RING";
	d.coll.proto = "LL";
	prof->startEvent(pc->ctx, &coll, &d);
	/* as NCCL 2.26+: the collective's event stops once it is enqueued; its kernel
	 * channel's comes after, from the proxy thread, with the GPU's timers */
	if (coll)
		prof->stopEvent(coll);
	/* FAKENCCL_PROF_NO_KCH=1: an NCCL that never sends the channels' events */
	if (coll && pc->mask & GPT_PROF_KERNEL_CH && !getenv("FAKENCCL_PROF_NO_KCH")) {
		memset(&d, 0, sizeof(d));
		d.type = GPT_PROF_KERNEL_CH;
		d.parentObj = coll;
		d.rank = rank;
		d.kernelCh.pTimer = t;
		prof->startEvent(pc->ctx, &kch, &d);
		memset(&a, 0, sizeof(a));
		a.kernelCh.pTimer = t + ns;
		if (kch) {
			prof->recordEventState(kch, GPT_PROF_KERNEL_CH_STOP, &a);
			prof->stopEvent(kch);
		}
	}
}

void fakenccl_prof_end(struct prof_comm *pc)
{
	if (pc->on)
		prof->finalize(pc->ctx);
	pc->on = 0;
}
