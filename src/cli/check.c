/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe check: what gpuprobe needs from this host, one line per item. Nothing is
 * attached; the only side effect is a 4 KiB ring buffer map created and closed.
 * GPUPROBE_SYSFS points the file checks at a fake /sys (tests).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/auxv.h>
#include <sys/wait.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/apis.h"
#include "core/attach.h"
#include "cli/bpfcheck.h"
#include "core/budget.h"
#include "cli/check.h"
#include "cli/cmdline.h"
#include "core/mode.h"
#include "lib/option.h"
#include "core/kernel_features.h"
#include "lib/target.h"
#include "lib/util.h"
#define TRACEFS_MAGIC_ 0x74726163

enum verdict { OK, WARN, FAIL };

struct checker {
	const char *sysfs;
	int fails, warns;
};

static void line(struct checker *c, enum verdict v, const char *item, const char *fmt, ...)
{
	static const char *const words[] = { "ok", "warn", "fail" };
	va_list ap;

	if (v == FAIL)
		c->fails++;
	else if (v == WARN)
		c->warns++;
	printf("%s %s: ", words[v], item);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static bool sys_exists(struct checker *c, const char *rel, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", c->sysfs, rel);
	return access(path, R_OK) == 0;
}

static int quiet_print(enum libbpf_print_level l, const char *f, va_list a)
{
	(void)l;
	(void)f;
	(void)a;
	return 0;
}

/* --ioctl's syscall tracepoints need tracefs, and without uprobe_multi links the overhead
 * budget's uprobe events (check_budget says so): the exit programs are raw tracepoints and
 * the other uprobes are perf events or uprobe_multi links. */
static void check_tracefs(struct checker *c)
{
	struct statfs sf;
	bool mounted = statfs("/sys/kernel/tracing", &sf) == 0 && sf.f_type == TRACEFS_MAGIC_;
	char err[256];

	if (mounted && access("/sys/kernel/tracing/events", R_OK | X_OK) == 0)
		line(c, OK, "tracefs", "mounted at /sys/kernel/tracing and readable (--ioctl's syscall tracepoints)");
	else if (mounted)
		line(c, WARN, "tracefs", "mounted at /sys/kernel/tracing but not readable by this user: --ioctl's syscall tracepoints need root or CAP_DAC_READ_SEARCH; the other modes do not need tracefs");
	else if (attach__tracefs_mountable(err, sizeof(err)))
		line(c, OK, "tracefs", "not mounted; gpuprobe mounts it at /sys/kernel/tracing when --ioctl needs it");
	else
		line(c, WARN, "tracefs", "not mounted at /sys/kernel/tracing, and this user cannot mount it (CAP_SYS_ADMIN): --ioctl's syscall tracepoints need it (mount -t tracefs nodev /sys/kernel/tracing); the other modes do not");
}

/* --max-overhead (the daemon's default 1 %): how it takes the sampled probes off. A kernel
 * that gpuprobe refuses (kernel_ok false: the "kernel features" line says why) has no budget
 * to describe, whatever mechanism it would have. */
static void check_budget(struct checker *c, bool kernel_ok)
{
	char why[320];
	const char *reason;
	enum gp_budget_how h = gp_budget_mechanism(false, why, sizeof(why), &reason);

	if (!kernel_ok)
		line(c, WARN, "overhead budget", "none: gpuprobe does not start on this kernel (the \"kernel features\" line says why)");
	else if (h == GP_BUDGET_MULTI)
		line(c, OK, "overhead budget", "samples the launch and sync probes with uprobe_multi links made and closed per window (no tracefs uprobe events: %s; a process new to the budget is not armed alone)",
		     why);
	else if (h == GP_BUDGET_UEVENTS)
		line(c, OK, "overhead budget", "samples the launch and sync probes with tracefs uprobe events armed per window, and per process for a process new to the budget");
	else
		line(c, WARN, "overhead budget", "this kernel cannot sample the probes (%s): the daemon counts every call at full cost, and --max-overhead is refused",
		     why);
}

static void check_kernel(struct checker *c)
{
	char path[512], why[512];
	bool kernel_ok;
	int fd;

	if (sys_exists(c, "kernel/btf/vmlinux", path, sizeof(path)))
		line(c, OK, "kernel BTF", "%s", path);
	else
		line(c, FAIL, "kernel BTF", "%s missing: gpuprobe's CO-RE programs need CONFIG_DEBUG_INFO_BTF=y", path);
	if (sys_exists(c, "bus/event_source/devices/uprobe/type", path, sizeof(path)))
		line(c, OK, "uprobes", "%s", path);
	else
		line(c, FAIL, "uprobes", "%s missing: gpuprobe needs CONFIG_UPROBE_EVENTS=y", path);
	if (attach__has_uprobe_multi())
		line(c, OK, "uprobe_multi", "one link per library and direction (Linux >= 6.6)");
	else
		line(c, WARN, "uprobe_multi", "not available (or GPUPROBE_NO_UPROBE_MULTI set): one perf event per probe, slower attach and detach");
	kernel_ok = features__check_kernel(why, sizeof(why)) == 0;
	check_budget(c, kernel_ok);
	fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "gp_check", 0, 0, 4096, NULL);
	if (fd >= 0) {
		line(c, OK, "ring buffer", "BPF_MAP_TYPE_RINGBUF created");
		close(fd);
	} else {
		line(c, FAIL, "ring buffer", "cannot create a BPF ring buffer: %s (Linux >= 5.8 and CAP_BPF needed)",
		     strerror(errno));
	}
	/* what every mode checks at start (features__check_kernel): attach cookies first */
	if (!kernel_ok)
		line(c, FAIL, "kernel features", "%s", why);
	else
		line(c, OK, "kernel features", "none that gpuprobe needs is missing (attach cookies and perf-event links: 5.15)");
	if (sys_exists(c, "bus/event_source/devices/kprobe/type", path, sizeof(path)))
		line(c, OK, "kprobes", "available: the ioctl mode can use kprobes on the NVIDIA driver");
	else
		line(c, WARN, "kprobes", "%s missing: the ioctl mode would fall back to syscall tracepoints", path);
	check_tracefs(c);
}

