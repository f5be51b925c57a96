/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --nccl: entry and return probes on libnccl's calls (one program pair, the call's
 * enum gp_nccl_fn as the attach cookie), one record per call with its arguments decoded by
 * the x86-64 ABI; and on the few libcuda calls the aggregator needs besides: contexts and
 * their devices (a communicator's GPU is the current one at its init), stream, context and
 * event synchronizations and event records (a collective completes at the first
 * synchronization that covers its stream). Records go to the run's shared ring buffer, so
 * contexts, calls, syncs, execs and exits arrive in one order.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "nccl_calls.h"
#include "common.bpf.h"
#include "gp_arch.bpf.h"
#include "shares.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* replaced by the run's shared ring buffer */
} events SEC(".maps");

/* NCCL may call its own exported functions (ncclBcast calls ncclBroadcast through the PLT):
 * a per-thread stack keeps the outer call paired with its return. */
#define NSTACK 4

struct nframe {
	__u64 ts_ns;
	__u32 fn;
	__u32 _pad;
	__u64 a[6];
	__u64 s[2]; /* [rsp+8], [rsp+16]: the seventh and eighth integer arguments */
};

struct nstack {
	struct gp_held held; /* its place in the table, for the thread's life (shares.bpf.h) */
	__u32 depth;
	__u32 id_len;  /* bytes in id[], read at the entry of the frame at id_depth */
	__u32 id_depth;
	__u32 _pad;
	struct nframe f[NSTACK];
	__u8 id[GP_NCCL_ID_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240); /* --max-pending */
	__type(key, __u64);
	__type(value, struct nstack);
} calls SEC(".maps");

static const struct nstack zero_stack;

/* The in-flight tables' numbers (shares.bpf.h) */
#define T_STACKS 0 /* calls: each thread's stack, from its first NCCL call to its end */
#define T_CUDA 1   /* cuda_calls */

/* The libcuda calls in flight (they never nest among themselves). */
struct ccall {
	struct gp_held held; /* its place in the table (shares.bpf.h) */
	__u64 ts_ns;
	__u32 api;
	__u32 aux; /* enum gp_aux_layout, from the cookie */
	__u64 a[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240); /* --max-pending */
	__type(key, __u64);
	__type(value, struct ccall);
} cuda_calls SEC(".maps");

/* Processes that made an NCCL call: their synchronizations are sent, and their exit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* --max-procs */
	__type(key, __u32);
	__type(value, __u8);
} nccl_procs SEC(".maps");

__u64 ndrops[GP_NDROP__COUNT];
/* cuStreamQuery/cuEventQuery that returned CUDA_ERROR_NOT_READY: counted, never sent */
__u64 polls;

#define CUDA_ERROR_NOT_READY 600

#define count_drop(what) gp_count_drop(ndrops, what)

/*
 * The NCCL calls' decoding below switches on the function (enum gp_nccl_fn, the attach
 * cookie itself): NCCL's signatures are one per function, so the function is its layout,
 * and the list (bpf/nccl_fns.def) has no layout column for a cookie to carry; the CUDA calls
 * this object probes read theirs from the cookie (aux_of).
 */

/* The unique id of an init (by value on the stack, or an array for the scalable init),
 * or a shrink's excluded ranks. a: the register arguments, read from ctx already: the
 * compiler turned per-case reads of ctx into one read through ctx plus a chosen offset,
 * which every verifier refuses ("dereference of modified ctx ptr", arm64). */
static __always_inline void read_id(struct pt_regs *ctx, const __u64 *a, struct nstack *st, __u32 fn, __u32 d)
{
	const void *src = NULL;
	__u32 n = GP_NCCL_ID_BYTES;

	switch (fn) {
	case GP_NCCL_CommInitRank:
	case GP_NCCL_CommInitRankConfig:
		/* the 128-byte id by value: x86-64 copies it onto the stack above the return
		 * address; AAPCS64 passes a pointer to the caller's copy in its register */
		src = GP_BIG_BYVAL_BY_REF ? (const void *)a[2] : (const void *)(PT_REGS_SP(ctx) + 8);
		break;
	case GP_NCCL_CommInitRankScalable:
		src = (const void *)a[4];
		break;
	case GP_NCCL_CommShrink:
		src = (const void *)a[1];
		n = (__u32)a[2];
		n = n > GP_NCCL_ID_BYTES / 4 ? GP_NCCL_ID_BYTES : n * 4;
		break;
	default:
		return;
	}
	st->id_depth = d;
	st->id_len = 0;
	if (src && n && n <= GP_NCCL_ID_BYTES && !bpf_probe_read_user(st->id, n, src))
		st->id_len = n;
}

