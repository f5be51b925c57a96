/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe check --bpf (bpfcheck.h). Each configuration is a command line, parsed by the
 * front end's own parser in a child process (fresh settings each time, and whatever a load
 * does stays in that child), whose run is opened as the front end opens it: every BPF
 * object configured (const volatile settings, map sizes, programs left out) and loaded,
 * nothing attached. The configurations come from the mode table and the option tables:
 * each mode alone, all together on each kind of target, and each option that can change
 * what loads (every choice of a choice, every switch, the values of the table below). An
 * option or a const volatile setting the tables here do not know is a failure: a new knob
 * cannot be left out unseen.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "bpf_objects.h" /* generated from bpf/ *.bpf.c: every skeleton */
#include "core/attach.h"
#include "cli/bpfcheck.h"
#include "cli/cmdline.h"
#include "core/kernel_features.h"
#include "core/mode.h"
#include "lib/option.h"
#include "core/options.h"
#include "out/outfile.h"
#include "out/trace.h"
#include "core/run.h"
#include "lib/target.h"
#include "cli/targets.h"
#include "lib/util.h"

#define MAX_CONFIGS 96
#define CHILD_SECONDS 300 /* one configuration's loads; an emulated CPU is slow */

/*
 * How each option can change what loads. An option with rows here gets one configuration
 * per row with args (on its mode alone, or for a global option on every mode of the front
 * end but drop's), none for a row without (why says why it cannot). An option without rows
 * gets every choice (GP_OPT_CHOICE) or its switch (GP_OPT_SWITCH, GP_OPT_CLEAR); any other
 * without rows is a failure of the check, as is a row naming no option.
 */
struct variant {
	const char *option; /* long name, no "--" */
	const char *args;   /* what is given: NULL, the option cannot change what loads */
	unsigned int fe;    /* the front ends (enum gp_frontend); 0: the option's first */
	const char *drop;   /* modes the front end refuses beside args (space-separated names) */
	bool target;        /* args pick the processes: no command */
	const char *why;
};

#define ROW(opt, a, ...) { .option = opt, .args = a, __VA_ARGS__ }
#define NONE(opt, reason) { .option = opt, .why = reason }

static const struct variant variants[] = {
	/* the processes: a command (the default here), PIDs, a tree, a name, a cgroup */
	ROW("pid", "-p @PID", .target = true),
	ROW("pid", "-p @PIDS", .target = true),
	ROW("tree", "-p @PID --tree", .target = true),
	ROW("comm", "--comm gpuprobe", .fe = GP_FE_ALL, .target = true),
	ROW("cgroup", "--cgroup /", .fe = GP_FE_ALL, .target = true),
	ROW("max-overhead", "--max-overhead 1", .fe = GP_FE_CLI, .drop = "trace"),
	ROW("max-overhead", "--max-overhead 100", .fe = GP_FE_DAEMON),
	ROW("max-pending", "--max-pending 1"), /* the in-flight shares: 1 each */
	ROW("stack-bytes", "--stacks dwarf --stack-bytes 0"),
	ROW("stack-bytes", "--stacks dwarf --stack-bytes 1"),
	ROW("no-python-frames", "--stacks dwarf --no-python-frames"),
	ROW("min-bytes", "--min-bytes 1"),
	ROW("min-bytes", "--min-bytes 4611686018427387904"),
	ROW("ioctl-dev", "--ioctl-dev 240"),
	ROW("ioctl-dev", "--ioctl-dev 240 --ioctl-dev 241 --ioctl-dev 242 --ioctl-dev 243 --ioctl-dev 244 "
			 "--ioctl-dev 245 --ioctl-dev 246 --ioctl-dev 247"), /* GP_IOCTL_MAX_MAJORS */
	NONE("libcuda", "which files are probed, after the load"),
	NONE("libnccl", "which files are probed, after the load"),
	NONE("interval", "reports"),
	NONE("duration", "how long the run lasts"),
	NONE("json", "reports"),
	NONE("nvml", "NVML, read in user space"),
	NONE("no-nvml", "NVML, read in user space"),
	NONE("nvml-interval", "NVML, read in user space"),
	NONE("verbose", "logging"),
	NONE("listen", "the endpoint"),
	NONE("config", "an options file: its options are these"),
	NONE("web-config", "the endpoint"),
	NONE("retention", "metrics"),
	NONE("per-process-series", "metrics"),
	NONE("max-process-series", "metrics"),
	NONE("max-label-sets", "metrics"),
	NONE("max-label-sets-per-cgroup", "metrics"),
	NONE("kubelet-log-dir", "metric labels"),
	NONE("rescan-interval", "when files are looked for"),
	NONE("probe-cost", "the budget's price of a hit (set here: the check calibrates nothing)"),
	NONE("ringbuf-size", "a ring buffer's size, which the verifier does not see"),
	NONE("max-procs", "hash maps' sizes, which the verifier does not see"),
	NONE("max-launch-keys", "a hash map's size, which the verifier does not see"),
	NONE("top", "reports"),
	NONE("show-allocs", "reports"),
	NONE("older-than", "reports"),
	NONE("folded", "an output file"),
	NONE("max-allocs", "a table in user space"),
	NONE("top-shapes", "reports"),
	NONE("max-kernel-series", "metrics"),
	NONE("state-dir", "files in user space"),
	NONE("no-self-learn", "a child process in user space"),
	NONE("csv", "an output file"),
	NONE("max-ioctl-series", "metrics"),
	NONE("nccl-max-comm-series", "metrics"),
	NONE("gpu-time-socket", "no BPF: a socket the processes send to"),
	NONE("cupti", "no BPF: the library a started command loads"),
	NONE("gpu-time-libs", "no BPF: where the libraries are"),
	NONE("gpu-time-max-rows", "no BPF: user-space rows"),
	NONE("trace-format", "the trace file's format"),
	NONE("trace-counters", "samples taken in user space"),
	NONE("trace-filter", "which functions are probed, after the load"),
};

