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

const volatile __u32 target_tgid = 0;
__u64 drops = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

static __always_inline int on_hit(struct pt_regs *ctx)
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
	gp_py_stack(&e->py);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(stackprobe_hit)
{
	return on_hit(ctx);
}
