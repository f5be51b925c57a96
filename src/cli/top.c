/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The live view's loop: every interval, the records in flight, each process's probe hits
 * and each mode's drops (gp_hits__run_drops), every mode's counters into a counter set
 * (rates are the changes over the interval), a frame (top_view.c), drawn. Keys are read
 * between frames without waiting; ncurses keeps the screen right over ssh and on resize.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ncurses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/calibrate.h"
#include "core/counters.h"
#include "core/events.h"
#include "core/nvml.h"
#include "core/options.h"
#include "core/run.h"
#include "out/hits.h"
#include "out/text.h"
#include "cli/top.h"
#include "cli/top_view.h"
#include "lib/util.h"

/* Counter series top keeps: processes x (kinds + kernels + copies). More are counted. */
#define TOP_MAX_SERIES 65536
/*
 * The longest the last frame waits for the records still in the buffers once the command
 * has ended. A frame's own read is ~15 ms (the view stays responsive); the last frame is
 * the command's final figures, and what a process's last calls wrote (an exec's name, a
 * kernel's name, a graph's update) must be in it. Under QEMU's TCG on 6.12 15 ms left them
 * unread: the last process listed with no name and its kernels unknown@, a graph update's
 * runs missing. (The command's gpuprobe, after the run's end, reads them up: main.c.)
 */
#define TOP_FINAL_DRAIN_MS 2000

struct top {
	struct gp_run *run;
	const struct top_opts *o;
	struct gp_counters *cs;
	struct top_frame f;
	struct gp_snap_pid *pids;
	size_t nr_pids, cap_pids;
	double cost;
	enum top_col col;
	bool reverse;
	size_t selected;
	uint32_t selected_pid; /* the selection follows its process through sorts and ticks */
	uint64_t frames;
	struct top_line *lines;
	size_t cap_lines;
};

static void add_pid(void *ctx, const struct gp_snap_pid *p)
{
	struct top *t = ctx;

	if (t->nr_pids == t->cap_pids) {
		size_t cap = t->cap_pids ? 2 * t->cap_pids : 64;
		struct gp_snap_pid *v = realloc(t->pids, cap * sizeof(*v));

		if (!v)
			return; /* this process shows without its name this time */
		t->pids = v;
		t->cap_pids = cap;
	}
	t->pids[t->nr_pids++] = *p;
}

/* "none", or the modes that dropped anything and how much (and the counter series top
 * could not keep) */
static void drops_text(struct top *t, const uint64_t *dropped)
{
	size_t off = 0;

	t->f.dropped = gp_counters__dropped(t->cs);
	t->f.drops[0] = '\0';
	for (int i = 0; i < gp_run__nr_modes(t->run) && off < sizeof(t->f.drops); i++) {
		if (!dropped[i])
			continue;
		t->f.dropped += dropped[i];
		off += (size_t)snprintf(t->f.drops + off, sizeof(t->f.drops) - off, "%s%s %llu", off ? ", " : "",
					gp_run__mode(t->run, i)->name, (unsigned long long)dropped[i]);
	}
	if (gp_counters__dropped(t->cs) && off < sizeof(t->f.drops))
		snprintf(t->f.drops + off, sizeof(t->f.drops) - off, "%scounter series %llu", off ? ", " : "",
			 (unsigned long long)gp_counters__dropped(t->cs));
	if (!t->f.dropped)
		snprintf(t->f.drops, sizeof(t->f.drops), "none");
}

/* The S column of a live process: its state in /proc/PID/stat (the field after the
 * name, which may hold anything: read after its last ')'), '?' where it cannot be read
 * (gone since, or another PID namespace's). */
static char proc_state(uint32_t pid)
{
	char path[32], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] >= 'A' && p[2] <= 'Z' ? p[2] : '?';
}

/* NVML's last read into the frame: shown when top reads it, unless it was not asked for
 * and there is nothing to read (no driver's library, no GPU): then the view is as without. */
static int nvml(struct top *t)
{
	struct gp_nvml_snap s;
	int r;

	if (!gp_run__nvml(t->run) || gp_nvml__snapshot(gp_run__nvml(t->run), &s))
		return top_frame__nvml(&t->f, NULL);
	if (gp_run__opts(t->run)->nvml <= 0 &&
	    (s.state == GP_NVML_NO_LIBRARY || s.state == GP_NVML_STATIC || s.state == GP_NVML_NO_GPU))
		r = top_frame__nvml(&t->f, NULL);
	else
		r = top_frame__nvml(&t->f, &s);
	gp_nvml__snap_free(&s);
	return r;
}

