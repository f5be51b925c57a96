/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <bpf/libbpf.h>
#include "core/events.h"
#include "core/objshare.h"

int objshare__adopt(const struct objshare *s, struct bpf_map *traced, struct bpf_map *ended, struct bpf_map *exits,
		    bool *filter)
{
	int r = s->ended_fd >= 0 ? bpf_map__reuse_fd(ended, s->ended_fd) : 0;

	if (!r)
		r = s->exits_fd >= 0 ? bpf_map__reuse_fd(exits, s->exits_fd) : bpf_map__set_max_entries(exits, s->max_procs);
	*filter = s->filter;
	bpf_map__set_max_entries(traced, s->max_procs);
	if (r)
		return r;
	return s->traced_fd >= 0 ? bpf_map__reuse_fd(traced, s->traced_fd) : 0;
}

int objshare__adopt_hits(const struct objshare *s, struct bpf_map *hits, bool *count)
{
	*count = s->hits_fd >= 0;
	if (s->hits_fd < 0)
		return bpf_map__set_max_entries(hits, 1); /* never written */
	return bpf_map__reuse_fd(hits, s->hits_fd);
}

/*
 * The in-flight tables' shares: the first quarter of a table's places go to any call
 * unshared; past that a process counts against an eighth, a user against a quarter. So one
 * process holds at most 3/8 of a table, one user half, two users 3/4: whoever else calls
 * keeps the rest. The counters: one per process that calls under pressure (the
 * followed-process table's size) and as many users.
 */
void objshare__set_shares(const struct objshare *s, struct bpf_map *counters, __u32 *free_places, __u32 *proc,
			  __u32 *user)
{
	uint64_t n = s->max_pending;

	*free_places = (__u32)(n / 4);
	*proc = (__u32)(n / 8 ? n / 8 : 1);
	*user = (__u32)(n / 4 ? n / 4 : 1);
	bpf_map__set_max_entries(counters, s->max_procs + 1024);
}

int objshare__subscribe(const struct objshare *s, const struct gp_handlers *h)
{
	return s->ring_fd >= 0 ? gp_events__add(s->events, s->ring_fd, h) : -ENOENT;
}
