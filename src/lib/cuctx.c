/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
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

struct thread_ctx {
	uint64_t stack[CTX_STACK]; /* current context on top */
	int depth;
	int gpu_hint; /* GPU + 1 its last cuCtxGetDevice returned: its context is not known
		       * (made before a -p attach), its GPU is; 0 none */
};

struct cuctx {
	const struct cu_work_ops *ops;
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
	static const char *const n[CU_SYNC__COUNT] = { "stream", "context", "event" };

	return k < CU_SYNC__COUNT ? n[k] : "?";
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

	if (!v)
		return;
	v[0] = cu_stream_key(e->api == GP_API_cuEventRecord_ptsz, e->aux, e->tid);
	v[1] = e->ts_ns;
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

/* The earliest submission per statistic among the work one synchronization completed. */
struct batch {
	void *key;
	uint64_t first;
};

/* Adds ts_ns to key's batch; false when there are BATCHES already. */
static bool batch_add(struct batch *b, int *nb, void *key, uint64_t ts_ns)
{
	int i;

	for (i = 0; i < *nb && b[i].key != key; i++)
		;
	if (i == *nb) {
		if (*nb == BATCHES)
			return false;
		b[(*nb)++] = (struct batch){ key, ts_ns };
	} else if (ts_ns < b[i].first) {
		b[i].first = ts_ns;
	}
	return true;
}

/*
 * A synchronization of kind, seen in window `epoch`, returned at ts: the work it covers (on
 * stream, or all, submitted before `before` and ts) is done, and each batch is charged its
 * window. Under a budget only the work of its own window: covered work of an earlier one
 * lost its own synchronization to an unseen part, and is untimed.
 */
static void complete(struct cuctx *c, enum cu_sync kind, bool all, uint64_t stream, uint64_t before,
		     uint64_t ts, uint32_t epoch)
{
	struct batch b[2][BATCHES];
	int nb[2] = { 0, 0 };
	size_t kept = 0;

	for (size_t i = 0; i < c->nr_pending; i++) {
		struct cu_work *w = &c->pending[i];

		if ((!all && w->stream != stream) || w->ts_ns > before || w->ts_ns > ts ||
		    (epoch != GP_EPOCH_EXACT && w->epoch > epoch)) {
			c->pending[kept++] = *w;
			continue;
		}
		if (w->epoch != epoch) {
			untime(c, w);
			continue;
		}
		c->ops->done(w, kind);
		for (int s = 0; s < 2; s++)
			if (w->key[s] && !batch_add(b[s], &nb[s], w->key[s], w->ts_ns))
				c->ops->charge(s, w->key[s], ts - w->ts_ns);
	}
	c->nr_pending = kept;
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < nb[s]; i++)
			c->ops->charge(s, b[s][i].key, ts - b[s][i].first);
}

bool cuctx__on_aux(struct cuctx *c, const struct gp_aux_event *e)
{
	uint64_t *v;

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
	case GP_API_cuEventSynchronize:
		v = u64map__get(c->ev_stream, e->handle);
		if (v) /* the work on the event's stream submitted before it was recorded */
			complete(c, CU_SYNC_EVENT, false, v[0], v[1], e->ts_ns, e->epoch);
		return true;
	case GP_API_cuEventRecord:
	case GP_API_cuEventRecord_ptsz:
		on_event_record(c, e);
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
