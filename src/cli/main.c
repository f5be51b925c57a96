/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe: watches CUDA programs through uprobes on the CUDA driver, without restarting
 * them. The subcommands come from one table [bpftool's cmds[]]; without one, this traces a
 * command, running PIDs or the whole node with the modes asked for, through a run
 * (src/core/run.h) — no mode is named here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "core/attach.h"
#include "core/calibrate.h"
#include "cli/check.h"
#include "cli/cmdline.h"
#include "cli/daemon.h"
#include "core/events.h"
#include "cli/flame_cmd.h"
#include "out/json.h"
#include "core/kernel_features.h"
#include "out/jsonnum.h"
#include "lib/option.h"
#include "core/options.h"
#include "out/outfile.h"
#include "lib/proctab.h"
#include "core/ptree.h"
#include "core/libwatch.h"
#include "out/hits.h"
#include "out/report.h"
#include "core/run.h"
#include "lib/target.h"
#include "cli/targets.h"
#include "out/text.h"
#include "cli/top.h"
#include "cli/top_view.h"
#include "out/trace.h"
#include "lib/util.h"

static int convert_main(int argc, char **argv);
static int top_main(int argc, char **argv);

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
} cmds[] = {
	{ "daemon", daemon__main },
	{ "check", check__main },
	{ "convert", convert_main },
	{ "flame", flame__main },
	{ "top", top_main },
	{ 0 },
};

static const char doc[] =
	"Trace CUDA programs with eBPF, without restarting them.\n"
	"\n"
	"Traces COMMAND (started by gpuprobe and probed before it runs), a running\n"
	"process (-p), or, with neither, every CUDA process on the node.\n"
	"Subcommands: gpuprobe daemon|check|convert|flame|top (each with --help).\n";

static const char epilog[] =
	"EXAMPLES:\n"
	"  gpuprobe --memleak -- python3 train.py   # leaks of a command (report on stderr)\n"
	"  gpuprobe --memleak -p 4242 --interval 5  # a running process, every 5 s\n"
	"  gpuprobe --memleak                       # every CUDA process on the node\n"
	"  gpuprobe --memleak --json -o leaks.jsonl -- ./app  # JSON Lines to a file\n"
	"  gpuprobe --memleak --json -p 4242 | jq . # no command: reports on stdout\n"
	"  gpuprobe --cudatrace -p 4242 --interval 2 # launches by kernel name, live\n"
	"  gpuprobe --bandwidth-util --interval 1 --csv pcie.csv -- ./train\n"
	"  gpuprobe --trace run.jsonl -- python3 infer.py   # every driver call\n"
	"  gpuprobe --trace run.json --trace-format chrome -p 4242 --duration 10\n"
	"  gpuprobe --trace - --trace-format chrome -d 5 > run.json  # the trace alone on stdout\n"
	"  gpuprobe --ioctl -- ./app                # nvidia ioctls by device and command\n"
	"  gpuprobe convert --chrome run.jsonl > run.json   # for ui.perfetto.dev\n"
	"  gpuprobe daemon --memleak --cudatrace    # Prometheus /metrics on 127.0.0.1:9464\n"
	"  gpuprobe check                           # preflight: can gpuprobe run here?\n"
	"\n"
	"STREAMS:\n"
	"  With a command, the reports go to stderr, where strace, ltrace and perf trace put\n"
	"  theirs: the command keeps its stdout and stderr (`gpuprobe ... -- cmd > out.txt`\n"
	"  leaves out.txt to the command). Without one (-p, node-wide) they go to stdout.\n"
	"  -o FILE writes them to FILE; -o - to stdout (beside a command's output). --trace -\n"
	"  writes the trace alone to stdout; the reports and a command's stdout then go to\n"
	"  stderr. The \"tracing\" line, warnings and errors always go to stderr.\n"
	"\n"
	"SIGNALS: SIGINT, SIGTERM, SIGHUP end the run with the final report (SIGTERM is\n"
	"  passed on to the command); SIGUSR1 prints an interval report now; SIGPIPE (the\n"
	"  reports' reader gone) writes the final report to the file outputs and exits 141.\n"
	"\n"
	"Exit status: the command's own when gpuprobe started one, else 0;\n"
	"1 on an error (an output that could not be written among them); 2 on bad usage;\n"
	"141 after SIGPIPE.\n";

/* -o FILE: where the reports go (src/out/outfile.c: no symlinks, 0600) */
static const char *output_path;

static const struct gp_option cli_options[] = {
	{ "output", 'o', "FILE", "Reports (text or --json) to FILE ('-': stdout, beside a command's output); default: stderr with a command, else stdout",
	  GP_OPT_STRING, &output_path, .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{},
};

static volatile sig_atomic_t stop_signal, report_signal, pipe_signal;

static void on_signal(int sig)
{
	if (sig == SIGPIPE)
		pipe_signal = 1;
	if (sig == SIGUSR1)
		report_signal = 1;
	else if (!stop_signal) /* the first one says how the run ended */
		stop_signal = sig;
}

/*
 * The signals that end a run with its final report (SIGPIPE: the reports' reader went
 * away; what is left is written to the file outputs, and the exit status is 141 as the
 * default action's) and SIGUSR1 (a report now, as --interval's). Set before anything
 * else, so that a signal during the start-up is not lost: the run ends as soon as it is
 * set up (a held command is not let run).
 */
static void catch_signals(bool usr1)
{
	struct sigaction sa = { .sa_handler = on_signal };
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&sa.sa_mask, sigs[i]);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	if (usr1)
		sigaction(SIGUSR1, &sa, NULL);
}

static int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!gp_opts.verbose || level == LIBBPF_DEBUG)
		return 0;
	return gp_vfprintf_safe(stderr, fmt, args); /* may name a library path */
}

struct cli {
	struct gp_run *run;
	struct lib_set libs;
	struct spawned child;
	int status;
	int pidfds[GP_MAX_PIDS]; /* -p: the targets, readable once they exit (PIDs get reused) */
	int nr_pidfds;
	bool released; /* the command ran (it is waited for, not killed) */
	bool child_done;
	FILE *out;          /* the reports: stdout, a stream on stderr, or -o FILE */
	FILE *safe;         /* what the reports are written to: out through gp_text__safe_stream */
	bool reports_stderr; /* out writes to stderr (a command's run, --trace -) */
	int out_errno;       /* the first failed write of a report (ENOSPC), as it failed */
	int lib_probes;      /* of the probes, those on the libcuda files found at the start */
	int cmd_fd[2];      /* the command's stdout and stderr when not gpuprobe's (-1) */
	int log_fd;         /* top's --command-log, or /dev/null */
	uint64_t hits_reaped; /* probe hits of processes an interval report listed and forgot */
	struct gp_probe_cost cost; /* one probe hit's price, when calibrated at the start */
	int cost_r;                /* 0, or why it could not be (a negative errno) */
	bool cost_known;
};

/* The front end's answer to a mode that reports processes as they exit: in text, the
 * command's own is left to the final report that follows. */
