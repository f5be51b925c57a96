// SPDX-License-Identifier: BSD-3-Clause
/*
 * --gpu-time's aggregator (src/modes/gputime/gputime.c): datagrams in the wire format of
 * src/inject/gputime_wire.h, built here record by record; the expected figures are
 * computed from the records fed (their sums), and every hostile datagram is counted by
 * its reason and changes nothing else.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "modes/gputime/gputime.h"
#include "inject/gputime_wire.h"
#include "unit.h"

struct dg {
	unsigned char b[GPT_DGRAM_MAX * 2];
	size_t len;
	uint16_t nrec;
};

static void dg_start(struct dg *d)
{
	struct gpt_dgram h = { GPT_MAGIC, GPT_VERSION, 0 };

	memcpy(d->b, &h, sizeof(h));
	d->len = sizeof(h);
	d->nrec = 0;
}

static void dg_add(struct dg *d, const void *rec, size_t size)
{
	memcpy(d->b + d->len, rec, size);
	d->len += size;
	d->nrec++;
	memcpy(d->b + 6, &d->nrec, 2);
}

static void add_name(struct dg *d, uint32_t id, const char *s)
{
	unsigned char buf[sizeof(struct gpt_name) + GPT_NAME_MAX + 8];
	struct gpt_name n = { .h = { GPT_NAME, (uint16_t)(sizeof(n) + strlen(s)), 0 }, .id = id,
			      .len = (uint32_t)strlen(s) };

	memcpy(buf, &n, sizeof(n));
	memcpy(buf + sizeof(n), s, strlen(s));
	dg_add(d, buf, sizeof(n) + strlen(s));
}

static void add_kernel(struct dg *d, uint32_t id, uint64_t start, uint64_t dur, uint32_t gx, uint32_t bx)
{
	struct gpt_kernel k = { .h = { GPT_KERNEL, sizeof(k), 0 }, .start = start, .end = start + dur, .name_id = id,
				.grid = { gx, 1, 1 }, .block = { bx, 1, 1 } };

	dg_add(d, &k, sizeof(k));
}

static struct gt_agg *agg(uint32_t procs, uint32_t rows)
{
	struct gt_limits l = { .max_procs = procs, .max_rows = rows, .max_names = rows };

	return gt_agg__new(&l);
}

static void test_kernels_by_name_and_shape(void)
{
	struct gt_agg *a = agg(16, 64);
	struct gt_snap_data s = { 0 };
	struct dg d;
	uint64_t want_mm = 0, want_add = 0, t = 1000;

	dg_start(&d);
	add_name(&d, 1, "_Z6matmulPf");
	add_name(&d, 2, "_Z3addPf");
	for (int i = 0; i < 10; i++) {
		add_kernel(&d, 1, t, 1000 + (uint64_t)i * 10, 8, 128);
		want_mm += 1000 + (uint64_t)i * 10;
		t += 5000;
	}
	for (int i = 0; i < 4; i++) {
		add_kernel(&d, 2, t, 300, 1, 32);
		add_kernel(&d, 2, t, 700, 2, 32); /* another shape: its own row */
		want_add += 300;
	}
	add_kernel(&d, 9, t, 50, 1, 1); /* a name id never sent */
	gt_agg__feed(a, 42, d.b, d.len);
	ASSERT_EQ(gt_agg__snapshot(a, 0, &s), 0, "snapshot");
	ASSERT_EQ(s.nr_procs, 1, "one process");
	ASSERT_EQ(s.nr_kernels, 4, "rows: name x shape");
	ASSERT_STR_EQ(s.kernels[0].name, "_Z6matmulPf", "most GPU time first");
	ASSERT_EQ(s.kernels[0].count, 10, "matmul launches");
	ASSERT_EQ(s.kernels[0].total_ns, want_mm, "matmul GPU time: the sum of the records'");
	ASSERT_EQ(s.kernels[0].min_ns, 1000, "min");
	ASSERT_EQ(s.kernels[0].max_ns, 1090, "max");
	ASSERT_EQ(s.kernels[0].grid[0], 8, "grid");
	ASSERT_EQ(s.kernels[0].block[0], 128, "block");
	for (size_t i = 0; i < s.nr_kernels; i++)
		if (s.kernels[i].name && !strcmp(s.kernels[i].name, "_Z3addPf") && s.kernels[i].grid[0] == 1)
			ASSERT_EQ(s.kernels[i].total_ns, want_add, "add, grid 1");
	ASSERT_EQ(s.procs[0].unnamed_kernels, 1, "the kernel whose name never came is counted");
	ASSERT_EQ(s.procs[0].kernels, 19, "kernels in all");
	gt_snap_data__clear(&s);
	gt_agg__free(a);
}

