// SPDX-License-Identifier: BSD-3-Clause
// Peer copies between GPU 0 and GPU 1 known by construction, for --bandwidth-util's pairs on
// the 2-GPU machine (issue 14): both ways, through the synchronous API (cudaMemcpyPeer and a
// device-to-device cudaMemcpy between GPUs: they return before the copy is done), the
// asynchronous one (cudaMemcpyPeerAsync, cudaMemcpyAsync) closed by a stream, device or
// event synchronization, and copies within GPU 0 for contrast. Each batch is timed with CUDA
// events recorded around it on the stream it runs on (the program's own measurement), and
// everything is printed as one JSON line on stderr. Built on the development machine
// (`make gpu-nccl`); the GPU machine runs it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

struct batch {
	const char *name, *call, *sync;
	int src, dst, copies;
	size_t size;
	float ms; // CUDA events around the batch, on the stream it ran on
};

static void *buf[2][2]; // [gpu][0: source, 1: destination]
static cudaStream_t stream[2];

// n copies of size bytes from GPU src to GPU dst (equal: within the GPU) by one call kind,
// closed by one synchronization kind; events on the stream the copies run on.
static batch run(const char *name, const char *call, const char *sync, int src, int dst, int n, size_t size)
{
	batch b = { name, call, sync, src, dst, n, size, 0 };
	bool async = strstr(call, "Async") != NULL;
	cudaStream_t s = async ? stream[src] : 0;
	cudaEvent_t e0, e1;

	CK(cudaSetDevice(src));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e0, s));
	for (int i = 0; i < n; i++) {
		void *d = buf[dst][1], *from = buf[src][0];

		if (!strcmp(call, "cudaMemcpyPeer"))
			CK(cudaMemcpyPeer(d, dst, from, src, size));
		else if (!strcmp(call, "cudaMemcpyPeerAsync"))
			CK(cudaMemcpyPeerAsync(d, dst, from, src, size, s));
		else if (!strcmp(call, "cudaMemcpyAsync"))
			CK(cudaMemcpyAsync(d, from, size, cudaMemcpyDeviceToDevice, s));
		else
			CK(cudaMemcpy(d, from, size, cudaMemcpyDeviceToDevice));
	}
	CK(cudaEventRecord(e1, s));
	if (!strcmp(sync, "stream"))
		CK(cudaStreamSynchronize(s));
	else if (!strcmp(sync, "event"))
		CK(cudaEventSynchronize(e1));
	else
		CK(cudaDeviceSynchronize());
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&b.ms, e0, e1));
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	return b;
}

int main()
{
	const size_t MiB = 1 << 20;
	batch out[16];
	int nb = 0, n = 0, can01 = 0, can10 = 0;

	CK(cudaGetDeviceCount(&n));
	if (n < 2) {
		fprintf(stderr, "peer_cuda: %d GPUs, 2 needed\n", n);
		return 2;
	}
	CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
	CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
	for (int g = 0; g < 2; g++) {
		CK(cudaSetDevice(g));
		if (can01 && can10)
			CK(cudaDeviceEnablePeerAccess(1 - g, 0));
		CK(cudaMalloc(&buf[g][0], 256 * MiB));
		CK(cudaMalloc(&buf[g][1], 256 * MiB));
		CK(cudaMemset(buf[g][0], g + 1, 256 * MiB));
		CK(cudaStreamCreateWithFlags(&stream[g], cudaStreamNonBlocking));
	}
	CK(cudaSetDevice(0));
	CK(cudaDeviceSynchronize());
	// a warm-up each way, not counted by the checks (its own batch)
	out[nb++] = run("warmup", "cudaMemcpyPeer", "device", 0, 1, 1, 4 * MiB);
	out[nb++] = run("warmup", "cudaMemcpyPeer", "device", 1, 0, 1, 4 * MiB);
	out[nb++] = run("peer_sync_0to1", "cudaMemcpyPeer", "device", 0, 1, 20, 64 * MiB);
	out[nb++] = run("peer_sync_1to0", "cudaMemcpyPeer", "device", 1, 0, 10, 32 * MiB);
	out[nb++] = run("memcpy_d2d_0to1", "cudaMemcpy", "device", 0, 1, 8, 64 * MiB);
	out[nb++] = run("peer_async_0to1", "cudaMemcpyPeerAsync", "stream", 0, 1, 16, 64 * MiB);
	out[nb++] = run("memcpyasync_1to0", "cudaMemcpyAsync", "event", 1, 0, 16, 64 * MiB);
	out[nb++] = run("peer_async_1to0", "cudaMemcpyPeerAsync", "stream", 1, 0, 16, 128 * MiB);
	out[nb++] = run("local_0to0", "cudaMemcpy", "device", 0, 0, 8, 64 * MiB);

	fprintf(stderr, "{\"pid\":%d,\"api\":\"peer_cuda\",\"peer_access\":%s,\"batches\":[", (int)getpid(),
		can01 && can10 ? "true" : "false");
	for (int i = 0; i < nb; i++) {
		batch *b = &out[i];
		double bytes = (double)b->copies * (double)b->size;

		fprintf(stderr, "%s{\"name\":\"%s\",\"call\":\"%s\",\"sync\":\"%s\",\"src\":%d,\"dst\":%d,"
				"\"copies\":%d,\"bytes\":%.0f,\"event_ms\":%.4f,\"event_bytes_per_s\":%.0f}",
			i ? "," : "", b->name, b->call, b->sync, b->src, b->dst, b->copies, bytes, b->ms,
			b->ms > 0 ? bytes / (b->ms / 1e3) : 0);
	}
	fprintf(stderr, "]}\n");
	return 0;
}