/*
 * Every const volatile setting (.rodata) of every object, and what sets it: options or
 * mode flags, or COMMAND (a command gpuprobe starts). A setting not here fails the check.
 */
static const struct knob {
	const char *name, *by;
} knobs[] = {
	{ "gp_filter", "COMMAND pid tree comm cgroup" },
	{ "follow_forks", "COMMAND tree comm cgroup" },
	{ "hold_libcuda", "COMMAND" },
	{ "comm_filter", "comm" },
	{ "by_comm", "comm" },
	{ "cgroup_filter", "cgroup" },
	{ "cgroup_level", "cgroup" },
	{ "target_tgid", "pid" },
	{ "gp_count_hits", "max-overhead" },
	{ "gp_share_proc", "max-pending" },
	{ "gp_share_user", "max-pending" },
	{ "gp_share_free", "max-pending" },
	{ "own_pidns", "cudatrace" }, /* gpuprobe's own pid namespace, set whenever the mode loads */
	{ "have_find_vma", "cudatrace" }, /* the kernel's bpf_find_vma (5.17), whenever the mode loads */
	{ "stack_mode", "stacks no-stacks" },
	{ "py_frames", "no-python-frames" },
	{ "gp_stack_bytes", "stack-bytes" },
	{ "measure_latency", "no-latency" },
	{ "min_bytes", "min-bytes" },
	{ "majors", "ioctl-dev" },
	{ "nr_majors", "ioctl-dev" },
	{ "emit_events", "trace" },
};

struct obj_desc {
	const char *name;
	const void *(*elf)(size_t *sz);
};

#define GP_BPF_OBJ(n) { #n, n##_bpf__elf_bytes },
static const struct obj_desc objs[] = { GP_BPF_OBJECTS(GP_BPF_OBJ) };

struct prog_seen {
	const char *obj;
	char name[BPF_OBJ_NAME_LEN];
	bool loaded;
};

struct config {
	unsigned int fe; /* GP_FE_CLI or GP_FE_DAEMON */
	bool no_multi;   /* GPUPROBE_NO_UPROBE_MULTI=1: perf-event uprobes where links exist */
	char args[768];  /* @FILE @PID @PIDS @CMD stand for what the child fills in */
};

struct checker {
	const struct bpfcheck_opts *o;
	FILE *out;
	struct config cfg[MAX_CONFIGS];
	int n;
	bool full; /* more configurations than MAX_CONFIGS */
	int table_errors;
	char work[PATH_MAX]; /* a folder of this run's: trace files, logs unless log_dir */
	char logs[PATH_MAX];
	struct lib_set *libs;
	struct prog_seen progs[256];
	int nr_progs;
	int ok, failed, skipped;
	bool multi;
};

/* ---- the tables' own checks ------------------------------------------------------------- */

