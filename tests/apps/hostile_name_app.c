/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostile_name_app: a process whose names are terminal escapes (docs/security.md, "Names on
 * the terminal"). It names itself (prctl PR_SET_NAME, its comm) and one kernel with ESC,
 * CR, BEL, a C1 CSI (U+009B as UTF-8) and a byte that is not UTF-8, then launches that
 * kernel N times, copies BYTES host to device once and leaks one allocation of BYTES.
 * A tracer's text reports must show the names with those characters replaced, never the
 * bytes themselves. Ground truth on stderr (the last JSON line): allocations, leaks,
 * the launches and bytes, and the names as hex (the truth line itself stays printable).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include "common.h"

/* 15 bytes at most (the kernel's comm) */
#define COMM "a\x1b[31mr\r\a\xc2\x9bq\xff"
#define KERNEL "evil\x1b]0;pwn\a\x1b[2J\r\xc2\x9b\xfekern"

static const char usage[] = "[--n N] [--bytes B]";

static void hex(char *out, const char *s)
{
	for (; *s; s++, out += 2)
		sprintf(out, "%02x", (unsigned char)*s);
	*out = '\0';
}

int main(int argc, char **argv)
{
	unsigned long long n = 50, bytes = 1 << 20;
	struct truth t = { .api = "hostile_name" };
	char extra[512], comm_hex[64], kern_hex[128];
	CUmodule mod;
	CUfunction f;
	CUdeviceptr d;
	void *host;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
			bytes = app_parse_u64("--bytes", argv[++i]);
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (!n || !bytes || bytes > (1ull << 30))
		app_usage_error(argv[0], usage, "need N > 0 and 0 < B <= 1 GiB");
	if (prctl(PR_SET_NAME, COMM, 0, 0, 0)) {
		perror("prctl");
		return 1;
	}
	app_cuda_init();
	CHECK(cuModuleLoadData(&mod, KERNEL "\n"));
	CHECK(cuModuleGetFunction(&f, mod, KERNEL));
	for (unsigned long long i = 0; i < n; i++)
		CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	CHECK(cuCtxSynchronize());
	host = calloc(1, bytes);
	if (!host)
		return 1;
	CHECK(cuMemAlloc_v2(&d, bytes));
	CHECK(cuMemcpyHtoD_v2(d, host, bytes));
	CHECK(cuCtxSynchronize());
	free(host);
	app_expect_kernel(KERNEL, n, 0, 0);
	t.allocs = 1;
	t.leaks = 1;
	t.leaked_bytes = bytes;
	hex(comm_hex, COMM);
	hex(kern_hex, KERNEL);
	snprintf(extra, sizeof(extra), "\"launches\":%llu,\"h2d_bytes\":%llu,\"comm_hex\":\"%s\",\"kernel_hex\":\"%s\"",
		 n, bytes, comm_hex, kern_hex);
	truth_print(stderr, &t, extra);
	return 0;
}
