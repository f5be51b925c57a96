/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe daemon: probes every libcuda on the node for every process (pid -1), finds
 * library files that appear later (containers, driver upgrades) by rescanning
 * /proc/PID/maps, and serves /metrics and /healthz with libmicrohttpd. The modes are the
 * run's (src/core/run.h); none is named here.
 *
 * One thread: poll() waits on the ring buffer's epoll fd and on libmicrohttpd's, so the
 * aggregators are only ever touched from here and need no locks.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "attach.h"
#include "calibrate.h"
#include "cgroups.h"
#include "cmdline.h"
#include "daemon.h"
#include "events.h"
#include "http.h"
#include "listen.h"
#include "options.h"
#include "procmaps.h"
#include "prom.h"
#include "run.h"
#include "target.h"
#include "util.h"

struct daemon {
	struct gp_run *run;
	struct lib_set *libs; /* every library file seen (probed or rejected), by dev+inode */
	int probed;           /* of those, the ones with probes */
	struct cgroups *cgroups;
	struct http *http;
	double probe_cost;
	uint64_t scrapes, rescans, rescan_ns;
};

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
	return vfprintf(stderr, fmt, args);
}

static const char doc[] =
	"Trace every CUDA process on the node and serve Prometheus metrics.\n";

static const char epilog[] =
	"Logs go to stderr with <N> syslog priority prefixes (journald reads them).\n"
	"SIGTERM/SIGINT: detach and exit 0. SIGHUP: logged, nothing to reload.\n"
	"Exit status: 0 after SIGTERM/SIGINT, 1 on an error, 2 on bad usage.\n";

static const char *container_of(void *ctx, uint32_t pid)
{
	return cgroups__of(((struct daemon *)ctx)->cgroups, pid);
}

/* Probes one more library for every process; logs what happened. */
static void probe_lib(struct daemon *d, const struct lib_entry *lib)
{
	char err[1024] = "", why[512], label[GP_PATH_MAX + 64];
	int before = attach_set__count(d->run->links);

	if (target__check_lib(lib, why, sizeof(why))) {
		gp_log(GP_LOG_WARN, "not probing %s", why);
		return;
	}
	/* through the checked descriptor: a path the process swaps now is not followed */
	if (gp_run__attach_lib(d->run, GP_LIB_CUDA, lib->fd_path, err, sizeof(err))) {
		gp_log(GP_LOG_ERR, "%s: %s", libset__label(lib, label, sizeof(label)), err);
		return;
	}
	d->probed++;
	gp_log(GP_LOG_INFO, "probing %s (device %u:%u inode %lu): %d probes", libset__label(lib, label, sizeof(label)), major(lib->dev),
	       minor(lib->dev), (unsigned long)lib->ino, attach_set__count(d->run->links) - before);
}

/* A file a process maps, opened inside its root with the dev/inode its maps show. */
static void add_mapped(struct daemon *d, int pid, const struct mapped_lib *m)
{
	int before = d->libs->n;

	if (libset__add_mapped(d->libs, "/proc", pid, m, NULL, 0) == 1)
		probe_lib(d, &d->libs->libs[before]);
}

static void add_entry(struct daemon *d, const struct lib_entry *e)
{
	int before = d->libs->n;

	if (libset__add_entry(d->libs, e) == 1)
		probe_lib(d, &d->libs->libs[before]);
}

/* Every library file some process maps now, through /proc/PID/root (containers). */
static void rescan(struct daemon *d)
{
	struct mapped_lib libs[4];
	uint64_t t0 = gp_mono_ns();
	int self = getpid(), nproc = 0;
	struct dirent *de;
	DIR *dir = opendir("/proc");

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		int pid = atoi(de->d_name), n;

		if (pid <= 0 || pid == self)
			continue;
		nproc++;
		n = procmaps__find_libs("/proc", pid, "libcuda.so", libs, 4);
		for (int i = 0; i < n; i++)
			add_mapped(d, pid, &libs[i]);
	}
	closedir(dir);
	d->rescans++;
	d->rescan_ns = gp_mono_ns() - t0;
	gp_log(GP_LOG_DEBUG, "rescan: %d processes in %.1f ms", nproc, d->rescan_ns / 1e6);
}

