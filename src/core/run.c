/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>
#include "core/allocsrc.h"
#include "core/attach.h"
#include "core/budget.h"
#include "core/calibrate.h"
#include "core/counters.h"
#include "core/events.h"
#include "lib/libslots.h"
#include "lib/proctab.h"
#include "core/libwatch.h"
#include "core/nvml.h"
#include "core/objshare.h"
#include "core/options.h"
#include "core/ptree.h"
#include "lib/reasons.h"
#include "core/run_impl.h"
#include "lib/symbolize.h"
#include "core/timeline.h"
#include "lib/u64map.h"
#include "lib/util.h"

const struct gp_mode *gp_mode__find(const char *name)
{
	for (int i = 0; gp_modes[i]; i++)
		if (!strcmp(gp_modes[i]->name, name))
			return gp_modes[i];
	return NULL;
}

unsigned int gp_run__needs(uint64_t modes)
{
	unsigned int needs = 0;

	for (int i = 0; gp_modes[i]; i++)
		if (modes & (1ULL << i))
			needs |= gp_modes[i]->needs;
	return needs;
}

int gp_run__prepare_command(uint64_t modes, char *err, size_t len)
{
	int r = 0;

	for (int i = 0; gp_modes[i] && !r; i++)
		if (modes & (1ULL << i) && gp_modes[i]->prepare_command)
			r = gp_modes[i]->prepare_command(err, len);
	return r;
}

/* What the runtime's pieces share, now (the process tree and the budget once opened). */
static struct objshare share_of(const struct gp_run *run)
{
	return (struct objshare){
		.traced_fd = run->ptree ? ptree__traced_fd(run->ptree) : -1,
		.ended_fd = run->ended_fd,
		.exits_fd = run->exits_fd,
		.ring_fd = run->shared_rb,
		.hits_fd = run->budget ? gp_budget__hits_fd(run->budget) : -1,
		.filter = run->filter,
		.max_procs = (uint32_t)run->o->max_procs,
		.max_pending = run->o->max_pending,
		.events = run->events,
	};
}

/* The library watch's reports (src/core/libwatch.h): ctx is the run. */
static int watch_attach(void *ctx, enum gp_lib kind, const char *path, char *err, size_t len)
{
	return gp_run__attach_lib(ctx, kind, path, err, len);
}

static int watch_detach(void *ctx, enum gp_lib kind, int tag, dev_t dev, ino_t ino)
{
	return gp_run__detach_lib(ctx, kind, tag, dev, ino);
}

static void watch_unseen(void *ctx, uint32_t pid, uint64_t mapped_ns, uint64_t probed_ns)
{
	gp_run__note_unseen(ctx, pid, mapped_ns, probed_ns);
}

struct gp_run *gp_run__new(const struct gp_opts *o, char *err, size_t len)
{
	struct gp_run *run = calloc(1, sizeof(*run));
	struct libwatch_ops ops = { .ctx = run, .attach_lib = watch_attach, .detach_lib = watch_detach,
				    .unseen = watch_unseen };

	if (!run)
		goto oom;
	run->o = o;
	run->shared_rb = -1;
	run->ended_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "gp_ended", sizeof(__u32), sizeof(__u32), 1, NULL);
	run->exits_fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "gp_exits", sizeof(__u32), sizeof(struct gp_exit_cgroups),
				       o->max_procs ? (__u32)o->max_procs : 8192, NULL);
	run->target_pid = -1;
	run->out = stdout;
	run->start_ns = gp_mono_ns();
	run->sym = symbolizer__new("/proc");
	run->links = attach_set__new();
	run->events = gp_events__new();
	run->watch = libwatch__new(&ops);
	run->slots = libslots__new();
	if (!run->sym || !run->links || !run->events || !run->watch || !run->slots)
		goto oom;
	for (int i = 0; gp_modes[i] && run->nr < GP_MAX_MODES; i++)
		if (o->modes & (1ULL << i))
			run->slot[run->nr++].m = gp_modes[i];
	return run;
oom:
	snprintf(err, len, "out of memory");
	gp_run__free(run);
	return NULL;
}

