/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/mode.h"
#include "lib/option.h"
#include "core/options.h"
#include "lib/util.h"
#include "lib/version.h"
#include "cli/cmdline.h"

struct gp_opts gp_opts = {
	.ringbuf_size = 4UL << 20,
	.max_pending = 10240,
	.max_procs = 8192,
	.listen = "127.0.0.1:9464",
	.retention = 300,
	.rescan = 5,
	.probe_cost = -1,
	.max_overhead = -1,
	.trace_counters = 0.1,
	.kubelet_log_dir = "/var/log",
	.max_process_series = 100,
	.max_label_sets = 500,
	.max_label_sets_per_cgroup = 100,
	.nvml = -1,
	.nvml_period = 1,
};

/* -p PID[,PID...], repeatable */
static int parse_pids(const char *arg, void *dest, char *err, size_t len)
{
	char buf[4096], *save = NULL, *tok;
	uint64_t v;

	(void)dest;
	snprintf(buf, sizeof(buf), "%s", arg);
	if (!buf[0] || buf[strlen(buf) - 1] == ',') {
		snprintf(err, len, "invalid PID: '%s'", arg);
		return -EINVAL;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (gp_parse_u64(tok, 1, INT_MAX, &v)) {
			snprintf(err, len, "invalid PID: %s", tok);
			return -EINVAL;
		}
		if (gp_opts.nr_pids == GP_MAX_PIDS) {
			snprintf(err, len, "at most %d PIDs with -p", GP_MAX_PIDS);
			return -E2BIG;
		}
		gp_opts.pids[gp_opts.nr_pids++] = (int)v;
	}
	return 0;
}

static int parse_ringbuf(const char *arg, void *dest, char *err, size_t len)
{
	uint64_t v;

	if (gp_parse_u64(arg, 4096, 1UL << 30, &v) || (v & (v - 1))) {
		snprintf(err, len, "--ringbuf-size must be a power of two from 4096 to 1 GiB (got %s)", arg);
		return -EINVAL;
	}
	*(uint64_t *)dest = v;
	gp_opts.ringbuf_set = true;
	return 0;
}

/* --max-overhead PCT: above 0, at most 100 (100: no budget) */
static int parse_overhead(const char *arg, void *dest, char *err, size_t len)
{
	double v;

	if (gp_parse_seconds(arg, 100, &v) || v <= 0) {
		snprintf(err, len, "--max-overhead takes a percentage above 0 and at most 100 (got '%s')", arg);
		return -EINVAL;
	}
	*(double *)dest = v;
	return 0;
}

/* --nvml / --no-nvml: the last one given wins */
static int parse_nvml(const char *arg, void *dest, char *err, size_t len)
{
	(void)arg, (void)dest, (void)err, (void)len;
	gp_opts.nvml = 1;
	return 0;
}

static int parse_no_nvml(const char *arg, void *dest, char *err, size_t len)
{
	(void)arg, (void)dest, (void)err, (void)len;
	gp_opts.nvml = 0;
	return 0;
}

#define SECS GP_MAX_SECONDS

