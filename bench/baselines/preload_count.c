/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * preload_count.so - the LD_PRELOAD peer: interposes cuLaunchKernel, cuMemAlloc_v2,
 * cuMemFree_v2 and cuMemcpyHtoD_v2, forwards each to the next definition (dlsym(RTLD_NEXT)) and counts the
 * calls with one relaxed atomic add per call. Counts go to stderr at exit, so a bench run
 * can check that the interposer was really in the path.
 *
 *   LD_PRELOAD=.output/bench/preload_count.so ./app
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "fakecuda.h"

typedef CUresult (*launch_fn)(CUfunction, unsigned int, unsigned int, unsigned int,
			      unsigned int, unsigned int, unsigned int, unsigned int, CUstream,
			      void **, void **);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*copy_fn)(CUdeviceptr, const void *, size_t);

static launch_fn real_launch;
static alloc_fn real_alloc;
static free_fn real_free;
static copy_fn real_copy;
static unsigned long long n_launch, n_alloc, n_free, n_copy;

static void *next(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		fprintf(stderr, "preload_count: no next %s: %s\n", name, dlerror());
		abort();
	}
	return p;
}

__attribute__((constructor)) static void init(void)
{
	real_launch = (launch_fn)next("cuLaunchKernel");
	real_alloc = (alloc_fn)next("cuMemAlloc_v2");
	real_free = (free_fn)next("cuMemFree_v2");
	real_copy = (copy_fn)next("cuMemcpyHtoD_v2");
}

__attribute__((destructor)) static void fini(void)
{
	fprintf(stderr, "preload_count: cuLaunchKernel %llu cuMemAlloc_v2 %llu cuMemFree_v2 %llu "
		"cuMemcpyHtoD_v2 %llu\n", n_launch, n_alloc, n_free, n_copy);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
			CUstream s, void **params, void **extra)
{
	__atomic_fetch_add(&n_launch, 1, __ATOMIC_RELAXED);
	return real_launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
	__atomic_fetch_add(&n_alloc, 1, __ATOMIC_RELAXED);
	return real_alloc(dptr, bytes);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	__atomic_fetch_add(&n_free, 1, __ATOMIC_RELAXED);
	return real_free(dptr);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
	__atomic_fetch_add(&n_copy, 1, __ATOMIC_RELAXED);
	return real_copy(dst, src, bytes);
}
