/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "modes/cudatrace/cudatrace.h"
#include "modes/cudatrace/graphs.h"
#include "lib/proctab.h"
#include "lib/symbolize.h"
#include "lib/u64map.h"
#include "lib/util.h"

struct cudatrace {
	struct proctab *procs; /* struct ct_proc; first (proctab__new_owner) */
	uint64_t start_ns;      /* rates of a process's first report count from here */
	uint64_t last_ns;       /* the latest record's or snapshot's time */
	ct_take_fn take;        /* a retired graph version's final count, from BPF */
	void *take_ctx;
	ct_resolve_fn resolve;  /* a name from memory for a handle made before the attach */
	void *resolve_ctx;
	bool unread;            /* records unread at this snapshot (cudatrace__set_unread) */
};
_Static_assert(offsetof(struct cudatrace, procs) == 0, "proctab__new_owner: the table first");

struct ct_acc {
	struct ct_gnode k; /* kernel and shape (node unused) */
	uint64_t captured, executed;
};

static void clear_snapshot(struct ct_proc *p)
{
	for (size_t i = 0; i < p->nr_kernels; i++) {
		free(p->kernels[i].name);
		free(p->kernels[i].shapes);
	}
	p->nr_kernels = 0;
	p->nr_graphs = 0;
	p->launches = p->unnamed_launches = p->graph_launches = p->unnamed_no_layout = p->unnamed_unread = 0;
	p->graph_executed = p->unexpanded_graph_launches = 0;
	memset(p->hist, 0, sizeof(p->hist));
}

static void fini_proc(void *ctx, void *v)
{
	struct ct_proc *p = v;

	(void)ctx;
	clear_snapshot(p);
	free(p->kernels);
	free(p->graphs);
	u64map__free_all(p->names, NULL);
	u64map__free_all(p->host_names, NULL);
	u64map__free_all(p->mem_names, NULL);
	u64map__free(p->stubs); /* values are markers */
	ct_gstore__free(p->gs);
	free(p->acc);
	u64map__free(p->acc_idx);
	u64map__free_all(p->retired, NULL);
}

static int init_proc(void *v, uint32_t pid)
{
	struct ct_proc *p = v;

	p->pid = pid;
	p->names = u64map__new();
	p->host_names = u64map__new();
	p->mem_names = u64map__new();
	p->stubs = u64map__new();
	p->acc_idx = u64map__new();
	p->retired = u64map__new();
	return p->names && p->host_names && p->mem_names && p->stubs && p->acc_idx && p->retired ? 0 : -ENOMEM;
}

static const struct proctab_ops proc_ops = { sizeof(struct ct_proc), init_proc, fini_proc };

struct cudatrace *cudatrace__new(void)
{
	return proctab__new_owner(sizeof(struct cudatrace), &proc_ops);
}

void cudatrace__free(struct cudatrace *ct)
{
	proctab__free_owner(ct);
}

static bool same_img(const void *p, void *ctx)
{
	return ((const struct ct_proc *)p)->img == *(const uint32_t *)ctx;
}

static void end_image(struct ct_proc *p, uint64_t ts_ns, bool exec)
{
	p->exited = true;
	p->exec = exec;
	p->exit_ns = ts_ns;
}

/*
 * The record of pid's image img: a live or exited one already there, else the live one
 * (made now when there is none). Records of one image come from several ring buffers and
 * tables, so a newer image may be seen before its exec record: the live record ends then.
 * An older image's record that has been reported and reaped gets nothing.
 */
static struct ct_proc *proc_of(struct cudatrace *ct, uint32_t pid, uint32_t img)
{
	struct ct_proc *p = proctab__find_if(ct->procs, pid, same_img, &img);
	bool fresh;

	if (p)
		return p;
	p = proctab__live(ct->procs, pid);
	if (p && (int32_t)(img - p->img) < 0)
		return NULL;
	if (p) {
		proctab__exit(ct->procs, pid, ct->last_ns);
		end_image(p, ct->last_ns, true);
	}
	fresh = !proctab__live(ct->procs, pid);
	p = proctab__get(ct->procs, pid);
	if (p && fresh) {
		p->img = img;
		p->ct = ct;
		/* launches are counted in BPF with no name: a process attached at steady state
		 * may send no record that carries one before the report; one gone already (its
		 * records behind in the ring buffer) is named by them later */
		p->unnamed = gp_proc_comm(pid, p->comm, sizeof(p->comm)) != 0;
	}
	return p;
}

