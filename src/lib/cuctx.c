/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/apis.h"
#include "lib/cuctx.h"
#include "lib/u64map.h"

#define CTX_STACK 8
#define CU_STREAM_LEGACY_H 1
#define CU_STREAM_PER_THREAD_H 2
#define STREAM_PER_THREAD (1ULL << 63)
/* batches per statistic slot one synchronization charges together; past them a piece of
 * work is charged from its own submission: never less than its share of the window */
#define BATCHES 32
/* streams tied by cuStreamWaitEvent and not yet covered by a completion of the waiting
 * stream, per process; past them the oldest is forgotten (its work waits for a signal of
 * its own stream: later, never wrong) */
#define WAITS 64
/* how far one completion follows waits (stream B waited on A, which waited on C, ...) */
#define WAIT_DEPTH 4
/* the work completed lately, per process, for cuEventElapsedTime to find what ran between
 * two events: past it the oldest is forgotten (fewer bytes over the events' time: a lower
 * bandwidth, never a higher one) */
#define DONE_LOG 1024

struct thread_ctx {
	uint64_t stack[CTX_STACK]; /* current context on top */
	int depth;
	int gpu_hint; /* GPU + 1 its last cuCtxGetDevice returned: its context is not known
		       * (made before a -p attach), its GPU is; 0 none */
};

/* Stream `stream` waited at ts_ns on an event recorded on `on` at `before`. */
struct cu_wait {
	uint64_t stream, ts_ns, on, before;
};

/* A piece of work done, for cuEventElapsedTime. */
struct cu_done {
	uint64_t stream, ts_ns, bytes;
	void *key[2];
	bool timed; /* an elapsed time covered it already */
};

struct cuctx {
	const struct cu_work_ops *ops;
	struct cu_wait waits[WAITS]; /* oldest first */
	size_t nr_waits;
	struct cu_done *done; /* DONE_LOG, a ring; made at the first event record */
	size_t nr_done, next_done;
	struct u64map *threads;   /* tid -> struct thread_ctx */
	struct u64map *ctx_gpu;   /* context -> (uint64_t *) gpu + 1 */
	struct u64map *ev_stream; /* event -> (uint64_t *) {stream, record time} */
	struct cu_work *pending;
	size_t nr_pending, cap_pending;
	uint64_t untimed, untimed_bytes;
};

struct cuctx *cuctx__new(const struct cu_work_ops *ops)
{
	struct cuctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ops = ops;
	c->threads = u64map__new();
	c->ctx_gpu = u64map__new();
	c->ev_stream = u64map__new();
	if (!c->threads || !c->ctx_gpu || !c->ev_stream) {
		cuctx__free(c);
		return NULL;
	}
	return c;
}

void cuctx__free(struct cuctx *c)
{
	if (!c)
		return;
	u64map__free_all(c->threads, NULL);
	u64map__free_all(c->ctx_gpu, NULL);
	u64map__free_all(c->ev_stream, NULL);
	free(c->pending);
	free(c->done);
	free(c);
}

uint64_t cu_stream_key(bool per_thread, uint64_t handle, uint64_t tid)
{
	if (handle == CU_STREAM_LEGACY_H)
		return 0;
	if (handle == CU_STREAM_PER_THREAD_H || (handle == 0 && per_thread))
		return STREAM_PER_THREAD | tid;
	return handle;
}

const char *cu_sync_name(enum cu_sync k)
{
	static const char *const n[CU_SYNC__COUNT] = { "stream",      "context",     "event",
						       "stream_query", "event_query", "event_elapsed" };

	return k < CU_SYNC__COUNT ? n[k] : "?";
}

bool cu_signal_api(unsigned int api)
{
	switch (api) {
	case GP_API_cuStreamSynchronize:
	case GP_API_cuStreamSynchronize_ptsz:
	case GP_API_cuCtxSynchronize:
	case GP_API_cuCtxSynchronize_v2:
	case GP_API_cuEventSynchronize:
	case GP_API_cuStreamQuery:
	case GP_API_cuStreamQuery_ptsz:
	case GP_API_cuEventQuery:
	case GP_API_cuEventElapsedTime:
	case GP_API_cuEventElapsedTime_v2:
		return true;
	default:
		return false;
	}
}

int cuctx__ctx_gpu(const struct cuctx *c, uint64_t ctx)
{
	uint64_t *g = u64map__get(c->ctx_gpu, ctx);

	return g ? (int)(*g - 1) : -1;
}

int cuctx__thread_gpu(const struct cuctx *c, uint64_t tid)
{
	struct thread_ctx *t = u64map__get(c->threads, tid);

	int gpu = t && t->depth ? cuctx__ctx_gpu(c, t->stack[t->depth - 1]) : -1;

	return gpu < 0 && t && t->gpu_hint ? t->gpu_hint - 1 : gpu;
}

