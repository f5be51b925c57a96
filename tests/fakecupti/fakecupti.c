// SPDX-License-Identifier: BSD-3-Clause
/*
 * fakecupti.c - a stand-in libcupti.so for testing gpuprobe --gpu-time without a GPU:
 * the activity API's buffer protocol (cuptiActivityRegisterCallbacks, buffers requested
 * and completed from a thread of its own, cuptiActivityGetNextRecord walking a buffer,
 * cuptiActivityFlushAll, cuptiActivityGetNumDroppedRecords) with records in CUPTI's
 * layouts (src/inject/cupti_decl.h's offsets), scripted by FAKECUPTI_SCRIPT, items
 * separated by ';':
 *   kernel,NAME,COUNT,DUR_NS,GX,GY,GZ,BX,BY,BZ     COUNT kernels of DUR_NS each
 *   copy,KIND,COUNT,BYTES,DUR_NS[,SRC,DST]        COUNT copies (KIND: CUpti_ActivityMemcpyKind;
 *                                                 SRC,DST given: peer copies, MEMCPY2 records)
 *   memset,COUNT,BYTES,DUR_NS
 *   other,COUNT                                   records of a kind the reader skips
 * FAKECUPTI_BATCH (default 7) records a buffer; FAKECUPTI_DROPPED: what the first
 * cuptiActivityGetNumDroppedRecords says. Records are delivered once a kind is enabled;
 * cuptiActivityFlushAll waits for all of them. The script is the test's truth.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cupti_decl.h"

#define EXPORT __attribute__((visibility("default")))
#define KERNEL_SIZE 144 /* CUpti_ActivityKernel's are longer; the reader walks by our size */
#define COPY_SIZE 64
#define PTOP_SIZE 72
#define MEMSET_SIZE 56
#define OTHER_SIZE 32
#define KIND_OTHER 5 /* CUPTI_ACTIVITY_KIND_RUNTIME: not read by libgpuprobe_cupti */

struct rec {
	int kind;
	const char *name;
	uint64_t dur, bytes;
	uint32_t grid[3], block[3], src, dst, copy_kind;
};

static gpt_cupti_request_fn request;
static gpt_cupti_complete_fn complete;
static struct rec *recs;
static size_t nrecs;
static pthread_t thread;
static int started;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t dropped_once;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void add(struct rec r, unsigned long n)
{
	struct rec *g = realloc(recs, (nrecs + n) * sizeof(*recs));

	if (!g)
		abort();
	recs = g;
	while (n--)
		recs[nrecs++] = r;
}

static void parse(void)
{
	const char *env = getenv("FAKECUPTI_SCRIPT");
	char *s = env ? strdup(env) : NULL, *save = NULL;

	for (char *item = s ? strtok_r(s, ";", &save) : NULL; item; item = strtok_r(NULL, ";", &save)) {
		char name[512];
		unsigned long n = 0;
		struct rec r = { 0 };

		if (sscanf(item, "kernel,%511[^,],%lu,%lu,%u,%u,%u,%u,%u,%u", name, &n, &r.dur, &r.grid[0], &r.grid[1],
			   &r.grid[2], &r.block[0], &r.block[1], &r.block[2]) == 9) {
			r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
			r.name = strdup(name); /* one string a kernel, as CUPTI keeps */
		} else if (!strncmp(item, "copy,", 5)) {
			int got = sscanf(item, "copy,%u,%lu,%lu,%lu,%u,%u", &r.copy_kind, &n, &r.bytes, &r.dur, &r.src, &r.dst);

			if (got != 4 && got != 6)
				continue;
			r.kind = got == 6 ? CUPTI_ACTIVITY_KIND_MEMCPY2 : CUPTI_ACTIVITY_KIND_MEMCPY;
		} else if (sscanf(item, "memset,%lu,%lu,%lu", &n, &r.bytes, &r.dur) == 3) {
			r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
		} else if (sscanf(item, "other,%lu", &n) == 1) {
			r.kind = KIND_OTHER;
		} else {
			fprintf(stderr, "fakecupti: FAKECUPTI_SCRIPT: cannot read '%s'\n", item);
			continue;
		}
		add(r, n);
	}
	free(s);
}

static size_t size_of(int kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return KERNEL_SIZE;
	case CUPTI_ACTIVITY_KIND_MEMCPY: return COPY_SIZE;
	case CUPTI_ACTIVITY_KIND_MEMCPY2: return PTOP_SIZE;
	case CUPTI_ACTIVITY_KIND_MEMSET: return MEMSET_SIZE;
	default: return OTHER_SIZE;
	}
}