static void put_name(struct u64map *m, uint64_t handle, const char *name)
{
	char *s = strdup(name);

	if (!s)
		return;
	free(u64map__del(m, handle)); /* a handle value reused for a new kernel renames */
	if (u64map__put(m, handle, s))
		free(s);
}

void cudatrace__on_name(struct cudatrace *ct, const struct gp_name_event *e)
{
	struct ct_proc *p = proc_of(ct, e->pid, e->img);
	char raw[GP_NAME_LEN + 1], buf[4096];

	if (!p)
		return;
	snprintf(p->comm, sizeof(p->comm), "%.*s", GP_COMM_LEN - 1, e->comm);
	p->unnamed = p->unnamed && !p->comm[0];
	snprintf(raw, sizeof(raw), "%.*s", GP_NAME_LEN, e->name);
	buf[0] = '\0';
	if (raw[0])
		symbolize__demangle(raw, buf, sizeof(buf));
	put_name(p->names, e->gen, buf); /* "" : read, no name (the naming's record came) */
}

void cudatrace__on_host_name(struct cudatrace *ct, uint32_t pid, uint32_t img, uint64_t handle,
			     const char *name)
{
	struct ct_proc *p = proc_of(ct, pid, img);

	if (p && name && *name)
		put_name(p->host_names, handle, name);
}

void cudatrace__on_stub(struct cudatrace *ct, uint32_t pid, uint32_t img, uint64_t handle)
{
	struct ct_proc *p = proc_of(ct, pid, img);

	if (p && !u64map__get(p->stubs, handle))
		u64map__put(p->stubs, handle, p); /* a marker: any non-NULL value */
}

void cudatrace__on_exit(struct cudatrace *ct, const struct gp_exit_event *e)
{
	struct ct_proc *p;

	/* a process no snapshot has seen yet still has counts in BPF: its record is made
	 * here, exited, so that the next snapshot reports them and its reap clears them */
	ct->last_ns = e->ts_ns;
	p = proc_of(ct, e->pid, e->img);
	if (!p || p->exited)
		return;
	proctab__exit(ct->procs, e->pid, e->ts_ns);
	snprintf(p->comm, sizeof(p->comm), "%.*s", GP_COMM_LEN - 1, e->comm);
	p->unnamed = p->unnamed && !p->comm[0];
	end_image(p, e->ts_ns, false);
}

bool cudatrace__on_exec(struct cudatrace *ct, const struct gp_proc_event *e)
{
	struct ct_proc *p = proctab__live(ct->procs, e->pid);

	ct->last_ns = e->ts_ns;
	if (!p || p->img == e->img)
		return false;
	proctab__exit(ct->procs, e->pid, e->ts_ns);
	end_image(p, e->ts_ns, true);
	return true;
}

void cudatrace__set_start(struct cudatrace *ct, uint64_t start_ns)
{
	ct->start_ns = start_ns;
}

void cudatrace__snapshot_begin(struct cudatrace *ct)
{
	struct ct_proc **v;
	size_t n = cudatrace__procs(ct, &v);

	for (size_t i = 0; i < n; i++)
		clear_snapshot(v[i]);
}

/* mem_names' value for a handle whose process went before its name was read (the
 * reason is kept: later snapshots count it the same) */
#define CT_UNREAD "\1"

const char *cudatrace__name_of(struct ct_proc *p, uint64_t handle, uint32_t gen,
			       enum ct_name_source *source)
{
	const char *n;

	*source = CT_NAME_DRIVER;
	if (gen) { /* NULL if its name record was lost, or is unread */
		n = u64map__get(p->names, gen);
		return n && *n ? n : NULL;
	}
	*source = CT_NAME_HOST;
	n = u64map__get(p->host_names, handle);
	if (n)
		return n;
	*source = CT_NAME_MEMORY;
	n = u64map__get(p->mem_names, handle);
	if (n && *n && strcmp(n, CT_UNREAD))
		return n;
	*source = CT_NAME_NONE;
	return NULL;
}

