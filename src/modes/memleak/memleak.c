/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lib/apis.h"
#include "modes/memleak/memleak.h"
#include "lib/proctab.h"
#include "lib/u64map.h"
#include "lib/util.h"

struct memleak {
	struct proctab *procs; /* struct ml_proc; first (proctab__new_owner) */
	size_t max_allocs, nr_allocs;
	uint64_t table_full;
};
_Static_assert(offsetof(struct memleak, procs) == 0, "proctab__new_owner: the table first");

/* ---- stacks, one copy per process ---- */

static uint64_t stack_hash(const struct ml_stack_in *in)
{
	uint64_t h = GP_FNV1A_INIT ^ in->flags;

	for (uint32_t i = 0; i < in->nr; i++) {
		h = gp_fnv1a(in->frames[i], strlen(in->frames[i]), h);
		h = gp_fnv1a("\xff", 1, h); /* frame boundary */
	}
	return h;
}

static bool stack_equal(const struct ml_stack *s, const struct ml_stack_in *in)
{
	if (s->nr != in->nr || s->flags != in->flags)
		return false;
	for (uint32_t i = 0; i < in->nr; i++)
		if (strcmp(s->frames[i], in->frames[i]))
			return false;
	return true;
}

/* One block: the struct, the frame pointers, the texts. */
static struct ml_stack *stack_new(const struct ml_stack_in *in, uint64_t hash)
{
	size_t bytes = sizeof(struct ml_stack) + in->nr * sizeof(char *);
	struct ml_stack *s;
	char *t;

	for (uint32_t i = 0; i < in->nr; i++)
		bytes += strlen(in->frames[i]) + 1;
	s = malloc(bytes);
	if (!s)
		return NULL;
	*s = (struct ml_stack){ .hash = hash, .nr = in->nr, .flags = in->flags };
	s->frames = (char **)(s + 1);
	t = (char *)(s->frames + in->nr);
	for (uint32_t i = 0; i < in->nr; i++) {
		size_t n = strlen(in->frames[i]) + 1;

		memcpy(t, in->frames[i], n);
		s->frames[i] = t;
		t += n;
	}
	return s;
}

/* The process's copy of a stack, made if new; NULL when out of memory. Equal hashes of
 * different stacks take the next free key. */
static struct ml_stack *stack_get(struct ml_proc *p, const struct ml_stack_in *in)
{
	static const struct ml_stack_in none = { 0 };
	uint64_t h = stack_hash(in ? in : &none), key = h;
	struct ml_stack *s;

	if (!in)
		in = &none;
	for (int probes = 0; probes < 64; probes++, key++) {
		s = u64map__get(p->stacks, key);
		if (!s)
			break;
		if (stack_equal(s, in)) {
			s->refs++;
			return s;
		}
	}
	s = stack_new(in, key);
	if (s && u64map__put(p->stacks, key, s)) {
		free(s);
		return NULL;
	}
	if (s)
		s->refs = 1;
	return s;
}

static void stack_put(struct ml_proc *p, struct ml_stack *s)
{
	if (s && --s->refs == 0)
		free(u64map__del(p->stacks, s->hash));
}

static int init_proc(void *v, uint32_t pid)
{
	struct ml_proc *p = v;

	p->h.pid = pid;
	p->allocs = u64map__new();
	p->handles = u64map__new();
	p->mappings = u64map__new();
	p->stacks = u64map__new();
	p->graph_mem = u64map__new();
	return p->allocs && p->handles && p->mappings && p->stacks && p->graph_mem ? 0 : -ENOMEM;
}

/* A record goes: its allocations leave the --max-allocs count with it. */
static void fini_proc(void *ctx, void *v)
{
	struct memleak *ml = ctx;
	struct ml_proc *p = v;

	ml->nr_allocs -= u64map__size(p->allocs) + u64map__size(p->handles);
	u64map__free_all(p->allocs, NULL);
	u64map__free_all(p->handles, NULL);
	u64map__free_all(p->mappings, NULL);
	u64map__free_all(p->stacks, NULL);
	u64map__free(p->graph_mem);
}

static const struct proctab_ops proc_ops = { sizeof(struct ml_proc), init_proc, fini_proc };

