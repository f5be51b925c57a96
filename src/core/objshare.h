/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the BPF objects of one run share, as plain descriptors and settings: the pieces of
 * the runtime (the process tree, the library watch, the allocation source) get this and
 * their own options, never the run itself [retsnoop's mass_attacher__new(skel, ksyms,
 * &opts)], so that none of them includes run.h and the run alone calls into them.
 */
#ifndef GP_OBJSHARE_H
#define GP_OBJSHARE_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

struct bpf_map;
struct gp_events;
struct gp_handlers;

struct objshare {
	int traced_fd;  /* the process tree's `traced` map, or -1 (no tree) */
	int ended_fd;   /* bpf/common.bpf.h's gp_ended, or -1 */
	int exits_fd;   /* bpf/common.bpf.h's gp_exits, or -1 */
	int ring_fd;    /* the ordered ring buffer, or -1 */
	int hits_fd;    /* the budget's hit counters (bpf/budget.bpf.h), or -1: no budget */
	bool filter;    /* only the processes in `traced` (else every one) */
	uint32_t max_procs;
	uint64_t max_pending;
	struct gp_events *events; /* the reader of ring_fd */
};

/* Before an object loads: the shared `traced`, gp_ended and gp_exits maps, and its gp_filter. */
int objshare__adopt(const struct objshare *s, struct bpf_map *traced, struct bpf_map *ended, struct bpf_map *exits,
		    bool *filter);
/* Before an object with budgeted probes loads: the budget's hit counters, or none. */
int objshare__adopt_hits(const struct objshare *s, struct bpf_map *hits, bool *count);
/* The fair shares of an object's in-flight tables (bpf/shares.bpf.h), of max_pending places. */
void objshare__set_shares(const struct objshare *s, struct bpf_map *counters, __u32 *free_places, __u32 *proc,
			  __u32 *user);
/* Subscribes h to the ordered ring buffer; -ENOENT when there is none. */
int objshare__subscribe(const struct objshare *s, const struct gp_handlers *h);

#endif