static void check_privileges(struct checker *c)
{
	bool bpf = gp_has_cap(CAP_BPF), perfmon = gp_has_cap(CAP_PERFMON), ptrace = gp_has_cap(CAP_SYS_PTRACE);

	if (geteuid() == 0 && bpf && perfmon && ptrace)
		line(c, OK, "privileges", "root with CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE");
	else if (bpf && perfmon && ptrace)
		line(c, OK, "privileges", "CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE");
	else if (bpf && perfmon)
		line(c, WARN, "privileges", "no CAP_SYS_PTRACE: other users' processes (/proc/PID/maps, /proc/PID/root) stay invisible");
	else if (gp_has_cap(CAP_SYS_ADMIN))
		line(c, OK, "privileges", "CAP_SYS_ADMIN (covers BPF and perf events)");
	else
		line(c, FAIL, "privileges", "need root, or CAP_BPF + CAP_PERFMON (+ CAP_SYS_PTRACE)");
	/* what gpuprobe's attach then refuses with: the capabilities above do not cover it */
	if (bpf && perfmon && !gp_has_cap(CAP_SYS_ADMIN) && !attach__has_uprobe_multi())
		line(c, FAIL, "perf-event uprobes",
		     "no uprobe_multi links here (Linux < 6.6, or GPUPROBE_NO_UPROBE_MULTI set): gpuprobe attaches perf-event uprobes, which the kernel allows only with CAP_SYS_ADMIN: run as root");
}

static void check_libs(struct checker *c)
{
	struct lib_set *s = calloc(1, sizeof(*s));
	char why[1024], label[GP_PATH_MAX + 64];

	if (!s) {
		line(c, FAIL, "libcuda", "out of memory");
		return;
	}
	if (target__find_libcuda(s) == 0)
		line(c, WARN, "libcuda", "none found (LD_LIBRARY_PATH, ldconfig, the usual driver folders, running processes); gpuprobe daemon waits for one");
	for (int i = 0; i < s->n; i++) {
		if (target__check_lib(&s->libs[i], why, sizeof(why)))
			line(c, WARN, "libcuda", "%s", why);
		else
			line(c, OK, "libcuda", "%s (device %u:%u inode %lu)", libset__label(&s->libs[i], label, sizeof(label)),
			     major(s->libs[i].dev), minor(s->libs[i].dev), (unsigned long)s->libs[i].ino);
	}
	libset__clear(s);
	free(s);
}

