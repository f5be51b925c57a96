// SPDX-License-Identifier: BSD-3-Clause
// A CUDA C workload with kernel launches known by construction, for --cudatrace on a
// real GPU: two named kernels (one a template), fixed shapes, a CUDA graph, syncs.
// With --wait it launches each kernel once, prints READY, waits for a line on stdin,
// then does the counted work (for -p: the handles then predate the tracer).
// With --count N [--sync-every K] it launches k1 N times instead, synchronizing the stream
// every K launches (default 1024) and at the end (the daemon's counters under a budget).
// Its account is one JSON line on stderr.
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

__global__ void k1(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] += 1.0f;
}

template <typename T> __global__ void scale(T *p, T s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] *= s;
}

__global__ void k_graph(float *p)
{
	p[threadIdx.x] = 0.0f;
}

/* --count N [--sync-every K]: N launches of k1, a stream synchronize every K and at the end */
static int count_main(long long count, long long every)
{
	const int n = 1 << 10;
	long long syncs = 0;
	float *d;
	cudaStream_t s;

	CK(cudaMalloc(&d, n * sizeof(float)));
	CK(cudaStreamCreate(&s));
	for (long long i = 1; i <= count; i++) {
		k1<<<1, 32, 0, s>>>(d, n);
		if (every > 0 && i % every == 0) {
			CK(cudaStreamSynchronize(s));
			syncs++;
		}
	}
	CK(cudaStreamSynchronize(s));
	syncs++;
	fprintf(stderr, "{\"pid\":%d,\"api\":\"cuda-launch-count\",\"launches\":%lld,\"stream_syncs\":%lld}\n",
		(int)getpid(), count, syncs);
	return 0;
}

int main(int argc, char **argv)
{
	bool wait = argc > 1 && !strcmp(argv[1], "--wait");
	if (argc > 2 && !strcmp(argv[1], "--count"))
		return count_main(atoll(argv[2]), argc > 4 && !strcmp(argv[3], "--sync-every") ? atoll(argv[4]) : 1024);
	const int n = 1 << 20;
	float *d;
	cudaStream_t s;
	cudaGraph_t g;
	cudaGraphExec_t ge;

	CK(cudaMalloc(&d, n * sizeof(float)));
	CK(cudaStreamCreate(&s));
	if (wait) {
		k1<<<1, 32>>>(d, n);
		scale<float><<<1, 32>>>(d, 2.0f, n);
		CK(cudaDeviceSynchronize());
		printf("READY %d\n", (int)getpid());
		fflush(stdout);
		char buf[8];
		if (!fgets(buf, sizeof(buf), stdin))
			return 1;
	}
	for (int i = 0; i < 150; i++)
		k1<<<64, 256, 0, s>>>(d, n);
	for (int i = 0; i < 50; i++)
		k1<<<32, 128, 0, s>>>(d, n);
	for (int i = 0; i < 75; i++)
		scale<float><<<dim3(16, 2, 1), dim3(8, 8, 2), 0, s>>>(d, 1.0001f, n);
	for (int i = 0; i < 5; i++)
		CK(cudaStreamSynchronize(s));
	// three launches captured into a graph (launch API calls that do not run yet)
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	for (int i = 0; i < 3; i++)
		k_graph<<<1, 32, 0, s>>>(d);
	CK(cudaStreamEndCapture(s, &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	for (int i = 0; i < 10; i++)
		CK(cudaGraphLaunch(ge, s));
	for (int i = 0; i < 3; i++)
		CK(cudaDeviceSynchronize());
	fprintf(stderr,
		"{\"pid\":%d,\"api\":\"cuda-launch\",\"kernels\":{"
		"\"k1(float*, int)\":{\"launches\":200,\"shapes\":{\"64,1,1x256,1,1\":150,\"32,1,1x128,1,1\":50}},"
		"\"void scale<float>(float*, float, int)\":{\"launches\":75,\"shapes\":{\"16,2,1x8,8,2\":75}},"
		"\"k_graph(float*)\":{\"launches\":3,\"shapes\":{\"1,1,1x32,1,1\":3}}},"
		"\"graph_launches\":10,\"stream_syncs\":5,\"device_syncs\":3,\"wait\":%s}\n",
		(int)getpid(), wait ? "true" : "false");
	return 0;
}