static void exit_report(struct gp_run *run, int slot, uint32_t pid)
{
	struct cli *c = gp_run__fe(run);

	if (!gp_run__mode(run, slot)->exit_reports)
		return;
	if (!gp_run__opts(run)->json && gp_run__opts(run)->cmd && (pid_t)pid == c->child.pid)
		return;
	gp_report__slot(run, slot, GP_SNAP_EXIT, pid);
}

static int preflight(char *err, size_t len)
{
	unsigned int needs = gp_run__needs(gp_opts.modes);
	int r = gp_check_privileges(err, len);

	if (!r)
		r = gp_check_kernel(needs & GP_NEED_LIBCUDA, err, len);
	if (!r)
		r = features__check_kernel(err, len);
	return r;
}

/* -p's targets have ended: each pidfd polls readable (a process that later gets the same
 * PID does not count, as it would with kill(pid, 0)); with --tree, so have their
 * descendants. */
static bool targets_gone(const struct cli *c)
{
	for (int i = 0; i < c->nr_pidfds; i++) {
		struct pollfd p = { .fd = c->pidfds[i], .events = POLLIN };

		if (poll(&p, 1, 0) != 1)
			return false;
	}
	return c->nr_pidfds > 0 && (!gp_opts.tree || !ptree__live(gp_run__ptree(c->run)));
}

/*
 * -p's PIDs, each held by a pidfd. A PID that is gone is a warning when others run (a
 * job's list goes stale while it is typed: the others are what the user wants traced)
 * and an error when none does.
 */
static int open_targets(struct cli *c, char *err, size_t len)
{
	int dead = -1;

	for (int i = 0; i < gp_opts.nr_pids; i++) {
		int fd = (int)syscall(SYS_pidfd_open, gp_opts.pids[i], 0);

		if (fd >= 0) {
			c->pidfds[c->nr_pidfds++] = fd;
			continue;
		}
		if (errno != ESRCH) {
			snprintf(err, len, "cannot watch PID %d: %s", gp_opts.pids[i], strerror(errno));
			return -errno;
		}
		dead = gp_opts.pids[i];
		memmove(&gp_opts.pids[i], &gp_opts.pids[i + 1], (size_t)(gp_opts.nr_pids - i - 1) * sizeof(int));
		gp_opts.nr_pids--;
		i--;
	}
	if (dead < 0)
		return 0;
	if (!gp_opts.nr_pids) {
		snprintf(err, len, "no process with PID %d", dead);
		return -ESRCH;
	}
	gp_log(GP_LOG_WARN, "no process with PID %d: tracing the others", dead);
	return 0;
}

/*
 * The libcuda files to probe. Node-wide: every one found, running processes' included.
 * A command, or -p's processes: the files they map or would load (the command's own
 * folders, LD_LIBRARY_PATH, ldconfig's cache, the usual folders), never another
 * process's copy (an unrelated process's libcuda would be probed, logged and counted);
 * with --tree or several PIDs, a process that has not loaded CUDA yet is no error, and
 * what a followed process loads later the library watcher probes (src/core/libwatch.c).
 */
static int resolve_libs(struct cli *c, char *err, size_t len)
{
	bool strict = gp_opts.nr_pids == 1 && !gp_opts.tree;
	int r = 0, own = 0;

	if (!(gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA))
		return 0;
	if (gp_opts.libcuda || (!gp_opts.nr_pids && !gp_opts.cmd))
		return target__resolve(gp_opts.libcuda, -1, gp_opts.verbose, &c->libs, err, len);
	if (gp_opts.cmd) {
		/* the command's own folders first (its RPATH/RUNPATH, its libraries'): a libcuda
		 * found only there is probed before it runs, not after its loader mapped it */
		own = target__resolve_command(gp_opts.cmd, gp_opts.verbose, &c->libs);
		if (own)
			gp_log(GP_LOG_DEBUG, "%s: %d libcuda file%s found through the program's own library folders",
			       gp_opts.cmd[0], own, own > 1 ? "s" : "");
	}
	for (int i = 0; i < gp_opts.nr_pids; i++) {
		r = target__resolve(NULL, gp_opts.pids[i], gp_opts.verbose, &c->libs, err, len);
		if (r && (strict || (r != -ENOENT && r != -ESRCH)))
			return r;
	}
	if (gp_opts.nr_pids && c->libs.n && !gp_opts.tree)
		return 0;
	r = target__resolve_installed(gp_opts.verbose, &c->libs, err, len);
	if (r == -ENOENT && c->libs.n) {
		err[0] = '\0';
		r = 0;
	} else if (r == -ENOENT) {
		/* the command or a followed process may load one from where only it knows
		 * (dlopen of a path, a wheel): the linker's hook reports it. --trace lists its
		 * functions from the files found now: its own error says so. */
		if (!gp_opts.trace)
			gp_log(GP_LOG_WARN, "no libcuda.so.1 found yet (%sLD_LIBRARY_PATH, ldconfig, the usual driver folders): probing each one the %s load%s (--libcuda PATH names one)",
			       gp_opts.cmd ? "the command's library folders, " : "the processes' mappings, ",
			       gp_opts.cmd ? "command" : "followed processes", gp_opts.cmd ? "s" : "");
		err[0] = '\0';
		r = 0;
	}
	return r;
}

/* The command, or the -p processes (with --tree their descendants), into the set. */
static int seed_targets(struct cli *c, char *err, size_t len)
{
	int r = 0;

	if (!gp_run__filters(c->run))
		return 0;
	if (gp_opts.cmd)
		return gp_run__follow(c->run, (uint32_t)c->child.pid, false, err, len);
	for (int i = 0; !r && i < gp_opts.nr_pids; i++)
		r = gp_run__follow(c->run, (uint32_t)gp_opts.pids[i], gp_opts.tree, err, len);
	return r;
}

/* Probes on each driver file, through its checked descriptor (a path the traced process
 * swaps meanwhile is not followed); one file that fails costs a line, not the others. */
static int attach_libs(struct cli *c, char *err, size_t len)
{
	char why[1024], label[GP_PATH_MAX + 64];
	int r = 0, ok = 0, before = attach_set__count(gp_run__links(c->run));

	for (int i = 0; i < c->libs.n; i++) {
		r = gp_run__attach_lib(c->run, GP_LIB_CUDA, c->libs.libs[i].fd_path, why, sizeof(why));
		if (!r) {
			ok++;
			continue;
		}
		snprintf(err, len, "%.*s: %.*s", 500, libset__label(&c->libs.libs[i], label, sizeof(label)), 500, why);
		if (c->libs.n > 1)
			gp_log(GP_LOG_WARN, "not probing %s", err);
	}
	c->lib_probes = attach_set__count(gp_run__links(c->run)) - before;
	return ok || !c->libs.n ? 0 : r;
}

/* gp_run__begin's attach step: the processes to follow, then the libcuda files found. */
static int attach_own(void *ctx, struct gp_run *run, char *err, size_t len)
{
	struct cli *c = ctx;
	int r = seed_targets(c, err, len);

	(void)run;
	return r ? r : attach_libs(c, err, len);
}

