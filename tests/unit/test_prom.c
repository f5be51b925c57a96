/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus exposition: aggregators fed by hand, their snapshots taken as the modes
 * take them, rendered by the modes' renderers through the run's Prometheus pass
 * (gp_report__prom, src/out/prom.c) into a series store kept across renders as the daemon
 * keeps it, compared line by line. No BPF: the modes' snapshot steps are replaced by ones
 * that hand back the snapshots made here. What is checked: series keyed by comm and
 * cgroup, counters that keep exited processes' counts exactly once, gauges of running
 * processes only, sticky caps, histograms, new series born at zero, retention,
 * per-process series.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/apis.h"
#include "modes/bandwidth/bandwidth_mode.h"
#include "modes/cudatrace/cudatrace_mode.h"
#include "core/events.h"
#include "modes/ioctl/ioctl_mode.h"
#include "modes/memleak/memleak_mode.h"
#include "out/metrics.h"
#include "core/options.h"
#include "out/prom.h"
#include "out/report.h"
#include "core/run_impl.h"
#include "lib/util.h"
#include "unit.h"

/* PIDs no process can have (above PID_MAX_LIMIT, 2^22): /proc has no name for them, as for
 * a process gone before its record was made. The front end (cg) knows GONE_PID's name
 * ("fromproc", as every PID's but 10's and 40's) and nothing of GONE_NONAME's and above. */
#define GONE_PID 4194404u
#define GONE_NONAME 4194405u

static const char *const *cg(void *ctx, uint32_t pid)
{
	static const char *const odd[] = { "cgroup", "/a\\b\"c\nd", NULL };
	static const char *const unit[] = { "comm", "fromproc", "cgroup", "/system.slice/x.service", NULL };
	static const char *const pod[] = { "cgroup", "/kubepods/burstable/pod1/c0ffee", "namespace", "ml",
					   "pod", "trainer-0", "container", "main", "pod_uid", "0000-1",
					   "container_id", "", NULL };

	static const char *const nameless[] = { "cgroup", "/system.slice/x.service", NULL };

	(void)ctx;
	if (pid >= GONE_NONAME)
		return nameless;
	return pid == 10 ? odd : pid == 40 ? pod : unit;
}

static const struct gp_snap *given(void *st, struct gp_run *run, enum gp_snap_kind kind, uint32_t pid)
{
	(void)run, (void)kind, (void)pid;
	return st;
}

/* The exposition of the snapshots, each rendered by its mode, as a daemon scrape does,
 * into store (NULL: a store of the render's own) at now_ns. */
static char *render_at(const struct gp_mode *const *modes, const struct gp_snap *const *snaps, int n,
		       double cost, struct prom_store *store, uint64_t now_ns)
{
	struct gp_opts o = { 0 };
	struct gp_mode fake[GP_MAX_MODES];
	struct gp_run run = { .o = &o, .shared_rb = -1, .nr = n };
	struct prom_out *p = prom_out__new(store, cg, NULL, now_ns);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = NULL;
	int r = -1;

	run.events = gp_events__new();
	if (!p || !run.events)
		goto cleanup;
	for (int i = 0; i < n; i++) {
		fake[i] = *modes[i];
		fake[i].snapshot = given;
		fake[i].report_files = NULL; /* st is the snapshot here */
		run.slot[i].m = &fake[i];
		run.slot[i].st = (void *)snaps[i];
	}
	f = open_memstream(&buf, &len);
	if (f && !gp_report__prom(&run, p, cost))
		r = prom_out__write(p, f);
cleanup:
	if (f)
		fclose(f);
	prom_out__free(p);
	gp_events__free(run.events);
	if (r) {
		free(buf);
		return NULL;
	}
	return buf;
}

static char *render(const struct gp_mode *const *modes, const struct gp_snap *const *snaps, int n, double cost)
{
	return render_at(modes, snaps, n, cost, NULL, 1);
}

/* --memleak's snapshot of ml, with one drop counter */
static const struct gp_snap *ml_snap(struct ml_snap *s, struct memleak *ml, uint64_t ringbuf_full)
{
	ml_snap_data__clear(&s->d);
	free(s->pids);
	memleak__snapshot(ml, 10, 0, 0, 0, &s->d);
	s->pids = calloc(s->d.nr_procs + 1, sizeof(*s->pids));
	for (size_t i = 0; s->pids && i < s->d.nr_procs; i++) {
		const struct ml_stats *st = &s->d.procs[i].st;

		s->pids[i] = (struct gp_snap_pid){ .pid = s->d.procs[i].pid, .exited = s->d.procs[i].exited,
			.exit_ns = s->d.procs[i].exit_ns, .unnamed = s->d.procs[i].unnamed,
			/* the allocation probes' hits: entry and return of each call */
			.probe_hits = 2 * (st->allocs_total + st->frees_total + st->maps_total + st->unmaps_total) };
		memcpy(s->pids[i].comm, s->d.procs[i].comm, sizeof(s->pids[i].comm));
	}
	s->drops[0] = (struct gp_snap_drop){ GP_R_RINGBUF_FULL, ringbuf_full };
	s->hdr = (struct gp_snap){ .mode = "memleak", .kind = GP_SNAP_SCRAPE, .pids = s->pids,
				   .nr_pids = s->d.nr_procs, .drops = s->drops, .nr_drops = 1 };
	return &s->hdr;
}

static void ml_snap_free(struct ml_snap *s)
{
	ml_snap_data__clear(&s->d);
	free(s->pids);
}

/* --cudatrace's snapshot of ct (counted without return probes: one hit per call) */
static const struct gp_snap *ct_snap(struct ct_snap *s, struct cudatrace *ct, uint64_t max_series)
{
	struct ct_proc **procs;
	size_t n = cudatrace__procs(ct, &procs);

	free(s->procs);
	free(s->pids);
	s->procs = calloc(n + 1, sizeof(*s->procs));
	s->pids = calloc(n + 1, sizeof(*s->pids));
	for (size_t i = 0; s->procs && s->pids && i < n; i++) {
		s->procs[i] = procs[i];
		s->pids[i] = (struct gp_snap_pid){ .pid = procs[i]->pid, .exited = procs[i]->exited,
			.exit_ns = procs[i]->exit_ns, .unnamed = procs[i]->unnamed,
			.probe_hits = procs[i]->launches + procs[i]->graph_launches + procs[i]->hist[GP_HIST_SYNC].count };
		memcpy(s->pids[i].comm, procs[i]->comm, sizeof(s->pids[i].comm));
	}
	s->nr_procs = n;
	s->max_kernel_series = max_series;
	s->latency = true;
	s->hdr = (struct gp_snap){ .mode = "cudatrace", .kind = GP_SNAP_SCRAPE, .pids = s->pids, .nr_pids = n };
	return &s->hdr;
}

static void ct_snap_free(struct ct_snap *s)
{
	free(s->procs);
	free(s->pids);
}

/* --bandwidth-util's snapshot of bw, with small copies and one drop counter */
static const struct gp_snap *bw_snap(struct bw_snap *s, struct bandwidth *bw, uint64_t small)
{
	free(s->pids);
	bandwidth__snapshot(bw, 0, &s->d);
	s->pids = calloc(s->d.nr_procs + 1, sizeof(*s->pids));
	s->hdr = (struct gp_snap){ .mode = "bandwidth", .kind = GP_SNAP_SCRAPE, .pids = s->pids,
				   .drops = s->drops, .nr_drops = 1 };
	for (size_t i = 0; s->pids && i < s->d.nr_procs; i++) {
		struct gp_snap_pid *pp = &s->pids[s->hdr.nr_pids];
		uint64_t copies = 0;

		if (!s->d.procs[i].nr_stats) /* as the mode: no copies, not a process with series */
			continue;
		for (size_t j = 0; j < s->d.procs[i].nr_stats; j++)
			copies += s->d.procs[i].stats[j].copies;
		*pp = (struct gp_snap_pid){ .pid = s->d.procs[i].pid, .exited = s->d.procs[i].exited,
					    .probe_hits = 2 * copies };
		memcpy(pp->comm, s->d.procs[i].comm, sizeof(pp->comm));
		s->hdr.nr_pids++;
	}
	s->small_copies = small;
	s->drops[0] = (struct gp_snap_drop){ GP_R_RINGBUF_FULL, 2 };
	return &s->hdr;
}

static void bw_snap_free(struct bw_snap *s)
{
	bw_snap_data__clear(&s->d);
	free(s->pids);
}

static void bw_copy(struct bandwidth *bw, uint32_t pid, uint32_t api, uint64_t dst, uint32_t dst_type,
		    uint64_t src, uint32_t src_type, uint64_t bytes, uint64_t dur_ns, uint64_t stream)
{
	struct gp_copy_event e = { .type = GP_EV_COPY, .api = api, .pid = pid, .tid = pid, .ts_ns = 100,
				   .dur_ns = dur_ns, .dst = dst, .src = src, .bytes = bytes,
				   .stream = stream, .dst_type = dst_type, .src_type = src_type,
				   .async = stream != 0, .comm = "copier" };

	bandwidth__on_copy(bw, &e);
}

static void bw_aux(struct bandwidth *bw, uint32_t pid, uint32_t api, uint64_t ts, uint64_t handle, uint64_t aux)
{
	struct gp_aux_event e = { .type = GP_EV_AUX, .api = api, .pid = pid, .tid = pid, .ts_ns = ts,
				  .handle = handle, .aux = aux };

	bandwidth__on_aux(bw, &e);
}

/* pid 30 on GPU 1: a pageable sync H2D copy of 4096 bytes taking 1 ms, an async D2H
 * copy of 8192 bytes synchronized 2 ms after its submission, a host-to-host copy. */
static struct bandwidth *three_copies(void)
{
	struct bandwidth *bw = bandwidth__new();
	struct gp_alloc_event a = { .type = GP_EV_ALLOC, .api = GP_API_cuMemAlloc_v2, .pid = 30,
				    .tid = 30, .ts_ns = 1, .addr = 0x10000, .size = 0x10000, .comm = "copier" };

