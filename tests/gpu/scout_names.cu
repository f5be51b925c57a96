// SPDX-License-Identifier: BSD-3-Clause
// Where does the driver keep a kernel handle's name? A fact-finding program for the real
// GPU: for every kind of handle a launch can carry (CUfunction from cuModuleGetFunction,
// CUkernel from cuLibraryGetKernel, CUfunction from cuKernelGetFunction, the CUfunction
// the runtime launches), ask the driver for the name (cuFuncGetName / cuKernelGetName),
// then search the memory at the handle for it: a pointer equal to the driver's name
// pointer, or a pointer to an equal string, one or two levels down. Memory is read with
// process_vm_readv on ourselves, so a wild pointer costs nothing.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

template <typename T> __global__ void scout_tmpl(T *p, int n) { if (threadIdx.x < n) p[threadIdx.x] += (T)1; }
extern "C" __global__ void scout_plain(float *p) { p[threadIdx.x] *= 2.0f; }
__global__ void scout_cpp(int *p, int k) { p[threadIdx.x] = k; }

static int rd(unsigned long addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)addr, len };
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -1;
}

static void search(const char *what, unsigned long h, const char *name)
{
	unsigned long l1[160], l2[96];
	char s[512];
	size_t nl = strlen(name);
	int hits = 0;

	printf("-- %s handle 0x%lx name %s (driver ptr %p)\n", what, h, name, (const void *)name);
	if (rd(h, l1, sizeof(l1))) {
		printf("   handle unreadable\n");
		return;
	}
	for (int i = 0; i < 160; i++) {
		if (l1[i] == (unsigned long)name) { printf("   HIT ptr  [h+%d] == name ptr\n", i * 8); hits++; }
		if (!rd(l1[i], s, nl + 1) && !memcmp(s, name, nl + 1)) { printf("   HIT str  *[h+%d] == name\n", i * 8); hits++; }
		if (rd(l1[i], l2, sizeof(l2)))
			continue;
		for (int j = 0; j < 96; j++) {
			if (l2[j] == (unsigned long)name) { printf("   HIT ptr  [[h+%d]+%d] == name ptr\n", i * 8, j * 8); hits++; }
			if (!rd(l2[j], s, nl + 1) && !memcmp(s, name, nl + 1)) { printf("   HIT str  *[[h+%d]+%d] == name\n", i * 8, j * 8); hits++; }
		}
	}
	printf("   %d hits; first 64 bytes:", hits);
	for (int i = 0; i < 8; i++)
		printf(" %016lx", l1[i]);
	printf("\n");
}

#define CK(x) do { CUresult r_ = (x); if (r_) { const char *e; cuGetErrorName(r_, &e); printf("%s: %s\n", #x, e); } } while (0)

int main(void)
{
	float *d;
	int *di;
	cudaMalloc(&d, 1024);
	cudaMalloc((void **)&di, 1024);
	scout_plain<<<1, 32>>>(d);
	scout_tmpl<float><<<1, 32>>>(d, 8);
	scout_cpp<<<1, 32>>>(di, 3);
	cudaDeviceSynchronize();

	const void *syms[] = { (const void *)scout_plain, (const void *)scout_tmpl<float>, (const void *)scout_cpp };
	for (int i = 0; i < 3; i++) {
		cudaFunction_t f;
		cudaKernel_t k;
		const char *n = NULL;
		if (cudaGetFuncBySymbol(&f, syms[i]) == cudaSuccess) {
			CK(cuFuncGetName(&n, (CUfunction)f));
			if (n) search("runtime CUfunction", (unsigned long)f, n);
		}
		if (cudaGetKernel(&k, syms[i]) == cudaSuccess) {
			n = NULL;
			CK(cuKernelGetName(&n, (CUkernel)k));
			if (n) search("runtime CUkernel", (unsigned long)k, n);
			CUfunction kf;
			CUcontext c;
			CK(cuCtxGetCurrent(&c));
			if (!cuKernelGetFunction(&kf, (CUkernel)k)) {
				n = NULL;
				CK(cuFuncGetName(&n, kf));
				if (n) search("cuKernelGetFunction CUfunction", (unsigned long)kf, n);
			}
			CUlibrary lib;
			if (!cuKernelGetLibrary(&lib, (CUkernel)k)) {
				unsigned int cnt = 0;
				CK(cuLibraryGetKernelCount(&cnt, lib));
				printf("   library 0x%lx has %u kernels\n", (unsigned long)lib, cnt);
			}
		}
	}
	/* a module loaded from PTX through the driver API: cuModuleGetFunction's handles */
	static const char ptx[] =
		".version 7.0\n.target sm_50\n.address_size 64\n"
		".visible .entry scout_ptx_kernel_a(.param .u64 p){ret;}\n"
		".visible .entry _Z16scout_ptx_mangledPfi(.param .u64 p, .param .u32 n){ret;}\n";
	CUmodule m;
	CUlibrary lib;
	if (!cuModuleLoadData(&m, ptx)) {
		const char *names[] = { "scout_ptx_kernel_a", "_Z16scout_ptx_mangledPfi" };
		for (int i = 0; i < 2; i++) {
			CUfunction f;
			const char *n = NULL;
			if (cuModuleGetFunction(&f, m, names[i]))
				continue;
			CK(cuFuncGetName(&n, f));
			if (n) search("cuModuleGetFunction CUfunction", (unsigned long)f, n);
		}
	}
	if (!cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0)) {
		CUkernel k;
		const char *n = NULL;
		if (!cuLibraryGetKernel(&k, lib, "_Z16scout_ptx_mangledPfi")) {
			CK(cuKernelGetName(&n, k));
			if (n) search("cuLibraryGetKernel CUkernel", (unsigned long)k, n);
			CUfunction f;
			if (!cuKernelGetFunction(&f, k)) {
				n = NULL;
				CK(cuFuncGetName(&n, f));
				if (n) search("cuLibraryGetKernel->cuKernelGetFunction CUfunction", (unsigned long)f, n);
			}
		}
	}
	int dv;
	cuDriverGetVersion(&dv);
	printf("driver version %d\n", dv);
	return 0;
}
