// SPDX-License-Identifier: BSD-3-Clause
// A CUDA C workload with copies known by construction, for --bandwidth-util on a real
// GPU: synchronous and asynchronous, pinned and pageable, each direction. It measures
// its own bandwidth with CUDA events around each batch and prints everything as one
// JSON line on stderr.
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

static const size_t SIZE = 64 << 20; // 64 MiB per copy
static const int N = 8;

struct batch {
	const char *name, *dir;
	int copies, pageable;
	size_t bytes;
	float ms; // CUDA events
};

int main()
{
	void *d, *d2, *pinned, *pageable;
	cudaStream_t s;
	cudaEvent_t a, b;
	batch out[8];
	int nb = 0;

	CK(cudaMalloc(&d, SIZE));
	CK(cudaMalloc(&d2, SIZE));
	CK(cudaMallocHost(&pinned, SIZE));
	pageable = malloc(SIZE);
	memset(pageable, 1, SIZE);
	memset(pinned, 2, SIZE);
	CK(cudaStreamCreate(&s));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));

	auto run = [&](const char *name, const char *dir, int pg, auto &&fn) {
		CK(cudaDeviceSynchronize());
		CK(cudaEventRecord(a, s));
		for (int i = 0; i < N; i++)
			fn();
		CK(cudaEventRecord(b, s));
		CK(cudaEventSynchronize(b));
		float ms = 0;
		CK(cudaEventElapsedTime(&ms, a, b));
		out[nb++] = batch{ name, dir, N, pg ? N : 0, (size_t)N * SIZE, ms };
	};
	// synchronous copies on the legacy stream are ordered with s's events (blocking stream)
	run("sync H2D pinned", "H2D", 0, [&] { CK(cudaMemcpy(d, pinned, SIZE, cudaMemcpyHostToDevice)); });
	run("sync H2D pageable", "H2D", 1, [&] { CK(cudaMemcpy(d, pageable, SIZE, cudaMemcpyHostToDevice)); });
	run("sync D2H pinned", "D2H", 0, [&] { CK(cudaMemcpy(pinned, d, SIZE, cudaMemcpyDeviceToHost)); });
	run("sync D2H pageable", "D2H", 1, [&] { CK(cudaMemcpy(pageable, d, SIZE, cudaMemcpyDeviceToHost)); });
	run("sync D2D", "D2D", 0, [&] { CK(cudaMemcpy(d2, d, SIZE, cudaMemcpyDeviceToDevice)); });
	run("async H2D pinned", "H2D", 0, [&] { CK(cudaMemcpyAsync(d, pinned, SIZE, cudaMemcpyHostToDevice, s)); });
	run("async D2H pinned", "D2H", 0, [&] { CK(cudaMemcpyAsync(pinned, d, SIZE, cudaMemcpyDeviceToHost, s)); });
	CK(cudaStreamSynchronize(s));

	fprintf(stderr, "{\"pid\":%d,\"api\":\"cuda-copy\",\"size\":%zu,\"batches\":[", (int)getpid(), SIZE);
	for (int i = 0; i < nb; i++)
		fprintf(stderr, "%s{\"name\":\"%s\",\"dir\":\"%s\",\"copies\":%d,\"pageable_copies\":%d,"
				"\"bytes\":%zu,\"event_ms\":%.4f}",
			i ? "," : "", out[i].name, out[i].dir, out[i].copies, out[i].pageable, out[i].bytes,
			out[i].ms);
	fprintf(stderr, "]}\n");
	return 0;
}
