/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "core/attach.h"
#include "core/events.h"
#include "core/modeshare.h"
#include "core/run_impl.h"

int gp_share__load_obj(struct gp_run *run, struct bpf_object_skeleton *s, struct bpf_map *traced,
		       struct bpf_map *ended, struct bpf_map *exits, bool *filter, struct bpf_map *events,
		       char *err, size_t len)
{
	int r = gp_run__adopt_map(run, traced, ended, exits, filter);

	if (r) {
		snprintf(err, len, "cannot share the process table: %s", strerror(-r));
		return r;
	}
	/* one ring buffer with the allocation records: one order for all of them */
	r = events ? bpf_map__reuse_fd(events, run->shared_rb) : 0;
	if (r) {
		snprintf(err, len, "cannot share the ring buffer: %s", strerror(-r));
		return r;
	}
	r = bpf_object__load_skeleton(s);
	if (r)
		attach__load_error(r, err, len);
	return r;
}

int gp_share__start(struct gp_run *run, struct bpf_program *exit_prog, const struct gp_handlers *h, char *err,
		    size_t len)
{
	int r = exit_prog ? attach_set__auto(run->links, exit_prog, err, len) : 0;

	if (r)
		return r;
	r = gp_run__subscribe(run, h);
	if (r)
		snprintf(err, len, "cannot read the ring buffer: %s", strerror(-r));
	return r;
}

struct gp_snap_pid *gp_snap__pids(struct gp_snap_pid **pids, size_t n)
{
	struct gp_snap_pid *p = realloc(*pids, (n ? n : 1) * sizeof(*p));

	if (p)
		*pids = p;
	return p;
}

void gp_snap__add_pid(struct gp_snap *hdr, struct gp_snap_pid *pids, uint32_t pid, const char *comm, bool unnamed,
		      bool exited, uint64_t exit_ns, uint64_t probe_hits)
{
	struct gp_snap_pid *p = &pids[hdr->nr_pids++];

	*p = (struct gp_snap_pid){ .pid = pid, .exited = exited, .exit_ns = exited ? exit_ns : 0,
				   .probe_hits = probe_hits, .unnamed = unnamed };
	memcpy(p->comm, comm, sizeof(p->comm));
	hdr->pids = pids;
}
