// SPDX-License-Identifier: BSD-3-Clause
/*
 * --bandwidth-util's peer side without BPF: (source, destination) GPU pairs, completion by
 * the covering synchronization and its kind (legacy and per-thread default streams told
 * apart), link limits read from a fake sysfs tree, and suspect figures in the JSON report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/bandwidth.h"
#include "modes/bandwidth/bandwidth_mode.h"
#include "lib/links.h"
#include "unit.h"

static void aux(struct bandwidth *bw, uint32_t tid, uint32_t api, uint64_t ts, uint64_t handle, uint64_t a)
{
	struct gp_aux_event e = { .type = GP_EV_AUX, .api = api, .pid = 40, .tid = tid, .ts_ns = ts,
				  .handle = handle, .aux = a };

	bandwidth__on_aux(bw, &e);
}

static void alloc(struct bandwidth *bw, uint64_t addr)
{
	struct gp_alloc_event e = { .type = GP_EV_ALLOC, .api = GP_API_cuMemAlloc_v2, .pid = 40, .tid = 40,
				    .addr = addr, .size = 1 << 20, .comm = "peer" };

	bandwidth__on_alloc(bw, &e);
}

static void copy(struct bandwidth *bw, uint32_t tid, uint32_t api, uint64_t ts, uint64_t dst, uint64_t src,
		 uint64_t bytes, uint64_t stream, int async)
{
	struct gp_copy_event e = { .type = GP_EV_COPY, .api = api, .pid = 40, .tid = tid, .ts_ns = ts,
				   .dur_ns = 1000, .dst = dst, .src = src, .bytes = bytes, .stream = stream,
				   .dst_type = GP_MEMTYPE_DEVICE, .src_type = GP_MEMTYPE_DEVICE, .async = (__u32)async,
				   .peer = 1, .dst_ctx = 0xc1, .src_ctx = 0xc0, .comm = "peer" };

	if (api == GP_API_cuMemcpy || api == GP_API_cuMemcpyDtoD_v2) {
		e.peer = 0;
		e.dst_ctx = e.src_ctx = 0;
		e.dst_type = e.src_type = api == GP_API_cuMemcpy ? GP_MEMTYPE_UNIFIED : GP_MEMTYPE_DEVICE;
	}
	bandwidth__on_copy(bw, &e);
}

/* Two GPUs' contexts, a buffer on each, the main thread (40) current on GPU 0. */
static struct bandwidth *two_gpus(void)
{
	struct bandwidth *bw = bandwidth__new();

	if (!bw)
		return NULL;
	aux(bw, 40, GP_API_cuDevicePrimaryCtxRetain, 1, 0xc0, 0);
	aux(bw, 40, GP_API_cuDevicePrimaryCtxRetain, 1, 0xc1, 1);
	aux(bw, 40, GP_API_cuCtxSetCurrent, 2, 0xc1, 0);
	alloc(bw, 0x100000);
	aux(bw, 40, GP_API_cuCtxSetCurrent, 3, 0xc0, 0);
	alloc(bw, 0x200000);
	return bw;
}

static const struct bw_pair *pair(struct bw_snap_data *d, int src, int dst)
{
	for (size_t i = 0; d->nr_procs && i < d->procs[0].nr_pairs; i++)
		if (d->procs[0].pairs[i].src == src && d->procs[0].pairs[i].dst == dst)
			return &d->procs[0].pairs[i];
	return NULL;
}

/* Sync-API peer copies wait for a covering sync: the legacy stream's and the thread's own
 * default stream are different streams; the window runs from the first submission. */