/* The ring buffer of the records whose order matters, shared by the BPF objects that
 * write them (bpf_map__reuse_fd) and read once. */
static int open_shared_rb(struct gp_run *run, char *err, size_t len)
{
	uint64_t size = run->o->ringbuf_size;
	int fd;

	for (int i = 0; i < run->nr && !run->o->ringbuf_set; i++)
		if (run->slot[i].m->ring_bytes && run->slot[i].m->ring_bytes(run) > size)
			size = run->slot[i].m->ring_bytes(run);
	fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "gp_shared_rb", 0, 0, (__u32)size, NULL);

	if (fd < 0) {
		snprintf(err, len, "cannot create the ring buffer: %s%s", strerror(errno),
			 errno == EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		return -errno;
	}
	run->shared_rb = fd;
	return 0;
}

/* What one probe hit costs, for the budget: --probe-cost (both prices), else calibrated
 * now, warm and cold (src/core/calibrate.c). */
static struct gp_probe_cost hit_cost(const struct gp_opts *o)
{
	struct gp_probe_cost c = { o->probe_cost, o->probe_cost };
	const char *t = getenv("GPUPROBE_TEST_PROBE_COST");
	int r = 0;

	/* tests only: a hit priced as on an emulated CPU (6.1 under QEMU's TCG: 15-60 us cold,
	 * 8.2 us warm), so that the budget's floor can be tested natively
	 * (tests/integration/test_budget.py): "SECONDS" both prices, "WARM,COLD" each */
	if (t && atof(t) > 0 && atof(t) < 1) {
		const char *comma = strchr(t, ',');
		double cold = comma && atof(comma + 1) >= atof(t) && atof(comma + 1) < 1 ? atof(comma + 1) : atof(t);

		gp_log(GP_LOG_WARN, "GPUPROBE_TEST_PROBE_COST: a probe hit priced at %g s warm, %g s cold (not calibrated)",
		       atof(t), cold);
		return (struct gp_probe_cost){ atof(t), cold };
	}

	for (int i = 0; o->probe_cost <= 0 && i < 3; i++) {
		r = calibrate__probe_costs(GP_CALIBRATE_CALLS, &c);
		if (!r && c.warm > 0)
			break;
	}
	if (c.warm <= 0 || r) {
		gp_log(GP_LOG_WARN, "cannot calibrate the probe cost (%s): the budget prices a hit at 1 us warm, 3 us cold",
		       r ? strerror(-r) : "no difference measured");
		c = (struct gp_probe_cost){ 1e-6, 3e-6 };
	}
	return c;
}

/*
 * --max-overhead (the daemon's default 1 %, the CLI's none; 100: none). It arms the sampled
 * probes for a window of each period: uprobe_multi links made and closed (Linux 6.6), else
 * tracefs uprobe events armed and disarmed (uevent.h; a perf-event uprobe takes ~0.1 s to
 * release, and one disabled still traps). Where neither can be, the kernel cannot sample:
 * asked for, that is an error; the daemon's default says so once and counts every call.
 */
static int open_budget(struct gp_run *run, char *err, size_t len)
{
	const struct gp_opts *o = run->o;
	bool given = o->max_overhead >= 0;
	double pct = given ? o->max_overhead : o->frontend == GP_FE_DAEMON ? 1.0 : 0;
	char why[320];

	if (pct <= 0 || pct >= 100 || !(gp_run__needs(o->modes) & GP_NEED_LIBCUDA))
		return 0;
	run->budget_pct = pct;
	run->budget_how = gp_budget_mechanism(true, why, sizeof(why), &run->budget_reason);
	if (run->budget_how == GP_BUDGET_NONE) {
		if (!given) {
			gp_log(GP_LOG_WARN, "this kernel cannot sample the probes (%s): no overhead budget, every call is counted at full cost",
			       why);
			return 0;
		}
		snprintf(err, len, "--max-overhead cannot sample on this kernel: %s", why);
		return -EOPNOTSUPP;
	}
	gp_log(GP_LOG_DEBUG, "budget: the sampled probes are armed per window through %s",
	       run->budget_how == GP_BUDGET_MULTI ? "uprobe_multi links" : "tracefs uprobe events");
	struct gp_probe_cost c = hit_cost(o);

	run->budget = gp_budget__new(pct, &c, run->budget_how, err, len);
	return run->budget ? 0 : -ENOMEM;
}

