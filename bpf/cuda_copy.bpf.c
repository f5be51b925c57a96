/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Copy probes for --bandwidth-util: every cuMemcpy* entry point, plus what is needed to
 * classify and time them in user space (contexts and their devices, synchronizations,
 * event records, host registrations). Records share the memory probes' ring buffer (the
 * loader reuses its fd), so allocations, frees and copies arrive in one order: a unified
 * copy's direction is decided against the allocations live at that moment.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "cuda_copy.h"
#include "common.bpf.h"
#include "gp_arch.bpf.h"
#include "budget.bpf.h"
#include "shares.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u64 min_bytes = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* replaced by the memory probes' ring buffer */
} events SEC(".maps");

struct call {
	struct gp_held held; /* its place in the table (shares.bpf.h) */
	__u64 ts_ns;
	__u32 api;
	__u32 epoch; /* gp_window_epoch() at entry */
	__u32 layout; /* enum gp_copy_layout, from the cookie: GP_CL_NONE for no copy */
	__u32 aux;    /* enum gp_aux_layout, from the cookie: for a call that is no copy */
	__u64 a[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240); /* --max-pending */
	__type(key, __u64);
	__type(value, struct call);
} calls SEC(".maps");

__u64 cdrops[GP_CDROP__COUNT];
__u64 small_copies, small_bytes; /* below --min-bytes: counted, not sent */
__u64 failed_copies, zero_copies;
/* cuStreamQuery/cuEventQuery that returned CUDA_ERROR_NOT_READY: a poll loop's, counted
 * here and never sent (nccl-tests and PyTorch's watchdog poll thousands of times a second) */
__u64 polls;

#define CUDA_ERROR_NOT_READY 600

/* Processes that sent a copy record: only their successful queries and elapsed times are
 * sent (a process that never copied has nothing they could complete: counted in
 * quiet_signals). When the table was full once, every signal is sent (copy_procs_full):
 * a process left out must not lose its completions. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* --max-procs */
	__type(key, __u32);
	__type(value, __u8);
} copy_procs SEC(".maps");

__u64 quiet_signals;
__u32 copy_procs_full;

#define count_drop(what) gp_count_drop(cdrops, what)

static __always_inline int copy_enter_traced(struct pt_regs *ctx, __u64 id, __u64 cookie, __u32 epoch)
{
	struct call c = {
		.ts_ns = bpf_ktime_get_ns(),
		.api = GP_COOKIE_API(cookie),
		.epoch = epoch,
		.layout = GP_COPY_COOKIE_LAYOUT(cookie),
		.aux = GP_COPY_COOKIE_AUX(cookie),
		.a = { PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
		       PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), gp_arg(ctx, 5) },
	};

	if (gp_share_hold(0, id >> 32, &c.held)) {
		count_drop(GP_CDROP_SHARE);
		return 0;
	}
	if (gp_inflight_put(&calls, 0, id, &c))
		count_drop(GP_CDROP_PENDING);
	return 0;
}

/* The synchronizations: the budget samples them (bandwidth_mode.c attaches them through
 * gp_run__attach_sampled); every other call here is always attached, and priced. */
static __always_inline bool is_sync(__u32 api)
{
	return api == GP_API_cuStreamSynchronize || api == GP_API_cuStreamSynchronize_ptsz ||
	       api == GP_API_cuCtxSynchronize || api == GP_API_cuCtxSynchronize_v2 ||
	       api == GP_API_cuEventSynchronize || api == GP_API_cuStreamQuery ||
	       api == GP_API_cuStreamQuery_ptsz || api == GP_API_cuEventQuery ||
	       api == GP_API_cuEventElapsedTime || api == GP_API_cuEventElapsedTime_v2;
}

static __always_inline bool is_query(__u32 api)
{
	return api == GP_API_cuStreamQuery || api == GP_API_cuStreamQuery_ptsz || api == GP_API_cuEventQuery;
}

static __always_inline int copy_enter_body(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 api = GP_COOKIE_API(cookie), epoch;

	if (!gp_traced_self())
		return 0;
	epoch = gp_window_epoch_of(id >> 32);
	/* sampled under a budget (bandwidth_mode.c): the synchronizations and cuCtxGetDevice */
	if (is_sync(api) || api == GP_API_cuCtxGetDevice || api == GP_API_cuCtxGetDevice_v2) {
		gp_extra_hit(id >> 32);
		if (epoch == GP_EPOCH_UNSEEN) {
			/* a stray: its return must not find the entry of a call whose return went
			 * unseen (its link closed while it ran) */
			gp_inflight_del(&calls, 0, id);
			return 0;
		}
	} else {
		gp_priced_hit(id >> 32);
	}
	return copy_enter_traced(ctx, id, cookie, epoch);
}