static void put(uint8_t *b, size_t off, const void *v, size_t n)
{
	memcpy(b + off, v, n);
}

/* One record in CUPTI's layout at b; its GPU start is *t, its end *t + dur. */
static void write_rec(uint8_t *b, const struct rec *r, uint64_t *t, uint32_t corr)
{
	uint64_t start = *t, end = *t + r->dur;
	uint32_t dev = 0, stream = 7, kind = (uint32_t)r->kind;

	memset(b, 0, size_of(r->kind));
	put(b, 0, &kind, 4);
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		put(b, CUPTI_KERNEL_START, &start, 8);
		put(b, CUPTI_KERNEL_END, &end, 8);
		put(b, CUPTI_KERNEL_DEVICE, &dev, 4);
		put(b, CUPTI_KERNEL_STREAM, &stream, 4);
		put(b, CUPTI_KERNEL_GRID, r->grid, 12);
		put(b, CUPTI_KERNEL_BLOCK, r->block, 12);
		put(b, CUPTI_KERNEL_CORR, &corr, 4);
		put(b, CUPTI_KERNEL_NAME, &r->name, sizeof(r->name));
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		b[CUPTI_COPY_KIND] = (uint8_t)r->copy_kind;
		put(b, CUPTI_COPY_BYTES, &r->bytes, 8);
		put(b, CUPTI_COPY_START, &start, 8);
		put(b, CUPTI_COPY_END, &end, 8);
		if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
			dev = r->src;
			put(b, CUPTI_PTOP_SRC_DEVICE, &r->src, 4);
			put(b, CUPTI_PTOP_DST_DEVICE, &r->dst, 4);
			put(b, CUPTI_PTOP_CORR, &corr, 4);
		} else {
			put(b, CUPTI_COPY_CORR, &corr, 4);
		}
		put(b, CUPTI_COPY_DEVICE, &dev, 4);
		put(b, CUPTI_COPY_STREAM, &stream, 4);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		put(b, CUPTI_MEMSET_BYTES, &r->bytes, 8);
		put(b, CUPTI_MEMSET_START, &start, 8);
		put(b, CUPTI_MEMSET_END, &end, 8);
		put(b, CUPTI_MEMSET_DEVICE, &dev, 4);
		put(b, CUPTI_MEMSET_STREAM, &stream, 4);
		put(b, CUPTI_MEMSET_CORR, &corr, 4);
		break;
	}
	*t = end + 1000;
}

static void *deliver(void *arg)
{
	size_t batch = getenv("FAKECUPTI_BATCH") ? strtoul(getenv("FAKECUPTI_BATCH"), NULL, 10) : 7;
	uint64_t t = now_ns();

	(void)arg;
	if (!batch)
		batch = 7;
	for (size_t i = 0; i < nrecs;) {
		uint8_t *buf = NULL;
		size_t size = 0, max = 0, used = 0;

		request(&buf, &size, &max);
		if (!buf)
			return NULL;
		for (size_t k = 0; k < batch && i < nrecs && used + size_of(recs[i].kind) <= size; k++, i++) {
			write_rec(buf + used, &recs[i], &t, (uint32_t)i + 1);
			used += size_of(recs[i].kind);
		}
		complete(NULL, 0, buf, size, used);
		nanosleep(&(struct timespec){ 0, 200000 }, NULL);
	}
	return NULL;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(gpt_cupti_request_fn req, gpt_cupti_complete_fn comp)
{
	request = req;
	complete = comp;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	(void)kind;
	pthread_mutex_lock(&lock);
	if (!started && request && complete) {
		const char *d = getenv("FAKECUPTI_DROPPED");

		dropped_once = d ? strtoul(d, NULL, 10) : 0;
		parse();
		started = !pthread_create(&thread, NULL, deliver, NULL);
	}
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	pthread_mutex_lock(&lock);
	if (started == 1) {
		pthread_join(thread, NULL);
		started = 2;
	}
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	size_t off;
	uint32_t kind;

	if (!*record) {
		off = 0;
	} else {
		memcpy(&kind, *record, 4);
		off = (size_t)((uint8_t *)*record - buffer) + size_of((int)kind);
	}
	if (off >= valid) {
		*record = NULL;
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	}
	*record = (CUpti_Activity *)(buffer + off);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *dropped)
{
	(void)ctx;
	(void)stream;
	*dropped = __atomic_exchange_n(&dropped_once, 0, __ATOMIC_ACQ_REL);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetTimestamp(uint64_t *ts)
{
	*ts = now_ns();
	return CUPTI_SUCCESS;
}