static void table_error(struct checker *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void table_error(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	c->table_errors++;
	fprintf(c->out, "fail bpf tables: ");
	va_start(ap, fmt);
	vfprintf(c->out, fmt, ap);
	va_end(ap);
	fprintf(c->out, " (the tables of src/cli/bpfcheck.c)\n");
}

static const struct gp_option *find_option(const char *name, const struct gp_mode **owner)
{
	for (const struct gp_option *o = gp_options__globals(); o->name; o++)
		if (!strcmp(o->name, name)) {
			*owner = NULL;
			return o;
		}
	for (int i = 0; gp_modes[i]; i++)
		for (const struct gp_option *o = gp_modes[i]->options; o && o->name; o++)
			if (!strcmp(o->name, name)) {
				*owner = gp_modes[i];
				return o;
			}
	return NULL;
}

static bool is_mode_flag(const char *name)
{
	for (int i = 0; gp_modes[i]; i++)
		if (!strcmp(gp_modes[i]->flag, name))
			return true;
	return false;
}

/* Whether some configuration gives the option (a row with args, or one derived). */
static bool varied(const struct gp_option *o)
{
	int rows = 0;

	for (size_t i = 0; i < GP_ARRAY_SIZE(variants); i++) {
		if (strcmp(variants[i].option, o->name))
			continue;
		if (variants[i].args)
			return true;
		rows++;
	}
	return !rows && (o->type == GP_OPT_CHOICE || o->type == GP_OPT_SWITCH || o->type == GP_OPT_CLEAR);
}

static void check_rows(struct checker *c)
{
	const struct gp_mode *owner;

	for (size_t i = 0; i < GP_ARRAY_SIZE(variants); i++)
		if (!find_option(variants[i].option, &owner))
			table_error(c, "a row names --%s, which no mode or front end has", variants[i].option);
	for (size_t i = 0; i < GP_ARRAY_SIZE(knobs); i++) {
		char by[128], *save = NULL;

		snprintf(by, sizeof(by), "%s", knobs[i].by);
		for (char *w = strtok_r(by, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
			const struct gp_option *o = find_option(w, &owner);

			if (strcmp(w, "COMMAND") && !is_mode_flag(w) && !(o && varied(o)))
				table_error(c, "setting %s is set by --%s, which no configuration gives", knobs[i].name, w);
		}
	}
}

static bool knob_known(const char *name)
{
	for (size_t i = 0; i < GP_ARRAY_SIZE(knobs); i++)
		if (!strcmp(knobs[i].name, name))
			return true;
	return false;
}

/* The const volatile settings of one object (global variables of its .rodata). */
static void check_knobs(struct checker *c, const struct obj_desc *d, struct bpf_object *obj)
{
	struct btf *btf = bpf_object__btf(obj);
	int id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
	const struct btf_type *sec = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;
	const struct btf_var_secinfo *vs = sec ? btf_var_secinfos(sec) : NULL;

	for (int i = 0; sec && i < btf_vlen(sec); i++) {
		const struct btf_type *v = btf__type_by_id(btf, vs[i].type);
		const char *name = v ? btf__name_by_offset(btf, v->name_off) : NULL;

		if (!v || !btf_is_var(v) || btf_var(v)->linkage != BTF_VAR_GLOBAL_ALLOCATED || !name)
			continue; /* a function's static constant: no setting */
		if (!knob_known(name))
			table_error(c, "%s.bpf.c's const volatile %s is unknown to the load check: add it, and the "
				    "options that set it", d->name, name);
	}
}

/* Each object's programs (for the coverage line) and settings. */
static int read_objects(struct checker *c)
{
	for (size_t i = 0; i < GP_ARRAY_SIZE(objs); i++) {
		LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = objs[i].name);
		struct bpf_program *p;
		struct bpf_object *obj;
		size_t sz = 0;
		const void *elf = objs[i].elf(&sz);

		obj = bpf_object__open_mem(elf, sz, &oo);
		if (!obj) {
			table_error(c, "cannot open %s.bpf.o: %s", objs[i].name, strerror(errno));
			continue;
		}
		bpf_object__for_each_program(p, obj) {
			if (c->nr_progs == (int)GP_ARRAY_SIZE(c->progs))
				break;
			c->progs[c->nr_progs].obj = objs[i].name;
			snprintf(c->progs[c->nr_progs++].name, BPF_OBJ_NAME_LEN, "%s", bpf_program__name(p));
		}
		check_knobs(c, &objs[i], obj);
		bpf_object__close(obj);
	}
	return 0;
}

/* ---- the configurations ------------------------------------------------------------------ */

static void add(struct checker *c, unsigned int fe, bool no_multi, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add(struct checker *c, unsigned int fe, bool no_multi, const char *fmt, ...)
{
	struct config *k;
	va_list ap;

	if (c->n == MAX_CONFIGS) {
		c->full = true;
		return;
	}
	k = &c->cfg[c->n++];
	k->fe = fe;
	k->no_multi = no_multi;
	va_start(ap, fmt);
	vsnprintf(k->args, sizeof(k->args), fmt, ap);
	va_end(ap);
}

static const char *mode_flag(const struct gp_mode *m, char *buf, size_t len)
{
	snprintf(buf, len, "--%s%s", m->flag, m->arg ? " @FILE" : "");
	return buf;
}

static bool listed(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *s = list; s && (s = strstr(s, word)); s += n)
		if ((s == list || s[-1] == ' ') && (!s[n] || s[n] == ' '))
			return true;
	return false;
}

/* Every mode of the front end, but those in drop. */
static const char *all_modes(unsigned int fe, const char *drop, char *buf, size_t len)
{
	char f[128];
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; gp_modes[i]; i++)
		if ((gp_modes[i]->frontends & fe) && !listed(drop, gp_modes[i]->name))
			at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%s", at ? " " : "",
					       mode_flag(gp_modes[i], f, sizeof(f)));
	return buf;
}

static unsigned int first_fe(unsigned int fes)
{
	return fes & GP_FE_CLI ? GP_FE_CLI : fes & GP_FE_DAEMON ? GP_FE_DAEMON : 0;
}

