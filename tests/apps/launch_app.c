/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * launch_app: kernel launches with counts known by construction, for --cudatrace.
 *
 * Kernels (the stand-in's module image is a list of names):
 *   module:  vecadd          cuLaunchKernel       N*T of (64,1,1)x(256,1,1), T threads
 *                            cuLaunchKernel_ptsz  N/2 of (8,8,1)x(16,16,1)
 *            _Z2k1Pfi        via an nvcc-style stub __device_stub__Z2k1Pfi:
 *                            2N of (128,1,1)x(128,1,1)
 *            _Z5scaleIfEvPT_i  cuLaunchCooperativeKernel(+_ptsz) N/4 + N/4 of (4,1,1)x(32,1,1)
 *   library: lib_kernel_a    cuKernelGetFunction, cuLaunchKernelEx(+_ptsz) N + N of (2,2,2)x(32,4,1)
 *            lib_kernel_b    the CUkernel itself passed to cuLaunchKernel: N of (16,1,1)x(64,1,1)
 *   graph:   N/10 cuGraphLaunch + N/10 cuGraphLaunch_ptsz
 *   bad:     3 launches of a NULL handle; with --stale, 5 launches of a function whose
 *            module was unloaded (both fail in the driver, both unnamed)
 *   syncs:   5 cuStreamSynchronize, 1 _ptsz, 2 cuCtxSynchronize, 1 _v2, 3 cuEventSynchronize
 * With --wait the handles are created before READY (a tracer attached later never saw
 * them), then one more kernel, lib_kernel_late, is created after it and launched N times.
 * The ground truth is one JSON line on stderr.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

static const char usage[] = "[--n N] [--threads T] [--wait] [--stale] [--exit-code C]";

static unsigned long long n = 100, threads = 1;
static CUcontext ctx;
static CUfunction f_vecadd, f_k1, f_scale, f_a;
static CUkernel k_a, k_b;
static CUstream stream;

/* Like nvcc's host stub for `__global__ void k1(float *, int)`: the name a launch stack
 * shows for a kernel whose handle predates the tracer. */
__attribute__((noinline)) void __device_stub__Z2k1Pfi(float *p, int v)
{
	void *args[] = { &p, &v };

	CHECK(cuLaunchKernel(f_k1, 128, 1, 1, 128, 1, 1, 0, stream, args, NULL));
}

static void *vecadd_thread(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(ctx));
	for (unsigned long long i = 0; i < n; i++)
		CHECK(cuLaunchKernel(f_vecadd, 64, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
	return NULL;
}

static void load_handles(CUmodule *mod, CUlibrary *lib)
{
	static const char image[] = "vecadd\n_Z2k1Pfi\n_Z5scaleIfEvPT_i\n";
	static const char libimage[] = "lib_kernel_a\nlib_kernel_b\nlib_kernel_late\n";

	CHECK(cuModuleLoadData(mod, image));
	CHECK(cuModuleGetFunction(&f_vecadd, *mod, "vecadd"));
	CHECK(cuModuleGetFunction(&f_k1, *mod, "_Z2k1Pfi"));
	CHECK(cuModuleGetFunction(&f_scale, *mod, "_Z5scaleIfEvPT_i"));
	CHECK(cuLibraryLoadData(lib, libimage, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&k_a, *lib, "lib_kernel_a"));
	CHECK(cuKernelGetFunction(&f_a, k_a));
	CHECK(cuLibraryGetKernel(&k_b, *lib, "lib_kernel_b"));
}

int main(int argc, char **argv)
{
	unsigned long long exit_code = 0, stale_launches = 0;
	int wait = 0, stale = 0;
	CUmodule mod, mod2;
	CUlibrary lib;
	CUkernel k_late = NULL;
	CUfunction f_stale;
	CUevent ev;
	CUgraph g;
	CUgraphExec ge;
	CUlaunchConfig cfg;
	pthread_t tids[64];
	float *dummy = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = app_parse_u64("--threads", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--stale"))
			stale = 1;
		else if (!strcmp(argv[i], "--exit-code") && i + 1 < argc)
			exit_code = app_parse_u64("--exit-code", argv[++i]);
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (threads < 1 || threads > 64 || n < 10 || n % 20)
		app_usage_error(argv[0], usage, "need 1 <= T <= 64 and N a multiple of 20");

	app_block_signal();
	ctx = app_cuda_init();
	CHECK(cuStreamCreate(&stream, 0));
	load_handles(&mod, &lib);
	if (wait)
		app_wait_ready();
	else
		k_late = NULL;

	for (unsigned long long t = 0; t < threads; t++)
		if (pthread_create(&tids[t], NULL, vecadd_thread, NULL))
			exit(1);
	for (unsigned long long t = 0; t < threads; t++)
		pthread_join(tids[t], NULL);
	for (unsigned long long i = 0; i < n / 2; i++)
		CHECK(cuLaunchKernel_ptsz(f_vecadd, 8, 8, 1, 16, 16, 1, 0, NULL, NULL, NULL));
	for (unsigned long long i = 0; i < 2 * n; i++)
		__device_stub__Z2k1Pfi(dummy, (int)i);
	for (unsigned long long i = 0; i < n / 4; i++) {
		CHECK(cuLaunchCooperativeKernel(f_scale, 4, 1, 1, 32, 1, 1, 0, stream, NULL));
		CHECK(cuLaunchCooperativeKernel_ptsz(f_scale, 4, 1, 1, 32, 1, 1, 0, stream, NULL));
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 2;
	cfg.blockDimX = 32;
	cfg.blockDimY = 4;
	cfg.blockDimZ = 1;
	cfg.hStream = stream;
	for (unsigned long long i = 0; i < n; i++) {
		CHECK(cuLaunchKernelEx(&cfg, f_a, NULL, NULL));
		CHECK(cuLaunchKernelEx_ptsz(&cfg, f_a, NULL, NULL));
	}
	for (unsigned long long i = 0; i < n; i++)
		CHECK(cuLaunchKernel((CUfunction)k_b, 16, 1, 1, 64, 1, 1, 0, stream, NULL, NULL));
	if (wait) {
		CHECK(cuLibraryGetKernel(&k_late, lib, "lib_kernel_late"));
		for (unsigned long long i = 0; i < n; i++)
			CHECK(cuLaunchKernel((CUfunction)k_late, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
	}
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphInstantiateWithFlags(&ge, g, 0));
	for (unsigned long long i = 0; i < n / 10; i++) {
		CHECK(cuGraphLaunch(ge, stream));
		CHECK(cuGraphLaunch_ptsz(ge, stream));
	}
	for (int i = 0; i < 3; i++)
		CHECK_FAILS(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
			    CUDA_ERROR_INVALID_HANDLE);
	if (stale) {
		static const char image2[] = "short_lived\n";

		/* a handle whose module is gone: the driver refuses it, gpuprobe must not name it */
		CHECK(cuModuleLoadData(&mod2, image2));
		CHECK(cuModuleGetFunction(&f_stale, mod2, "short_lived"));
		CHECK(cuModuleUnload(mod2));
		for (int i = 0; i < 5; i++)
			if (cuLaunchKernel(f_stale, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS)
				stale_launches++;
	}
	CHECK(cuEventCreate(&ev, 0));
	CHECK(cuEventRecord(ev, stream));
	for (int i = 0; i < 5; i++)
		CHECK(cuStreamSynchronize(stream));
	CHECK(cuStreamSynchronize_ptsz(stream));
	for (int i = 0; i < 2; i++)
		CHECK(cuCtxSynchronize());
	CHECK(cuCtxSynchronize_v2(NULL));
	for (int i = 0; i < 3; i++)
		CHECK(cuEventSynchronize(ev));

	fprintf(stderr,
		"{\"pid\":%d,\"api\":\"launch\",\"n\":%llu,\"threads\":%llu,\"wait\":%s,\"kernels\":{"
		"\"vecadd\":{\"launches\":%llu,\"shapes\":{\"64,1,1x256,1,1\":%llu,\"8,8,1x16,16,1\":%llu}},"
		"\"k1(float*, int)\":{\"launches\":%llu,\"shapes\":{\"128,1,1x128,1,1\":%llu}},"
		"\"void scale<float>(float*, int)\":{\"launches\":%llu,\"shapes\":{\"4,1,1x32,1,1\":%llu}},"
		"\"lib_kernel_a\":{\"launches\":%llu,\"shapes\":{\"2,2,2x32,4,1\":%llu}},"
		"\"lib_kernel_b\":{\"launches\":%llu,\"shapes\":{\"16,1,1x64,1,1\":%llu}}",
		(int)getpid(), n, threads, wait ? "true" : "false", n * threads + n / 2, n * threads, n / 2,
		2 * n, 2 * n, n / 2, n / 2, 2 * n, 2 * n, n, n);
	if (wait)
		fprintf(stderr, ",\"lib_kernel_late\":{\"launches\":%llu,\"shapes\":{\"1,1,1x32,1,1\":%llu}}",
			n, n);
	fprintf(stderr, "},\"graph_launches\":%llu,\"null_launches\":3,\"stale_launches\":%llu,"
			"\"syncs\":12,\"stream_syncs\":6,\"ctx_syncs\":3,\"event_syncs\":3}\n",
		2 * (n / 10), stale_launches);
	return (int)exit_code;
}