/*
 * Where the reports go. With a command, as strace, ltrace and perf trace do: to stderr
 * (or -o FILE), and the command keeps its stdout and stderr — `gpuprobe ... -- cmd > file`
 * leaves file to the command. Without one (-p, node-wide) there is no program output to
 * share: stdout, as bcc's tools. -o - is stdout in both cases (beside a command's output,
 * as asked). --trace - wants stdout for the trace alone: the reports go to stderr, and a
 * command's stdout too (a Chrome document or JSON Lines must parse). Reports on stderr are
 * written through a buffered stream of their own, flushed after each report, so that a
 * report is a few large writes and gpuprobe's own lines never fall inside one.
 */
static int open_reports(struct cli *c, char *err, size_t len)
{
	bool trace_stdout = gp_opts.trace && !strcmp(gp_opts.trace, "-");
	int fd;

	if (output_path) {
		c->out = outfile__open(output_path);
		if (!c->out) {
			snprintf(err, len, "-o %s: %s", output_path, strerror(errno));
			return -errno;
		}
	} else if (gp_opts.cmd || trace_stdout) {
		fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		c->out = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!c->out) {
			snprintf(err, len, "cannot write the reports to stderr: %s", strerror(errno));
			if (fd >= 0)
				close(fd);
			return -errno;
		}
		c->reports_stderr = true;
	} else {
		c->out = stdout;
	}
	if (gp_opts.cmd && trace_stdout)
		c->cmd_fd[0] = STDERR_FILENO;
	/* the reports name what the traced processes chose: no control byte reaches out */
	c->safe = gp_text__safe_stream(c->out, false);
	if (!c->safe) {
		snprintf(err, len, "cannot write the reports: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* The command, held before its exec, with cmd_fd as its stdout and stderr (fds 1 and 2
 * are swapped around the fork: the child keeps what it inherited). */
static int spawn_command(struct cli *c)
{
	int saved[2] = { -1, -1 }, r = 0;

	fflush(stdout);
	fflush(stderr);
	for (int i = 0; i < 2 && !r; i++) {
		if (c->cmd_fd[i] < 0)
			continue;
		saved[i] = fcntl(STDOUT_FILENO + i, F_DUPFD_CLOEXEC, 3);
		if (saved[i] < 0 || dup2(c->cmd_fd[i], STDOUT_FILENO + i) < 0)
			r = -errno;
	}
	if (!r)
		r = target__spawn(gp_opts.cmd, &c->child);
	for (int i = 0; i < 2; i++) {
		if (saved[i] < 0)
			continue;
		dup2(saved[i], STDOUT_FILENO + i);
		close(saved[i]);
	}
	return r;
}

/* Opens, attaches and starts every mode; the command, if any, is held before exec so that
 * it is followed from its first instruction. */
static int setup(struct cli *c, char *err, size_t len)
{
	int r = open_targets(c, err, len);

	if (!r)
		r = resolve_libs(c, err, len);
	if (!r && gp_opts.cmd) /* what the command must inherit (--gpu-time's channel) */
		r = gp_run__prepare_command(gp_opts.modes, err, len);
	if (r)
		return r;
	if (gp_opts.cmd) {
		r = spawn_command(c);
		if (r)
			snprintf(err, len, "cannot start %s: %s", gp_opts.cmd[0], strerror(-r));
	}
	if (r)
		return r;
	c->run = gp_run__new(&gp_opts, err, len);
	if (!c->run)
		return -ENOMEM;
	gp_run__set_fe(c->run, c);
	/* the consumer yields to a stop signal after the record it is handling (finish
	 * reads what is left) */
	gp_events__stop_on(gp_run__events(c->run), &stop_signal);
	gp_run__set_out(c->run, c->safe ? c->safe : c->out); /* top: its own view, stderr */
	gp_run__set_exit_report(c->run, exit_report);
	gp_run__set_libs(c->run, GP_LIB_CUDA, &c->libs);
	gp_run__set_trace_writer(c->run, trace_writer__sink);
	cli_targets__choose(c->run, c->child.pid);
	/* then libnccl, and the libraries the processes load later */
	return gp_run__begin(c->run, &(struct gp_run_begin){ .attach = attach_own, .ctx = c,
					.watch_kinds = GP_NEED_LIBCUDA | GP_NEED_LIBNCCL }, err, len);
}

/* Seconds since pid started (/proc/PID/stat's starttime against CLOCK_BOOTTIME); < 0 unknown. */
static double process_age(int pid)
{
	char buf[1024], *p;
	unsigned long long start = 0;
	struct timespec now;

	if (gp_proc_stat((uint32_t)pid, buf, sizeof(buf), &p))
		return -1;
	/* field 22, starttime: 19 spaces after the state (field 3) */
	for (int field = 3; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1 || clock_gettime(CLOCK_BOOTTIME, &now))
		return -1;
	return (double)now.tv_sec + now.tv_nsec / 1e9 - (double)start / (double)sysconf(_SC_CLK_TCK);
}

/* -p: each process ran before the probes; its reports say for how long. */
static void note_attached(struct cli *c)
{
	uint64_t now = gp_mono_ns();

	for (int i = 0; i < gp_opts.nr_pids; i++) {
		double age = process_age(gp_opts.pids[i]);
		uint64_t age_ns = age > 0 ? (uint64_t)(age * 1e9) : 0;

		gp_run__note_unseen_start(c->run, (uint32_t)gp_opts.pids[i], age_ns && age_ns < now ? now - age_ns : 0, now);
	}
}

static void describe_targets(const struct cli *c, char *who, size_t len)
{
	size_t off = 0;

	if (gp_opts.cmd) {
		snprintf(who, len, c->run && gp_run__opts(c->run)->frontend == GP_FE_TOP ? "PID %d and its descendants" :
			 "PID %d and the processes it starts", c->child.pid);
		return;
	}
	for (int i = 0; i < gp_opts.nr_pids && off < len; i++)
		off += (size_t)snprintf(who + off, len - off, "%s%d", i ? "," : gp_opts.nr_pids > 1 ? "PIDs " : "PID ",
					gp_opts.pids[i]);
	if (gp_opts.nr_pids && gp_opts.tree && off < len)
		snprintf(who + off, len - off, gp_opts.nr_pids > 1 ? " and their descendants" : " and its descendants");
	if (gp_opts.nr_pids)
		return;
	if (gp_opts.comm && gp_opts.cgroup)
		snprintf(who, len, "processes named %s or in cgroup %s", gp_opts.comm, gp_opts.cgroup);
	else if (gp_opts.comm)
		snprintf(who, len, "processes named %s", gp_opts.comm);
	else if (gp_opts.cgroup)
		snprintf(who, len, "processes in cgroup %s", gp_opts.cgroup);
	else
		snprintf(who, len, "every CUDA process");
}

/* Files refused a library slot (src/lib/target.h: one user's copies take their share),
 * each reason counted: one line. */
static void skipped_libs(const struct cli *c)
{
	uint64_t n = 0;

	for (int i = 0; i < GP_SLOT__COUNT; i++)
		n += c->libs.refused[i];
	if (n)
		gp_log(GP_LOG_WARN, "warning: %llu libcuda files not probed, refused a library slot "
				    "(owner_share %llu, users_share %llu, table_full %llu)", (unsigned long long)n,
			(unsigned long long)c->libs.refused[GP_SLOT_OWNER_SHARE],
			(unsigned long long)c->libs.refused[GP_SLOT_USERS_SHARE],
			(unsigned long long)c->libs.refused[GP_SLOT_FULL]);
}

/* One line on stderr, so people and scripts know the probes are in, and where: those on the
 * libcuda files (as many as a file found later gets: its "probing libcuda" line), and in
 * all (with libnccl's and those that follow the processes: their exits, forks, execs and
 * library loads). */
static void announce(const struct cli *c)
{
	char who[512], where[1024] = "", label[GP_PATH_MAX + 64], all[32] = "";
	int total = attach_set__count(gp_run__links(c->run));
	size_t off = 0;

	for (int i = 0; i < c->libs.n && off < sizeof(where); i++)
		off += (size_t)snprintf(where + off, sizeof(where) - off, "%s%s", i ? ", " : "",
					libset__label(&c->libs.libs[i], label, sizeof(label)));
	if (!c->libs.n)
		snprintf(where, sizeof(where), "%s", (gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA) ?
			 "no libcuda yet (each one the processes load)" : "the ioctl syscalls");
	describe_targets(c, who, sizeof(who));
	gp_sanitize_str(where); /* the paths the processes' maps name */
	if (c->libs.n && c->lib_probes != total)
		snprintf(all, sizeof(all), " (%d in all)", total);
	fprintf(stderr, "gpuprobe: tracing %s: %d probes on %s%s%s\n", who, c->libs.n ? c->lib_probes : total,
		where, all, gp_opts.cmd ? "" : "; Ctrl-C to end");
	skipped_libs(c);
}

/*
 * An interval report (--interval, SIGUSR1), then the records it listed as exited go (the
 * target's stays until the final report): processes gone without an exit record are
 * marked exited first (a reap with cutoff 0 drains and sweeps, releasing nothing), and a
 * process whose exit is read after the report stays for the next one.
 */
static void sum_hits(void *ctx, const struct gp_snap_pid *p);

/* A pipe or socket: a write to one whose reader went away fails with EPIPE and SIGPIPE. */
static bool is_pipe(FILE *f)
{
	struct stat st;

	return f && !fstat(fileno(f), &st) && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

/* A report that could not be written: the reason, kept as it was (errno moves on: the
 * report reads /proc after the failed write; the stream keeps only that it failed). A
 * pipe that failed after a SIGPIPE failed because its reader went away. */
static void note_write_error(struct cli *c)
{
	if (((c->safe && ferror(c->safe)) || ferror(c->out)) && !c->out_errno)
		c->out_errno = pipe_signal && is_pipe(c->out) ? EPIPE : errno ? errno : EIO;
}

static void interval_report(struct cli *c)
{
	report_signal = 0;
	gp_run__reap(c->run, 0, gp_run__keep_pid(c->run));
	if (stop_signal) /* it came during the read: the final report says it all, at once */
		return;
	gp_report__run(c->run, GP_SNAP_INTERVAL, 0);
	note_write_error(c);
	/* the final report's "no CUDA call seen" must not forget the processes reaped here */
	gp_hits__run(c->run, sum_hits, &c->hits_reaped);
	gp_run__reap(c->run, GP_REAP_SEQ(proctab__exits()), gp_run__keep_pid(c->run));
}

/* The poll's wait: at most wait_ms, and no later than the first of the deadlines that
 * are set (an interval report, --duration's end, a counter sample), so that each is met
 * on time rather than up to a wait late. */
static int wait_until(int wait_ms, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t now = gp_mono_ns(), due = UINT64_MAX;

	if (a && a < due)
		due = a;
	if (b && b < due)
		due = b;
	if (c && c < due)
		due = c;
	if (due <= now)
		return 0;
	if (due - now < (uint64_t)wait_ms * 1000000ULL)
		return (int)((due - now + 999999) / 1000000);
	return wait_ms;
}

/* Until the command or the target ends, a signal, or --duration; reports on --interval. */
static int loop(struct cli *c, char *err, size_t len)
{
	uint64_t start = gp_mono_ns(), next = 0, end = 0, sample = 0;
	int r, wait_ms = 100;

	if (gp_opts.interval > 0)
		next = start + gp_seconds_to_ns(gp_opts.interval);
	if (gp_opts.trace && gp_opts.trace_counters > 0) {
		sample = start + gp_seconds_to_ns(gp_opts.trace_counters);
		if (gp_opts.trace_counters < 0.1) /* the poll must not outwait a sample */
			wait_ms = gp_opts.trace_counters < 0.001 ? 1 : (int)(gp_opts.trace_counters * 1000);
	}
	if (gp_opts.duration > 0)
		end = start + gp_seconds_to_ns(gp_opts.duration);
	for (;;) {
		uint64_t t;

		if (stop_signal)
			break;
		r = gp_events__poll(gp_run__events(c->run), wait_until(wait_ms, next, end, sample));
		if (r < 0) {
			snprintf(err, len, "reading the ring buffer: %s", strerror(-r));
			return r;
		}
		gp_run__tick(c->run);
		if (gp_opts.cmd && waitpid(c->child.pid, &c->status, WNOHANG) == c->child.pid) {
			c->child_done = true;
			return 0;
		}
		if (targets_gone(c))
			return 0;
		if (stop_signal)
			break;
		t = gp_mono_ns();
		if (end && t >= end)
			return 0;
		if (sample && t >= sample) {
			gp_run__sample(c->run);
			/* a late loop skips samples rather than writing a burst of them */
			while (sample <= t)
				sample += gp_seconds_to_ns(gp_opts.trace_counters);
		}
		if (report_signal || (next && t >= next)) {
			interval_report(c);
			if (next && t >= next)
				next += gp_seconds_to_ns(gp_opts.interval);
			/* a late loop skips reports rather than writing a burst of them */
			while (next && next <= t)
				next += gp_seconds_to_ns(gp_opts.interval);
		}
	}
	/* a terminal's Ctrl-C or hangup reached the command too; a SIGTERM did not */
	if (gp_opts.cmd && c->released && stop_signal == SIGTERM)
		kill(c->child.pid, SIGTERM);
	return 0;
}

/* How long a process is seen gone before a sweep ends it (src/lib/proctab.h): its last
 * records may wait behind one that another CPU is still writing. */
#define SWEEP_GRACE_NS 500000000ULL

/*
 * The final read: once the run has ended, no probe writes (bpf/common.bpf.h, gp_ended)
 * but a return whose entry came before the end, so what the buffers hold is finite and is
 * read up before the final report, however slow the reader: a report made after a bounded
 * read left a slow reader's last records out (a leak report of 40 allocations and 35 frees
 * read 20 ms a record: 22 frees, no drop said). FINAL_READ_MAX_S is a safety net against a
 * writer that does not stop: records read after the report are then counted in a warning
 * (otherwise they are calls in flight at the report's moment, said under -v).
 */
#define FINAL_SLICE_MS 200
#define FINAL_READ_MAX_S 120

struct hits {
	struct gp_snap_pid *v;
	size_t n, cap;
};

static void add_hits(void *ctx, const struct gp_snap_pid *p)
{
	struct hits *h = ctx;

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct gp_snap_pid *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return;
		h->v = v;
		h->cap = cap;
	}
	h->v[h->n++] = *p;
}

static void overhead_json(FILE *f, const struct hits *h, double cost, double warm)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	json_object_object_add(o, "mode", json_object_new_string("overhead"));
	json_object_object_add(o, "probe_hit_cost_s", cost >= 0 ? json_object_new_double(cost) : NULL);
	json_object_object_add(o, "probe_hit_warm_cost_s", cost >= 0 ? json_object_new_double(warm) : NULL);
	for (size_t i = 0; i < h->n; i++) {
		json_object *p = json_object_new_object();

		json_object_object_add(p, "pid", json_object_new_int64(h->v[i].pid));
		json_object_object_add(p, "comm", json_object_new_string(h->v[i].comm));
		json_object_object_add(p, "probe_hits", json_object_new_uint64(h->v[i].probe_hits));
		json_object_object_add(p, "probe_seconds_estimate",
				       cost >= 0 ? json_object_new_double((double)h->v[i].probe_hits * cost) : NULL);
		json_object_array_add(arr, p);
	}
	json_object_object_add(o, "processes", arr);
	gp_json__print(f, o);
}