/* One configuration of args on owner's mode alone, or on every mode of fe (global). */
static void add_variant(struct checker *c, unsigned int fe, const struct gp_mode *owner, const char *args,
			const char *drop, bool target)
{
	char base[512];

	if (owner && !(owner->frontends & fe))
		return;
	if (owner)
		mode_flag(owner, base, sizeof(base));
	else
		all_modes(fe, drop, base, sizeof(base));
	add(c, fe, false, "%s %s%s", base, args, fe == GP_FE_CLI && !target ? " -- @CMD" : "");
}

static void derive(struct checker *c, const struct gp_option *o, const struct gp_mode *owner)
{
	unsigned int fe = first_fe(o->frontends);
	char arg[256];

	if (o->type == GP_OPT_SWITCH || o->type == GP_OPT_CLEAR) {
		snprintf(arg, sizeof(arg), "--%s", o->name);
		add_variant(c, fe, owner, arg, NULL, false);
		return;
	}
	if (o->type != GP_OPT_CHOICE) {
		table_error(c, "--%s%s%s may change what loads: give it rows", o->name, owner ? " of --" : "",
			    owner ? owner->flag : "");
		return;
	}
	for (const char *s = o->choices; s && *s;) {
		const char *bar = strchr(s, '|');
		int n = bar ? (int)(bar - s) : (int)strlen(s);

		snprintf(arg, sizeof(arg), "--%s %.*s", o->name, n, s);
		add_variant(c, fe, owner, arg, NULL, false);
		s = bar ? bar + 1 : NULL;
	}
}

static void option_configs(struct checker *c, const struct gp_option *o, const struct gp_mode *owner)
{
	int rows = 0;

	for (size_t i = 0; i < GP_ARRAY_SIZE(variants); i++) {
		const struct variant *v = &variants[i];
		unsigned int fes = v->fe ? v->fe & o->frontends : first_fe(o->frontends);

		if (strcmp(v->option, o->name))
			continue;
		rows++;
		for (unsigned int fe = GP_FE_CLI; v->args && fe <= GP_FE_DAEMON; fe <<= 1)
			if (fes & fe)
				add_variant(c, fe, owner, v->args, v->drop, v->target);
	}
	if (!rows)
		derive(c, o, owner);
}

static void build(struct checker *c)
{
	char all[512], f[128];

	for (int i = 0; gp_modes[i]; i++) {
		if (gp_modes[i]->frontends & GP_FE_CLI)
			add(c, GP_FE_CLI, false, "%s -- @CMD", mode_flag(gp_modes[i], f, sizeof(f)));
		else if (gp_modes[i]->frontends & GP_FE_DAEMON)
			add(c, GP_FE_DAEMON, false, "%s", mode_flag(gp_modes[i], f, sizeof(f)));
	}
	all_modes(GP_FE_CLI, NULL, all, sizeof(all));
	add(c, GP_FE_CLI, false, "%s -- @CMD", all);
	add(c, GP_FE_CLI, false, "%s", all); /* the whole node */
	if (c->multi) /* the fallback of kernels without uprobe_multi links */
		add(c, GP_FE_CLI, true, "%s -- @CMD", all);
	add(c, GP_FE_DAEMON, false, "%s", all_modes(GP_FE_DAEMON, NULL, all, sizeof(all)));
	for (const struct gp_option *o = gp_options__globals(); o->name; o++)
		option_configs(c, o, NULL);
	for (int i = 0; gp_modes[i]; i++)
		for (const struct gp_option *o = gp_modes[i]->options; o && o->name; o++)
			option_configs(c, o, gp_modes[i]);
	if (c->full)
		table_error(c, "more than %d configurations: raise MAX_CONFIGS", MAX_CONFIGS);
}

/* The command line as shown: gpuprobe [daemon] ARGS, placeholders in capitals. */
static const char *display(const struct config *k, char *buf, size_t len)
{
	static const char *const from[] = { "@FILE", "@PIDS", "@PID", "@CMD" };
	static const char *const to[] = { "FILE", "PID,PID", "PID", "COMMAND" };
	size_t at = (size_t)snprintf(buf, len, "%sgpuprobe%s ", k->no_multi ? "GPUPROBE_NO_UPROBE_MULTI=1 " : "",
				     k->fe == GP_FE_DAEMON ? " daemon" : "");

	for (const char *s = k->args; *s && at + 1 < len;) {
		size_t i = 0;

		while (i < GP_ARRAY_SIZE(from) && strncmp(s, from[i], strlen(from[i])))
			i++;
		if (i < GP_ARRAY_SIZE(from)) {
			at += (size_t)snprintf(buf + at, len - at, "%s", to[i]);
			s += strlen(from[i]);
		} else {
			buf[at++] = *s++;
			buf[at] = '\0';
		}
	}
	return buf;
}

/* ---- one configuration, in a child -------------------------------------------------------- */

