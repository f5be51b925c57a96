/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * completion_app: asynchronous host-to-device copies completed by every completion signal
 * other than a plain synchronize of their own stream, for gpuprobe's bounds from them
 * (issue 34). Each phase runs on a GPU of its own (FAKECUDA_DEVICES >= 4), so each of
 * gpuprobe's (GPU, H2D) rows holds one phase:
 *   GPU 0  --n copies on a stream, then cuStreamQuery polled (a sleep of --poll-us between
 *          tries) until CUDA_SUCCESS: completed by a stream query;
 *   GPU 1  --n copies, cuEventRecordWithFlags, one more copy, cuEventQuery polled until
 *          CUDA_SUCCESS (the --n before the record: an event query), then
 *          cuStreamSynchronize (the one after it: a stream sync);
 *   GPU 2  --n copies on stream A, an event recorded on A, stream B waits on it
 *          (cuStreamWaitEvent), cuStreamSynchronize(B): A is never synchronized itself,
 *          its copies are completed through the wait;
 *   GPU 3  two windows timed by events: record, --n copies, record; the first closed by
 *          cuEventSynchronize then cuEventElapsedTime, the second by cuEventElapsedTime
 *          retried until it returns CUDA_SUCCESS (a completion signal itself).
 * --idle-queries K: only K cuStreamQuery of the idle legacy stream (each CUDA_SUCCESS) and
 * no copy: gpuprobe sends none of them (quiet_signals).
 * The ground truth (last JSON line on stderr): the stand-in's copy rate, per phase its
 * copies, bytes and the signal that completed them, the NOT_READY results of the queries
 * (polls), and the elapsed times the program read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"

static const char usage[] = "[--n N] [--size BYTES] [--poll-us US] [--idle-queries K] [--wait]";

static unsigned long long n = 4, size = 8ull << 20, poll_us = 100, polls;
static void *host;

static void copies(CUdeviceptr dst, CUstream s, unsigned long long k)
{
	for (unsigned long long i = 0; i < k; i++)
		CHECK(cuMemcpyHtoDAsync_v2(dst, host, size, s));
}

/* The phase's GPU current, a buffer on it. */
static CUdeviceptr on_gpu(int gpu)
{
	CUcontext ctx;
	CUdeviceptr d;
	CUdevice dev;

	CHECK(cuDeviceGet(&dev, gpu));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAlloc_v2(&d, size));
	return d;
}

static void poll_until(CUresult (*query)(void *), void *what)
{
	CUresult rc;

	while ((rc = query(what)) == CUDA_ERROR_NOT_READY) {
		polls++;
		usleep((useconds_t)poll_us);
	}
	CHECK(rc);
}

static CUresult q_stream(void *s)
{
	return cuStreamQuery((CUstream)s);
}

static CUresult q_event(void *e)
{
	return cuEventQuery((CUevent)e);
}

static void phase_stream_query(void)
{
	CUdeviceptr d = on_gpu(0);
	CUstream s;

	CHECK(cuStreamCreate(&s, 0));
	copies(d, s, n);
	poll_until(q_stream, s);
}

static void phase_event_query(void)
{
	CUdeviceptr d = on_gpu(1);
	CUstream s;
	CUevent e;

	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuEventCreate(&e, 0));
	copies(d, s, n);
	CHECK(cuEventRecordWithFlags(e, s, 0));
	copies(d, s, 1);
	poll_until(q_event, e);
	CHECK(cuStreamSynchronize(s));
}

static void phase_wait(void)
{
	CUdeviceptr d = on_gpu(2);
	CUstream a, b;
	CUevent e;

	CHECK(cuStreamCreate(&a, 0));
	CHECK(cuStreamCreate(&b, 0));
	CHECK(cuEventCreate(&e, 0));
	copies(d, a, n);
	CHECK(cuEventRecord(e, a));
	CHECK(cuStreamWaitEvent(b, e, 0));
	CHECK(cuStreamSynchronize(b));
}

static float ms[2];

static void phase_elapsed(void)
{
	CUdeviceptr d = on_gpu(3);
	CUevent start, end;
	CUstream s;
	CUresult rc;

	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuEventCreate(&start, 0));
	CHECK(cuEventCreate(&end, 0));
	for (int w = 0; w < 2; w++) {
		CHECK(cuEventRecord(start, s));
		copies(d, s, n);
		CHECK(cuEventRecord(end, s));
		if (w == 0)
			CHECK(cuEventSynchronize(end));
		while ((rc = cuEventElapsedTime(&ms[w], start, end)) == CUDA_ERROR_NOT_READY)
			usleep((useconds_t)poll_us);
		CHECK(rc);
	}
}

int main(int argc, char **argv)
{
	struct fakecuda_config cfg;
	unsigned long long idle = 0;
	int wait = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (i + 1 < argc && !strcmp(argv[i], "--n"))
			n = app_parse_u64(argv[i], argv[i + 1]), i++;
		else if (i + 1 < argc && !strcmp(argv[i], "--size"))
			size = app_parse_u64(argv[i], argv[i + 1]), i++;
		else if (i + 1 < argc && !strcmp(argv[i], "--idle-queries"))
			idle = app_parse_u64(argv[i], argv[i + 1]), i++;
		else if (i + 1 < argc && !strcmp(argv[i], "--poll-us"))
			poll_us = app_parse_u64(argv[i], argv[i + 1]), i++;
		else
			app_usage_error(argv[0], usage, "unknown argument %s", argv[i]);
	}
	if (!n || !size)
		app_usage_error(argv[0], usage, "--n and --size must be positive");
	app_cuda_init();
	if (fakecuda_config(&cfg)) {
		fprintf(stderr, "completion_app: needs the stand-in driver\n");
		return 1;
	}
	if (idle) {
		for (unsigned long long i = 0; i < idle; i++)
			CHECK(cuStreamQuery(NULL));
		fprintf(stderr, "{\"pid\":%d,\"api\":\"completion\",\"idle_queries\":%llu}\n", (int)getpid(), idle);
		return 0;
	}
	CHECK(cuMemAllocHost_v2(&host, size));
	if (wait)
		app_wait_ready();
	phase_stream_query();
	phase_event_query();
	phase_wait();
	phase_elapsed();

	fprintf(stderr, "{\"pid\":%d,\"api\":\"completion\",\"bytes_per_s\":%.0f,\"n\":%llu,\"size\":%llu,"
			"\"polls\":%llu,\"phases\":{"
			"\"0\":{\"completed_by\":{\"stream_query\":%llu}},"
			"\"1\":{\"completed_by\":{\"event_query\":%llu,\"stream\":1}},"
			"\"2\":{\"completed_by\":{\"stream\":%llu}},"
			"\"3\":{\"completed_by\":{\"event\":%llu,\"event_elapsed\":%llu},"
			"\"elapsed_ms\":[%.6f,%.6f]}}}\n",
		(int)getpid(), cfg.bw, n, size, polls, n, n, n, n, n, (double)ms[0], (double)ms[1]);
	return 0;
}