static int open_watch(struct gp_run *run, char *err, size_t len)
{
	struct objshare sh = share_of(run);
	struct libwatch_opts wo = {
		.share = &sh, .links = run->links, .slots = run->slots, .target_pid = run->target_pid,
		.hold_libcuda = run->o->cmd != NULL, .needs = gp_run__needs(run->o->modes),
		.libcuda = run->o->libcuda, .libnccl = run->o->libnccl, .pids = run->o->pids,
		.nr_pids = run->o->nr_pids,
	};

	return libwatch__open(run->watch, &wo, err, len);
}

int gp_run__begin(struct gp_run *run, const struct gp_run_begin *b, char *err, size_t len)
{
	int r = gp_run__open(run, err, len);

	if (!r && b->attach)
		r = b->attach(b->ctx, run, err, len);
	if (!r && b->watch_kinds)
		r = gp_run__watch_libs(run, b->watch_kinds, err, len);
	if (!r)
		r = gp_run__start(run, err, len);
	return r;
}

void gp_run__set_trace_writer(struct gp_run *run, trace_sink_open_fn *open)
{
	run->trace_open = open;
}

int gp_run__open(struct gp_run *run, char *err, size_t len)
{
	unsigned int needs = gp_run__needs(run->o->modes);
	int r = open_budget(run, err, len);

	if (r)
		return r;
	if (run->o->trace) {
		run->timeline = gp_timeline__open(run->trace_open, run->o->trace, run->o->trace_format, err, len);
		if (!run->timeline)
			return -EIO;
	}
	if (needs & (GP_NEED_LIBCUDA | GP_NEED_LIBNCCL | GP_NEED_ALLOCS) || run->filter) {
		struct ptree_opts po = { .filter = run->filter, .follow_forks = run->follow_forks,
					 .comm = run->comm, .cgroup = run->cgroup };
		struct objshare sh;

		r = open_shared_rb(run, err, len);
		sh = share_of(run);
		po.share = &sh;
		if (!r)
			r = ptree__open(&run->ptree, &po, err, len);
		if (!r && needs & (GP_NEED_LIBCUDA | GP_NEED_LIBNCCL))
			r = open_watch(run, err, len);
		if (r)
			return r;
	}
	if (needs & GP_NEED_ALLOCS) {
		struct objshare sh = share_of(run);

		r = allocsrc__open(&run->allocs, &sh, err, len);
		if (r)
			return r;
	}
	for (int i = 0; i < run->nr; i++) {
		r = run->slot[i].m->open(run, &run->slot[i].st, err, len);
		if (r)
			return r;
	}
	/* configured by the modes that use it (stacks or not): loaded last */
	return run->allocs ? allocsrc__load(run->allocs, err, len) : 0;
}

int gp_run__attach_lib(struct gp_run *run, enum gp_lib kind, const char *path, char *err, size_t len)
{
	static int partial_tag; /* a file's own tag when the front end gave none */
	int r = libwatch__claim(run->watch, kind, path), tag, own;
	struct stat st;

	if (r == 0)
		return 0; /* probed already */
	/* what one file's attach got before it failed is taken back, not left holding
	 * descriptors (perf-event uprobes: two a function; a library of 5,000 functions ran
	 * the run out of them and it failed as a whole) */
	tag = attach_set__tag(run->links, 0);
	own = tag ? tag : --partial_tag;
	attach_set__tag(run->links, own);
	r = 0;
	if (run->allocs && kind == GP_LIB_CUDA)
		r = allocsrc__attach(run->allocs, run->links, path, run->target_pid, err, len);
	for (int i = 0; i < run->nr && !r; i++)
		if (run->slot[i].m->attach && (run->slot[i].m->needs & gp_need_of_lib(kind)))
			r = run->slot[i].m->attach(run->slot[i].st, run, kind, path, err, len);
	if (r) {
		attach_set__detach_tag(run->links, own);
		if (!stat(path, &st))
			attach_set__note(run->links, -gp_budget__remove_file(run->budget, st.st_dev, st.st_ino));
	}
	attach_set__tag(run->links, tag);
	return r;
}