	if (!bw)
		return NULL;
	bw_aux(bw, 30, GP_API_cuDevicePrimaryCtxRetain, 1, 0xc1, 1);
	bw_aux(bw, 30, GP_API_cuCtxSetCurrent, 1, 0xc1, 0);
	bandwidth__on_alloc(bw, &a);
	bw_copy(bw, 30, GP_API_cuMemcpyHtoD_v2, 0x10000, GP_MEMTYPE_DEVICE, 0x900000, GP_MEMTYPE_HOST,
		4096, 1000000, 0);
	bw_copy(bw, 30, GP_API_cuMemcpyDtoHAsync_v2, 0x900000, GP_MEMTYPE_HOST, 0x10000, GP_MEMTYPE_DEVICE,
		8192, 5000, 0x5);
	bw_aux(bw, 30, GP_API_cuStreamSynchronize, 100 + 2000000, 0x5, 0);
	bw_copy(bw, 30, GP_API_cuMemcpy, 0x900000, GP_MEMTYPE_UNIFIED, 0xa00000, GP_MEMTYPE_UNIFIED,
		100, 10, 0);
	bw_aux(bw, 31, GP_API_cuCtxSetCurrent, 1, 0xc2, 0); /* no copies: no series */
	return bw;
}

static void feed_memleak(struct memleak *ml, uint32_t pid, const char *comm, int allocs, int frees)
{
	for (int i = 0; i < allocs; i++) {
		struct gp_alloc_event e = { .type = GP_EV_ALLOC, .api = GP_API_cuMemAlloc_v2, .pid = pid,
					    .tid = pid, .ts_ns = 1, .addr = 0x1000 + 0x100 * i, .size = 100 };

		snprintf(e.comm, sizeof(e.comm), "%s", comm);
		memleak__on_alloc(ml, &e, NULL);
	}
	for (int i = 0; i < frees; i++) {
		struct gp_free_event e = { .type = GP_EV_FREE, .api = GP_API_cuMemFree_v2, .pid = pid,
					   .ts_ns = 2, .addr = 0x1000 + 0x100 * i };

		snprintf(e.comm, sizeof(e.comm), "%s", comm);
		memleak__on_free(ml, &e);
	}
}

static void name_kernel(struct cudatrace *ct, uint32_t pid, uint32_t gen, uint64_t handle, const char *name)
{
	struct gp_name_event e = { .type = GP_EV_NAME, .pid = pid, .gen = gen, .handle = handle };

	snprintf(e.comm, sizeof(e.comm), "trainer");
	snprintf(e.name, sizeof(e.name), "%s", name);
	cudatrace__on_name(ct, &e);
}

static void launch(struct cudatrace *ct, uint32_t pid, uint32_t kind, uint32_t gen, uint64_t handle,
		   uint64_t count)
{
	struct gp_launch_key k = { .pid = pid, .kind = kind, .handle = handle, .gen = gen,
				   .grid = { 1, 1, 1 }, .block = { 32, 1, 1 } };

	cudatrace__add_launch(ct, &k, count);
}

static struct cudatrace *five_kernels(void)
{
	struct cudatrace *ct = cudatrace__new();
	/* 4 syncs: one under 2 us, three of 2-4 s (slot 21: 2^21-2^22 us) */
	struct gp_hist h = { .count = 4, .timed = 4, .total_ns = 2500000000ULL, .slots = { [0] = 1, [21] = 3 } };
	static const char *const names[] = { "a", "b", "c", "d", "other" };

	if (!ct)
		return NULL;
	for (int i = 0; i < 5; i++)
		name_kernel(ct, 20, (uint32_t)i + 1, 0x100 + (uint64_t)i, names[i]);
	cudatrace__snapshot_begin(ct);
	for (int i = 0; i < 5; i++)
		launch(ct, 20, GP_LAUNCH_KERNEL, (uint32_t)i + 1, 0x100 + (uint64_t)i, 50 - 10 * (uint64_t)i);
	launch(ct, 20, GP_LAUNCH_GRAPH, 0, 0x999, 6);
	cudatrace__set_hist(ct, &(struct gp_hist_key){ .pid = 20, .kind = GP_HIST_SYNC }, &h);
	cudatrace__snapshot_end(ct, 10);
	return ct;
}

static const struct gp_mode *const ML[] = { &gp_mode_memleak };
static const struct gp_mode *const CT[] = { &gp_mode_cudatrace };
static const struct gp_mode *const ML_CT[] = { &gp_mode_memleak, &gp_mode_cudatrace };
static const struct gp_mode *const BW[] = { &gp_mode_bandwidth };
static const struct gp_mode *const IOC[] = { &gp_mode_ioctl };

static int count(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

/* aggregated labels of pid 10, 20 (and 30), 40 */
#define L10 "{comm=\"ap\\\"p\",cgroup=\"/a\\\\b\\\"c\\nd\""
#define I20 "comm=\"trainer\",cgroup=\"/system.slice/x.service\""
#define L20 "{" I20
#define L40 "{comm=\"trainer\",cgroup=\"/kubepods/burstable/pod1/c0ffee\",namespace=\"ml\",pod=\"trainer-0\",container=\"main\",pod_uid=\"0000-1\""

static void test_label_escaping(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!ASSERT_TRUE(f != NULL, "memstream"))
		goto cleanup;
	prom__label_value(f, "a\\b\"c\nd");
	/* a name a process chose: UTF-8 stays, controls and bytes not UTF-8 are '?' (a byte
	 * that is not UTF-8 would fail the whole scrape) */
	prom__label_value(f, "|x\x1b[31m\r\xc2\x9b\xff caf\xc3\xa9");
	fclose(f);
	f = NULL;
	ASSERT_STR_EQ(buf, "a\\\\b\\\"c\\nd|x?[31m??? caf\xc3\xa9", "backslash, quote and newline escaped; controls '?'");
cleanup:
	if (f)
		fclose(f);
	free(buf);
}

static void test_memleak_series(void)
{
	struct memleak *ml = memleak__new(100);
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml != NULL, "aggregator"))
		goto cleanup;
	feed_memleak(ml, 10, "ap\"p", 3, 1);
	snaps[0] = ml_snap(&s, ml, 7);
	out = render(ML, snaps, 1, 2e-6);
	if (!ASSERT_TRUE(out != NULL, "rendered"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L10 "} 3\n", "alloc calls, labels escaped") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_free_calls_total" L10 "} 1\n", "free calls") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_outstanding_allocations" L10 ",kind=\"device\"} 2\n", "outstanding allocations") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_outstanding_bytes" L10 ",kind=\"device\"} 200\n", "outstanding bytes"))
		goto cleanup;
	/* entry and return of 3 allocations and 1 free */
	if (!ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hits_total" L10 "} 8\n", "probe hits") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_probe_seconds_total" L10 "} 1.6e-05\n", "probe seconds") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hit_cost_seconds 2e-06\n", "probe cost") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_events_dropped_total{mode=\"memleak\",reason=\"ringbuf_full\"} 7\n", "drops"))
		goto cleanup;
	if (!ASSERT_TRUE(strstr(out, "pid=") == NULL, "no pid label by default"))
		goto cleanup;
	ASSERT_TRUE(strstr(out, "gpuprobe_cuda_kernel_launches_total") == NULL, "no family of a mode that is off");
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
}

/* Processes of one comm and cgroup are one series; a process's counts stay in it after it
 * exits, exactly once however many renders still list it; its gauges leave at its exit. */
static void test_exited_counts_kept_gauges_dropped(void)
{
	struct prom_store_opts o = { .retention_ns = 1000 };
	struct prom_store *st = prom_store__new(&o);
	struct memleak *ml = memleak__new(100);
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = 21, .ts_ns = 5, .comm = "trainer" };
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml && st, "aggregator, store"))
		goto cleanup;
	feed_memleak(ml, 20, "trainer", 3, 1);
	feed_memleak(ml, 21, "trainer", 5, 0);
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 100);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L20 "} 8\n", "two processes, one series") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_outstanding_allocations" L20 ",kind=\"device\"} 7\n", "gauges summed"))
		goto cleanup;
	free(out), out = NULL;
	memleak__on_exit(ml, &ex); /* 21 exits with its 5 allocations */
	for (int i = 0; i < 3; i++) { /* still listed: counted once */
		snaps[0] = ml_snap(&s, ml, 0);
		free(out), out = NULL;
		out = render_at(ML, snaps, 1, 2e-6, st, 200 + (uint64_t)i);
		if (!ASSERT_TRUE(out != NULL, "rendered after the exit") ||
		    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L20 "} 8\n", "the exited process's counts, once") ||
		    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_outstanding_allocations" L20 ",kind=\"device\"} 2\n", "its gauges gone"))
			goto cleanup;
	}
	memleak__reap(ml, gp_mono_ns() + 1, 0); /* forgotten (exited at 5, its exit handled since) */
	feed_memleak(ml, 20, "trainer", 1, 0);
	snaps[0] = ml_snap(&s, ml, 0);
	free(out), out = NULL;
	out = render_at(ML, snaps, 1, 2e-6, st, 300);
	if (!ASSERT_TRUE(out != NULL, "rendered after the reap") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L20 "} 9\n", "kept after the record went, plus the new count") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_tracked_processes 1\n", "one process tracked"))
		goto cleanup;
	ASSERT_EQ(prom_store__series(st), 6, "series: 4 counters, probe hits and seconds; none for the second process");
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
	prom_store__free(st);
}

/* A process that came and went between two renders adds exactly its counts. */
static void test_short_process_between_renders(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct memleak *ml = memleak__new(100);
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml && st, "aggregator, store"))
		goto cleanup;
	for (uint32_t pid = 100; pid < 130; pid++) { /* 30 jobs, never seen running */
		struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = pid, .ts_ns = 5, .comm = "trainer" };

		feed_memleak(ml, pid, "trainer", (int)(pid % 7) + 1, 0);
		memleak__on_exit(ml, &ex);
		snaps[0] = ml_snap(&s, ml, 0);
		free(out), out = NULL;
		out = render_at(ML, snaps, 1, 2e-6, st, pid);
		memleak__reap(ml, UINT64_MAX, 0);
	}
	/* sum over pid 100..129 of (pid % 7) + 1: 4 cycles of 28, then 3 + 4 */
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L20 "} 119\n", "every job's allocations"))
		goto cleanup;
	ASSERT_EQ(prom_store__series(st), 6, "30 processes, one series per family");
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
	prom_store__free(st);
}

