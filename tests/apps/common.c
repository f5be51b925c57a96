/* SPDX-License-Identifier: BSD-3-Clause */
/* common.c - see common.h. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda_ext.h"

static const char *err_name(CUresult rc)
{
	const char *s = NULL;

	if (cuGetErrorName(rc, &s) != CUDA_SUCCESS || !s)
		s = "unknown CUresult";
	return s;
}

void app_check(CUresult rc, const char *what, const char *file, int line)
{
	if (rc == CUDA_SUCCESS)
		return;
	fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", file, line, what,
		err_name(rc), (int)rc);
	exit(1);
}

void app_check_fails(CUresult rc, CUresult want, const char *what,
		     const char *file, int line)
{
	if (rc == want)
		return;
	fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s (%d)\n", file,
		line, what, err_name(rc), (int)rc, err_name(want), (int)want);
	exit(1);
}

unsigned long long app_parse_u64(const char *opt, const char *val)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(val, &end, 0);
	if (errno || end == val || *end || *val == '-') {
		fprintf(stderr, "invalid value for %s: '%s'\n", opt, val);
		exit(2);
	}
	return v;
}

void app_usage_error(const char *prog, const char *usage, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: %s %s\n", prog, usage);
	exit(2);
}

static sigset_t usr1_set(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	return set;
}

void app_block_signal(void)
{
	sigset_t set = usr1_set();
	int err = pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (err) {
		fprintf(stderr, "pthread_sigmask: error %d\n", err);
		exit(1);
	}
}

void app_wait_for_signal(const char *banner)
{
	sigset_t set = usr1_set();
	int sig = 0;

	printf("%s\n", banner);
	fflush(stdout);
	while (sigwait(&set, &sig) != 0 || sig != SIGUSR1)
		;
}

void app_wait_ready(void)
{
	char banner[64];

	snprintf(banner, sizeof(banner), "READY %ld", (long)getpid());
	app_wait_for_signal(banner);
}

CUcontext app_cuda_init(void)
{
	CUcontext ctx;
	CUdevice dev;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	return ctx;
}

void truth_add(struct truth *sum, const struct truth *t)
{
	sum->allocs += t->allocs;
	sum->frees += t->frees;
	sum->leaks += t->leaks;
	sum->leaked_bytes += t->leaked_bytes;
	sum->untracked_frees += t->untracked_frees;
	sum->failed_calls += t->failed_calls;
}

void truth_fields(FILE *f, const struct truth *t, int with_pid)
{
	if (with_pid)
		fprintf(f, "\"pid\":%ld,", (long)getpid());
	fprintf(f,
		"\"api\":\"%s\",\"allocs\":%llu,\"frees\":%llu,\"leaks\":%llu,"
		"\"leaked_bytes\":%llu,\"untracked_frees\":%llu,"
		"\"failed_calls\":%llu",
		t->api, t->allocs, t->frees, t->leaks, t->leaked_bytes,
		t->untracked_frees, t->failed_calls);
}

void truth_print(FILE *f, const struct truth *t, const char *extra)
{
	fputc('{', f);
	truth_fields(f, t, 1);
	if (extra && *extra)
		fprintf(f, ",%s", extra);
	fputs("}\n", f);
	fflush(f);
}

unsigned long long app_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

void app_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void app_expect_kernel(const char *name, unsigned long long launched,
		       unsigned long long captured, unsigned long long graph_executed)
{
	struct fakecuda_kernel_stats s = { 0, 0, 0 };

	if (fakecuda_kernel_stats(name, &s) == 0 && s.launched == launched &&
	    s.captured == captured && s.graph_executed == graph_executed)
		return;
	fprintf(stderr,
		"%s: the stand-in counted launched %llu captured %llu graph-executed %llu, "
		"the workload expected %llu %llu %llu\n",
		name, (unsigned long long)s.launched, (unsigned long long)s.captured,
		(unsigned long long)s.graph_executed, launched, captured, graph_executed);
	exit(1);
}
