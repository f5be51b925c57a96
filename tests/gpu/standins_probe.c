/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * standins_probe: runs the edge cases the stand-in driver (tests/fakecuda)
 * models from cuda.h's documentation rather than from measurement, and prints
 * for each what this driver returned next to what the stand-in returns:
 *   <case>: got <x> stand-in <y> SAME|DIFFERS
 * Linked with the stand-in every line must say SAME (fakecuda_smoke runs it so,
 * and its own checks are stricter); on the GPU machine a DIFFERS line is where
 * the stand-in's model departs from driver 580 and should be fixed (or its
 * comment made honest).  The H200 run (driver 580.159.04) found 5; the
 * stand-in now returns what that driver did on every line that run had, and
 * the lines added since (the library's module, the capture status after
 * cuEventSynchronize, probe_capture_events, cuModuleUnload of the library's
 * module) hold the stand-in's model until the next run.
 * Build against the real cuda.h (tests/gpu/check_standins.sh does):
 *   cc -I/usr/local/cuda/include -o standins_probe standins_probe.c -lcuda -ldl
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int ndiff;

static void same(const char *what, long long got, long long standin)
{
	printf("%s: got %lld stand-in %lld %s\n", what, got, standin,
	       got == standin ? "SAME" : "DIFFERS");
	ndiff += got != standin;
}

