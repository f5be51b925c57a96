// SPDX-License-Identifier: BSD-3-Clause
/*
 * libgpuprobe_cupti.so: --gpu-time's CUDA injection library. CUDA loads the library that
 * CUDA_INJECTION64_PATH names at cuInit and calls its InitializeInjection; it dlopens
 * libcupti (GPUPROBE_CUPTI_LIB, else the usual names: no CUPTI at build time), enables the
 * activity records of kernels, copies and memsets, and sends each completed buffer's
 * records to gpuprobe in the compact form of gputime_wire.h. The few CUPTI types it reads
 * are declared here from cupti_activity.h's documented layouts (the fields read are the
 * leading ones, which have kept their offsets across the record versions since CUDA 11:
 * CUpti_ActivityKernel4..10, CUpti_ActivityMemcpy4..6, CUpti_ActivityMemcpyPtoP2..4,
 * CUpti_ActivityMemset2..4). tests/fakecupti/check_layout.sh compares them with a header.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cupti_decl.h"
#include "gputime_wire.h"
#include "sender.h"

#define BUF_BYTES (1u << 20) /* one activity buffer */
#define NAMES 4096           /* kernel names remembered (by pointer), per process */

static struct {
	CUptiResult (*enable)(CUpti_ActivityKind);
	CUptiResult (*register_cbs)(gpt_cupti_request_fn, gpt_cupti_complete_fn);
	CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
	CUptiResult (*flush_all)(uint32_t);
	CUptiResult (*dropped)(void *, uint32_t, size_t *);
	CUptiResult (*timestamp)(uint64_t *);
} cupti;

/* kernel names by CUPTI's string pointer (CUPTI keeps one string per function) and by
 * content when the pointer is new: an open-addressing table, ids from 1 */
static struct {
	const char *ptr;
	uint32_t id;
} names[NAMES * 2];
static uint32_t next_name_id = 1;
static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void send_name(uint32_t id, const char *s)
{
	struct {
		struct gpt_name n;
		char bytes[GPT_NAME_MAX];
	} r;
	size_t len = strnlen(s, GPT_NAME_MAX);

	r.n = (struct gpt_name){ .h = { .type = GPT_NAME, .size = (uint16_t)(sizeof(r.n) + len) }, .id = id,
				 .len = (uint32_t)len };
	memcpy(r.bytes, s, len);
	gpt_sender_add(&r, sizeof(r.n) + len);
}

/* The id of a kernel's name, sent the first time; 0 when the table is full. */
static uint32_t name_id(const char *s)
{
	uintptr_t h = ((uintptr_t)s >> 3) * 0x9e3779b97f4a7c15ull;
	uint32_t id = 0;

	if (!s)
		return 0;
	pthread_mutex_lock(&name_lock);
	for (size_t i = 0; i < NAMES * 2; i++) {
		size_t k = (h + i) % (NAMES * 2);

		if (names[k].ptr == s) {
			id = names[k].id;
			break;
		}
		if (!names[k].ptr) {
			if (next_name_id > NAMES)
				break;
			names[k].ptr = s;
			names[k].id = id = next_name_id++;
			send_name(id, s);
			break;
		}
	}
	pthread_mutex_unlock(&name_lock);
	return id;
}

static void on_kernel(const uint8_t *r)
{
	struct gpt_kernel k = { .h = { .type = GPT_KERNEL, .size = sizeof(k) } };
	const char *name;

	memcpy(&k.start, r + CUPTI_KERNEL_START, 8);
	memcpy(&k.end, r + CUPTI_KERNEL_END, 8);
	memcpy(&k.device, r + CUPTI_KERNEL_DEVICE, 4);
	memcpy(&k.stream, r + CUPTI_KERNEL_STREAM, 4);
	memcpy(k.grid, r + CUPTI_KERNEL_GRID, 12);
	memcpy(k.block, r + CUPTI_KERNEL_BLOCK, 12);
	memcpy(&k.corr, r + CUPTI_KERNEL_CORR, 4);
	memcpy(&name, r + CUPTI_KERNEL_NAME, sizeof(name));
	k.name_id = name_id(name);
	gpt_sender_add(&k, sizeof(k));
}

static void on_copy(const uint8_t *r, bool peer)
{
	struct gpt_copy c = { .h = { .type = GPT_COPY, .size = sizeof(c) }, .src_dev = GPT_NO_DEVICE,
			      .dst_dev = GPT_NO_DEVICE };

	c.kind = r[CUPTI_COPY_KIND];
	memcpy(&c.bytes, r + CUPTI_COPY_BYTES, 8);
	memcpy(&c.start, r + CUPTI_COPY_START, 8);
	memcpy(&c.end, r + CUPTI_COPY_END, 8);
	memcpy(&c.device, r + CUPTI_COPY_DEVICE, 4);
	memcpy(&c.stream, r + CUPTI_COPY_STREAM, 4);
	if (peer) {
		memcpy(&c.src_dev, r + CUPTI_PTOP_SRC_DEVICE, 4);
		memcpy(&c.dst_dev, r + CUPTI_PTOP_DST_DEVICE, 4);
		memcpy(&c.corr, r + CUPTI_PTOP_CORR, 4);
	} else {
		memcpy(&c.corr, r + CUPTI_COPY_CORR, 4);
	}
	gpt_sender_add(&c, sizeof(c));
}

