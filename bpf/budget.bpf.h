/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The probe hits the overhead budget reads (src/core/budget.h): a BPF object whose probes
 * the budget may sample includes this and counts each hit with gp_sampled_hit(). The run
 * creates the array (BPF_F_MMAPABLE, read by user space without a system call) and the
 * object reuses it before loading (gp_run__adopt_hits); without a budget, gp_count_hits is
 * false and the count compiles away.
 */
#ifndef GP_BUDGET_BPF_H
#define GP_BUDGET_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, GP_HIT_WINDOW + 1);
	__type(key, __u32);
	__type(value, struct gp_hit_slot);
} gp_hits SEC(".maps");

const volatile bool gp_count_hits = false;

/* Process tgid's slot (the spill slot when another process holds its own), taken with a
 * compare-and-swap the first time; NULL only if the look-up fails. */
static __always_inline struct gp_hit_slot *gp_hit_slot_of(__u32 tgid)
{
	__u32 i = tgid & (GP_HIT_SLOTS - 1), spill = GP_HIT_SLOTS;
	struct gp_hit_slot *s = bpf_map_lookup_elem(&gp_hits, &i);

	if (s && s->pid != tgid) {
		__u32 old = s->pid ? s->pid : __sync_val_compare_and_swap(&s->pid, 0, tgid);

		if (old && old != tgid) {
			s = bpf_map_lookup_elem(&gp_hits, &spill);
		} else if (!old) {
			/* taken: the budget looks for its new owner (a process new to it) */
			__u32 win = GP_HIT_WINDOW;
			struct gp_hit_slot *w = bpf_map_lookup_elem(&gp_hits, &win);

			s->since_ns = bpf_ktime_get_ns();
			if (w)
				__sync_fetch_and_add(&w->hits, 1);
		}
	}
	return s;
}

/* Whether the budget armed tgid's probes for it alone (slot s, its own): every call counted. */
static __always_inline bool gp_slot_exact(const struct gp_hit_slot *s, __u32 tgid)
{
	return s && s->pid == tgid && (*(volatile __u32 *)&s->flags & GP_SLOT_EXACT);
}

/* The window's number (GP_EPOCH_FIRST on) while it is open, GP_EPOCH_UNSEEN while it is
 * closed, GP_EPOCH_EXACT without a budget. */
static __always_inline __u32 gp_window_epoch(void)
{
	__u32 win = GP_HIT_WINDOW, f;
	struct gp_hit_slot *w;

	if (!gp_count_hits)
		return GP_EPOCH_EXACT;
	w = bpf_map_lookup_elem(&gp_hits, &win);
	if (!w)
		return GP_EPOCH_EXACT;
	f = *(volatile __u32 *)&w->flags;
	return f ? f : GP_EPOCH_UNSEEN;
}

/* Whether the budget's window is open (always, without a budget): a return probe times
 * only the calls whose entry was counted. */
static __always_inline bool gp_window_open(void)
{
	return gp_window_epoch() != GP_EPOCH_UNSEEN;
}

/* The same for tgid: a process whose calls are all counted (GP_SLOT_EXACT) is seen whatever
 * the window, and its epoch is GP_EPOCH_EXACT (every synchronization of it is seen). */
static __always_inline __u32 gp_window_epoch_of(__u32 tgid)
{
	__u32 e = gp_window_epoch();

	if (e != GP_EPOCH_UNSEEN)
		return e;
	return gp_slot_exact(gp_hit_slot_of(tgid), tgid) ? GP_EPOCH_EXACT : e;
}

static __always_inline bool gp_window_open_of(__u32 tgid)
{
	return gp_window_epoch_of(tgid) != GP_EPOCH_UNSEEN;
}

/*
 * How much of a gap of `gap` ns since the process's last counted hit it spent on a CPU,
 * calling or working between calls (active_ns: the window's CPU time in the call-bound
 * model, src/lib/sampling.c). Where the same thread took the last hit in the same window,
 * its context switches since say how the gap went: none, it ran all of it (a loop with
 * 200 us of work between launches is not read as one with 100); only involuntary ones (a
 * loaded machine took the CPU from it), it ran all but its wait on a run queue (exact:
 * task->sched_info.run_delay); a voluntary one, it slept (a paced loop, a blocking
 * synchronization: sleep_ns, among gap_ns). Anything else (another thread's hit, the
 * window's first) counts up to GP_ACTIVE_GAP_NS, as a slice spent waiting for a CPU is
 * longer. `head` counts the hits of a window before the process first slept in it, and
 * slept_ns is when that was: a paced process that was behind when the window opened calls
 * back to back until it caught up, and its pace is what it made after.
 * Plain loads and stores: threads may race on the slot's fields, and a gap is then judged
 * as another thread's (no atomic exchange before Linux 5.12).
 */
