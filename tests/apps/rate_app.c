/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rate_app: a launch rate that steps up and down in phases of known length
 * and rate, with known totals, for gpuprobe's overhead-budget tests.
 *
 *   rate_app [--phases RATE:MS,RATE:MS,...] [--alloc-every K] [--copy-every K] [--time-calls]
 *            [--get-function] [--wait] [--linger MS]
 *
 * Phase i launches rate_kernel() exactly RATE x MS / 1000 times, paced on
 * CLOCK_MONOTONIC (launch j is due at the phase start + j / RATE; a launch
 * that falls behind goes at once, so the count never changes, only the
 * achieved rate), on one stream that is synchronized at the phase's end;
 * every K-th launch (--alloc-every, default 100, 0 = none) is followed by a
 * 4 KiB cuMemAlloc_v2 and its cuMemFree_v2.  Default phases:
 * 1000:500,20000:500,100000:500,1000:500.  The truth (last JSON line on
 * stderr) gives per phase the launches, allocations, the planned and the
 * achieved rate and the CLOCK_MONOTONIC ns it started and ended at, so a test
 * can line its windows up with the phases.  --time-calls also times every launch call
 * (CLOCK_MONOTONIC before and after): per phase "call_ns", the time spent inside the
 * calls that took at most 200 us, and "slow_calls", those that took longer (a descheduled
 * thread, not a probe), so that a test can tell what a tracer's probes cost the workload.
 * --get-function: the kernel comes from a library (cuLibraryGetKernel) and every launch
 * first asks for its CUfunction (cuKernelGetFunction), as cuBLAS does; timed with it.
 * --copy-every K: every K-th launch is followed by an asynchronous 64 KiB host-to-device copy
 * from pinned memory on the launches' stream and a cuStreamSynchronize of it, as a training
 * loop's per-step input copy and synchronize (truth: "copies", "copy_bytes", "syncs"; its two
 * buffers, allocated before the phases and freed after them, are not in "allocs").
 * --linger MS keeps the process alive MS ms after the truth is printed, calling nothing:
 * a test can read what a tracer says of a running process whose totals are known.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"

static const char usage[] =
	"[--phases RATE:MS,...] [--alloc-every K] [--copy-every K] [--time-calls] [--get-function] [--wait] [--linger MS]";

#define COPY_BYTES 65536ULL

#define SLOW_CALL_NS 200000ULL

#define MAX_PHASES 32

struct phase {
	unsigned long long rate, ms, launches, allocs, copies;
	unsigned long long start_ns, end_ns;
	unsigned long long call_ns, slow_calls;
};

static void sleep_until_ns(unsigned long long t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int parse_phases(const char *s, struct phase *ph)
{
	int n = 0;
	char *copy = strdup(s), *save = NULL;

	if (!copy)
		return -1;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');

		if (!colon || n == MAX_PHASES) {
			free(copy);
			return -1;
		}
		*colon = '\0';
		memset(&ph[n], 0, sizeof(ph[n]));
		ph[n].rate = app_parse_u64("--phases rate", tok);
		ph[n].ms = app_parse_u64("--phases ms", colon + 1);
		if (ph[n].rate < 1 || ph[n].rate > 10000000 || ph[n].ms < 1 || ph[n].ms > 3600000 ||
		    ph[n].rate * ph[n].ms % 1000) {
			free(copy);
			return -1;
		}
		n++;
	}
	free(copy);
	return n;
}