/* The options that are no mode's own. */
static const struct gp_option global_options[] = {
	{ "pid", 'p', "PID[,PID...]", "Trace these running processes only (repeatable)", GP_OPT_CUSTOM, NULL,
	  .parse = parse_pids, .frontends = GP_FE_CLI | GP_FE_TOP, .group = GP_GRP_TARGET },
	{ "tree", 0, NULL, "With -p: their descendants too, present and future", GP_OPT_SWITCH, &gp_opts.tree,
	  .frontends = GP_FE_CLI | GP_FE_TOP, .group = GP_GRP_TARGET },
	{ "comm", 0, "NAME", "Node-wide: only processes with this name (and what they start)", GP_OPT_STRING,
	  &gp_opts.comm, .frontends = GP_FE_ALL | GP_FE_TOP, .group = GP_GRP_TARGET },
	{ "cgroup", 0, "PATH", "Node-wide: only processes in this cgroup v2 subtree (a pod, a systemd unit)",
	  GP_OPT_STRING, &gp_opts.cgroup, .frontends = GP_FE_ALL | GP_FE_TOP, .group = GP_GRP_TARGET },
	{ "libcuda", 0, "PATH", "Probe this libcuda.so instead of discovering them (no rescans in the daemon)", GP_OPT_STRING,
	  &gp_opts.libcuda, .frontends = GP_FE_ALL | GP_FE_TOP, .group = GP_GRP_TARGET },
	{ "interval", 'i', "SECONDS", "Print a report every SECONDS (default: only at the end)",
	  GP_OPT_SECONDS, &gp_opts.interval, 0, SECS, .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "duration", 'd', "SECONDS", "Stop tracing after SECONDS", GP_OPT_SECONDS, &gp_opts.duration,
	  1e-3, SECS, .frontends = GP_FE_CLI | GP_FE_TOP, .group = GP_GRP_OUTPUT },
	{ "json", 0, NULL, "Reports as JSON Lines, where the text ones would go (stderr with a command, else stdout; -o FILE for a program to read)", GP_OPT_SWITCH, &gp_opts.json,
	  .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "verbose", 'v', NULL, "Log libbpf and attach details to stderr", GP_OPT_SWITCH, &gp_opts.verbose,
	  .frontends = GP_FE_ALL | GP_FE_TOP, .group = GP_GRP_OUTPUT },
	{ "listen", 0, "ADDR:PORT", "Where to serve /metrics and /healthz (default 127.0.0.1:9464; IPv6 as [::1]:9464)",
	  GP_OPT_STRING, &gp_opts.listen, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "config", 0, "FILE", "Read options from FILE first: one per line, long names without --, e.g. 'listen 0.0.0.0:9464' (the command line comes after)",
	  GP_OPT_STRING, &gp_opts.config, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "web-config", 0, "FILE", "TLS and basic authentication: the Prometheus exporter toolkit's web configuration file",
	  GP_OPT_STRING, &gp_opts.web_config, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "retention", 0, "SECONDS", "Drop a series nothing has counted into for this long (default 300)",
	  GP_OPT_SECONDS, &gp_opts.retention, 0, SECS, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "per-process-series", 0, NULL, "Also label per-process series with pid (for at most --max-process-series processes at a time; the rest pid=\"other\")",
	  GP_OPT_SWITCH, &gp_opts.per_process, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "max-process-series", 0, "N", "Processes with a pid label of their own at a time (default 100)",
	  GP_OPT_U64, &gp_opts.max_process_series, 1, 100000, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "max-label-sets", 0, "N", "Process label sets (comm, cgroup, pod) with series of their own (default 500; 0: no cap); new ones past it are summed under comm=\"other\"",
	  GP_OPT_U64, &gp_opts.max_label_sets, 0, 10000000, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "max-label-sets-per-cgroup", 0, "N", "Of those, one cgroup's share (default 100; 0: no cap); its new ones past it are summed under comm=\"other\" of that cgroup",
	  GP_OPT_U64, &gp_opts.max_label_sets_per_cgroup, 0, 10000000, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "kubelet-log-dir", 0, "DIR", "The kubelet's log folder, with pods/ and containers/: pod and container names (default /var/log)",
	  GP_OPT_STRING, &gp_opts.kubelet_log_dir, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "rescan-interval", 0, "SECONDS", "Look for new libcuda files in /proc/*/maps this often (default 5; 0: only at start)",
	  GP_OPT_SECONDS, &gp_opts.rescan, 0, SECS, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "probe-cost", 0, "SECONDS", "Cost of one probe hit (default: calibrated at start-up)",
	  GP_OPT_SECONDS, &gp_opts.probe_cost, 0, 1, .frontends = GP_FE_DAEMON, .group = GP_GRP_DAEMON },
	{ "nvml", 0, NULL, "Read NVML (libnvidia-ml.so.1): per-GPU and per-process utilization, driver-accounted memory, XID errors (the default of the daemon and top where the library loads)",
	  GP_OPT_CUSTOM, NULL, .parse = parse_nvml, .frontends = GP_FE_ALL | GP_FE_TOP, .group = GP_GRP_OUTPUT },
	{ "no-nvml", 0, NULL, "Do not load NVML", GP_OPT_CUSTOM, NULL, .parse = parse_no_nvml,
	  .frontends = GP_FE_ALL | GP_FE_TOP, .group = GP_GRP_OUTPUT },
	{ "nvml-interval", 0, "SECONDS", "Seconds between NVML reads, in NVML's own thread (default 1)",
	  GP_OPT_SECONDS, &gp_opts.nvml_period, 0.1, 60, .frontends = GP_FE_ALL | GP_FE_TOP, .group = GP_GRP_OUTPUT },
	{ "ringbuf-size", 0, "BYTES", "Ring buffer size, a power of two >= 4096 (default 4 MiB; 32 MiB for the stack copies of dwarf stacks, 16 MiB for the calls of a trace)",
	  GP_OPT_CUSTOM, &gp_opts.ringbuf_size, .parse = parse_ringbuf, .frontends = GP_FE_ALL | GP_FE_TOP,
	  .group = GP_GRP_LIMITS },
	{ "max-overhead", 0, "PCT", "Sample launch and sync probes to keep each process's time in them under PCT % (daemon default 1, CLI none; 100: every call)",
	  GP_OPT_CUSTOM, &gp_opts.max_overhead, .parse = parse_overhead, .frontends = GP_FE_ALL,
	  .group = GP_GRP_LIMITS },
	{ "max-pending", 0, "N", "Calls in flight tracked at once (default 10240)", GP_OPT_U64,
	  &gp_opts.max_pending, 1, 1 << 24, .frontends = GP_FE_ALL | GP_FE_TOP, .group = GP_GRP_LIMITS },
	{ "max-procs", 0, "N", "Processes tracked for exit in BPF (default 8192)", GP_OPT_U64,
	  &gp_opts.max_procs, 1, 1 << 24, .frontends = GP_FE_ALL | GP_FE_TOP, .group = GP_GRP_LIMITS },
	{},
};

