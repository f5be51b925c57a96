/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The boundary between the BPF programs and the loader. Shared by both sides, so only
 * fixed-width fields: no pointers, no `long`. Every record starts with its type.
 */
#ifndef GPUPROBE_H
#define GPUPROBE_H

#define GP_MAX_STACK 32
#define GP_COMM_LEN 16

enum gp_event_type {
	GP_EV_ALLOC = 1, /* a successful allocation: address, size, stack */
	GP_EV_FREE = 2,  /* a successful free of an address or handle */
	GP_EV_MAP = 3,   /* cuMemMap: a physical handle mapped at an address */
	GP_EV_UNMAP = 4, /* cuMemUnmap */
	GP_EV_EXIT = 5,  /* a traced process exited (its last thread) */
};

/*
 * Which driver entry point made a call. Shared by every mode; the loader maps an id to
 * its exported name (src/apis.c) and passes it to BPF as the attach cookie.
 */
enum gp_api {
	GP_API_NONE = 0,
	GP_API_cuMemAlloc_v2,
	GP_API_cuMemAllocPitch_v2,
	GP_API_cuMemAllocManaged,
	GP_API_cuMemAllocAsync,
	GP_API_cuMemAllocAsync_ptsz,
	GP_API_cuMemAllocFromPoolAsync,
	GP_API_cuMemAllocFromPoolAsync_ptsz,
	GP_API_cuMemAllocHost_v2,
	GP_API_cuMemHostAlloc,
	GP_API_cuMemCreate,
	GP_API_cuMemFree_v2,
	GP_API_cuMemFreeAsync,
	GP_API_cuMemFreeAsync_ptsz,
	GP_API_cuMemFreeHost,
	GP_API_cuMemRelease,
	GP_API_cuMemMap,
	GP_API_cuMemUnmap,
	GP_API__COUNT,
};

/* What an allocation holds; decides which free family releases it. */
enum gp_mem_kind {
	GP_KIND_DEVICE = 0,
	GP_KIND_MANAGED = 1,
	GP_KIND_HOST = 2,     /* pinned host memory */
	GP_KIND_PHYSICAL = 3, /* cuMemCreate handle (virtual memory management API) */
	GP_KIND__COUNT,
};

/* Counters in BPF .bss, indexed by this enum; the loader shows every one. */
enum gp_drop {
	GP_DROP_RINGBUF = 0,  /* bpf_ringbuf_reserve failed: event lost */
	GP_DROP_PENDING = 1,  /* the entry->return map was full: call not seen */
	GP_DROP_STACK = 2,    /* user stack could not be read (still counted) */
	GP_DROP_NORETURN = 3, /* a return probe fired without its entry record */
	GP_DROP_PROCS = 4,    /* the process table was full: its exit goes unseen */
	GP_DROP__COUNT,
};

struct gp_alloc_event {
	__u32 type; /* GP_EV_ALLOC */
	__u32 api;
	__u32 pid; /* tgid */
	__u32 tid;
	__u64 ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 addr;  /* device pointer, host pointer or physical handle */
	__u64 size;
	__s32 stack_err; /* <0: bpf_get_stack failed with this errno */
	__u32 nr_stack;  /* valid entries in stack[] */
	char comm[GP_COMM_LEN];
	__u64 stack[GP_MAX_STACK];
};

/* GP_EV_FREE, GP_EV_MAP and GP_EV_UNMAP */
struct gp_free_event {
	__u32 type;
	__u32 api;
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;
	__u64 addr;   /* freed address/handle; mapped address for MAP/UNMAP */
	__u64 size;   /* MAP/UNMAP: length */
	__u64 handle; /* MAP: the physical handle */
	char comm[GP_COMM_LEN];
};

struct gp_exit_event {
	__u32 type; /* GP_EV_EXIT */
	__u32 pid;
	__u64 ts_ns;
	char comm[GP_COMM_LEN];
};

#endif /* GPUPROBE_H */
