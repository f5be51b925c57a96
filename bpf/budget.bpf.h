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
	__uint(max_entries, GP_HIT_SLOTS + 1);
	__type(key, __u32);
	__type(value, struct gp_hit_slot);
} gp_hits SEC(".maps");

const volatile bool gp_count_hits = false;

/* One hit of a sampleable probe by process tgid: an inlined array look-up and an atomic
 * add; a process takes its slot with a compare-and-swap the first time. */
static __always_inline void gp_sampled_hit(__u32 tgid)
{
	__u32 i = tgid & (GP_HIT_SLOTS - 1), spill = GP_HIT_SLOTS;
	struct gp_hit_slot *s;

	if (!gp_count_hits)
		return;
	s = bpf_map_lookup_elem(&gp_hits, &i);
	if (!s)
		return;
	if (s->pid != tgid) {
		__u32 old = s->pid ? s->pid : __sync_val_compare_and_swap(&s->pid, 0, tgid);

		if (old && old != tgid) {
			s = bpf_map_lookup_elem(&gp_hits, &spill);
			if (!s)
				return;
		}
	}
	__sync_fetch_and_add(&s->hits, 1);
}

#endif /* GP_BUDGET_BPF_H */