/* An exec (or a reused PID): the old image exited and the new one running in one render,
 * then the new one exits while the old one is still listed: each counted once. */
static void test_exec_same_pid_counted_once(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct memleak *ml = memleak__new(100);
	struct gp_proc_event exec = { .type = GP_EV_EXEC, .pid = 20, .img = 2, .ts_ns = 3, .comm = "trainer" };
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = 20, .ts_ns = 9, .img = 2, .comm = "trainer" };
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml && st, "aggregator, store"))
		goto cleanup;
	feed_memleak(ml, 20, "trainer", 2, 0);
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 10);
	free(out), out = NULL;
	feed_memleak(ml, 20, "trainer", 1, 0);  /* the first image: 3 */
	memleak__on_exec(ml, &exec);
	feed_memleak(ml, 20, "trainer", 4, 0);  /* the second: 4 */
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 20);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L20 "} 7\n", "both images"))
		goto cleanup;
	free(out), out = NULL;
	feed_memleak(ml, 20, "trainer", 5, 0);  /* the second: 9 */
	memleak__on_exit(ml, &ex);
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 30);
	if (!ASSERT_TRUE(out != NULL, "rendered after the exit") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L20 "} 12\n", "3 + 9, the first still listed"))
		goto cleanup;
	free(out), out = NULL;
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 40);
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L20 "} 12\n", "and again");
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
	prom_store__free(st);
}

/* A process renamed while it runs: what it counted under the old name stays there, the
 * rest goes to the new name; no series goes down. */
static void test_rename_moves_no_count(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct memleak *ml = memleak__new(100);
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml && st, "aggregator, store"))
		goto cleanup;
	feed_memleak(ml, 20, "launcher", 2, 0);
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 10);
	free(out), out = NULL;
	feed_memleak(ml, 20, "worker", 3, 0); /* the latest name is the record's */
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 20);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{comm=\"launcher\",cgroup=\"/system.slice/x.service\"} 2\n", "before the rename") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{comm=\"worker\",cgroup=\"/system.slice/x.service\"} 3\n", "after it"))
		goto cleanup;
	ASSERT_TRUE(strstr(out, "gpuprobe_cuda_outstanding_allocations{comm=\"launcher\"") == NULL, "a gauge is where the process is now");
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
	prom_store__free(st);
}

static void test_kernel_cap_sticky(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct cudatrace *ct = five_kernels();
	struct ct_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ct && st, "aggregator, store"))
		goto cleanup;
	snaps[0] = ct_snap(&s, ct, 2);
	out = render_at(CT, snaps, 1, 2e-6, st, 10);
	free(out), out = NULL;
	out = render_at(CT, snaps, 1, 2e-6, st, 20);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_kernel_launches_total" L20 ",kernel=\"a\"} 50\n", "first kernel") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_kernel_launches_total" L20 ",kernel=\"b\"} 40\n", "second kernel"))
		goto cleanup;
	/* c (30) + d (20) + the kernel literally named "other" (10) */
	if (!ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_kernel_launches_total" L20 ",kernel=\"other\"} 60\n", "the rest summed under other") ||
	    !ASSERT_TRUE(strstr(out, "kernel=\"c\"") == NULL, "third kernel in other") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_graph_launches_total" L20 "} 6\n", "graph launches") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_calls_total" L20 "} 4\n", "sync calls"))
		goto cleanup;
	/* 150 launches + 6 graph launches + 4 syncs */
	if (!ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hits_total" L20 "} 160\n", "probe hits"))
		goto cleanup;
	/* d now outruns a: the series keep their kernels, counts grow where they were */
	cudatrace__snapshot_begin(ct);
	for (int i = 0; i < 5; i++)
		launch(ct, 20, GP_LAUNCH_KERNEL, (uint32_t)i + 1, 0x100 + (uint64_t)i, i == 3 ? 500 : 50 - 10 * (uint64_t)i);
	cudatrace__snapshot_end(ct, 30);
	snaps[0] = ct_snap(&s, ct, 2);
	free(out), out = NULL;
	out = render_at(CT, snaps, 1, 2e-6, st, 30);
	if (!ASSERT_TRUE(out != NULL, "rendered again") ||
	    !ASSERT_STR_CONTAINS(out, "kernel=\"a\"} 50\n", "a stays") ||
	    !ASSERT_STR_CONTAINS(out, "kernel=\"other\"} 540\n", "d grew inside other"))
		goto cleanup;
	ASSERT_TRUE(strstr(out, "kernel=\"d\"") == NULL, "d never gets a series of its own");
cleanup:
	free(out);
	ct_snap_free(&s);
	cudatrace__free(ct);
	prom_store__free(st);
}

static void test_histograms(void)
{
	struct cudatrace *ct = five_kernels();
	struct ct_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ct != NULL, "aggregator"))
		goto cleanup;
	snaps[0] = ct_snap(&s, ct, 20);
	out = render(CT, snaps, 1, 2e-6);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_cuda_sync_duration_seconds histogram\n", "TYPE histogram") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_duration_seconds_bucket" L20 ",le=\"2e-06\"} 1\n", "first bucket") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_duration_seconds_bucket" L20 ",le=\"2.097152\"} 1\n", "cumulative, below the slow ones") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_duration_seconds_bucket" L20 ",le=\"4.194304\"} 4\n", "the slow ones") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_duration_seconds_bucket" L20 ",le=\"33.554432\"} 4\n", "last bucket") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_duration_seconds_bucket" L20 ",le=\"+Inf\"} 4\n", "+Inf") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_duration_seconds_sum" L20 "} 2.500000000\n", "sum") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_duration_seconds_count" L20 "} 4\n", "count"))
		goto cleanup;
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_launch_duration_seconds_count" L20 "} 0\n", "launch latency");
cleanup:
	free(out);
	ct_snap_free(&s);
	cudatrace__free(ct);
}

/* Every sample's family has HELP and TYPE before it, every family once, samples of a
 * family together: memleak 6, cudatrace 5, and the run's own 5 (probe hits, probe
 * seconds, hit cost, drops, tracked processes). */
static void test_help_type_every_family(void)
{
	struct memleak *ml = memleak__new(100);
	struct cudatrace *ct = five_kernels();
	struct ml_snap ms = { 0 };
	struct ct_snap cs = { 0 };
	const struct gp_snap *snaps[2];
	char *out = NULL, *save = NULL, *line, last[128] = "", seen[4096] = " ";
	int families = 0;

	if (!ASSERT_TRUE(ml && ct, "aggregators"))
		goto cleanup;
	feed_memleak(ml, 20, "trainer", 2, 0);
	snaps[0] = ml_snap(&ms, ml, 0);
	snaps[1] = ct_snap(&cs, ct, 3);
	out = render(ML_CT, snaps, 2, 2e-6);
	if (!ASSERT_TRUE(out != NULL, "rendered"))
		goto cleanup;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128], key[140];
		size_t n;

		if (!strncmp(line, "# HELP ", 7)) {
			sscanf(line + 7, "%127s", name);
			snprintf(key, sizeof(key), " %s ", name);
			if (!ASSERT_TRUE(strstr(seen, key) == NULL, "each family once"))
				goto cleanup;
			strncat(seen, key + 1, sizeof(seen) - strlen(seen) - 1);
			snprintf(last, sizeof(last), "%s", name);
			families++;
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			sscanf(line + 7, "%127s", name);
			if (!ASSERT_STR_EQ(name, last, "TYPE after its HELP"))
				goto cleanup;
			continue;
		}
		sscanf(line, "%127[^{ ]", name);
		n = strlen(last);
		if (!ASSERT_TRUE(!strncmp(name, last, n) && (!name[n] || !strcmp(name + n, "_bucket") ||
			       !strcmp(name + n, "_sum") || !strcmp(name + n, "_count")), "sample under its family"))
			goto cleanup;
	}
	/* 19 (gpuprobe_processes_unseen_calls_total among them), --cudatrace's 4 of --max-overhead
	 * (declared whether or not a process is sampled), the launch estimate's 3 and NVML's 33
	 * (declared with its state "off" when the run has none: 21, ECC, retired pages, remapped
	 * rows and NVLink's 7, MIG's 3, the XID times' 2) */
	ASSERT_EQ(families, 26 + 33, "family_count");
cleanup:
	free(out);
	ml_snap_free(&ms);
	ct_snap_free(&cs);
	memleak__free(ml);
	cudatrace__free(ct);
}

/* A series written for the first time shows zeros, its counts from the next write on;
 * a series nothing counted into for the retention goes. */
static void test_born_at_zero_and_retention(void)
{
	struct prom_store_opts o = { .retention_ns = 1000, .born_at_zero = true };
	struct prom_store *st = prom_store__new(&o);
	struct memleak *ml = memleak__new(100);
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = 20, .ts_ns = 5, .comm = "trainer" };
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml && st, "aggregator, store"))
		goto cleanup;
	feed_memleak(ml, 20, "trainer", 3, 0);
	memleak__on_exit(ml, &ex);
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 10000);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L20 "} 0\n", "born at zero"))
		goto cleanup;
	free(out), out = NULL;
	memleak__reap(ml, UINT64_MAX, 0);
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 10500);
	if (!ASSERT_TRUE(out != NULL, "rendered again") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L20 "} 3\n", "its counts from the second write"))
		goto cleanup;
	free(out), out = NULL;
	out = render_at(ML, snaps, 1, 2e-6, st, 11001);
	if (!ASSERT_TRUE(out != NULL, "rendered after the retention") ||
	    !ASSERT_TRUE(strstr(out, "gpuprobe_cuda_alloc_calls_total{") == NULL, "gone after the retention"))
		goto cleanup;
	ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_cuda_alloc_calls_total counter\n", "the family stays");
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
	prom_store__free(st);
}

