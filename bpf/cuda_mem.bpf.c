/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory probes for --memleak: every allocation family of the CUDA driver API and its
 * free. Entry probes stash the arguments per thread and take the user stack, which is
 * only meaningful at entry (--stacks fp: bpf_get_stack into the stash; dwarf: a stack
 * record of its own, emit_stack); return probes read the CUresult and the out-pointer,
 * and only a successful call becomes an event. The outstanding-allocation table lives in the loader:
 * allocations are rare next to launches, and user space can symbolize and age them.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "cuda_mem.h"
#include "common.bpf.h"
#include "gp_arch.bpf.h"
#include "stackcopy.bpf.h"
#include "budget.bpf.h"
#include "shares.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define GP_ENOSPC 28

/* Set by the loader between open and load (and gp_stack_bytes, stackcopy.bpf.h). */
const volatile __u32 stack_mode = GP_STACKS_NONE; /* enum gp_stack_mode */
const volatile bool py_frames = true;             /* GP_STACKS_COPY: CPython frames too */

/* CUDA_MEM_ALLOC_NODE_PARAMS (cuda.h): CUmemPoolProps (88 bytes), accessDescs, count, then
 * these (tests/fakecuda/check_signatures.sh checks them against cuda.h) */
#define MANP_BYTESIZE 104
#define MANP_DPTR 112

