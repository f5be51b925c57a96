/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every BPF object of gpuprobe shares, written once [bcc libbpf-tools maps.bpf.h,
 * bits.bpf.h]: drop counting, the table of processes whose exit a mode reports, log2
 * slots, map look-up-or-create, and the exit of a traced process. Include after
 * vmlinux.h, the libbpf headers and gpuprobe.h.
 */
#ifndef GP_COMMON_BPF_H
#define GP_COMMON_BPF_H

#define GP_E2BIG 7 /* errno.h is not for BPF; a full hash map refuses an insert with -E2BIG */

/*
 * The processes a run follows, shared by every object (the run creates the map and each
 * object reuses its fd before loading): consulted only when the run filters (gp_filter:
 * a command and its children, -p with several PIDs or --tree, --comm, --cgroup); the
 * uprobes are then system-wide and a process outside the set returns at once.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* --max-procs */
	__type(key, __u32);
	__type(value, struct gp_traced);
} traced SEC(".maps");

const volatile bool gp_filter = false;

/*
 * The run's end, shared by every object that follows processes (the run creates it and
 * each object reuses its fd before loading, as `traced`): once the run sets it, every
 * probe returns at once. The final read is then bounded and the final report comes at
 * once; the probes' removal follows it (without uprobe_multi links, on Linux before 6.6,
 * that takes seconds: ~0.1 s a perf-event uprobe). A look-up of a one-entry array is
 * inlined by the verifier: a load, no call.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} gp_ended SEC(".maps");

/*
 * The cgroups each known process ended in, by tgid, shared by every object as gp_ended
 * (the run creates it; --max-procs entries, the least recent go first): written by the exit
 * program of an object that knew the process, before its exit record. The daemon labels a
 * process's series with its cgroup; one that ended before the daemon read its records (a
 * forked worker that lives 0.1 s, the daemon behind its buffers) can no longer be read
 * from /proc (and an exited one not yet reaped reads "/" on every v1 line), and its counts
 * went under no cgroup (test_fleet's workers, 10 of 30) or under "/".
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192); /* --max-procs */
	__type(key, __u32);
	__type(value, struct gp_exit_cgroups);
} gp_exits SEC(".maps");

/* The id of the cgroup of the memory controller the calling task is in (its v1
 * hierarchy's on a hybrid host, where the kubelet's paths are; v2's where memory is
 * there); 0 without the controller. */
static __always_inline __u64 gp_memory_cgroup_id(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct cgroup_subsys_state *css = NULL;
	struct css_set *cs;
	int i;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
		return 0;
	i = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	cs = BPF_CORE_READ(t, cgroups);
	if (!cs || i < 0 || i >= 64 || bpf_core_read(&css, sizeof(css), &cs->subsys[i]) || !css)
		return 0;
	return BPF_CORE_READ(css, cgroup, kn, id);
}

static __always_inline bool gp_run_ended(void)
{
	__u32 zero = 0, *v = bpf_map_lookup_elem(&gp_ended, &zero);

	return v && *v;
}

static const struct gp_traced gp_unfiltered;

/*
 * The flags a record on a hot path is submitted with: no wake-up, unless the ring is more
 * than half full (so that a burst is not lost). A wake-up costs the traced thread far more
 * than the record: the kernel raises an irq_work (a self-IPI, a VM exit on a virtual
 * machine) and wakes the reader on another CPU. Measured: 13-24 us per alloc/free pair on
 * the 2-CPU development machine against 4.6 us without (bench/run.py's stacks section);
 * --bandwidth-util's synchronize and event records cost a PyTorch loop on the H200 about
 * 2 % of its time with wake-ups (bench/gpu/results-inproc-h200.md). The reader reads every
 * few milliseconds without being woken (gp_events__poll, the daemon's loop). Records that
 * steer attaching (a process, a library) still wake it: they are rare and must be prompt.
 * --trace's records wake it too: with two threads calling as fast as they can on the
 * 2-CPU development machine, a reader woken only at half full fell behind (7593 of 400 000
 * records dropped in one of two runs; none with wake-ups).
 */
