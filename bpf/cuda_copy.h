/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The records of bpf/cuda_copy.bpf.c (--bandwidth-util): one per copy. Its contexts,
 * synchronizations and event records (struct gp_aux_event) are shared with --nccl and stay
 * in bpf/gpuprobe.h.
 */
#ifndef GP_CUDA_COPY_H
#define GP_CUDA_COPY_H

#include "gpuprobe.h"

/* --bandwidth-util. Memory types as cuda.h's CUmemorytype; GP_MEMTYPE_UNIFIED means "tell
 * from the pointer", which user space does with the allocations it tracks. */
enum gp_memtype {
	GP_MEMTYPE_HOST = 1,
	GP_MEMTYPE_DEVICE = 2,
	GP_MEMTYPE_ARRAY = 3,
	GP_MEMTYPE_UNIFIED = 4,
};

struct gp_copy_event {
	__u32 type; /* GP_EV_COPY */
	__u32 api;
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;  /* entry */
	__u64 dur_ns; /* entry to return: the copy itself for synchronous copies */
	__u64 dst, src;
	__u64 bytes;
	__u64 stream;
	__u64 dst_ctx, src_ctx; /* cuMemcpyPeer* */
	__u32 dst_type, src_type; /* enum gp_memtype */
	__u32 async;
	__u32 peer;
	__u32 epoch; /* GP_EPOCH_*, or the window's number at entry */
	__u32 _pad;
	char comm[GP_COMM_LEN];
};

#endif /* GP_CUDA_COPY_H */