void cudatrace__set_resolve(struct cudatrace *ct, ct_resolve_fn resolve, void *ctx)
{
	ct->resolve = resolve;
	ct->resolve_ctx = ctx;
}

/* A handle no record named: ask the resolver once it can tell (its answer, or "" for a
 * definite no, is kept). */
/* -ENODATA when no layout is learned for the handle's build and kind (asked again at the
 * next snapshot: one may be learned by then). */
static int try_resolve(struct ct_proc *p, uint64_t handle)
{
	char raw[GP_NAME_LEN + 1], buf[4096];
	const char *had;
	int r;

	if (!p->ct || !p->ct->resolve || !handle)
		return 0;
	had = u64map__get(p->mem_names, handle);
	if (had)
		return strcmp(had, CT_UNREAD) ? 0 : -ESRCH;
	r = p->ct->resolve(p->ct->resolve_ctx, p->pid, p->img, handle, raw, sizeof(raw));
	if (r == -EAGAIN || r == -ENODATA)
		return r;
	if (r)
		snprintf(buf, sizeof(buf), "%s", r == -ESRCH ? CT_UNREAD : "");
	else
		symbolize__demangle(raw, buf, sizeof(buf));
	put_name(p->mem_names, handle, buf);
	return r == -ESRCH ? r : 0;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	void *n;
	size_t c;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap * 2 : 8;
	while (c < need)
		c *= 2;
	n = realloc(*arr, c * elem);
	if (!n)
		return -1;
	*arr = n;
	*cap = c;
	return 0;
}

/* What may still name an unnamed launch of handle under gen (why: try_resolve's answer):
 * its naming's record while unread (gen: BPF sends it before the naming is used), its
 * first launch's stub while unread (sent before that launch is counted), or a launch's
 * return (a name read from memory waits for one). */
static enum ct_await awaits(const struct ct_proc *p, uint64_t handle, uint32_t gen, int why)
{
	if (gen)
		return u64map__get(p->names, gen) ? CT_AWAIT_NONE : CT_AWAIT_RECORD;
	if (!handle) /* a NULL handle's launches fail, and BPF sends no stub of one */
		return CT_AWAIT_NONE;
	if (why == -EAGAIN)
		return CT_AWAIT_VERIFY;
	return u64map__get(p->stubs, handle) ? CT_AWAIT_NONE : CT_AWAIT_RECORD;
}

/* The row of a kernel (by name) and shape, made when absent; NULL when out of memory. */
static struct ct_shape *kernel_row(struct ct_proc *p, uint64_t handle, uint32_t gen, const uint32_t grid[3],
				   const uint32_t block[3], struct ct_kernel **kout)
{
	enum ct_name_source src;
	const char *name = cudatrace__name_of(p, handle, gen, &src);
	struct ct_kernel *kern = NULL;
	struct ct_shape *sh = NULL;
	char unknown[40];
	int why = 0;

	if (!name && !gen) {
		why = try_resolve(p, handle);
		name = cudatrace__name_of(p, handle, gen, &src);
	}
	if (!name) {
		src = CT_NAME_NONE;
		snprintf(unknown, sizeof(unknown), "unknown@0x%" PRIx64, handle);
		name = unknown;
	}
	/* rows are few (distinct kernels); a linear pass per key is fine at report time */
	for (size_t i = 0; i < p->nr_kernels && !kern; i++)
		if (!strcmp(p->kernels[i].name, name))
			kern = &p->kernels[i];
	if (!kern) {
		if (grow((void **)&p->kernels, &p->cap_kernels, p->nr_kernels + 1, sizeof(*p->kernels)))
			return NULL;
		kern = &p->kernels[p->nr_kernels];
		memset(kern, 0, sizeof(*kern));
		kern->name = strdup(name);
		if (!kern->name)
			return NULL;
		kern->source = src;
		kern->no_layout = src == CT_NAME_NONE && why == -ENODATA;
		kern->unread = src == CT_NAME_NONE && why == -ESRCH;
		kern->handle = handle;
		p->nr_kernels++;
	}
	if (src == CT_NAME_NONE && !kern->await)
		kern->await = awaits(p, handle, gen, why);
	*kout = kern;
	for (size_t i = 0; i < kern->nr_shapes && !sh; i++)
		if (!memcmp(kern->shapes[i].grid, grid, sizeof(kern->shapes[i].grid)) &&
		    !memcmp(kern->shapes[i].block, block, sizeof(kern->shapes[i].block)))
			sh = &kern->shapes[i];
	if (sh)
		return sh;
	if (grow((void **)&kern->shapes, &kern->cap_shapes, kern->nr_shapes + 1, sizeof(*sh)))
		return NULL;
	sh = &kern->shapes[kern->nr_shapes++];
	memset(sh, 0, sizeof(*sh));
	memcpy(sh->grid, grid, sizeof(sh->grid));
	memcpy(sh->block, block, sizeof(sh->block));
	return sh;
}