/* "cuMemAlloc_v2" -> "cuMemAlloc"; *ptsz says whether a per-thread-stream suffix was
 * there. cuGetProcAddress takes the base name and picks the version itself. */
static void base_name(const char *name, char *buf, size_t len, bool *ptsz)
{
	size_t n;

	snprintf(buf, len, "%s", name);
	*ptsz = false;
	n = strlen(buf);
	if (n > 5 && (!strcmp(buf + n - 5, "_ptsz") || !strcmp(buf + n - 5, "_ptds"))) {
		buf[n - 5] = '\0';
		*ptsz = true;
		n -= 5;
	}
	while (n > 3 && buf[n - 3] == '_' && buf[n - 2] == 'v' && buf[n - 1] >= '2' && buf[n - 1] <= '9') {
		buf[n - 3] = '\0';
		n -= 3;
	}
}

static bool probed(const char *sym)
{
	for (int i = 0; i < gp_mem_apis_cnt; i++)
		if (!strcmp(gp_mem_apis[i].name, sym))
			return true;
	for (int i = 0; i < gp_launch_apis_cnt; i++)
		if (!strcmp(gp_launch_apis[i].name, sym))
			return true;
	return false;
}

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_version_fn)(int *);
typedef int (*cu_getproc_fn)(const char *, void **, int, unsigned long long, int *);

/* Whether one probed entry point (by its base name and stream flavour) was already
 * asked for: cuGetProcAddress is asked once per pair. */
static bool asked(const char *const *names, int i, const char *base, bool pt)
{
	for (int j = 0; j < i; j++) {
		char b2[128];
		bool pt2;

		base_name(names[j], b2, sizeof(b2), &pt2);
		if (pt2 == pt && !strcmp(b2, base))
			return true;
	}
	return false;
}

/* What the runtime gets for each probed entry point: 1 matched, 0 absent, -1 warned. */
static int check_entry(struct checker *c, cu_getproc_fn getproc, int ver, const char *base, bool pt)
{
	void *pfn = NULL;
	int status = -1, r;
	Dl_info info;

	r = getproc(base, &pfn, ver, pt ? 2 /* PER_THREAD_DEFAULT_STREAM */ : 0 /* DEFAULT */, &status);
	if (r || status != 0 || !pfn)
		return 0;
	if (!dladdr(pfn, &info) || !info.dli_sname) {
		line(c, WARN, "entry point", "%s%s -> %p: not an exported symbol, gpuprobe cannot probe it",
		     base, pt ? " (per-thread stream)" : "", pfn);
		return -1;
	}
	if (!probed(info.dli_sname)) {
		line(c, WARN, "entry point", "%s%s -> %s, which gpuprobe does not probe: its calls go uncounted",
		     base, pt ? " (per-thread stream)" : "", info.dli_sname);
		return -1;
	}
	return 1;
}

static void check_entries(struct checker *c, cu_getproc_fn getproc, int ver)
{
	const char *names[128];
	int n = 0, matched = 0, absent = 0;

	for (int i = 0; i < gp_mem_apis_cnt; i++)
		names[n++] = gp_mem_apis[i].name;
	for (int i = 0; i < gp_launch_apis_cnt; i++)
		names[n++] = gp_launch_apis[i].name;
	for (int i = 0; i < n; i++) {
		char base[128];
		bool pt;
		int r;

		base_name(names[i], base, sizeof(base), &pt);
		if (asked(names, i, base, pt))
			continue;
		r = check_entry(c, getproc, ver, base, pt);
		matched += r == 1;
		absent += r == 0;
	}
	line(c, OK, "entry points", "%d functions the runtime gets through cuGetProcAddress (CUDA %d.%d) are the exported symbols gpuprobe probes; %d not in this driver",
	     matched, ver / 1000, ver % 1000 / 10, absent);
}