/* --per-process-series: pid labels for the first N processes at a time, the others
 * together under pid="other"; a PID reused while its series lives starts it again (a
 * counter reset: the series is the new process's). */
static void test_per_process_series(void)
{
	struct prom_store_opts o = { .per_process = true, .max_process_series = 2, .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct memleak *ml = memleak__new(100);
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = 21, .ts_ns = 5, .comm = "trainer" };
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml && st, "aggregator, store"))
		goto cleanup;
	for (uint32_t pid = 20; pid < 24; pid++)
		feed_memleak(ml, pid, "trainer", (int)pid - 19, 0);
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 10);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{pid=\"20\"," I20 "} 1\n", "pid 20") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{pid=\"21\"," I20 "} 2\n", "pid 21") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{pid=\"other\"," I20 "} 7\n", "22 and 23 together") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_outstanding_allocations{pid=\"21\"," I20 ",kind=\"device\"} 2\n", "a gauge per pid"))
		goto cleanup;
	memleak__on_exit(ml, &ex);
	snaps[0] = ml_snap(&s, ml, 0); /* seen exited before it is forgotten, as the daemon does */
	free(out);
	out = render_at(ML, snaps, 1, 2e-6, st, 15);
	memleak__reap(ml, UINT64_MAX, 0);
	feed_memleak(ml, 21, "trainer", 4, 0); /* PID 21 again */
	snaps[0] = ml_snap(&s, ml, 0);
	free(out), out = NULL;
	out = render_at(ML, snaps, 1, 2e-6, st, 20);
	if (!ASSERT_TRUE(out != NULL, "rendered again") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{pid=\"21\"," I20 "} 4\n", "the new process's count") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{pid=\"other\"," I20 "} 7\n", "other keeps its counts") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_outstanding_allocations{pid=\"21\"," I20 ",kind=\"device\"} 4\n", "the new process's gauge"))
		goto cleanup;
	ASSERT_EQ(count(out, "gpuprobe_cuda_alloc_calls_total{"), 3, "three series");
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
	prom_store__free(st);
}

static void test_pod_labels(void)
{
	struct memleak *ml = memleak__new(100);
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml != NULL, "aggregator"))
		goto cleanup;
	feed_memleak(ml, 40, "trainer", 2, 0);
	feed_memleak(ml, 4194305, "", 1, 0); /* no name, and no such process (above PID_MAX_LIMIT): the front end's */
	snaps[0] = ml_snap(&s, ml, 0);
	out = render(ML, snaps, 1, 2e-6);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total" L40 "} 2\n", "pod labels, an empty one left out"))
		goto cleanup;
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{comm=\"fromproc\",cgroup=\"/system.slice/x.service\"} 1\n",
			    "the front end's name");
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
}

static void test_bad_family_fails(void)
{
	struct prom_out *p = prom_out__new(NULL, NULL, NULL, 1);
	struct gp_snap_pid pp = { .pid = 1, .comm = "x" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!ASSERT_TRUE(p && f, "render"))
		goto cleanup;
	prom__family(p, "gpuprobe_no_such_family_total");
	if (!ASSERT_TRUE(prom_out__write(p, f) != 0, "an unknown family fails the render"))
		goto cleanup;
	prom_out__free(p);
	p = prom_out__new(NULL, NULL, NULL, 1);
	prom__family(p, "gpuprobe_libcuda_files");
	prom__u64(p, "gpuprobe_libcuda_files", &pp, NULL, 1);
	ASSERT_TRUE(prom_out__write(p, f) != 0, "process labels on a family without them fail it");
cleanup:
	prom_out__free(p);
	if (f)
		fclose(f);
	free(buf);
}

/* One render of an estimate family (gpuprobe_cuda_launches_seen_total: an exact one) into
 * st: process 7 (exited or not) with the given value; the series' line. */
static bool est_render(struct prom_store *st, uint64_t now, bool exited, uint64_t est, uint64_t seen,
		       char *line, size_t len)
{
	struct prom_out *p = prom_out__new(st, NULL, NULL, now);
	struct gp_snap_pid pp = { .pid = 7, .exited = exited, .comm = "job" };
	const char *kv[] = { "kernel", "k", NULL };
	char *buf = NULL, *at;
	size_t blen = 0;
	FILE *f = open_memstream(&buf, &blen);
	bool ok = false;

	if (!p || !f)
		goto cleanup;
	prom__family(p, "gpuprobe_cuda_kernel_launches_total");
	prom__family(p, "gpuprobe_cuda_launches_seen_total");
	prom__u64(p, "gpuprobe_cuda_kernel_launches_total", &pp, kv, est);
	prom__u64(p, "gpuprobe_cuda_launches_seen_total", &pp, NULL, seen);
	ok = !prom_out__write(p, f);
	fclose(f);
	f = NULL;
	at = ok ? strstr(buf, "gpuprobe_cuda_kernel_launches_total{comm=\"job\",kernel=\"k\"} ") : NULL;
	ok = at && (at = strstr(at, "} ")) != NULL;
	if (ok)
		snprintf(line, len, "%.*s", (int)strcspn(at + 2, "\n"), at + 2);
cleanup:
	if (f)
		fclose(f);
	free(buf);
	prom_out__free(p);
	return ok;
}

/* An estimate family never goes down: a process adds what passes the most it reported
 * (an estimate revised down adds nothing), and its record is folded after its exit while
 * listed (its estimate finished there counts); a new process of the PID counts from zero,
 * beside the old one's record still listed, as the image an exec starts. */
static void test_estimate_never_down(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	static const struct {
		bool exited;
		uint64_t est;
		const char *want;
	} steps[] = {
		{ false, 100, "100" }, { false, 80, "100" }, { false, 150, "150" },
		{ true, 140, "150" },  { true, 170, "170" }, { true, 170, "170" },
		{ false, 30, "200" }, /* the PID reused: a new process while the old one is unlisted */
		{ false, 20, "200" }, { false, 50, "220" },
	};
	char line[64];

	if (!ASSERT_TRUE(st != NULL, "store"))
		goto cleanup;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "render %zu", i);
		/* each render after the first writes the series' counts (born_at_zero off) */
		if (!ASSERT_TRUE(est_render(st, 10 + i, steps[i].exited, steps[i].est, 3, line, sizeof(line)), what) ||
		    !ASSERT_STR_EQ(line, steps[i].want, what))
			goto cleanup;
	}
cleanup:
	prom_store__free(st);
}

/* An exec: PID 9's first image ("launcher", 10 launches) exits as the second ("job") runs;
 * both records listed in one render. Each keeps its own counts: the job's are not taken
 * for a new process of the launcher's PID twice, nor skipped. */
static void test_estimate_exec_images(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	static const struct {
		int n;
		bool exited[2];
		const char *comm[2];
		uint64_t v[2];
	} steps[] = {
		{ 1, { false }, { "launcher" }, { 10 } },
		{ 2, { true, false }, { "launcher", "job" }, { 10, 5 } },
		{ 2, { true, false }, { "launcher", "job" }, { 10, 7 } },
		{ 1, { false }, { "job" }, { 20 } },
		{ 1, { false }, { "job" }, { 20 } },
	};
	static const char *const want[][2] = {
		{ "10", NULL }, { "10", "5" }, { "10", "7" }, { "10", "20" }, { "10", "20" },
	};
	char *buf = NULL;

	if (!ASSERT_TRUE(st != NULL, "store"))
		goto cleanup;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct prom_out *p = prom_out__new(st, NULL, NULL, 10 + i);
		struct gp_snap_pid pp[2] = { { .pid = 9 }, { .pid = 9 } };
		const char *kv[] = { "kernel", "k", NULL };
		size_t blen = 0;
		FILE *f;
		int r;

		free(buf), buf = NULL;
		f = open_memstream(&buf, &blen);
		if (!ASSERT_TRUE(p && f, "render"))
			goto cleanup;
		prom__family(p, "gpuprobe_cuda_kernel_launches_total");
		for (int k = 0; k < steps[i].n; k++) {
			pp[k].exited = steps[i].exited[k];
			snprintf(pp[k].comm, sizeof(pp[k].comm), "%s", steps[i].comm[k]);
			prom__u64(p, "gpuprobe_cuda_kernel_launches_total", &pp[k], kv, steps[i].v[k]);
		}
		r = prom_out__write(p, f);
		fclose(f);
		prom_out__free(p);
		if (!ASSERT_EQ(r, 0, "written"))
			goto cleanup;
		for (int k = 0; k < 2 && i > 0; k++) {
			char line[128];

			if (!want[i][k])
				continue;
			snprintf(line, sizeof(line), "gpuprobe_cuda_kernel_launches_total{comm=\"%s\",kernel=\"k\"} %s\n",
				 k ? "job" : "launcher", want[i][k]);
			if (!ASSERT_STR_CONTAINS(buf, line, "each image's count"))
				goto cleanup;
		}
	}
cleanup:
	free(buf);
	prom_store__free(st);
}

#define BW_LABELS "{comm=\"copier\",cgroup=\"/system.slice/x.service\""

static void test_bandwidth_series(void)
{
	struct bandwidth *bw = three_copies();
	struct bw_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(bw != NULL, "aggregator"))
		goto cleanup;
	snaps[0] = bw_snap(&s, bw, 12);
	out = render(BW, snaps, 1, 1e-6);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_calls_total" BW_LABELS ",gpu=\"1\",direction=\"H2D\"} 1\n", "H2D copies") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_bytes_total" BW_LABELS ",gpu=\"1\",direction=\"H2D\"} 4096\n", "H2D bytes") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_sync_seconds_total" BW_LABELS ",gpu=\"1\",direction=\"H2D\"} 0.001000000\n", "H2D sync seconds") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_pageable_bytes_total" BW_LABELS ",gpu=\"1\",direction=\"H2D\"} 4096\n", "H2D pageable") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_bytes_total" BW_LABELS ",gpu=\"1\",direction=\"D2H\"} 8192\n", "D2H bytes") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_sync_seconds_total" BW_LABELS ",gpu=\"1\",direction=\"D2H\"} 0.000000000\n", "async: no sync seconds") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_async_upper_bound_seconds_total" BW_LABELS ",gpu=\"1\",direction=\"D2H\"} 0.002000000\n", "async bound") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_calls_total" BW_LABELS ",gpu=\"\",direction=\"H2H\"} 1\n", "H2H, no GPU") ||
	    !ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_cuda_memcpy_small_calls_total counter\ngpuprobe_cuda_memcpy_small_calls_total 12\n", "small copies"))
		goto cleanup;
	/* entry and return of 3 copies */
	if (!ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hits_total" BW_LABELS "} 6\n", "probe hits") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_events_dropped_total{mode=\"bandwidth\",reason=\"ringbuf_full\"} 2\n", "drops") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_tracked_processes 1\n", "tracked"))
		goto cleanup;
	ASSERT_TRUE(strstr(out, "gpuprobe_cuda_alloc_calls_total") == NULL, "--memleak off");
