/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakecuda_smoke - self-test of the stand-in driver (tests/fakecuda).  The
 * tracer tests trust its counts and timings, so check them first.  Prints
 * TAP-like "ok - ..." / "not ok - ..." lines and "N passed, M failed";
 * exits 1 on any failure.
 *
 * It sets FAKECUDA_* itself (before cuInit) so timings are predictable:
 * 1 GB/s copies, 1 ms per launch, 1 GiB per device, 2 devices.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/wait.h>
#include <unistd.h>

#include "fakecuda.h"
#include "fakecuda_ext.h"

#define BW 1e9		/* bytes/s, set in the environment below */
#define KERNEL_NS 1000000ull
#define MEM_LIMIT (1ull << 30)
#define DEV_BASE 0x7e0000000000ull
#define DEV_SPAN 0x10000000000ull
#define MiB (1ull << 20)

static int npass, nfail;

static void check(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void check(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", cond ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (cond)
		npass++;
	else
		nfail++;
}

static const char *ename(CUresult rc)
{
	const char *s = NULL;

	cuGetErrorName(rc, &s);
	return s ? s : "?";
}

/* Asserts call returned want; evaluates to whether it did. */
#define RC(call, want) rc_is((call), (want), #call)
static int rc_is(CUresult got, CUresult want, const char *what)
{
	if (got == want)
		check(1, "%s -> %s", what, ename(want));
	else
		check(0, "%s -> %s, expected %s", what, ename(got), ename(want));
	return got == want;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Within 30% of the expected seconds. */
static int within(double got, double want)
{
	return (got > want ? got - want : want - got) <= 0.3 * want;
}

/* Set by T() inside TIMED blocks; check_time reports it. */
static int timed_err;
#define T(call) (timed_err |= (call) != CUDA_SUCCESS)

static void check_time(double got, double want, const char *what)
{
	check(!timed_err && within(got, want),
	      "%s took %.2f ms (expected %.2f ms +-30%%)%s", what, got * 1e3,
	      want * 1e3, timed_err ? ", but a call failed" : "");
}

/*
 * Runs the statements (T() around each CUDA call) up to 5 times until they
 * take want seconds +-30%, then reports the last try.  A VM may oversleep
 * or deschedule us by milliseconds (tens of them on a shared, loaded
 * machine), which says nothing about the stand-in.
 * The statements may read t0_, the start time of the current try.
 */
#define TIMED(want, what, ...)                                      \
	do {                                                        \
		double dt_ = 0;                                     \
		timed_err = 0;                                      \
		for (int try_ = 0; try_ < 5; try_++) {              \
			double t0_ = now_s();                       \
			(void)t0_;                                  \
			__VA_ARGS__;                                \
			dt_ = now_s() - t0_;                        \
			if (!timed_err && within(dt_, (want)))      \
				break;                              \
		}                                                   \
		check_time(dt_, (want), (what));                    \
	} while (0)

static int in_dev(CUdeviceptr p, int dev)
{
	return p >= DEV_BASE + (uint64_t)dev * DEV_SPAN &&
	       p < DEV_BASE + (uint64_t)(dev + 1) * DEV_SPAN;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static CUcontext pctx0, pctx1;
static CUstream stream;

/* ---------------------------------------------------------------------- */

static void test_before_init(void)
{
	CUdeviceptr p;
	int v = 0, n;
	const char *s = NULL;

	RC(cuMemAlloc_v2(&p, 4096), CUDA_ERROR_NOT_INITIALIZED);
	RC(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	RC(cuDriverGetVersion(&v), CUDA_SUCCESS);
	check(v == 13000, "cuDriverGetVersion = %d", v);
	RC(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
	check(s && strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0,
	      "cuGetErrorName(2) = %s", s ? s : "(null)");
	RC(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s), CUDA_SUCCESS);
	check(s && strcmp(s, "invalid argument") == 0, "cuGetErrorString(1) = %s",
	      s ? s : "(null)");
	RC(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	RC(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

static void test_init_ctx(void)
{
	CUcontext c, c2, cur;
	CUdevice d;
	char name[64];
	int n = 0;

	RC(cuInit(0), CUDA_SUCCESS);
	RC(cuInit(0), CUDA_SUCCESS);
	RC(cuDeviceGetCount(&n), CUDA_SUCCESS);
	check(n == 2, "cuDeviceGetCount = %d", n);
	RC(cuDeviceGet(&d, 1), CUDA_SUCCESS);
	RC(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
	RC(cuDeviceGetName(name, sizeof(name), 1), CUDA_SUCCESS);
	check(strcmp(name, "FakeCUDA Device 1") == 0, "device name '%s'", name);

	RC(cuDevicePrimaryCtxRetain(&pctx0, 0), CUDA_SUCCESS);
	RC(cuDevicePrimaryCtxRetain(&pctx1, 1), CUDA_SUCCESS);
	RC(cuDevicePrimaryCtxRetain(&c, 0), CUDA_SUCCESS);
	check(c == pctx0 && pctx0 != pctx1, "primary contexts: one per device");
	RC(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
	RC(cuCtxSetCurrent(pctx0), CUDA_SUCCESS);
	RC(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	check(cur == pctx0, "cuCtxGetCurrent returns the context set");
	RC(cuCtxGetDevice(&d), CUDA_SUCCESS);
	check(d == 0, "cuCtxGetDevice = %d", d);

	RC(cuCtxCreate_v4(&c, NULL, 0, 1), CUDA_SUCCESS);
	RC(cuCtxGetDevice(&d), CUDA_SUCCESS);
	check(d == 1, "cuCtxCreate_v4 makes the new context current (dev %d)", d);
	RC(cuCtxPopCurrent_v2(&cur), CUDA_SUCCESS);
	check(cur == c, "cuCtxPopCurrent_v2 returns it");
	RC(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	check(cur == pctx0, "previous context current again after pop");
	RC(cuCtxPushCurrent_v2(c), CUDA_SUCCESS);
	RC(cuCtxGetDevice(&d), CUDA_SUCCESS);
	check(d == 1, "cuCtxPushCurrent_v2 switches device");
	RC(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
	RC(cuCtxDestroy_v2(c), CUDA_SUCCESS);
	RC(cuCtxCreate_v2(&c2, 0, 0), CUDA_SUCCESS);
	RC(cuCtxDestroy_v2(c2), CUDA_SUCCESS);
	RC(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	check(cur == pctx0, "destroying the current context pops it");
	RC(cuCtxDestroy_v2(c2), CUDA_ERROR_INVALID_CONTEXT);
	RC(cuCtxSetCurrent(c2), CUDA_ERROR_INVALID_CONTEXT);
	RC(cuCtxPushCurrent_v2(NULL), CUDA_ERROR_INVALID_CONTEXT);
	RC(cuCtxDestroy_v2(pctx0), CUDA_ERROR_INVALID_CONTEXT);
	RC(cuCtxSynchronize(), CUDA_SUCCESS);
	RC(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
}

static void test_alloc_basic(void)
{
	enum { N = 100 };
	CUdeviceptr p[N], q, sorted[N];
	size_t sz[N];
	int distinct = 1, aligned = 1, window = 1, disjoint = 1;
	CUdeviceptr base;
	size_t size;

	for (int i = 0; i < N; i++) {
		sz[i] = 1 + (size_t)i * 777;
		if (cuMemAlloc_v2(&p[i], sz[i]) != CUDA_SUCCESS)
			p[i] = 0;
		aligned &= p[i] % 256 == 0;
		window &= in_dev(p[i], 0);
	}
	memcpy(sorted, p, sizeof(p));
	qsort(sorted, N, sizeof(sorted[0]), cmp_u64);
	for (int i = 1; i < N; i++)
		distinct &= sorted[i] != sorted[i - 1];
	for (int i = 1; i < N; i++)
		disjoint &= p[i] >= p[i - 1] + sz[i - 1];
	check(distinct, "cuMemAlloc_v2: %d distinct addresses", N);
	check(aligned, "cuMemAlloc_v2: 256-byte aligned");
	check(window, "cuMemAlloc_v2: addresses in device 0's range");
	check(disjoint, "cuMemAlloc_v2: allocations do not overlap");
	RC(cuMemGetAddressRange_v2(&base, &size, p[50] + 10), CUDA_SUCCESS);
	check(base == p[50] && size == sz[50],
	      "cuMemGetAddressRange_v2 finds base and size of interior pointer");
	RC(cuMemGetAddressRange_v2(&base, &size, 0x1234), CUDA_ERROR_NOT_FOUND);

	int freed_ok = 1;

	for (int i = 0; i < N; i++)
		freed_ok &= cuMemFree_v2(p[i]) == CUDA_SUCCESS;
	check(freed_ok, "cuMemFree_v2 of each");
	RC(cuMemFree_v2(p[7]), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemFree_v2(p[7] + 256), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemFree_v2(0xdead0000), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemFree_v2(0), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&q, 4096), CUDA_SUCCESS);
	check(q > sorted[N - 1], "addresses are never reused");
	RC(cuMemFree_v2(q), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&q, 0), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemAlloc_v2(NULL, 4096), CUDA_ERROR_INVALID_VALUE);

	RC(cuCtxPushCurrent_v2(pctx1), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&q, 4096), CUDA_SUCCESS);
	check(in_dev(q, 1), "allocation in device 1's context is in its range");
	RC(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
	/* Free works from any context (address says which device). */
	RC(cuMemFree_v2(q), CUDA_SUCCESS);
}

static void test_alloc_limits(void)
{
	CUdeviceptr a, b;
	size_t fr = 0, tot = 0, fr2 = 0;

	RC(cuMemGetInfo_v2(&fr, &tot), CUDA_SUCCESS);
	check(tot == MEM_LIMIT && fr == MEM_LIMIT,
	      "cuMemGetInfo_v2: total %zu free %zu", tot, fr);
	RC(cuMemAlloc_v2(&a, 2 * MEM_LIMIT), CUDA_ERROR_OUT_OF_MEMORY);
	RC(cuMemAlloc_v2(&a, 600 * MiB), CUDA_SUCCESS);
	RC(cuMemGetInfo_v2(&fr2, &tot), CUDA_SUCCESS);
	check(fr2 == MEM_LIMIT - 600 * MiB, "cuMemGetInfo_v2 counts outstanding bytes");
	RC(cuMemAlloc_v2(&b, 600 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
	RC(cuMemFree_v2(a), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&b, 600 * MiB), CUDA_SUCCESS);
	RC(cuMemFree_v2(b), CUDA_SUCCESS);
	/* The limit is per device. */
	RC(cuMemAlloc_v2(&a, 600 * MiB), CUDA_SUCCESS);
	RC(cuCtxPushCurrent_v2(pctx1), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&b, 600 * MiB), CUDA_SUCCESS);
	RC(cuMemFree_v2(b), CUDA_SUCCESS);
	RC(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
	RC(cuMemFree_v2(a), CUDA_SUCCESS);
}

static void test_alloc_variants(void)
{
	CUdeviceptr p, q, base;
	size_t pitch = 0, size = 0;
	void *h = NULL, *h2 = NULL;
	char local[16];
	CUstream bogus = (CUstream)(void *)local;

	RC(cuMemAllocPitch_v2(&p, &pitch, 1000, 7, 4), CUDA_SUCCESS);
	check(pitch == 1024, "pitch of 1000-byte rows = %zu", pitch);
	RC(cuMemGetAddressRange_v2(&base, &size, p), CUDA_SUCCESS);
	check(size == 1024 * 7, "pitched allocation is pitch*height (%zu)", size);
	RC(cuMemFree_v2(p), CUDA_SUCCESS);
	RC(cuMemAllocPitch_v2(&p, &pitch, 512, 2, 8), CUDA_SUCCESS);
	check(pitch == 512, "512-byte rows need no padding (%zu)", pitch);
	RC(cuMemFree_v2(p), CUDA_SUCCESS);
	RC(cuMemAllocPitch_v2(&p, &pitch, 100, 2, 3), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemAllocPitch_v2(&p, &pitch, 0, 2, 4), CUDA_ERROR_INVALID_VALUE);

	RC(cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	RC(cuMemFree_v2(p), CUDA_SUCCESS);
	RC(cuMemAllocManaged(&p, 4096, 0), CUDA_ERROR_INVALID_VALUE);

	RC(cuMemAllocAsync(&p, 4096, stream), CUDA_SUCCESS);
	RC(cuMemAllocAsync_ptsz(&q, 4096, NULL), CUDA_SUCCESS);
	check(p != q, "async allocations distinct");
	RC(cuMemAllocAsync(&p, 4096, bogus), CUDA_ERROR_INVALID_HANDLE);
	RC(cuMemFreeAsync(p, stream), CUDA_SUCCESS);
	RC(cuMemFreeAsync_ptsz(q, NULL), CUDA_SUCCESS);
	RC(cuMemFreeAsync(q, stream), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemAllocFromPoolAsync(&p, 4096, NULL, stream), CUDA_SUCCESS);
	RC(cuMemAllocFromPoolAsync_ptsz(&q, 4096, NULL, CU_STREAM_PER_THREAD),
	   CUDA_SUCCESS);
	RC(cuMemAllocFromPoolAsync(&p, 4096, (CUmemoryPool)(void *)local, stream),
	   CUDA_ERROR_INVALID_VALUE);
	RC(cuMemFreeAsync(p, stream), CUDA_SUCCESS);
	RC(cuMemFree_v2(q), CUDA_SUCCESS);

	RC(cuMemAllocHost_v2(&h, 1 * MiB), CUDA_SUCCESS);
	RC(cuMemHostAlloc(&h2, 1 * MiB, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
	if (h && h2) {
		memset(h, 0xab, MiB);
		memset(h2, 0xcd, MiB);
		check(((unsigned char *)h)[MiB - 1] == 0xab &&
		      (uintptr_t)h % 4096 == 0 && (uintptr_t)h2 % 4096 == 0,
		      "host allocations are writable, page-aligned memory");
	}
	RC(cuMemAllocHost_v2(&h2, 0), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemFreeHost(h), CUDA_SUCCESS);
	RC(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemFreeHost(local), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemHostAlloc(&h, 4096, 0x100), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemHostRegister_v2(h2, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	RC(cuMemFreeHost(h2), CUDA_SUCCESS);

	char *buf = malloc(64 * 1024);

	RC(cuMemHostRegister_v2(buf, 64 * 1024, CU_MEMHOSTREGISTER_PORTABLE),
	   CUDA_SUCCESS);
	RC(cuMemHostRegister_v2(buf, 64 * 1024, 0),
	   CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	RC(cuMemHostRegister_v2(buf + 4096, 100, 0),
	   CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	RC(cuMemHostUnregister(buf + 4096), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	RC(cuMemHostUnregister(buf), CUDA_SUCCESS);
	RC(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	RC(cuMemHostRegister_v2(NULL, 4096, 0), CUDA_ERROR_INVALID_VALUE);
	free(buf);
}

static void test_vmm(void)
{
	CUmemAllocationProp prop;
	CUmemGenericAllocationHandle h1, h2;
	CUdeviceptr va, base;
	size_t size;
	char src[256] = { 0 };

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	RC(cuMemCreate(&h1, 2 * MiB, &prop, 0), CUDA_SUCCESS);
	RC(cuMemCreate(&h2, 2 * MiB, &prop, 0), CUDA_SUCCESS);
	check(h1 != h2 && h1 && h2, "cuMemCreate: distinct handles");
	RC(cuMemCreate(&h2, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
	prop.location.id = 9;
	RC(cuMemCreate(&h2, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
	RC(cuMemRelease(0xbad), CUDA_ERROR_INVALID_VALUE);

	RC(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0), CUDA_SUCCESS);
	RC(cuMemcpyHtoD_v2(va, src, sizeof(src)), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemMap(va, 2 * MiB, 0, h1, 0), CUDA_SUCCESS);
	RC(cuMemMap(va, 2 * MiB, 0, h2, 0), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemMap(va + 2 * MiB, 2 * MiB, 0, 0xbad, 0), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemMap(va + 3 * MiB, 2 * MiB, 0, h2, 0), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpyHtoD_v2(va + 100, src, sizeof(src)), CUDA_SUCCESS);
	RC(cuMemcpyHtoD_v2(va + 2 * MiB + 100, src, sizeof(src)),
	   CUDA_ERROR_INVALID_VALUE);
	RC(cuMemGetAddressRange_v2(&base, &size, va + 100), CUDA_SUCCESS);
	check(base == va && size == 2 * MiB, "address range of a mapping");
	RC(cuMemUnmap(va, 2 * MiB), CUDA_SUCCESS);
	RC(cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpyHtoD_v2(va + 100, src, sizeof(src)), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemRelease(h1), CUDA_SUCCESS);
	RC(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemRelease(h2), CUDA_SUCCESS);
	RC(cuMemAddressFree(va, 4 * MiB), CUDA_SUCCESS);
	RC(cuMemAddressFree(va, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
}

/* ---------------------------------------------------------------------- */

#define COPY_BYTES (8 * MiB)

static void test_copies_sync(void)
{
	CUdeviceptr a, b, stale;
	char *host = malloc(32 * MiB);
	double want = (double)COPY_BYTES / BW, t0, cpu = 0;

	RC(cuMemAlloc_v2(&a, 32 * MiB), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&b, 32 * MiB), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&stale, 4096), CUDA_SUCCESS);
	RC(cuMemFree_v2(stale), CUDA_SUCCESS);

	TIMED(4 * want, "cuMemcpyHtoD_v2 32 MiB",
	      double c0 = cpu_s();
	      T(cuMemcpyHtoD_v2(a, host, 4 * COPY_BYTES));
	      cpu = cpu_s() - c0);
	check(cpu < 0.2 * 4 * want,
	      "a synchronous copy sleeps instead of spinning (cpu %.2f ms)",
	      cpu * 1e3);
	TIMED(want, "cuMemcpyHtoD_v2_ptds",
	      T(cuMemcpyHtoD_v2_ptds(a, host, COPY_BYTES)));
	TIMED(want, "cuMemcpyDtoH_v2", T(cuMemcpyDtoH_v2(host, a, COPY_BYTES)));
	TIMED(want, "cuMemcpyDtoH_v2_ptds",
	      T(cuMemcpyDtoH_v2_ptds(host, a, COPY_BYTES)));
	TIMED(want, "cuMemcpyDtoD_v2", T(cuMemcpyDtoD_v2(b, a, COPY_BYTES)));
	TIMED(want, "cuMemcpyDtoD_v2_ptds",
	      T(cuMemcpyDtoD_v2_ptds(b, a, COPY_BYTES)));
	TIMED(want, "cuMemcpy host->device",
	      T(cuMemcpy(a, (CUdeviceptr)(uintptr_t)host, COPY_BYTES)));
	TIMED(want, "cuMemcpy_ptds device->device",
	      T(cuMemcpy_ptds(b, a, COPY_BYTES)));

	RC(cuMemcpyHtoD_v2(0xdead0000, host, 16), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpyHtoD_v2(a, NULL, 16), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpyDtoH_v2(NULL, a, 16), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpyHtoD_v2(a + 32 * MiB - 8, host, 16), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpyHtoD_v2(a + 32 * MiB - 16, host, 16), CUDA_SUCCESS);
	RC(cuMemcpyHtoD_v2(a + 32 * MiB, host, 1), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpyDtoD_v2(b, stale, 16), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpy(a, stale, 16), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpy(a, 0, 16), CUDA_ERROR_INVALID_VALUE);
	t0 = now_s();
	RC(cuMemcpyHtoD_v2(0xdead0000, NULL, 0), CUDA_SUCCESS);
	check(now_s() - t0 < 0.2 * want, "0-byte copy takes no time");

	/* Peer copies between devices. */
	CUdeviceptr d1;

	RC(cuCtxPushCurrent_v2(pctx1), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&d1, COPY_BYTES), CUDA_SUCCESS);
	RC(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
	TIMED(want, "cuMemcpyPeer",
	      T(cuMemcpyPeer(d1, pctx1, a, pctx0, COPY_BYTES)));
	RC(cuMemcpyPeer(d1, pctx0, a, pctx0, 16), CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpyPeer(d1, NULL, a, pctx0, 16), CUDA_ERROR_INVALID_CONTEXT);

	/* 2D: 1000-byte rows into a pitched allocation. */
	CUdeviceptr pd;
	size_t pitch;
	CUDA_MEMCPY2D c2;

	RC(cuMemAllocPitch_v2(&pd, &pitch, 1000, 8000, 4), CUDA_SUCCESS);
	memset(&c2, 0, sizeof(c2));
	c2.srcMemoryType = CU_MEMORYTYPE_HOST;
	c2.srcHost = host;
	c2.srcPitch = 1000;
	c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c2.dstDevice = pd;
	c2.dstPitch = pitch;
	c2.WidthInBytes = 1000;
	c2.Height = 8000;
	TIMED(8e6 / BW, "cuMemcpy2D_v2 1000x8000", T(cuMemcpy2D_v2(&c2)));
	c2.Height = 8001;
	RC(cuMemcpy2D_v2(&c2), CUDA_ERROR_INVALID_VALUE);
	c2.Height = 10;
	c2.dstPitch = 999;
	RC(cuMemcpy2D_v2(&c2), CUDA_ERROR_INVALID_VALUE);
	c2.dstPitch = pitch;
	c2.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	RC(cuMemcpy2D_v2(&c2), CUDA_ERROR_INVALID_VALUE);
	c2.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	RC(cuMemcpy2D_v2(&c2), CUDA_SUCCESS);
	RC(cuMemcpy2D_v2(NULL), CUDA_ERROR_INVALID_VALUE);

	/* 3D: device -> host, 100 x 10 x 10 boxes. */
	CUDA_MEMCPY3D c3;

	memset(&c3, 0, sizeof(c3));
	c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c3.srcDevice = pd;
	c3.srcPitch = pitch;
	c3.srcHeight = 100;
	c3.dstMemoryType = CU_MEMORYTYPE_HOST;
	c3.dstHost = host;
	c3.dstPitch = 100;
	c3.dstHeight = 10;
	c3.WidthInBytes = 100;
	c3.Height = 10;
	c3.Depth = 10;
	RC(cuMemcpy3D_v2(&c3), CUDA_SUCCESS);
	c3.srcHeight = 1000;
	c3.Depth = 9;	/* 8 * 1000 + 9 rows > 8000 rows */
	RC(cuMemcpy3D_v2(&c3), CUDA_ERROR_INVALID_VALUE);
	c3.Depth = 8;
	c3.Height = 1000;	/* exactly all 8000 rows */
	c3.dstHeight = 1000;
	RC(cuMemcpy3D_v2(&c3), CUDA_SUCCESS);
	c3.Height = 10;
	c3.srcHeight = 100;
	c3.dstHeight = 10;
	c3.Depth = 81;	/* 80 * 100 + 9 rows > 8000 rows */
	RC(cuMemcpy3D_v2(&c3), CUDA_ERROR_INVALID_VALUE);
	c3.Depth = 10;
	c3.reserved0 = host;
	RC(cuMemcpy3D_v2(&c3), CUDA_ERROR_INVALID_VALUE);
	c3.reserved0 = NULL;

	/* Async 2D/3D are charged to the stream. */
	c2.Height = 8000;
	c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	TIMED((8e6 + 1e4) / BW, "cuMemcpy2DAsync_v2 + cuMemcpy3DAsync_v2 + sync",
	      T(cuMemcpy2DAsync_v2(&c2, stream));
	      T(cuMemcpy3DAsync_v2(&c3, stream));
	      t0 = now_s() - t0_;
	      T(cuStreamSynchronize(stream)));
	check(t0 < 0.2 * want, "async 2D/3D copies return at once");

	RC(cuMemFree_v2(pd), CUDA_SUCCESS);
	RC(cuMemFree_v2(d1), CUDA_SUCCESS);
	RC(cuMemFree_v2(a), CUDA_SUCCESS);
	RC(cuMemFree_v2(b), CUDA_SUCCESS);
	free(host);
}

static void test_copies_async(void)
{
	CUdeviceptr a, d1;
	char *host = malloc(COPY_BYTES);
	double want = (double)COPY_BYTES / BW, t0 = 0;
	CUevent e0, e1, enot;
	float ms = 0, ms2 = 0;
	char local[8];
	int not_ready = 0;

	RC(cuMemAlloc_v2(&a, COPY_BYTES), CUDA_SUCCESS);

	TIMED(4 * want, "4 async copies, then cuStreamSynchronize",
	      T(cuMemcpyHtoDAsync_v2(a, host, COPY_BYTES, stream));
	      T(cuMemcpyDtoHAsync_v2(host, a, COPY_BYTES, stream));
	      T(cuMemcpyDtoDAsync_v2(a, a, COPY_BYTES, stream));
	      T(cuMemcpyAsync(a, a, COPY_BYTES, stream));
	      t0 = now_s() - t0_;
	      T(cuStreamSynchronize(stream)));
	check(t0 < 0.2 * want, "async copies return at once (%.3f ms)", t0 * 1e3);
	t0 = now_s();
	RC(cuStreamSynchronize(stream), CUDA_SUCCESS);
	check(now_s() - t0 < 0.2 * want, "idle stream syncs at once");

	TIMED(4 * want, "4 _ptsz async copies, then cuStreamSynchronize_ptsz",
	      T(cuMemcpyHtoDAsync_v2_ptsz(a, host, COPY_BYTES, NULL));
	      T(cuMemcpyDtoHAsync_v2_ptsz(host, a, COPY_BYTES, NULL));
	      T(cuMemcpyDtoDAsync_v2_ptsz(a, a, COPY_BYTES,
					  CU_STREAM_PER_THREAD));
	      T(cuMemcpyAsync_ptsz(a, a, COPY_BYTES, NULL));
	      T(cuStreamSynchronize(NULL));
	      t0 = now_s() - t0_;
	      T(cuStreamSynchronize_ptsz(NULL)));
	check(t0 < 0.2 * want,
	      "legacy stream does not wait for the per-thread stream");

	TIMED(want, "cuCtxSynchronize waits for a stream",
	      T(cuMemcpyHtoDAsync_v2(a, host, COPY_BYTES, stream));
	      T(cuCtxSynchronize()));

	RC(cuMemcpyHtoDAsync_v2(0xdead0000, host, 16, stream),
	   CUDA_ERROR_INVALID_VALUE);
	RC(cuMemcpyHtoDAsync_v2(a, host, 16, (CUstream)(void *)local),
	   CUDA_ERROR_INVALID_HANDLE);

	RC(cuCtxPushCurrent_v2(pctx1), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&d1, COPY_BYTES), CUDA_SUCCESS);
	RC(cuCtxPopCurrent_v2(NULL), CUDA_SUCCESS);
	TIMED(want, "cuMemcpyPeerAsync + sync",
	      T(cuMemcpyPeerAsync(d1, pctx1, a, pctx0, COPY_BYTES, stream));
	      T(cuStreamSynchronize(stream)));

	/* Events time the queued work. */
	RC(cuEventCreate(&e0, CU_EVENT_DEFAULT), CUDA_SUCCESS);
	RC(cuEventCreate(&e1, CU_EVENT_DEFAULT), CUDA_SUCCESS);
	RC(cuEventCreate(&enot, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
	RC(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_INVALID_HANDLE);
	TIMED(2 * want, "record, 2 async copies, record, cuEventSynchronize",
	      T(cuEventRecord(e0, stream));
	      T(cuMemcpyHtoDAsync_v2(a, host, COPY_BYTES, stream));
	      T(cuMemcpyHtoDAsync_v2(a, host, COPY_BYTES, stream));
	      T(cuEventRecord(e1, stream));
	      not_ready = cuEventElapsedTime(&ms, e0, e1) ==
			  CUDA_ERROR_NOT_READY;
	      T(cuEventSynchronize(e1));
	      ms = ms2 = 0;
	      T(cuEventElapsedTime(&ms, e0, e1));
	      T(cuEventElapsedTime_v2(&ms2, e0, e1)));
	check(not_ready, "cuEventElapsedTime before completion: NOT_READY");
	/* From the last try, whose wall time was right. */
	check_time(ms / 1e3, 2 * want, "cuEventElapsedTime");
	check_time(ms2 / 1e3, 2 * want, "cuEventElapsedTime_v2");
	RC(cuEventRecord_ptsz(enot, NULL), CUDA_SUCCESS);
	RC(cuEventElapsedTime(&ms, e0, enot), CUDA_ERROR_INVALID_HANDLE);
	RC(cuEventRecord(e0, (CUstream)(void *)local), CUDA_ERROR_INVALID_HANDLE);
	RC(cuEventDestroy_v2(e0), CUDA_SUCCESS);
	RC(cuEventDestroy_v2(e0), CUDA_ERROR_INVALID_HANDLE);
	RC(cuEventSynchronize(e0), CUDA_ERROR_INVALID_HANDLE);
	RC(cuEventDestroy_v2(e1), CUDA_SUCCESS);
	RC(cuEventDestroy_v2(enot), CUDA_SUCCESS);

	RC(cuMemFree_v2(d1), CUDA_SUCCESS);
	RC(cuMemFree_v2(a), CUDA_SUCCESS);
	free(host);
}

/* ---------------------------------------------------------------------- */

static void test_modules_launch(void)
{
	static const char image[] =
		"vecAdd\n  saxpy \r\n\n# a comment\nreduce\nvecAdd\n";
	CUmodule mod;
	CUfunction fa, fb, fc, fa2, f;
	CUlibrary lib;
	CUkernel k, k2;
	const char *name = NULL;
	char local[8];
	CUfunction bogus = (CUfunction)(void *)local;
	double t0;

	RC(cuModuleLoadData(&mod, image), CUDA_SUCCESS);
	RC(cuModuleLoadData(&mod, NULL), CUDA_ERROR_INVALID_VALUE);
	RC(cuModuleGetFunction(&fa, mod, "vecAdd"), CUDA_SUCCESS);
	RC(cuModuleGetFunction(&fb, mod, "saxpy"), CUDA_SUCCESS);
	RC(cuModuleGetFunction(&fc, mod, "reduce"), CUDA_SUCCESS);
	RC(cuModuleGetFunction(&fa2, mod, "vecAdd"), CUDA_SUCCESS);
	check(fa && fb && fc && fa != fb && fb != fc && fa != fc,
	      "distinct CUfunction handles");
	check(fa == fa2, "same name gives the same handle");
	RC(cuModuleGetFunction(&f, mod, "nope"), CUDA_ERROR_NOT_FOUND);
	RC(cuModuleGetFunction(&f, mod, "# a comment"), CUDA_ERROR_NOT_FOUND);
	RC(cuFuncGetName(&name, fb), CUDA_SUCCESS);
	check(name && strcmp(name, "saxpy") == 0, "cuFuncGetName = %s",
	      name ? name : "(null)");
	RC(cuFuncGetName(&name, bogus), CUDA_ERROR_INVALID_HANDLE);

	RC(cuLaunchKernel(fa, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL),
	   CUDA_SUCCESS);
	RC(cuLaunchKernel_ptsz(fb, 2, 2, 1, 8, 8, 1, 0, NULL, NULL, NULL),
	   CUDA_SUCCESS);
	RC(cuLaunchCooperativeKernel(fc, 1, 1, 1, 64, 1, 1, 0, stream, NULL),
	   CUDA_SUCCESS);
	RC(cuLaunchCooperativeKernel_ptsz(fc, 1, 1, 1, 64, 1, 1, 0, NULL, NULL),
	   CUDA_SUCCESS);
	RC(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL),
	   CUDA_ERROR_INVALID_HANDLE);
	RC(cuLaunchKernel(bogus, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL),
	   CUDA_ERROR_INVALID_HANDLE);
	RC(cuLaunchKernel(fa, 0, 1, 1, 1, 1, 1, 0, stream, NULL, NULL),
	   CUDA_ERROR_INVALID_VALUE);
	RC(cuLaunchKernel(fa, 1, 1, 1, 2048, 1, 1, 0, stream, NULL, NULL),
	   CUDA_ERROR_INVALID_VALUE);
	RC(cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, (CUstream)(void *)local,
			  NULL, NULL),
	   CUDA_ERROR_INVALID_HANDLE);
	RC(cuStreamSynchronize(stream), CUDA_SUCCESS);
	RC(cuStreamSynchronize_ptsz(NULL), CUDA_SUCCESS);

	TIMED(10 * KERNEL_NS / 1e9, "10 launches of FAKECUDA_KERNEL_NS, then sync",
	      for (int i = 0; i < 10; i++)
		      T(cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, stream, NULL,
				       NULL));
	      t0 = now_s() - t0_;
	      T(cuStreamSynchronize(stream)));
	check(t0 < 0.2 * 10 * KERNEL_NS / 1e9, "launches return at once");

	RC(cuModuleUnload(mod), CUDA_SUCCESS);
	RC(cuModuleUnload(mod), CUDA_ERROR_INVALID_HANDLE);
	RC(cuLaunchKernel(fa, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL),
	   CUDA_ERROR_INVALID_HANDLE);
	RC(cuModuleGetFunction(&f, mod, "vecAdd"), CUDA_ERROR_INVALID_HANDLE);

	RC(cuLibraryLoadData(&lib, "gemm\nsoftmax\n", NULL, NULL, 0, NULL, NULL, 0),
	   CUDA_SUCCESS);
	RC(cuLibraryGetKernel(&k, lib, "gemm"), CUDA_SUCCESS);
	RC(cuLibraryGetKernel(&k2, lib, "softmax"), CUDA_SUCCESS);
	check(k && k2 && k != k2, "distinct CUkernel handles");
	RC(cuLibraryGetKernel(&k2, lib, "nope"), CUDA_ERROR_NOT_FOUND);
	RC(cuKernelGetFunction(&f, k), CUDA_SUCCESS);
	RC(cuKernelGetFunction(&fa2, k), CUDA_SUCCESS);
	check(f && f == fa2 && (void *)f != (void *)k,
	      "cuKernelGetFunction: one CUfunction per kernel");
	RC(cuFuncGetName(&name, f), CUDA_SUCCESS);
	check(name && strcmp(name, "gemm") == 0, "name via CUkernel's function");
	RC(cuFuncGetName(&name, (CUfunction)(void *)k2), CUDA_SUCCESS);
	check(name && strcmp(name, "softmax") == 0, "name via CUkernel");
	RC(cuLaunchKernel((CUfunction)(void *)k, 1, 1, 1, 1, 1, 1, 0, stream,
			  NULL, NULL),
	   CUDA_SUCCESS);
	RC(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL),
	   CUDA_SUCCESS);

	CUlaunchAttribute attr;
	CUlaunchConfig cfg;

	memset(&attr, 0, sizeof(attr));
	attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
	attr.value.cooperative = 1;
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 2;
	cfg.blockDimX = 128;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = stream;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	RC(cuLaunchKernelEx(&cfg, (CUfunction)(void *)k2, NULL, NULL),
	   CUDA_SUCCESS);
	cfg.hStream = NULL;
	RC(cuLaunchKernelEx_ptsz(&cfg, f, NULL, NULL), CUDA_SUCCESS);
	RC(cuLaunchKernelEx(NULL, f, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	RC(cuLaunchKernelEx(&cfg, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
	RC(cuLibraryUnload(lib), CUDA_SUCCESS);
	RC(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
	RC(cuLaunchKernel((CUfunction)(void *)k, 1, 1, 1, 1, 1, 1, 0, stream,
			  NULL, NULL),
	   CUDA_ERROR_INVALID_HANDLE);
	RC(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL),
	   CUDA_ERROR_INVALID_HANDLE);
	RC(cuCtxSynchronize(), CUDA_SUCCESS);
}

static void test_graphs_streams(void)
{
	CUgraph g;
	CUgraphExec ge;
	CUstream s2;

	RC(cuGraphCreate(&g, 0), CUDA_SUCCESS);
	RC(cuGraphInstantiateWithFlags(&ge, g, 0), CUDA_SUCCESS);
	RC(cuGraphInstantiateWithFlags(&ge, NULL, 0), CUDA_ERROR_INVALID_HANDLE);
	TIMED(5 * KERNEL_NS / 1e9, "5 cuGraphLaunch, then sync",
	      for (int i = 0; i < 5; i++)
		      T(cuGraphLaunch(ge, stream));
	      T(cuStreamSynchronize(stream)));
	TIMED(KERNEL_NS / 1e9, "cuGraphLaunch_ptsz, then sync",
	      T(cuGraphLaunch_ptsz(ge, NULL));
	      T(cuStreamSynchronize_ptsz(NULL)));
	RC(cuGraphLaunch(NULL, stream), CUDA_ERROR_INVALID_HANDLE);
	RC(cuGraphDestroy(g), CUDA_SUCCESS);
	RC(cuGraphLaunch(ge, stream), CUDA_SUCCESS);	/* exec outlives graph */
	RC(cuGraphExecDestroy(ge), CUDA_SUCCESS);
	RC(cuGraphLaunch(ge, stream), CUDA_ERROR_INVALID_HANDLE);
	RC(cuGraphExecDestroy(ge), CUDA_ERROR_INVALID_HANDLE);
	RC(cuGraphDestroy(g), CUDA_ERROR_INVALID_HANDLE);

	RC(cuStreamCreate(&s2, 0x80), CUDA_ERROR_INVALID_VALUE);
	RC(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	RC(cuStreamDestroy_v2(s2), CUDA_SUCCESS);
	RC(cuStreamDestroy_v2(s2), CUDA_ERROR_INVALID_HANDLE);
	RC(cuStreamSynchronize(s2), CUDA_ERROR_INVALID_HANDLE);
	RC(cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
}

/* ---------------------------------------------------------------------- */
/* Kernel handles as the real driver lays them out, names, enumeration.   */

static uint64_t qword(const void *p, size_t off)
{
	uint64_t v;

	memcpy(&v, (const char *)p + off, sizeof(v));
	return v;
}

/*
 * A CUkernel's CUfunction lies in a module the library keeps: driver 580's
 * cuFuncGetModule returns CUDA_SUCCESS for it (tests/gpu/check_standins.sh on
 * the H200), and the module works with the calls that take a CUmodule.
 */
static void test_library_module(CUkernel k, CUfunction fk)
{
	CUmodule m = NULL, m2 = NULL;
	CUfunction f = NULL, fs[3] = { 0 }, fk2 = NULL;
	unsigned int n = 0;

	RC(cuFuncGetModule(&m, fk), CUDA_SUCCESS);
	RC(cuFuncGetModule(&m2, fk), CUDA_SUCCESS);
	check(m && m == m2, "cuFuncGetModule of a CUkernel's function: one module per library");
	RC(cuModuleGetFunctionCount(&n, m), CUDA_SUCCESS);
	check(n == 2, "the library's module has its 2 kernels' functions (%u)", n);
	RC(cuModuleGetFunction(&f, m, "kern_b"), CUDA_SUCCESS);
	RC(cuKernelGetFunction(&fk2, k), CUDA_SUCCESS);
	check(f == fk && fk2 == fk,
	      "cuModuleGetFunction on it gives cuKernelGetFunction's handle, every time");
	RC(cuModuleEnumerateFunctions(fs, 3, m), CUDA_SUCCESS);
	check(fs[1] == fk && fs[2] == NULL && fs[0] &&
	      strcmp((const char *)(uintptr_t)qword(fs[0], 8), "kern_a") == 0,
	      "cuModuleEnumerateFunctions on it: the kernels' functions, in order");
	RC(cuFuncGetModule(&m2, fs[0]), CUDA_SUCCESS);
	check(m2 == m, "the other kernel's function is in the same module");
	RC(cuModuleUnload(m), CUDA_ERROR_NOT_PERMITTED);
	RC(cuModuleGetFunctionCount(&n, m), CUDA_SUCCESS);
	check(n == 2, "... and the module is still there");
}

static void test_handle_layout(void)
{
	static const char image[] = "_Z4gemmPfS_S_i\nrelu\nsoftmax\n";
	CUmodule mod, m2;
	CUlibrary lib, l2;
	CUfunction f, fs[4] = { 0 }, fk;
	CUkernel k, ks[4] = { 0 };
	const char *name = NULL, *kname = NULL;
	unsigned int n = 0;
	int same = 1;

	RC(cuModuleLoadData(&mod, image), CUDA_SUCCESS);
	RC(cuModuleGetFunction(&f, mod, "relu"), CUDA_SUCCESS);
	RC(cuFuncGetName(&name, f), CUDA_SUCCESS);
	check(qword(f, 0) == 0x0000000100000001ull,
	      "CUfunction +0 is the function tag (0x%llx)",
	      (unsigned long long)qword(f, 0));
	check(name && qword(f, 8) == (uint64_t)(uintptr_t)name &&
	      strcmp((const char *)(uintptr_t)qword(f, 8), "relu") == 0,
	      "CUfunction +8 is the pointer cuFuncGetName returns");
	RC(cuModuleGetFunctionCount(&n, mod), CUDA_SUCCESS);
	check(n == 3, "cuModuleGetFunctionCount = %u", n);
	RC(cuModuleEnumerateFunctions(fs, 4, mod), CUDA_SUCCESS);
	for (int i = 0; i < 3; i++) {
		CUfunction g;
		const char *nm = (const char *)(uintptr_t)qword(fs[i], 8);

		same &= cuModuleGetFunction(&g, mod, nm) == CUDA_SUCCESS && g == fs[i];
	}
	check(same && fs[3] == NULL,
	      "cuModuleEnumerateFunctions: cuModuleGetFunction's handles, in order");
	/* Driver 580 returns CUDA_SUCCESS for numFunctions 0 (tests/gpu/check_standins.sh). */
	fs[0] = NULL;
	RC(cuModuleEnumerateFunctions(fs, 0, mod), CUDA_SUCCESS);
	check(fs[0] == NULL, "cuModuleEnumerateFunctions(numFunctions 0) writes nothing");
	RC(cuModuleEnumerateFunctions(NULL, 4, mod), CUDA_ERROR_INVALID_VALUE);
	RC(cuModuleEnumerateFunctions(fs, 4, (CUmodule)(void *)&n),
	   CUDA_ERROR_INVALID_HANDLE);
	RC(cuFuncGetModule(&m2, f), CUDA_SUCCESS);
	check(m2 == mod, "cuFuncGetModule gives the module");

	RC(cuLibraryLoadData(&lib, "kern_a\nkern_b\n", NULL, NULL, 0, NULL, NULL, 0),
	   CUDA_SUCCESS);
	RC(cuLibraryGetKernel(&k, lib, "kern_b"), CUDA_SUCCESS);
	RC(cuKernelGetName(&kname, k), CUDA_SUCCESS);
	check(qword(k, 0) == 0x2, "CUkernel +0 is the kernel tag (0x%llx)",
	      (unsigned long long)qword(k, 0));
	check(kname && qword(k, 8) == (uint64_t)(uintptr_t)kname &&
	      strcmp(kname, "kern_b") == 0,
	      "CUkernel +8 is the pointer cuKernelGetName returns");
	RC(cuKernelGetLibrary(&l2, k), CUDA_SUCCESS);
	check(l2 == lib && qword(k, 16) == (uint64_t)(uintptr_t)lib,
	      "CUkernel +16 is its library, as cuKernelGetLibrary says");
	RC(cuKernelGetFunction(&fk, k), CUDA_SUCCESS);
	check(qword(fk, 0) == 0x0000000100000001ull && qword(fk, 8) == qword(k, 8),
	      "the kernel's CUfunction: function tag, the same name pointer");
	test_library_module(k, fk);
	RC(cuLibraryGetKernelCount(&n, lib), CUDA_SUCCESS);
	check(n == 2, "cuLibraryGetKernelCount = %u", n);
	/* Driver 580 returns CUDA_SUCCESS for numKernels 0 (tests/gpu/check_standins.sh). */
	RC(cuLibraryEnumerateKernels(ks, 0, lib), CUDA_SUCCESS);
	check(ks[0] == NULL, "cuLibraryEnumerateKernels(numKernels 0) writes nothing");
	RC(cuLibraryEnumerateKernels(NULL, 1, lib), CUDA_ERROR_INVALID_VALUE);
	RC(cuLibraryEnumerateKernels(ks, 1, lib), CUDA_SUCCESS);
	check(ks[0] && ks[1] == NULL && qword(ks[0], 8) &&
	      strcmp((const char *)(uintptr_t)qword(ks[0], 8), "kern_a") == 0,
	      "cuLibraryEnumerateKernels returns at most numKernels");
	RC(cuKernelGetName(&kname, (CUkernel)(void *)f), CUDA_ERROR_INVALID_HANDLE);
	RC(cuKernelGetName(NULL, k), CUDA_ERROR_INVALID_VALUE);
	RC(cuFuncGetModule(&m2, fk), CUDA_SUCCESS);
	RC(cuLibraryUnload(lib), CUDA_SUCCESS);
	RC(cuKernelGetName(&kname, k), CUDA_ERROR_INVALID_HANDLE);
	RC(cuFuncGetName(&kname, fk), CUDA_ERROR_INVALID_HANDLE);
	RC(cuModuleGetFunctionCount(&n, m2), CUDA_ERROR_INVALID_HANDLE);
	RC(cuModuleUnload(mod), CUDA_SUCCESS);
	RC(cuFuncGetModule(&m2, f), CUDA_ERROR_INVALID_VALUE);
}

/* ---------------------------------------------------------------------- */
/* Stream capture and graphs, checked against the stand-in's own counters. */

static struct fakecuda_kernel_stats kst(const char *name)
{
	struct fakecuda_kernel_stats s;

	memset(&s, 0, sizeof(s));
	if (fakecuda_kernel_stats(name, &s))
		memset(&s, 0xff, sizeof(s));
	return s;
}

static int kst_is(const char *name, uint64_t launched, uint64_t captured,
		  uint64_t graph)
{
	struct fakecuda_kernel_stats s = kst(name);

	if (s.launched == launched && s.captured == captured &&
	    s.graph_executed == graph)
		return 1;
	printf("# %s: launched %llu captured %llu graph %llu, expected %llu %llu %llu\n",
	       name, (unsigned long long)s.launched, (unsigned long long)s.captured,
	       (unsigned long long)s.graph_executed, (unsigned long long)launched,
	       (unsigned long long)captured, (unsigned long long)graph);
	return 0;
}

static CUfunction cap_a, cap_b, cap_c, cap_d, cap_e;
static CUkernel cap_k;

static void launch1(CUfunction f, CUstream s)
{
	T(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

/*
 * Waiting for or querying a captured event: driver 580's sequence on the H200
 * (tests/gpu/check_standins.sh) was cuEventSynchronize -> CUDA_ERROR_CAPTURED_EVENT,
 * then cuEventQuery -> CUDA_ERROR_INVALID_VALUE and, with a fork unjoined,
 * EndCapture -> CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.  No launches here: the
 * kernel counters of test_capture stay as they are.
 */
static void test_captured_events(CUstream s, CUstream s2, CUevent e)
{
	CUstreamCaptureStatus st;
	CUgraph gr;

	RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	RC(cuEventRecord(e, s), CUDA_SUCCESS);
	RC(cuStreamWaitEvent(s2, e, 0), CUDA_SUCCESS);
	RC(cuEventSynchronize(e), CUDA_ERROR_CAPTURED_EVENT);
	RC(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
	check(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED,
	      "cuEventSynchronize of a captured event invalidates the capture");
	RC(cuEventQuery(e), CUDA_ERROR_INVALID_VALUE);
	RC(cuEventSynchronize(e), CUDA_ERROR_INVALID_VALUE);
	RC(cuStreamEndCapture(s2, &gr), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
	gr = (CUgraph)(void *)&st;
	RC(cuStreamEndCapture(s, &gr), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	check(gr == NULL, "... and its EndCapture, fork unjoined, returns no graph");
	RC(cuStreamIsCapturing(s2, &st), CUDA_SUCCESS);
	check(st == CU_STREAM_CAPTURE_STATUS_NONE, "the forked stream stops capturing with it");

	RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	RC(cuEventRecord(e, s), CUDA_SUCCESS);
	RC(cuEventQuery(e), CUDA_ERROR_CAPTURED_EVENT);
	RC(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
	check(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED,
	      "cuEventQuery of a captured event invalidates the capture");
	RC(cuEventQuery(e), CUDA_ERROR_INVALID_VALUE);
	RC(cuStreamEndCapture(s, &gr), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

static void test_capture(void)
{
	CUmodule mod;
	CUlibrary lib;
	CUstream s, s2;
	CUevent e1, e2, eo;
	CUgraph gr = (CUgraph)(void *)&gr, gr2;
	CUgraphExec ge;
	CUgraphNode nodes[8];
	const CUgraphNode *deps = NULL;
	const CUgraphEdgeData *edges = NULL;
	CUstreamCaptureStatus st;
	CUstreamCaptureMode mode;
	cuuint64_t id = 0, id2 = 0;
	size_t nn = 0, nd = 0;
	CUdeviceptr p, q;
	uint64_t gl0;
	double t0;

	RC(cuModuleLoadData(&mod, "cap_a\ncap_b\ncap_c\ncap_d\ncap_e\n"), CUDA_SUCCESS);
	RC(cuModuleGetFunction(&cap_a, mod, "cap_a"), CUDA_SUCCESS);
	RC(cuModuleGetFunction(&cap_b, mod, "cap_b"), CUDA_SUCCESS);
	RC(cuModuleGetFunction(&cap_c, mod, "cap_c"), CUDA_SUCCESS);
	RC(cuModuleGetFunction(&cap_d, mod, "cap_d"), CUDA_SUCCESS);
	RC(cuModuleGetFunction(&cap_e, mod, "cap_e"), CUDA_SUCCESS);
	RC(cuLibraryLoadData(&lib, "cap_k\n", NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
	RC(cuLibraryGetKernel(&cap_k, lib, "cap_k"), CUDA_SUCCESS);
	RC(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	RC(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
	RC(cuEventCreate(&e1, 0), CUDA_SUCCESS);
	RC(cuEventCreate(&e2, 0), CUDA_SUCCESS);
	RC(cuEventCreate(&eo, 0), CUDA_SUCCESS);
	timed_err = 0;
	launch1(cap_a, s);
	launch1(cap_a, s);
	check(!timed_err && kst_is("cap_a", 2, 0, 0), "direct launches count as launched");
	check(fakecuda_kernel_stats("never_loaded", &(struct fakecuda_kernel_stats){ 0 }) == -1,
	      "fakecuda_kernel_stats: -1 for a name never loaded");

	/* An unjoined fork fails the capture. */
	RC(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
	   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	RC(cuStreamBeginCapture_v2(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
	RC(cuStreamEndCapture(s, &gr), CUDA_ERROR_ILLEGAL_STATE);
	RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
	RC(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
	check(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "cuStreamIsCapturing: active");
	timed_err = 0;
	t0 = now_s();
	for (int i = 0; i < 3; i++)
		launch1(cap_a, s);
	launch1(cap_b, s);
	RC(cuEventRecord(e1, s), CUDA_SUCCESS);
	RC(cuStreamWaitEvent(s2, e1, 0), CUDA_SUCCESS);
	RC(cuStreamIsCapturing(s2, &st), CUDA_SUCCESS);
	check(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "a stream waiting on a captured event joins the capture");
	launch1(cap_c, s2);
	launch1(cap_c, s2);
	RC(cuStreamGetCaptureInfo_v3(s, &st, &id, NULL, NULL, NULL, NULL), CUDA_SUCCESS);
	RC(cuStreamGetCaptureInfo_v3(s2, &st, &id2, &gr2, &deps, &edges, &nd), CUDA_SUCCESS);
	check(id && id == id2 && nd == 1 && deps && edges && edges[0].type == 0,
	      "cuStreamGetCaptureInfo_v3: one capture id, one dependency on the forked stream");
	RC(cuStreamEndCapture(s2, &gr), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
	RC(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
	check(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "EndCapture on the forked stream invalidates nothing");
	gr = (CUgraph)(void *)&nd;
	RC(cuStreamEndCapture(s, &gr), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
	check(gr == NULL, "a failed capture returns no graph");
	RC(cuStreamIsCapturing(s2, &st), CUDA_SUCCESS);
	check(st == CU_STREAM_CAPTURE_STATUS_NONE, "the forked stream stops capturing with it");
	check(!timed_err && now_s() - t0 < 0.5 * KERNEL_NS / 1e9 * 6,
	      "captured launches take no time");
	check(kst_is("cap_a", 2, 3, 0) && kst_is("cap_b", 0, 1, 0) && kst_is("cap_c", 0, 2, 0),
	      "captured launches count as captured, not launched");
	test_captured_events(s, s2, e1);

	/* Fork and join: 3 x cap_a, cap_b, then 2 x cap_c on s2 beside 1 x cap_d on s. */
	RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	timed_err = 0;
	for (int i = 0; i < 3; i++)
		launch1(cap_a, s);
	launch1(cap_b, s);
	RC(cuEventRecord(e1, s), CUDA_SUCCESS);
	RC(cuStreamWaitEvent(s2, e1, 0), CUDA_SUCCESS);
	launch1(cap_c, s2);
	launch1(cap_c, s2);
	launch1(cap_d, s);
	RC(cuEventRecord(e2, s2), CUDA_SUCCESS);
	RC(cuStreamWaitEvent(s, e2, 0), CUDA_SUCCESS);
	RC(cuStreamGetCaptureInfo_v3(s, &st, NULL, NULL, &deps, NULL, &nd), CUDA_SUCCESS);
	check(nd == 2, "after the join the origin depends on both branches (%zu)", nd);
	RC(cuStreamEndCapture(s, &gr), CUDA_SUCCESS);
	check(!timed_err && gr != NULL, "joined capture ends with a graph");
	RC(cuGraphGetNodes(gr, NULL, &nn), CUDA_SUCCESS);
	check(nn == 7, "captured graph has 7 kernel nodes (%zu)", nn);
	RC(cuGraphGetNodes(gr, nodes, &nn), CUDA_SUCCESS);
	{
		CUgraphNodeType ty = CU_GRAPH_NODE_TYPE_EMPTY;

		RC(cuGraphNodeGetType(nodes[0], &ty), CUDA_SUCCESS);
		check(ty == CU_GRAPH_NODE_TYPE_KERNEL, "captured nodes are kernel nodes");
	}
	RC(cuGraphInstantiateWithFlags(&ge, gr, 0), CUDA_SUCCESS);
	RC(cuGraphDestroy(gr), CUDA_SUCCESS);
	gl0 = fakecuda_graph_launches();
	TIMED(5 * 8 * KERNEL_NS / 1e9, "5 launches of a 7-kernel graph, then sync",
	      for (int i = 0; i < 5; i++)
		      T(cuGraphLaunch(ge, s));
	      T(cuStreamSynchronize(s)));
	{
		uint64_t tries = fakecuda_graph_launches() - gl0;

		check(tries % 5 == 0 && kst_is("cap_a", 2, 6, 3 * tries) &&
		      kst_is("cap_b", 0, 2, tries) && kst_is("cap_c", 0, 4, 2 * tries) &&
		      kst_is("cap_d", 0, 1, tries),
		      "each graph launch runs each kernel node once (%llu launches)",
		      (unsigned long long)tries);
	}
	RC(cuGraphExecDestroy(ge), CUDA_SUCCESS);

	/* Unsafe calls during a global-mode capture invalidate it; relaxed mode allows them. */
	RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&p, 4096), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	RC(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
	check(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED, "capture invalidated by cuMemAlloc");
	RC(cuLaunchKernel(cap_e, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
	   CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	RC(cuStreamEndCapture(s, &gr), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	RC(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
	check(mode == CU_STREAM_CAPTURE_MODE_GLOBAL, "the thread's mode was global");
	RC(cuMemAlloc_v2(&p, 4096), CUDA_SUCCESS);
	RC(cuMemFree_v2(p), CUDA_SUCCESS);
	RC(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
	RC(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	RC(cuStreamEndCapture(s, &gr), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	mode = (CUstreamCaptureMode)9;
	RC(cuThreadExchangeStreamCaptureMode(&mode), CUDA_ERROR_INVALID_VALUE);
	/* The legacy stream waits for blocking streams: not while one captures. */
	RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
	RC(cuLaunchKernel(cap_e, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
	   CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	RC(cuStreamEndCapture(s, &gr), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	/* Captured work may not wait for uncaptured work. */
	RC(cuEventRecord(eo, s2), CUDA_SUCCESS);
	RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
	RC(cuStreamWaitEvent(s, eo, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
	RC(cuStreamEndCapture(s, &gr), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	check(kst_is("cap_e", 0, 0, 0), "failed launches count nowhere");

	/* Async copies are captured as copy nodes and move bytes only when the graph runs. */
	{
		struct fakecuda_copy_stats c0, c1;

		RC(cuMemAlloc_v2(&p, 1 << 20), CUDA_SUCCESS);
		RC(cuMemAlloc_v2(&q, 1 << 20), CUDA_SUCCESS);
		fakecuda_copy_stats(0, 0, &c0);
		RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
		RC(cuMemcpyAsync(q, p, 1 << 20, s), CUDA_SUCCESS);
		RC(cuMemcpyDtoDAsync_v2(q, p, 1 << 19, s), CUDA_SUCCESS);
		launch1(cap_e, s);
		RC(cuStreamEndCapture(s, &gr), CUDA_SUCCESS);
		fakecuda_copy_stats(0, 0, &c1);
		check(c1.copies == c0.copies, "captured copies do not run");
		RC(cuGraphInstantiateWithFlags(&ge, gr, 0), CUDA_SUCCESS);
		RC(cuGraphLaunch_ptsz(ge, s), CUDA_SUCCESS);
		RC(cuGraphLaunch_ptsz(ge, s), CUDA_SUCCESS);
		RC(cuStreamSynchronize(s), CUDA_SUCCESS);
		fakecuda_copy_stats(0, 0, &c1);
		check(c1.graph_copies - c0.graph_copies == 4 &&
		      c1.graph_bytes - c0.graph_bytes == 2 * (3 << 19) && c1.copies == c0.copies,
		      "graph launches run the copy nodes (%llu copies)",
		      (unsigned long long)(c1.graph_copies - c0.graph_copies));
		check(kst_is("cap_e", 0, 1, 2), "and the kernel node");
		/* A graph launched into a capture is recorded, node by node. */
		RC(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
		RC(cuGraphLaunch(ge, s), CUDA_SUCCESS);
		launch1(cap_e, s);
		RC(cuStreamEndCapture(s, &gr2), CUDA_SUCCESS);
		RC(cuGraphGetNodes(gr2, NULL, &nn), CUDA_SUCCESS);
		check(nn == 4 && kst_is("cap_e", 0, 3, 2),
		      "a graph launched into a capture adds its nodes (%zu) as captured", nn);
		RC(cuGraphDestroy(gr2), CUDA_SUCCESS);
		RC(cuGraphExecDestroy(ge), CUDA_SUCCESS);
		RC(cuGraphDestroy(gr), CUDA_SUCCESS);
		RC(cuMemFree_v2(p), CUDA_SUCCESS);
		RC(cuMemFree_v2(q), CUDA_SUCCESS);
	}
	RC(cuStreamDestroy_v2(s2), CUDA_SUCCESS);
	RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
	RC(cuEventDestroy_v2(e1), CUDA_SUCCESS);
	RC(cuEventDestroy_v2(e2), CUDA_SUCCESS);
	RC(cuEventDestroy_v2(eo), CUDA_SUCCESS);
}

static void knode(CUDA_KERNEL_NODE_PARAMS *p, CUfunction f, CUkernel k)
{
	memset(p, 0, sizeof(*p));
	p->func = f;
	p->kern = k;
	p->gridDimX = p->gridDimY = p->gridDimZ = 1;
	p->blockDimX = 64;
	p->blockDimY = p->blockDimZ = 1;
}

static void test_graph_api(void)
{
	CUgraph gr, other;
	CUgraphExec ge, ge2;
	CUgraphNode n1, n2, n3, n4, n5, bad;
	CUDA_KERNEL_NODE_PARAMS p;
	CUDA_KERNEL_NODE_PARAMS_v1 p1;
	CUDA_GRAPH_INSTANTIATE_PARAMS ip;
	CUgraphExecUpdateResultInfo info;
	CUgraphExecUpdateResult ures;
	CUgraphNode dep2[2], errn = NULL;
	CUstream s;
	char log[16] = "x";
	struct fakecuda_kernel_stats a0 = kst("cap_a"), b0 = kst("cap_b"),
				     c0 = kst("cap_c"), d0 = kst("cap_d"),
				     e0 = kst("cap_e"), k0 = kst("cap_k");

	RC(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	RC(cuGraphCreate(&gr, 0), CUDA_SUCCESS);
	RC(cuGraphCreate(&other, 0), CUDA_SUCCESS);
	knode(&p, cap_a, NULL);
	RC(cuGraphAddKernelNode_v2(&n1, gr, NULL, 0, &p), CUDA_SUCCESS);
	knode(&p, cap_b, NULL);
	RC(cuGraphAddKernelNode_v2(&n2, gr, &n1, 1, &p), CUDA_SUCCESS);
	memset(&p1, 0, sizeof(p1));
	p1.func = cap_c;
	p1.gridDimX = p1.gridDimY = p1.gridDimZ = p1.blockDimX = p1.blockDimY = p1.blockDimZ = 1;
	RC(cuGraphAddKernelNode(&n3, gr, &n1, 1, &p1), CUDA_SUCCESS);
	knode(&p, NULL, cap_k);	/* v2: the CUkernel when func is NULL */
	dep2[0] = n2;
	dep2[1] = n3;
	RC(cuGraphAddKernelNode_v2(&n4, gr, dep2, 2, &p), CUDA_SUCCESS);
	RC(cuGraphAddKernelNode_v2(&bad, other, &n1, 1, &p), CUDA_ERROR_INVALID_VALUE);
	dep2[1] = n2;
	RC(cuGraphAddKernelNode_v2(&bad, gr, dep2, 2, &p), CUDA_ERROR_INVALID_VALUE);
	p.blockDimX = 4096;
	RC(cuGraphAddKernelNode_v2(&bad, gr, NULL, 0, &p), CUDA_ERROR_INVALID_VALUE);
	knode(&p, NULL, NULL);
	RC(cuGraphAddKernelNode_v2(&bad, gr, NULL, 0, &p), CUDA_ERROR_INVALID_HANDLE);
	RC(cuGraphKernelNodeGetParams_v2(n4, &p), CUDA_SUCCESS);
	check(p.kern == cap_k && p.func == NULL && p.blockDimX == 64,
	      "cuGraphKernelNodeGetParams_v2 returns what was set");
	RC(cuGraphKernelNodeGetParams(n3, &p1), CUDA_SUCCESS);
	check(p1.func == cap_c, "cuGraphKernelNodeGetParams (v1)");

	RC(cuGraphInstantiate(&ge, gr, &errn, log, sizeof(log)), CUDA_SUCCESS);
	check(errn == NULL && log[0] == '\0', "cuGraphInstantiate (v1): no error node, empty log");
	RC(cuGraphInstantiateWithFlags(&ge2, gr, 0x100), CUDA_ERROR_INVALID_VALUE);
	memset(&ip, 0, sizeof(ip));
	ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
	ip.hUploadStream = s;
	ip.result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
	RC(cuGraphInstantiateWithParams(&ge2, gr, &ip), CUDA_SUCCESS);
	check(ip.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS, "instantiate params: result_out");
	RC(cuGraphUpload(ge2, s), CUDA_SUCCESS);
	RC(cuGraphExecDestroy(ge2), CUDA_SUCCESS);
	for (int i = 0; i < 3; i++)
		RC(cuGraphLaunch(ge, s), CUDA_SUCCESS);
	check(kst("cap_a").graph_executed - a0.graph_executed == 3 &&
	      kst("cap_b").graph_executed - b0.graph_executed == 3 &&
	      kst("cap_c").graph_executed - c0.graph_executed == 3 &&
	      kst("cap_k").graph_executed - k0.graph_executed == 3 &&
	      kst("cap_a").launched == a0.launched,
	      "graph built with cuGraphAddKernelNode: each node once per launch");

	/* The exec changes, the graph does not. */
	knode(&p, cap_d, NULL);
	RC(cuGraphExecKernelNodeSetParams_v2(ge, n2, &p), CUDA_SUCCESS);
	RC(cuGraphExecKernelNodeSetParams_v2(ge, (CUgraphNode)(void *)&p, &p),
	   CUDA_ERROR_INVALID_VALUE);
	RC(cuGraphLaunch(ge, s), CUDA_SUCCESS);
	check(kst("cap_d").graph_executed - d0.graph_executed == 1 &&
	      kst("cap_b").graph_executed - b0.graph_executed == 3,
	      "cuGraphExecKernelNodeSetParams_v2 changes what the exec runs");
	/* The graph changes; cuGraphExecUpdate_v2 brings it into the exec. */
	knode(&p, cap_e, NULL);
	RC(cuGraphKernelNodeSetParams_v2(n3, &p), CUDA_SUCCESS);
	RC(cuGraphExecUpdate_v2(ge, gr, &info), CUDA_SUCCESS);
	check(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS, "update result: success");
	RC(cuGraphLaunch(ge, s), CUDA_SUCCESS);
	check(kst("cap_e").graph_executed - e0.graph_executed == 1 &&
	      kst("cap_b").graph_executed - b0.graph_executed == 4 &&
	      kst("cap_c").graph_executed - c0.graph_executed == 4,
	      "cuGraphExecUpdate_v2: the exec runs the graph's new parameters");
	knode(&p, cap_a, NULL);
	RC(cuGraphAddKernelNode_v2(&n5, gr, &n4, 1, &p), CUDA_SUCCESS);
	RC(cuGraphExecUpdate_v2(ge, gr, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	check(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED,
	      "update of a changed topology fails: TOPOLOGY_CHANGED");
	RC(cuGraphExecUpdate(ge, gr, &errn, &ures), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	check(ures == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, "cuGraphExecUpdate (v1) too");
	RC(cuGraphDestroy(gr), CUDA_SUCCESS);
	RC(cuGraphLaunch(ge, s), CUDA_SUCCESS);	/* the exec outlives its graph */
	RC(cuGraphKernelNodeGetParams_v2(n1, &p), CUDA_ERROR_INVALID_VALUE);
	RC(cuStreamSynchronize(s), CUDA_SUCCESS);
	RC(cuGraphExecDestroy(ge), CUDA_SUCCESS);
	RC(cuGraphDestroy(other), CUDA_SUCCESS);
	RC(cuStreamDestroy_v2(s), CUDA_SUCCESS);
}

/* A child forked after cuInit cannot use CUDA, as with the real driver. */
static void test_fork_after_init(void)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		CUdeviceptr p;

		_exit(cuMemAlloc_v2(&p, 4096) == CUDA_ERROR_NOT_INITIALIZED &&
		      cuInit(0) == CUDA_ERROR_NOT_INITIALIZED ? 0 : 1);
	}
	check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0,
	      "a child forked after cuInit gets CUDA_ERROR_NOT_INITIALIZED");
}

/* ---------------------------------------------------------------------- */

static const char *const all_names[] = {
	"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet",
	"cuDeviceGetName", "cuDevicePrimaryCtxRetain",
	"cuDevicePrimaryCtxRelease_v2", "cuCtxCreate_v4", "cuCtxCreate_v2",
	"cuCtxDestroy_v2", "cuCtxSetCurrent", "cuCtxGetCurrent",
	"cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuCtxGetDevice",
	"cuCtxSynchronize", "cuGetErrorString", "cuGetErrorName",
	"cuGetProcAddress_v2", "cuMemAlloc_v2", "cuMemAllocPitch_v2",
	"cuMemAllocManaged", "cuMemAllocAsync", "cuMemAllocAsync_ptsz",
	"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz",
	"cuMemFree_v2", "cuMemFreeAsync", "cuMemFreeAsync_ptsz",
	"cuMemAllocHost_v2", "cuMemHostAlloc", "cuMemFreeHost",
	"cuMemHostRegister_v2", "cuMemHostUnregister", "cuMemCreate",
	"cuMemRelease", "cuMemAddressReserve", "cuMemAddressFree", "cuMemMap",
	"cuMemUnmap", "cuMemGetInfo_v2", "cuMemGetAddressRange_v2", "cuMemcpy",
	"cuMemcpy_ptds", "cuMemcpyAsync", "cuMemcpyAsync_ptsz",
	"cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyDtoH_v2",
	"cuMemcpyDtoH_v2_ptds", "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds",
	"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2_ptsz",
	"cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync_v2_ptsz",
	"cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz", "cuMemcpyPeer",
	"cuMemcpyPeerAsync", "cuMemcpy2D_v2", "cuMemcpy2DAsync_v2",
	"cuMemcpy3D_v2", "cuMemcpy3DAsync_v2", "cuModuleLoadData",
	"cuModuleGetFunction", "cuModuleUnload", "cuLibraryLoadData",
	"cuLibraryGetKernel", "cuKernelGetFunction", "cuLibraryUnload",
	"cuFuncGetName", "cuLaunchKernel", "cuLaunchKernel_ptsz",
	"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel",
	"cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz",
	"cuStreamCreate", "cuStreamDestroy_v2", "cuStreamSynchronize",
	"cuStreamSynchronize_ptsz", "cuEventCreate", "cuEventRecord",
	"cuEventRecord_ptsz", "cuEventSynchronize", "cuEventElapsedTime",
	"cuEventElapsedTime_v2", "cuEventDestroy_v2", "cuGraphCreate",
	"cuGraphInstantiateWithFlags", "cuGraphExecDestroy", "cuGraphDestroy",
	"cuDeviceCanAccessPeer", "cuCtxEnablePeerAccess", "cuCtxDisablePeerAccess",
	"cuPointerGetAttribute", "cuMemcpyPeer_ptds", "cuMemcpyPeerAsync_ptsz",
	"cuMemcpy3DPeer", "cuMemcpy3DPeer_ptds", "cuMemcpy3DPeerAsync",
	"cuMemcpy3DPeerAsync_ptsz", "cuFuncGetModule", "cuKernelGetName",
	"cuKernelGetLibrary", "cuLibraryGetKernelCount", "cuLibraryEnumerateKernels",
	"cuModuleGetFunctionCount", "cuModuleEnumerateFunctions", "cuStreamQuery",
	"cuStreamQuery_ptsz", "cuStreamWaitEvent", "cuStreamWaitEvent_ptsz",
	"cuEventQuery", "cuStreamBeginCapture", "cuStreamBeginCapture_ptsz",
	"cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz",
	"cuStreamBeginCaptureToGraph", "cuStreamBeginCaptureToGraph_ptsz",
	"cuStreamEndCapture", "cuStreamEndCapture_ptsz", "cuStreamIsCapturing",
	"cuStreamIsCapturing_ptsz", "cuStreamGetCaptureInfo_v3",
	"cuStreamGetCaptureInfo_v3_ptsz", "cuThreadExchangeStreamCaptureMode",
	"cuGraphAddKernelNode", "cuGraphAddKernelNode_v2", "cuGraphKernelNodeGetParams",
	"cuGraphKernelNodeGetParams_v2", "cuGraphKernelNodeSetParams",
	"cuGraphKernelNodeSetParams_v2", "cuGraphNodeGetType", "cuGraphGetNodes",
	"cuGraphInstantiate", "cuGraphInstantiate_v2", "cuGraphInstantiateWithParams",
	"cuGraphInstantiateWithParams_ptsz", "cuGraphExecKernelNodeSetParams",
	"cuGraphExecKernelNodeSetParams_v2", "cuGraphExecUpdate", "cuGraphExecUpdate_v2",
	"cuGraphUpload", "cuGraphUpload_ptsz",
};

/*
 * Plain names that a newer variant replaces at 12.4 resolve to themselves only
 * at an older version (or, for the newest calls, a newer one).
 */
static int plain_version(const char *name)
{
	static const struct {
		const char *name;
		int ver;
	} tab[] = {
		{ "cuKernelGetLibrary", 13000 }, { "cuStreamBeginCapture", 10000 },
		{ "cuGraphAddKernelNode", 11000 }, { "cuGraphKernelNodeGetParams", 11000 },
		{ "cuGraphKernelNodeSetParams", 11000 }, { "cuGraphInstantiate", 10000 },
		{ "cuGraphExecKernelNodeSetParams", 11000 }, { "cuGraphExecUpdate", 11000 },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strcmp(tab[i].name, name) == 0)
			return tab[i].ver;
	return 12040;
}

static void *proc(const char *sym, int ver, cuuint64_t flags,
		  CUdriverProcAddressQueryResult *st)
{
	void *p = NULL;

	if (cuGetProcAddress_v2(sym, &p, ver, flags, st) != CUDA_SUCCESS)
		return NULL;
	return p;
}

static void test_proc_address(void)
{
	size_t n = sizeof(all_names) / sizeof(all_names[0]);
	int exported = 1, resolved = 1, distinct = 1;
	void *addrs[sizeof(all_names) / sizeof(all_names[0])];
	CUdriverProcAddressQueryResult st;
	const cuuint64_t PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	void *p;

	for (size_t i = 0; i < n; i++) {
		void *d = dlsym(RTLD_DEFAULT, all_names[i]);

		addrs[i] = d;
		if (!d) {
			exported = 0;
			printf("# not exported: %s\n", all_names[i]);
		}
		/*
		 * A versioned name resolves exactly.  A plain one is a base
		 * name: the legacy-stream lookup at 12.4 picks the plain
		 * symbol itself (12.8 would pick cuEventElapsedTime_v2).
		 */
		if ((strchr(all_names[i] + 2, '_') ?
			     proc(all_names[i], 13000, PT, &st) :
			     proc(all_names[i], plain_version(all_names[i]),
				  CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st)) != d ||
		    !d) {
			resolved = 0;
			printf("# cuGetProcAddress_v2(%s) != dlsym\n", all_names[i]);
		}
	}
	qsort(addrs, n, sizeof(addrs[0]), cmp_u64);
	for (size_t i = 1; i < n; i++)
		distinct &= addrs[i] != addrs[i - 1];
	check(exported, "all %zu functions exported", n);
	check(resolved, "cuGetProcAddress_v2 resolves each exported name");
	check(distinct, "no two names share one function body");

#define SAME(sym, ver, flags, fn) \
	check(proc(sym, ver, flags, &st) == dlsym(RTLD_DEFAULT, #fn) && \
	      st == CU_GET_PROC_ADDRESS_SUCCESS, \
	      "cuGetProcAddress_v2(%s, %d, %s) = %s", sym, ver, #flags, #fn)
	SAME("cuMemAlloc", 13000, 0, cuMemAlloc_v2);
	SAME("cuMemcpyHtoD", 13000, 0, cuMemcpyHtoD_v2);
	SAME("cuMemcpyHtoD", 13000, PT, cuMemcpyHtoD_v2_ptds);
	SAME("cuMemcpy", 13000, PT, cuMemcpy_ptds);
	SAME("cuMemcpy", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, cuMemcpy);
	SAME("cuLaunchKernel", 13000, PT, cuLaunchKernel_ptsz);
	SAME("cuLaunchKernel", 12000, 0, cuLaunchKernel);
	SAME("cuCtxCreate", 12000, 0, cuCtxCreate_v2);
	SAME("cuCtxCreate", 13000, 0, cuCtxCreate_v4);
	SAME("cuEventElapsedTime", 12000, 0, cuEventElapsedTime);
	SAME("cuEventElapsedTime", 13000, 0, cuEventElapsedTime_v2);
	SAME("cuGetProcAddress", 12000, 0, cuGetProcAddress_v2);
	SAME("cuMemFreeHost", 13000, PT, cuMemFreeHost);
	SAME("cuGraphInstantiate", 12000, 0, cuGraphInstantiateWithFlags);
	SAME("cuGraphInstantiate", 11000, 0, cuGraphInstantiate_v2);
	SAME("cuStreamBeginCapture", 13000, PT, cuStreamBeginCapture_v2_ptsz);
	SAME("cuStreamBeginCapture", 13000, 0, cuStreamBeginCapture_v2);
	SAME("cuStreamGetCaptureInfo", 13000, 0, cuStreamGetCaptureInfo_v3);
	SAME("cuGraphAddKernelNode", 13000, 0, cuGraphAddKernelNode_v2);
	SAME("cuGraphExecUpdate", 13000, 0, cuGraphExecUpdate_v2);
	SAME("cuMemcpyPeer", 13000, PT, cuMemcpyPeer_ptds);
	SAME("cuGraphLaunch", 13000, PT, cuGraphLaunch_ptsz);
#undef SAME
	p = proc("cuNoSuchFunction", 13000, 0, &st);
	check(!p && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
	      "unknown symbol: NULL, SYMBOL_NOT_FOUND");
	p = proc("cuLibraryLoadData", 11000, 0, &st);
	check(!p && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
	      "too-old cudaVersion: NULL, VERSION_NOT_SUFFICIENT");
	RC(cuGetProcAddress_v2("cuInit", &p, 99999, 0, NULL),
	   CUDA_ERROR_INVALID_VALUE);
	RC(cuGetProcAddress_v2("cuInit", NULL, 13000, 0, NULL),
	   CUDA_ERROR_INVALID_VALUE);
}

/* ---------------------------------------------------------------------- */

enum { NTHREADS = 8, PER_THREAD = 2000 };
static CUdeviceptr thr_ptrs[NTHREADS][PER_THREAD];
static int thr_errors;
static pthread_mutex_t thr_lock = PTHREAD_MUTEX_INITIALIZER;

static void *alloc_thread(void *arg)
{
	CUdeviceptr *p = arg;
	int err = 0;

	/* No cuCtxSetCurrent: falls back to device 0 after cuInit. */
	for (int i = 0; i < PER_THREAD; i++)
		err += cuMemAlloc_v2(&p[i], 64 + (size_t)i) != CUDA_SUCCESS;
	pthread_mutex_lock(&thr_lock);
	thr_errors += err;
	pthread_mutex_unlock(&thr_lock);
	return NULL;
}

static void *free_thread(void *arg)
{
	CUdeviceptr *p = arg;
	int err = 0;

	cuCtxSetCurrent(pctx0);
	for (int i = PER_THREAD - 1; i >= 0; i--)
		err += cuMemFree_v2(p[i]) != CUDA_SUCCESS;
	pthread_mutex_lock(&thr_lock);
	thr_errors += err;
	pthread_mutex_unlock(&thr_lock);
	return NULL;
}

static void test_threads(void)
{
	static CUdeviceptr all[NTHREADS * PER_THREAD];
	pthread_t t[NTHREADS];
	int distinct = 1;
	size_t fr, tot;

	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, alloc_thread, thr_ptrs[i]);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	memcpy(all, thr_ptrs, sizeof(all));
	qsort(all, NTHREADS * PER_THREAD, sizeof(all[0]), cmp_u64);
	for (int i = 1; i < NTHREADS * PER_THREAD; i++)
		distinct &= all[i] != all[i - 1];
	check(thr_errors == 0 && distinct,
	      "%d threads x %d allocations: all succeed, all distinct", NTHREADS,
	      PER_THREAD);
	/* Free each thread's allocations on a different thread. */
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, free_thread,
			       thr_ptrs[(i + 1) % NTHREADS]);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	check(thr_errors == 0, "frees on other threads all succeed");
	RC(cuMemGetInfo_v2(&fr, &tot), CUDA_SUCCESS);
	check(fr == tot, "nothing outstanding on device 0 at the end (%zu of %zu free)",
	      fr, tot);
}

/* ---------------------------------------------------------------------- */
/* Several devices and peer copies, run by a child with FAKECUDA_D2D_ASYNC=1. */

#define PEER_BW 4e9	/* FAKECUDA_PEER_GBPS=4 in the child: 17 ms a 64 MiB copy */
#define NDEV_PEER 4

static void test_peer(void)
{
	CUcontext c[NDEV_PEER];
	CUdeviceptr a[NDEV_PEER], big0, big1;
	CUstream s1, s2;
	CUevent e0, e1, ex;
	CUdeviceptr v;
	CUcontext cv;
	void *h = NULL;
	char local[8];
	unsigned int mt = 0;
	int n = 0, can = -1, ord = -1;
	size_t sz = 0;
	float ms = 0;
	double want = (double)(64 * MiB) / PEER_BW, api = 0;
	struct fakecuda_config cfg;
	struct fakecuda_copy_stats c01, c10, c00;
	CUDA_MEMCPY3D_PEER p3;

	RC(cuInit(0), CUDA_SUCCESS);
	RC(cuDeviceGetCount(&n), CUDA_SUCCESS);
	check(n == NDEV_PEER, "cuDeviceGetCount = FAKECUDA_DEVICES (%d)", n);
	check(fakecuda_config(&cfg) == 0 && cfg.d2d_async == 1 && cfg.peer_bw == PEER_BW &&
	      cfg.devices == NDEV_PEER, "fakecuda_config reports the environment");
	for (int d = 0; d < NDEV_PEER; d++) {
		RC(cuDevicePrimaryCtxRetain(&c[d], d), CUDA_SUCCESS);
		RC(cuCtxSetCurrent(c[d]), CUDA_SUCCESS);
		RC(cuMemAlloc_v2(&a[d], 1 * MiB), CUDA_SUCCESS);
	}
	RC(cuMemAlloc_v2(&big1, 64 * MiB), CUDA_SUCCESS);	/* on device 3 */
	RC(cuCtxSetCurrent(c[1]), CUDA_SUCCESS);
	RC(cuMemFree_v2(big1), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&big1, 64 * MiB), CUDA_SUCCESS);
	RC(cuCtxSetCurrent(c[0]), CUDA_SUCCESS);
	RC(cuMemAlloc_v2(&big0, 64 * MiB), CUDA_SUCCESS);

	RC(cuDeviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS);
	check(can == 1, "device 0 can access device 1");
	RC(cuDeviceCanAccessPeer(&can, 2, 2), CUDA_SUCCESS);
	check(can == 0, "a device is not its own peer");
	RC(cuDeviceCanAccessPeer(&can, 0, NDEV_PEER), CUDA_ERROR_INVALID_DEVICE);
	RC(cuCtxEnablePeerAccess(c[1], 0), CUDA_SUCCESS);
	RC(cuCtxEnablePeerAccess(c[1], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
	RC(cuCtxEnablePeerAccess(c[0], 0), CUDA_ERROR_INVALID_DEVICE);
	RC(cuCtxEnablePeerAccess(c[2], 1), CUDA_ERROR_INVALID_VALUE);
	RC(cuCtxDisablePeerAccess(c[1]), CUDA_SUCCESS);
	RC(cuCtxDisablePeerAccess(c[1]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);

	/* Unified addressing: the address says the device. */
	RC(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a[3] + 100),
	   CUDA_SUCCESS);
	check(ord == 3, "DEVICE_ORDINAL of device 3's memory = %d", ord);
	RC(cuPointerGetAttribute(&cv, CU_POINTER_ATTRIBUTE_CONTEXT, big1), CUDA_SUCCESS);
	check(cv == c[1], "CONTEXT: the context that allocated it");
	RC(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a[2]), CUDA_SUCCESS);
	check(mt == CU_MEMORYTYPE_DEVICE, "MEMORY_TYPE: device");
	RC(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, big0 + 4096),
	   CUDA_SUCCESS);
	RC(cuPointerGetAttribute(&sz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, big0 + 4096),
	   CUDA_SUCCESS);
	check(v == big0 && sz == 64 * MiB, "RANGE_START_ADDR and RANGE_SIZE");
	RC(cuMemAllocHost_v2(&h, 4096), CUDA_SUCCESS);
	RC(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h),
	   CUDA_SUCCESS);
	check(mt == CU_MEMORYTYPE_HOST, "MEMORY_TYPE of pinned host memory: host");
	RC(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
				 (CUdeviceptr)(uintptr_t)local), CUDA_ERROR_INVALID_VALUE);
	RC(cuPointerGetAttribute(&ord, (CUpointer_attribute)5, a[0]), CUDA_ERROR_INVALID_VALUE);
	RC(cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a[0]),
	   CUDA_ERROR_INVALID_VALUE);

	/* Copies between devices return at once and finish bytes / peer rate later. */
#define EARLY(what, call)                                                       \
	TIMED(want, what " returns at once, cuCtxSynchronize waits for it",     \
	      T(call);                                                          \
	      api = now_s() - t0_;                                              \
	      T(cuCtxSynchronize()));                                           \
	check(api < 0.2 * want, what ": the call took %.3f ms", api * 1e3)
	EARLY("cuMemcpyPeer 0->1", cuMemcpyPeer(big1, c[1], big0, c[0], 64 * MiB));
	EARLY("cuMemcpyPeer_ptds 1->0", cuMemcpyPeer_ptds(big0, c[0], big1, c[1], 64 * MiB));
	EARLY("cuMemcpy 0->1 (unified)", cuMemcpy(big1, big0, 64 * MiB));
	EARLY("cuMemcpyDtoD_v2 1->0", cuMemcpyDtoD_v2(big0, big1, 64 * MiB));
	memset(&p3, 0, sizeof(p3));
	p3.srcMemoryType = p3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p3.srcDevice = big0;
	p3.srcContext = c[0];
	p3.dstDevice = big1;
	p3.dstContext = c[1];
	p3.srcPitch = p3.dstPitch = 1 * MiB;
	p3.srcHeight = p3.dstHeight = 8;
	p3.WidthInBytes = 1 * MiB;
	p3.Height = 8;
	p3.Depth = 8;
	EARLY("cuMemcpy3DPeer 0->1", cuMemcpy3DPeer(&p3));
#undef EARLY
	TIMED(4 * (double)MiB / 1e9, "same-device cuMemcpyDtoD_v2 at FAKECUDA_BW, then sync",
	      T(cuMemcpyDtoD_v2(big0 + 4 * MiB, big0, 4 * MiB));
	      api = now_s() - t0_;
	      T(cuCtxSynchronize()));
	check(api < 0.2 * 4 * (double)MiB / 1e9, "same-device D2D returns at once too");
	TIMED(1 * (double)MiB / 1e9, "cuMemcpyHtoD_v2 still blocks",
	      T(cuMemcpyHtoD_v2(a[0], h ? h : local, 4096)); T(cuMemcpyHtoD_v2(big0, local, 0));
	      T(cuMemcpyHtoD_v2(a[0], local, 1 * MiB - 4096)));
	p3.dstContext = c[2];
	RC(cuMemcpy3DPeer(&p3), CUDA_ERROR_INVALID_VALUE);
	p3.dstContext = (CUcontext)(void *)local;
	RC(cuMemcpy3DPeer(&p3), CUDA_ERROR_INVALID_CONTEXT);

	/* The program's own CUDA-event timing sees the peer rate. */
	RC(cuStreamCreate(&s1, 0), CUDA_SUCCESS);
	RC(cuStreamCreate(&s2, 0), CUDA_SUCCESS);
	RC(cuEventCreate(&e0, 0), CUDA_SUCCESS);
	RC(cuEventCreate(&e1, 0), CUDA_SUCCESS);
	RC(cuEventCreate(&ex, 0), CUDA_SUCCESS);
	TIMED(2 * want, "event, 2 x cuMemcpyPeerAsync(_ptsz) 64 MiB, event, cuEventSynchronize",
	      T(cuEventRecord(e0, s1));
	      T(cuMemcpyPeerAsync(big1, c[1], big0, c[0], 64 * MiB, s1));
	      T(cuMemcpyPeerAsync_ptsz(big0, c[0], big1, c[1], 64 * MiB, s1));
	      T(cuEventRecord(e1, s1));
	      T(cuEventSynchronize(e1));
	      T(cuEventElapsedTime(&ms, e0, e1)));
	check_time(ms / 1e3, 2 * want, "cuEventElapsedTime over two peer copies");
	/* A stream that waits for an event waits for the work before it. */
	TIMED(want, "cuStreamWaitEvent orders s2 after a copy on s1",
	      T(cuMemcpyPeerAsync(big1, c[1], big0, c[0], 64 * MiB, s1));
	      T(cuEventRecord(ex, s1));
	      T(cuStreamWaitEvent(s2, ex, 0));
	      T(cuStreamQuery(s2) == CUDA_ERROR_NOT_READY ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
	      T(cuStreamSynchronize(s2)));
	RC(cuEventQuery(ex), CUDA_SUCCESS);
	RC(cuStreamWaitEvent(s2, ex, 8), CUDA_ERROR_INVALID_VALUE);
	/* Two streams share the link between two GPUs; opposite directions do not. */
	TIMED(2 * want, "0->1 copies on two streams share the link",
	      T(cuMemcpyPeerAsync(big1, c[1], big0, c[0], 64 * MiB, s1));
	      T(cuMemcpyPeerAsync(big1, c[1], big0, c[0], 64 * MiB, s2));
	      T(cuStreamSynchronize(s1)); T(cuStreamSynchronize(s2)));
	TIMED(want, "0->1 and 1->0 at once: one link each way",
	      T(cuMemcpyPeerAsync(big1, c[1], big0, c[0], 64 * MiB, s1));
	      T(cuMemcpyPeerAsync(big0, c[0], big1, c[1], 64 * MiB, s2));
	      T(cuStreamSynchronize(s1)); T(cuStreamSynchronize(s2)));
	check(fakecuda_copy_stats(0, 1, &c01) == 0 && fakecuda_copy_stats(1, 0, &c10) == 0 &&
	      fakecuda_copy_stats(0, 0, &c00) == 0 && fakecuda_copy_stats(8, 0, &c00) == -1,
	      "fakecuda_copy_stats per (source, destination)");
	check(c01.copies >= 8 && c01.bytes == c01.copies * 64 * MiB &&
	      c10.copies >= 4 && c10.bytes == c10.copies * 64 * MiB,
	      "peer copies counted per pair (0->1: %llu, 1->0: %llu)",
	      (unsigned long long)c01.copies, (unsigned long long)c10.copies);
	printf("# ");
	fakecuda_stats_json(stdout);
	printf("\n");
}

/*
 * Runs another program as one more suite: its lines are shown, its summary
 * line ("N passed, M failed") counted; a program that is not there, or that
 * prints no summary, is one failure.
 */
static void run_suite(const char *what, const char *cmd)
{
	char line[512];
	int p = -1, f = -1, st;
	FILE *in = popen(cmd, "r");

	if (!in) {
		check(0, "%s: cannot run %s", what, cmd);
		return;
	}
	while (fgets(line, sizeof(line), in)) {
		if (sscanf(line, "%d passed, %d failed", &p, &f) == 2)
			continue;
		printf("    %s", line);
	}
	st = pclose(in);
	if (p >= 0) {
		npass += p;
		nfail += f;
	}
	check(p >= 0 && WIFEXITED(st) && (WEXITSTATUS(st) == 0) == (f == 0),
	      "%s: %d passed, %d failed (exit %d)", what, p, f,
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* Prints ok/SKIP lines; exit status decides. */
static void run_check(const char *what, const char *cmd)
{
	char line[512], last[512] = "";
	FILE *in = popen(cmd, "r");
	int st;

	if (!in) {
		check(0, "%s: cannot run %s", what, cmd);
		return;
	}
	while (fgets(line, sizeof(line), in)) {
		printf("    %s", line);
		snprintf(last, sizeof(last), "%s", line);
	}
	st = pclose(in);
	last[strcspn(last, "\n")] = '\0';
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: %s", what, last);
}

/*
 * Runs a workload (small sizes) as the tracer tests will: it must exit 0 and
 * end stderr with its ground-truth line.  The workloads check their counts
 * against the stand-in's own counters and exit 1 on a mismatch.
 */
static void run_workload(const char *dir, const char *what, const char *args)
{
	char cmd[4096], line[1 << 16], last[1 << 16] = "";
	FILE *in;
	int st;

	/* The stand-in's defaults, as the tracer tests run them, not this test's settings. */
	snprintf(cmd, sizeof(cmd),
		 "env -u FAKECUDA_DEVICES -u FAKECUDA_BW -u FAKECUDA_KERNEL_NS -u FAKECUDA_MEM_LIMIT "
		 "FAKECUDA_TEARDOWN_MS=0 '%s/%s' %s 2>&1 >/dev/null", dir, what, args);
	in = popen(cmd, "r");
	if (!in) {
		check(0, "workload %s: cannot run", what);
		return;
	}
	while (fgets(line, sizeof(line), in))
		if (line[0] == '{')
			snprintf(last, sizeof(last), "%s", line);
		else
			printf("    %s", line);
	st = pclose(in);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(last, "\"api\":") &&
	      last[strlen(last) - 1] == '\n' && last[strlen(last) - 2] == '}',
	      "workload %s %s: exit %d, truth line of %zu bytes", what, args,
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1, strlen(last));
}

/*
 * tests/gpu/standins_probe.c built against the toolkit's cuda.h and run on the
 * stand-in in appdir/../fakecuda: its stand-in column holds what driver 580
 * returned on the H200 (tests/gpu/check_standins.sh), and the stand-in's model
 * for lines added since, so every line must say SAME.
 */
static void run_probe(const char *appdir)
{
	char cmd[4096];

	if (access("tests/gpu/standins_probe.c", R_OK) != 0 ||
	    access("/usr/local/cuda/include/cuda.h", R_OK) != 0) {
		printf("# SKIP: no /usr/local/cuda/include/cuda.h to build tests/gpu/standins_probe.c\n");
		return;
	}
	snprintf(cmd, sizeof(cmd),
		 "d=$(mktemp -d) && trap 'rm -rf \"$d\"' EXIT && "
		 "${CC:-cc} -I/usr/local/cuda/include -o \"$d/probe\" tests/gpu/standins_probe.c "
		 "-L'%s/../fakecuda' -l:libcuda.so.1 -ldl 2>&1 && "
		 "FAKECUDA_BW=1e10 LD_LIBRARY_PATH='%s/../fakecuda' \"$d/probe\" 2>&1",
		 appdir, appdir);
	run_check("standins_probe on the stand-in: driver 580's return codes", cmd);
}

int main(int argc, char **argv)
{
	char cmd[4096], self[1024];
	ssize_t len;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strcmp(argv[1], "--peer") == 0) {
		setenv("FAKECUDA_DEVICES", "4", 1);
		setenv("FAKECUDA_BW", "1e9", 1);
		setenv("FAKECUDA_PEER_GBPS", "4", 1);
		setenv("FAKECUDA_D2D_ASYNC", "1", 1);
		setenv("FAKECUDA_TEARDOWN_MS", "0", 1);
		test_peer();
		printf("%d passed, %d failed\n", npass, nfail);
		return nfail ? 1 : 0;
	}
	setenv("FAKECUDA_DEVICES", "2", 1);
	setenv("FAKECUDA_MEM_LIMIT", "1G", 1);
	setenv("FAKECUDA_BW", "1e9", 1);
	setenv("FAKECUDA_KERNEL_NS", "1000000", 1);

	test_before_init();
	test_init_ctx();
	test_alloc_basic();
	test_alloc_limits();
	test_alloc_variants();
	test_vmm();
	test_copies_sync();
	test_copies_async();
	test_modules_launch();
	test_graphs_streams();
	test_handle_layout();
	test_capture();
	test_graph_api();
	test_proc_address();
	test_threads();
	RC(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
	RC(cuDevicePrimaryCtxRelease_v2(1), CUDA_SUCCESS);
	test_fork_after_init();

	/* The same binary in early-return mode, the stand-in NCCL's self-test, the headers. */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len > 0) {
		char *slash;

		self[len] = '\0';
		snprintf(cmd, sizeof(cmd), "'%s' --peer 2>&1", self);
		run_suite("peer copies (FAKECUDA_D2D_ASYNC=1, 4 devices)", cmd);
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		snprintf(cmd, sizeof(cmd), "'%s/fakenccl_smoke' 2>&1", self);
		run_suite("fakenccl_smoke", cmd);
		run_workload(self, "graph_app", "--k 2 --launches 3");
		run_workload(self, "name_app", "--n 2 --forge");
		run_workload(self, "peer_app",
			     "--n 5 --size 1048576 --n-back 3 --size-back 524288 --devices 3");
		run_workload(self, "nccl_launcher.sh", "2 --n 1 --bad");
		run_workload(self, "tree_launcher.sh", "--late-child --n 2");
		run_workload(self, "rate_app", "--phases 2000:20,20000:20 --alloc-every 10");
		run_probe(self);
	} else {
		check(0, "readlink /proc/self/exe");
	}
	/* tests/run.sh runs us from the repository root, where these scripts are. */
	if (access("tests/fakecuda/check_signatures.sh", R_OK) == 0)
		run_check("fakecuda.h against cuda.h", "sh tests/fakecuda/check_signatures.sh 2>&1");
	if (access("tests/fakenccl/check_signatures.sh", R_OK) == 0)
		run_check("fakenccl.h against nccl.h", "sh tests/fakenccl/check_signatures.sh 2>&1");
	/* Where the toolkit brings its driver stub and NCCL: symbols, bindings, NCCL's kernels. */
	if (access("tests/gpu/check_standins.sh", R_OK) == 0 &&
	    access("/usr/local/cuda/lib/stubs/libcuda.so", R_OK) == 0 &&
	    access("/usr/local/cuda/lib/libnccl.so.2", R_OK) == 0)
		run_check("the stand-ins' symbols and NCCL kernels against the toolkit's libraries",
			  "sh tests/gpu/check_standins.sh --no-probe /usr/local/cuda/lib/stubs/libcuda.so "
			  "/usr/local/cuda/lib/libnccl.so.2 2>&1");
	else
		printf("# SKIP: no /usr/local/cuda/lib/{stubs/libcuda.so,libnccl.so.2} to compare with\n");

	printf("%d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}
