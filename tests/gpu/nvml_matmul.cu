// SPDX-License-Identifier: BSD-3-Clause
// A CUDA C matmul loop for --nvml on a real GPU (tests/gpu/run_nvml.sh): it allocates three
// N x N float matrices (cudaMalloc) and multiplies them for --seconds S (default 20),
// synchronizing every 8 launches. Its account, one JSON line on stderr at the start: its pid
// and the bytes it allocated (what gpuprobe's outstanding device bytes should show; the
// driver accounts more: the context).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

#define TILE 16

__global__ void matmul(const float *a, const float *b, float *c, int n)
{
	__shared__ float ta[TILE][TILE], tb[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
	float acc = 0;

	for (int t = 0; t < n / TILE; t++) {
		ta[threadIdx.y][threadIdx.x] = a[row * n + t * TILE + threadIdx.x];
		tb[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
		__syncthreads();
	}
	c[row * n + col] = acc;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int n = 4096;
	double secs = 20;
	float *a, *b, *c;
	long long launches = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seconds"))
			secs = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--n"))
			n = atoi(argv[i + 1]) / TILE * TILE;
	}
	size_t bytes = (size_t)n * n * sizeof(float);
	CK(cudaMalloc(&a, bytes));
	CK(cudaMalloc(&b, bytes));
	CK(cudaMalloc(&c, bytes));
	CK(cudaMemset(a, 0, bytes));
	CK(cudaMemset(b, 0, bytes));
	fprintf(stderr, "{\"pid\":%d,\"allocated_bytes\":%zu,\"n\":%d}\n", (int)getpid(), 3 * bytes, n);
	fflush(stderr);
	dim3 block(TILE, TILE), grid(n / TILE, n / TILE);
	double end = now() + secs;
	while (now() < end) {
		for (int i = 0; i < 8; i++, launches++)
			matmul<<<grid, block>>>(a, b, c, n);
		CK(cudaDeviceSynchronize());
	}
	printf("{\"launches\":%lld}\n", launches);
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(c));
	return 0;
}