/* One frame's data; reap forgets the processes that exited a while ago. */
static int tick(struct top *t, bool reap)
{
	uint64_t dropped[GP_MAX_MODES] = { 0 }, now;
	const struct gp_counter_row *rows;
	size_t n;
	int r;

	gp_events__drain(gp_run__events(t->run));
	t->nr_pids = 0;
	gp_hits__run_drops(t->run, add_pid, t, dropped);
	now = gp_mono_ns();
	gp_counters__begin(t->cs, now);
	gp_run__counters(t->run, gp_counters__add, t->cs);
	for (size_t i = 0; i < t->nr_pids; i++)
		gp_counters__add(t->cs, &(struct gp_counter){ t->pids[i].pid, TOP_TRACK_HITS, "all",
							     (double)t->pids[i].probe_hits, GP_CTR_TOTAL });
	n = gp_counters__end(t->cs, &rows);
	r = top_frame__build(&t->f, rows, n, t->pids, t->nr_pids,
			     (double)(now - gp_counters__prev_ns(t->cs)) / 1e9, t->cost);
	if (!r)
		r = nvml(t);
	for (size_t i = 0; i < t->f.nr_procs; i++)
		if (!t->f.procs[i].exited)
			t->f.procs[i].state = proc_state(t->f.procs[i].pid);
	drops_text(t, dropped);
	gp_text__clock(t->f.clock, sizeof(t->f.clock));
	top_frame__sort(&t->f, t->col, t->reverse);
	/* an exited process keeps its final figures on screen (S X) for --keep seconds */
	if (reap && now > gp_seconds_to_ns(t->o->keep))
		gp_run__reap(t->run, now - gp_seconds_to_ns(t->o->keep), t->o->keep_pid);
	return r;
}

/* The selected row: where its process is now, or the nearest row. */
static void find_selected(struct top *t)
{
	for (size_t i = 0; t->selected_pid && i < t->f.nr_procs; i++)
		if (t->f.procs[i].pid == t->selected_pid) {
			t->selected = i;
			return;
		}
	if (t->selected >= t->f.nr_procs)
		t->selected = t->f.nr_procs ? t->f.nr_procs - 1 : 0;
	t->selected_pid = t->f.nr_procs ? t->f.procs[t->selected].pid : 0;
}

static size_t layout(struct top *t, int width, int height)
{
	size_t max = height > 0 ? (size_t)height : 16 + t->f.nr_procs * 24;

	if (max > t->cap_lines) {
		struct top_line *l = realloc(t->lines, max * sizeof(*l));

		if (!l)
			return 0;
		t->lines = l;
		t->cap_lines = max;
	}
	find_selected(t);
	return top__layout(&t->f, width, height, t->col, t->reverse, t->selected, t->lines, max);
}

static void draw(struct top *t)
{
	size_t n = layout(t, COLS, LINES);

	erase();
	for (size_t i = 0; i < n && (int)i < LINES; i++) {
		int a = t->lines[i].attr == TOP_TITLE || t->lines[i].attr == TOP_SELECTED ? A_REVERSE :
			t->lines[i].attr == TOP_HEADER ? A_BOLD : t->lines[i].attr == TOP_EXITED ? A_DIM : A_NORMAL;

		attrset(a);
		mvaddnstr((int)i, 0, t->lines[i].text, COLS);
		if (a == A_REVERSE) /* a bar across the screen */
			for (int x = (int)strlen(t->lines[i].text); x < COLS; x++)
				mvaddch((int)i, x, ' ');
	}
	attrset(A_NORMAL);
	refresh();
}

/* A key: true when it asks to quit. */
static bool key(struct top *t, int ch)
{
	switch (ch) {
	case 'q':
	case 'Q':
		return true;
	case '<':
	case KEY_LEFT:
		t->col = (t->col + TOP__COLS - 1) % TOP__COLS;
		break;
	case '>':
	case KEY_RIGHT:
		t->col = (t->col + 1) % TOP__COLS;
		break;
	case 'r':
		t->reverse = !t->reverse;
		break;
	case KEY_UP:
	case 'k':
		if (t->selected)
			t->selected--;
		t->selected_pid = 0; /* the row moved: its process is selected at the next layout */
		return false;
	case KEY_DOWN:
	case 'j':
		t->selected++;
		t->selected_pid = 0;
		return false;
	default:
		return false;
	}
	top_frame__sort(&t->f, t->col, t->reverse);
	return false;
}