int gp_run__detach_lib(struct gp_run *run, enum gp_lib kind, int tag, dev_t dev, ino_t ino)
{
	int gone = attach_set__detach_tag(run->links, tag), sampled = gp_budget__remove_file(run->budget, dev, ino);

	attach_set__note(run->links, -sampled);
	libwatch__unclaim(run->watch, kind, dev, ino);
	return gone + sampled;
}

int gp_run__watch_libs(struct gp_run *run, unsigned int kinds, char *err, size_t len)
{
	return libwatch__start(run->watch, kinds, err, len);
}

void gp_run__tick(struct gp_run *run)
{
	libwatch__tick(run->watch);
}

/* An exec replaces the process's mappings: what the symbolizer knew of them is stale.
 * Forks, execs and exits are moments of the --trace timeline. */
static void run_on_proc(void *ctx, const struct gp_proc_event *e)
{
	struct gp_run *run = ctx;

	if (e->type == GP_EV_EXEC)
		symbolizer__forget_pid(run->sym, (int)e->pid);
	if (e->type == GP_EV_GONE)
		gp_budget__exited(run->budget, e->pid, e->ts_ns);
	if (run->timeline)
		gp_timeline__proc(run->timeline, e->type, e->pid, e->ppid, e->root, e->ts_ns, e->comm);
}

/* The allocation probes' exit records: the exits of processes the run does not follow
 * (node-wide), which the timeline shows when it shows the process. */
static void run_on_exit(void *ctx, const struct gp_exit_event *e)
{
	struct gp_run *run = ctx;

	gp_budget__exited(run->budget, e->pid, e->ts_ns);
	if (run->timeline)
		gp_timeline__proc(run->timeline, GP_EV_EXIT, e->pid, 0, 0, e->ts_ns, e->comm);
}

int gp_run__start(struct gp_run *run, char *err, size_t len)
{
	static const struct gp_on on[] = { GP_ON_PROCS(run_on_proc), GP_ON(GP_EV_EXIT, run_on_exit) };
	struct gp_handlers h = { .ctx = run, GP_ONS(on) };
	int r = 0;

	if (run->ptree)
		r = ptree__start(run->ptree, run->links, err, len);
	if (!r && run->ptree)
		r = gp_run__subscribe(run, &h);
	if (!r && run->allocs)
		r = allocsrc__start(run->allocs, run->links, err, len);
	for (int i = 0; i < run->nr && !r; i++)
		if (run->slot[i].m->start)
			r = run->slot[i].m->start(run->slot[i].st, run, err, len);
	if (!r && run->budget)
		r = gp_budget__start(run->budget, err, len);
	/* NVML: on with --nvml, in the daemon and top unless --no-nvml; its own thread */
	if (!r && (run->o->nvml > 0 ||
		   (run->o->nvml < 0 && (run->o->frontend == GP_FE_DAEMON || run->o->frontend == GP_FE_TOP))))
		run->nvml = gp_nvml__start(&(struct gp_nvml_opts){ .period_s = run->o->nvml_period,
								    .quiet = run->o->nvml < 0 });
	return r;
}

int gp_run__adopt_map(struct gp_run *run, struct bpf_map *traced, struct bpf_map *ended, struct bpf_map *exits,
		      bool *filter)
{
	struct objshare sh = share_of(run);

	return objshare__adopt(&sh, traced, ended, exits, filter);
}

void gp_run__set_shares_of(struct gp_run *run, struct bpf_map *counters, __u32 *free_places, __u32 *proc,
			   __u32 *user)
{
	struct objshare sh = share_of(run);

	objshare__set_shares(&sh, counters, free_places, proc, user);
}

int gp_run__adopt_hits_map(struct gp_run *run, struct bpf_map *hits, bool *count)
{
	struct objshare sh = share_of(run);

	return objshare__adopt_hits(&sh, hits, count);
}