cleanup:
	free(out);
	bw_snap_free(&s);
	bandwidth__free(bw);
}

/* Two exited processes of one PID, listed together: both counted, once. The second's
 * copy has no GPU (it made no context current). */
static void test_bandwidth_two_exits_one_pid(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct bandwidth *bw = three_copies();
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = 30, .ts_ns = 1000, .comm = "copier" };
	struct bw_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(bw && st, "aggregator, store"))
		goto cleanup;
	bandwidth__on_exit(bw, &ex);
	bw_copy(bw, 30, GP_API_cuMemcpyHtoD_v2, 0x10000, GP_MEMTYPE_DEVICE, 0x900000, GP_MEMTYPE_HOST,
		4096, 10, 0);
	ex.ts_ns = 2000;
	bandwidth__on_exit(bw, &ex);
	for (int i = 0; i < 2; i++) {
		snaps[0] = bw_snap(&s, bw, 0);
		free(out), out = NULL;
		out = render_at(BW, snaps, 1, 1e-6, st, 10 + (uint64_t)i);
		if (!ASSERT_TRUE(out != NULL, "rendered") ||
		    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_calls_total" BW_LABELS ",gpu=\"1\",direction=\"H2D\"} 1\n", "the first's H2D copy") ||
		    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_calls_total" BW_LABELS ",gpu=\"\",direction=\"H2D\"} 1\n", "the second's") ||
		    !ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hits_total" BW_LABELS "} 8\n", "both processes' hits"))
			goto cleanup;
	}
	bandwidth__reap(bw, UINT64_MAX, 0);
	snaps[0] = bw_snap(&s, bw, 0);
	free(out), out = NULL;
	out = render_at(BW, snaps, 1, 1e-6, st, 20);
	if (!ASSERT_TRUE(out != NULL, "rendered after the reap"))
		goto cleanup;
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_calls_total" BW_LABELS ",gpu=\"\",direction=\"H2D\"} 1\n", "kept");
cleanup:
	free(out);
	bw_snap_free(&s);
	bandwidth__free(bw);
	prom_store__free(st);
}

/* Two processes of one PID with the same counts, both exited and listed in one render
 * (a PID reused within a render): told apart by their exits' times, each counted. By
 * their final values alone they were one, and the second's copies were lost. */
static void test_reused_pid_same_counts_counted_twice(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct bandwidth *bw = bandwidth__new();
	struct bw_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(bw && st, "aggregator, store"))
		goto cleanup;
	for (uint64_t ts = 1000; ts <= 2000; ts += 1000) {
		struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = 40, .ts_ns = ts, .comm = "copier" };

		bw_copy(bw, 40, GP_API_cuMemcpyHtoD_v2, 0x10000, GP_MEMTYPE_DEVICE, 0x900000, GP_MEMTYPE_HOST,
			4096, 10, 0);
		bandwidth__on_exit(bw, &ex);
	}
	for (int i = 0; i < 2; i++) { /* listed twice: still each once */
		snaps[0] = bw_snap(&s, bw, 0);
		free(out), out = NULL;
		out = render_at(BW, snaps, 1, 1e-6, st, 10 + (uint64_t)i);
		if (!ASSERT_TRUE(out != NULL, "rendered") ||
		    !ASSERT_STR_CONTAINS(out, ",gpu=\"\",direction=\"H2D\"} 2\n", "both processes' copies"))
			goto cleanup;
	}
cleanup:
	free(out);
	bw_snap_free(&s);
	bandwidth__free(bw);
	prom_store__free(st);
}

/* The sum of every sample of family fam in an exposition (-1 if none), and of those whose
 * labels contain with (NULL: all). */
static double family_sum(const char *text, const char *fam, const char *with)
{
	size_t n = strlen(fam);
	double sum = -1;

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *end = strchr(l, '\n'), *sp;

		if (strncmp(l, fam, n) || (l[n] != '{' && l[n] != ' '))
			continue;
		sp = end ? end : l + strlen(l);
		while (sp > l && sp[-1] != ' ')
			sp--;
		if (with && !memmem(l, (size_t)(sp - l), with, strlen(with)))
			continue;
		sum = (sum < 0 ? 0 : sum) + strtod(sp, NULL);
	}
	return sum;
}

/* One render of a launch table holding pid's count of handle under gen, read while records
 * were (unread) or were not still unread in the ring buffers. */
static char *held_render(struct prom_store *st, struct cudatrace *ct, struct ct_snap *s, uint32_t pid, uint32_t gen,
			 uint64_t handle, uint64_t count, bool unread, uint64_t now)
{
	const struct gp_snap *snaps[1];

	cudatrace__snapshot_begin(ct);
	launch(ct, pid, GP_LAUNCH_KERNEL, gen, handle, count);
	cudatrace__set_unread(ct, unread);
	cudatrace__snapshot_end(ct, now);
	snaps[0] = ct_snap(s, ct, 20);
	return render_at(CT, snaps, 1, 1e-6, st, now);
}

/* One render of ct's launches (the table read as a snapshot reads it: count for pid) into st. */
static char *ct_render(struct prom_store *st, struct cudatrace *ct, struct ct_snap *s, uint32_t pid, uint64_t count,
		       uint64_t now)
{
	return held_render(st, ct, s, pid, 0, 0x100, count, false, now);
}

/* The daemon under a flood on 6.1: a process's launches found in the BPF table after it was
 * gone, its name and exit records still behind in the ring buffer. Its record has no name of
 * its own and is labelled with the front end's; its exit record, read later, names it. Its
 * launches count once: the exited record takes over the state the running one left. Before,
 * that state was kept under the record's own name, "", the exited record found none of its
 * name and counted the process from zero again (63,000 launches of 61,000). */
static void test_unnamed_launches_counted_once(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct cudatrace *ct = cudatrace__new();
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = GONE_PID, .ts_ns = 5, .comm = "fromproc" };
	const char *fam = "gpuprobe_cuda_kernel_launches_total";
	struct ct_snap s = { 0 };
	char *out = NULL;

	if (!ASSERT_TRUE(ct && st, "aggregator, store"))
		goto cleanup;
	out = ct_render(st, ct, &s, GONE_PID, 1000, 10);
	if (!ASSERT_TRUE(out != NULL, "rendered") || !ASSERT_TRUE(s.nr_procs == 1 && s.pids[0].unnamed, "no name of its own") ||
	    !ASSERT_EQ(family_sum(out, fam, "comm=\"fromproc\""), 1000, "running, under the front end's name"))
		goto cleanup;
	cudatrace__on_exit(ct, &ex);
	for (int i = 0; i < 3; i++) { /* listed exited by three renders */
		free(out);
		out = ct_render(st, ct, &s, GONE_PID, 1000, 20 + (uint64_t)i);
		if (!ASSERT_TRUE(out != NULL, "rendered after the exit") ||
		    !ASSERT_EQ(family_sum(out, fam, NULL), 1000, "its launches, once"))
			goto cleanup;
	}
cleanup:
	free(out);
	ct_snap_free(&s);
	cudatrace__free(ct);
	prom_store__free(st);
}

/* The same where the front end knows nothing of the process either: it is not counted under
 * an empty name while it runs unnamed (its counts would stay there once it is named: 56,000
 * launches of 61,000 under the churn's name, the rest under comm=""), then counted whole
 * under the name its records give it, once, through its exit. */
static void test_unnamed_waits_for_its_name(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct cudatrace *ct = cudatrace__new();
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = GONE_NONAME, .ts_ns = 5, .comm = "trainer" };
	const char *fam = "gpuprobe_cuda_kernel_launches_total";
	struct ct_snap s = { 0 };
	char *out = NULL;

	if (!ASSERT_TRUE(ct && st, "aggregator, store"))
		goto cleanup;
	out = ct_render(st, ct, &s, GONE_NONAME, 600, 10);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_EQ(family_sum(out, fam, "comm=\"\""), -1, "no series under an empty name"))
		goto cleanup;
	free(out);
	out = ct_render(st, ct, &s, GONE_NONAME, 1000, 11); /* still unnamed, more launches read */
	free(out);
	name_kernel(ct, GONE_NONAME, 1, 0x200, "k"); /* its name record, read at last */
	out = ct_render(st, ct, &s, GONE_NONAME, 1000, 12);
	if (!ASSERT_TRUE(out != NULL, "rendered once named") ||
	    !ASSERT_EQ(family_sum(out, fam, "comm=\"trainer\""), 1000, "every launch under its name"))
		goto cleanup;
	cudatrace__on_exit(ct, &ex);
	free(out);
	out = ct_render(st, ct, &s, GONE_NONAME, 1000, 13);
	if (!ASSERT_TRUE(out != NULL, "rendered after the exit") ||
	    !ASSERT_EQ(family_sum(out, fam, "comm=\"trainer\""), 1000, "once, after its exit") ||
	    !ASSERT_EQ(family_sum(out, fam, NULL), 1000, "and nowhere else"))
		goto cleanup;
cleanup:
	free(out);
	ct_snap_free(&s);
	cudatrace__free(ct);
	prom_store__free(st);
}

static size_t records(struct cudatrace *ct)
{
	struct ct_proc **v;

	return cudatrace__procs(ct, &v);
}


