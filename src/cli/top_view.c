/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "out/jsonnum.h"
#include "cli/top_view.h"
#include "lib/u64map.h"

static const char *const col_title[TOP__COLS] = {
	[TOP_PID] = "PID", [TOP_COMM] = "COMM", [TOP_LAUNCHES] = "LAUNCH/s", [TOP_MEMORY] = "MEMORY",
	[TOP_GROWTH] = "GROWTH/s", [TOP_H2D] = "H2D/s", [TOP_D2H] = "D2H/s", [TOP_PROBE] = "PROBE%",
	[TOP_SM] = "SM%",
};

/* the copy directions of GP_TRACK_COPIES series, in the order the copies table shows them */
static const char *const dirs[] = { "H2D", "D2H", "D2D", "peer", "H2H" };
#define NR_DIRS (sizeof(dirs) / sizeof(dirs[0]))

static int dir_index(const char *d)
{
	for (size_t i = 0; i < NR_DIRS; i++)
		if (!strcmp(dirs[i], d))
			return (int)i;
	return (int)NR_DIRS;
}

void top_frame__clear(struct top_frame *f)
{
	for (size_t i = 0; f->procs && i < f->nr_procs; i++) {
		free(f->procs[i].kernels);
		free(f->procs[i].copies);
	}
	free(f->procs);
	f->procs = NULL;
	f->nr_procs = 0;
	free(f->gpus);
	f->gpus = NULL;
	f->nr_gpus = 0;
}

