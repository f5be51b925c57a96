/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * peer_app: copies between GPUs with pairs, calls, bytes and synchronizations
 * known by construction, for gpuprobe's peer-copy attribution and bandwidth
 * bounds (issue 14).
 *
 * It runs the stand-in driver in its early-return mode (FAKECUDA_D2D_ASYNC=1,
 * set unless the environment says otherwise): as on the real driver a copy
 * between device memory returns before it completes, so its API time says
 * nothing about bandwidth; copies between two devices take bytes /
 * FAKECUDA_PEER_GBPS (default 20 GB/s).
 *
 * Pairs: 0->1 (--n copies of --size bytes) and, for d = 1 .. D-1,
 * d->(d+1)%D (--n-back copies of --size-back bytes); with D = 2 that is
 * both ways between GPU 0 and GPU 1.  Each pair's copies come in groups of
 * 4 of one kind, alternating:
 *   sync-API groups  cuMemcpyPeer, cuMemcpy (unified), cuMemcpyDtoD_v2,
 *                    cuMemcpy3DPeer, cuMemcpyPeer_ptds, cuMemcpyDtoD_v2_ptds
 *                    in turn, then cuCtxSynchronize;
 *   async groups     cuMemcpyPeerAsync, cuMemcpyAsync, cuMemcpyDtoDAsync_v2,
 *                    cuMemcpy3DPeerAsync, cuMemcpyPeerAsync_ptsz,
 *                    cuMemcpyAsync_ptsz in turn on the pair's stream, then
 *                    cuStreamSynchronize (odd groups) or cuEventRecord +
 *                    cuEventSynchronize (even groups).
 * Every synchronization covers exactly the copies of its group.  Then per
 * pair the program times 4 more cuMemcpyPeerAsync with CUDA events, as a real
 * program measures bandwidth.  Not peer traffic, for contrast: 4 x 8 MiB
 * cuMemcpyDtoD_v2 within GPU 0 (also returns early, at FAKECUDA_BW) and
 * 2 x 8 MiB cuMemcpyHtoD_v2 to GPU 0 (blocks), each followed by a sync.
 * The ground truth (last JSON line on stderr) has per pair: copies, bytes,
 * per call, the groups with their sync kind, the event timing; it is
 * checked against the stand-in's own per-pair counters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"

static const char usage[] =
	"[--n N] [--size BYTES] [--n-back N] [--size-back BYTES] [--devices D] [--wait]";

#define MAX_DEV 8
#define GROUP 4
#define TIMED_COPIES 4

enum call {
	C_PEER, C_MEMCPY, C_DTOD, C_3DPEER, C_PEER_PTDS, C_DTOD_PTDS,	/* sync API */
	C_PEER_ASYNC, C_MEMCPY_ASYNC, C_DTOD_ASYNC, C_3DPEER_ASYNC, C_PEER_ASYNC_PTSZ,
	C_MEMCPY_ASYNC_PTSZ, NCALLS
};
static const char *const call_names[NCALLS] = {
	"cuMemcpyPeer", "cuMemcpy", "cuMemcpyDtoD_v2", "cuMemcpy3DPeer", "cuMemcpyPeer_ptds",
	"cuMemcpyDtoD_v2_ptds", "cuMemcpyPeerAsync", "cuMemcpyAsync", "cuMemcpyDtoDAsync_v2",
	"cuMemcpy3DPeerAsync", "cuMemcpyPeerAsync_ptsz", "cuMemcpyAsync_ptsz",
};

struct pair {
	int src, dst;
	unsigned long long n, size;
	CUdeviceptr sbuf, dbuf;
	CUstream stream;
	unsigned long long copies, bytes, by_call[NCALLS];
	unsigned long long syncs_ctx, syncs_stream, syncs_event;
	float event_ms;
};

static CUcontext ctx[MAX_DEV];
static struct pair pairs[MAX_DEV];
static int npairs;
static double sync_api_max_us;
static char groups_json[1 << 16];
static size_t groups_len;