static void test_pairs_and_default_streams(void)
{
	struct bandwidth *bw = two_gpus();
	struct bw_snap_data d = { 0 };
	const struct bw_pair *x;

	if (!ASSERT_TRUE(bw != NULL, "aggregator"))
		goto cleanup;
	copy(bw, 40, GP_API_cuMemcpyPeer, 1000, 0x100000, 0x200000, 4096, 0, 0);
	copy(bw, 40, GP_API_cuMemcpy, 2000, 0x100000, 0x200000, 4096, 0, 0); /* unified: by ranges */
	copy(bw, 41, GP_API_cuMemcpyPeer_ptds, 3000, 0x100000, 0x200000, 8192, 0, 0);
	copy(bw, 40, GP_API_cuMemcpyDtoD_v2, 3500, 0x200010, 0x200000, 100, 0, 0); /* within GPU 0 */
	/* cuStreamSynchronize(CU_STREAM_LEGACY): the legacy stream's copies only */
	aux(bw, 40, GP_API_cuStreamSynchronize, 11000, 1, 0);
	if (!ASSERT_EQ(bandwidth__snapshot(bw, 0, &d), 0, "snapshot") || !ASSERT_EQ(d.nr_procs, 1, "one process"))
		goto cleanup;
	x = pair(&d, 0, 1);
	if (!ASSERT_TRUE(x != NULL, "pair 0->1") || !ASSERT_EQ(x->copies, 3, "0->1 copies") ||
	    !ASSERT_EQ(x->bytes, 16384, "0->1 bytes") || !ASSERT_EQ(x->done_copies, 2, "legacy-stream copies done") ||
	    !ASSERT_EQ(x->done_by[BW_SYNC_STREAM], 2, "by a stream sync") ||
	    !ASSERT_EQ(x->window_ns, 10000, "window: first submission to the sync") ||
	    !ASSERT_EQ(x->api_ns, 3000, "API time kept apart"))
		goto cleanup;
	x = pair(&d, 0, 0);
	if (!ASSERT_TRUE(x != NULL, "pair 0->0") || !ASSERT_EQ(x->done_copies, 1, "D2D on the legacy stream"))
		goto cleanup;
	/* the other thread's per-thread stream: cuStreamSynchronize_ptsz(0) on thread 41 */
	aux(bw, 40, GP_API_cuStreamSynchronize_ptsz, 20000, 0, 0);
	bw_snap_data__clear(&d);
	bandwidth__snapshot(bw, 0, &d);
	if (!ASSERT_EQ(pair(&d, 0, 1)->done_copies, 2, "thread 40's own stream is not thread 41's"))
		goto cleanup;
	aux(bw, 41, GP_API_cuStreamSynchronize_ptsz, 33000, 0, 0);
	bw_snap_data__clear(&d);
	bandwidth__snapshot(bw, 0, &d);
	x = pair(&d, 0, 1);
	if (!ASSERT_EQ(x->done_copies, 3, "all done") || !ASSERT_EQ(x->window_ns, 10000 + 30000, "two windows") ||
	    !ASSERT_EQ(d.procs[0].unsynced, 0, "none pending"))
		goto cleanup;
	for (size_t i = 0; i < d.procs[0].nr_stats; i++)
		if (d.procs[0].stats[i].dir == BW_PEER &&
		    !ASSERT_EQ(d.procs[0].stats[i].sync_copies, 0, "peer copies never timed by their call"))
			goto cleanup;
cleanup:
	bw_snap_data__clear(&d);
	bandwidth__free(bw);
}

/* An event covers its stream's copies submitted before it was recorded; a context sync
 * covers every stream. */
static void test_event_and_context_kinds(void)
{
	struct bandwidth *bw = two_gpus();
	struct bw_snap_data d = { 0 };
	const struct bw_pair *x;

	if (!ASSERT_TRUE(bw != NULL, "aggregator"))
		goto cleanup;
	copy(bw, 40, GP_API_cuMemcpyPeerAsync, 1000, 0x100000, 0x200000, 100, 0x5, 1);
	aux(bw, 40, GP_API_cuEventRecord, 1500, 0xe1, 0x5);
	copy(bw, 40, GP_API_cuMemcpyPeerAsync, 2000, 0x100000, 0x200000, 100, 0x5, 1);
	aux(bw, 40, GP_API_cuEventSynchronize, 5000, 0xe1, 0);
	copy(bw, 40, GP_API_cuMemcpy3DPeer, 6000, 0x100000, 0x200000, 100, 0, 0);
	aux(bw, 40, GP_API_cuCtxSynchronize_v2, 9000, 0, 0);
	bandwidth__snapshot(bw, 0, &d);
	x = pair(&d, 0, 1);
	if (!ASSERT_TRUE(x != NULL, "pair") || !ASSERT_EQ(x->done_by[BW_SYNC_EVENT], 1, "the copy before the record") ||
	    !ASSERT_EQ(x->done_by[BW_SYNC_CONTEXT], 2, "the rest by the context sync") ||
	    !ASSERT_EQ(x->window_ns, 4000 + 7000, "event window + context window"))
		goto cleanup;
cleanup:
	bw_snap_data__clear(&d);
	bandwidth__free(bw);
}