/* --libcuda's file (instead of discovery, as in the CLI), else every one found now. */
static void initial_libs(struct daemon *d)
{
	struct lib_set *found = calloc(1, sizeof(*found));

	if (!found)
		return;
	if (gp_opts.libcuda)
		libset__add(found, gp_opts.libcuda);
	else
		target__find_libcuda(found);
	for (int i = 0; i < found->n; i++)
		add_entry(d, &found->libs[i]);
	libset__clear(found);
	free(found);
	if (!d->probed)
		gp_log(GP_LOG_WARN, "no libcuda found yet: probes go in when a process maps one");
}

static void warm_cgroup(void *ctx, const struct gp_snap_pid *p)
{
	if (!p->exited)
		cgroups__of(ctx, p->pid); /* read while it is there to read */
}

/* Once a second: retention of exited processes in every mode, the cgroup cache. */
static void housekeeping(struct daemon *d)
{
	uint64_t now = gp_mono_ns(), keep = gp_seconds_to_ns(gp_opts.retention);

	gp_run__hits(d->run, warm_cgroup, d->cgroups);
	gp_run__reap(d->run, now > keep ? now - keep : 0, 0);
	cgroups__prune(d->cgroups, now, keep + 5000000000ULL);
}

static int render(struct daemon *d, char **buf, size_t *len)
{
	struct prom_out *p = prom_out__new(container_of, d);
	FILE *f = NULL;
	int r = -ENOMEM;

	*buf = NULL;
	*len = 0;
	if (!p)
		goto cleanup;
	gp_events__drain(d->run->events);
	r = gp_run__prom(d->run, p, d->probe_cost);
	if (r)
		goto cleanup;
	prom__family(p, "gpuprobe_libcuda_files", "gauge", "Distinct libcuda files (device+inode) gpuprobe has probes on.");
	prom__u64(p, "gpuprobe_libcuda_files", NULL, NULL, (uint64_t)d->probed);
	prom__family(p, "gpuprobe_probes_attached", "gauge", "Probes attached (one per function and direction).");
	prom__u64(p, "gpuprobe_probes_attached", NULL, NULL, (uint64_t)attach_set__count(d->run->links));
	f = open_memstream(buf, len);
	if (!f) {
		r = -errno;
		goto cleanup;
	}
	r = prom_out__write(p, f);
	if (fclose(f) && !r)
		r = -EIO;
cleanup:
	prom_out__free(p);
	return r;
}

#define TEXT "text/plain; charset=utf-8"

static void text_reply(struct http_reply *r, unsigned int status, const char *body)
{
	*r = (struct http_reply){ status, TEXT, strdup(body), strlen(body) };
}

static void on_request(void *ctx, const char *url, struct http_reply *r)
{
	struct daemon *d = ctx;
	char *buf;
	size_t len;

	if (!strcmp(url, "/healthz"))
		return text_reply(r, 200, "ok\n");
	if (!strcmp(url, "/"))
		return text_reply(r, 200, "gpuprobe: /metrics /healthz\n");
	if (strcmp(url, "/metrics"))
		return text_reply(r, 404, "not found\n");
	if (render(d, &buf, &len)) {
		free(buf);
		return text_reply(r, 500, "render failed\n");
	}
	d->scrapes++;
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
	c = calibrate__probe_cost(2000);
	if (c < 0) {
		gp_log(GP_LOG_WARN, "daemon: cannot calibrate the probe cost (%s): assuming 4.4e-6 s", strerror((int)-c));
		return 4.4e-6;
	}
	gp_log(GP_LOG_INFO, "daemon: one probe hit costs %.2f us here (calibrated)", c * 1e6);
	return c;
}

