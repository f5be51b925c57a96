// SPDX-License-Identifier: BSD-3-Clause
// launch_loop - a launch-bound CUDA C loop for bench/gpu/run.sh: N empty kernels (default
// 200 000) into the default stream, in ROUNDS timed rounds (clock_gettime around the
// launches and one cudaDeviceSynchronize per round), after a warm-up.
// Prints "round R ns_per_call X" per round and
//        "result launch ns_per_call MEDIAN calls N threads 1 seconds S"
// (the format of bench/workload.c, so that one parser reads both).
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <algorithm>
#include <vector>

__global__ void empty_kernel() {}

static double now_s()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "launch_loop: %s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	long per = n / rounds;
	std::vector<double> ns;
	double total = 0;

	if (n < 1 || rounds < 1 || per < 1) {
		fprintf(stderr, "usage: launch_loop [N] [ROUNDS]\n");
		return 2;
	}
	check(cudaFree(0), "cudaFree(0)");
	for (int i = 0; i < 2000; i++)
		empty_kernel<<<1, 1>>>();
	check(cudaDeviceSynchronize(), "warm-up");
	for (int r = 0; r < rounds; r++) {
		double t0 = now_s(), t1;

		for (long i = 0; i < per; i++)
			empty_kernel<<<1, 1>>>();
		check(cudaGetLastError(), "launch");
		check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
		t1 = now_s();
		ns.push_back((t1 - t0) * 1e9 / per);
		total += t1 - t0;
		printf("round %d ns_per_call %.2f\n", r, ns.back());
	}
	std::sort(ns.begin(), ns.end());
	double med = rounds % 2 ? ns[rounds / 2] : (ns[rounds / 2 - 1] + ns[rounds / 2]) / 2;
	printf("result launch ns_per_call %.2f calls %ld threads 1 seconds %.4f\n", med, per * rounds, total);
	return 0;
}
