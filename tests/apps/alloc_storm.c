/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alloc_storm - one process with --threads threads all inside cuMemAlloc_v2 at once (the
 * issue 30 audit: 11,000 threads of a nobody process blocked in the call emptied the
 * in-flight table every tenant shares). The stand-in holds each call on a pipe
 * (FAKECUDA_ALLOC_HOLD_FD); once every thread sleeps in that read the program prints
 * "READY <pid>", and when its stdin closes it lets them all return, frees what they got
 * and prints its ground truth.
 */
#define _GNU_SOURCE
#include <dirent.h>
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

static const char usage[] = "--threads N";

static CUcontext g_ctx;

static void *storm_thread(void *arg)
{
	CUdeviceptr *p = arg;

	CHECK(cuCtxSetCurrent(g_ctx));
	CHECK(cuMemAlloc_v2(p, 4096));
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

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long threads = 0;
	struct truth t = { .api = "alloc" };
	pthread_attr_t attr;
	CUdeviceptr *ptrs;
	pthread_t *tids;
	int hold[2], c;
	char fdnum[16], buf[256];

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		const char *name = optind > 0 ? argv[optind - 1] : "?";

		if (c == 't')
			threads = app_parse_u64(name, optarg);
		else
			app_usage_error(argv[0], usage, "unknown or incomplete option '%s'", name);
	}
	if (threads < 1 || threads > 20000)
		app_usage_error(argv[0], usage, "--threads must be 1..20000");
	if (pipe2(hold, O_CLOEXEC))
		return 1;
	snprintf(fdnum, sizeof(fdnum), "%d", hold[0]);
	setenv("FAKECUDA_ALLOC_HOLD_FD", fdnum, 1);
	g_ctx = app_cuda_init();
	tids = calloc(threads, sizeof(*tids));
	ptrs = calloc(threads, sizeof(*ptrs));
	if (!tids || !ptrs)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (unsigned long long i = 0; i < threads; i++)
		if (pthread_create(&tids[i], &attr, storm_thread, &ptrs[i])) {
			fprintf(stderr, "alloc_storm: thread %llu: cannot create\n", i);
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
	for (unsigned long long i = 0; i < threads; i++)
		CHECK(cuMemFree_v2(ptrs[i]));
	t.allocs = t.frees = threads;
	truth_print(stderr, &t, NULL);
	return 0;
}
