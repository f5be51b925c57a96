/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rate_app: a launch rate that steps up and down in phases of known length
 * and rate, with known totals, for gpuprobe's overhead-budget tests.
 *
 *   rate_app [--phases RATE:MS,RATE:MS,...] [--alloc-every K] [--copy-every K] [--time-calls]
 *            [--get-function] [--wait] [--linger MS] [--spin NS] [--sync-every N]
 *            [--repeat K] [--threads N] [--busy-pace] [--hold]
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
 * can line its windows up with the phases, and "cpu_ns", the process's CPU time over it
 * (CLOCK_PROCESS_CPUTIME_ID, all threads: calls per CPU second).  --time-calls also times every launch call
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
 * The budget's sampling patterns (tests/integration/test_budget.py's coverage test):
 * --spin NS: NS ns of host work (a busy loop on CLOCK_MONOTONIC) after each launch, so that
 * a phase whose rate it cannot keep is a tight loop of a few us a launch, as a real one is;
 * --sync-every N: a cuStreamSynchronize after every N-th launch (truth "syncs" counts them);
 * --repeat K: the phase list run K times (bursts: "500000:20,1:80" with --repeat 30), each
 * phase's figures summed over the repeats (start of the first, end of the last);
 * --threads N: N threads run the phases at once, each on a stream of its own, each with
 * the phases' counts (the truth sums them: N times as many launches);
 * --busy-pace: wait for a launch's due time in a busy loop on CLOCK_MONOTONIC instead of
 * sleeping (bench/gpu/budget_rate.cu's --rate: a paced loop whose thread never sleeps).
 * --hold: print "HOLD <pid>" and wait for SIGUSR1 before its first driver call (cuInit): a
 * test starts the job's driver life at a moment of its choosing, within a millisecond.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"

static const char usage[] =
	"[--phases RATE:MS,...] [--alloc-every K] [--copy-every K] [--time-calls] [--get-function] [--wait] [--linger MS]"
	" [--spin NS] [--sync-every N] [--repeat K] [--threads N] [--busy-pace] [--hold]";

#define COPY_BYTES 65536ULL

#define SLOW_CALL_NS 200000ULL

#define MAX_PHASES 32
#define MAX_THREADS 64

struct phase {
	unsigned long long rate, ms, launches, allocs, copies;
	unsigned long long start_ns, end_ns;
	unsigned long long call_ns, slow_calls;
	unsigned long long cpu_ns; /* the process's CPU time over the phase (all threads) */
	unsigned long long cpu_end_ns;
};

static unsigned long long cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

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

/* What every thread shares (read only) and what each one counts. */
struct opts {
	unsigned long long every, copy_every, spin_ns, sync_every, repeat;
	int nph, time_calls, get_function, busy_pace;
	const struct phase *ph;
	CUfunction f;
	CUkernel k;
	CUdeviceptr dbuf;
	void *host;
};

struct worker {
	const struct opts *o;
	pthread_t t;
	struct phase ph[MAX_PHASES];
	unsigned long long syncs;
	CUstream s;
};

static void spin(unsigned long long ns)
{
	unsigned long long t0 = app_now_ns();

	while (app_now_ns() - t0 < ns)
		;
}

/* The phases, --repeat times, on the worker's own stream. */
static void *work(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	CUfunction f = o->f;
	unsigned long long n = 0;

	for (unsigned long long r = 0; r < o->repeat; r++)
		for (int i = 0; i < o->nph; i++) {
			struct phase *p = &w->ph[i];
			unsigned long long rate = o->ph[i].rate, want = rate * o->ph[i].ms / 1000, t0 = app_now_ns();

			if (!r) {
				p->start_ns = t0;
				p->cpu_ns = cpu_now_ns();
			}
			for (unsigned long long j = 0; j < want; j++) {
				unsigned long long due = t0 + j * 1000000000ull / rate, c0;

				if (o->busy_pace)
					while (app_now_ns() < due)
						;
				else if (app_now_ns() < due)
					sleep_until_ns(due);
				c0 = o->time_calls ? app_now_ns() : 0;
				if (o->get_function)
					CHECK(cuKernelGetFunction(&f, o->k));
				CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, w->s, NULL, NULL));
				if (o->time_calls) {
					unsigned long long d = app_now_ns() - c0;

					if (d <= SLOW_CALL_NS)
						p->call_ns += d;
					else
						p->slow_calls++;
				}
				p->launches++;
				n++;
				if (o->spin_ns)
					spin(o->spin_ns);
				if (o->every && p->launches % o->every == 0) {
					CUdeviceptr d;

					CHECK(cuMemAlloc_v2(&d, 4096));
					CHECK(cuMemFree_v2(d));
					p->allocs++;
				}
				if (o->copy_every && p->launches % o->copy_every == 0) {
					CHECK(cuMemcpyHtoDAsync_v2(o->dbuf, o->host, COPY_BYTES, w->s));
					CHECK(cuStreamSynchronize(w->s));
					w->syncs++;
					p->copies++;
				}
				if (o->sync_every && n % o->sync_every == 0) {
					CHECK(cuStreamSynchronize(w->s));
					w->syncs++;
				}
			}
			/* The phase lasts its planned time even if the last launch came early. */
			sleep_until_ns(t0 + o->ph[i].ms * 1000000ull);
			CHECK(cuStreamSynchronize(w->s));
			w->syncs++;
			p->end_ns = app_now_ns();
			if (r + 1 == o->repeat)
				p->cpu_end_ns = cpu_now_ns();
		}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *spec = "1000:500,20000:500,100000:500,1000:500";
	unsigned long long total = 0, allocs = 0, linger = 0, copies = 0, syncs = 0, threads = 1;
	struct opts o = { .every = 100, .repeat = 1 };
	static struct worker w[MAX_THREADS];
	struct phase ph[MAX_PHASES];
	int nph, wait = 0, hold = 0;
	CUmodule mod;
	CUlibrary lib;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--phases") && i + 1 < argc)
			spec = argv[++i];
		else if (!strcmp(argv[i], "--alloc-every") && i + 1 < argc)
			o.every = app_parse_u64("--alloc-every", argv[++i]);
		else if (!strcmp(argv[i], "--copy-every") && i + 1 < argc)
			o.copy_every = app_parse_u64("--copy-every", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--hold"))
			hold = 1;
		else if (!strcmp(argv[i], "--time-calls"))
			o.time_calls = 1;
		else if (!strcmp(argv[i], "--get-function"))
			o.get_function = 1;
		else if (!strcmp(argv[i], "--busy-pace"))
			o.busy_pace = 1;
		else if (!strcmp(argv[i], "--linger") && i + 1 < argc)
			linger = app_parse_u64("--linger", argv[++i]);
		else if (!strcmp(argv[i], "--spin") && i + 1 < argc)
			o.spin_ns = app_parse_u64("--spin", argv[++i]);
		else if (!strcmp(argv[i], "--sync-every") && i + 1 < argc)
			o.sync_every = app_parse_u64("--sync-every", argv[++i]);
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			o.repeat = app_parse_u64("--repeat", argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = app_parse_u64("--threads", argv[++i]);
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	nph = parse_phases(spec, ph);
	if (nph < 1)
		app_usage_error(argv[0], usage,
				"phases are RATE:MS pairs (RATE x MS a multiple of 1000), at most 32");
	if (threads < 1 || threads > MAX_THREADS || o.repeat < 1 || o.repeat > 100000 || o.spin_ns > 1000000000ull)
		app_usage_error(argv[0], usage, "--threads is 1 to 64, --repeat 1 to 100000, --spin at most 1 s");
	o.nph = nph;
	o.ph = ph;

	app_block_signal();
	if (hold) {
		char banner[64];

		snprintf(banner, sizeof(banner), "HOLD %ld", (long)getpid());
		app_wait_for_signal(banner);
	}
	app_cuda_init();
	if (o.get_function) {
		/* as cuBLAS does: the kernel from a library, its function asked for at every launch */
		CHECK(cuLibraryLoadData(&lib, "_Z11rate_kernelv\n", NULL, NULL, 0, NULL, NULL, 0));
		CHECK(cuLibraryGetKernel(&o.k, lib, "_Z11rate_kernelv"));
	} else {
		CHECK(cuModuleLoadData(&mod, "_Z11rate_kernelv\n"));
		CHECK(cuModuleGetFunction(&o.f, mod, "_Z11rate_kernelv"));
	}
	for (unsigned long long t = 0; t < threads; t++) {
		w[t].o = &o;
		CHECK(cuStreamCreate(&w[t].s, CU_STREAM_NON_BLOCKING));
	}
	if (o.copy_every) {
		CHECK(cuMemAllocHost_v2(&o.host, COPY_BYTES));
		CHECK(cuMemAlloc_v2(&o.dbuf, COPY_BYTES));
	}
	if (wait)
		app_wait_ready();

	if (threads == 1) {
		work(&w[0]);
	} else {
		for (unsigned long long t = 0; t < threads; t++)
			if (pthread_create(&w[t].t, NULL, work, &w[t])) {
				fprintf(stderr, "rate_app: cannot start thread %llu\n", t);
				return 1;
			}
		for (unsigned long long t = 0; t < threads; t++)
			pthread_join(w[t].t, NULL);
	}
	/* the threads' figures, summed: a phase from the first start to the last end */
	for (int i = 0; i < nph; i++)
		for (unsigned long long t = 0; t < threads; t++) {
			const struct phase *q = &w[t].ph[i];

			if (!t || q->start_ns < ph[i].start_ns)
				ph[i].start_ns = q->start_ns;
			if (!t || q->end_ns > ph[i].end_ns)
				ph[i].end_ns = q->end_ns;
			ph[i].launches += q->launches;
			ph[i].allocs += q->allocs;
			ph[i].copies += q->copies;
			ph[i].call_ns += q->call_ns;
			/* the process's clock read by every thread: the earliest start, the latest end */
			if (!t || q->cpu_ns < ph[i].cpu_ns)
				ph[i].cpu_ns = q->cpu_ns;
			if (!t || q->cpu_end_ns > ph[i].cpu_end_ns)
				ph[i].cpu_end_ns = q->cpu_end_ns;
			ph[i].slow_calls += q->slow_calls;
		}
	for (int i = 0; i < nph; i++) {
		total += ph[i].launches;
		allocs += ph[i].allocs;
		copies += ph[i].copies;
	}
	for (unsigned long long t = 0; t < threads; t++)
		syncs += w[t].syncs;
	if (o.copy_every) {
		CHECK(cuMemFree_v2(o.dbuf));
		CHECK(cuMemFreeHost(o.host));
	}
	app_expect_kernel("_Z11rate_kernelv", total, 0, 0);

	/* the account in one write: stderr is unbuffered, and a line written in pieces can be
	 * cut by gpuprobe's own lines to the same stderr (test_budget under load: "Expecting ','
	 * delimiter", a warning in the middle of the account) */
	char *line = NULL;
	size_t len = 0;
	FILE *acc = open_memstream(&line, &len);

	if (!acc)
		return 1;
	fprintf(acc, "{\"pid\":%d,\"api\":\"rate\",\"kernel\":\"rate_kernel()\",\"launches\":%llu,"
			"\"allocs\":%llu,\"frees\":%llu,\"alloc_every\":%llu,\"clock\":\"CLOCK_MONOTONIC\","
			"\"copies\":%llu,\"copy_bytes\":%llu,\"syncs\":%llu,\"threads\":%llu,\"phases\":[",
		(int)getpid(), total, allocs, allocs, o.every, copies,
		copies * COPY_BYTES, syncs, threads);
	for (int i = 0; i < nph; i++) {
		double secs = (double)(ph[i].end_ns - ph[i].start_ns) / 1e9;

		fprintf(acc, "%s{\"rate\":%llu,\"ms\":%llu,\"launches\":%llu,\"allocs\":%llu,"
				"\"copies\":%llu,\"start_ns\":%llu,\"end_ns\":%llu,\"achieved_rate\":%.1f,\"cpu_ns\":%llu",
			i ? "," : "", ph[i].rate, ph[i].ms, ph[i].launches, ph[i].allocs, ph[i].copies,
			ph[i].start_ns, ph[i].end_ns, secs > 0 ? (double)ph[i].launches / secs : 0,
			ph[i].cpu_end_ns - ph[i].cpu_ns);
		if (o.time_calls)
			fprintf(acc, ",\"call_ns\":%llu,\"slow_calls\":%llu", ph[i].call_ns, ph[i].slow_calls);
		fprintf(acc, "}");
	}
	fprintf(acc, "]}\n");
	if (fclose(acc))
		return 1;
	if (write(STDERR_FILENO, line, len) != (ssize_t)len)
		return 1;
	free(line);
	if (linger)
		sleep_until_ns(app_now_ns() + linger * 1000000ull);
	return 0;
}
