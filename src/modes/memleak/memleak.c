/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apis.h"
#include "memleak.h"
#include "proctab.h"
#include "u64map.h"

struct memleak {
	struct proctab *procs; /* struct ml_proc */
	size_t max_allocs, nr_allocs;
	uint64_t table_full;
	ml_symbolize_fn sym;
	void *sym_ctx;
};

static void free_alloc(struct ml_alloc *a)
{
	if (!a)
		return;
	free(a->stack);
	free(a);
}

static void free_alloc_v(void *v)
{
	free_alloc(v);
}

static void proc__free(struct ml_proc *p)
{
	if (!p)
		return;
	u64map__free_all(p->allocs, free_alloc_v);
	u64map__free_all(p->handles, free_alloc_v);
	u64map__free_all(p->mappings, NULL);
	u64map__free_all(p->frames, NULL);
	free(p);
}

static struct ml_proc *proc__new(uint32_t pid, const char *comm)
{
	struct ml_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	snprintf(p->comm, sizeof(p->comm), "%.*s", GP_COMM_LEN - 1, comm);
	p->allocs = u64map__new();
	p->handles = u64map__new();
	p->mappings = u64map__new();
	p->frames = u64map__new();
	if (!p->allocs || !p->handles || !p->mappings || !p->frames) {
		proc__free(p);
		return NULL;
	}
	return p;
}

/* A record goes: its allocations leave the --max-allocs count with it. */
static void free_proc(void *ctx, void *v)
{
	struct memleak *ml = ctx;
	struct ml_proc *p = v;

	ml->nr_allocs -= u64map__size(p->allocs) + u64map__size(p->handles);
	proc__free(p);
}

static void *make_proc(uint32_t pid)
{
	return proc__new(pid, "");
}

struct memleak *memleak__new(size_t max_allocs, ml_symbolize_fn sym, void *sym_ctx)
{
	struct memleak *ml = calloc(1, sizeof(*ml));

	if (!ml)
		return NULL;
	ml->procs = proctab__new(free_proc, ml);
	if (!ml->procs) {
		free(ml);
		return NULL;
	}
	ml->max_allocs = max_allocs;
	ml->sym = sym;
	ml->sym_ctx = sym_ctx;
	return ml;
}

void memleak__free(struct memleak *ml)
{
	if (!ml)
		return;
	proctab__free(ml->procs);
	free(ml);
}

static struct ml_proc *get_proc(struct memleak *ml, uint32_t pid, const char *comm)
{
	struct ml_proc *p = proctab__get(ml->procs, pid, make_proc);

	/* comm changes on exec; keep the latest */
	if (p)
		snprintf(p->comm, sizeof(p->comm), "%.*s", GP_COMM_LEN - 1, comm);
	return p;
}

