/* SPDX-License-Identifier: BSD-3-Clause */
/* The graph store of --cudatrace (src/modes/cudatrace/graphs.c): what each CUgraphExec
 * version runs, from capture, the graph API, updates, clones and destruction; versions
 * retired with their nodes. */
#include <stdint.h>
#include <string.h>
#include "modes/cudatrace/graphs.h"
#include "unit.h"

static struct gp_graph_event ev(uint32_t op, uint64_t a, uint64_t b, uint64_t handle, uint32_t version)
{
	struct gp_graph_event e = { .type = GP_EV_GRAPH, .pid = 1, .op = op, .a = a, .b = b,
				    .handle = handle, .version = version, .grid = { 1, 1, 1 }, .block = { 32, 1, 1 } };
	return e;
}

static void on(struct ct_gstore *g, uint32_t op, uint64_t a, uint64_t b, uint64_t handle, uint32_t version)
{
	struct gp_graph_event e = ev(op, a, b, handle, version);

	ct_gstore__on_event(g, &e);
}

static int retired, captured;
static uint64_t retired_exec;
static size_t retired_nodes;

static void on_retire(void *ctx, const struct ct_gexec *x)
{
	(void)ctx;
	retired++;
	retired_exec = x->exec;
	retired_nodes = x->nr_nodes;
}

static void on_captured(void *ctx, const struct ct_gnode *n)
{
	(void)ctx;
	(void)n;
	captured++;
}

static size_t count_handle(const struct ct_gexec *x, uint64_t handle)
{
	size_t n = 0;

	for (size_t i = 0; x && i < x->nr_nodes; i++)
		n += x->nodes[i].handle == handle;
	return n;
}

static void test_capture_and_instantiate(void)
{
	struct ct_gstore *g = ct_gstore__new(on_retire, on_captured, NULL);
	const struct ct_gexec *x;

	if (!ASSERT_TRUE(g != NULL, "store"))
		return;
	retired = captured = 0;
	on(g, GP_GOP_CAPTURED, 1, 0, 0xa, 0);
	on(g, GP_GOP_CAPTURED, 1, 0, 0xa, 0);
	on(g, GP_GOP_CAPTURED, 1, 0, 0xb, 0);
	on(g, GP_GOP_CAPTURED, 2, 0, 0xc, 0); /* another capture, invalidated */
	on(g, GP_GOP_CAPTURE_FAILED, 2, 0, 0, 0);
	on(g, GP_GOP_CAPTURE_END, 1, 0x100, 0, 0);
	on(g, GP_GOP_INSTANTIATE, 0x900, 0x100, 0, 5);
	on(g, GP_GOP_GRAPH_DESTROY, 0x100, 0, 0, 0); /* the exec keeps its nodes */
	x = ct_gstore__exec(g, 0x900, 5);
	if (!ASSERT_TRUE(x != NULL && x->source == CT_GRAPH_CAPTURE, "a captured exec"))
		goto cleanup;
	if (!ASSERT_EQ(x->nr_nodes, 3, "three kernel nodes") || !ASSERT_EQ(count_handle(x, 0xa), 2, "a twice"))
		goto cleanup;
	if (!ASSERT_EQ(captured, 4, "every captured launch told") || !ASSERT_EQ(count_handle(x, 0xc), 0, "c not in it"))
		goto cleanup;
	if (!ASSERT_TRUE(ct_gstore__exec(g, 0x900, 4) == NULL, "another version: unknown"))
		goto cleanup;
	on(g, GP_GOP_EXEC_DESTROY, 0x900, 0, 0, 0);
	ASSERT_TRUE(retired == 1 && retired_exec == 0x900 && retired_nodes == 3, "destroy retires the version");
cleanup:
	ct_gstore__free(g);
}

