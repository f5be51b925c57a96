/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "core/counters.h"
#include "gpuprobe.h"
#include "core/timeline.h"
#include "lib/tracesink.h"
#include "lib/u64map.h"
#include "lib/util.h"

/* Counter series a timeline keeps (processes x tracks x series); more are counted. */
#define TL_MAX_SERIES 65536

struct tl_proc {
	char comm[GP_COMM_LEN];
	bool named;
	bool shown;  /* something of it was written: its forks, execs and exits are too */
	bool exited; /* its exit was written (a record of each exit source may come) */
	struct gp_lane_tally t[GP_LANE__COUNT];
};

struct gp_timeline {
	struct trace_sink sink; /* the file's writer (src/out/trace.c through the front end) */
	struct u64map *procs; /* pid -> struct tl_proc */
	struct gp_counters *counters;
	uint64_t last_sample_ns; /* the start of the interval the next sample's totals cover */
	uint64_t drops[GP_LANE__COUNT];
	void (*listener)(void *ctx, enum gp_lane lane, uint32_t pid, uint64_t dur_ns, int64_t ret);
	void *listener_ctx;
};

static const char *const lane_kind[GP_LANE__COUNT] = { "call", "ioctl", "nccl", "gpu" };

struct gp_timeline *gp_timeline__open(trace_sink_open_fn *open, const char *path, int chrome, char *err,
				      size_t len)
{
	struct gp_timeline *tl;

	if (!open) {
		snprintf(err, len, "--trace %s: no timeline writer given", path);
		return NULL;
	}
	tl = calloc(1, sizeof(*tl));

	if (!tl || !(tl->procs = u64map__new()) || !(tl->counters = gp_counters__new(TL_MAX_SERIES))) {
		snprintf(err, len, "out of memory");
		if (tl)
			u64map__free(tl->procs);
		free(tl);
		return NULL;
	}
	tl->last_sample_ns = gp_mono_ns();
	if (open(&tl->sink, path, chrome) < 0) {
		snprintf(err, len, "--trace %s: %s", path, strerror(errno));
		gp_counters__free(tl->counters);
		u64map__free(tl->procs);
		free(tl);
		return NULL;
	}
	return tl;
}

static struct tl_proc *proc(struct gp_timeline *tl, uint32_t pid)
{
	struct tl_proc *p = u64map__get(tl->procs, pid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (p && u64map__put(tl->procs, pid, p)) {
		free(p);
		return NULL;
	}
	return p;
}

void gp_timeline__set_comm(struct gp_timeline *tl, uint32_t pid, const char *comm)
{
	struct tl_proc *p = proc(tl, pid);

	if (p && comm && *comm && !p->comm[0])
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
}

const char *gp_timeline__comm(struct gp_timeline *tl, uint32_t pid)
{
	struct tl_proc *p = proc(tl, pid);
	char path[64];
	FILE *f;

	if (!p)
		return "";
	if (!p->comm[0]) {
		/* the kernel's own name of the task: bounded, not the process's to forge beyond 15 bytes */
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(p->comm, sizeof(p->comm), f))
				p->comm[strcspn(p->comm, "\n")] = '\0';
			fclose(f);
		}
	}
	return p->comm;
}

void gp_timeline__event(struct gp_timeline *tl, enum gp_lane lane, uint32_t pid, uint32_t tid,
			const char *name, uint64_t ts_ns, uint64_t dur_ns, int64_t ret,
			struct json_object *args)
{
	const char *comm = gp_timeline__comm(tl, pid);
	struct tl_proc *p = proc(tl, pid);

	tl->sink.ops->process_name(tl->sink.w, pid, comm);
	tl->sink.ops->event(tl->sink.w, lane_kind[lane], pid, tid, name, ts_ns, dur_ns, ret, args);
	if (tl->listener)
		tl->listener(tl->listener_ctx, lane, pid, dur_ns, ret);
	if (!p)
		return;
	p->shown = true;
	p->t[lane].events++;
	p->t[lane].ns += dur_ns;
	p->t[lane].errors += lane == GP_LANE_IOCTL ? ret < 0 : ret != 0;
}

void gp_timeline__listen(struct gp_timeline *tl,
			 void (*fn)(void *ctx, enum gp_lane lane, uint32_t pid, uint64_t dur_ns, int64_t ret),
			 void *ctx)
{
	tl->listener = fn;
	tl->listener_ctx = ctx;
}

struct gp_lane_tally gp_timeline__tally(struct gp_timeline *tl, uint32_t pid, enum gp_lane lane)
{
	struct tl_proc *p = u64map__get(tl->procs, pid);

	return p ? p->t[lane] : (struct gp_lane_tally){ 0 };
}

void gp_timeline__lane_drops(struct gp_timeline *tl, enum gp_lane lane, uint64_t dropped)
{
	tl->drops[lane] = dropped;
}

uint64_t gp_timeline__drops(const struct gp_timeline *tl, enum gp_lane lane)
{
	return tl->drops[lane];
}

uint64_t gp_timeline__written(const struct gp_timeline *tl)
{
	return tl->sink.ops->written(tl->sink.w);
}