/* The calling thread's stack, made at its first call when its process and user have room
 * in the table; NULL when not (the drop counted). */
static __always_inline struct nstack *stack_of(__u64 id)
{
	struct nstack *st = bpf_map_lookup_elem(&calls, &id);
	struct gp_held h;

	if (st)
		return st;
	if (gp_share_hold(T_STACKS, id >> 32, &h)) {
		count_drop(GP_NDROP_SHARE);
		return NULL;
	}
	if (bpf_map_update_elem(&calls, &id, &zero_stack, BPF_NOEXIST) || !(st = bpf_map_lookup_elem(&calls, &id))) {
		gp_share_release(T_STACKS, id >> 32, &h);
		count_drop(GP_NDROP_PENDING);
		return NULL;
	}
	st->held = h;
	return st;
}

static __always_inline int nccl_enter_traced(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx), d;
	struct nstack *st = stack_of(id);
	struct nframe *f;

	if (!st)
		return 0;
	d = st->depth;
	st->depth = d + 1; /* counted even when too deep: the returns stay paired */
	if (d >= NSTACK) {
		count_drop(GP_NDROP_TOO_DEEP);
		return 0;
	}
	f = &st->f[d & (NSTACK - 1)];
	f->ts_ns = bpf_ktime_get_ns();
	f->fn = fn;
	f->a[0] = PT_REGS_PARM1(ctx);
	f->a[1] = PT_REGS_PARM2(ctx);
	f->a[2] = PT_REGS_PARM3(ctx);
	f->a[3] = PT_REGS_PARM4(ctx);
	f->a[4] = PT_REGS_PARM5(ctx);
	f->a[5] = gp_arg(ctx, 5);
	f->s[0] = gp_arg(ctx, 6);
	f->s[1] = gp_arg(ctx, 7);
	read_id(ctx, f->a, st, fn, d);
	return 0;
}

SEC("uprobe")
int nccl_enter(struct pt_regs *ctx)
{
	if (!gp_traced_self())
		return 0;
	return nccl_enter_traced(ctx);
}

static __always_inline __s32 rd_int(__u64 p)
{
	__s32 v = -1;

	if (p)
		bpf_probe_read_user(&v, sizeof(v), (void *)p);
	return v;
}

static __always_inline __u64 rd_u64(__u64 p)
{
	__u64 v = 0;

	if (p)
		bpf_probe_read_user(&v, sizeof(v), (void *)p);
	return v;
}

/* The communicator made by an init, split or shrink, and its shape where the call says it. */
static __always_inline void fill_comm_calls(struct gp_nccl_event *e, const struct nframe *f)
{
	const __u64 *a = f->a;

	switch (f->fn) {
	case GP_NCCL_CommInitRank:
	case GP_NCCL_CommInitRankConfig: /* (newcomm*, nranks, id by value, rank, ...) */
		e->newcomm = rd_u64(a[0]);
		e->nranks = (__s32)a[1];
		/* x86-64: the id took no register, rank is the third; arm64: the id's pointer is */
		e->rank = (__s32)(GP_BIG_BYVAL_BY_REF ? a[3] : a[2]);
		break;
	case GP_NCCL_CommInitRankScalable: /* (newcomm*, nranks, rank, nId, ids*, config) */
		e->newcomm = rd_u64(a[0]);
		e->nranks = (__s32)a[1];
		e->rank = (__s32)a[2];
		break;
	case GP_NCCL_CommInitAll: /* (comm*, ndev, devlist) */
		e->newcomm = rd_u64(a[0]);
		e->nranks = (__s32)a[1];
		break;
	case GP_NCCL_CommSplit: /* (comm, color, key, newcomm*, config) */
		e->comm = a[0];
		e->color = (__s32)a[1];
		e->key = (__s32)a[2];
		e->newcomm = rd_u64(a[3]);
		break;
	case GP_NCCL_CommShrink: /* (comm, exclude*, nexclude, newcomm*, config, flags) */
		e->comm = a[0];
		e->count = (__u32)a[2];
		e->newcomm = rd_u64(a[3]);
		break;
	case GP_NCCL_CommCount:
	case GP_NCCL_CommCuDevice:
	case GP_NCCL_CommUserRank: /* (comm, int*) */
		e->comm = a[0];
		e->out = rd_int(a[1]);
		break;
	default: /* finalize, destroy, abort: (comm) */
		e->comm = a[0];
		break;
	}
}

