/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_dlopen_app: loads libnccl at run time from a path given on the command line, as a
 * PyTorch worker does when it imports torch (the wheel's site-packages/nvidia/nccl/lib,
 * a folder no tracer knows in advance), then runs a one-rank job through it. For
 * gpuprobe's late library loading (src/core/libwatch.c, issue 14).
 *
 *   nccl_dlopen_app --lib PATH [--n K] [--wait] [--hold]
 *
 * It does not link libnccl; libcuda (the stand-in driver) is linked and set up first.
 * --wait: READY <pid> before the dlopen; --hold: after the dlopen, "LOADED <pid>" and a
 * wait for SIGUSR1 (a test lets the tracer find the library first); without it the calls
 * follow at once (then the time the tracer took decides what it sees).
 * The calls: ncclGetUniqueId, ncclCommInitRank (1 rank), K x ncclAllReduce float32 Sum
 * 4096 on a stream, cuStreamSynchronize, ncclCommDestroy.
 * Ground truth (last JSON line on stderr): the library path, the communicator's shape and
 * the collectives, counted after the dlopen.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "fakenccl.h"

static const char usage[] = "--lib PATH [--n K] [--wait] [--hold]";

typedef ncclResult_t (*getid_fn)(ncclUniqueId *);
typedef ncclResult_t (*init_fn)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
				     cudaStream_t);
typedef ncclResult_t (*destroy_fn)(ncclComm_t);

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "nccl_dlopen_app: %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

#define NCC(call)                                                                   \
	do {                                                                        \
		ncclResult_t rc_ = (call);                                          \
		if (rc_ != ncclSuccess) {                                           \
			fprintf(stderr, "nccl_dlopen_app: %s failed: %d\n", #call, (int)rc_); \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

int main(int argc, char **argv)
{
	unsigned long long k = 5, count = 4096;
	int wait = 0, hold = 0;
	const char *lib = NULL;
	char banner[64];
	ncclComm_t comm;
	ncclUniqueId id;
	CUdeviceptr buf;
	CUstream s;
	void *h;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--lib") && i + 1 < argc)
			lib = argv[++i];
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			k = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--hold"))
			hold = 1;
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (!lib || k < 1 || k > 100000)
		app_usage_error(argv[0], usage, "need --lib PATH and 1 <= K <= 100000");
	app_block_signal();
	app_cuda_init();
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc_v2(&buf, count * 4));
	if (wait)
		app_wait_ready();
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "nccl_dlopen_app: dlopen %s: %s\n", lib, dlerror());
		return 1;
	}
	if (hold) {
		snprintf(banner, sizeof(banner), "LOADED %ld", (long)getpid());
		app_wait_for_signal(banner);
	}
	NCC(((getid_fn)sym(h, "ncclGetUniqueId"))(&id));
	NCC(((init_fn)sym(h, "ncclCommInitRank"))(&comm, 1, id, 0));
	for (unsigned long long i = 0; i < k; i++)
		NCC(((allreduce_fn)sym(h, "ncclAllReduce"))((void *)(uintptr_t)buf, (void *)(uintptr_t)buf, count,
							   ncclFloat32, ncclSum, comm, s));
	CHECK(cuStreamSynchronize(s));
	NCC(((destroy_fn)sym(h, "ncclCommDestroy"))(comm));
	fprintf(stderr, "{\"pid\":%d,\"api\":\"nccl_dlopen\",\"lib\":", (int)getpid());
	app_json_str(stderr, lib);
	fprintf(stderr, ",\"comms\":[{\"nranks\":1,\"rank\":0,\"device\":0,\"made_by\":\"ncclCommInitRank\","
			"\"collectives\":[{\"op\":\"AllReduce\",\"call\":\"ncclAllReduce\",\"dtype\":\"float32\","
			"\"calls\":%llu,\"bytes\":%llu}],\"p2p\":[]}]}\n",
		k, k * count * 4);
	return 0;
}
