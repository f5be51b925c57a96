/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --trace FILE: every exported cu* function (or those --trace-filter keeps), one record
 * per call into the run's timeline (src/core/timeline.c), and a summary at the end
 * (apitrace.c) of the calls and of the other lanes (ioctls).
 */
#include <errno.h>
#include <sys/stat.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "api_trace.skel.h"
#include "modes/trace/apitrace.h"
#include "core/attach.h"
#include "lib/elfsym.h"
#include "core/events.h"
#include "out/json.h"
#include "core/mode.h"
#include "lib/option.h"
#include "core/options.h"
#include "core/run_impl.h"
#include "lib/target.h"
#include "core/timeline.h"
#include "lib/apis.h"
#include "lib/util.h"

#define MAX_FUNCS 4096   /* bpf/api_trace.bpf.c */
#define MAX_FILTERS 32
/* New names one library may add unless root owns it and only root may write it: a
 * process names any file libcuda.so.1, and one with 5,001 cu* exports took every place
 * (node-wide --trace would refuse to start: "Argument list too long"). */
#define LIB_NEW_MAX 1024

static struct {
	const char *filter[MAX_FILTERS];
	int nr_filter;
} tr_settings;

static int parse_filter(const char *arg, void *dest, char *err, size_t len)
{
	(void)dest;
	if (tr_settings.nr_filter >= MAX_FILTERS) {
		snprintf(err, len, "at most %d --trace-filter patterns", MAX_FILTERS);
		return -E2BIG;
	}
	tr_settings.filter[tr_settings.nr_filter++] = arg;
	return 0;
}

