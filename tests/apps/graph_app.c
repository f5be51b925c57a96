/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * graph_app: CUDA graphs with captured and graph-executed counts known by
 * construction, for gpuprobe's graph expansion (issue 13).
 *
 * 1. Eager warm-up: one direct launch each of gemm, relu, softmax.
 * 2. Stream capture the way PyTorch does it (cuStreamBeginCapture_v2 in
 *    global mode, cuStreamGetCaptureInfo_v3 between launches, an allocation
 *    inside cuThreadExchangeStreamCaptureMode(relaxed)): K x gemm
 *    (cuLaunchKernel) and K x relu (cuLaunchKernelEx) on s0, a fork to s1
 *    (event record + cuStreamWaitEvent) with K x softmax, a join back, one
 *    layernorm; cuStreamEndCapture, cuGraphGetNodes, cuGraphInstantiateWithFlags,
 *    cuGraphDestroy, then L x cuGraphLaunch (the last one _ptsz).
 * 3. A capture that fails: 2 x dummy captured, then a cuMemAlloc_v2 in
 *    global mode invalidates it; cuStreamEndCapture says so; dummy never runs.
 * 4. The graph API: cuGraphCreate; node_a; node_b and node_c (a CUkernel in the
 *    v2 params) after it; node_d (v1 cuGraphAddKernelNode) after both;
 *    cuGraphInstantiateWithParams; M launches.  Then
 *    cuGraphExecKernelNodeSetParams_v2 puts graph_swapped in node_b's place
 *    in the exec: U1 launches.  Then cuGraphKernelNodeSetParams_v2 puts
 *    graph_updated in node_c's place in the graph and cuGraphExecUpdate_v2
 *    brings the graph into the exec (node_b is graph_node_b again): U2 launches.
 *
 * --wait: READY after the handles are made, before step 1 (a tracer sees
 * everything).  --wait-late: steps 1-3 and step 4's graph and instantiation
 * happen before READY; after it only graph launches (and the exec updates)
 * of graphs the tracer never saw made.  The truth (last JSON line on
 * stderr) counts what happened after READY, per kernel: launched (ran from
 * a launch call), captured (recorded, did not run), graph_executed (ran
 * inside a graph launch); the stand-in driver's own counters must agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"

static const char usage[] = "[--k K] [--launches L] [--m M] [--wait | --wait-late]";

enum { GEMM, RELU, SOFTMAX, LAYERNORM, DUMMY, NODE_A, NODE_B, NODE_C, NODE_D, SWAPPED,
       UPDATED, NK };

static const struct {
	const char *mangled, *name;
} kern[NK] = {
	{ "_Z4gemmPKfS0_Pfiii", "gemm(float const*, float const*, float*, int, int, int)" },
	{ "_Z4reluPfi", "relu(float*, int)" },
	{ "_Z7softmaxPKfPfi", "softmax(float const*, float*, int)" },
	{ "_Z9layernormPfi", "layernorm(float*, int)" },
	{ "_Z5dummyv", "dummy()" },
	{ "graph_node_a", "graph_node_a" },
	{ "graph_node_b", "graph_node_b" },
	{ "graph_node_c", "graph_node_c" },
	{ "graph_node_d", "graph_node_d" },
	{ "graph_swapped", "graph_swapped" },
	{ "graph_updated", "graph_updated" },
};

/* By construction: [0] everything, [1] what happens after READY. */
static unsigned long long launched[2][NK], captured[2][NK], executed[2][NK];
static unsigned long long graph_launches[2], allocs[2], frees[2];
static int after_ready;
static CUfunction fn[NK];
static CUkernel kn_c;

static void count(unsigned long long (*what)[NK], int k, unsigned long long n)
{
	what[0][k] += n;
	if (after_ready)
		what[1][k] += n;
}

static void launch(int k, CUstream s, int ex)
{
	if (ex) {
		CUlaunchConfig cfg;

		memset(&cfg, 0, sizeof(cfg));
		cfg.gridDimX = 32;
		cfg.gridDimY = cfg.gridDimZ = 1;
		cfg.blockDimX = 256;
		cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.hStream = s;
		CHECK(cuLaunchKernelEx(&cfg, fn[k], NULL, NULL));
	} else {
		CHECK(cuLaunchKernel(fn[k], 32, 1, 1, 256, 1, 1, 0, s, NULL, NULL));
	}
}

static void capture_info(CUstream s)
{
	CUstreamCaptureStatus st;
	const CUgraphNode *deps;
	size_t nd;
	cuuint64_t id;

	CHECK(cuStreamGetCaptureInfo_v3(s, &st, &id, NULL, &deps, NULL, &nd));
	if (st != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
		fprintf(stderr, "graph_app: stream not capturing (%d)\n", (int)st);
		exit(1);
	}
}

static void knode(CUDA_KERNEL_NODE_PARAMS *p, CUfunction f, CUkernel k)
{
	memset(p, 0, sizeof(*p));
	p->func = f;
	p->kern = k;
	p->gridDimX = 8;
	p->gridDimY = p->gridDimZ = 1;
	p->blockDimX = 128;
	p->blockDimY = p->blockDimZ = 1;
}

