/* SPDX-License-Identifier: BSD-3-Clause */
/* Processes and probe hits summed over the modes' snapshots (hits.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/allocsrc.h"
#include "core/run_impl.h"
#include "out/hits.h"
#include "lib/u64map.h"

struct hit_acc {
	struct u64map *idx; /* pid -> index + 1 */
	struct gp_snap_pid *v;
	size_t n, cap;
	bool failed;
};

static void acc_add(struct hit_acc *a, const struct gp_snap_pid *p)
{
	uintptr_t at = (uintptr_t)u64map__get(a->idx, p->pid);

	if (!at) {
		if (a->n == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 64;
			struct gp_snap_pid *nv = realloc(a->v, cap * sizeof(*nv));

			if (!nv) {
				a->failed = true;
				return;
			}
			a->v = nv;
			a->cap = cap;
		}
		a->v[a->n] = *p;
		a->v[a->n].probe_hits = 0;
		a->v[a->n].exited = true; /* until a source says it lives */
		if (u64map__put(a->idx, p->pid, (void *)(uintptr_t)(a->n + 1))) {
			a->failed = true;
			return;
		}
		at = ++a->n;
	}
	a->v[at - 1].probe_hits += p->probe_hits;
	a->v[at - 1].exited = a->v[at - 1].exited && p->exited;
	if (!a->v[at - 1].comm[0])
		memcpy(a->v[at - 1].comm, p->comm, sizeof(p->comm));
}

size_t gp_hits__pids(struct gp_run *run, const struct gp_snap *const *snaps, bool all_modes,
		     void (*cb)(void *ctx, const struct gp_snap_pid *p), void *ctx)
{
	struct hit_acc a = { .idx = u64map__new() };
	const struct gp_snap_pid *pp = NULL;
	size_t n = 0;

	if (!a.idx)
		return 0;
	if (run->allocs)
		n = allocsrc__pids(run->allocs, &pp);
	for (size_t j = 0; j < n; j++)
		acc_add(&a, &pp[j]);
	for (int i = 0; i < run->nr; i++) {
		if (!snaps[i] || (!all_modes && !run->slot[i].m->probe_hits))
			continue;
		for (size_t j = 0; j < snaps[i]->nr_pids; j++)
			acc_add(&a, &snaps[i]->pids[j]);
	}
	for (size_t j = 0; j < a.n; j++)
		cb(ctx, &a.v[j]);
	n = a.n;
	free(a.v);
	u64map__free(a.idx);
	return n;
}

size_t gp_hits__run_drops(struct gp_run *run, void (*cb)(void *ctx, const struct gp_snap_pid *p), void *ctx,
			  uint64_t *dropped)
{
	const struct gp_snap *snaps[GP_MAX_MODES] = { 0 };

	for (int i = 0; i < run->nr; i++) {
		snaps[i] = run->slot[i].m->snapshot(run->slot[i].st, run, GP_SNAP_HITS, 0);
		if (dropped)
			dropped[i] = 0;
		for (size_t j = 0; dropped && snaps[i] && j < snaps[i]->nr_drops; j++)
			dropped[i] += snaps[i]->drops[j].count;
	}
	return gp_hits__pids(run, snaps, false, cb, ctx);
}

size_t gp_hits__run(struct gp_run *run, void (*cb)(void *ctx, const struct gp_snap_pid *p), void *ctx)
{
	return gp_hits__run_drops(run, cb, ctx, NULL);
}
