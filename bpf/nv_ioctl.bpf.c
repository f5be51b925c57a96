/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --ioctl: ioctls on nvidia device nodes, counted and timed in the kernel per process,
 * device and command; user space reads the table at report time.
 *
 * Two front ends share one body: kprobe/kretprobe on the drivers' unlocked_ioctl entry
 * points (only nvidia files reach them), or, where the kernel has no kprobes, the
 * syscalls:sys_{enter,exit}_ioctl tracepoints. Those fire for every ioctl of every
 * process on the node, so the filter is ordered cheapest first: PID, then the fd's
 * inode major against the few majors the loader found.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "nv_ioctl.h"
#include "common.bpf.h"
#include "shares.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define S_IFMT 00170000
#define S_IFCHR 0020000
#define MINORBITS 20

const volatile __u32 target_tgid = 0; /* 0: every process */
const volatile __u32 majors[GP_IOCTL_MAX_MAJORS] = {};
const volatile __u32 nr_majors = 0;
const volatile bool emit_events = false; /* --trace: one record per ioctl */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct gp_ioctl_key);
	__type(value, struct gp_ioctl_stat);
} ioctl_stats SEC(".maps");

struct start {
	struct gp_held held; /* its place in the table (shares.bpf.h) */
	__u64 ts_ns;
	__u32 major, minor;
	__u32 cmd, ctrl_cmd;
};

/* In-flight ioctls by thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240); /* --max-pending */
	__type(key, __u64);
	__type(value, struct start);
} ioctl_start SEC(".maps");

/* Process names, the group leader's, written once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* --max-procs */
	__type(key, __u32);
	__type(value, char[GP_COMM_LEN]);
} ioctl_comms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* sized by the loader when emit_events is set */
} ioctl_events SEC(".maps");

__u64 idrops[GP_IDROP__COUNT];

#define count_drop(what) gp_count_drop(idrops, what)

static __always_inline bool traced_major(__u32 major)
{
	for (int i = 0; i < GP_IOCTL_MAX_MAJORS; i++) {
		if (i >= nr_majors)
			break;
		if (majors[i] == major)
			return true;
	}
	return false;
}

static __always_inline int ioctl_enter(__u32 rdev, __u32 cmd, __u64 arg)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct start s = {
		.major = rdev >> MINORBITS,
		.minor = rdev & ((1U << MINORBITS) - 1),
		.cmd = cmd,
	};

	if (((cmd >> 8) & 0xff) == GP_NV_IOCTL_TYPE && (cmd & 0xff) == GP_NV_ESC_RM_CONTROL) {
		if (!arg || bpf_probe_read_user(&s.ctrl_cmd, sizeof(s.ctrl_cmd),
						(void *)(arg + GP_NVOS54_CMD_OFFSET)))
			count_drop(GP_IDROP_CTRL_READ);
	}
	if (gp_share_hold(0, id >> 32, &s.held)) {
		count_drop(GP_IDROP_SHARE);
		return 0;
	}
	s.ts_ns = bpf_ktime_get_ns();
	if (gp_inflight_put(&ioctl_start, 0, id, &s))
		count_drop(GP_IDROP_PENDING);
	return 0;
}

static __always_inline struct gp_ioctl_stat *stat_of(struct gp_ioctl_key *k)
{
	static const struct gp_ioctl_stat zero;
	struct gp_ioctl_stat *st = gp_lookup_or_init(&ioctl_stats, k, &zero);

	if (!st)
		count_drop(GP_IDROP_KEYS);
	return st;
}

