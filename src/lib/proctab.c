/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "lib/proctab.h"
#include "lib/u64map.h"
#include "lib/util.h"

struct exited {
	void *p;
	uint32_t pid;
	uint64_t exit_ns;
	uint64_t handled_ns; /* when the exit was handled (CLOCK_MONOTONIC): no earlier than exit_ns */
	uint64_t seq; /* its place among every table's exits (proctab__exits) */
};

/* Exits moved out of every table so far, in the order they were handled (atomic: the
 * daemon's scrapes read tables on another thread). */
static uint64_t exits_handled;

uint64_t proctab__exits(void)
{
	return __atomic_load_n(&exits_handled, __ATOMIC_ACQUIRE);
}

static uint64_t sweep_grace_ns;

void proctab__set_sweep_grace(uint64_t ns)
{
	sweep_grace_ns = ns;
}

struct row {
	void *p;
	uint32_t pid;
	bool exited;
};

struct proctab {
	struct u64map *live; /* pid -> record */
	struct u64map *gone_at; /* pid -> when a sweep first found it gone (ns | 1) */
	struct exited *exited;
	size_t nr_exited, cap_exited;
	struct row *rows;
	void **view;
	const struct proctab_ops *ops;
	void *ctx;
};

struct proctab *proctab__new(const struct proctab_ops *ops, void *ctx)
{
	struct proctab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->live = u64map__new();
	if (!t->live) {
		free(t);
		return NULL;
	}
	t->ops = ops;
	t->ctx = ctx;
	return t;
}

void *proctab__new_owner(size_t size, const struct proctab_ops *ops)
{
	struct proctab **owner = calloc(1, size);

	if (owner && !(*owner = proctab__new(ops, owner))) {
		free(owner);
		owner = NULL;
	}
	return owner;
}

void proctab__free_owner(void *owner)
{
	if (!owner)
		return;
	proctab__free(*(struct proctab **)owner);
	free(owner);
}

static void release(struct proctab *t, void *p)
{
	t->ops->fini(t->ctx, p);
	free(p);
}

/* A zeroed record for pid, made by the ops; NULL on failure. */
static void *make_rec(struct proctab *t, uint32_t pid)
{
	void *p = calloc(1, t->ops->size);

	if (p && t->ops->init(p, pid)) {
		release(t, p);
		p = NULL;
	}
	return p;
}

void proctab__free(struct proctab *t)
{
	uint64_t k;
	void *v;

	if (!t)
		return;
	for (size_t it = 0; u64map__next(t->live, &it, &k, &v);)
		release(t, v);
	u64map__free(t->live);
	u64map__free(t->gone_at);
	for (size_t i = 0; i < t->nr_exited; i++)
		release(t, t->exited[i].p);
	free(t->exited);
	free(t->rows);
	free(t->view);
	free(t);
}

void *proctab__live(const struct proctab *t, uint32_t pid)
{
	return u64map__get(t->live, pid);
}

void *proctab__get(struct proctab *t, uint32_t pid)
{
	void *p = u64map__get(t->live, pid);

	if (p)
		return p;
	p = make_rec(t, pid);
	if (p && u64map__put(t->live, pid, p)) {
		release(t, p);
		p = NULL;
	}
	return p;
}

void *proctab__find(const struct proctab *t, uint32_t pid)
{
	void *p = u64map__get(t->live, pid);

	for (size_t i = t->nr_exited; !p && i > 0; i--)
		if (t->exited[i - 1].pid == pid)
			p = t->exited[i - 1].p;
	return p;
}

void *proctab__find_if(const struct proctab *t, uint32_t pid, bool (*match)(const void *p, void *ctx),
		       void *ctx)
{
	void *p = u64map__get(t->live, pid);

	if (p && match(p, ctx))
		return p;
	for (size_t i = t->nr_exited; i > 0; i--)
		if (t->exited[i - 1].pid == pid && match(t->exited[i - 1].p, ctx))
			return t->exited[i - 1].p;
	return NULL;
}

void *proctab__exit(struct proctab *t, uint32_t pid, uint64_t exit_ns)
{
	void *p = u64map__del(t->live, pid);

	if (!p)
		return NULL;
	if (t->gone_at)
		u64map__del(t->gone_at, pid);
	if (t->nr_exited == t->cap_exited) {
		size_t cap = t->cap_exited ? t->cap_exited * 2 : 16;
		struct exited *n = realloc(t->exited, cap * sizeof(*n));

		if (!n) {
			release(t, p);
			return NULL;
		}
		t->exited = n;
		t->cap_exited = cap;
	}
	t->exited[t->nr_exited++] = (struct exited){ .p = p, .pid = pid, .exit_ns = exit_ns, .handled_ns = gp_mono_ns(),
						     .seq = __atomic_fetch_add(&exits_handled, 1, __ATOMIC_ACQ_REL) };
	return p;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->exited != y->exited)
		return x->exited ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

