/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --trace: every exported cu* function of the driver, entry and return, as one record
 * per call on a ring buffer. The attach cookie is the function's index in the loader's
 * list; per-function flags say what else to read. A full ring buffer drops the record
 * (counted) and never blocks the traced program.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "api_trace.h"
#include "common.bpf.h"
#include "gp_arch.bpf.h"
#include "shares.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define MAX_DEPTH 8       /* exported functions calling exported functions */
#define MAX_FUNCS 4096
#define FL_STR_ARG2 1     /* arg 2 is a NUL-terminated name (cuModuleGetFunction, ...) */
#define FL_CONFIG_ARG0 2  /* arg 0 points to a CUlaunchConfig: keep its grid and block */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24); /* --ringbuf-size */
} calls_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FUNCS);
	__type(key, __u32);
	__type(value, __u32);
} fn_flags SEC(".maps");

struct frame {
	__u64 ts_ns;
	__u64 args[6];
	__u64 stack_args[2];
	__u32 fn;
	__u32 _pad;
	char str[GP_TRACE_STR];
};

struct tstack {
	struct gp_held held; /* its place in the table, for the thread's life (shares.bpf.h) */
	__u32 depth;
	__u32 _pad;
	struct frame f[MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240); /* --max-pending */
	__type(key, __u64);
	__type(value, struct tstack);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tstack);
} zero_stack SEC(".maps");

__u64 tdrops[GP_CDROP__COUNT]; /* ringbuf_full, pending_full, return_without_entry, share */
__u64 tdeep;                   /* calls nested deeper than MAX_DEPTH: not recorded */
__u64 tnames_lost;             /* name arguments lost (their calls recorded, the name empty) */

SEC("uprobe")
int trace_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx), zero = 0, d, *flags;
	struct tstack *st;
	struct frame *f;

	if (!gp_traced_self())
		return 0;
	st = bpf_map_lookup_elem(&stacks, &id);
	if (!st) {
		/* the thread's first call: its stack, for its life, if its process and user have
		 * room in the table */
		struct tstack *z = bpf_map_lookup_elem(&zero_stack, &zero);

		if (!z)
			return 0;
		if (gp_share_hold(0, id >> 32, &z->held)) {
			__sync_fetch_and_add(&tdrops[GP_CDROP_SHARE], 1);
			return 0;
		}
		if (gp_inflight_put(&stacks, 0, id, z)) {
			__sync_fetch_and_add(&tdrops[GP_CDROP_PENDING], 1);
			return 0;
		}
		st = bpf_map_lookup_elem(&stacks, &id);
		if (!st)
			return 0;
	}
	d = st->depth;
	if (d >= MAX_DEPTH) {
		__sync_fetch_and_add(&tdeep, 1);
		st->depth = d + 1; /* keep returns paired */
		return 0;
	}
	f = &st->f[d];
	f->ts_ns = bpf_ktime_get_ns();
	f->fn = fn;
	f->args[0] = PT_REGS_PARM1(ctx);
	f->args[1] = PT_REGS_PARM2(ctx);
	f->args[2] = PT_REGS_PARM3(ctx);
	f->args[3] = PT_REGS_PARM4(ctx);
	f->args[4] = PT_REGS_PARM5(ctx);
	f->args[5] = gp_arg(ctx, 5);
	f->stack_args[0] = gp_arg(ctx, 6);
	f->stack_args[1] = gp_arg(ctx, 7);
	f->str[0] = '\0';
	flags = bpf_map_lookup_elem(&fn_flags, &fn);
	/* the config is read now (the caller may reuse it); a name string at return, when the
	 * driver has read it and its page is surely in (at entry 7 of 36 PyTorch names came
	 * back empty on the H200) */
	if (flags && (*flags & FL_CONFIG_ARG0))
		bpf_probe_read_user(f->str, 24, (void *)f->args[0]);
	st->depth = d + 1;
	return 0;
}

/* A name argument, read at return (the driver has read it: its page is in), whole. */
static __always_inline void send_name(__u64 id, const void *name)
{
	struct gp_call_str_event *s = bpf_ringbuf_reserve(&calls_rb, sizeof(*s), 0);

	if (!s) {
		__sync_fetch_and_add(&tnames_lost, 1);
		return;
	}
	s->type = GP_EV_CALL_STR;
	s->pid = id >> 32;
	s->tid = (__u32)id;
	s->_pad = 0;
	if (bpf_probe_read_user_str(s->str, sizeof(s->str), name) < 0)
		s->str[0] = '\0';
	bpf_ringbuf_submit(s, 0);
}

SEC("uretprobe")
int trace_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	struct tstack *st;
	struct gp_call_event *e;
	struct frame *f;
	__u32 d;

	if (!gp_traced_self())
		return 0;
	st = bpf_map_lookup_elem(&stacks, &id);
	if (!st || st->depth == 0) {
		__sync_fetch_and_add(&tdrops[GP_CDROP_NORETURN], 1);
		return 0;
	}
	d = st->depth - 1;
	st->depth = d;
	if (d >= MAX_DEPTH)
		return 0;
	f = &st->f[d];
	{
		__u32 fn = f->fn, *flags = bpf_map_lookup_elem(&fn_flags, &fn);

		if (flags && (*flags & FL_STR_ARG2))
			send_name(id, (void *)f->args[2]);
	}
	e = bpf_ringbuf_reserve(&calls_rb, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&tdrops[GP_CDROP_RINGBUF], 1);
		return 0;
	}
	e->type = GP_EV_CALL;
	e->fn = f->fn;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts_ns = f->ts_ns;
	e->dur_ns = now - f->ts_ns;
	e->ret = (__s32)PT_REGS_RC(ctx);
	__builtin_memcpy(e->args, f->args, sizeof(e->args));
	__builtin_memcpy(e->stack_args, f->stack_args, sizeof(e->stack_args));
	e->out0 = 0;
	if (f->args[0])
		bpf_probe_read_user(&e->out0, sizeof(e->out0), (void *)f->args[0]);
	__builtin_memcpy(e->str, f->str, sizeof(e->str));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int trace_proc_exit(void *ctx)
{
	gp_inflight_exit(&stacks, 0);
	return 0;
}