static const struct gp_option options[] = {
	{ "trace-format", 0, "jsonl|chrome", "File format (default jsonl; chrome loads in Perfetto)",
	  GP_OPT_CHOICE, &gp_opts.trace_format, .choices = "jsonl|chrome", .frontends = GP_FE_CLI,
	  .group = GP_GRP_MODE },
	{ "trace-counters", 0, "SECONDS", "Counter tracks (outstanding bytes, launches, copy bytes) sampled every "
	  "SECONDS (default 0.1; 0: none)", GP_OPT_SECONDS, &gp_opts.trace_counters, 0, 3600, .frontends = GP_FE_CLI,
	  .group = GP_GRP_MODE },
	{ "trace-filter", 0, "GLOB", "Only functions matching GLOB (repeatable), e.g. 'cuMem*'", GP_OPT_CUSTOM,
	  NULL, .parse = parse_filter, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{},
};

struct trace_mode {
	struct gp_run *run;
	struct api_trace_bpf *skel;
	struct apitrace *at;
	char **names;
	int nr_names;
	uint64_t skipped; /* cu* functions of libraries over their cap: not traced */
	struct attach_pair probes;
};

static void m_free(void *st)
{
	struct trace_mode *m = st;

	if (!m)
		return;
	api_trace_bpf__destroy(m->skel);
	apitrace__free(m->at);
	for (int i = 0; i < m->nr_names; i++)
		free(m->names[i]);
	free(m->names);
	free(m);
}

static bool wanted(const char *name)
{
	if (strncmp(name, "cu", 2))
		return false;
	if (!tr_settings.nr_filter)
		return true;
	for (int i = 0; i < tr_settings.nr_filter; i++)
		if (!fnmatch(tr_settings.filter[i], name, 0))
			return true;
	return false;
}

/* A driver entry point gpuprobe knows by name (src/lib/apis.c): taken first. */
static bool known(const char *name)
{
	for (unsigned int id = 0; id < GP_API__COUNT; id++) {
		const char *n = gp_api_name(id);

		if (n && !strcmp(n, name))
			return true;
	}
	return false;
}

/* One library's pass: known names first (pass 0), then the others, cap new names in all. */
struct collect_ctx {
	struct trace_mode *m;
	int pass;
	int cap, added;
	uint64_t over; /* wanted names past the cap */
};

static int collect_cb(const char *name, unsigned long long value, unsigned long long size, void *ctx)
{
	struct collect_ctx *c = ctx;
	struct trace_mode *m = c->m;
	char **nn;

	(void)value;
	(void)size;
	if (!wanted(name) || known(name) != (c->pass == 0))
		return 0;
	for (int i = 0; i < m->nr_names; i++)
		if (!strcmp(m->names[i], name))
			return 0;
	if (m->nr_names >= MAX_FUNCS || c->added >= c->cap) {
		c->over++; /* counted, never fatal: the other libraries are still traced */
		return 0;
	}
	nn = realloc(m->names, (size_t)(m->nr_names + 1) * sizeof(*nn));
	if (!nn)
		return -ENOMEM;
	m->names = nn;
	m->names[m->nr_names] = strdup(name);
	if (!m->names[m->nr_names])
		return -ENOMEM;
	m->nr_names++;
	c->added++;
	return 0;
}

/* Root's file that only root may change: the system's driver, not one a user planted. */
static bool trusted(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* Why nothing is traced, as it is: no driver file found at the start (its functions are
 * listed from the files found then), none exporting a cu* function, or the patterns. */
static int no_names(const struct lib_set *libs, char *err, size_t len)
{
	if (!libs || !libs->n)
		snprintf(err, len, "--trace: no libcuda.so.1 found to list its functions from (the command's library folders, LD_LIBRARY_PATH, ldconfig, the usual driver folders%s): name one with --libcuda PATH",
			 gp_opts.nr_pids ? ", the -p processes' mappings" : "");
	else if (tr_settings.nr_filter)
		snprintf(err, len, "--trace: no exported cu* function matches the --trace-filter patterns (in %d libcuda file%s)",
			 libs->n, libs->n > 1 ? "s" : "");
	else
		snprintf(err, len, "--trace: the %d libcuda file%s found export%s no cu* function: not the CUDA driver? (--libcuda PATH names it)",
			 libs->n, libs->n > 1 ? "s" : "", libs->n > 1 ? "" : "s");
	return -ENOENT;
}

/*
 * Automatic discovery: every exported cu* function of the libraries in use, root's files
 * first; a library of anyone else adds at most LIB_NEW_MAX names, the known entry points
 * first; what does not fit is counted and logged, and the library is still probed for the
 * names it shares with the others.
 */
static int collect(struct trace_mode *m, const struct lib_set *libs, char *err, size_t len)
{
	for (int round = 0; round < 2; round++)
		for (int i = 0; libs && i < libs->n; i++) {
			struct collect_ctx c = { .m = m, .cap = round ? LIB_NEW_MAX : MAX_FUNCS };
			int r = 0;

			if (trusted(libs->libs[i].fd) != (round == 0))
				continue;
			for (c.pass = 0; c.pass < 2 && r >= 0; c.pass++)
				r = elfsym__foreach_func_fd(libs->libs[i].fd, collect_cb, &c);
			if (r < 0) {
				/* one unreadable file costs its own functions, not the run */
				gp_log(GP_LOG_WARN, "--trace: %s: cannot list its functions: %s", libs->libs[i].name,
				       strerror(-r));
				continue;
			}
			if (c.over) {
				m->skipped += c.over;
				gp_log(GP_LOG_WARN, "--trace: %s: %llu of its cu* functions not traced (%s)",
				       libs->libs[i].name, (unsigned long long)c.over,
				       m->nr_names >= MAX_FUNCS ? "4096 functions in all" :
				       "a library root does not own adds at most 1024");
			}
		}
	if (!m->nr_names)
		return no_names(libs, err, len);
	return 0;
}

static int m_open(struct gp_run *run, void **st, char *err, size_t len)
{
	struct trace_mode *m = calloc(1, sizeof(*m));
	int r;

	*st = m;
	if (!m)
		return -ENOMEM;
	m->run = run;
	r = collect(m, run->libs[GP_LIB_CUDA], err, len);
	if (r)
		return r;
	m->at = apitrace__new((const char *const *)m->names, m->nr_names);
	m->skel = api_trace_bpf__open();
	if (!m->at || !m->skel) {
		snprintf(err, len, "cannot open the trace BPF object");
		return -ENOMEM;
	}
	attach_pair__prepare(&m->probes, m->skel->progs.trace_enter, m->skel->progs.trace_leave, "trace");
	bpf_map__set_max_entries(m->skel->maps.calls_rb, run->o->ringbuf_set ? (__u32)run->o->ringbuf_size : 16U << 20);
	bpf_map__set_max_entries(m->skel->maps.stacks, (__u32)run->o->max_pending);
	gp_run__set_shares(run, m->skel);
	r = gp_run__adopt(run, m->skel);
	if (r) {
		snprintf(err, len, "cannot share the process table: %s", strerror(-r));
		return r;
	}
	r = api_trace_bpf__load(m->skel);
	if (r) {
		attach__load_error(r, err, len);
		return r;
	}
	for (int i = 0; i < m->nr_names; i++) {
		__u32 k = (__u32)i, fl = apitrace__fn_flags(m->at, k);

		if (fl)
			bpf_map_update_elem(bpf_map__fd(m->skel->maps.fn_flags), &k, &fl, BPF_ANY);
	}
	return 0;
}

static int m_attach(void *st, struct gp_run *run, enum gp_lib kind, const char *lib, char *err, size_t len)
{
	struct trace_mode *m = st;
	long long *offsets = calloc((size_t)m->nr_names, sizeof(*offsets));
	__u64 *cookies = calloc((size_t)m->nr_names, sizeof(*cookies));
	int r = -ENOMEM;
	(void)kind; /* libcuda only */

	if (!offsets || !cookies)
		goto cleanup;
	for (int i = 0; i < m->nr_names; i++)
		cookies[i] = (__u64)i;
	r = attach__resolve(lib, (const char *const *)m->names, m->nr_names, offsets, err, len);
	if (r < 0)
		goto cleanup;
	/* aliases (two names, one address) would be probed twice: keep the first */
	for (int i = 0; i < m->nr_names; i++)
		for (int j = 0; j < i && offsets[i] >= 0; j++)
			if (offsets[j] == offsets[i])
				offsets[i] = -1;
	r = attach_pair__attach(&m->probes, run->links, lib, offsets, NULL, cookies, m->nr_names,
				run->target_pid, err, len);
cleanup:
	free(offsets);
	free(cookies);
	return r;
}

static void h_call_str(void *ctx, const struct gp_call_str_event *e)
{
	apitrace__on_call_str(((struct trace_mode *)ctx)->at, e);
}

static void h_call(void *ctx, const struct gp_call_event *e)
{
	struct trace_mode *m = ctx;
	json_object *args;

	apitrace__set_comm(m->at, e->pid, gp_timeline__comm(m->run->timeline, e->pid));
	args = apitrace__on_call(m->at, e);
	gp_timeline__event(m->run->timeline, GP_LANE_CALL, e->pid, e->tid, apitrace__fn_name(m->at, e->fn),
			   e->ts_ns, e->dur_ns, e->ret, args);
}

/* the other lanes of the timeline go into the summary too */
static void on_lane(void *ctx, enum gp_lane lane, uint32_t pid, uint64_t dur_ns, int64_t ret)
{
	struct trace_mode *m = ctx;

	if (lane == GP_LANE_IOCTL) {
		apitrace__set_comm(m->at, pid, gp_timeline__comm(m->run->timeline, pid));
		apitrace__on_ioctl(m->at, pid, dur_ns, ret);
	}
}

static int m_start(void *st, struct gp_run *run, char *err, size_t len)
{
	struct trace_mode *m = st;
	static const struct gp_on on[] = { GP_ON(GP_EV_CALL, h_call), GP_ON(GP_EV_CALL_STR, h_call_str) };
	struct gp_handlers h = { .ctx = m, GP_ONS(on) };
	int r;

	if (!m->probes.multi)
		gp_log(GP_LOG_WARN, "warning: no uprobe_multi links (Linux < 6.6): %d functions attach "
				    "one by one, and detaching takes ~0.1 s each", m->nr_names);
	r = attach_set__auto(run->links, m->skel->progs.trace_proc_exit, err, len);
	if (r)
		return r;
	gp_timeline__listen(run->timeline, on_lane, m);
	r = gp_events__add(run->events, bpf_map__fd(m->skel->maps.calls_rb), &h);
	if (r)
		snprintf(err, len, "cannot read the trace ring buffer: %s", strerror(-r));
	return r;
}

static const struct gp_snap *m_snapshot(void *st, struct gp_run *run, enum gp_snap_kind kind, uint32_t pid)
{
	/* no periodic reports: the summary comes at the end (m_finish) */
	(void)st, (void)run, (void)kind, (void)pid;
	return NULL;
}

/* The timeline is closed with the summary as its last record; the summary is printed too. */
static int m_finish(void *st, struct gp_run *run, char *err, size_t len)
{
	struct trace_mode *m = st;
	struct at_drops d = {
		.ringbuf = m->skel->bss->tdrops[GP_CDROP_RINGBUF],
		.pending = m->skel->bss->tdrops[GP_CDROP_PENDING],
		.noreturn = m->skel->bss->tdrops[GP_CDROP_NORETURN],
		.share = m->skel->bss->tdrops[GP_CDROP_SHARE],
		.too_deep = m->skel->bss->tdeep,
		.names_lost = m->skel->bss->tnames_lost,
		.fns_skipped = m->skipped,
		.ioctl_ringbuf = gp_timeline__drops(run->timeline, GP_LANE_IOCTL),
	};
	struct at_file file = {
		.path = run->o->trace,
		.format = run->o->trace_format ? "chrome" : "jsonl",
		.written = gp_timeline__written(run->timeline),
		.counters = gp_timeline__counter_events(run->timeline),
		.instants = gp_timeline__instants(run->timeline),
		.counter_interval_s = run->o->trace_counters,
	};
	int r;

	d.counter_series = gp_timeline__counter_drops(run->timeline);
	r = gp_timeline__close(run->timeline, apitrace__summary_json(m->at, &d, &file));
	run->timeline = NULL;
	if (run->o->json)
		gp_json__print(run->out, apitrace__summary_json(m->at, &d, &file));
	else
		apitrace__summary_text(m->at, run->out, &d, &file, run->o->verbose);
	fflush(run->out);
	if (r)
		snprintf(err, len, "--trace %s: %s", run->o->trace, strerror(-r));
	return r;
}

const struct gp_mode gp_mode_trace = {
	.name = "trace",
	.flag = "trace",
	.arg = "FILE",
	.arg_dest = &gp_opts.trace,
	.doc = "Every driver call (all exported cu* functions) as a timeline in FILE, and a summary",
	.needs = GP_NEED_LIBCUDA,
	.frontends = GP_FE_CLI,
	.options = options,
	.open = m_open,
	.attach = m_attach,
	.start = m_start,
	.snapshot = m_snapshot,
	.finish = m_finish,
	.free = m_free,
};
