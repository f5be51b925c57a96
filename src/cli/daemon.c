/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe daemon: probes every libcuda on the node for every process (pid -1), finds
 * library files that appear later (containers, driver upgrades) by rescanning
 * /proc/PID/maps, and serves /metrics and /healthz with libmicrohttpd. The modes are the
 * run's (src/core/run.h); none is named here.
 *
 * One thread: poll() waits on the ring buffer's epoll fd and on libmicrohttpd's, so the
 * aggregators are only ever touched from here and need no locks.
 *
 * Every second (and at each scrape) the modes' snapshots are folded into the series
 * store (src/out/prom.h), which keeps what exited processes counted; their records are
 * then forgotten a second later. Each process is labelled with its cgroup and pod
 * (src/lib/cgroups.h), read at its exec and refreshed while it runs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "core/attach.h"
#include "core/calibrate.h"
#include "lib/cgroups.h"
#include "cli/cmdline.h"
#include "cuda_copy.h"
#include "cuda_mem.h"
#include "cli/daemon.h"
#include "core/events.h"
#include "cli/http.h"
#include "lib/libslots.h"
#include "core/kernel_features.h"
#include "cli/listen.h"
#include "core/options.h"
#include "lib/procmaps.h"
#include "out/prom.h"
#include "out/report.h"
#include "core/run.h"
#include "lib/target.h"
#include "cli/targets.h"
#include "out/text.h"
#include "lib/u64map.h"
#include "lib/util.h"
#include "lib/version.h"
#include "out/webconfig.h"

struct daemon {
	struct gp_run *run;
	/* every library file seen (probed or rejected), by dev+inode; each holds a slot of the
	 * run's (gp_run__slots(run), src/lib/libslots.h: when its probes go) */
	struct lib_set *libs;
	int probed;           /* of those, the ones with probes */
	int lib_probes;       /* the probes on the libcuda files found at the start */
	struct u64map *refused;  /* files refused a slot (libset__map_id), until a slot frees */
	struct u64map *told;     /* owners (uid + 1) whose refusals were logged */
	struct cgroups *cgroups;
	struct prom_store *store;
	struct webconfig *wc;
	struct http *http;
	double probe_cost, start_time, rescan_s;
	uint64_t scrapes, rescans, rescan_ns;
	uint64_t scrape_slots[PROM_HIST_SLOTS]; /* log2 microseconds, as the BPF histograms */
	double scrape_s;
};

/* A process's cgroup and pod are read again when older than this (it may have moved). */
#define ATTR_MAX_AGE_NS 1000000000ULL
/* Records of exited processes are forgotten once folded, this long after their exit. */
#define FOLDED_AFTER_NS 1000000000ULL

static volatile sig_atomic_t stop_signal, hup_signal;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		hup_signal = 1;
	else
		stop_signal = sig;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!gp_opts.verbose || level == LIBBPF_DEBUG)
		return 0;
	fprintf(stderr, "<%d>", GP_LOG_DEBUG);
	return gp_vfprintf_safe(stderr, fmt, args); /* may name a library path */
}

static const char doc[] =
	"Trace every CUDA process on the node and serve Prometheus metrics.\n";

static const char epilog[] =
	"Series are keyed by comm, cgroup and pod (not PID: see --per-process-series); their\n"
	"counters keep what exited processes counted (docs/metrics.md).\n"
	"/healthz answers without authentication (liveness probes); /metrics needs the\n"
	"credentials of --web-config's basic_auth_users when it has any.\n"
	"Logs go to stderr with <N> syslog priority prefixes (journald reads them).\n"
	"SIGTERM/SIGINT: detach and exit 0. SIGHUP: logged, nothing to reload.\n"
	"Exit status: 0 after SIGTERM/SIGINT, 1 on an error, 2 on bad usage.\n";

/* A process's labels: its cgroup read from /proc while it runs, or for one gone before it
 * was read (a forked worker of 0.1 s whose records the daemon read after its exit), the
 * cgroup it ended in (gp_run__exit_cgroup). */