SEC("uprobe")
int copy_enter(struct pt_regs *ctx)
{
	return copy_enter_body(ctx);
}

/* The same program as a plain uprobe (not uprobe_multi): the budget's tracefs uprobe
 * events take it for the probes it samples (gp_run__prepare_sampled; not loaded otherwise). */
SEC("uprobe")
int copy_enter_ev(struct pt_regs *ctx)
{
	return copy_enter_body(ctx);
}

/* CUDA_MEMCPY2D / CUDA_MEMCPY3D (cuda.h): the fields a copy's size and ends come from. */
#define M2D_SRC_TYPE 16
#define M2D_SRC_HOST 24
#define M2D_SRC_DEV 32
#define M2D_DST_TYPE 72
#define M2D_DST_HOST 80
#define M2D_DST_DEV 88
#define M2D_WIDTH 112
#define M2D_HEIGHT 120
#define M3D_SRC_TYPE 32
#define M3D_SRC_HOST 40
#define M3D_SRC_DEV 48
#define M3D_DST_TYPE 120
#define M3D_DST_HOST 128
#define M3D_DST_DEV 136
#define M3D_WIDTH 176
#define M3D_HEIGHT 184
#define M3D_DEPTH 192
/* CUDA_MEMCPY3D_PEER is CUDA_MEMCPY3D with the contexts where the reserved words are */
#define M3DP_SRC_CTX 64
#define M3DP_DST_CTX 152

static __always_inline __u64 rd64(__u64 base, int off)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)(base + off));
	return v;
}

static __always_inline __u32 rd32(__u64 base, int off)
{
	__u32 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)(base + off));
	return v;
}

/* For host memory the descriptor names the host pointer, else the device one (unified
 * pointers live in the device field). */
static __always_inline __u64 desc_ptr(__u64 d, __u32 type, int host_off, int dev_off)
{
	return rd64(d, type == GP_MEMTYPE_HOST ? host_off : dev_off);
}

