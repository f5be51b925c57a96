/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The --trace timeline every mode with lanes writes to (driver calls, ioctls...): a file
 * writer given by the front end (src/out/trace.c's, as a src/lib/tracesink.h sink) with the
 * processes named once, and a tally per process
 * and lane (events, errors, time) plus the records each lane lost, which the trace mode's
 * summary prints. Opened by the run when --trace is given.
 */
#ifndef GP_TIMELINE_H
#define GP_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/tracesink.h"

struct json_object;
struct gp_timeline;
struct gp_counters;

enum gp_lane {
	GP_LANE_CALL,  /* driver calls (--trace) */
	GP_LANE_IOCTL, /* nvidia ioctls (--ioctl) */
	GP_LANE_NCCL,  /* NCCL calls (--nccl), group boundaries included */
	GP_LANE_GPU,   /* work on the GPU (--gpu-time): tid is device << 16 | stream's low 16 bits */
	GP_LANE__COUNT,
};

struct gp_lane_tally {
	uint64_t events, errors, ns;
};

/* A timeline writing path through the sink open gives (the front end's: src/lib/tracesink.h);
 * NULL with one line in err. */
struct gp_timeline *gp_timeline__open(trace_sink_open_fn *open, const char *path, int chrome, char *err,
				      size_t len);
/* The name of pid's track; read from /proc when never given. */
void gp_timeline__set_comm(struct gp_timeline *tl, uint32_t pid, const char *comm);
const char *gp_timeline__comm(struct gp_timeline *tl, uint32_t pid);
/* One event (args taken over, may be NULL); failed when ret < 0 for ioctls, != 0 for calls. */
void gp_timeline__event(struct gp_timeline *tl, enum gp_lane lane, uint32_t pid, uint32_t tid,
			const char *name, uint64_t ts_ns, uint64_t dur_ns, int64_t ret,
			struct json_object *args);
/* fn(ctx, lane, pid, dur_ns, ret) for every event written from now on (one listener). */
void gp_timeline__listen(struct gp_timeline *tl,
			 void (*fn)(void *ctx, enum gp_lane lane, uint32_t pid, uint64_t dur_ns, int64_t ret),
			 void *ctx);
struct gp_lane_tally gp_timeline__tally(struct gp_timeline *tl, uint32_t pid, enum gp_lane lane);
void gp_timeline__lane_drops(struct gp_timeline *tl, enum gp_lane lane, uint64_t dropped);
uint64_t gp_timeline__drops(const struct gp_timeline *tl, enum gp_lane lane);
uint64_t gp_timeline__written(const struct gp_timeline *tl);
/* A counter sample at now_ns: begin returns the set to add the modes' counters to
 * (gp_counters__add), end writes one counter event per process and track (detail series
 * left out): running totals as their change since the previous sample (the first: since
 * the timeline opened), stamped at that sample's time, gauges as they are now. */
struct gp_counters *gp_timeline__sample_begin(struct gp_timeline *tl, uint64_t now_ns);
void gp_timeline__sample_end(struct gp_timeline *tl);
/* Counter series never written (more than the timeline keeps). */
uint64_t gp_timeline__counter_drops(const struct gp_timeline *tl);
uint64_t gp_timeline__counter_events(const struct gp_timeline *tl);
/* A fork, exec or exit (GP_EV_FORK, GP_EV_EXEC, GP_EV_GONE or GP_EV_EXIT) as an instant
 * event on the process's track, for a process the run follows (root != 0) or one the
 * timeline shows already; an exec renames the track, an exit is written once. */
void gp_timeline__proc(struct gp_timeline *tl, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t root,
		       uint64_t ts_ns, const char *comm);
uint64_t gp_timeline__instants(const struct gp_timeline *tl);
/* An instant event (args taken over, may be NULL) on pid's track, only where the timeline
 * shows that process already; returns whether it was written. */
bool gp_timeline__note(struct gp_timeline *tl, uint32_t pid, const char *name, uint64_t ts_ns,
		       struct json_object *args);
/* Ends the file with summary (taken over); 0 or -errno. Frees tl. */
int gp_timeline__close(struct gp_timeline *tl, struct json_object *summary);

#endif