struct pending {
	struct gp_held held; /* its place in the table (shares.bpf.h) */
	__u32 shape; /* enum gp_mem_layout, GP_LAYOUT_GFREE read as GP_LAYOUT_FREE */
	__u32 api;
	__u64 ts_ns;
	__u64 out_ptr;   /* user address of the out-parameter */
	__u64 pitch_ptr; /* GP_LAYOUT_PITCH: user address of *pPitch */
	__u64 arg_addr;  /* FREE/MAP/UNMAP: the address or handle */
	__u64 size;      /* ALLOC: bytes; PITCH: height; MAP/UNMAP: length */
	__u64 handle;    /* MAP */
	__s32 stack_err;
	__u32 nr_stack;
	__u32 stack_rec; /* a GP_EV_STACK record of this call was sent */
	__u32 _pad;
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

/* GP_EV_PIN records (gpuprobe.h): one per process, at its first allocation call with stacks
 * on, read before the run's ring. pin_sent says which processes sent theirs (an LRU: a
 * process that falls out sends another, which user space takes as a refresh). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} pins SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} pin_sent SEC(".maps");

/* A struct pending is too big for the 512-byte BPF stack: build it here. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pending);
} scratch SEC(".maps");

__u64 drops[GP_DROP__COUNT];
__u64 ok_calls[GP_API__COUNT];

#define count_drop(what) gp_count_drop(drops, what)

/* The first allocation call of process tgid with stacks on: a GP_EV_PIN record, with a
 * wake-up. One that finds the small ring full is sent at the next call (nothing is lost
 * but promptness: the first stack record keeps what naming needs too, later). */
static __always_inline void send_pin(__u32 tgid)
{
	struct gp_pin_event *e;
	__u8 one = 1;

	if (bpf_map_lookup_elem(&pin_sent, &tgid) || bpf_map_update_elem(&pin_sent, &tgid, &one, BPF_NOEXIST))
		return;
	e = bpf_ringbuf_reserve(&pins, sizeof(*e), 0);
	if (!e) {
		bpf_map_delete_elem(&pin_sent, &tgid);
		return;
	}
	e->type = GP_EV_PIN;
	e->pid = tgid;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/* code objects' copies follow the stack record that names them and precede the call's
 * allocation record, in the same ring (user space names the Python frames at the latter) */
#define GP_PY_CODE_RB events
#define GP_PY_CODE_DROP drops
#define GP_PY_CODE_AFTER sizeof(struct gp_alloc_event)
#include "pystack.bpf.h"

/* Records are submitted without waking the reader (gp_quiet_flags, common.bpf.h). */

/*
 * --stacks dwarf: the registers and the top of the user stack (and the CPython frames)
 * go straight into the ring buffer at the entry, where they are those of the call; the
 * allocation record follows at the return and user space joins them (docs/stacks.md).
 * Copying 16 KiB into `pending` and again at the return would double the cost.
 */
static __noinline void emit_stack(struct pt_regs *ctx, __u64 id, struct pending *p)
{
	struct gp_stack_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	__u32 tgid = id >> 32;

	if (!e) {
		p->stack_err = -GP_ENOSPC;
		count_drop(GP_DROP_STACK);
		return;
	}
	e->type = GP_EV_STACK;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->_pad = 0;
	e->ts_ns = p->ts_ns;
	if (gp_stack_copy(ctx, &e->copy) < 0)
		count_drop(GP_DROP_STACK); /* the pc alone */
	if (py_frames) {
		gp_py_stack(&e->py);
		/* the code objects this process reaches for the first time: copied now, while it
		 * surely lives (records after this one, before the allocation's) */
		gp_py_copy_codes(&e->py);
	} else {
		e->py.nr = 0;
		e->py.status = GP_PY_NOT_PYTHON;
		e->py.truncated = 0;
		e->py.pad = 0;
	}
	/* A process's first allocation wakes the reader, which keeps the process's maps and
	 * files (src/core/procpin.c) while the process lives: one that exits right after its
	 * last allocation still gets its stacks named. */
	bpf_ringbuf_submit(e, bpf_map_lookup_elem(&procs, &tgid) ? gp_quiet_flags(&events) : BPF_RB_FORCE_WAKEUP);
	p->stack_rec = 1;
}

static __always_inline int enter(struct pt_regs *ctx, __u32 shape, __u32 api, __u64 a0,
				 __u64 a1, __u64 a3)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 zero = 0;
	struct pending *p;
	long n;

	p = bpf_map_lookup_elem(&scratch, &zero);
	if (!p)
		return 0;
	if (gp_share_hold(0, id >> 32, &p->held)) {
		count_drop(GP_DROP_SHARE);
		return 0;
	}
	p->shape = shape;
	p->api = api;
	p->ts_ns = bpf_ktime_get_ns();
	p->out_ptr = 0;
	p->pitch_ptr = 0;
	p->arg_addr = 0;
	p->size = 0;
	p->handle = 0;
	p->stack_err = 0;
	p->nr_stack = 0;
	p->stack_rec = 0;
	p->_pad = 0;
	switch (shape) {
	case GP_LAYOUT_ALLOC:
		p->out_ptr = a0;
		p->size = a1;
		break;
	case GP_LAYOUT_PITCH:
		p->out_ptr = a0;
		p->pitch_ptr = a1;
		p->size = a3; /* height */
		break;
	case GP_LAYOUT_GALLOC:
		p->out_ptr = a0 + MANP_DPTR;
		p->pitch_ptr = a0 + MANP_BYTESIZE; /* read at the return, with the address */
		break;
	case GP_LAYOUT_MAP:
		p->handle = a3;
		/* fall through */
	default:
		p->arg_addr = a0;
		p->size = a1;
		break;
	}
	if (stack_mode != GP_STACKS_NONE && (shape == GP_LAYOUT_ALLOC || shape == GP_LAYOUT_PITCH || shape == GP_LAYOUT_GALLOC))
		send_pin(id >> 32);
	if (stack_mode == GP_STACKS_FP && (shape == GP_LAYOUT_ALLOC || shape == GP_LAYOUT_PITCH || shape == GP_LAYOUT_GALLOC)) {
		n = gp_entry_user_stack(ctx, p->stack);
		if (n < 0) {
			p->stack_err = (__s32)n;
			count_drop(GP_DROP_STACK);
		} else {
			p->nr_stack = (__u32)n;
		}
	} else if (stack_mode == GP_STACKS_COPY && (shape == GP_LAYOUT_ALLOC || shape == GP_LAYOUT_PITCH || shape == GP_LAYOUT_GALLOC)) {
		emit_stack(ctx, id, p);
	}
	/* a thread's stale entry (a return never seen) is replaced and keeps its place */
	if (gp_inflight_put(&pending, 0, id, p))
		count_drop(GP_DROP_PENDING);
	return 0;
}

static __always_inline void remember_proc(__u32 tgid)
{
	if (!gp_remember_proc(&procs, tgid))
		count_drop(GP_DROP_PROCS);
}

static __always_inline int emit_alloc(struct pending *p, __u64 id)
{
	struct gp_alloc_event *e;
	__u64 addr = 0, pitch = 0, size = p->size;

	if (bpf_probe_read_user(&addr, sizeof(addr), (void *)p->out_ptr))
		return 0;
	if (p->shape == GP_LAYOUT_PITCH) {
		if (bpf_probe_read_user(&pitch, sizeof(pitch), (void *)p->pitch_ptr))
			return 0;
		size = pitch * p->size;
	} else if (p->shape == GP_LAYOUT_GALLOC &&
		   bpf_probe_read_user(&size, sizeof(size), (void *)p->pitch_ptr)) {
		return 0;
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
	e->stack_rec = p->stack_rec;
	e->_pad = 0;
	gp_leader_comm(e->comm);
	__builtin_memcpy(e->stack, p->stack, sizeof(e->stack));
	bpf_ringbuf_submit(e, gp_quiet_flags(&events));
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
	e->type = p->shape == GP_LAYOUT_MAP ? GP_EV_MAP :
		  p->shape == GP_LAYOUT_UNMAP ? GP_EV_UNMAP : GP_EV_FREE;
	e->api = p->api;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts_ns = p->ts_ns;
	e->addr = p->arg_addr;
	e->size = p->size;
	e->handle = p->handle;
	gp_leader_comm(e->comm);
	bpf_ringbuf_submit(e, gp_quiet_flags(&events));
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
		if (p->shape == GP_LAYOUT_ALLOC || p->shape == GP_LAYOUT_PITCH || p->shape == GP_LAYOUT_GALLOC)
			emit_alloc(p, id);
		else
			emit_free(p, id);
	}
	gp_inflight_done(&pending, 0, id, p);
	return 0;
}

/*
 * One entry program for every memory entry point: the attach cookie says which one, and
 * how to read its arguments (GP_MEM_COOKIE: its layout from bpf/gp_apis.def). One program
 * means one uprobe_multi link per library, attached and detached in one go.
 */
SEC("uprobe")
int mem_enter(struct pt_regs *ctx)
{
	__u64 a0 = PT_REGS_PARM1(ctx), a1 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM4(ctx), a4 = PT_REGS_PARM5(ctx);
	__u64 cookie;
	__u32 layout;

	if (!gp_traced_self())
		return 0;
	gp_priced_hit(bpf_get_current_pid_tgid() >> 32);
	cookie = bpf_get_attach_cookie(ctx);
	layout = GP_COOKIE_LAYOUT(cookie);
	switch (layout) {
	case GP_LAYOUT_PITCH:
	case GP_LAYOUT_MAP:
		break;
	case GP_LAYOUT_FREE:
		a1 = a3 = 0;
		break;
	case GP_LAYOUT_UNMAP:
		a3 = 0;
		break;
	case GP_LAYOUT_GALLOC:
		a0 = a4;
		a1 = a3 = 0;
		break;
	case GP_LAYOUT_GFREE:
		/* a free from here on */
		layout = GP_LAYOUT_FREE;
		a0 = a4;
		a1 = a3 = 0;
		break;
	default:
		layout = GP_LAYOUT_ALLOC;
		a3 = 0;
		break;
	}
	/* one call site: the walk's stack space is counted once */
	return enter(ctx, layout, GP_COOKIE_API(cookie), a0, a1, a3);
}

SEC("uretprobe")
int mem_leave(struct pt_regs *ctx)
{
	if (!gp_traced_self())
		return 0;
	return leave(ctx);
}

SEC("raw_tp/sched_process_exit")
int mem_proc_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	/* a thread that dies inside a call gives its place back */
	gp_inflight_exit(&pending, 0);
	if ((__u32)id == tgid) /* its leader: a later process of its PID sends its own */
		bpf_map_delete_elem(&pin_sent, &tgid);
	if (!gp_on_exit(NULL, &procs, &events))
		count_drop(GP_DROP_RINGBUF);
	return 0;
}
