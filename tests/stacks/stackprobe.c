// SPDX-License-Identifier: BSD-3-Clause
/*
 * Test-only loader: starts a program, puts a uprobe with the stack-copy
 * helper on one function of one library for that process only, and prints
 * one JSON line per hit with the unwound, symbolized stack:
 *
 *   {"pid":..,"tid":..,"copy_size":..,"copy_err":..,"copy_flags":..,
 *    "flags":..,"frames":["f+0x1 (lib)",..],"unwind_us":..}
 *
 * stackprobe [--stack-bytes N] [--python] --lib PATH --func NAME -- PROG ARGS...
 *
 * --ready: the program prints "READY" and waits for a line on stdin, which
 * the loader writes once it has seen READY.
 * --python: the same, and in between the loader inspects the interpreter
 * (pystack__inspect) and gives the BPF walk its offsets: a process attached
 * mid-run.
 *
 * The program may print a line "DONE" and then wait for stdin to close:
 * the hits are symbolized while it still exists (its maps are read then).
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/procmaps.h"
#include "lib/pystack.h"
#include "stackprobe.h"
#include "stackprobe.skel.h"
#include "lib/symbolize.h"
#include "lib/unwind.h"
#include "unwind_libunwind.h"

#define MAX_SAVED 8

struct ctx {
	struct unwinder *uw;
	struct symbolizer *sym;
	struct pystack *py;
	unsigned long long events;
	bool quiet;		/* count only: cost runs */
	struct stackprobe_event *saved[MAX_SAVED];
	int nsaved;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

struct rel_ctx {
	const struct unwind_frames *f;
	char rel[UNWIND_MAX_FRAMES][160];
};

/* "file+0xOFFSET" per frame: names frames of stripped files for the tests */
static int rel_cb(const struct map_entry *e, void *arg)
{
	struct rel_ctx *r = arg;
	const char *base = strrchr(e->path, '/');
	unsigned int i;

	for (i = 0; i < r->f->nr; i++)
		if (r->f->pcs[i] >= e->start && r->f->pcs[i] < e->end && base)
			snprintf(r->rel[i], sizeof(r->rel[i]), "%s+0x%llx",
				 base + 1, r->f->pcs[i] - e->start + e->offset);
	return 0;
}

static int on_event(void *arg, void *data, size_t size)
{
	const struct stackprobe_event *e = data;
	struct ctx *c = arg;
	struct unwind_frames f;
	char name[512];
	double t0, t1;
	unsigned int i;
	int err;

	if (size < sizeof(*e))
		return 0;
	c->events++;
	if (c->quiet)
		return 0;
	if (c->nsaved < MAX_SAVED) {
		c->saved[c->nsaved] = malloc(sizeof(*e));
		if (c->saved[c->nsaved])
			memcpy(c->saved[c->nsaved++], e, sizeof(*e));
	}
	t0 = now_us();
	err = unwinder__unwind(c->uw, (int)e->pid, &e->copy, &f);
	t1 = now_us();
	printf("{\"pid\":%u,\"tid\":%u,\"copy_size\":%u,\"copy_err\":%d,"
	       "\"copy_flags\":%u,\"unwind_err\":%d,\"flags\":%u,"
	       "\"unwind_us\":%.1f,\"frames\":[",
	       e->pid, e->tid, e->copy.size, e->copy.err, e->copy.flags, err,
	       f.flags, t1 - t0);
	for (i = 0; !err && i < f.nr; i++) {
		symbolizer__format(c->sym, (int)e->pid, f.pcs[i], name,
				   sizeof(name));
		if (i)
			putchar(',');
		json_str(name);
	}
	printf("],\"rel\":[");
	if (!err) {
		static struct rel_ctx r;

		memset(&r, 0, sizeof(r));
		r.f = &f;
		procmaps__foreach(NULL, (int)e->pid, rel_cb, &r);
		for (i = 0; i < f.nr; i++) {
			if (i)
				putchar(',');
			json_str(r.rel[i]);
		}
	}
	printf("],\"py_status\":%u,\"py_truncated\":%u,\"py\":[",
	       e->py.status, e->py.truncated);
	for (i = 0; i < e->py.nr && i < GP_PY_MAX_FRAMES; i++) {
		pystack__format(c->py, (int)e->pid, &e->py.frames[i], name,
				sizeof(name));
		if (i)
			putchar(',');
		json_str(name);
	}
	printf("]}\n");
	fflush(stdout);
	return 0;
}

