// SPDX-License-Identifier: BSD-3-Clause
// A CUDA C workload with allocations known by construction, for --memleak on a real
// GPU. It prints its own account (every leaked pointer and size) as one JSON line on
// stderr, so the check compares addresses, not just counts.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <cuda_runtime.h>

#define CK(x)                                                                       \
	do {                                                                        \
		cudaError_t e_ = (x);                                               \
		if (e_ != cudaSuccess) {                                            \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,   \
				cudaGetErrorString(e_));                            \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

__global__ void fill(float *p, int n, float v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v;
}

struct leak {
	const char *kind;
	void *ptr;
	size_t size;
};
static leak leaks[64];
static int nleaks;
static int nallocs, nfrees;

static void keep(const char *kind, void *p, size_t size)
{
	leaks[nleaks].kind = kind;
	leaks[nleaks].ptr = p;
	leaks[nleaks].size = size;
	nleaks++;
}

// Named, not inlined: the check looks for this frame in the stacks.
__attribute__((noinline)) void *workload_device_alloc(size_t size)
{
	void *p = nullptr;
	CK(cudaMalloc(&p, size));
	nallocs++;
	return p;
}

__attribute__((noinline)) void run(void)
{
	const size_t base = 1 << 20;
	void *dev[10], *host[2], *managed[2], *async[3], *pitched;
	size_t pitch = 0;
	cudaStream_t s;

	for (int i = 0; i < 10; i++) {
		dev[i] = workload_device_alloc(base + i * 4096);
		fill<<<64, 256>>>((float *)dev[i], 1024, (float)i);
	}
	CK(cudaDeviceSynchronize());
	for (int i = 0; i < 7; i++) {
		CK(cudaFree(dev[i]));
		nfrees++;
	}
	for (int i = 7; i < 10; i++)
		keep("device", dev[i], base + i * 4096);

	for (int i = 0; i < 2; i++) {
		CK(cudaMallocHost(&host[i], 65536 * (i + 1)));
		nallocs++;
	}
	CK(cudaFreeHost(host[0]));
	nfrees++;
	keep("host_pinned", host[1], 65536 * 2);

	for (int i = 0; i < 2; i++) {
		CK(cudaMallocManaged(&managed[i], 3 << 20));
		nallocs++;
	}
	CK(cudaFree(managed[0]));
	nfrees++;
	keep("managed", managed[1], 3 << 20);

	CK(cudaMallocPitch(&pitched, &pitch, 1000, 100));
	nallocs++;
	keep("device", pitched, pitch * 100);

	CK(cudaStreamCreate(&s));
	for (int i = 0; i < 3; i++) {
		CK(cudaMallocAsync(&async[i], 2 << 20, s));
		nallocs++;
	}
	CK(cudaFreeAsync(async[0], s));
	CK(cudaFreeAsync(async[1], s));
	nfrees += 2;
	keep("device", async[2], 2 << 20);
	CK(cudaStreamSynchronize(s));
}

int main(int argc, char **argv)
{
	bool wait = argc > 1 && !strcmp(argv[1], "--wait");

	CK(cudaFree(0)); // create the context first
	if (wait) {
		// for -p: attach now, then press on (a line on stdin)
		printf("READY %d\n", (int)getpid());
		fflush(stdout);
		char buf[8];
		if (!fgets(buf, sizeof(buf), stdin))
			return 1;
	}
	run();
	fprintf(stderr, "{\"pid\":%d,\"api\":\"cuda-runtime\",\"allocs\":%d,\"frees\":%d,\"leaks\":[",
		(int)getpid(), nallocs, nfrees);
	for (int i = 0; i < nleaks; i++)
		fprintf(stderr, "%s{\"kind\":\"%s\",\"address\":\"%p\",\"size\":%zu}", i ? "," : "",
			leaks[i].kind, leaks[i].ptr, leaks[i].size);
	fprintf(stderr, "]}\n");
	return 0; // leaks left for gpuprobe to find
}
