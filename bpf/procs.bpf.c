/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The processes a run follows (src/core/ptree.c), through raw tracepoints — which need
 * no tracefs — on fork, exec and exit:
 *  - fork: a child of a followed process is followed from its first instruction (the
 *    `traced` map every object shares is updated before the child runs);
 *  - exec: a new image (generation img + 1) of a followed process, or of any process when
 *    the run follows none; --comm and --cgroup make a process followed at its exec;
 *  - exit: a followed process leaves the set.
 * Records go to the run's shared ring buffer, in order with the allocation records.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* --comm: a process whose image has this name is followed (with its children) */
const volatile char comm_filter[GP_COMM_LEN] = {};
const volatile bool by_comm = false;
/* --cgroup: a process that execs inside this cgroup (at this depth of the hierarchy) */
const volatile __u64 cgroup_filter = 0;
const volatile __u32 cgroup_level = 0;
/* whether fork follows children (a command, --tree): -p without --tree does not */
const volatile bool follow_forks = true;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* reused: the run's shared buffer */
} events SEC(".maps");

enum {
	PDROP_RINGBUF = 0, /* a fork/exec/exit record lost */
	PDROP_TABLE = 1,   /* the traced table was full: a child not followed */
	PDROP__COUNT,
};

__u64 pdrops[PDROP__COUNT];

static __always_inline void emit(__u32 type, __u32 pid, __u32 ppid, const struct gp_traced *t)
{
	struct gp_proc_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		gp_count_drop(pdrops, PDROP_RINGBUF);
		return;
	}
	e->type = type;
	e->pid = pid;
	e->ppid = ppid;
	e->root = t ? t->root : 0;
	e->img = gp_image();
	e->_pad = 0;
	e->ts_ns = bpf_ktime_get_ns();
	gp_leader_comm(e->comm);
	bpf_ringbuf_submit(e, 0);
}

static __always_inline bool follow(__u32 tgid, __u32 root)
{
	struct gp_traced t = { .root = root };

	if (bpf_map_update_elem(&traced, &tgid, &t, BPF_ANY) == -GP_E2BIG) {
		gp_count_drop(pdrops, PDROP_TABLE);
		return false;
	}
	return true;
}

/* sched_process_fork(struct task_struct *parent, struct task_struct *child) */
SEC("raw_tp/sched_process_fork")
int procs_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	struct gp_traced *t;

	/* a new thread of a process is no new process */
	if (!gp_filter || !follow_forks || ctgid != (__u32)BPF_CORE_READ(child, pid))
		return 0;
	t = bpf_map_lookup_elem(&traced, &ptgid);
	if (!t || !follow(ctgid, t->root))
		return 0;
	/* the record names the parent (current): the child's name is its parent's until it
	 * execs, when an EXEC record follows */
	emit(GP_EV_FORK, ctgid, ptgid, t);
	return 0;
}

static __always_inline bool comm_matches(void)
{
	char c[GP_COMM_LEN];

	bpf_get_current_comm(c, sizeof(c));
	for (int i = 0; i < GP_COMM_LEN; i++) {
		if (c[i] != comm_filter[i])
			return false;
		if (!c[i])
			break;
	}
	return true;
}

/* sched_process_exec(struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm):
 * the name is already the new image's */
SEC("raw_tp/sched_process_exec")
int procs_exec(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gp_traced *t;

	(void)ctx;
	if (!gp_filter) {
		emit(GP_EV_EXEC, tgid, 0, NULL);
		return 0;
	}
	t = bpf_map_lookup_elem(&traced, &tgid);
	if (!t && ((by_comm && comm_matches()) ||
		   (cgroup_filter && bpf_get_current_ancestor_cgroup_id(cgroup_level) == cgroup_filter))) {
		if (!follow(tgid, tgid))
			return 0;
		t = bpf_map_lookup_elem(&traced, &tgid);
	}
	if (t)
		emit(GP_EV_EXEC, tgid, 0, t);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int procs_exit(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gp_traced *t;

	(void)ctx;
	if (!gp_filter || !gp_process_dead())
		return 0;
	t = bpf_map_lookup_elem(&traced, &tgid);
	if (!t)
		return 0;
	emit(GP_EV_GONE, tgid, 0, t);
	bpf_map_delete_elem(&traced, &tgid);
	return 0;
}