const struct gp_option *gp_options__globals(void)
{
	return global_options;
}

static const char *const group_titles[] = {
	[GP_GRP_MODES] = "Modes:",
	[GP_GRP_TARGET] = "Target:",
	[GP_GRP_OUTPUT] = "Output:",
	[GP_GRP_DAEMON] = "Endpoint:",
	[GP_GRP_LIMITS] = "Limits (every overflow is counted and reported):",
};

#define MAX_OPTS 128

/* An option in force for this command line: a descriptor, or a mode's flag. */
struct entry {
	const struct gp_option *o;
	const struct gp_mode *owner; /* the mode whose option it is; NULL: global */
	int mode;                    /* >= 0: this entry is gp_modes[mode]'s flag */
	bool given;
};

struct parser {
	struct gp_cmdline *c;
	struct entry e[MAX_OPTS];
	int n;
};

/* "FILE:LINE" of the --config line being parsed, for its errors; "" otherwise. */
static char conf_where[600];

static int vreport(const struct gp_cmdline *c, const char *fmt, va_list ap)
{
	fprintf(stderr, "%sgpuprobe: ", c->log_prefix ? c->log_prefix : "");
	if (strcmp(c->name, "gpuprobe"))
		fprintf(stderr, "%s: ", c->name + strlen("gpuprobe "));
	if (conf_where[0])
		fprintf(stderr, "%s: ", conf_where);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	return GP_EXIT_USAGE;
}