struct memleak *memleak__new(size_t max_allocs)
{
	struct memleak *ml = proctab__new_owner(sizeof(struct memleak), &proc_ops);

	if (ml)
		ml->max_allocs = max_allocs;
	return ml;
}

void memleak__free(struct memleak *ml)
{
	proctab__free_owner(ml);
}

static struct ml_proc *get_proc(struct memleak *ml, uint32_t pid, const char *comm)
{
	struct ml_proc *p = proctab__get(ml->procs, pid);

	/* comm changes on exec; keep the latest (a record without one: /proc's; gone, none yet) */
	if (p && comm && comm[0]) {
		snprintf(p->h.comm, sizeof(p->h.comm), "%.*s", GP_COMM_LEN - 1, comm);
		p->h.unnamed = false;
	} else if (p && !p->h.comm[0]) {
		p->h.unnamed = gp_proc_comm(pid, p->h.comm, sizeof(p->h.comm)) != 0;
	}
	return p;
}

static void account(struct ml_proc *p, const struct ml_alloc *a, int sign)
{
	if (sign > 0) {
		p->st.outstanding_bytes += a->size;
		p->st.outstanding_allocs++;
		p->st.bytes_by_kind[a->kind] += a->size;
		p->st.allocs_by_kind[a->kind]++;
	} else {
		p->st.outstanding_bytes -= a->size;
		p->st.outstanding_allocs--;
		p->st.bytes_by_kind[a->kind] -= a->size;
		p->st.allocs_by_kind[a->kind]--;
	}
}

/* Drops a tracked allocation: its bytes, its count, its share of its stack. */
static void release(struct memleak *ml, struct ml_proc *p, struct ml_alloc *a)
{
	account(p, a, -1);
	stack_put(p, a->stack);
	ml->nr_allocs--;
	free(a);
}

