/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memleak_app - a CUDA workload whose allocations, frees and leaks are known
 * by construction, for testing gpuprobe's leak tracking.
 *
 * Allocations happen on the main thread in workload_alloc(); frees happen on
 * --threads other threads in workload_free(), so a tracer has to match frees
 * to allocations across threads.  The ground truth is printed to stderr as
 * one JSON line, counted as a tracer attached at the READY point sees it:
 * the --pre allocations are before that point, so their frees are
 * "untracked_frees" and count neither as allocs nor as frees.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static const char usage[] =
	"[--api alloc|pitch|managed|async|async_ptsz|pool|host|hostalloc|vmm|all]\n"
	"    [--allocs N] [--leaks M] [--size BYTES] [--threads T] [--failed K]\n"
	"    [--pre P] [--loop L] [--wait] [--hold] [--exit-code C]";

/* One allocation, whatever API made it. */
struct rec {
	CUdeviceptr dptr;
	void *hptr;
	CUmemGenericAllocationHandle handle;
	CUdeviceptr va;
	size_t req;	/* size asked for */
	size_t bytes;	/* size as the driver accounts it */
};

struct family {
	const char *name;
	void (*alloc)(struct rec *r, size_t size);
	void (*free)(struct rec *r);
	/* One allocation call that must fail (size 0). */
	void (*bad_alloc)(void);
	/* One free of something never allocated, which must fail. */
	void (*bad_free)(unsigned long long i);
};

static CUstream g_stream;	/* for the stream-ordered families */
static CUcontext g_ctx;

/* Never handed out by the driver: below every device address window. */
static CUdeviceptr bogus_dptr(unsigned long long i)
{
	return 0xdead00000000ull + i * 256;
}

/* Real memory, but not from cuMemAllocHost/cuMemHostAlloc. */
static char bogus_host[64];

/* ---- cuMemAlloc_v2 ---- */
static void alloc_alloc(struct rec *r, size_t size)
{
	CHECK(cuMemAlloc_v2(&r->dptr, size));
	r->bytes = size;
}

static void alloc_bad(void)
{
	CUdeviceptr p;

	CHECK_FAILS(cuMemAlloc_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
}

static void dev_free(struct rec *r)
{
	CHECK(cuMemFree_v2(r->dptr));
}

static void dev_bad_free(unsigned long long i)
{
	CHECK_FAILS(cuMemFree_v2(bogus_dptr(i)), CUDA_ERROR_INVALID_VALUE);
}

/* ---- cuMemAllocPitch_v2: 3 rows, so the driver's padding shows ---- */
#define PITCH_ROWS 3

static void pitch_alloc(struct rec *r, size_t size)
{
	size_t pitch;

	CHECK(cuMemAllocPitch_v2(&r->dptr, &pitch,
				 (size + PITCH_ROWS - 1) / PITCH_ROWS,
				 PITCH_ROWS, 4));
	r->bytes = pitch * PITCH_ROWS;
}

static void pitch_bad(void)
{
	CUdeviceptr p;
	size_t pitch;

	CHECK_FAILS(cuMemAllocPitch_v2(&p, &pitch, 0, PITCH_ROWS, 4),
		    CUDA_ERROR_INVALID_VALUE);
}

/* ---- cuMemAllocManaged ---- */
static void managed_alloc(struct rec *r, size_t size)
{
	CHECK(cuMemAllocManaged(&r->dptr, size, CU_MEM_ATTACH_GLOBAL));
	r->bytes = size;
}

static void managed_bad(void)
{
	CUdeviceptr p;

	CHECK_FAILS(cuMemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL),
		    CUDA_ERROR_INVALID_VALUE);
}

/* ---- cuMemAllocAsync / cuMemFreeAsync ---- */
static void async_alloc(struct rec *r, size_t size)
{
	CHECK(cuMemAllocAsync(&r->dptr, size, g_stream));
	r->bytes = size;
}

static void async_bad(void)
{
	CUdeviceptr p;

	CHECK_FAILS(cuMemAllocAsync(&p, 0, g_stream), CUDA_ERROR_INVALID_VALUE);
}

static void async_free(struct rec *r)
{
	CHECK(cuMemFreeAsync(r->dptr, g_stream));
}

static void async_bad_free(unsigned long long i)
{
	CHECK_FAILS(cuMemFreeAsync(bogus_dptr(i), g_stream),
		    CUDA_ERROR_INVALID_VALUE);
}

/* ---- the _ptsz variants ---- */
static void async_ptsz_alloc(struct rec *r, size_t size)
{
	CHECK(cuMemAllocAsync_ptsz(&r->dptr, size, g_stream));
	r->bytes = size;
}