static __always_inline __u64 gp_gap_active(struct gp_hit_slot *s, __u64 gap, __u32 epoch)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 nv = BPF_CORE_READ(t, nvcsw), niv = BPF_CORE_READ(t, nivcsw), delay = 0, d, got;
	bool same = *(volatile __u32 *)&s->last_tid == tid && *(volatile __u32 *)&s->last_epoch == epoch;

	if (bpf_core_field_exists(t->sched_info))
		delay = BPF_CORE_READ(t, sched_info.run_delay);
	got = gap < GP_ACTIVE_GAP_NS ? gap : GP_ACTIVE_GAP_NS;
	if (same) {
		__sync_fetch_and_add(&s->gaps, 1);
		__sync_fetch_and_add(&s->gap_ns, gap);
		d = delay - *(volatile __u64 *)&s->last_delay;
		if (nv != *(volatile __u64 *)&s->last_nvcsw) {
			__sync_fetch_and_add(&s->sleep_ns, gap);
			if (*(volatile __u32 *)&s->slept_epoch != epoch)
				*(volatile __u64 *)&s->slept_ns = bpf_ktime_get_ns();
			*(volatile __u32 *)&s->slept_epoch = epoch;
		} else if (niv == *(volatile __u64 *)&s->last_nivcsw) {
			got = gap;
		} else if (d > 0 && d < gap) { /* no run_delay (no CONFIG_SCHED_INFO): as another's */
			got = gap - d;
		}
	}
	if (*(volatile __u32 *)&s->slept_epoch != epoch)
		__sync_fetch_and_add(&s->head, 1);
	*(volatile __u32 *)&s->last_tid = tid;
	*(volatile __u32 *)&s->last_epoch = epoch;
	*(volatile __u64 *)&s->last_nvcsw = nv;
	*(volatile __u64 *)&s->last_nivcsw = niv;
	*(volatile __u64 *)&s->last_delay = delay;
	return got;
}

/*
 * One hit of a sampleable probe by process tgid: an inlined array look-up and an atomic
 * add; a process takes its slot with a compare-and-swap the first time. Returns whether
 * the call is to be counted: false outside the budget's window (then it is a stray, and
 * the mode counts nothing of it, so that its counts and the budget's agree).
 */
static __always_inline bool gp_sampled_hit(__u32 tgid)
{
	struct gp_hit_slot *s;
	__u32 epoch;
	bool open;

	if (!gp_count_hits)
		return true;
	epoch = gp_window_epoch();
	open = epoch != GP_EPOCH_UNSEEN;
	s = gp_hit_slot_of(tgid);
	if (!s)
		return true;
	open = open || gp_slot_exact(s, tgid);
	if (open) {
		/* how long it was calling (gp_gap_active) */
		__u64 now = bpf_ktime_get_ns(), last = *(volatile __u64 *)&s->last_ns;

		*(volatile __u64 *)&s->last_ns = now;
		if (!*(volatile __u64 *)&s->first_ns)
			*(volatile __u64 *)&s->first_ns = now;
		__sync_fetch_and_add(&s->active_ns, gp_gap_active(s, now > last ? now - last : 0, epoch));
		__sync_fetch_and_add(&s->hits, 1);
	} else {
		__sync_fetch_and_add(&s->stray, 1);
		__sync_fetch_and_add(&s->stray_calls, 1);
	}
	return open;
}

/* tgid entered cuInit (a priced hit): until it returns it makes no other call. */
static __always_inline void gp_init_begin(__u32 tgid)
{
	struct gp_hit_slot *s;

	if (!gp_count_hits)
		return;
	s = gp_hit_slot_of(tgid);
	if (!s)
		return;
	__sync_fetch_and_add(&s->fixed, 1);
	if (s->pid == tgid)
		__sync_fetch_and_or(&s->flags, GP_SLOT_INIT);
}

/* tgid's first context was made (cuDevicePrimaryCtxRetain, cuCtxCreate returned): no
 * launch or synchronization of it came before, none can without a context (the budget
 * arming its probes for it alone missed none if armed by then). It was cuInit's return:
 * on the H200 a job's cuInit returned in a few ms, before its arm, while making its context
 * took far longer, and 4 of 4 short jobs were estimated (2,956 for their 2,812 launches,
 * every one seen) where they were counted whole. */
static __always_inline void gp_init_done(__u32 tgid)
{
	struct gp_hit_slot *s;

	if (!gp_count_hits)
		return;
	s = gp_hit_slot_of(tgid);
	if (!s || s->pid != tgid || (s->flags & GP_SLOT_READY))
		return;
	s->since_ns = bpf_ktime_get_ns();
	__sync_fetch_and_or(&s->flags, GP_SLOT_READY);
}

/* A hit priced with the strays and never counted (gp_sampled_extra's count). */
static __always_inline void gp_extra_hit(__u32 tgid)
{
	struct gp_hit_slot *s;

	if (!gp_count_hits)
		return;
	s = gp_hit_slot_of(tgid);
	if (s)
		__sync_fetch_and_add(&s->stray, 1);
}

/*
 * One hit of a probe the budget samples but whose calls are not the ones it counts (the
 * naming calls, which a driver may make for every launch): priced with the strays, never
 * counted. Returns whether its window is open (its program then does its work).
 */
static __always_inline bool gp_sampled_extra(__u32 tgid)
{
	gp_extra_hit(tgid);
	return gp_window_open_of(tgid);
}

/*
 * One hit of a probe the budget never samples (allocation and free, copy and the calls
 * that time copies): always attached, so it is priced, and the budget leaves the sampled
 * probes what is left of its share.
 */
static __always_inline void gp_priced_hit(__u32 tgid)
{
	struct gp_hit_slot *s;

	if (!gp_count_hits)
		return;
	s = gp_hit_slot_of(tgid);
	if (s)
		__sync_fetch_and_add(&s->fixed, 1);
}

#endif /* GP_BUDGET_BPF_H */
