/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * call_storm - one process with --threads threads all inside one call at once (the issue
 * 30 audit: 11,000 threads of a nobody process blocked in cuMemAlloc_v2 emptied the
 * in-flight table every tenant shares; every other in-flight table can be filled so):
 *
 *   call_storm --threads N [--call alloc|copy|sync|launch|nccl] [--lib LIBNCCL]
 *
 * alloc (cuMemAlloc_v2), copy (a 64-byte cuMemcpyHtoD_v2), sync (cuCtxSynchronize), launch
 * (cuLaunchKernel): the stand-in holds each thread's call on a pipe (FAKECUDA_HOLD_FD,
 * FAKECUDA_HOLD). nccl: each thread makes one NCCL call (ncclGroupStart, ncclGroupEnd:
 * --nccl keeps a stack for a thread from its first call to its end) through --lib, opened
 * with dlopen, and then waits on the pipe itself.
 *
 * The program prints "INIT <pid>" once its own calls are made (the driver's set-up, the
 * module of the launches, the library), and waits for a line on stdin: the threads' calls
 * are then the only ones it makes while a test fills a table. Once every thread sleeps in
 * that read it prints "READY <pid>"; when its stdin closes it lets them all return and
 * prints its ground truth: "calls" made of the kind, and for alloc the allocations and
 * their frees.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static const char usage[] = "--threads N [--call alloc|copy|sync|launch|nccl] [--lib LIBNCCL]";

enum kind { ALLOC, COPY, SYNC, LAUNCH, NCCL };
static const char *const kind_name[] = { "alloc", "copy", "sync", "launch", "nccl" };
/* the stand-in's name of the call it holds (FAKECUDA_HOLD); NULL: the program holds */
static const char *const held_call[] = { "cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuCtxSynchronize",
					 "cuLaunchKernel", NULL };

static enum kind g_kind;
static CUdeviceptr g_dev;
static CUfunction g_fn;
static int g_hold = -1; /* the pipe's read end */
static int (*nccl_group_start)(void), (*nccl_group_end)(void);

static void *storm_thread(void *arg)
{
	static const char host[64];
	CUdeviceptr *p = arg;
	char c;

	/* the held call is the thread's only one (the stand-in's calls run on the primary
	 * context when none is current): a cuCtxSetCurrent first would take a place of its own
	 * in the tables that probe it (--bandwidth-util, --nccl) */
	switch (g_kind) {
	case ALLOC:
		CHECK(cuMemAlloc_v2(p, 4096));
		break;
	case COPY:
		CHECK(cuMemcpyHtoD_v2(g_dev, host, sizeof(host)));
		break;
	case SYNC:
		CHECK(cuCtxSynchronize());
		break;
	case LAUNCH:
		CHECK(cuLaunchKernel(g_fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
		break;
	case NCCL:
		if (nccl_group_start() || nccl_group_end()) {
			fprintf(stderr, "call_storm: an NCCL call failed\n");
			exit(1);
		}
		while (read(g_hold, &c, 1) < 0)
			;
		break;
	}
	return NULL;
}

/* Threads of this process asleep in read(2) (the held call): /proc/self/task/T/syscall
 * starts with the number of the system call a blocked thread is in. */
static unsigned long in_read(void)
{
	char path[300], buf[64];
	unsigned long n = 0;
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");

	while (d && (de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", de->d_name);
		f = fopen(path, "re");
		if (f && fgets(buf, sizeof(buf), f) && atol(buf) == SYS_read && buf[0] != '-')
			n++;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static void open_nccl(const char *lib)
{
	void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;

	if (!h || !(nccl_group_start = (int (*)(void))dlsym(h, "ncclGroupStart")) ||
	    !(nccl_group_end = (int (*)(void))dlsym(h, "ncclGroupEnd"))) {
		fprintf(stderr, "call_storm: --call nccl needs --lib, an NCCL library: %s\n", lib ? dlerror() : "none given");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "call", required_argument, NULL, 'c' },
		{ "lib", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long threads = 0;
	struct truth t = { .api = "call_storm" };
	const char *lib = NULL;
	pthread_attr_t attr;
	CUdeviceptr *ptrs;
	pthread_t *tids;
	int hold[2], c, k;
	char fdnum[16], buf[256], extra[64];

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		const char *name = optind > 0 ? argv[optind - 1] : "?";

		if (c == 't') {
			threads = app_parse_u64(name, optarg);
		} else if (c == 'c') {
			for (k = 0; k <= NCCL && strcmp(optarg, kind_name[k]); k++)
				;
			if (k > NCCL)
				app_usage_error(argv[0], usage, "unknown --call '%s'", optarg);
			g_kind = (enum kind)k;
		} else if (c == 'l') {
			lib = optarg;
		} else {
			app_usage_error(argv[0], usage, "unknown or incomplete option '%s'", name);
		}
	}
	if (threads < 1 || threads > 20000)
		app_usage_error(argv[0], usage, "--threads must be 1..20000");
	if (pipe2(hold, O_CLOEXEC))
		return 1;
	g_hold = hold[0];
	if (held_call[g_kind]) {
		snprintf(fdnum, sizeof(fdnum), "%d", hold[0]);
		setenv("FAKECUDA_HOLD_FD", fdnum, 1);
		setenv("FAKECUDA_HOLD", held_call[g_kind], 1);
	}
	app_cuda_init();
	if (g_kind == COPY)
		CHECK(cuMemAlloc_v2(&g_dev, 64));
	if (g_kind == LAUNCH) {
		static const char image[] = "storm_kernel\n";
		CUmodule mod;

		CHECK(cuModuleLoadData(&mod, image));
		CHECK(cuModuleGetFunction(&g_fn, mod, "storm_kernel"));
	}
	if (g_kind == NCCL)
		open_nccl(lib);
	printf("INIT %d\n", getpid());
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		return 1;
	tids = calloc(threads, sizeof(*tids));
	ptrs = calloc(threads, sizeof(*ptrs));
	if (!tids || !ptrs)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (unsigned long long i = 0; i < threads; i++)
		if (pthread_create(&tids[i], &attr, storm_thread, &ptrs[i])) {
			fprintf(stderr, "call_storm: thread %llu: cannot create\n", i);
			return 1;
		}
	while (in_read() < threads)
		usleep(10000);
	printf("READY %d\n", getpid());
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	close(hold[1]);
	for (unsigned long long i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	if (g_kind == ALLOC) {
		for (unsigned long long i = 0; i < threads; i++)
			CHECK(cuMemFree_v2(ptrs[i]));
		t.allocs = t.frees = threads;
	}
	snprintf(extra, sizeof(extra), "\"call\":\"%s\",\"calls\":%llu", kind_name[g_kind],
		 g_kind == NCCL ? 2 * threads : threads);
	truth_print(stderr, &t, extra);
	return 0;
}
