/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lib/apis.h"
#include "lib/bandwidth.h"
#include "lib/cuctx.h"
#include "lib/proctab.h"
#include "lib/u64map.h"
#include "lib/util.h"

#define MAX_GPUS 64
#define KIND_HOSTREG GP_KIND__COUNT /* cuMemHostRegister'ed: pinned host memory */

_Static_assert(BW_SYNC_STREAM == (int)CU_SYNC_STREAM && BW_SYNC_CONTEXT == (int)CU_SYNC_CONTEXT &&
		       BW_SYNC_EVENT == (int)CU_SYNC_EVENT && BW_SYNC_STREAM_QUERY == (int)CU_SYNC_STREAM_QUERY &&
		       BW_SYNC_EVENT_QUERY == (int)CU_SYNC_EVENT_QUERY && BW_SYNC_ELAPSED == (int)CU_SYNC_ELAPSED &&
		       BW_SYNC__COUNT == (int)CU_SYNC__COUNT,
	       "a copy's completion is counted by the kind of cuctx's synchronization");

struct range {
	uint64_t start, end;
	int kind;
	int gpu;
};

struct bw_proc {
	struct gp_proc_head h;
	struct range *ranges; /* sorted by start, disjoint */
	size_t nr_ranges, cap_ranges;
	struct cuctx *cu; /* contexts, events, the copies that wait for a synchronization */
	struct u64map *stats; /* (gpu + 1) << 8 | dir -> struct bw_stat */
	struct bw_stat **view;
	struct u64map *pairs; /* (src + 1) << 16 | (dst + 1) -> struct bw_pair */
	struct bw_pair **pview;
};

struct bandwidth {
	struct proctab *procs; /* struct bw_proc; first (proctab__new_owner) */
	/* --csv: bytes per GPU and direction since the last row */
	uint64_t interval[MAX_GPUS + 1][BW__COUNT];
	bool gpu_seen[MAX_GPUS + 1];
	bool csv_header; /* --csv to a pipe (no position to read): its header is written */
};
_Static_assert(offsetof(struct bandwidth, procs) == 0, "proctab__new_owner: the table first");

const char *bw_dir_name(enum bw_dir d)
{
	static const char *const n[BW__COUNT] = { "H2D", "D2H", "D2D", "peer", "H2H" };

	return d < BW__COUNT ? n[d] : "?";
}

