// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test-only: a uprobe that copies the user registers and stack with
 * bpf/stackcopy.bpf.h into a ring-buffer record, so tests/stacks can check
 * the copy and the unwind end to end. Not part of gpuprobe.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "pystack.bpf.h"
#include "stackcopy.bpf.h"
#include "stackprobe.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* the traced process; in .bss so --follow can change it after load */
__u32 target_tgid = 0;
/* BPF_RB_NO_WAKEUP for cost runs: the loader polls on a timer instead */
const volatile __u64 submit_flags = 0;
__u64 drops = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* bpf_get_stack's scratch for the frame-pointer variant (cost comparison) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[127]);
} fp_scratch SEC(".maps");

static __always_inline int on_hit(struct pt_regs *ctx, bool python)
{
	struct stackprobe_event *e;
	__u64 id = bpf_get_current_pid_tgid();

	if (target_tgid && (id >> 32) != target_tgid)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&drops, 1);
		return 0;
	}
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ktime_ns = bpf_ktime_get_ns();
	gp_stack_copy(ctx, &e->copy);
	if (python)
		gp_py_stack(&e->py);
	else
		e->py.status = GP_PY_NOT_PYTHON;
	bpf_ringbuf_submit(e, submit_flags);
	return 0;
}

/* the stack copy and the Python walk: what --memleak would do */
SEC("uprobe")
int BPF_KPROBE(stackprobe_hit)
{
	return on_hit(ctx, true);
}

/* the stack copy alone */
SEC("uprobe")
int BPF_KPROBE(stackprobe_copy)
{
	return on_hit(ctx, false);
}

/* today's --memleak stack: the kernel's frame-pointer walk */
SEC("uprobe")
int BPF_KPROBE(stackprobe_fp)
{
	__u32 zero = 0;
	__u64 *buf;

	if (target_tgid && (bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	buf = bpf_map_lookup_elem(&fp_scratch, &zero);
	if (buf)
		bpf_get_stack(ctx, buf, 127 * sizeof(__u64), BPF_F_USER_STACK);
	return 0;
}

/* no stack: the floor */
SEC("uprobe")
int BPF_KPROBE(stackprobe_empty)
{
	if (target_tgid && (bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	__sync_fetch_and_add(&drops, 0);
	return 0;
}
