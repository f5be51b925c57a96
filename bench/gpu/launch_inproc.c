// SPDX-License-Identifier: BSD-3-Clause
/*
 * launch_inproc - a launch-bound loop that runs until told to stop, for bench/gpu/inproc.py:
 * steps of K empty-kernel launches (cuLaunchKernel on one stream) and a cuStreamSynchronize,
 * each step's start and duration (CLOCK_MONOTONIC ns) appended to LOG as "step T D".
 * The kernel is PTX the driver compiles at load, so this builds on a host without a GPU
 * (gcc, cuda.h and the toolkit's stub libcuda.so) and carries to the GPU machine:
 *
 *     gcc -O2 -Wall -Wextra -I/usr/local/cuda/include -o launch_inproc launch_inproc.c \
 *         -L/usr/local/cuda/lib64/stubs -lcuda
 *
 *   launch_inproc LOG [K] [SECONDS]   (K 1000, SECONDS 600; SIGTERM or SIGINT end it)
 *
 * Prints "READY PID" once the first step is done.
 */
#include <cuda.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char ptx[] =
	".version 7.0\n"
	".target sm_52\n"
	".address_size 64\n"
	".visible .entry empty_kernel()\n"
	"{\n"
	"\tret;\n"
	"}\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static void check(CUresult r, const char *what)
{
	const char *s = NULL;

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorString(r, &s);
	fprintf(stderr, "launch_inproc: %s: %s\n", what, s ? s : "?");
	exit(1);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned long long k = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000, end, t0, t1, steps = 0;
	double secs = argc > 3 ? atof(argv[3]) : 600;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUstream s;
	FILE *log;

	if (argc < 2 || k < 1 || k > 10000000 || secs <= 0 || secs > 86400) {
		fprintf(stderr, "usage: launch_inproc LOG [K] [SECONDS]\n");
		return 2;
	}
	log = fopen(argv[1], "w");
	if (!log) {
		fprintf(stderr, "launch_inproc: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	check(cuInit(0), "cuInit");
	check(cuDeviceGet(&dev, 0), "cuDeviceGet");
	check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	check(cuModuleLoadData(&mod, ptx), "cuModuleLoadData");
	if (cuModuleGetFunction(&f, mod, "empty_kernel") != CUDA_SUCCESS) {
		/* the stand-in driver (tests/fakecuda: dry runs) takes a list of names */
		check(cuModuleLoadData(&mod, "empty_kernel\n"), "cuModuleLoadData");
		check(cuModuleGetFunction(&f, mod, "empty_kernel"), "cuModuleGetFunction");
	}
	check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	end = now_ns() + (unsigned long long)(secs * 1e9);
	while (!stop && now_ns() < end) {
		t0 = now_ns();
		for (unsigned long long i = 0; i < k; i++)
			check(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), "cuLaunchKernel");
		check(cuStreamSynchronize(s), "cuStreamSynchronize");
		t1 = now_ns();
		fprintf(log, "step %llu %llu\n", t0, t1 - t0);
		if (++steps == 1) {
			printf("READY %d\n", (int)getpid());
			fflush(stdout);
		}
		if (steps % 64 == 0)
			fflush(log);
	}
	fclose(log);
	return 0;
}
