/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The records of bpf/cuda_mem.bpf.c, the allocation source of --memleak and
 * --bandwidth-util (src/core/allocsrc.c): allocations, frees, stack copies, CPython code
 * objects; the memory entry points' argument layouts and kinds. Shared by the BPF program
 * and the loader: fixed-width fields only (bpf/gpuprobe.h says why).
 */
#ifndef GP_CUDA_MEM_H
#define GP_CUDA_MEM_H

#include "gpuprobe.h"

/* How a memory entry point passes its arguments (GP_MEM's layout in bpf/gp_apis.def):
 * which of them bpf/cuda_mem.bpf.c's mem_enter reads. */
enum gp_mem_layout {
	GP_LAYOUT_ALLOC = 0, /* (T **out, size_t size, ...) */
	GP_LAYOUT_PITCH,     /* (CUdeviceptr *out, size_t *pitch, size_t w, size_t h, ...) */
	GP_LAYOUT_FREE,      /* (addr_or_handle, ...) */
	GP_LAYOUT_MAP,       /* (CUdeviceptr ptr, size_t size, size_t off, handle, flags) */
	GP_LAYOUT_UNMAP,     /* (CUdeviceptr ptr, size_t size) */
	GP_LAYOUT_GALLOC,    /* cuGraphAddMemAllocNode (CUgraphNode *, CUgraph, const
			      * CUgraphNode *, size_t, CUDA_MEM_ALLOC_NODE_PARAMS *): params->dptr
			      * out, params->bytesize in */
	GP_LAYOUT_GFREE,     /* cuGraphAddMemFreeNode (CUgraphNode *, CUgraph, const
			      * CUgraphNode *, size_t, CUdeviceptr) */
};

/* A memory probe's attach cookie (GP_API_COOKIE, bpf/gpuprobe.h) */
#define GP_MEM_COOKIE(api, layout) GP_API_COOKIE(api, layout)

/* How --memleak takes the stack of an allocation (cuda_mem.bpf.c's stack_mode). */
enum gp_stack_mode {
	GP_STACKS_NONE = 0,
	GP_STACKS_FP = 1,   /* bpf_get_stack: the kernel's frame-pointer walk */
	GP_STACKS_COPY = 2, /* registers + stack copy (+ Python frames): a GP_EV_STACK record */
};

/* What an allocation holds; decides which free family releases it. */
enum gp_mem_kind {
	GP_KIND_DEVICE = 0,
	GP_KIND_MANAGED = 1,
	GP_KIND_HOST = 2,     /* pinned host memory */
	GP_KIND_PHYSICAL = 3, /* cuMemCreate handle (virtual memory management API) */
	GP_KIND_GRAPH = 4,    /* a CUDA graph's memory allocation node (cuGraphAddMemAllocNode) */
	GP_KIND__COUNT,
};

/* Counters in BPF .bss, indexed by this enum; the loader shows every one. */
enum gp_drop {
	GP_DROP_RINGBUF = 0,  /* bpf_ringbuf_reserve failed: event lost */
	GP_DROP_PENDING = 1,  /* the entry->return map was full: call not seen */
	GP_DROP_STACK = 2,    /* user stack could not be read (still counted) */
	GP_DROP_NORETURN = 3, /* a return probe fired without its entry record */
	GP_DROP_PROCS = 4,    /* the process table was full: its exit goes unseen */
	GP_DROP_SHARE = 5,    /* the caller's process or user held its share of the
			       * entry->return map: call not seen (shares.bpf.h) */
	GP_DROP_PYCODE = 6,   /* a code object's copy lost (ring full): sent again at its
			       * next sight; until then named only while the process lives */
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
	__s32 stack_err; /* <0: the stack could not be taken (bpf_get_stack's errno, or -ENOSPC:
			  * no room for the stack record) */
	__u32 nr_stack;  /* valid entries in stack[] (--stacks fp) */
	__u32 stack_rec; /* 1: a GP_EV_STACK record of this call (same tid and ts_ns) precedes */
	__u32 _pad;
	char comm[GP_COMM_LEN];
	__u64 stack[GP_MAX_STACK];
};

/* GP_EV_STACK: sent at the allocation's entry (the registers and stack of the caller are
 * those of the call), before the call's allocation record, on the same ring buffer; user
 * space joins the two by (tid, ts_ns). A call that fails sends no allocation record. */
struct gp_stack_event {
	__u32 type; /* GP_EV_STACK */
	__u32 pid;
	__u32 tid;
	__u32 _pad;
	__u64 ts_ns; /* the call's entry: its gp_alloc_event carries the same */
	struct gp_py_stack py;     /* status GP_PY_NOT_PYTHON when the process is not CPython */
	struct gp_stack_copy copy; /* user registers and the top of the user stack */
};

/* GP_EV_PYCODE and GP_EV_PYLINES: sent with the first stack record whose Python frames
 * reach a code object (bpf/pystack.bpf.h) */
struct gp_pycode_event {
	__u32 type; /* GP_EV_PYCODE */
	__u32 pid;
	__u32 img;
	__u32 _pad;
	struct gp_py_code c;
};

struct gp_pylines_event {
	__u32 type; /* GP_EV_PYLINES */
	__u32 pid;
	__u32 img;
	__u32 _pad;
	struct gp_py_lines l;
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

#endif /* GP_CUDA_MEM_H */
