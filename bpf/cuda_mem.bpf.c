/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory probes for --memleak: every allocation family of the CUDA driver API and its
 * free. Entry probes stash the arguments (and the user stack, which is only meaningful
 * at entry) per thread; return probes read the CUresult and the out-pointer, and only a
 * successful call becomes an event. The outstanding-allocation table lives in the loader:
 * allocations are rare next to launches, and user space can symbolize and age them.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "gp_arch.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader between open and load. */
const volatile bool capture_stacks = true;

enum shape {
	SHAPE_ALLOC = 1, /* (T **out, size_t size, ...) */
	SHAPE_PITCH,     /* (CUdeviceptr *out, size_t *pitch, size_t w, size_t h, ...) */
	SHAPE_FREE,      /* (addr_or_handle, ...) */
	SHAPE_MAP,       /* (CUdeviceptr ptr, size_t size, size_t off, handle, flags) */
	SHAPE_UNMAP,     /* (CUdeviceptr ptr, size_t size) */
};

struct pending {
	__u32 shape;
	__u32 api;
	__u64 ts_ns;
	__u64 out_ptr;   /* user address of the out-parameter */
	__u64 pitch_ptr; /* SHAPE_PITCH: user address of *pPitch */
	__u64 arg_addr;  /* FREE/MAP/UNMAP: the address or handle */
	__u64 size;      /* ALLOC: bytes; PITCH: height; MAP/UNMAP: length */
	__u64 handle;    /* MAP */
	__s32 stack_err;
	__u32 nr_stack;
	__u64 stack[GP_MAX_STACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* resized by the loader (--ringbuf-size) */
} events SEC(".maps");

/* In-flight calls, by thread: a call's entry and return run on the same thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240); /* --max-pending */
	__type(key, __u64);
	__type(value, struct pending);
} pending SEC(".maps");

/* Processes that made a tracked call, so that their exit (and only theirs) is reported. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* --max-procs */
	__type(key, __u32);
	__type(value, __u8);
} procs SEC(".maps");

/* A struct pending is too big for the 512-byte BPF stack: build it here. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pending);
} scratch SEC(".maps");

__u64 drops[GP_DROP__COUNT];
__u64 ok_calls[GP_API__COUNT];

static __always_inline void count_drop(int what)
{
	__sync_fetch_and_add(&drops[what], 1);
}

static __always_inline int enter(struct pt_regs *ctx, __u32 shape, __u64 a0, __u64 a1,
				 __u64 a3)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 zero = 0;
	struct pending *p;
	long n;

	p = bpf_map_lookup_elem(&scratch, &zero);
	if (!p)
		return 0;
	p->shape = shape;
	p->api = (__u32)bpf_get_attach_cookie(ctx);
	p->ts_ns = bpf_ktime_get_ns();
	p->out_ptr = 0;
	p->pitch_ptr = 0;
	p->arg_addr = 0;
	p->size = 0;
	p->handle = 0;
	p->stack_err = 0;
	p->nr_stack = 0;
	switch (shape) {
	case SHAPE_ALLOC:
		p->out_ptr = a0;
		p->size = a1;
		break;
	case SHAPE_PITCH:
		p->out_ptr = a0;
		p->pitch_ptr = a1;
		p->size = a3; /* height */
		break;
	case SHAPE_MAP:
		p->handle = a3;
		/* fall through */
	default:
		p->arg_addr = a0;
		p->size = a1;
		break;
	}
	if (capture_stacks && (shape == SHAPE_ALLOC || shape == SHAPE_PITCH)) {
		n = gp_entry_user_stack(ctx, p->stack);
		if (n < 0) {
			p->stack_err = (__s32)n;
			count_drop(GP_DROP_STACK);
		} else {
			p->nr_stack = (__u32)n;
		}
	}
	if (bpf_map_update_elem(&pending, &id, p, BPF_ANY))
		count_drop(GP_DROP_PENDING);
	return 0;
}

static __always_inline void remember_proc(__u32 tgid)
{
	__u8 one = 1;

	if (bpf_map_lookup_elem(&procs, &tgid))
		return;
	if (bpf_map_update_elem(&procs, &tgid, &one, BPF_NOEXIST) == -7 /* -E2BIG: the map is full */)
		count_drop(GP_DROP_PROCS);
}