int gp_options__error(const struct gp_cmdline *c, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vreport(c, fmt, ap);
	va_end(ap);
	return r;
}

static bool add(struct parser *p, const struct gp_option *o, const struct gp_mode *owner, int mode)
{
	if (p->n >= MAX_OPTS)
		return false;
	p->e[p->n++] = (struct entry){ .o = o, .owner = owner, .mode = mode };
	return true;
}

static void collect(struct parser *p)
{
	unsigned int fe = p->c->frontend;

	for (const struct gp_option *o = p->c->extra; o && o->name; o++)
		add(p, o, NULL, -1);
	if (!fe)
		return;
	for (int i = 0; p->c->modes && gp_modes[i]; i++)
		if (gp_modes[i]->frontends & fe)
			add(p, NULL, NULL, i);
	for (const struct gp_option *o = global_options; o->name; o++)
		if (o->frontends & fe)
			add(p, o, NULL, -1);
	for (int i = 0; p->c->modes && gp_modes[i]; i++) {
		if (!(gp_modes[i]->frontends & fe))
			continue;
		for (const struct gp_option *o = gp_modes[i]->options; o && o->name; o++)
			if (o->frontends & fe)
				add(p, o, gp_modes[i], -1);
	}
}

static const char *entry_name(const struct entry *e)
{
	return e->mode >= 0 ? gp_modes[e->mode]->flag : e->o->name;
}

static const char *entry_arg(const struct entry *e)
{
	return e->mode >= 0 ? gp_modes[e->mode]->arg : e->o->arg;
}

/* "jsonl|chrome" -> the index of arg, or -1 */
static int choice_index(const char *choices, const char *arg)
{
	size_t n = strlen(arg);
	int i = 0;

	for (const char *s = choices; s && *s; i++) {
		const char *bar = strchr(s, '|');
		size_t len = bar ? (size_t)(bar - s) : strlen(s);

		if (len == n && !strncmp(s, arg, n))
			return i;
		s = bar ? bar + 1 : NULL;
	}
	return -1;
}

/* "a|b|c" -> "a, b or c" */
static const char *choices_text(const char *choices, char *buf, size_t len)
{
	char *bar;

	snprintf(buf, len, "%s", choices);
	bar = strrchr(buf, '|');
	if (!bar)
		return buf;
	*bar = '\0';
	for (char *q = buf; (q = strchr(q, '|'));)
		*q = ',';
	snprintf(buf + strlen(buf), len - strlen(buf), " or %s", choices + (bar - buf) + 1);
	return buf;
}

/* Why the last parse refused a choice this build lacks (struct gp_option's unbuilt). */
static const char *unbuilt_why;

const char *gp_options__unbuilt(void)
{
	return unbuilt_why;
}

