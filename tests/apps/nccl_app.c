/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl_app: one rank of an NCCL job with calls, bytes, data types and peers
 * known by construction, for gpuprobe --nccl (issue 14).  Start it once per
 * rank (nccl_launcher.sh does, as torchrun would):
 *
 *   nccl_app --rank R --nranks N --id-file F [--device D] [--n K] [--wait | --wait-early]
 *            [--bad] [--subset basic] [--no-split-query]
 *
 * Rank 0 makes the ncclUniqueId and writes it to F (atomically); the others
 * read it.  The GPU is R modulo the device count unless --device says.  On the
 * world communicator (stream synchronized after each kind of call):
 *   K   x AllReduce  float32 Sum  262144 (1 MiB)   2K x AllReduce bfloat16 Sum 4096
 *   1   x AllReduce  int32 count 0 (valid, no kernel)
 *   K   x Broadcast  uint8 root 0 65536            1  x Bcast (ncclBcast) int32 root 0 1024
 *   K   x AllGather  float16 8192 a rank           K  x ReduceScatter float32 Sum 16384
 *   1   x Reduce     float64 Max root N-1 4096
 *   1   group of AllReduce float64 Sum 128 + AllGather int8 64
 *   full only: K x AlltoAll int64 1024, 1 x Gather int8 root 0 2048,
 *              1 x Scatter uint32 root 1 % N 512, K groups of
 *              {Send float32 4096 to R+1, Recv float32 4096 from R-1}
 * Then ncclCommSplit(color R % 2, key R), and on the new communicator
 *   K x AllReduce float32 Sum 1024, 1 x Broadcast float32 root 0 2048,
 *   full and more than one rank: 1 group {Send int32 512 to next, Recv from previous}.
 * The program times its world float32 AllReduce loop with CUDA events.
 * --bad, at the end: an AllReduce with data type 99 on a live communicator,
 * one on NULL, one on the destroyed world: each must fail with
 * ncclInvalidArgument, and none is a collective.
 * --no-split-query: the split is never asked its shape (as PyTorch's new_group).
 * --poll: the world AllGather batch is waited for by polling cuStreamQuery (as
 * nccl-tests does) and the ReduceScatter batch by polling cuEventQuery on an event
 * recorded after it (as PyTorch's watchdog does), 50 us apart; "polls" in the truth
 * counts their CUDA_ERROR_NOT_READY results.
 * --wait: READY after the world communicator is made; --wait-early: before.
 * --subset basic calls nothing the partial stand-in lacks (no p2p, AlltoAll,
 * Gather, Scatter), for tests with .output/fakenccl/partial/libnccl.so.2.
 *
 * Ground truth (last JSON line on stderr), per communicator: nranks, rank,
 * device, members (world ranks, so ranks of one communicator can be matched),
 * collectives per op and dtype (calls, bytes = count x dtype size, the
 * kernel it launches), p2p per peer and direction; counted after READY.
 * The kernel launches are checked against the stand-in driver's counters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "fakecuda_ext.h"
#include "fakenccl.h"
#include "ncclid.h"

static const char usage[] =
	"--rank R --nranks N --id-file F [--device D] [--n K] [--wait | --wait-early] [--bad] "
	"[--subset basic] [--no-split-query] [--poll]";

static unsigned long long polls;

/* Waits for s (ev NULL) or ev by polling, counting the NOT_READY results. */
static void poll_done(CUstream s, CUevent ev)
{
	CUresult rc;

	while ((rc = ev ? cuEventQuery(ev) : cuStreamQuery(s)) == CUDA_ERROR_NOT_READY) {
		polls++;
		usleep(50);
	}
	CHECK(rc);
}

#define NCC(call) nccl_check((call), #call, __LINE__)

static void nccl_check(ncclResult_t rc, const char *what, int line)
{
	if (rc == ncclSuccess)
		return;
	fprintf(stderr, "nccl_app:%d: %s failed: %s (%d): %s\n", line, what, ncclGetErrorString(rc),
		(int)rc, ncclGetLastError(NULL));
	exit(1);
}

static const char *const ty_name[ncclNumTypes] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64",
	"bfloat16", "float8e4m3", "float8e5m2",
};
/* As NCCL spells them in kernel names; signed integers run in the unsigned kernels. */
static const char *const ty_short[ncclNumTypes] = { "u8", "u8", "u32", "u32", "u64", "u64",
						    "f16", "f32", "f64", "bf16", "f8e4m3",
						    "f8e5m2" };
static const size_t ty_size[ncclNumTypes] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

struct coll {
	const char *op, *call;
	ncclDataType_t type;
	size_t count;
	unsigned long long calls, bytes;
	char kernel[96];	/* NCCL's kernel base name, "" when none runs */
	unsigned long long kernel_ns;	/* per call, from the stand-in NCCL's model */
};

struct p2p {
	int peer;
	const char *dir;
	unsigned long long calls, bytes;
};

struct comm {
	const char *label, *made_by;
	ncclComm_t c;
	int nranks, rank, color, key, made_before_ready;
	int members[64], nmembers;
	struct coll coll[16];
	int ncoll;
	struct p2p p2p[8];
	int np2p;
};

static struct comm world, sub;
static int after_ready, groups;
static double busbw;

/*
 * The kernel NCCL (2.28.9, and the stand-in) runs a collective in, and its
 * modelled time.  NCCL has one kernel per op, type and algorithm, specialized
 * for Sum and the LL protocol, signed types sharing the unsigned one's: the
 * name shows neither the call's reduction nor its protocol.
 */
static void kernel_of(struct coll *c, int reducing, int nranks)
{
	unsigned long long bytes = c->count * ty_size[c->type], n = (unsigned long long)nranks, bus;

	if (c->count == 0) {
		c->kernel[0] = '\0';
		return;
	}
	if (!strcmp(c->op, "AlltoAll") || !strcmp(c->op, "Gather") || !strcmp(c->op, "Scatter"))
		snprintf(c->kernel, sizeof(c->kernel), "ncclDevKernel_SendRecv");
	else if (reducing)
		snprintf(c->kernel, sizeof(c->kernel), "ncclDevKernel_%s_Sum_%s_RING_LL", c->op,
			 ty_short[c->type]);
	else
		snprintf(c->kernel, sizeof(c->kernel), "ncclDevKernel_%s_RING_LL", c->op);
	if (!strcmp(c->op, "AllReduce"))
		bus = 2 * (n - 1) * bytes / n;
	else if (!strcmp(c->op, "Broadcast") || !strcmp(c->op, "Reduce"))
		bus = bytes;
	else
		bus = (n - 1) * bytes;
	c->kernel_ns = 5000 + (unsigned long long)((double)bus * 1e9 / busbw);
}

static struct coll *coll_of(struct comm *cm, const char *op, const char *call,
			    ncclDataType_t t, size_t count, const char *red)
{
	struct coll *c;

	for (int i = 0; i < cm->ncoll; i++)
		if (!strcmp(cm->coll[i].op, op) && !strcmp(cm->coll[i].call, call) &&
		    cm->coll[i].type == t)
			return &cm->coll[i];
	c = &cm->coll[cm->ncoll++];
	c->op = op;
	c->call = call;
	c->type = t;
	c->count = count;
	kernel_of(c, red != NULL, cm->nranks);
	return c;
}

/* Counts one successful call (after READY only: the truth is what a tracer then sees). */
static void count_coll(struct comm *cm, const char *op, const char *call, ncclDataType_t t,
		       size_t count, const char *red)
{
	struct coll *c = coll_of(cm, op, call, t, count, red);

	if (!after_ready)
		return;
	c->calls++;
	c->bytes += count * ty_size[t];
}

static void count_p2p(struct comm *cm, int peer, const char *dir, ncclDataType_t t, size_t count)
{
	struct p2p *p = NULL;

	for (int i = 0; i < cm->np2p; i++)
		if (cm->p2p[i].peer == peer && !strcmp(cm->p2p[i].dir, dir))
			p = &cm->p2p[i];
	if (!p) {
		p = &cm->p2p[cm->np2p++];
		p->peer = peer;
		p->dir = dir;
	}
	if (after_ready) {
		p->calls++;
		p->bytes += count * ty_size[t];
	}
}

static void print_comm(const struct comm *cm, int dev)
{
	fprintf(stderr, "{\"label\":\"%s\",\"made_by\":\"%s\",\"made_before_ready\":%s,"
			"\"nranks\":%d,\"rank\":%d,\"device\":%d,",
		cm->label, cm->made_by, cm->made_before_ready ? "true" : "false", cm->nranks,
		cm->rank, dev);
	if (cm == &sub)
		fprintf(stderr, "\"parent\":\"world\",\"color\":%d,\"key\":%d,", cm->color, cm->key);
	fprintf(stderr, "\"members\":[");
	for (int i = 0; i < cm->nmembers; i++)
		fprintf(stderr, "%s%d", i ? "," : "", cm->members[i]);
	fprintf(stderr, "],\"collectives\":[");
	for (int i = 0, first = 1; i < cm->ncoll; i++) {
		const struct coll *c = &cm->coll[i];

		if (!c->calls)
			continue;
		fprintf(stderr, "%s{\"op\":\"%s\",\"call\":\"%s\",\"dtype\":\"%s\",\"count\":%zu,"
				"\"calls\":%llu,\"bytes\":%llu,\"kernel\":\"%s\",\"kernel_ns\":%llu}",
			first ? "" : ",", c->op, c->call, ty_name[c->type], c->count, c->calls,
			c->bytes, c->kernel, c->count ? c->kernel_ns : 0);
		first = 0;
	}
	fprintf(stderr, "],\"p2p\":[");
	for (int i = 0, first = 1; i < cm->np2p; i++) {
		if (!cm->p2p[i].calls)
			continue;
		fprintf(stderr, "%s{\"peer\":%d,\"direction\":\"%s\",\"calls\":%llu,\"bytes\":%llu}",
			first ? "" : ",", cm->p2p[i].peer, cm->p2p[i].dir, cm->p2p[i].calls,
			cm->p2p[i].bytes);
		first = 0;
	}
	fprintf(stderr, "]}");
}

/* Kernel launches per kernel base name, by construction (every call: the stand-in counts all). */
static struct {
	char name[96];
	unsigned long long launches;
} kl[64];
static int nkl;

static void expect_launches(const char *base, unsigned long long n)
{
	for (int i = 0; i < nkl; i++) {
		if (!strcmp(kl[i].name, base)) {
			kl[i].launches += n;
			return;
		}
	}
	snprintf(kl[nkl].name, sizeof(kl[nkl].name), "%s", base);
	kl[nkl++].launches = n;
}

int main(int argc, char **argv)
{
	unsigned long long k = 3;
	int rank = -1, nranks = -1, dev = -1, wait = 0, early = 0, bad = 0, basic = 0, ndev = 0, no_split_query = 0;
	int poll = 0;
	const char *id_file = NULL;
	ncclUniqueId id;
	CUcontext ctx;
	CUstream s;
	CUevent e0, e1;
	CUdeviceptr dsend, drecv;
	void *b, *b2;
	float ms = 0;
	int next, prev, r = -1, n = -1, d = -1;
	unsigned long long bad_results[3] = { 0 };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rank") && i + 1 < argc)
			rank = (int)app_parse_u64("--rank", argv[++i]);
		else if (!strcmp(argv[i], "--nranks") && i + 1 < argc)
			nranks = (int)app_parse_u64("--nranks", argv[++i]);
		else if (!strcmp(argv[i], "--id-file") && i + 1 < argc)
			id_file = argv[++i];
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			dev = (int)app_parse_u64("--device", argv[++i]);
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			k = app_parse_u64("--n", argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--wait-early"))
			early = 1;
		else if (!strcmp(argv[i], "--bad"))
			bad = 1;
		else if (!strcmp(argv[i], "--no-split-query"))
			no_split_query = 1;
		else if (!strcmp(argv[i], "--poll"))
			poll = 1;
		else if (!strcmp(argv[i], "--subset") && i + 1 < argc && !strcmp(argv[i + 1], "basic"))
			basic = 1, i++;
		else
			app_usage_error(argv[0], usage, "unknown option %s", argv[i]);
	}
	if (nranks < 1 || nranks > 64 || rank < 0 || rank >= nranks || !id_file || k < 1 ||
	    k > 100000 || (wait && early))
		app_usage_error(argv[0], usage, "need 0 <= R < N <= 64, an id file, 1 <= K <= 100000");
	busbw = 10e9;
	if (getenv("FAKENCCL_BUSBW_GBPS") && atof(getenv("FAKENCCL_BUSBW_GBPS")) > 0)
		busbw = atof(getenv("FAKENCCL_BUSBW_GBPS")) * 1e9;

	app_block_signal();
	CHECK(cuInit(0));
	CHECK(cuDeviceGetCount(&ndev));
	if (dev < 0)
		dev = rank % ndev;
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&e0, 0));
	CHECK(cuEventCreate(&e1, 0));
	CHECK(cuMemAlloc_v2(&dsend, 8 << 20));
	CHECK(cuMemAlloc_v2(&drecv, 8 << 20));
	b = (void *)(uintptr_t)dsend;
	b2 = (void *)(uintptr_t)drecv;
	if (rank == 0) {
		NCC(ncclGetUniqueId(&id));
		ncclid_write("nccl_app", id_file, &id);
	} else {
		ncclid_read("nccl_app", id_file, &id);
	}
	after_ready = !(wait || early);
	if (early) {
		app_wait_ready();
		after_ready = 1;
	}
	NCC(ncclCommInitRank(&world.c, nranks, id, rank));
	world.label = "world";
	world.made_by = "ncclCommInitRank";
	world.made_before_ready = wait;
	world.nranks = nranks;
	world.rank = rank;
	for (int i = 0; i < nranks; i++)
		world.members[world.nmembers++] = i;
	NCC(ncclCommCount(world.c, &n));
	NCC(ncclCommUserRank(world.c, &r));
	NCC(ncclCommCuDevice(world.c, &d));
	if (n != nranks || r != rank || d != dev) {
		fprintf(stderr, "nccl_app: communicator says %d ranks, rank %d, device %d\n", n, r, d);
		return 1;
	}
	if (wait) {
		app_wait_ready();
		after_ready = 1;
	}
	next = (rank + 1) % nranks;
	prev = (rank + nranks - 1) % nranks;

	CHECK(cuEventRecord(e0, s));
	for (unsigned long long i = 0; i < k; i++) {
		NCC(ncclAllReduce(b, b2, 262144, ncclFloat32, ncclSum, world.c, s));
		count_coll(&world, "AllReduce", "ncclAllReduce", ncclFloat32, 262144, "Sum");
	}
	CHECK(cuEventRecord(e1, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuEventElapsedTime(&ms, e0, e1));
	for (unsigned long long i = 0; i < 2 * k; i++) {
		NCC(ncclAllReduce(b, b2, 4096, ncclBfloat16, ncclSum, world.c, s));
		count_coll(&world, "AllReduce", "ncclAllReduce", ncclBfloat16, 4096, "Sum");
	}
	NCC(ncclAllReduce(b, b2, 0, ncclInt32, ncclSum, world.c, s));
	count_coll(&world, "AllReduce", "ncclAllReduce", ncclInt32, 0, "Sum");
	CHECK(cuStreamSynchronize(s));
	for (unsigned long long i = 0; i < k; i++) {
		NCC(ncclBroadcast(b, b2, 65536, ncclUint8, 0, world.c, s));
		count_coll(&world, "Broadcast", "ncclBroadcast", ncclUint8, 65536, NULL);
	}
	NCC(ncclBcast(b, 1024, ncclInt32, 0, world.c, s));
	count_coll(&world, "Broadcast", "ncclBcast", ncclInt32, 1024, NULL);
	CHECK(cuStreamSynchronize(s));
	for (unsigned long long i = 0; i < k; i++) {
		NCC(ncclAllGather(b, b2, 8192, ncclFloat16, world.c, s));
		count_coll(&world, "AllGather", "ncclAllGather", ncclFloat16, 8192, NULL);
	}
	if (poll)
		poll_done(s, NULL);
	else
		CHECK(cuStreamSynchronize(s));
	for (unsigned long long i = 0; i < k; i++) {
		NCC(ncclReduceScatter(b, b2, 16384, ncclFloat32, ncclSum, world.c, s));
		count_coll(&world, "ReduceScatter", "ncclReduceScatter", ncclFloat32, 16384, "Sum");
	}
	if (poll) {
		CHECK(cuEventRecord(e1, s));
		poll_done(s, e1);
	} else {
		CHECK(cuStreamSynchronize(s));
	}
	NCC(ncclReduce(b, b2, 4096, ncclFloat64, ncclMax, nranks - 1, world.c, s));
	count_coll(&world, "Reduce", "ncclReduce", ncclFloat64, 4096, "MinMax");
	CHECK(cuStreamSynchronize(s));
	NCC(ncclGroupStart());
	NCC(ncclAllReduce(b, b2, 128, ncclFloat64, ncclSum, world.c, s));
	NCC(ncclAllGather(b, b2, 64, ncclInt8, world.c, s));
	NCC(ncclGroupEnd());
	groups += after_ready;
	count_coll(&world, "AllReduce", "ncclAllReduce", ncclFloat64, 128, "Sum");
	count_coll(&world, "AllGather", "ncclAllGather", ncclInt8, 64, NULL);
	CHECK(cuStreamSynchronize(s));
	if (!basic) {
		for (unsigned long long i = 0; i < k; i++) {
			NCC(ncclAlltoAll(b, b2, 1024, ncclInt64, world.c, s));
			count_coll(&world, "AlltoAll", "ncclAlltoAll", ncclInt64, 1024, NULL);
		}
		NCC(ncclGather(b, b2, 2048, ncclInt8, 0, world.c, s));
		count_coll(&world, "Gather", "ncclGather", ncclInt8, 2048, NULL);
		NCC(ncclScatter(b, b2, 512, ncclUint32, 1 % nranks, world.c, s));
		count_coll(&world, "Scatter", "ncclScatter", ncclUint32, 512, NULL);
		CHECK(cuStreamSynchronize(s));
		for (unsigned long long i = 0; i < k; i++) {
			NCC(ncclGroupStart());
			NCC(ncclSend(b, 4096, ncclFloat32, next, world.c, s));
			NCC(ncclRecv(b2, 4096, ncclFloat32, prev, world.c, s));
			NCC(ncclGroupEnd());
			groups += after_ready;
			count_p2p(&world, next, "send", ncclFloat32, 4096);
			count_p2p(&world, prev, "recv", ncclFloat32, 4096);
		}
		CHECK(cuStreamSynchronize(s));
	}

	/* Split by parity; the new rank follows the key (the world rank). */
	sub.label = "split";
	sub.made_by = "ncclCommSplit";
	sub.color = rank % 2;
	sub.key = rank;
	for (int i = 0; i < nranks; i++)
		if (i % 2 == sub.color)
			sub.members[sub.nmembers++] = i;
	sub.nranks = sub.nmembers;
	sub.rank = rank / 2;
	NCC(ncclCommSplit(world.c, sub.color, sub.key, &sub.c, NULL));
	if (no_split_query) { /* as PyTorch's new_group: the shape is never asked */
		n = sub.nranks;
		r = sub.rank;
	} else {
		NCC(ncclCommCount(sub.c, &n));
		NCC(ncclCommUserRank(sub.c, &r));
	}
	if (n != sub.nranks || r != sub.rank) {
		fprintf(stderr, "nccl_app: split communicator says %d ranks, rank %d\n", n, r);
		return 1;
	}
	for (unsigned long long i = 0; i < k; i++) {
		NCC(ncclAllReduce(b, b2, 1024, ncclFloat32, ncclSum, sub.c, s));
		count_coll(&sub, "AllReduce", "ncclAllReduce", ncclFloat32, 1024, "Sum");
	}
	NCC(ncclBroadcast(b, b2, 2048, ncclFloat32, 0, sub.c, s));
	count_coll(&sub, "Broadcast", "ncclBroadcast", ncclFloat32, 2048, NULL);
	if (!basic && sub.nranks > 1) {
		int sn = (sub.rank + 1) % sub.nranks, sp = (sub.rank + sub.nranks - 1) % sub.nranks;

		NCC(ncclGroupStart());
		NCC(ncclSend(b, 512, ncclInt32, sn, sub.c, s));
		NCC(ncclRecv(b2, 512, ncclInt32, sp, sub.c, s));
		NCC(ncclGroupEnd());
		groups += after_ready;
		count_p2p(&sub, sn, "send", ncclInt32, 512);
		count_p2p(&sub, sp, "recv", ncclInt32, 512);
	}
	CHECK(cuStreamSynchronize(s));

	if (bad)
		bad_results[0] = (unsigned long long)ncclAllReduce(b, b2, 16, (ncclDataType_t)99,
								  ncclSum, world.c, s);
	NCC(ncclCommDestroy(sub.c));
	NCC(ncclCommFinalize(world.c));
	NCC(ncclCommDestroy(world.c));
	if (bad) {
		bad_results[1] = (unsigned long long)ncclAllReduce(b, b2, 16, ncclFloat32, ncclSum,
								  NULL, s);
		bad_results[2] = (unsigned long long)ncclAllReduce(b, b2, 16, ncclFloat32, ncclSum,
								  world.c, s);
		for (int i = 0; i < 3; i++) {
			if (bad_results[i] != ncclInvalidArgument) {
				fprintf(stderr, "nccl_app: bad call %d returned %llu\n", i,
					bad_results[i]);
				return 1;
			}
		}
	}

	/*
	 * Every launch by construction.  No collective runs before READY, so the
	 * counts after it are all of them, which is what the stand-in counted.
	 */
	{
		struct comm *cms[2] = { &world, &sub };

		for (int c = 0; c < 2; c++) {
			for (int i = 0; i < cms[c]->ncoll; i++) {
				struct coll *x = &cms[c]->coll[i];
				unsigned long long calls = x->calls;

				if (!x->kernel[0])
					continue;
				expect_launches(x->kernel, calls);
			}
		}
		if (!basic)
			expect_launches("ncclDevKernel_SendRecv", k + (sub.nranks > 1 ? 1 : 0));
		for (int i = 0; i < nkl; i++) {
			char mangled[160];

			snprintf(mangled, sizeof(mangled), "_Z%zu%s24ncclDevKernelArgsStorageILm4096EE",
				 strlen(kl[i].name), kl[i].name);
			app_expect_kernel(mangled, kl[i].launches, 0, 0);
		}
	}

	fprintf(stderr, "{\"pid\":%d,\"api\":\"nccl\",\"rank\":%d,\"nranks\":%d,\"device\":%d,"
			"\"n\":%llu,\"subset\":\"%s\",\"wait\":\"%s\",\"groups\":%d,"
			"\"busbw_bytes_per_s\":%.0f,\"polls\":%llu,\"comms\":[",
		(int)getpid(), rank, nranks, dev, k, basic ? "basic" : "full",
		early ? "early" : wait ? "ready" : "none", groups, busbw, polls);
	print_comm(&world, dev);
	fprintf(stderr, ",");
	print_comm(&sub, dev);
	fprintf(stderr, "],\"bad_calls\":[");
	if (bad)
		fprintf(stderr, "{\"call\":\"ncclAllReduce\",\"reason\":\"unknown_dtype\",\"dtype\":99,"
				"\"comm\":\"world\",\"result\":%llu},"
				"{\"call\":\"ncclAllReduce\",\"reason\":\"null_comm\",\"result\":%llu},"
				"{\"call\":\"ncclAllReduce\",\"reason\":\"destroyed_comm\",\"comm\":\"world\","
				"\"result\":%llu}",
			bad_results[0], bad_results[1], bad_results[2]);
	fprintf(stderr, "],\"event_timing\":{\"comm\":\"world\",\"op\":\"AllReduce\","
			"\"dtype\":\"float32\",\"calls\":%llu,\"bytes\":%llu,\"ms\":%.3f},"
			"\"kernel_launches\":{",
		k, k * 262144ull * 4, ms);
	for (int i = 0; i < nkl; i++) {
		fprintf(stderr, "%s\"%s\":%llu", i ? "," : "", kl[i].name, kl[i].launches);
	}
	fprintf(stderr, "}}\n");
	return 0;
}
