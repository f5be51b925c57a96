/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memleak example of issue 29, on the stand-in driver, built -O2 -g without frame
 * pointers: three allocations, two frees, exit. The leaking allocation is made by a
 * helper inlined twice over (make_buffer into train_step into main), so a leak stack must
 * expand the inline chain from DWARF to read make_buffer <- train_step <- main; it goes
 * through help_alloc in libleakhelp.so (as through a shared cudart), a file the first
 * stack (the warm-up's) never went through.
 *
 *   leakexit exit [MS]        a warm-up allocation (freed: the driver's set-up), prints
 *                             WARM, MS ms (default 300) of "compute", the three
 *                             allocations, the two frees, and exit about 1 ms after the
 *                             last allocation
 *   leakexit gate             as exit, but after WARM waits for a line on stdin instead
 *                             of the compute (a harness then stops gpuprobe's reader)
 *   leakexit linger [MS]      as exit, then prints DONE and waits for a line on stdin
 *                             before exiting (the stacks are named while it lives)
 *   leakexit many N DIR       first dlopens DIR/lib0.so .. DIR/lib{N-1}.so (distinct
 *                             files), then as gate: more mapped files than are kept
 *   leakexit late LIB         after WARM, dlopens LIB (libleaklate.so) and leaks through
 *                             its late_alloc, prints DONE and waits for a line on stdin:
 *                             a library mapped after the process's first stack
 *
 * Lines tagged "@name" are what the test reads from this file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define INLINE static inline __attribute__((always_inline))

volatile unsigned long long sink;

CUdeviceptr help_alloc(size_t bytes); /* libleakhelp.so */

INLINE CUdeviceptr make_buffer(size_t bytes)
{
	CUdeviceptr p = help_alloc(bytes); /* @make_buffer */

	sink ^= p;
	return p;
}

INLINE CUdeviceptr train_step(size_t width)
{
	CUdeviceptr p = make_buffer(width * 4); /* @train_step */

	sink += p;
	return p;
}

NOINLINE static CUdeviceptr scratch(size_t bytes)
{
	CUdeviceptr p = 0;

	CHECK(cuMemAlloc_v2(&p, bytes)); /* @scratch */
	sink += p;
	return p;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	int ai = 2;
	long ms;
	CUdeviceptr a, b, c, warm;
	char line[16];

	if (!strcmp(mode, "many")) {
		int n = argc > 3 ? atoi(argv[2]) : 0;
		char path[4096];

		for (int i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/lib%d.so", argv[3], i);
			if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
				fprintf(stderr, "%s\n", dlerror());
				return 1;
			}
		}
		ai = 4;
	} else if (!strcmp(mode, "late")) {
		ai = 3;
	} else if (strcmp(mode, "exit") && strcmp(mode, "linger") && strcmp(mode, "gate")) {
		return 2;
	}
	ms = argc > ai ? atol(argv[ai]) : 300;
	app_cuda_init();
	warm = scratch(256);
	CHECK(cuMemFree_v2(warm));
	printf("WARM %d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(mode, "late")) {
		void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
		CUdeviceptr (*late)(size_t) = h ? (CUdeviceptr(*)(size_t))dlsym(h, "late_alloc") : NULL;

		if (!late) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		sink += late(8192); /* @late */
		printf("DONE\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
		return 0;
	}
	if (!strcmp(mode, "gate") || !strcmp(mode, "many")) {
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
	} else {
		sleep_ms(ms); /* the program's compute before its allocations */
	}
	a = scratch(1024);
	b = scratch(2048);
	c = train_step(1000); /* @main */
	CHECK(cuMemFree_v2(a));
	CHECK(cuMemFree_v2(b));
	sink += c;
	if (!strcmp(mode, "linger")) {
		printf("DONE\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			line[0] = 0;
		return 0;
	}
	sleep_ms(1);
	return 0;
}