static const char *const *attr_of(void *ctx, uint32_t pid)
{
	struct daemon *d = ctx;
	uint64_t now = gp_mono_ns(), v2 = 0, memory = 0;
	const char *const *kv = cgroups__labels(d->cgroups, pid, now, ATTR_MAX_AGE_NS);

	if (kv[0])
		return kv;
	(void)gp_run__exit_cgroup(d->run, pid, &v2, &memory);
	return cgroups__from_id(d->cgroups, pid, v2, memory, now);
}

/* Probes one more library (entry i of the set) for every process; logs what happened. */
static void probe_lib(struct daemon *d, int i)
{
	const struct lib_entry *lib = &d->libs->libs[i];
	char err[1024] = "", why[512], label[GP_PATH_MAX + 64];
	int before = attach_set__count(gp_run__links(d->run)), r;
	bool ok = !target__check_lib(lib, why, sizeof(why));
	/* its slot, seen now; with a tag of its own: its probes go when no process maps it */
	struct libslot *slot = libslots__add(gp_run__slots(d->run), lib->dev, lib->ino, lib->owner, lib->trusted, false, ok);

	if (!ok) {
		gp_log(GP_LOG_WARN, "not probing %s", why);
		return;
	}
	if (!slot) {
		gp_log(GP_LOG_ERR, "%s: out of memory", libset__label(lib, label, sizeof(label)));
		return;
	}
	attach_set__tag(gp_run__links(d->run), slot->tag);
	/* through the checked descriptor: a path the process swaps now is not followed */
	r = gp_run__attach_lib(d->run, GP_LIB_CUDA, lib->fd_path, err, sizeof(err));
	attach_set__tag(gp_run__links(d->run), 0);
	if (r) {
		gp_log(GP_LOG_ERR, "%s: %s", libset__label(lib, label, sizeof(label)), err);
		return;
	}
	d->probed++;
	gp_log(GP_LOG_INFO, "probing %s (device %u:%u inode %lu): %d probes", libset__label(lib, label, sizeof(label)), major(lib->dev),
	       minor(lib->dev), (unsigned long)lib->ino, attach_set__count(gp_run__links(d->run)) - before);
}

/* A refusal of a slot: counted in the set, logged once per owner. */
static void refused(struct daemon *d, uint64_t id, const struct mapped_lib *m, int why, uid_t owner)
{
	if (u64map__size(d->refused) < 65536)
		u64map__put(d->refused, id, (void *)1);
	if (u64map__get(d->told, (uint64_t)owner + 1))
		return;
	u64map__put(d->told, (uint64_t)owner + 1, (void *)1);
	gp_log(GP_LOG_WARN, "not probing %s (owner uid %d) nor further files refused for the same reason: %s (counted in gpuprobe_library_slots_refused_total{reason=\"%s\"})",
	       m->host_path, (int)owner,
	       why == GP_SLOT_OWNER_SHARE ? "its owner holds its share of the library slots" :
	       why == GP_SLOT_USERS_SHARE ? "files root does not own hold their share of the library slots" :
	       "every library slot is taken", libset__refusal_name(why));
}

/* A file a process maps, opened inside its root with the dev/inode its maps show. */
static void add_mapped(struct daemon *d, int pid, const struct mapped_lib *m)
{
	uint64_t id = libset__map_id(m);
	int before = d->libs->n, r, why;
	int probed = d->probed;

	for (int i = 0; i < d->libs->n; i++) /* still mapped: the rescan kept its slot */
		if (d->libs->libs[i].ino == m->inode &&
		    d->libs->libs[i].dev == makedev(m->dev_major, m->dev_minor))
			return;
	if (u64map__get(d->refused, id))
		return;
	r = libset__add_mapped(d->libs, "/proc", pid, m, NULL, 0);
	if (r == 0 && d->libs->n == GP_MAX_LIBS) {
		refused(d, id, m, GP_SLOT_FULL, (uid_t)-1);
		return;
	}
	if (r != 1)
		return;
	{
		uid_t owner = d->libs->libs[before].owner;

		why = libset__admit_last(d->libs);
		if (why >= 0) {
			refused(d, id, m, why, owner);
			return;
		}
	}
	probe_lib(d, before);
	/* a file found by a rescan: the process that maps it called it unseen until now */
	if (d->probed != probed)
		gp_run__note_unseen(d->run, (uint32_t)pid, 0, gp_mono_ns());
}

