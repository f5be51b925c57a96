// SPDX-License-Identifier: BSD-3-Clause
/*
 * fork_workers: a launcher that forks W workers before touching CUDA (as DataLoaders and
 * launchers do); worker i (comm "fork_worker") launches (i + 1) x N empty kernels,
 * synchronizes and exits at once. The parent then launches N of its own and waits for
 * them. Prints its own counts, the truth gpuprobe's daemon is checked against
 * (bench/gpu/daemon_cgroups.py):
 *   {"parent": N, "workers": [n0, n1, ...]}
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void worker_kern(int) {}
__global__ void parent_kern(void) {}

static void check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "fork_workers: %s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	int w = argc > 1 ? atoi(argv[1]) : 4, n = argc > 2 ? atoi(argv[2]) : 100;
	pid_t pids[64];

	if (w < 1 || w > 64 || n < 1) {
		fprintf(stderr, "usage: fork_workers [WORKERS 1-64] [N]\n");
		return 2;
	}
	for (int i = 0; i < w; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 1;
		if (pids[i] == 0) {
			prctl(PR_SET_NAME, "fork_worker", 0, 0, 0);
			for (int k = 0; k < (i + 1) * n; k++)
				worker_kern<<<1, 32>>>(k);
			check(cudaGetLastError(), "launch");
			check(cudaDeviceSynchronize(), "synchronize");
			exit(0);
		}
	}
	for (int k = 0; k < n; k++)
		parent_kern<<<1, 32>>>();
	check(cudaGetLastError(), "launch");
	check(cudaDeviceSynchronize(), "synchronize");
	for (int i = 0; i < w; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	printf("{\"parent\": %d, \"workers\": [", n);
	for (int i = 0; i < w; i++)
		printf("%s%d", i ? ", " : "", (i + 1) * n);
	printf("]}\n");
	return 0;
}
