/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe daemon: probes every libcuda on the node for every process (pid -1), finds
 * library files that appear later (containers, driver upgrades) by rescanning
 * /proc/PID/maps, and serves /metrics (src/prom.c) and /healthz with libmicrohttpd.
 *
 * One thread: poll() waits on the ring buffer's epoll fd and on libmicrohttpd's, so the
 * aggregators are only ever touched from here and need no locks.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/libbpf.h>
#include <microhttpd.h>
#include "attach.h"
#include "calibrate.h"
#include "bandwidth.h"
#include "bandwidth_probe.h"
#include "cudatrace.h"
#include "daemon.h"
#include "events.h"
#include "ioctl.h"
#include "ioctl_probe.h"
#include "cudatrace_probe.h"
#include "memleak_probe.h"
#include "memleak.h"
#include "options.h"
#include "procmaps.h"
#include "prom.h"
#include "symbolize.h"
#include "target.h"
#include "u64map.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* sd-daemon(3) prefixes: journald turns them into priorities */
#define L_ERR 3
#define L_WARN 4
#define L_INFO 6
#define L_DEBUG 7

#define EXIT_USAGE 2

struct dconf {
	const char *listen;
	double retention, rescan, probe_cost;
	unsigned long max_kernel_series, max_ioctl_series;
	bool verbose;
};

struct cg_entry {
	char *path;
	uint64_t gone_ns; /* when the process was first seen gone; 0 while alive */
};

struct daemon {
	struct dconf c;
	struct gp_opts o;
	struct attach_set *links;
	struct gp_events *events;
	struct symbolizer *sym;
	struct mem_probe *mem;
	struct launch_probe *launch;
	struct copy_probe *copy; /* --bandwidth-util; needs mem (allocations, one ring buffer) */
	struct ioctl_probe *ioc; /* --ioctl: counters in BPF maps, read at scrape time */
	struct u64map *ioc_gone; /* --ioctl: pid -> (void *)when first seen gone (mono ns) */
	struct lib_set *libs; /* every library file seen (probed or rejected), by dev+inode */
	int probed;           /* of those, the ones with probes */
	struct u64map *cgroups; /* pid -> struct cg_entry */
	struct MHD_Daemon *mhd;
	uint64_t scrapes, rescans, rescan_ns;
};

static volatile sig_atomic_t stop_signal, hup_signal;
static bool verbose;

static void dlog(int level, const char *fmt, ...)
{
	va_list ap;

	if (level == L_DEBUG && !verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "<%d>gpuprobe: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!verbose || level == LIBBPF_DEBUG)
		return 0;
	fprintf(stderr, "<%d>", L_DEBUG);
	return vfprintf(stderr, fmt, args);
}

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		hup_signal = 1;
	else
		stop_signal = sig;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool has_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[cap >> 5].effective & (1U << (cap & 31));
}

static const char usage[] =
	"Usage: gpuprobe daemon --memleak|--cudatrace|--bandwidth-util|--ioctl [OPTION...]\n"
	"Trace every CUDA process on the node and serve Prometheus metrics.\n"
	"\n"
	"  --memleak                 outstanding allocations, alloc/free calls\n"
	"  --cudatrace               kernel and graph launches, synchronize calls and time\n"
	"  --bandwidth-util          copies and bytes per GPU and direction, copy time,\n"
	"                            pageable bytes\n"
	"  --ioctl                   ioctls on nvidia device nodes per process, node and\n"
	"                            command: calls, errors, seconds\n"
	"  --listen ADDR:PORT        where to serve /metrics and /healthz (default\n"
	"                            127.0.0.1:9464; IPv6 as [::1]:9464)\n"
	"  --retention SECONDS       keep series of exited processes this long (default 300)\n"
	"  --max-kernel-series N     kernels with their own series per process; the rest\n"
	"                            are summed under kernel=\"other\" (default 20)\n"
	"  --max-ioctl-series N      --ioctl: (node, command, control) series per process;\n"
	"                            the rest are summed under cmd=\"other\" (default 20)\n"
	"  --ioctl-backend kprobe|tracepoint\n"
	"                            --ioctl: force a backend (default: kprobes where the\n"
	"                            kernel has them)\n"
	"  --ioctl-dev MAJOR[:NAME]  --ioctl: also trace this character-device major (tests;\n"
	"                            repeatable, 8 at most)\n"
	"  --probe-cost SECONDS      cost of one probe hit (default: calibrated at start-up)\n"
		"  --rescan-interval SECONDS look for new libcuda files in /proc/*/maps this often\n"
	"                            (default 5; 0: only at start)\n"
	"  --libcuda PATH            probe this library too\n"
	"  --no-latency              no return probes on launches and syncs (then\n"
	"                            gpuprobe_cuda_sync_seconds_total stays 0)\n"
	"  --min-bytes N             --bandwidth-util: copies under N bytes are only counted,\n"
	"                            all together, in gpuprobe_cuda_memcpy_small_total\n"
	"  -v, --verbose             debug lines (libbpf, each rescan)\n"
	"  -h, --help                this text\n"
	"\n"
	"Logs go to stderr with <N> syslog priority prefixes (journald reads them).\n"
	"SIGTERM/SIGINT: detach and exit 0. SIGHUP: logged, nothing to reload.\n"
	"Exit status: 0 after SIGTERM/SIGINT, 1 on an error, 2 on bad usage.\n";

