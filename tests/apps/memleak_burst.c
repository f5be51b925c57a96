/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memleak_burst - floods the tracer with allocation events, for ring-buffer
 * overflow tests: each of --threads threads makes --allocs back-to-back
 * cuMemAlloc_v2(4096) calls, then frees them all.  The threads are created
 * before READY and released together after SIGUSR1, so the burst is as
 * dense as the machine allows.  Nothing leaks; the ground-truth JSON line
 * on stderr says how many events a lossless tracer would have seen.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define BURST_SIZE 4096

static const char usage[] = "[--allocs N] [--threads T] [--wait]";

static CUcontext g_ctx;
static pthread_barrier_t g_start;
static unsigned long long g_allocs = 1000;

__attribute__((noinline)) void *burst_thread(void *arg)
{
	CUdeviceptr *ptrs = arg;

	CHECK(cuCtxSetCurrent(g_ctx));
	pthread_barrier_wait(&g_start);
	for (unsigned long long i = 0; i < g_allocs; i++)
		CHECK(cuMemAlloc_v2(&ptrs[i], BURST_SIZE));
	for (unsigned long long i = 0; i < g_allocs; i++)
		CHECK(cuMemFree_v2(ptrs[i]));
	return NULL;
}

int main(int argc, char **argv)
{
	enum { O_ALLOCS = 1, O_THREADS, O_WAIT };
	static const struct option longopts[] = {
		{ "allocs", required_argument, NULL, O_ALLOCS },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "wait", no_argument, NULL, O_WAIT },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long threads = 4;
	struct truth t = { .api = "alloc" };
	CUdeviceptr **ptrs;
	pthread_t *tids;
	int wait = 0, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		const char *name = optind > 0 ? argv[optind - 1] : "?";

		switch (c) {
		case O_ALLOCS: g_allocs = app_parse_u64(name, optarg); break;
		case O_THREADS: threads = app_parse_u64(name, optarg); break;
		case O_WAIT: wait = 1; break;
		default:
			app_usage_error(argv[0], usage,
					"unknown or incomplete option '%s'", name);
		}
	}
	if (optind < argc)
		app_usage_error(argv[0], usage, "unexpected argument '%s'",
				argv[optind]);
	if (threads < 1 || threads > 1024)
		app_usage_error(argv[0], usage, "--threads must be 1..1024");

	app_block_signal();
	g_ctx = app_cuda_init();

	tids = calloc(threads, sizeof(*tids));
	ptrs = calloc(threads, sizeof(*ptrs));
	if (!tids || !ptrs)
		return 1;
	/* threads + 1: main releases them once the tracer is attached. */
	pthread_barrier_init(&g_start, NULL, (unsigned int)threads + 1);
	for (unsigned long long i = 0; i < threads; i++) {
		ptrs[i] = calloc(g_allocs ? g_allocs : 1, sizeof(**ptrs));
		if (!ptrs[i] ||
		    pthread_create(&tids[i], NULL, burst_thread, ptrs[i])) {
			fprintf(stderr, "cannot start thread\n");
			return 1;
		}
	}
	if (wait)
		app_wait_ready();
	pthread_barrier_wait(&g_start);
	for (unsigned long long i = 0; i < threads; i++) {
		pthread_join(tids[i], NULL);
		free(ptrs[i]);
	}

	t.allocs = t.frees = g_allocs * threads;
	truth_print(stderr, &t, NULL);
	free(tids);
	free(ptrs);
	return 0;
}