static void async_ptsz_bad(void)
{
	CUdeviceptr p;

	CHECK_FAILS(cuMemAllocAsync_ptsz(&p, 0, g_stream),
		    CUDA_ERROR_INVALID_VALUE);
}

static void async_ptsz_free(struct rec *r)
{
	CHECK(cuMemFreeAsync_ptsz(r->dptr, g_stream));
}

static void async_ptsz_bad_free(unsigned long long i)
{
	CHECK_FAILS(cuMemFreeAsync_ptsz(bogus_dptr(i), g_stream),
		    CUDA_ERROR_INVALID_VALUE);
}

/* ---- cuMemAllocFromPoolAsync (default pool) / cuMemFreeAsync ---- */
static void pool_alloc(struct rec *r, size_t size)
{
	CHECK(cuMemAllocFromPoolAsync(&r->dptr, size, NULL, g_stream));
	r->bytes = size;
}

static void pool_bad(void)
{
	CUdeviceptr p;

	CHECK_FAILS(cuMemAllocFromPoolAsync(&p, 0, NULL, g_stream),
		    CUDA_ERROR_INVALID_VALUE);
}

/* ---- cuMemAllocHost_v2 / cuMemHostAlloc / cuMemFreeHost ---- */
static void host_alloc(struct rec *r, size_t size)
{
	CHECK(cuMemAllocHost_v2(&r->hptr, size));
	((volatile char *)r->hptr)[0] = 1;	/* it is real memory */
	r->bytes = size;
}

static void host_bad(void)
{
	void *p;

	CHECK_FAILS(cuMemAllocHost_v2(&p, 0), CUDA_ERROR_INVALID_VALUE);
}

static void hostalloc_alloc(struct rec *r, size_t size)
{
	CHECK(cuMemHostAlloc(&r->hptr, size, CU_MEMHOSTALLOC_PORTABLE));
	((volatile char *)r->hptr)[0] = 1;
	r->bytes = size;
}

static void hostalloc_bad(void)
{
	void *p;

	CHECK_FAILS(cuMemHostAlloc(&p, 0, CU_MEMHOSTALLOC_PORTABLE),
		    CUDA_ERROR_INVALID_VALUE);
}

static void host_free(struct rec *r)
{
	CHECK(cuMemFreeHost(r->hptr));
}

static void host_bad_free(unsigned long long i)
{
	CHECK_FAILS(cuMemFreeHost(&bogus_host[i % sizeof(bogus_host)]),
		    CUDA_ERROR_INVALID_VALUE);
}

/* ---- cuMemCreate + reserve + map / unmap + cuMemRelease ---- */
static void vmm_alloc(struct rec *r, size_t size)
{
	CUmemAllocationProp prop;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CHECK(cuMemCreate(&r->handle, size, &prop, 0));
	CHECK(cuMemAddressReserve(&r->va, size, 0, 0, 0));
	CHECK(cuMemMap(r->va, size, 0, r->handle, 0));
	r->bytes = size;
}

