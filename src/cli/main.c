/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe: watches CUDA programs through uprobes on the CUDA driver, without
 * restarting them. This file parses options and orchestrates: target -> attach ->
 * BPF -> ring buffer -> aggregators -> reports.
 */
#define _GNU_SOURCE
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/libbpf.h>
#include "apis.h"
#include "attach.h"
#include "calibrate.h"
#include "check.h"
#include "cudatrace.h"
#include "memleak.h"
#include "u64map.h"
#include <json-c/json.h>
#include "daemon.h"
#include "elfsym.h"
#include "events.h"
#include "bandwidth_probe.h"
#include "cudatrace_probe.h"
#include "ioctl_probe.h"
#include "memleak_probe.h"
#include "options.h"
#include "trace.h"
#include "trace_probe.h"
#include "symbolize.h"
#include "target.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

#define EXIT_USAGE 2

static struct gp_opts env = {
	.stacks = true,
	.latency = true,
	.pid = -1,
	.top = 10,
	.top_shapes = 3,
	.ringbuf_size = 4UL << 20,
	.max_pending = 10240,
	.max_procs = 8192,
	.max_allocs = 1000000,
	.max_launch_keys = 65536,
};

const char *argp_program_version = "gpuprobe 0.1";

static const char doc[] =
	"Trace CUDA programs with eBPF, without restarting them.\n"
	"\n"
	"Traces COMMAND (started by gpuprobe and probed before it runs), a running\n"
	"process (-p), or, with neither, every CUDA process on the node.\n"
	"\v"
	"EXAMPLES:\n"
	"  gpuprobe --memleak -- python3 train.py   # leaks of a command\n"
	"  gpuprobe --memleak -p 4242 --interval 5  # a running process, every 5 s\n"
	"  gpuprobe --memleak                       # every CUDA process on the node\n"
	"  gpuprobe --memleak --json -- ./app       # JSON Lines reports on stdout\n"
	"  gpuprobe --memleak --libcuda /opt/drv/libcuda.so.1 -- ./app\n"
	"  gpuprobe --cudatrace -p 4242 --interval 2 # launches by kernel name, live\n"
	"  gpuprobe --bandwidth-util --interval 1 --csv pcie.csv -- ./train\n"
	"  gpuprobe --trace run.jsonl -- python3 infer.py   # every driver call\n"
	"  gpuprobe --trace run.json --trace-format chrome -p 4242 --duration 10\n"
	"  gpuprobe convert --chrome run.jsonl > run.json   # for ui.perfetto.dev\n"
	"  gpuprobe daemon --memleak --cudatrace    # Prometheus /metrics on 127.0.0.1:9464\n"
	"  gpuprobe check                           # preflight: can gpuprobe run here?\n"
	"  gpuprobe --ioctl -- ./app                  # nvidia ioctls by device and command\n"
	"\n"
	"Exit status: the command's own when gpuprobe started one, else 0;\n"
	"1 on an error; 2 on bad usage. Errors go to stderr, reports to stdout.\n";