static int apply(struct parser *p, struct entry *e, const char *arg)
{
	const struct gp_option *o = e->o;
	char err[512] = "";
	uint64_t u;
	double d;
	int r = 0;

	if (e->mode >= 0) {
		gp_opts.modes |= 1ULL << e->mode;
		if (gp_modes[e->mode]->arg_dest)
			*gp_modes[e->mode]->arg_dest = arg;
		return 0;
	}
	switch (o->type) {
	case GP_OPT_SWITCH:
	case GP_OPT_CLEAR:
		*(bool *)o->dest = o->type == GP_OPT_SWITCH;
		break;
	case GP_OPT_STRING:
		if (!*arg)
			return gp_options__error(p->c, "--%s needs a non-empty %s", o->name, o->arg);
		*(const char **)o->dest = arg;
		break;
	case GP_OPT_U64:
		if (gp_parse_u64(arg, (uint64_t)o->min, (uint64_t)o->max, &u))
			return gp_options__error(p->c, "invalid --%s: %s (an integer from %.0f to %.0f)", o->name,
						 arg, o->min, o->max);
		*(uint64_t *)o->dest = u;
		break;
	case GP_OPT_COUNT:
		if (!strcmp(arg, "-1")) {
			*(int *)o->dest = -1;
			break;
		}
		if (gp_parse_u64(arg, (uint64_t)o->min, (uint64_t)o->max, &u))
			return gp_options__error(p->c, "invalid --%s: %s (an integer from %.0f to %.0f, or -1 for all)",
						 o->name, arg, o->min, o->max);
		*(int *)o->dest = (int)u;
		break;
	case GP_OPT_SECONDS:
		if (gp_parse_seconds(arg, o->max, &d) || d < o->min)
			return gp_options__error(p->c, "invalid --%s: %s (seconds, a number from %g to %g)", o->name,
						 arg, o->min, o->max);
		*(double *)o->dest = d;
		break;
	case GP_OPT_CHOICE:
		r = choice_index(o->choices, arg);
		if (r < 0) {
			char alts[160];

			return gp_options__error(p->c, "--%s must be %s (got %s)", o->name,
						 choices_text(o->choices, alts, sizeof(alts)), arg);
		}
		if (o->unbuilt && o->unbuilt_why && !strcmp(arg, o->unbuilt)) {
			unbuilt_why = o->unbuilt_why;
			return gp_options__error(p->c, "--%s %s: %s", o->name, arg, o->unbuilt_why);
		}
		*(int *)o->dest = r;
		break;
	case GP_OPT_CUSTOM:
		if (o->parse(arg, o->dest, err, sizeof(err)))
			return gp_options__error(p->c, "%s", err);
		break;
	}
	return 0;
}

static void help_line(const char *left, const char *doc)
{
	const int col = 30, width = 79;
	int pos = printf("%s", left);
	const char *w = doc;

	if (pos >= col - 1) {
		putchar('\n');
		pos = 0;
	}
	printf("%*s", col - pos, "");
	pos = col;
	while (w && *w) {
		size_t n = strcspn(w, " ");

		if (pos > col && pos + 1 + (int)n > width) {
			printf("\n%*s", col, "");
			pos = col;
		} else if (pos > col) {
			putchar(' ');
			pos++;
		}
		printf("%.*s", (int)n, w);
		pos += (int)n;
		w += n;
		while (*w == ' ')
			w++;
	}
	putchar('\n');
}

static void help_entry(const struct entry *e)
{
	char left[96];
	const char *arg = entry_arg(e);
	int key = e->o ? e->o->key : 0;

	if (key)
		snprintf(left, sizeof(left), "  -%c, --%s%s%s", key, entry_name(e), arg ? "=" : "", arg ? arg : "");
	else
		snprintf(left, sizeof(left), "      --%s%s%s", entry_name(e), arg ? "=" : "", arg ? arg : "");
	help_line(left, e->mode >= 0 ? gp_modes[e->mode]->doc : e->o->doc);
}

static void help(const struct parser *p)
{
	const struct gp_cmdline *c = p->c;

	printf("Usage: %s [OPTION...]%s%s\n%s\n", c->name, c->args_doc ? " " : "",
	       c->args_doc ? c->args_doc : "", c->doc ? c->doc : "");
	/* a subcommand's own options without a section (convert, flame) */
	for (int i = 0, title = 0; i < p->n; i++) {
		const struct entry *e = &p->e[i];

		if (e->owner || e->mode >= 0 || e->o->group)
			continue;
		if (!title++)
			printf("\n Options:\n");
		help_entry(e);
	}
	for (int g = GP_GRP_MODES; g < GP_GRP_MODE; g++) {
		bool title = false;

		for (int i = 0; i < p->n; i++) {
			const struct entry *e = &p->e[i];

			if (e->owner || (e->mode >= 0 ? GP_GRP_MODES : e->o->group) != g)
				continue;
			if (!title)
				printf("\n %s\n", group_titles[g]);
			title = true;
			help_entry(e);
		}
	}
	for (int m = 0; gp_modes[m]; m++) {
		bool title = false;

		for (int i = 0; i < p->n; i++) {
			if (p->e[i].owner != gp_modes[m])
				continue;
			if (!title)
				printf("\n --%s options:\n", gp_modes[m]->flag);
			title = true;
			help_entry(&p->e[i]);
		}
	}
	printf("\n");
	help_line("  -h, --help", "Give this help list");
	help_line("  -V, --version", "Print program version");
	if (c->epilog)
		printf("\n%s", c->epilog);
}

