// SPDX-License-Identifier: BSD-3-Clause
/*
 * --nccl without BPF: the aggregator over synthetic records (communicator ids from unique
 * ids and splits, shapes, bytes, bad calls, nested calls, groups, completion by the covering
 * sync, nccl-tests' bus factors, the rank x rank matrices, the table's bound), its renderers
 * (the JSON schema of the issue, bounded /metrics series), and NCCL kernel-name decoding.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "modes/nccl/nccl.h"
#include "modes/nccl/nccl_mode.h"
#include "lib/ncclkern.h"
#include "out/prom.h"
#include "unit.h"

#define H_WORLD 0xa000
#define H_SPLIT 0xb000

static uint64_t now = 1000;

static struct gp_nccl_event ev(uint32_t pid, int fn, uint64_t comm)
{
	struct gp_nccl_event e = { .type = GP_EV_NCCL, .fn = (__u32)fn, .pid = pid, .tid = pid, .ts_ns = now,
				   .dur_ns = 100, .comm = comm, .dtype = -1, .redop = -1, .peer = -1, .nranks = -1,
				   .rank = -1, .color = -1, .key = -1, .out = -1, .comm_name = "rank" };

	now += 1000;
	return e;
}

static void ctx(struct nccl_agg *a, uint32_t pid, int dev)
{
	struct gp_aux_event e = { .type = GP_EV_NCCL_CUDA, .api = GP_API_cuDevicePrimaryCtxRetain, .pid = pid,
				  .tid = pid, .ts_ns = now, .handle = 0xc0 + (uint64_t)dev, .aux = (uint64_t)dev };

	nccl_agg__on_cuda(a, &e);
	e.api = GP_API_cuCtxSetCurrent;
	nccl_agg__on_cuda(a, &e);
}

static void init(struct nccl_agg *a, uint32_t pid, int nranks, int rank, uint8_t seed)
{
	struct gp_nccl_event e = ev(pid, GP_NCCL_CommInitRank, 0);

	e.newcomm = H_WORLD;
	e.nranks = nranks;
	e.rank = rank;
	e.id_len = GP_NCCL_ID_BYTES;
	memset(e.id, seed, sizeof(e.id));
	nccl_agg__on_call(a, &e);
}

static void coll(struct nccl_agg *a, uint32_t pid, int fn, uint64_t comm, uint64_t count, int dtype, int peer,
		 uint64_t stream, uint64_t ret)
{
	struct gp_nccl_event e = ev(pid, fn, comm);

	e.count = count;
	e.dtype = dtype;
	e.peer = peer;
	e.stream = stream;
	e.ret = ret;
	nccl_agg__on_call(a, &e);
}

static void sync_stream(struct nccl_agg *a, uint32_t pid, uint64_t stream, uint64_t ts)
{
	struct gp_aux_event e = { .type = GP_EV_NCCL_CUDA, .api = GP_API_cuStreamSynchronize, .pid = pid,
				  .tid = pid, .ts_ns = ts, .handle = stream };

	nccl_agg__on_cuda(a, &e);
}

static const struct nccl_proc_snap *proc(const struct nccl_snap_data *d, uint32_t pid)
{
	for (size_t i = 0; i < d->nr_procs; i++)
		if (d->procs[i].pid == pid)
			return &d->procs[i];
	return NULL;
}

static const struct nccl_coll *find_coll(const struct nccl_comm_snap *c, int fn, int dtype)
{
	for (size_t i = 0; i < c->nr_colls; i++)
		if (c->colls[i].fn == fn && c->colls[i].dtype == dtype)
			return &c->colls[i];
	return NULL;
}

/* Two ranks of one job: one comm_id, their shapes and devices, bytes = count x size. */
static void test_ranks_share_a_comm_id(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	const struct nccl_proc_snap *p0, *p1;
	const struct nccl_coll *c;

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		return;
	for (uint32_t r = 0; r < 2; r++) {
		ctx(a, 10 + r, (int)r);
		init(a, 10 + r, 2, (int)r, 7);
		coll(a, 10 + r, GP_NCCL_AllReduce, H_WORLD, 262144, 7, -1, 0x5, 0);
		coll(a, 10 + r, GP_NCCL_Bcast, H_WORLD, 1024, 2, 0, 0x5, 0);
		coll(a, 10 + r, GP_NCCL_AllReduce, H_WORLD, 0, 2, -1, 0x5, 0); /* count 0: a call, no bytes */
	}
	if (!ASSERT_EQ(nccl_agg__snapshot(a, 0, &d), 0, "snapshot") || !ASSERT_EQ(d.nr_procs, 2, "two ranks"))
		goto cleanup;
	p0 = proc(&d, 10);
	p1 = proc(&d, 11);
	if (!ASSERT_TRUE(p0 && p1, "both") || !ASSERT_EQ(p0->nr_comms, 1, "one comm") ||
	    !ASSERT_TRUE(p0->comms[0].id_known, "id known") ||
	    !ASSERT_EQ(p0->comms[0].id, p1->comms[0].id, "one comm_id on both ranks") ||
	    !ASSERT_EQ(p0->comms[0].id, nccl_comm_id((const uint8_t *)memset((char[128]){ 0 }, 7, 128), 128),
		       "the id's FNV-1a") ||
	    !ASSERT_EQ(p1->comms[0].rank, 1, "rank") || !ASSERT_EQ(p1->comms[0].nranks, 2, "nranks") ||
	    !ASSERT_EQ(p1->comms[0].device, 1, "device: the thread's current context at the init"))
		goto cleanup;
	c = find_coll(&p0->comms[0], GP_NCCL_AllReduce, 7);
	if (!ASSERT_TRUE(c != NULL, "AllReduce float32") || !ASSERT_EQ(c->bytes, 262144 * 4, "bytes = count x 4") ||
	    !ASSERT_STR_EQ(nccl_op_name(GP_NCCL_Bcast), "Broadcast", "ncclBcast is a Broadcast") ||
	    !ASSERT_EQ(find_coll(&p0->comms[0], GP_NCCL_AllReduce, 2)->bytes, 0, "count 0") ||
	    !ASSERT_EQ(find_coll(&p0->comms[0], GP_NCCL_AllReduce, 2)->calls, 1, "still a call"))
		goto cleanup;
cleanup:
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

/* A NULL or destroyed communicator, an unknown type: counted by reason, never as traffic;
 * a call NCCL makes inside another is counted once. */
static void test_bad_nested_and_groups(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	const struct nccl_proc_snap *p;
	struct gp_nccl_event e;

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		return;
	init(a, 20, 1, 0, 1);
	coll(a, 20, GP_NCCL_AllReduce, H_WORLD, 16, 99, -1, 0, 4);
	coll(a, 20, GP_NCCL_AllReduce, 0, 16, 7, -1, 0, 4);
	e = ev(20, GP_NCCL_GroupStart, 0);
	nccl_agg__on_call(a, &e);
	e = ev(20, GP_NCCL_GroupStart, 0);
	nccl_agg__on_call(a, &e);
	coll(a, 20, GP_NCCL_Send, H_WORLD, 8, 7, 0, 0, 0);
	e = ev(20, GP_NCCL_GroupEnd, 0);
	nccl_agg__on_call(a, &e);
	e = ev(20, GP_NCCL_GroupEnd, 0);
	nccl_agg__on_call(a, &e);
	e = ev(20, GP_NCCL_Broadcast, H_WORLD); /* made by ncclBcast inside NCCL */
	e.depth = 1;
	e.count = 4;
	e.dtype = 7;
	nccl_agg__on_call(a, &e);
	e = ev(20, GP_NCCL_CommDestroy, H_WORLD);
	nccl_agg__on_call(a, &e);
	coll(a, 20, GP_NCCL_AllReduce, H_WORLD, 16, 7, -1, 0, 4);
	nccl_agg__snapshot(a, 0, &d);
	p = proc(&d, 20);
	if (!ASSERT_TRUE(p != NULL, "process") || !ASSERT_EQ(p->bad[NCCL_BAD_UNKNOWN_DTYPE], 1, "unknown dtype") ||
	    !ASSERT_EQ(p->bad[NCCL_BAD_NULL_COMM], 1, "NULL comm") ||
	    !ASSERT_EQ(p->bad[NCCL_BAD_DESTROYED_COMM], 1, "destroyed comm") || !ASSERT_EQ(p->failed, 3, "failed") ||
	    !ASSERT_EQ(p->nested, 1, "nested") || !ASSERT_EQ(p->groups, 1, "one outermost group") ||
	    !ASSERT_EQ(p->comms[0].nr_colls, 0, "no collective counted") ||
	    !ASSERT_EQ(p->comms[0].nr_p2p, 1, "the send") || !ASSERT_TRUE(p->comms[0].destroyed, "destroyed"))
		goto cleanup;
cleanup:
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

/* Calls complete at the first sync that covers their stream; a batch is charged from its
 * first submission; busbw = algbw x 2(n-1)/n for AllReduce, nccl-tests' size for AllGather. */
static void test_completion(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	const struct nccl_comm_snap *c;
	uint64_t t0;

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		return;
	init(a, 30, 4, 0, 3);
	t0 = now;
	coll(a, 30, GP_NCCL_AllReduce, H_WORLD, 1 << 18, 7, -1, 0x5, 0); /* 1 MiB */
	coll(a, 30, GP_NCCL_AllReduce, H_WORLD, 1 << 18, 7, -1, 0x5, 0);
	coll(a, 30, GP_NCCL_AllGather, H_WORLD, 1 << 10, 7, -1, 0x6, 0); /* 4 KiB a rank */
	sync_stream(a, 30, 0x5, t0 + 1000000);
	nccl_agg__snapshot(a, 0, &d);
	c = &proc(&d, 30)->comms[0];
	if (!ASSERT_EQ(c->nr_times, 2, "two (op, size) stats") || !ASSERT_EQ(c->times[0].fn, GP_NCCL_AllReduce, "AllReduce") ||
	    !ASSERT_EQ(c->times[0].calls, 2, "both AllReduces done") ||
	    !ASSERT_EQ(c->times[0].window_ns, 1000000, "window from the first submission") ||
	    !ASSERT_EQ(c->times[0].size, 2 << 20, "nccl-tests size") ||
	    !ASSERT_TRUE(fabs(c->times[0].bus_factor - 1.5) < 1e-9, "2(n-1)/n") ||
	    !ASSERT_EQ(c->times[0].by[NCCL_SYNC_STREAM], 2, "by a stream sync") ||
	    !ASSERT_EQ(c->times[1].calls, 0, "the AllGather's stream not synced") ||
	    !ASSERT_EQ(proc(&d, 30)->unsynced, 1, "one pending"))
		goto cleanup;
	nccl_snap_data__clear(&d);
	{
		struct gp_aux_event e = { .type = GP_EV_NCCL_CUDA, .api = GP_API_cuCtxSynchronize_v2, .pid = 30,
					  .tid = 30, .ts_ns = now + 500 };

		nccl_agg__on_cuda(a, &e);
	}
	nccl_agg__snapshot(a, 0, &d);
	c = &proc(&d, 30)->comms[0];
	if (!ASSERT_EQ(c->times[1].calls, 1, "by the context sync") || !ASSERT_EQ(c->times[1].size, 4 << 12, "4 ranks' data") ||
	    !ASSERT_EQ(c->times[1].by[NCCL_SYNC_CONTEXT], 1, "kind") ||
	    !ASSERT_TRUE(fabs(c->times[1].bus_factor - 0.75) < 1e-9, "(n-1)/n"))
		goto cleanup;
cleanup:
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

static void split(struct nccl_agg *a, uint32_t pid, int color, int key, bool query, int nranks, int rank)
{
	struct gp_nccl_event e = ev(pid, GP_NCCL_CommSplit, H_WORLD);

	e.color = color;
	e.key = key;
	e.newcomm = H_SPLIT;
	nccl_agg__on_call(a, &e);
	if (!query)
		return;
	e = ev(pid, GP_NCCL_CommCount, H_SPLIT);
	e.out = nranks;
	nccl_agg__on_call(a, &e);
	e = ev(pid, GP_NCCL_CommUserRank, H_SPLIT);
	e.out = rank;
	nccl_agg__on_call(a, &e);
}

/* A split's id follows its parent and color on every rank; its shape from the queries, or
 * from every rank's (color, key) when all ranks are traced. */
static void test_split_ids_and_shapes(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	const struct nccl_comm_snap *s[4];

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		return;
	for (uint32_t r = 0; r < 4; r++) {
		init(a, 40 + r, 4, (int)r, 9);
		/* keys reversed: rank order in the new communicator follows the key */
		split(a, 40 + r, (int)r % 2, 10 - (int)r, false, 0, 0);
	}
	nccl_agg__snapshot(a, 0, &d);
	for (uint32_t r = 0; r < 4; r++)
		s[r] = &proc(&d, 40 + r)->comms[1];
	if (!ASSERT_EQ(s[0]->id, s[2]->id, "color 0: one id") || !ASSERT_EQ(s[1]->id, s[3]->id, "color 1: one id") ||
	    !ASSERT_TRUE(s[0]->id != s[1]->id, "two colors, two ids") ||
	    !ASSERT_EQ(s[0]->parent_id, proc(&d, 40)->comms[0].id, "parent") ||
	    !ASSERT_EQ(s[0]->nranks, 2, "inferred nranks") || !ASSERT_EQ(s[0]->rank, 1, "key 10 after key 8") ||
	    !ASSERT_EQ(s[2]->rank, 0, "key 8 first") || !ASSERT_EQ(s[0]->shape, NCCL_SHAPE_SPLIT, "inferred") ||
	    !ASSERT_EQ(s[0]->device, proc(&d, 40)->comms[0].device, "the parent's device"))
		goto cleanup;
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
	/* three of four ranks traced: no inference; a rank that asked knows */
	a = nccl_agg__new();
	for (uint32_t r = 0; r < 3; r++) {
		init(a, 40 + r, 4, (int)r, 9);
		split(a, 40 + r, (int)r % 2, (int)r, r == 1, 2, 0);
	}
	nccl_agg__snapshot(a, 0, &d);
	if (!ASSERT_EQ(proc(&d, 40)->comms[1].nranks, -1, "unknown when a rank is missing") ||
	    !ASSERT_EQ(proc(&d, 41)->comms[1].nranks, 2, "asked") ||
	    !ASSERT_EQ(proc(&d, 41)->comms[1].shape, NCCL_SHAPE_QUERY, "from the queries"))
		goto cleanup;
cleanup:
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

static void test_shrink(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	struct gp_nccl_event e;
	int32_t excl[2] = { 0, 2 };

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		return;
	init(a, 50, 5, 3, 4);
	e = ev(50, GP_NCCL_CommShrink, H_WORLD);
	e.count = 2;
	e.newcomm = H_SPLIT;
	memcpy(e.id, excl, sizeof(excl));
	e.id_len = sizeof(excl);
	nccl_agg__on_call(a, &e);
	nccl_agg__snapshot(a, 0, &d);
	if (!ASSERT_EQ(proc(&d, 50)->comms[1].nranks, 3, "5 less 2") ||
	    !ASSERT_EQ(proc(&d, 50)->comms[1].rank, 1, "rank 3 less the 2 excluded below it") ||
	    !ASSERT_EQ(proc(&d, 50)->comms[1].shape, NCCL_SHAPE_SHRINK, "shape"))
		goto cleanup;
cleanup:
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

/* Each rank's row: its sends (measured) and the ring's share of its collectives (inferred). */
static void test_matrices(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	const struct nccl_matrix *m;

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		return;
	for (uint32_t r = 0; r < 4; r++) {
		init(a, 60 + r, 4, (int)r, 5);
		coll(a, 60 + r, GP_NCCL_AllReduce, H_WORLD, 1000, 7, -1, 0, 0);  /* 4000 B: 2*3/4 = 6000 */
		coll(a, 60 + r, GP_NCCL_Broadcast, H_WORLD, 100, 1, 2, 0, 0);    /* root 2: 1 does not send */
		coll(a, 60 + r, GP_NCCL_Send, H_WORLD, 10, 7, (int)(r + 1) % 4, 0, 0);
		coll(a, 60 + r, GP_NCCL_Recv, H_WORLD, 10, 7, (int)(r + 3) % 4, 0, 0);
	}
	nccl_agg__snapshot(a, 0, &d);
	if (!ASSERT_EQ(d.nr_matrices, 1, "one communicator"))
		goto cleanup;
	m = &d.matrices[0];
	if (!ASSERT_EQ(m->nranks, 4, "ranks") || !ASSERT_EQ(m->pid[3], 63, "rank 3's process") ||
	    !ASSERT_EQ(m->p2p[0 * 4 + 1], 40, "0 -> 1 sends") || !ASSERT_EQ(m->p2p[1 * 4 + 0], 0, "1 -> 0 none") ||
	    !ASSERT_EQ(m->ring[0 * 4 + 1], 6000 + 100, "0 -> 1: AllReduce and Broadcast") ||
	    !ASSERT_EQ(m->ring[1 * 4 + 2], 6000, "1 -> 2: the root does not get it back") ||
	    !ASSERT_EQ(m->ring[3 * 4 + 0], 6100, "3 -> 0") || !ASSERT_EQ(m->ring[0 * 4 + 2], 0, "not neighbours"))
		goto cleanup;
cleanup:
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

static void test_comm_table_bound(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		return;
	for (int i = 0; i < NCCL_MAX_COMMS + 3; i++)
		coll(a, 70, GP_NCCL_AllReduce, 0x100000 + (uint64_t)i * 16, 1, 7, -1, 0, 0);
	nccl_agg__snapshot(a, 0, &d);
	if (ASSERT_EQ(proc(&d, 70)->nr_comms, NCCL_MAX_COMMS, "kept"))
		ASSERT_EQ(d.comm_table_full, 3, "counted");
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

/* ---- hangs and stragglers ---- */

/* An AllReduce of rank pid on its world, entered at ts. */
static void ar_at(struct nccl_agg *a, uint32_t pid, uint64_t ts)
{
	struct gp_nccl_event e = ev(pid, GP_NCCL_AllReduce, H_WORLD);

	e.ts_ns = ts;
	e.count = 1024;
	e.dtype = 7;
	e.stream = 0x5;
	nccl_agg__on_call(a, &e);
}

static const struct nccl_straggle *straggle(const struct nccl_snap_data *d)
{
	return d->nr_straggles == 1 ? &d->straggles[0] : NULL;
}

/* Three ranks, rank 2 late by 5, 7 ms: matched by order, named, its lag; a collective
 * entered by two waits for the third; one that leaves the ring is evicted, the late entry
 * into it counted. */
static void test_straggler_match(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	const struct nccl_straggle *st;
	uint64_t t = 1000000000;

	for (uint32_t r = 0; r < 3; r++)
		init(a, 200 + r, 3, (int)r, 9);
	for (int i = 0; i < 2; i++) {
		ar_at(a, 200, t + 100);
		ar_at(a, 201, t);
		ar_at(a, 202, t + (i ? 7000000 : 5000000));
		t += 100000000;
	}
	ar_at(a, 200, t);
	ar_at(a, 201, t + 1000);
	nccl_agg__snapshot(a, 0, &d);
	st = straggle(&d);
	if (!ASSERT_TRUE(st != NULL, "one communicator matched"))
		goto out;
	ASSERT_EQ(st->matched, 2, "two matched");
	ASSERT_EQ(st->last_straggler, 2, "rank 2 last in");
	ASSERT_EQ(st->last_skew_ns, 7000000, "the newest skew");
	ASSERT_EQ(st->skew_max_ns, 7000000, "the largest");
	ASSERT_EQ(st->skew_sum_ns, 12000000, "their sum");
	ASSERT_EQ(st->last_to_enter[2], 2, "rank 2 last into both");
	ASSERT_EQ(st->lag_ns[2], 12000000, "its lag");
	ASSERT_EQ(st->wait_missing, 1ULL << 2, "the third waits for rank 2");
	ASSERT_EQ(st->wait_since_ns, t, "since the first entered it");
	ASSERT_EQ(st->wait_entered, 2, "two entered");
	ASSERT_EQ(proc(&d, 202)->comms[0].last_to_enter, 2, "rank 2's own figure");
	ASSERT_EQ(proc(&d, 202)->comms[0].entered, 2, "rank 2 entered two");
	nccl_snap_data__clear(&d);
	/* ranks 0 and 1 run NCCL_MATCH_RING more: collective 2 leaves the ring unfinished */
	for (int i = 0; i < NCCL_MATCH_RING; i++) {
		ar_at(a, 200, t + 10);
		ar_at(a, 201, t + 20);
	}
	ar_at(a, 202, t + 30); /* its collective 2: gone */
	nccl_agg__snapshot(a, 0, &d);
	st = straggle(&d);
	if (ASSERT_TRUE(st != NULL, "still matched")) {
		ASSERT_EQ(st->evicted, 1, "one evicted");
		ASSERT_EQ(st->late, 1, "rank 2's entry after: late");
	}
out:
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

/* An AllReduce of rank pid on communicator comm, entered at ts. */
static void ar_on(struct nccl_agg *a, uint32_t pid, uint64_t comm, uint64_t ts)
{
	struct gp_nccl_event e = ev(pid, GP_NCCL_AllReduce, comm);

	e.ts_ns = ts;
	e.count = 1024;
	e.dtype = 7;
	e.stream = 0x5;
	nccl_agg__on_call(a, &e);
}

static const struct nccl_straggle *straggle_of(const struct nccl_snap_data *d, uint64_t id)
{
	for (size_t i = 0; i < d->nr_straggles; i++)
		if (d->straggles[i].id == id)
			return &d->straggles[i];
	return NULL;
}

/*
 * A split nobody asks its shape (PyTorch's new_group): its shape from every rank's split as
 * the last one comes, its collectives matched from then, with those a rank entered before
 * the other's split record came (its record can come after the first rank's collectives);
 * a rank claimed twice is refused and counted; one process opens at most NCCL_MATCH_SHARE
 * splits waiting for ranks.
 */
static void test_split_matched_live(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	const struct nccl_straggle *st;
	uint64_t t = 2000000000, id;

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		return;
	init(a, 300, 2, 0, 11);
	init(a, 301, 2, 1, 11);
	split(a, 300, 0, 1, false, 0, 0); /* key 1: rank 1 of the split */
	ar_on(a, 300, H_SPLIT, t);
	ar_on(a, 300, H_SPLIT, t + 100000000);
	nccl_agg__snapshot(a, 0, &d);
	id = proc(&d, 300)->comms[1].id;
	if (!ASSERT_EQ(proc(&d, 300)->comms[1].nranks, -1, "one rank's split: shape not known") ||
	    !ASSERT_TRUE(straggle_of(&d, id) == NULL, "not matched yet") ||
	    !ASSERT_EQ(d.match_no_shape, 1, "counted as of unknown shape"))
		goto out;
	nccl_snap_data__clear(&d);
	split(a, 301, 0, 0, false, 0, 0); /* key 0: rank 0 */
	ar_on(a, 301, H_SPLIT, t + 5000000);
	ar_on(a, 301, H_SPLIT, t + 107000000);
	nccl_agg__snapshot(a, 0, &d);
	st = straggle_of(&d, id);
	if (!ASSERT_TRUE(st != NULL, "the split matched") || !ASSERT_EQ(proc(&d, 300)->comms[1].rank, 1, "key 1: rank 1") ||
	    !ASSERT_EQ(proc(&d, 301)->comms[1].rank, 0, "key 0: rank 0") ||
	    !ASSERT_EQ(proc(&d, 301)->comms[1].nranks, 2, "2 ranks") ||
	    !ASSERT_EQ(proc(&d, 301)->comms[1].shape, NCCL_SHAPE_SPLIT, "from the splits") ||
	    !ASSERT_EQ(d.match_no_shape, 0, "none of unknown shape"))
		goto out;
	ASSERT_EQ(st->matched, 2, "both collectives, the first rank's early entries too");
	ASSERT_EQ(st->evicted + st->late + st->duplicate, 0, "none unmatched");
	ASSERT_EQ(st->last_straggler, 0, "split rank 0 (PID 301) last in");
	ASSERT_EQ(st->last_to_enter[0], 2, "last into both");
	ASSERT_EQ(st->lag_ns[0], 12000000, "its lag: 5 + 7 ms");
	ASSERT_EQ(st->pid[0], 301, "its process");
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);

	/* a third process claims rank 0 of the same world's next split: refused, counted */
	a = nccl_agg__new();
	init(a, 310, 2, 0, 12);
	init(a, 312, 2, 0, 12);
	split(a, 310, 0, 0, false, 0, 0);
	split(a, 312, 0, 0, false, 0, 0);
	nccl_agg__snapshot(a, 0, &d);
	ASSERT_EQ(d.match_mismatch, 1, "rank 0 claimed twice: refused");
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);

	/* one process's splits that no other rank makes: NCCL_MATCH_SHARE held, the rest counted */
	a = nccl_agg__new();
	init(a, 320, 2, 0, 13);
	for (int i = 0; i < NCCL_MATCH_SHARE + 3; i++) {
		struct gp_nccl_event e = ev(320, GP_NCCL_CommSplit, H_WORLD);

		e.color = 0;
		e.key = 0;
		e.newcomm = H_SPLIT + 1 + (uint64_t)i;
		nccl_agg__on_call(a, &e);
	}
	nccl_agg__snapshot(a, 0, &d);
	ASSERT_EQ(d.match_share, 3, "past the process's share: counted");
	ASSERT_EQ(d.match_no_shape, NCCL_MATCH_SHARE + 3, "every split of unknown shape counted");
out:
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

/* In flight: issued, completed by a sync; the quiet time from the later of the last
 * completion and the call that found none in flight. */
static void test_inflight(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	const struct nccl_comm_snap *c;

	init(a, 210, 2, 0, 3);
	ar_at(a, 210, 5000);
	ar_at(a, 210, 6000);
	nccl_agg__snapshot(a, 0, &d);
	c = &proc(&d, 210)->comms[0];
	ASSERT_EQ(c->issued - c->completed, 2, "two in flight");
	ASSERT_EQ(nccl_comm_quiet_since(c), 5000, "quiet since the first of the spell");
	nccl_snap_data__clear(&d);
	sync_stream(a, 210, 0x5, 9000);
	ar_at(a, 210, 20000); /* idle 11 us in its own code, then a new spell */
	nccl_agg__snapshot(a, 0, &d);
	c = &proc(&d, 210)->comms[0];
	ASSERT_EQ(c->completed, 2, "the sync completed both");
	ASSERT_EQ(c->last_done_ns, 9000, "at the sync");
	ASSERT_EQ(nccl_comm_quiet_since(c), 20000, "the new spell's call, not the idle time");
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

static void init_all(struct nccl_agg *a, uint32_t pid, int ndev, uint64_t base)
{
	struct gp_nccl_event e = ev(pid, GP_NCCL_CommInitAll, 0);

	e.nranks = ndev;
	e.newcomm = base;
	for (int i = 0; i < ndev && i < GP_NCCL_INIT_ALL_MAX; i++) {
		uint64_t h = base + (uint64_t)i * 16;

		memcpy(e.id + 8 * i, &h, 8);
	}
	e.id_len = 8 * (uint32_t)(ndev < GP_NCCL_INIT_ALL_MAX ? ndev : GP_NCCL_INIT_ALL_MAX);
	nccl_agg__on_call(a, &e);
}

/* ncclCommInitAll: ranks in one process, matched; a process past its share of match
 * tables is counted, a later process still gets one. */
static void test_init_all_and_share(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };
	const struct nccl_proc_snap *p;

	init_all(a, 220, 3, 0x7000);
	for (int r = 0; r < 3; r++) {
		struct gp_nccl_event e = ev(220, GP_NCCL_AllReduce, 0x7000 + (uint64_t)r * 16);

		e.count = 8;
		e.dtype = 7;
		e.ts_ns = 1000 + (uint64_t)r * 500;
		nccl_agg__on_call(a, &e);
	}
	for (int i = 0; i < NCCL_MATCH_SHARE + 4; i++)
		init_all(a, 221, 2, 0x100000 + (uint64_t)i * 0x1000);
	init_all(a, 222, 2, 0x9000);
	nccl_agg__snapshot(a, 0, &d);
	p = proc(&d, 220);
	if (ASSERT_EQ(p->nr_comms, 3, "three communicators followed")) {
		ASSERT_EQ(p->comms[2].rank, 2, "comms[i] is rank i");
		ASSERT_EQ(p->comms[0].id, p->comms[2].id, "one comm_id");
		ASSERT_EQ(p->other, 0, "none unfollowed");
	}
	ASSERT_EQ(d.nr_straggles, 1 + NCCL_MATCH_SHARE + 1, "each process's within its share");
	ASSERT_EQ(d.match_share, 4 * 2, "the rest counted, per rank");
	for (size_t i = 0; i < d.nr_straggles; i++)
		if (d.straggles[i].pid[0] == 220) {
			ASSERT_EQ(d.straggles[i].matched, 1, "matched in one process");
			ASSERT_EQ(d.straggles[i].last_straggler, 2, "rank 2 last");
			ASSERT_EQ(d.straggles[i].last_skew_ns, 1000, "its skew");
		}
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

/* Two processes claiming one rank: the second entry is a duplicate. */
static void test_duplicate_rank(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap_data d = { 0 };

	init(a, 230, 2, 0, 4);
	init(a, 231, 2, 0, 4);
	ar_at(a, 230, 100);
	ar_at(a, 231, 200);
	nccl_agg__snapshot(a, 0, &d);
	if (ASSERT_TRUE(straggle(&d) != NULL, "matched"))
		ASSERT_EQ(straggle(&d)->duplicate, 1, "counted");
	nccl_snap_data__clear(&d);
	nccl_agg__free(a);
}

static json_object *path(json_object *o, const char *const *keys)
{
	for (; o && *keys; keys++) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(*keys));
		else
			o = json_object_object_get(o, *keys);
	}
	return o;
}

/* The schema: processes[].comms[] with comm_id, nranks, rank, device, collectives
 * (op, dtype, calls, bytes) and p2p (peer, direction, calls, bytes). */
static void test_json_schema(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap s = { 0 };
	json_object *o = json_object_new_object();

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		goto cleanup;
	ctx(a, 80, 3);
	init(a, 80, 2, 1, 2);
	coll(a, 80, GP_NCCL_AllGather, H_WORLD, 8192, 6, -1, 0, 0);
	coll(a, 80, GP_NCCL_Send, H_WORLD, 4096, 7, 0, 0, 0);
	nccl_agg__snapshot(a, 0, &s.d);
	s.hdr = (struct gp_snap){ .mode = "nccl", .kind = GP_SNAP_FINAL };
	nccl_report__json(o, &s.hdr);
	if (!ASSERT_STR_EQ(json_object_get_string(path(o, (const char *[]){ "processes", "0", "comms", "0", "collectives", "0", "op", NULL })),
			   "AllGather", "op") ||
	    !ASSERT_STR_EQ(json_object_get_string(path(o, (const char *[]){ "processes", "0", "comms", "0", "collectives", "0", "dtype", NULL })),
			   "float16", "dtype") ||
	    !ASSERT_EQ(json_object_get_int64(path(o, (const char *[]){ "processes", "0", "comms", "0", "collectives", "0", "bytes", NULL })),
		       16384, "bytes") ||
	    !ASSERT_EQ(json_object_get_int(path(o, (const char *[]){ "processes", "0", "comms", "0", "device", NULL })), 3, "device") ||
	    !ASSERT_EQ(json_object_get_int(path(o, (const char *[]){ "processes", "0", "comms", "0", "rank", NULL })), 1, "rank") ||
	    !ASSERT_STR_EQ(json_object_get_string(path(o, (const char *[]){ "processes", "0", "comms", "0", "p2p", "0", "direction", NULL })),
			   "send", "direction") ||
	    !ASSERT_EQ(strlen(json_object_get_string(path(o, (const char *[]){ "processes", "0", "comms", "0", "comm_id", NULL }))),
		       18, "comm_id 0x + 16 hex digits"))
		goto cleanup;
cleanup:
	json_object_put(o);
	nccl_snap_data__clear(&s.d);
	nccl_agg__free(a);
}

/*
 * A bus bandwidth bound above the link's limit is never shown as a measurement (as
 * --bandwidth-util's copies): 1 MiB AllReduce on 4 ranks completed 2 us after its
 * submission is 786 GB/s of bus bandwidth, over a 450 GB/s NVLink: null, under "suspect"
 * with the limit, "suspect" in the text; an AllGather within the limit stays.
 */
static void test_link_limit(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap s = { 0 };
	json_object *o = json_object_new_object(), *ar = NULL, *ag = NULL, *ts;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	uint64_t t0;
	double want = 1.5 * (1 << 20) / 2e-6;

	if (!ASSERT_TRUE(a != NULL, "aggregator"))
		goto cleanup;
	init(a, 90, 4, 0, 9);
	t0 = now;
	coll(a, 90, GP_NCCL_AllReduce, H_WORLD, 1 << 18, 7, -1, 0x5, 0); /* 1 MiB */
	sync_stream(a, 90, 0x5, t0 + 2000);
	coll(a, 90, GP_NCCL_AllGather, H_WORLD, 1 << 10, 7, -1, 0x6, 0); /* 16 KiB in all */
	sync_stream(a, 90, 0x6, now + 1000000);
	nccl_agg__snapshot(a, 0, &s.d);
	s.links.peer = (struct bw_link){ .name = "NVLink4 x18 (test)", .bytes_per_s = 450e9, .read_here = true };
	s.links.local = (struct bw_link){ .name = "4.8 TB/s memory (test)", .bytes_per_s = 4.8e12, .read_here = true };
	s.hdr = (struct gp_snap){ .mode = "nccl", .kind = GP_SNAP_FINAL };
	nccl_report__json(o, &s.hdr);
	ts = path(o, (const char *[]){ "processes", "0", "comms", "0", "completion", NULL });
	for (size_t i = 0; ts && i < json_object_array_length(ts); i++) {
		json_object *x = json_object_array_get_idx(ts, i);
		const char *op = json_object_get_string(json_object_object_get(x, "op"));

		if (!strcmp(op, "AllReduce"))
			ar = x;
		else if (!strcmp(op, "AllGather"))
			ag = x;
	}
	if (!ASSERT_TRUE(ar && ag, "both rows") ||
	    !ASSERT_TRUE(json_object_object_get(ar, "busbw_bytes_per_second_lower_bound") == NULL, "busbw: null") ||
	    !ASSERT_TRUE(json_object_object_get(ar, "algbw_bytes_per_second_lower_bound") == NULL, "algbw with it") ||
	    !ASSERT_TRUE(fabs(json_object_get_double(path(ar, (const char *[]){ "suspect", "busbw_bytes_per_second_lower_bound", NULL })) -
			      want) < want * 1e-9, "the figure under suspect") ||
	    !ASSERT_TRUE(fabs(json_object_get_double(path(ar, (const char *[]){ "suspect", "stream", NULL })) - want) < want * 1e-9,
			 "the stream sync's too") ||
	    !ASSERT_TRUE(path(ar, (const char *[]){ "by_signal", "stream", "busbw_bytes_per_second_lower_bound", NULL }) == NULL,
			 "and null there") ||
	    !ASSERT_TRUE(json_object_get_double(path(ar, (const char *[]){ "suspect", "limit_bytes_per_second", NULL })) == 450e9,
			 "with the limit") ||
	    !ASSERT_STR_EQ(json_object_get_string(path(ar, (const char *[]){ "suspect", "link", NULL })), "NVLink4 x18 (test)",
			   "and the link") ||
	    !ASSERT_TRUE(json_object_object_get(ag, "suspect") == NULL, "the AllGather within the limit") ||
	    !ASSERT_TRUE(json_object_get_double(json_object_object_get(ag, "busbw_bytes_per_second_lower_bound")) > 0,
			 "its busbw shown"))
		goto cleanup;
	f = open_memstream(&text, &len);
	if (!ASSERT_TRUE(f != NULL, "memstream"))
		goto cleanup;
	nccl_report__text(f, &s.hdr);
	fclose(f);
	if (!ASSERT_TRUE(strstr(text, "suspect") != NULL, "the text says suspect"))
		goto cleanup;
	/* and which figures, over which limit and link: JSON's "suspect" in words */
	if (!ASSERT_STR_CONTAINS(text, "suspect, above the limit of NVLink4 x18 (test) (450 GB/s): busbw 786 GB/s, stream 786 GB/s\n",
				 "the suspect line") ||
	    !ASSERT_STR_CONTAINS(text, "Link limits of bus bandwidth", "the limits line"))
		goto cleanup;
	/* a limit not known holds nothing back: the figure shown */
	s.links.peer = (struct bw_link){ .name = "unknown: GPU 0x9999 not in the parts table" };
	free(text);
	text = NULL;
	f = open_memstream(&text, &len);
	if (!ASSERT_TRUE(f != NULL, "memstream"))
		goto cleanup;
	nccl_report__text(f, &s.hdr);
	fclose(f);
	ASSERT_TRUE(strstr(text, "suspect,") == NULL && strstr(text, "524 GB/s     786 GB/s") != NULL &&
			    strstr(text, "GPU-GPU unknown: GPU 0x9999 not in the parts table;") != NULL,
		    "an unknown limit: the figure shown, the limit said unknown");
cleanup:
	free(text);
	json_object_put(o);
	nccl_snap_data__clear(&s.d);
	nccl_agg__free(a);
}

/* Communicators past the series cap are summed as comm_id="other". */
static void test_prom_bounded(void)
{
	struct nccl_agg *a = nccl_agg__new();
	struct nccl_snap s = { 0 };
	struct prom_out *p = prom_out__new(NULL, NULL, NULL, 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!ASSERT_TRUE(a && p && f, "set up"))
		goto cleanup;
	for (int i = 0; i < 5; i++)
		coll(a, 90, GP_NCCL_AllReduce, 0x100000 + (uint64_t)i * 16, 1, 7, -1, 0, 0);
	nccl_agg__snapshot(a, 0, &s.d);
	s.hdr = (struct gp_snap){ .mode = "nccl", .kind = GP_SNAP_SCRAPE };
	s.max_comm_series = 2;
	nccl_report__prom(p, &s.hdr);
	prom_out__fold(p);
	prom_out__write(p, f);
	fclose(f);
	f = NULL;
	if (!ASSERT_STR_CONTAINS(buf, "comm_id=\"other\",rank=\"\",op=\"AllReduce\",call=\"ncclAllReduce\",dtype=\"float32\"} 3\n",
				 "three summed") ||
	    !ASSERT_STR_CONTAINS(buf, "comm_id=\"handle:0x100000\"", "an unknown id is named by its handle"))
		goto cleanup;
cleanup:
	if (f)
		fclose(f);
	free(buf);
	prom_out__free(p);
	nccl_snap_data__clear(&s.d);
	nccl_agg__free(a);
}

/* Every kernel of NCCL 2.28.9 (the stand-in's list), in each form a tracer sees it. */
static void test_kernel_names(void)
{
	struct nccl_kernel k;
	char buf[256];

	if (!ASSERT_EQ(nccl_kernel__decode("ncclDevKernel_AllReduce_Sum_f32_RING_LL", &k), 0, "bare") ||
	    !ASSERT_STR_EQ(k.op, "AllReduce", "op") || !ASSERT_STR_EQ(k.dtypes, "float32", "dtype") ||
	    !ASSERT_STR_EQ(k.algo, "RING", "algorithm") || !ASSERT_STR_EQ(k.proto, "LL", "protocol") ||
	    !ASSERT_STR_EQ(k.redop, "Sum", "redop"))
		return;
	if (!ASSERT_EQ(nccl_kernel__decode("_Z39ncclDevKernel_AllReduce_Sum_u32_TREE_LL24ncclDevKernelArgsStorageILm4096EE", &k), 0,
		       "mangled") ||
	    !ASSERT_STR_EQ(k.dtypes, "int32 or uint32", "a signed type runs in the unsigned kernel") ||
	    !ASSERT_STR_EQ(k.algo, "TREE", "TREE"))
		return;
	if (!ASSERT_EQ(nccl_kernel__decode("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", &k), 0,
		       "demangled") ||
	    !ASSERT_STR_EQ(k.op, "Broadcast", "op") || !ASSERT_STR_EQ(k.dtypes, "", "no type in the name"))
		return;
	if (!ASSERT_EQ(nccl_kernel__decode("ncclDevKernel_SendRecv", &k), 0, "SendRecv") ||
	    !ASSERT_EQ(nccl_kernel__decode("ncclDevKernel_ReduceScatter_Sum_f8e5m2_RING_LL", &k), 0, "fp8") ||
	    !ASSERT_STR_EQ(k.dtypes, "float8e5m2", "fp8 type") ||
	    !ASSERT_EQ(nccl_kernel__decode("ncclDevKernel_AllReduce_Sum_bf16_COLLNET_DIRECT_SIMPLE", &k), 0, "two-word algo") ||
	    !ASSERT_STR_EQ(k.algo, "COLLNET_DIRECT", "COLLNET_DIRECT") || !ASSERT_STR_EQ(k.proto, "SIMPLE", "SIMPLE") ||
	    !ASSERT_EQ(nccl_kernel__decode("ncclKernel_AllReduce_RING_LL128_Sum_uint8_t", &k), 0, "NCCL 2.12-2.18") ||
	    !ASSERT_STR_EQ(k.dtypes, "uint8", "uint8_t") || !ASSERT_STR_EQ(k.proto, "LL128", "LL128") ||
	    !ASSERT_TRUE(k.legacy, "legacy form"))
		return;
	if (!ASSERT_EQ(nccl_kernel__decode("gemm_kernel", &k), -EINVAL, "not NCCL's") ||
	    !ASSERT_EQ(nccl_kernel__decode("_Z99ncclDevKernel_Generic", &k), -EINVAL, "length past the end") ||
	    !ASSERT_EQ(nccl_kernel__decode("ncclDevKernel_AllReduce_Sum_f99_RING_LL", &k), -EINVAL, "unknown type") ||
	    !ASSERT_EQ(nccl_kernel__decode("ncclDevKernel_AllReduce_Sum_f32_RING", &k), -EINVAL, "no protocol") ||
	    !ASSERT_EQ(nccl_kernel__decode(NULL, &k), -EINVAL, "NULL"))
		return;
	nccl_kernel__describe("ncclDevKernel_AllReduce_Sum_f32_RING_LL", buf, sizeof(buf));
	if (!ASSERT_STR_CONTAINS(buf, "AllReduce, float32, RING, LL kernel", "described") ||
	    !ASSERT_STR_CONTAINS(buf, "reduction", "says the reduction is not in the name") ||
	    !ASSERT_STR_CONTAINS(buf, "LL128 and SIMPLE", "nor the protocol"))
		return;
	nccl_kernel__describe("k", buf, sizeof(buf));
	ASSERT_STR_EQ(buf, "", "not NCCL's: nothing");
}

/* Each of the stand-in's 40 kernels decodes (the list of tests/fakenccl/fakenccl.c). */
static void test_all_standin_kernels(void)
{
	static const char *const ops[] = { "AllReduce", "Reduce", "ReduceScatter" };
	static const char *const ty[] = { "u8", "u32", "u64", "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2" };
	struct nccl_kernel k;
	char name[96], mangled[192];
	int ok = 0;

	for (size_t o = 0; o < 3; o++)
		for (size_t t = 0; t < 9; t++)
			for (int algo = 0; algo < (o == 0 ? 2 : 1); algo++) {
				snprintf(name, sizeof(name), "ncclDevKernel_%s_Sum_%s_%s_LL", ops[o], ty[t],
					 algo ? "TREE" : "RING");
				snprintf(mangled, sizeof(mangled), "_Z%zu%s24ncclDevKernelArgsStorageILm4096EE", strlen(name),
					 name);
				ok += !nccl_kernel__decode(mangled, &k) && !strcmp(k.op, ops[o]) && k.dtypes[0];
			}
	ok += !nccl_kernel__decode("ncclDevKernel_AllGather_RING_LL", &k);
	ok += !nccl_kernel__decode("ncclDevKernel_Broadcast_RING_LL", &k);
	ok += !nccl_kernel__decode("ncclDevKernel_Generic", &k);
	ok += !nccl_kernel__decode("ncclDevKernel_SendRecv", &k);
	ASSERT_EQ(ok, 40, "the 40 kernels of NCCL 2.28.9");
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_ranks_share_a_comm_id);
	RUN_TEST(test_bad_nested_and_groups);
	RUN_TEST(test_completion);
	RUN_TEST(test_split_ids_and_shapes);
	RUN_TEST(test_shrink);
	RUN_TEST(test_matrices);
	RUN_TEST(test_comm_table_bound);
	RUN_TEST(test_straggler_match);
	RUN_TEST(test_split_matched_live);
	RUN_TEST(test_inflight);
	RUN_TEST(test_init_all_and_share);
	RUN_TEST(test_duplicate_rank);
	RUN_TEST(test_json_schema);
	RUN_TEST(test_link_limit);
	RUN_TEST(test_prom_bounded);
	RUN_TEST(test_kernel_names);
	RUN_TEST(test_all_standin_kernels);
	return unit_done();
}