static void on_memset(const uint8_t *r)
{
	struct gpt_memset m = { .h = { .type = GPT_MEMSET, .size = sizeof(m) } };

	memcpy(&m.bytes, r + CUPTI_MEMSET_BYTES, 8);
	memcpy(&m.start, r + CUPTI_MEMSET_START, 8);
	memcpy(&m.end, r + CUPTI_MEMSET_END, 8);
	memcpy(&m.device, r + CUPTI_MEMSET_DEVICE, 4);
	memcpy(&m.stream, r + CUPTI_MEMSET_STREAM, 4);
	memcpy(&m.corr, r + CUPTI_MEMSET_CORR, 4);
	gpt_sender_add(&m, sizeof(m));
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = aligned_alloc(CUPTI_RECORD_ALIGN, BUF_BYTES);
	*size = *buffer ? BUF_BYTES : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	uint64_t records = 0, unknown = 0;
	size_t dropped = 0;
	CUpti_Activity *r = NULL;

	(void)size;
	while (buffer && cupti.next(buffer, valid, &r) == CUPTI_SUCCESS && r) {
		uint32_t kind;

		memcpy(&kind, r, 4);
		records++;
		switch (kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
			on_kernel((const uint8_t *)r);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY:
			on_copy((const uint8_t *)r, false);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY2:
			on_copy((const uint8_t *)r, true);
			break;
		case CUPTI_ACTIVITY_KIND_MEMSET:
			on_memset((const uint8_t *)r);
			break;
		default:
			unknown++;
		}
	}
	if (cupti.dropped && cupti.dropped(ctx, stream, &dropped) != CUPTI_SUCCESS)
		dropped = 0;
	free(buffer);
	gpt_sender_count(records, dropped, unknown);
	gpt_sender_stats(false);
}

static void at_exit(void)
{
	if (cupti.flush_all)
		cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	gpt_sender_stats(true);
}

static void *open_cupti(void)
{
	static const char *const tries[] = {
		"libcupti.so", "libcupti.so.13", "libcupti.so.12",
		"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", "/usr/local/cuda/lib64/libcupti.so",
	};
	const char *env = getenv(GPT_ENV_CUPTI);
	void *h = NULL;

	if (env && *env)
		return dlopen(env, RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; !h && i < sizeof(tries) / sizeof(tries[0]); i++)
		h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
	return h;
}

static int resolve(void *h)
{
	*(void **)&cupti.enable = dlsym(h, "cuptiActivityEnable");
	*(void **)&cupti.register_cbs = dlsym(h, "cuptiActivityRegisterCallbacks");
	*(void **)&cupti.next = dlsym(h, "cuptiActivityGetNextRecord");
	*(void **)&cupti.flush_all = dlsym(h, "cuptiActivityFlushAll");
	*(void **)&cupti.dropped = dlsym(h, "cuptiActivityGetNumDroppedRecords");
	*(void **)&cupti.timestamp = dlsym(h, "cuptiGetTimestamp");
	return cupti.enable && cupti.register_cbs && cupti.next && cupti.flush_all ? 0 : -1;
}

static void hello(void)
{
	struct gpt_hello m = { .h = { .type = GPT_HELLO, .size = sizeof(m) }, .source = GPT_SRC_CUPTI };

	if (cupti.timestamp)
		cupti.timestamp(&m.src_ts);
	m.mono_ns = mono_ns();
	gpt_sender_add(&m, sizeof(m));
	gpt_sender_flush(false);
}

/* CUDA's call at cuInit: 1 when the records are on. Says why on stderr when not, once. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	static const CUpti_ActivityKind kinds[] = {
		CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
		CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
	};
	static int done;
	void *h;

	if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return 1;
	if (!gpt_sender_open(GPT_SRC_CUPTI))
		return 1; /* no gpuprobe to send to: nothing to do */
	h = open_cupti();
	if (!h || resolve(h)) {
		fprintf(stderr, "gpuprobe --gpu-time: no usable libcupti (%s): no exact GPU times\n",
			h ? "its functions are missing" : dlerror());
		return 1;
	}
	hello();
	if (cupti.register_cbs(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
		fprintf(stderr, "gpuprobe --gpu-time: cuptiActivityRegisterCallbacks failed\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (cupti.enable(kinds[i]) != CUPTI_SUCCESS)
			fprintf(stderr, "gpuprobe --gpu-time: cuptiActivityEnable(%d) failed\n", (int)kinds[i]);
	atexit(at_exit);
	return 1;
}
