/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctxdev_app: a context made before a tracer attaches, then work on it after. The primary
 * context of device --dev is made current and its buffers allocated; READY; after SIGUSR1
 * the thread asks its context's device (cuCtxGetDevice, --asks times, as PyTorch does all
 * the time) and makes --n synchronous host-to-device copies of --size bytes. A tracer
 * attached at READY never saw the context made: only cuCtxGetDevice says where the copies
 * go. --v2 asks cuCtxGetDevice_v2(&dev, NULL) instead, as CUDA 13's runtime does (PyTorch
 * on the H200 called only that one). The truth (JSON on stderr) names the GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <getopt.h>
#include <unistd.h>

#include "common.h"

static const char usage[] = "[--dev D] [--n N] [--size BYTES] [--asks K] [--v2] [--wait]";

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'd' }, { "n", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' }, { "asks", required_argument, NULL, 'a' },
		{ "wait", no_argument, NULL, 'w' }, { "v2", no_argument, NULL, '2' }, { NULL, 0, NULL, 0 },
	};
	unsigned long long dev = 1, n = 5, size = 1 << 20, asks = 3;
	CUcontext ctx;
	CUdevice d, got;
	CUdeviceptr buf;
	char *host;
	int wait = 0, v2 = 0, o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'd': dev = app_parse_u64("--dev", optarg); break;
		case 'n': n = app_parse_u64("--n", optarg); break;
		case 's': size = app_parse_u64("--size", optarg); break;
		case 'a': asks = app_parse_u64("--asks", optarg); break;
		case 'w': wait = 1; break;
		case '2': v2 = 1; break;
		default: app_usage_error(argv[0], usage, "unknown option");
		}
	}
	if (!size)
		app_usage_error(argv[0], usage, "--size must be positive");
	if (wait)
		app_block_signal();
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&d, (int)dev));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAlloc_v2(&buf, size));
	host = calloc(1, size);
	if (!host)
		return 1;
	if (wait)
		app_wait_ready();
	for (unsigned long long i = 0; i < asks; i++) {
		if (v2)
			CHECK(cuCtxGetDevice_v2(&got, NULL));
		else
			CHECK(cuCtxGetDevice(&got));
		if (got != d)
			return 1;
	}
	for (unsigned long long i = 0; i < n; i++)
		CHECK(cuMemcpyHtoD_v2(buf, host, size));
	fprintf(stderr, "{\"pid\":%d,\"api\":\"ctxdev\",\"gpu\":%d,\"copies\":%llu,\"bytes\":%llu}\n", (int)getpid(),
		(int)d, n, n * size);
	free(host);
	return 0;
}
