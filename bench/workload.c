/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_workload - tight loops of CUDA driver calls against the stand-in driver, timed
 * with clock_gettime, for bench/run.py.
 *
 *   bench_workload launch    [-n N] [-r ROUNDS] [-w WARMUP] [-t THREADS] [-R RATE]
 *       N x cuLaunchKernel(f, 1,1,1, 1,1,1, 0, NULL stream, NULL, NULL) per round
 *       -R RATE paces them at RATE launches per second per thread
 *   bench_workload allocfree [-n N] [-r ROUNDS] [-w WARMUP] [-t THREADS]
 *       N x (cuMemAlloc_v2(4096) + cuMemFree_v2) per round and thread
 *   bench_workload copy      [-n N] [-r ROUNDS] [-w WARMUP] [-t THREADS] [-b BYTES]
 *       N x cuMemcpyHtoD_v2(dev, host, BYTES) per round and thread (default 64 bytes;
 *       set FAKECUDA_BW high so that the stand-in does not sleep for the copy)
 *   bench_workload query     [-n N] [-r ROUNDS] [-w WARMUP] [-t THREADS]
 *       N x cuEventQuery(ev) per round and thread, each CUDA_ERROR_NOT_READY: a poll loop
 *       (PyTorch's watchdog polls its end events so); ev is recorded after an hour-long
 *       kernel on a stream destroyed at once (the stand-in forgets its work: no sync waits)
 *   bench_workload soak      [-s SECONDS] [-k KERNELS]
 *       launches over KERNELS kernels and 4 shapes, an alloc/free pair (4 KiB) every 64
 *       launches, until SECONDS have passed
 *
 * Output, one line per round then a summary, on stdout:
 *   round R ns_per_call X        (launch: per launch; allocfree: per alloc+free pair)
 *   result MODE ns_per_call MEDIAN calls TOTAL seconds ELAPSED
 * -H SECONDS holds the process that long after the result line (launch, allocfree), so
 * that a tracer's BPF programs can still be read. Set FAKECUDA_KERNEL_NS=0 so that the
 * stand-in's own work per launch is tiny.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"
#include "fakecuda_ext.h"

#define MAX_ROUNDS 1000
#define MAX_KERNELS 4096

static void check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS) {
		fprintf(stderr, "bench_workload: %s failed: %d\n", what, (int)rc);
		exit(1);
	}
}

#define CHECK(call) check((call), #call)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static CUcontext g_ctx;
static CUfunction g_funcs[MAX_KERNELS];
static size_t g_copy_bytes = 64;
static char g_host[1 << 16];

static void init(int kernels)
{
	CUdevice dev;
	CUmodule mod;
	size_t cap = (size_t)kernels * 32 + 1, len = 0;
	char *image = malloc(cap), name[32];

	if (!image)
		exit(1);
	image[0] = '\0';
	for (int i = 0; i < kernels; i++)
		len += (size_t)snprintf(image + len, cap - len, "bench_kernel_%d\n", i);
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
	CHECK(cuCtxSetCurrent(g_ctx));
	CHECK(cuModuleLoadData(&mod, image));
	for (int i = 0; i < kernels; i++) {
		snprintf(name, sizeof(name), "bench_kernel_%d", i);
		CHECK(cuModuleGetFunction(&g_funcs[i], mod, name));
	}
	free(image);
}

static double g_rate; /* -R: launches per second per thread, 0 = as fast as possible */

/* The fastest launch path: one kernel, one shape, the default stream. */
static __attribute__((noinline)) void launch_loop(long n)
{
	CUfunction f = g_funcs[0];
	double t0 = now_s();

	for (long i = 0; i < n; i++) {
		/* paced: spin until this call's slot */
		while (g_rate > 0 && now_s() - t0 < (double)i / g_rate)
			;
		CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
	}
}

static __attribute__((noinline)) void allocfree_loop(long n)
{
	CUdeviceptr p;

	for (long i = 0; i < n; i++) {
		CHECK(cuMemAlloc_v2(&p, 4096));
		CHECK(cuMemFree_v2(p));
	}
}

static __attribute__((noinline)) void copy_loop(long n, CUdeviceptr d)
{
	for (long i = 0; i < n; i++)
		CHECK(cuMemcpyHtoD_v2(d, g_host, g_copy_bytes));
}

static CUevent g_busy; /* query: an event that stays not ready */