static void copy(struct pair *p, enum call c)
{
	unsigned long long t0 = app_now_ns(), sz = p->size;
	CUDA_MEMCPY3D_PEER p3;

	memset(&p3, 0, sizeof(p3));
	p3.srcMemoryType = p3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p3.srcDevice = p->sbuf;
	p3.srcContext = ctx[p->src];
	p3.dstDevice = p->dbuf;
	p3.dstContext = ctx[p->dst];
	p3.WidthInBytes = sz / 64;	/* 64 rows: 8 high, 8 deep */
	p3.srcPitch = p3.dstPitch = sz / 64;
	p3.Height = p3.srcHeight = p3.dstHeight = 8;
	p3.Depth = 8;
	switch (c) {
	case C_PEER:
		CHECK(cuMemcpyPeer(p->dbuf, ctx[p->dst], p->sbuf, ctx[p->src], sz));
		break;
	case C_MEMCPY:
		CHECK(cuMemcpy(p->dbuf, p->sbuf, sz));
		break;
	case C_DTOD:
		CHECK(cuMemcpyDtoD_v2(p->dbuf, p->sbuf, sz));
		break;
	case C_3DPEER:
		CHECK(cuMemcpy3DPeer(&p3));
		break;
	case C_PEER_PTDS:
		CHECK(cuMemcpyPeer_ptds(p->dbuf, ctx[p->dst], p->sbuf, ctx[p->src], sz));
		break;
	case C_DTOD_PTDS:
		CHECK(cuMemcpyDtoD_v2_ptds(p->dbuf, p->sbuf, sz));
		break;
	case C_PEER_ASYNC:
		CHECK(cuMemcpyPeerAsync(p->dbuf, ctx[p->dst], p->sbuf, ctx[p->src], sz, p->stream));
		break;
	case C_MEMCPY_ASYNC:
		CHECK(cuMemcpyAsync(p->dbuf, p->sbuf, sz, p->stream));
		break;
	case C_DTOD_ASYNC:
		CHECK(cuMemcpyDtoDAsync_v2(p->dbuf, p->sbuf, sz, p->stream));
		break;
	case C_3DPEER_ASYNC:
		CHECK(cuMemcpy3DPeerAsync(&p3, p->stream));
		break;
	case C_PEER_ASYNC_PTSZ:
		CHECK(cuMemcpyPeerAsync_ptsz(p->dbuf, ctx[p->dst], p->sbuf, ctx[p->src], sz,
					     p->stream));
		break;
	case C_MEMCPY_ASYNC_PTSZ:
		CHECK(cuMemcpyAsync_ptsz(p->dbuf, p->sbuf, sz, p->stream));
		break;
	default:
		abort();
	}
	if (c < C_PEER_ASYNC) {
		double us = (double)(app_now_ns() - t0) / 1e3;

		if (us > sync_api_max_us)
			sync_api_max_us = us;
	}
	p->copies++;
	p->bytes += sz;
	p->by_call[c]++;
}

static void run_pair(struct pair *p)
{
	unsigned long long done = 0;
	int g = 0, next_sync = 0, next_async = 0;
	CUevent ev, e0, e1;

	CHECK(cuEventCreate(&ev, 0));
	while (done < p->n) {
		unsigned long long k = p->n - done < GROUP ? p->n - done : GROUP;
		unsigned long long t0 = app_now_ns();
		const char *kind;

		for (unsigned long long i = 0; i < k; i++)
			copy(p, g % 2 == 0 ? (enum call)(next_sync++ % 6) :
					     (enum call)(C_PEER_ASYNC + next_async++ % 6));
		if (g % 2 == 0) {
			CHECK(cuCtxSynchronize());
			p->syncs_ctx++;
			kind = "cuCtxSynchronize";
		} else if (g % 4 == 1) {
			CHECK(cuStreamSynchronize(p->stream));
			p->syncs_stream++;
			kind = "cuStreamSynchronize";
		} else {
			CHECK(cuEventRecord(ev, p->stream));
			CHECK(cuEventSynchronize(ev));
			p->syncs_event++;
			kind = "cuEventSynchronize";
		}
		groups_len += (size_t)snprintf(groups_json + groups_len,
					       sizeof(groups_json) - groups_len,
					       "%s{\"pair\":\"%d->%d\",\"copies\":%llu,\"bytes\":%llu,"
					       "\"sync\":\"%s\",\"submit_to_sync_ms\":%.3f}",
					       groups_len ? "," : "", p->src, p->dst, k, k * p->size,
					       kind, (double)(app_now_ns() - t0) / 1e6);
		done += k;
		g++;
	}
	/* The program's own measurement, as a real one does it: events around async copies. */
	CHECK(cuEventCreate(&e0, 0));
	CHECK(cuEventCreate(&e1, 0));
	CHECK(cuEventRecord(e0, p->stream));
	for (int i = 0; i < TIMED_COPIES; i++)
		copy(p, C_PEER_ASYNC);
	CHECK(cuEventRecord(e1, p->stream));
	CHECK(cuEventSynchronize(e1));
	p->syncs_event++;
	CHECK(cuEventElapsedTime(&p->event_ms, e0, e1));
	CHECK(cuEventDestroy_v2(e0));
	CHECK(cuEventDestroy_v2(e1));
	CHECK(cuEventDestroy_v2(ev));
}