static __always_inline void fill_copy(struct gp_copy_event *e, struct call *c)
{
	__u64 *a = c->a;

	e->async = 0;
	e->peer = 0;
	e->stream = 0;
	e->dst_ctx = e->src_ctx = 0;
	e->dst = a[0];
	e->src = a[1];
	e->bytes = a[2];
	switch (c->layout) {
	case GP_CL_UNIFIED_ASYNC:
		e->async = 1;
		e->stream = a[3];
		/* fall through */
	case GP_CL_UNIFIED:
		e->dst_type = e->src_type = GP_MEMTYPE_UNIFIED;
		break;
	case GP_CL_HTOD_ASYNC:
		e->async = 1;
		e->stream = a[3];
		/* fall through */
	case GP_CL_HTOD:
		e->dst_type = GP_MEMTYPE_DEVICE;
		e->src_type = GP_MEMTYPE_HOST;
		break;
	case GP_CL_DTOH_ASYNC:
		e->async = 1;
		e->stream = a[3];
		/* fall through */
	case GP_CL_DTOH:
		e->dst_type = GP_MEMTYPE_HOST;
		e->src_type = GP_MEMTYPE_DEVICE;
		break;
	case GP_CL_DTOD_ASYNC:
		e->async = 1;
		e->stream = a[3];
		/* fall through */
	case GP_CL_DTOD:
		e->dst_type = e->src_type = GP_MEMTYPE_DEVICE;
		break;
	case GP_CL_PEER_ASYNC:
		e->async = 1;
		e->stream = a[5];
		/* fall through */
	case GP_CL_PEER:
		/* (dst, dstContext, src, srcContext, bytes) */
		e->peer = 1;
		e->dst = a[0];
		e->dst_ctx = a[1];
		e->src = a[2];
		e->src_ctx = a[3];
		e->bytes = a[4];
		e->dst_type = e->src_type = GP_MEMTYPE_DEVICE;
		break;
	case GP_CL_D2_ASYNC:
		e->async = 1;
		e->stream = a[1];
		/* fall through */
	case GP_CL_D2:
		e->src_type = rd32(a[0], M2D_SRC_TYPE);
		e->dst_type = rd32(a[0], M2D_DST_TYPE);
		e->src = desc_ptr(a[0], e->src_type, M2D_SRC_HOST, M2D_SRC_DEV);
		e->dst = desc_ptr(a[0], e->dst_type, M2D_DST_HOST, M2D_DST_DEV);
		e->bytes = rd64(a[0], M2D_WIDTH) * rd64(a[0], M2D_HEIGHT);
		break;
	case GP_CL_PEER3D_ASYNC:
		e->async = 1;
		e->stream = a[1];
		/* fall through */
	case GP_CL_PEER3D:
		/* a peer copy by its entry point: both contexts say the GPUs */
		e->peer = 1;
		e->src_ctx = rd64(a[0], M3DP_SRC_CTX);
		e->dst_ctx = rd64(a[0], M3DP_DST_CTX);
		e->src_type = rd32(a[0], M3D_SRC_TYPE);
		e->dst_type = rd32(a[0], M3D_DST_TYPE);
		e->src = desc_ptr(a[0], e->src_type, M3D_SRC_HOST, M3D_SRC_DEV);
		e->dst = desc_ptr(a[0], e->dst_type, M3D_DST_HOST, M3D_DST_DEV);
		e->bytes = rd64(a[0], M3D_WIDTH) * rd64(a[0], M3D_HEIGHT) * rd64(a[0], M3D_DEPTH);
		break;
	case GP_CL_D3_ASYNC:
		e->async = 1;
		e->stream = a[1];
		/* fall through */
	default: /* GP_CL_D3 */
		e->src_type = rd32(a[0], M3D_SRC_TYPE);
		e->dst_type = rd32(a[0], M3D_DST_TYPE);
		e->src = desc_ptr(a[0], e->src_type, M3D_SRC_HOST, M3D_SRC_DEV);
		e->dst = desc_ptr(a[0], e->dst_type, M3D_DST_HOST, M3D_DST_DEV);
		e->bytes = rd64(a[0], M3D_WIDTH) * rd64(a[0], M3D_HEIGHT) * rd64(a[0], M3D_DEPTH);
		break;
	}
}


static __always_inline void emit_copy(struct call *c, __u64 id, __u64 now)
{
	struct gp_copy_event l = {}, *e;

	fill_copy(&l, c);
	/* zero-byte and small copies are counted apart, before the ring buffer: never traffic */
	if (l.bytes == 0) {
		__sync_fetch_and_add(&zero_copies, 1);
		return;
	}
	if (l.bytes < min_bytes) {
		__sync_fetch_and_add(&small_copies, 1);
		__sync_fetch_and_add(&small_bytes, l.bytes);
		return;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(GP_CDROP_RINGBUF);
		return;
	}
	if (!gp_remember_proc(&copy_procs, l.pid = id >> 32))
		copy_procs_full = 1;
	l.type = GP_EV_COPY;
	l.api = c->api;
	l.pid = id >> 32;
	l.tid = (__u32)id;
	l.ts_ns = c->ts_ns;
	l.dur_ns = now - c->ts_ns;
	l.epoch = c->epoch;
	gp_leader_comm(l.comm);
	__builtin_memcpy(e, &l, sizeof(l));
	bpf_ringbuf_submit(e, gp_quiet_flags(&events));
}

/* The GPU each thread's cuCtxGetDevice last returned: only a change is sent. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);   /* pid_tgid; a thread's entry goes with it */
	__type(value, __u64); /* GPU + 1 */
} thread_gpu SEC(".maps");

static __always_inline bool gp_thread_gpu_changed(__u64 id, __u64 gpu)
{
	__u64 *v = bpf_map_lookup_elem(&thread_gpu, &id), want = gpu + 1;

	if (v && *v == want)
		return false;
	bpf_map_update_elem(&thread_gpu, &id, &want, BPF_ANY);
	return true;
}

