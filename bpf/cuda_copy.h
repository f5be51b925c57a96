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

/* How a --bandwidth-util entry point passes a copy (GP_COPY's layout in bpf/gp_apis.def);
 * an _ASYNC layout adds a stream. NONE: a context, event record or host registration. */
enum gp_copy_layout {
	GP_CL_NONE,
	GP_CL_UNIFIED,       /* (dst, src, bytes): directions told from the pointers */
	GP_CL_UNIFIED_ASYNC, /* ... , stream) */
	GP_CL_HTOD,
	GP_CL_HTOD_ASYNC,
	GP_CL_DTOH,
	GP_CL_DTOH_ASYNC,
	GP_CL_DTOD,
	GP_CL_DTOD_ASYNC,
	GP_CL_PEER,          /* (dst, dstContext, src, srcContext, bytes) */
	GP_CL_PEER_ASYNC,    /* ... , stream) */
	GP_CL_D2,            /* (const CUDA_MEMCPY2D *) */
	GP_CL_D2_ASYNC,      /* ... , stream) */
	GP_CL_D3,            /* (const CUDA_MEMCPY3D *) */
	GP_CL_D3_ASYNC,
	GP_CL_PEER3D,        /* (const CUDA_MEMCPY3D_PEER *) */
	GP_CL_PEER3D_ASYNC,
};

/* The copy program's attach cookie: the id, and above it the copy layout and, for a call
 * that is no copy, the enum gp_aux_layout of its record (bpf/gpuprobe.h). */
#define GP_COPY_COOKIE(api, layout, aux) GP_API_COOKIE(api, (__u32)(layout) | (__u32)(aux) << 8)
#define GP_COPY_COOKIE_LAYOUT(cookie) (GP_COOKIE_LAYOUT(cookie) & 0xff)
#define GP_COPY_COOKIE_AUX(cookie) (GP_COOKIE_LAYOUT(cookie) >> 8)

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