enum {
	D_MEMLEAK = 1000, D_CUDATRACE, D_BANDWIDTH, D_IOCTL, D_LISTEN, D_RETENTION,
	D_MAX_KERNELS, D_PROBE_COST, D_RESCAN, D_LIBCUDA, D_NO_LATENCY, D_MIN_BYTES,
	D_MAX_IOCTLS, D_IOCTL_BACKEND, D_IOCTL_DEV,
};

static int parse_num(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || *out < 0 || *out != *out) ? -EINVAL : 0;
}

/* One line on stderr for every problem; 0 or EXIT_USAGE (or -1 for --help). */
static int parse_args(struct daemon *d, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "memleak", no_argument, NULL, D_MEMLEAK },
		{ "cudatrace", no_argument, NULL, D_CUDATRACE },
		{ "bandwidth-util", no_argument, NULL, D_BANDWIDTH },
		{ "ioctl", no_argument, NULL, D_IOCTL },
		{ "listen", required_argument, NULL, D_LISTEN },
		{ "retention", required_argument, NULL, D_RETENTION },
		{ "max-kernel-series", required_argument, NULL, D_MAX_KERNELS },
		{ "probe-cost", required_argument, NULL, D_PROBE_COST },
		{ "rescan-interval", required_argument, NULL, D_RESCAN },
		{ "libcuda", required_argument, NULL, D_LIBCUDA },
		{ "no-latency", no_argument, NULL, D_NO_LATENCY },
		{ "min-bytes", required_argument, NULL, D_MIN_BYTES },
		{ "max-ioctl-series", required_argument, NULL, D_MAX_IOCTLS },
		{ "ioctl-backend", required_argument, NULL, D_IOCTL_BACKEND },
		{ "ioctl-dev", required_argument, NULL, D_IOCTL_DEV },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	double v;
	int opt;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":vh", lo, NULL)) != -1) {
		switch (opt) {
		case D_MEMLEAK:
			d->o.memleak = true;
			break;
		case D_CUDATRACE:
			d->o.cudatrace = true;
			break;
		case D_BANDWIDTH:
			d->o.bandwidth = true;
			break;
		case D_IOCTL:
			d->o.ioctl = true;
			break;
		case D_IOCTL_BACKEND:
			if (strcmp(optarg, "kprobe") && strcmp(optarg, "tracepoint")) {
				dlog(L_ERR, "daemon: --ioctl-backend must be kprobe or tracepoint");
				return EXIT_USAGE;
			}
			d->o.ioctl_backend = optarg;
			break;
		case D_IOCTL_DEV: {
			char *colon = strchr(optarg, ':');

			if (colon)
				*colon = 0;
			if (parse_num(optarg, &v) || v != (double)(unsigned int)v || v < 1 || v > 4095 ||
			    d->o.nr_ioctl_devs == 8) {
				dlog(L_ERR, "daemon: invalid --ioctl-dev (MAJOR[:NAME], at most 8): %s", optarg);
				return EXIT_USAGE;
			}
			d->o.ioctl_dev_major[d->o.nr_ioctl_devs] = (unsigned int)v;
			d->o.ioctl_dev_name[d->o.nr_ioctl_devs++] = colon ? colon + 1 : NULL;
			break;
		}
		case D_LISTEN:
			d->c.listen = optarg;
			break;
		case D_RETENTION:
		case D_PROBE_COST:
		case D_RESCAN:
			if (parse_num(optarg, &v) || v > 1e9) {
				dlog(L_ERR, "daemon: invalid number of seconds: %s", optarg);
				return EXIT_USAGE;
			}
			if (opt == D_RETENTION)
				d->c.retention = v;
			else if (opt == D_RESCAN)
				d->c.rescan = v;
			else
				d->c.probe_cost = v;
			break;
		case D_MAX_KERNELS:
		case D_MAX_IOCTLS:
			if (parse_num(optarg, &v) || v != (double)(unsigned long)v || v > 100000) {
				dlog(L_ERR, "daemon: invalid %s: %s",
				     opt == D_MAX_KERNELS ? "--max-kernel-series" : "--max-ioctl-series", optarg);
				return EXIT_USAGE;
			}
			if (opt == D_MAX_KERNELS)
				d->c.max_kernel_series = (unsigned long)v;
			else
				d->c.max_ioctl_series = (unsigned long)v;
			break;
		case D_LIBCUDA:
			d->o.libcuda = optarg;
			break;
		case D_NO_LATENCY:
			d->o.latency = false;
			break;
		case D_MIN_BYTES: {
			char *end;

			errno = 0;
			d->o.min_bytes = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-') {
				dlog(L_ERR, "daemon: invalid --min-bytes: %s", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case 'v':
			d->c.verbose = verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		case ':':
			dlog(L_ERR, "daemon: option %s needs an argument", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			dlog(L_ERR, "daemon: unknown option %s (see gpuprobe daemon --help)", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		dlog(L_ERR, "daemon: unexpected argument %s (the daemon traces every process; see gpuprobe daemon --help)",
		     argv[optind]);
		return EXIT_USAGE;
	}
	if (!d->o.memleak && !d->o.cudatrace && !d->o.bandwidth && !d->o.ioctl) {
		dlog(L_ERR, "daemon: choose a mode: --memleak, --cudatrace, --bandwidth-util, --ioctl (or several)");
		return EXIT_USAGE;
	}
	if (!d->o.ioctl && (d->o.ioctl_backend || d->o.nr_ioctl_devs)) {
		dlog(L_ERR, "daemon: --ioctl-backend and --ioctl-dev need --ioctl");
		return EXIT_USAGE;
	}
	return 0;
}

/*
 * "ADDR:PORT" or "[V6ADDR]:PORT" -> a bound, listening socket. Names resolve too, the
 * first address wins. Returns the fd or -errno with one reason in err.
 */
static int open_listener(const char *spec, int *family, char *err, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV },
			*ai = NULL;
	char host[256], *port;
	const char *colon;
	int fd = -1, one = 1, r;

	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (!close || close[1] != ':' || close - spec - 1 >= (long)sizeof(host) || close == spec + 1) {
			snprintf(err, len, "invalid --listen %s: expected [IPV6]:PORT", spec);
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(close - spec - 1), spec + 1);
		colon = close + 1;
	} else {
		colon = strrchr(spec, ':');
		if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host)) {
			snprintf(err, len, "invalid --listen %s: expected ADDR:PORT, e.g. 127.0.0.1:9464", spec);
			return -EINVAL;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		if (strchr(host, ':')) {
			snprintf(err, len, "invalid --listen %s: IPv6 addresses go in brackets, e.g. [::1]:9464", spec);
			return -EINVAL;
		}
	}
	port = (char *)colon + 1;
	{
		char *end;
		long p;

		errno = 0;
		p = strtol(port, &end, 10);
		if (errno || end == port || *end || p < 0 || p > 65535) {
			snprintf(err, len, "invalid --listen %s: bad port %s", spec, port);
			return -EINVAL;
		}
	}
	r = getaddrinfo(host, port, &hints, &ai);
	if (r) {
		snprintf(err, len, "invalid --listen %s: %s", spec, gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, len, "cannot listen on %s: %s", spec, strerror(-r));
		goto cleanup;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		r = -errno;
		snprintf(err, len, "cannot listen on %s: %s", spec, strerror(-r));
		goto cleanup;
	}
	*family = ai->ai_family;
	r = fd;
	fd = -1;
cleanup:
	if (fd >= 0)
		close(fd);
	if (ai)
		freeaddrinfo(ai);
	return r;
}

/* The cgroup path of pid (cgroup v2's "0::" line, else the first hierarchy's). */
static int read_cgroup(uint32_t pid, char *buf, size_t len)
{
	char path[64], line[4096], *p = NULL;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		c = c ? strchr(c + 1, ':') : NULL;
		if (!c)
			continue;
		if (!found || !strncmp(line, "0::", 3)) {
			p = c + 1;
			p[strcspn(p, "\n")] = '\0';
			snprintf(buf, len, "%s", p);
			found = true;
			if (!strncmp(line, "0::", 3))
				break;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

static const char *container_of(void *ctx, uint32_t pid)
{
	struct daemon *d = ctx;
	struct cg_entry *e = u64map__get(d->cgroups, pid);
	char buf[4096];

	if (e)
		return e->path;
	if (read_cgroup(pid, buf, sizeof(buf)))
		return "";
	e = calloc(1, sizeof(*e));
	if (!e)
		return "";
	e->path = strdup(buf);
	if (!e->path || u64map__put(d->cgroups, pid, e)) {
		free(e->path);
		free(e);
		return "";
	}
	return e->path;
}

/* Probes one more library for every process; logs what happened. */
static void probe_lib(struct daemon *d, const struct lib_entry *lib)
{
	struct lib_set one = { .n = 1 };
	char err[1024] = "", why[512];
	int before = attach_set__count(d->links), r = 0;

	if (target__check_libcuda(lib->path, why, sizeof(why))) {
		dlog(L_WARN, "not probing %s", why);
		return;
	}
	one.libs[0] = *lib;
	if (d->mem)
		r = mem_probe__attach_libs(d->mem, d->links, &one, -1, err, sizeof(err));
	if (!r && d->launch)
		r = launch_probe__attach_libs(d->launch, d->links, &one, -1, err, sizeof(err));
	if (!r && d->copy)
		r = copy_probe__attach_libs(d->copy, d->links, &one, -1, err, sizeof(err));
	if (r) {
		dlog(L_ERR, "%s", err);
		return;
	}
	d->probed++;
	dlog(L_INFO, "probing %s (device %u:%u inode %lu): %d probes", lib->path,
	     major(lib->dev), minor(lib->dev), (unsigned long)lib->ino,
	     attach_set__count(d->links) - before);
}

/* Every library file some process maps now, through /proc/PID/root (containers). */
static void rescan(struct daemon *d)
{
	struct mapped_lib libs[4];
	uint64_t t0 = mono_ns();
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
		for (int i = 0; i < n; i++) {
			int before = d->libs->n;

			if (libset__add(d->libs, libs[i].host_path) == 1)
				probe_lib(d, &d->libs->libs[before]);
		}
	}
	closedir(dir);
	d->rescans++;
	d->rescan_ns = mono_ns() - t0;
	dlog(L_DEBUG, "rescan: %d processes in %.1f ms", nproc, d->rescan_ns / 1e6);
}

static void initial_libs(struct daemon *d)
{
	struct lib_set *found = calloc(1, sizeof(*found));

	if (!found)
		return;
	if (d->o.libcuda)
		libset__add(found, d->o.libcuda);
	target__find_libcuda(found);
	for (int i = 0; i < found->n; i++) {
		int before = d->libs->n;

		if (libset__add(d->libs, found->libs[i].path) == 1)
			probe_lib(d, &d->libs->libs[before]);
	}
	free(found);
	if (!d->probed)
		dlog(L_WARN, "no libcuda found yet: probes go in when a process maps one");
}

/*
 * --bandwidth-util: the memory probes' exit record comes only for processes they saw
 * allocate or free; those gone without it (copies, contexts or synchronizes only) are
 * marked exited here. Their last records may still wait in the ring buffer: drained
 * first, so they do not make them live again.
 */
static void bandwidth_housekeeping(struct daemon *d, uint64_t now, uint64_t cutoff)
{
	struct bandwidth *bw = copy_probe__bandwidth(d->copy);
	struct bw_proc **procs;
	size_t n = bandwidth__procs(bw, &procs);
	bool drained = false;

	/* procs (a view) and its elements stay valid here: only reaping frees */
	for (size_t i = 0; i < n; i++) {
		struct gp_exit_event e = { .type = GP_EV_EXIT, .ts_ns = now };
		struct bw_proc *p = procs[i];

		if (bw_proc__exited(p))
			continue;
		container_of(d, bw_proc__pid(p)); /* read while it is there to read */
		if (kill((pid_t)bw_proc__pid(p), 0) == 0 || errno != ESRCH)
			continue;
		if (!drained) {
			gp_events__drain(d->events);
			drained = true;
		}
		if (bw_proc__exited(p))
			continue; /* its exit record was there */
		e.pid = bw_proc__pid(p);
		snprintf(e.comm, sizeof(e.comm), "%s", bw_proc__comm(p));
		bandwidth__on_exit(bw, &e);
	}
	copy_probe__reap_before(d->copy, cutoff);
}

/*
 * --ioctl: the BPF counters of a process stay after it exits (the ioctl object has no
 * exit hook: the tracepoint backend sees every process's syscalls, and a hook per exit
 * would be more of them), so the exit is seen here, by /proc/PID no longer being there,
 * and the keys are deleted --retention seconds later. A PID seen again before then is
 * live again (a reused PID continues the old counters until it exits).
 */
static void ioctl_housekeeping(struct daemon *d, uint64_t now, uint64_t keep)
{
	struct u64map *forget = u64map__new(), *pids = u64map__new();
	uint64_t k;
	void *v;

	if (!forget || !pids || ioctl_probe__pids(d->ioc, pids))
		goto out;
	for (size_t it = 0; u64map__next(pids, &it, &k, &v);) {
		uint32_t pid = (uint32_t)k;
		uint64_t gone = (uint64_t)(uintptr_t)u64map__get(d->ioc_gone, pid);
		bool alive = kill((pid_t)pid, 0) == 0 || errno != ESRCH;

		if (alive) {
			container_of(d, pid); /* read while it is there to read */
			if (gone)
				u64map__del(d->ioc_gone, pid);
		} else if (!gone) {
			u64map__put(d->ioc_gone, pid, (void *)(uintptr_t)now);
		} else if (now - gone >= keep) {
			u64map__put(forget, pid, (void *)(uintptr_t)gone);
		}
	}
	if (u64map__size(forget)) {
		int keys = ioctl_probe__forget(d->ioc, forget);

		for (size_t it = 0; u64map__next(forget, &it, &k, &v);)
			u64map__del(d->ioc_gone, k);
		dlog(L_DEBUG, "ioctl: forgot %zu exited processes (%d counters)", u64map__size(forget), keys);
	}
out:
	u64map__free(forget);
	u64map__free(pids);
}

/* Once a second: processes the exit tracepoint could not report (exited before their
 * first snapshot), retention, and the cgroup cache. */
static void housekeeping(struct daemon *d)
{
	uint64_t now = mono_ns(), keep = (uint64_t)(d->c.retention * 1e9), cutoff;
	uint64_t k;
	void *v;

	cutoff = now > keep ? now - keep : 0;
	if (d->launch) {
		struct cudatrace *ct = launch_probe__cudatrace(d->launch);
		struct ct_proc **procs;
		size_t n;

		launch_probe__snapshot(d->launch);
		n = cudatrace__procs(ct, &procs);
		for (size_t i = 0; i < n; i++) {
			struct gp_exit_event e = { .type = GP_EV_EXIT, .ts_ns = now };

			if (!procs[i]->exited)
				container_of(d, procs[i]->pid); /* read while it is there to read */
			if (procs[i]->exited || kill((pid_t)procs[i]->pid, 0) == 0 || errno != ESRCH)
				continue;
			e.pid = procs[i]->pid;
			memcpy(e.comm, procs[i]->comm, sizeof(e.comm));
			cudatrace__on_exit(ct, &e); /* changes ct's arrays: one per round */
			break;
		}
		launch_probe__reap_before(d->launch, cutoff);
	}
	if (d->mem) {
		struct ml_proc **procs;
		size_t n = memleak__procs(mem_probe__memleak(d->mem), &procs);

		for (size_t i = 0; i < n; i++)
			if (!procs[i]->exited)
				container_of(d, procs[i]->pid);
		mem_probe__reap_before(d->mem, cutoff);
	}
	if (d->copy)
		bandwidth_housekeeping(d, now, cutoff);
	if (d->ioc)
		ioctl_housekeeping(d, now, keep);
	for (size_t it = 0; u64map__next(d->cgroups, &it, &k, &v);) {
		struct cg_entry *e = v;

		if (!e->gone_ns && kill((pid_t)k, 0) && errno == ESRCH)
			e->gone_ns = now;
		if (e->gone_ns && now - e->gone_ns > keep + 5000000000ULL) {
			u64map__del(d->cgroups, k);
			free(e->path);
			free(e);
			break; /* the iterator is invalid now; the rest go next round */
		}
	}
}

static int render(struct daemon *d, char **buf, size_t *len)
{
	struct prom_drop drops[GP_DROP__COUNT + 1 + GP_LDROP__COUNT + GP_CDROP__COUNT + 2 +
			       GP_IDROP__COUNT];
	static const char *const mem_reasons[GP_DROP__COUNT] = {
		"ringbuf_full", "pending_table_full", "stack_unreadable", "return_without_entry",
		"proc_table_full",
	};
	static const char *const launch_reasons[GP_LDROP__COUNT] = {
		"ringbuf_full", "launch_table_full", "pending_table_full", "return_without_entry",
		"proc_table_full",
	};
	static const char *const copy_reasons[GP_CDROP__COUNT] = {
		"ringbuf_full", "pending_table_full", "return_without_entry",
	};
	/* the daemon asks for no per-ioctl records: no ring buffer to overflow */
	static const char *const ioctl_reasons[GP_IDROP__COUNT] = {
		[GP_IDROP_KEYS] = "counter_table_full", [GP_IDROP_PENDING] = "pending_table_full",
		[GP_IDROP_PROCS] = "process_name_table_full",
		[GP_IDROP_CTRL_READ] = "control_params_unreadable",
	};
	uint64_t md[GP_DROP__COUNT] = { 0 }, ld[GP_LDROP__COUNT], cd[GP_CDROP__COUNT], id[GP_IDROP__COUNT];
	struct prom_input in = {
		.ml = d->mem && d->o.memleak ? mem_probe__memleak(d->mem) : NULL,
		.ct = d->launch ? launch_probe__cudatrace(d->launch) : NULL,
		.bw = d->copy ? copy_probe__bandwidth(d->copy) : NULL,
		.small_copies = d->copy ? copy_probe__small_copies(d->copy) : 0,
		.container = container_of, .ctx = d, .drops = drops,
		.max_kernel_series = (unsigned int)d->c.max_kernel_series,
		.ioctl = d->ioc != NULL, .max_ioctl_series = (unsigned int)d->c.max_ioctl_series,
		.probe_cost = d->c.probe_cost, .libs = d->probed,
		.probes = attach_set__count(d->links),
	};
	size_t n = 0;
	FILE *f;
	int r;

	gp_events__drain(d->events);
	if (d->mem)
		mem_probe__drops(d->mem, md);
	if (in.ml) {
		for (int i = 0; i < GP_DROP__COUNT; i++)
			drops[n++] = (struct prom_drop){ "memleak", mem_reasons[i], md[i] };
		drops[n++] = (struct prom_drop){ "memleak", "alloc_table_full", memleak__table_full(in.ml) };
	}
	if (d->launch) {
		launch_probe__snapshot(d->launch);
		launch_probe__drops(d->launch, ld);
		for (int i = 0; i < GP_LDROP__COUNT; i++)
			drops[n++] = (struct prom_drop){ "cudatrace", launch_reasons[i], ld[i] };
	}
	if (d->copy) {
		copy_probe__drops(d->copy, cd);
		for (int i = 0; i < GP_CDROP__COUNT; i++)
			drops[n++] = (struct prom_drop){ "bandwidth", copy_reasons[i], cd[i] };
		/* the memory probes' records decide which ranges are device memory */
		drops[n++] = (struct prom_drop){ "bandwidth", "allocation_records_lost",
						 md[GP_DROP_RINGBUF] + md[GP_DROP_PENDING] + md[GP_DROP_NORETURN] };
	}
	if (d->ioc) {
		struct ioc_proc *procs;

		in.nr_ioc = ioctl_probe__snapshot(d->ioc, &procs);
		in.ioc = procs;
		ioctl_probe__drops(d->ioc, id);
		for (int i = 0; i < GP_IDROP__COUNT; i++)
			if (ioctl_reasons[i])
				drops[n++] = (struct prom_drop){ "ioctl", ioctl_reasons[i], id[i] };
	}
	drops[n++] = (struct prom_drop){ "all", "malformed_record", gp_events__malformed(d->events) };
	in.nr_drops = n;
	*buf = NULL;
	*len = 0;
	f = open_memstream(buf, len);
	if (!f)
		return -errno;
	r = prom__render(f, &in);
	if (fclose(f) && !r)
		r = -EIO;
	return r;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, const char *type,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ret;

	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	static const char text[] = "text/plain; charset=utf-8";
	struct daemon *d = cls;
	char *buf;
	size_t len;

	(void)version;
	(void)upload;
	(void)con_cls;
	if (*upload_size)
		return MHD_NO; /* no request here has a body */
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, text, "method not allowed\n", 19,
			     MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/healthz"))
		return reply(conn, MHD_HTTP_OK, text, "ok\n", 3, MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/metrics")) {
		if (render(d, &buf, &len)) {
			free(buf);
			return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, text, "render failed\n", 14,
				     MHD_RESPMEM_PERSISTENT);
		}
		d->scrapes++;
		return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", buf, len,
			     MHD_RESPMEM_MUST_FREE);
	}
	if (!strcmp(url, "/"))
		return reply(conn, MHD_HTTP_OK, text, "gpuprobe: /metrics /healthz\n", 28,
			     MHD_RESPMEM_PERSISTENT);
	return reply(conn, MHD_HTTP_NOT_FOUND, text, "not found\n", 10, MHD_RESPMEM_PERSISTENT);
}

