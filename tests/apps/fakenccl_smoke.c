/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakenccl_smoke - self-test of the stand-in NCCL (tests/fakenccl).  The
 * tracer tests trust its kernels, names and error codes, so check them
 * first.  Three ranks are three processes, forked before any CUDA call (as
 * launchers do); each prints TAP-like lines and sends its counts to rank 0,
 * which prints "N passed, M failed".  fakecuda_smoke runs this program.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"
#include "fakecuda_ext.h"
#include "fakenccl.h"

#define NRANKS 3
/* A kernel as NCCL's are named: _Z<length><name>24ncclDevKernelArgsStorageILm4096EE. */
static const char *kernel(const char *base)
{
	static char buf[4][160];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "_Z%zu%s24ncclDevKernelArgsStorageILm4096EE",
		 strlen(base), base);
	return buf[i];
}

#define KERNEL(base) kernel(base)

static int npass, nfail, me = -1;

static void check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s - [rank %d] ", cond ? "ok" : "not ok", me);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (cond)
		npass++;
	else
		nfail++;
}

#define NC(call, want) nc_is((call), (want), #call)
static int nc_is(ncclResult_t got, ncclResult_t want, const char *what)
{
	check(got == want, "%s -> %d (%s)%s", what, (int)got, ncclGetErrorString(got),
	      got == want ? "" : ", unexpected");
	return got == want;
}

#define CU(call) check((call) == CUDA_SUCCESS, "%s", #call)

static uint64_t launched(const char *name)
{
	struct fakecuda_kernel_stats s;

	return fakecuda_kernel_stats(name, &s) ? 0 : s.launched;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every exported call as NCCL 2.28 has it: pncclX strong, ncclX at the same address. */
static void test_exports(void)
{
	static const char *const names[] = {
		"GetVersion", "GetUniqueId", "CommInitRankConfig", "CommInitRank",
		"CommInitAll", "CommFinalize", "CommDestroy", "CommAbort", "CommSplit",
		"CommShrink", "CommInitRankScalable", "GetErrorString", "GetLastError",
		"CommGetAsyncError", "CommCount", "CommCuDevice", "CommUserRank",
		"RedOpCreatePreMulSum", "RedOpDestroy", "Reduce", "Bcast", "Broadcast",
		"AllReduce", "ReduceScatter", "AllGather", "AlltoAll", "Gather", "Scatter",
		"Send", "Recv", "GroupStart", "GroupEnd",
	};
	int same = 1;
	int v = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char a[64], b[64];
		void *pa, *pb;

		snprintf(a, sizeof(a), "nccl%s", names[i]);
		snprintf(b, sizeof(b), "pnccl%s", names[i]);
		pa = dlsym(RTLD_DEFAULT, a);
		pb = dlsym(RTLD_DEFAULT, b);
		if (!pa || pa != pb) {
			same = 0;
			printf("# %s %p, %s %p\n", a, pa, b, pb);
		}
	}
	check(same, "all %zu calls exported as nccl* and pnccl* at one address",
	      sizeof(names) / sizeof(names[0]));
	/* The partial build: a libnccl.so.2 without the point-to-point calls and a few more. */
	{
		char path[1200], self[1024];
		ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
		char *slash;
		void *h = NULL;

		if (len > 0) {
			self[len] = '\0';
			slash = strrchr(self, '/');
			if (slash)
				*slash = '\0';
			snprintf(path, sizeof(path), "%s/../fakenccl/partial/libnccl.so.2", self);
			h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		}
		check(h && dlsym(h, "ncclAllReduce") && dlsym(h, "pncclAllReduce") &&
		      !dlsym(h, "ncclSend") && !dlsym(h, "pncclRecv") &&
		      !dlsym(h, "ncclAlltoAll") && !dlsym(h, "ncclCommShrink"),
		      "partial/libnccl.so.2 has ncclAllReduce, lacks ncclSend, ncclAlltoAll, ...");
		if (h)
			dlclose(h);
	}
	NC(ncclGetVersion(&v), ncclSuccess);
	check(v == 22809, "ncclGetVersion = %d", v);
	NC(ncclGetVersion(NULL), ncclInvalidArgument);
	check(strcmp(ncclGetErrorString(ncclInvalidArgument),
		     "invalid argument (run with NCCL_DEBUG=WARN for details)") == 0,
	      "ncclGetErrorString(ncclInvalidArgument)");
	NC(ncclGroupEnd(), ncclInvalidUsage);
}