/* ---- contexts and events ---- */

static void set_ctx_gpu(struct cuctx *c, uint64_t ctx, uint64_t dev)
{
	uint64_t *v = u64map__get_new(c->ctx_gpu, ctx, sizeof(*v));

	if (v)
		*v = dev + 1;
}

/* Context calls: the calling thread's stack of current contexts, each context's GPU. */
static void on_ctx(struct cuctx *c, const struct gp_aux_event *e)
{
	struct thread_ctx *t = u64map__get_new(c->threads, e->tid, sizeof(*t));

	if (!t)
		return;
	switch (e->api) {
	case GP_API_cuCtxSetCurrent:
		if (!t->depth)
			t->depth = 1;
		t->stack[t->depth - 1] = e->handle;
		break;
	case GP_API_cuCtxPushCurrent_v2:
		if (t->depth < CTX_STACK)
			t->stack[t->depth++] = e->handle;
		break;
	case GP_API_cuCtxPopCurrent_v2:
		if (t->depth)
			t->depth--;
		break;
	case GP_API_cuCtxCreate_v2:
	case GP_API_cuCtxCreate_v3:
	case GP_API_cuCtxCreate_v4:
		if (t->depth < CTX_STACK) /* a created context becomes current */
			t->stack[t->depth++] = e->handle;
		set_ctx_gpu(c, e->handle, e->aux);
		break;
	case GP_API_cuCtxGetDevice_v2:
		if (e->handle) { /* a named context's GPU: the thread's current one is not told */
			if (cuctx__ctx_gpu(c, e->handle) < 0)
				set_ctx_gpu(c, e->handle, e->aux);
			break;
		}
		/* NULL asks for the current context's, as cuCtxGetDevice */
		__attribute__((fallthrough));
	case GP_API_cuCtxGetDevice:
		/* the thread's current context is on this GPU: bind a known context that was
		 * made before the attach; otherwise the thread's work goes to it meanwhile */
		if (t->depth && cuctx__ctx_gpu(c, t->stack[t->depth - 1]) < 0)
			set_ctx_gpu(c, t->stack[t->depth - 1], e->aux);
		t->gpu_hint = (int)e->aux + 1;
		break;
	default: /* cuDevicePrimaryCtxRetain */
		set_ctx_gpu(c, e->handle, e->aux);
		break;
	}
}

static void on_event_record(struct cuctx *c, const struct gp_aux_event *e)
{
	uint64_t *v = u64map__get_new(c->ev_stream, e->handle, 2 * sizeof(*v));
	bool ptsz = e->api == GP_API_cuEventRecord_ptsz || e->api == GP_API_cuEventRecordWithFlags_ptsz;

	if (!v)
		return;
	v[0] = cu_stream_key(ptsz, e->aux, e->tid);
	v[1] = e->ts_ns;
	if (!c->done) /* only events can be timed: the log of done work starts with them */
		c->done = calloc(DONE_LOG, sizeof(*c->done));
}

/* Stream handle waits on event aux: a completion of it later covers the work the event's
 * record followed. An event never seen recorded ties nothing. */
static void on_wait(struct cuctx *c, const struct gp_aux_event *e)
{
	uint64_t *v = u64map__get(c->ev_stream, e->aux);
	struct cu_wait *w;

	if (!v)
		return;
	if (c->nr_waits == WAITS) /* forget the oldest */
		memmove(&c->waits[0], &c->waits[1], --c->nr_waits * sizeof(c->waits[0]));
	w = &c->waits[c->nr_waits++];
	*w = (struct cu_wait){
		.stream = cu_stream_key(e->api == GP_API_cuStreamWaitEvent_ptsz, e->handle, e->tid),
		.ts_ns = e->ts_ns, .on = v[0], .before = v[1],
	};
}

/* ---- work on streams ---- */

static void untime(struct cuctx *c, const struct cu_work *w)
{
	c->untimed++;
	c->untimed_bytes += w->bytes;
}