/* Collectives and point-to-point calls, by their nccl.h signatures. */
static __always_inline void fill_data_calls(struct gp_nccl_event *e, const struct nframe *f)
{
	const __u64 *a = f->a;

	switch (f->fn) {
	case GP_NCCL_AllReduce: /* (send, recv, count, dtype, op, comm, stream) */
	case GP_NCCL_ReduceScatter:
		e->count = a[2], e->dtype = (__s32)a[3], e->redop = (__s32)a[4];
		e->comm = a[5], e->stream = f->s[0];
		break;
	case GP_NCCL_Broadcast: /* (send, recv, count, dtype, root, comm, stream) */
	case GP_NCCL_Gather:
	case GP_NCCL_Scatter:
		e->count = a[2], e->dtype = (__s32)a[3], e->peer = (__s32)a[4];
		e->comm = a[5], e->stream = f->s[0];
		break;
	case GP_NCCL_Bcast: /* (buff, count, dtype, root, comm, stream) */
	case GP_NCCL_Send:  /* (buff, count, dtype, peer, comm, stream) */
	case GP_NCCL_Recv:
		e->count = a[1], e->dtype = (__s32)a[2], e->peer = (__s32)a[3];
		e->comm = a[4], e->stream = a[5];
		break;
	case GP_NCCL_Reduce: /* (send, recv, count, dtype, op, root, comm, stream) */
		e->count = a[2], e->dtype = (__s32)a[3], e->redop = (__s32)a[4], e->peer = (__s32)a[5];
		e->comm = f->s[0], e->stream = f->s[1];
		break;
	case GP_NCCL_AllGather: /* (send, recv, sendcount, dtype, comm, stream) */
	case GP_NCCL_AlltoAll:
		e->count = a[2], e->dtype = (__s32)a[3];
		e->comm = a[4], e->stream = a[5];
		break;
	default: /* group start and end: no arguments */
		break;
	}
}

static __always_inline void fill(struct gp_nccl_event *e, const struct nframe *f)
{
	e->comm = e->newcomm = e->count = e->stream = 0;
	e->dtype = e->redop = e->peer = e->nranks = e->rank = e->color = e->key = e->out = -1;
	if (f->fn >= GP_NCCL_AllReduce)
		fill_data_calls(e, f);
	else
		fill_comm_calls(e, f);
}

static __always_inline void emit(struct pt_regs *ctx, struct nstack *st, struct nframe *f, __u32 d,
				 __u64 id, __u64 now)
{
	struct gp_nccl_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	__u32 n = st->id_depth == d ? st->id_len : 0;

	if (!e) {
		count_drop(GP_NDROP_RINGBUF);
		return;
	}
	e->type = GP_EV_NCCL;
	e->fn = f->fn;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts_ns = f->ts_ns;
	e->dur_ns = now - f->ts_ns;
	e->ret = (__u32)PT_REGS_RC(ctx);
	e->depth = d;
	e->img = gp_image();
	e->id_len = 0;
	e->_pad = 0;
	fill(e, f);
	gp_leader_comm(e->comm_name);
	if (n && n <= GP_NCCL_ID_BYTES) {
		__builtin_memcpy(e->id, st->id, GP_NCCL_ID_BYTES);
		e->id_len = n;
	}
	/* ncclCommInitAll: the handles it wrote (a whole id's worth read: it fits the array
	 * or fails, and then they are not followed) */
	if (f->fn == GP_NCCL_CommInitAll && e->nranks > 0 && f->a[0] &&
	    !bpf_probe_read_user(e->id, GP_NCCL_ID_BYTES, (void *)f->a[0]))
		e->id_len = 8 * (e->nranks < GP_NCCL_INIT_ALL_MAX ? e->nranks : GP_NCCL_INIT_ALL_MAX);
	bpf_ringbuf_submit(e, gp_quiet_flags(&events));
}

SEC("uretprobe")
int nccl_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, d;
	struct nstack *st;

	if (!gp_traced_self())
		return 0;
	st = bpf_map_lookup_elem(&calls, &id);
	if (!st || !st->depth) {
		count_drop(GP_NDROP_NORETURN);
		return 0;
	}
	d = --st->depth;
	if (d >= NSTACK)
		return 0; /* too deep: counted at entry */
	if (!gp_remember_proc(&nccl_procs, tgid))
		count_drop(GP_NDROP_PROCS);
	emit(ctx, st, &st->f[d & (NSTACK - 1)], d, id, now);
	return 0;
}

/* ---- the libcuda side: contexts (a communicator's device), syncs, event records ---- */

SEC("uprobe")
int nccl_cuda_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	struct ccall c = {
		.ts_ns = bpf_ktime_get_ns(),
		.api = GP_COOKIE_API(cookie),
		.aux = GP_COOKIE_LAYOUT(cookie),
		.a = { PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx),
		       PT_REGS_PARM5(ctx) },
	};

	if (!gp_traced_self())
		return 0;
	if (gp_share_hold(T_CUDA, id >> 32, &c.held)) {
		count_drop(GP_NDROP_SHARE);
		return 0;
	}
	if (gp_inflight_put(&cuda_calls, T_CUDA, id, &c))
		count_drop(GP_NDROP_PENDING);
	return 0;
}

