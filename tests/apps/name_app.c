/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * name_app: kernel handles made before a tracer attaches, launched after, with
 * launches per handle known by construction -- the mid-run naming path of
 * issue 13.  The stand-in driver lays handles out as the real one does (the
 * name pointer at +8; see tests/fakecuda/fakecuda.c), so the names are in the
 * process's memory for a tracer that learns where to look.
 *
 * Handles (N = --n; handle i is launched (i + 1) * N times, each with its own
 * launch call, so a swapped name shows as a wrong count):
 *   module A  cuModuleGetFunction: vecAdd, saxpy, and one name of more than
 *             255 characters (nested namespaces)
 *   module B  cuModuleGetFunction: a cutlass-style template kernel, a plain C name
 *   module E  cuModuleEnumerateFunctions only (no call names them): enum_one, enum_two
 *   library   cuLibraryGetKernel: lib_kernel_x (launched as the CUkernel) and
 *             lib_kernel_ex (CUkernel, cuLaunchKernelEx); lib_kernel(float*) through
 *             cuKernelGetFunction's CUfunction
 * With --wait all of those are made before READY; after it one more module
 * (late_kern) is loaded, its handle made and launched N times: a handle a tracer
 * sees named.  Bad input: a handle whose module was unloaded before READY
 * (3 launches, all fail in the driver), and with --forge a fake handle in the
 * program's own memory that looks like a CUfunction whose +8 points to
 * "forged_name" (5 launches, all fail): a tracer must not name either.
 * With --huge one more module (H) holds a kernel of a 3000-character name, enumerated only
 * (huge_kernel_xx...x): longer than a tracer copies at a handle's first sight.
 * With --steady no module is loaded and no handle made after READY (a job at steady
 * state: a tracer attached then sees no naming call at all); with --rounds R (implies
 * --wait) the program waits for SIGUSR1 R times, and after each launches every handle
 * again and prints that round's ground truth (the counts are per round).
 * With --map-also LIB the program also loads LIB (dlopen, its symbols kept local) and never
 * calls it: a process that maps two libcuda files and uses one (a container's CUDA compat
 * libcuda beside the driver's).
 * The ground truth is the last JSON line on stderr.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"

static const char usage[] = "[--n N] [--wait] [--forge] [--steady] [--rounds R] [--huge] [--map-also LIB]";

enum call { L_KERNEL, L_KERNEL_PTSZ, L_EX, L_EX_PTSZ, L_COOP };
static const char *const call_names[] = { "cuLaunchKernel", "cuLaunchKernel_ptsz",
					  "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
					  "cuLaunchCooperativeKernel" };

#define HUGE_NAME 3000

struct handle {
	const char *mangled;
	char name[HUGE_NAME + 1];	/* demangled, as c++filt prints it */
	const char *via;
	void *h;	/* CUfunction or CUkernel */
	int is_kernel;
	int seen_created;	/* its creation happened while a tracer could watch */
	enum call call;
	unsigned long long launches;
};

static struct handle hs[16];
static int nh;
static CUstream stream;

/* "ns0::ns1::...::kernel(float*, int)" of more than 255 characters, and its mangled form. */
static char long_mangled[600], long_name[600];
static char huge_name[HUGE_NAME + 1], huge_image[HUGE_NAME + 2];

static void make_long_name(void)
{
	static const char *const parts[] = {
		"gpuprobe_test_namespace_with_a_rather_long_name_number_one",
		"second_namespace_level_that_makes_kernel_names_grow_long",
		"third_namespace_level_as_template_heavy_libraries_have",
		"fourth_namespace_level_so_the_name_passes_255_characters",
		"long_named_kernel_for_the_trace_output_test",
	};
	size_t m = 0, d = 0;

	m += (size_t)snprintf(long_mangled + m, sizeof(long_mangled) - m, "_ZN");
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		m += (size_t)snprintf(long_mangled + m, sizeof(long_mangled) - m, "%zu%s",
				      strlen(parts[i]), parts[i]);
		d += (size_t)snprintf(long_name + d, sizeof(long_name) - d, "%s%s", i ? "::" : "",
				      parts[i]);
	}
	snprintf(long_mangled + m, sizeof(long_mangled) - m, "EPfi");
	snprintf(long_name + d, sizeof(long_name) - d, "(float*, int)");
}

static struct handle *add(const char *mangled, const char *name, const char *via, void *h,
			  int is_kernel, int seen, enum call call)
{
	struct handle *x = &hs[nh];

	x->mangled = mangled;
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->via = via;
	x->h = h;
	x->is_kernel = is_kernel;
	x->seen_created = seen;
	x->call = call;
	nh++;
	return x;
}