size_t proctab__list(struct proctab *t, void ***out)
{
	size_t n = u64map__size(t->live) + t->nr_exited, i = 0;
	struct row *rows = realloc(t->rows, (n ? n : 1) * sizeof(*rows));
	void **view;
	uint64_t k;
	void *v;

	*out = NULL;
	if (!rows)
		return 0;
	t->rows = rows;
	view = realloc(t->view, (n ? n : 1) * sizeof(*view));
	if (!view)
		return 0;
	t->view = view;
	for (size_t it = 0; u64map__next(t->live, &it, &k, &v);)
		rows[i++] = (struct row){ .p = v, .pid = (uint32_t)k };
	for (size_t j = 0; j < t->nr_exited; j++)
		rows[i++] = (struct row){ .p = t->exited[j].p, .pid = t->exited[j].pid, .exited = true };
	qsort(rows, n, sizeof(*rows), cmp_row);
	for (i = 0; i < n; i++)
		view[i] = rows[i].p;
	*out = view;
	return n;
}

void proctab__reap(struct proctab *t, uint32_t keep_pid, uint64_t before_ns,
		   void (*before_free)(void *rctx, void *p), void *rctx)
{
	proctab__reap_held(t, keep_pid, before_ns, NULL, before_free, rctx);
}

void proctab__reap_held(struct proctab *t, uint32_t keep_pid, uint64_t before_ns,
			bool (*held)(void *rctx, const void *p), void (*before_free)(void *rctx, void *p),
			void *rctx)
{
	bool by_seq = before_ns & GP_REAP_SEQ(0);
	size_t kept = 0;

	for (size_t i = 0; i < t->nr_exited; i++) {
		struct exited *e = &t->exited[i];

		/* by time, an exit handled after the cutoff stays though it happened before: a
		 * reader behind by more than the daemon's second read it only now, in the reap's
		 * own drain, and no render has counted what came since the last (else 24 of
		 * a churn process's 102 allocations lost, every drop counter 0) */
		if ((keep_pid && e->pid == keep_pid) || (held && held(rctx, e->p)) ||
		    (by_seq ? e->seq >= (before_ns & ~GP_REAP_SEQ(0)) :
			      e->exit_ns >= before_ns || e->handled_ns >= before_ns)) {
			t->exited[kept++] = *e;
			continue;
		}
		if (before_free)
			before_free(rctx, e->p);
		release(t, e->p);
	}
	t->nr_exited = kept;
}

/*
 * The live records whose process is gone. With a grace (proctab__set_sweep_grace), gone
 * since a sweep at least that long ago: a process's last records may be behind a record
 * another CPU has not committed yet, and a sweep that ended it first would make a second
 * record of them.
 */
static size_t gone(struct proctab *t, uint32_t *pids, size_t max)
{
	uint64_t pid, now = sweep_grace_ns ? gp_mono_ns() : 0;
	size_t n = 0;
	void *v;

	if (sweep_grace_ns && !t->gone_at && !(t->gone_at = u64map__new()))
		return 0;
	for (size_t it = 0; n < max && u64map__next(t->live, &it, &pid, &v);) {
		uintptr_t at;

		if (!kill((pid_t)pid, 0) || errno != ESRCH) {
			if (t->gone_at)
				u64map__del(t->gone_at, pid);
			continue;
		}
		if (!sweep_grace_ns) {
			pids[n++] = (uint32_t)pid;
			continue;
		}
		at = (uintptr_t)u64map__get(t->gone_at, pid);
		if (!at)
			u64map__put(t->gone_at, pid, (void *)(uintptr_t)(now | 1));
		else if (now - at >= sweep_grace_ns)
			pids[n++] = (uint32_t)pid;
	}
	return n;
}

void proctab__sweep(struct proctab *t, void (*on_gone)(void *ctx, uint32_t pid), void *ctx)
{
	uint32_t pids[256];
	size_t n;

	/* collected first, a batch at a time: on_gone moves records out of the live table.
	 * Every gone process in one call (up to 64 batches): the final report's reap is the
	 * last, and one batch left the rest listed running (256 of 1,000 under churn on 6.1) */
	for (int round = 0; round < 64; round++) {
		n = gone(t, pids, sizeof(pids) / sizeof(pids[0]));
		for (size_t i = 0; i < n; i++)
			on_gone(ctx, pids[i]);
		if (n < sizeof(pids) / sizeof(pids[0]))
			break;
	}
}

void *proctab__get_named(struct proctab *t, uint32_t pid, const char *comm)
{
	bool fresh = !u64map__get(t->live, pid);
	struct gp_proc_head *h = proctab__get(t, pid);

	if (h && comm && comm[0]) {
		snprintf(h->comm, sizeof(h->comm), "%.*s", GP_COMM_LEN - 1, comm);
		h->unnamed = false;
	} else if (h && fresh && !h->comm[0]) {
		/* made from a record that carries no name (a process attached with -p may send
		 * none before the report): its name from /proc while it lives; gone, none yet */
		h->unnamed = gp_proc_comm(pid, h->comm, sizeof(h->comm)) != 0;
	}
	return h;
}

void *proctab__end(struct proctab *t, uint32_t pid, uint64_t ts_ns, bool exec)
{
	struct gp_proc_head *h = proctab__exit(t, pid, ts_ns);

	if (h) {
		h->exited = true;
		h->exec = exec;
		h->exit_ns = ts_ns;
	}
	return h;
}

struct sweep_end {
	struct proctab *t;
	uint64_t now_ns;
};

static void gone_end(void *ctx, uint32_t pid)
{
	struct sweep_end *s = ctx;

	proctab__end(s->t, pid, s->now_ns, false);
}

void proctab__sweep_end(struct proctab *t, uint64_t now_ns)
{
	struct sweep_end s = { t, now_ns };

	proctab__sweep(t, gone_end, &s);
}
