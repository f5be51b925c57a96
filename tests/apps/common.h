/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common.h - helpers shared by the gpuprobe test workloads: option parsing,
 * the READY/HELD + SIGUSR1 handshake with a test harness, CUDA set-up and
 * the ground-truth JSON line.
 */
#ifndef GPUPROBE_TEST_APPS_COMMON_H
#define GPUPROBE_TEST_APPS_COMMON_H

#include <stdio.h>

#include "fakecuda.h"

/* Any failing CUDA call the workload did not mean to fail ends it (exit 1):
 * its ground truth would be wrong otherwise. */
#define CHECK(call) app_check((call), #call, __FILE__, __LINE__)
void app_check(CUresult rc, const char *what, const char *file, int line);

/* A call that must fail with want (a deliberate "failed call"). */
#define CHECK_FAILS(call, want) \
	app_check_fails((call), (want), #call, __FILE__, __LINE__)
void app_check_fails(CUresult rc, CUresult want, const char *what,
		     const char *file, int line);

/* Parses a non-negative integer option value; bad input exits 2. */
unsigned long long app_parse_u64(const char *opt, const char *val);

/* Reports a usage error and exits 2. */
void app_usage_error(const char *prog, const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

/*
 * Handshake.  app_block_signal() must run before any thread exists (the
 * CUDA driver may create some in cuInit) so SIGUSR1 stays pending for
 * sigwait() instead of killing the process.  app_wait_for_signal() prints
 * its banner on stdout, flushes, and blocks until SIGUSR1 arrives.
 */
void app_block_signal(void);
void app_wait_for_signal(const char *banner);
/* Prints "READY <pid>" and waits. */
void app_wait_ready(void);

/* cuInit, device 0's primary context retained and made current. */
CUcontext app_cuda_init(void);

/* Ground truth, as a tracer attached at the READY point must see it. */
struct truth {
	const char *api;
	unsigned long long allocs;	/* successful tracked allocations */
	unsigned long long frees;	/* successful frees of those */
	unsigned long long leaks;	/* tracked allocations never freed */
	unsigned long long leaked_bytes;	/* as the driver sized them */
	unsigned long long untracked_frees;	/* frees of pre-READY allocs */
	unsigned long long failed_calls;	/* calls that returned an error */
};

void truth_add(struct truth *sum, const struct truth *t);

/* CLOCK_MONOTONIC in ns (the clock the stand-in and gpuprobe's timestamps use). */
unsigned long long app_now_ns(void);

/* Writes s as a JSON string (quoted, escaped) to f. */
void app_json_str(FILE *f, const char *s);

/*
 * Compares the stand-in driver's own counters for a kernel name
 * (fakecuda_ext.h) with what the workload did by construction; a mismatch
 * is one error line on stderr and exit 1: the ground truth would be wrong.
 */
void app_expect_kernel(const char *name, unsigned long long launched,
		       unsigned long long captured, unsigned long long graph_executed);
/* Writes the object's members (no braces) to f. */
void truth_fields(FILE *f, const struct truth *t, int with_pid);
/* One JSON line; extra (may be NULL) is appended inside the object. */
void truth_print(FILE *f, const struct truth *t, const char *extra);

/* A frame the stack tests name exactly: never inlined, and (gcc) never cloned for a constant
 * argument (a frame named foo.constprop.0); clang has no noclone and does not clone
 * noinline functions. */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

#endif
