/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stacks_workload - what a stack costs per allocation, for bench/run.py's "stacks"
 * section. Built -O2 -fomit-frame-pointer, as programs usually are: each allocation is
 * cuMemAlloc_v2(4096) + cuMemFree_v2 reached through a chain of three functions, so an
 * unwinder has real frames to walk.
 *
 *   stacks_workload [-n N] [-r ROUNDS] [-w WARMUP] [-R RATE] [-H SECONDS]
 *
 * Each alloc/free pair is timed on its own (CLOCK_MONOTONIC around the two calls) and the
 * pairs are paced at RATE per second (default 5000): allocations are rare in real
 * programs, and a tracer that unwinds in user space must keep up with them; the pacing
 * waits (asleep) are not part of the figure. Output on stdout:
 *   round R ns_per_call X      (per alloc+free pair, median of the round's pairs)
 *   result stacks ns_per_call MEDIAN calls TOTAL seconds ELAPSED
 * then it holds -H seconds (a tracer's BPF programs and CPU time can be read meanwhile).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define NOINLINE __attribute__((noinline, noclone))
#define MAX_ROUNDS 1000

volatile unsigned long long sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS) {
		fprintf(stderr, "stacks_workload: %s failed: %d\n", what, (int)rc);
		exit(1);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One pair, timed: the chain's leaf. */
NOINLINE double bench_leaf(size_t bytes)
{
	CUdeviceptr p = 0;
	double t0 = now_s(), t1;

	check(cuMemAlloc_v2(&p, bytes), "cuMemAlloc_v2");
	check(cuMemFree_v2(p), "cuMemFree_v2");
	t1 = now_s();
	sink += p;
	return t1 - t0;
}

NOINLINE double bench_middle(size_t bytes)
{
	double t = bench_leaf(bytes + 0);

	sink++;
	return t;
}

NOINLINE double bench_outer(size_t bytes)
{
	double t = bench_middle(bytes);

	sink++;
	return t;
}

/* n pairs paced at rate per second; the median pair in ns. */
static double round_ns(long n, double rate, double *spent)
{
	double *v = malloc((size_t)n * sizeof(*v)), t0 = now_s(), med;

	if (!v)
		exit(1);
	for (long i = 0; i < n; i++) {
		double wait = rate > 0 ? t0 + (double)i / rate - now_s() : 0;

		/* asleep, not spinning: the tracer's reader needs a CPU too (2 here) */
		if (wait > 0)
			usleep((useconds_t)(wait * 1e6));
		v[i] = bench_outer(4096);
		*spent += v[i];
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	med = v[n / 2] * 1e9;
	free(v);
	return med;
}

int main(int argc, char **argv)
{
	long n = 2000, rounds = 5, warmup = 200;
	double rate = 5000, hold = 0, med[MAX_ROUNDS], spent = 0, t0;
	CUcontext ctx;
	CUdevice dev;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:w:R:H:")) != -1) {
		if (opt == 'n')
			n = atol(optarg);
		else if (opt == 'r')
			rounds = atol(optarg);
		else if (opt == 'w')
			warmup = atol(optarg);
		else if (opt == 'R')
			rate = atof(optarg);
		else if (opt == 'H')
			hold = atof(optarg);
		else
			return 2;
	}
	if (n < 1 || rounds < 1 || rounds > MAX_ROUNDS || warmup < 0)
		return 2;
	check(cuInit(0), "cuInit");
	check(cuDeviceGet(&dev, 0), "cuDeviceGet");
	check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	if (warmup)
		round_ns(warmup, rate, &spent);
	spent = 0;
	t0 = now_s();
	for (long r = 0; r < rounds; r++) {
		med[r] = round_ns(n, rate, &spent);
		printf("round %ld ns_per_call %.1f\n", r, med[r]);
	}
	qsort(med, (size_t)rounds, sizeof(med[0]), cmp_double);
	printf("result stacks ns_per_call %.1f calls %ld seconds %.3f\n", med[rounds / 2], n * rounds, now_s() - t0);
	fflush(stdout);
	if (hold > 0)
		usleep((useconds_t)(hold * 1e6));
	return 0;
}