static void vmm_bad(void)
{
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	CHECK_FAILS(cuMemCreate(&h, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
}

static void vmm_free(struct rec *r)
{
	CHECK(cuMemUnmap(r->va, r->req));
	CHECK(cuMemRelease(r->handle));
	CHECK(cuMemAddressFree(r->va, r->req));
}

static void vmm_bad_free(unsigned long long i)
{
	CHECK_FAILS(cuMemRelease(0xbad0000000000000ull + i),
		    CUDA_ERROR_INVALID_VALUE);
}

static const struct family families[] = {
	{ "alloc", alloc_alloc, dev_free, alloc_bad, dev_bad_free },
	{ "pitch", pitch_alloc, dev_free, pitch_bad, dev_bad_free },
	{ "managed", managed_alloc, dev_free, managed_bad, dev_bad_free },
	{ "async", async_alloc, async_free, async_bad, async_bad_free },
	{ "async_ptsz", async_ptsz_alloc, async_ptsz_free, async_ptsz_bad,
	  async_ptsz_bad_free },
	{ "pool", pool_alloc, async_free, pool_bad, async_bad_free },
	{ "host", host_alloc, host_free, host_bad, host_bad_free },
	{ "hostalloc", hostalloc_alloc, host_free, hostalloc_bad,
	  host_bad_free },
	{ "vmm", vmm_alloc, vmm_free, vmm_bad, vmm_bad_free },
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

static struct {
	unsigned long long allocs, leaks, size, threads, failed, pre, loop;
	int exit_code;
	int wait, hold;
	const char *api;
} opt = { 10, 3, 1 << 20, 1, 0, 0, 1, 0, 0, 0, "alloc" };

/*
 * Makes n allocations, recs[i] of size + (first + i) * 4096 bytes, then
 * `failed` allocation calls that must fail.
 */
__attribute__((noinline)) void workload_alloc(const struct family *f,
					      struct rec *recs, size_t n,
					      unsigned long long first,
					      unsigned long long failed)
{
	for (size_t i = 0; i < n; i++) {
		recs[i].req = opt.size + (first + i) * 4096;
		f->alloc(&recs[i], recs[i].req);
	}
	for (unsigned long long i = 0; i < failed; i++)
		f->bad_alloc();
}

struct free_job {
	const struct family *f;
	struct rec *recs;
	size_t n, stride;	/* frees recs[0], recs[stride], ... */
	unsigned long long bad_first, bad_n;	/* bogus frees to attempt */
};

/* Thread body: frees its share of the allocations, on a non-main thread. */
__attribute__((noinline)) void *workload_free(void *arg)
{
	struct free_job *j = arg;

	/* Real CUDA needs a current context on every thread that calls in. */
	CHECK(cuCtxSetCurrent(g_ctx));
	for (size_t i = 0; i < j->n; i += j->stride)
		j->f->free(&j->recs[i]);
	for (unsigned long long i = 0; i < j->bad_n; i++)
		j->f->bad_free(j->bad_first + i);
	return NULL;
}

/* Frees recs[0..n) on opt.threads threads, plus `bad` bogus frees. */
static void free_on_threads(const struct family *f, struct rec *recs,
			    size_t n, unsigned long long bad)
{
	size_t nt = (size_t)opt.threads;
	pthread_t *tids = calloc(nt, sizeof(*tids));
	struct free_job *jobs = calloc(nt, sizeof(*jobs));

	if (!tids || !jobs) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t t = 0; t < nt; t++) {
		jobs[t] = (struct free_job){
			.f = f,
			.recs = recs + t,
			.n = n > t ? n - t : 0,
			.stride = nt,
			.bad_first = bad * t / nt,
			.bad_n = bad * (t + 1) / nt - bad * t / nt,
		};
		if (pthread_create(&tids[t], NULL, workload_free, &jobs[t])) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	}
	for (size_t t = 0; t < nt; t++)
		pthread_join(tids[t], NULL);
	free(tids);
	free(jobs);
}

struct family_run {
	const struct family *f;
	struct rec *pre;	/* opt.pre allocations made before READY */
	struct rec *leaked;	/* opt.leaks * opt.loop, never freed */
	struct truth truth;
};

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

static void run_pre(struct family_run *fr)
{
	unsigned long long first = opt.allocs * opt.loop;

	/* Sizes continue after the tracked ones, so all stay distinct. */
	fr->pre = xcalloc(opt.pre, sizeof(*fr->pre));
	for (size_t i = 0; i < opt.pre; i++) {
		fr->pre[i].req = opt.size + (first + i) * 4096;
		fr->f->alloc(&fr->pre[i], fr->pre[i].req);
	}
}

static void run_work(struct family_run *fr)
{
	const struct family *f = fr->f;
	struct rec *recs = xcalloc(opt.allocs, sizeof(*recs));
	struct truth *t = &fr->truth;

	t->api = f->name;
	/* Untracked frees first: the tracer never saw these allocations. */
	for (size_t i = 0; i < opt.pre; i++)
		f->free(&fr->pre[i]);
	t->untracked_frees = opt.pre;
	free(fr->pre);
	fr->pre = NULL;

	fr->leaked = xcalloc(opt.leaks * opt.loop, sizeof(*fr->leaked));
	for (unsigned long long l = 0; l < opt.loop; l++) {
		workload_alloc(f, recs, opt.allocs, l * opt.allocs, opt.failed);
		/* The first `leaks` of each round are the leaked ones. */
		for (size_t i = 0; i < opt.leaks; i++) {
			fr->leaked[l * opt.leaks + i] = recs[i];
			t->leaked_bytes += recs[i].bytes;
		}
		free_on_threads(f, recs + opt.leaks, opt.allocs - opt.leaks,
				opt.failed);
		if (g_stream)
			CHECK(cuStreamSynchronize(g_stream));
		t->allocs += opt.allocs;
		t->frees += opt.allocs - opt.leaks;
		t->leaks += opt.leaks;
		t->failed_calls += 2 * opt.failed;
	}
	free(recs);
}

static void parse_args(int argc, char **argv)
{
	enum { O_API = 1, O_ALLOCS, O_LEAKS, O_SIZE, O_THREADS, O_FAILED,
	       O_PRE, O_WAIT, O_HOLD, O_LOOP, O_EXIT };
	static const struct option longopts[] = {
		{ "api", required_argument, NULL, O_API },
		{ "allocs", required_argument, NULL, O_ALLOCS },
		{ "leaks", required_argument, NULL, O_LEAKS },
		{ "size", required_argument, NULL, O_SIZE },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "failed", required_argument, NULL, O_FAILED },
		{ "pre", required_argument, NULL, O_PRE },
		{ "wait", no_argument, NULL, O_WAIT },
		{ "hold", no_argument, NULL, O_HOLD },
		{ "loop", required_argument, NULL, O_LOOP },
		{ "exit-code", required_argument, NULL, O_EXIT },
		{ NULL, 0, NULL, 0 },
	};
	const char *prog = argv[0];
	int c;

	opterr = 0;	/* our own message, with the usage */
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		const char *name = optind > 0 ? argv[optind - 1] : "?";

		switch (c) {
		case O_API: opt.api = optarg; break;
		case O_ALLOCS: opt.allocs = app_parse_u64(name, optarg); break;
		case O_LEAKS: opt.leaks = app_parse_u64(name, optarg); break;
		case O_SIZE: opt.size = app_parse_u64(name, optarg); break;
		case O_THREADS: opt.threads = app_parse_u64(name, optarg); break;
		case O_FAILED: opt.failed = app_parse_u64(name, optarg); break;
		case O_PRE: opt.pre = app_parse_u64(name, optarg); break;
		case O_WAIT: opt.wait = 1; break;
		case O_HOLD: opt.hold = 1; break;
		case O_LOOP: opt.loop = app_parse_u64(name, optarg); break;
		case O_EXIT:
			opt.exit_code = (int)app_parse_u64(name, optarg);
			break;
		default:
			app_usage_error(prog, usage, "unknown or incomplete option '%s'",
					name);
		}
	}
	if (optind < argc)
		app_usage_error(prog, usage, "unexpected argument '%s'",
				argv[optind]);
	if (opt.leaks > opt.allocs)
		app_usage_error(prog, usage, "--leaks must not exceed --allocs");
	if (opt.threads < 1 || opt.threads > 1024)
		app_usage_error(prog, usage, "--threads must be 1..1024");
	if (opt.size < 1)
		app_usage_error(prog, usage, "--size must be at least 1");
	if (opt.exit_code > 255)
		app_usage_error(prog, usage, "--exit-code must be 0..255");
	if (strcmp(opt.api, "all") != 0) {
		size_t i;

		for (i = 0; i < NFAMILIES; i++)
			if (strcmp(opt.api, families[i].name) == 0)
				break;
		if (i == NFAMILIES)
			app_usage_error(prog, usage, "unknown --api '%s'", opt.api);
	}
}