int cuctx__submit(struct cuctx *c, const struct cu_work *w)
{
	if (w->epoch == GP_EPOCH_UNSEEN) {
		untime(c, w);
		return 0;
	}
	if (c->nr_pending == c->cap_pending) {
		size_t cap = c->cap_pending ? 2 * c->cap_pending : 16;
		struct cu_work *n = realloc(c->pending, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->pending = n;
		c->cap_pending = cap;
	}
	c->pending[c->nr_pending++] = *w;
	return 0;
}

size_t cuctx__pending(const struct cuctx *c)
{
	return c->nr_pending;
}

uint64_t cuctx__untimed(const struct cuctx *c, uint64_t *bytes)
{
	*bytes = c->untimed_bytes;
	return c->untimed;
}

/* The earliest submission and the bytes per statistic among the work one signal completed. */
struct batch {
	void *key;
	uint64_t first, bytes;
};

/* Adds a piece of work to key's batch; false when there are BATCHES already. */
static bool batch_add(struct batch *b, int *nb, void *key, uint64_t ts_ns, uint64_t bytes)
{
	int i;

	for (i = 0; i < *nb && b[i].key != key; i++)
		;
	if (i == *nb) {
		if (*nb == BATCHES)
			return false;
		b[(*nb)++] = (struct batch){ key, ts_ns, bytes };
		return true;
	}
	if (ts_ns < b[i].first)
		b[i].first = ts_ns;
	b[i].bytes += bytes;
	return true;
}

static void charge_batch(struct cuctx *c, int slot, void *key, uint64_t bytes, uint64_t ns, enum cu_sync kind)
{
	c->ops->charge(slot, key, ns);
	if (c->ops->batch)
		c->ops->batch(slot, key, bytes, ns, kind);
}

static void log_done(struct cuctx *c, const struct cu_work *w)
{
	if (!c->done)
		return;
	c->done[c->next_done] = (struct cu_done){ w->stream, w->ts_ns, w->bytes, { w->key[0], w->key[1] }, false };
	c->next_done = (c->next_done + 1) % DONE_LOG;
	if (c->nr_done < DONE_LOG)
		c->nr_done++;
}

/* What one completion covers: the work on `stream` (every stream when all) submitted
 * before `before`, by a signal of kind that returned at ts, seen in window epoch. */
struct cover {
	enum cu_sync kind;
	bool all;
	uint64_t ts;
	uint32_t epoch;
};

static void complete_stream(struct cuctx *c, const struct cover *cv, uint64_t stream, uint64_t before, int depth);

/* The waits of `stream` before `before`: the streams they waited on are covered up to
 * their events' records. Each wait is used once (the work it covers is done then). */
static void follow_waits(struct cuctx *c, const struct cover *cv, uint64_t stream, uint64_t before, int depth)
{
	struct cu_wait hit[WAITS];
	size_t nh = 0, kept = 0;

	for (size_t i = 0; i < c->nr_waits; i++) {
		struct cu_wait *w = &c->waits[i];

		if (w->stream == stream && w->ts_ns <= before)
			hit[nh++] = *w;
		else
			c->waits[kept++] = *w;
	}
	c->nr_waits = kept;
	for (size_t i = 0; i < nh; i++)
		complete_stream(c, cv, hit[i].on, hit[i].before, depth + 1);
}

/*
 * A completion signal: the work it covers (on stream, or all, submitted before `before`
 * and ts) is done, and each batch is charged its window. Under a budget only the work of
 * its own window: covered work of an earlier one lost its own synchronization to an
 * unseen part, and is untimed.
 */
static void complete_stream(struct cuctx *c, const struct cover *cv, uint64_t stream, uint64_t before, int depth)
{
	struct batch b[2][BATCHES];
	int nb[2] = { 0, 0 };
	size_t kept = 0;

	for (size_t i = 0; i < c->nr_pending; i++) {
		struct cu_work *w = &c->pending[i];

		if ((!cv->all && w->stream != stream) || w->ts_ns > before || w->ts_ns > cv->ts ||
		    (cv->epoch != GP_EPOCH_EXACT && w->epoch > cv->epoch)) {
			c->pending[kept++] = *w;
			continue;
		}
		if (w->epoch != cv->epoch) {
			untime(c, w);
			continue;
		}
		c->ops->done(w, cv->kind);
		log_done(c, w);
		for (int s = 0; s < 2; s++)
			if (w->key[s] && !batch_add(b[s], &nb[s], w->key[s], w->ts_ns, w->bytes))
				charge_batch(c, s, w->key[s], w->bytes, cv->ts - w->ts_ns, cv->kind);
	}
	c->nr_pending = kept;
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < nb[s]; i++)
			charge_batch(c, s, b[s][i].key, b[s][i].bytes, cv->ts - b[s][i].first, cv->kind);
	if (!cv->all && depth < WAIT_DEPTH && c->nr_waits)
		follow_waits(c, cv, stream, before, depth);
}

static void complete(struct cuctx *c, enum cu_sync kind, bool all, uint64_t stream, uint64_t before,
		     uint64_t ts, uint32_t epoch)
{
	struct cover cv = { kind, all, ts, epoch };

	if (all)
		c->nr_waits = 0; /* everything is done: no tie is left */
	complete_stream(c, &cv, stream, before, 0);
}

/* The event's record: *stream and the time; false when it was never seen recorded. */
static bool event_of(struct cuctx *c, uint64_t ev, uint64_t *stream, uint64_t *ts)
{
	uint64_t *v = u64map__get(c->ev_stream, ev);

	if (!v)
		return false;
	*stream = v[0];
	*ts = v[1];
	return true;
}

