/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libchain.so: a library between a program and its driver, as libtorch_cuda.so is in a
 * wheel: it needs libcuda.so.1 and finds it through its own DT_RUNPATH ($ORIGIN/../drv),
 * which the program's search list does not include (tests/integration/test_libwatch.py).
 */
#include "fakecuda.h"

int chain_leak(unsigned int n, size_t size)
{
	CUcontext ctx;
	CUdevice dev;
	CUdeviceptr p;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx))
		return -1;
	for (unsigned int i = 0; i < n; i++)
		if (cuMemAlloc_v2(&p, size))
			return -1;
	return 0;
}