int main(int argc, char **argv)
{
	struct family_run runs[NFAMILIES];
	size_t nruns = 0;
	struct truth sum = { .api = "all" };
	char *per_api = NULL;
	size_t per_api_len = 0;
	FILE *pa;

	parse_args(argc, argv);
	app_block_signal();	/* before cuInit: drivers start threads */
	g_ctx = app_cuda_init();

	for (size_t i = 0; i < NFAMILIES; i++) {
		if (strcmp(opt.api, "all") == 0 ||
		    strcmp(opt.api, families[i].name) == 0) {
			memset(&runs[nruns], 0, sizeof(runs[nruns]));
			runs[nruns++].f = &families[i];
		}
	}
	for (size_t i = 0; i < nruns; i++) {
		const char *n = runs[i].f->name;

		if (!g_stream && (strncmp(n, "async", 5) == 0 ||
				  strcmp(n, "pool") == 0))
			CHECK(cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING));
	}
	for (size_t i = 0; i < nruns; i++)
		run_pre(&runs[i]);

	if (opt.wait)
		app_wait_ready();

	for (size_t i = 0; i < nruns; i++) {
		run_work(&runs[i]);
		truth_add(&sum, &runs[i].truth);
	}

	if (nruns == 1) {
		truth_print(stderr, &runs[0].truth, NULL);
	} else {
		/* Totals, plus the per-family breakdown. */
		pa = open_memstream(&per_api, &per_api_len);
		if (!pa)
			return 1;
		fputs("\"per_api\":{", pa);
		for (size_t i = 0; i < nruns; i++) {
			fprintf(pa, "%s\"%s\":{", i ? "," : "", runs[i].f->name);
			truth_fields(pa, &runs[i].truth, 0);
			fputc('}', pa);
		}
		fputc('}', pa);
		fclose(pa);
		truth_print(stderr, &sum, per_api);
		free(per_api);
	}

	if (opt.hold)
		app_wait_for_signal("HELD");
	/* Only our bookkeeping: the leaked allocations themselves stay. */
	for (size_t i = 0; i < nruns; i++)
		free(runs[i].leaked);
	return opt.exit_code;
}