/* One rank's work: run in each process; the id comes from rank 0 before the fork. */
static void rank_main(const ncclUniqueId *id)
{
	ncclComm_t world = NULL, sub = NULL, gone = NULL;
	CUcontext ctx;
	CUstream s;
	CUevent e0, e1;
	CUdeviceptr buf, buf2;
	ncclRedOp_t pms;
	ncclResult_t aerr = ncclInProgress;
	float ms = 0, scalar = 0.5f;
	int n = -1, r = -1, d = -1, dev = me % 2, peer_next = (me + 1) % NRANKS,
	    peer_prev = (me + NRANKS - 1) % NRANKS;
	uint64_t before;
	const size_t big = 256 * 1024;	/* f32: 1 MiB, LL128 */
	double t0;

	CU(cuInit(0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuStreamCreate(&s, 0));
	CU(cuEventCreate(&e0, 0));
	CU(cuEventCreate(&e1, 0));
	CU(cuMemAlloc_v2(&buf, 4 << 20));
	CU(cuMemAlloc_v2(&buf2, 4 << 20));
	void *b = (void *)(uintptr_t)buf, *b2 = (void *)(uintptr_t)buf2;

	NC(ncclCommInitRank(&world, NRANKS, *id, me), ncclSuccess);
	NC(ncclCommCount(world, &n), ncclSuccess);
	NC(ncclCommUserRank(world, &r), ncclSuccess);
	NC(ncclCommCuDevice(world, &d), ncclSuccess);
	check(n == NRANKS && r == me && d == dev, "count %d, rank %d, device %d", n, r, d);
	NC(ncclCommGetAsyncError(world, &aerr), ncclSuccess);
	check(aerr == ncclSuccess, "no async error");

	/* Collectives launch NCCL's kernels, named as NCCL names them. */
	check(strcmp(KERNEL("ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
		     "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE") == 0,
	      "mangled names as c++filt reads them: "
	      "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
	before = launched(KERNEL("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
	NC(ncclAllReduce(b, b2, 1024, ncclFloat32, ncclSum, world, s), ncclSuccess);
	NC(ncclAllReduce(b, b2, 1024, ncclFloat32, ncclSum, world, s), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_AllReduce_Sum_f32_RING_LL")) - before == 2,
	      "2 small f32 AllReduce: 2 launches of ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	/* NCCL has one kernel per op, type and algorithm: Sum, LL, signed as unsigned. */
	NC(ncclAllReduce(b, b2, 512, ncclBfloat16, ncclMax, world, s), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_AllReduce_Sum_bf16_RING_LL")) == 1,
	      "Max on bfloat16 runs in ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
	NC(ncclAllReduce(b, b2, 512, ncclInt32, ncclAvg, world, s), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_AllReduce_Sum_u32_RING_LL")) == 1,
	      "Avg on int32 runs in ncclDevKernel_AllReduce_Sum_u32_RING_LL");
	NC(ncclBroadcast(b, b2, 8192, ncclUint8, 0, world, s), ncclSuccess);
	NC(ncclBcast(b, 8192, ncclUint8, 1, world, s), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_Broadcast_RING_LL")) == 2,
	      "ncclBroadcast and ncclBcast: ncclDevKernel_Broadcast_RING_LL");
	NC(ncclAllGather(b, b2, big, ncclFloat16, world, s), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_AllGather_RING_LL")) == 1,
	      "AllGather of 512 KiB a rank: ncclDevKernel_AllGather_RING_LL all the same");
	NC(ncclReduceScatter(b, b2, 4 * big, ncclFloat8e4m3, ncclProd, world, s), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_ReduceScatter_Sum_f8e4m3_RING_LL")) == 1,
	      "ReduceScatter, fp8 e4m3, Prod: ncclDevKernel_ReduceScatter_Sum_f8e4m3_RING_LL");
	NC(ncclReduce(b, me == 2 ? b2 : NULL, 2 * big, ncclFloat64, ncclMin, 2, world, s),
	   ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_Reduce_Sum_f64_RING_LL")) == 1,
	      "Reduce Min of 4 MiB, f64: ncclDevKernel_Reduce_Sum_f64_RING_LL; "
	      "recvbuff may be NULL off the root");
	before = launched(KERNEL("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
	NC(ncclRedOpCreatePreMulSum(&pms, &scalar, ncclFloat32, ncclScalarHostImmediate, world),
	   ncclSuccess);
	NC(ncclAllReduce(b, b2, 16, ncclFloat32, pms, world, s), ncclSuccess);
	NC(ncclAllReduce(b, b2, 16, ncclFloat16, pms, world, s), ncclInvalidArgument);
	NC(ncclRedOpDestroy(pms, world), ncclSuccess);
	NC(ncclAllReduce(b, b2, 16, ncclFloat32, pms, world, s), ncclInvalidArgument);
	NC(ncclRedOpDestroy(pms, world), ncclInvalidArgument);
	check(launched(KERNEL("ncclDevKernel_AllReduce_Sum_f32_RING_LL")) - before == 1,
	      "a PreMulSum op runs in ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	check(launched(KERNEL("ncclDevKernel_Generic")) == 0, "nothing needs ncclDevKernel_Generic");

	/* Point-to-point: one SendRecv kernel per group; AlltoAll, Gather, Scatter too. */
	before = launched(KERNEL("ncclDevKernel_SendRecv"));
	NC(ncclGroupStart(), ncclSuccess);
	NC(ncclSend(b, 4096, ncclFloat32, peer_next, world, s), ncclSuccess);
	NC(ncclRecv(b2, 4096, ncclFloat32, peer_prev, world, s), ncclSuccess);
	NC(ncclGroupStart(), ncclSuccess);	/* nested: only the outermost end launches */
	NC(ncclSend(b, 4096, ncclFloat32, peer_prev, world, s), ncclSuccess);
	NC(ncclGroupEnd(), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_SendRecv")) == before,
	      "nothing is launched before the outermost ncclGroupEnd");
	NC(ncclGroupEnd(), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_SendRecv")) - before == 1,
	      "one ncclDevKernel_SendRecv for the group");
	NC(ncclAlltoAll(b, b2, 1024, ncclInt64, world, s), ncclSuccess);
	NC(ncclGather(b, me == 0 ? b2 : NULL, 1024, ncclInt8, 0, world, s), ncclSuccess);
	NC(ncclScatter(me == 1 ? b : NULL, b2, 1024, ncclUint32, 1, world, s), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_SendRecv")) - before == 4,
	      "AlltoAll, Gather and Scatter run as SendRecv kernels");

	/* Invalid calls, as NCCL refuses them; a count of 0 is valid and launches nothing. */
	before = launched(KERNEL("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
	NC(ncclAllReduce(b, b2, 0, ncclFloat32, ncclSum, world, s), ncclSuccess);
	check(launched(KERNEL("ncclDevKernel_AllReduce_Sum_f32_RING_LL")) == before,
	      "a count of 0 launches nothing");
	NC(ncclAllReduce(b, b2, 16, ncclFloat32, ncclSum, NULL, s), ncclInvalidArgument);
	check(strstr(ncclGetLastError(NULL), "NULL") != NULL, "ncclGetLastError: '%s'",
	      ncclGetLastError(NULL));
	NC(ncclAllReduce(b, b2, 16, (ncclDataType_t)12, ncclSum, world, s), ncclInvalidArgument);
	NC(ncclAllReduce(b, b2, 16, (ncclDataType_t)-1, ncclSum, world, s), ncclInvalidArgument);
	NC(ncclAllReduce(b, b2, 16, ncclFloat32, (ncclRedOp_t)77, world, s), ncclInvalidArgument);
	NC(ncclBroadcast(b, b2, 16, ncclFloat32, NRANKS, world, s), ncclInvalidArgument);
	NC(ncclSend(b, 16, ncclFloat32, -1, world, s), ncclInvalidArgument);
	NC(ncclAllReduce(NULL, b2, 16, ncclFloat32, ncclSum, world, s), ncclInvalidArgument);
	NC(ncclAllReduce(b, b2, 16, ncclFloat32, ncclSum, (ncclComm_t)(void *)&n, s),
	   ncclInvalidArgument);
	NC(ncclAllReduce(b, b2, 16, ncclFloat32, ncclSum, world, (CUstream)(void *)&n),
	   ncclUnhandledCudaError);

	/* Time: the kernels take their bus bytes at FAKENCCL_BUSBW_GBPS (10 by default). */
	CU(cuStreamSynchronize(s));
	t0 = now_s();
	CU(cuEventRecord(e0, s));
	for (int i = 0; i < 10; i++)
		NC(ncclAllReduce(b, b2, big, ncclFloat32, ncclSum, world, s), ncclSuccess);
	CU(cuEventRecord(e1, s));
	t0 = now_s() - t0;
	CU(cuEventSynchronize(e1));
	CU(cuEventElapsedTime(&ms, e0, e1));
	{
		double want = 10 * (5e-6 + 2.0 * (NRANKS - 1) / NRANKS * (big * 4) / 10e9);

		check(ms / 1e3 > 0.9 * want && ms / 1e3 < 1.5 * want,
		      "10 AllReduce of 1 MiB on %d ranks: %.3f ms by events (model %.3f ms)",
		      NRANKS, ms, want * 1e3);
		check(t0 < 0.5 * want, "collectives return before they complete (%.3f ms)",
		      t0 * 1e3);
	}

	/* Split by parity: ranks 0 and 2 make one communicator, rank 1 another. */
	NC(ncclCommSplit(world, me % 2, -me, &sub, NULL), ncclSuccess);
	NC(ncclCommCount(sub, &n), ncclSuccess);
	NC(ncclCommUserRank(sub, &r), ncclSuccess);
	check(n == (me % 2 ? 1 : 2) && r == (me == 0 ? 1 : 0),
	      "split by parity, key -rank: %d ranks, rank %d", n, r);
	NC(ncclAllReduce(b, b2, 64, ncclFloat32, ncclSum, sub, s), ncclSuccess);
	NC(ncclCommSplit(world, me == 1 ? NCCL_SPLIT_NOCOLOR : 0, 0, &gone, NULL), ncclSuccess);
	check(me == 1 ? gone == NULL : gone != NULL, "NCCL_SPLIT_NOCOLOR gives no communicator");
	NC(ncclCommSplit(world, -5, 0, &gone, NULL), ncclInvalidArgument);
	if (me != 1)
		NC(ncclCommDestroy(gone), ncclSuccess);
	NC(ncclCommDestroy(sub), ncclSuccess);

	/* Finalize, destroy; the destroyed communicator is refused after. */
	NC(ncclCommFinalize(world), ncclSuccess);
	NC(ncclAllReduce(b, b2, 16, ncclFloat32, ncclSum, world, s), ncclInvalidUsage);
	NC(ncclCommDestroy(world), ncclSuccess);
	NC(ncclAllReduce(b, b2, 16, ncclFloat32, ncclSum, world, s), ncclInvalidArgument);
	NC(ncclCommCount(world, &n), ncclInvalidArgument);
	NC(ncclCommDestroy(world), ncclInvalidArgument);
	NC(ncclCommDestroy(NULL), ncclSuccess);
	CU(cuStreamSynchronize(s));
}

/* One process, two devices: ncclCommInitAll and a group over both communicators. */
static void test_init_all(void)
{
	ncclComm_t comms[2] = { 0 }, bad[2] = { 0 };
	int devs[2] = { 1, 0 }, d0 = -1, d1 = -1, r1 = -1;
	CUdeviceptr p;

	CU(cuInit(0));
	CU(cuMemAlloc_v2(&p, 1 << 20));
	NC(ncclCommInitAll(comms, 2, devs), ncclSuccess);
	NC(ncclCommCuDevice(comms[0], &d0), ncclSuccess);
	NC(ncclCommCuDevice(comms[1], &d1), ncclSuccess);
	NC(ncclCommUserRank(comms[1], &r1), ncclSuccess);
	check(d0 == 1 && d1 == 0 && r1 == 1, "devlist order: devices %d, %d", d0, d1);
	NC(ncclGroupStart(), ncclSuccess);
	for (int i = 0; i < 2; i++)
		NC(ncclAllReduce((void *)(uintptr_t)p, (void *)(uintptr_t)p, 256, ncclFloat32,
				 ncclSum, comms[i], NULL),
		   ncclSuccess);
	NC(ncclGroupEnd(), ncclSuccess);
	NC(ncclCommInitAll(bad, 2, (int[]){ 0, 7 }), ncclInvalidArgument);
	for (int i = 0; i < 2; i++)
		NC(ncclCommDestroy(comms[i]), ncclSuccess);
}

/* A rank whose peers never come: the rendezvous times out instead of hanging. */
static void test_timeout(void)
{
	ncclUniqueId id;
	ncclComm_t c = NULL;
	double t0;

	setenv("FAKENCCL_TIMEOUT_MS", "200", 1);
	NC(ncclGetUniqueId(&id), ncclSuccess);
	t0 = now_s();
	NC(ncclCommInitRank(&c, 2, id, 1), ncclSystemError);
	check(now_s() - t0 < 2, "gave up after FAKENCCL_TIMEOUT_MS");
	NC(ncclCommInitRank(&c, 2, id, 5), ncclInvalidArgument);
	memset(&id, 0, sizeof(id));
	NC(ncclCommInitRank(&c, 2, id, 0), ncclInvalidArgument);
	unsetenv("FAKENCCL_TIMEOUT_MS");
}

int main(void)
{
	ncclUniqueId id, id2;
	pid_t pids[NRANKS] = { 0 };
	int fds[2], counts[2];

	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("FAKECUDA_TEARDOWN_MS", "0", 1);
	me = 0;
	test_exports();
	NC(ncclGetUniqueId(&id), ncclSuccess);
	NC(ncclGetUniqueId(&id2), ncclSuccess);
	check(memcmp(&id, &id2, sizeof(id)) != 0, "unique ids differ");
	NC(ncclGetUniqueId(NULL), ncclInvalidArgument);
	if (pipe(fds))
		return 1;
	for (int i = 1; i < NRANKS; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			me = i;
			npass = nfail = 0;
			close(fds[0]);
			rank_main(&id);
			counts[0] = npass;
			counts[1] = nfail;
			if (write(fds[1], counts, sizeof(counts)) != (ssize_t)sizeof(counts))
				_exit(2);
			fflush(stdout);
			_exit(0);
		}
	}
	close(fds[1]);
	rank_main(&id);
	while (read(fds[0], counts, sizeof(counts)) == (ssize_t)sizeof(counts)) {
		npass += counts[0];
		nfail += counts[1];
	}
	for (int i = 1; i < NRANKS; i++) {
		int st = -1;

		check(pids[i] > 0 && waitpid(pids[i], &st, 0) == pids[i] && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0, "rank %d exited cleanly", i);
	}
	test_init_all();
	test_timeout();
	printf("%d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}