int main(int argc, char **argv)
{
	unsigned long long k = 4, l = 5, m = 3, u1 = 2, u2 = 2;
	int wait = 0, late = 0;
	CUcontext ctx;
	CUmodule mod;
	CUlibrary lib;
	CUstream s0, s1;
	CUevent ev_fork, ev_join;
	CUgraph g1, g2, dead;
	CUgraphExec x1, x2;
	CUgraphNode na, nb, nc, nd, deps[2];
	CUDA_KERNEL_NODE_PARAMS p;
	CUDA_KERNEL_NODE_PARAMS_v1 p1;
	CUDA_GRAPH_INSTANTIATE_PARAMS ip;
	CUgraphExecUpdateResultInfo info;
	CUstreamCaptureMode mode;
	CUdeviceptr scratch;
	size_t nodes = 0;
	char image[512];
	int pos = 0, view;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--k") && i + 1 < argc)
			k = app_parse_u64("--k", argv[++i]);
		else if (!strcmp(argv[i], "--launches") && i + 1 < argc)
			l = app_parse_u64("--launches", argv[++i]);
		else if (!strcmp(argv[i], "--m") && i + 1 < argc)
			m = app_parse_u64("--m", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--wait-late"))
			late = 1;
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (k < 1 || k > 10000 || l < 1 || l > 100000 || m < 1 || m > 100000 || (wait && late))
		app_usage_error(argv[0], usage, "need 1 <= K <= 10000, 1 <= L, M <= 100000");

	app_block_signal();
	ctx = app_cuda_init();
	(void)ctx;
	for (int i = 0; i < NK; i++)
		if (i != NODE_C)
			pos += snprintf(image + pos, sizeof(image) - (size_t)pos, "%s\n",
					kern[i].mangled);
	CHECK(cuModuleLoadData(&mod, image));
	for (int i = 0; i < NK; i++)
		if (i != NODE_C)
			CHECK(cuModuleGetFunction(&fn[i], mod, kern[i].mangled));
	CHECK(cuLibraryLoadData(&lib, "graph_node_c\n", NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&kn_c, lib, "graph_node_c"));
	CHECK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&ev_fork, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&ev_join, CU_EVENT_DISABLE_TIMING));
	if (wait) {
		app_wait_ready();
		after_ready = 1;
	}

	/* 1. eager warm-up */
	for (int i = GEMM; i <= SOFTMAX; i++) {
		launch(i, s0, 0);
		count(launched, i, 1);
	}
	CHECK(cuStreamSynchronize(s0));

	/* 2. capture, instantiate */
	CHECK(cuStreamBeginCapture_v2(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
	for (unsigned long long i = 0; i < k; i++) {
		launch(GEMM, s0, 0);
		capture_info(s0);
		launch(RELU, s0, 1);
	}
	count(captured, GEMM, k);
	count(captured, RELU, k);
	CHECK(cuEventRecord(ev_fork, s0));
	CHECK(cuStreamWaitEvent(s1, ev_fork, 0));
	for (unsigned long long i = 0; i < k; i++)
		launch(SOFTMAX, s1, 0);
	count(captured, SOFTMAX, k);
	CHECK(cuEventRecord(ev_join, s1));
	CHECK(cuStreamWaitEvent(s0, ev_join, 0));
	mode = CU_STREAM_CAPTURE_MODE_RELAXED;	/* the caching allocator grows mid-capture */
	CHECK(cuThreadExchangeStreamCaptureMode(&mode));
	CHECK(cuMemAlloc_v2(&scratch, 1 << 20));
	allocs[0]++;
	allocs[1] += after_ready;
	CHECK(cuThreadExchangeStreamCaptureMode(&mode));
	launch(LAYERNORM, s0, 0);
	count(captured, LAYERNORM, 1);
	CHECK(cuStreamEndCapture(s0, &g1));
	CHECK(cuGraphGetNodes(g1, NULL, &nodes));
	if (nodes != 3 * k + 1) {
		fprintf(stderr, "graph_app: captured graph has %zu nodes, expected %llu\n", nodes,
			3 * k + 1);
		return 1;
	}
	CHECK(cuGraphInstantiateWithFlags(&x1, g1, 0));
	CHECK(cuGraphDestroy(g1));

	/* 3. a capture that an unsafe call invalidates */
	CHECK(cuStreamBeginCapture_v2(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
	launch(DUMMY, s0, 0);
	launch(DUMMY, s0, 0);
	count(captured, DUMMY, 2);
	CHECK_FAILS(cuMemAlloc_v2(&scratch, 4096), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CHECK_FAILS(cuStreamEndCapture(s0, &dead), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

	/* 4. the graph API */
	CHECK(cuGraphCreate(&g2, 0));
	knode(&p, fn[NODE_A], NULL);
	CHECK(cuGraphAddKernelNode_v2(&na, g2, NULL, 0, &p));
	knode(&p, fn[NODE_B], NULL);
	CHECK(cuGraphAddKernelNode_v2(&nb, g2, &na, 1, &p));
	knode(&p, NULL, kn_c);
	CHECK(cuGraphAddKernelNode_v2(&nc, g2, &na, 1, &p));
	memset(&p1, 0, sizeof(p1));
	p1.func = fn[NODE_D];
	p1.gridDimX = p1.gridDimY = p1.gridDimZ = 1;
	p1.blockDimX = 64;
	p1.blockDimY = p1.blockDimZ = 1;
	deps[0] = nb;
	deps[1] = nc;
	CHECK(cuGraphAddKernelNode(&nd, g2, deps, 2, &p1));
	memset(&ip, 0, sizeof(ip));
	CHECK(cuGraphInstantiateWithParams(&x2, g2, &ip));
	if (late) {
		app_wait_ready();
		after_ready = 1;
	}

	for (unsigned long long i = 0; i < l; i++) {
		if (i + 1 < l)
			CHECK(cuGraphLaunch(x1, s0));
		else
			CHECK(cuGraphLaunch_ptsz(x1, s0));
	}
	count(executed, GEMM, k * l);
	count(executed, RELU, k * l);
	count(executed, SOFTMAX, k * l);
	count(executed, LAYERNORM, l);
	for (unsigned long long i = 0; i < m; i++)
		CHECK(cuGraphLaunch(x2, s0));
	knode(&p, fn[SWAPPED], NULL);
	CHECK(cuGraphExecKernelNodeSetParams_v2(x2, nb, &p));
	for (unsigned long long i = 0; i < u1; i++)
		CHECK(cuGraphLaunch(x2, s0));
	knode(&p, fn[UPDATED], NULL);
	CHECK(cuGraphKernelNodeSetParams_v2(nc, &p));
	CHECK(cuGraphExecUpdate_v2(x2, g2, &info));
	for (unsigned long long i = 0; i < u2; i++)
		CHECK(cuGraphLaunch(x2, s0));
	count(executed, NODE_A, m + u1 + u2);
	count(executed, NODE_B, m + u2);
	count(executed, SWAPPED, u1);
	count(executed, NODE_C, m + u1);
	count(executed, UPDATED, u2);
	count(executed, NODE_D, m + u1 + u2);
	graph_launches[0] += l + m + u1 + u2;
	graph_launches[1] += after_ready ? l + m + u1 + u2 : 0;
	CHECK(cuStreamSynchronize(s0));
	CHECK(cuGraphExecDestroy(x1));
	CHECK(cuGraphExecDestroy(x2));
	CHECK(cuGraphDestroy(g2));
	CHECK(cuMemFree_v2(scratch));
	frees[0]++;
	frees[1] += after_ready;

	/* The stand-in counted everything, before READY too. */
	for (int i = 0; i < NK; i++)
		app_expect_kernel(kern[i].mangled, launched[0][i], captured[0][i], executed[0][i]);
	if (fakecuda_graph_launches() != graph_launches[0]) {
		fprintf(stderr, "graph_app: the stand-in ran %llu graph launches, expected %llu\n",
			(unsigned long long)fakecuda_graph_launches(), graph_launches[0]);
		return 1;
	}

	/* Without a READY everything counts; with one, what came after it. */
	view = wait || late;
	fprintf(stderr, "{\"pid\":%d,\"api\":\"graph\",\"wait\":\"%s\",\"k\":%llu,\"launches\":%llu,"
			"\"m\":%llu,\"u1\":%llu,\"u2\":%llu,\"graph_launches\":%llu,"
			"\"allocs\":%llu,\"frees\":%llu,\"kernels\":{",
		(int)getpid(), late ? "late" : wait ? "ready" : "none", k, l, m, u1, u2,
		graph_launches[view], allocs[view], frees[view]);
	for (int i = 0, first = 1; i < NK; i++) {
		int a = view;

		if (!launched[a][i] && !captured[a][i] && !executed[a][i])
			continue;
		fprintf(stderr, "%s", first ? "" : ",");
		app_json_str(stderr, kern[i].name);
		fprintf(stderr, ":{\"mangled\":");
		app_json_str(stderr, kern[i].mangled);
		fprintf(stderr, ",\"launched\":%llu,\"captured\":%llu,\"graph_executed\":%llu}",
			launched[a][i], captured[a][i], executed[a][i]);
		first = 0;
	}
	fprintf(stderr, "},\"graphs\":[{\"made_by\":\"stream_capture\",\"nodes\":%llu,"
			"\"launches\":%llu,\"made_before_ready\":%s},"
			"{\"made_by\":\"graph_api\",\"nodes\":4,\"launches\":%llu,"
			"\"made_before_ready\":%s}],\"invalidated_captures\":%d,\"stand_in\":",
		3 * k + 1, l, late ? "true" : "false", m + u1 + u2, late ? "true" : "false",
		late ? 0 : 1);
	fakecuda_stats_json(stderr);
	fprintf(stderr, "}\n");
	return 0;
}
