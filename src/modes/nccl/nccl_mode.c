/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --nccl: bpf/nccl.bpf.c's probes on every libnccl file the run finds (at start, and as
 * followed processes load one: src/core/libwatch.c) and on libcuda's contexts, syncs and
 * event records, all writing into the run's shared ring buffer; the aggregator is nccl.c,
 * the renderers nccl_report.c; each call is an event of the --trace timeline's NCCL lane.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "lib/apis.h"
#include "core/attach.h"
#include "core/events.h"
#include "core/modeshare.h"
#include "nccl.skel.h"
#include "modes/nccl/nccl_mode.h"
#include "lib/option.h"
#include "core/options.h"
#include "core/run_impl.h"
#include "core/timeline.h"
#include "lib/util.h"

struct nccl_settings nccl_settings = { .max_comm_series = 16 };

static const struct gp_option options[] = {
	{ "libnccl", 0, "PATH", "Probe this libnccl.so.2 (else those found: LD_LIBRARY_PATH, ldconfig, the libraries processes map, and each a followed process loads later)",
	  GP_OPT_STRING, &gp_opts.libnccl, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{ "nccl-max-comm-series", 0, "N", "/metrics: communicators with series of their own per process (the others summed as comm_id=\"other\")",
	  GP_OPT_U64, &nccl_settings.max_comm_series, 1, 100000, .frontends = GP_FE_DAEMON, .group = GP_GRP_MODE },
	{},
};

/* The libcuda calls --nccl needs: contexts (a communicator's GPU), the completion signals
 * (syncs, queries, elapsed times), event records and waits (which work they cover). */
static const enum gp_api cuda_apis[] = {
	GP_API_cuCtxSetCurrent, GP_API_cuCtxPushCurrent_v2, GP_API_cuCtxPopCurrent_v2,
	GP_API_cuDevicePrimaryCtxRetain, GP_API_cuCtxCreate_v2, GP_API_cuCtxCreate_v3, GP_API_cuCtxCreate_v4,
	GP_API_cuStreamSynchronize, GP_API_cuStreamSynchronize_ptsz, GP_API_cuCtxSynchronize,
	GP_API_cuCtxSynchronize_v2, GP_API_cuEventSynchronize, GP_API_cuEventRecord, GP_API_cuEventRecord_ptsz,
	GP_API_cuEventRecordWithFlags, GP_API_cuEventRecordWithFlags_ptsz, GP_API_cuStreamWaitEvent,
	GP_API_cuStreamWaitEvent_ptsz, GP_API_cuStreamQuery, GP_API_cuStreamQuery_ptsz, GP_API_cuEventQuery,
	GP_API_cuEventElapsedTime, GP_API_cuEventElapsedTime_v2,
};
#define NR_CUDA_APIS (int)(sizeof(cuda_apis) / sizeof(cuda_apis[0]))

struct nccl_mode {
	struct gp_run *run;
	struct nccl_bpf *skel;
	struct nccl_agg *agg;
	struct attach_pair probes, cuda_probes;
	struct nccl_lib libs[NCCL_MAX_LIBS];
	size_t nr_libs;
	struct nccl_snap snap;
};

static void m_free(void *st)
{
	struct nccl_mode *m = st;

	if (!m)
		return;
	nccl_bpf__destroy(m->skel);
	nccl_agg__free(m->agg);
	nccl_snap_data__clear(&m->snap.d);
	free(m->snap.pids);
	free(m);
}

static int m_open(struct gp_run *run, void **st, char *err, size_t len)
{
	struct nccl_mode *m = calloc(1, sizeof(*m));

	*st = m;
	if (!m || !(m->agg = nccl_agg__new()) || !(m->skel = nccl_bpf__open())) {
		snprintf(err, len, "cannot open the NCCL BPF object");
		return -ENOMEM;
	}
	m->run = run;
	/* GPUPROBE_TEST_SYSFS: tests point this at a fake tree (as --bandwidth-util's) */
	bw_links__read(getenv("GPUPROBE_TEST_SYSFS"), &m->snap.links);
	attach_pair__prepare(&m->probes, m->skel->progs.nccl_enter, m->skel->progs.nccl_leave, "nccl");
	attach_pair__prepare(&m->cuda_probes, m->skel->progs.nccl_cuda_enter, m->skel->progs.nccl_cuda_leave,
			     "nccl's driver");
	bpf_map__set_max_entries(m->skel->maps.calls, (__u32)run->o->max_pending);
	bpf_map__set_max_entries(m->skel->maps.cuda_calls, (__u32)run->o->max_pending);
	gp_run__set_shares(run, m->skel);
	bpf_map__set_max_entries(m->skel->maps.nccl_procs, (__u32)run->o->max_procs);
	return gp_share__load(run, m->skel, m->skel->maps.events, err, len);
}

/* The name to probe for fn in lib: ncclX; pncclX where only it is exported. NCCL exports
 * both at one address (pnccl the function, nccl a weak alias): one probe per address. */
static int resolve_nccl(const char *lib, long long *offsets, char *err, size_t len)
{
	const char *names[2 * GP_NCCL__COUNT];
	long long off[2 * GP_NCCL__COUNT];
	char pn[GP_NCCL__COUNT][48];
	int r;

	for (int i = 1; i < GP_NCCL__COUNT; i++) {
		names[2 * (i - 1)] = nccl_fn_name(i);
		snprintf(pn[i], sizeof(pn[i]), "p%s", nccl_fn_name(i));
		names[2 * (i - 1) + 1] = pn[i];
	}
	r = attach__resolve(lib, names, 2 * (GP_NCCL__COUNT - 1), off, err, len);
	if (r < 0)
		return r;
	for (int i = 1; i < GP_NCCL__COUNT; i++)
		offsets[i] = off[2 * (i - 1)] >= 0 ? off[2 * (i - 1)] : off[2 * (i - 1) + 1];
	return 0;
}

static void remember_lib(struct nccl_mode *m, const char *lib, const long long *offsets)
{
	struct nccl_lib *l;
	char real[512];
	ssize_t n;

	if (m->nr_libs == NCCL_MAX_LIBS)
		return;
	l = &m->libs[m->nr_libs++];
	/* a file opened for us (/proc/self/fd/N) is named by what it is */
	n = readlink(lib, real, sizeof(real) - 1);
	if (n > 0 && !strncmp(lib, "/proc/self/fd/", 14))
		real[n] = '\0';
	else
		snprintf(real, sizeof(real), "%s", lib);
	snprintf(l->path, sizeof(l->path), "%s", real);
	for (int i = 1; i < GP_NCCL__COUNT; i++) {
		if (offsets[i] >= 0)
			l->probed++;
		else
			l->missing |= 1U << i;
	}
}

static int attach_nccl(struct nccl_mode *m, struct gp_run *run, const char *lib, char *err, size_t len)
{
	long long offsets[GP_NCCL__COUNT];
	__u64 cookies[GP_NCCL__COUNT];
	int r = resolve_nccl(lib, offsets, err, len);

	if (r)
		return r;
	if (offsets[GP_NCCL_AllReduce] < 0) {
		snprintf(err, len, "%s: not an NCCL library (it does not export ncclAllReduce)", lib);
		return -ENOEXEC;
	}
	offsets[0] = -1;
	for (int i = 0; i < GP_NCCL__COUNT; i++)
		cookies[i] = (__u64)i;
	remember_lib(m, lib, offsets);
	for (int i = 1; i < GP_NCCL__COUNT; i++)
		if (offsets[i] < 0)
			gp_log(GP_LOG_DEBUG, "%s does not export %s", lib, nccl_fn_name(i));
	return attach_pair__attach(&m->probes, run->links, lib, offsets, NULL, cookies, GP_NCCL__COUNT,
				   run->target_pid, err, len);
}

static int attach_cuda(struct nccl_mode *m, struct gp_run *run, const char *lib, char *err, size_t len)
{
	const char *names[NR_CUDA_APIS];
	long long offsets[NR_CUDA_APIS];
	__u64 cookies[NR_CUDA_APIS];
	int r;

	for (int i = 0; i < NR_CUDA_APIS; i++) {
		names[i] = gp_api_name(cuda_apis[i]);
		cookies[i] = GP_API_COOKIE(cuda_apis[i], gp_aux_layout_of(cuda_apis[i]));
	}
	r = attach__resolve(lib, names, NR_CUDA_APIS, offsets, err, len);
	if (r < 0)
		return r;
	attach__log_missing(lib, names, offsets, NR_CUDA_APIS);
	return attach_pair__attach(&m->cuda_probes, run->links, lib, offsets, NULL, cookies, NR_CUDA_APIS,
				   run->target_pid, err, len);
}

static int m_attach(void *st, struct gp_run *run, enum gp_lib kind, const char *lib, char *err, size_t len)
{
	struct nccl_mode *m = st;

	return kind == GP_LIB_NCCL ? attach_nccl(m, run, lib, err, len) : attach_cuda(m, run, lib, err, len);
}

static void h_nccl(void *ctx, const struct gp_nccl_event *e)
{
	struct nccl_mode *m = ctx;
	uint64_t id = 0;
	bool known;

	nccl_agg__on_call(m->agg, e);
	if (!m->run->timeline || e->depth)
		return;
	known = nccl_agg__comm_id(m->agg, e->pid, e->newcomm ? e->newcomm : e->comm, &id);
	gp_timeline__set_comm(m->run->timeline, e->pid, e->comm_name);
	gp_timeline__event(m->run->timeline, GP_LANE_NCCL, e->pid, e->tid, nccl_fn_name((int)e->fn), e->ts_ns,
			   e->dur_ns, (int64_t)e->ret, nccl_report__trace_args(e, known, id));
}

static void h_cuda(void *ctx, const struct gp_aux_event *e)
{
	nccl_agg__on_cuda(((struct nccl_mode *)ctx)->agg, e);
}

static void h_exit(void *ctx, const struct gp_exit_event *e)
{
	nccl_agg__on_exit(((struct nccl_mode *)ctx)->agg, e);
}

static void h_proc(void *ctx, const struct gp_proc_event *e)
{
	if (e->type == GP_EV_EXEC)
		nccl_agg__on_exec(((struct nccl_mode *)ctx)->agg, e);
}

static int m_start(void *st, struct gp_run *run, char *err, size_t len)
{
	struct nccl_mode *m = st;
	static const struct gp_on on[] = {
		GP_ON(GP_EV_NCCL, h_nccl), GP_ON(GP_EV_NCCL_CUDA, h_cuda),
		GP_ON(GP_EV_EXIT, h_exit), GP_ON_PROCS(h_proc)
	};
	struct gp_handlers h = { .ctx = m, GP_ONS(on) };

	return gp_share__start(run, m->skel->progs.nccl_proc_exit, &h, err, len);
}

static void fill_drops(struct nccl_mode *m, struct nccl_snap *s)
{
	static const int reason[GP_NDROP__COUNT] = {
		[GP_NDROP_RINGBUF] = GP_R_RINGBUF_FULL, [GP_NDROP_PENDING] = GP_R_PENDING_TABLE_FULL,
		[GP_NDROP_NORETURN] = GP_R_RETURN_WITHOUT_ENTRY, [GP_NDROP_TOO_DEEP] = GP_R_NESTED_TOO_DEEP,
		[GP_NDROP_PROCS] = GP_R_PROCESS_TABLE_FULL, [GP_NDROP_SHARE] = GP_R_PENDING_SHARE_FULL,
	};
	size_t n = 0;

	for (int i = 0; i < GP_NDROP__COUNT; i++)
		s->drops[n++] = (struct gp_snap_drop){ reason[i],
			__atomic_load_n(&m->skel->bss->ndrops[i], __ATOMIC_RELAXED) };
	s->drops[n++] = (struct gp_snap_drop){ GP_R_NCCL_COMM_TABLE_FULL, s->d.comm_table_full };
	n += gp_run__drops(m->run, s->drops + n);
	s->hdr.drops = s->drops;
	s->hdr.nr_drops = n;
	s->polls = __atomic_load_n(&m->skel->bss->polls, __ATOMIC_RELAXED);
}

static const struct gp_snap *m_snapshot(void *st, struct gp_run *run, enum gp_snap_kind kind, uint32_t pid)
{
	struct nccl_mode *m = st;
	struct nccl_snap *s = &m->snap;
	struct gp_snap_pid *pids;

	if (nccl_agg__snapshot(m->agg, pid, &s->d) || !(pids = gp_snap__pids(&s->pids, s->d.nr_procs)))
		return NULL;
	s->hdr = (struct gp_snap){ .mode = "nccl", .kind = kind, .now_ns = gp_run__now(run), .env = gp_run__env(run), .pids = pids };
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		const struct nccl_proc_snap *p = &s->d.procs[i];

		/* contexts and syncs only: not a process that used NCCL */
		if (!p->calls && !p->nested)
			continue;
		gp_snap__add_pid(&s->hdr, pids, p->pid, p->comm, p->unnamed, p->exited, p->exit_ns,
				 2 * (p->calls + p->nested));
	}
	s->libs = m->libs;
	s->nr_libs = m->nr_libs;
	s->max_comm_series = nccl_settings.max_comm_series;
	fill_drops(m, s);
	return &s->hdr;
}