static __always_inline int emit_alloc(struct pending *p, __u64 id)
{
	struct gp_alloc_event *e;
	__u64 addr = 0, pitch = 0, size = p->size;

	if (bpf_probe_read_user(&addr, sizeof(addr), (void *)p->out_ptr))
		return 0;
	if (p->shape == SHAPE_PITCH) {
		if (bpf_probe_read_user(&pitch, sizeof(pitch), (void *)p->pitch_ptr))
			return 0;
		size = pitch * p->size;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(GP_DROP_RINGBUF);
		return 0;
	}
	e->type = GP_EV_ALLOC;
	e->api = p->api;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts_ns = p->ts_ns;
	e->addr = addr;
	e->size = size;
	e->stack_err = p->stack_err;
	e->nr_stack = p->nr_stack;
	gp_leader_comm(e->comm);
	__builtin_memcpy(e->stack, p->stack, sizeof(e->stack));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int emit_free(struct pending *p, __u64 id)
{
	struct gp_free_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(GP_DROP_RINGBUF);
		return 0;
	}
	e->type = p->shape == SHAPE_MAP ? GP_EV_MAP :
		  p->shape == SHAPE_UNMAP ? GP_EV_UNMAP : GP_EV_FREE;
	e->api = p->api;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts_ns = p->ts_ns;
	e->addr = p->arg_addr;
	e->size = p->size;
	e->handle = p->handle;
	gp_leader_comm(e->comm);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pending *p;
	__u32 rc = (__u32)PT_REGS_RC(ctx); /* CUresult is an int-sized enum */

	p = bpf_map_lookup_elem(&pending, &id);
	if (!p) {
		count_drop(GP_DROP_NORETURN);
		return 0;
	}
	if (rc == 0) {
		if (p->api < GP_API__COUNT)
			__sync_fetch_and_add(&ok_calls[p->api], 1);
		remember_proc(id >> 32);
		if (p->shape == SHAPE_ALLOC || p->shape == SHAPE_PITCH)
			emit_alloc(p, id);
		else
			emit_free(p, id);
	}
	bpf_map_delete_elem(&pending, &id);
	return 0;
}

/*
 * One entry program for every memory entry point: the attach cookie says which one, and
 * so how to read its arguments. One program means one uprobe_multi link per library,
 * attached and detached in one go.
 */
SEC("uprobe")
int mem_enter(struct pt_regs *ctx)
{
	__u64 a0 = PT_REGS_PARM1(ctx), a1 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM4(ctx);

	switch ((__u32)bpf_get_attach_cookie(ctx)) {
	case GP_API_cuMemAllocPitch_v2:
		/* (CUdeviceptr *out, size_t *pitch, size_t width, size_t height, ...) */
		return enter(ctx, SHAPE_PITCH, a0, a1, a3);
	case GP_API_cuMemFree_v2:
	case GP_API_cuMemFreeAsync:
	case GP_API_cuMemFreeAsync_ptsz:
	case GP_API_cuMemFreeHost:
	case GP_API_cuMemRelease:
		return enter(ctx, SHAPE_FREE, a0, 0, 0);
	case GP_API_cuMemMap:
		/* (CUdeviceptr ptr, size_t size, size_t offset, handle, flags) */
		return enter(ctx, SHAPE_MAP, a0, a1, a3);
	case GP_API_cuMemUnmap:
		return enter(ctx, SHAPE_UNMAP, a0, a1, 0);
	default:
		/* (T *out, size_t size, ...) */
		return enter(ctx, SHAPE_ALLOC, a0, a1, 0);
	}
}

SEC("uretprobe")
int mem_leave(struct pt_regs *ctx)
{
	return leave(ctx);
}

SEC("tp/sched/sched_process_exit")
int mem_proc_exit(struct trace_event_raw_sched_process_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	/* A thread that dies inside a call never returns: forget its in-flight record. */
	bpf_map_delete_elem(&pending, &id);
	if (!gp_report_exit(ctx, id, &procs, &events))
		count_drop(GP_DROP_RINGBUF);
	return 0;
}