static void add_entry(struct daemon *d, const struct lib_entry *e)
{
	int before = d->libs->n;
	struct libslot *slot;

	if (libset__add_entry(d->libs, e) == 1) {
		probe_lib(d, before);
		/* a driver folder's file (not one a process maps): kept while nobody maps it */
		slot = libslots__find(gp_run__slots(d->run), e->dev, e->ino);
		if (slot)
			slot->pinned = strncmp(e->name, "/proc/", 6) != 0;
	}
}

/* A slot the rescan frees (src/lib/libslots.h: a user's file no process mapped in it or
 * the one before, or any unmapped file when the set is full): its probes and its place in
 * the set go. */
static void drop_lib(void *ctx, const struct libslot *slot)
{
	struct daemon *d = ctx;
	char label[GP_PATH_MAX + 64];
	int probes, i;

	for (i = 0; i < d->libs->n && (d->libs->libs[i].dev != slot->dev || d->libs->libs[i].ino != slot->ino); i++)
		;
	if (i == d->libs->n)
		return;
	probes = slot->tag ? gp_run__detach_lib(d->run, GP_LIB_CUDA, slot->tag, slot->dev, slot->ino) : 0;
	gp_log(GP_LOG_INFO, "no process maps %s (device %u:%u inode %lu) any more: %d probes detached, its library slot freed",
	       libset__label(&d->libs->libs[i], label, sizeof(label)), major(slot->dev), minor(slot->dev),
	       (unsigned long)slot->ino, probes);
	if (slot->tag)
		d->probed--;
	libset__remove(d->libs, i);
}

static void on_mapped(void *ctx, int pid, const struct mapped_lib *m)
{
	add_mapped(ctx, pid, m);
}

/* Every library file some process maps now, through /proc/PID/root (containers); then the
 * slots of those unmapped go. */
static void rescan(struct daemon *d)
{
	uint64_t t0 = gp_mono_ns();
	int nproc = libslots__rescan(gp_run__slots(d->run), "/proc", getpid(), "libcuda.so", on_mapped, d);

	d->rescans++;
	if (d->refused && d->told && libslots__sweep(gp_run__slots(d->run), d->libs->n == GP_MAX_LIBS, drop_lib, d)) {
		/* files refused a slot may have one now */
		u64map__free(d->refused);
		d->refused = u64map__new();
		u64map__free(d->told);
		d->told = u64map__new();
	}
	d->rescan_ns = gp_mono_ns() - t0;
	d->rescan_s += (double)d->rescan_ns / 1e9;
	gp_log(GP_LOG_DEBUG, "rescan: %d processes in %.1f ms", nproc, d->rescan_ns / 1e6);
}

/* --libcuda's file (instead of discovery, as in the CLI), else every one found now. */
static void initial_libs(struct daemon *d)
{
	struct lib_set *found = calloc(1, sizeof(*found));
	int before = attach_set__count(gp_run__links(d->run));

	if (!found)
		return;
	if (gp_opts.libcuda)
		libset__add(found, gp_opts.libcuda);
	else
		target__find_libcuda(found);
	for (int i = 0; i < found->n; i++)
		add_entry(d, &found->libs[i]);
	d->lib_probes = attach_set__count(gp_run__links(d->run)) - before;
	for (int i = 0; i < GP_SLOT__COUNT; i++) /* one user's copies refused at start */
		d->libs->refused[i] += found->refused[i];
	libset__clear(found);
	free(found);
	if (!d->probed)
		gp_log(GP_LOG_WARN, "no libcuda found yet: probes go in when a process maps one");
}