static void test_graph_api_updates(void)
{
	struct ct_gstore *g = ct_gstore__new(on_retire, NULL, NULL);
	const struct ct_gexec *x;

	if (!ASSERT_TRUE(g != NULL, "store"))
		return;
	retired = 0;
	on(g, GP_GOP_ADD_NODE, 0x200, 0x1, 0xa, 0);
	on(g, GP_GOP_ADD_NODE, 0x200, 0x2, 0xb, 0);
	on(g, GP_GOP_ADD_NODE, 0x200, 0x3, 0xc, 0);
	on(g, GP_GOP_INSTANTIATE, 0x901, 0x200, 0, 7);
	on(g, GP_GOP_EXEC_NODE_SET, 0x901, 0x2, 0xd, 8); /* node 2 runs d in the exec */
	x = ct_gstore__exec(g, 0x901, 8);
	if (!ASSERT_TRUE(x && count_handle(x, 0xd) == 1 && count_handle(x, 0xb) == 0, "exec node set"))
		goto cleanup;
	if (!ASSERT_TRUE(retired == 1 && retired_nodes == 3, "version 7 retired"))
		goto cleanup;
	on(g, GP_GOP_NODE_SET, 0, 0x3, 0xe, 0);    /* the graph's node 3 runs e... */
	on(g, GP_GOP_EXEC_UPDATE, 0x901, 0x200, 0, 9); /* ...and the exec takes the graph again */
	x = ct_gstore__exec(g, 0x901, 9);
	if (!ASSERT_TRUE(x && count_handle(x, 0xb) == 1 && count_handle(x, 0xe) == 1 && count_handle(x, 0xd) == 0,
			 "exec update from the graph"))
		goto cleanup;
	on(g, GP_GOP_NODE_DESTROY, 0, 0x1, 0, 0);
	on(g, GP_GOP_CLONE, 0x300, 0x200, 0, 0);
	on(g, GP_GOP_INSTANTIATE, 0x902, 0x300, 0, 10);
	x = ct_gstore__exec(g, 0x902, 10);
	if (!ASSERT_TRUE(x && x->nr_nodes == 2 && count_handle(x, 0xa) == 0, "a clone without the destroyed node"))
		goto cleanup;
	/* a node of the clone updated in its exec: never seen, so the version is partial */
	on(g, GP_GOP_EXEC_NODE_SET, 0x902, 0x77, 0xf, 11);
	x = ct_gstore__exec(g, 0x902, 11);
	if (!ASSERT_TRUE(x && x->partial, "an update gpuprobe cannot place: partial"))
		goto cleanup;
	on(g, GP_GOP_CHILD_GRAPH, 0x200, 0, 0, 0);
	on(g, GP_GOP_INSTANTIATE, 0x903, 0x200, 0, 12);
	ASSERT_TRUE(ct_gstore__exec(g, 0x903, 12) && ct_gstore__exec(g, 0x903, 12)->partial, "a child graph: partial");
cleanup:
	ct_gstore__free(g);
}

static void test_unknown_and_bounds(void)
{
	struct ct_gstore *g = ct_gstore__new(NULL, NULL, NULL);
	const struct ct_gexec *x;

	if (!ASSERT_TRUE(g != NULL, "store"))
		return;
	/* a graph made before the attach: instantiated now, its nodes unknown */
	on(g, GP_GOP_INSTANTIATE, 0x904, 0x999, 0, 3);
	x = ct_gstore__exec(g, 0x904, 3);
	if (!ASSERT_TRUE(x && x->source == CT_GRAPH_UNKNOWN && x->nr_nodes == 0, "unknown graph"))
		goto cleanup;
	/* BPF could not keep a version (0): nothing to expand with */
	on(g, GP_GOP_INSTANTIATE, 0x905, 0x999, 0, 0);
	if (!ASSERT_TRUE(ct_gstore__exec(g, 0x905, 0) == NULL, "version 0 unknown"))
		goto cleanup;
	for (uint64_t i = 0; i < GS_MAX_OBJECTS + 10; i++)
		on(g, GP_GOP_ADD_NODE, 0x10000 + i, i, 0xa, 0);
	ASSERT_TRUE(ct_gstore__overflows(g) >= 10, "objects past the bound are counted");
cleanup:
	ct_gstore__free(g);
}

int main(void)
{
	RUN_TEST(test_capture_and_instantiate);
	RUN_TEST(test_graph_api_updates);
	RUN_TEST(test_unknown_and_bounds);
	return unit_done();
}