void memleak__on_alloc(struct memleak *ml, const struct gp_alloc_event *e, const struct ml_stack_in *stack)
{
	const struct gp_api_info *info = gp_api_info(e->api);
	struct ml_proc *p;
	struct ml_alloc *a, *old;
	struct u64map *table;

	if (!info)
		return;
	p = get_proc(ml, e->pid, e->comm);
	if (!p)
		return;
	p->st.allocs_total++;
	p->st.alloc_bytes_total += e->size;
	if (ml->max_allocs && ml->nr_allocs >= ml->max_allocs) {
		ml->table_full++;
		return;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return;
	*a = (struct ml_alloc){ .addr = e->addr, .size = e->size, .ts_ns = e->ts_ns, .api = e->api,
				.kind = info->kind, .tid = e->tid };
	table = a->kind == GP_KIND_PHYSICAL ? p->handles : p->allocs;
	/* The driver handed out an address we think is live: the free was lost (dropped
	 * event) — replace, so the table reflects the driver. */
	old = u64map__del(table, a->addr);
	if (old)
		release(ml, p, old);
	if (u64map__put(table, a->addr, a)) {
		free(a);
		return;
	}
	if (a->kind == GP_KIND_GRAPH && u64map__size(p->graph_mem) < ML_GRAPH_NODES)
		u64map__put(p->graph_mem, a->addr, (void *)(uintptr_t)1);
	a->stack = stack_get(p, stack); /* NULL (out of memory): reported without a stack */
	ml->nr_allocs++;
	account(p, a, +1);
}

void memleak__on_free(struct memleak *ml, const struct gp_free_event *e)
{
	const struct gp_api_info *info = gp_api_info(e->api);
	struct ml_proc *p;
	struct ml_alloc *a;
	struct ml_mapping *m;

	if (!info)
		return;
	p = get_proc(ml, e->pid, e->comm);
	if (!p)
		return;
	switch (e->type) {
	case GP_EV_MAP:
		m = calloc(1, sizeof(*m));
		if (!m)
			return;
		m->addr = e->addr;
		m->size = e->size;
		m->handle = e->handle;
		free(u64map__del(p->mappings, e->addr));
		if (u64map__put(p->mappings, e->addr, m)) {
			free(m);
			return;
		}
		p->st.maps_total++;
		p->st.mapped_bytes += e->size;
		return;
	case GP_EV_UNMAP:
		p->st.unmaps_total++;
		m = u64map__del(p->mappings, e->addr);
		if (m) {
			p->st.mapped_bytes -= m->size;
			free(m);
		}
		return;
	default:
		break;
	}
	/* cuMemFree_v2(0) succeeds and frees nothing, like free(NULL) */
	if (e->addr == 0 && info->kind != GP_KIND_PHYSICAL)
		return;
	p->st.frees_total++;
	a = u64map__del(info->kind == GP_KIND_PHYSICAL ? p->handles : p->allocs, e->addr);
	if (!a && u64map__get(p->graph_mem, e->addr)) {
		/* a graph's memory freed again: a launch after the first free made it anew */
		p->st.graph_relaunch_frees++;
		return;
	}
	if (!a) {
		p->st.untracked_frees++;
		return;
	}
	p->st.freed_bytes_total += a->size;
	release(ml, p, a);
}

struct ml_proc *memleak__on_exit(struct memleak *ml, const struct gp_exit_event *e)
{
	return proctab__end(ml->procs, e->pid, e->ts_ns, false);
}

struct ml_proc *memleak__on_exec(struct memleak *ml, const struct gp_proc_event *e)
{
	return proctab__end(ml->procs, e->pid, e->ts_ns, true);
}

size_t memleak__procs(struct memleak *ml, struct ml_proc ***out)
{
	return proctab__list(ml->procs, (void ***)out);
}

static int cmp_alloc(const void *a, const void *b)
{
	const struct ml_alloc *x = *(struct ml_alloc *const *)a, *y = *(struct ml_alloc *const *)b;

	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

size_t memleak__proc_allocs(struct ml_proc *p, struct ml_alloc ***out)
{
	size_t n = u64map__size(p->allocs) + u64map__size(p->handles), i = 0;
	struct ml_alloc **v = malloc((n ? n : 1) * sizeof(*v));
	uint64_t k;
	void *val;

	*out = v;
	if (!v)
		return 0;
	for (size_t it = 0; u64map__next(p->allocs, &it, &k, &val);)
		v[i++] = val;
	for (size_t it = 0; u64map__next(p->handles, &it, &k, &val);)
		v[i++] = val;
	qsort(v, n, sizeof(*v), cmp_alloc);
	return n;
}

void memleak__free_allocs_array(struct ml_alloc **arr)
{
	free(arr);
}

void memleak__sweep(struct memleak *ml, uint64_t now_ns)
{
	proctab__sweep_end(ml->procs, now_ns);
}

void memleak__reap(struct memleak *ml, uint64_t cutoff_ns, uint32_t keep_pid)
{
	proctab__reap(ml->procs, keep_pid, cutoff_ns, NULL, NULL);
}

uint64_t memleak__table_full(const struct memleak *ml)
{
	return ml->table_full;
}

static int cmp_by_stack(const void *a, const void *b)
{
	const struct ml_alloc *x = *(struct ml_alloc *const *)a, *y = *(struct ml_alloc *const *)b;

	if (x->stack != y->stack)
		return (uintptr_t)x->stack < (uintptr_t)y->stack ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_stack(const void *a, const void *b)
{
	const struct ml_snap_stack *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->allocs != y->allocs)
		return x->allocs > y->allocs ? -1 : 1;
	if (x->oldest_age_s != y->oldest_age_s)
		return x->oldest_age_s > y->oldest_age_s ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static const char *const no_frames[1] = { NULL };

/* Consecutive allocations of one stack (v sorted by stack) into one group. */
static void group(struct ml_snap_stack *g, struct ml_alloc *const *v, size_t from, size_t to, uint64_t end)
{
	const struct ml_stack *st = v[from]->stack;

	*g = (struct ml_snap_stack){ .first = from, .frames = st ? (const char *const *)st->frames : no_frames,
				     .nr_frames = st ? st->nr : 0, .flags = st ? st->flags : 0 };
	for (size_t i = from; i < to; i++) {
		double age = end > v[i]->ts_ns ? (double)(end - v[i]->ts_ns) / 1e9 : 0.0;

		g->bytes += v[i]->size;
		g->allocs++;
		if (age > g->oldest_age_s)
			g->oldest_age_s = age;
		g->apis |= gp_mem_api_bit(v[i]->api);
		g->kinds |= 1u << v[i]->kind;
	}
}

/* The allocations older than min_age_ns, grouped by stack, most bytes first. */
static int snap_allocs(struct ml_proc *p, uint64_t now_ns, uint64_t min_age_ns, struct ml_snap_proc *sp)
{
	uint64_t end = p->h.exited ? p->h.exit_ns : now_ns;
	struct ml_alloc **v;
	size_t n = memleak__proc_allocs(p, &v), kept = 0, ng = 0;
	int err = -ENOMEM;

	if (!v)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		uint64_t age = end > v[i]->ts_ns ? end - v[i]->ts_ns : 0;

		if (!min_age_ns || age > min_age_ns)
			v[kept++] = v[i];
	}
	qsort(v, kept, sizeof(*v), cmp_by_stack);
	sp->allocs = calloc(kept ? kept : 1, sizeof(*sp->allocs));
	sp->stacks = calloc(kept ? kept : 1, sizeof(*sp->stacks));
	if (!sp->allocs || !sp->stacks)
		goto cleanup;
	for (size_t i = 0, j; i < kept; i = j) {
		for (j = i + 1; j < kept && v[j]->stack == v[i]->stack; j++)
			;
		group(&sp->stacks[ng++], v, i, j, end);
	}
	qsort(sp->stacks, ng, sizeof(*sp->stacks), cmp_stack);
	/* allocations in the order of their groups */
	for (size_t g = 0, w = 0; g < ng; g++) {
		struct ml_snap_stack *st = &sp->stacks[g];
		size_t from = st->first;

		st->first = w;
		for (size_t i = from; i < from + st->allocs; i++, w++)
			sp->allocs[w] = (struct ml_snap_alloc){
				.addr = v[i]->addr, .size = v[i]->size, .api = v[i]->api, .kind = v[i]->kind,
				.tid = v[i]->tid,
				.age_s = end > v[i]->ts_ns ? (double)(end - v[i]->ts_ns) / 1e9 : 0.0,
			};
		sp->shown_bytes += st->bytes;
		sp->shown_allocs += st->allocs;
	}
	sp->nr_allocs = kept;
	sp->nr_stacks = ng;
	err = 0;
cleanup:
	free(v);
	return err;
}

int memleak__snapshot(struct memleak *ml, uint64_t now_ns, uint32_t pid, unsigned int flags,
		      uint64_t min_age_ns, struct ml_snap_data *out)
{
	struct ml_proc **procs, *newest = NULL;
	size_t n = memleak__procs(ml, &procs), k = 0;

	/* a process's exit report: its last image (earlier ones, ended by exec, had theirs) */
	for (size_t i = 0; pid && (flags & ML_SNAP_EXITED) && i < n; i++)
		if (procs[i]->h.pid == pid && procs[i]->h.exited &&
		    (!newest || procs[i]->h.exit_ns >= newest->h.exit_ns))
			newest = procs[i];
	ml_snap_data__clear(out);
	out->procs = calloc(n ? n : 1, sizeof(*out->procs));
	if (!out->procs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ml_snap_proc *sp = &out->procs[k];

		if ((pid && procs[i]->h.pid != pid) || ((flags & ML_SNAP_EXITED) && !procs[i]->h.exited) ||
		    (newest && procs[i] != newest))
			continue;
		sp->pid = procs[i]->h.pid;
		memcpy(sp->comm, procs[i]->h.comm, sizeof(sp->comm));
		sp->unnamed = procs[i]->h.unnamed;
		sp->exited = procs[i]->h.exited;
		sp->exec = procs[i]->h.exec;
		sp->exit_ns = procs[i]->h.exit_ns;
		sp->st = procs[i]->st;
		k++;
		out->nr_procs = k;
		if ((flags & ML_SNAP_ALLOCS) && snap_allocs(procs[i], now_ns, min_age_ns, sp))
			return -ENOMEM;
	}
	return 0;
}

void ml_snap_data__clear(struct ml_snap_data *d)
{
	for (size_t i = 0; d->procs && i < d->nr_procs; i++) {
		free(d->procs[i].allocs);
		free(d->procs[i].stacks);
	}
	free(d->procs);
	d->procs = NULL;
	d->nr_procs = 0;
}
