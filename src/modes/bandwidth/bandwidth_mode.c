/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --bandwidth-util: bpf/cuda_copy.bpf.c's copy, context, sync, event-record and
 * host-registration probes write into the run's shared ring buffer, after the allocation
 * records whose ranges decide the direction of unified copies; the aggregator is
 * bandwidth.c, the renderers bandwidth_report.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "core/allocsrc.h"
#include "lib/apis.h"
#include "core/attach.h"
#include "lib/bandwidth.h"
#include "modes/bandwidth/bandwidth_mode.h"
#include "lib/cuctx.h"
#include "cuda_copy.skel.h"
#include "core/events.h"
#include "core/modeshare.h"
#include "lib/option.h"
#include "out/outfile.h"
#include "core/options.h"
#include "core/run_impl.h"
#include "lib/util.h"

struct bw_settings bw_settings;

static const struct gp_option options[] = {
	{ "min-bytes", 0, "N", "Copies under N bytes only counted as small copies, in BPF", GP_OPT_U64,
	  &bw_settings.min_bytes, 0, (double)(1ULL << 62), .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{ "csv", 0, "FILE", "Append one row per GPU per report to FILE", GP_OPT_STRING, &bw_settings.csv,
	  .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{},
};

struct bw_mode {
	struct gp_run *run;
	struct cuda_copy_bpf *skel;
	struct bandwidth *bw;
	struct attach_pair probes, sprobes; /* sprobes: the budget's (gp_run__prepare_sampled) */
	FILE *csv;
	int csv_err; /* the first write error of --csv */
	uint64_t last_csv_ns;
	struct bw_snap snap;
};

static void m_free(void *st)
{
	struct bw_mode *m = st;

	if (!m)
		return;
	cuda_copy_bpf__destroy(m->skel);
	bandwidth__free(m->bw);
	bw_snap_data__clear(&m->snap.d);
	free(m->snap.pids);
	outfile__close(m->csv);
	free(m);
}

static int m_open(struct gp_run *run, void **st, char *err, size_t len)
{
	struct bw_mode *m = calloc(1, sizeof(*m));
	int r;

	*st = m;
	if (!m || !(m->bw = bandwidth__new()) || !(m->skel = cuda_copy_bpf__open())) {
		snprintf(err, len, "cannot open the copy BPF object");
		return -ENOMEM;
	}
	m->run = run;
	if (bw_settings.csv) {
		m->csv = outfile__open_append(bw_settings.csv);
		if (!m->csv) {
			r = -errno;
			snprintf(err, len, "--csv %s: %s", bw_settings.csv, strerror(-r));
			return r;
		}
	}
	m->last_csv_ns = gp_mono_ns();
	/* GPUPROBE_TEST_SYSFS: tests point this at a fake tree (a machine's links are fixed) */
	bw_links__read(getenv("GPUPROBE_TEST_SYSFS"), &m->snap.links);
	attach_pair__prepare(&m->probes, m->skel->progs.copy_enter, m->skel->progs.copy_leave, "copy");
	gp_run__prepare_sampled(run, &m->sprobes, &m->probes, m->skel->progs.copy_enter_ev, m->skel->progs.copy_leave_ev);
	m->skel->rodata->min_bytes = bw_settings.min_bytes;
	bpf_map__set_max_entries(m->skel->maps.calls, (__u32)run->o->max_pending);
	bpf_map__set_max_entries(m->skel->maps.copy_procs, (__u32)run->o->max_procs);
	gp_run__set_shares(run, m->skel);
	/* copies are priced under a budget, synchronizations sampled (m_attach) */
	r = gp_run__adopt_hits(run, m->skel);
	if (r) {
		snprintf(err, len, "cannot share the budget's hit counters: %s", strerror(-r));
		return r;
	}
	/* the allocation records' ring buffer: one order for allocations and copies */
	return gp_share__load(run, m->skel, m->skel->maps.events, err, len);
}

/*
 * The copies, contexts, event records and host registrations are always attached (priced
 * under a budget: a copy's bytes are counted exactly); cuCtxGetDevice and the synchronizations that end
 * asynchronous copies are sampled with --cudatrace's launches (--max-overhead): a training
 * loop synchronizes every step, and on the H200 that one always-attached synchronize cost
 * its PyTorch loop ~0.3 % (bench/gpu/results-inproc-h200.md). Under a budget a copy is
 * then timed only by a synchronization of its own window (src/lib/cuctx.h); the others
 * are counted as untimed.
 */
static int m_attach(void *st, struct gp_run *run, enum gp_lib kind, const char *lib, char *err, size_t len)
{
	struct bw_mode *m = st;
	const char *names[GP_API__COUNT] = { 0 };
	long long offsets[GP_API__COUNT], syncs[GP_API__COUNT];
	__u64 cookies[GP_API__COUNT];
	int r, n = 0, ncopy;
	(void)kind; /* libcuda only */

	for (int i = 0; i < gp_copy_apis_cnt; i++) {
		names[n] = gp_copy_apis[i].name;
		cookies[n++] = GP_COPY_COOKIE(gp_copy_apis[i].id, gp_copy_apis[i].layout,
					      gp_aux_layout_of(gp_copy_apis[i].id));
	}
	ncopy = n;
	/* synchronizations end asynchronous copies */
	for (int i = 0; i < gp_launch_apis_cnt; i++) {
		if (gp_launch_apis[i].prog != GP_LP_SYNC)
			continue;
		names[n] = gp_launch_apis[i].name;
		cookies[n++] = GP_COPY_COOKIE(gp_launch_apis[i].id, GP_CL_NONE, gp_aux_layout_of(gp_launch_apis[i].id));
	}
	r = attach__resolve(lib, names, n, offsets, err, len);
	if (r < 0)
		return r;
	attach__log_missing(lib, names, offsets, n);
	/* cuCtxGetDevice too: only contexts made before a -p attach need it, PyTorch calls it
	 * thousands of times a second, and one window's answer names the thread's GPU */
	for (int i = 0; i < n; i++) {
		bool sampled = i >= ncopy || GP_COOKIE_API(cookies[i]) == GP_API_cuCtxGetDevice ||
			       GP_COOKIE_API(cookies[i]) == GP_API_cuCtxGetDevice_v2 ||
			       cu_signal_api(GP_COOKIE_API(cookies[i]));

		syncs[i] = sampled ? offsets[i] : -1;
		if (sampled)
			offsets[i] = -1;
	}
	r = attach_pair__attach(&m->probes, run->links, lib, offsets, NULL, cookies, n, run->target_pid,
				err, len);
	return r ? r : gp_run__attach_sampled(run, &m->sprobes, lib, syncs, NULL, cookies, n, run->target_pid,
					     NULL, err, len);
}

/* The records go to the aggregator (m->bw), in the ring buffer's order; exits to the
 * budget too (its syncs are sampled: a process's part after its exit is none of its life). */
static void h_alloc(void *m, const struct gp_alloc_event *e)
{
	bandwidth__on_alloc(((struct bw_mode *)m)->bw, e);
}

static void h_free(void *m, const struct gp_free_event *e)
{
	bandwidth__on_free(((struct bw_mode *)m)->bw, e);
}

static void h_copy(void *m, const struct gp_copy_event *e)
{
	bandwidth__on_copy(((struct bw_mode *)m)->bw, e);
}

static void h_aux(void *m, const struct gp_aux_event *e)
{
	bandwidth__on_aux(((struct bw_mode *)m)->bw, e);
}

static void h_exit(void *m, const struct gp_exit_event *e)
{
	bandwidth__on_exit(((struct bw_mode *)m)->bw, e);
	gp_run__exited(((struct bw_mode *)m)->run, e->pid, e->ts_ns);
}

/* An exec ends the image's record; the new image starts its own. */
static void h_proc(void *m, const struct gp_proc_event *e)
{
	if (e->type == GP_EV_EXEC)
		bandwidth__on_exec(((struct bw_mode *)m)->bw, e);
}

static int m_start(void *st, struct gp_run *run, char *err, size_t len)
{
	struct bw_mode *m = st;
	static const struct gp_on on[] = {
		GP_ON(GP_EV_ALLOC, h_alloc), GP_ON_FREES(h_free), GP_ON(GP_EV_COPY, h_copy),
		GP_ON(GP_EV_AUX, h_aux), GP_ON(GP_EV_EXIT, h_exit), GP_ON_PROCS(h_proc)
	};
	struct gp_handlers h = { .ctx = m, GP_ONS(on) };

	return gp_share__start(run, m->skel->progs.copy_proc_exit, &h, err, len);
}

/* --csv: a row per GPU for each report, with the bytes of the interval */
static void csv_rows(struct bw_mode *m)
{
	uint64_t now = gp_mono_ns();
	struct timespec wall;

	clock_gettime(CLOCK_REALTIME, &wall); /* the row's time to the millisecond, not time(NULL)'s .000 */
	int r = bandwidth__csv_rows(m->bw, m->csv, (double)wall.tv_sec + (double)wall.tv_nsec / 1e9,
				    (double)(now - m->last_csv_ns) / 1e9);

	/* flushed with each report: a reader of the file sees its rows, a full disk shows */
	if (!r && fflush(m->csv))
		r = -(errno ? errno : EIO);
	if (r && !m->csv_err)
		m->csv_err = r;
	m->last_csv_ns = now;
}

static void fill(struct bw_mode *m, struct bw_snap *s)
{
	static const int reason[GP_CDROP__COUNT] = {
		[GP_CDROP_RINGBUF] = GP_R_RINGBUF_FULL, [GP_CDROP_PENDING] = GP_R_PENDING_TABLE_FULL,
		[GP_CDROP_NORETURN] = GP_R_RETURN_WITHOUT_ENTRY, [GP_CDROP_SHARE] = GP_R_PENDING_SHARE_FULL,
	};
	uint64_t md[GP_DROP__COUNT];
	size_t n = 0;

	for (int i = 0; i < GP_CDROP__COUNT; i++)
		s->drops[n++] = (struct gp_snap_drop){
			reason[i], __atomic_load_n(&m->skel->bss->cdrops[i], __ATOMIC_RELAXED) };
	/* the allocation records decide which ranges are device memory */
	allocsrc__drops(m->run->allocs, md);
	s->drops[n++] = (struct gp_snap_drop){ GP_R_ALLOCATION_RECORDS_LOST,
		md[GP_DROP_RINGBUF] + md[GP_DROP_PENDING] + md[GP_DROP_NORETURN] + md[GP_DROP_SHARE] };
	n += gp_run__drops(m->run, s->drops + n);
	s->hdr.drops = s->drops;
	s->hdr.nr_drops = n;
	s->small_copies = __atomic_load_n(&m->skel->bss->small_copies, __ATOMIC_RELAXED);
	s->small_bytes = __atomic_load_n(&m->skel->bss->small_bytes, __ATOMIC_RELAXED);
	s->failed_copies = __atomic_load_n(&m->skel->bss->failed_copies, __ATOMIC_RELAXED);
	s->zero_copies = __atomic_load_n(&m->skel->bss->zero_copies, __ATOMIC_RELAXED);
	s->polls = __atomic_load_n(&m->skel->bss->polls, __ATOMIC_RELAXED);
	s->quiet_signals = __atomic_load_n(&m->skel->bss->quiet_signals, __ATOMIC_RELAXED);
	s->min_bytes = bw_settings.min_bytes;
}

/* --csv: a report's rows go with it (interval and final reports) */
static void m_report_files(void *st, const struct gp_snap *s, uint32_t pid)
{
	struct bw_mode *m = st;

	(void)pid;
	if (m->csv && (s->kind == GP_SNAP_INTERVAL || s->kind == GP_SNAP_FINAL))
		csv_rows(m);
}

static const struct gp_snap *m_snapshot(void *st, struct gp_run *run, enum gp_snap_kind kind, uint32_t pid)
{
	struct bw_mode *m = st;
	struct bw_snap *s = &m->snap;
	struct gp_snap_pid *pids;

	if (bandwidth__snapshot(m->bw, pid, &s->d) || !(pids = gp_snap__pids(&s->pids, s->d.nr_procs)))
		return NULL;
	s->hdr = (struct gp_snap){ .mode = "bandwidth", .kind = kind, .now_ns = gp_run__now(run), .env = gp_run__env(run), .pids = pids };
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		const struct bw_snap_proc *p = &s->d.procs[i];
		uint64_t copies = 0;

		/* contexts and synchronizes only: not a process with copies (its exit may be
		 * seen late, so it must not hide a live process with its PID either) */
		if (!p->nr_stats)
			continue;
		for (size_t j = 0; j < p->nr_stats; j++)
			copies += p->stats[j].copies;
		/* entry and return of each copy counted */
		gp_snap__add_pid(&s->hdr, pids, p->pid, p->comm, p->unnamed, p->exited, p->exit_ns, 2 * copies);
	}
	fill(m, s);
	return &s->hdr;
}

static void m_reap(void *st, struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid)
{
	struct bw_mode *m = st;

	if (!run->behind) /* a process's last records may still be in the buffers */
		bandwidth__sweep(m->bw, gp_mono_ns());
	bandwidth__reap(m->bw, cutoff_ns, keep_pid);
}

/* Bytes copied per process, direction and GPU: running totals, exited processes' too
 * until they are forgotten (their last copies count). */
static void m_counters(void *st, struct gp_run *run, gp_counter_fn emit, void *ctx)
{
	struct bw_mode *m = st;
	struct bw_proc **procs;
	size_t n = bandwidth__procs(m->bw, &procs);
	char name[32];

	(void)run;
	for (size_t i = 0; i < n; i++) {
		struct bw_stat **stats;
		size_t k = bw_proc__stats(procs[i], &stats);

		for (size_t j = 0; j < k; j++) {
			if (stats[j]->gpu >= 0)
				snprintf(name, sizeof(name), "%s gpu%d", bw_dir_name(stats[j]->dir), stats[j]->gpu);
			else
				snprintf(name, sizeof(name), "%s", bw_dir_name(stats[j]->dir));
			emit(ctx, &(struct gp_counter){ bw_proc__pid(procs[i]), GP_TRACK_COPIES, name,
							(double)stats[j]->bytes, GP_CTR_TOTAL });
		}
	}
}

/* --csv: the rows written are on the disk, or the run fails with one line (a full disk
 * must not pass for a CSV that was written). */
static int m_finish(void *st, struct gp_run *run, char *err, size_t len)
{
	struct bw_mode *m = st;
	int r = m->csv_err;

	(void)run;
	if (m->csv) {
		int c = outfile__close(m->csv);

		m->csv = NULL;
		if (!r)
			r = c;
	}
	if (r)
		snprintf(err, len, "--csv %s: %s", bw_settings.csv, strerror(-r));
	return r;
}

const struct gp_mode gp_mode_bandwidth = {
	.name = "bandwidth",
	.flag = "bandwidth-util",
	.doc = "Copies and bandwidth per process, GPU and direction; pageable copies",
	.needs = GP_NEED_LIBCUDA | GP_NEED_ALLOCS,
	.frontends = GP_FE_ALL,
	.probe_hits = true,
	.options = options,
	.open = m_open,
	.attach = m_attach,
	.start = m_start,
	.snapshot = m_snapshot,
	.report_files = m_report_files,
	.text = bw_report__text,
	.json = bw_report__json,
	.prom = bw_report__prom,
	.reap = m_reap,
	.finish = m_finish,
	.counters = m_counters,
	.free = m_free,
};
