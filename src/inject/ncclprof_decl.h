/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NCCL's profiler-plugin interface, version 4 (ext-profiler/example/nccl/profiler_v4.h,
 * NCCL 2.26 and later; NCCL 2.28 looks for v5 first and falls back to v4), declared here
 * from the public header: what libgpuprobe_ncclprof.so exports as ncclProfiler_v4 and the
 * stand-in NCCL (tests/fakenccl) calls.
 */
#ifndef GP_NCCLPROF_DECL_H
#define GP_NCCLPROF_DECL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int gpt_nccl_result;
#define GPT_NCCL_SUCCESS 0

typedef void (*gpt_nccl_logger)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);

enum {
	GPT_PROF_GROUP = 1 << 0,
	GPT_PROF_COLL = 1 << 1,
	GPT_PROF_P2P = 1 << 2,
	GPT_PROF_PROXY_OP = 1 << 3,
	GPT_PROF_PROXY_STEP = 1 << 4,
	GPT_PROF_PROXY_CTRL = 1 << 5,
	GPT_PROF_KERNEL_CH = 1 << 6,
	GPT_PROF_NET_PLUGIN = 1 << 7,
};

#define GPT_PROF_KERNEL_CH_STOP 22 /* ncclProfilerKernelChStop */

typedef struct {
	uint8_t type; /* GPT_PROF_* */
	void *parentObj;
	int rank;
	union {
		struct {
			uint64_t seqNumber;
			const char *func;
			void const *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
		} p2p;
		struct {
			pid_t pid;
			uint8_t channelId;
			int peer;
			int nSteps;
			int chunkSize;
			int isSend;
		} proxyOp;
		struct {
			int step;
		} proxyStep;
		struct {
			uint8_t channelId;
			uint64_t pTimer; /* start, the GPU's globaltimer */
		} kernelCh;
		struct {
			int64_t id;
			void *data;
		} netPlugin;
	};
} gpt_prof_descr_v4;

typedef union {
	struct {
		size_t transSize;
	} proxyStep;
	struct {
		int appendedProxyOps;
	} proxyCtrl;
	struct {
		void *data;
	} netPlugin;
	struct {
		uint64_t pTimer; /* stop, the GPU's globaltimer */
	} kernelCh;
} gpt_prof_state_args_v4;

typedef struct {
	const char *name;
	gpt_nccl_result (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash,
				int nNodes, int nranks, int rank, gpt_nccl_logger logfn);
	gpt_nccl_result (*startEvent)(void *context, void **eHandle, gpt_prof_descr_v4 *eDescr);
	gpt_nccl_result (*stopEvent)(void *eHandle);
	gpt_nccl_result (*recordEventState)(void *eHandle, int eState, gpt_prof_state_args_v4 *eStateArgs);
	gpt_nccl_result (*finalize)(void *context);
} gpt_profiler_v4;

#endif