/* getopt_long's table: entry i has val 256 + i; -h and -V come last. */
static int build(struct parser *p, struct option *lo, char *shorts, size_t slen)
{
	size_t s = 0;
	int n = 0;

	/* stop at the first non-option: the command's own arguments; files (flame, convert)
	 * may come before options too ("gpuprobe flame x.folded -o x.svg"), as other tools take them */
	if (p->c->positionals != GP_POS_FILES)
		shorts[s++] = '+';
	shorts[s++] = ':';
	for (int i = 0; i < p->n; i++) {
		const struct entry *e = &p->e[i];

		lo[n++] = (struct option){ entry_name(e), entry_arg(e) ? required_argument : no_argument, NULL, 256 + i };
		if (e->o && e->o->key && s + 3 < slen) {
			shorts[s++] = (char)e->o->key;
			if (e->o->arg)
				shorts[s++] = ':';
		}
	}
	lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n++] = (struct option){ "version", no_argument, NULL, 'V' };
	lo[n] = (struct option){ 0 };
	memcpy(shorts + s, "hV", 3);
	return n;
}

static int index_of_key(const struct parser *p, int key)
{
	for (int i = 0; i < p->n; i++)
		if (p->e[i].o && p->e[i].o->key == key)
			return i;
	return -1;
}

/* A mode's option given without the mode. */
static int check_owners(struct parser *p)
{
	for (int i = 0; i < p->n; i++) {
		const struct entry *e = &p->e[i];
		int m;

		if (!e->given || !e->owner)
			continue;
		for (m = 0; gp_modes[m] != e->owner; m++)
			;
		if (!(gp_opts.modes & (1ULL << m)))
			return gp_options__error(p->c, "--%s needs --%s", e->o->name, e->owner->flag);
	}
	return 0;
}

static int need_a_mode(struct parser *p)
{
	char list[512] = "";
	size_t off = 0;

	if (!p->c->modes || gp_opts.modes)
		return 0;
	for (int i = 0; i < p->n && off < sizeof(list); i++)
		if (p->e[i].mode >= 0)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s--%s%s%s", off ? ", " : "",
						entry_name(&p->e[i]), entry_arg(&p->e[i]) ? " " : "",
						entry_arg(&p->e[i]) ? entry_arg(&p->e[i]) : "");
	return gp_options__error(p->c, "choose a mode: %s (or several)", list);
}

static int positionals(struct parser *p, int argc, char **argv)
{
	struct gp_cmdline *c = p->c;
	int rest = argc - optind;

	if (c->positionals == GP_POS_COMMAND) {
		if (rest > 0)
			gp_opts.cmd = &argv[optind];
		return 0;
	}
	if (c->positionals == GP_POS_NONE && rest > 0)
		return gp_options__error(c, "unexpected argument %s (see %s --help)", argv[optind], c->name);
	if (rest < c->min_args || rest > c->max_args)
		return gp_options__error(c, "%s %s (see %s --help)", rest < c->min_args ? "missing" : "too many",
					 rest < c->min_args ? "arguments" : "arguments", c->name);
	c->args = &argv[optind];
	c->nr_args = rest;
	return 0;
}

/*
 * --config FILE (the daemon): each line of the file becomes one argument, "--name" or
 * "--name=value", placed before the command line's own, so the file goes through this
 * parser — the same names, bounds and messages — and the command line has the last word.
 * A line is "name", "name value" or "name = value"; "--" before the name is allowed,
 * "#" starts a comment, a value may be quoted. The strings live as long as the process,
 * as argv's do (options point into them).
 */