/* What the CUDA runtime gets through cuGetProcAddress must be what gpuprobe probes. */
static void check_driver(struct checker *c)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	cu_init_fn init;
	cu_version_fn version;
	cu_getproc_fn getproc;
	int ver = 13000, r;
	Dl_info info;

	if (!h) {
		line(c, WARN, "driver", "cannot load libcuda.so.1 (%s): no NVIDIA driver here, entry points not checked", dlerror());
		return;
	}
	init = (cu_init_fn)dlsym(h, "cuInit");
	version = (cu_version_fn)dlsym(h, "cuDriverGetVersion");
	getproc = (cu_getproc_fn)dlsym(h, "cuGetProcAddress_v2");
	if (dladdr((void *)init, &info) && info.dli_fname)
		line(c, OK, "driver", "libcuda.so.1 loads from %s", info.dli_fname);
	if (!init || (r = init(0)) != 0)
		line(c, WARN, "driver", "cuInit(0) failed (%d): no usable GPU, entry points not checked", init ? r : -1);
	else if (!getproc)
		line(c, WARN, "entry points", "the driver has no cuGetProcAddress_v2 (CUDA < 12): not checked");
	else {
		if (version)
			version(&ver);
		check_entries(c, getproc, ver);
	}
	dlclose(h);
}

/*
 * Loading the driver into a statically linked gpuprobe can kill it (seen on the H200:
 * SIGFPE inside dlopen'ed libcuda under static glibc). The check runs in a child, so
 * whatever the driver does, the report goes on.
 */
static void check_driver_isolated(struct checker *c)
{
	bool is_static = getauxval(AT_BASE) == 0; /* no dynamic loader mapped */
	pid_t pid;
	int st = 0;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		check_driver(c);
		fflush(stdout);
		_exit(0);
	}
	if (pid < 0) {
		line(c, WARN, "driver", "cannot fork to load libcuda.so.1: %s", strerror(errno));
		return;
	}
	if (waitpid(pid, &st, 0) == pid && WIFSIGNALED(st))
		line(c, WARN, "driver", "loading libcuda.so.1 killed the checking process (signal %d)%s: entry points not checked",
		     WTERMSIG(st), is_static ? "; this gpuprobe is statically linked and cannot host the driver: run a dynamically linked build for this check" : "");
}

static bool bpf_only;
static struct bpfcheck_opts bpf_opts;

static const struct gp_option check_options[] = {
	{ "bpf", 0, NULL, "Instead: load and verify every BPF program in every configuration the options can "
	  "produce (each mode alone and all together, every target, every option that changes what "
	  "loads), attaching nothing; one line per configuration", GP_OPT_SWITCH, &bpf_only,
	  .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "libcuda", 0, "PATH", "--bpf: the libcuda --trace lists its functions from (default: those found here)",
	  GP_OPT_STRING, &bpf_opts.libcuda, .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "log-dir", 0, "DIR", "--bpf: where the logs of failed loads go (default: a new folder in $TMPDIR)",
	  GP_OPT_STRING, &bpf_opts.log_dir, .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "verbose", 'v', NULL, "--bpf: also the log of each failed load on stderr", GP_OPT_SWITCH,
	  &bpf_opts.verbose, .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{},
};

int check__main(int argc, char **argv)
{
	struct gp_cmdline cl = { .name = "gpuprobe check", .positionals = GP_POS_NONE, .extra = check_options,
				 .doc = "Checks what gpuprobe needs here; prints ok|warn|fail <item>: <detail> lines.\n"
					"With --bpf, loads every BPF program instead (ok|fail|skip bpf: <command line>: ...).\n",
				 .epilog = "Exit status 1 when any line is fail, 2 on bad usage, else 0.\n" };
	struct checker c = { .sysfs = gp_sysfs() };
	int r = gp_options__parse(&cl, argc, argv);

	if (r)
		return r == GP_PARSED_EXIT ? 0 : r;
	if (!bpf_only && (bpf_opts.libcuda || bpf_opts.log_dir || bpf_opts.verbose))
		return gp_options__error(&cl, "--libcuda, --log-dir and -v go with --bpf");
	if (bpf_only) {
		r = bpfcheck__run(&bpf_opts);
		fflush(stdout);
		return r ? 1 : 0;
	}
	libbpf_set_print(quiet_print);
	check_kernel(&c);
	check_privileges(&c);
	check_libs(&c);
	check_driver_isolated(&c);
	fflush(stdout);
	return c.fails ? 1 : 0;
}