static int grow(void **v, size_t n, size_t size)
{
	void *nv;

	if (n & (n - 1)) /* room for n + 1 is there until n reaches a power of two */
		return 0;
	nv = realloc(*v, (n ? 2 * n : 1) * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	return 0;
}

/* "H2D gpu1" -> H2D, 1; "H2H" -> H2H, -1 */
static void parse_copy(const char *series, struct top_copy *c)
{
	const char *sp = strchr(series, ' ');
	size_t n = sp ? (size_t)(sp - series) : strlen(series);

	snprintf(c->dir, sizeof(c->dir), "%.*s", (int)(n < sizeof(c->dir) ? n : sizeof(c->dir) - 1), series);
	c->gpu = -1;
	if (sp && !strncmp(sp, " gpu", 4))
		c->gpu = atoi(sp + 4);
}

static int add_row(struct top_proc *p, const struct gp_counter_row *r, double dt, double cost)
{
	double rate = dt > 0 ? r->delta / dt : 0;

	if (!strcmp(r->track, GP_TRACK_MEMORY)) {
		p->has_memory = true;
		p->memory += r->value;
		/* a live view's own series: what an exited process held at its exit */
		if (r->flags & GP_CTR_DETAIL)
			p->memory_at_exit = true;
		else
			p->growth += rate;
	} else if (!strcmp(r->track, GP_TRACK_LAUNCHES) && !strcmp(r->series, "graphs")) {
		p->graph_launches += r->value;
		p->graph_rate += rate;
	} else if (!strcmp(r->track, GP_TRACK_LAUNCHES)) {
		p->launches += r->value;
		p->launch_rate += rate;
	} else if (!strcmp(r->track, GP_TRACK_KERNELS)) {
		if (grow((void **)&p->kernels, p->nr_kernels, sizeof(*p->kernels)))
			return -ENOMEM;
		p->kernels[p->nr_kernels++] = (struct top_kernel){ r->series, rate, r->value };
	} else if (!strcmp(r->track, GP_TRACK_COPIES)) {
		struct top_copy c = { .rate = rate, .total = r->value };

		if (grow((void **)&p->copies, p->nr_copies, sizeof(*p->copies)))
			return -ENOMEM;
		parse_copy(r->series, &c);
		p->copies[p->nr_copies++] = c;
		p->has_copies = true;
		p->h2d += !strcmp(c.dir, "H2D") ? rate : 0;
		p->d2h += !strcmp(c.dir, "D2H") ? rate : 0;
	} else if (!strcmp(r->track, GP_TRACK_NCCL_INFLIGHT)) {
		p->has_nccl = true;
		p->nccl_inflight += r->value;
	} else if (!strcmp(r->track, GP_TRACK_NCCL_STALL) && r->value >= p->nccl_stall) {
		p->nccl_stall = r->value;
		snprintf(p->nccl_stall_of, sizeof(p->nccl_stall_of), "%s", r->series);
	} else if (!strcmp(r->track, GP_TRACK_NCCL_WAIT) && r->value >= p->nccl_wait) {
		p->has_nccl = true;
		p->nccl_wait = r->value;
		snprintf(p->nccl_wait_of, sizeof(p->nccl_wait_of), "%s", r->series);
	} else if (!strcmp(r->track, TOP_TRACK_HITS)) {
		p->hits = r->value;
		p->probe_pct = cost >= 0 && dt > 0 ? 100.0 * r->delta * cost / dt : -1;
	}
	return 0;
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct top_kernel *x = a, *y = b;

	if (x->rate != y->rate)
		return x->rate > y->rate ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_copy(const void *a, const void *b)
{
	const struct top_copy *x = a, *y = b;
	unsigned int gx = (unsigned int)x->gpu, gy = (unsigned int)y->gpu; /* -1 last */

	if (gx != gy)
		return gx < gy ? -1 : 1;
	return dir_index(x->dir) - dir_index(y->dir);
}

static void finish_proc(struct top_proc *p, const struct u64map *names, const struct gp_snap_pid *pids)
{
	uintptr_t at = (uintptr_t)u64map__get(names, p->pid);

	if (at) {
		memcpy(p->comm, pids[at - 1].comm, sizeof(p->comm));
		p->comm[sizeof(p->comm) - 1] = '\0';
		p->exited = pids[at - 1].exited;
	}
	p->state = p->exited ? 'X' : '?';
	if (p->nr_kernels > 1)
		qsort(p->kernels, p->nr_kernels, sizeof(*p->kernels), cmp_kernel);
	if (p->nr_copies > 1)
		qsort(p->copies, p->nr_copies, sizeof(*p->copies), cmp_copy);
}

int top_frame__build(struct top_frame *f, const struct gp_counter_row *rows, size_t n,
		     const struct gp_snap_pid *pids, size_t nr_pids, double dt, double cost)
{
	struct u64map *names = u64map__new();
	struct top_proc *p = NULL;
	int r = 0;

	top_frame__clear(f);
	f->dt = dt;
	f->cost = cost;
	f->hit_rate = 0;
	for (size_t i = 0; names && i < nr_pids; i++)
		if (u64map__put(names, pids[i].pid, (void *)(uintptr_t)(i + 1)))
			r = -ENOMEM;
	for (size_t i = 0; names && !r && i < n; i++) {
		if (rows[i].gone) /* its process was forgotten: nothing to show */
			continue;
		if (!p || p->pid != rows[i].pid) {
			if (grow((void **)&f->procs, f->nr_procs, sizeof(*f->procs))) {
				r = -ENOMEM;
				break;
			}
			p = &f->procs[f->nr_procs++];
			*p = (struct top_proc){ .pid = rows[i].pid, .probe_pct = -1, .mig_gpu = -1 };
		}
		r = add_row(p, &rows[i], dt, cost);
		if (!strcmp(rows[i].track, TOP_TRACK_HITS) && dt > 0)
			f->hit_rate += rows[i].delta / dt;
	}
	for (size_t i = 0; names && i < f->nr_procs; i++)
		finish_proc(&f->procs[i], names, pids);
	if (!names)
		r = -ENOMEM;
	u64map__free(names);
	return r;
}

int top_frame__nvml(struct top_frame *f, const struct gp_nvml_snap *s)
{
	f->nvml = s != NULL;
	if (!s)
		return 0;
	f->nvml_state = s->state;
	snprintf(f->nvml_why, sizeof(f->nvml_why), "%s", s->why);
	if (s->nr_gpus) {
		f->gpus = malloc(s->nr_gpus * sizeof(*f->gpus));
		if (!f->gpus)
			return -ENOMEM;
		memcpy(f->gpus, s->gpus, s->nr_gpus * sizeof(*f->gpus));
		f->nr_gpus = s->nr_gpus;
	}
	for (size_t i = 0; i < f->nr_procs; i++) {
		struct top_proc *p = &f->procs[i];

		for (size_t k = 0; k < s->nr_procs; k++) {
			const struct gp_nvml_proc *q = &s->procs[k];

			if (q->pid != p->pid)
				continue;
			p->nvml_gpus++;
			if (q->util_known)
				p->sm_known = true, p->sm += q->sm_util;
			else if (q->gpu < s->nr_gpus && s->gpus[q->gpu].mig && p->mig_gpu < 0)
				p->mig_gpu = (int)s->gpus[q->gpu].index;
			if (q->mem_known)
				p->has_driver_memory = true, p->driver_memory += (double)q->mem_bytes;
		}
	}
	return 0;
}

static enum top_col sort_col;
static bool sort_reverse;

static double key(const struct top_proc *p, enum top_col c)
{
	switch (c) {
	case TOP_LAUNCHES: return p->launch_rate;
	case TOP_MEMORY: return p->memory;
	case TOP_GROWTH: return p->growth;
	case TOP_H2D: return p->h2d;
	case TOP_D2H: return p->d2h;
	case TOP_PROBE: return p->probe_pct;
	case TOP_SM: return p->sm_known ? p->sm : -1;
	default: return 0;
	}
}

/* Numbers biggest first, PID and COMM in their natural order; ties by PID. */
static int cmp_proc(const void *a, const void *b)
{
	const struct top_proc *x = a, *y = b;
	int r = 0;

	if (sort_col == TOP_COMM)
		r = strcmp(x->comm, y->comm);
	else if (sort_col != TOP_PID && key(x, sort_col) != key(y, sort_col))
		r = key(x, sort_col) > key(y, sort_col) ? -1 : 1;
	if (!r)
		r = x->pid < y->pid ? -1 : x->pid > y->pid;
	return sort_reverse ? -r : r;
}

void top_frame__sort(struct top_frame *f, enum top_col col, bool reverse)
{
	sort_col = col;
	sort_reverse = reverse;
	if (f->nr_procs > 1)
		qsort(f->procs, f->nr_procs, sizeof(*f->procs), cmp_proc);
}

/* --- numbers in a few characters -------------------------------------------------- */

/* 0, 7, 12.5, 950, 1.23k, 12.3k, 123k, 1.23M */
static void fmt_count(double v, char *buf, size_t len)
{
	static const char *const sfx[] = { "", "k", "M", "G", "T" };
	size_t u = 0;

	if (!isfinite(v) || v < 0) {
		snprintf(buf, len, "-");
		return;
	}
	if (v < 999.5) {
		snprintf(buf, len, v == floor(v) || v >= 9.95 ? "%.0f" : "%.1f", v);
		return;
	}
	while (v >= 999.5 && u + 1 < sizeof(sfx) / sizeof(sfx[0])) {
		v /= 1000;
		u++;
	}
	snprintf(buf, len, v >= 99.95 ? "%.0f%s" : v >= 9.995 ? "%.1f%s" : "%.2f%s", v, sfx[u]);
}

static void fmt_bytes(double v, char *buf, size_t len)
{
	num__bytes(v > 0 ? (uint64_t)llround(v) : 0, buf, len);
}

static void fmt_growth(double v, char *buf, size_t len)
{
	char b[24];

	if (fabs(v) < 0.5) {
		snprintf(buf, len, "0 B");
		return;
	}
	num__bytes((uint64_t)llround(fabs(v)), b, sizeof(b));
	snprintf(buf, len, "%c%s", v > 0 ? '+' : '-', b);
}

static void fmt_pct(double v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else if (v > 0 && v < 0.01)
		snprintf(buf, len, "<0.01%%");
	else
		snprintf(buf, len, "%.2f%%", v);
}

/* --- lines -------------------------------------------------------------------------- */

struct out {
	struct top_line *lines;
	size_t n, max;
	int width;
};

__attribute__((format(printf, 3, 4)))
static void put(struct out *o, enum top_attr attr, const char *fmt, ...)
{
	va_list ap;
	int w = o->width < TOP_MAX_WIDTH ? o->width : TOP_MAX_WIDTH;

	if (o->n >= o->max)
		return;
	va_start(ap, fmt);
	vsnprintf(o->lines[o->n].text, (size_t)w + 1, fmt, ap);
	va_end(ap);
	/* names come from the traced processes (comm, kernel names): a control byte would
	 * drive the terminal (--batch writes it raw), and any byte outside ASCII would take
	 * other than one column */
	for (unsigned char *c = (unsigned char *)o->lines[o->n].text; *c; c++)
		if (*c < 0x20 || *c >= 0x7f)
			*c = '?';
	o->lines[o->n++].attr = attr;
}

/* The figure columns, LAUNCH/s to SM% (enum top_col's order), and their widths. SM% is
 * NVML's: shown only where top reads NVML, and never dropped. */
#define NR_FIG (TOP__COLS - TOP_LAUNCHES)
static const int fig_width[NR_FIG] = { 8, 9, 9, 9, 9, 6, 4 };
/* Under 80 columns, dropped in this order before COMM narrows below 10 */
static const enum top_col drop_order[] = { TOP_PROBE, TOP_GROWTH, TOP_D2H, TOP_H2D };

struct widths {
	bool shown[NR_FIG];
	int comm, kernel; /* kernel 0: no TOP KERNEL column */
};

/* PID, S and the spaces around COMM, and the figure columns shown */
static int fixed_width(const struct widths *w)
{
	int n = 7 + 2 + 1;

	for (int i = 0; i < NR_FIG; i++)
		n += w->shown[i] ? 1 + fig_width[i] : 0;
	return n;
}

/* 80 columns: every column, COMM 14 wide (a 15-character name loses its last); wider
 * terminals get the whole name, then the busiest kernel of each process; narrower ones
 * lose PROBE%, GROWTH/s, D2H/s and H2D/s in turn (COMM 10 wide at least till then).
 * The columns shown keep their places (--batch is read by scripts). */
static struct widths widths_for(int width, bool nvml)
{
	struct widths w = { .kernel = 0 };
	size_t d = 0;

	for (int i = 0; i < NR_FIG; i++)
		w.shown[i] = true;
	w.shown[TOP_SM - TOP_LAUNCHES] = nvml;
	while (width - fixed_width(&w) < 10 && d < sizeof(drop_order) / sizeof(drop_order[0]))
		w.shown[drop_order[d++] - TOP_LAUNCHES] = false;
	w.comm = width - fixed_width(&w);
	if (w.comm > GP_COMM_LEN - 1)
		w.comm = GP_COMM_LEN - 1;
	if (w.comm < 6)
		w.comm = 6;
	if (width - 80 >= 20)
		w.kernel = width - 81 > 60 ? 60 : width - 81;
	return w;
}

/* One line of the table: PID, S, COMM, the figure cells shown, the top kernel. */
static void table_line(struct out *o, enum top_attr attr, const struct widths *w, const char *pid, char state,
		       const char *comm, char cells[NR_FIG][32], const char *kernel)
{
	char line[TOP_MAX_WIDTH + 1];
	int n = snprintf(line, sizeof(line), "%7s %c %-*.*s", pid, state, w->comm, w->comm, comm);

	for (int i = 0; i < NR_FIG && n < (int)sizeof(line); i++)
		if (w->shown[i])
			n += snprintf(line + n, sizeof(line) - (size_t)n, " %*s", fig_width[i], cells[i]);
	if (w->kernel && kernel[0] && n < (int)sizeof(line))
		snprintf(line + n, sizeof(line) - (size_t)n, " %.*s", w->kernel, kernel);
	put(o, attr, "%s", line);
}

static void table_header(struct out *o, const struct widths *w)
{
	char cells[NR_FIG][32];

	for (int i = 0; i < NR_FIG; i++)
		snprintf(cells[i], sizeof(cells[i]), "%s", col_title[TOP_LAUNCHES + i]);
	table_line(o, TOP_HEADER, w, col_title[TOP_PID], 'S', col_title[TOP_COMM], cells,
		   w->kernel ? "TOP KERNEL" : "");
}

static void table_row(struct out *o, const struct widths *w, const struct top_proc *p, bool sel)
{
	char cells[NR_FIG][32], pid[16];
	char *l = cells[TOP_LAUNCHES - TOP_LAUNCHES], *m = cells[TOP_MEMORY - TOP_LAUNCHES];
	char *g = cells[TOP_GROWTH - TOP_LAUNCHES];

	fmt_count(p->launch_rate, l, sizeof(cells[0]));
	if (p->has_memory) {
		fmt_bytes(p->memory, m, sizeof(cells[0]));
		fmt_growth(p->growth, g, sizeof(cells[0]));
	} else {
		snprintf(m, sizeof(cells[0]), "-");
		snprintf(g, sizeof(cells[0]), "-");
	}
	num__rate(p->has_copies ? p->h2d : -1, cells[TOP_H2D - TOP_LAUNCHES], sizeof(cells[0]));
	num__rate(p->has_copies ? p->d2h : -1, cells[TOP_D2H - TOP_LAUNCHES], sizeof(cells[0]));
	fmt_pct(p->probe_pct, cells[TOP_PROBE - TOP_LAUNCHES], sizeof(cells[0]));
	/* "-" where NVML gave none (MIG, not on a GPU, not supported): never a 0 */
	if (p->sm_known)
		snprintf(cells[TOP_SM - TOP_LAUNCHES], sizeof(cells[0]), "%.0f%%", p->sm);
	else
		snprintf(cells[TOP_SM - TOP_LAUNCHES], sizeof(cells[0]), "-");
	snprintf(pid, sizeof(pid), "%u", p->pid);
	table_line(o, sel ? TOP_SELECTED : p->exited ? TOP_EXITED : TOP_TEXT, w, pid, p->state ? p->state : '?',
		   p->comm[0] ? p->comm : "?", cells, w->kernel && p->nr_kernels ? p->kernels[0].name : "");
}

static void title(struct out *o, const struct top_frame *f)
{
	char one[32], rate[16], head[96];
	int room, n;

	/* what is traced comes last, and is shortened to fit rather than cut */
	n = snprintf(head, sizeof(head), "gpuprobe top  %s  %zu process%s%s  ", f->clock, f->nr_procs,
		     f->nr_procs == 1 ? "" : "es", f->ended ? "  ENDED" : "");
	room = (o->width < TOP_MAX_WIDTH ? o->width : TOP_MAX_WIDTH) - n;
	if ((int)strlen(f->who) <= room)
		put(o, TOP_TITLE, "%s%s", head, f->who);
	else if (room > 3)
		put(o, TOP_TITLE, "%s%.*s...", head, room - 3, f->who);
	else
		put(o, TOP_TITLE, "%s", head);
	fmt_count(f->hit_rate, rate, sizeof(rate));
	if (f->cost >= 0) {
		num__seconds(f->cost, one, sizeof(one));
		n = snprintf(head, sizeof(head), "probes: %s hits/s x %s = %.2f%% of a CPU", rate, one,
			     100.0 * f->hit_rate * f->cost);
	} else {
		n = snprintf(head, sizeof(head), "probes: %s hits/s (cost not calibrated)", rate);
	}
	/* which modes dropped, or where that does not fit, how many in all */
	if (n + 11 + (int)strlen(f->drops) <= (o->width < TOP_MAX_WIDTH ? o->width : TOP_MAX_WIDTH))
		put(o, TOP_TEXT, "%s; dropped: %s", head, f->drops);
	else
		put(o, TOP_TEXT, "%s; dropped: %llu in all", head, (unsigned long long)f->dropped);
}

/* The processes of the worst NCCL wait and the worst stall past TOP_NCCL_ALERT_S, or NULL. */
static void nccl_worst(const struct top_frame *f, const struct top_proc **wait, const struct top_proc **stall)
{
	*wait = *stall = NULL;
	for (size_t i = 0; i < f->nr_procs; i++) {
		const struct top_proc *p = &f->procs[i];

		if (p->nccl_wait_of[0] && p->nccl_wait >= TOP_NCCL_ALERT_S && (!*wait || p->nccl_wait > (*wait)->nccl_wait))
			*wait = p;
		if (p->nccl_inflight && p->nccl_stall_of[0] && p->nccl_stall >= TOP_NCCL_ALERT_S &&
		    (!*stall || p->nccl_stall > (*stall)->nccl_stall))
			*stall = p;
	}
}

static size_t nr_nccl_lines(const struct top_frame *f)
{
	const struct top_proc *w, *s;

	nccl_worst(f, &w, &s);
	return (w ? 1 : 0) + (s ? 1 : 0);
}

/* At most max lines (0: both): the rank the others wait for longest to enter a collective,
 * the rank longest in flight without a completion (a hang or a straggler), on screen
 * whatever is selected; the figures first, so that a narrow screen cuts the names. */
static void nccl_lines(struct out *o, const struct top_frame *f, size_t max)
{
	const struct top_proc *w, *s;
	size_t n = 0;

	nccl_worst(f, &w, &s);
	if (w && (!max || n++ < max))
		put(o, TOP_HEADER, "NCCL: waited %.1f s for PID %u %s to enter (%s)", w->nccl_wait, w->pid, w->comm,
		    w->nccl_wait_of);
	if (s && (!max || n++ < max))
		put(o, TOP_HEADER, "NCCL: %.0f in flight, none done for %.1f s: PID %u %s (%s)", s->nccl_inflight,
		    s->nccl_stall, s->pid, s->comm, s->nccl_stall_of);
}

static size_t nr_gpus(const struct top_proc *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nr_copies; i++)
		if (!i || p->copies[i].gpu != p->copies[i - 1].gpu)
			n++;
	return n;
}

/* The detail's first line(s): "PID 42 app (exited): 703 launches, 20 graph launches, 40.0 MiB
 * held at exit, 1500 probe hits", wrapped between its parts (never cut) where the width is
 * short. The number of lines; written to o unless dry. */
static size_t detail_head(struct out *o, const struct top_proc *p, bool dry)
{
	char part[8][96], b[32], line[TOP_MAX_WIDTH + 1];
	int width = o->width < TOP_MAX_WIDTH ? o->width : TOP_MAX_WIDTH, len;
	size_t n = 0, lines = 1;

	snprintf(part[n++], sizeof(part[0]), "PID %u%s%s%s: %.0f launch%s", p->pid, p->comm[0] ? " " : "", p->comm,
		 p->exited ? " (exited)" : "", p->launches, p->launches == 1 ? "" : "es");
	if (p->graph_launches)
		snprintf(part[n++], sizeof(part[0]), "%.0f graph launch%s", p->graph_launches,
			 p->graph_launches == 1 ? "" : "es");
	fmt_bytes(p->memory, b, sizeof(b));
	if (p->has_memory)
		snprintf(part[n++], sizeof(part[0]), "%s %s", b, p->memory_at_exit ? "held at exit" : "outstanding");
	if (p->sm_known)
		snprintf(part[n++], sizeof(part[0]), "SM %.0f %% (NVML)", p->sm);
	else if (p->mig_gpu >= 0)
		snprintf(part[n++], sizeof(part[0]), "SM %% not available on MIG (GPU %d)", p->mig_gpu);
	if (p->has_driver_memory) {
		fmt_bytes(p->driver_memory, b, sizeof(b));
		snprintf(part[n++], sizeof(part[0]), "%s driver-accounted", b);
	}
	if (p->has_nccl)
		snprintf(part[n++], sizeof(part[0]), "NCCL %.0f in flight", p->nccl_inflight);
	if (p->nccl_inflight && p->nccl_stall_of[0])
		snprintf(part[n++], sizeof(part[0]), "%.1f s since a completion (%s)", p->nccl_stall, p->nccl_stall_of);
	if (p->nccl_wait_of[0])
		snprintf(part[n++], sizeof(part[0]), "waited for %.1f s (%s)", p->nccl_wait, p->nccl_wait_of);
	snprintf(part[n++], sizeof(part[0]), "%.0f probe hit%s", p->hits, p->hits == 1 ? "" : "s");
	len = snprintf(line, sizeof(line), "%s", part[0]);
	for (size_t i = 1; i < n; i++) {
		if (len + 2 + (int)strlen(part[i]) + (i + 1 < n) > width) { /* "," after it, unless last */
			if (!dry)
				put(o, TOP_HEADER, "%s,", line);
			lines++;
			len = snprintf(line, sizeof(line), "    %s", part[i]);
		} else {
			len += snprintf(line + len, sizeof(line) - (size_t)len, ", %s", part[i]);
		}
		if (len >= (int)sizeof(line))
			len = (int)sizeof(line) - 1;
	}
	if (!dry)
		put(o, TOP_HEADER, "%s", line);
	return lines;
}

/* The selected process: a line, its kernels (at most k), its copies per GPU. */
static void detail(struct out *o, const struct top_frame *f, const struct top_proc *p, size_t k)
{
	bool totals = f->ended || p->exited; /* no rates left to show: what it did */
	char a[32], cells[NR_DIRS][32];
	int kw = o->width - 25; /* "  NAME RUNS/s RUNS" */

	detail_head(o, p, false);
	if (p->nr_kernels && k) {
		/* runs: launched, and run inside graph launches (--cudatrace's LAUNCHES + GRAPH) */
		put(o, TOP_TEXT, "  %-*s %10s %11s", kw > 10 ? kw : 10, "KERNEL", "RUNS/s", "RUNS");
		for (size_t i = 0; i < p->nr_kernels && i < k; i++) {
			fmt_count(p->kernels[i].rate, a, sizeof(a));
			put(o, TOP_TEXT, "  %-*.*s %10s %11.0f", kw > 10 ? kw : 10, kw > 10 ? kw : 10, p->kernels[i].name, a,
			    p->kernels[i].total);
		}
	}
	if (!p->nr_copies)
		return;
	put(o, TOP_TEXT, "  %-8s %10s %10s %10s %10s %10s  %s", "COPIES", dirs[0], dirs[1], dirs[2], dirs[3], dirs[4],
	    totals ? "bytes copied" : "per second");
	for (size_t i = 0; i < p->nr_copies;) {
		int gpu = p->copies[i].gpu;
		char where[16];

		for (size_t d = 0; d < NR_DIRS; d++)
			snprintf(cells[d], sizeof(cells[d]), "-");
		for (; i < p->nr_copies && p->copies[i].gpu == gpu; i++) {
			int d = dir_index(p->copies[i].dir);

			if (d < (int)NR_DIRS && totals)
				fmt_bytes(p->copies[i].total, cells[d], sizeof(cells[d]));
			else if (d < (int)NR_DIRS)
				num__rate(p->copies[i].rate, cells[d], sizeof(cells[d]));
		}
		snprintf(where, sizeof(where), gpu >= 0 ? "gpu%d" : "host", gpu);
		put(o, TOP_TEXT, "  %-8s %10s %10s %10s %10s %10s", where, cells[0], cells[1], cells[2], cells[3],
		    cells[4]);
	}
}

/* NVML's throttle reasons, short (the daemon's families spell them out) */
static const struct {
	uint64_t bit;
	const char *name;
} throttles[] = {
	{ 0x1, "idle" }, { 0x2, "app_clocks" }, { 0x4, "sw_power" }, { 0x8, "hw_slowdown" }, { 0x10, "sync_boost" },
	{ 0x20, "sw_thermal" }, { 0x40, "hw_thermal" }, { 0x80, "power_brake" }, { 0x100, "display" },
};

static void gpu_throttle(const struct gp_nvml_gpu *g, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	if (!(g->have & GP_NVH_THROTTLE)) {
		snprintf(buf, len, "-");
		return;
	}
	for (size_t t = 0; t < sizeof(throttles) / sizeof(throttles[0]) && used < len; t++)
		if (g->throttle & throttles[t].bit)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "", throttles[t].name);
	if (g->throttle & ~(uint64_t)0x1ff && used < len)
		snprintf(buf + used, len - used, "%sother", used ? "," : "");
	if (!buf[0])
		snprintf(buf, len, "none");
}

