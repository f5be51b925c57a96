// SPDX-License-Identifier: BSD-3-Clause
// GPU check for issue 15: allocations from known host functions of a program built
// without frame pointers (-O2 -Xcompiler -fomit-frame-pointer, cudart static or shared).
// Three buffers leak from stacks_leaf <- stacks_middle <- main; two more, from
// stacks_temp, are freed. The leak stacks gpuprobe reports must name the first chain, on
// its lines, and nothing of the freed ones.
// Prints READY, waits for a line on stdin, allocates, prints DONE and its own account as
// one JSON line on stderr ({"pid", "leaks", "leaked_bytes", "addresses", "lines"}), then
// waits for stdin to close.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <cuda_runtime.h>

#define LEAK_BYTES (2u << 20)

__global__ void touch(float *p) { p[threadIdx.x] = 1.0f; }

static int line_leaf, line_middle, line_main;

extern "C" __attribute__((noinline)) void *stacks_leaf(size_t bytes)
{
	void *p = nullptr;

	line_leaf = __LINE__ + 1;
	if (cudaMalloc(&p, bytes) != cudaSuccess)
		return nullptr;
	asm volatile("" ::: "memory");	// not a tail call
	return p;
}

extern "C" __attribute__((noinline)) void *stacks_middle(size_t bytes)
{
	line_middle = __LINE__ + 1;
	void *p = stacks_leaf(bytes);
	asm volatile("" ::: "memory");
	return p;
}

extern "C" __attribute__((noinline)) void stacks_temp(void)
{
	void *p = nullptr;

	if (cudaMalloc(&p, LEAK_BYTES / 2) == cudaSuccess)
		cudaFree(p);
	asm volatile("" ::: "memory");
}

int main()
{
	char line[16];
	void *leaked[3];

	cudaFree(0);	// the context up front: the probe is for the leak
	printf("READY\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < 3; i++) {
		line_main = __LINE__ + 1;
		leaked[i] = stacks_middle(LEAK_BYTES);
		if (!leaked[i])
			return 1;
		touch<<<1, 32>>>((float *)leaked[i]);
		stacks_temp();
	}
	if (cudaDeviceSynchronize() != cudaSuccess)
		return 1;
	printf("DONE\n");
	fflush(stdout);
	fprintf(stderr, "{\"pid\":%d,\"leaks\":3,\"leaked_bytes\":%u,\"addresses\":[\"%p\",\"%p\",\"%p\"],"
		"\"lines\":{\"stacks_leaf\":%d,\"stacks_middle\":%d,\"main\":%d}}\n",
		(int)getpid(), 3 * LEAK_BYTES, leaked[0], leaked[1], leaked[2], line_leaf, line_middle, line_main);
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	return 0;
}