void gp_run__prepare_sampled(struct gp_run *run, struct attach_pair *sampled, const struct attach_pair *all,
			     struct bpf_program *enter_ev, struct bpf_program *leave_ev)
{
	bool own = run->budget && run->budget_how == GP_BUDGET_UEVENTS && all->multi;

	bpf_program__set_autoload(enter_ev, own);
	bpf_program__set_autoload(leave_ev, own);
	*sampled = *all;
	if (own) {
		sampled->enter = enter_ev;
		sampled->leave = leave_ev;
		sampled->multi = false;
	}
}

int gp_run__attach_sampled(struct gp_run *run, const struct attach_pair *p, const char *lib,
			   const long long *offsets, const long long *ret_offsets, const __u64 *cookies,
			   int n, pid_t pid, const volatile int64_t *hold, char *err, size_t len)
{
	struct gp_sampled g = {
		.enter = bpf_program__fd(p->enter), .leave = p->leave ? bpf_program__fd(p->leave) : -1,
		.path = lib, .offsets = offsets, .ret_offsets = ret_offsets, .cookies = cookies, .n = n,
		.pid = pid, .hold = hold, .what = p->what,
	};
	int r, probes = 0;

	if (!run->budget)
		return attach_pair__attach(p, run->links, lib, offsets, ret_offsets, cookies, n, pid, err, len);
	r = gp_budget__add(run->budget, &g, err, len);
	for (int i = 0; !r && i < n; i++)
		probes += (offsets[i] >= 0) + (g.leave >= 0 && (ret_offsets ? ret_offsets : offsets)[i] >= 0);
	if (!r)
		attach_set__note(run->links, probes);
	return r;
}

bool gp_run__exit_cgroup(const struct gp_run *run, uint32_t pid, uint64_t *v2, uint64_t *memory)
{
	struct gp_exit_cgroups v;

	if (run->exits_fd < 0 || bpf_map_lookup_elem(run->exits_fd, &pid, &v))
		return false;
	*v2 = v.v2;
	*memory = v.memory;
	return true;
}

void gp_run__exited(struct gp_run *run, uint32_t pid, uint64_t ts_ns)
{
	gp_budget__exited(run->budget, pid, ts_ns);
}

bool gp_run__sampling(struct gp_run *run, uint32_t pid, struct gp_sampling *out)
{
	return gp_budget__sampling(run->budget, pid, out);
}

void gp_run__stop_budget(struct gp_run *run)
{
	gp_budget__stop(run->budget);
}

bool gp_run__sampling_settled(struct gp_run *run, uint32_t pid, struct gp_sampling *out)
{
	return gp_budget__sampling_settled(run->budget, pid, out);
}

size_t gp_run__drops(const struct gp_run *run, struct gp_snap_drop *drops)
{
	uint64_t lost, full;

	if (!run->ptree)
		return 0;
	ptree__drops(run->ptree, &lost, &full);
	drops[0] = (struct gp_snap_drop){ GP_R_PROCESS_RECORDS_LOST, lost };
	drops[1] = (struct gp_snap_drop){ GP_R_FOLLOWED_TABLE_FULL, full };
	return GP_RUN_DROPS;
}

int gp_run__follow(struct gp_run *run, uint32_t pid, bool descendants, char *err, size_t len)
{
	if (!run->ptree) {
		snprintf(err, len, "no process tree in this run");
		return -EINVAL;
	}
	return ptree__seed(run->ptree, pid, descendants, err, len);
}

static void note(struct gp_run *run, uint32_t pid, uint64_t mapped_ns, uint64_t probed_ns, bool started)
{
	struct gp_unseen *u;

	/* one -p process: the linker's hook and scans may meet others, which are not traced */
	if (run->target_pid > 0 && pid != (uint32_t)run->target_pid)
		return;
	if (!run->unseen)
		run->unseen = u64map__new();
	if (!run->unseen || u64map__get(run->unseen, pid))
		return;
	run->unseen_total++;
	if (u64map__size(run->unseen) >= GP_UNSEEN_MAX) {
		gp_log(GP_LOG_DEBUG, "PID %u: calls before the probes not seen (not kept: %d processes noted)", pid,
		       GP_UNSEEN_MAX);
		return;
	}
	u = malloc(sizeof(*u));
	if (!u)
		return;
	*u = (struct gp_unseen){ mapped_ns, probed_ns, started };
	if (u64map__put(run->unseen, pid, u))
		free(u);
}