enum {
	OPT_MEMLEAK = 1000,
	OPT_CUDATRACE,
	OPT_BANDWIDTH,
	OPT_TRACE,
	OPT_TRACE_FORMAT,
	OPT_TRACE_FILTER,
	OPT_MIN_BYTES,
	OPT_CSV,
	OPT_NO_LATENCY,
	OPT_TOP_SHAPES,
	OPT_MAX_LAUNCH_KEYS,
	OPT_LIBCUDA,
	OPT_JSON,
	OPT_NO_STACKS,
	OPT_TOP,
	OPT_RINGBUF,
	OPT_MAX_PENDING,
	OPT_MAX_PROCS,
	OPT_MAX_ALLOCS,
	OPT_IOCTL,
	OPT_IOCTL_BACKEND,
	OPT_IOCTL_DEV,
};

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Modes:", 1 },
	{ "memleak", OPT_MEMLEAK, NULL, 0, "Outstanding device/host/managed allocations per process, with stacks", 1 },
	{ "cudatrace", OPT_CUDATRACE, NULL, 0, "Kernel launches by name and shape, graph launches, launch and sync latency", 1 },
	{ "bandwidth-util", OPT_BANDWIDTH, NULL, 0, "Copies and bandwidth per process, GPU and direction; pageable copies", 1 },
	{ "trace", OPT_TRACE, "FILE", 0, "Every driver call (all exported cu* functions) as a timeline in FILE, and a summary", 1 },
	{ "trace-format", OPT_TRACE_FORMAT, "jsonl|chrome", 0, "--trace file format (default jsonl; chrome loads in Perfetto)", 1 },
	{ "trace-filter", OPT_TRACE_FILTER, "GLOB", 0, "--trace only functions matching GLOB (repeatable), e.g. 'cuMem*'", 1 },
	{ "ioctl", OPT_IOCTL, NULL, 0, "ioctls on nvidia device nodes per process, node and command, timed", 1 },
	{ "ioctl-backend", OPT_IOCTL_BACKEND, "kprobe|tracepoint", 0, "--ioctl: force a backend (default: kprobes where the kernel has them)", 1 },
	{ "ioctl-dev", OPT_IOCTL_DEV, "MAJOR[:NAME]", 0, "--ioctl: also trace this character-device major (tests; repeatable)", 1 },
	{ NULL, 0, NULL, 0, "Target:", 2 },
	{ "pid", 'p', "PID", 0, "Trace this running process only", 2 },
	{ "libcuda", OPT_LIBCUDA, "PATH", 0, "Probe this libcuda.so instead of the ones found", 2 },
	{ NULL, 0, NULL, 0, "Output:", 3 },
	{ "interval", 'i', "SECONDS", 0, "Print a report every SECONDS (default: only at the end)", 3 },
	{ "duration", 'd', "SECONDS", 0, "Stop tracing after SECONDS", 3 },
	{ "json", OPT_JSON, NULL, 0, "Reports as JSON Lines on stdout", 3 },
	{ "top", OPT_TOP, "N", 0, "Text: allocations listed per process (default 10, -1 all)", 3 },
	{ "no-stacks", OPT_NO_STACKS, NULL, 0, "Do not capture user stacks at allocations", 3 },
	{ "no-latency", OPT_NO_LATENCY, NULL, 0, "--cudatrace: no return probes on launches and syncs (counts only, cheaper)", 3 },
	{ "top-shapes", OPT_TOP_SHAPES, "N", 0, "Text: grid x block shapes listed per kernel (default 3)", 3 },
	{ "min-bytes", OPT_MIN_BYTES, "N", 0, "--bandwidth-util: copies under N bytes only counted as small copies, in BPF", 3 },
	{ "csv", OPT_CSV, "FILE", 0, "--bandwidth-util: append one row per GPU per report to FILE", 3 },
	{ "verbose", 'v', NULL, 0, "Log libbpf and attach details to stderr", 3 },
	{ NULL, 0, NULL, 0, "Limits (every overflow is counted and reported):", 4 },
	{ "ringbuf-size", OPT_RINGBUF, "BYTES", 0, "Ring buffer size, a power of two >= 4096 (default 4 MiB)", 4 },
	{ "max-pending", OPT_MAX_PENDING, "N", 0, "Calls in flight tracked at once (default 10240)", 4 },
	{ "max-procs", OPT_MAX_PROCS, "N", 0, "Processes tracked for exit in BPF (default 8192)", 4 },
	{ "max-allocs", OPT_MAX_ALLOCS, "N", 0, "Outstanding allocations kept (default 1000000)", 4 },
	{ "max-launch-keys", OPT_MAX_LAUNCH_KEYS, "N", 0, "Distinct (process, kernel, shape) launch counters (default 65536)", 4 },
	{},
};