/*
 * gpuprobe's own price: the probe hits the modes counted per process times the cost of
 * one hit, calibrated on this machine (~0.1-0.2 s): with a command after the run (so the
 * command does not wait for it), else before the run starts (calibrate_early: so the
 * final report does not wait for it after a signal). An estimate, and said to be one.
 */
/* The share of the traced time below which the overhead footer says nothing worth a line
 * (text without -v; JSON always has it): the probes cost a process less than 1 % of it. */
#define OVERHEAD_SMALL 0.01

static void calibrate_early(struct cli *c)
{
	if (gp_opts.cmd || stop_signal || !gp_run__counts_hits(c->run))
		return;
	c->cost_r = calibrate__probe_costs(GP_CALIBRATE_CALLS, &c->cost);
	c->cost_known = true;
}

static void overhead_report(struct cli *c)
{
	struct gp_run *run = c->run;
	struct gp_probe_cost pc = c->cost;
	int r = c->cost_known ? c->cost_r : calibrate__probe_costs(GP_CALIBRATE_CALLS, &pc);
	double cost = r ? r : pc.cold, traced = (double)(gp_mono_ns() - gp_run__start_ns(run)) / 1e9, most = 0;
	struct hits h = { 0 };

	if (r)
		gp_log(GP_LOG_DEBUG, "cannot calibrate the probe cost: %s", strerror(-r));
	gp_hits__run(run, add_hits, &h);
	for (size_t i = 0; cost >= 0 && i < h.n; i++)
		if ((double)h.v[i].probe_hits * cost > most)
			most = (double)h.v[i].probe_hits * cost;
	if (gp_run__opts(run)->json) {
		overhead_json(gp_run__out(run), &h, cost, pc.warm);
	} else if (h.n && (gp_run__opts(run)->verbose || cost < 0 || most >= OVERHEAD_SMALL * traced)) {
		fprintf(gp_run__out(run),
			"gpuprobe overhead (estimate): one probe hit costs %s on this machine (%s in a tight loop; calibrated when the run %s)\n",
			gp_text__duration(cost).s, gp_text__duration(r ? -1 : pc.warm).s, c->cost_known ? "started" : "ended");
		for (size_t i = 0; i < h.n; i++) {
			double t = cost >= 0 ? (double)h.v[i].probe_hits * cost : -1;

			fprintf(gp_run__out(run), "  PID %u (%s): %s, ~%s in probes", h.v[i].pid, h.v[i].comm,
				gp_text__n(h.v[i].probe_hits, "probe hit", "probe hits").s, gp_text__duration(t).s);
			if (t >= 0 && traced > 0)
				fprintf(gp_run__out(run), " (%.2f%% of the %s traced)", 100 * t / traced, gp_text__duration(traced).s);
			fputc('\n', gp_run__out(run));
		}
		fflush(gp_run__out(run));
	}
	free(h.v);
}