#define CONF_MAX_BYTES (64 * 1024)
#define CONF_MAX_ARGS 256

/* --config's file, looked for among the options only (never in a command's arguments). */
static const char *find_config(int argc, char **argv)
{
	for (int i = 1; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--"); i++) {
		if (!strncmp(argv[i], "--config=", 9))
			return argv[i] + 9;
		if (!strcmp(argv[i], "--config"))
			return i + 1 < argc ? argv[i + 1] : NULL;
	}
	return NULL;
}

static int read_conf(const struct gp_cmdline *c, const char *path, char **text)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	char *buf = NULL;
	struct stat st;
	ssize_t n = 0, got;

	if (fd < 0)
		return gp_options__error(c, "--config %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > CONF_MAX_BYTES) {
		close(fd);
		return gp_options__error(c, "--config %s: not a regular file of at most %d bytes", path,
					 CONF_MAX_BYTES);
	}
	buf = malloc(CONF_MAX_BYTES + 1);
	while (buf && n < CONF_MAX_BYTES && (got = read(fd, buf + n, CONF_MAX_BYTES - (size_t)n)) > 0)
		n += got;
	close(fd);
	if (!buf)
		return gp_options__error(c, "out of memory");
	buf[n] = '\0';
	if (strlen(buf) != (size_t)n) {
		free(buf);
		return gp_options__error(c, "--config %s: a NUL byte in the file", path);
	}
	*text = buf;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* One line into "--name[=value]" (*arg NULL for a blank or comment line). */
static int conf_line(const struct gp_cmdline *c, char *line, char **arg)
{
	char *name, *value, *hash = line;
	size_t n;

	*arg = NULL;
	for (; (hash = strchr(hash, '#')); hash++)
		if (hash == line || isspace((unsigned char)hash[-1])) {
			*hash = '\0';
			break;
		}
	name = trim(line);
	if (!name[0])
		return 0;
	if (!strncmp(name, "--", 2))
		name += 2;
	n = strcspn(name, " \t=");
	value = name + n;
	if (*value) {
		*value++ = '\0';
		value = trim(value);
		if (*value == '=')
			value = trim(value + 1);
	}
	n = strlen(value);
	if (n >= 2 && (value[0] == '"' || value[0] == '\'') && value[n - 1] == value[0]) {
		value[n - 1] = '\0';
		value++;
	}
	if (!name[0] || !strcmp(name, "config") || !strcmp(name, "help") || !strcmp(name, "version"))
		return gp_options__error(c, "'%s' cannot be set in a config file", line);
	if (asprintf(arg, "--%s%s%s", name, *value ? "=" : "", value) < 0)
		return gp_options__error(c, "out of memory");
	return 0;
}

/* argv with the file's arguments after argv[0]; lines[i]: the file's line of argument i. */
static int expand_config(struct gp_cmdline *c, const char *path, int *argc, char ***argv, int **lines)
{
	char *text = NULL, *line, *next, **nv = calloc((size_t)*argc + CONF_MAX_ARGS + 1, sizeof(*nv));
	int *ln = calloc((size_t)*argc + CONF_MAX_ARGS + 1, sizeof(*ln));
	int n = 1, r, no = 0;

	if (!nv || !ln)
		return gp_options__error(c, "out of memory");
	r = read_conf(c, path, &text);
	nv[0] = (*argv)[0];
	for (line = r ? NULL : text; !r && line; line = next) {
		char *arg;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		snprintf(conf_where, sizeof(conf_where), "%s:%d", path, ++no);
		r = conf_line(c, line, &arg);
		if (!r && arg && n > CONF_MAX_ARGS)
			r = gp_options__error(c, "more than %d options", CONF_MAX_ARGS);
		if (!r && arg) {
			ln[n] = no;
			nv[n++] = arg;
		}
	}
	conf_where[0] = '\0';
	if (r)
		return r;
	for (int i = 1; i < *argc; i++)
		nv[n++] = (*argv)[i];
	*argc = n;
	*argv = nv;
	*lines = ln;
	return 0;
}