static int to_stderr(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

/* args -> argv (argv[0] the front end's name), the placeholders filled in. */
static int split(const struct checker *c, int idx, char *args, char **argv, int cap, char *file, size_t flen,
		 char *pids, size_t plen)
{
	char *save = NULL;
	int n = 0;

	snprintf(file, flen, "%.4000s/%02d.trace", c->work, idx % 100);
	argv[n++] = c->cfg[idx].fe == GP_FE_DAEMON ? "gpuprobe daemon" : "gpuprobe";
	for (char *w = strtok_r(args, " ", &save); w && n < cap - 1; w = strtok_r(NULL, " ", &save)) {
		if (!strcmp(w, "@FILE"))
			w = file;
		else if (!strcmp(w, "@PID"))
			w = pids + strcspn(pids, ",") + 1; /* the second of the two */
		else if (!strcmp(w, "@PIDS"))
			w = pids;
		else if (!strcmp(w, "@CMD"))
			w = "true";
		argv[n++] = w;
	}
	(void)plen;
	argv[n] = NULL;
	return n;
}

/* The BPF programs this process holds, by name. */
static void report_programs(int wfd)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[300], link[64];
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, "anon_inode:bpf-prog") && !bpf_obj_get_info_by_fd(atoi(e->d_name), &info, &len))
			dprintf(wfd, "p %s\n", info.name);
	}
	if (d)
		closedir(d);
}

/* Parses the configuration as its front end does, opens its run (every object loaded) and
 * reports: "u" (the front end refused the command line), or "r ERRNO", "e REASON", the
 * programs ("p NAME"). Its stderr is the log. */
static void child(struct checker *c, int idx, int wfd, int logfd)
{
	const struct config *k = &c->cfg[idx];
	struct gp_cmdline cl = { .name = k->fe == GP_FE_DAEMON ? "gpuprobe daemon" : "gpuprobe", .frontend = k->fe,
				 .modes = true, .positionals = k->fe == GP_FE_CLI ? GP_POS_COMMAND : GP_POS_NONE };
	char args[sizeof(k->args)], file[PATH_MAX + 16], pids[64], err[1024] = "", *argv[64];
	struct gp_run *run = NULL;
	int argc, r;

	alarm(CHILD_SECONDS);
	dup2(logfd, STDERR_FILENO);
	dup2(logfd, STDOUT_FILENO); /* --help text, should a table ever ask for it */
	libbpf_set_print(to_stderr);
	gp_log_setup(false, true);
	if (k->no_multi)
		setenv("GPUPROBE_NO_UPROBE_MULTI", "1", 1);
	snprintf(pids, sizeof(pids), "%d,%d", (int)getppid(), (int)getpid());
	snprintf(args, sizeof(args), "%s", k->args);
	argc = split(c, idx, args, argv, (int)GP_ARRAY_SIZE(argv), file, sizeof(file), pids, sizeof(pids));
	r = gp_options__parse(&cl, argc, argv);
	if (!r && k->fe == GP_FE_CLI)
		r = cli_targets__usage(&cl);
	if (r && gp_options__unbuilt()) { /* a choice this build lacks: skipped, saying why */
		dprintf(wfd, "e %s\nr %d\n", gp_options__unbuilt(), -EOPNOTSUPP);
		_exit(0);
	}
	if (r) {
		dprintf(wfd, "u\n");
		_exit(0);
	}
	if (gp_opts.probe_cost <= 0)
		gp_opts.probe_cost = 1e-6; /* calibrating would attach a probe to this process */
	run = gp_run__new(&gp_opts, err, sizeof(err));
	if (run) {
		gp_run__set_libs(run, GP_LIB_CUDA, c->libs);
		gp_run__set_trace_writer(run, trace_writer__sink);
		if (k->fe == GP_FE_CLI)
			cli_targets__choose(run, 0);
		else
			daemon_targets__choose(run);
		r = gp_run__open(run, err, sizeof(err));
	} else {
		r = -ENOMEM;
	}
	report_programs(wfd);
	dprintf(wfd, "e %s\nr %d\n", err, r);
	_exit(0); /* the kernel frees what was loaded */
}

/* ---- reading a failed load's log ------------------------------------------------------------ */

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* A verifier line that is not its verdict: an instruction, a state, a source line. */
static bool noise(const char *l)
{
	const char *d = l;

	while (*d >= '0' && *d <= '9')
		d++;
	return !*l || (d > l && *d == ':') || starts(l, "; ") || starts(l, "from ") || starts(l, "processed ") ||
	       starts(l, "verification time") || starts(l, "stack depth") || starts(l, "func#") ||
	       starts(l, "mark_precise") || starts(l, "last_idx") || starts(l, "parent ") || starts(l, "regs=") ||
	       starts(l, "-- ");
}

/* "unknown func bpf_find_vma#180", "invalid func unknown#180": the helper's name */
static bool missing_helper(const char *reason, char *name, size_t len)
{
	const char *s = strstr(reason, "unknown func ");
	int id;

	if (s) {
		s += strlen("unknown func ");
		snprintf(name, len, "%.*s", (int)strcspn(s, "#"), s);
		return name[0] != '\0';
	}
	s = strstr(reason, "invalid func unknown#");
	if (s && sscanf(s + strlen("invalid func unknown#"), "%d", &id) == 1 && features__helper_name(id)) {
		snprintf(name, len, "%s", features__helper_name(id));
		return true;
	}
	return false;
}

