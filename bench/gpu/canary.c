/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * canary: two probes of the machine itself, beside the workload of bench/gpu/inproc.py,
 * that no gpuprobe probe touches, so that what they see of an on-window is the machine's
 * and not the traced process's (issue 16: a PyTorch loop's steps were slower with gpuprobe
 * attached even while no breakpoint was in).
 *   - compute: a fixed piece of arithmetic (~0.5 ms) done over and over, each piece timed:
 *     slower when the CPU runs slower (its frequency, a busy sibling, the host);
 *   - wake: every 2 ms one thread wakes another through an eventfd and waits for the
 *     answer, both sleeping in between: two cross-thread wake-ups of idle CPUs (the
 *     hand-offs of a PyTorch step between its main and autograd threads).
 * Each logs "step T D" (CLOCK_MONOTONIC ns, start and duration), the format of the
 * workloads' logs, to PREFIX.compute and PREFIX.wake, for SECONDS seconds.
 *
 *     canary PREFIX SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t end_ns;
static volatile sig_atomic_t stop; /* SIGTERM: the logs are flushed and the canary ends */

static bool going(void)
{
	return !stop && now_ns() < end_ns;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}
static int to_b, to_a;

static FILE *open_log(const char *prefix, const char *what)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s.%s", prefix, what);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	return f;
}

static void *compute(void *arg)
{
	FILE *f = arg;
	volatile uint64_t sink = 0;

	while (going()) {
		uint64_t t0 = now_ns(), x = t0 | 1;

		for (int i = 0; i < 400000; i++) /* ~0.5 ms: an xorshift chain, no memory */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		sink = x;
		fprintf(f, "step %llu %llu\n", (unsigned long long)t0, (unsigned long long)(now_ns() - t0));
	}
	(void)sink;
	fclose(f);
	return NULL;
}

static void *answer(void *arg)
{
	uint64_t v;

	(void)arg;
	while (read(to_b, &v, sizeof(v)) == sizeof(v) && v != 2)
		if (write(to_a, &v, sizeof(v)) != sizeof(v))
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tc, tb;
	FILE *fc, *fw;
	uint64_t one = 1, two = 2, v;
	struct timespec gap = { 0, 2000000 };

	if (argc != 3 || atof(argv[2]) <= 0) {
		fprintf(stderr, "usage: canary PREFIX SECONDS\n");
		return 2;
	}
	end_ns = now_ns() + (uint64_t)(atof(argv[2]) * 1e9);
	signal(SIGTERM, on_term);
	to_b = eventfd(0, 0);
	to_a = eventfd(0, 0);
	if (to_b < 0 || to_a < 0) {
		perror("eventfd");
		return 1;
	}
	fc = open_log(argv[1], "compute");
	fw = open_log(argv[1], "wake");
	if (pthread_create(&tc, NULL, compute, fc) || pthread_create(&tb, NULL, answer, NULL)) {
		fprintf(stderr, "canary: cannot start its threads\n");
		return 1;
	}
	printf("READY %d\n", getpid());
	fflush(stdout);
	while (going()) {
		uint64_t t0 = now_ns();

		if (write(to_b, &one, sizeof(one)) != sizeof(one) || read(to_a, &v, sizeof(v)) != sizeof(v))
			break;
		fprintf(fw, "step %llu %llu\n", (unsigned long long)t0, (unsigned long long)(now_ns() - t0));
		nanosleep(&gap, NULL);
	}
	if (write(to_b, &two, sizeof(two)) != sizeof(two))
		return 1;
	pthread_join(tb, NULL);
	pthread_join(tc, NULL);
	fclose(fw);
	return 0;
}