static int check_kernel(char *err, size_t len, bool uprobes)
{
	const char *root = getenv("GPUPROBE_SYSFS");
	char path[512];

	if (!root)
		root = "/sys";
	snprintf(path, sizeof(path), "%s/kernel/btf/vmlinux", root);
	if (access(path, R_OK)) {
		snprintf(err, len, "this kernel has no BTF (%s missing): gpuprobe needs CONFIG_DEBUG_INFO_BTF=y", path);
		return -ENOTSUP;
	}
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/uprobe/type", root);
	if (uprobes && access(path, R_OK)) {
		snprintf(err, len, "this kernel has no uprobes (%s missing): gpuprobe needs CONFIG_UPROBE_EVENTS=y", path);
		return -ENOTSUP;
	}
	return 0;
}

int daemon__main(int argc, char **argv)
{
	struct daemon d = {
		.c = { .listen = "127.0.0.1:9464", .retention = 300, .rescan = 5, .probe_cost = -1,
		       .max_kernel_series = 20, .max_ioctl_series = 20 },
		.o = { .latency = true, .pid = -1, .top = 10, .top_shapes = 3, .ringbuf_size = 4UL << 20,
		       .max_pending = 10240, .max_procs = 8192, .max_allocs = 1000000,
		       .max_launch_keys = 65536, .quiet = true },
	};
	struct sigaction sa = { .sa_handler = on_signal }, ign = { .sa_handler = SIG_IGN };
	char err[1024] = "";
	int r, lfd = -1, family = AF_INET;
	uint64_t next_tick = 0, next_rescan = 0;
	bool uprobes; /* a mode with probes in libcuda (--ioctl alone needs no libcuda) */

	r = parse_args(&d, argc, argv);
	if (r)
		return r < 0 ? 0 : r;
	libbpf_set_print(libbpf_print);

	/* everything that can be refused is refused before anything is attached */
	if (geteuid() != 0 && !has_cap(CAP_SYS_ADMIN) && !(has_cap(CAP_BPF) && has_cap(CAP_PERFMON))) {
		snprintf(err, sizeof(err), "permission denied: run as root (or with CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)");
		r = -EPERM;
		goto cleanup;
	}
	uprobes = d.o.memleak || d.o.cudatrace || d.o.bandwidth;
	r = check_kernel(err, sizeof(err), uprobes);
	if (r)
		goto cleanup;
	if (d.o.libcuda && target__check_libcuda(d.o.libcuda, err + 10, sizeof(err) - 10)) {
		memcpy(err, "--libcuda ", 10);
		r = -EINVAL;
		goto cleanup;
	}
	lfd = open_listener(d.c.listen, &family, err, sizeof(err));
	if (lfd < 0) {
		r = lfd;
		goto cleanup;
	}
	/* price of one probe hit on this node, unless --probe-cost said it */
	if (d.c.probe_cost < 0 && !uprobes) {
		d.c.probe_cost = 4.4e-6; /* no probe hits to price */
	} else if (d.c.probe_cost < 0) {
		d.c.probe_cost = calibrate__probe_cost(2000);
		if (d.c.probe_cost < 0) {
			dlog(L_WARN, "daemon: cannot calibrate the probe cost (%s): assuming 4.4e-6 s",
			     strerror((int)-d.c.probe_cost));
			d.c.probe_cost = 4.4e-6;
		} else {
			dlog(L_INFO, "daemon: one probe hit costs %.2f us here (calibrated)", d.c.probe_cost * 1e6);
		}
	}
	r = attach__ensure_tracefs();
	if (r) {
		snprintf(err, sizeof(err), "cannot mount tracefs at /sys/kernel/tracing: %s", strerror(-r));
		goto cleanup;
	}
	d.sym = symbolizer__new("/proc");
	d.links = attach_set__new();
	d.events = gp_events__new();
	d.libs = calloc(1, sizeof(*d.libs));
	d.cgroups = u64map__new();
	d.ioc_gone = u64map__new();
	if (!d.sym || !d.links || !d.events || !d.libs || !d.cgroups || !d.ioc_gone) {
		r = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
		goto cleanup;
	}
	/* --bandwidth-util needs the allocations too (which ranges are device memory), and
	 * its copy probes share the memory probes' ring buffer */
	if (d.o.memleak || d.o.bandwidth) {
		r = mem_probe__open(&d.mem, &d.o, d.sym, err, sizeof(err));
		if (!r && d.o.bandwidth) {
			struct gp_handlers h;

			r = copy_probe__open(&d.copy, &d.o, mem_probe__events_fd(d.mem), err, sizeof(err));
			if (!r) {
				copy_probe__handlers(d.copy, &h);
				mem_probe__set_listener(d.mem, &h);
			}
		}
		if (!r)
			r = mem_probe__add_events(d.mem, d.events);
		if (!r)
			r = mem_probe__attach(d.mem, d.links, d.libs, -1, err, sizeof(err)); /* exit tp */
		if (r)
			goto cleanup;
	}
	if (d.o.cudatrace) {
		r = launch_probe__open(&d.launch, &d.o, d.sym, err, sizeof(err));
		if (!r)
			r = launch_probe__add_events(d.launch, d.events);
		if (!r)
			r = launch_probe__attach(d.launch, d.links, d.libs, -1, err, sizeof(err));
		if (r)
			goto cleanup;
	}
	if (d.copy) {
		r = copy_probe__attach(d.copy, d.links, d.libs, -1, err, sizeof(err)); /* exit tp */
		if (r)
			goto cleanup;
	}
	if (d.o.ioctl) {
		const char *why, *backend;

		/* every process: the tracepoint backend filters by the fd's device major only */
		r = ioctl_probe__open(&d.ioc, &d.o, false, err, sizeof(err));
		if (!r)
			r = ioctl_probe__attach(d.ioc, d.links, -1, err, sizeof(err));
		if (r)
			goto cleanup;
		backend = ioctl_probe__backend(d.ioc, &why);
		dlog(L_INFO, "ioctl backend: %s (%s)", backend, why);
		if (!ioctl_probe__nr_majors(d.ioc))
			dlog(L_WARN, "no nvidia character devices in /proc/devices: no ioctls will be seen");
	}
	if (uprobes)
		initial_libs(&d);

	d.mhd = MHD_start_daemon(MHD_USE_EPOLL | (family == AF_INET6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL,
				 on_request, &d, MHD_OPTION_LISTEN_SOCKET, lfd,
				 MHD_OPTION_CONNECTION_LIMIT, 64U, MHD_OPTION_CONNECTION_TIMEOUT, 10U,
				 MHD_OPTION_END);
	if (!d.mhd) {
		r = -EIO;
		snprintf(err, sizeof(err), "cannot start the HTTP server on %s", d.c.listen);
		goto cleanup;
	}
	lfd = -1; /* the server owns it now */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	{
		const union MHD_DaemonInfo *pi = MHD_get_daemon_info(d.mhd, MHD_DAEMON_INFO_BIND_PORT);

		char modes[64];

		snprintf(modes, sizeof(modes), "%s%s%s%s", d.o.memleak ? ",memleak" : "",
			 d.launch ? ",cudatrace" : "", d.copy ? ",bandwidth" : "", d.ioc ? ",ioctl" : "");
		dlog(L_INFO, "listening on %s (port %u): /metrics /healthz; tracing every CUDA process (%s): %d probes on %d libcuda files",
		     d.c.listen, pi ? pi->port : 0, modes + 1, attach_set__count(d.links), d.probed);
	}

	while (!stop_signal) {
		const union MHD_DaemonInfo *ei = MHD_get_daemon_info(d.mhd, MHD_DAEMON_INFO_EPOLL_FD);
		struct pollfd fds[2] = {
			{ .fd = gp_events__epoll_fd(d.events), .events = POLLIN },
			{ .fd = ei ? ei->epoll_fd : -1, .events = POLLIN },
		};
		uint64_t now;

		if (poll(fds, 2, 100) < 0 && errno != EINTR) {
			r = -errno;
			snprintf(err, sizeof(err), "poll: %s", strerror(-r));
			goto cleanup;
		}
		r = gp_events__drain(d.events);
		if (r < 0 && r != -EINTR) {
			snprintf(err, sizeof(err), "reading the ring buffer: %s", strerror(-r));
			goto cleanup;
		}
		r = 0;
		MHD_run(d.mhd);
		if (hup_signal) {
			hup_signal = 0;
			dlog(L_INFO, "SIGHUP: nothing to reload (restart to change options); still running");
		}
		now = mono_ns();
		if (now >= next_tick) {
			housekeeping(&d);
			next_tick = now + 1000000000ULL;
		}
		if (uprobes && d.c.rescan > 0 && now >= next_rescan) {
			rescan(&d);
			next_rescan = now + (uint64_t)(d.c.rescan * 1e9);
		}
	}
	gp_events__drain(d.events);
	dlog(L_INFO, "%s: detaching; %llu scrapes, %llu rescans (last %.1f ms), %llu events handled",
	     strsignal(stop_signal), (unsigned long long)d.scrapes, (unsigned long long)d.rescans,
	     d.rescan_ns / 1e6, (unsigned long long)gp_events__handled(d.events));

cleanup:
	if (r && err[0])
		dlog(L_ERR, "%s", err);
	if (d.mhd)
		MHD_stop_daemon(d.mhd);
	if (lfd >= 0)
		close(lfd);
	attach_set__free(d.links);
	gp_events__free(d.events);
	mem_probe__free(d.mem);
	launch_probe__free(d.launch);
	copy_probe__free(d.copy);
	ioctl_probe__free(d.ioc);
	u64map__free(d.ioc_gone);
	symbolizer__free(d.sym);
	if (d.cgroups) {
		uint64_t k;
		void *v;

		for (size_t it = 0; u64map__next(d.cgroups, &it, &k, &v);) {
			free(((struct cg_entry *)v)->path);
			free(v);
		}
		u64map__free(d.cgroups);
	}
	free(d.libs);
	return r ? 1 : 0;
}
