/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fork_app: a process that forks children which do CUDA work, counts known
 * per process, for gpuprobe's process trees (issue 13).
 *
 * As launchers and DataLoaders do, it forks before touching CUDA (a child
 * forked after cuInit cannot use the driver).  Child i (C = --children):
 * renames itself "fork_child" (so --comm can pick the children), then
 * loads a module, launches child_kern(int) (i + 1) * N times, makes i + 2
 * allocations of (i + 1) x 64 KiB and frees the first: i + 1 leaks.  The
 * parent then does its own work: parent_kern() 5 x N launches, 2 allocations
 * of 128 KiB, 1 freed.  With --late-child one more child is forked after the
 * parent's cuInit: its allocation fails (CUDA_ERROR_NOT_INITIALIZED) and
 * is its only CUDA call.
 *
 * --wait: the parent says READY before it forks (so every child is a
 * descendant born after a tracer attached, for --tree).  --wait-children:
 * each child says READY (its own pid) before its CUDA work, so a test can
 * attach to running children with -p.  --reap-after MS: once every child has
 * exited, the parent prints "EXITED" on stdout and leaves them zombies MS ms
 * before it reaps them.  Each process prints its own truth
 * line; the parent's, last, holds all of them:
 *   {"pid":P,"api":"fork_tree","processes":[{parent},{child},...]}
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"

static const char usage[] = "[--children C] [--n N] [--wait] [--wait-children] [--late-child] [--reap-after MS]";

#define LINE 2048	/* one truth line; under PIPE_BUF, so writes do not interleave */

/* The CUDA work of one process; its truth (members) goes to buf. */
static void work(const char *comm, const char *mangled, const char *name,
		 unsigned long long launches, int nalloc, unsigned long long size,
		 char *buf, size_t cap)
{
	struct truth t = { .api = "fork_tree" };
	CUdeviceptr p[16];
	CUmodule mod;
	CUfunction f;
	char image[64];
	FILE *mem;

	app_cuda_init();
	snprintf(image, sizeof(image), "%s\n", mangled);
	CHECK(cuModuleLoadData(&mod, image));
	CHECK(cuModuleGetFunction(&f, mod, mangled));
	for (unsigned long long i = 0; i < launches; i++)
		CHECK(cuLaunchKernel(f, 4, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL));
	for (int i = 0; i < nalloc; i++)
		CHECK(cuMemAlloc_v2(&p[i], size));
	CHECK(cuMemFree_v2(p[0]));
	CHECK(cuCtxSynchronize());
	app_expect_kernel(mangled, launches, 0, 0);
	t.allocs = (unsigned long long)nalloc;
	t.frees = 1;
	t.leaks = (unsigned long long)nalloc - 1;
	t.leaked_bytes = t.leaks * size;
	mem = fmemopen(buf, cap, "w");
	if (!mem)
		exit(1);
	fputc('{', mem);
	truth_fields(mem, &t, 1);
	fprintf(mem, ",\"comm\":\"%s\",\"ppid\":%d,\"launches\":%llu,\"kernels\":{", comm,
		(int)getppid(), launches);
	app_json_str(mem, name);
	fprintf(mem, ":{\"launches\":%llu}},\"leaked_addresses\":[", launches);
	for (int i = 1; i < nalloc; i++)
		fprintf(mem, "%s\"0x%llx\"", i > 1 ? "," : "", (unsigned long long)p[i]);
	fputs("]}", mem);
	fclose(mem);
}

int main(int argc, char **argv)
{
	unsigned long long nchild = 2, n = 10, reap_ms = 0;
	int wait = 0, wait_children = 0, late = 0, fds[2];
	pid_t pids[17];
	char mine[LINE], line[LINE * 17], *pos;
	size_t got = 0;
	ssize_t r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--children") && i + 1 < argc)
			nchild = app_parse_u64("--children", argv[++i]);
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--wait-children"))
			wait_children = 1;
		else if (!strcmp(argv[i], "--late-child"))
			late = 1;
		else if (!strcmp(argv[i], "--reap-after") && i + 1 < argc)
			reap_ms = app_parse_u64("--reap-after", argv[++i]);
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (nchild < 1 || nchild > 15 || n < 1 || n > 100000)
		app_usage_error(argv[0], usage, "need 1 <= C <= 15, 1 <= N <= 100000");

	app_block_signal();	/* before any fork: children inherit it */
	if (wait)
		app_wait_ready();
	if (pipe(fds))
		return 1;
	for (unsigned long long i = 0; i < nchild; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 1;
		if (pids[i] == 0) {
			close(fds[0]);
			prctl(PR_SET_NAME, "fork_child", 0, 0, 0);
			if (wait_children)
				app_wait_ready();
			work("fork_child", "_Z10child_kerni", "child_kern(int)", (i + 1) * n,
			     (int)i + 2, (i + 1) * 65536, mine, sizeof(mine));
			fprintf(stderr, "%s\n", mine);
			strcat(mine, "\n");
			if (write(fds[1], mine, strlen(mine)) != (ssize_t)strlen(mine))
				_exit(1);
			exit(0);	/* through the driver's exit path, as a real one */
		}
	}
	work("fork_app", "_Z11parent_kernv", "parent_kern()", 5 * n, 2, 131072, mine,
	     sizeof(mine));
	if (late) {
		pid_t lp = fork();

		if (lp == 0) {
			struct truth t = { .api = "fork_tree", .failed_calls = 1 };
			CUdeviceptr p;
			FILE *mem;

			close(fds[0]);
			prctl(PR_SET_NAME, "fork_late", 0, 0, 0);
			CHECK_FAILS(cuMemAlloc_v2(&p, 4096), CUDA_ERROR_NOT_INITIALIZED);
			mem = fmemopen(line, sizeof(line), "w");
			if (!mem)
				_exit(1);
			fputc('{', mem);
			truth_fields(mem, &t, 1);
			fprintf(mem, ",\"comm\":\"fork_late\",\"ppid\":%d,\"launches\":0,"
				     "\"kernels\":{},\"forked_after_cuInit\":true}\n", (int)getppid());
			fclose(mem);
			if (write(fds[1], line, strlen(line)) != (ssize_t)strlen(line))
				_exit(1);
			_exit(0);
		}
		pids[nchild++] = lp;
	}
	close(fds[1]);
	while (got < sizeof(line) - 1 && (r = read(fds[0], line + got, sizeof(line) - 1 - got)) > 0)
		got += (size_t)r;
	line[got] = '\0';
	if (reap_ms) { /* every child's end of the pipe is closed: each has exited */
		printf("EXITED\n");
		fflush(stdout);
		usleep((useconds_t)(reap_ms * 1000));
	}
	for (unsigned long long i = 0; i < nchild; i++) {
		int st = -1;

		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "fork_app: child %d failed (status %d)\n", (int)pids[i], st);
			return 1;
		}
	}
	fprintf(stderr, "{\"pid\":%d,\"api\":\"fork_tree\",\"children\":%llu,\"processes\":[%s",
		(int)getpid(), nchild, mine);
	for (pos = strtok(line, "\n"); pos; pos = strtok(NULL, "\n"))
		fprintf(stderr, ",%s", pos);
	fprintf(stderr, "]}\n");
	return 0;
}