static void launch(struct handle *x)
{
	CUfunction f = (CUfunction)x->h;
	CUlaunchConfig cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 128;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = stream;
	switch (x->call) {
	case L_KERNEL:
		CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, stream, NULL, NULL));
		break;
	case L_KERNEL_PTSZ:
		CHECK(cuLaunchKernel_ptsz(f, 1, 1, 1, 128, 1, 1, 0, stream, NULL, NULL));
		break;
	case L_EX:
		CHECK(cuLaunchKernelEx(&cfg, f, NULL, NULL));
		break;
	case L_EX_PTSZ:
		CHECK(cuLaunchKernelEx_ptsz(&cfg, f, NULL, NULL));
		break;
	case L_COOP:
		CHECK(cuLaunchCooperativeKernel(f, 1, 1, 1, 128, 1, 1, 0, stream, NULL));
		break;
	}
	x->launches++;
}

int main(int argc, char **argv)
{
	unsigned long long n = 10, stale_failed = 0, forged_failed = 0;
	int wait = 0, forge = 0, steady = 0, huge = 0, seen;
	unsigned long long rounds = 1;
	CUmodule ma, mb, mc, md, me;
	CUlibrary lib;
	CUfunction f, fe[2], stale;
	CUkernel k1, k2, k3;
	char image[1024];
	/* Looks like a CUfunction (tag at +0, name pointer at +8) but the driver never made it. */
	static struct {
		unsigned long long tag;
		const char *name;
		unsigned long long pad[6];
	} forged = { 0x0000000100000001ull, "forged_name", { 0 } };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--forge"))
			forge = 1;
		else if (!strcmp(argv[i], "--steady"))
			steady = 1;
		else if (!strcmp(argv[i], "--huge"))
			huge = 1;
		else if (!strcmp(argv[i], "--map-also") && i + 1 < argc) {
			if (!dlopen(argv[++i], RTLD_NOW | RTLD_LOCAL))
				app_usage_error(argv[0], usage, "cannot load %s: %s", argv[i], dlerror());
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = app_parse_u64("--rounds", argv[++i]);
			wait = 1;
		}
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (n < 1 || n > 1000000)
		app_usage_error(argv[0], usage, "need 1 <= N <= 1000000");
	if (rounds < 1 || rounds > 100 || (rounds > 1 && !steady))
		app_usage_error(argv[0], usage, "need 1 <= R <= 100, and --steady with R > 1");

	app_block_signal();
	app_cuda_init();
	CHECK(cuStreamCreate(&stream, 0));
	make_long_name();
	seen = !wait;

	snprintf(image, sizeof(image), "_Z6vecAddPKfS0_Pfi\n_Z5saxpyfPKfPf\n%s\n", long_mangled);
	CHECK(cuModuleLoadData(&ma, image));
	CHECK(cuModuleGetFunction(&f, ma, "_Z6vecAddPKfS0_Pfi"));
	add("_Z6vecAddPKfS0_Pfi", "vecAdd(float const*, float const*, float*, int)",
	    "cuModuleGetFunction", f, 0, seen, L_KERNEL);
	CHECK(cuModuleGetFunction(&f, ma, "_Z5saxpyfPKfPf"));
	add("_Z5saxpyfPKfPf", "saxpy(float, float const*, float*)", "cuModuleGetFunction", f, 0,
	    seen, L_KERNEL_PTSZ);
	CHECK(cuModuleGetFunction(&f, ma, long_mangled));
	add(long_mangled, long_name, "cuModuleGetFunction", f, 0, seen, L_KERNEL);

	CHECK(cuModuleLoadData(&mb, "_ZN7cutlass6KernelINS_4gemm6kernel4GemmEEEvNT_6ParamsE\n"
				    "plain_c_kernel\n"));
	CHECK(cuModuleGetFunction(&f, mb, "_ZN7cutlass6KernelINS_4gemm6kernel4GemmEEEvNT_6ParamsE"));
	add("_ZN7cutlass6KernelINS_4gemm6kernel4GemmEEEvNT_6ParamsE",
	    "void cutlass::Kernel<cutlass::gemm::kernel::Gemm>(cutlass::gemm::kernel::Gemm::Params)",
	    "cuModuleGetFunction", f, 0, seen, L_EX);
	CHECK(cuModuleGetFunction(&f, mb, "plain_c_kernel"));
	add("plain_c_kernel", "plain_c_kernel", "cuModuleGetFunction", f, 0, seen, L_COOP);

	CHECK(cuModuleLoadData(&me, "_Z8enum_onev\n_Z8enum_twov\n"));
	CHECK(cuModuleEnumerateFunctions(fe, 2, me));
	add("_Z8enum_onev", "enum_one()", "cuModuleEnumerateFunctions", fe[0], 0, seen, L_KERNEL);
	add("_Z8enum_twov", "enum_two()", "cuModuleEnumerateFunctions", fe[1], 0, seen, L_EX_PTSZ);

	if (huge) {
		CUmodule mh;
		CUfunction fh;

		memset(huge_name, 'x', HUGE_NAME);
		memcpy(huge_name, "huge_kernel_", 12);
		huge_name[HUGE_NAME] = '\0';
		snprintf(huge_image, sizeof(huge_image), "%s\n", huge_name);
		CHECK(cuModuleLoadData(&mh, huge_image));
		CHECK(cuModuleEnumerateFunctions(&fh, 1, mh));
		add(huge_name, huge_name, "cuModuleEnumerateFunctions", fh, 0, seen, L_KERNEL);
	}

	CHECK(cuLibraryLoadData(&lib, "lib_kernel_x\n_Z10lib_kernelPf\nlib_kernel_ex\n", NULL, NULL,
				0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&k1, lib, "lib_kernel_x"));
	add("lib_kernel_x", "lib_kernel_x", "cuLibraryGetKernel", k1, 1, seen, L_KERNEL);
	CHECK(cuLibraryGetKernel(&k2, lib, "_Z10lib_kernelPf"));
	CHECK(cuKernelGetFunction(&f, k2));
	add("_Z10lib_kernelPf", "lib_kernel(float*)", "cuKernelGetFunction", f, 0, seen, L_KERNEL);
	CHECK(cuLibraryGetKernel(&k3, lib, "lib_kernel_ex"));
	add("lib_kernel_ex", "lib_kernel_ex", "cuLibraryGetKernel", k3, 1, seen, L_EX);

	/* A handle whose module is gone before the tracer comes. */
	CHECK(cuModuleLoadData(&md, "_Z11stale_kernv\n"));
	CHECK(cuModuleGetFunction(&stale, md, "_Z11stale_kernv"));
	CHECK(cuModuleUnload(md));

	if (steady) { /* made now, named before any tracer comes */
		CHECK(cuModuleLoadData(&mc, "_Z9late_kernv\n"));
		CHECK(cuModuleGetFunction(&f, mc, "_Z9late_kernv"));
		add("_Z9late_kernv", "late_kern()", "cuModuleGetFunction", f, 0, seen, L_KERNEL);
	}
	for (unsigned long long round = 0; round < rounds; round++) {
	stale_failed = forged_failed = 0;
	for (int i = 0; i < nh; i++)
		hs[i].launches = 0;
	if (wait)
		app_wait_ready();

	if (!steady) {
		CHECK(cuModuleLoadData(&mc, "_Z9late_kernv\n"));
		CHECK(cuModuleGetFunction(&f, mc, "_Z9late_kernv"));
		add("_Z9late_kernv", "late_kern()", "cuModuleGetFunction", f, 0, 1, L_KERNEL);
	}

	for (int i = 0; i < nh; i++) {
		unsigned long long want = i == nh - 1 ? n : (unsigned long long)(i + 1) * n;

		for (unsigned long long j = 0; j < want; j++)
			launch(&hs[i]);
	}
	for (int i = 0; i < 3; i++)
		if (cuLaunchKernel(stale, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL) ==
		    CUDA_ERROR_INVALID_HANDLE)
			stale_failed++;
	if (forge)
		for (int i = 0; i < 5; i++)
			if (cuLaunchKernel((CUfunction)(void *)&forged, 1, 1, 1, 1, 1, 1, 0, stream,
					   NULL, NULL) == CUDA_ERROR_INVALID_HANDLE)
				forged_failed++;
	CHECK(cuStreamSynchronize(stream));
	for (int i = 0; i < nh; i++)
		app_expect_kernel(hs[i].mangled, hs[i].launches * (round + 1), 0, 0);

	fprintf(stderr, "{\"pid\":%d,\"api\":\"names\",\"n\":%llu,\"wait\":%s,\"handles\":[",
		(int)getpid(), n, wait ? "true" : "false");
	for (int i = 0; i < nh; i++) {
		fprintf(stderr, "%s{\"name\":", i ? "," : "");
		app_json_str(stderr, hs[i].name);
		fprintf(stderr, ",\"mangled\":");
		app_json_str(stderr, hs[i].mangled);
		fprintf(stderr, ",\"kind\":\"%s\",\"via\":\"%s\",\"handle\":\"%p\","
				"\"seen_created\":%s,\"launch_call\":\"%s\",\"launches\":%llu}",
			hs[i].is_kernel ? "kernel" : "function", hs[i].via, hs[i].h,
			hs[i].seen_created ? "true" : "false", call_names[hs[i].call],
			hs[i].launches);
	}
	fprintf(stderr, "],\"kernels\":{");
	for (int i = 0; i < nh; i++) {
		fprintf(stderr, "%s", i ? "," : "");
		app_json_str(stderr, hs[i].name);
		fprintf(stderr, ":{\"launches\":%llu}", hs[i].launches);
	}
	fprintf(stderr, "},\"launches\":");
	{
		unsigned long long total = 0;

		for (int i = 0; i < nh; i++)
			total += hs[i].launches;
		fprintf(stderr, "%llu", total);
	}
	fprintf(stderr, ",\"longest_name_chars\":%zu,\"stale\":{\"name\":\"stale_kern()\","
			"\"handle\":\"%p\",\"failed_launches\":%llu}",
		strlen(long_name), (void *)stale, stale_failed);
	if (forge)
		fprintf(stderr, ",\"forged\":{\"handle\":\"%p\",\"name_at_8\":\"forged_name\","
				"\"failed_launches\":%llu}",
			(void *)&forged, forged_failed);
	fprintf(stderr, ",\"failed_launches\":%llu,\"round\":%llu}\n", stale_failed + forged_failed, round + 1);
	}
	return 0;
}