/* The daemon's launch over-count: a kernel's launches are read from the table before the
 * record that names it (its naming's, sent before the launch was counted), and a scrape
 * that came between served them under kernel="unknown", which the named series then counted
 * again. While that record is unread the series is held back, and its process is not
 * reaped even once listed exited (a whole short job's launches were lost so); once read,
 * the named series has them, once. A record that never comes (lost: nothing left unread)
 * holds nothing back, nor does one for more than CT_HOLD_S. */
static void test_unnamed_held_until_its_record(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct cudatrace *ct = cudatrace__new();
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = GONE_PID, .ts_ns = 5, .comm = "trainer" };
	const char *fam = "gpuprobe_cuda_kernel_launches_total";
	const uint64_t s1 = 1000000000ULL;
	struct ct_snap s = { 0 };
	char *out = NULL;

	if (!ASSERT_TRUE(ct && st, "aggregator, store"))
		goto cleanup;
	out = held_render(st, ct, &s, GONE_PID, 7, 0x700, 500, true, 1 * s1);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), -1, "no unknown series while its name record is unread"))
		goto cleanup;
	cudatrace__on_exit(ct, &ex);
	free(out);
	out = held_render(st, ct, &s, GONE_PID, 7, 0x700, 500, true, 2 * s1);
	if (!ASSERT_TRUE(out != NULL, "rendered after the exit") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), -1, "still none, listed exited"))
		goto cleanup;
	cudatrace__reap(ct, UINT64_MAX, 0, NULL, NULL);
	if (!ASSERT_EQ(records(ct), 1, "not reaped while held back"))
		goto cleanup;
	name_kernel(ct, GONE_PID, 7, 0x700, "k");
	free(out);
	out = held_render(st, ct, &s, GONE_PID, 7, 0x700, 500, true, 3 * s1); /* other records unread */
	if (!ASSERT_TRUE(out != NULL, "rendered once named") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"k\""), 500, "every launch under its name") ||
	    !ASSERT_EQ(family_sum(out, fam, NULL), 500, "and nowhere else"))
		goto cleanup;
	cudatrace__reap(ct, UINT64_MAX, 0, NULL, NULL);
	if (!ASSERT_EQ(records(ct), 0, "reaped once served"))
		goto cleanup;
	/* a naming whose record never came: nothing unread, served as unknown at once */
	free(out);
	out = held_render(st, ct, &s, GONE_PID - 1, 9, 0x900, 300, false, 4 * s1);
	if (!ASSERT_TRUE(out != NULL, "rendered, nothing unread") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), 300, "a lost record holds nothing back"))
		goto cleanup;
	/* records unread all along (a busy node): held back CT_HOLD_S at most */
	free(out);
	out = held_render(st, ct, &s, GONE_PID - 2, 11, 0xb00, 200, true, 5 * s1);
	if (!ASSERT_TRUE(out != NULL, "rendered, held") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), 300, "held back (the lost one's alone)"))
		goto cleanup;
	free(out);
	out = held_render(st, ct, &s, GONE_PID - 2, 11, 0xb00, 200, true, (6 + CT_HOLD_S) * s1);
	if (!ASSERT_TRUE(out != NULL, "rendered, held too long") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), 300 + 200, "served once held CT_HOLD_S"))
		goto cleanup;
cleanup:
	free(out);
	ct_snap_free(&s);
	cudatrace__free(ct);
	prom_store__free(st);
}

static int no_layout(void *ctx, uint32_t pid, uint32_t img, uint64_t handle, char *buf, size_t len)
{
	(void)ctx, (void)pid, (void)img, (void)handle, (void)buf, (void)len;
	return -ENODATA;
}

static int unverified(void *ctx, uint32_t pid, uint32_t img, uint64_t handle, char *buf, size_t len)
{
	(void)ctx, (void)pid, (void)img, (void)handle, (void)buf, (void)len;
	return -EAGAIN;
}

/* The same for a kernel named before the attach: its first launch's stub record (sent before
 * that launch is counted) may name it; held back until read, also where no layout reads its
 * name from memory (the stub's host frame may). */
static void test_unnamed_held_until_its_stub(void)
{
	const struct gp_snap *snaps[1];
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct cudatrace *ct = cudatrace__new();
	const char *fam = "gpuprobe_cuda_kernel_launches_total";
	struct ct_snap s = { 0 };
	char *out = NULL;

	if (!ASSERT_TRUE(ct && st, "aggregator, store"))
		goto cleanup;
	out = held_render(st, ct, &s, GONE_PID, 0, 0xc00, 40, true, 1);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), -1, "held back while its stub is unread"))
		goto cleanup;
	cudatrace__on_stub(ct, GONE_PID, 0, 0xc00);
	cudatrace__on_host_name(ct, GONE_PID, 0, 0xc00, "gemm");
	free(out);
	out = held_render(st, ct, &s, GONE_PID, 0, 0xc00, 40, true, 2);
	if (!ASSERT_TRUE(out != NULL, "rendered once read") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"gemm\""), 40, "named by its stub") ||
	    !ASSERT_EQ(family_sum(out, fam, NULL), 40, "and nowhere else"))
		goto cleanup;
	/* memory cannot name one (no layout for its driver build): its stub may, by the host
	 * frame, so it is held back too while that is unread */
	cudatrace__set_resolve(ct, no_layout, NULL);
	free(out);
	out = held_render(st, ct, &s, GONE_PID - 1, 0, 0xe00, 9, true, 3);
	if (!ASSERT_TRUE(out != NULL, "rendered, no layout") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), -1, "no layout, its stub unread: held back"))
		goto cleanup;
	cudatrace__on_stub(ct, GONE_PID - 1, 0, 0xe00);
	cudatrace__on_host_name(ct, GONE_PID - 1, 0, 0xe00, "gemm");
	free(out);
	out = held_render(st, ct, &s, GONE_PID - 1, 0, 0xe00, 9, true, 4);
	if (!ASSERT_TRUE(out != NULL, "rendered, stub read") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"gemm\""), 40 + 9, "named by its stub, as the other") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), -1, "nothing unknown"))
		goto cleanup;
	/* no launch of it returned yet (a name from memory waits for one): held back, for
	 * CT_VERIFY_S at most (a forged or stale handle's launches fail: never verified) */
	cudatrace__set_resolve(ct, unverified, NULL);
	cudatrace__on_stub(ct, GONE_PID - 2, 0, 0xf00);
	free(out);
	out = held_render(st, ct, &s, GONE_PID - 2, 0, 0xf00, 5, false, 1000000000ULL);
	if (!ASSERT_TRUE(out != NULL, "rendered, unverified") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), -1, "no launch returned yet: held back"))
		goto cleanup;
	free(out);
	out = held_render(st, ct, &s, GONE_PID - 2, 0, 0xf00, 5, false, (1 + CT_VERIFY_S) * 1000000000ULL);
	if (!ASSERT_TRUE(out != NULL, "rendered, never verified") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), 5, "never verified: unknown after CT_VERIFY_S"))
		goto cleanup;
	cudatrace__set_resolve(ct, NULL, NULL);
	/* a NULL handle (launch_app's "bad" launches): no stub ever comes, nothing held */
	free(out);
	out = held_render(st, ct, &s, GONE_PID - 3, 0, 0, 3, true, 5);
	if (!ASSERT_TRUE(out != NULL, "rendered, NULL handle") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), 5 + 3, "a NULL handle's launches unknown at once"))
		goto cleanup;
	/* a stub read that names nothing: unknown, though other records are unread */
	cudatrace__on_stub(ct, GONE_PID, 0, 0xd00);
	free(out);
	cudatrace__snapshot_begin(ct);
	launch(ct, GONE_PID, GP_LAUNCH_KERNEL, 0, 0xc00, 40); /* the table keeps the first */
	launch(ct, GONE_PID, GP_LAUNCH_KERNEL, 0, 0xd00, 7);
	cudatrace__set_unread(ct, true);
	cudatrace__snapshot_end(ct, 3);
	snaps[0] = ct_snap(&s, ct, 20);
	out = render_at(CT, snaps, 1, 1e-6, st, 3);
	if (!ASSERT_TRUE(out != NULL, "rendered, stub read") ||
	    !ASSERT_EQ(family_sum(out, fam, "kernel=\"unknown\""), 5 + 3 + 7, "unknown once its stub is read (the unverified one's 5 and the NULL handle's 3 beside)"))
		goto cleanup;
cleanup:
	free(out);
	ct_snap_free(&s);
	cudatrace__free(ct);
	prom_store__free(st);
}

/* A process that renamed itself just before its exit (setproctitle, prctl): its running
 * record was named "trainer", its exit record says "worker", no record of its PID runs any
 * more. Its launches count once (an estimate family: before, the exited record found no
 * state of its name and counted them again from zero). */
static void test_estimate_renamed_before_exit_once(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct cudatrace *ct = cudatrace__new();
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = GONE_PID, .ts_ns = 5, .comm = "worker" };
	const char *fam = "gpuprobe_cuda_kernel_launches_total";
	struct ct_snap s = { 0 };
	char *out = NULL;

	if (!ASSERT_TRUE(ct && st, "aggregator, store"))
		goto cleanup;
	name_kernel(ct, GONE_PID, 1, 0x200, "k"); /* named "trainer" */
	out = ct_render(st, ct, &s, GONE_PID, 500, 10);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_EQ(family_sum(out, fam, "comm=\"trainer\""), 500, "running as trainer"))
		goto cleanup;
	cudatrace__on_exit(ct, &ex);
	for (int i = 0; i < 2; i++) {
		free(out);
		out = ct_render(st, ct, &s, GONE_PID, 500, 20 + (uint64_t)i);
		if (!ASSERT_TRUE(out != NULL, "rendered after the exit") ||
		    !ASSERT_EQ(family_sum(out, fam, NULL), 500, "its launches, once"))
			goto cleanup;
	}
cleanup:
	free(out);
	ct_snap_free(&s);
	cudatrace__free(ct);
	prom_store__free(st);
}

