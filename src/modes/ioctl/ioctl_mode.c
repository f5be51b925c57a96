/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --ioctl: bpf/nv_ioctl.bpf.c counts ioctls on nvidia device nodes in BPF maps (kprobes
 * on the drivers' handlers where the kernel has kprobes, else the ioctl syscall
 * tracepoints filtered by the fd's device major); with --trace, one record per ioctl goes
 * to the timeline. The aggregator is ioctl.c, the renderers ioctl_report.c.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>
#include "core/attach.h"
#include "core/events.h"
#include "modes/ioctl/ioctl.h"
#include "modes/ioctl/ioctl_mode.h"
#include "core/maps.h"
#include "nv_ioctl.skel.h"
#include "lib/option.h"
#include "core/options.h"
#include "core/run_impl.h"
#include "core/timeline.h"
#include "lib/u64map.h"
#include "lib/util.h"

struct ioc_settings ioc_settings = {
	.backend = IOC_BACKEND_AUTO,
	.max_series = 20,
};

static int parse_dev(const char *arg, void *dest, char *err, size_t len)
{
	struct ioc_settings *s = dest;
	char buf[64], *colon;
	uint64_t v;

	snprintf(buf, sizeof(buf), "%s", arg);
	colon = strchr(buf, ':');
	if (colon)
		*colon = 0;
	if (s->nr_devs == 8 || gp_parse_u64(buf, 1, 4095, &v)) {
		snprintf(err, len, "invalid --ioctl-dev (MAJOR[:NAME], at most 8): %s", arg);
		return -EINVAL;
	}
	s->dev_major[s->nr_devs] = (unsigned int)v;
	s->dev_name[s->nr_devs++] = colon ? arg + (colon - buf) + 1 : NULL;
	return 0;
}

static const struct gp_option options[] = {
	{ "ioctl-backend", 0, "kprobe|tracepoint", "Force a backend (default: kprobes where the kernel has them)",
	  GP_OPT_CHOICE, &ioc_settings.backend, .choices = "kprobe|tracepoint", .frontends = GP_FE_ALL,
	  .group = GP_GRP_MODE },
	{ "ioctl-dev", 0, "MAJOR[:NAME]", "Also trace this character-device major (tests; repeatable, 8 at most)",
	  GP_OPT_CUSTOM, &ioc_settings, .parse = parse_dev, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{ "max-ioctl-series", 0, "N", "(node, command, control) series per series of labels, first come; the rest are summed under cmd=\"other\" (default 20)",
	  GP_OPT_U64, &ioc_settings.max_series, 0, 100000, .frontends = GP_FE_DAEMON, .group = GP_GRP_MODE },
	{},
};

/* The drivers' file_operations.unlocked_ioctl (kernel-open/nvidia/nv.c, nvidia-uvm/uvm.c) */
static const char *const kprobe_funcs[] = { "nvidia_unlocked_ioctl", "uvm_unlocked_ioctl_entry" };

struct ioc_mode {
	struct gp_run *run;
	struct nv_ioctl_bpf *skel;
	struct ioctl_agg *agg;
	struct ioc_major majors[GP_IOCTL_MAX_MAJORS];
	int nr_majors;
	bool want_kprobe; /* try kprobes first */
	const char *why;  /* why the backend: logged with it */
	char why_buf[256];
	const char *backend;
	struct u64map *gone; /* pid -> when first seen gone (CLOCK_MONOTONIC) */
	struct u64map *shown; /* pids a snapshot listed as exited: the CLI's reap forgets only these */
	struct ioc_snap snap;
};

static void m_free(void *st)
{
	struct ioc_mode *m = st;

	if (!m)
		return;
	nv_ioctl_bpf__destroy(m->skel);
	ioctl_agg__free(m->agg);
	u64map__free(m->gone);
	u64map__free(m->shown);
	free(m->snap.pids);
	free(m);
}

static bool kernel_has_kprobes(char *path, size_t len)
{
	snprintf(path, len, "%s/bus/event_source/devices/kprobe/type", gp_sysfs());
	return access(path, R_OK) == 0;
}

/* Which backend, and why; -ENOTSUP when kprobes are asked for and missing. */
static int choose_backend(struct ioc_mode *m, char *err, size_t len)
{
	char path[512];
	bool kprobes = kernel_has_kprobes(path, sizeof(path));

	if (ioc_settings.backend == IOC_BACKEND_KPROBE) {
		if (!kprobes) {
			snprintf(err, len, "--ioctl-backend=kprobe: this kernel has no kprobes (%s missing); use --ioctl-backend=tracepoint",
				 path);
			return -ENOTSUP;
		}
		m->want_kprobe = true;
		m->why = "requested";
	} else if (ioc_settings.backend == IOC_BACKEND_TRACEPOINT) {
		m->why = "requested";
	} else if (ioc_settings.nr_devs) {
		m->why = "--ioctl-dev devices are seen only by the syscall tracepoints";
	} else if (!kprobes) {
		m->why = "no kprobes";
	} else {
		m->want_kprobe = true;
		m->why = "probed";
	}
	return 0;
}

static void read_majors(struct ioc_mode *m)
{
	FILE *f = fopen("/proc/devices", "re");

	if (f) {
		m->nr_majors = ioctl__parse_devices(f, m->majors, GP_IOCTL_MAX_MAJORS);
		fclose(f);
	}
	for (int i = 0; i < ioc_settings.nr_devs; i++)
		m->nr_majors = ioctl__add_major(m->majors, m->nr_majors, GP_IOCTL_MAX_MAJORS,
						ioc_settings.dev_major[i], IOC_KIND_ANY, ioc_settings.dev_name[i]);
	if (!m->nr_majors)
		gp_log(GP_LOG_WARN, "no nvidia character devices in /proc/devices: no ioctls will be seen");
}

static int m_open(struct gp_run *run, void **st, char *err, size_t len)
{
	struct ioc_mode *m = calloc(1, sizeof(*m));
	int r;

	*st = m;
	if (!m)
		return -ENOMEM;
	m->run = run;
	r = choose_backend(m, err, len);
	if (r)
		return r;
	read_majors(m);
	m->agg = ioctl_agg__new(m->majors, m->nr_majors);
	m->gone = u64map__new();
	m->shown = u64map__new();
	m->skel = nv_ioctl_bpf__open();
	if (!m->agg || !m->gone || !m->shown || !m->skel) {
		snprintf(err, len, "cannot open the ioctl BPF object");
		return -ENOMEM;
	}
	for (int i = 0; i < m->nr_majors; i++)
		m->skel->rodata->majors[i] = m->majors[i].major;
	m->skel->rodata->nr_majors = (__u32)m->nr_majors;
	m->skel->rodata->emit_events = run->timeline != NULL;
	m->skel->rodata->target_tgid = run->target_pid > 0 ? (__u32)run->target_pid : 0;
	if (run->timeline)
		bpf_map__set_max_entries(m->skel->maps.ioctl_events, (__u32)run->o->ringbuf_size);
	bpf_map__set_max_entries(m->skel->maps.ioctl_start, (__u32)run->o->max_pending);
	gp_run__set_shares(run, m->skel);
	bpf_map__set_max_entries(m->skel->maps.ioctl_comms, (__u32)run->o->max_procs);
	r = gp_run__adopt(run, m->skel);
	if (r) {
		snprintf(err, len, "cannot share the process table: %s", strerror(-r));
		return r;
	}
	/* kprobe programs load only where kprobes exist */
	bpf_program__set_autoload(m->skel->progs.ioctl_kp_enter, m->want_kprobe);
	bpf_program__set_autoload(m->skel->progs.ioctl_kp_exit, m->want_kprobe);
	r = nv_ioctl_bpf__load(m->skel);
	if (r)
		attach__load_error(r, err, len);
	return r;
}

static int attach_kprobes(struct ioc_mode *m, char *why, size_t len)
{
	struct bpf_link *l[2 * GP_ARRAY_SIZE(kprobe_funcs)] = { 0 };
	int n = 0, r = 0;

	for (size_t i = 0; i < GP_ARRAY_SIZE(kprobe_funcs); i++) {
		for (int ret = 0; ret < 2; ret++) {
			l[n] = bpf_program__attach_kprobe(ret ? m->skel->progs.ioctl_kp_exit :
							  m->skel->progs.ioctl_kp_enter, ret, kprobe_funcs[i]);
			if (!l[n]) {
				r = -errno;
				snprintf(why, len, "kprobe on %s failed: %s", kprobe_funcs[i], strerror(-r));
				goto undo;
			}
			n++;
		}
	}
	for (int i = 0; i < n; i++) {
		r = attach_set__add(m->run->links, l[i]);
		if (r) {
			for (int j = i; j < n; j++)
				bpf_link__destroy(l[j]);
			return r;
		}
	}
	return 0;
undo:
	for (int i = 0; i < n; i++)
		bpf_link__destroy(l[i]);
	return r;
}

static void on_ioctl(void *ctx, const struct gp_ioctl_event *e)
{
	struct ioc_mode *m = ctx;
	const char *name = NULL;

	for (int i = 0; i < m->nr_majors; i++)
		if (m->majors[i].major == e->major)
			name = ioctl__cmd_name(m->majors[i].kind, e->cmd);
	gp_timeline__event(m->run->timeline, GP_LANE_IOCTL, e->pid, e->tid, name ? name : "ioctl", e->ts_ns,
			   e->dur_ns, e->ret, ioc_report__trace_args(e, name));
}

static int attach_tracepoints(struct ioc_mode *m, char *err, size_t len)
{
	int r = attach__ensure_tracefs(err, len);

	if (!r)
		r = attach_set__auto(m->run->links, m->skel->progs.ioctl_tp_enter, err, len);
	if (!r)
		r = attach_set__auto(m->run->links, m->skel->progs.ioctl_tp_exit, err, len);
	return r;
}

static int m_start(void *st, struct gp_run *run, char *err, size_t len)
{
	struct ioc_mode *m = st;
	static const struct gp_on on[] = { GP_ON(GP_EV_IOCTL, on_ioctl) };
	struct gp_handlers h = { .ctx = m, GP_ONS(on) };
	char why[256];
	int r = -ENOENT;

	if (m->want_kprobe) {
		r = attach_kprobes(m, why, sizeof(why));
		if (r && ioc_settings.backend == IOC_BACKEND_KPROBE) { /* asked for by name: no fallback */
			snprintf(err, len, "--ioctl-backend=kprobe: %s", why);
			return r;
		}
		if (r) {
			snprintf(m->why_buf, sizeof(m->why_buf), "%s", why);
			m->why = m->why_buf;
		}
	}
	m->backend = r ? "tracepoint" : "kprobe";
	if (r) {
		r = attach_tracepoints(m, err, len);
		if (r)
			return r;
	}
	/* a thread that dies inside an ioctl gives its entry back */
	r = attach_set__auto(run->links, m->skel->progs.ioctl_proc_exit, err, len);
	if (r)
		return r;
	gp_log(GP_LOG_INFO, "ioctl backend: %s (%s)", m->backend, m->why);
	if (!run->timeline)
		return 0;
	r = gp_events__add(run->events, bpf_map__fd(m->skel->maps.ioctl_events), &h);
	if (r)
		snprintf(err, len, "cannot read the ioctl ring buffer: %s", strerror(-r));
	return r;
}

static bool alive(uint32_t pid)
{
	return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

static void fill_comm(struct ioc_mode *m, struct ioc_proc *p)
{
	char path[64], buf[GP_COMM_LEN] = "";
	FILE *f;

	if (!bpf_map_lookup_elem(bpf_map__fd(m->skel->maps.ioctl_comms), &p->pid, buf)) {
		snprintf(p->comm, sizeof(p->comm), "%.15s", buf);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/comm", p->pid);
	f = fopen(path, "re");
	if (f && fgets(p->comm, sizeof(p->comm), f))
		p->comm[strcspn(p->comm, "\n")] = 0;
	else
		snprintf(p->comm, sizeof(p->comm), "?");
	if (f)
		fclose(f);
}

static void read_maps(struct ioc_mode *m)
{
	int fd = bpf_map__fd(m->skel->maps.ioctl_stats);
	struct gp_ioctl_key k, next;
	struct gp_ioctl_stat st;
	void *prev = NULL;

	ioctl_agg__begin(m->agg);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &st))
			ioctl_agg__add(m->agg, &next, &st);
		k = next;
		prev = &k;
	}
	ioctl_agg__end(m->agg);
}

static void fill_drops(struct ioc_mode *m, struct ioc_snap *s)
{
	static const int reason[GP_IDROP__COUNT] = {
		[GP_IDROP_KEYS] = GP_R_COUNTER_TABLE_FULL, [GP_IDROP_PENDING] = GP_R_PENDING_TABLE_FULL,
		[GP_IDROP_RINGBUF] = GP_R_RINGBUF_FULL, [GP_IDROP_PROCS] = GP_R_PROCESS_NAME_TABLE_FULL,
		[GP_IDROP_CTRL_READ] = GP_R_CONTROL_PARAMS_UNREADABLE, [GP_IDROP_SHARE] = GP_R_PENDING_SHARE_FULL,
	};

	for (int i = 0; i < GP_IDROP__COUNT; i++)
		s->drops[i] = (struct gp_snap_drop){
			reason[i], __atomic_load_n(&m->skel->bss->idrops[i], __ATOMIC_RELAXED) };
	s->hdr.drops = s->drops;
	s->hdr.nr_drops = GP_IDROP__COUNT + gp_run__drops(m->run, s->drops + GP_IDROP__COUNT);
}

static const struct gp_snap *m_snapshot(void *st, struct gp_run *run, enum gp_snap_kind kind, uint32_t pid)
{
	struct ioc_mode *m = st;
	struct ioc_snap *s = &m->snap;
	struct ioc_proc *procs;
	struct u64map *dead = u64map__new();
	size_t n, k = 0;

	if (!dead)
		return NULL;
	/* A process is listed exited with the counters read after it was found gone: read
	 * before, they could miss its last ioctls (it ran on between the read and the look),
	 * and the next listing's other final values were counted again (the daemon counted
	 * 10-206 ioctls above the truth under churn). So the dead are looked for first, and
	 * the counters read again when some are. */
	read_maps(m);
	n = ioctl_agg__procs(m->agg, &procs);
	for (size_t i = 0; i < n; i++) {
		uintptr_t gone;

		if (alive(procs[i].pid))
			continue;
		/* when it was first found gone: the same for every listing of this process */
		gone = (uintptr_t)u64map__get(m->gone, procs[i].pid);
		if (!gone) {
			gone = (uintptr_t)gp_mono_ns();
			u64map__put(m->gone, procs[i].pid, (void *)gone);
		}
		u64map__put(dead, procs[i].pid, (void *)gone);
	}
	if (u64map__size(dead)) {
		read_maps(m);
		n = ioctl_agg__procs(m->agg, &procs);
	}
	free(s->pids);
	s->pids = calloc(n ? n : 1, sizeof(*s->pids));
	if (!s->pids) {
		u64map__free(dead);
		return NULL;
	}
	s->procs = procs;
	for (size_t i = 0; i < n; i++) {
		fill_comm(m, &procs[i]);
		if (pid && procs[i].pid != pid)
			continue;
		procs[k] = procs[i];
		/* syscalls, not probe hits */
		s->pids[k] = (struct gp_snap_pid){ .pid = procs[k].pid, .exited = u64map__get(dead, procs[k].pid) != NULL,
						   .exit_ns = (uintptr_t)u64map__get(dead, procs[k].pid) };
		/* listed exited by a report (the run's "hits" look prints nothing) */
		if (s->pids[k].exited && kind != GP_SNAP_HITS)
			u64map__put(m->shown, procs[k].pid, (void *)1);
		memcpy(s->pids[k].comm, procs[k].comm, sizeof(s->pids[k].comm));
		k++;
	}
	s->nr_procs = k;
	s->hdr = (struct gp_snap){ .mode = "ioctl", .kind = kind, .now_ns = gp_run__now(run), .env = gp_run__env(run), .pids = s->pids,
				   .nr_pids = k };
	s->backend = m->backend ? m->backend : "none";
	s->max_series = ioc_settings.max_series;
	fill_drops(m, s);
	u64map__free(dead);
	return &s->hdr;
}

struct forget {
	struct ioc_mode *m;
	uint64_t cutoff, now;
	uint32_t keep;
	struct u64map *doomed;
};

/* The counters of a process stay in BPF after it exits (a syscall tracepoint sees no
 * exit): a process gone since before the cutoff is forgotten; the CLI's reap after a
 * report (a GP_REAP_SEQ cutoff) forgets every process that report listed as exited, and no
 * other: one that exited between the report's snapshot and the reap was listed running,
 * and its exit comes in the next report (before, it was forgotten unlisted: on 6.1 in
 * QEMU, 56 of 401 churning processes were last listed running). */
static bool doomed(void *ctx, uint32_t pid)
{
	struct forget *f = ctx;
	uintptr_t gone;

	if (u64map__get(f->doomed, pid))
		return true;
	if (pid == f->keep || alive(pid)) {
		u64map__del(f->m->gone, pid);
		u64map__del(f->m->shown, pid);
		return false;
	}
	/* a report's reap (GP_REAP_SEQ: the top bit) releases what that report listed exited */
	if ((f->cutoff >> 63) && !u64map__get(f->m->shown, pid))
		return false;
	gone = (uintptr_t)u64map__get(f->m->gone, pid);
	if (!gone) {
		gone = (uintptr_t)f->now;
		u64map__put(f->m->gone, pid, (void *)gone);
	}
	if (f->cutoff != UINT64_MAX && gone >= f->cutoff)
		return false;
	u64map__put(f->doomed, pid, (void *)1);
	return true;
}

static void m_reap(void *st, struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid)
{
	struct ioc_mode *m = st;
	struct forget f = { .m = m, .cutoff = cutoff_ns, .now = gp_mono_ns(), .keep = keep_pid,
			    .doomed = u64map__new() };
	uint64_t pid;
	void *v;
	int n;

	if (!f.doomed)
		return;
	n = gp_map__delete_pids(bpf_map__fd(m->skel->maps.ioctl_stats), sizeof(struct gp_ioctl_key), doomed, &f);
	for (size_t it = 0; u64map__next(f.doomed, &it, &pid, &v);) {
		__u32 p = (__u32)pid;

		bpf_map_delete_elem(bpf_map__fd(m->skel->maps.ioctl_comms), &p);
		u64map__del(m->gone, pid);
		u64map__del(m->shown, pid);
	}
	(void)run;
	if (n > 0)
		gp_log(GP_LOG_DEBUG, "ioctl: forgot %zu exited processes (%d counters)", u64map__size(f.doomed), n);
	u64map__free(f.doomed);
}

static int m_finish(void *st, struct gp_run *run, char *err, size_t len)
{
	struct ioc_mode *m = st;

	(void)err;
	(void)len;
	if (run->timeline)
		gp_timeline__lane_drops(run->timeline, GP_LANE_IOCTL,
					__atomic_load_n(&m->skel->bss->idrops[GP_IDROP_RINGBUF], __ATOMIC_RELAXED));
	return 0;
}

const struct gp_mode gp_mode_ioctl = {
	.name = "ioctl",
	.flag = "ioctl",
	.doc = "ioctls on nvidia device nodes per process, node and command, timed",
	.needs = 0,
	.frontends = GP_FE_ALL,
	.options = options,
	.open = m_open,
	.start = m_start,
	.snapshot = m_snapshot,
	.text = ioc_report__text,
	.json = ioc_report__json,
	.prom = ioc_report__prom,
	.reap = m_reap,
	.finish = m_finish,
	.free = m_free,
};