static void busy_event(void)
{
	CUstream s;

	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuEventCreate(&g_busy, 0));
	fakecuda_set_next_kernel_ns(3600ULL * 1000000000ULL);
	CHECK(cuLaunchKernel(g_funcs[0], 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
	CHECK(cuEventRecord(g_busy, s));
	CHECK(cuStreamDestroy_v2(s));
}

static __attribute__((noinline)) void query_loop(long n)
{
	for (long i = 0; i < n; i++)
		if (cuEventQuery(g_busy) != CUDA_ERROR_NOT_READY) {
			fprintf(stderr, "bench_workload: the busy event is ready\n");
			exit(1);
		}
}

struct thread_arg {
	const char *mode;
	long n;
	pthread_barrier_t *go;
};

static void run_loop(const char *mode, long n)
{
	CUdeviceptr d;

	if (!strcmp(mode, "launch")) {
		launch_loop(n);
	} else if (!strcmp(mode, "allocfree")) {
		allocfree_loop(n);
	} else if (!strcmp(mode, "query")) {
		query_loop(n);
	} else {
		CHECK(cuMemAlloc_v2(&d, g_copy_bytes));
		copy_loop(n, d);
		CHECK(cuMemFree_v2(d));
	}
}

static void *loop_thread(void *arg)
{
	struct thread_arg *a = arg;

	CHECK(cuCtxSetCurrent(g_ctx));
	pthread_barrier_wait(a->go);
	run_loop(a->mode, a->n);
	return NULL;
}

/* One timed round of n calls per thread; returns seconds. The copy mode's device buffer is
 * allocated and freed inside the round, once per thread (two calls among n). */
static double run_round(const char *mode, long n, int threads)
{
	pthread_t tids[64];
	pthread_barrier_t go;
	struct thread_arg a = { .mode = mode, .n = n, .go = &go };
	double t0, t1;

	if (threads <= 1) {
		t0 = now_s();
		run_loop(mode, n);
		t1 = now_s();
		CHECK(cuCtxSynchronize());
		return t1 - t0;
	}
	pthread_barrier_init(&go, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, loop_thread, &a)) {
			fprintf(stderr, "bench_workload: cannot start a thread\n");
			exit(1);
		}
	t0 = now_s();
	pthread_barrier_wait(&go);
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	t1 = now_s();
	pthread_barrier_destroy(&go);
	CHECK(cuCtxSynchronize());
	return t1 - t0;
}

static void soak(double seconds, int kernels)
{
	static const unsigned int shapes[4][2] = { { 1, 32 }, { 64, 128 }, { 1024, 256 }, { 7, 1024 } };
	double t0 = now_s(), t = t0;
	unsigned long long launches = 0, pairs = 0;
	CUdeviceptr p;

	while (t - t0 < seconds) {
		for (int i = 0; i < 4096; i++) {
			const unsigned int *s = shapes[(launches / (unsigned)kernels) % 4];

			CHECK(cuLaunchKernel(g_funcs[launches % (unsigned)kernels], s[0], 1, 1, s[1],
					     1, 1, 0, NULL, NULL, NULL));
			if (++launches % 64 == 0) {
				CHECK(cuMemAlloc_v2(&p, 4096)); /* addresses are never reused: keep them small */
				CHECK(cuMemFree_v2(p));
				pairs++;
			}
		}
		CHECK(cuCtxSynchronize());
		t = now_s();
	}
	printf("result soak launches %llu allocfree_pairs %llu seconds %.3f\n", launches, pairs,
	       t - t0);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_workload launch|allocfree|copy|soak [-n N] [-r ROUNDS] "
			"[-w WARMUP] [-t THREADS] [-b BYTES] [-R RATE] [-s SECONDS] [-k KERNELS] [-H HOLD]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long n = 200000, warm = 20000;
	int rounds = 5, threads = 1, kernels = 1, c;
	double seconds = 10, hold = 0, per[MAX_ROUNDS], total = 0;
	const char *mode;

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "n:r:w:t:s:k:H:b:R:")) != -1) {
		switch (c) {
		case 'n': n = atol(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'w': warm = atol(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'k': kernels = atoi(optarg); break;
		case 'H': hold = atof(optarg); break;
		case 'b': g_copy_bytes = (size_t)atol(optarg); break;
		case 'R': g_rate = atof(optarg); break;
		default: usage();
		}
	}
	if (n < 1 || rounds < 1 || rounds > MAX_ROUNDS || warm < 0 || threads < 1 ||
	    threads > 64 || kernels < 1 || kernels > MAX_KERNELS || seconds <= 0 || hold < 0 ||
	    g_copy_bytes < 1 || g_copy_bytes > sizeof(g_host) || g_rate < 0)
		usage();
	if (strcmp(mode, "launch") && strcmp(mode, "allocfree") && strcmp(mode, "copy") &&
	    strcmp(mode, "query") && strcmp(mode, "soak"))
		usage();
	if (!strcmp(mode, "soak") && threads != 1)
		usage();

	setvbuf(stdout, NULL, _IOLBF, 0);
	init(!strcmp(mode, "soak") ? kernels : 1);
	if (!strcmp(mode, "query"))
		busy_event();
	if (!strcmp(mode, "soak")) {
		soak(seconds, kernels);
		return 0;
	}
	if (warm)
		run_round(mode, warm, 1);
	for (int r = 0; r < rounds; r++) {
		double s = run_round(mode, n, threads);

		/* threads run in parallel: ns per call is wall time over one thread's calls */
		per[r] = s * 1e9 / (double)n;
		total += s;
		printf("round %d ns_per_call %.2f\n", r, per[r]);
	}
	printf("result %s ns_per_call %.2f calls %ld threads %d seconds %.4f\n", mode,
	       median(per, rounds), n * rounds * threads, threads, total);
	if (hold > 0) {
		struct timespec ts = { (time_t)hold, (long)((hold - (double)(time_t)hold) * 1e9) };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return 0;
}
