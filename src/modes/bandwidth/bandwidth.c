/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "apis.h"
#include "bandwidth.h"
#include "proctab.h"
#include "u64map.h"

#define MAX_GPUS 64
#define KIND_HOSTREG GP_KIND__COUNT /* cuMemHostRegister'ed: pinned host memory */
#define CTX_STACK 8

struct range {
	uint64_t start, end;
	int kind;
	int gpu;
};

struct pending_copy {
	uint64_t stream, ts_ns, bytes;
	struct bw_stat *st;
	struct bw_pair *pair; /* device-to-device copies; else NULL */
};

/* Stream keys: the legacy default stream is 0 whatever names it (0 in a plain call,
 * CU_STREAM_LEGACY); the per-thread default stream (0 in a _ptds/_ptsz call,
 * CU_STREAM_PER_THREAD) is one stream per thread; other streams are their handles. */
#define CU_STREAM_LEGACY_H 1
#define CU_STREAM_PER_THREAD_H 2
#define STREAM_PER_THREAD (1ULL << 63)

struct thread_ctx {
	uint64_t stack[CTX_STACK]; /* current context on top */
	int depth;
};

struct bw_proc {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	bool exited;
	bool exec; /* ended by an exec */
	uint64_t exit_ns; /* CLOCK_MONOTONIC, from the exit record */
	struct range *ranges; /* sorted by start, disjoint */
	size_t nr_ranges, cap_ranges;
	struct u64map *threads;   /* tid -> struct thread_ctx */
	struct u64map *ctx_gpu;   /* context -> gpu + 1 */
	struct u64map *ev_stream; /* event -> (uint64_t *) {stream, record time} */
	struct pending_copy *pending;
	size_t nr_pending, cap_pending;
	struct u64map *stats; /* (gpu + 1) << 8 | dir -> struct bw_stat */
	struct bw_stat **view;
	struct u64map *pairs; /* (src + 1) << 16 | (dst + 1) -> struct bw_pair */
	struct bw_pair **pview;
};

struct bandwidth {
	struct proctab *procs; /* struct bw_proc */
	/* --csv: bytes per GPU and direction since the last row */
	uint64_t interval[MAX_GPUS + 1][BW__COUNT];
	bool gpu_seen[MAX_GPUS + 1];
};

const char *bw_dir_name(enum bw_dir d)
{
	static const char *const n[BW__COUNT] = { "H2D", "D2H", "D2D", "peer", "H2H" };

	return d < BW__COUNT ? n[d] : "?";
}

const char *bw_sync_kind_name(enum bw_sync_kind k)
{
	static const char *const n[BW_SYNC__COUNT] = { "stream", "context", "event" };

	return k < BW_SYNC__COUNT ? n[k] : "?";
}

/* The entry points that name the per-thread default stream by 0. */
static bool per_thread_api(unsigned int api)
{
	switch (api) {
	case GP_API_cuMemcpy_ptds:
	case GP_API_cuMemcpyAsync_ptsz:
	case GP_API_cuMemcpyHtoD_v2_ptds:
	case GP_API_cuMemcpyDtoH_v2_ptds:
	case GP_API_cuMemcpyDtoD_v2_ptds:
	case GP_API_cuMemcpyHtoDAsync_v2_ptsz:
	case GP_API_cuMemcpyDtoHAsync_v2_ptsz:
	case GP_API_cuMemcpyDtoDAsync_v2_ptsz:
	case GP_API_cuMemcpyPeer_ptds:
	case GP_API_cuMemcpyPeerAsync_ptsz:
	case GP_API_cuMemcpy2D_v2_ptds:
	case GP_API_cuMemcpy2DUnaligned_v2_ptds:
	case GP_API_cuMemcpy2DAsync_v2_ptsz:
	case GP_API_cuMemcpy3D_v2_ptds:
	case GP_API_cuMemcpy3DAsync_v2_ptsz:
	case GP_API_cuMemcpy3DPeer_ptds:
	case GP_API_cuMemcpy3DPeerAsync_ptsz:
	case GP_API_cuStreamSynchronize_ptsz:
	case GP_API_cuEventRecord_ptsz:
		return true;
	default:
		return false;
	}
}