int main(int argc, char **argv)
{
	unsigned long long n = 20, size = 64ull << 20, nb = 10, sb = 32ull << 20, ndev = 2;
	unsigned long long local_copies = 4, local_size = 8 << 20, h2d = 2;
	struct fakecuda_config cfg;
	struct fakecuda_copy_stats st;
	char devs[8];
	int wait = 0, count = 0, can = 0;
	CUdeviceptr l0, l1;
	void *host;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = app_parse_u64("--size", argv[++i]);
		else if (!strcmp(argv[i], "--n-back") && i + 1 < argc)
			nb = app_parse_u64("--n-back", argv[++i]);
		else if (!strcmp(argv[i], "--size-back") && i + 1 < argc)
			sb = app_parse_u64("--size-back", argv[++i]);
		else if (!strcmp(argv[i], "--devices") && i + 1 < argc)
			ndev = app_parse_u64("--devices", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (ndev < 2 || ndev > MAX_DEV || size < 4096 || size % 4096 || sb < 4096 || sb % 4096 ||
	    n > 100000 || nb > 100000)
		app_usage_error(argv[0], usage,
				"need 2 <= D <= 8, sizes multiples of 4096, counts <= 100000");

	/* Like the real driver: device-to-device copies return before they complete. */
	setenv("FAKECUDA_D2D_ASYNC", "1", 0);
	snprintf(devs, sizeof(devs), "%llu", ndev);
	setenv("FAKECUDA_DEVICES", devs, 0);
	app_block_signal();
	app_cuda_init();
	CHECK(cuDeviceGetCount(&count));
	if ((unsigned long long)count < ndev || fakecuda_config(&cfg)) {
		fprintf(stderr, "peer_app: %d devices, %llu needed\n", count, ndev);
		return 2;
	}
	for (unsigned long long d = 0; d < ndev; d++)
		CHECK(cuDevicePrimaryCtxRetain(&ctx[d], (CUdevice)d));
	for (unsigned long long d = 0; d < ndev; d++) {
		struct pair *p = &pairs[npairs++];

		p->src = (int)d;
		p->dst = (int)((d + 1) % ndev);
		p->n = d == 0 ? n : nb;
		p->size = d == 0 ? size : sb;
		if (ndev == 2 && d == 1)
			p->dst = 0;
	}
	/* Peer access both ways for every pair, as programs enable it before peer copies. */
	for (int i = 0; i < npairs; i++) {
		struct pair *p = &pairs[i];
		int ends[2] = { p->src, p->dst };

		for (int e = 0; e < 2; e++) {
			CUresult rc;

			CHECK(cuDeviceCanAccessPeer(&can, ends[e], ends[1 - e]));
			if (!can) {
				fprintf(stderr, "peer_app: GPU %d cannot reach GPU %d\n", ends[e],
					ends[1 - e]);
				return 1;
			}
			CHECK(cuCtxSetCurrent(ctx[ends[e]]));
			rc = cuCtxEnablePeerAccess(ctx[ends[1 - e]], 0);
			if (rc != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
				CHECK(rc);
		}
		CHECK(cuCtxSetCurrent(ctx[p->src]));
		CHECK(cuMemAlloc_v2(&p->sbuf, p->size));
		CHECK(cuCtxSetCurrent(ctx[p->dst]));
		CHECK(cuMemAlloc_v2(&p->dbuf, p->size));
	}
	/* Everything runs in GPU 0's context; unified addressing says where memory is. */
	CHECK(cuCtxSetCurrent(ctx[0]));
	for (int i = 0; i < npairs; i++) {
		int o1 = -1, o2 = -1;

		CHECK(cuStreamCreate(&pairs[i].stream, CU_STREAM_NON_BLOCKING));
		CHECK(cuPointerGetAttribute(&o1, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pairs[i].sbuf));
		CHECK(cuPointerGetAttribute(&o2, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pairs[i].dbuf));
		if (o1 != pairs[i].src || o2 != pairs[i].dst) {
			fprintf(stderr, "peer_app: buffers on GPUs %d, %d\n", o1, o2);
			return 1;
		}
	}
	CHECK(cuMemAlloc_v2(&l0, local_size));
	CHECK(cuMemAlloc_v2(&l1, local_size));
	CHECK(cuMemAllocHost_v2(&host, local_size));
	if (wait)
		app_wait_ready();

	for (int i = 0; i < npairs; i++)
		run_pair(&pairs[i]);
	for (unsigned long long i = 0; i < local_copies; i++)
		CHECK(cuMemcpyDtoD_v2(l1, l0, local_size));
	CHECK(cuCtxSynchronize());
	for (unsigned long long i = 0; i < h2d; i++)
		CHECK(cuMemcpyHtoD_v2(l0, host, local_size));

	/* The stand-in saw the same traffic (it counts from its start; we did all of it after). */
	for (int i = 0; i < npairs; i++) {
		if (fakecuda_copy_stats(pairs[i].src, pairs[i].dst, &st) ||
		    st.copies != pairs[i].copies || st.bytes != pairs[i].bytes) {
			fprintf(stderr, "peer_app: the stand-in counted %llu copies, %llu bytes "
					"%d->%d; expected %llu, %llu\n",
				(unsigned long long)st.copies, (unsigned long long)st.bytes,
				pairs[i].src, pairs[i].dst, pairs[i].copies, pairs[i].bytes);
			return 1;
		}
	}

	fprintf(stderr, "{\"pid\":%d,\"api\":\"peer\",\"devices\":%llu,\"d2d_async\":%s,"
			"\"peer_bytes_per_s\":%.0f,\"bytes_per_s\":%.0f,\"sync_api_max_us\":%.1f,"
			"\"pairs\":{",
		(int)getpid(), ndev, cfg.d2d_async ? "true" : "false", cfg.peer_bw, cfg.bw,
		sync_api_max_us);
	for (int i = 0; i < npairs; i++) {
		struct pair *p = &pairs[i];
		double tb = (double)TIMED_COPIES * (double)p->size;

		fprintf(stderr, "%s\"%d->%d\":{\"src\":%d,\"dst\":%d,\"copies\":%llu,\"bytes\":%llu,"
				"\"syncs\":{\"cuCtxSynchronize\":%llu,\"cuStreamSynchronize\":%llu,"
				"\"cuEventSynchronize\":%llu},\"by_call\":{",
			i ? "," : "", p->src, p->dst, p->src, p->dst, p->copies, p->bytes,
			p->syncs_ctx, p->syncs_stream, p->syncs_event);
		for (int c = 0, first = 1; c < NCALLS; c++) {
			if (!p->by_call[c])
				continue;
			fprintf(stderr, "%s\"%s\":{\"copies\":%llu,\"bytes\":%llu}", first ? "" : ",",
				call_names[c], p->by_call[c], p->by_call[c] * p->size);
			first = 0;
		}
		fprintf(stderr, "},\"event_timing\":{\"copies\":%d,\"bytes\":%.0f,\"ms\":%.3f,"
				"\"bytes_per_s\":%.0f}}",
			TIMED_COPIES, tb, p->event_ms, p->event_ms > 0 ? tb / (p->event_ms / 1e3) : 0);
	}
	fprintf(stderr, "},\"groups\":[%s],\"not_peer\":{\"0->0\":{\"call\":\"cuMemcpyDtoD_v2\","
			"\"copies\":%llu,\"bytes\":%llu},\"host->0\":{\"call\":\"cuMemcpyHtoD_v2\","
			"\"copies\":%llu,\"bytes\":%llu}},\"stand_in\":",
		groups_json, local_copies, local_copies * local_size, h2d, h2d * local_size);
	fakecuda_stats_json(stderr);
	fprintf(stderr, "}\n");
	return 0;
}
