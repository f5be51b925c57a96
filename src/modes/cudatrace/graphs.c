/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>
#include <string.h>
#include "modes/cudatrace/graphs.h"
#include "lib/u64map.h"

struct nodes {
	struct ct_gnode *v;
	size_t n, cap;
	enum ct_gsource source;
	bool partial;
};

struct ct_gstore {
	struct u64map *captures; /* capture id -> struct nodes (and the graph it adds to) */
	struct u64map *into;     /* capture id -> CUgraph + 1 (BeginCaptureToGraph) */
	struct u64map *graphs;   /* CUgraph -> struct nodes */
	struct u64map *execs;    /* CUgraphExec -> struct ct_gexec (its current version) */
	ct_gstore_retire retire;
	ct_gstore_captured captured;
	void *ctx;
	uint64_t overflows;
};

static void nodes_free(void *v)
{
	struct nodes *n = v;

	if (n)
		free(n->v);
	free(n);
}

static void exec_free(void *v)
{
	struct ct_gexec *x = v;

	if (x)
		free(x->nodes);
	free(x);
}

struct ct_gstore *ct_gstore__new(ct_gstore_retire retire, ct_gstore_captured captured, void *ctx)
{
	struct ct_gstore *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->captures = u64map__new();
	g->into = u64map__new();
	g->graphs = u64map__new();
	g->execs = u64map__new();
	g->retire = retire;
	g->captured = captured;
	g->ctx = ctx;
	if (!g->captures || !g->into || !g->graphs || !g->execs) {
		ct_gstore__free(g);
		return NULL;
	}
	return g;
}

void ct_gstore__free(struct ct_gstore *g)
{
	if (!g)
		return;
	u64map__free_all(g->captures, nodes_free);
	u64map__free(g->into);
	u64map__free_all(g->graphs, nodes_free);
	u64map__free_all(g->execs, exec_free);
	free(g);
}

static size_t objects(const struct ct_gstore *g)
{
	return u64map__size(g->captures) + u64map__size(g->graphs) + u64map__size(g->execs);
}

/* The node list of key in m, made when absent (bounded). */
static struct nodes *list_of(struct ct_gstore *g, struct u64map *m, uint64_t key, enum ct_gsource src)
{
	struct nodes *n = u64map__get(m, key);

	if (n)
		return n;
	if (objects(g) >= GS_MAX_OBJECTS || !(n = calloc(1, sizeof(*n)))) {
		g->overflows++;
		return NULL;
	}
	n->source = src;
	if (u64map__put(m, key, n)) {
		free(n);
		g->overflows++;
		return NULL;
	}
	return n;
}

static int append(struct ct_gstore *g, struct nodes *l, const struct ct_gnode *x)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct ct_gnode *v;

		if (l->n >= GS_MAX_NODES || !(v = realloc(l->v, cap * sizeof(*v)))) {
			g->overflows++;
			l->partial = true;
			return -1;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *x;
	return 0;
}

static struct ct_gnode node_of(const struct gp_graph_event *e, uint64_t node)
{
	struct ct_gnode n = { .node = node, .handle = e->handle, .gen = e->gen };

	memcpy(n.grid, e->grid, sizeof(n.grid));
	memcpy(n.block, e->block, sizeof(n.block));
	return n;
}

static int copy_nodes(struct ct_gstore *g, struct nodes *dst, const struct nodes *src)
{
	for (size_t i = 0; i < src->n; i++)
		if (append(g, dst, &src->v[i]))
			return -1;
	dst->partial |= src->partial;
	return 0;
}

/* The capture ended with a graph: its nodes become the graph's (added to it when the
 * capture went into an existing graph). */
static void capture_end(struct ct_gstore *g, const struct gp_graph_event *e)
{
	struct nodes *cap = u64map__del(g->captures, e->a), *gr;
	uint64_t into = (uint64_t)(uintptr_t)u64map__del(g->into, e->a);
	uint64_t graph = into ? into - 1 : e->b;

	if (!cap) /* began before the attach, or nothing captured */
		cap = calloc(1, sizeof(*cap));
	if (!cap)
		return;
	gr = u64map__get(g->graphs, graph);
	if (!gr) {
		cap->source = CT_GRAPH_CAPTURE;
		if (u64map__put(g->graphs, graph, cap))
			nodes_free(cap);
		return;
	}
	copy_nodes(g, gr, cap);
	nodes_free(cap);
}

static void retire(struct ct_gstore *g, uint64_t exec)
{
	struct ct_gexec *x = u64map__del(g->execs, exec);

	if (!x)
		return;
	if (g->retire)
		g->retire(g->ctx, x);
	exec_free(x);
}

/* A new version of exec, running nodes (NULL: unknown, e.g. a graph made before the
 * attach); the previous version's launches are final. */
static struct ct_gexec *new_version(struct ct_gstore *g, uint64_t exec, uint32_t version,
				    const struct nodes *nodes)
{
	struct ct_gexec *x;

	retire(g, exec);
	if (!version)
		return NULL; /* BPF could not keep its version: launches count unexpanded */
	x = calloc(1, sizeof(*x));
	if (!x || (objects(g) >= GS_MAX_OBJECTS) || u64map__put(g->execs, exec, x)) {
		free(x);
		g->overflows++;
		return NULL;
	}
	x->exec = exec;
	x->version = version;
	if (!nodes)
		return x;
	x->source = nodes->source;
	x->partial = nodes->partial;
	x->nodes = malloc((nodes->n ? nodes->n : 1) * sizeof(*x->nodes));
	if (!x->nodes) {
		x->source = CT_GRAPH_UNKNOWN;
		g->overflows++;
		return x;
	}
	memcpy(x->nodes, nodes->v, nodes->n * sizeof(*x->nodes));
	x->nr_nodes = nodes->n;
	return x;
}

