/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --memleak: outstanding allocations per process, grouped by the stack that made them.
 * The probes are the run's allocation records (src/core/allocsrc.c); this mode subscribes
 * to them, resolves their stacks (src/core/ustack.c: DWARF unwinding of a stack copy with
 * CPython frames, or the kernel's frame-pointer walk), feeds the aggregator (memleak.c)
 * and takes its snapshots; memleak_report.c renders them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "core/allocsrc.h"
#include "lib/apis.h"
#include "core/events.h"
#include "modes/memleak/memleak.h"
#include "modes/memleak/memleak_mode.h"
#include "core/modeshare.h"
#include "lib/option.h"
#include "core/options.h"
#include "out/outfile.h"
#include "core/ptree.h"
#include "core/run_impl.h"
#include "lib/u64map.h"
#include "lib/unwind.h"
#include "core/ustack.h"
#include "lib/util.h"

#define MAX_PENDING_STACKS 65536 /* threads with a stack waiting for its allocation record */
#define TICK_MS 2 /* how soon to look again at an interpreter waiting for its libpython */
#define READ_MS 10 /* the records wake nobody (cuda_mem.bpf.c): they are read this often */

struct ml_settings ml_settings = {
	.top = 10,
	.stack_bytes = GP_STACK_COPY_MAX,
	.max_allocs = 1000000,
};

static const struct gp_option options[] = {
	{ "stacks", 0, "auto|fp|dwarf|none",
	  "How stacks are taken at allocations: dwarf (a copy of the stack, unwound with the "
	  "call-frame information; CPython frames), fp (frame pointers), auto (dwarf where the "
	  "kernel can, else fp), none",
	  GP_OPT_CHOICE, &ml_settings.stacks, .choices = "auto|fp|dwarf|none", .frontends = GP_FE_CLI,
	  .group = GP_GRP_MODE, .unbuilt = "dwarf", .unbuilt_why = UNWIND_UNSUPPORTED_WHY },
	{ "stack-bytes", 0, "N", "--stacks dwarf: bytes of the stack copied at each allocation (default 16384, at most 16384)",
	  GP_OPT_U64, &ml_settings.stack_bytes, 0, GP_STACK_COPY_MAX, .frontends = GP_FE_CLI,
	  .group = GP_GRP_MODE },
	{ "no-python-frames", 0, NULL, "--stacks dwarf: do not read CPython frames", GP_OPT_SWITCH,
	  &ml_settings.no_python, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{ "no-stacks", 0, NULL, "Do not take stacks at allocations (--stacks none)", GP_OPT_SWITCH,
	  &ml_settings.no_stacks, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{ "top", 0, "N", "Text: stacks listed per process (default 10, -1 all)", GP_OPT_COUNT,
	  &ml_settings.top, 0, 100000, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{ "show-allocs", 0, NULL, "List each outstanding allocation under its stack (text and JSON)",
	  GP_OPT_SWITCH, &ml_settings.show_allocs, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{ "older-than", 0, "SECONDS", "Only allocations outstanding for longer than SECONDS in the stacks",
	  GP_OPT_SECONDS, &ml_settings.older_than, 0, GP_MAX_SECONDS, .frontends = GP_FE_CLI,
	  .group = GP_GRP_MODE },
	{ "folded", 0, "FILE", "At the end, outstanding bytes per stack to FILE in the folded format (gpuprobe flame FILE)",
	  GP_OPT_STRING, &ml_settings.folded, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{ "max-allocs", 0, "N", "Outstanding allocations kept (default 1000000)", GP_OPT_U64,
	  &ml_settings.max_allocs, 1, 1 << 24, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{},
};

/* A stack record waiting for its allocation record (same thread, same entry time): its
 * native stack unwound, its Python frames named when the allocation comes (ustack.h). */
struct pending {
	uint64_t ts_ns;
	uint32_t pid;
	struct ustack_pending up;
};

struct memleak_mode {
	struct gp_run *run;
	struct memleak *ml;
	struct ustack *us;    /* NULL without stacks */
	int stacks;           /* enum gp_stack_mode */
	struct u64map *pending; /* tid -> struct pending (--stacks dwarf) */
	uint64_t lost_joins;  /* stack records whose allocation record never came */
	FILE *folded;
	int folded_err;
	struct ml_snap snap;
};

static void m_free(void *st)
{
	struct memleak_mode *m = st;

	if (!m)
		return;
	ml_snap_data__clear(&m->snap.d);
	free(m->snap.pids);
	memleak__free(m->ml);
	ustack__free(m->us);
	u64map__free_all(m->pending, NULL);
	outfile__close(m->folded);
	free(m);
}

/* What auto means: a stack copy where the kernel can take one (bpf_find_vma, 5.17+) and
 * this build can unwind it (x86-64, arm64: unwind.h), else frame pointers; no stacks in the
 * daemon, which shows none. (--stacks dwarf where it is not built: refused by the parser.) */
static int stack_mode(const struct gp_run *run)
{
	if (ml_settings.no_stacks || ml_settings.stacks == ML_STACKS_NONE || run->o->frontend != GP_FE_CLI)
		return GP_STACKS_NONE;
	if (ml_settings.stacks == ML_STACKS_FP || !UNWIND_SUPPORTED)
		return GP_STACKS_FP;
	if (ml_settings.stacks == ML_STACKS_DWARF)
		return GP_STACKS_COPY;
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_find_vma, NULL) > 0 ? GP_STACKS_COPY :
											     GP_STACKS_FP;
}

/* A stack record is 18 KiB: the default ring (4 MiB) holds about 230, which a reader
 * kept off the CPU for 50 ms loses at 5000 allocations per second. */
#define STACKS_RING_BYTES (32ull << 20)

static uint64_t m_ring_bytes(const struct gp_run *run)
{
	return stack_mode(run) == GP_STACKS_COPY ? STACKS_RING_BYTES : 0;
}

static int m_open(struct gp_run *run, void **st, char *err, size_t len)
{
	struct memleak_mode *m = calloc(1, sizeof(*m));
	int r = -ENOMEM;

	*st = m;
	if (!m || !(m->ml = memleak__new(ml_settings.max_allocs)) || !(m->pending = u64map__new())) {
		snprintf(err, len, "out of memory");
		goto cleanup;
	}
	m->run = run;
	m->stacks = stack_mode(run);
	/* a stack copy is bounded by its mapping's end: bpf_find_vma (5.17); 5.15 lacks it */
	if (ml_settings.stacks == ML_STACKS_DWARF && m->stacks == GP_STACKS_COPY &&
	    libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_find_vma, NULL) <= 0) {
		snprintf(err, len, "--stacks dwarf needs the bpf_find_vma helper (Linux 5.17 or later), which this "
				   "kernel lacks: --stacks fp (what auto takes here) works");
		r = -EOPNOTSUPP;
		goto cleanup;
	}
#if !UNWIND_SUPPORTED
	if (ml_settings.stacks == ML_STACKS_AUTO && m->stacks == GP_STACKS_FP)
		gp_log(GP_LOG_INFO, "--stacks auto: frame pointers (%s)%s", UNWIND_UNSUPPORTED_WHY,
		       ml_settings.no_python ? "" : "; no CPython frames: they are read with the stack copy");
#endif
	allocsrc__want_stacks(run->allocs, m->stacks, (uint32_t)ml_settings.stack_bytes, !ml_settings.no_python);
	/* before tracing: a file that cannot be written is an error now, not at the end */
	if (ml_settings.folded && !(m->folded = outfile__open(ml_settings.folded))) {
		r = -errno;
		snprintf(err, len, "--folded %s: %s", ml_settings.folded, strerror(errno));
		goto cleanup;
	}
	r = 0;
cleanup:
	return r;
}

static void drop_pending(struct memleak_mode *m, uint32_t pid)
{
	uint64_t doomed[256], k;
	size_t n;
	void *v;

	do {
		n = 0;
		for (size_t it = 0; n < 256 && u64map__next(m->pending, &it, &k, &v);)
			if (((struct pending *)v)->pid == pid)
				doomed[n++] = k;
		for (size_t i = 0; i < n; i++)
			free(u64map__del(m->pending, doomed[i]));
	} while (n == 256);
}

/* A stack record, unwound now (while the process's files are surely kept) and kept until
 * its allocation record comes. */
static void h_stack(void *ctx, const struct gp_stack_event *e)
{
	struct memleak_mode *m = ctx;
	struct pending *p;

	if (!m->us)
		return;
	p = malloc(sizeof(*p));
	if (!p)
		return;
	p->ts_ns = e->ts_ns;
	p->pid = e->pid;
	ustack__unwind_copy(m->us, e, &p->up);
	/* a call that failed sent its stack and no allocation: the next stack replaces it */
	free(u64map__del(m->pending, e->tid));
	if (u64map__size(m->pending) >= MAX_PENDING_STACKS || u64map__put(m->pending, e->tid, p))
		free(p);
}

/* A code object's copy: before the stack records that name its frames. */
static void h_pycode(void *ctx, const struct gp_pycode_event *e)
{
	ustack__py_code(((struct memleak_mode *)ctx)->us, e);
}

static void h_pylines(void *ctx, const struct gp_pylines_event *e)
{
	ustack__py_lines(((struct memleak_mode *)ctx)->us, e);
}

static void h_alloc(void *ctx, const struct gp_alloc_event *e)
{
	struct memleak_mode *m = ctx;
	struct ml_stack_in in = { .flags = m->stacks == GP_STACKS_NONE ? 0 : USTACK_LOST };
	struct ustack_frames f;
	struct pending *p = NULL;

	if (m->stacks == GP_STACKS_FP && m->us && e->stack_err >= 0) {
		ustack__from_pcs(m->us, e->pid, e->stack, e->nr_stack, &f);
		in = (struct ml_stack_in){ .frames = f.frames, .nr = f.nr, .flags = f.flags };
	} else if (m->stacks == GP_STACKS_COPY && e->stack_rec) {
		p = u64map__del(m->pending, e->tid);
		if (p && p->pid == e->pid && p->ts_ns == e->ts_ns) {
			/* the copies of code objects it reached first have come by now */
			ustack__finish(m->us, &p->up, &f);
			in = (struct ml_stack_in){ .frames = f.frames, .nr = f.nr, .flags = f.flags };
		} else {
			m->lost_joins++;
		}
	}
	memleak__on_alloc(m->ml, e, &in);
	free(p);
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
	ustack__forget(m->us, e->pid, e->ts_ns);
	drop_pending(m, e->pid);
	if (p)
		gp_run__exit_report(m->run, m, e->pid);
}

/* An exec ends the image: its allocations went with its address space. A fork brings a
 * copy of the parent's interpreter. */
static void h_proc(void *ctx, const struct gp_proc_event *e)
{
	struct memleak_mode *m = ctx;

	if (e->type == GP_EV_FORK)
		ustack__fork(m->us, e->ppid, e->pid, e->ts_ns);
	if (e->type == GP_EV_GONE) /* its stack records may still be in the allocation ring */
		ustack__gone(m->us, e->pid);
	if (e->type != GP_EV_EXEC)
		return;
	ustack__exec(m->us, e->pid, m->run->filter, e->ts_ns);
	gp_events__want_tick(m->run->events, TICK_MS);
	if (memleak__on_exec(m->ml, e))
		gp_run__exit_report(m->run, m, e->pid);
}

static void h_tick(void *ctx)
{
	struct memleak_mode *m = ctx;
	struct gp_events *ev = m->run->events;

	ustack__reader_behind(m->us, ev && (gp_events__more(ev) || gp_events__unread(ev)));
	gp_events__want_tick(m->run->events, ustack__tick(m->us) ? TICK_MS : READ_MS);
}

/* The processes already running when tracing starts: -p, with --tree their descendants
 * (a command is still held before its exec: its exec record comes later). */
static void watch_seeds(struct memleak_mode *m)
{
	uint32_t pids[1024];
	size_t n = ptree__pids(m->run->ptree, pids, 1024);

	if (m->run->target_pid > 0)
		ustack__watch(m->us, (uint32_t)m->run->target_pid);
	for (size_t i = 0; i < n; i++)
		ustack__watch(m->us, pids[i]);
}

/* A process's first allocation call: what naming its frames needs, kept now. */
static void h_pin(void *ctx, const struct gp_pin_event *e)
{
	ustack__pin(((struct memleak_mode *)ctx)->us, e->pid);
}

static int m_start(void *st, struct gp_run *run, char *err, size_t len)
{
	struct memleak_mode *m = st;
	static const struct gp_on on[] = {
		GP_ON(GP_EV_ALLOC, h_alloc), GP_ON_FREES(h_free), GP_ON(GP_EV_EXIT, h_exit),
		GP_ON_PROCS(h_proc), GP_ON(GP_EV_STACK, h_stack), GP_ON(GP_EV_PYCODE, h_pycode),
		GP_ON(GP_EV_PYLINES, h_pylines)
	};
	struct gp_handlers h = { .ctx = st, GP_ONS(on), .on_tick = h_tick };
	int r;

	if (m->stacks != GP_STACKS_NONE) {
		m->us = ustack__new(run->sym, NULL, allocsrc__py_map_fd(run->allocs));
		if (!m->us) {
			snprintf(err, len, "out of memory");
			return -ENOMEM;
		}
		watch_seeds(m);
	}
	r = gp_share__start(run, NULL, &h, err, len);
	if (!r && m->us && allocsrc__pins_fd(run->allocs) >= 0) {
		static const struct gp_on pin_on[] = { GP_ON(GP_EV_PIN, h_pin) };
		struct gp_handlers ph = { .ctx = st, GP_ONS(pin_on) };

		/* read before the run's ring: see struct gp_pin_event */
		r = gp_events__add_first(run->events, allocsrc__pins_fd(run->allocs), &ph);
		if (r)
			snprintf(err, len, "cannot read the processes' first allocations: %s", strerror(-r));
	}
	gp_events__want_tick(run->events, READ_MS);
	return r;
}

static int fill_pids(struct ml_snap *s)
{
	struct gp_snap_pid *pids = gp_snap__pids(&s->pids, s->d.nr_procs);

	if (!pids)
		return -ENOMEM;
	s->hdr.pids = pids;
	/* the allocation probes' hits are counted once, by the run */
	for (size_t i = 0; i < s->d.nr_procs; i++)
		gp_snap__add_pid(&s->hdr, pids, s->d.procs[i].pid, s->d.procs[i].comm, s->d.procs[i].unnamed,
				 s->d.procs[i].exited, s->d.procs[i].exit_ns, 0);
	return 0;
}

static void fill_drops(struct memleak_mode *m, struct ml_snap *s)
{
	static const int reason[GP_DROP__COUNT] = {
		[GP_DROP_RINGBUF] = GP_R_RINGBUF_FULL, [GP_DROP_PENDING] = GP_R_PENDING_TABLE_FULL,
		[GP_DROP_STACK] = GP_R_STACK_UNREADABLE, [GP_DROP_NORETURN] = GP_R_RETURN_WITHOUT_ENTRY,
		[GP_DROP_PROCS] = GP_R_PROCESS_TABLE_FULL, [GP_DROP_SHARE] = GP_R_PENDING_SHARE_FULL,
		[GP_DROP_PYCODE] = GP_R_PYTHON_CODE_LOST,
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

/* The final report's stacks, folded: what `gpuprobe flame` draws. */
static void write_folded(struct memleak_mode *m, const struct gp_snap *final)
{
	int r = ml_report__folded(m->folded, final), c = outfile__close(m->folded);

	m->folded = NULL;
	m->folded_err = r ? r : c;
}

/* --folded: written once, from the final report's snapshot of every process */
static void m_report_files(void *st, const struct gp_snap *s, uint32_t pid)
{
	struct memleak_mode *m = st;

	if (m->folded && s->kind == GP_SNAP_FINAL && !pid)
		write_folded(m, s);
}

static const struct gp_snap *m_snapshot(void *st, struct gp_run *run, enum gp_snap_kind kind, uint32_t pid)
{
	struct memleak_mode *m = st;
	struct ml_snap *s = &m->snap;
	bool lists = kind != GP_SNAP_SCRAPE && kind != GP_SNAP_HITS;
	unsigned int flags = (lists ? ML_SNAP_ALLOCS : 0) | (kind == GP_SNAP_EXIT ? ML_SNAP_EXITED : 0);

	s->hdr = (struct gp_snap){ .mode = "memleak", .kind = kind, .now_ns = gp_run__now(run), .env = gp_run__env(run) };
	if (memleak__snapshot(m->ml, s->hdr.now_ns, pid, flags, gp_seconds_to_ns(ml_settings.older_than), &s->d) ||
	    fill_pids(s))
		return NULL;
	fill_drops(m, s);
	allocsrc__ok_calls(run->allocs, s->calls);
	s->top = ml_settings.top;
	s->stacks = m->stacks;
	s->show_allocs = ml_settings.show_allocs;
	s->older_than = ml_settings.older_than;
	return &s->hdr;
}

static void m_reap(void *st, struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid)
{
	struct memleak_mode *m = st;

	if (!run->behind) /* a process's last records may still be in the buffers */
		memleak__sweep(m->ml, gp_mono_ns());
	memleak__reap(m->ml, cutoff_ns, keep_pid);
}

/* Outstanding bytes of each live process by memory kind, device memory even at 0 once it
 * allocated (an exited process's memory went with it: its series stop, and a timeline
 * draws them down to 0). What an exited process held at its exit goes to live views only
 * (GP_CTR_DETAIL, series "device at exit"...): gpuprobe top keeps its final figures. */
static void m_counters(void *st, struct gp_run *run, gp_counter_fn emit, void *ctx)
{
	struct memleak_mode *m = st;
	struct ml_proc **procs;
	size_t n = memleak__procs(m->ml, &procs);
	char series[48];

	(void)run;
	for (size_t i = 0; i < n; i++)
		for (unsigned int k = 0; k < GP_KIND__COUNT; k++) {
			bool exited = procs[i]->h.exited;

			if (!procs[i]->st.allocs_by_kind[k] && !(k == GP_KIND_DEVICE && procs[i]->st.allocs_total))
				continue;
			snprintf(series, sizeof(series), "%s%s", gp_kind_name(k), exited ? " at exit" : "");
			emit(ctx, &(struct gp_counter){ procs[i]->h.pid, GP_TRACK_MEMORY, series,
							(double)procs[i]->st.bytes_by_kind[k],
							exited ? GP_CTR_DETAIL : 0 });
		}
}

static int m_finish(void *st, struct gp_run *run, char *err, size_t len)
{
	struct memleak_mode *m = st;
	struct ustack_stats us = { 0 };

	(void)run;
	if (m->us) {
		ustack__stats(m->us, &us);
		gp_log(GP_LOG_DEBUG, "stacks: %llu resolved, %llu native and %llu Python frames, %llu unresolved; "
		       "%llu processes looked at for CPython, %llu found; %llu stack records without their allocation",
		       (unsigned long long)us.stacks, (unsigned long long)us.native_frames,
		       (unsigned long long)us.py_frames, (unsigned long long)us.unresolved,
		       (unsigned long long)us.inspected, (unsigned long long)us.python_procs,
		       (unsigned long long)m->lost_joins);
		gp_log(GP_LOG_DEBUG, "Python code objects: %llu copied at their first sight, %llu not kept, "
		       "%llu malformed; %llu frames named from a copy, %llu not named",
		       (unsigned long long)us.py_copies, (unsigned long long)us.py_copies_refused,
		       (unsigned long long)us.py_copies_malformed, (unsigned long long)us.py_named_from_copy,
		       (unsigned long long)us.py_unnamed);
	}
	if (m->folded) /* no final report was taken (an error ended the run) */
		write_folded(m, &m->snap.hdr);
	if (m->folded_err)
		snprintf(err, len, "--folded %s: %s", ml_settings.folded, strerror(-m->folded_err));
	return m->folded_err;
}

const struct gp_mode gp_mode_memleak = {
	.name = "memleak",
	.flag = "memleak",
	.doc = "Outstanding device/host/managed allocations per process, grouped by allocating stack",
	.needs = GP_NEED_LIBCUDA | GP_NEED_ALLOCS,
	.frontends = GP_FE_ALL,
	.exit_reports = true,
	.probe_hits = true,
	.options = options,
	.ring_bytes = m_ring_bytes,
	.open = m_open,
	.start = m_start,
	.snapshot = m_snapshot,
	.report_files = m_report_files,
	.text = ml_report__text,
	.json = ml_report__json,
	.prom = ml_report__prom,
	.reap = m_reap,
	.counters = m_counters,
	.finish = m_finish,
	.free = m_free,
};