static uint64_t stream_key(unsigned int api, uint64_t handle, uint64_t tid)
{
	if (handle == CU_STREAM_LEGACY_H)
		return 0;
	if (handle == CU_STREAM_PER_THREAD_H || (handle == 0 && per_thread_api(api)))
		return STREAM_PER_THREAD | tid;
	return handle;
}

/* proctab's callback (and on a failed make_proc) */
static void free_proc(void *ctx, void *v)
{
	struct bw_proc *p = v;

	(void)ctx;
	if (!p)
		return;
	free(p->ranges);
	u64map__free_all(p->threads, NULL);
	u64map__free_all(p->ctx_gpu, NULL);
	u64map__free_all(p->ev_stream, NULL);
	free(p->pending);
	u64map__free_all(p->stats, NULL);
	free(p->view);
	u64map__free_all(p->pairs, NULL);
	free(p->pview);
	free(p);
}

static void *make_proc(uint32_t pid)
{
	struct bw_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->threads = u64map__new();
	p->ctx_gpu = u64map__new();
	p->ev_stream = u64map__new();
	p->stats = u64map__new();
	p->pairs = u64map__new();
	if (!p->threads || !p->ctx_gpu || !p->ev_stream || !p->stats || !p->pairs) {
		free_proc(NULL, p);
		return NULL;
	}
	return p;
}


struct bandwidth *bandwidth__new(void)
{
	struct bandwidth *bw = calloc(1, sizeof(*bw));

	if (bw && !(bw->procs = proctab__new(free_proc, NULL))) {
		free(bw);
		bw = NULL;
	}
	return bw;
}

void bandwidth__free(struct bandwidth *bw)
{
	if (!bw)
		return;
	proctab__free(bw->procs);
	free(bw);
}

static struct bw_proc *get_proc(struct bandwidth *bw, uint32_t pid, const char *comm)
{
	struct bw_proc *p = proctab__get(bw->procs, pid, make_proc);

