// SPDX-License-Identifier: BSD-3-Clause
// GPU check for issue 15: allocations from known host functions of a program
// built without frame pointers (-O2 -fomit-frame-pointer); the stack taken at
// libcuda's cuMemAlloc_v2 must name stacks_leaf <- stacks_middle <- main.
// Prints READY, waits for a line on stdin, allocates, prints DONE, waits again.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void touch(float *p) { p[threadIdx.x] = 1.0f; }

extern "C" __attribute__((noinline)) void *stacks_leaf(size_t bytes)
{
	void *p = nullptr;
	if (cudaMalloc(&p, bytes) != cudaSuccess)
		return nullptr;
	asm volatile("" ::: "memory");	// not a tail call
	return p;
}

extern "C" __attribute__((noinline)) void *stacks_middle(size_t bytes)
{
	void *p = stacks_leaf(bytes * 2);
	asm volatile("" ::: "memory");
	return p;
}

int main()
{
	char line[16];

	cudaFree(0);	// context up front: the probe is for the leak
	printf("READY\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < 3; i++) {
		float *p = (float *)stacks_middle(1 << 20);
		touch<<<1, 32>>>(p);
	}
	cudaDeviceSynchronize();
	printf("DONE\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	return 0;
}