/* gp_run__begin's attach step: the libcuda files on the node now. */
static int attach_initial(void *ctx, struct gp_run *run, char *err, size_t len)
{
	(void)run, (void)err, (void)len;
	if (gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA)
		initial_libs(ctx);
	return 0;
}

/* The daemon's own families: what it is, what it probes, what it costs. */
static void own_families(struct daemon *d, struct prom_out *p)
{
	char modes[128], libbpf[32], fd_dir[64];
	const char *kv[] = { "version", GP_VERSION, "libbpf", libbpf, "modes", modes, NULL };
	struct rusage ru = { 0 };
	unsigned long long size = 0, rss = 0;
	uint64_t fds = 0;
	unsigned long found, lost;
	FILE *f = fopen("/proc/self/statm", "re");
	DIR *dir;

	gp_run__mode_names(d->run, modes, sizeof(modes));
	snprintf(libbpf, sizeof(libbpf), "%s", libbpf_version_string());
	prom__family(p, "gpuprobe_build_info");
	prom__u64(p, "gpuprobe_build_info", NULL, kv, 1);
	prom__family(p, "gpuprobe_libcuda_files");
	prom__u64(p, "gpuprobe_libcuda_files", NULL, NULL, (uint64_t)d->probed);
	prom__family(p, "gpuprobe_library_slots_used");
	prom__u64(p, "gpuprobe_library_slots_used", NULL, NULL, (uint64_t)d->libs->n);
	prom__family(p, "gpuprobe_library_slots_refused_total");
	for (int i = 0; i < GP_SLOT__COUNT; i++) {
		const char *kv[] = { "reason", libset__refusal_name(i), NULL };

		prom__u64(p, "gpuprobe_library_slots_refused_total", NULL, kv, d->libs->refused[i]);
	}
	prom__family(p, "gpuprobe_library_slots_freed_total");
	prom__u64(p, "gpuprobe_library_slots_freed_total", NULL, NULL, libslots__freed(gp_run__slots(d->run)));
	prom__family(p, "gpuprobe_probes_attached");
	prom__u64(p, "gpuprobe_probes_attached", NULL, NULL, (uint64_t)attach_set__count(gp_run__links(d->run)));
	prom__family(p, "gpuprobe_series");
	prom__u64(p, "gpuprobe_series", NULL, NULL, prom_store__series(d->store));
	prom__family(p, "gpuprobe_series_label_sets");
	prom__u64(p, "gpuprobe_series_label_sets", NULL, NULL, prom_store__label_sets(d->store));
	prom__family(p, "gpuprobe_series_overflow_total");
	for (int i = 0; i < PROM_OVERFLOW__COUNT; i++) {
		const char *kv[] = { "reason", i == PROM_OVERFLOW_TOTAL ? "total" : "cgroup", NULL };

		prom__u64(p, "gpuprobe_series_overflow_total", NULL, kv, prom_store__overflow(d->store, i));
	}
	cgroups__from_id_counts(d->cgroups, &found, &lost);
	prom__family(p, "gpuprobe_cgroups_read_after_exit_total");
	prom__u64(p, "gpuprobe_cgroups_read_after_exit_total", NULL, (const char *const[]){ "result", "found", NULL }, found);
	prom__u64(p, "gpuprobe_cgroups_read_after_exit_total", NULL, (const char *const[]){ "result", "not_found", NULL }, lost);
	prom__family(p, "gpuprobe_scrapes_total");
	prom__u64(p, "gpuprobe_scrapes_total", NULL, NULL, d->scrapes);
	prom__family(p, "gpuprobe_scrape_duration_seconds");
	prom__hist(p, "gpuprobe_scrape_duration_seconds", NULL, NULL, d->scrape_slots, d->scrape_s);
	prom__family(p, "gpuprobe_http_connections_closed_total");
	prom__u64(p, "gpuprobe_http_connections_closed_total", NULL, NULL, d->http ? http__closed_slow(d->http) : 0);
	prom__family(p, "gpuprobe_http_auth_failures_total");
	prom__u64(p, "gpuprobe_http_auth_failures_total", NULL, NULL, d->http ? http__auth_failures(d->http) : 0);
	prom__family(p, "gpuprobe_http_auth_busy_total");
	prom__u64(p, "gpuprobe_http_auth_busy_total", NULL, NULL, d->http ? http__auth_busy(d->http) : 0);
	prom__family(p, "gpuprobe_rescans_total");
	prom__u64(p, "gpuprobe_rescans_total", NULL, NULL, d->rescans);
	prom__family(p, "gpuprobe_rescan_seconds_total");
	prom__secs(p, "gpuprobe_rescan_seconds_total", NULL, NULL, d->rescan_s);
	getrusage(RUSAGE_SELF, &ru);
	prom__family(p, "process_cpu_seconds_total");
	prom__secs(p, "process_cpu_seconds_total", NULL, NULL,
		   (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	if (f && fscanf(f, "%llu %llu", &size, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	prom__family(p, "process_resident_memory_bytes");
	prom__u64(p, "process_resident_memory_bytes", NULL, NULL, rss * (uint64_t)sysconf(_SC_PAGESIZE));
	snprintf(fd_dir, sizeof(fd_dir), "/proc/%d/fd", getpid());
	dir = opendir(fd_dir);
	for (struct dirent *de; dir && (de = readdir(dir));)
		fds += de->d_name[0] != '.';
	if (dir)
		closedir(dir);
	prom__family(p, "process_open_fds");
	prom__u64(p, "process_open_fds", NULL, NULL, fds ? fds - 1 : 0); /* not the one reading */
	prom__family(p, "process_start_time_seconds");
	prom__secs(p, "process_start_time_seconds", NULL, NULL, d->start_time);
}

/*
 * One render: every mode's snapshot folded into the series store; written to f (a scrape)
 * or not (f NULL: the housekeeping's fold, so no exited process is forgotten before its
 * counts are kept, whether or not anyone scrapes).
 */
static int render(struct daemon *d, FILE *f)
{
	uint64_t now = gp_mono_ns();
	struct prom_out *p = prom_out__new(d->store, attr_of, d, now);
	int r = -ENOMEM;

	if (!p)
		return r;
	gp_events__drain(gp_run__events(d->run));
	r = gp_report__prom(d->run, p, d->probe_cost);
	if (!r)
		r = prom_out__fold(p);
	if (!r && f) {
		own_families(d, p);
		r = prom_out__write(p, f);
	}
	prom_out__free(p);
	return r;
}

/* Once a second: fold, then forget the records of processes that exited over a second
 * ago (folded by now), the attributions of processes long gone. */
static void housekeeping(struct daemon *d)
{
	uint64_t now = gp_mono_ns();

	if (render(d, NULL))
		gp_log(GP_LOG_WARN, "daemon: folding the snapshots failed (out of memory): exited processes kept");
	else
		gp_run__reap(d->run, now > FOLDED_AFTER_NS ? now - FOLDED_AFTER_NS : 0, 0);
	/* A gone process's cgroup is kept 10 s, and 120 s while the daemon is behind its
	 * buffers (the reap's read left records): records of processes gone for more than
	 * 10 s may still wait there, and each would count under no cgroup while the process's
	 * other series (read from the maps while it ran) stayed under its own: on 6.12 under
	 * QEMU's TCG 8 of the 20 processes of a cgroup's share had their allocations under no
	 * cgroup and their launches under the cgroup. The longer keep still bounds the table
	 * where the daemon never catches up. */
	cgroups__prune(d->cgroups, now, (gp_events__more(gp_run__events(d->run)) ? 120 : 10) * FOLDED_AFTER_NS);
}

/*
 * Where a process runs is read while it runs: at its exec (or fork, when following), and
 * at its first allocation, copy or context record — a child forked without an exec (a
 * launcher's worker) gets no exec record and may be gone before the next second's fold.
 */
static void on_proc(void *ctx, const struct gp_proc_event *e)
{
	struct daemon *d = ctx;

	if (e->type == GP_EV_EXEC || e->type == GP_EV_FORK)
		cgroups__refresh(d->cgroups, e->pid, e->type == GP_EV_EXEC ? e->comm : NULL, gp_mono_ns());
}

/* Any other record names a process the tracer saw: its cgroup read while it is there (the
 * process records have on_proc; an exit's process is going). */
static void on_any(void *ctx, __u32 type, __u32 pid)
{
	if (type != GP_EV_FORK && type != GP_EV_EXEC && type != GP_EV_GONE && type != GP_EV_EXIT)
		cgroups__note(((struct daemon *)ctx)->cgroups, pid, gp_mono_ns());
}

#define TEXT "text/plain; charset=utf-8"

static void text_reply(struct http_reply *r, unsigned int status, const char *body)
{
	*r = (struct http_reply){ status, TEXT, strdup(body), strlen(body) };
}

static void on_request(void *ctx, const char *url, struct http_reply *r)
{
	struct daemon *d = ctx;
	uint64_t t0 = gp_mono_ns(), us;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (!strcmp(url, "/healthz"))
		return text_reply(r, 200, "ok\n");
	if (!strcmp(url, "/"))
		return text_reply(r, 200, "gpuprobe: /metrics /healthz\n");
	if (strcmp(url, "/metrics"))
		return text_reply(r, 404, "not found\n");
	d->scrapes++;
	f = open_memstream(&buf, &len);
	err = f ? render(d, f) : -ENOMEM;
	if (f && fclose(f) && !err)
		err = -EIO;
	if (err) {
		free(buf);
		return text_reply(r, 500, "render failed\n");
	}
	us = (gp_mono_ns() - t0) / 1000;
	/* the BPF histograms' slot of us microseconds */
	d->scrape_slots[gp_log2_slot(us, PROM_HIST_SLOTS)]++;
	d->scrape_s += (double)us / 1e6;
	*r = (struct http_reply){ 200, "text/plain; version=0.0.4; charset=utf-8", buf, len };
}

/* The price of one probe hit on this node, unless --probe-cost said it. */
static double probe_cost(bool uprobes)
{
	double c = gp_opts.probe_cost;

	if (c >= 0)
		return c;
	if (!uprobes)
		return 4.4e-6; /* no probe hits to price */
	c = calibrate__probe_cost(GP_CALIBRATE_CALLS);
	if (c < 0) {
		gp_log(GP_LOG_WARN, "daemon: cannot calibrate the probe cost (%s): assuming 4.4e-6 s", strerror((int)-c));
		return 4.4e-6;
	}
	gp_log(GP_LOG_INFO, "daemon: one probe hit costs %.2f us here (calibrated)", c * 1e6);
	return c;
}

/* Whether a bound socket is on a loopback address (127/8, ::1, ::ffff:127/104). */
static bool loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t n = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &n))
		return false;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* An endpoint others can reach should say who may read it: a warning when it does not. */
static void warn_exposed(const struct daemon *d, int lfd)
{
	if (loopback(lfd))
		return;
	if (!d->wc)
		gp_log(GP_LOG_WARN, "listening on %s, not a loopback address, without --web-config: "
		       "/metrics is served in plain HTTP without authentication to anyone who can reach it",
		       gp_opts.listen);
	else if (!webconfig__tls(d->wc) && webconfig__users(d->wc))
		gp_log(GP_LOG_WARN, "listening on %s without TLS: basic-auth passwords cross the network in clear "
		       "(tls_server_config in --web-config)", gp_opts.listen);
	else if (!webconfig__users(d->wc))
		gp_log(GP_LOG_WARN, "listening on %s with no basic_auth_users in --web-config: anyone who can "
		       "reach it may read /metrics", gp_opts.listen);
}

/* Everything that can be refused is refused before anything is attached. */
static int preflight(struct daemon *d, int *lfd, int *family, char *err, size_t len)
{
	bool uprobes = gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA;
	int r = gp_check_privileges(err, len);

	if (!r)
		r = gp_check_kernel(uprobes, err, len);
	if (!r)
		r = features__check_kernel(err, len);
	if (!r && gp_opts.libcuda && target__check_libcuda(gp_opts.libcuda, err + 10, len - 10)) {
		memcpy(err, "--libcuda ", 10);
		r = -EINVAL;
	}
	if (!r && gp_opts.web_config && !(d->wc = webconfig__load(gp_opts.web_config, err, len)))
		r = -EINVAL;
	if (r)
		return r;
	*lfd = listen__open(gp_opts.listen, family, err, len);
	if (*lfd >= 0)
		warn_exposed(d, *lfd);
	return *lfd < 0 ? *lfd : 0;
}

static int start(struct daemon *d, char *err, size_t len)
{
	struct prom_store_opts so = {
		.per_process = gp_opts.per_process,
		.max_process_series = (size_t)gp_opts.max_process_series,
		.retention_ns = gp_seconds_to_ns(gp_opts.retention),
		.born_at_zero = true,
		.max_label_sets = (size_t)gp_opts.max_label_sets,
		.max_label_sets_per_cgroup = (size_t)gp_opts.max_label_sets_per_cgroup,
	};
	static const struct gp_on on[] = { GP_ON_PROCS(on_proc) };
	struct gp_handlers h = { .ctx = d, GP_ONS(on), .on_any = on_any };
	int r;

	d->libs = calloc(1, sizeof(*d->libs));
	d->refused = u64map__new();
	d->told = u64map__new();
	d->cgroups = cgroups__new(gp_opts.kubelet_log_dir);
	d->store = prom_store__new(&so);
	d->run = gp_run__new(&gp_opts, err, len);
	if (!d->libs || !d->refused || !d->told || !d->cgroups || !d->store || !d->run) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	gp_run__set_fe(d->run, d);
	daemon_targets__choose(d->run);
	/* libnccl now and later; libcuda files are this front end's rescans */
	r = gp_run__begin(d->run, &(struct gp_run_begin){ .attach = attach_initial, .ctx = d,
							  .watch_kinds = GP_NEED_LIBNCCL }, err, len);
	if (r)
		return r;
	/* execs (and followed forks): each process's cgroup read while it is there */
	if (gp_run__has_ring(d->run) && gp_run__subscribe(d->run, &h)) {
		snprintf(err, len, "cannot read the process records");
		return -EINVAL;
	}
	return 0;
}

/* A slow client may hold a connection 3 s at most before its headers are complete; the
 * last 16 of 256 connections are kept free by closing the oldest unfinished ones. */
static const struct http_limits http_limits = {
	.max_conns = 256, .reserve = 16, .header_ns = 3000000000ULL,
};

static int serve(struct daemon *d, int lfd, int family, char *err, size_t len)
{
	char modes[128], where[96], all[32] = "";
	int total;

	d->http = http__start(lfd, family, &http_limits, d->wc, "/healthz", on_request, d, err, len);
	if (!d->http)
		return -EIO;
	gp_run__mode_names(d->run, modes, sizeof(modes));
	total = attach_set__count(gp_run__links(d->run));
	/* as the CLI's tracing line: the libcuda files' probes, then every probe if others
	 * (the linker's hook, libnccl's, the process tracepoints) add to them */
	if (d->probed)
		snprintf(where, sizeof(where), "%d probes on %s", d->lib_probes,
			 gp_text__n((uint64_t)d->probed, "libcuda file", "libcuda files").s);
	else
		snprintf(where, sizeof(where), "no libcuda yet (probed as processes map one)");
	if (total != (d->probed ? d->lib_probes : 0))
		snprintf(all, sizeof(all), " (%d in all)", total);
	gp_log(GP_LOG_INFO, "listening on %s (port %u, %s%s): /metrics /healthz; tracing every CUDA process (%s): %s%s",
	       gp_opts.listen, http__port(d->http), d->wc && webconfig__tls(d->wc) ? "https" : "http",
	       d->wc && webconfig__users(d->wc) ? ", basic auth" : "", modes, where, all);
	return 0;
}

static int loop(struct daemon *d, char *err, size_t len)
{
	uint64_t next_tick = 0, next_rescan = 0;
	bool rescans = (gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA) && !gp_opts.libcuda && gp_opts.rescan > 0;

	while (!stop_signal) {
		struct pollfd fds[2] = {
			{ .fd = gp_events__epoll_fd(gp_run__events(d->run)), .events = POLLIN },
			{ .fd = http__poll_fd(d->http), .events = POLLIN },
		};
		uint64_t now;
		int r;

		/* records left by a read that yielded (src/core/events.c): no wait */
		if (poll(fds, 2, gp_events__more(gp_run__events(d->run)) ? 0 : 100) < 0 && errno != EINTR) {
			snprintf(err, len, "poll: %s", strerror(errno));
			return -errno;
		}
		r = gp_events__drain(gp_run__events(d->run));
		if (r < 0 && r != -EINTR) {
			snprintf(err, len, "reading the ring buffer: %s", strerror(-r));
			return r;
		}
		http__run(d->http);
		gp_run__tick(d->run);
		if (hup_signal) {
			hup_signal = 0;
			gp_log(GP_LOG_INFO, "SIGHUP: nothing to reload (restart to change options); still running");
		}
		now = gp_mono_ns();
		if (now >= next_tick) {
			housekeeping(d);
			next_tick = now + 1000000000ULL;
		}
		if (rescans && now >= next_rescan) {
			rescan(d);
			next_rescan = now + gp_seconds_to_ns(gp_opts.rescan);
		}
	}
	return 0;
}

int daemon__main(int argc, char **argv)
{
	struct gp_cmdline cl = { .name = "gpuprobe daemon", .frontend = GP_FE_DAEMON, .modes = true,
				 .doc = doc, .epilog = epilog, .positionals = GP_POS_NONE, .log_prefix = "<3>" };
	struct sigaction sa = { .sa_handler = on_signal }, ign = { .sa_handler = SIG_IGN };
	struct daemon d = { 0 };
	char err[1024] = "";
	int r, lfd = -1, family = AF_INET;

	r = gp_options__parse(&cl, argc, argv);
	if (r)
		return r == GP_PARSED_EXIT ? 0 : r;
	gp_log_setup(true, gp_opts.verbose);
	libbpf_set_print(libbpf_print);
	/* before anything is attached: a SIGTERM at any time detaches and exits 0 */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		d.start_time = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	}
	r = preflight(&d, &lfd, &family, err, sizeof(err));
	if (r)
		goto cleanup;
	d.probe_cost = probe_cost(gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA);
	r = start(&d, err, sizeof(err));
	if (!r) {
		r = serve(&d, lfd, family, err, sizeof(err));
		lfd = -1; /* the server took it over */
	}
	if (r)
		goto cleanup;
	r = loop(&d, err, sizeof(err));
	if (!r) {
		gp_events__drain(gp_run__events(d.run));
		gp_log(GP_LOG_INFO, "%s: detaching; %llu scrapes, %llu rescans (last %.1f ms), %llu events handled, %llu slow connections closed",
		       strsignal(stop_signal), (unsigned long long)d.scrapes, (unsigned long long)d.rescans,
		       d.rescan_ns / 1e6, (unsigned long long)gp_events__handled(gp_run__events(d.run)),
		       (unsigned long long)http__closed_slow(d.http));
	}
cleanup:
	if (r && err[0])
		gp_log(GP_LOG_ERR, "%s", err);
	http__stop(d.http);
	if (lfd >= 0)
		close(lfd);
	gp_run__free(d.run);
	cgroups__free(d.cgroups);
	prom_store__free(d.store);
	webconfig__free(d.wc);
	free(d.libs);
	u64map__free(d.refused);
	u64map__free(d.told);
	return r ? 1 : 0;
}