int main(int argc, char **argv)
{
	const char *spec = "1000:500,20000:500,100000:500,1000:500";
	unsigned long long every = 100, total = 0, allocs = 0, linger = 0, copy_every = 0, copies = 0;
	CUdeviceptr dbuf = 0;
	void *host = NULL;
	struct phase ph[MAX_PHASES];
	int nph, wait = 0, time_calls = 0, get_function = 0;
	CUmodule mod;
	CUlibrary lib;
	CUkernel k;
	CUfunction f;
	CUstream s;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--phases") && i + 1 < argc)
			spec = argv[++i];
		else if (!strcmp(argv[i], "--alloc-every") && i + 1 < argc)
			every = app_parse_u64("--alloc-every", argv[++i]);
		else if (!strcmp(argv[i], "--copy-every") && i + 1 < argc)
			copy_every = app_parse_u64("--copy-every", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--time-calls"))
			time_calls = 1;
		else if (!strcmp(argv[i], "--get-function"))
			get_function = 1;
		else if (!strcmp(argv[i], "--linger") && i + 1 < argc)
			linger = app_parse_u64("--linger", argv[++i]);
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	nph = parse_phases(spec, ph);
	if (nph < 1)
		app_usage_error(argv[0], usage,
				"phases are RATE:MS pairs (RATE x MS a multiple of 1000), at most 32");

	app_block_signal();
	app_cuda_init();
	if (get_function) {
		/* as cuBLAS does: the kernel from a library, its function asked for at every launch */
		CHECK(cuLibraryLoadData(&lib, "_Z11rate_kernelv\n", NULL, NULL, 0, NULL, NULL, 0));
		CHECK(cuLibraryGetKernel(&k, lib, "_Z11rate_kernelv"));
	} else {
		CHECK(cuModuleLoadData(&mod, "_Z11rate_kernelv\n"));
		CHECK(cuModuleGetFunction(&f, mod, "_Z11rate_kernelv"));
	}
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	if (copy_every) {
		CHECK(cuMemAllocHost_v2(&host, COPY_BYTES));
		CHECK(cuMemAlloc_v2(&dbuf, COPY_BYTES));
	}
	if (wait)
		app_wait_ready();

	for (int i = 0; i < nph; i++) {
		unsigned long long want = ph[i].rate * ph[i].ms / 1000, t0 = app_now_ns();

		ph[i].start_ns = t0;
		for (unsigned long long j = 0; j < want; j++) {
			unsigned long long due = t0 + j * 1000000000ull / ph[i].rate, c0;

			if (app_now_ns() < due)
				sleep_until_ns(due);
			c0 = time_calls ? app_now_ns() : 0;
			if (get_function)
				CHECK(cuKernelGetFunction(&f, k));
			CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
			if (time_calls) {
				unsigned long long d = app_now_ns() - c0;

				if (d <= SLOW_CALL_NS)
					ph[i].call_ns += d;
				else
					ph[i].slow_calls++;
			}
			ph[i].launches++;
			if (every && ph[i].launches % every == 0) {
				CUdeviceptr p;

				CHECK(cuMemAlloc_v2(&p, 4096));
				CHECK(cuMemFree_v2(p));
				ph[i].allocs++;
			}
			if (copy_every && ph[i].launches % copy_every == 0) {
				CHECK(cuMemcpyHtoDAsync_v2(dbuf, host, COPY_BYTES, s));
				CHECK(cuStreamSynchronize(s));
				ph[i].copies++;
			}
		}
		/* The phase lasts its planned time even if the last launch came early. */
		sleep_until_ns(t0 + ph[i].ms * 1000000ull);
		CHECK(cuStreamSynchronize(s));
		ph[i].end_ns = app_now_ns();
		total += ph[i].launches;
		allocs += ph[i].allocs;
		copies += ph[i].copies;
	}
	if (copy_every) {
		CHECK(cuMemFree_v2(dbuf));
		CHECK(cuMemFreeHost(host));
	}
	app_expect_kernel("_Z11rate_kernelv", total, 0, 0);

	fprintf(stderr, "{\"pid\":%d,\"api\":\"rate\",\"kernel\":\"rate_kernel()\",\"launches\":%llu,"
			"\"allocs\":%llu,\"frees\":%llu,\"alloc_every\":%llu,\"clock\":\"CLOCK_MONOTONIC\","
			"\"copies\":%llu,\"copy_bytes\":%llu,\"syncs\":%llu,\"phases\":[",
		(int)getpid(), total, allocs, allocs, every, copies,
		copies * COPY_BYTES, copies + (unsigned long long)nph);
	for (int i = 0; i < nph; i++) {
		double secs = (double)(ph[i].end_ns - ph[i].start_ns) / 1e9;

		fprintf(stderr, "%s{\"rate\":%llu,\"ms\":%llu,\"launches\":%llu,\"allocs\":%llu,"
				"\"copies\":%llu,\"start_ns\":%llu,\"end_ns\":%llu,\"achieved_rate\":%.1f",
			i ? "," : "", ph[i].rate, ph[i].ms, ph[i].launches, ph[i].allocs, ph[i].copies,
			ph[i].start_ns, ph[i].end_ns, secs > 0 ? (double)ph[i].launches / secs : 0);
		if (time_calls)
			fprintf(stderr, ",\"call_ns\":%llu,\"slow_calls\":%llu", ph[i].call_ns, ph[i].slow_calls);
		fprintf(stderr, "}");
	}
	fprintf(stderr, "]}\n");
	fflush(stderr);
	if (linger)
		sleep_until_ns(app_now_ns() + linger * 1000000ull);
	return 0;
}