/* --memleak: a record made without a name (its first record carried none, /proc had none)
 * waits for one: its counts go under the name a later record gives it, none under comm="";
 * one that exits unnamed is counted there, once (not lost). */
static void test_memleak_unnamed_waits_for_its_name(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct memleak *ml = memleak__new(100);
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = GONE_NONAME, .ts_ns = 5 };
	const char *fam = "gpuprobe_cuda_alloc_calls_total";
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml && st, "aggregator, store"))
		goto cleanup;
	feed_memleak(ml, GONE_NONAME, "", 3, 0);
	snaps[0] = ml_snap(&s, ml, 0);
	out = render_at(ML, snaps, 1, 2e-6, st, 10);
	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_EQ(family_sum(out, fam, "comm=\"\""), -1, "no series under an empty name") ||
	    !ASSERT_EQ(family_sum(out, "gpuprobe_cuda_outstanding_allocations", "comm=\"\""), -1, "nor gauges"))
		goto cleanup;
	feed_memleak(ml, GONE_NONAME, "trainer", 2, 0);
	snaps[0] = ml_snap(&s, ml, 0);
	free(out);
	out = render_at(ML, snaps, 1, 2e-6, st, 20);
	if (!ASSERT_TRUE(out != NULL, "rendered once named") ||
	    !ASSERT_EQ(family_sum(out, fam, "comm=\"trainer\""), 5, "all five under its name") ||
	    !ASSERT_EQ(family_sum(out, fam, "comm=\"\""), -1, "none under an empty name"))
		goto cleanup;
	memleak__reap(ml, UINT64_MAX, 0);
	ex.pid = GONE_NONAME + 1; /* another, never named, unknown to the front end too */
	feed_memleak(ml, ex.pid, "", 4, 0);
	memleak__on_exit(ml, &ex);
	snaps[0] = ml_snap(&s, ml, 0);
	free(out);
	out = render_at(ML, snaps, 1, 2e-6, st, 30);
	if (!ASSERT_TRUE(out != NULL, "rendered after an unnamed exit") ||
	    !ASSERT_EQ(family_sum(out, fam, "comm=\"\""), 4, "counted at its exit, under no name"))
		goto cleanup;
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
	prom_store__free(st);
}

/* The per-process key the store used before issue 30: mix(fam, pid), whose first step
 * gives (fam, pid) and (fam + 1, pid - 65) one value. Kept here to find such pairs. */
static uint64_t old_key(uint64_t a, uint64_t b)
{
	uint64_t k = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));

	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ULL;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebULL;
	return k ^ (k >> 31);
}

/* Two running processes whose (family, PID) pairs collided under the old key: each
 * family keeps each process's counts exactly, while both run and after both exit. */
static void test_series_keys_never_collide(void)
{
	static const char *const fams[] = { "gpuprobe_cuda_alloc_calls_total", "gpuprobe_cuda_free_calls_total",
					    "gpuprobe_cuda_alloc_bytes_total", "gpuprobe_cuda_freed_bytes_total" };
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	struct memleak *ml = memleak__new(100);
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	uint32_t a = 5000, b = 0;
	char *out = NULL, want[256];

	if (!ASSERT_TRUE(ml && st, "aggregator, store"))
		goto cleanup;
	/* a PID b one of whose families met one of a's under the old key */
	for (uint32_t q = 1; q < 10000 && !b; q++)
		for (int fa = 0; fa < 4; fa++)
			for (int fb = 0; fb < 4; fb++)
				if (q != a && old_key((uint64_t)gp_metric__find(fams[fa]), a) ==
						      old_key((uint64_t)gp_metric__find(fams[fb]), q)) {
					b = q;
					printf("# %s of PID %u met %s of PID %u\n", fams[fa], a, fams[fb], q);
				}
	if (!ASSERT_TRUE(b != 0, "a pair that collided under the old key"))
		goto cleanup;
	/* both run (rounds 1, 2), a exits (3), b exits (4), then both are forgotten (5): each
	 * render shows exactly what each counted so far */
	for (int round = 1; round <= 5; round++) {
		int ra = round < 3 ? round : 3, rb = round < 4 ? round : 4;
		struct gp_exit_event ex = { .type = GP_EV_EXIT, .ts_ns = 5 };

		if (round <= 3)
			feed_memleak(ml, a, "first", 3, 1); /* 3 allocations, 1 free a round */
		if (round <= 4)
			feed_memleak(ml, b, "second", 5, 2); /* 5 and 2 */
		ex.pid = round == 3 ? a : b;
		snprintf(ex.comm, sizeof(ex.comm), "%s", round == 3 ? "first" : "second");
		if (round == 3 || round == 4)
			memleak__on_exit(ml, &ex);
		if (round == 5)
			memleak__reap(ml, UINT64_MAX, 0);
		snaps[0] = ml_snap(&s, ml, 0);
		free(out), out = NULL;
		out = render_at(ML, snaps, 1, 2e-6, st, 10 * (uint64_t)round);
		if (!ASSERT_TRUE(out != NULL, "rendered"))
			goto cleanup;
		/* feed_memleak reuses addresses: each round's allocations and frees count */
		const struct {
			const char *fam, *comm;
			int v;
		} w[] = {
			{ fams[0], "first", 3 * ra }, { fams[0], "second", 5 * rb },
			{ fams[1], "first", 1 * ra }, { fams[1], "second", 2 * rb },
			{ fams[2], "first", 300 * ra }, { fams[2], "second", 500 * rb },
			{ fams[3], "first", 100 * ra }, { fams[3], "second", 200 * rb },
		};
		for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
			snprintf(want, sizeof(want), "%s{comm=\"%s\",cgroup=\"/system.slice/x.service\"} %d\n",
				 w[i].fam, w[i].comm, w[i].v);
			if (!ASSERT_STR_CONTAINS(out, want, "each process's counts, exactly"))
				goto cleanup;
		}
	}
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
	prom_store__free(st);
}

/* Two exited processes of one name whose estimate-family states met under the key the
 * store used before (hstr(mix(fam_pid, 0xe1), comm): PIDs 77 apart), both listed in one
 * render: each counts its own launches, once (before: the second took the first's state and
 * added its count less the first's: the daemon's churn test lost 4 of 401 processes'
 * launches with every drop counter 0, or counted one twice). */
static void test_estimate_exited_keys_never_collide(void)
{
	struct prom_store_opts o = { .retention_ns = UINT64_MAX };
	struct prom_store *st = prom_store__new(&o);
	uint64_t fam = (uint64_t)gp_metric__find("gpuprobe_cuda_kernel_launches_total");
	uint32_t a = 12278, b = 0;
	static const char *const want[] = { "10", "35", "35", "35" };
	char *buf = NULL;

	if (!ASSERT_TRUE(st != NULL, "store"))
		goto cleanup;
	for (uint32_t q = a + 1; q < a + 10000 && !b; q++)
		if (old_key(fam << 32 | a, 0xe1) == old_key(fam << 32 | q, 0xe1))
			b = q;
	if (!ASSERT_TRUE(b != 0, "a pair of PIDs that met under the old key"))
		goto cleanup;
	printf("# PIDs %u and %u met under the old key\n", a, b);
	/* a exits (10 launches) and is listed; b exits (25) while a is still listed; both
	 * listed again; then a alone */
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct prom_out *p = prom_out__new(st, NULL, NULL, 10 + i);
		struct gp_snap_pid pa = { .pid = a, .exited = true, .comm = "job" };
		struct gp_snap_pid pb = { .pid = b, .exited = true, .comm = "job" };
		const char *kv[] = { "kernel", "k", NULL };
		char line[128], what[32];
		size_t blen = 0;
		FILE *f;
		int r;

		free(buf), buf = NULL;
		f = open_memstream(&buf, &blen);
		if (!ASSERT_TRUE(p && f, "render")) {
			prom_out__free(p);
			if (f)
				fclose(f);
			goto cleanup;
		}
		prom__family(p, "gpuprobe_cuda_kernel_launches_total");
		prom__u64(p, "gpuprobe_cuda_kernel_launches_total", &pa, kv, 10);
		if (i == 1 || i == 2)
			prom__u64(p, "gpuprobe_cuda_kernel_launches_total", &pb, kv, 25);
		r = prom_out__write(p, f);
		fclose(f);
		prom_out__free(p);
		snprintf(what, sizeof(what), "render %zu", i);
		if (!ASSERT_EQ(r, 0, "written"))
			goto cleanup;
		if (i == 0) /* born at zero off: the first render declares the series */
			continue;
		snprintf(line, sizeof(line), "gpuprobe_cuda_kernel_launches_total{comm=\"job\",kernel=\"k\"} %s\n", want[i]);
		if (!ASSERT_STR_CONTAINS(buf, line, what))
			goto cleanup;
	}
cleanup:
	free(buf);
	prom_store__free(st);
}

/* The label sets' cap (3 in all, 1 a cgroup), one process a render: a second name in a
 * cgroup goes to comm="other" of that cgroup, a name past the whole cap to comm="other"
 * without attribution, every count kept, each such process counted once (the renders
 * after its first, which list it again, count it no more);
 * places are free again after the retention. */
