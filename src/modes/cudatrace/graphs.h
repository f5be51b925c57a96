/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA graphs of one process image, rebuilt from --cudatrace's GP_EV_GRAPH records:
 * what each stream capture recorded, each CUgraph's kernel nodes (captured, or added with
 * cuGraphAddKernelNode), and each CUgraphExec's nodes as instantiated and then updated. A
 * graph launch is counted in BPF under the CUgraphExec's version (gp_launch_key.gen); this
 * store says which kernel nodes that version runs, so one cuGraphLaunch counts one
 * execution of each. When a version stops being launched (an update, a destroy) its count
 * is final: the store hands it back (ct_gstore_retire) for the caller to fold into totals.
 * Pure C, bounded (GS_MAX_* below); what does not fit is counted, never guessed.
 */
#ifndef GP_CT_GRAPHS_H
#define GP_CT_GRAPHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"
#include "cuda_launch.h"

#define GS_MAX_NODES 65536  /* kernel nodes of one graph */
#define GS_MAX_OBJECTS 4096 /* graphs, executables and captures of one process image */

/* One kernel node: which kernel (handle and its naming generation) with which shape. */
struct ct_gnode {
	uint64_t node;   /* CUgraphNode; 0 for captured nodes (their handles are never seen) */
	uint64_t handle; /* CUfunction or CUkernel */
	uint32_t gen;
	uint32_t grid[3], block[3];
};

enum ct_gsource {
	CT_GRAPH_UNKNOWN = 0, /* instantiated before gpuprobe attached: not expanded */
	CT_GRAPH_CAPTURE = 1, /* stream capture */
	CT_GRAPH_API = 2,     /* cuGraphAddKernelNode */
};

/* What a CUgraphExec version runs. */
struct ct_gexec {
	uint64_t exec;
	uint32_t version;
	enum ct_gsource source;
	bool partial; /* a child graph, or a node update gpuprobe could not place: kernels missing */
	struct ct_gnode *nodes;
	size_t nr_nodes;
};

struct ct_gstore;

/* Called when a version's launches are final (exec updated or destroyed), with the
 * version still valid during the call. */
typedef void (*ct_gstore_retire)(void *ctx, const struct ct_gexec *x);
/* Called for each launch captured (not run). */
typedef void (*ct_gstore_captured)(void *ctx, const struct ct_gnode *n);

struct ct_gstore *ct_gstore__new(ct_gstore_retire retire, ct_gstore_captured captured, void *ctx);
/* Live versions are not retired: their counts are still in BPF, read by snapshots. */
void ct_gstore__free(struct ct_gstore *g);

/* One GP_EV_GRAPH record, in order. */
void ct_gstore__on_event(struct ct_gstore *g, const struct gp_graph_event *e);
/* What version `version` of exec runs, or NULL (not known: made before the attach). */
const struct ct_gexec *ct_gstore__exec(const struct ct_gstore *g, uint64_t exec, uint32_t version);
/* Records that did not fit (GS_MAX_*) or referred to objects never seen. */
uint64_t ct_gstore__overflows(const struct ct_gstore *g);

#endif
