/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * copy_app: copies with counts and bytes known by construction, for --bandwidth-util.
 * Two devices (the stand-in's default), device buffers on each, pinned host memory
 * (cuMemAllocHost_v2 and cuMemHostRegister_v2) and pageable host memory (malloc), every
 * copy entry point, synchronous and asynchronous, plus zero-byte, failed and small
 * copies. It keeps its own account per (gpu, direction) and prints it as one JSON line
 * on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

static const char usage[] = "[--n N] [--size BYTES] [--small K] [--wait]";

enum dir { H2D, D2H, D2D, PEER, H2H, NDIR };
static const char *const dir_names[NDIR] = { "H2D", "D2H", "D2D", "peer", "H2H" };

static struct {
	unsigned long long copies, bytes, pageable;
} tally[2][NDIR];
static unsigned long long small_copies, small_bytes, zero_copies, failed_copies;

static void count(int gpu, enum dir d, unsigned long long bytes, int pageable)
{
	tally[gpu][d].copies++;
	tally[gpu][d].bytes += bytes;
	tally[gpu][d].pageable += pageable ? 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long long n = 4, size = 4 << 20, small = 10;
	int wait = 0;
	CUcontext ctx0, ctx1;
	CUdevice dev1;
	CUdeviceptr d0a, d0b, d1a;
	CUstream s0, s1;
	CUevent ev;
	void *h_pin;
	char *h_page, *h_reg;
	CUDA_MEMCPY2D c2;
	CUDA_MEMCPY3D c3;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = app_parse_u64("--size", argv[++i]);
		else if (!strcmp(argv[i], "--small") && i + 1 < argc)
			small = app_parse_u64("--small", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (size < 8192 || size % 4096)
		app_usage_error(argv[0], usage, "--size must be a multiple of 4096, at least 8192");

	app_block_signal();
	ctx0 = app_cuda_init();
	CHECK(cuDeviceGet(&dev1, 1));
	CHECK(cuDevicePrimaryCtxRetain(&ctx1, dev1));
	CHECK(cuStreamCreate(&s0, 0));
	if (wait)
		app_wait_ready();

	/* allocations made while the tracer watches: their ranges decide unified copies */
	CHECK(cuMemAlloc_v2(&d0a, size));
	CHECK(cuMemAlloc_v2(&d0b, size));
	CHECK(cuCtxSetCurrent(ctx1));
	CHECK(cuMemAlloc_v2(&d1a, size));
	CHECK(cuStreamCreate(&s1, 0));
	CHECK(cuCtxSetCurrent(ctx0));
	CHECK(cuMemAllocHost_v2(&h_pin, size));
	h_page = malloc(size);
	h_reg = malloc(size);
	if (!h_page || !h_reg)
		return 1;
	memset(h_page, 1, size);
	CHECK(cuMemHostRegister_v2(h_reg, size, 0));

	for (unsigned long long i = 0; i < n; i++) {
		CHECK(cuMemcpyHtoD_v2(d0a, h_pin, size));
		count(0, H2D, size, 0);
		CHECK(cuMemcpyHtoD_v2(d0a, h_page, size));
		count(0, H2D, size, 1);
		CHECK(cuMemcpyHtoD_v2_ptds(d0b, h_page, size / 2));
		count(0, H2D, size / 2, 1);
		CHECK(cuMemcpyDtoH_v2(h_pin, d0a, size));
		count(0, D2H, size, 0);
		CHECK(cuMemcpyDtoH_v2_ptds(h_page, d0b, size / 2));
		count(0, D2H, size / 2, 1);
		CHECK(cuMemcpyDtoD_v2(d0b, d0a, size));
		count(0, D2D, size, 0);
		CHECK(cuMemcpyDtoD_v2_ptds(d0b, d0a, size / 4));
		count(0, D2D, size / 4, 0);
		/* unified: the direction comes from the tracked ranges */
		CHECK(cuMemcpy(d0a, (CUdeviceptr)h_reg, size));
		count(0, H2D, size, 0);
		CHECK(cuMemcpy_ptds((CUdeviceptr)h_page, d1a, size));
		count(1, D2H, size, 1);
		CHECK(cuMemcpy(d1a, d0a, size)); /* two devices: a peer copy */
		count(0, PEER, size, 0);
		CHECK(cuMemcpyPeer(d1a, ctx1, d0a, ctx0, size / 2));
		count(0, PEER, size / 2, 0);
		CHECK(cuMemcpy((CUdeviceptr)h_page, (CUdeviceptr)h_pin, size / 4));
		count(-1 + 1, H2H, size / 4, 1); /* host to host: gpu slot 0 holds it, see below */
	}
	/* asynchronous: submitted, then covered by a stream, event or context sync */
	for (unsigned long long i = 0; i < n; i++) {
		CHECK(cuMemcpyHtoDAsync_v2(d1a, h_pin, size, s1));
		count(1, H2D, size, 0);
		CHECK(cuMemcpyDtoHAsync_v2_ptsz(h_pin, d0a, size, s0));
		count(0, D2H, size, 0);
		CHECK(cuMemcpyAsync(d0b, d0a, size, s0));
		count(0, D2D, size, 0);
		CHECK(cuMemcpyDtoDAsync_v2(d0b, d0a, size / 2, s0));
		count(0, D2D, size / 2, 0);
		CHECK(cuMemcpyHtoDAsync_v2_ptsz(d0a, h_page, size / 2, s0));
		count(0, H2D, size / 2, 1);
	}
	CHECK(cuStreamSynchronize(s1));
	CHECK(cuEventCreate(&ev, 0));
	CHECK(cuEventRecord(ev, s0));
	CHECK(cuEventSynchronize(ev));
	CHECK(cuMemcpyPeerAsync(d1a, ctx1, d0a, ctx0, size, s0));
	count(0, PEER, size, 0);
	CHECK(cuCtxSynchronize());

	/* 2D: 1024 bytes x 64 rows from pageable host to device 0; 3D: device 0 to pinned */
	memset(&c2, 0, sizeof(c2));
	c2.srcMemoryType = CU_MEMORYTYPE_HOST;
	c2.srcHost = h_page;
	c2.srcPitch = 1024;
	c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c2.dstDevice = d0a;
	c2.dstPitch = 1024;
	c2.WidthInBytes = 1024;
	c2.Height = 64;
	CHECK(cuMemcpy2D_v2(&c2));
	count(0, H2D, 1024 * 64, 1);
	memset(&c3, 0, sizeof(c3));
	c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c3.srcDevice = d0b;
	c3.srcPitch = 512;
	c3.srcHeight = 8;
	c3.dstMemoryType = CU_MEMORYTYPE_HOST;
	c3.dstHost = h_pin;
	c3.dstPitch = 512;
	c3.dstHeight = 8;
	c3.WidthInBytes = 512;
	c3.Height = 8;
	c3.Depth = 2;
	CHECK(cuMemcpy3D_v2(&c3));
	count(0, D2H, 512 * 8 * 2, 0);

	/* not traffic: zero bytes, failures, and (with --min-bytes) small copies */
	CHECK(cuMemcpyHtoD_v2(d0a, h_pin, 0));
	zero_copies++;
	CHECK_FAILS(cuMemcpyHtoD_v2(d0a, NULL, 4096), CUDA_ERROR_INVALID_VALUE);
	failed_copies++;
	CHECK_FAILS(cuMemcpyDtoH_v2(h_pin, 0x10, 4096), CUDA_ERROR_INVALID_VALUE);
	failed_copies++;
	for (unsigned long long i = 0; i < small; i++) {
		CHECK(cuMemcpyHtoD_v2(d0a, h_pin, 100));
		small_copies++;
		small_bytes += 100;
	}

	fprintf(stderr, "{\"pid\":%d,\"api\":\"copy\",\"size\":%llu,\"transfers\":{", (int)getpid(), size);
	for (int g = 0, first = 1; g < 2; g++)
		for (int d = 0; d < NDIR; d++) {
			if (!tally[g][d].copies)
				continue;
			fprintf(stderr, "%s\"%s/%s\":{\"copies\":%llu,\"bytes\":%llu,\"pageable_copies\":%llu}",
				first ? "" : ",", d == H2H ? "-" : (g ? "1" : "0"), dir_names[d],
				tally[g][d].copies, tally[g][d].bytes, tally[g][d].pageable);
			first = 0;
		}
	fprintf(stderr, "},\"small_copies\":%llu,\"small_bytes\":%llu,\"zero_byte_copies\":%llu,"
			"\"failed_copies\":%llu}\n",
		small_copies, small_bytes, zero_copies, failed_copies);
	/* the small copies count as traffic when no --min-bytes filters them: H2D on gpu 0 */
	return 0;
}