/* Counts of one kernel and shape: launched directly, captured, run inside graphs. */
static void kernel_add(struct ct_proc *p, const struct ct_gnode *n, uint64_t launched, uint64_t captured,
		       uint64_t executed)
{
	struct ct_kernel *kern;
	struct ct_shape *sh = kernel_row(p, n->handle, n->gen, n->grid, n->block, &kern);

	if (!sh)
		return;
	kern->launches += launched;
	kern->captured += captured;
	kern->graph_executed += executed;
	sh->launches += launched;
	sh->captured += captured;
	sh->graph_executed += executed;
	p->graph_executed += executed;
	if (kern->source == CT_NAME_NONE)
		p->unnamed_launches += launched;
	if (kern->source == CT_NAME_NONE && kern->no_layout)
		p->unnamed_no_layout += launched;
	if (kern->source == CT_NAME_NONE && kern->unread)
		p->unnamed_unread += launched;
}

static struct ct_graph *graph_row(struct ct_proc *p, uint64_t exec)
{
	for (size_t i = 0; i < p->nr_graphs; i++)
		if (p->graphs[i].handle == exec)
			return &p->graphs[i];
	if (grow((void **)&p->graphs, &p->cap_graphs, p->nr_graphs + 1, sizeof(*p->graphs)))
		return NULL;
	memset(&p->graphs[p->nr_graphs], 0, sizeof(p->graphs[0]));
	p->graphs[p->nr_graphs].handle = exec;
	return &p->graphs[p->nr_graphs++];
}

/* count launches of a CUgraphExec version: each of its kernel nodes ran count times */
static void add_graph_launches(struct ct_proc *p, uint64_t exec, uint32_t version, uint64_t count)
{
	const struct ct_gexec *x = ct_gstore__exec(p->gs, exec, version);
	struct ct_graph *g = graph_row(p, exec);

	p->graph_launches += count;
	if (g)
		g->launches += count;
	if (!x || x->source == CT_GRAPH_UNKNOWN) {
		p->unexpanded_graph_launches += count;
		return;
	}
	if (g) {
		g->nodes = x->nr_nodes;
		g->source = x->source;
		g->partial = x->partial;
	}
	for (size_t i = 0; i < x->nr_nodes; i++)
		kernel_add(p, &x->nodes[i], 0, 0, count);
}

void cudatrace__add_launch(struct cudatrace *ct, const struct gp_launch_key *k, uint64_t count)
{
	struct ct_proc *p = proc_of(ct, k->pid, k->img);
	struct ct_gnode n = { .handle = k->handle, .gen = k->gen };

	if (!p || !count)
		return;
	if (k->kind == GP_LAUNCH_GRAPH) {
		add_graph_launches(p, k->handle, k->gen, count);
		return;
	}
	p->launches += count;
	memcpy(n.grid, k->grid, sizeof(n.grid));
	memcpy(n.block, k->block, sizeof(n.block));
	kernel_add(p, &n, count, 0, 0);
}