const char *bw_sync_kind_name(enum bw_sync_kind k)
{
	return cu_sync_name((enum cu_sync)k);
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

/* A synchronization completed an asynchronous copy (key[0] its bw_stat, key[1] its
 * bw_pair or NULL). */
static void copy_done(const struct cu_work *w, enum cu_sync kind)
{
	struct bw_stat *st = w->key[0];
	struct bw_pair *pair = w->key[1];

	st->async_done_copies++;
	st->async_done_bytes += w->bytes;
	st->async_done_by[kind]++;
	if (!pair)
		return;
	pair->done_copies++;
	pair->done_bytes += w->bytes;
	pair->done_by[kind]++;
}

static void copy_charge(int slot, void *key, uint64_t ns)
{
	if (slot == 0)
		((struct bw_stat *)key)->async_ns += ns;
	else
		((struct bw_pair *)key)->window_ns += ns;
}

static struct bw_signals *signals_of(int slot, void *key)
{
	return slot == 0 ? &((struct bw_stat *)key)->sig : &((struct bw_pair *)key)->sig;
}

/* One batch completed by one signal: its window's rate, in MB/s, into the histogram. */
static void copy_batch(int slot, void *key, uint64_t bytes, uint64_t ns, enum cu_sync kind)
{
	struct bw_signals *g = signals_of(slot, key);

	g->bytes[kind] += bytes;
	g->ns[kind] += ns;
	if (ns)
		g->window_hist[gp_log2_slot(bytes * 1000 / ns, BW_HIST_SLOTS)]++;
}

static void copy_timed(int slot, void *key, uint64_t bytes, uint64_t gpu_ns)
{
	struct bw_signals *g = signals_of(slot, key);

	g->event_bytes += bytes;
	g->event_ns += gpu_ns;
	g->event_windows++;
}

static const struct cu_work_ops copy_ops = {
	.done = copy_done, .charge = copy_charge, .batch = copy_batch, .timed = copy_timed,
};

static int init_proc(void *v, uint32_t pid)
{
	struct bw_proc *p = v;

	p->h.pid = pid;
	p->cu = cuctx__new(&copy_ops);
	p->stats = u64map__new();
	p->pairs = u64map__new();
	return p->cu && p->stats && p->pairs ? 0 : -ENOMEM;
}

static void fini_proc(void *ctx, void *v)
{
	struct bw_proc *p = v;

	(void)ctx;
	free(p->ranges);
	cuctx__free(p->cu);
	u64map__free_all(p->stats, NULL);
	free(p->view);
	u64map__free_all(p->pairs, NULL);
	free(p->pview);
}

static const struct proctab_ops proc_ops = { sizeof(struct bw_proc), init_proc, fini_proc };

struct bandwidth *bandwidth__new(void)
{
	return proctab__new_owner(sizeof(struct bandwidth), &proc_ops);
}

void bandwidth__free(struct bandwidth *bw)
{
	proctab__free_owner(bw);
}

static struct bw_proc *get_proc(struct bandwidth *bw, uint32_t pid, const char *comm)
{
	return proctab__get_named(bw->procs, pid, comm);
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

/* The GPU of the calling thread's current context, -1 when unknown. */
static int thread_gpu(struct bw_proc *p, uint64_t tid)
{
	return cuctx__thread_gpu(p->cu, tid);
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
	struct bw_stat *st = u64map__get_new(p->stats, key, sizeof(*st));

	if (st) { /* the key's own values */
		st->gpu = gpu;
		st->dir = dir;
	}
	return st;
}

static struct bw_pair *pair_of(struct bw_proc *p, int src, int dst)
{
	uint64_t key = ((uint64_t)(uint32_t)(src + 1) << 16) | (uint64_t)(uint32_t)(dst + 1);
	struct bw_pair *x = u64map__get_new(p->pairs, key, sizeof(*x));

	if (x) {
		x->src = src;
		x->dst = dst;
	}
	return x;
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
			d.gpu = cuctx__ctx_gpu(p->cu, e->dst_ctx);
		if (e->src_ctx)
			s.gpu = cuctx__ctx_gpu(p->cu, e->src_ctx);
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
	cuctx__submit(p->cu, &(struct cu_work){
		.stream = cu_stream_key(per_thread_api(e->api), e->async ? e->stream : 0, e->tid),
		.ts_ns = e->ts_ns, .bytes = e->bytes, .key = { st, pair }, .epoch = e->epoch,
	});
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
	st->size_hist[gp_log2_slot(e->bytes, BW_HIST_SLOTS)]++;
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
			st->rate_hist[gp_log2_slot(e->bytes * 1000000000ULL / e->dur_ns >> 20, BW_HIST_SLOTS)]++;
	}
	bw->gpu_seen[gpu + 1 > MAX_GPUS ? MAX_GPUS : gpu + 1] = true;
	bw->interval[gpu + 1 > MAX_GPUS ? MAX_GPUS : gpu + 1][dir] += e->bytes;
}

/* Contexts, synchronizations and event records go to the process's cuctx; host
 * registrations are pinned ranges. */
void bandwidth__on_aux(struct bandwidth *bw, const struct gp_aux_event *e)
{
	struct bw_proc *p = get_proc(bw, e->pid, NULL);

	if (!p || cuctx__on_aux(p->cu, e))
		return;
	if (e->api == GP_API_cuMemHostRegister_v2)
		add_range(p, e->handle, e->aux, KIND_HOSTREG, -1);
	else if (e->api == GP_API_cuMemHostUnregister)
		remove_range(p, e->handle);
}

void bandwidth__on_exit(struct bandwidth *bw, const struct gp_exit_event *e)
{
	proctab__end(bw->procs, e->pid, e->ts_ns, false);
}

void bandwidth__on_exec(struct bandwidth *bw, const struct gp_proc_event *e)
{
	proctab__end(bw->procs, e->pid, e->ts_ns, true);
}

size_t bandwidth__procs(struct bandwidth *bw, struct bw_proc ***out)
{
	return proctab__list(bw->procs, (void ***)out);
}

uint32_t bw_proc__pid(const struct bw_proc *p)
{
	return p->h.pid;
}

const char *bw_proc__comm(const struct bw_proc *p)
{
	return p->h.comm;
}

bool bw_proc__exited(const struct bw_proc *p)
{
	return p->h.exited;
}

uint64_t bw_proc__unsynced(const struct bw_proc *p)
{
	return cuctx__pending(p->cu);
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
	size_t n;

	*out = (struct bw_stat **)u64map__sorted(p->stats, (void ***)&p->view, &n, cmp_stat);
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
	size_t n;

	*out = (struct bw_pair **)u64map__sorted(p->pairs, (void ***)&p->pview, &n, cmp_pair);
	return n;
}

void bandwidth__sweep(struct bandwidth *bw, uint64_t now_ns)
{
	/* processes that only copied, synchronized or made contexts get no exit record */
	proctab__sweep_end(bw->procs, now_ns);
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

		if (pid && procs[i]->h.pid != pid)
			continue;
		ns = bw_proc__stats(procs[i], &st);
		sp->pid = procs[i]->h.pid;
		memcpy(sp->comm, procs[i]->h.comm, sizeof(sp->comm));
		sp->unnamed = procs[i]->h.unnamed;
		sp->exited = procs[i]->h.exited;
		sp->exec = procs[i]->h.exec;
		sp->exit_ns = procs[i]->h.exit_ns;
		sp->unsynced = cuctx__pending(procs[i]->cu);
		sp->untimed = cuctx__untimed(procs[i]->cu, &sp->untimed_bytes);
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
	long pos = fseek(f, 0, SEEK_END) ? -1 : ftell(f);

	/* a file appended to has its header once; a pipe gets it with the first rows */
	if (pos < 0 && errno != ESPIPE)
		return -errno;
	if (pos == 0 || (pos < 0 && !bw->csv_header))
		fprintf(f, "timestamp,gpu,h2d_bytes,d2h_bytes,d2d_bytes,h2d_bytes_per_s,d2h_bytes_per_s\n");
	bw->csv_header = true;
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
	if (fflush(f))
		return -(errno ? errno : EIO);
	return ferror(f) ? -EIO : 0;
}