static void test_copies_bandwidth_and_pairs(void)
{
	struct gt_agg *a = agg(16, 64);
	struct gt_snap_data s = { 0 };
	struct dg d;
	struct gpt_copy c = { .h = { GPT_COPY, sizeof(c), 0 }, .kind = GPT_COPY_HTOD, .src_dev = GPT_NO_DEVICE,
			      .dst_dev = GPT_NO_DEVICE };
	struct gpt_memset m = { .h = { GPT_MEMSET, sizeof(m), 0 }, .start = 10, .end = 110, .bytes = 4096, .device = 1 };

	dg_start(&d);
	for (int i = 0; i < 3; i++) {
		c.start = 100;
		c.end = 100 + 1000 * (uint64_t)(i + 1);
		c.bytes = 10000;
		dg_add(&d, &c, sizeof(c));
	}
	c.kind = GPT_COPY_PTOP;
	c.src_dev = 0;
	c.dst_dev = 3;
	c.start = 0;
	c.end = 100;
	c.bytes = 40000;
	dg_add(&d, &c, sizeof(c));
	dg_add(&d, &m, sizeof(m));
	gt_agg__feed(a, 7, d.b, d.len);
	ASSERT_EQ(gt_agg__snapshot(a, 7, &s), 0, "snapshot");
	ASSERT_EQ(s.nr_copies, 2, "H2D and P2P 0->3");
	ASSERT_EQ(s.copies[0].kind, GPT_COPY_HTOD, "sorted by kind");
	ASSERT_EQ(s.copies[0].bytes, 30000, "H2D bytes");
	ASSERT_EQ(s.copies[0].total_ns, 6000, "H2D GPU time");
	ASSERT_TRUE(s.copies[0].peak_gbps == 10.0, "the fastest copy: 10000 B in 1000 ns");
	ASSERT_EQ(s.copies[1].src_dev, 0, "pair source");
	ASSERT_EQ(s.copies[1].dst_dev, 3, "pair destination");
	ASSERT_EQ(s.nr_memsets, 1, "a memset row");
	ASSERT_EQ(s.memsets[0].total_ns, 100, "memset time");
	gt_snap_data__clear(&s);
	gt_agg__free(a);
}

