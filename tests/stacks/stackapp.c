/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A workload for stack tests, built -O2 -fomit-frame-pointer (and variants:
 * .debug_frame only, stripped with a separate debug file, corrupt
 * .eh_frame): it allocates through the stand-in driver from known functions,
 * so an unwinder must find stackapp_leaf <- stackapp_middle <- stackapp_outer
 * <- main without frame pointers.
 *
 *   stackapp chain        one allocation through the three functions
 *   stackapp deep N       recursion N deep (about 400 bytes a level) first
 *   stackapp thread       the chain on a second thread
 *   stackapp gap          the chain on a thread whose stack has an untouched
 *                         gap above the allocating frame (unreadable by BPF)
 *   stackapp loop N       the chain N times; prints "LOOP <ns per call>"
 *
 * It waits for a line on stdin before exiting, so a harness can symbolize
 * while the process still exists.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common.h"

volatile unsigned long long sink;

#ifdef STACKAPP_VARIANT
volatile int stackapp_variant = 7;	/* another build, another build-id */
#endif

NOINLINE int stackapp_leaf(size_t bytes)
{
	CUdeviceptr p = 0;

	CHECK(cuMemAlloc_v2(&p, bytes));
	sink += p;	/* after the call: not a tail call */
	return (int)(p & 1);
}

NOINLINE int stackapp_middle(size_t bytes)
{
	int r = stackapp_leaf(bytes + 1);

	sink += r;
	return r + 1;
}

NOINLINE int stackapp_outer(size_t bytes)
{
	int r = stackapp_middle(bytes * 2);

	sink += r;
	return r + 2;
}

/* Each level keeps a buffer live across the call: real stack use. */
NOINLINE int stackapp_recurse(int n)
{
	volatile char buf[384];
	int r;

	buf[0] = (char)n;
	if (n <= 0)
		return stackapp_outer(4096);
	r = stackapp_recurse(n - 1);
	sink += buf[0];
	return r + buf[0];
}

static void *thread_main(void *arg)
{
	(void)arg;
	stackapp_outer(1024);
	return NULL;
}

/* 32 KiB the frame reserves but never touches: pages BPF cannot read. */
NOINLINE static int gap_frame(void)
{
	volatile char *gap = alloca(32768);
	int r;

	gap[0] = 1;	/* the lowest byte only: the rest stays untouched */
	r = stackapp_outer(512);
	sink += gap[0];
	return r;
}

static void *gap_main(void *arg)
{
	(void)arg;
	gap_frame();
	return NULL;
}

static void run_thread(void *(*fn)(void *), int fresh_stack)
{
	pthread_attr_t attr;
	pthread_t t;
	size_t size = 1 << 20;
	void *stack = NULL;

	pthread_attr_init(&attr);
	if (fresh_stack) {
		/* a fresh mapping, no huge pages: untouched means not present */
		stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (stack == MAP_FAILED)
			exit(1);
		madvise(stack, size, MADV_NOHUGEPAGE);
		pthread_attr_setstack(&attr, stack, size);
	}
	if (pthread_create(&t, &attr, fn, NULL))
		exit(1);
	pthread_join(t, NULL);
	pthread_attr_destroy(&attr);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "chain";
	char line[16];

	app_cuda_init();
	if (!strcmp(mode, "chain"))
		stackapp_outer(4096);
	else if (!strcmp(mode, "deep"))
		stackapp_recurse(argc > 2 ? atoi(argv[2]) : 100);
	else if (!strcmp(mode, "thread"))
		run_thread(thread_main, 0);
	else if (!strcmp(mode, "gap"))
		run_thread(gap_main, 1);
	else if (!strcmp(mode, "loop")) {
		long i, n = argc > 2 ? atol(argv[2]) : 1000;
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		for (i = 0; i < n; i++)
			stackapp_outer(4096);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("LOOP %.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 +
				       (b.tv_nsec - a.tv_nsec)) / (double)n);
	}
	else
		return 2;
	printf("DONE\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	return 0;
}