static void test_label_sets_capped(void)
{
	static const struct {
		uint32_t pid;
		const char *comm;
	} procs[] = { { 20, "first" }, { 10, "odd" }, { 21, "second" }, { 40, "pod" }, { 22, "third" } };
	struct prom_store_opts o = { .retention_ns = 100, .max_label_sets = 3, .max_label_sets_per_cgroup = 1 };
	struct prom_store *st = prom_store__new(&o);
	struct memleak *ml = memleak__new(100);
	struct ml_snap s = { 0 };
	const struct gp_snap *snaps[1];
	char *out = NULL;

	if (!ASSERT_TRUE(ml && st, "aggregator, store"))
		goto cleanup;
	/* allocations 1, 2, 4, 8, 16: first (x.service's place), odd (pid 10's cgroup: the
	 * second place), second (x.service's share taken), pod (the third), third (the cap
	 * taken) */
	for (int i = 0; i < 6; i++) { /* the last render again: nothing counted twice */
		if (i < 5)
			feed_memleak(ml, procs[i].pid, procs[i].comm, 1 << i, 0);
		snaps[0] = ml_snap(&s, ml, 0);
		free(out), out = NULL;
		out = render_at(ML, snaps, 1, 2e-6, st, 1000 + (uint64_t)i);
		if (!ASSERT_TRUE(out != NULL, "rendered"))
			goto cleanup;
	}
	if (!ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{comm=\"first\",cgroup=\"/system.slice/x.service\"} 1\n", "first") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{comm=\"odd\",cgroup=\"/a\\\\b\\\"c\\nd\"} 2\n", "odd") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{comm=\"other\",cgroup=\"/system.slice/x.service\"} 4\n", "second: other of its cgroup") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{comm=\"other\"} 16\n", "third: other") ||
	    !ASSERT_TRUE(strstr(out, "comm=\"third\"") == NULL && strstr(out, "comm=\"second\"") == NULL,
			 "no own series past the caps") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{comm=\"pod\",cgroup=\"/kubepods/burstable/pod1/c0ffee\"", "pod") ||
	    !ASSERT_EQ(prom_store__label_sets(st), 3, "label sets") ||
	    !ASSERT_EQ(prom_store__overflow(st, PROM_OVERFLOW_CGROUP), 1, "one process over a cgroup's share") ||
	    !ASSERT_EQ(prom_store__overflow(st, PROM_OVERFLOW_TOTAL), 1, "one process over the cap"))
		goto cleanup;
	for (int i = 0; i < 5; i++) {
		struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = procs[i].pid, .ts_ns = 5 };

		memleak__on_exit(ml, &ex);
	}
	memleak__reap(ml, UINT64_MAX, 0);
	feed_memleak(ml, 24, "later", 1, 0); /* past the retention: x.service's place is free */
	snaps[0] = ml_snap(&s, ml, 0);
	free(out), out = NULL;
	out = render_at(ML, snaps, 1, 2e-6, st, 5000);
	if (!ASSERT_TRUE(out != NULL, "rendered later"))
		goto cleanup;
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{comm=\"later\",cgroup=\"/system.slice/x.service\"} 1\n", "a place again");
cleanup:
	free(out);
	ml_snap_free(&s);
	memleak__free(ml);
	prom_store__free(st);
}

static char *render_ioctl(struct ioc_proc *procs, size_t n, uint64_t max)
{
	struct gp_snap_pid pids[4] = { 0 };
	struct ioc_snap s = { .procs = procs, .nr_procs = n, .pids = pids, .max_series = max,
			      .backend = "tracepoint" };
	const struct gp_snap *snaps[1] = { &s.hdr };

	for (size_t i = 0; i < n && i < 4; i++) {
		pids[i].pid = procs[i].pid;
		snprintf(pids[i].comm, sizeof(pids[i].comm), "%s", procs[i].comm);
	}
	s.drops[0] = (struct gp_snap_drop){ GP_R_COUNTER_TABLE_FULL, 2 };
	s.hdr = (struct gp_snap){ .mode = "ioctl", .kind = GP_SNAP_SCRAPE, .pids = pids, .nr_pids = n,
				  .drops = s.drops, .nr_drops = 1 };
	return render(IOC, snaps, 1, 2e-6);
}

#define CTL "gpuprobe_nvidia_ioctl_calls_total{comm=\"py\\\"t\",cgroup=\"/system.slice/x.service\",node="

/* The first N (cmd, ctrl) label sets of a series (busiest first in the first render)
 * get their own; the rest are summed per node under "other"; request numbers with one
 * decoded name are one series. */
static void test_ioctl_series_cap_and_other(void)
{
	struct ioc_cmd ctl[] = {
		{ .cmd = 0xc020462a, .ctrl_cmd = 0x20800110, .name = "NV_ESC_RM_CONTROL",
		  .ctrl_name = "NV2080_CTRL_CMD_GPU_GET_NAME_STRING",
		  .st = { .calls = 50, .errors = 1, .total_ns = 1500000000ULL } },
		{ .cmd = 0xc030462b, .name = "NV_ESC_RM_ALLOC", .st = { .calls = 40, .total_ns = 1000 } },
		{ .cmd = 0xc020462b, .name = "NV_ESC_RM_ALLOC", .st = { .calls = 5, .total_ns = 500 } },
		{ .cmd = 0xc020462a, .ctrl_cmd = 0x2080beef, .name = "NV_ESC_RM_CONTROL",
		  .st = { .calls = 3, .errors = 3 } },
		{ .cmd = 0x12345678, .st = { .calls = 2 } },
	};
	struct ioc_cmd uvm[] = {
		{ .cmd = 0x30000001, .name = "UVM_INITIALIZE", .st = { .calls = 31 } },
		{ .cmd = 37, .name = "UVM_REGISTER_GPU", .st = { .calls = 1, .errors = 1 } },
	};
	struct ioc_dev devs[] = {
		{ .major = 195, .minor = 255, .node = "/dev/nvidiactl", .cmds = ctl, .nr_cmds = 5 },
		{ .major = 511, .minor = 0, .node = "/dev/nvidia-uvm", .cmds = uvm, .nr_cmds = 2 },
	};
	struct ioc_proc p = { .pid = 30, .comm = "py\"t", .devs = devs, .nr_devs = 2 };
	char *out = render_ioctl(&p, 1, 2);

	if (!ASSERT_TRUE(out != NULL, "rendered") ||
	    !ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"NV_ESC_RM_CONTROL\",ctrl=\"NV2080_CTRL_CMD_GPU_GET_NAME_STRING\"} 50\n", "top control") ||
	    !ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"NV_ESC_RM_ALLOC\",ctrl=\"\"} 45\n", "two request numbers, one name") ||
	    !ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidia-uvm\",cmd=\"UVM_INITIALIZE\",ctrl=\"\"} 31\n", "uvm") ||
	    !ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"other\",ctrl=\"\"} 5\n", "other, per node") ||
	    !ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidia-uvm\",cmd=\"UVM_REGISTER_GPU\",ctrl=\"\"} 1\n", "uvm's second: room on its node") ||
	    !ASSERT_TRUE(strstr(out, "0x12345678") == NULL, "in other") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_nvidia_ioctl_errors_total{comm=\"py\\\"t\",cgroup=\"/system.slice/x.service\",node=\"/dev/nvidiactl\",cmd=\"other\",ctrl=\"\"} 3\n", "errors of other") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_nvidia_ioctl_seconds_total{comm=\"py\\\"t\",cgroup=\"/system.slice/x.service\",node=\"/dev/nvidiactl\",cmd=\"NV_ESC_RM_CONTROL\",ctrl=\"NV2080_CTRL_CMD_GPU_GET_NAME_STRING\"} 1.500000000\n", "seconds") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_events_dropped_total{mode=\"ioctl\",reason=\"counter_table_full\"} 2\n", "drops"))
		goto cleanup;
	/* ioctls are not probe hits; the process is tracked all the same */
	if (!ASSERT_TRUE(strstr(out, "gpuprobe_probe_hits_total{") == NULL, "no probe hits") ||
	    !ASSERT_STR_CONTAINS(out, "gpuprobe_tracked_processes 1\n", "tracked"))
		goto cleanup;
	free(out), out = NULL;
	out = render_ioctl(&p, 1, 20);
	if (!ASSERT_TRUE(out != NULL, "rendered with 20 series") ||
	    !ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"NV_ESC_RM_CONTROL\",ctrl=\"0x2080beef\"} 3\n", "unknown control in hex") ||
	    !ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"0x12345678\",ctrl=\"\"} 2\n", "unknown command in hex") ||
	    !ASSERT_TRUE(strstr(out, ",cmd=\"other\"") == NULL, "no other"))
		goto cleanup;
	free(out), out = NULL;
	out = render_ioctl(NULL, 0, 20); /* no process yet: the families still have HELP/TYPE */
	if (!ASSERT_TRUE(out != NULL, "rendered without processes") ||
	    !ASSERT_STR_CONTAINS(out, "# HELP gpuprobe_nvidia_ioctl_calls_total ", "calls HELP") ||
	    !ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_nvidia_ioctl_calls_total counter\n", "calls TYPE") ||
	    !ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_nvidia_ioctl_errors_total counter\n", "errors TYPE") ||
	    !ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_nvidia_ioctl_seconds_total counter\n", "seconds TYPE"))
		goto cleanup;
	ASSERT_STR_CONTAINS(out, "gpuprobe_tracked_processes 0\n", "none tracked");
cleanup:
	free(out);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_label_escaping);
	RUN_TEST(test_memleak_series);
	RUN_TEST(test_exited_counts_kept_gauges_dropped);
	RUN_TEST(test_short_process_between_renders);
	RUN_TEST(test_reused_pid_same_counts_counted_twice);
	RUN_TEST(test_unnamed_launches_counted_once);
	RUN_TEST(test_unnamed_waits_for_its_name);
	RUN_TEST(test_unnamed_held_until_its_record);
	RUN_TEST(test_unnamed_held_until_its_stub);
	RUN_TEST(test_estimate_renamed_before_exit_once);
	RUN_TEST(test_memleak_unnamed_waits_for_its_name);
	RUN_TEST(test_exec_same_pid_counted_once);
	RUN_TEST(test_rename_moves_no_count);
	RUN_TEST(test_kernel_cap_sticky);
	RUN_TEST(test_histograms);
	RUN_TEST(test_help_type_every_family);
	RUN_TEST(test_born_at_zero_and_retention);
	RUN_TEST(test_per_process_series);
	RUN_TEST(test_pod_labels);
	RUN_TEST(test_bad_family_fails);
	RUN_TEST(test_estimate_never_down);
	RUN_TEST(test_estimate_exec_images);
	RUN_TEST(test_bandwidth_series);
	RUN_TEST(test_bandwidth_two_exits_one_pid);
	RUN_TEST(test_ioctl_series_cap_and_other);
	RUN_TEST(test_series_keys_never_collide);
	RUN_TEST(test_estimate_exited_keys_never_collide);
	RUN_TEST(test_label_sets_capped);
	return unit_done();
}
