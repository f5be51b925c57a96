// SPDX-License-Identifier: BSD-3-Clause
// GPU check for issue 29 (programs that exit at once; inlined allocators): the memleak
// example, built -O2 -g (cudart static, and -cudart shared): three cudaMalloc, a kernel,
// two cudaFree, exit right away. The leaking allocation is made by make_buffer, inlined
// into train_step, inlined into main. gpuprobe --memleak must report the leak's stack as
// make_buffer <- train_step <- main with the lines tagged "@name" below (the lines
// `addr2line -i -f` gives for main's return address), however soon the process is gone.
// tests/gpu/run_leak_exit.sh runs it; tests/gpu/check_leak_exit.py checks the report.
#include <cstdio>
#include <cuda_runtime.h>

#define N (1u << 20)

__global__ void compute(float *p, unsigned int n)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p[i] = 2.0f * i;
}

static inline __attribute__((always_inline)) float *make_buffer(size_t n)
{
	float *p = nullptr;

	if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess) // @make_buffer
		return nullptr;
	return p;
}

static inline __attribute__((always_inline)) float *train_step(size_t n)
{
	float *p = make_buffer(n); // @train_step

	if (p)
		compute<<<(n + 255) / 256, 256>>>(p, (unsigned int)n);
	return p;
}

int main()
{
	float *a = nullptr, *b = nullptr, *c;

	if (cudaMalloc(&a, N) != cudaSuccess || cudaMalloc(&b, 2 * N) != cudaSuccess)
		return 1;
	c = train_step(N); // @main
	if (!c || cudaDeviceSynchronize() != cudaSuccess)
		return 1;
	cudaFree(a);
	cudaFree(b);
	fprintf(stderr, "{\"leaks\":1,\"leaked_bytes\":%u}\n", (unsigned int)(N * sizeof(float)));
	return 0; // c leaks; the process exits at once
}
