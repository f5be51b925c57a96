/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * graphmem_app: memory that CUDA graphs allocate and free (graph memory nodes, CUDA
 * 11.4; what the CUDA samples' graphMemoryNodes does), with counts known by construction:
 *
 * 1. Graph A: an allocation node (--size-a) and a free node after it; instantiated,
 *    launched L times. Nothing outstanding.
 * 2. Graph B: an allocation node (--size-b) and no free node: each of its L launches is
 *    followed by a cuMemFreeAsync of the node's address on the stream (the memory a launch
 *    made). Nothing outstanding; L frees of one node's address.
 * 3. Graph C: an allocation node (--size-c), no free node, launched once, never freed:
 *    the leak (outstanding graph memory).
 * 4. Stream capture: cuMemAllocAsync (--size-d) and cuMemFreeAsync captured into a graph,
 *    launched L times. Nothing outstanding.
 *
 * --wait: READY before step 1. The truth (JSON on stderr): allocs are the allocation
 * calls a tracer sees (3 nodes, 1 captured cuMemAllocAsync), leaks and leaked_bytes the
 * graph memory still held (graph C), frees the frees of tracked memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>

#include "common.h"

static const char usage[] = "[--size-a B] [--size-b B] [--size-c B] [--size-d B] [--launches L] [--wait]";

static CUgraphNode alloc_node(CUgraph g, const CUgraphNode *dep, size_t ndep, size_t size, CUdeviceptr *dptr)
{
	CUDA_MEM_ALLOC_NODE_PARAMS p;
	CUgraphNode n;

	memset(&p, 0, sizeof(p));
	p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
	p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.poolProps.location.id = 0;
	p.bytesize = size;
	CHECK(cuGraphAddMemAllocNode(&n, g, dep, ndep, &p));
	*dptr = p.dptr;
	return n;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size-a", required_argument, NULL, 'a' }, { "size-b", required_argument, NULL, 'b' },
		{ "size-c", required_argument, NULL, 'c' }, { "size-d", required_argument, NULL, 'd' },
		{ "launches", required_argument, NULL, 'l' }, { "wait", no_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long size_a = 1 << 20, size_b = 3 << 20, size_c = 5 << 20, size_d = 7 << 20, launches = 3;
	struct truth t = { .api = "graphmem" };
	CUgraph ga, gb, gc, gd;
	CUgraphExec xa, xb, xc, xd;
	CUgraphNode na, nb, nc, nfree;
	CUdeviceptr pa, pb, pc, pd, pd_free;
	CUstream s;
	int wait = 0, o;
	char extra[128];

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'a': size_a = app_parse_u64("--size-a", optarg); break;
		case 'b': size_b = app_parse_u64("--size-b", optarg); break;
		case 'c': size_c = app_parse_u64("--size-c", optarg); break;
		case 'd': size_d = app_parse_u64("--size-d", optarg); break;
		case 'l': launches = app_parse_u64("--launches", optarg); break;
		case 'w': wait = 1; break;
		default: app_usage_error(argv[0], usage, "unknown option");
		}
	}
	if (!size_a || !size_b || !size_c || !size_d || !launches)
		app_usage_error(argv[0], usage, "sizes and --launches must be positive");
	if (wait)
		app_block_signal();
	app_cuda_init();
	CHECK(cuStreamCreate(&s, 0));
	if (wait)
		app_wait_ready();

	/* 1. allocation and free nodes in one graph */
	CHECK(cuGraphCreate(&ga, 0));
	na = alloc_node(ga, NULL, 0, size_a, &pa);
	CHECK(cuGraphAddMemFreeNode(&nfree, ga, &na, 1, pa));
	CHECK(cuGraphInstantiateWithFlags(&xa, ga, 0));
	for (unsigned long long i = 0; i < launches; i++)
		CHECK(cuGraphLaunch(xa, s));
	t.allocs++;
	t.frees++;

	/* 2. an allocation node freed by the stream after each launch */
	CHECK(cuGraphCreate(&gb, 0));
	nb = alloc_node(gb, NULL, 0, size_b, &pb);
	(void)nb;
	CHECK(cuGraphInstantiateWithFlags(&xb, gb, 0));
	for (unsigned long long i = 0; i < launches; i++) {
		CHECK(cuGraphLaunch(xb, s));
		CHECK(cuMemFreeAsync(pb, s));
	}
	t.allocs++;
	t.frees++; /* the first; the others free what a relaunch made again */

	/* 3. the leak: graph memory a launch made and nobody freed */
	CHECK(cuGraphCreate(&gc, 0));
	nc = alloc_node(gc, NULL, 0, size_c, &pc);
	(void)nc;
	CHECK(cuGraphInstantiateWithFlags(&xc, gc, 0));
	CHECK(cuGraphLaunch(xc, s));
	t.allocs++;
	t.leaks++;
	t.leaked_bytes += size_c;

	/* 4. stream-ordered allocation inside a captured graph */
	CHECK(cuStreamBeginCapture(s));
	CHECK(cuMemAllocAsync(&pd, size_d, s));
	pd_free = pd;
	CHECK(cuMemFreeAsync(pd_free, s));
	CHECK(cuStreamEndCapture(s, &gd));
	CHECK(cuGraphInstantiateWithFlags(&xd, gd, 0));
	for (unsigned long long i = 0; i < launches; i++)
		CHECK(cuGraphLaunch(xd, s));
	t.allocs++;
	t.frees++;

	CHECK(cuStreamSynchronize(s));
	snprintf(extra, sizeof(extra), "\"graph_relaunch_frees\":%llu,\"leaked_address\":%llu", launches - 1,
		 (unsigned long long)pc);
	truth_print(stderr, &t, extra);
	return 0;
}