/* One counter event per process and track of the rows [from, to): running totals as
 * their change, stamped at the interval's start (a curve's step then covers the interval
 * it counts), gauges as they are now. */
static void write_track(struct gp_timeline *tl, const struct gp_counter_row *rows, size_t from, size_t to,
			uint64_t now_ns)
{
	struct trace_series s[TRACE_SERIES_MAX];
	bool total = rows[from].flags & GP_CTR_TOTAL;
	struct tl_proc *p = proc(tl, rows[from].pid);
	size_t n = 0;

	tl->sink.ops->process_name(tl->sink.w, rows[from].pid, gp_timeline__comm(tl, rows[from].pid));
	if (p)
		p->shown = true;
	for (size_t i = from; i < to; i++) {
		if (rows[i].flags & GP_CTR_DETAIL) /* live views' own series */
			continue;
		s[n].name = rows[i].series;
		s[n++].value = total ? rows[i].delta : rows[i].value;
		if (n == TRACE_SERIES_MAX) { /* more series: more events, one name */
			tl->sink.ops->counter(tl->sink.w, rows[from].pid, rows[from].track,
					      total ? tl->last_sample_ns : now_ns, s, n);
			n = 0;
		}
	}
	if (n)
		tl->sink.ops->counter(tl->sink.w, rows[from].pid, rows[from].track,
				      total ? tl->last_sample_ns : now_ns, s, n);
}

struct gp_counters *gp_timeline__sample_begin(struct gp_timeline *tl, uint64_t now_ns)
{
	gp_counters__begin(tl->counters, now_ns);
	return tl->counters;
}

void gp_timeline__sample_end(struct gp_timeline *tl)
{
	const struct gp_counter_row *rows;
	size_t n = gp_counters__end(tl->counters, &rows), from = 0;
	uint64_t now = gp_counters__now_ns(tl->counters);

	for (size_t i = 1; i <= n; i++) {
		bool quiet = true;

		if (i < n && rows[i].pid == rows[from].pid && !strcmp(rows[i].track, rows[from].track))
			continue;
		for (size_t j = from; j < i; j++)
			quiet = quiet && (rows[j].quiet || (rows[j].flags & GP_CTR_DETAIL));
		/* a track that says nothing new is not written: its curve holds its last point */
		if (!quiet)
			write_track(tl, rows, from, i, now);
		from = i;
	}
	tl->last_sample_ns = now;
}

uint64_t gp_timeline__counter_drops(const struct gp_timeline *tl)
{
	return gp_counters__dropped(tl->counters);
}

static void instant(struct gp_timeline *tl, struct tl_proc *p, uint32_t pid, const char *name, uint64_t ts_ns,
		    json_object *args)
{
	tl->sink.ops->process_name(tl->sink.w, pid, p->comm);
	tl->sink.ops->instant(tl->sink.w, pid, pid, name, ts_ns, args);
	p->shown = true;
}

void gp_timeline__proc(struct gp_timeline *tl, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t root,
		       uint64_t ts_ns, const char *comm)
{
	struct tl_proc *p = u64map__get(tl->procs, pid);
	json_object *args;

	/* node-wide, every exec on the node is a record: only those of processes shown */
	if (!root && (!p || !p->shown))
		return;
	if (!p && !(p = proc(tl, pid)))
		return;
	if (type == GP_EV_FORK || type == GP_EV_EXEC) {
		p->exited = false;
		if (comm && *comm && (type == GP_EV_EXEC || !p->comm[0]))
			snprintf(p->comm, sizeof(p->comm), "%s", comm);
		args = json_object_new_object();
		if (type == GP_EV_FORK)
			json_object_object_add(args, "ppid", json_object_new_int64(ppid));
		else
			json_object_object_add(args, "comm", json_object_new_string(p->comm));
		instant(tl, p, pid, type == GP_EV_FORK ? "fork" : "exec", ts_ns, args);
		return;
	}
	if (p->exited)
		return;
	p->exited = true;
	if (!p->comm[0] && comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	instant(tl, p, pid, "exit", ts_ns, NULL);
}

bool gp_timeline__note(struct gp_timeline *tl, uint32_t pid, const char *name, uint64_t ts_ns, json_object *args)
{
	struct tl_proc *p = u64map__get(tl->procs, pid);

	if (!p || !p->shown) {
		json_object_put(args);
		return false;
	}
	instant(tl, p, pid, name, ts_ns, args);
	return true;
}

uint64_t gp_timeline__instants(const struct gp_timeline *tl)
{
	return tl->sink.ops->instants(tl->sink.w);
}

uint64_t gp_timeline__counter_events(const struct gp_timeline *tl)
{
	return tl->sink.ops->counters(tl->sink.w);
}

int gp_timeline__close(struct gp_timeline *tl, struct json_object *summary)
{
	uint64_t k;
	void *v;
	int r;

	if (!tl)
		return 0;
	r = tl->sink.ops->close(tl->sink.w, summary);
	gp_counters__free(tl->counters);
	for (size_t it = 0; u64map__next(tl->procs, &it, &k, &v);)
		free(v);
	u64map__free(tl->procs);
	free(tl);
	return r;
}