static int put(const char *dir, const char *name, const char *value)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", value);
	return fclose(f);
}

static int fake_gpu(const char *root, const char *bdf, const char *dev, const char *cur, const char *max)
{
	char d[4096];

	snprintf(d, sizeof(d), "%s/bus/pci/devices/%s", root, bdf);
	if (mkdir(d, 0755))
		return -1;
	return put(d, "vendor", "0x10de") | put(d, "class", "0x030200") | put(d, "device", dev) |
	       put(d, "current_link_speed", cur) | put(d, "current_link_width", "16") |
	       put(d, "max_link_speed", max) | put(d, "max_link_width", "16");
}

static void test_pcie_rates(void)
{
	if (!ASSERT_TRUE(fabs(bw_links__pcie_rate(2.5, 1) - 250e6) < 1, "Gen1 x1: 8b/10b") ||
	    !ASSERT_TRUE(fabs(bw_links__pcie_rate(32.0, 16) - 32e9 * 16 * 128 / 130 / 8) < 1, "Gen5 x16: 128b/130b") ||
	    !ASSERT_TRUE(fabs(bw_links__pcie_rate(64.0, 16) - 64e9 * 16 * 242 / 256 / 8) < 1, "Gen6 x16: FLITs") ||
	    !ASSERT_TRUE(bw_links__pcie_rate(0, 16) == 0, "no speed"))
		return;
}

/* An idle GPU's link trains down: the larger of current and max is its capability; the
 * NVLink of a known part by its device id; an unknown part's NVLink limit is unknown. */
static void test_links_from_sysfs(void)
{
	char root[] = "/tmp/gp-sysfs-XXXXXX", d[4200];
	struct bw_links l;
	int r;

	if (!ASSERT_TRUE(mkdtemp(root) != NULL, "temp dir"))
		return;
	snprintf(d, sizeof(d), "%s/bus", root);
	r = mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/bus/pci", root);
	r |= mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/bus/pci/devices", root);
	r |= mkdir(d, 0755);
	r |= fake_gpu(root, "0000:18:00.0", "0x2335", "2.5 GT/s PCIe", "32.0 GT/s PCIe");
	r |= fake_gpu(root, "0000:2a:00.0", "0x2335", "32.0 GT/s PCIe", "32.0 GT/s PCIe");
	if (!ASSERT_EQ(r, 0, "fake tree"))
		goto cleanup;
	bw_links__read(root, &l);
	if (!ASSERT_EQ(l.gpus, 2, "GPUs") || !ASSERT_STR_EQ(l.host.name, "PCIe 32.0 GT/s x16", "host link") ||
	    !ASSERT_TRUE(l.host.read_here, "read here") ||
	    !ASSERT_TRUE(fabs(l.peer.bytes_per_s - 450e9) < 1, "NVLink4 x18 one way") ||
	    !ASSERT_STR_CONTAINS(l.peer.name, "H200", "part named") ||
	    !ASSERT_TRUE(fabs(l.local.bytes_per_s - 4.8e12) < 1, "HBM3e") ||
	    !ASSERT_TRUE(bw_links__suspect(bw_links__for(&l, BW_PEER), 6.9e12), "the issue's 6.9 TB/s is suspect") ||
	    !ASSERT_FALSE(bw_links__suspect(bw_links__for(&l, BW_PEER), 390e9), "390 GB/s is not") ||
	    !ASSERT_TRUE(bw_links__for(&l, BW_H2H) == NULL, "host to host: no bound"))
		goto cleanup;
	r = fake_gpu(root, "0000:3b:00.0", "0x9999", "16.0 GT/s PCIe", "16.0 GT/s PCIe");
	bw_links__read(root, &l);
	if (!ASSERT_EQ(r, 0, "third GPU") || !ASSERT_EQ(l.gpus, 3, "GPUs") ||
	    !ASSERT_FALSE(l.peer.read_here, "an unknown part: NVLink not known") ||
	    !ASSERT_TRUE(l.peer.bytes_per_s == 0, "its limit unknown, not a guess") ||
	    !ASSERT_STR_CONTAINS(l.peer.name, "unknown: GPU 0x9999 not in the parts table", "says why") ||
	    !ASSERT_TRUE(l.local.bytes_per_s == 0 && !l.local.read_here, "its memory's limit unknown too") ||
	    !ASSERT_FALSE(bw_links__suspect(bw_links__for(&l, BW_PEER), 6.9e12), "nothing held against an unknown limit") ||
	    !ASSERT_TRUE(l.host.read_here && fabs(l.host.bytes_per_s - bw_links__pcie_rate(32.0, 16)) < 1,
			 "the PCIe links are still read"))
		goto cleanup;
	bw_links__read("/nonexistent", &l);
	ASSERT_TRUE(!l.host.read_here && l.host.bytes_per_s == 0 && l.peer.bytes_per_s == 0 && l.local.bytes_per_s == 0 &&
			    strstr(l.peer.name, "unknown") != NULL,
		    "no sysfs: every limit unknown");
cleanup:
	snprintf(d, sizeof(d), "rm -rf %s", root);
	if (system(d))
		printf("# could not remove %s\n", root);
}

