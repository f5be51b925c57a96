// SPDX-License-Identifier: BSD-3-Clause
// Known CUDA work for each rank of a torch.distributed job (tests/gpu/ddp_ranks.py loads it
// with ctypes): rank R launches rank_kernel (R + 1) x 100 times in one shape and leaks R + 2
// cudaMalloc buffers of (R + 1) MiB, freeing one more. Its account goes back as JSON text.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void rank_kernel(float *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = p[i] * 0.5f + 1.0f;
}

extern "C" int rank_work(int rank, char *out, int len)
{
	const int launches = (rank + 1) * 100, leaks = rank + 2;
	const size_t size = (size_t)(rank + 1) << 20;
	float *keep[16], *tmp;
	int pos;

	if (cudaMalloc(&tmp, size) != cudaSuccess)
		return -1;
	for (int i = 0; i < launches; i++)
		rank_kernel<<<64, 256>>>(tmp, 1 << 14);
	for (int i = 0; i < leaks; i++)
		if (cudaMalloc(&keep[i], size) != cudaSuccess)
			return -1;
	if (cudaDeviceSynchronize() != cudaSuccess || cudaFree(tmp) != cudaSuccess)
		return -1;
	pos = snprintf(out, len, "{\"kernel\":\"rank_kernel(float*, int)\",\"launches\":%d,\"grid\":[64,1,1],"
			"\"block\":[256,1,1],\"leak_size\":%zu,\"leaked\":[", launches, size);
	for (int i = 0; i < leaks && pos < len; i++)
		pos += snprintf(out + pos, len - pos, "%s\"%p\"", i ? "," : "", (void *)keep[i]);
	if (pos < len)
		snprintf(out + pos, len - pos, "]}");
	return 0;
}