static void sum_hits(void *ctx, const struct gp_snap_pid *p)
{
	*(uint64_t *)ctx += p->probe_hits;
}

/* "memleak", "memleak and cudatrace", "memleak, cudatrace and bandwidth" */
static void mode_words(struct gp_run *run, char *buf, size_t len)
{
	char names[128], *save = NULL, *tok, *next;
	size_t off = 0;
	int i = 0;

	gp_run__mode_names(run, names, sizeof(names));
	buf[0] = '\0';
	for (tok = strtok_r(names, ",", &save); tok && off < len; tok = next, i++) {
		next = strtok_r(NULL, ",", &save);
		off += (size_t)snprintf(buf + off, len - off, "%s%s", !i ? "" : next ? ", " : " and ", tok);
	}
}

/*
 * Why a run's reports may be empty, rather than leaving "0 processes" to be read as "no
 * leak": the probes on libcuda never fired (and the likely reason), or they did but no
 * process made a call of the kind a mode follows. 0 when the probes fired; the reason
 * in why otherwise.
 */
static int no_calls_reason(struct cli *c, char *why, size_t len)
{
	struct libwatch_stats st;
	uint64_t hits = 0;
	char modes[128];
	int files;
	const char *perm = geteuid() && !gp_has_cap(CAP_SYS_PTRACE) && !gp_opts.cmd ?
			   "; without CAP_SYS_PTRACE other users' processes cannot be looked at" : "";

	if (!(gp_run__needs(gp_opts.modes) & GP_NEED_LIBCUDA) || !gp_run__counts_hits(c->run))
		return 0;
	gp_hits__run(c->run, sum_hits, &hits);
	if (hits || c->hits_reaped)
		return 0;
	libwatch__stats(gp_run__watch(c->run), &st);
	files = c->libs.n + (int)st.files[GP_LIB_CUDA];
	mode_words(c->run, modes, sizeof(modes));
	if (gp_run__unseen_total(c->run))
		snprintf(why, len, "no CUDA call seen since the probes went in: %llu process%s ran before %s libcuda was probed, and %s calls before that were not seen",
			 (unsigned long long)gp_run__unseen_total(c->run), gp_run__unseen_total(c->run) == 1 ? "" : "es",
			 gp_run__unseen_total(c->run) == 1 ? "its" : "their", gp_run__unseen_total(c->run) == 1 ? "its" : "their");
	else if (!files)
		snprintf(why, len, "no CUDA call seen: no libcuda was probed (no traced process mapped one: not a CUDA program, or one that never loaded the driver? --libcuda PATH names one%s)",
			 perm);
	else
		snprintf(why, len, "no CUDA call seen: %d libcuda file%s probed, none called (the processes made none of the calls %s follow%s, or no CUDA call at all, or called a libcuda copy gpuprobe did not find: -v lists the files, --libcuda PATH names one%s)",
			 files, files == 1 ? "" : "s", modes, strstr(modes, " and ") ? "" : "s", perm);
	return 1;
}

/* Whether two streams write to one file (-o - on the terminal stderr is on too): a line
 * the report holds need not be said twice there. */