static void set_feature(struct bpfcheck_verdict *v)
{
	char helper[64];
	const char *since;

	if (!missing_helper(v->reason, helper, sizeof(helper)))
		return;
	since = features__helper_since(helper);
	if (since)
		snprintf(v->feature, sizeof(v->feature), "helper %s, Linux %s or later", helper, since);
	else
		snprintf(v->feature, sizeof(v->feature), "helper %s, which this kernel lacks", helper);
}

void bpfcheck__verdict(const char *text, struct bpfcheck_verdict *v)
{
	char line[1024], cand[512] = "", src[256] = "";
	bool in_log = false, done = false;

	memset(v, 0, sizeof(*v));
	for (const char *s = text; s && *s;) {
		size_t n = strcspn(s, "\n");
		const char *q;

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), s);
		s += n + (s[n] == '\n');
		if ((q = strstr(line, "prog '")) && strstr(line, "': BPF program load failed")) {
			q += strlen("prog '");
			snprintf(v->prog, sizeof(v->prog), "%.*s", (int)strcspn(q, "'"), q);
		} else if (strstr(line, "-- BEGIN PROG LOAD LOG --")) {
			in_log = true;
			done = false;
			cand[0] = src[0] = '\0';
		} else if (in_log && strstr(line, "-- END PROG LOAD LOG --")) {
			in_log = false;
			if (cand[0])
				snprintf(v->reason, sizeof(v->reason), "%s", cand);
			if (src[0])
				snprintf(v->where, sizeof(v->where), "%s", src);
		} else if (in_log && !done && starts(line, "processed ")) {
			done = true; /* the verdict is the line before the statistics */
		} else if (in_log && !done && starts(line, "; ")) {
			snprintf(src, sizeof(src), "%.*s", (int)sizeof(src) - 1, line + 2);
		} else if (in_log && !done && !noise(line)) {
			snprintf(cand, sizeof(cand), "%.*s", (int)sizeof(cand) - 1, line);
		} else if (!in_log && (q = strstr(line, "map '")) && strstr(line, "failed to create")) {
			snprintf(v->reason, sizeof(v->reason), "%.*s", (int)sizeof(v->reason) - 1, q);
		}
	}
	set_feature(v);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 65536);

			if (!nb)
				break;
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
	} while (got > 0);
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

/* ---- the parent: one line per configuration ------------------------------------------------- */

struct result {
	bool usage, ended;
	int r;
	char err[1024];
	char progs[64][BPF_OBJ_NAME_LEN];
	int nr_progs;
};

static void parse_result(char *text, struct result *res)
{
	char *save = NULL;

	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(l, "u"))
			res->usage = res->ended = true;
		else if (starts(l, "r ")) {
			res->r = atoi(l + 2);
			res->ended = true;
		} else if (starts(l, "e "))
			snprintf(res->err, sizeof(res->err), "%s", l + 2);
		else if (starts(l, "p ") && res->nr_progs < 64)
			snprintf(res->progs[res->nr_progs++], BPF_OBJ_NAME_LEN, "%s", l + 2);
	}
}

static const char *obj_of(const struct checker *c, const char *prog)
{
	for (int i = 0; i < c->nr_progs; i++)
		if (!strcmp(c->progs[i].name, prog))
			return c->progs[i].obj;
	return NULL;
}

static int mark_loaded(struct checker *c, const struct result *res)
{
	int n = 0;

	for (int i = 0; i < res->nr_progs; i++)
		for (int j = 0; j < c->nr_progs; j++)
			if (!strcmp(c->progs[j].name, res->progs[i])) {
				c->progs[j].loaded = true;
				n++;
			}
	return n;
}

static void show_log(const struct checker *c, const char *log)
{
	char *text = c->o->verbose ? slurp(log) : NULL;

	if (text) {
		fflush(c->out);
		fprintf(stderr, "%s", text);
		free(text);
	}
}

/* A load that failed: the program and why, in one line; the log kept. */
static void failed(struct checker *c, const char *shown, const struct result *res, const char *log)
{
	struct bpfcheck_verdict v;
	char *text = slurp(log);
	const char *obj;

	bpfcheck__verdict(text ? text : "", &v);
	free(text);
	c->failed++;
	fprintf(c->out, "fail bpf: %s: ", shown);
	obj = v.prog[0] ? obj_of(c, v.prog) : NULL;
	if (v.prog[0])
		fprintf(c->out, "program %s%s%s%s ", v.prog, obj ? " (" : "", obj ? obj : "", obj ? ".bpf.c)" : "");
	if (v.feature[0])
		fprintf(c->out, "needs %s", v.feature);
	else if (v.prog[0] && v.reason[0] && v.where[0])
		fprintf(c->out, "refused by the verifier at `%s`: %s", v.where, v.reason);
	else if (v.prog[0] && v.reason[0])
		fprintf(c->out, "refused by the verifier: %s", v.reason);
	else if (v.reason[0])
		fprintf(c->out, "%s", v.reason);
	else
		fprintf(c->out, "%s", res->err[0] ? res->err : "failed");
	fprintf(c->out, " (log: %s)\n", log);
	show_log(c, log);
}

