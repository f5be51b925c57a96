// SPDX-License-Identifier: BSD-3-Clause
/*
 * libgpuprobe_ncclprof.so: --gpu-time's NCCL profiler plugin (NCCL_PROFILER_PLUGIN),
 * interface v4 (ncclprof_decl.h). Per collective: the kernel channels' GPU timers (the
 * earliest start to the latest stop: NCCL's own kernel time) when NCCL gives them, else
 * the host's start and stop of the collective's event; its function, element count and
 * size, communicator and rank, sent to gpuprobe (gputime_wire.h). gpuprobe computes the
 * algorithm and bus bandwidth.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "gputime_wire.h"
#include "ncclprof_decl.h"
#include "sender.h"

#define TAG_CTX 0x67707863u
#define TAG_COLL 0x6770636cu
#define TAG_KCH 0x67706b63u

struct ctx {
	uint32_t tag;
	uint64_t comm_hash;
	int nranks, rank;
	int mask;
};

struct coll {
	uint32_t tag;
	uint64_t comm_hash; /* the communicator's, copied: a context may end first */
	int nranks, rank;
	uint32_t fn, type_size;
	uint64_t count;
	uint64_t host_start, host_stop;
	uint64_t gpu_start, gpu_stop; /* 0: no channel yet */
	uint32_t channels;  /* channels timed */
	uint32_t expect;    /* channels NCCL said it runs on (the descriptor's nChannels) */
	uint32_t ended;     /* channels stopped, timed or not */
	int refs;           /* kernel channels started and not stopped */
	bool stopped;
	bool wait_channels; /* the context asked for kernel-channel events */
};

struct kch {
	uint32_t tag;
	struct coll *coll;
	uint64_t start, stop;
};

/* Handles come from fixed pools, never freed: a handle NCCL passes after its event ended
 * (a channel that starts after its collective stopped) finds its slot free (tag 0) or
 * reused, never freed memory; a pointer outside the pools is never read. */
#define POOL 8192
static struct coll colls[POOL];
static struct kch kchs[POOL];
static unsigned int next_coll, next_kch;
static uint64_t no_slot; /* events without a free slot: not timed, counted */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int inits;

static struct coll *coll_of(void *p)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)colls;

	if (a < b || a >= b + sizeof(colls) || (a - b) % sizeof(struct coll))
		return NULL;
	return ((struct coll *)p)->tag == TAG_COLL ? p : NULL;
}

static struct kch *kch_of(void *p)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)kchs;

	if (a < b || a >= b + sizeof(kchs) || (a - b) % sizeof(struct kch))
		return NULL;
	return ((struct kch *)p)->tag == TAG_KCH ? p : NULL;
}

/* A free slot (lock held), or NULL. */
static void *take(void *pool, size_t size, unsigned int *next)
{
	for (unsigned int i = 0; i < POOL; i++) {
		unsigned int k = (*next + i) % POOL;
		uint32_t *tag = (uint32_t *)((char *)pool + (size_t)k * size);

		if (!*tag) {
			*next = k + 1;
			return tag;
		}
	}
	no_slot++;
	return NULL;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "AllReduce" (or "ncclAllReduce") */
static uint32_t fn_of(const char *s)
{
	static const char *const fns[GPT_COLL__FNS] = {
		[GPT_COLL_ALLREDUCE] = "AllReduce", [GPT_COLL_ALLGATHER] = "AllGather",
		[GPT_COLL_REDUCESCATTER] = "ReduceScatter", [GPT_COLL_BROADCAST] = "Broadcast",
		[GPT_COLL_REDUCE] = "Reduce", [GPT_COLL_ALLTOALL] = "AlltoAll",
	};

	if (!s)
		return GPT_COLL_OTHER;
	if (!strncmp(s, "nccl", 4))
		s += 4;
	for (uint32_t i = 1; i < GPT_COLL__FNS; i++)
		if (!strcasecmp(s, fns[i]))
			return i;
	return GPT_COLL_OTHER;
}

/* "ncclFloat32", "float32"... : bytes an element, 0 unknown */
static uint32_t size_of(const char *s)
{
	static const struct {
		const char *name;
		uint32_t size;
	} types[] = {
		{ "Int8", 1 }, { "Char", 1 }, { "Uint8", 1 }, { "Int32", 4 }, { "Int", 4 }, { "Uint32", 4 },
		{ "Int64", 8 }, { "Uint64", 8 }, { "Float16", 2 }, { "Half", 2 }, { "Float32", 4 },
		{ "Float", 4 }, { "Float64", 8 }, { "Double", 8 }, { "Bfloat16", 2 }, { "Float8e4m3", 1 },
		{ "Float8e5m2", 1 },
	};

	if (!s)
		return 0;
	if (!strncmp(s, "nccl", 4))
		s += 4;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcasecmp(s, types[i].name))
			return types[i].size;
	return 0;
}

static gpt_nccl_result p_init(void **context, int *mask, const char *name, uint64_t hash, int nnodes, int nranks,
			      int rank, gpt_nccl_logger log)
{
	struct ctx *c = calloc(1, sizeof(*c));

	(void)name;
	(void)nnodes;
	(void)log;
	*context = c;
	*mask = 0;
	if (!c)
		return GPT_NCCL_SUCCESS; /* no events: NCCL runs on */
	c->tag = TAG_CTX;
	c->comm_hash = hash;
	c->nranks = nranks;
	c->rank = rank;
	pthread_mutex_lock(&lock);
	if (!inits++ && gpt_sender_open(GPT_SRC_NCCL)) {
		struct gpt_hello m = { .h = { .type = GPT_HELLO, .size = sizeof(m) }, .source = GPT_SRC_NCCL };

		m.mono_ns = m.src_ts = mono_ns();
		gpt_sender_add(&m, sizeof(m));
	}
	pthread_mutex_unlock(&lock);
	*mask = c->mask = GPT_PROF_COLL | GPT_PROF_KERNEL_CH;
	return GPT_NCCL_SUCCESS;
}