/* "GPU0 util 75% mem 118 MiB/140 GiB 685 W 61 C throttle sw_power,sw_thermal"; "GPU1 (MIG: no
 * per-process SM%) ...", "GPU0 XID x2 ..." (errors since top started);
 * a figure NVML did not give is "-" */
static void gpu_line(struct out *o, const struct gp_nvml_gpu *g)
{
	char util[8] = "-", mem[48] = "-", used[20], total[20], power[16] = "- W", temp[16] = "- C", thr[96], xid[32] = "";

	if (g->have & GP_NVH_UTIL)
		snprintf(util, sizeof(util), "%u%%", g->util_gpu);
	if (g->have & GP_NVH_MEMORY) {
		num__bytes(g->mem_used, used, sizeof(used));
		num__bytes(g->mem_total, total, sizeof(total));
		snprintf(mem, sizeof(mem), "%s/%s", used, total);
	}
	if (g->have & GP_NVH_POWER)
		snprintf(power, sizeof(power), "%.0f W", g->power_w);
	if (g->have & GP_NVH_TEMP)
		snprintf(temp, sizeof(temp), "%u C", g->temp_c);
	gpu_throttle(g, thr, sizeof(thr));
	if (g->xid_total)
		snprintf(xid, sizeof(xid), " XID x%llu", (unsigned long long)g->xid_total);
	/* what must be read first (MIG: no per-process figure, XID errors) before the line
	 * can be cut at the screen's edge */
	put(o, TOP_TEXT, "GPU%u%s%s util %s mem %s %s %s throttle %s", g->index,
	    g->mig ? " (MIG: no per-process SM%)" : "", xid, util, mem, power, temp, thr);
}