/* Everything that can be refused is refused before anything is attached. */
static int preflight(int *lfd, int *family, char *err, size_t len)
{
	bool uprobes = gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA;
	int r = gp_check_privileges(err, len);

	if (!r)
		r = gp_check_kernel(uprobes, err, len);
	if (!r && gp_opts.libcuda && target__check_libcuda(gp_opts.libcuda, err + 10, len - 10)) {
		memcpy(err, "--libcuda ", 10);
		r = -EINVAL;
	}
	if (r)
		return r;
	*lfd = listen__open(gp_opts.listen, family, err, len);
	return *lfd < 0 ? *lfd : 0;
}

static int start(struct daemon *d, char *err, size_t len)
{
	d->libs = calloc(1, sizeof(*d->libs));
	d->cgroups = cgroups__new();
	d->run = gp_run__new(&gp_opts, err, len);
	if (!d->libs || !d->cgroups || !d->run) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	d->run->fe = d;
	d->run->target_pid = -1;
	/* --comm, --cgroup: the node's processes of that name or cgroup, and their children */
	d->run->comm = gp_opts.comm;
	d->run->cgroup = gp_opts.cgroup;
	d->run->filter = d->run->follow_forks = gp_opts.comm || gp_opts.cgroup;
	if (gp_run__open(d->run, err, len) || gp_run__start(d->run, err, len))
		return -EINVAL;
	if (gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA)
		initial_libs(d);
	/* libnccl now and later; libcuda files are this front end's rescans */
	return gp_run__watch_libs(d->run, GP_NEED_LIBNCCL, err, len);
}

/* A slow client may hold a connection 3 s at most before its headers are complete; the
 * last 16 of 256 connections are kept free by closing the oldest unfinished ones. */
static const struct http_limits http_limits = {
	.max_conns = 256, .reserve = 16, .header_ns = 3000000000ULL,
};

static int serve(struct daemon *d, int lfd, int family, char *err, size_t len)
{
	char modes[128];

	d->http = http__start(lfd, family, &http_limits, on_request, d, err, len);
	if (!d->http)
		return -EIO;
	gp_run__mode_names(d->run, modes, sizeof(modes));
	gp_log(GP_LOG_INFO, "listening on %s (port %u): /metrics /healthz; tracing every CUDA process (%s): %d probes on %d libcuda files",
	       gp_opts.listen, http__port(d->http), modes, attach_set__count(d->run->links), d->probed);
	return 0;
}

static int loop(struct daemon *d, char *err, size_t len)
{
	uint64_t next_tick = 0, next_rescan = 0;
	bool rescans = (gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA) && !gp_opts.libcuda && gp_opts.rescan > 0;

	while (!stop_signal) {
		struct pollfd fds[2] = {
			{ .fd = gp_events__epoll_fd(d->run->events), .events = POLLIN },
			{ .fd = http__poll_fd(d->http), .events = POLLIN },
		};
		uint64_t now;
		int r;

		if (poll(fds, 2, 100) < 0 && errno != EINTR) {
			snprintf(err, len, "poll: %s", strerror(errno));
			return -errno;
		}
		r = gp_events__drain(d->run->events);
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
	r = preflight(&lfd, &family, err, sizeof(err));
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
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	r = loop(&d, err, sizeof(err));
	if (!r) {
		gp_events__drain(d.run->events);
		gp_log(GP_LOG_INFO, "%s: detaching; %llu scrapes, %llu rescans (last %.1f ms), %llu events handled, %llu slow connections closed",
		       strsignal(stop_signal), (unsigned long long)d.scrapes, (unsigned long long)d.rescans,
		       d.rescan_ns / 1e6, (unsigned long long)gp_events__handled(d.run->events),
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
	free(d.libs);
	return r ? 1 : 0;
}
