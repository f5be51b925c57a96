/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Libraries loaded after gpuprobe started (src/core/libwatch.c): a uprobe on the dynamic
 * linker's debugger hook, _dl_debug_state (the r_brk of struct r_debug that gdb breaks on
 * to see every dlopen and dlclose). The linker calls it before and after changing its list
 * of loaded objects; r_debug.r_state says which (RT_ADD, RT_DELETE, then RT_CONSISTENT), so
 * only the call with the list consistent again — the new library mapped — is reported:
 * user space then reads that process's maps. The attach cookie is the distance from
 * _dl_debug_state to _r_debug in the linker's image (0: unknown, every call reported).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 12); /* replaced by the run's shared ring buffer */
} events SEC(".maps");

#define R_STATE_OFF 24 /* struct r_debug { int r_version; link_map *r_map; ElfW(Addr) r_brk; r_state; ... } */

__u64 hook_hits, hook_skipped, hook_lost;

SEC("uprobe")
int dl_brk(struct pt_regs *ctx)
{
	__s64 delta = (__s64)bpf_get_attach_cookie(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	struct gp_dlopen_event *e;
	__s32 state = -1;

	if (!gp_traced_self())
		return 0;
	__sync_fetch_and_add(&hook_hits, 1);
	/* at a uprobe's handler the instruction pointer is the probed address */
	if (delta && bpf_probe_read_user(&state, sizeof(state), (void *)(PT_REGS_IP(ctx) + delta + R_STATE_OFF)))
		state = -1;
	if (state > 0) { /* RT_ADD or RT_DELETE: the consistent call follows */
		__sync_fetch_and_add(&hook_skipped, 1);
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&hook_lost, 1);
		return 0;
	}
	e->type = GP_EV_DLOPEN;
	e->pid = id >> 32;
	e->ts_ns = bpf_ktime_get_ns();
	e->img = gp_image();
	e->state = state;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