/* The NVML lines, at most max (0: every one): a line per GPU, the last one shown saying how
 * many more there are; or why NVML gives nothing. */
static void gpu_lines(struct out *o, const struct top_frame *f, size_t max)
{
	if (f->nvml_state != GP_NVML_LOADED && f->nvml_state != GP_NVML_STARTING) {
		put(o, TOP_TEXT, "NVML not used (%s): %s", gp_nvml_state_name(f->nvml_state), f->nvml_why);
		return;
	}
	if (!f->nr_gpus) {
		put(o, TOP_TEXT, "NVML: no read yet");
		return;
	}
	for (unsigned int i = 0; i < f->nr_gpus; i++) {
		if (max && i + 1 == max && f->nr_gpus > max) {
			put(o, TOP_TEXT, "... and %u more GPUs (top --batch lists every one)", f->nr_gpus - i);
			return;
		}
		gpu_line(o, &f->gpus[i]);
	}
}

static size_t nr_gpu_lines(const struct top_frame *f)
{
	if (!f->nvml)
		return 0;
	return f->nvml_state != GP_NVML_LOADED && f->nvml_state != GP_NVML_STARTING ? 1 : f->nr_gpus ? f->nr_gpus : 1;
}

static void footer(struct out *o, const struct top_frame *f, enum top_col col, bool reverse)
{
	put(o, TOP_TITLE, "q quit  < > sort: %s%s  r reverse  up/down select%s", col_title[col],
	    reverse ? " (smallest first)" : "", f->ended ? "  - ended: final figures" : "");
}

