// SPDX-License-Identifier: BSD-3-Clause
// hang_cuda: a collective held in flight on one GPU, for gpuprobe --nccl's hang figures
// (issue 34 item 3; tests/gpu/run_hang.sh). A single-rank NCCL communicator; first K
// AllReduce of 64 MiB, each waited for by polling cudaStreamQuery (as nccl-tests does);
// then a kernel that spins on a host-mapped flag is put on the stream, and an AllReduce
// behind it: the collective stays in flight while the program polls for HOLD seconds (a
// hang whose seconds grow), then the flag is set, the collective completes, and the program
// lingers LINGER seconds (a scrape after the recovery) before exiting.
//   hang_cuda [HOLD_S (default 8)] [LINGER_S (default 4)] [K (default 5)]
// Its account (one JSON line on stderr, CLOCK_MONOTONIC ns, the clock gpuprobe's records
// use): when the held AllReduce was called, when the flag was set, when a query first said
// the stream was done, and the NOT_READY polls.
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "hang_cuda:%d: %s: %s\n", __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define NC(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { \
	fprintf(stderr, "hang_cuda:%d: %s: %s\n", __LINE__, #x, ncclGetErrorString(r_)); exit(1); } } while (0)

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

__global__ void spin(volatile int *flag)
{
	while (*flag == 0)
		__nanosleep(1000);
}

static unsigned long long polls;

static unsigned long long wait_done(cudaStream_t s, double max_s)
{
	unsigned long long t0 = now_ns();
	cudaError_t e;

	while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
		polls++;
		if (max_s > 0 && (now_ns() - t0) / 1e9 >= max_s)
			return 0;
		usleep(1000);
	}
	CK(e);
	return now_ns();
}

int main(int argc, char **argv)
{
	double hold = argc > 1 ? atof(argv[1]) : 8, linger = argc > 2 ? atof(argv[2]) : 4;
	int k = argc > 3 ? atoi(argv[3]) : 5;
	size_t count = 16 << 20; // float32: 64 MiB
	ncclUniqueId id;
	ncclComm_t comm;
	cudaStream_t s;
	int *flag, *dflag;
	float *buf;
	unsigned long long called, released, done;

	CK(cudaSetDevice(0));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMalloc(&buf, count * sizeof(float)));
	CK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
	*flag = 0;
	CK(cudaHostGetDevicePointer(&dflag, flag, 0));
	NC(ncclGetUniqueId(&id));
	NC(ncclCommInitRank(&comm, 1, id, 0));
	for (int i = 0; i < k; i++) {
		NC(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s));
		wait_done(s, 0);
	}
	spin<<<1, 1, 0, s>>>(dflag);
	CK(cudaGetLastError());
	called = now_ns();
	NC(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s));
	fprintf(stderr, "HELD %llu\n", called);
	if (wait_done(s, hold)) {
		fprintf(stderr, "hang_cuda: the held collective completed before the flag was set\n");
		return 1;
	}
	released = now_ns();
	*(volatile int *)flag = 1;
	done = wait_done(s, 0);
	fprintf(stderr, "RELEASED %llu\n", released);
	usleep((useconds_t)(linger * 1e6));
	NC(ncclCommDestroy(comm));
	fprintf(stderr, "{\"api\":\"hang_cuda\",\"pid\":%d,\"k\":%d,\"hold_s\":%g,\"held_call_ns\":%llu,"
			"\"released_ns\":%llu,\"done_ns\":%llu,\"polls\":%llu}\n",
		(int)getpid(), k, hold, called, released, done, polls);
	return 0;
}