/* exec's next version: its current nodes with one node's kernel changed. */
static void exec_node_set(struct ct_gstore *g, const struct gp_graph_event *e)
{
	struct ct_gexec *cur = u64map__get(g->execs, e->a);
	bool known = cur && cur->source != CT_GRAPH_UNKNOWN, found = false;
	struct nodes next = { 0 };

	if (known) {
		next.source = cur->source;
		next.partial = cur->partial;
		for (size_t i = 0; i < cur->nr_nodes; i++)
			append(g, &next, &cur->nodes[i]);
	}
	for (size_t i = 0; i < next.n; i++)
		if (next.v[i].node == e->b) {
			next.v[i] = node_of(e, e->b);
			found = true;
		}
	/* a node never seen (a captured one): the version runs something gpuprobe cannot place */
	next.partial |= !found;
	new_version(g, e->a, e->version, known ? &next : NULL);
	free(next.v);
}

/* A graph node's kernel changed (cuGraphKernelNodeSetParams): in whichever graph has it. */
static void node_set(struct ct_gstore *g, const struct gp_graph_event *e, bool destroy)
{
	uint64_t k;
	void *v;

	for (size_t it = 0; u64map__next(g->graphs, &it, &k, &v);) {
		struct nodes *l = v;

		for (size_t i = 0; i < l->n; i++) {
			if (l->v[i].node != e->b)
				continue;
			if (destroy)
				l->v[i] = l->v[--l->n];
			else
				l->v[i] = node_of(e, e->b);
			return;
		}
	}
}

static void clone_graph(struct ct_gstore *g, const struct gp_graph_event *e)
{
	struct nodes *src = u64map__get(g->graphs, e->b), *dst;

	if (!src)
		return;
	dst = list_of(g, g->graphs, e->a, src->source);
	if (!dst)
		return;
	if (copy_nodes(g, dst, src) == 0)
		for (size_t i = 0; i < dst->n; i++)
			dst->v[i].node = 0; /* the clone's node handles are its own, never seen */
}

static void captured(struct ct_gstore *g, const struct gp_graph_event *e)
{
	struct ct_gnode n = node_of(e, 0);
	struct nodes *l = list_of(g, g->captures, e->a, CT_GRAPH_CAPTURE);

	if (g->captured)
		g->captured(g->ctx, &n);
	if (l)
		append(g, l, &n);
}

static void capture_failed(struct ct_gstore *g, const struct gp_graph_event *e)
{
	nodes_free(u64map__del(g->captures, e->a));
	u64map__del(g->into, e->a);
}

static void add_node(struct ct_gstore *g, const struct gp_graph_event *e)
{
	struct nodes *l = list_of(g, g->graphs, e->a, CT_GRAPH_API);
	struct ct_gnode n = node_of(e, e->b);

	if (l)
		append(g, l, &n);
}

static void graph_create(struct ct_gstore *g, const struct gp_graph_event *e)
{
	nodes_free(u64map__del(g->graphs, e->a)); /* a handle value reused */
	list_of(g, g->graphs, e->a, CT_GRAPH_API);
}

/* A child graph node: what it runs is not followed, so the graph is known in part. */
static void child_graph(struct ct_gstore *g, const struct gp_graph_event *e)
{
	struct nodes *l = list_of(g, g->graphs, e->a, CT_GRAPH_API);

	if (l)
		l->partial = true;
}

void ct_gstore__on_event(struct ct_gstore *g, const struct gp_graph_event *e)
{
	switch (e->op) {
	case GP_GOP_CAPTURED:
		captured(g, e);
		break;
	case GP_GOP_CAPTURE_TO:
		u64map__put(g->into, e->a, (void *)(uintptr_t)(e->b + 1));
		break;
	case GP_GOP_CAPTURE_END:
		capture_end(g, e);
		break;
	case GP_GOP_CAPTURE_FAILED:
		capture_failed(g, e);
		break;
	case GP_GOP_INSTANTIATE:
	case GP_GOP_EXEC_UPDATE:
		new_version(g, e->a, e->version, u64map__get(g->graphs, e->b));
		break;
	case GP_GOP_ADD_NODE:
		add_node(g, e);
		break;
	case GP_GOP_NODE_SET:
	case GP_GOP_NODE_DESTROY:
		node_set(g, e, e->op == GP_GOP_NODE_DESTROY);
		break;
	case GP_GOP_EXEC_NODE_SET:
		exec_node_set(g, e);
		break;
	case GP_GOP_EXEC_DESTROY:
		retire(g, e->a);
		break;
	case GP_GOP_GRAPH_DESTROY:
		nodes_free(u64map__del(g->graphs, e->a));
		break;
	case GP_GOP_CLONE:
		clone_graph(g, e);
		break;
	case GP_GOP_GRAPH_CREATE:
		graph_create(g, e);
		break;
	case GP_GOP_CHILD_GRAPH:
		child_graph(g, e);
		break;
	default:
		g->overflows++;
		break;
	}
}

const struct ct_gexec *ct_gstore__exec(const struct ct_gstore *g, uint64_t exec, uint32_t version)
{
	const struct ct_gexec *x = g ? u64map__get(g->execs, exec) : NULL;

	return x && x->version == version ? x : NULL;
}

uint64_t ct_gstore__overflows(const struct ct_gstore *g)
{
	return g ? g->overflows : 0;
}