/* The one child of a launcher (its main thread's children list). */
static pid_t only_child(pid_t pid)
{
	char path[64];
	FILE *f;
	int kid = -1, n = 0;

	for (n = 0; n < 100 && kid <= 0; n++) {	/* it may not have forked yet */
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%d", &kid) != 1)
				kid = -1;
			fclose(f);
		}
		if (kid <= 0)
			usleep(10000);
	}
	return kid;
}

static bool same_frames(const struct unwind_frames *a, const struct unwind_frames *b)
{
	return a->nr == b->nr && !memcmp(a->pcs, b->pcs, a->nr * sizeof(a->pcs[0]));
}

/*
 * Costs on the saved events, while the process still exists: libdwfl
 * (warm: files open, CFI looked up before) against libunwind on the same
 * copies, and the Python frames' formatting.
 */
static void bench(struct ctx *c, int pid, int rounds)
{
	struct lu_unwinder *lu = lu__new(pid);
	struct unwind_frames a, b;
	char name[512];
	double t0, dw = 0, lw = 0, pyw = 0;
	unsigned long long dwf = 0, luf = 0, same = 0, pyf = 0;
	int i, r;
	unsigned int k;

	for (i = 0; i < c->nsaved; i++) {
		const struct stackprobe_event *e = c->saved[i];

		unwinder__unwind(c->uw, pid, &e->copy, &a);	/* warm up */
		if (lu)
			lu__unwind(lu, &e->copy, &b);
		t0 = now_us();
		for (r = 0; r < rounds; r++)
			unwinder__unwind(c->uw, pid, &e->copy, &a);
		dw += now_us() - t0;
		dwf += a.nr;
		if (lu) {
			t0 = now_us();
			for (r = 0; r < rounds; r++)
				lu__unwind(lu, &e->copy, &b);
			lw += now_us() - t0;
			luf += b.nr;
			same += same_frames(&a, &b);
		}
		t0 = now_us();
		for (r = 0; r < rounds; r++)
			for (k = 0; k < e->py.nr && k < GP_PY_MAX_FRAMES; k++)
				pystack__format(c->py, pid, &e->py.frames[k], name, sizeof(name));
		pyw += now_us() - t0;
		pyf += e->py.nr;
	}
	if (c->nsaved)
		printf("{\"bench\":{\"events\":%d,\"rounds\":%d,"
		       "\"libdwfl_us\":%.2f,\"libdwfl_frames\":%.1f,"
		       "\"libunwind_us\":%.2f,\"libunwind_frames\":%.1f,"
		       "\"same_frames\":%llu,\"py_format_us\":%.2f,\"py_frames\":%.1f}}\n",
		       c->nsaved, rounds, dw / rounds / c->nsaved,
		       (double)dwf / c->nsaved, lw / rounds / c->nsaved,
		       (double)luf / c->nsaved, same, pyw / rounds / c->nsaved,
		       (double)pyf / c->nsaved);
	lu__free(lu);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stack-bytes", required_argument, NULL, 'b' },
		{ "lib", required_argument, NULL, 'l' },
		{ "func", required_argument, NULL, 'f' },
		{ "python", no_argument, NULL, 'p' },
		{ "ready", no_argument, NULL, 'r' },
		{ "follow", no_argument, NULL, 'F' },
		{ "mode", required_argument, NULL, 'm' },
		{ "bench", required_argument, NULL, 'B' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-wakeup", no_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	LIBBPF_OPTS(bpf_uprobe_opts, uopts);
	struct stackprobe_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct bpf_link *link = NULL;
	struct ctx c = { 0 };
	const char *lib = NULL, *func = NULL;
	unsigned int stack_bytes = GP_STACK_COPY_MAX;
	int go[2] = { -1, -1 }, in[2] = { -1, -1 }, out[2] = { -1, -1 };
	int err = 0, opt, status = 0;
	pid_t child = -1;
	char buf[256];
	size_t got = 0;
	bool done = false, python = false, ready = false, wait_ready = false;
	const char *mode = "hit";
	struct bpf_program *prog;
	int rounds = 0, stats_fd = -1;
	bool no_wakeup = false, follow = false;
	pid_t target;
	double deadline;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 'b')
			stack_bytes = (unsigned int)strtoul(optarg, NULL, 0);
		else if (opt == 'l')
			lib = optarg;
		else if (opt == 'f')
			func = optarg;
		else if (opt == 'p')
			python = true;
		else if (opt == 'r')
			wait_ready = true;
		else if (opt == 'F')
			follow = true;
		else if (opt == 'm')
			mode = optarg;
		else if (opt == 'B')
			rounds = atoi(optarg);
		else if (opt == 'q')
			c.quiet = true;
		else if (opt == 'w')
			no_wakeup = true;
		else
			return 2;
	}
	if (!lib || !func || optind >= argc) {
		fprintf(stderr, "usage: stackprobe [--stack-bytes N] --lib PATH --func NAME -- PROG ARGS\n");
		return 2;
	}
	if (pipe(go) || pipe(in) || pipe(out)) {
		err = -errno;
		goto cleanup;
	}
	child = fork();
	if (child < 0) {
		err = -errno;
		goto cleanup;
	}
	if (child == 0) {
		char b;

		dup2(in[0], 0);
		dup2(out[1], 1);
		close(go[1]);
		close(in[1]);	/* else stdin never reaches EOF */
		close(out[0]);
		if (read(go[0], &b, 1) != 1)
			_exit(127);
		execvp(argv[optind], argv + optind);
		_exit(127);
	}
	close(go[0]);
	close(in[0]);
	close(out[1]);
	go[0] = in[0] = out[1] = -1;

	skel = stackprobe_bpf__open();
	if (!skel) {
		err = -errno;
		fprintf(stderr, "stackprobe: open: %s\n", strerror(errno));
		goto cleanup;
	}
	skel->bss->target_tgid = (__u32)child;
	skel->rodata->gp_stack_bytes = stack_bytes;
	skel->rodata->submit_flags = no_wakeup ? BPF_RB_NO_WAKEUP : 0;
	bpf_map__set_max_entries(skel->maps.events, 1 << 25);
	prog = !strcmp(mode, "copy") ? skel->progs.stackprobe_copy :
	       !strcmp(mode, "fp") ? skel->progs.stackprobe_fp :
	       !strcmp(mode, "empty") ? skel->progs.stackprobe_empty :
				      skel->progs.stackprobe_hit;
	err = stackprobe_bpf__load(skel);
	if (err) {
		fprintf(stderr, "stackprobe: load: %s\n", strerror(-err));
		goto cleanup;
	}
	uopts.func_name = func;
	/* run_time_ns / run_cnt per program, for the cost report */
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	/* --follow: the program is a launcher (unshare --fork, a container
	 * runtime); the traced process is its child, known at READY */
	link = bpf_program__attach_uprobe_opts(prog, follow ? -1 : child,
					       lib, 0, &uopts);
	if (!link) {
		err = -errno;
		fprintf(stderr, "stackprobe: attach %s:%s: %s\n", lib, func,
			strerror(-err));
		goto cleanup;
	}
	c.uw = unwinder__new(NULL);
	c.sym = symbolizer__new(NULL);
	c.py = pystack__new(NULL);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &c, NULL);
	if (!c.uw || !c.sym || !c.py || !rb) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (write(go[1], "g", 1) != 1) {
		err = -errno;
		goto cleanup;
	}
	/* hits as they come; on "DONE" the rest, then let the program end */
	deadline = now_us() + 300e6;
	while (!done) {
		struct pollfd pfd[2] = {
			{ .fd = ring_buffer__epoll_fd(rb), .events = POLLIN },
			{ .fd = out[0], .events = POLLIN },
		};
		ssize_t n;

		if (poll(pfd, 2, no_wakeup ? 10 : 1000) < 0 || now_us() > deadline) {
			fprintf(stderr, "stackprobe: timed out\n");
			err = -ETIMEDOUT;
			goto cleanup;
		}
		ring_buffer__consume(rb);
		if (pfd[1].revents) {
			n = read(out[0], buf + got, sizeof(buf) - 1 - got);
			if (n <= 0)
				break;
			got += (size_t)n;
			buf[got] = 0;
			if ((python || wait_ready) && !ready && strstr(buf, "READY")) {
				struct gp_py_proc pp;
				char ver[32], why[256];
				__u32 key = (__u32)child;

				ready = true;
				target = follow ? only_child(child) : child;
				if (target <= 0) {
					fprintf(stderr, "stackprobe: no child of %d to follow\n", child);
					err = -ESRCH;
					goto cleanup;
				}
				key = (__u32)target;
				skel->bss->target_tgid = (__u32)target;
				if (python) {
					err = pystack__inspect(c.py, target, &pp, ver, sizeof(ver),
							       why, sizeof(why));
					if (err) {
						fprintf(stderr, "stackprobe: %s\n", why);
						goto cleanup;
					}
					printf("{\"python\":\"%s\"}\n", ver);
					err = bpf_map__update_elem(skel->maps.gp_py_procs, &key,
								   sizeof(key), &pp, sizeof(pp), 0);
					if (err)
						goto cleanup;
				}
				if (write(in[1], "\n", 1) != 1) {
					err = -EIO;
					goto cleanup;
				}
			}
			{
				char *l = strstr(buf, "LOOP ");

				if (l && strchr(l, '\n'))
					printf("{\"loop_ns_per_call\":%.1f}\n", atof(l + 5));
				if (l && strchr(l, '\n'))
					memset(l, '-', 4);
			}
			if (strstr(buf, "DONE"))
				done = true;
			if (got >= sizeof(buf) - 1)
				got = 0;
		}
	}
	ring_buffer__consume(rb);
	if (rounds > 0)
		bench(&c, (int)skel->bss->target_tgid, rounds);
	{
		struct bpf_prog_info info;
		__u32 ilen = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &ilen) &&
		    info.run_cnt)
			printf("{\"bpf\":{\"mode\":\"%s\",\"run_cnt\":%llu,"
			       "\"ns_per_run\":%.1f}}\n", mode,
			       (unsigned long long)info.run_cnt,
			       (double)info.run_time_ns / info.run_cnt);
	}
	{
		struct unwind_stats st;

		unwinder__stats(c.uw, &st);
		printf("{\"stats\":{\"unwinds\":%llu,\"frames\":%llu,"
		       "\"files_opened\":%llu,\"files_rejected\":%llu,"
		       "\"debug_files\":%llu,\"debug_rejected\":%llu}}\n",
		       st.unwinds, st.frames, st.files_opened, st.files_rejected,
		       st.debug_files, st.debug_rejected);
	}
cleanup:
	if (in[1] >= 0)
		close(in[1]);
	if (child > 0) {
		if (err)
			kill(child, SIGKILL);
		waitpid(child, &status, 0);
		if (!err && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
			fprintf(stderr, "stackprobe: program failed (status %d)\n", status);
			err = -ECHILD;
		}
	}
	fprintf(stderr, "stackprobe: %llu events, %llu drops\n", c.events,
		skel && skel->bss ? (unsigned long long)skel->bss->drops : 0ull);
	ring_buffer__free(rb);
	bpf_link__destroy(link);
	stackprobe_bpf__destroy(skel);
	unwinder__free(c.uw);
	symbolizer__free(c.sym);
	pystack__free(c.py);
	for (opt = 0; opt < c.nsaved; opt++)
		free(c.saved[opt]);
	if (stats_fd >= 0)
		close(stats_fd);
	if (go[1] >= 0)
		close(go[1]);
	if (out[0] >= 0)
		close(out[0]);
	return err ? 1 : 0;
}