static void test_nccl_busbw_as_nccl_tests(void)
{
	struct gt_agg *a = agg(16, 64);
	struct gt_snap_data s = { 0 };
	struct dg d;
	struct gpt_coll c = { .h = { GPT_COLL, sizeof(c), 0 }, .comm_hash = 0xabc, .count = 262144, .fn = GPT_COLL_ALLREDUCE,
			      .type_size = 4, .nranks = 4, .rank = 1, .gpu_timed = 1, .channels = 2 };
	double size = 262144.0 * 4, want;

	dg_start(&d);
	c.start = 0;
	c.end = 100000;
	dg_add(&d, &c, sizeof(c));
	c.start = 200000;
	c.end = 250000;
	dg_add(&d, &c, sizeof(c));
	c.fn = GPT_COLL_ALLGATHER;
	c.count = 1000;
	c.start = 0;
	c.end = 1000;
	dg_add(&d, &c, sizeof(c));
	gt_agg__feed(a, 9, d.b, d.len);
	ASSERT_EQ(gt_agg__snapshot(a, 0, &s), 0, "snapshot");
	ASSERT_EQ(s.nr_colls, 2, "two rows");
	ASSERT_EQ(s.colls[0].fn, GPT_COLL_ALLREDUCE, "AllReduce first");
	ASSERT_EQ(s.colls[0].calls, 2, "calls");
	ASSERT_EQ(s.colls[0].size, (uint64_t)size, "size: count x element");
	want = size * 2 / 150000.0 * 2.0 * 3 / 4;
	ASSERT_TRUE(s.colls[0].busbw_gbps > want * 0.999999 && s.colls[0].busbw_gbps < want * 1.000001,
		    "busbw = algbw x 2(n-1)/n");
	want = size / 50000.0 * 1.5;
	ASSERT_TRUE(s.colls[0].best_busbw_gbps > want * 0.999999 && s.colls[0].best_busbw_gbps < want * 1.000001,
		    "best busbw from the fastest call");
	ASSERT_EQ(s.colls[1].size, 1000 * 4 * 4, "AllGather's size: all ranks' data");
	ASSERT_TRUE(s.colls[1].busbw_gbps > 16.0 * 0.75 * 0.999999 && s.colls[1].busbw_gbps < 16.0 * 0.75 * 1.000001,
		    "AllGather busbw = algbw x (n-1)/n");
	ASSERT_EQ(s.colls[0].gpu_calls, 2, "GPU-timed calls");
	gt_snap_data__clear(&s);
	gt_agg__free(a);
}