/* What outlives the BPF tables: captures and the graph versions no longer launched. */
static void add_kept(struct ct_proc *p)
{
	uint64_t exec;
	void *v;

	for (size_t i = 0; i < p->nr_acc; i++)
		kernel_add(p, &p->acc[i].k, 0, p->acc[i].captured, p->acc[i].executed);
	for (size_t it = 0; u64map__next(p->retired, &it, &exec, &v);) {
		const struct ct_graph *r = v;
		struct ct_graph *g = graph_row(p, exec);

		p->graph_launches += r->launches;
		if (!g)
			continue;
		g->launches += r->launches;
		if (!g->source) { /* not launched in its current version: its last one says */
			g->nodes = r->nodes;
			g->source = r->source;
		}
		g->partial |= r->partial;
	}
	p->unexpanded_graph_launches += p->unexpanded_retired;
	p->graph_overflows = ct_gstore__overflows(p->gs);
}

void cudatrace__set_hist(struct cudatrace *ct, const struct gp_hist_key *k, const struct gp_hist *h)
{
	struct ct_proc *p = proc_of(ct, k->pid, k->img);

	if (p && k->kind < GP_HIST__COUNT)
		p->hist[k->kind] = *h;
}

static int cmp_shape(const void *a, const void *b)
{
	const struct ct_shape *x = a, *y = b;
	uint64_t rx = x->launches + x->graph_executed, ry = y->launches + y->graph_executed;

	if (rx != ry)
		return rx > ry ? -1 : 1;
	return memcmp(x->grid, y->grid, sizeof(x->grid) + sizeof(x->block));
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct ct_kernel *x = a, *y = b;
	uint64_t rx = x->launches + x->graph_executed, ry = y->launches + y->graph_executed;

	if (rx != ry)
		return rx > ry ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void finish(struct ct_proc *p, uint64_t start_ns, uint64_t now_ns, bool rates)
{
	for (size_t i = 0; i < p->nr_kernels; i++)
		if (p->kernels[i].nr_shapes)
			qsort(p->kernels[i].shapes, p->kernels[i].nr_shapes, sizeof(struct ct_shape), cmp_shape);
	if (p->nr_kernels) /* qsort(NULL, 0) is undefined */
		qsort(p->kernels, p->nr_kernels, sizeof(*p->kernels), cmp_kernel);
	if (!rates) /* a look at the counts alone: the next report's rate keeps its window */
		return;
	if (!p->prev_ns)
		p->prev_ns = start_ns;
	if (p->prev_ns && now_ns > p->prev_ns && p->launches >= p->prev_launches)
		p->launches_per_s = (double)(p->launches - p->prev_launches) * 1e9 /
				    (double)(now_ns - p->prev_ns);
	else
		p->launches_per_s = 0;
	p->prev_launches = p->launches;
	p->prev_ns = now_ns;
}

void cudatrace__set_unread(struct cudatrace *ct, bool unread)
{
	ct->unread = unread;
}

/* Which of p's unnamed kernels the daemon holds back now: those awaiting a record while
 * records are unread, or a launch's return; none once p has held some back for CT_HOLD_S
 * running (a record lost, a handle never verified: served as unknown from then on). */
static void hold(struct ct_proc *p, bool unread, uint64_t now_ns)
{
	/* a launch returns within microseconds, within a window under a budget (~0.5 s apart):
	 * a handle still unverified after CT_VERIFY_S failed its launches (a forged or stale
	 * one), and its launches are unknown for good */
	bool verify = !p->held_ns || now_ns - p->held_ns < CT_VERIFY_S * 1000000000ULL, any = false;

	for (size_t i = 0; i < p->nr_kernels; i++) {
		struct ct_kernel *k = &p->kernels[i];

		/* one memory cannot name (no layout, or the process gone) may still be named by
		 * its stub's host frame, which comes first (cudatrace__name_of) */
		k->held = k->source == CT_NAME_NONE &&
			  ((k->await == CT_AWAIT_VERIFY && verify) || (k->await == CT_AWAIT_RECORD && unread));
		any |= k->held;
	}
	if (!any) {
		p->held_ns = 0;
		p->holding = false;
		return;
	}
	if (!p->held_ns)
		p->held_ns = now_ns ? now_ns : 1;
	p->holding = now_ns - p->held_ns < CT_HOLD_S * 1000000000ULL;
	for (size_t i = 0; i < p->nr_kernels && !p->holding; i++)
		p->kernels[i].held = false;
}

static void snapshot_end(struct cudatrace *ct, uint64_t now_ns, bool rates)
{
	struct ct_proc **v;
	size_t n = cudatrace__procs(ct, &v);

	ct->last_ns = now_ns;
	for (size_t i = 0; i < n; i++) {
		add_kept(v[i]);
		hold(v[i], ct->unread, now_ns);
		finish(v[i], ct->start_ns, now_ns, rates);
	}
	ct->unread = false;
}

void cudatrace__snapshot_end(struct cudatrace *ct, uint64_t now_ns)
{
	snapshot_end(ct, now_ns, true);
}

void cudatrace__snapshot_end_counts(struct cudatrace *ct, uint64_t now_ns)
{
	snapshot_end(ct, now_ns, false);
}

size_t cudatrace__procs(struct cudatrace *ct, struct ct_proc ***out)
{
	return proctab__list(ct->procs, (void ***)out);
}

struct forget_ctx {
	struct cudatrace *ct;
	void (*forget)(void *ctx, uint32_t pid, const uint32_t *img);
	void *ctx;
};

/* A record's BPF counters go with it: all of its PID's when no process has the PID now,
 * else only its image's (the PID lives on in a new image, or was reused). */
static void before_free(void *rctx, void *v)
{
	struct forget_ctx *f = rctx;
	struct ct_proc *p = v, *live = proctab__live(f->ct->procs, p->pid);

	if (!f->forget)
		return;
	if (!live)
		f->forget(f->ctx, p->pid, NULL);
	else if (live->img != p->img)
		f->forget(f->ctx, p->pid, &p->img);
}

struct sweep {
	struct cudatrace *ct;
	uint64_t now_ns;
};

static void gone(void *ctx, uint32_t pid)
{
	struct sweep *s = ctx;
	struct ct_proc *p = proctab__live(s->ct->procs, pid);
	struct gp_exit_event e = { .type = GP_EV_EXIT, .pid = pid, .ts_ns = s->now_ns };

	if (!p)
		return;
	memcpy(e.comm, p->comm, sizeof(e.comm));
	e.img = p->img;
	cudatrace__on_exit(s->ct, &e);
}

void cudatrace__sweep(struct cudatrace *ct, uint64_t now_ns)
{
	struct sweep s = { .ct = ct, .now_ns = now_ns };

	proctab__sweep(ct->procs, gone, &s);
}

/* A process whose unnamed kernels the last snapshot held back stays until a snapshot
 * serves them (named, or CT_HOLD_S passed): released now, its launches would be served by
 * no report (a whole short job's, when its name record was read after the report that
 * listed it exited). */
static bool holding(void *rctx, const void *v)
{
	(void)rctx;
	return ((const struct ct_proc *)v)->holding;
}

void cudatrace__reap(struct cudatrace *ct, uint64_t cutoff_ns, uint32_t keep_pid,
		     void (*forget)(void *ctx, uint32_t pid, const uint32_t *img), void *ctx)
{
	struct forget_ctx f = { .ct = ct, .forget = forget, .ctx = ctx };

	proctab__reap_held(ct->procs, keep_pid, cutoff_ns, holding, before_free, &f);
}

/* "func+0x1a (lib)" -> "func" */
static void frame_func(const char *f, char *buf, size_t len)
{
	const char *end = strstr(f, "+0x");

	if (!end)
		end = strstr(f, " (");
	if (!end)
		end = f + strlen(f);
	snprintf(buf, len, "%.*s", (int)(end - f), f);
}

void cudatrace__stub_name(const char *const *frames, size_t n, char *buf, size_t len)
{
	cudatrace__stub_name2(frames, n, buf, len, NULL, 0);
}

void cudatrace__stub_name2(const char *const *frames, size_t n, char *buf, size_t len, char *mangled_out,
			   size_t mlen)
{
	static const char stub[] = "__device_stub_";
	char fn[1024];

	buf[0] = '\0';
	if (mangled_out && mlen)
		mangled_out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *s;

		frame_func(frames[i], fn, sizeof(fn));
		s = strstr(fn, stub);
		if (s && s[sizeof(stub) - 1] == '_') {
			/* __device_stub__Z2k1Pfi -> _Z2k1Pfi; a demangler-unfriendly stub symbol may
			 * already carry a parameter list: cut it */
			char mangled[1024], *paren;

			snprintf(mangled, sizeof(mangled), "%s", s + sizeof(stub) - 1);
			paren = strchr(mangled, '(');
			if (paren)
				*paren = '\0';
			symbolize__demangle(mangled, buf, len);
			if (mangled_out && mlen)
				snprintf(mangled_out, mlen, "%s", mangled);
			return;
		}
	}
}

