/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exec_app: a CUDA program that execs another CUDA program (exec_second), for
 * gpuprobe's "exec starts a clean record" (issue 13).
 *
 * This first image loads a module, launches first_kern(float*, int) 7 times,
 * makes 3 allocations of 1 MiB and frees the second: 2 leaks, which end with
 * the image at exec (a new address space).  Then it execs exec_second (beside
 * it, or --second PATH) in the same process, handing its own truth over on
 * the command line.  The second image starts the driver afresh, so its three
 * 1 MiB allocations get the very addresses the first image leaked -- a tracer
 * that carried the first image's records over would take its frees for
 * frees of the leaks -- and it names its kernel differently.
 * --wait: READY after cuInit, before the first image's work.
 * The last JSON line on stderr (exec_second's) holds both images.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"

static const char usage[] = "[--wait] [--second PATH]";

int main(int argc, char **argv)
{
	struct truth t = { .api = "exec_first", .allocs = 3, .frees = 1, .leaks = 2,
			   .leaked_bytes = 2 << 20 };
	const char *second = NULL;
	char path[4096], truth[2048];
	CUdeviceptr p[3];
	CUmodule mod;
	CUfunction f;
	FILE *mem;
	int wait = 0;
	ssize_t len;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--second") && i + 1 < argc)
			second = argv[++i];
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (!second) {
		char *slash;

		len = readlink("/proc/self/exe", path, sizeof(path) - 32);
		if (len <= 0)
			return 1;
		path[len] = '\0';
		slash = strrchr(path, '/');
		if (!slash)
			return 1;
		strcpy(slash + 1, "exec_second");
		second = path;
	}

	app_block_signal();
	app_cuda_init();
	if (wait)
		app_wait_ready();
	CHECK(cuModuleLoadData(&mod, "_Z10first_kernPfi\n"));
	CHECK(cuModuleGetFunction(&f, mod, "_Z10first_kernPfi"));
	for (int i = 0; i < 7; i++)
		CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	for (int i = 0; i < 3; i++)
		CHECK(cuMemAlloc_v2(&p[i], 1 << 20));
	CHECK(cuMemFree_v2(p[1]));
	CHECK(cuCtxSynchronize());
	app_expect_kernel("_Z10first_kernPfi", 7, 0, 0);

	mem = fmemopen(truth, sizeof(truth), "w");
	if (!mem)
		return 1;
	fputc('{', mem);
	truth_fields(mem, &t, 1);
	fprintf(mem, ",\"image\":1,\"comm\":\"exec_app\",\"launches\":7,"
		     "\"kernels\":{\"first_kern(float*, int)\":{\"launches\":7,\"handle\":\"%p\"}},"
		     "\"allocated_addresses\":[\"0x%llx\",\"0x%llx\",\"0x%llx\"],"
		     "\"leaked_addresses\":[\"0x%llx\",\"0x%llx\"]}",
		(void *)f, (unsigned long long)p[0], (unsigned long long)p[1],
		(unsigned long long)p[2], (unsigned long long)p[0], (unsigned long long)p[2]);
	fclose(mem);
	fprintf(stderr, "%s\n", truth);
	fflush(stderr);
	/* No driver teardown, no destructors: exec replaces the image as it stands. */
	execl(second, "exec_second", "--first-truth", truth, (char *)NULL);
	fprintf(stderr, "exec_app: exec %s failed\n", second);
	return 1;
}