static void info(const char *what, double v, const char *unit)
{
	printf("%s: %.3f %s\n", what, v, unit);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* An empty kernel: PTX for a real driver, a name list for the stand-in. */
static const char ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
			  ".visible .entry empty()\n{\n\tret;\n}\n";

#define OK(call)                                                                 \
	do {                                                                     \
		CUresult rc_ = (call);                                           \
		if (rc_ != CUDA_SUCCESS) {                                       \
			printf("setup failed: %s = %d\n", #call, (int)rc_);      \
			exit(2);                                                 \
		}                                                                \
	} while (0)

/*
 * Which call invalidated the capture above?  Each case alone, in a capture of
 * its own: an unjoined fork, a query first, EndCapture on the forked stream of
 * a joined capture.
 */
static void probe_capture_events(CUfunction f, CUstream s, CUstream s2, CUevent e, CUevent e2)
{
	CUstreamCaptureStatus st;
	CUgraph g;
	char local[16];

	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
	OK(cuEventRecord(e, s));
	OK(cuStreamWaitEvent(s2, e, 0));
	OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s2, NULL, NULL));
	g = (CUgraph)(void *)local;
	same("EndCapture with an unjoined fork, nothing else wrong", cuStreamEndCapture(s, &g),
	     CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
	same("... graph returned is NULL", g == NULL, 1);
	OK(cuStreamIsCapturing(s2, &st));
	same("... the forked stream after it", st, CU_STREAM_CAPTURE_STATUS_NONE);

	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
	OK(cuEventRecord(e, s));
	same("cuEventQuery on a captured event, capture valid", cuEventQuery(e),
	     CUDA_ERROR_CAPTURED_EVENT);
	OK(cuStreamIsCapturing(s, &st));
	same("... capture status after it", st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	same("... cuEventSynchronize on the event now", cuEventSynchronize(e),
	     CUDA_ERROR_INVALID_VALUE);
	same("... EndCapture", cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
	OK(cuEventRecord(e, s));
	OK(cuStreamWaitEvent(s2, e, 0));
	OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s2, NULL, NULL));
	OK(cuEventRecord(e2, s2));
	OK(cuStreamWaitEvent(s, e2, 0));
	same("EndCapture on the forked stream of a joined capture", cuStreamEndCapture(s2, &g),
	     CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
	g = NULL;
	same("... then EndCapture on the origin", cuStreamEndCapture(s, &g), CUDA_SUCCESS);
	if (g)
		cuGraphDestroy(g);
}

int main(void)
{
	int standin = dlsym(RTLD_DEFAULT, "fakecuda_config") != NULL, ndev = 0, v = -1;
	CUcontext ctx, ctx1 = NULL;
	CUmodule mod;
	CUfunction f, fk;
	CUlibrary lib;
	CUkernel k;
	CUstream s, s2;
	CUevent e, e2;
	CUgraph g, g2;
	CUgraphExec x;
	CUgraphNode n1, n2;
	CUDA_KERNEL_NODE_PARAMS p;
	CUgraphExecUpdateResultInfo ui;
	CUstreamCaptureStatus st;
	CUstreamCaptureMode mode;
	CUdeviceptr d, d1 = 0;
	const char *name;
	void *host;
	char local[16];
	size_t nn = 0;
	pid_t pid;
	int status;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("driver: %s\n", standin ? "the stand-in" : "real");
	OK(cuInit(0));
	OK(cuDeviceGetCount(&ndev));
	OK(cuDevicePrimaryCtxRetain(&ctx, 0));
	OK(cuCtxSetCurrent(ctx));
	OK(cuModuleLoadData(&mod, standin ? "empty\n" : ptx));
	OK(cuModuleGetFunction(&f, mod, "empty"));
	OK(cuLibraryLoadData(&lib, standin ? "empty\n" : ptx, NULL, NULL, 0, NULL, NULL, 0));
	OK(cuLibraryGetKernel(&k, lib, "empty"));
	OK(cuKernelGetFunction(&fk, k));
	OK(cuStreamCreate(&s, 0));
	OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	OK(cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));

	/* Fork after cuInit. */
	pid = fork();
	if (pid == 0) {
		CUdeviceptr cd;
		int a = (int)cuMemAlloc_v2(&cd, 4096), b = (int)cuInit(0);

		_exit((a & 0x7f) << 1 | (b == a));
	}
	waitpid(pid, &status, 0);
	same("fork after cuInit: child's cuMemAlloc_v2", WEXITSTATUS(status) >> 1,
	     CUDA_ERROR_NOT_INITIALIZED);
	same("fork after cuInit: child's cuInit returns the same", WEXITSTATUS(status) & 1, 1);

	/* Names and enumeration. */
	same("cuKernelGetName(CUfunction)", cuKernelGetName(&name, (CUkernel)(void *)f),
	     CUDA_ERROR_INVALID_HANDLE);
	/* From here mod is the library's module, as it was on the H200 (driver 580). */
	same("cuFuncGetModule(function of a CUkernel)", cuFuncGetModule(&mod, fk), CUDA_SUCCESS);
	{
		CUfunction f2 = NULL;
		unsigned int nf = 0;
		CUresult rc = cuModuleGetFunction(&f2, mod, "empty");

		same("... cuModuleGetFunction there is cuKernelGetFunction's handle",
		     rc ? -(long long)rc : f2 == fk, 1);
		rc = cuModuleGetFunctionCount(&nf, mod);
		same("... cuModuleGetFunctionCount there", rc ? -(long long)rc : nf, 1);
	}
	same("cuModuleEnumerateFunctions(numFunctions 0)", cuModuleEnumerateFunctions(&f, 0, mod),
	     CUDA_SUCCESS);
	same("cuLibraryEnumerateKernels(numKernels 0)", cuLibraryEnumerateKernels(&k, 0, lib),
	     CUDA_SUCCESS);

	/* Capture: the error codes and when a capture is invalidated. */
	same("BeginCapture on the legacy stream", cuStreamBeginCapture(NULL, 0),
	     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	same("EndCapture, not capturing", cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	same("BeginCapture twice", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
	     CUDA_ERROR_ILLEGAL_STATE);
	same("cuMemAlloc_v2 in a global capture", cuMemAlloc_v2(&d, 4096),
	     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	OK(cuStreamIsCapturing(s, &st));
	same("... capture status after it", st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	same("... launch after it", cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
	     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	g = (CUgraph)(void *)local;
	same("... EndCapture", cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	same("... graph returned is NULL", g == NULL, 1);

	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	OK(cuThreadExchangeStreamCaptureMode(&mode));
	same("cuMemAlloc_v2 in a global capture, thread relaxed", cuMemAlloc_v2(&d, 4096), 0);
	OK(cuThreadExchangeStreamCaptureMode(&mode));
	same("cuMemFree_v2 there, thread global again", cuMemFree_v2(d),
	     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	same("... EndCapture", cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	OK(cuMemFree_v2(d));

	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	same("launch on the legacy stream during a thread-local capture",
	     cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
	     CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	same("... EndCapture", cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

	OK(cuEventRecord(e2, s2));
	OK(cuStreamSynchronize(s2));
	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	same("capturing stream waits for an uncaptured event", cuStreamWaitEvent(s, e2, 0),
	     CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
	same("... EndCapture", cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
	OK(cuEventRecord(e, s));
	OK(cuStreamWaitEvent(s2, e, 0));
	OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s2, NULL, NULL));
	same("cuEventSynchronize on a captured event", cuEventSynchronize(e),
	     CUDA_ERROR_CAPTURED_EVENT);
	/*
	 * Driver 580 on the H200: this query gave CUDA_ERROR_INVALID_VALUE and the
	 * unjoined fork's EndCapture CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, read as:
	 * the cuEventSynchronize above invalidated the capture.  The status line
	 * and the cases after "6 captured launches" check that reading.
	 */
	OK(cuStreamIsCapturing(s, &st));
	same("... capture status after it", st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	same("cuEventQuery on a captured event", cuEventQuery(e), CUDA_ERROR_INVALID_VALUE);
	same("EndCapture on the forked stream", cuStreamEndCapture(s2, &g),
	     CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
	same("EndCapture with an unjoined fork", cuStreamEndCapture(s, &g),
	     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	OK(cuStreamIsCapturing(s2, &st));
	same("... the forked stream after it", st, CU_STREAM_CAPTURE_STATUS_NONE);

	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	same("cuStreamQuery on a capturing stream", cuStreamQuery(s),
	     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	same("... EndCapture", cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	for (int i = 0; i < 5; i++)
		OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
	OK(cuLaunchKernel((CUfunction)(void *)k, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
	OK(cuStreamEndCapture(s, &g));
	OK(cuGraphGetNodes(g, NULL, &nn));
	same("6 captured launches: graph nodes", (long long)nn, 6);
	probe_capture_events(f, s, s2, e, e2);

	/* Graph update across a changed topology. */
	OK(cuGraphInstantiateWithFlags(&x, g, 0));
	OK(cuGraphCreate(&g2, 0));
	memset(&p, 0, sizeof(p));
	p.func = f;
	p.gridDimX = p.gridDimY = p.gridDimZ = p.blockDimX = p.blockDimY = p.blockDimZ = 1;
	OK(cuGraphAddKernelNode(&n1, g2, NULL, 0, &p));
	OK(cuGraphAddKernelNode(&n2, g2, &n1, 1, &p));
	same("cuGraphExecUpdate_v2, other topology", cuGraphExecUpdate(x, g2, &ui),
	     CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	same("... result", ui.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
	OK(cuGraphLaunch(x, s));
	OK(cuStreamSynchronize(s));
	OK(cuStreamBeginCaptureToGraph(s, g2, &n2, NULL, 1, CU_STREAM_CAPTURE_MODE_RELAXED));
	same("cuGraphDestroy of a graph being captured into", cuGraphDestroy(g2),
	     CUDA_ERROR_ILLEGAL_STATE);
	OK(cuStreamEndCapture(s, &g2));

	/* Pointer attributes of host memory. */
	OK(cuMemAllocHost(&host, 4096));
	v = -2;
	same("DEVICE_ORDINAL of pinned host memory: rc",
	     cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)host), 0);
	same("... value", v, 0);
	same("DEVICE_ORDINAL of a stack address",
	     cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)local),
	     CUDA_ERROR_INVALID_VALUE);

	/* Peers: needs two GPUs. */
	if (ndev >= 2) {
		CUstream a, b;
		CUevent t0, t1;
		float ms1 = 0, ms2 = 0;
		size_t sz = 256 << 20;

		same("cuDeviceCanAccessPeer(0, 0)", (cuDeviceCanAccessPeer(&v, 0, 0), v), 0);
		OK(cuDevicePrimaryCtxRetain(&ctx1, 1));
		same("cuCtxEnablePeerAccess(own context)", cuCtxEnablePeerAccess(ctx, 0),
		     CUDA_ERROR_INVALID_DEVICE);
		same("cuCtxDisablePeerAccess, never enabled", cuCtxDisablePeerAccess(ctx1),
		     CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
		OK(cuCtxEnablePeerAccess(ctx1, 0));
		same("cuCtxEnablePeerAccess twice", cuCtxEnablePeerAccess(ctx1, 0),
		     CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
		OK(cuCtxSetCurrent(ctx1));
		OK(cuMemAlloc_v2(&d1, 2 * sz));
		OK(cuCtxSetCurrent(ctx));
		OK(cuMemAlloc_v2(&d, 2 * sz));
		OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
		OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
		OK(cuEventCreate(&t0, 0));
		OK(cuEventCreate(&t1, 0));
		/* One 0->1 copy, then two at once on two streams: do they share the link? */
		for (int rep = 0; rep < 2; rep++) {
			OK(cuEventRecord(t0, a));
			OK(cuMemcpyPeerAsync(d1, ctx1, d, ctx, sz, a));
			OK(cuEventRecord(t1, a));
			OK(cuEventSynchronize(t1));
			OK(cuEventElapsedTime(&ms1, t0, t1));
			OK(cuEventRecord(t0, a));
			OK(cuStreamWaitEvent(b, t0, 0));
			OK(cuMemcpyPeerAsync(d1, ctx1, d, ctx, sz, a));
			OK(cuMemcpyPeerAsync(d1 + sz, ctx1, d + sz, ctx, sz, b));
			OK(cuEventRecord(t1, b));
			OK(cuStreamWaitEvent(a, t1, 0));
			OK(cuEventRecord(t1, a));
			OK(cuEventSynchronize(t1));
			OK(cuEventElapsedTime(&ms2, t0, t1));
		}
		info("one 256 MiB 0->1 copy (ms)", ms1, "ms");
		info("two at once on two streams (ms)", ms2, "ms");
		same("two streams share the 0->1 link (two take > 1.6 x one)", ms2 > 1.6 * ms1, 1);
		{
			double t = now();

			OK(cuMemcpyDtoD_v2(d + sz, d, sz));
			info("cuMemcpyDtoD_v2 256 MiB within GPU 0: the call", (now() - t) * 1e3, "ms");
			t = now();
			OK(cuCtxSynchronize());
			info("... then cuCtxSynchronize", (now() - t) * 1e3, "ms");
		}
	} else {
		printf("peer cases: skipped (%d device)\n", ndev);
	}
	/* Last: on a driver that allowed it, the library's kernels would be gone. */
	same("cuModuleUnload of the library's module", cuModuleUnload(mod), CUDA_ERROR_NOT_PERMITTED);
	printf("%d differences\n", ndiff);
	return ndiff ? 1 : 0;
}