static bool over(const struct top *t, uint64_t start)
{
	return (t->o->stop && t->o->stop(t->o->ctx)) ||
	       (t->o->duration > 0 && gp_mono_ns() - start >= gp_seconds_to_ns(t->o->duration));
}

static int run_batch(struct top *t)
{
	uint64_t start = gp_mono_ns(), next = start + gp_seconds_to_ns(t->o->interval);
	int r = 0;

	while (!r && !over(t, start)) {
		bool end = t->o->ended && t->o->ended(t->o->ctx);
		size_t n;

		r = gp_events__poll(gp_run__events(t->run), 50);
		if (r < 0)
			break;
		r = 0;
		gp_run__tick(t->run); /* libraries loaded later */
		if (!end && gp_mono_ns() < next)
			continue;
		next += gp_seconds_to_ns(t->o->interval);
		if (end)
			gp_events__drain_for(gp_run__events(t->run), TOP_FINAL_DRAIN_MS);
		r = tick(t, !end);
		t->f.ended = end;
		n = layout(t, t->o->width, 0);
		for (size_t i = 0; i < n; i++)
			printf("%s\n", t->lines[i].text);
		printf("\n");
		fflush(stdout);
		if (end || (t->o->iterations && ++t->frames >= t->o->iterations))
			break;
	}
	return r;
}

static int run_screen(struct top *t)
{
	uint64_t start = gp_mono_ns(), next = start + gp_seconds_to_ns(t->o->interval);
	bool redraw = true;
	int r = 0, ch;

	while (!r && !over(t, start)) {
		r = gp_events__poll(gp_run__events(t->run), 50);
		if (r < 0)
			break;
		r = 0;
		gp_run__tick(t->run); /* libraries loaded later */
		while ((ch = getch()) != ERR) {
			if (key(t, ch))
				return 0;
			redraw = true;
		}
		if (!t->f.ended && t->o->ended && t->o->ended(t->o->ctx)) {
			/* one more frame with the last records, then it stays until q */
			gp_events__drain_for(gp_run__events(t->run), TOP_FINAL_DRAIN_MS);
			r = tick(t, false);
			t->f.ended = true;
			redraw = true;
		} else if (!t->f.ended && gp_mono_ns() >= next) {
			next += gp_seconds_to_ns(t->o->interval);
			r = tick(t, true);
			redraw = true;
		}
		if (redraw)
			draw(t);
		redraw = false;
	}
	return r;
}

int top__check_terminal(const struct top_opts *o, char *err, size_t len)
{
	if (!o->batch && (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))) {
		snprintf(err, len, "top: stdin and stdout must be a terminal (or use --batch)");
		return -ENOTTY;
	}
	return 0;
}

static int screen_open(SCREEN **s, const struct top_opts *o, char *err, size_t len)
{
	int r = top__check_terminal(o, err, len);

	if (r)
		return r;
	*s = newterm(NULL, stdout, stdin);
	if (!*s) {
		snprintf(err, len, "top: cannot drive the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
		return -ENOTTY;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	return 0;
}

int top__run(struct gp_run *run, const struct top_opts *o, char *err, size_t len)
{
	struct top t = { .run = run, .o = o, .col = (enum top_col)o->sort, .reverse = o->reverse };
	SCREEN *s = NULL;
	int r = 0;

	t.cs = gp_counters__new(TOP_MAX_SERIES);
	if (!t.cs) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	t.cost = calibrate__probe_cost(GP_CALIBRATE_CALLS);
	snprintf(t.f.who, sizeof(t.f.who), "%s", o->who);
	if (!o->batch)
		r = screen_open(&s, o, err, len);
	if (!r)
		r = tick(&t, false); /* the start of the first interval */
	if (!r)
		r = o->batch ? run_batch(&t) : run_screen(&t);
	if (r && !err[0])
		snprintf(err, len, "top: %s", strerror(-r));
	if (s) {
		endwin();
		delscreen(s);
	}
	top_frame__clear(&t.f);
	gp_counters__free(t.cs);
	free(t.pids);
	free(t.lines);
	return r;
}