/* Where the argument at index i came from, for the error lines. */
static void origin(const char *path, const int *lines, int i)
{
	if (path && lines && i > 0 && lines[i])
		snprintf(conf_where, sizeof(conf_where), "%s:%d", path, lines[i]);
	else
		conf_where[0] = '\0';
}

/* A switch given a value ("--memleak=yes"): getopt calls it unrecognized. */
static bool switch_with_value(const struct parser *p, const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (strncmp(arg, "--", 2) || !eq)
		return false;
	for (int i = 0; i < p->n; i++)
		if (!entry_arg(&p->e[i]) && !strncmp(arg + 2, entry_name(&p->e[i]), (size_t)(eq - arg - 2)) &&
		    !entry_name(&p->e[i])[eq - arg - 2])
			return true;
	return false;
}

/* Why this front end refuses an option another one has ("--json=x" or "--json"), or NULL. */
static const char *refusal(const struct gp_cmdline *c, const char *arg)
{
	size_t n;

	if (!c->refused || strncmp(arg, "--", 2))
		return NULL;
	n = strcspn(arg + 2, "=");
	for (size_t i = 0; c->refused[i][0]; i++)
		if (strlen(c->refused[i][0]) == n && !strncmp(arg + 2, c->refused[i][0], n))
			return c->refused[i][1];
	return NULL;
}

int gp_options__parse(struct gp_cmdline *c, int argc, char **argv)
{
	struct parser p = { .c = c };
	struct option lo[MAX_OPTS + 3];
	char shorts[2 * MAX_OPTS + 8];
	const char *conf = (c->frontend & GP_FE_DAEMON) ? find_config(argc, argv) : NULL;
	int opt, r, *lines = NULL;

	gp_opts.frontend = c->frontend;
	unbuilt_why = NULL;
	collect(&p);
	build(&p, lo, shorts, sizeof(shorts));
	if (conf) {
		r = expand_config(c, conf, &argc, &argv, &lines);
		if (r)
			return r;
	}
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		int i = opt >= 256 ? opt - 256 : -1;

		origin(conf, lines, optind - 1);
		if (opt == 'h') {
			help(&p);
			return GP_PARSED_EXIT;
		}
		if (opt == 'V') {
			printf("gpuprobe %s\n", GP_VERSION);
			return GP_PARSED_EXIT;
		}
		if (opt == ':')
			return gp_options__error(c, "option %s needs an argument", argv[optind - 1]);
		if (opt == '?' && switch_with_value(&p, argv[optind - 1]))
			return gp_options__error(c, "option %.*s takes no value", (int)strcspn(argv[optind - 1], "="),
						 argv[optind - 1]);
		if (opt == '?' && refusal(c, argv[optind - 1]))
			return gp_options__error(c, "%.*s: %s", (int)strcspn(argv[optind - 1], "="), argv[optind - 1],
						 refusal(c, argv[optind - 1]));
		if (opt == '?')
			return gp_options__error(c, "unrecognized option '%s' (see %s --help)", argv[optind - 1],
						 c->name);
		if (i < 0)
			i = index_of_key(&p, opt);
		if (i < 0)
			return gp_options__error(c, "unrecognized option '%s'", argv[optind - 1]);
		r = apply(&p, &p.e[i], optarg);
		if (r)
			return r;
		p.e[i].given = true;
	}
	conf_where[0] = '\0';
	r = positionals(&p, argc, argv);
	if (!r)
		r = need_a_mode(&p);
	if (!r)
		r = check_owners(&p);
	return r;
}