static __always_inline void emit_aux(struct call *c, __u64 id, __u64 now)
{
	struct gp_aux_event *e;
	__u64 handle = c->a[0], aux = 0;
	__u32 ms_bits = 0;

	/* the arguments by their layout, from the cookie (GP_AUX_LAYOUT, bpf/gp_apis.def) */
	switch (c->aux) {
	case GP_AUX_ARG1_ARG2:
		aux = c->a[1];
		break;
	case GP_AUX_ELAPSED:
		/* (float *ms, start, end): the GPU's time, read at return */
		handle = c->a[1];
		aux = c->a[2];
		ms_bits = rd32(c->a[0], 0);
		break;
	case GP_AUX_POP:
		handle = c->a[0] ? rd64(c->a[0], 0) : 0;
		break;
	case GP_AUX_OUT_ARG2:
		handle = rd64(c->a[0], 0);
		aux = c->a[1];
		break;
	case GP_AUX_OUT_ARG3:
		handle = rd64(c->a[0], 0);
		aux = c->a[2];
		break;
	case GP_AUX_OUT_ARG4:
		handle = rd64(c->a[0], 0);
		aux = c->a[3];
		break;
	case GP_AUX_OUT_ARG5:
		handle = rd64(c->a[0], 0);
		aux = c->a[4];
		break;
	case GP_AUX_NONE:
		handle = 0;
		break;
	case GP_AUX_DEVICE:
		/* CUdevice is an int: the thread's current context's GPU */
		handle = 0;
		aux = (__u32)rd64(c->a[0], 0);
		if (!gp_thread_gpu_changed(id, aux))
			return; /* told already: PyTorch asks thousands of times a second */
		break;
	case GP_AUX_DEVICE_CTX:
		/* a named context (handle) is on this GPU; NULL: the current one's, as above */
		handle = c->a[1];
		aux = (__u32)rd64(c->a[0], 0);
		if (!handle && !gp_thread_gpu_changed(id, aux))
			return;
		break;
	default: /* GP_AUX_ARG1 */
		break;
	}
	/* which calls only a copying process's completions need is what the call does, not how
	 * it passes its arguments: by id */
	if ((is_query(c->api) || c->api == GP_API_cuEventElapsedTime || c->api == GP_API_cuEventElapsedTime_v2) &&
	    !copy_procs_full) {
		__u32 tgid = id >> 32;

		if (!bpf_map_lookup_elem(&copy_procs, &tgid)) {
			__sync_fetch_and_add(&quiet_signals, 1);
			return;
		}
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(GP_CDROP_RINGBUF);
		return;
	}
	e->type = GP_EV_AUX;
	e->api = c->api;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts_ns = now;
	e->handle = handle;
	e->aux = aux;
	e->epoch = c->epoch;
	e->ms_bits = ms_bits;
	bpf_ringbuf_submit(e, gp_quiet_flags(&events));
}

static __always_inline int copy_leave_body(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	struct call *c;

	if (!gp_traced_self())
		return 0;
	c = bpf_map_lookup_elem(&calls, &id);
	if (!c) {
		/* under a budget, a synchronization's stray leaves no entry: not a loss */
		if (!gp_count_hits)
			count_drop(GP_CDROP_NORETURN);
		return 0;
	}
	if ((__u32)PT_REGS_RC(ctx) != 0) {
		if (c->layout != GP_CL_NONE)
			__sync_fetch_and_add(&failed_copies, 1);
		else if ((__u32)PT_REGS_RC(ctx) == CUDA_ERROR_NOT_READY && is_query(c->api))
			__sync_fetch_and_add(&polls, 1);
	} else if (c->layout != GP_CL_NONE) {
		emit_copy(c, id, now);
	} else {
		emit_aux(c, id, now);
	}
	gp_inflight_done(&calls, 0, id, c);
	return 0;
}

SEC("uretprobe")
int copy_leave(struct pt_regs *ctx)
{
	return copy_leave_body(ctx);
}

/* The same program as a plain uretprobe (not uprobe_multi): the budget's tracefs uprobe
 * events take it for the probes it samples (gp_run__prepare_sampled; not loaded otherwise). */
SEC("uretprobe")
int copy_leave_ev(struct pt_regs *ctx)
{
	return copy_leave_body(ctx);
}

SEC("raw_tp/sched_process_exit")
int copy_proc_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	bpf_map_delete_elem(&thread_gpu, &id);
	gp_inflight_exit(&calls, 0);
	if (gp_process_dead()) {
		__u32 tgid = id >> 32;

		bpf_map_delete_elem(&copy_procs, &tgid);
	}
	return 0;
}