size_t top__layout(const struct top_frame *f, int width, int height, enum top_col col, bool reverse,
		   size_t selected, struct top_line *lines, size_t max)
{
	struct out o = { .lines = lines, .max = max, .width = width };
	struct widths w = widths_for(width, f->nvml);
	const struct top_proc *sel = f->nr_procs ? &f->procs[selected < f->nr_procs ? selected : f->nr_procs - 1] : NULL;
	size_t kernels = sel ? sel->nr_kernels : 0, copies = sel && sel->nr_copies ? 1 + nr_gpus(sel) : 0;
	size_t rows = f->nr_procs, first = 0, dl, head = 0, gl = nr_gpu_lines(f), nl = nr_nccl_lines(f);

	if (height > 0) {
		/* 2 title lines, the GPU lines, the table's header, the footer: the rest is
		 * shared between the table (3 rows at least) and the selected process's detail;
		 * the GPU lines leave 5 for them */
		size_t space = (size_t)height > 4 ? (size_t)height - 4 : 0, want_rows = rows < 3 ? rows : 3;

		if (gl + 5 > space)
			gl = space > 6 ? space - 5 : gl ? 1 : 0;
		space -= gl < space ? gl : space;
		nl = space > 5 + nl ? nl : space > 6 ? 1 : 0;
		space -= nl;

		if (kernels > 10)
			kernels = 10;
		head = sel ? detail_head(&o, sel, true) : 0;
		dl = sel ? head + (kernels ? 1 + kernels : 0) + copies : 0;
		while (dl + want_rows > space && kernels) { /* fewer kernels before fewer rows */
			kernels--;
			dl = head + (kernels ? 1 + kernels : 0) + copies;
		}
		if (dl > space)
			dl = space;
		rows = space - dl < f->nr_procs ? space - dl : f->nr_procs;
		if (selected >= rows && rows) /* scroll so the selected row shows */
			first = selected - rows + 1;
	}
	title(&o, f);
	if (f->nvml)
		gpu_lines(&o, f, height > 0 ? gl : 0);
	if (nl || height <= 0)
		nccl_lines(&o, f, height > 0 ? nl : 0);
	table_header(&o, &w);
	for (size_t i = first; i < f->nr_procs && i < first + rows; i++)
		table_row(&o, &w, &f->procs[i], &f->procs[i] == sel && height > 0);
	if (height <= 0) /* --batch: no one selects, so every process's detail */
		for (size_t i = 0; i < f->nr_procs; i++)
			detail(&o, f, &f->procs[i], 10);
	else if (sel && o.n + 1 + head <= (size_t)height)
		detail(&o, f, sel, kernels);
	if (height > 0 && o.n + 1 > (size_t)height)
		o.n = (size_t)height - 1;
	while (height > 0 && o.n + 1 < (size_t)height) /* the keys on the last line */
		put(&o, TOP_TEXT, "%s", "");
	if (height > 0) /* --batch prints data only: no one presses keys there */
		footer(&o, f, col, reverse);
	return o.n;
}
