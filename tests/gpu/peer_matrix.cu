// SPDX-License-Identifier: BSD-3-Clause
// Peer copies between EVERY ordered pair of GPUs (i != j), known by construction, for
// --bandwidth-util's GPU x GPU matrix on a node of any size (issue 20): the GPU count comes
// from cudaGetDeviceCount, nothing else is assumed. Pair number k (0, 1, ... in the order
// (0,1), (0,2), ..., (1,0), (1,2), ...) runs, after a warm-up copy of 1 MiB (cudaMemcpyPeer,
// device sync), three batches of 4 + k copies of 64 + 16k MiB each:
//   cudaMemcpyPeer (returns before the copy is done)   closed by cudaDeviceSynchronize
//   cudaMemcpyPeerAsync on a stream of the source GPU  closed by cudaStreamSynchronize
//   cudaMemcpyAsync between the GPUs (unified addresses) closed by cudaEventSynchronize
// so pair k totals 1 + 3(4 + k) copies and 1 MiB + 3(4 + k)(64 + 16k) MiB: both grow with k,
// so every cell of the copies matrix and of the bytes matrix differs from every other.
// Each batch is timed twice: CUDA events recorded around it on the stream it runs on (the
// GPU's time), and the host's CLOCK_MONOTONIC from just before its first call to the return
// of the synchronization that closes it (a window that holds gpuprobe's, which runs from
// the first submission to that return). Everything goes to stderr as one JSON line.
// 2 GPUs: 2 pairs, 2.1 GB moved; 8 GPUs: 56 pairs, up to 59 copies of 944 MiB, 3.4 TB moved
// (about 9 s at 380 GB/s).
// Built on the development machine (`make gpu-node`); the GPU machine runs it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>
#include <unistd.h>
#include <cuda_runtime.h>

#define CK(x)                                                                           \
	do {                                                                            \
		cudaError_t e_ = (x);                                                   \
		if (e_ != cudaSuccess) {                                                \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,       \
				cudaGetErrorString(e_));                                \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

static const size_t MiB = 1 << 20;

enum kind { PEER_SYNC, PEER_ASYNC, MEMCPY_ASYNC };
static const char *const call_name[] = { "cudaMemcpyPeer", "cudaMemcpyPeerAsync", "cudaMemcpyAsync" };
static const char *const sync_name[] = { "device", "stream", "event" };

struct batch {
	const char *name;
	enum kind kind;
	int src, dst, copies;
	size_t size;
	float ms;       // CUDA events around the batch, on the stream it ran on
	double host_ms; // before the first call to the return of the closing sync
};

static std::vector<void *> src_buf, dst_buf;
static std::vector<cudaStream_t> stream;

static double now_ms()
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void copy_once(enum kind k, int src, int dst, size_t size, cudaStream_t s)
{
	if (k == PEER_SYNC)
		CK(cudaMemcpyPeer(dst_buf[dst], dst, src_buf[src], src, size));
	else if (k == PEER_ASYNC)
		CK(cudaMemcpyPeerAsync(dst_buf[dst], dst, src_buf[src], src, size, s));
	else
		CK(cudaMemcpyAsync(dst_buf[dst], src_buf[src], size, cudaMemcpyDeviceToDevice, s));
}

// n copies of size bytes from GPU src to GPU dst by one call kind, closed by its sync kind.
static batch run(const char *name, enum kind k, int src, int dst, int n, size_t size)
{
	batch b = { name, k, src, dst, n, size, 0, 0 };
	cudaStream_t s = k == PEER_SYNC ? 0 : stream[src];
	cudaEvent_t e0, e1;
	double t0;

	CK(cudaSetDevice(src));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e0, s));
	t0 = now_ms();
	for (int i = 0; i < n; i++)
		copy_once(k, src, dst, size, s);
	CK(cudaEventRecord(e1, s));
	if (k == PEER_SYNC)
		CK(cudaDeviceSynchronize());
	else if (k == PEER_ASYNC)
		CK(cudaStreamSynchronize(s));
	else
		CK(cudaEventSynchronize(e1));
	b.host_ms = now_ms() - t0;
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&b.ms, e0, e1));
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	return b;
}

// Every GPU: a source buffer and a destination buffer of the largest copy, peer access to
// every other GPU where the platform allows it (cudaMemcpyPeer works either way).
static int setup(int n, size_t largest, int *all_peer)
{
	*all_peer = 1;
	src_buf.resize(n);
	dst_buf.resize(n);
	stream.resize(n);
	for (int g = 0; g < n; g++) {
		CK(cudaSetDevice(g));
		for (int o = 0; o < n; o++) {
			int can = 0;

			if (o == g)
				continue;
			CK(cudaDeviceCanAccessPeer(&can, g, o));
			if (can)
				CK(cudaDeviceEnablePeerAccess(o, 0));
			else
				*all_peer = 0;
		}
		CK(cudaMalloc(&src_buf[g], largest));
		CK(cudaMalloc(&dst_buf[g], largest));
		CK(cudaMemset(src_buf[g], g + 1, largest));
		CK(cudaStreamCreateWithFlags(&stream[g], cudaStreamNonBlocking));
		CK(cudaDeviceSynchronize());
	}
	return 0;
}

static void print(int n, int all_peer, const std::vector<batch> &out)
{
	fprintf(stderr, "{\"pid\":%d,\"api\":\"peer_matrix\",\"gpus\":%d,\"peer_access\":%s,\"batches\":[",
		(int)getpid(), n, all_peer ? "true" : "false");
	for (size_t i = 0; i < out.size(); i++) {
		const batch *b = &out[i];
		double bytes = (double)b->copies * (double)b->size;

		fprintf(stderr, "%s{\"name\":\"%s\",\"call\":\"%s\",\"sync\":\"%s\",\"src\":%d,\"dst\":%d,"
				"\"copies\":%d,\"size\":%zu,\"bytes\":%.0f,\"event_ms\":%.4f,\"event_bytes_per_s\":%.0f,"
				"\"host_ms\":%.4f,\"host_bytes_per_s\":%.0f}",
			i ? "," : "", b->name, call_name[b->kind], sync_name[b->kind], b->src, b->dst, b->copies,
			b->size, bytes, b->ms, b->ms > 0 ? bytes / (b->ms / 1e3) : 0, b->host_ms,
			b->host_ms > 0 ? bytes / (b->host_ms / 1e3) : 0);
	}
	fprintf(stderr, "]}\n");
}

int main()
{
	std::vector<batch> out;
	int n = 0, all_peer = 0, k = 0;

	CK(cudaGetDeviceCount(&n));
	if (n < 2) {
		fprintf(stderr, "peer_matrix: %d GPUs, 2 needed\n", n);
		return 2;
	}
	setup(n, (64 + 16 * (size_t)(n * (n - 1) - 1)) * MiB, &all_peer);
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			size_t size = (64 + 16 * (size_t)k) * MiB;

			if (i == j)
				continue;
			out.push_back(run("warmup", PEER_SYNC, i, j, 1, MiB));
			out.push_back(run("peer_sync", PEER_SYNC, i, j, 4 + k, size));
			out.push_back(run("peer_async", PEER_ASYNC, i, j, 4 + k, size));
			out.push_back(run("memcpy_async", MEMCPY_ASYNC, i, j, 4 + k, size));
			k++; // the pair's number: 0 .. n(n-1)-1, its batches' sizes within the buffers
		}
	}
	print(n, all_peer, out);
	return 0;
}