static __always_inline __u64 gp_quiet_flags(void *rb)
{
	return bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(rb, BPF_RB_RING_SIZE) / 2 ?
		       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Whether the calling process is one the run follows: its entry in `traced`,
 * &gp_unfiltered when the run filters nothing, NULL when it is not followed or the run
 * has ended. */
static __always_inline const struct gp_traced *gp_traced_self(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (gp_run_ended())
		return NULL;
	if (!gp_filter)
		return &gp_unfiltered;
	return bpf_map_lookup_elem(&traced, &tgid);
}

/* The calling process's image: exec increments task->self_exec_id (begin_new_exec), and
 * threads and forks copy it, so (tgid, image) names one address space, whether or not the
 * run follows processes. Keys that outlive an exec carry it. */
static __always_inline __u32 gp_image(void)
{
	return (__u32)bpf_get_current_task_btf()->self_exec_id;
}

/* One more event lost for reason `what`: every object keeps its counters in a .bss array
 * indexed by its own drop enum, which the loader shows. */
#define gp_count_drop(counters, what) __sync_fetch_and_add(&(counters)[(what)], 1)

/* floor(log2(v)) clamped to the last of `slots` buckets; bounded for the verifier. */
static __always_inline __u32 gp_log2_slot(__u64 v, __u32 slots)
{
	__u32 r = 0;

	for (int i = 0; i < 64 && v > 1; i++) {
		v >>= 1;
		r++;
	}
	return r >= slots ? slots - 1 : r;
}

/* The value of key in a hash map, inserted as *init when absent (another CPU may win the
 * race to insert: then its value is returned). NULL only when the map is full. */
static __always_inline void *gp_lookup_or_init(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* Remembers that tgid made a call this object tracks, so that its exit is reported.
 * Returns false when the table was full (the caller counts that drop). */
static __always_inline bool gp_remember_proc(void *procs, __u32 tgid)
{
	__u8 one = 1;

	if (bpf_map_lookup_elem(procs, &tgid))
		return true;
	return bpf_map_update_elem(procs, &tgid, &one, BPF_NOEXIST) != -GP_E2BIG;
}

/* The process's name: the leader's comm, not the calling thread's (CUDA programs end on
 * the driver's own threads, named cuda-EvtHandlr and the like). */
static __always_inline void gp_leader_comm(char *buf)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct task_struct *leader = BPF_CORE_READ(t, group_leader);

	if (bpf_core_read_str(buf, GP_COMM_LEN, &leader->comm) < 0)
		bpf_get_current_comm(buf, GP_COMM_LEN);
}

/* sched_process_exit fires for every thread: is this the process's last one? do_exit()
 * decrements signal->live (group_dead = atomic_dec_and_test(...)) before the tracepoint
 * in every kernel version, so 0 means the whole process is exiting. Read from the task,
 * this works for a raw tracepoint, which needs no tracefs (and so no root). */
static __always_inline bool gp_process_dead(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(t, signal, live.counter) == 0;
}

/*
 * The body of every object's sched_process_exit program (SEC("raw_tp/sched_process_exit")):
 * a thread that dies inside a call never returns, so its in-flight record (inflight, keyed
 * by pid_tgid; NULL: none) goes; when the process dies and procs (NULL: none) knows it, it
 * is forgotten there, its cgroup kept in gp_exits, and a GP_EV_EXIT record goes to rb.
 * Returns false when rb was full (a drop to count).
 */
static __always_inline bool gp_on_exit(void *inflight, void *procs, void *rb)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct gp_exit_event *e;
	struct gp_exit_cgroups cg;

	if (inflight)
		bpf_map_delete_elem(inflight, &id);
	if (!procs || !gp_process_dead() || !bpf_map_lookup_elem(procs, &tgid))
		return true;
	bpf_map_delete_elem(procs, &tgid);
	cg.v2 = bpf_get_current_cgroup_id();
	cg.memory = gp_memory_cgroup_id();
	bpf_map_update_elem(&gp_exits, &tgid, &cg, BPF_ANY);
	e = bpf_ringbuf_reserve(rb, sizeof(*e), 0);
	if (!e)
		return false;
	e->type = GP_EV_EXIT;
	e->pid = tgid;
	e->ts_ns = bpf_ktime_get_ns();
	e->img = gp_image();
	e->_pad = 0;
	gp_leader_comm(e->comm);
	bpf_ringbuf_submit(e, 0);
	return true;
}

#endif /* GP_COMMON_BPF_H */