/* ---- CUDA graphs: captured and graph-executed counts per kernel ---- */

void cudatrace__set_take(struct cudatrace *ct, ct_take_fn take, void *ctx)
{
	ct->take = take;
	ct->take_ctx = ctx;
}

static uint64_t acc_hash(const struct ct_gnode *n)
{
	const uint32_t w[] = { (uint32_t)n->handle, (uint32_t)(n->handle >> 32), n->gen, n->grid[0], n->grid[1],
			       n->grid[2], n->block[0], n->block[1], n->block[2] };
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		h ^= w[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static bool acc_same(const struct ct_gnode *a, const struct ct_gnode *b)
{
	return a->handle == b->handle && a->gen == b->gen && !memcmp(a->grid, b->grid, sizeof(a->grid)) &&
	       !memcmp(a->block, b->block, sizeof(a->block));
}

/* The accumulator of a kernel and shape, made when absent (NULL when out of memory). */
static struct ct_acc *acc_get(struct ct_proc *p, const struct ct_gnode *n)
{
	uint64_t h = acc_hash(n);
	uintptr_t at;

	/* linear probing over the hash: a colliding key moves to the next slot */
	while ((at = (uintptr_t)u64map__get(p->acc_idx, h))) {
		if (acc_same(&p->acc[at - 1].k, n))
			return &p->acc[at - 1];
		h++;
	}
	if (p->nr_acc == p->cap_acc) {
		size_t cap = p->cap_acc ? p->cap_acc * 2 : 16;
		struct ct_acc *v = realloc(p->acc, cap * sizeof(*v));

		if (!v)
			return NULL;
		p->acc = v;
		p->cap_acc = cap;
	}
	if (u64map__put(p->acc_idx, h, (void *)(uintptr_t)(p->nr_acc + 1)))
		return NULL;
	p->acc[p->nr_acc] = (struct ct_acc){ .k = *n };
	p->acc[p->nr_acc].k.node = 0;
	return &p->acc[p->nr_acc++];
}

static void on_captured(void *ctx, const struct ct_gnode *n)
{
	struct ct_proc *p = ctx;
	struct ct_acc *a = acc_get(p, n);

	if (a)
		a->captured++;
	p->captured_total++;
}

/* A graph version will not be launched again: its launches leave BPF for the totals. */
static void on_retire(void *ctx, const struct ct_gexec *x)
{
	struct ct_proc *p = ctx;
	uint64_t c = p->ct->take ? p->ct->take(p->ct->take_ctx, p->pid, p->img, x->exec, x->version) : 0;
	struct ct_graph *r = u64map__get(p->retired, x->exec);

	if (!c)
		return;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r || u64map__put(p->retired, x->exec, r)) {
			free(r);
			return;
		}
		r->handle = x->exec;
	}
	r->launches += c;
	if (x->source == CT_GRAPH_UNKNOWN)
		p->unexpanded_retired += c;
	r->nodes = x->nr_nodes;
	r->source = x->source;
	r->partial |= x->partial;
	for (size_t i = 0; i < x->nr_nodes; i++) {
		struct ct_acc *a = acc_get(p, &x->nodes[i]);

		if (a)
			a->executed += c;
	}
}

void cudatrace__on_graph(struct cudatrace *ct, const struct gp_graph_event *e)
{
	struct ct_proc *p = proc_of(ct, e->pid, e->img);

	if (!p)
		return;
	if (!p->gs)
		p->gs = ct_gstore__new(on_retire, on_captured, p);
	if (p->gs)
		ct_gstore__on_event(p->gs, e);
}