/* Symbolize while the process is alive: by report time it may be gone. */
static void remember_frames(struct memleak *ml, struct ml_proc *p, const struct ml_alloc *a)
{
	char buf[512];

	for (uint32_t i = 0; i < a->nr_stack; i++) {
		uint64_t ip = a->stack[i];
		char *s;

		if (u64map__get(p->frames, ip))
			continue;
		if (!ml->sym || ml->sym(ml->sym_ctx, (int)p->pid, ip, buf, sizeof(buf)) < 0)
			snprintf(buf, sizeof(buf), "0x%" PRIx64, ip);
		s = strdup(buf);
		if (s && u64map__put(p->frames, ip, s))
			free(s);
	}
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

void memleak__on_alloc(struct memleak *ml, const struct gp_alloc_event *e)
{
	const struct gp_api_info *info = gp_api_info(e->api);
	struct ml_proc *p;
	struct ml_alloc *a, *old;
	struct u64map *table;
	uint32_t n = e->nr_stack > GP_MAX_STACK ? GP_MAX_STACK : e->nr_stack;

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
	a->addr = e->addr;
	a->size = e->size;
	a->ts_ns = e->ts_ns;
	a->api = e->api;
	a->kind = info->kind;
	a->tid = e->tid;
	a->stack_err = e->stack_err;
	if (n) {
		a->stack = malloc(n * sizeof(*a->stack));
		if (a->stack) {
			memcpy(a->stack, e->stack, n * sizeof(*a->stack));
			a->nr_stack = n;
		}
	}
	table = a->kind == GP_KIND_PHYSICAL ? p->handles : p->allocs;
	/* The driver handed out an address we think is live: the free was lost (dropped
	 * event) — replace, so the table reflects the driver. */
	old = u64map__del(table, a->addr);
	if (old) {
		account(p, old, -1);
		free_alloc(old);
		ml->nr_allocs--;
	}
	if (u64map__put(table, a->addr, a)) {
		free_alloc(a);
		return;
	}
	ml->nr_allocs++;
	account(p, a, +1);
	remember_frames(ml, p, a);
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
	if (!a) {
		p->st.untracked_frees++;
		return;
	}
	p->st.freed_bytes_total += a->size;
	account(p, a, -1);
	ml->nr_allocs--;
	free_alloc(a);
}

struct ml_proc *memleak__on_exit(struct memleak *ml, const struct gp_exit_event *e)
{
	struct ml_proc *p = proctab__exit(ml->procs, e->pid, e->ts_ns);

	if (p) {
		p->exited = true;
		p->exit_ns = e->ts_ns;
	}
	return p;
}

struct ml_proc *memleak__on_exec(struct memleak *ml, const struct gp_proc_event *e)
{
	struct ml_proc *p = proctab__exit(ml->procs, e->pid, e->ts_ns);

	if (p) {
		p->exited = true;
		p->exec = true;
		p->exit_ns = e->ts_ns;
	}
	return p;
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

const char *memleak__frame(struct ml_proc *p, uint64_t addr)
{
	const char *s = u64map__get(p->frames, addr);

	return s ? s : "?";
}

struct sweep {
	struct memleak *ml;
	uint64_t now_ns;
};

static void gone(void *ctx, uint32_t pid)
{
	struct sweep *s = ctx;
	struct gp_exit_event e = { .type = GP_EV_EXIT, .pid = pid, .ts_ns = s->now_ns };

	memleak__on_exit(s->ml, &e);
}

void memleak__sweep(struct memleak *ml, uint64_t now_ns)
{
	struct sweep s = { .ml = ml, .now_ns = now_ns };

	proctab__sweep(ml->procs, gone, &s);
}

void memleak__reap(struct memleak *ml, uint64_t cutoff_ns, uint32_t keep_pid)
{
	proctab__reap(ml->procs, keep_pid, cutoff_ns, NULL, NULL);
}

uint64_t memleak__table_full(const struct memleak *ml)
{
	return ml->table_full;
}

static int snap_allocs(struct ml_proc *p, uint64_t now_ns, struct ml_snap_proc *sp)
{
	uint64_t end = p->exited ? p->exit_ns : now_ns;
	struct ml_alloc **v;
	size_t n = memleak__proc_allocs(p, &v), frames = 0;
	const char **fp;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		frames += v[i]->nr_stack;
	/* one block: the allocations, then every frame pointer */
	sp->allocs = calloc(1, n * sizeof(*sp->allocs) + frames * sizeof(char *) + 1);
	if (!sp->allocs) {
		free(v);
		return -ENOMEM;
	}
	fp = (const char **)(sp->allocs + n);
	for (size_t i = 0; i < n; i++) {
		struct ml_snap_alloc *a = &sp->allocs[i];

		*a = (struct ml_snap_alloc){
			.addr = v[i]->addr, .size = v[i]->size, .api = v[i]->api, .kind = v[i]->kind,
			.tid = v[i]->tid, .stack_err = v[i]->stack_err, .nr_frames = v[i]->nr_stack,
			.age_s = end > v[i]->ts_ns ? (double)(end - v[i]->ts_ns) / 1e9 : 0.0,
			.frames = fp,
		};
		for (uint32_t s = 0; s < v[i]->nr_stack; s++)
			*fp++ = memleak__frame(p, v[i]->stack[s]);
	}
	sp->nr_allocs = n;
	free(v);
	return 0;
}

int memleak__snapshot(struct memleak *ml, uint64_t now_ns, uint32_t pid, unsigned int flags,
		      struct ml_snap_data *out)
{
	struct ml_proc **procs, *newest = NULL;
	size_t n = memleak__procs(ml, &procs), k = 0;

	/* a process's exit report: its last image (earlier ones, ended by exec, had theirs) */
	for (size_t i = 0; pid && (flags & ML_SNAP_EXITED) && i < n; i++)
		if (procs[i]->pid == pid && procs[i]->exited && (!newest || procs[i]->exit_ns >= newest->exit_ns))
			newest = procs[i];
	ml_snap_data__clear(out);
	out->procs = calloc(n ? n : 1, sizeof(*out->procs));
	if (!out->procs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ml_snap_proc *sp = &out->procs[k];

		if ((pid && procs[i]->pid != pid) || ((flags & ML_SNAP_EXITED) && !procs[i]->exited) ||
		    (newest && procs[i] != newest))
			continue;
		sp->pid = procs[i]->pid;
		memcpy(sp->comm, procs[i]->comm, sizeof(sp->comm));
		sp->exited = procs[i]->exited;
		sp->exec = procs[i]->exec;
		sp->st = procs[i]->st;
		k++;
		out->nr_procs = k;
		if ((flags & ML_SNAP_ALLOCS) && snap_allocs(procs[i], now_ns, sp))
			return -ENOMEM;
	}
	return 0;
}

void ml_snap_data__clear(struct ml_snap_data *d)
{
	for (size_t i = 0; d->procs && i < d->nr_procs; i++)
		free(d->procs[i].allocs);
	free(d->procs);
	d->procs = NULL;
	d->nr_procs = 0;
}