static __always_inline bool is_sync(__u32 api)
{
	return api == GP_API_cuStreamSynchronize || api == GP_API_cuStreamSynchronize_ptsz ||
	       api == GP_API_cuCtxSynchronize || api == GP_API_cuCtxSynchronize_v2 ||
	       api == GP_API_cuEventSynchronize || api == GP_API_cuEventRecord ||
	       api == GP_API_cuEventRecord_ptsz || api == GP_API_cuEventRecordWithFlags ||
	       api == GP_API_cuEventRecordWithFlags_ptsz || api == GP_API_cuStreamWaitEvent ||
	       api == GP_API_cuStreamWaitEvent_ptsz || api == GP_API_cuStreamQuery ||
	       api == GP_API_cuStreamQuery_ptsz || api == GP_API_cuEventQuery ||
	       api == GP_API_cuEventElapsedTime || api == GP_API_cuEventElapsedTime_v2;
}

/* As bpf/cuda_copy.bpf.c's auxiliary records: handle and aux by the call's argument layout,
 * from the cookie (GP_AUX_LAYOUT, bpf/gp_apis.def; cuCtxGetDevice is not probed here). */
static __always_inline void aux_of(const struct ccall *c, __u64 *handle, __u64 *aux, __u32 *ms_bits)
{
	*handle = c->a[0];
	*aux = 0;
	*ms_bits = 0;
	switch (c->aux) {
	case GP_AUX_ARG1_ARG2:
		*aux = c->a[1];
		break;
	case GP_AUX_ELAPSED:
		*handle = c->a[1];
		*aux = c->a[2];
		bpf_probe_read_user(ms_bits, sizeof(*ms_bits), (void *)c->a[0]); /* the float's bits */
		break;
	case GP_AUX_POP:
		*handle = rd_u64(c->a[0]);
		break;
	case GP_AUX_OUT_ARG2:
		*handle = rd_u64(c->a[0]);
		*aux = c->a[1];
		break;
	case GP_AUX_OUT_ARG3:
		*handle = rd_u64(c->a[0]);
		*aux = c->a[2];
		break;
	case GP_AUX_OUT_ARG4:
		*handle = rd_u64(c->a[0]);
		*aux = c->a[3];
		break;
	case GP_AUX_OUT_ARG5:
		*handle = rd_u64(c->a[0]);
		*aux = c->a[4];
		break;
	case GP_AUX_NONE:
		*handle = 0;
		break;
	default: /* GP_AUX_ARG1 */
		break;
	}
}

SEC("uretprobe")
int nccl_cuda_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns(), handle, aux;
	__u32 tgid = id >> 32, ms_bits, rc;
	struct gp_aux_event *e;
	struct ccall *c;

	if (!gp_traced_self())
		return 0;
	c = bpf_map_lookup_elem(&cuda_calls, &id);
	if (!c)
		return 0; /* in flight at attach: nothing to pair */
	/* syncs matter only in processes that use NCCL; contexts come before NCCL is used */
	rc = (__u32)PT_REGS_RC(ctx);
	if (rc == CUDA_ERROR_NOT_READY && (c->api == GP_API_cuStreamQuery || c->api == GP_API_cuStreamQuery_ptsz ||
					   c->api == GP_API_cuEventQuery)) {
		__sync_fetch_and_add(&polls, 1); /* a poll: counted, never sent */
		goto out;
	}
	if (rc != 0 || (is_sync(c->api) && !bpf_map_lookup_elem(&nccl_procs, &tgid)))
		goto out;
	aux_of(c, &handle, &aux, &ms_bits);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(GP_NDROP_RINGBUF);
		goto out;
	}
	e->type = GP_EV_NCCL_CUDA;
	e->api = c->api;
	e->pid = tgid;
	e->tid = (__u32)id;
	e->ts_ns = now;
	e->handle = handle;
	e->aux = aux;
	e->epoch = GP_EPOCH_EXACT; /* --nccl's synchronizations are never sampled */
	e->ms_bits = ms_bits;
	bpf_ringbuf_submit(e, gp_quiet_flags(&events));
out:
	gp_inflight_done(&cuda_calls, T_CUDA, id, c);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int nccl_proc_exit(void *ctx)
{
	gp_inflight_exit(&cuda_calls, T_CUDA);
	gp_inflight_exit(&calls, T_STACKS);
	if (!gp_on_exit(NULL, &nccl_procs, &events))
		count_drop(GP_NDROP_RINGBUF);
	return 0;
}