static int parse_ulong(const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 0);
	return (errno || end == s || *end || *s == '-') ? -EINVAL : 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || *out < 0) ? -EINVAL : 0;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	unsigned long v;

	switch (key) {
	case OPT_MEMLEAK:
		env.memleak = true;
		break;
	case OPT_CUDATRACE:
		env.cudatrace = true;
		break;
	case OPT_BANDWIDTH:
		env.bandwidth = true;
		break;
	case OPT_MIN_BYTES:
		if (parse_ulong(arg, &v))
			argp_error(state, "invalid --min-bytes: %s", arg);
		env.min_bytes = v;
		break;
	case OPT_CSV:
		env.csv = arg;
		break;
	case OPT_TRACE:
		env.trace = arg;
		break;
	case OPT_TRACE_FORMAT:
		if (strcmp(arg, "jsonl") && strcmp(arg, "chrome"))
			argp_error(state, "--trace-format must be jsonl or chrome");
		env.trace_chrome = !strcmp(arg, "chrome");
		break;
	case OPT_TRACE_FILTER:
		if (env.nr_trace_filter >= 32)
			argp_error(state, "at most 32 --trace-filter patterns");
		env.trace_filter[env.nr_trace_filter++] = arg;
		break;
	case OPT_NO_LATENCY:
		env.latency = false;
		break;
	case OPT_IOCTL:
		env.ioctl = true;
		break;
	case OPT_IOCTL_BACKEND:
		if (strcmp(arg, "kprobe") && strcmp(arg, "tracepoint"))
			argp_error(state, "--ioctl-backend must be kprobe or tracepoint");
		env.ioctl_backend = arg;
		break;
	case OPT_IOCTL_DEV: {
		char *colon = strchr(arg, ':');

		if (colon)
			*colon = 0;
		if (parse_ulong(arg, &v) || v == 0 || v > 4095 || env.nr_ioctl_devs == 8)
			argp_error(state, "invalid --ioctl-dev (MAJOR[:NAME], at most 8): %s", arg);
		env.ioctl_dev_major[env.nr_ioctl_devs] = (unsigned int)v;
		env.ioctl_dev_name[env.nr_ioctl_devs++] = colon ? colon + 1 : NULL;
		break;
	}

	case 'p':
		if (parse_ulong(arg, &v) || v == 0 || v > INT_MAX)
			argp_error(state, "invalid PID: %s", arg);
		env.pid = (int)v;
		break;
	case OPT_LIBCUDA:
		env.libcuda = arg;
		break;
	case 'i':
		if (parse_seconds(arg, &env.interval))
			argp_error(state, "invalid interval: %s", arg);
		break;
	case 'd':
		if (parse_seconds(arg, &env.duration) || env.duration == 0)
			argp_error(state, "invalid duration: %s", arg);
		break;
	case OPT_JSON:
		env.json = true;
		break;
	case OPT_TOP:
	case OPT_TOP_SHAPES:
		if (!strcmp(arg, "-1")) {
			v = (unsigned long)-1;
		} else if (parse_ulong(arg, &v) || v > 100000) {
			argp_error(state, "invalid count: %s", arg);
		}
		if (key == OPT_TOP)
			env.top = v == (unsigned long)-1 ? -1 : (int)v;
		else
			env.top_shapes = v == (unsigned long)-1 ? 1000000 : (int)v;
		break;
	case OPT_NO_STACKS:
		env.stacks = false;
		break;
	case 'v':
		env.verbose = true;
		break;
	case OPT_RINGBUF:
		if (parse_ulong(arg, &v) || v < 4096 || (v & (v - 1)) || v > (1UL << 30))
			argp_error(state, "--ringbuf-size must be a power of two from 4096 to 1 GiB");
		env.ringbuf_size = v;
		env.ringbuf_set = true;
		break;
	case OPT_MAX_PENDING:
	case OPT_MAX_PROCS:
	case OPT_MAX_ALLOCS:
	case OPT_MAX_LAUNCH_KEYS:
		if (parse_ulong(arg, &v) || v == 0 || v > (1UL << 24))
			argp_error(state, "invalid limit: %s", arg);
		if (key == OPT_MAX_PENDING)
			env.max_pending = v;
		else if (key == OPT_MAX_PROCS)
			env.max_procs = v;
		else if (key == OPT_MAX_LAUNCH_KEYS)
			env.max_launch_keys = v;
		else
			env.max_allocs = v;
		break;
	case ARGP_KEY_ARG:
		/* the first non-option starts the command; the rest is its own */
		env.cmd = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!env.memleak && !env.cudatrace && !env.bandwidth && !env.trace && !env.ioctl)
			argp_error(state, "choose a mode: --memleak, --cudatrace, --bandwidth-util, --ioctl, --trace FILE (or several)");
		if (env.cmd && env.pid > 0)
			argp_error(state, "-p and a command exclude each other");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !env.verbose)
		return 0;
	if (!env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static bool has_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[cap >> 5].effective & (1U << (cap & 31));
}

