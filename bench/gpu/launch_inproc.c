// SPDX-License-Identifier: BSD-3-Clause
/*
 * launch_inproc - a launch-bound loop that runs until told to stop, for bench/gpu/inproc.py:
 * steps of K empty-kernel launches (cuLaunchKernel on a stream of the thread's own), each
 * step's start, time and wall time (CLOCK_MONOTONIC ns) appended to LOG as
 * "step T D W I" (I: the thread). The kernel is PTX the driver compiles at load, so this
 * builds on a host without a GPU (gcc, cuda.h and the toolkit's stub libcuda.so) and
 * carries to the GPU machine:
 *
 *     gcc -O2 -Wall -Wextra -I/usr/local/cuda/include -o launch_inproc launch_inproc.c \
 *         -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
 *
 *   launch_inproc LOG [K] [SECONDS] [OPTIONS]   (K 1000, SECONDS 600; SIGTERM or SIGINT end it)
 *
 * The patterns of bench/gpu/budget_rate.cu (issue 29's sampled programs), same names:
 *   --sync-every E   a cuStreamSynchronize after every E-th launch of a thread (default K:
 *                    each step ends with one, the plain loop's; 0: never, budget_rate's
 *                    --sync-every 0, the step ends with its K-th launch)
 *   --spin NS        NS ns of host work (a busy loop) after each launch
 *   --rate R         paced: launch j of a thread is due at its start + j / R (busy wait)
 *   --burst ON:OFF   ON ms of launching, OFF ms of sleep, in turn
 *   --threads T      T threads launching at once (1-64), each on a stream of its own and
 *                    logging its own steps
 * A step's time D is its wall time W less the time it waited for a paced launch's due time
 * and slept between bursts: the time it worked (launch calls, host work, synchronizes), so
 * that a cost per launch shows in a paced or bursty loop, where pacing hides it from the
 * wall time (a paced loop that keeps its pace is as fast traced as not; what tracing costs
 * it is time it has not got for other work). Without --rate and --burst, D = W.
 *
 * Prints "READY PID" once a thread's first step is done.
 */
#include <cuda.h>
#include <errno.h>
#include <pthread.h>
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

struct opts {
	unsigned long long k, sync_every, spin_ns, rate, on_ms, off_ms, end;
	int threads;
};

struct thr {
	pthread_t t;
	int index;
};

static volatile sig_atomic_t stop;
static struct opts o = { .k = 1000, .sync_every = ~0ULL, .threads = 1 };
static CUcontext ctx;
static CUfunction f;
static FILE *steplog;
static int ready;

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

static void spin_until(unsigned long long t)
{
	while (now_ns() < t)
		;
}

/* OFF ms of sleep between bursts (a signal cuts it short) */
static void sleep_off(void)
{
	struct timespec ts = { .tv_sec = (time_t)(o.off_ms / 1000), .tv_nsec = (long)(o.off_ms % 1000) * 1000000L };

	while (!stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void *work(void *arg)
{
	struct thr *w = arg;
	unsigned long long start, burst0, j = 0, t0, t1, idle, a, steps = 0, flushed;
	CUstream s;

	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	start = burst0 = flushed = now_ns();
	while (!stop && now_ns() < o.end) {
		t0 = now_ns();
		idle = 0;
		for (unsigned long long i = 0; i < o.k; i++) {
			if (o.rate) {
				a = now_ns();
				spin_until(start + j / o.rate * 1000000000ULL + j % o.rate * 1000000000ULL / o.rate);
				idle += now_ns() - a;
			}
			if (o.on_ms && (a = now_ns()) - burst0 >= o.on_ms * 1000000ULL) {
				sleep_off();
				burst0 = now_ns();
				idle += burst0 - a;
			}
			check(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), "cuLaunchKernel");
			j++;
			if (o.spin_ns)
				spin_until(now_ns() + o.spin_ns);
			if (o.sync_every && j % o.sync_every == 0)
				check(cuStreamSynchronize(s), "cuStreamSynchronize");
		}
		t1 = now_ns();
		fprintf(steplog, "step %llu %llu %llu %d\n", t0, t1 - t0 - idle, t1 - t0, w->index);
		if (++steps == 1 && !__atomic_exchange_n(&ready, 1, __ATOMIC_SEQ_CST)) {
			printf("READY %d\n", (int)getpid());
			fflush(stdout);
		}
		if (t1 - flushed >= 100000000ULL) { /* the harness reads the log as it runs */
			fflush(steplog);
			flushed = t1;
		}
	}
	return NULL;
}

static int number(const char *s, unsigned long long max, unsigned long long *v)
{
	char *e;

	errno = 0;
	*v = strtoull(s, &e, 10);
	return !errno && e != s && !*e && s[0] != '-' && *v <= max;
}

/* LOG [K] [SECONDS] and the options, in any order; 0 when something is wrong */
static int parse(int argc, char **argv, const char **path, double *secs)
{
	unsigned long long v;
	int pos = 0;

	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strncmp(opt, "--", 2)) {
			if (pos == 0)
				*path = opt;
			else if (pos == 1 && !(number(opt, 10000000, &o.k) && o.k))
				return 0;
			else if (pos == 2 && !((*secs = atof(opt)) > 0 && *secs <= 86400))
				return 0;
			else if (pos > 2)
				return 0;
			pos++;
			continue;
		}
		if (!val)
			return 0;
		i++;
		if (!strcmp(opt, "--sync-every")) {
			if (!number(val, 10000000, &o.sync_every))
				return 0;
		} else if (!strcmp(opt, "--spin")) {
			if (!number(val, 1000000000, &o.spin_ns))
				return 0;
		} else if (!strcmp(opt, "--rate")) {
			if (!number(val, 100000000, &o.rate) || !o.rate)
				return 0;
		} else if (!strcmp(opt, "--burst")) {
			char extra;

			if (sscanf(val, "%llu:%llu%c", &o.on_ms, &o.off_ms, &extra) != 2 || !o.on_ms ||
			    o.on_ms > 3600000 || o.off_ms > 3600000)
				return 0;
		} else if (!strcmp(opt, "--threads")) {
			if (!number(val, 64, &v) || !v)
				return 0;
			o.threads = (int)v;
		} else {
			return 0;
		}
	}
	if (o.sync_every == ~0ULL)
		o.sync_every = o.k;
	return pos >= 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct thr w[64];
	const char *path = NULL;
	double secs = 600;
	CUdevice dev;
	CUmodule mod;

	if (!parse(argc, argv, &path, &secs)) {
		fprintf(stderr, "usage: launch_inproc LOG [K] [SECONDS] [--sync-every E] [--spin NS] [--rate R]"
				" [--burst ON:OFF] [--threads T]\n");
		return 2;
	}
	steplog = fopen(path, "w");
	if (!steplog) {
		fprintf(stderr, "launch_inproc: %s: %s\n", path, strerror(errno));
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
	o.end = now_ns() + (unsigned long long)(secs * 1e9);
	for (int i = 0; i < o.threads; i++) {
		w[i].index = i;
		if (pthread_create(&w[i].t, NULL, work, &w[i])) {
			fprintf(stderr, "launch_inproc: cannot start a thread\n");
			return 1;
		}
	}
	for (int i = 0; i < o.threads; i++)
		pthread_join(w[i].t, NULL);
	fclose(steplog);
	return 0;
}