/* A rate above its link is not printed as a measurement. */
static void test_suspect_in_json(void)
{
	struct bandwidth *bw = two_gpus();
	struct bw_snap s = { 0 };
	json_object *o = json_object_new_object(), *procs, *pairs, *p01 = NULL, *v;

	if (!ASSERT_TRUE(bw != NULL, "aggregator"))
		goto cleanup;
	copy(bw, 40, GP_API_cuMemcpyPeer, 1000, 0x100000, 0x200000, 1 << 20, 0, 0);
	aux(bw, 40, GP_API_cuCtxSynchronize, 2000, 0, 0); /* 1 MiB in 1 us: 1 TB/s */
	bandwidth__snapshot(bw, 0, &s.d);
	s.hdr = (struct gp_snap){ .mode = "bandwidth", .kind = GP_SNAP_FINAL };
	snprintf(s.links.peer.name, sizeof(s.links.peer.name), "test link");
	s.links.peer.bytes_per_s = 450e9;
	s.links.host.bytes_per_s = 50e9;
	bw_report__json(o, &s.hdr);
	procs = json_object_object_get(o, "processes");
	pairs = json_object_object_get(json_object_array_get_idx(procs, 0), "pairs");
	for (size_t i = 0; i < json_object_array_length(pairs); i++) {
		v = json_object_array_get_idx(pairs, i);
		if (json_object_get_int(json_object_object_get(v, "dst_gpu")) == 1)
			p01 = v;
	}
	if (!ASSERT_TRUE(p01 != NULL, "pair 0->1") ||
	    !ASSERT_TRUE(json_object_object_get_ex(p01, "bytes_per_second_lower_bound", &v) && v == NULL,
			 "not printed as a measurement"))
		goto cleanup;
	v = json_object_object_get(p01, "suspect");
	if (!ASSERT_TRUE(v != NULL, "suspect") ||
	    !ASSERT_TRUE(fabs(json_object_get_double(json_object_object_get(v, "bytes_per_second_lower_bound")) -
			      1048576e6) < 1, "the figure kept under suspect") ||
	    !ASSERT_STR_EQ(json_object_get_string(json_object_object_get(v, "link")), "test link", "the link named"))
		goto cleanup;
cleanup:
	json_object_put(o);
	bw_snap_data__clear(&s.d);
	bandwidth__free(bw);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_pairs_and_default_streams);
	RUN_TEST(test_event_and_context_kinds);
	RUN_TEST(test_pcie_rates);
	RUN_TEST(test_links_from_sysfs);
	RUN_TEST(test_suspect_in_json);
	return unit_done();
}