/* One reason on failure: what is missing, and what would fix it. */
static int check_kernel(char *err, size_t len)
{
	const char *root = getenv("GPUPROBE_SYSFS"); /* tests point this at a fake /sys */
	char path[512];

	if (!root)
		root = "/sys";
	snprintf(path, sizeof(path), "%s/kernel/btf/vmlinux", root);
	if (access(path, R_OK)) {
		snprintf(err, len, "this kernel has no BTF (%s missing): gpuprobe needs CONFIG_DEBUG_INFO_BTF=y", path);
		return -ENOTSUP;
	}
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/uprobe/type", root);
	if (access(path, R_OK)) {
		snprintf(err, len, "this kernel has no uprobes (%s missing): gpuprobe needs CONFIG_UPROBE_EVENTS=y", path);
		return -ENOTSUP;
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int resolve_libs(struct lib_set *libs, char *err, size_t len)
{
	char real[PATH_MAX], why[512];
	struct lib_set found = {};
	int r;

	if (env.libcuda) {
		r = target__check_libcuda(env.libcuda, why, sizeof(why));
		if (r) {
			snprintf(err, len, "--libcuda %s", why);
			return r;
		}
		if (!realpath(env.libcuda, real)) {
			snprintf(err, len, "--libcuda %s: %s", env.libcuda, strerror(errno));
			return -errno;
		}
		libset__add(libs, real);
		return 0;
	}
	if (env.pid > 0) {
		r = target__find_pid_libcuda(env.pid, &found);
		if (r == -ESRCH) {
			snprintf(err, len, "no process with PID %d", env.pid);
			return r;
		}
		if (r < 0) {
			snprintf(err, len, "cannot read the mappings of PID %d: %s", env.pid, strerror(-r));
			return r;
		}
		if (r == 0) {
			snprintf(err, len, "PID %d does not map libcuda.so (not a CUDA process yet? use --libcuda PATH to probe a file anyway)",
				 env.pid);
			return -ENOENT;
		}
	} else if (target__find_libcuda(&found) == 0) {
		snprintf(err, len, "no libcuda.so.1 found (LD_LIBRARY_PATH, ldconfig, the usual driver folders, running processes): use --libcuda PATH");
		return -ENOENT;
	}
	for (int i = 0; i < found.n; i++) {
		if (target__check_libcuda(found.libs[i].path, why, sizeof(why))) {
			if (env.verbose)
				fprintf(stderr, "gpuprobe: skipping %s\n", why);
			continue;
		}
		libset__add(libs, found.libs[i].path);
	}
	if (libs->n == 0) {
		snprintf(err, len, "no usable libcuda found (%s)", why);
		return -ENOENT;
	}
	return 0;
}

static bool target_alive(int pid)
{
	return kill(pid, 0) == 0 || errno != ESRCH;
}

/*
 * gpuprobe's own price: probe hits counted per process (each uprobe hit the modes can
 * count: entry and return of allocations, frees, launches, syncs) times the cost of one
 * hit calibrated at start-up on this machine. An estimate, and said to be one.
 */
struct overhead {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	uint64_t hits;
};

static struct overhead *ov_get(struct u64map *m, uint32_t pid, const char *comm)
{
	struct overhead *o = u64map__get(m, pid);

	if (!o) {
		o = calloc(1, sizeof(*o));
		if (!o || u64map__put(m, pid, o)) {
			free(o);
			return NULL;
		}
		o->pid = pid;
	}
	if (comm && *comm && !o->comm[0])
		snprintf(o->comm, sizeof(o->comm), "%s", comm);
	return o;
}

static void overhead_collect(struct u64map *m, struct mem_probe *mem, struct launch_probe *launch)
{
	if (mem && env.memleak) {
		struct ml_proc **v;
		size_t n = memleak__procs(mem_probe__memleak(mem), &v);

		for (size_t i = 0; i < n; i++) {
			struct overhead *o = ov_get(m, v[i]->pid, v[i]->comm);

			if (o) /* entry and return of each successful call */
				o->hits += 2 * (v[i]->allocs_total + v[i]->frees_total + v[i]->maps_total +
						v[i]->unmaps_total);
		}
	}
	if (launch) {
		struct ct_proc **v;
		size_t n;
		uint64_t per = env.latency ? 2 : 1;

		launch_probe__snapshot(launch);
		n = cudatrace__procs(launch_probe__cudatrace(launch), &v);
		for (size_t i = 0; i < n; i++) {
			struct overhead *o = ov_get(m, v[i]->pid, v[i]->comm);

			if (o)
				o->hits += per * (v[i]->launches + v[i]->graph_launches +
						  v[i]->hist[GP_HIST_SYNC].count);
		}
	}
}

static void overhead_report(struct u64map *m, double cost)
{
	json_object *o, *arr;
	uint64_t k;
	void *v;

	if (env.json) {
		o = json_object_new_object();
		arr = json_object_new_array();
		json_object_object_add(o, "mode", json_object_new_string("overhead"));
		json_object_object_add(o, "probe_hit_cost_s", cost > 0 ? json_object_new_double(cost) : NULL);
		for (size_t it = 0; u64map__next(m, &it, &k, &v);) {
			struct overhead *x = v;
			json_object *p = json_object_new_object();

			json_object_object_add(p, "pid", json_object_new_int64(x->pid));
			json_object_object_add(p, "comm", json_object_new_string(x->comm));
			json_object_object_add(p, "probe_hits", json_object_new_uint64(x->hits));
			json_object_object_add(p, "probe_seconds_estimate",
					       cost > 0 ? json_object_new_double((double)x->hits * cost) : NULL);
			json_object_array_add(arr, p);
		}
		json_object_object_add(o, "processes", arr);
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else if (u64map__size(m)) {
		printf("gpuprobe overhead (estimate): one probe hit costs %.2f us on this machine (calibrated when the run ended)\n",
		       cost * 1e6);
		for (size_t it = 0; u64map__next(m, &it, &k, &v);) {
			struct overhead *x = v;

			printf("  PID %u (%s): %llu probe hits, ~%.6f s in probes\n", x->pid, x->comm,
			       (unsigned long long)x->hits, (double)x->hits * cost);
		}
	}
	fflush(stdout);
	for (size_t it = 0; u64map__next(m, &it, &k, &v);)
		free(v);
}

/* --ioctl --trace: ioctl records into the timeline, decoded */
static struct {
	struct ioctl_probe *ioc;
	struct trace_probe *tracer;
} ioctl_ctx;

static void on_trace_ioctl(void *ctx, const struct gp_ioctl_event *e)
{
	(void)ctx;
	trace_probe__ioctl(ioctl_ctx.tracer, e, ioctl_probe__name(ioctl_ctx.ioc, e->major, e->cmd));
}

/* gpuprobe convert --chrome IN.jsonl > OUT.json */
static int convert_main(int argc, char **argv)
{
	char err[512];

	if (argc != 3 || strcmp(argv[1], "--chrome")) {
		fprintf(stderr, "gpuprobe: usage: gpuprobe convert --chrome TRACE.jsonl > TRACE.json\n");
		return EXIT_USAGE;
	}
	if (trace__convert_chrome(argv[2], stdout, err, sizeof(err))) {
		fprintf(stderr, "gpuprobe: convert: %s\n", err);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { .options = opts, .parser = parse_arg, .doc = doc,
					   .args_doc = "[-- COMMAND [ARGS...]]" };
	struct spawned child = { .pid = -1, .go_fd = -1, .err_fd = -1 };
	struct attach_set *links = NULL;
	struct gp_events *events = NULL;
	struct symbolizer *sym = NULL;
	struct mem_probe *mem = NULL;
	struct launch_probe *launch = NULL;
	struct copy_probe *copy = NULL;
	struct trace_probe *tracer = NULL;
	struct ioctl_probe *ioc = NULL;
	struct lib_set libs = {};
	char err[1024] = "";
	uint64_t start, next_report = 0, end = 0;
	int status = 0, exit_code = 0, r = 0, trace_pid;
	bool child_done = false;
	const char *stall;
	struct sigaction sa = { .sa_handler = on_signal };
	double probe_cost = -1;
	struct u64map *ov = NULL;

	/* subcommands: gpuprobe daemon ... (src/daemon.c), gpuprobe check (src/check.c) */
	if (argc > 1 && !strcmp(argv[1], "daemon"))
		return daemon__main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "check"))
		return check__main(argc - 1, argv + 1);

	argp_err_exit_status = EXIT_USAGE;
	if (argc > 1 && !strcmp(argv[1], "convert"))
		return convert_main(argc - 1, argv + 1);
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return EXIT_USAGE;
	libbpf_set_print(libbpf_print_fn);

	/* everything that can be checked is checked before anything is loaded */
	if (geteuid() != 0 && !has_cap(CAP_SYS_ADMIN) && !(has_cap(CAP_BPF) && has_cap(CAP_PERFMON))) {
		snprintf(err, sizeof(err), "permission denied: run as root (or with CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)");
		r = -EPERM;
		goto cleanup;
	}
	r = check_kernel(err, sizeof(err));
	if (r)
		goto cleanup;
	if (env.memleak || env.cudatrace || env.bandwidth || env.trace) { /* --ioctl alone needs no libcuda */
		r = resolve_libs(&libs, err, sizeof(err));
		if (r)
			goto cleanup;
	}
	if (env.ioctl) {
		/* with --trace, ioctls also go to the timeline, one record each */
		r = ioctl_probe__open(&ioc, &env, env.trace != NULL, err, sizeof(err));
		if (r)
			goto cleanup;
	}
	r = attach__ensure_tracefs();
	if (r) {
		snprintf(err, sizeof(err), "cannot mount tracefs at /sys/kernel/tracing: %s", strerror(-r));
		goto cleanup;
	}

	sym = symbolizer__new("/proc");
	links = attach_set__new();
	events = gp_events__new();
	if (!sym || !links || !events) {
		r = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
		goto cleanup;
	}
	/* --bandwidth-util needs the allocations too: which ranges are device memory */
	if (env.memleak || env.bandwidth) {
		r = mem_probe__open(&mem, &env, sym, err, sizeof(err));
		if (r)
			goto cleanup;
	}
	if (env.bandwidth) {
		struct gp_handlers h;

		r = copy_probe__open(&copy, &env, mem_probe__events_fd(mem), err, sizeof(err));
		if (r)
			goto cleanup;
		copy_probe__handlers(copy, &h);
		mem_probe__set_listener(mem, &h);
	}
	if (mem) {
		r = mem_probe__add_events(mem, events);
		if (r) {
			snprintf(err, sizeof(err), "cannot open the ring buffer: %s", strerror(-r));
			goto cleanup;
		}
	}
	if (env.cudatrace) {
		r = launch_probe__open(&launch, &env, sym, err, sizeof(err));
		if (!r)
			r = launch_probe__add_events(launch, events);
		if (r)
			goto cleanup;
	}

	if (env.trace) {
		r = trace_probe__open(&tracer, &env, &libs, err, sizeof(err));
		if (!r)
			r = trace_probe__add_events(tracer, events);
		if (r)
			goto cleanup;
	}

	/* a command is forked first, held before exec, so its PID can filter the probes */
	if (env.cmd) {
		r = target__spawn(env.cmd, &child);
		if (r) {
			snprintf(err, sizeof(err), "cannot start %s: %s", env.cmd[0], strerror(-r));
			goto cleanup;
		}
		env.child_pid = child.pid;
	}
	trace_pid = env.cmd ? child.pid : env.pid > 0 ? env.pid : -1;
	if (mem) {
		r = mem_probe__attach(mem, links, &libs, trace_pid, err, sizeof(err));
		if (r)
			goto cleanup;
	}
	if (launch) {
		r = launch_probe__attach(launch, links, &libs, trace_pid, err, sizeof(err));
		if (r)
			goto cleanup;
	}
	if (copy) {
		r = copy_probe__attach(copy, links, &libs, trace_pid, err, sizeof(err));
		if (r)
			goto cleanup;
	}
	if (tracer) {
		r = trace_probe__attach(tracer, links, &libs, trace_pid, err, sizeof(err));
		if (r)
			goto cleanup;
	}
	if (ioc) {
		r = ioctl_probe__attach(ioc, links, trace_pid, err, sizeof(err));
		if (!r && tracer) {
			struct gp_handlers h = { .ctx = &ioctl_ctx, .on_ioctl = on_trace_ioctl };

			ioctl_ctx.ioc = ioc;
			ioctl_ctx.tracer = tracer;
			r = gp_events__add(events, ioctl_probe__events_fd(ioc), &h);
		}
		if (r)
			goto cleanup;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* one line on stderr, so people and scripts know the probes are in, and where */
	{
		char who[64], where[1024] = "";
		size_t off = 0;

		for (int i = 0; i < libs.n && off < sizeof(where); i++)
			off += (size_t)snprintf(where + off, sizeof(where) - off, "%s%s", i ? ", " : "",
						libs.libs[i].path);
		if (!libs.n)
			snprintf(where, sizeof(where), "the ioctl syscalls");
		if (env.cmd || env.pid > 0)
			snprintf(who, sizeof(who), "PID %d", env.cmd ? child.pid : env.pid);
		else
			snprintf(who, sizeof(who), "every CUDA process");
		fprintf(stderr, "gpuprobe: tracing %s: %d probes on %s%s\n", who,
			attach_set__count(links), where, env.cmd ? "" : "; Ctrl-C to end");
	}
	if (env.cmd) {
		r = target__release(&child);
		if (r) {
			snprintf(err, sizeof(err), "cannot run %s: %s", env.cmd[0], strerror(-r));
			waitpid(child.pid, NULL, 0);
			child.pid = -1;
			exit_code = 127;
			goto cleanup;
		}
	}
	stall = getenv("GPUPROBE_TEST_STALL_MS"); /* tests: let the ring buffer overflow */
	if (stall)
		usleep((useconds_t)atoi(stall) * 1000);

	start = now_ns();
	if (env.interval > 0)
		next_report = start + (uint64_t)(env.interval * 1e9);
	if (env.duration > 0)
		end = start + (uint64_t)(env.duration * 1e9);
	for (;;) {
		uint64_t t;

		r = gp_events__poll(events, 100);
		if (r < 0) {
			snprintf(err, sizeof(err), "reading the ring buffer: %s", strerror(-r));
			goto cleanup;
		}
		r = 0;
		if (env.cmd && !child_done && waitpid(child.pid, &status, WNOHANG) == child.pid) {
			child_done = true;
			break;
		}
		if (env.pid > 0 && !target_alive(env.pid))
			break;
		if (stop_signal) {
			/* a terminal's Ctrl-C reached the command too; a SIGTERM did not */
			if (env.cmd && stop_signal == SIGTERM)
				kill(child.pid, SIGTERM);
			break;
		}
		t = now_ns();
		if (end && t >= end)
			break;
		if (next_report && t >= next_report) {
			gp_events__drain(events);
			if (mem)
				mem_probe__report(mem, "interval");
			if (launch)
				launch_probe__report(launch, "interval");
			if (copy)
				copy_probe__report(copy, "interval");
			if (ioc)
				ioctl_probe__report(ioc, "interval");
			next_report += (uint64_t)(env.interval * 1e9);
		}
	}
	/* the exit tracepoint ran before the parent could reap: its event is in the buffer */
	gp_events__drain(events);
	ov = u64map__new();
	if (ov)
		overhead_collect(ov, mem, launch);
	if (mem)
		mem_probe__report(mem, "final");
	if (launch)
		launch_probe__report(launch, "final");
	if (copy)
		copy_probe__report(copy, "final");
	if (ioc)
		ioctl_probe__report(ioc, "final");
	if (ov) {
		/* priced after the run, so the traced command does not wait for it to start */
		if (env.memleak || env.cudatrace) {
			probe_cost = calibrate__probe_cost(2000);
			if (probe_cost < 0 && env.verbose)
				fprintf(stderr, "gpuprobe: cannot calibrate the probe cost: %s\n",
					strerror((int)-probe_cost));
		}
		overhead_report(ov, probe_cost);
		u64map__free(ov);
		ov = NULL;
	}
	attach_set__free(links);
	links = NULL;
	/* probes are gone: whatever is still in the buffers is the last of the timeline */
	gp_events__drain(events);
	if (tracer && ioc)
		trace_probe__add_ioctl_drops(tracer, ioctl_probe__ringbuf_drops(ioc));
	if (tracer)
		r = trace_probe__finish(tracer, err, sizeof(err));

	if (env.cmd) {
		if (!child_done && waitpid(child.pid, &status, 0) == child.pid)
			child_done = true;
		child.pid = -1;
		if (child_done)
			exit_code = WIFEXITED(status) ? WEXITSTATUS(status) :
				    WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
	}

cleanup:
	u64map__free(ov);
	if (r && err[0])
		fprintf(stderr, "gpuprobe: %s\n", err);
	attach_set__free(links);
	target__abort(&child);
	gp_events__free(events);
	mem_probe__free(mem);
	launch_probe__free(launch);
	copy_probe__free(copy);
	trace_probe__free(tracer);
	ioctl_probe__free(ioc);
	symbolizer__free(sym);
	if (r)
		return exit_code ? exit_code : 1;
	return exit_code;
}
