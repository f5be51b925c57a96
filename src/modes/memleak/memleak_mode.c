/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --memleak: outstanding allocations per process, with stacks. The probes are the run's
 * allocation records (src/core/allocsrc.c); this mode subscribes to them, feeds the
 * aggregator (memleak.c) and takes its snapshots; memleak_report.c renders them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "allocsrc.h"
#include "apis.h"
#include "events.h"
#include "memleak.h"
#include "memleak_mode.h"
#include "option.h"
#include "options.h"
#include "run.h"
#include "symbolize.h"
#include "util.h"

struct ml_settings ml_settings = {
	.top = 10,
	.max_allocs = 1000000,
};

static const struct gp_option options[] = {
	{ "top", 0, "N", "Text: allocations listed per process (default 10, -1 all)", GP_OPT_COUNT,
	  &ml_settings.top, 0, 100000, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{ "no-stacks", 0, NULL, "Do not capture user stacks at allocations", GP_OPT_SWITCH,
	  &ml_settings.no_stacks, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{ "max-allocs", 0, "N", "Outstanding allocations kept (default 1000000)", GP_OPT_U64,
	  &ml_settings.max_allocs, 1, 1 << 24, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{},
};

struct memleak_mode {
	struct gp_run *run;
	struct memleak *ml;
	struct ml_snap snap;
};

static int sym_cb(void *ctx, int pid, uint64_t addr, char *buf, size_t len)
{
	return symbolizer__format(ctx, pid, addr, buf, len);
}

static void m_free(void *st)
{
	struct memleak_mode *m = st;

	if (!m)
		return;
	ml_snap_data__clear(&m->snap.d);
	free(m->snap.pids);
	memleak__free(m->ml);
	free(m);
}

static int m_open(struct gp_run *run, void **st, char *err, size_t len)
{
	struct memleak_mode *m = calloc(1, sizeof(*m));

	*st = m;
	if (!m || !(m->ml = memleak__new(ml_settings.max_allocs, sym_cb, run->sym))) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	m->run = run;
	/* the daemon shows no stacks: it captures none */
	allocsrc__want_stacks(run->allocs, !ml_settings.no_stacks && run->o->frontend == GP_FE_CLI);
	return 0;
}

static void h_alloc(void *ctx, const struct gp_alloc_event *e)
{
	memleak__on_alloc(((struct memleak_mode *)ctx)->ml, e);
}

static void h_free(void *ctx, const struct gp_free_event *e)
{
	memleak__on_free(((struct memleak_mode *)ctx)->ml, e);
}

static void h_exit(void *ctx, const struct gp_exit_event *e)
{
	struct memleak_mode *m = ctx;
	struct ml_proc *p = memleak__on_exit(m->ml, e);

	/* its maps are gone; a new process may reuse the PID */
	symbolizer__forget_pid(m->run->sym, (int)e->pid);
	if (p)
		gp_run__exit_report(m->run, m, e->pid);
}

/* An exec ends the image: its allocations went with its address space. */
static void h_proc(void *ctx, const struct gp_proc_event *e)
{
	struct memleak_mode *m = ctx;

	if (e->type == GP_EV_EXEC && memleak__on_exec(m->ml, e))
		gp_run__exit_report(m->run, m, e->pid);
}

static int m_start(void *st, struct gp_run *run, char *err, size_t len)
{
	struct gp_handlers h = { .ctx = st, .on_alloc = h_alloc, .on_free = h_free, .on_exit = h_exit,
				 .on_proc = h_proc };
	int r = gp_run__subscribe(run, &h);

	if (r)
		snprintf(err, len, "cannot read the ring buffer: %s", strerror(-r));
	return r;
}

static int fill_pids(struct ml_snap *s)
{
	struct gp_snap_pid *pids = realloc(s->pids, (s->d.nr_procs ? s->d.nr_procs : 1) * sizeof(*pids));

	if (!pids)
		return -ENOMEM;
	s->pids = pids;
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		/* the allocation probes' hits are counted once, by the run */
		pids[i] = (struct gp_snap_pid){ .pid = s->d.procs[i].pid, .exited = s->d.procs[i].exited };
		memcpy(pids[i].comm, s->d.procs[i].comm, sizeof(pids[i].comm));
	}
	s->hdr.pids = pids;
	s->hdr.nr_pids = s->d.nr_procs;
	return 0;
}

static void fill_drops(struct memleak_mode *m, struct ml_snap *s)
{
	static const int reason[GP_DROP__COUNT] = {
		[GP_DROP_RINGBUF] = GP_R_RINGBUF_FULL, [GP_DROP_PENDING] = GP_R_PENDING_TABLE_FULL,
		[GP_DROP_STACK] = GP_R_STACK_UNREADABLE, [GP_DROP_NORETURN] = GP_R_RETURN_WITHOUT_ENTRY,
		[GP_DROP_PROCS] = GP_R_PROCESS_TABLE_FULL,
	};
	uint64_t d[GP_DROP__COUNT];
	size_t n = 0;

	allocsrc__drops(m->run->allocs, d);
	for (int i = 0; i < GP_DROP__COUNT; i++)
		s->drops[n++] = (struct gp_snap_drop){ reason[i], d[i] };
	s->drops[n++] = (struct gp_snap_drop){ GP_R_ALLOCATION_TABLE_FULL, memleak__table_full(m->ml) };
	n += gp_run__drops(m->run, s->drops + n);
	s->hdr.drops = s->drops;
	s->hdr.nr_drops = n;
}

static const struct gp_snap *m_snapshot(void *st, struct gp_run *run, const char *kind, uint32_t pid)
{
	struct memleak_mode *m = st;
	struct ml_snap *s = &m->snap;
	bool lists = strcmp(kind, "scrape") && strcmp(kind, "hits");
	unsigned int flags = (lists ? ML_SNAP_ALLOCS : 0) | (!strcmp(kind, "exit") ? ML_SNAP_EXITED : 0);

	s->hdr = (struct gp_snap){ .mode = "memleak", .kind = kind, .now_ns = gp_mono_ns() };
	if (memleak__snapshot(m->ml, s->hdr.now_ns, pid, flags, &s->d) || fill_pids(s))
		return NULL;
	fill_drops(m, s);
	allocsrc__ok_calls(run->allocs, s->calls);
	s->top = ml_settings.top;
	s->stacks = !ml_settings.no_stacks;
	return &s->hdr;
}

static void m_reap(void *st, struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid)
{
	struct memleak_mode *m = st;

	(void)run;
	memleak__sweep(m->ml, gp_mono_ns());
	memleak__reap(m->ml, cutoff_ns, keep_pid);
}

/* Outstanding bytes of each live process by memory kind, device memory even at 0 once it
 * allocated (an exited process's memory went with it: its series stop). */
static void m_counters(void *st, struct gp_run *run, gp_counter_fn emit, void *ctx)
{
	struct memleak_mode *m = st;
	struct ml_proc **procs;
	size_t n = memleak__procs(m->ml, &procs);

	(void)run;
	for (size_t i = 0; i < n; i++)
		for (unsigned int k = 0; k < GP_KIND__COUNT && !procs[i]->exited; k++)
			if (procs[i]->st.allocs_by_kind[k] || (k == GP_KIND_DEVICE && procs[i]->st.allocs_total))
				emit(ctx, &(struct gp_counter){ procs[i]->pid, GP_TRACK_MEMORY, gp_kind_name(k),
								(double)procs[i]->st.bytes_by_kind[k], 0 });
}

const struct gp_mode gp_mode_memleak = {
	.name = "memleak",
	.flag = "memleak",
	.doc = "Outstanding device/host/managed allocations per process, with stacks",
	.needs = GP_NEED_LIBCUDA | GP_NEED_ALLOCS,
	.frontends = GP_FE_ALL,
	.exit_reports = true,
	.probe_hits = true,
	.options = options,
	.open = m_open,
	.start = m_start,
	.snapshot = m_snapshot,
	.text = ml_report__text,
	.json = ml_report__json,
	.prom = ml_report__prom,
	.reap = m_reap,
	.counters = m_counters,
	.free = m_free,
};