static void test_hostile_datagrams_counted(void)
{
	struct gt_agg *a = agg(2, 4);
	struct gt_snap_data s = { 0 };
	struct dg d;
	struct gpt_kernel k = { .h = { GPT_KERNEL, sizeof(k), 0 }, .start = 10, .end = 20 };
	struct gpt_rec bad = { GPT_KERNEL, 12, 0 };
	uint32_t magic = 0x12345678;

	/* wrong magic */
	dg_start(&d);
	dg_add(&d, &k, sizeof(k));
	memcpy(d.b, &magic, 4);
	gt_agg__feed(a, 1, d.b, d.len);
	/* a record of the wrong size, then more records said than there are */
	dg_start(&d);
	dg_add(&d, &bad, sizeof(bad));
	gt_agg__feed(a, 1, d.b, d.len);
	dg_start(&d);
	dg_add(&d, &k, sizeof(k));
	d.nrec = 5;
	memcpy(d.b + 6, &d.nrec, 2);
	gt_agg__feed(a, 1, d.b, d.len);
	/* a record longer than the datagram */
	dg_start(&d);
	k.h.size = 60000;
	dg_add(&d, &k, sizeof(k));
	gt_agg__feed(a, 1, d.b, d.len);
	k.h.size = sizeof(k);
	/* oversized, and one that ends before it starts */
	gt_agg__feed(a, 1, d.b, GPT_DGRAM_MAX + 1);
	dg_start(&d);
	k.start = 100;
	k.end = 50;
	dg_add(&d, &k, sizeof(k));
	gt_agg__feed(a, 1, d.b, d.len);
	/* a name longer than allowed; a name id out of bounds */
	dg_start(&d);
	{
		char longname[GPT_NAME_MAX + 2];

		memset(longname, 'x', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		add_name(&d, 1, longname);
		add_name(&d, 1000000, "far");
	}
	gt_agg__feed(a, 1, d.b, d.len);
	/* rows past the cap (4), and a third process past the table's (2) */
	dg_start(&d);
	k.start = 0;
	k.end = 10;
	for (uint32_t i = 0; i < 6; i++) {
		k.grid[0] = i;
		dg_add(&d, &k, sizeof(k));
	}
	gt_agg__feed(a, 2, d.b, d.len);
	gt_agg__feed(a, 3, d.b, d.len);
	ASSERT_EQ(gt_agg__snapshot(a, 0, &s), 0, "snapshot");
	ASSERT_EQ(s.drops[GT_D_MALFORMED], 5, "wrong magic, wrong size, fewer records than said, too long, a long name");
	ASSERT_EQ(s.drops[GT_D_OVERSIZED], 1, "oversized");
	ASSERT_EQ(s.drops[GT_D_BAD_TIME], 1, "ends before it starts");
	ASSERT_EQ(s.drops[GT_D_ROWS], 3, "2 rows past the cap, 1 name id out of bounds");
	ASSERT_EQ(s.drops[GT_D_PROCS], 1, "a process past the table");
	ASSERT_EQ(s.nr_kernels, 5, "the valid record before the short datagram's end, and the 4 rows under the cap");
	ASSERT_EQ(s.nr_procs, 2, "two processes");
	gt_snap_data__clear(&s);
	gt_agg__free(a);
}

static void test_flood_share_and_reap(void)
{
	struct gt_agg *a = agg(16, 64);
	struct gt_snap_data s = { 0 };
	struct dg d;
	int admitted = 0;

	dg_start(&d);
	add_kernel(&d, 1, 0, 10, 1, 1);
	gt_agg__feed(a, 5, d.b, d.len);
	gt_agg__new_read(a);
	for (int i = 0; i < 100; i++)
		admitted += gt_agg__admit(a, 5, 10);
	ASSERT_EQ(admitted, 10, "a process's share of one read");
	ASSERT_TRUE(gt_agg__admit(a, 6, 10), "another process is not held by its flood");
	gt_agg__new_read(a);
	ASSERT_TRUE(gt_agg__admit(a, 5, 10), "a new read, a new share");
	gt_agg__exit(a, 5, 1000);
	gt_agg__reap(a, 500, 0);
	ASSERT_EQ(gt_agg__snapshot(a, 0, &s), 0, "snapshot");
	ASSERT_EQ(s.drops[GT_D_FLOOD], 90, "the flood counted");
	ASSERT_EQ(s.nr_procs, 1, "exited after the cutoff: kept");
	gt_agg__reap(a, UINT64_MAX, 0);
	ASSERT_EQ(gt_agg__snapshot(a, 0, &s), 0, "snapshot");
	ASSERT_EQ(s.nr_procs, 0, "reaped");
	gt_snap_data__clear(&s);
	gt_agg__free(a);
}

static void test_busbw_factors(void)
{
	ASSERT_TRUE(gt_busbw_factor(GPT_COLL_ALLREDUCE, 8) == 2.0 * 7 / 8, "AllReduce 2(n-1)/n");
	ASSERT_TRUE(gt_busbw_factor(GPT_COLL_REDUCESCATTER, 8) == 7.0 / 8, "ReduceScatter (n-1)/n");
	ASSERT_TRUE(gt_busbw_factor(GPT_COLL_ALLTOALL, 8) == 7.0 / 8, "AlltoAll (n-1)/n");
	ASSERT_TRUE(gt_busbw_factor(GPT_COLL_BROADCAST, 8) == 1.0, "Broadcast 1");
	ASSERT_TRUE(gt_busbw_factor(GPT_COLL_REDUCE, 8) == 1.0, "Reduce 1");
	ASSERT_EQ(gt_coll_size(GPT_COLL_REDUCESCATTER, 10, 4, 8), 320, "ReduceScatter size: n x recvcount");
	ASSERT_EQ(gt_coll_size(GPT_COLL_BROADCAST, 10, 4, 8), 40, "Broadcast size: count");
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_kernels_by_name_and_shape);
	RUN_TEST(test_copies_bandwidth_and_pairs);
	RUN_TEST(test_nccl_busbw_as_nccl_tests);
	RUN_TEST(test_hostile_datagrams_counted);
	RUN_TEST(test_flood_share_and_reap);
	RUN_TEST(test_busbw_factors);
	return unit_done();
}
