/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exec_second: the image exec_app execs (it also runs alone).  A new address
 * space and a fresh driver: it loads its own module, launches
 * second_kern(float*, int) 11 times, makes 3 allocations of 1 MiB -- the
 * stand-in hands out the same addresses the first image got -- and frees
 * all three: no leak.  With --first-truth JSON (from exec_app) its last line
 * on stderr holds both images:
 *   {"pid":P,"api":"exec","images":[{first image},{second image}]}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"

static const char usage[] = "[--first-truth JSON]";

int main(int argc, char **argv)
{
	struct truth t = { .api = "exec_second", .allocs = 3, .frees = 3 };
	const char *first = NULL;
	CUdeviceptr p[3];
	CUmodule mod;
	CUfunction f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--first-truth") && i + 1 < argc)
			first = argv[++i];
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	app_cuda_init();
	CHECK(cuModuleLoadData(&mod, "_Z11second_kernPfi\n"));
	CHECK(cuModuleGetFunction(&f, mod, "_Z11second_kernPfi"));
	for (int i = 0; i < 11; i++)
		CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	for (int i = 0; i < 3; i++)
		CHECK(cuMemAlloc_v2(&p[i], 1 << 20));
	for (int i = 0; i < 3; i++)
		CHECK(cuMemFree_v2(p[i]));
	CHECK(cuCtxSynchronize());
	app_expect_kernel("_Z11second_kernPfi", 11, 0, 0);

	if (first)
		fprintf(stderr, "{\"pid\":%d,\"api\":\"exec\",\"images\":[%s,", (int)getpid(), first);
	fputc('{', stderr);
	truth_fields(stderr, &t, 1);
	fprintf(stderr, ",\"image\":2,\"comm\":\"exec_second\",\"launches\":11,"
			"\"kernels\":{\"second_kern(float*, int)\":{\"launches\":11,\"handle\":\"%p\"}},"
			"\"allocated_addresses\":[\"0x%llx\",\"0x%llx\",\"0x%llx\"],"
			"\"leaked_addresses\":[]}",
		(void *)f, (unsigned long long)p[0], (unsigned long long)p[1],
		(unsigned long long)p[2]);
	fprintf(stderr, first ? "]}\n" : "\n");
	return 0;
}
