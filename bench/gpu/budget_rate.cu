// SPDX-License-Identifier: BSD-3-Clause
// budget_rate - a CUDA C launch loop whose every launch it counts itself, for the budget's
// coverage on a real GPU (bench/gpu/budget_cov.py): N empty-kernel launches per thread,
//   --sync-every K   a cudaStreamSynchronize after every K-th launch (0: only at the end)
//   --spin NS        NS ns of host work (a busy loop) after each launch
//   --rate R         paced: launch j of a thread is due at its start + j / R (0: unpaced)
//   --burst ON:OFF   ON ms of launching, OFF ms of sleep, in turn
//   --threads T      T threads launching at once, each on a stream of its own
// Prints one JSON line on stderr: pid, launches (all threads), seconds, and
// "launch_ns": the mean wall time of one launch iteration measured inside the process
// (a slowdown under gpuprobe is this figure against a plain run's).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void empty_kernel() {}

static unsigned long long now_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void ck(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "budget_rate: %s: %s\n", what, cudaGetErrorString(e));
		exit(1);
	}
}

static unsigned long long n_per = 200000, sync_every = 1024, spin_ns = 0, rate = 0, on_ms = 0, off_ms = 0;

struct thr {
	pthread_t t;
	unsigned long long launches, busy_ns;
};

static void *work(void *arg)
{
	thr *w = (thr *)arg;
	cudaStream_t s;
	unsigned long long t0, burst0;

	ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
	t0 = burst0 = now_ns();
	for (unsigned long long j = 0; j < n_per; j++) {
		if (rate) {
			unsigned long long due = t0 + j * 1000000000ull / rate;
			while (now_ns() < due)
				;
		}
		if (on_ms && now_ns() - burst0 >= on_ms * 1000000ull) {
			usleep((useconds_t)(off_ms * 1000));
			burst0 = now_ns();
		}
		empty_kernel<<<1, 1, 0, s>>>();
		w->launches++;
		if (spin_ns) {
			unsigned long long c = now_ns();
			while (now_ns() - c < spin_ns)
				;
		}
		if (sync_every && w->launches % sync_every == 0)
			ck(cudaStreamSynchronize(s), "sync");
	}
	ck(cudaStreamSynchronize(s), "sync");
	w->busy_ns = now_ns() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1;
	thr w[64] = {};
	unsigned long long t0, total = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc) n_per = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--sync-every") && i + 1 < argc) sync_every = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--spin") && i + 1 < argc) spin_ns = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--rate") && i + 1 < argc) rate = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--burst") && i + 1 < argc) { if (sscanf(argv[++i], "%llu:%llu", &on_ms, &off_ms) != 2) return 2; }
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
		else { fprintf(stderr, "budget_rate: unknown option %s\n", argv[i]); return 2; }
	}
	if (threads < 1 || threads > 64)
		return 2;
	ck(cudaFree(0), "init");
	for (int i = 0; i < 1000; i++)
		empty_kernel<<<1, 1>>>();
	ck(cudaDeviceSynchronize(), "warm-up");
	t0 = now_ns();
	for (int i = 0; i < threads; i++)
		pthread_create(&w[i].t, NULL, work, &w[i]);
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		total += w[i].launches;
	}
	double secs = (now_ns() - t0) / 1e9;
	// the warm-up's 1000 launches count too: gpuprobe sees them
	fprintf(stderr, "{\"pid\":%d,\"launches\":%llu,\"seconds\":%.6f,\"launch_ns\":%.1f}\n", (int)getpid(),
		total + 1000, secs, secs * 1e9 * threads / (double)total);
	return 0;
}