	if (p && comm && comm[0])
		snprintf(p->comm, sizeof(p->comm), "%.*s", GP_COMM_LEN - 1, comm);
	return p;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t c;
	void *n;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap * 2 : 16;
	while (c < need)
		c *= 2;
	n = realloc(*arr, c * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = c;
	return 0;
}

/* First range whose start is > addr, by binary search. */
static size_t upper(const struct bw_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nr_ranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->ranges[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct range *find_range(const struct bw_proc *p, uint64_t addr)
{
	size_t i = upper(p, addr);

	if (i == 0)
		return NULL;
	return addr < p->ranges[i - 1].end ? &p->ranges[i - 1] : NULL;
}

static void remove_range(struct bw_proc *p, uint64_t start)
{
	size_t i = upper(p, start);

	if (i == 0 || p->ranges[i - 1].start != start)
		return;
	i--;
	memmove(&p->ranges[i], &p->ranges[i + 1], (p->nr_ranges - i - 1) * sizeof(*p->ranges));
	p->nr_ranges--;
}

static void add_range(struct bw_proc *p, uint64_t start, uint64_t size, int kind, int gpu)
{
	size_t i;

	if (!size || start + size < start)
		return;
	remove_range(p, start); /* its free was lost: the driver's word wins */
	if (grow((void **)&p->ranges, &p->cap_ranges, p->nr_ranges + 1, sizeof(*p->ranges)))
		return;
	i = upper(p, start);
	memmove(&p->ranges[i + 1], &p->ranges[i], (p->nr_ranges - i) * sizeof(*p->ranges));
	p->ranges[i] = (struct range){ .start = start, .end = start + size, .kind = kind, .gpu = gpu };
	p->nr_ranges++;
}

static struct thread_ctx *thread(struct bw_proc *p, uint64_t tid)
{
	struct thread_ctx *t = u64map__get(p->threads, tid);

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (t && u64map__put(p->threads, tid, t)) {
		free(t);
		t = NULL;
	}
	return t;
}

/* The GPU of the calling thread's current context, -1 when unknown. */
static int thread_gpu(struct bw_proc *p, uint64_t tid)
{
	struct thread_ctx *t = u64map__get(p->threads, tid);
	uint64_t *g;

	if (!t || !t->depth)
		return -1;
	g = u64map__get(p->ctx_gpu, t->stack[t->depth - 1]);
	return g ? (int)(*g - 1) : -1;
}

static int ctx_gpu(struct bw_proc *p, uint64_t ctx)
{
	uint64_t *g = u64map__get(p->ctx_gpu, ctx);

	return g ? (int)(*g - 1) : -1;
}

void bandwidth__on_alloc(struct bandwidth *bw, const struct gp_alloc_event *e)
{
	const struct gp_api_info *info = gp_api_info(e->api);
	struct bw_proc *p = get_proc(bw, e->pid, e->comm);

	/* physical handles are not addresses: their mappings (GP_EV_MAP) are */
	if (!p || !info || info->kind == GP_KIND_PHYSICAL)
		return;
	add_range(p, e->addr, e->size, (int)info->kind,
		  info->kind == GP_KIND_HOST ? -1 : thread_gpu(p, e->tid));
}

void bandwidth__on_free(struct bandwidth *bw, const struct gp_free_event *e)
{
	const struct gp_api_info *info = gp_api_info(e->api);
	struct bw_proc *p = get_proc(bw, e->pid, e->comm);

	if (!p || !info)
		return;
	if (e->type == GP_EV_MAP)
		add_range(p, e->addr, e->size, GP_KIND_DEVICE, thread_gpu(p, e->tid));
	else if (e->type == GP_EV_UNMAP || info->kind != GP_KIND_PHYSICAL)
		remove_range(p, e->addr);
}

struct side {
	bool device;
	bool pinned; /* host side */
	int gpu;
};

static struct side classify(struct bw_proc *p, uint64_t ptr, uint32_t type, uint64_t tid)
{
	struct side s = { .gpu = -1 };
	const struct range *r = find_range(p, ptr);

	switch (type) {
	case GP_MEMTYPE_DEVICE:
	case GP_MEMTYPE_ARRAY:
		s.device = true;
		s.gpu = r && r->gpu >= 0 ? r->gpu : thread_gpu(p, tid);
		break;
	case GP_MEMTYPE_HOST:
		s.pinned = r && (r->kind == GP_KIND_HOST || r->kind == KIND_HOSTREG);
		break;
	default: /* unified: only what was tracked decides */
		if (r && (r->kind == GP_KIND_DEVICE || r->kind == GP_KIND_MANAGED)) {
			s.device = true;
			s.gpu = r->gpu >= 0 ? r->gpu : thread_gpu(p, tid);
		} else {
			s.pinned = r != NULL;
		}
		break;
	}
	return s;
}

static struct bw_stat *stat_of(struct bw_proc *p, int gpu, enum bw_dir dir)
{
	uint64_t key = ((uint64_t)(gpu + 1) << 8) | (uint64_t)dir;
	struct bw_stat *st = u64map__get(p->stats, key);

	if (st)
		return st;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->gpu = gpu;
	st->dir = dir;
	if (u64map__put(p->stats, key, st)) {
		free(st);
		return NULL;
	}
	return st;
}

static struct bw_pair *pair_of(struct bw_proc *p, int src, int dst)
{
	uint64_t key = ((uint64_t)(uint32_t)(src + 1) << 16) | (uint64_t)(uint32_t)(dst + 1);
	struct bw_pair *x = u64map__get(p->pairs, key);

	if (x)
		return x;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->src = src;
	x->dst = dst;
	if (u64map__put(p->pairs, key, x)) {
		free(x);
		return NULL;
	}
	return x;
}

static unsigned int log2_slot(uint64_t v)
{
	unsigned int r = 0;

	while (v > 1 && r < BW_HIST_SLOTS - 1) {
		v >>= 1;
		r++;
	}
	return r;
}

static enum bw_dir direction(struct bw_proc *p, const struct gp_copy_event *e, int *gpu,
			     int *dst_gpu, bool *pageable)
{
	struct side d, s;
	enum bw_dir dir;

	d = classify(p, e->dst, e->dst_type, e->tid);
	s = classify(p, e->src, e->src_type, e->tid);
	if (e->peer) {
		if (e->dst_ctx)
			d.gpu = ctx_gpu(p, e->dst_ctx);
		if (e->src_ctx)
			s.gpu = ctx_gpu(p, e->src_ctx);
	}
	if (s.device && d.device)
		dir = e->peer || (s.gpu >= 0 && d.gpu >= 0 && s.gpu != d.gpu) ? BW_PEER : BW_D2D;
	else if (d.device)
		dir = BW_H2D;
	else if (s.device)
		dir = BW_D2H;
	else
		dir = BW_H2H;
	*gpu = dir == BW_H2D ? d.gpu : dir == BW_H2H ? -1 : s.gpu;
	*dst_gpu = d.device ? d.gpu : -1;
	*pageable = (dir == BW_H2D && !s.pinned) || (dir == BW_D2H && !d.pinned) ||
		    (dir == BW_H2H && !(s.pinned && d.pinned));
	return dir;
}

enum bw_dir bandwidth__direction(struct bandwidth *bw, const struct gp_copy_event *e, int *gpu)
{
	struct bw_proc *p = get_proc(bw, e->pid, NULL);
	bool pageable;
	int dst;

	*gpu = -1;
	return p ? direction(p, e, gpu, &dst, &pageable) : BW_H2H;
}

/* A copy whose call returned before it completed: it waits for the synchronization that
 * covers its stream. */
static void add_pending(struct bw_proc *p, const struct gp_copy_event *e, struct bw_stat *st,
			struct bw_pair *pair)
{
	st->async_copies++;
	st->async_bytes += e->bytes;
	if (!grow((void **)&p->pending, &p->cap_pending, p->nr_pending + 1, sizeof(*p->pending)))
		p->pending[p->nr_pending++] = (struct pending_copy){
			.stream = stream_key(e->api, e->async ? e->stream : 0, e->tid),
			.ts_ns = e->ts_ns, .bytes = e->bytes, .st = st, .pair = pair,
		};
}

void bandwidth__on_copy(struct bandwidth *bw, const struct gp_copy_event *e)
{
	struct bw_proc *p = get_proc(bw, e->pid, e->comm);
	struct bw_pair *pair = NULL;
	enum bw_dir dir;
	struct bw_stat *st;
	int gpu, dst;
	bool pageable;

	if (!p)
		return;
	dir = direction(p, e, &gpu, &dst, &pageable);
	st = stat_of(p, gpu, dir);
	if (!st)
		return;
	if (dir == BW_D2D || dir == BW_PEER) {
		pair = pair_of(p, gpu, dir == BW_D2D && dst < 0 ? gpu : dst);
		if (pair) {
			pair->copies++;
			pair->bytes += e->bytes;
			pair->api_ns += e->dur_ns;
		}
	}
	st->copies++;
	st->bytes += e->bytes;
	st->size_hist[log2_slot(e->bytes)]++;
	if (pageable) {
		st->pageable_copies++;
		st->pageable_bytes += e->bytes;
	}
	/* cuMemcpyDtoD, cuMemcpyPeer and friends return before the copy is done (no
	 * host-side synchronization for copies between device memory): their call time says
	 * nothing, so they are timed like asynchronous copies on the default stream (legacy,
	 * or the thread's own for _ptds) */
	if (e->async || dir == BW_D2D || dir == BW_PEER) {
		add_pending(p, e, st, pair);
	} else {
		st->sync_copies++;
		st->sync_bytes += e->bytes;
		st->sync_ns += e->dur_ns;
		if (pageable) {
			st->pageable_sync_bytes += e->bytes;
			st->pageable_sync_ns += e->dur_ns;
		}
		if (e->dur_ns)
			st->rate_hist[log2_slot(e->bytes * 1000000000ULL / e->dur_ns >> 20)]++;
	}
	bw->gpu_seen[gpu + 1 > MAX_GPUS ? MAX_GPUS : gpu + 1] = true;
	bw->interval[gpu + 1 > MAX_GPUS ? MAX_GPUS : gpu + 1][dir] += e->bytes;
}

#define BATCHES 32

/* The earliest submission per statistic (a bw_stat or a bw_pair) among the copies one
 * synchronization completed. */
struct batch {
	void *key;
	uint64_t first;
};

/* Adds ts_ns to key's batch; false when there are BATCHES already (the copy is charged
 * from its own submission: never less than its share of the window). */
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

static void pending_done(struct pending_copy *c, enum bw_sync_kind kind, uint64_t ts,
			 struct batch *sb, int *nsb, struct batch *pb, int *npb)
{
	c->st->async_done_copies++;
	c->st->async_done_bytes += c->bytes;
	c->st->async_done_by[kind]++;
	if (!batch_add(sb, nsb, c->st, c->ts_ns))
		c->st->async_ns += ts - c->ts_ns;
	if (!c->pair)
		return;
	c->pair->done_copies++;
	c->pair->done_bytes += c->bytes;
	c->pair->done_by[kind]++;
	if (!batch_add(pb, npb, c->pair, c->ts_ns))
		c->pair->window_ns += ts - c->ts_ns;
}

/*
 * A synchronization (of kind) returned at ts: the async copies it covers are done by then.
 * Each batch (per direction and GPU, and per GPU pair) is charged the window from its first
 * submission to ts — more than the transfer took when the GPU was busy with other work: an
 * upper bound of the time, a lower bound of the bandwidth.
 */
static void complete(struct bw_proc *p, enum bw_sync_kind kind, bool all, uint64_t stream,
		     uint64_t before, uint64_t ts)
{
	struct batch sb[BATCHES], pb[BATCHES];
	int nsb = 0, npb = 0;
	size_t kept = 0;

	for (size_t i = 0; i < p->nr_pending; i++) {
		struct pending_copy *c = &p->pending[i];

		if ((!all && c->stream != stream) || c->ts_ns > before || c->ts_ns > ts) {
			p->pending[kept++] = *c;
			continue;
		}
		pending_done(c, kind, ts, sb, &nsb, pb, &npb);
	}
	p->nr_pending = kept;
	for (int b = 0; b < nsb; b++)
		((struct bw_stat *)sb[b].key)->async_ns += ts - sb[b].first;
	for (int b = 0; b < npb; b++)
		((struct bw_pair *)pb[b].key)->window_ns += ts - pb[b].first;
}

void bandwidth__on_aux(struct bandwidth *bw, const struct gp_aux_event *e)
{
	struct bw_proc *p = get_proc(bw, e->pid, NULL);
	struct thread_ctx *t;
	uint64_t *v;

	if (!p)
		return;
	switch (e->api) {
	case GP_API_cuStreamSynchronize:
	case GP_API_cuStreamSynchronize_ptsz:
		complete(p, BW_SYNC_STREAM, false, stream_key(e->api, e->handle, e->tid), UINT64_MAX, e->ts_ns);
		break;
	case GP_API_cuCtxSynchronize:
	case GP_API_cuCtxSynchronize_v2:
		complete(p, BW_SYNC_CONTEXT, true, 0, UINT64_MAX, e->ts_ns);
		break;
	case GP_API_cuEventSynchronize:
		v = u64map__get(p->ev_stream, e->handle);
		if (v) /* the copies on the event's stream submitted before it was recorded */
			complete(p, BW_SYNC_EVENT, false, v[0], v[1], e->ts_ns);
		break;
	case GP_API_cuEventRecord:
	case GP_API_cuEventRecord_ptsz:
		v = u64map__get(p->ev_stream, e->handle);
		if (!v) {
			v = malloc(2 * sizeof(*v));
			if (!v || u64map__put(p->ev_stream, e->handle, v)) {
				free(v);
				break;
			}
		}
		v[0] = stream_key(e->api, e->aux, e->tid);
		v[1] = e->ts_ns;
		break;
	case GP_API_cuCtxSetCurrent:
		t = thread(p, e->tid);
		if (t) {
			if (!t->depth)
				t->depth = 1;
			t->stack[t->depth - 1] = e->handle;
		}
		break;
	case GP_API_cuCtxPushCurrent_v2:
		t = thread(p, e->tid);
		if (t && t->depth < CTX_STACK)
			t->stack[t->depth++] = e->handle;
		break;
	case GP_API_cuCtxPopCurrent_v2:
		t = thread(p, e->tid);
		if (t && t->depth)
			t->depth--;
		break;
	case GP_API_cuCtxCreate_v2:
	case GP_API_cuCtxCreate_v3:
	case GP_API_cuCtxCreate_v4:
		/* a created context becomes current on the creating thread */
		t = thread(p, e->tid);
		if (t && t->depth < CTX_STACK)
			t->stack[t->depth++] = e->handle;
		/* fall through */
	case GP_API_cuDevicePrimaryCtxRetain:
		v = u64map__get(p->ctx_gpu, e->handle);
		if (!v) {
			v = malloc(sizeof(*v));
			if (!v || u64map__put(p->ctx_gpu, e->handle, v)) {
				free(v);
				break;
			}
		}
		*v = e->aux + 1;
		break;
	case GP_API_cuMemHostRegister_v2:
		add_range(p, e->handle, e->aux, KIND_HOSTREG, -1);
		break;
	case GP_API_cuMemHostUnregister:
		remove_range(p, e->handle);
		break;
	default:
		break;
	}
}

void bandwidth__on_exit(struct bandwidth *bw, const struct gp_exit_event *e)
{
	struct bw_proc *p = proctab__exit(bw->procs, e->pid, e->ts_ns);

	if (!p)
		return;
	p->exited = true;
	p->exit_ns = e->ts_ns;
}

void bandwidth__on_exec(struct bandwidth *bw, const struct gp_proc_event *e)
{
	struct bw_proc *p = proctab__exit(bw->procs, e->pid, e->ts_ns);

	if (!p)
		return;
	p->exited = true;
	p->exec = true;
	p->exit_ns = e->ts_ns;
}

size_t bandwidth__procs(struct bandwidth *bw, struct bw_proc ***out)
{
	return proctab__list(bw->procs, (void ***)out);
}

uint32_t bw_proc__pid(const struct bw_proc *p)
{
	return p->pid;
}

const char *bw_proc__comm(const struct bw_proc *p)
{
	return p->comm;
}

bool bw_proc__exited(const struct bw_proc *p)
{
	return p->exited;
}

uint64_t bw_proc__unsynced(const struct bw_proc *p)
{
	return p->nr_pending;
}

static int cmp_stat(const void *a, const void *b)
{
	const struct bw_stat *x = *(struct bw_stat *const *)a, *y = *(struct bw_stat *const *)b;

	if (x->gpu != y->gpu)
		return x->gpu < y->gpu ? -1 : 1;
	return (int)x->dir - (int)y->dir;
}

size_t bw_proc__stats(struct bw_proc *p, struct bw_stat ***out)
{
	size_t n = u64map__size(p->stats), i = 0;
	struct bw_stat **v = realloc(p->view, (n ? n : 1) * sizeof(*v));
	uint64_t k;
	void *val;

	*out = NULL;
	if (!v)
		return 0;
	p->view = v;
	for (size_t it = 0; u64map__next(p->stats, &it, &k, &val);)
		v[i++] = val;
	qsort(v, n, sizeof(*v), cmp_stat);
	*out = v;
	return n;
}

static int cmp_pair(const void *a, const void *b)
{
	const struct bw_pair *x = *(struct bw_pair *const *)a, *y = *(struct bw_pair *const *)b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->dst < y->dst ? -1 : x->dst > y->dst;
}

size_t bw_proc__pairs(struct bw_proc *p, struct bw_pair ***out)
{
	size_t n = u64map__size(p->pairs), i = 0;
	struct bw_pair **v = realloc(p->pview, (n ? n : 1) * sizeof(*v));
	uint64_t k;
	void *val;

	*out = NULL;
	if (!v)
		return 0;
	p->pview = v;
	for (size_t it = 0; u64map__next(p->pairs, &it, &k, &val);)
		v[i++] = val;
	qsort(v, n, sizeof(*v), cmp_pair);
	*out = v;
	return n;
}

struct sweep {
	struct bandwidth *bw;
	uint64_t now_ns;
};

static void gone(void *ctx, uint32_t pid)
{
	struct sweep *s = ctx;
	struct gp_exit_event e = { .type = GP_EV_EXIT, .pid = pid, .ts_ns = s->now_ns };

	bandwidth__on_exit(s->bw, &e);
}

void bandwidth__sweep(struct bandwidth *bw, uint64_t now_ns)
{
	struct sweep s = { .bw = bw, .now_ns = now_ns };

	/* processes that only copied, synchronized or made contexts get no exit record */
	proctab__sweep(bw->procs, gone, &s);
}

void bandwidth__reap(struct bandwidth *bw, uint64_t cutoff_ns, uint32_t keep_pid)
{
	proctab__reap(bw->procs, keep_pid, cutoff_ns, NULL, NULL);
}

int bandwidth__snapshot(struct bandwidth *bw, uint32_t pid, struct bw_snap_data *out)
{
	struct bw_proc **procs;
	size_t n = bandwidth__procs(bw, &procs), k = 0;

	bw_snap_data__clear(out);
	out->procs = calloc(n ? n : 1, sizeof(*out->procs));
	if (!out->procs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct bw_snap_proc *sp = &out->procs[k];
		struct bw_stat **st;
		struct bw_pair **pp;
		size_t ns, np;

		if (pid && procs[i]->pid != pid)
			continue;
		ns = bw_proc__stats(procs[i], &st);
		sp->pid = procs[i]->pid;
		memcpy(sp->comm, procs[i]->comm, sizeof(sp->comm));
		sp->exited = procs[i]->exited;
		sp->exec = procs[i]->exec;
		sp->unsynced = procs[i]->nr_pending;
		out->nr_procs = ++k;
		sp->stats = calloc(ns ? ns : 1, sizeof(*sp->stats));
		if (!sp->stats)
			return -ENOMEM;
		for (size_t j = 0; j < ns; j++)
			sp->stats[j] = *st[j];
		sp->nr_stats = ns;
		np = bw_proc__pairs(procs[i], &pp);
		sp->pairs = calloc(np ? np : 1, sizeof(*sp->pairs));
		if (!sp->pairs)
			return -ENOMEM;
		for (size_t j = 0; j < np; j++)
			sp->pairs[j] = *pp[j];
		sp->nr_pairs = np;
	}
	return 0;
}

void bw_snap_data__clear(struct bw_snap_data *d)
{
	for (size_t i = 0; d->procs && i < d->nr_procs; i++) {
		free(d->procs[i].stats);
		free(d->procs[i].pairs);
	}
	free(d->procs);
	d->procs = NULL;
	d->nr_procs = 0;
}

int bandwidth__csv_rows(struct bandwidth *bw, FILE *f, double unix_time, double interval_s)
{
	long pos;

	if (fseek(f, 0, SEEK_END))
		return -errno;
	pos = ftell(f);
	if (pos == 0)
		fprintf(f, "timestamp,gpu,h2d_bytes,d2h_bytes,d2d_bytes,h2d_bytes_per_s,d2h_bytes_per_s\n");
	for (int g = 1; g <= MAX_GPUS; g++) {
		uint64_t *b = bw->interval[g];

		if (!bw->gpu_seen[g])
			continue;
		fprintf(f, "%.3f,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f,%.1f\n", unix_time, g - 1,
			b[BW_H2D], b[BW_D2H], b[BW_D2D] + b[BW_PEER],
			interval_s > 0 ? (double)b[BW_H2D] / interval_s : 0.0,
			interval_s > 0 ? (double)b[BW_D2H] / interval_s : 0.0);
		memset(b, 0, sizeof(bw->interval[g]));
	}
	fflush(f);
	return ferror(f) ? -EIO : 0;
}
