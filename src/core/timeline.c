/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpuprobe.h"
#include "timeline.h"
#include "trace.h"
#include "u64map.h"

struct tl_proc {
	char comm[GP_COMM_LEN];
	bool named;
	struct gp_lane_tally t[GP_LANE__COUNT];
};

struct gp_timeline {
	struct trace_writer *w;
	struct u64map *procs; /* pid -> struct tl_proc */
	uint64_t drops[GP_LANE__COUNT];
	void (*listener)(void *ctx, enum gp_lane lane, uint32_t pid, uint64_t dur_ns, int64_t ret);
	void *listener_ctx;
};

static const char *const lane_kind[GP_LANE__COUNT] = { "call", "ioctl", "nccl" };

struct gp_timeline *gp_timeline__open(const char *path, int chrome, char *err, size_t len)
{
	struct gp_timeline *tl = calloc(1, sizeof(*tl));

	if (!tl || !(tl->procs = u64map__new())) {
		snprintf(err, len, "out of memory");
		free(tl);
		return NULL;
	}
	tl->w = trace_writer__open(path, chrome ? TRACE_CHROME : TRACE_JSONL);
	if (!tl->w) {
		snprintf(err, len, "--trace %s: %s", path, strerror(errno));
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

	trace_writer__process_name(tl->w, pid, comm);
	trace_writer__event(tl->w, lane_kind[lane], pid, tid, name, ts_ns, dur_ns, ret, args);
	if (tl->listener)
		tl->listener(tl->listener_ctx, lane, pid, dur_ns, ret);
	if (!p)
		return;
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
	return trace_writer__written(tl->w);
}

int gp_timeline__close(struct gp_timeline *tl, struct json_object *summary)
{
	uint64_t k;
	void *v;
	int r;

	if (!tl)
		return 0;
	r = trace_writer__close(tl->w, summary);
	for (size_t it = 0; u64map__next(tl->procs, &it, &k, &v);)
		free(v);
	u64map__free(tl->procs);
	free(tl);
	return r;
}