static bool same_file(FILE *a, FILE *b)
{
	struct stat x, y;

	return a && b && !fstat(fileno(a), &x) && !fstat(fileno(b), &y) && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

/* The final reports' hint, and one line on stderr for those who read JSON or a file. */
static void no_calls_line(struct cli *c, char *why, size_t len)
{
	if (!no_calls_reason(c, why, len)) {
		snprintf(why, len, "the traced processes called the driver, but none made a call this mode follows");
		gp_run__set_empty_hint(c->run, why);
		return;
	}
	gp_run__set_empty_hint(c->run, why);
	if (gp_opts.json || (!c->reports_stderr && !same_file(c->out, stderr)))
		fprintf(stderr, "gpuprobe: %s\n", why);
}

/* Reads the buffers up after the run's end (FINAL_SLICE_MS at a time); false when it gave
 * up at FINAL_READ_MAX_S with records left. */
static bool final_read(struct gp_events *ev)
{
	uint64_t start = gp_mono_ns(), said = 0;

	for (;;) {
		uint64_t s;

		gp_events__drain_for(ev, FINAL_SLICE_MS);
		if (!gp_events__more(ev))
			return true;
		s = (gp_mono_ns() - start) / 1000000000ULL;
		if (s >= FINAL_READ_MAX_S)
			return false;
		if (s >= said + 5) {
			said = s;
			gp_log(GP_LOG_INFO, "reading the last records before the final report (%llu s so far)",
			       (unsigned long long)s);
		}
	}
}

/* The end: last records, the final reports, probes out, the modes' files. */
static int finish(struct cli *c, char *err, size_t len)
{
	char why[512];
	bool whole;
	int late;

	/* the exit tracepoint ran before the parent could reap: its record is in the buffer.
	 * The run's end comes first: every probe returns at once from then (bpf/common.bpf.h,
	 * gp_ended), so that what is left is a bounded read however fast the processes still
	 * call (a return whose entry came before the end still writes: hence a bound);
	 * processes gone without an exit record are marked exited. The reports describe this
	 * moment and come before the probes' removal, which takes seconds without uprobe_multi
	 * links (~0.1 s a perf-event uprobe: 20 s for 152 of them, before, between a SIGINT
	 * and the final report). */
	gp_run__end(c->run);
	gp_events__stop_on(gp_run__events(c->run), NULL);
	whole = final_read(gp_run__events(c->run));
	/* -p's targets and the command that have ended, by now at the latest: a sampled
	 * estimate must not run on past them (their exit records, where they came, said
	 * when exactly) */
	for (int i = 0; i < c->nr_pidfds && i < gp_opts.nr_pids; i++) {
		struct pollfd p = { .fd = c->pidfds[i], .events = POLLIN };

		if (poll(&p, 1, 0) == 1)
			gp_run__exited(c->run, (uint32_t)gp_opts.pids[i], gp_mono_ns());
	}
	if (gp_opts.cmd && c->child_done && c->child.pid > 0)
		gp_run__exited(c->run, (uint32_t)c->child.pid, gp_mono_ns());
	/* the budget's last period, accounted until now: the report holds its calls */
	gp_run__stop_budget(c->run);
	proctab__set_sweep_grace(0);
	gp_run__reap(c->run, 0, gp_run__keep_pid(c->run));
	no_calls_line(c, why, sizeof(why));
	gp_report__run(c->run, GP_SNAP_FINAL, 0);
	note_write_error(c);
	gp_run__set_empty_hint(c->run, NULL);
	if (gp_run__counts_hits(c->run))
		overhead_report(c);
	gp_run__detach(c->run);
	/* probes are gone: whatever is still in the buffers is the last of the timeline */
	late = gp_events__drain_for(gp_run__events(c->run), 0);
	/* read up before the report, what comes now is calls that were in flight at its moment
	 * (returns whose entry came before the end: the report describes that moment, and the
	 * trace still gets them); a read given up at its safety net left records out */
	if (late > 0 && whole)
		gp_log(GP_LOG_DEBUG, "%d records read after the final report (calls in flight when it was made)", late);
	else if (late > 0)
		gp_log(GP_LOG_WARN, "warning: %d records read after the final report, not in it: the reader was that far behind",
		       late);
	return gp_run__finish(c->run, err, len);
}

static int exit_code(struct cli *c, int r)
{
	if (gp_opts.cmd && c->released && c->child.pid > 0) {
		if (!c->child_done && waitpid(c->child.pid, &c->status, 0) == c->child.pid)
			c->child_done = true;
		c->child.pid = -1;
		if (c->child_done)
			return WIFEXITED(c->status) ? WEXITSTATUS(c->status) :
			       WIFSIGNALED(c->status) ? 128 + WTERMSIG(c->status) : 1;
	}
	return r ? 1 : 0;
}

/* Lets the held command exec: 0, or -127 with err set when it could not (reaped). */
static int release_command(struct cli *c, char *err, size_t len)
{
	int r;

	if (!gp_opts.cmd)
		return 0;
	r = target__release(&c->child);
	if (r) {
		snprintf(err, len, "cannot run %s: %s", gp_opts.cmd[0], strerror(-r));
		waitpid(c->child.pid, NULL, 0);
		c->child.pid = -1;
		return -127;
	}
	c->released = true;
	return 0;
}

static int trace_main(int argc, char **argv)
{
	struct gp_cmdline cl = { .name = "gpuprobe", .frontend = GP_FE_CLI, .modes = true,
				 .args_doc = "[-- COMMAND [ARGS...]]", .doc = doc, .epilog = epilog,
				 .positionals = GP_POS_COMMAND, .extra = cli_options };
	struct cli c = { .child = { .pid = -1, .go_fd = -1, .err_fd = -1 }, .cmd_fd = { -1, -1 }, .log_fd = -1 };
	char err[1024] = "";
	int r = gp_options__parse(&cl, argc, argv), code, lost = 0;
	bool piped;

	if (r)
		return r == GP_PARSED_EXIT ? 0 : r;
	r = cli_targets__usage(&cl);
	if (r)
		return r;
	if (output_path && gp_opts.trace && !strcmp(output_path, "-") && !strcmp(gp_opts.trace, "-"))
		return gp_options__error(&cl, "-o - and --trace - both want stdout: give one of them a file");
	libbpf_set_print(libbpf_print_fn);
	gp_log_setup(false, gp_opts.verbose);
	catch_signals(true);
	proctab__set_sweep_grace(SWEEP_GRACE_NS);
	r = preflight(err, sizeof(err));
	if (!r)
		r = open_reports(&c, err, sizeof(err));
	if (!r)
		r = setup(&c, err, sizeof(err));
	if (r)
		goto cleanup;
	calibrate_early(&c);
	announce(&c);
	if (getenv("GPUPROBE_TEST_START_MS")) /* tests: a signal during the start-up */
		usleep((useconds_t)atoi(getenv("GPUPROBE_TEST_START_MS")) * 1000);
	/* a signal during the start-up ends the run now: a held command never runs */
	note_attached(&c);
	r = stop_signal ? 0 : release_command(&c, err, sizeof(err));
	if (r)
		goto cleanup;
	if (getenv("GPUPROBE_TEST_STALL_MS")) /* tests: let the ring buffer overflow */
		usleep((useconds_t)atoi(getenv("GPUPROBE_TEST_STALL_MS")) * 1000);
	r = loop(&c, err, sizeof(err));
	if (!r)
		r = finish(&c, err, sizeof(err));
	/* --trace - whose reader went away (stdio tells an earlier failed write as EIO) */
	if ((r == -EPIPE || r == -EIO) && stop_signal == SIGPIPE && gp_opts.trace && !strcmp(gp_opts.trace, "-")) {
		r = 0;
		err[0] = '\0';
	}
cleanup:
	gp_run__free(c.run);
	/* SIGPIPE: the reader of the reports went away; that stream's loss is no error */
	piped = is_pipe(c.out);
	if (c.safe) { /* its last bytes to out; a failed write shows as out's error */
		fclose(c.safe);
		c.safe = NULL;
		note_write_error(&c);
	}
	if (c.out && c.out != stderr && (lost = outfile__close(c.out)) == -EIO && c.out_errno)
		lost = -c.out_errno;
	if (lost && pipe_signal && piped) /* stdio's errno may be stale by the close */
		lost = -EPIPE;
	if (lost == -EPIPE && stop_signal == SIGPIPE)
		lost = 0;
	if (lost && !r) {
		/* a full disk or a closed pipe lost reports: say so, and fail even when the
		 * command succeeded */
		r = lost;
		snprintf(err, sizeof(err), "writing the reports to %s: %s",
			 output_path ? output_path : c.reports_stderr ? "stderr" : "stdout", strerror(-lost));
	}
	if (r && err[0])
		fprintf(stderr, "gpuprobe: %s\n", gp_sanitize_str(err)); /* may name a library path */
	libset__clear(&c.libs);
	for (int i = 0; i < c.nr_pidfds; i++)
		close(c.pidfds[i]);
	/* a command that ran is waited for; one held before its exec is killed */
	code = r == -127 ? 127 : exit_code(&c, r);
	if (r && r != -127 && !code) /* an output lost after the command succeeded */
		code = 1;
	target__abort(&c.child);
	if (!code && !lost && stop_signal == SIGPIPE && !c.released)
		code = 128 + SIGPIPE; /* as the default action's, for a pipeline's status */
	return lost && !code ? 1 : code;
}

/* gpuprobe convert --chrome IN.jsonl > OUT.json */
static int convert_main(int argc, char **argv)
{
	static bool chrome;
	static const struct gp_option opts[] = {
		{ "chrome", 0, NULL, "Write the Chrome trace event format (Perfetto, chrome://tracing)",
		  GP_OPT_SWITCH, &chrome, .frontends = GP_FE_CLI },
		{},
	};
	struct gp_cmdline cl = { .name = "gpuprobe convert", .args_doc = "--chrome TRACE.jsonl > TRACE.json",
				 .doc = "Converts a --trace JSON Lines file to another format, on stdout.\n",
				 .positionals = GP_POS_FILES, .min_args = 1, .max_args = 1, .extra = opts };
	char err[512];
	int r = gp_options__parse(&cl, argc, argv);
	FILE *out;

	if (r)
		return r == GP_PARSED_EXIT ? 0 : r;
	if (!chrome)
		return gp_options__error(&cl, "say the format: --chrome");
	/* the trace names what the traced processes chose, and any file may be given */
	out = gp_text__safe_stream(stdout, false);
	if (!out) {
		fprintf(stderr, "gpuprobe: convert: stdout: %s\n", strerror(errno));
		return 1;
	}
	r = trace__convert_chrome(cl.args[0], out, err, sizeof(err));
	if (fclose(out) && !r) {
		r = -EIO;
		snprintf(err, sizeof(err), "writing the output: %s", strerror(EIO));
	}
	if (r) {
		fprintf(stderr, "gpuprobe: convert: %s\n", gp_sanitize_str(err));
		return 1;
	}
	return 0;
}

static const char top_doc[] =
	"A live view of the traced processes, refreshed every second: launches/s and the\n"
	"busiest kernels, outstanding GPU memory and its growth, copy bandwidth per direction\n"
	"and GPU, the probes' cost, what was dropped; with NVML, each process's SM utilization\n"
	"and each GPU's utilization, memory, power, temperature and throttling. Traces COMMAND,\n"
	"running processes (-p) or every CUDA process on the node, with every mode that offers\n"
	"counters.\n";

static const char top_epilog[] =
	"KEYS: q quits; < and > (or left, right) choose the sort column; r reverses it;\n"
	"up and down (or k, j) select the process whose kernels and copies are shown.\n"
	"S is the process's state as ps shows it (R, S, D...); X: it has exited, and its row\n"
	"(dimmed) keeps its final figures (memory it held at exit, launches, copies) for\n"
	"--keep seconds (default 10); the command's own stays to the end. LAUNCH/s and\n"
	"launches are kernel launch calls, as --cudatrace counts them; graph launches\n"
	"(cuGraphLaunch) are counted apart, as there.\n"
	"SM% is NVML's (libnvidia-ml.so.1, read by default; --no-nvml leaves it out): the\n"
	"process's SM utilization, summed over its GPUs; '-' where NVML gives none (MIG), never\n"
	"0. A line per GPU under the title: utilization, memory, power, temperature, throttle.\n"
	"When the command or every -p process has ended, the screen keeps the final figures\n"
	"until q.\n"
	"COMMAND's stdout and stderr go to --command-log FILE (default /dev/null): the\n"
	"terminal is the view's. --batch prints the frames' data on stdout, like top -b:\n"
	"each frame starts with its title line and ends with an empty line, every process\n"
	"has one row (its columns at fixed places) and its detail, and no keys are shown.\n"
	"\n"
	"EXAMPLES:\n"
	"  gpuprobe top                             # every CUDA process on the node\n"
	"  gpuprobe top -p 4242 --tree              # a job and its workers\n"
	"  gpuprobe top --comm python3              # processes named python3\n"
	"  gpuprobe top --command-log train.log -- python3 train.py\n"
	"  gpuprobe top --batch -n 3 --sort memory  # three text frames, for logs and scripts\n";

/* top's ends: the command or every -p target ended (the last figures stay on screen) */
static bool top_ended(void *ctx)
{
	struct cli *c = ctx;

	if (gp_opts.cmd && !c->child_done && c->child.pid > 0 &&
	    waitpid(c->child.pid, &c->status, WNOHANG) == c->child.pid)
		c->child_done = true;
	return (gp_opts.cmd && c->child_done) || targets_gone(c);
}

static bool top_stop(void *ctx)
{
	(void)ctx;
	return stop_signal != 0;
}

/* Every mode with counters that runs in the CLI: the table says which. */
static bool top_nccl;

/* The modes with counters; NCCL's (its probes on libnccl, hangs and stragglers) with --nccl. */
static uint64_t counter_modes(void)
{
	uint64_t m = 0;

	for (int i = 0; gp_modes[i]; i++)
		if (gp_modes[i]->counters && (gp_modes[i]->frontends & GP_FE_CLI) &&
		    (top_nccl || !(gp_modes[i]->needs & GP_NEED_LIBNCCL)))
			m |= 1ULL << i;
	return m;
}

static int top_log(struct cli *c, const char *path, char *err, size_t len)
{
	FILE *f;

	if (!gp_opts.cmd)
		return 0;
	f = outfile__open(path ? path : "/dev/null");
	if (!f || f == stdout) {
		snprintf(err, len, "--command-log %s: %s", path, f ? "the terminal is the view's" : strerror(errno));
		if (f)
			return -EINVAL;
		return -errno;
	}
	/* the fd outlives the FILE: the command writes to it */
	c->log_fd = fcntl(fileno(f), F_DUPFD_CLOEXEC, 3);
	fclose(f);
	if (c->log_fd < 0) {
		snprintf(err, len, "--command-log: %s", strerror(errno));
		return -errno;
	}
	c->cmd_fd[0] = c->cmd_fd[1] = c->log_fd;
	return 0;
}

static struct top_opts top_o = { .sort = TOP_LAUNCHES, .width = 80, .keep = 10 };
static const char *top_cmd_log;

static const struct gp_option top_options[] = {
	{ "nccl", 0, NULL, "NCCL too: a line naming a rank the others wait for, or one with calls in flight and no completion for 1 s or more",
	  GP_OPT_SWITCH, &top_nccl, .frontends = GP_FE_TOP, .group = GP_GRP_OUTPUT },
	{ "libnccl", 0, "PATH", "With --nccl: probe this libnccl.so.2 (else those found, as gpuprobe --nccl finds them)",
	  GP_OPT_STRING, &gp_opts.libnccl, .frontends = GP_FE_TOP, .group = GP_GRP_TARGET },
	{ "interval", 'i', "SECONDS", "Refresh the view every SECONDS (default 1)", GP_OPT_SECONDS, &gp_opts.interval,
	  0.01, GP_MAX_SECONDS, .frontends = GP_FE_TOP, .group = GP_GRP_OUTPUT },
	{ "batch", 'b', NULL, "Print a text frame every interval instead of drawing (like top -b)",
	  GP_OPT_SWITCH, &top_o.batch, .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "iterations", 'n', "N", "--batch: stop after N frames", GP_OPT_U64, &top_o.iterations, 1, 1e9,
	  .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "sort", 's', TOP_SORT_CHOICES, "Sort by this column (default launches: launches/s)", GP_OPT_CHOICE,
	  &top_o.sort, .choices = TOP_SORT_CHOICES, .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "reverse", 'r', NULL, "Smallest first", GP_OPT_SWITCH, &top_o.reverse, .frontends = GP_FE_CLI,
	  .group = GP_GRP_OUTPUT },
	{ "width", 0, "COLUMNS", "--batch: line width (default 80)", GP_OPT_COUNT, &top_o.width, 40, TOP_MAX_WIDTH,
	  .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "command-log", 0, "FILE", "Where COMMAND's stdout and stderr go (default /dev/null)", GP_OPT_STRING,
	  &top_cmd_log, .frontends = GP_FE_CLI, .group = GP_GRP_OUTPUT },
	{ "keep", 0, "SECONDS", "How long an exited process keeps its final figures on screen (default 10; "
	  "the command's own stays)", GP_OPT_SECONDS, &top_o.keep, 0, GP_MAX_SECONDS, .frontends = GP_FE_CLI,
	  .group = GP_GRP_OUTPUT },
	{},
};

/* The view on a run set up as the tracer's; 0 or -errno with err set (-127: the command
 * could not run). */
static int top_session(struct cli *c, char *err, size_t len)
{
	char who[512];
	int r = top__check_terminal(&top_o, err, len); /* before anything is attached */

	catch_signals(false);
	if (!r)
		r = preflight(err, len);
	if (!r)
		r = top_log(c, top_cmd_log, err, len);
	if (!r)
		r = setup(c, err, len);
	if (r)
		return r;
	gp_run__set_exit_report(c->run, NULL); /* the view prints no reports */
	r = stop_signal ? 0 : release_command(c, err, len);
	if (r)
		return r;
	describe_targets(c, who, sizeof(who));
	top_o.interval = gp_opts.interval > 0 ? gp_opts.interval : 1;
	top_o.duration = gp_opts.duration;
	top_o.who = who;
	top_o.keep_pid = gp_run__keep_pid(c->run);
	top_o.ended = top_ended;
	top_o.stop = top_stop;
	top_o.ctx = c;
	r = top__run(c->run, &top_o, err, len);
	gp_events__stop_on(gp_run__events(c->run), NULL);
	gp_run__detach(c->run);
	if (!r)
		r = gp_run__finish(c->run, err, len);
	if (gp_opts.cmd && c->released && !c->child_done && !stop_signal)
		fprintf(stderr, "gpuprobe: top: waiting for PID %d (%s) to end; Ctrl-C stops it\n", c->child.pid,
			gp_opts.cmd[0]);
	return r;
}

/* gpuprobe top [-p PID | --comm NAME | -- COMMAND] */
static int top_main(int argc, char **argv)
{
	static const char *const refused[][2] = {
		{ "json", "top draws a view (gpuprobe --json prints reports; --batch prints text frames)" },
		{ "max-overhead", "top shows every call (use it with gpuprobe or the daemon)" },
		{ "output", "top draws on the terminal (--batch prints on stdout)" },
		{ NULL, NULL },
	};
	struct gp_cmdline cl = { .name = "gpuprobe top", .frontend = GP_FE_TOP, .args_doc = "[-- COMMAND [ARGS...]]",
				 .doc = top_doc, .epilog = top_epilog, .positionals = GP_POS_COMMAND,
				 .extra = top_options, .refused = refused };
	struct cli c = { .child = { .pid = -1, .go_fd = -1, .err_fd = -1 }, .cmd_fd = { -1, -1 }, .log_fd = -1 };
	char err[1024] = "";
	int r = gp_options__parse(&cl, argc, argv), code;

	if (r)
		return r == GP_PARSED_EXIT ? 0 : r;
	r = cli_targets__usage(&cl);
	if (r)
		return r;
	if (top_cmd_log && !gp_opts.cmd)
		return gp_options__error(&cl, "--command-log needs a command");
	/* --json, --max-overhead (its counters read the BPF tables as they are: sampled counts
	 * would show as exact) and -o are not top's: refused by the parser */
	if (gp_opts.libnccl && !top_nccl)
		return gp_options__error(&cl, "--libnccl needs --nccl");
	gp_opts.modes = counter_modes();
	gp_opts.frontend = GP_FE_TOP; /* parsed as the CLI, running as a view: no stacks, no reports */
	libbpf_set_print(libbpf_print_fn);
	gp_log_setup(false, gp_opts.verbose);
	c.out = stderr;
	r = top_session(&c, err, sizeof(err));
	if (r && err[0])
		fprintf(stderr, "gpuprobe: %s\n", gp_sanitize_str(err)); /* may name a library path */
	gp_run__free(c.run);
	for (int i = 0; i < c.nr_pidfds; i++)
		close(c.pidfds[i]);
	if (c.log_fd >= 0)
		close(c.log_fd);
	code = r == -127 ? 127 : exit_code(&c, r);
	target__abort(&c.child);
	return code;
}

int main(int argc, char **argv)
{
	for (const struct cmd *c = cmds; argc > 1 && c->name; c++)
		if (!strcmp(argv[1], c->name))
			return c->fn(argc - 1, argv + 1);
	return trace_main(argc, argv);
}
