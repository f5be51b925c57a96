/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the modes' own steps (src/modes/<mode>/<mode>_mode.c, src/core/allocsrc.c) share
 * of a run's plumbing, written once: a BPF object loaded onto the run's shared maps,
 * records read from the run's ordered ring buffer, the processes of a snapshot.
 */
#ifndef GP_MODESHARE_H
#define GP_MODESHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/mode.h"

struct gp_run;
struct gp_handlers;
struct bpf_map;
struct bpf_program;
struct bpf_object_skeleton;

/*
 * Loads a skeleton configured by its mode: it filters on the run's followed processes
 * (gp_run__adopt: its `traced` map and gp_filter), and when events is given (its ring
 * buffer map) writes into the run's ordered ring buffer. 0, or -errno with one line in
 * err.
 */
#define gp_share__load(run, skel, events, err, len)                                             \
	gp_share__load_obj(run, (skel)->skeleton, (skel)->maps.traced, (skel)->maps.gp_ended,               \
			   (skel)->maps.gp_exits, (bool *)&(skel)->rodata->gp_filter, events, err, len)
int gp_share__load_obj(struct gp_run *run, struct bpf_object_skeleton *s, struct bpf_map *traced,
		       struct bpf_map *ended, struct bpf_map *exits, bool *filter, struct bpf_map *events,
		       char *err, size_t len);

/* A mode's start on the run's ordered ring buffer: the program that ends its processes'
 * records at their exit (NULL: none), then h subscribed. 0, or -errno with one line. */
int gp_share__start(struct gp_run *run, struct bpf_program *exit_prog, const struct gp_handlers *h, char *err,
		    size_t len);

/* Room for n processes in a snapshot's list (*pids kept by the mode from one snapshot to
 * the next); the list, or NULL when out of memory. */
struct gp_snap_pid *gp_snap__pids(struct gp_snap_pid **pids, size_t n);
/* One more process at the end of hdr's list pids (room made by gp_snap__pids); comm is
 * GP_COMM_LEN bytes, unnamed as gp_snap_pid's. */
void gp_snap__add_pid(struct gp_snap *hdr, struct gp_snap_pid *pids, uint32_t pid, const char *comm, bool unnamed,
		      bool exited, uint64_t exit_ns, uint64_t probe_hits);

#endif
