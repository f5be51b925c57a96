// SPDX-License-Identifier: BSD-3-Clause
// graphmem_cuda: CUDA graph memory nodes on a real GPU (as the CUDA samples'
// graphMemoryNodes), counts known by construction. Built by tests/gpu/run_start.sh.
//  A: alloc node -> kernel -> free node, launched L times (nothing outstanding)
//  B: alloc node -> kernel, no free node; after each launch cudaFreeAsync (nothing outstanding)
//  C: alloc node -> kernel, launched once, never freed (the leak: graph memory)
//  D: captured cudaMallocAsync -> kernel -> cudaFreeAsync, launched L times
// Truth on stderr as one JSON line.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <unistd.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void fill(int *p, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v;
}

static cudaGraphNode_t add_alloc(cudaGraph_t g, size_t bytes, void **dptr)
{
	cudaMemAllocNodeParams p = {};
	cudaGraphNode_t n;

	p.poolProps.allocType = cudaMemAllocationTypePinned;
	p.poolProps.location.type = cudaMemLocationTypeDevice;
	p.poolProps.location.id = 0;
	p.bytesize = bytes;
	CK(cudaGraphAddMemAllocNode(&n, g, NULL, 0, &p));
	*dptr = p.dptr;
	return n;
}

static cudaGraphNode_t add_fill(cudaGraph_t g, cudaGraphNode_t dep, void *ptr, int n)
{
	cudaKernelNodeParams k = {};
	cudaGraphNode_t node;
	int v = 7;
	void *args[] = { &ptr, &n, &v };

	k.func = (void *)fill;
	k.gridDim = dim3((n + 255) / 256);
	k.blockDim = dim3(256);
	k.kernelParams = args;
	CK(cudaGraphAddKernelNode(&node, g, &dep, 1, &k));
	return node;
}

int main(int argc, char **argv)
{
	const int L = argc > 1 ? atoi(argv[1]) : 3;
	const size_t A = 1 << 20, B = 3 << 20, C = 5 << 20, D = 7 << 20;
	cudaStream_t s;
	cudaGraph_t ga, gb, gc, gd;
	cudaGraphExec_t xa, xb, xc, xd;
	cudaGraphNode_t n, k, fr;
	void *pa, *pb, *pc, *pd;

	CK(cudaSetDevice(0));
	CK(cudaStreamCreate(&s));

	CK(cudaGraphCreate(&ga, 0));
	n = add_alloc(ga, A, &pa);
	k = add_fill(ga, n, pa, A / 4);
	CK(cudaGraphAddMemFreeNode(&fr, ga, &k, 1, pa));
	CK(cudaGraphInstantiate(&xa, ga, 0));
	for (int i = 0; i < L; i++)
		CK(cudaGraphLaunch(xa, s));

	CK(cudaGraphCreate(&gb, 0));
	n = add_alloc(gb, B, &pb);
	add_fill(gb, n, pb, B / 4);
	CK(cudaGraphInstantiate(&xb, gb, 0));
	for (int i = 0; i < L; i++) {
		CK(cudaGraphLaunch(xb, s));
		CK(cudaFreeAsync(pb, s));
	}

	CK(cudaGraphCreate(&gc, 0));
	n = add_alloc(gc, C, &pc);
	add_fill(gc, n, pc, C / 4);
	CK(cudaGraphInstantiate(&xc, gc, 0));
	CK(cudaGraphLaunch(xc, s));

	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaMallocAsync(&pd, D, s));
	fill<<<(D / 4 + 255) / 256, 256, 0, s>>>((int *)pd, D / 4, 3);
	CK(cudaFreeAsync(pd, s));
	CK(cudaStreamEndCapture(s, &gd));
	CK(cudaGraphInstantiate(&xd, gd, 0));
	for (int i = 0; i < L; i++)
		CK(cudaGraphLaunch(xd, s));
	CK(cudaStreamSynchronize(s));
	fprintf(stderr, "{\"pid\":%d,\"api\":\"graphmem\",\"allocs\":4,\"frees\":3,\"leaks\":1,\"leaked_bytes\":%zu,"
		"\"graph_relaunch_frees\":%d,\"leaked_address\":%llu,\"alloc_nodes\":3,\"free_nodes\":1}\n",
		(int)getpid(), C, L - 1, (unsigned long long)(uintptr_t)pc);
	return 0;
}