void gp_run__note_unseen(struct gp_run *run, uint32_t pid, uint64_t mapped_ns, uint64_t probed_ns)
{
	struct gp_unseen u = { mapped_ns, probed_ns, false };
	char line[160];

	if (run->target_pid > 0 && pid != (uint32_t)run->target_pid)
		return;
	note(run, pid, mapped_ns, probed_ns, false);
	gp_unseen__text(&u, line, sizeof(line));
	gp_log(GP_LOG_INFO, "PID %u: %s", pid, line);
}

void gp_run__note_unseen_start(struct gp_run *run, uint32_t pid, uint64_t started_ns, uint64_t probed_ns)
{
	note(run, pid, started_ns, probed_ns, true);
}

const struct gp_unseen *gp_run__unseen(const struct gp_run *run, uint32_t pid)
{
	return run && run->unseen ? u64map__get(run->unseen, pid) : NULL;
}

static bool env_lineage(const void *r, uint32_t pid, struct gp_lineage *out)
{
	const struct gp_run *run = r;
	const struct pt_proc *p, *root;

	if (!run->filter || !run->ptree || !(p = ptree__get(run->ptree, pid)))
		return false;
	out->ppid = p->ppid;
	out->root = p->root;
	root = ptree__get(run->ptree, p->root ? p->root : pid);
	snprintf(out->root_comm, sizeof(out->root_comm), "%.*s", GP_COMM_LEN - 1, root ? root->comm : "");
	return true;
}

static const struct gp_unseen *env_unseen(const void *run, uint32_t pid)
{
	return gp_run__unseen(run, pid);
}

const struct gp_snap_env *gp_run__env(struct gp_run *run)
{
	uint64_t now = gp_mono_ns();
	bool behind = run->events && gp_events__more(run->events);

	if (!behind || !run->caught_up_ns)
		run->caught_up_ns = now;
	run->env = (struct gp_snap_env){
		.verbose = run->o && run->o->verbose,
		.command = run->o && run->o->cmd,
		.trees = run->filter && run->ptree,
		.lineage = env_lineage,
		.unseen = env_unseen,
		.run = run,
	};
	return &run->env;
}

int gp_run__subscribe(struct gp_run *run, const struct gp_handlers *h)
{
	struct objshare sh = share_of(run);

	return objshare__subscribe(&sh, h);
}

int gp_run__slot_of(const struct gp_run *run, const void *st)
{
	for (int i = 0; i < run->nr; i++)
		if (run->slot[i].st == st)
			return i;
	return -1;
}

void gp_run__end(struct gp_run *run)
{
	__u32 zero = 0, one = 1;

	if (!run->end_ns)
		run->end_ns = gp_mono_ns();
	if (run->ended_fd >= 0)
		bpf_map_update_elem(run->ended_fd, &zero, &one, BPF_ANY);
}

uint64_t gp_run__now(const struct gp_run *run)
{
	return run->end_ns ? run->end_ns : gp_mono_ns();
}

void gp_run__exit_report(struct gp_run *run, const void *st, uint32_t pid)
{
	int i = gp_run__slot_of(run, st);

	if (i < 0 || !run->exit_report)
		return;
	run->exit_report(run, i, pid);
}

bool gp_run__counts_hits(const struct gp_run *run)
{
	for (int i = 0; i < run->nr; i++)
		if (run->slot[i].m->probe_hits)
			return true;
	return false;
}

void gp_run__counters(struct gp_run *run, gp_counter_fn emit, void *ctx)
{
	for (int i = 0; i < run->nr; i++)
		if (run->slot[i].m->counters)
			run->slot[i].m->counters(run->slot[i].st, run, emit, ctx);
}

/* NVML's XID errors since the last sample as instant events on the tracks of the processes
 * that were on the GPU (those the timeline shows). */