/* An event found complete (synchronized, queried): the work before its record. */
static void event_done(struct cuctx *c, const struct gp_aux_event *e, enum cu_sync kind)
{
	uint64_t stream, rec;

	if (event_of(c, e->handle, &stream, &rec))
		complete(c, kind, false, stream, rec, e->ts_ns, e->epoch);
}

/*
 * cuEventElapsedTime(ms, start, end) returned CUDA_SUCCESS: end is complete (a completion
 * signal), and when both were recorded on one stream, the work submitted there between the
 * two records ran within the GPU's ms: each statistic's bytes of it over that time is a
 * rate from the GPU's own clock (still a bound: kernels between the records count too).
 */
static void on_elapsed(struct cuctx *c, const struct gp_aux_event *e)
{
	uint64_t s_stream, s_ts, e_stream, e_ts, gpu_ns;
	struct batch b[2][BATCHES];
	int nb[2] = { 0, 0 };
	uint32_t bits = e->ms_bits;
	float ms;

	if (!event_of(c, e->aux, &e_stream, &e_ts))
		return;
	complete(c, CU_SYNC_ELAPSED, false, e_stream, e_ts, e->ts_ns, e->epoch);
	memcpy(&ms, &bits, sizeof(ms));
	if (!c->ops->timed || !c->done || !event_of(c, e->handle, &s_stream, &s_ts) || s_stream != e_stream ||
	    s_ts > e_ts || !(ms > 0.0f) || ms > 1e9f)
		return;
	gpu_ns = (uint64_t)((double)ms * 1e6) + 1; /* rounded up: a rate is never raised */
	for (size_t i = 0; i < c->nr_done; i++) {
		struct cu_done *d = &c->done[i];

		if (d->timed || d->stream != e_stream || d->ts_ns < s_ts || d->ts_ns > e_ts)
			continue;
		d->timed = true;
		for (int s = 0; s < 2; s++) /* past BATCHES statistics: left out, a lower figure */
			if (d->key[s])
				batch_add(b[s], &nb[s], d->key[s], d->ts_ns, d->bytes);
	}
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < nb[s]; i++)
			c->ops->timed(s, b[s][i].key, b[s][i].bytes, gpu_ns);
}

bool cuctx__on_aux(struct cuctx *c, const struct gp_aux_event *e)
{
	switch (e->api) {
	case GP_API_cuStreamSynchronize:
	case GP_API_cuStreamSynchronize_ptsz:
		complete(c, CU_SYNC_STREAM, false,
			 cu_stream_key(e->api == GP_API_cuStreamSynchronize_ptsz, e->handle, e->tid), UINT64_MAX,
			 e->ts_ns, e->epoch);
		return true;
	case GP_API_cuCtxSynchronize:
	case GP_API_cuCtxSynchronize_v2:
		complete(c, CU_SYNC_CONTEXT, true, 0, UINT64_MAX, e->ts_ns, e->epoch);
		return true;
	case GP_API_cuStreamQuery: /* CUDA_SUCCESS: BPF sends no other */
	case GP_API_cuStreamQuery_ptsz:
		complete(c, CU_SYNC_STREAM_QUERY, false,
			 cu_stream_key(e->api == GP_API_cuStreamQuery_ptsz, e->handle, e->tid), UINT64_MAX,
			 e->ts_ns, e->epoch);
		return true;
	case GP_API_cuEventSynchronize:
		/* the work on the event's stream submitted before it was recorded */
		event_done(c, e, CU_SYNC_EVENT);
		return true;
	case GP_API_cuEventQuery:
		event_done(c, e, CU_SYNC_EVENT_QUERY);
		return true;
	case GP_API_cuEventElapsedTime:
	case GP_API_cuEventElapsedTime_v2:
		on_elapsed(c, e);
		return true;
	case GP_API_cuEventRecord:
	case GP_API_cuEventRecord_ptsz:
	case GP_API_cuEventRecordWithFlags:
	case GP_API_cuEventRecordWithFlags_ptsz:
		on_event_record(c, e);
		return true;
	case GP_API_cuStreamWaitEvent:
	case GP_API_cuStreamWaitEvent_ptsz:
		on_wait(c, e);
		return true;
	case GP_API_cuCtxSetCurrent:
	case GP_API_cuCtxPushCurrent_v2:
	case GP_API_cuCtxPopCurrent_v2:
	case GP_API_cuCtxCreate_v2:
	case GP_API_cuCtxCreate_v3:
	case GP_API_cuCtxCreate_v4:
	case GP_API_cuDevicePrimaryCtxRetain:
	case GP_API_cuCtxGetDevice:
	case GP_API_cuCtxGetDevice_v2:
		on_ctx(c, e);
		return true;
	default:
		return false;
	}
}