static void counter_series(char *buf, size_t len, bool id_known, uint64_t id, uint64_t handle, int rank)
{
	if (id_known)
		snprintf(buf, len, "comm 0x%016" PRIx64 " rank %d", id, rank);
	else
		snprintf(buf, len, "comm handle:0x%" PRIx64 " rank %d", handle, rank);
}

/* top: each running rank's calls in flight and how long since one completed; a rank the
 * others wait for, under its own process. */
static void m_counters(void *st, struct gp_run *run, gp_counter_fn emit, void *ctx)
{
	struct nccl_mode *m = st;
	struct nccl_snap_data d = { 0 };
	uint64_t now = gp_run__now(run);
	char name[96];

	/* detail series only, which a --trace timeline does not keep: no snapshot for it */
	if (gp_run__opts(run)->frontend != GP_FE_TOP || nccl_agg__snapshot(m->agg, 0, &d))
		goto out;
	for (size_t i = 0; i < d.nr_procs; i++) {
		const struct nccl_proc_snap *p = &d.procs[i];

		for (size_t j = 0; !p->exited && j < p->nr_comms; j++) {
			const struct nccl_comm_snap *c = &p->comms[j];
			uint64_t t = nccl_comm_quiet_since(c), fl = c->issued - c->completed;

			if (!c->issued)
				continue;
			counter_series(name, sizeof(name), c->id_known, c->id, c->handle, c->rank);
			emit(ctx, &(struct gp_counter){ p->pid, GP_TRACK_NCCL_INFLIGHT, name, (double)fl, GP_CTR_DETAIL });
			if (fl)
				emit(ctx, &(struct gp_counter){ p->pid, GP_TRACK_NCCL_STALL, name,
								now > t ? (double)(now - t) / 1e9 : 0, GP_CTR_DETAIL });
		}
	}
	for (size_t i = 0; i < d.nr_straggles; i++) {
		const struct nccl_straggle *s = &d.straggles[i];

		for (int r = 0; s->wait_since_ns && r < NCCL_MATCH_RANKS; r++) {
			if (!(s->wait_missing & (1ULL << r)) || !s->pid[r])
				continue;
			counter_series(name, sizeof(name), true, s->id, 0, r);
			emit(ctx, &(struct gp_counter){ s->pid[r], GP_TRACK_NCCL_WAIT, name,
							now > s->wait_since_ns ? (double)(now - s->wait_since_ns) / 1e9 : 0,
							GP_CTR_DETAIL });
		}
	}
out:
	nccl_snap_data__clear(&d);
}

static void m_reap(void *st, struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid)
{
	struct nccl_mode *m = st;

	if (!run->behind) /* a process's last records may still be in the buffers */
		nccl_agg__sweep(m->agg, gp_mono_ns());
	nccl_agg__reap(m->agg, cutoff_ns, keep_pid);
}

const struct gp_mode gp_mode_nccl = {
	.name = "nccl",
	.flag = "nccl",
	.doc = "NCCL calls per rank and communicator: collectives, point-to-point, completion time, rank x rank matrices",
	.needs = GP_NEED_LIBNCCL | GP_NEED_LIBCUDA,
	.frontends = GP_FE_ALL,
	.probe_hits = true,
	.options = options,
	.open = m_open,
	.attach = m_attach,
	.start = m_start,
	.snapshot = m_snapshot,
	.text = nccl_report__text,
	.json = nccl_report__json,
	.prom = nccl_report__prom,
	.reap = m_reap,
	.counters = m_counters,
	.free = m_free,
};