static void nvml_instants(struct gp_run *run)
{
	struct gp_nvml_snap s;

	if (!run->nvml || !run->timeline || gp_nvml__snapshot(run->nvml, &s))
		return;
	for (size_t i = 0; i < s.nr_xids; i++) {
		const struct gp_nvml_xid *x = &s.xids[i];
		uint64_t seq = s.xid_seq - s.nr_xids + i;

		if (seq < run->nvml_xids)
			continue;
		for (unsigned int k = 0; k < x->nr_pids; k++) {
			json_object *a = json_object_new_object();

			json_object_object_add(a, "xid", json_object_new_uint64(x->code));
			json_object_object_add(a, "gpu", json_object_new_int((int)s.gpus[x->gpu].index));
			json_object_object_add(a, "uuid", json_object_new_string(s.gpus[x->gpu].uuid));
			gp_timeline__note(run->timeline, x->pids[k], "XID", x->mono_ns, a);
		}
	}
	run->nvml_xids = s.xid_seq;
	gp_nvml__snap_free(&s);
}

void gp_run__sample(struct gp_run *run)
{
	struct gp_counters *cs;

	nvml_instants(run);
	if (!run->timeline || run->o->trace_counters <= 0)
		return;
	gp_events__drain(run->events);
	cs = gp_timeline__sample_begin(run->timeline, gp_mono_ns());
	gp_run__counters(run, gp_counters__add, cs);
	gp_timeline__sample_end(run->timeline);
}

void gp_run__reap(struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid)
{
	/* records still in flight first: a process gone without an exit record is marked
	 * exited by the modes, and a late record of it would make it live again */
	gp_events__drain(run->events);
	/* once the run is over, what the buffers still hold is not read before the final
	 * report (a bounded drain came first): a process gone without its exit record read
	 * is gone all the same, and the report must not list it running (under churn on 6.1
	 * in QEMU, 256 of 1,000 were) */
	run->behind = gp_events__more(run->events) && !run->end_ns;
	/* behind its records (for under GP_NAMES_PENDING_S): a process that exited after they
	 * were last read up may still have records there (its exit's, its memory's; a kernel
	 * held back for its name keeps its process itself, cudatrace__reap): kept until they
	 * are read. Only a
	 * time cutoff is moved: a GP_REAP_SEQ one releases exactly what a report listed
	 * exited, and read as a time it would release processes no report had listed yet */
	if (run->behind && run->caught_up_ns && !(cutoff_ns & GP_REAP_SEQ(0)) &&
	    cutoff_ns > run->caught_up_ns &&
	    gp_mono_ns() - run->caught_up_ns < GP_NAMES_PENDING_S * 1000000000ULL)
		cutoff_ns = run->caught_up_ns;
	/* the timeline's running totals: their last change before the records go, and a
	 * sample right after, so a total that drops with them hides no later change */
	gp_run__sample(run);
	if (run->ptree)
		ptree__reap(run->ptree, cutoff_ns);
	if (run->allocs)
		allocsrc__reap(run->allocs, cutoff_ns, keep_pid);
	for (int i = 0; i < run->nr; i++)
		if (run->slot[i].m->reap)
			run->slot[i].m->reap(run->slot[i].st, run, cutoff_ns, keep_pid);
	gp_budget__reap(run->budget, cutoff_ns, keep_pid);
	gp_run__sample(run);
}

int gp_run__finish(struct gp_run *run, char *err, size_t len)
{
	char later[256]; /* the reasons after the first are not shown */
	int r = 0, e;

	gp_run__sample(run); /* the last counter sample, before the timeline closes */
	for (int i = 0; i < run->nr; i++) {
		if (!run->slot[i].m->finish)
			continue;
		e = run->slot[i].m->finish(run->slot[i].st, run, r ? later : err, r ? sizeof(later) : len);
		if (!r)
			r = e;
	}
	return r;
}

void gp_run__mode_names(const struct gp_run *run, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < run->nr && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "," : "", run->slot[i].m->name);
}

void gp_run__detach(struct gp_run *run)
{
	gp_budget__stop(run->budget);
	libwatch__detach(run->watch);
	attach_set__free(run->links);
	run->links = NULL;
}