#define STALE_NS 2000000000ull /* a stopped collective whose channels never all came: sent then */
#define SWEEP_EVERY 256          /* collectives between two looks for stale ones */
static unsigned int started;

/* The collective's record (lock held). NCCL stops a collective's event once it is enqueued
 * (the host's side), and its kernel channels' events come later from its proxy thread with
 * the GPU timers: the record waits for the channels the descriptor announced. */
static void send_coll(struct coll *c)
{
	struct gpt_coll r = { .h = { .type = GPT_COLL, .size = sizeof(r) } };

	r.comm_hash = c->comm_hash;
	r.nranks = (uint32_t)c->nranks;
	r.rank = (uint32_t)c->rank;
	r.fn = c->fn;
	r.type_size = c->type_size;
	r.count = c->count;
	r.channels = c->channels;
	r.gpu_timed = c->channels && c->gpu_stop > c->gpu_start;
	r.start = r.gpu_timed ? c->gpu_start : c->host_start;
	r.end = r.gpu_timed ? c->gpu_stop : c->host_stop;
	gpt_sender_add(&r, sizeof(r));
	gpt_sender_count(1, 0, 0);
	c->tag = 0;
}

static void maybe_send(struct coll *c)
{
	if (!c->stopped || c->refs > 0)
		return;
	if (c->wait_channels && c->expect && c->ended < c->expect)
		return;
	send_coll(c);
}

/* Collectives stopped over STALE_NS ago whose channels did not all come (lock held). */
static void sweep(uint64_t now)
{
	for (unsigned int i = 0; i < POOL; i++) {
		struct coll *c = &colls[i];

		if (c->tag == TAG_COLL && c->stopped && !c->refs && now - c->host_stop > STALE_NS)
			send_coll(c);
	}
}

static gpt_nccl_result p_start(void *context, void **handle, gpt_prof_descr_v4 *d)
{
	struct ctx *x = context;

	*handle = NULL;
	if (!x || x->tag != TAG_CTX || !d)
		return GPT_NCCL_SUCCESS;
	pthread_mutex_lock(&lock);
	if (d->type == GPT_PROF_COLL) {
		struct coll *c;
		uint64_t now = mono_ns();

		if (++started % SWEEP_EVERY == 0)
			sweep(now);
		c = take(colls, sizeof(*c), &next_coll);
		if (c)
			*c = (struct coll){ .tag = TAG_COLL, .comm_hash = x->comm_hash,
					    .nranks = x->nranks, .rank = x->rank, .fn = fn_of(d->coll.func),
					    .type_size = size_of(d->coll.datatype), .count = d->coll.count,
					    .host_start = now, .expect = d->coll.nChannels,
					    .wait_channels = !!(x->mask & GPT_PROF_KERNEL_CH) };
		*handle = c;
	} else if (d->type == GPT_PROF_KERNEL_CH) {
		/* only a channel of a collective of ours (p2p's have no handle here) */
		struct coll *c = coll_of(d->parentObj);
		struct kch *k = c ? take(kchs, sizeof(*k), &next_kch) : NULL;

		if (k) {
			*k = (struct kch){ .tag = TAG_KCH, .coll = c, .start = d->kernelCh.pTimer };
			c->refs++;
		}
		*handle = k;
	}
	pthread_mutex_unlock(&lock);
	return GPT_NCCL_SUCCESS;
}

static gpt_nccl_result p_state(void *handle, int state, gpt_prof_state_args_v4 *a)
{
	struct kch *k = kch_of(handle);

	if (k && state == GPT_PROF_KERNEL_CH_STOP && a)
		k->stop = a->kernelCh.pTimer;
	return GPT_NCCL_SUCCESS;
}

static gpt_nccl_result p_stop(void *handle)
{
	struct coll *c;
	struct kch *k;

	pthread_mutex_lock(&lock);
	if ((c = coll_of(handle))) {
		c->host_stop = mono_ns();
		c->stopped = true;
		maybe_send(c);
	} else if ((k = kch_of(handle))) {
		c = k->coll;
		if (k->stop > k->start) {
			if (!c->gpu_start || k->start < c->gpu_start)
				c->gpu_start = k->start;
			if (k->stop > c->gpu_stop)
				c->gpu_stop = k->stop;
			c->channels++;
		}
		c->ended++;
		c->refs--;
		k->tag = 0;
		maybe_send(c);
	}
	pthread_mutex_unlock(&lock);
	return GPT_NCCL_SUCCESS;
}

static gpt_nccl_result p_finalize(void *context)
{
	struct ctx *x = context;

	if (x && x->tag == TAG_CTX) {
		x->tag = 0;
		free(x);
	}
	pthread_mutex_lock(&lock);
	sweep(UINT64_MAX / 2); /* the communicator ends: whatever waits goes now */
	gpt_sender_count(0, no_slot, 0);
	no_slot = 0;
	pthread_mutex_unlock(&lock);
	gpt_sender_stats(true);
	return GPT_NCCL_SUCCESS;
}

__attribute__((visibility("default"))) gpt_profiler_v4 ncclProfiler_v4 = {
	.name = "gpuprobe",
	.init = p_init,
	.startEvent = p_start,
	.stopEvent = p_stop,
	.recordEventState = p_state,
	.finalize = p_finalize,
};