/* What one configuration's child said: ok, skip (refused for a kernel feature, or no file
 * to list functions from) or fail. */
static void judge(struct checker *c, int idx, const struct result *res, int status, double secs, const char *log)
{
	char shown[1024];
	bool loadfail = false;
	char *text;

	display(&c->cfg[idx], shown, sizeof(shown));
	if (!res->ended || !WIFEXITED(status)) {
		c->failed++;
		fprintf(c->out, "fail bpf: %s: the checking process %s (log: %s)\n", shown,
			WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "ended without a result", log);
		show_log(c, log);
		return;
	}
	if (res->usage) {
		c->failed++;
		fprintf(c->out, "fail bpf: %s: the front end refuses this command line (log: %s): fix the check's tables\n",
			shown, log);
		show_log(c, log);
		return;
	}
	if (!res->r) {
		c->ok++;
		fprintf(c->out, "ok bpf: %s: %d programs loaded (%.1f s)\n", shown, mark_loaded(c, res), secs);
		unlink(log);
		return;
	}
	text = slurp(log);
	loadfail = text && (strstr(text, "BPF program load failed") || strstr(text, "failed to load object") ||
			    strstr(text, "failed to create"));
	free(text);
	if (!loadfail && (res->r == -EOPNOTSUPP || (res->r == -ENOENT && !c->libs->n))) {
		c->skipped++;
		fprintf(c->out, "skip bpf: %s: %s%s\n", shown, res->err,
			res->r == -ENOENT ? " (no libcuda found here: give --libcuda PATH)" : "");
		unlink(log);
		return;
	}
	failed(c, shown, res, log);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *read_all(int fd)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	ssize_t got;

	while (buf && (got = read(fd, buf + n, cap - n - 1)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			break;
		n += (size_t)got;
		if (n + 1 == cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb)
				break;
			buf = nb;
		}
	}
	if (buf)
		buf[n] = '\0';
	return buf;
}

static void run_config(struct checker *c, int idx)
{
	char log[PATH_MAX + 16], *text = NULL;
	struct result res = { 0 };
	int p[2], status = 0, logfd;
	double t0 = now_s();
	pid_t pid;

	snprintf(log, sizeof(log), "%.4000s/%02d.log", c->logs, (idx + 1) % 100);
	logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (logfd < 0 || pipe2(p, O_CLOEXEC)) {
		c->failed++;
		fprintf(c->out, "fail bpf: %s: %s\n", log, strerror(errno));
		if (logfd >= 0)
			close(logfd);
		return;
	}
	fflush(c->out);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(c, idx, p[1], logfd);
	}
	close(p[1]);
	close(logfd);
	if (pid > 0) {
		text = read_all(p[0]);
		if (text)
			parse_result(text, &res);
		waitpid(pid, &status, 0);
	}
	close(p[0]);
	free(text);
	judge(c, idx, &res, pid > 0 ? status : 0, now_s() - t0, log);
}

/* ---- coverage and summary -------------------------------------------------------------------- */

/* The budget's own copies of its sampled programs as plain uprobes (gp_run__prepare_sampled):
 * loaded only where uprobe_multi links exist, beside them (the other programs are plain
 * uprobes already where they do not). */
static bool beside_multi_only(const char *name)
{
	size_t n = strlen(name);

	return n > 3 && !strcmp(name + n - 3, "_ev");
}

static void coverage(struct checker *c)
{
	char missing[1024] = "", excused[1024] = "";
	size_t at = 0, ex = 0;
	int n = 0, loaded = 0, nex = 0;

	for (int i = 0; i < c->nr_progs; i++) {
		if (c->progs[i].loaded) {
			loaded++;
			continue;
		}
		if (!c->multi && beside_multi_only(c->progs[i].name)) {
			nex++;
			ex += (size_t)snprintf(excused + ex, ex < sizeof(excused) ? sizeof(excused) - ex : 0, "%s%s (%s)",
					       ex ? ", " : "", c->progs[i].name, c->progs[i].obj);
			continue;
		}
		n++;
		at += (size_t)snprintf(missing + at, at < sizeof(missing) ? sizeof(missing) - at : 0, "%s%s (%s)",
				       at ? ", " : "", c->progs[i].name, c->progs[i].obj);
	}
	if (!n && nex)
		fprintf(c->out, "skip bpf programs: %d of %d loaded; not here: %s (loaded only beside uprobe_multi "
			"links, which this kernel lacks)\n", loaded, c->nr_progs, excused);
	else if (!n)
		fprintf(c->out, "ok bpf programs: each of the %d programs of %zu objects loaded in some configuration\n",
			c->nr_progs, GP_ARRAY_SIZE(objs));
	else if (c->skipped) /* the configurations that would load them were refused here */
		fprintf(c->out, "skip bpf programs: %d of %d loaded; not here: %s (only refused configurations load them)\n",
			loaded, c->nr_progs, missing);
	else {
		c->failed++;
		fprintf(c->out, "fail bpf programs: no configuration loads %s: give the options that do rows in src/cli/bpfcheck.c\n",
			missing);
	}
}