void gp_run__free(struct gp_run *run)
{
	if (!run)
		return;
	/* links first: no probe may fire into a freed object */
	gp_budget__stop(run->budget);
	gp_nvml__free(run->nvml);
	attach_set__free(run->links);
	gp_events__free(run->events);
	for (int i = 0; i < run->nr; i++)
		if (run->slot[i].m->free)
			run->slot[i].m->free(run->slot[i].st);
	allocsrc__free(run->allocs);
	libwatch__free(run->watch);
	libslots__free(run->slots);
	ptree__free(run->ptree);
	gp_budget__free(run->budget);
	gp_timeline__close(run->timeline, NULL);
	if (run->shared_rb >= 0)
		close(run->shared_rb);
	if (run->ended_fd >= 0)
		close(run->ended_fd);
	if (run->exits_fd >= 0)
		close(run->exits_fd);
	symbolizer__free(run->sym);
	u64map__free_all(run->unseen, NULL);
	free(run);
}

/* ---- what the front ends set and read (the run is opaque to them) ---- */

void gp_run__set_fe(struct gp_run *run, void *fe)
{
	run->fe = fe;
}

void *gp_run__fe(const struct gp_run *run)
{
	return run->fe;
}

void gp_run__set_out(struct gp_run *run, FILE *out)
{
	run->out = out;
}

FILE *gp_run__out(const struct gp_run *run)
{
	return run->out;
}

void gp_run__set_exit_report(struct gp_run *run, gp_exit_report_fn *fn)
{
	run->exit_report = fn;
}

void gp_run__set_libs(struct gp_run *run, enum gp_lib kind, const struct lib_set *libs)
{
	run->libs[kind] = libs;
}

void gp_run__set_targets(struct gp_run *run, const struct gp_run_targets *t)
{
	run->filter = t->filter;
	run->follow_forks = t->follow_forks;
	run->comm = t->comm;
	run->cgroup = t->cgroup;
	run->target_pid = t->target_pid;
	run->keep_pid = t->keep_pid;
}

bool gp_run__filters(const struct gp_run *run)
{
	return run->filter;
}

bool gp_run__follows(const struct gp_run *run, uint32_t pid)
{
	struct gp_traced t;
	int fd;

	if (!run->filter)
		return run->target_pid < 0 || (uint32_t)run->target_pid == pid;
	if (!run->ptree)
		return false;
	if (ptree__get(run->ptree, pid))
		return true;
	fd = ptree__traced_fd(run->ptree);
	return fd >= 0 && !bpf_map_lookup_elem(fd, &pid, &t);
}

uint32_t gp_run__keep_pid(const struct gp_run *run)
{
	return run->keep_pid;
}

void gp_run__set_empty_hint(struct gp_run *run, const char *hint)
{
	run->empty_hint = hint;
}

const struct gp_opts *gp_run__opts(const struct gp_run *run)
{
	return run->o;
}

struct gp_events *gp_run__events(const struct gp_run *run)
{
	return run->events;
}

struct attach_set *gp_run__links(const struct gp_run *run)
{
	return run->links;
}

struct libslots *gp_run__slots(const struct gp_run *run)
{
	return run->slots;
}

struct libwatch *gp_run__watch(const struct gp_run *run)
{
	return run->watch;
}

struct ptree *gp_run__ptree(const struct gp_run *run)
{
	return run->ptree;
}

struct gp_nvml *gp_run__nvml(const struct gp_run *run)
{
	return run->nvml;
}

bool gp_run__has_ring(const struct gp_run *run)
{
	return run->shared_rb >= 0;
}

uint64_t gp_run__start_ns(const struct gp_run *run)
{
	return run->start_ns;
}

uint64_t gp_run__unseen_total(const struct gp_run *run)
{
	return run->unseen_total;
}

int gp_run__nr_modes(const struct gp_run *run)
{
	return run->nr;
}

const struct gp_mode *gp_run__mode(const struct gp_run *run, int slot)
{
	return slot >= 0 && slot < run->nr ? run->slot[slot].m : NULL;
}