static __always_inline int ioctl_leave(long ret)
{
	__u64 id = bpf_get_current_pid_tgid(), d, old;
	__u32 tgid = id >> 32, slot;
	struct gp_ioctl_key k = {};
	struct gp_ioctl_stat *st;
	struct gp_ioctl_event *e;
	struct start *s;
	char comm[GP_COMM_LEN];

	s = bpf_map_lookup_elem(&ioctl_start, &id);
	if (!s)
		return 0; /* not an nvidia ioctl (tracepoint backend), or its entry was lost */
	d = bpf_ktime_get_ns() - s->ts_ns;
	k.pid = tgid;
	k.major = s->major;
	k.minor = s->minor;
	k.cmd = s->cmd;
	k.ctrl_cmd = s->ctrl_cmd;
	if (emit_events) {
		e = bpf_ringbuf_reserve(&ioctl_events, sizeof(*e), 0);
		if (e) {
			e->type = GP_EV_IOCTL;
			e->pid = tgid;
			e->tid = (__u32)id;
			e->cmd = s->cmd;
			e->ts_ns = s->ts_ns;
			e->dur_ns = d;
			e->ret = ret;
			e->major = s->major;
			e->minor = s->minor;
			e->ctrl_cmd = s->ctrl_cmd;
			e->_pad = 0;
			bpf_ringbuf_submit(e, gp_quiet_flags(&ioctl_events));
		} else {
			count_drop(GP_IDROP_RINGBUF);
		}
	}
	gp_inflight_done(&ioctl_start, 0, id, s);

	if (!bpf_map_lookup_elem(&ioctl_comms, &tgid)) {
		gp_leader_comm(comm);
		if (bpf_map_update_elem(&ioctl_comms, &tgid, comm, BPF_NOEXIST) == -GP_E2BIG)
			count_drop(GP_IDROP_PROCS);
	}
	st = stat_of(&k);
	if (!st)
		return 0;
	__sync_fetch_and_add(&st->calls, 1);
	if (ret < 0)
		__sync_fetch_and_add(&st->errors, 1);
	__sync_fetch_and_add(&st->total_ns, d);
	slot = gp_log2_slot(d / 1000, GP_HIST_SLOTS);
	if (slot < GP_HIST_SLOTS)
		__sync_fetch_and_add(&st->slots[slot], 1);
	for (int i = 0; i < 4; i++) {
		old = st->max_ns;
		if (d <= old || __sync_val_compare_and_swap(&st->max_ns, old, d) == old)
			break;
	}
	return 0;
}

static __always_inline bool pid_filtered(void)
{
	return (target_tgid && (bpf_get_current_pid_tgid() >> 32) != target_tgid) || !gp_traced_self();
}

/* fd -> task->files->fdt->fd[fd] -> file->f_inode: i_rdev of a character device, else 0 */
static __always_inline __u32 fd_rdev(__u64 fd)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	struct file **fds, *f = NULL;
	struct inode *ino;

	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return 0;
	ino = BPF_CORE_READ(f, f_inode);
	if (!ino || (BPF_CORE_READ(ino, i_mode) & S_IFMT) != S_IFCHR)
		return 0;
	return BPF_CORE_READ(ino, i_rdev);
}

SEC("tracepoint/syscalls/sys_enter_ioctl")
int ioctl_tp_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u32 rdev;

	if (pid_filtered())
		return 0;
	rdev = fd_rdev(ctx->args[0]);
	if (!rdev || !traced_major(rdev >> MINORBITS))
		return 0;
	return ioctl_enter(rdev, (__u32)ctx->args[1], ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_exit_ioctl")
int ioctl_tp_exit(struct trace_event_raw_sys_exit *ctx)
{
	return ioctl_leave(ctx->ret);
}

/* nvidia_unlocked_ioctl / uvm_unlocked_ioctl_entry(struct file *, unsigned int, unsigned long) */
SEC("kprobe")
int BPF_KPROBE(ioctl_kp_enter, struct file *file, unsigned int cmd, unsigned long arg)
{
	if (pid_filtered())
		return 0;
	return ioctl_enter(BPF_CORE_READ(file, f_inode, i_rdev), cmd, arg);
}

SEC("kretprobe")
int BPF_KRETPROBE(ioctl_kp_exit, long ret)
{
	return ioctl_leave(ret);
}

/* A thread that dies inside an ioctl, or whose return went unseen (a kretprobe's instances
 * all taken), gives its place back. */
SEC("raw_tp/sched_process_exit")
int ioctl_proc_exit(void *ctx)
{
	gp_inflight_exit(&ioctl_start, 0);
	return 0;
}