static int setup(struct checker *c)
{
	const char *tmp = getenv("TMPDIR");
	char err[512];

	snprintf(c->work, sizeof(c->work), "%s/gpuprobe-check-bpf.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(c->work)) {
		fprintf(c->out, "fail bpf: cannot make a folder in %s: %s\n", tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return -errno;
	}
	snprintf(c->logs, sizeof(c->logs), "%s", c->o->log_dir ? c->o->log_dir : c->work);
	if (c->o->log_dir && mkdir(c->o->log_dir, 0700) && errno != EEXIST) {
		fprintf(c->out, "fail bpf: --log-dir %s: %s\n", c->o->log_dir, strerror(errno));
		return -errno;
	}
	c->libs = calloc(1, sizeof(*c->libs));
	if (!c->libs)
		return -ENOMEM;
	/* the files --trace lists its functions from (its BPF does not depend on them) */
	if (target__resolve(c->o->libcuda, -1, false, c->libs, err, sizeof(err)) && c->o->libcuda) {
		fprintf(c->out, "fail bpf: --libcuda %s\n", err);
		return -ENOENT;
	}
	return 0;
}

/* Whether uprobe_multi links exist, asked in a child: the answer is cached per process,
 * and a configuration's child must ask for itself. */
static bool has_multi(void)
{
	int st = 0;
	pid_t pid = fork();

	if (pid == 0)
		_exit(attach__has_uprobe_multi() ? 0 : 1);
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A kernel without a feature every mode needs (5.10: attach cookies, 5.15): every front
 * end refuses it at start in one line (features__check_kernel), before loading anything,
 * so no configuration can load here. Said once, as each front end says it, and every
 * configuration counted as skipped: not a verifier log per program. */
static bool refused_kernel(struct checker *c)
{
	char why[512];

	if (features__check_kernel(why, sizeof(why)) != -ENOTSUP)
		return false;
	fprintf(c->out, "skip bpf: every configuration: every front end refuses this kernel at start: %s\n", why);
	return true;
}

static void cleanup(struct checker *c)
{
	char path[PATH_MAX + 16];

	for (int i = 0; i < c->n; i++) {
		snprintf(path, sizeof(path), "%.4000s/%02d.trace", c->work, i % 100);
		unlink(path);
	}
	rmdir(c->work); /* kept when it holds the logs of failures */
	libset__clear(c->libs);
	free(c->libs);
}

int bpfcheck__tables(FILE *out, int *configs)
{
	struct checker *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->out = out;
	read_objects(c);
	check_rows(c);
	c->multi = true;
	build(c);
	*configs = c->n;
	r = c->table_errors;
	free(c);
	return r;
}

int bpfcheck__run(const struct bpfcheck_opts *o)
{
	struct checker *c = calloc(1, sizeof(*c));
	struct utsname u;
	double t0 = now_s();
	int r;

	if (!c)
		return -ENOMEM;
	c->o = o;
	c->out = stdout;
	/* settings of the environment that would leave paths out: the configurations set
	 * them where they belong (the perf-event fallback's) */
	unsetenv("GPUPROBE_NO_UPROBE_MULTI");
	unsetenv("GPUPROBE_NO_HOLD");
	if (!gp_has_cap(CAP_SYS_ADMIN) && !(gp_has_cap(CAP_BPF) && gp_has_cap(CAP_PERFMON))) {
		fprintf(c->out, "fail bpf: loading BPF programs needs root, or CAP_BPF and CAP_PERFMON\n");
		free(c);
		return 1;
	}
	r = setup(c);
	if (!r) {
		read_objects(c);
		check_rows(c);
		c->multi = has_multi();
		build(c);
		if (refused_kernel(c)) {
			c->skipped = c->n;
		} else {
			for (int i = 0; i < c->n; i++)
				run_config(c, i);
			coverage(c);
		}
		uname(&u);
		fprintf(c->out, "bpf: %d configurations on Linux %s %s: %d loaded, %d failed, %d skipped%s (%.1f s)\n",
			c->n, u.release, u.machine, c->ok, c->failed + c->table_errors, c->skipped,
			c->table_errors ? "; the tables have errors" : "", now_s() - t0);
		if (c->failed)
			fprintf(c->out, "bpf: the logs of the failures are in %s\n", c->logs);
		r = c->failed + c->table_errors;
	}
	cleanup(c);
	free(c);
	return r;
}
