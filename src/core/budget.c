/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The overhead budget (budget.h): the links it may close (or, without uprobe_multi, the
 * uprobe events it may disarm: uevent.h; "links" below means either), the hits array, and a thread
 * that cuts time into periods (docs/design.md, "The overhead budget"). Why a thread: a
 * window can be a millisecond long while the front ends' loops wake every 100 ms, and
 * making a link waits for an RCU grace period before its breakpoints go in, closing one
 * for grace periods before and after they go (tens of ms here), which no report should
 * wait for; links are closed from short-lived threads of their own. Breakpoints come and
 * go some time after the system calls, so what counts is the window flag BPF reads: hits
 * outside it are strays, priced and not counted. Two locks: `links` (groups and their
 * link fds, held across the system calls) and `acc` (accounts and statistics, held
 * briefly; snapshots read them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core/attach.h"
#include "core/budget.h"
#include "gpuprobe.h"
#include "lib/u64map.h"
#include "core/uevent.h"
#include "lib/util.h"

#define PERIOD_NS 100000000ULL    /* a period while every call is seen */
#define TICK_NS 5000000ULL        /* how often a waiting thread looks at stop and holds */
#define CPU_POLL_NS 20000000ULL   /* how often the sampled processes' CPU clocks are read */
#define EXACT_CHECK_NS 5000000ULL /* how often the rates are checked while all is seen */
#define WINDOW_TICK_NS 500000ULL  /* how often a window looks at its hits (at least 2 ms long) */
#define GUARD 2.0                 /* a window ends at this many times its period's allowance */
#define MIN_WINDOW_HITS 32        /* a window goes on until a process that called has this many */
#define WIDEN_S 0.05              /* but no longer than this past its start (see window_thin) */
#define BURST_CPU 0.02            /* a process on a CPU this share of a period ran (keep_rate) */
#define JITTER 0.2                /* a sampled period is its length x (1 +- this), at random */
/* The longest planned period, for a process the least window cannot hold at GP_PERIOD_S (a
 * probe hit dear: 6.1 under QEMU's TCG): its jittered lengths stay within GP_MAX_PERIOD_S. */
#define OVER_PERIOD_S (GP_MAX_PERIOD_S / (1 + JITTER))
/* The share of the budget aimed at. The rest is for what the price misses: the reaction to
 * a rate that rose, the probes it does not sample, and making and closing links. A hit is
 * priced cold (src/core/calibrate.c; a launch with its latency probe ~6 us here, where the
 * stand-in's workload measured 4.6-5.1 us a launch at 1000 launches/s), so at 35 % of a
 * 1 % budget every call is counted up to ~600 launches/s (test_budget's low phase is 200/s).
 * Measured: test_budget on a loaded 2-CPU machine paid 1.02-1.08 % of a 1 % budget aimed
 * at half with the warm price, 0.85 % at 0.35, +0.5 % with the cold price at 0.35. On the
 * H200 a PyTorch loop paid +2.16 % (1.53-2.81) under a 1 % budget while its probes' hits
 * explain ~0.5 %: making and closing the links is the suspect (bench/gpu/results-inproc-
 * h200.md), hence 500-ms sampled periods (sampling.h); a lower aim would not reach it. */
#define MARGIN 0.35
/* A process's exact allowance: the calls it may make, all seen, before it can make the budget
 * sample: the share of time aimed at (MARGIN of the budget) over this many seconds, the calls
 * one window of the longest period can price (at 1 % and ~4 us a call here, ~850 calls).
 * Links are shared by every process, so one short process that called fast was enough to
 * take the probes off for a 500-ms period, and the short processes after it went unseen
 * whole (the daemon at its default budget counted 703 of four back-to-back runs' 2,812
 * launches). A process pays for its own allowance once, and only itself. Not more: a paced
 * process that falls behind while every call is probed catches up in the first window,
 * which then reads fast (at the whole budget's share of a second, the stand-in's
 * 200,000/s phase read 2,182 calls in a 6.8-ms window, and its estimate ran 1.3-2.7 times
 * its count). */
#define EXACT_ALLOWANCE_S 1.0
/* But never fewer calls than this: a process that makes fewer cannot be estimated (a window
 * goes on until MIN_WINDOW_HITS, and an estimate needs windows on both sides of an unseen
 * part), so sampling it would only lose its calls. Where a probe hit is dear (6.1 under
 * QEMU's TCG: a hit 15-60 us, a counted call ~95 us) the share of a second alone priced
 * 37 calls, and short jobs of 100 calls were sampled away; there the allowance costs a
 * process more than the budget's share of a second, once (its report says so: a process
 * over the budget by its allowance alone is `allowance_over`, and proc_over leaves it out). */
#define MIN_EXACT_CALLS (8 * MIN_WINDOW_HITS)
#define RING 256                  /* attach/detach durations kept for the medians */
#define MAX_CHANGES 1024
#define SLOTS (GP_HIT_SLOTS + 1)  /* the last sums the processes that found theirs taken */
#define MAP_SLOTS (GP_HIT_WINDOW + 1)

struct group {
	int enter, leave;
	int file_fd;    /* the library, held: windows attach through path, "/proc/self/fd/N" of it */
	char *path;
	__u64 *offs, *cookies, *roffs, *rcookies;
	int n, nr;
	__u32 pid;
	const volatile int64_t *hold;
	int fd_enter, fd_leave; /* -1 while detached */
	/* Without uprobe_multi links: an event per probe, entries then returns, held for the
	 * group's life, and the descriptors that arm them while attached (-1 while detached) */
	struct uevent **ue;
	int *armed;
	int nue;
};

/* A thread's seconds on a CPU and waiting for one (its schedstat). */
struct thread_stat {
	uint32_t tid;
	double run, wait;
};

/* A slot's one-thread gaps (bpf/gpuprobe.h): their count, their length, the length of those
 * the thread slept in, and the hits before a window's first sleep. */
struct gap_counts {
	uint64_t gaps, gap_ns, sleep_ns, head, stray_calls;
	uint64_t slept_ns; /* when it last first slept in a window (not a count) */
};

/* The least share of a process's time in the probes that the budget can hold it at: its
 * least window (GP_MIN_WINDOW_S) of each sampled period (the planner lengthens them there,
 * up to OVER_PERIOD_S) at its share of the window in probes, the hits its probes
 * take while they go in and out (strays, a window's worth each period) and the probes never
 * sampled (its `fixed` share). Where a probe hit is dear
 * (6.1 under QEMU's TCG: 15-60 us) that passes a 1 % budget, and no plan can hold it: the
 * budget holds the floor, and says so once per process (floor_said). Summed over the
 * periods whose plan was at the least for it (n of them): their mean is the floor. */
struct floor {
	double sum, n;
	double T, stray_s; /* the last such period's length and strays' seconds (said) */
	bool said;
};

struct account {
	uint32_t pid;  /* 0: no process (the spill slot is always accounted) */
	uint64_t last, last_stray, last_fixed; /* its hits, strays and priced hits at the last boundary */
	uint64_t last_active; /* and its hits' active_ns (bpf/gpuprobe.h) */
	struct gap_counts last_gap; /* and how its hits' gaps went (bpf/budget.bpf.h) */
	struct gp_account acc;
	double rho, stray_s; /* the last period's: share of the window in probes, strays' seconds
			      * (of its wall time: shared by the threads that called at once) */
	double rho_n;        /* the hits of the window its rho was measured in (keep_rate) */
	double callers;      /* how many threads took its last period's hits at once (>= 1;
			      * gp_window_callers) */
	double fixed;        /* the last period's share of time in the probes never sampled */
	double cpu_last;     /* its CPU seconds at the last boundary (negative: not known) */
	double busy;         /* its calling threads' last known busy share (thread_busy; negative: none) */
	double work;         /* the share of its time it works, where it works in bursts (bursty; else 1) */
	struct thread_stat *threads; /* its threads' times then (threads_busy), nthreads of them */
	int nthreads;
	double cpu_share;    /* its CPU seconds a second over the last period (negative: not known) */
	double cpu_poll;     /* its CPU seconds when last polled since the boundary (poll_cpu;
			      * negative: none), what its exit's part is taken at once it is gone */
	uint64_t off_ns;     /* when the window of its pending unseen part closed (0: none) */
	/* The calls of the counted kinds its probes caught while the next window's went in
	 * (attach_poll): stray_calls at the last look before any came, and when; at the last
	 * look since (sp_t1 0: none came) */
	uint64_t sp_t0, sp_n0, sp_t1, sp_n1;
	uint64_t exit_ns;    /* when it exited (gp_budget__exited; 0: not known) */
	uint64_t born_ns;    /* its first driver call, in the period its account began (born;
			      * 0: before it, or not known) */
	bool closed;         /* accounted to its exit already (gp_budget__exited) */
	bool fresh;    /* accounted in the last period */
	struct floor floor;  /* the least share the budget can hold it at (budget_floor) */
};

/* A process new to the budget, by its hit slot (budget.h, enum gp_budget_unarmed). Its
 * state and descriptors change under b->links, from the budget's thread (and
 * gp_budget__remove_file, gp_budget__stop). */
enum fresh_state {
	FRESH_NONE,    /* no owner known */
	FRESH_PENDING, /* within its allowance while every call is seen: armed when sampling begins */
	FRESH_ARMED,   /* its probes armed for it alone, GP_SLOT_EXACT set */
	FRESH_DONE,    /* allowance spent, gone, or not armed (counted): the shared probes' */
};

struct fresh {
	uint32_t pid;       /* the slot's owner this is about */
	uint32_t uid;
	enum fresh_state state;
	bool armed_ever;    /* seen from its start: its account begins with nothing unseen */
	int *fds, nfds;     /* the per-process perf events arming its probes */
	uint64_t off_ns;    /* when they were disarmed (account_period takes it; 0: none) */
	uint64_t since_ns;  /* its first driver call (the slot taken, or its cuInit returned) */
	uint64_t end_ns;    /* its exit, or (found gone: no exit record may come) its last call */
	uint64_t armed_ns;
	uint64_t done_ns;   /* when its last probe went in (0: not all did) */
	uint64_t gap_ns;    /* from then until its probes were armed, outside a window: unseen */
	bool gap_alone;     /* the gap began at its first driver call (no window of it before) */
	uint64_t win_ns;    /* else, in the window: its part of it (from win_from), before the gap */
	uint64_t win_from;
	uint64_t arm_hits;  /* its counted hits when its arm began (a window's: split_gap) */
};

/* What the last period says of the next: its length and share, the least of every
 * process's (links are shared). */
struct plan {
	double period_s, fraction;
	bool over;       /* the least window passes a process's share aimed at (MARGIN): planned at it */
	bool fixed_over; /* the probes never sampled take more than the share alone */
	bool past;       /* what the report calls over: the least window, or the probes never
			  * sampled alone, pass the budget itself for a process */
};

struct ended {
	struct gp_account acc;
	struct floor floor;
	uint64_t end_ns;
	uint64_t off_ns; /* struct account's */
};

/* What the probes' own programs cost, measured with the kernel's BPF run-time statistics
 * from the start and every 10 minutes (BPF_ENABLE_STATS: they cost every BPF program on the
 * node two clock reads while on). The first measure ends after PROG_FIRST_RUNS runs, so that
 * the first sampled windows are priced with their programs: it ended after 2000 runs, which a
 * process sampled at once took 2-4 periods to make, and until then a call-bound model priced a
 * launch at its traps alone (1.5 us of the 2.4 us it cost warm here) and read rate_app's tight
 * loop at 0.7x its rate; a second, longer one follows at once. The first runs are left out:
 * a process's first calls make its maps' entries, and 200 runs from the start cost 1.9 us
 * where the next 2000 cost 0.8. */
#define PROG_MEASURE_NS (10ULL * 1000000000ULL) /* at most this long */
#define PROG_WARMUP_RUNS 200                    /* runs left out before the first measure */
#define PROG_FIRST_RUNS 200                     /* the first measure: until this many runs */
#define PROG_MEASURE_RUNS 2000                  /* the others */
#define PROG_REMEASURE_NS (600ULL * 1000000000ULL)

struct prog_cost {
	int stats_fd;          /* BPF_ENABLE_STATS while measuring, else -1 */
	uint64_t since, next;  /* when the measure began; when the next begins */
	uint64_t ns0[2], runs0[2]; /* entry and return programs at its start */
	double ns[2];          /* mean ns per run, entry and return (0: not measured) */
	unsigned measures;     /* measures done (the warm-up the first) */
	bool refused;          /* EPERM: not without CAP_SYS_ADMIN */
};

struct gp_budget {
	double pct, target;
	double cost, price;       /* of one counted call, its traps and programs: with the traps
				   * warm (the estimates' models) and cold (what the budget holds) */
	double fixed_price;       /* of a call to a probe never sampled: its entry and return
				   * traps, cold, and (a proxy) the sampled probes' programs */
	double trap, cold;        /* of one probe hit (calibrated: the empty-program trap, warm
				   * and cold: src/core/calibrate.c) */
	bool returns;             /* the sampled calls have return probes: two traps each */
	bool multi;               /* uprobe_multi links, else uprobe events (uevent.h) */
	struct prog_cost prog;
	int hits_fd;
	struct gp_hit_slot *hits; /* mmapped */
	size_t map_len;
	pthread_t thread;
	bool started;
	int stop;                 /* __atomic */
	pthread_mutex_t links;    /* groups, fds, attached */
	struct group *groups;
	int ngroups;
	bool attached;
	pthread_mutex_t acc;      /* everything below */
	struct account *accounts; /* SLOTS of them */
	struct u64map *ended;     /* pid -> struct ended */
	double fraction;
	bool over;
	uint64_t periods, sampled_periods, windows;
	double attach_ms[RING], detach_ms[RING];
	uint64_t nr_attach, nr_detach;
	struct gp_budget_change changes[MAX_CHANGES];
	size_t nr_changes;
	int closing;              /* closer threads running */
	pthread_cond_t closed;
	uint32_t *snap_pid;       /* the hits array as read at a boundary */
	uint32_t *watch;          /* the slots accounted in the last period, for the window's guard */
	size_t nr_watch;
	uint64_t cut_windows;     /* windows ended early: a process took its period's hits */
	uint64_t *snap_hits, *snap_stray, *snap_fixed, *snap_active;
	struct gap_counts *snap_gap;
	double period_s;          /* of the sampled periods now */
	double last_unseen;       /* seconds of the last period's that went unseen */
	uint32_t epoch;           /* the number of the window last opened (set_window) */
	uint64_t rng;             /* xorshift state: the sampled periods' lengths */
	uint64_t cur_start, cur_off; /* the period now: its start, its window's close (0: open) */
	struct fresh *fresh;      /* GP_HIT_SLOTS of them */
	uint32_t armed[GP_BUDGET_FRESH_MAX]; /* the slots FRESH_ARMED */
	int nr_armed;
	uint64_t fresh_seq;       /* slots taken (GP_HIT_WINDOW's hits) at the last look */
	uint64_t rate_start, rate_n; /* arms in the second from rate_start */
	uint64_t gone_ns;         /* when the armed processes were last looked for gone */
	uint64_t cpu_poll_ns;     /* when the sampled processes' CPU clocks were last read */
	uint64_t fresh_armed, unarmed[GP_UNARMED__COUNT]; /* under acc */
};

/* -------------------------------------------------------------------------------------
 * The links */

/* Not the events (g->ue: slow to free, callers free many at once). */
static void group_free(struct group *g)
{
	for (int i = 0; g->armed && i < g->nue; i++)
		if (g->armed[i] >= 0)
			close(g->armed[i]);
	free(g->armed);
	free(g->ue);
	if (g->file_fd >= 0)
		close(g->file_fd);
	free(g->path);
	free(g->offs);
	free(g->cookies);
	free(g->roffs);
	free(g->rcookies);
}

/* The offsets libbpf-style arrays hold, without the -1 entries. */
static int compact(const long long *offsets, const __u64 *cookies, int n, __u64 **offs, __u64 **cks)
{
	int cnt = 0;

	*offs = calloc((size_t)(n ? n : 1), sizeof(**offs));
	*cks = calloc((size_t)(n ? n : 1), sizeof(**cks));
	if (!*offs || !*cks)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		if (offsets[i] < 0)
			continue;
		(*offs)[cnt] = (__u64)offsets[i];
		(*cks)[cnt++] = cookies[i];
	}
	return cnt;
}

/* Tests: every attach of a window takes GPUPROBE_TEST_ATTACH_MS ms longer, its probes going
 * in one at a time over them (a loaded machine: under ASan at load 20 an attach took 6.3 s,
 * longer than the process's life, while the probes already in caught its calls as strays);
 * a process's own arming (fresh_arm) GPUPROBE_TEST_ARM_MS longer, its events one at a time
 * (as under QEMU's TCG, where 32 took 66-73 ms). 0: none. */
static unsigned test_ms(const char *var)
{
	const char *e = getenv(var);
	long v = e ? strtol(e, NULL, 10) : 0;

	return v > 0 && v < 60000 ? (unsigned)v : 0;
}

static void test_pause(const char *var, int parts)
{
	unsigned ms = test_ms(var);

	if (ms && parts > 0)
		usleep((useconds_t)(ms * 1000ULL / (unsigned)parts));
}

/* A slow attach's strays, timed (the comment above stray_calls_of) */
static void attach_poll(struct gp_budget *b);
static void span_begin(struct gp_budget *b, uint64_t now);
static void span_take(struct account *a, struct gp_window *w, uint64_t t0);

/* A look just before a probe goes in: the strays' span begins at the last look before any
 * came (attach_poll), and a probe catches some before the look after it. Before the attach's
 * first probe (*first), the span begins anew: strays until then were the last window's
 * breakpoints going, not this attach's (under the test hook with uprobe_multi links the span
 * so began 1.5 s before any probe was in). */
static void before_probe(struct gp_budget *b, bool *first)
{
	if (*first)
		span_begin(b, gp_mono_ns());
	else
		attach_poll(b);
	*first = false;
}

/* Without uprobe_multi: each probe's event armed, entries first (the calls its probes catch
 * meanwhile counted after each: attach_poll). */
static int group_arm(struct gp_budget *b, struct group *g, bool *first)
{
	for (int i = 0; i < g->nue; i++) {
		int fd;

		if (g->armed[i] < 0) {
			test_pause("GPUPROBE_TEST_ATTACH_MS", g->nue);
			before_probe(b, first);
		}
		fd = g->armed[i] >= 0 ? g->armed[i] : uevent__arm(g->ue[i], g->pid);

		if (fd < 0)
			return fd;
		g->armed[i] = fd;
		attach_poll(b);
	}
	return 0;
}

/* Entry links first, then return links: a return probe then always has its entry seen. */
static int group_attach(struct gp_budget *b, struct group *g, bool *first)
{
	int fd;

	if (!b->multi)
		return group_arm(b, g, first);
	if (g->fd_enter < 0 && g->n) {
		test_pause("GPUPROBE_TEST_ATTACH_MS", 2);
		before_probe(b, first);
		fd = attach__multi_fd(g->enter, g->path, g->offs, g->cookies, g->n, g->pid, false);
		if (fd < 0)
			return fd;
		g->fd_enter = fd;
		attach_poll(b);
	}
	if (g->fd_leave < 0 && g->leave >= 0 && g->nr) {
		test_pause("GPUPROBE_TEST_ATTACH_MS", 2);
		fd = attach__multi_fd(g->leave, g->path, g->roffs, g->rcookies, g->nr, g->pid, true);
		if (fd < 0)
			return fd;
		g->fd_leave = fd;
	}
	return 0;
}

static void note_ms(double *ring, uint64_t *nr, double ms)
{
	ring[*nr % RING] = ms;
	(*nr)++;
}

struct closer {
	struct gp_budget *b;
	int *fds;           /* closed in order */
	int n;
	struct uevent **ue; /* then freed (a group removed), NULL: none */
	int nue;
};

/* A uprobe_multi link closed: its breakpoints go once the kernel has waited for an RCU
 * grace period (register_for_each_vma), and close() then waits for RCU Tasks Trace and
 * SRCU ones. Armed uprobe events (no uprobe_multi) go without those waits: one thread
 * closes them all, in order (from threads of their own they took longer, bench/pe_sampling.c). */
static void *closer_main(void *arg)
{
	struct closer *c = arg;
	struct gp_budget *b = c->b;
	uint64_t t0 = gp_mono_ns(), t1;

	for (int i = 0; i < c->n; i++)
		close(c->fds[i]);
	t1 = gp_mono_ns();
	if (c->ue)
		uevent__free_all(c->ue, c->nue);
	/* -v: the probed parts of a period, for bench/gpu/inproc.py (CLOCK_MONOTONIC ns) */
	gp_log(GP_LOG_DEBUG, "budget: link closed at %llu", (unsigned long long)t1);
	pthread_mutex_lock(&b->acc);
	note_ms(b->detach_ms, &b->nr_detach, (double)(t1 - t0) / 1e6);
	b->closing--;
	pthread_cond_broadcast(&b->closed);
	pthread_mutex_unlock(&b->acc);
	free(c->fds);
	free(c->ue);
	free(c);
	return NULL;
}

/* Closes fds[0..n) (taken: the caller's copy is freed here), then frees ue[0..nue) (taken,
 * may be NULL), in a thread of their own; here when no thread can be made. */
static void close_many_async(struct gp_budget *b, int *fds, int n, struct uevent **ue, int nue)
{
	struct closer *c = malloc(sizeof(*c));
	pthread_attr_t at;
	pthread_t t;
	int r = -1;

	if (c) {
		*c = (struct closer){ b, fds, n, ue, nue };
		pthread_mutex_lock(&b->acc);
		b->closing++;
		pthread_mutex_unlock(&b->acc);
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		r = pthread_create(&t, &at, closer_main, c);
		pthread_attr_destroy(&at);
		if (!r)
			return;
		pthread_mutex_lock(&b->acc);
		b->closing--;
		pthread_mutex_unlock(&b->acc);
		free(c);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	if (ue)
		uevent__free_all(ue, nue);
	free(ue);
}

/* Closes fd in a thread of its own. */
static void close_async(struct gp_budget *b, int fd)
{
	int *one = malloc(sizeof(*one));

	if (!one) {
		close(fd);
		return;
	}
	*one = fd;
	close_many_async(b, one, 1, NULL, 0);
}

/* The armed descriptors of g appended to fds (room for g->nue more), g's set to -1. */
static int take_armed(struct group *g, int *fds, int n)
{
	for (int i = 0; i < g->nue; i++)
		if (g->armed[i] >= 0) {
			fds[n++] = g->armed[i];
			g->armed[i] = -1;
		}
	return n;
}

/*
 * Every sampled link closed, all at once, each from a thread of its own: closed one after
 * the other, the second would wait for the first one's grace periods with its breakpoints
 * still in (a function's breakpoint goes when both its entry and return links have).
 * Called with b->links held; the window is closed already (what the links still catch are
 * strays).
 */
static void detach_all(struct gp_budget *b)
{
	if (!b->multi) {
		int total = 0, n = 0, *fds;

		for (int i = 0; i < b->ngroups; i++)
			total += b->groups[i].nue;
		fds = malloc((size_t)(total ? total : 1) * sizeof(*fds));
		for (int i = 0; i < b->ngroups; i++) {
			if (fds) {
				n = take_armed(&b->groups[i], fds, n);
				continue;
			}
			for (int j = 0; j < b->groups[i].nue; j++) /* no memory: here, in order */
				if (b->groups[i].armed[j] >= 0)
					close(b->groups[i].armed[j]), b->groups[i].armed[j] = -1;
		}
		if (fds && n)
			close_many_async(b, fds, n, NULL, 0);
		else
			free(fds);
		b->attached = false;
		return;
	}
	for (int i = 0; i < b->ngroups; i++) {
		struct group *g = &b->groups[i];

		if (g->fd_leave >= 0)
			close_async(b, g->fd_leave);
		if (g->fd_enter >= 0)
			close_async(b, g->fd_enter);
		g->fd_leave = g->fd_enter = -1;
	}
	b->attached = false;
}

/* Every group attached, entry links before return links; a group that cannot be is
 * logged and stays out (its calls go unseen: the window was shorter for them). */
static void attach_all(struct gp_budget *b)
{
	uint64_t t0 = gp_mono_ns();

	bool first = true;

	span_begin(b, t0);
	for (int i = 0; i < b->ngroups; i++) {
		int r = group_attach(b, &b->groups[i], &first);

		attach_poll(b);

		if (r)
			gp_log(GP_LOG_WARN, "budget: cannot attach the sampled probes to %s again: %s",
			       b->groups[i].path, strerror(-r));
	}
	b->attached = true;
	pthread_mutex_lock(&b->acc);
	note_ms(b->attach_ms, &b->nr_attach, (double)(gp_mono_ns() - t0) / 1e6);
	pthread_mutex_unlock(&b->acc);
}

static bool held(struct gp_budget *b)
{
	bool h = false;

	pthread_mutex_lock(&b->links);
	for (int i = 0; i < b->ngroups && !h; i++)
		h = b->groups[i].hold && *b->groups[i].hold;
	pthread_mutex_unlock(&b->links);
	return h;
}

/* -------------------------------------------------------------------------------------
 * Processes new to the budget, armed for themselves (budget.h, enum gp_budget_unarmed)
 *
 * The shared probes are off outside the windows for every process, so a short job that
 * started and ended between two windows went unseen whole beside one fast process (and its
 * launches, no estimate, no series, no counter). A process's first driver call (cuInit,
 * never sampled) takes its hit slot; the budget's thread, which looks at the slots each
 * tick (5 ms) when one was taken, arms that process's sampled probes for it alone until it
 * has made the calls of its exact allowance (or ends), and sets GP_SLOT_EXACT: BPF counts
 * its every call, window or not. With tracefs uprobe events (the budget's mechanism
 * wherever they exist) arming is a program-less perf event per probe for that PID
 * (uevent__arm: 32 probes ~0.4 ms here), the breakpoint is one for all, and its program
 * runs once per hit however many events arm it. */

static void set_exact(struct gp_budget *b, size_t i, bool on)
{
	if (on)
		__atomic_fetch_or(&b->hits[i].flags, GP_SLOT_EXACT, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&b->hits[i].flags, ~(__u32)GP_SLOT_EXACT, __ATOMIC_RELEASE);
}

/* A process's exact allowance, in calls (EXACT_ALLOWANCE_S, MIN_EXACT_CALLS). */
static double allowance_calls(const struct gp_budget *b)
{
	double n = b->price > 0 ? b->target * EXACT_ALLOWANCE_S / b->price : MIN_EXACT_CALLS;

	return n > MIN_EXACT_CALLS ? n : MIN_EXACT_CALLS;
}

/* Whether slot i's owner has made the calls of its exact allowance (counted hits). */
static bool fresh_spent(const struct gp_budget *b, size_t i)
{
	return (double)__atomic_load_n(&b->hits[i].hits, __ATOMIC_RELAXED) >= allowance_calls(b);
}

static void count_unarmed(struct gp_budget *b, struct fresh *f, enum gp_budget_unarmed why)
{
	static const char *const what[] = { "processes armed at once or a second", "its user's share of them",
					    "an error", "uprobe_multi links arm no process alone", "" };

	f->state = FRESH_DONE;
	pthread_mutex_lock(&b->acc);
	if (!b->unarmed[why]++)
		gp_log(GP_LOG_WARN, "budget: PID %u is new but cannot be counted exactly (%s): its calls are sampled with the others' (counted in gpuprobe_budget_unarmed_processes_total)",
		       f->pid, what[why]);
	pthread_mutex_unlock(&b->acc);
}

static uint32_t uid_of(uint32_t pid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	return stat(path, &st) ? UINT32_MAX : (uint32_t)st.st_uid;
}

/* Slot i's owner took it at since (its first driver call) and the first of its probes (the
 * table's first entry: cuLaunchKernel's) was armed at armed: what of that time no window
 * covered went unseen (its account says so: an estimate, never a count short of its calls).
 * Not to when all were armed: the calls counted while the others went in (32 events, 66-73
 * ms under QEMU's TCG) were made in that gap and counted as the seen part's, whose rate then
 * read high. The stand-in's cuInit returns at once; a GPU's takes far longer than the
 * arming. Called with b->acc held. */
static void note_gap(struct gp_budget *b, struct fresh *f, uint64_t since, uint64_t armed, bool ready)
{
	uint64_t gap = 0, from;

	/* the unseen part between in this period, after its window (a process there at the last
	 * boundary was accounted then, its unseen part with it) */
	from = since > b->cur_off ? since : b->cur_off;
	if (ready && since && b->cur_off && armed > from)
		gap += armed - from;
	f->since_ns = since;
	f->gap_ns = gap;
	f->gap_alone = since >= b->cur_off;
	from = since > b->cur_start ? since : b->cur_start;
	f->win_from = from;
	f->win_ns = !f->gap_alone && b->cur_start && b->cur_off > from ? b->cur_off - from : 0;
}

/* Whether pid has ended: gone, or a zombie its parent has not reaped yet (kill(0) still
 * finds one: its account would run on to the boundary, all of it "seen"). */
static bool ended(uint32_t pid)
{
	char buf[256], *st;
	int r;

	if (kill((pid_t)pid, 0) && errno == ESRCH)
		return true;
	r = gp_proc_stat(pid, buf, sizeof(buf), &st);
	if (r)
		return r == -ENOENT;
	return st[0] == 'Z' || st[0] == 'X';
}

/* Slot i's owner, armed for itself, is gone (kill(0) says so, a zombie too late): its last
 * counted call ends its life (its calls before the arm, if any, were accounted as unseen). */
static uint64_t fresh_end(const struct gp_budget *b, size_t i)
{
	uint64_t last = __atomic_load_n(&b->hits[i].last_ns, __ATOMIC_RELAXED);

	return last > b->fresh[i].armed_ns ? last : b->fresh[i].armed_ns;
}

/*
 * Whether a late-armed job's gap (its first driver call to its first counted one, unseen)
 * was quiet: every probe went in (done_ns) and none was hit for QUIET_CALLS of the calls its
 * seen part made at its rate (n calls, first_ns to its last: at that rate the chance of none
 * is e^-QUIET_CALLS, 5 %). Its rate had not begun when the probes were in, and a rate that
 * moves at most once in an unseen part (sampling.h) began after the gap: its estimate there
 * is none. Under QEMU's TCG an instant-cuInit job of 200 launches, every one counted after
 * a 150-ms arm, was read as 1,213 (its gap, tens of ms of a slow start, taken at its
 * launching rate); the gap stays dark (no upper end): a job that called, paused and called
 * again there is not told apart. Only for a gap that began at its first driver call (no
 * window of it before, whose hits would be taken into the rate).
 */
#define QUIET_CALLS 3.0
#define QUIET_MIN_HITS 8
/* Nor for less than this with no call. 3 calls' time at 20,000 a second is 150 us: an
 * instant-cuInit job of 340 launches at that pace, calling all along (268 of them in its
 * 14.5-ms gap), went that long uncounted after its probes were all in, and its gap was taken
 * as none: 71 in [71, none]. A slow start, the case this is for, is tens of ms or more (a
 * GPU's cuInit and module loads; the test's 250-ms pause). */
#define QUIET_MIN_S 0.02

/* The seen part after every probe of a late-armed job went in and before its first counted
 * call (n counted from then), when it was quiet (QUIET_CALLS, QUIET_MIN_S): its length, else 0. */
static double quiet_part(struct gp_budget *b, size_t i, double n, uint64_t fh)
{
	const struct fresh *f = &b->fresh[i];
	uint64_t last = __atomic_load_n(&b->hits[i].last_ns, __ATOMIC_RELAXED);
	double r, q;

	if (!f->done_ns || !fh || fh <= f->done_ns || last <= fh || n < QUIET_MIN_HITS)
		return 0;
	r = (n - 1) / ((double)(last - fh) / 1e9);
	q = (double)(fh - f->done_ns) / 1e9;
	return q >= QUIET_MIN_S && r * q >= QUIET_CALLS ? q : 0;
}

static bool quiet_gap(struct gp_budget *b, size_t i, double n, uint64_t fh, double seen_s)
{
	return b->fresh[i].gap_alone && seen_s > 0 && quiet_part(b, i, n, fh) > 0;
}

/*
 * A late-armed job that was in a window (its part of it seen), whose gap after it ended
 * quiet (quiet_part): its rate stepped at most once in the unseen part (sampling.h), from
 * the window's to the quiet part's none, so the gap is accounted between those two (a step
 * anywhere, the interval to the window's rate all along), the quiet part as seen with no
 * call, and the rest as its own. Taken whole at the rate it launched at once it began, a
 * job of 381 launches (one, 250 ms quiet, then 20,000 a second) read 2,619 in [381, 7,122]
 * when its 150-ms arm followed a window it had begun in; quiet_gap's dark part is only for
 * a gap with no window of it before (whose hits would say its rate there).
 */
struct split {
	double win_s, gap_s, quiet_s; /* its window part, the unseen gap, the quiet part (seen) */
	double n_win;                 /* the hits of its window part */
};

static bool split_gap(struct gp_budget *b, size_t i, uint64_t t0, double n, uint64_t fh, double Te, double one,
		      struct split *sp)
{
	const struct fresh *f = &b->fresh[i];
	double nw = (double)f->arm_hits < n ? (double)f->arm_hits : n, q;

	/* (that window's period is the one accounted: t0 from a float, within a microsecond) */
	if (f->gap_alone || !f->win_ns || f->win_from + 1000 < t0 || !fh || fh <= f->armed_ns)
		return false;
	q = quiet_part(b, i, n - nw, fh);
	if (q <= 0)
		return false;
	sp->win_s = (double)f->win_ns / 1e9;
	sp->quiet_s = q;
	sp->gap_s = (double)f->gap_ns / 1e9 - q;
	sp->n_win = nw;
	return sp->gap_s > 0 && one > sp->win_s && Te > sp->win_s + sp->gap_s + sp->quiet_s;
}

/* The account's calls are logged whole with -v (acct_period): this one too. */
static void acct_unbounded(struct gp_account *a, uint32_t pid)
{
	gp_log(GP_LOG_DEBUG, "budget: acct %u unbounded", pid);
	gp_account__unbounded(a);
}

/* t - from in ms (for -v; NAN where t is not known) */
static double ms_from(uint64_t t, uint64_t from)
{
	return t ? ((double)t - (double)from) / 1e6 : NAN;
}

/*
 * The part of a period from t0, *Te seconds long (to its end or the process's exit), that
 * slot i's owner was seen for (*one: the window alone, for the others), when it was armed
 * for itself: from its first driver call (it began then: *Te shortened), but for the time
 * its probes took to be armed, until they were disarmed (or all of it, still armed). Called
 * with b->acc held, by the budget's thread (or gp_budget__exited).
 */
static void fresh_seen(struct gp_budget *b, size_t i, uint64_t t0, double n, double *Te, double *one,
		       double *quiet, uint64_t *off, struct split *sp)
{
	struct fresh *f = &b->fresh[i];
	uint64_t start = t0, offn, end, seen, fh = 0;
	double s;

	*quiet = 0;
	sp->win_s = 0;
	*off = t0 + (uint64_t)(*one * 1e9);
	if (!f->armed_ever || !f->pid || f->pid != b->accounts[i].pid)
		return;
	if (f->since_ns > t0)
		start = f->since_ns;
	*Te -= (double)(start - t0) / 1e9;
	if (*Te < 0)
		*Te = 0;
	end = start + (uint64_t)(*Te * 1e9);
	if (f->end_ns && f->end_ns < end) { /* nothing of it after it was found gone */
		end = f->end_ns > start ? f->end_ns : start;
		*Te = (double)(end - start) / 1e9;
	}
	/* a late-armed job's seen part begins at its first counted call: under QEMU's TCG the
	 * first came 3-22 ms after its first probe went in (for five jobs none within 40 ms;
	 * natively ~1 ms), and the calls it made meanwhile, unseen, were taken as the seen
	 * part's none (6.12: 200 launches outside [45, 146] and [30, 63]) */
	if (f->gap_ns) {
		fh = __atomic_load_n(&b->hits[i].first_ns, __ATOMIC_ACQUIRE);
		if (fh > f->armed_ns && fh < end)
			f->gap_ns += fh - f->armed_ns;
	}
	/* an unseen gap is extrapolated at its rate while calling: to its last counted call (a
	 * job that ended but was not yet found so, or paused: nothing unseen after that call) */
	if (f->gap_ns && fresh_end(b, i) > start && fresh_end(b, i) < end) {
		end = fresh_end(b, i);
		*Te = (double)(end - start) / 1e9;
	}
	offn = __atomic_exchange_n(&f->off_ns, 0, __ATOMIC_ACQ_REL);
	if (f->state == FRESH_ARMED) {
		seen = end;
	} else {
		seen = t0 + (uint64_t)(*one * 1e9);
		if (offn > seen)
			seen = offn < end ? offn : end;
	}
	s = seen > start ? (double)(seen - start) / 1e9 - (double)f->gap_ns / 1e9 : 0;
	*one = s < 0 ? 0 : s > *Te - 1e-6 ? *Te : s; /* (nanoseconds to seconds and back) */
	/* where its seen part ended: a late-armed job's unseen part is its gap, before it, and
	 * nothing of it after a seen part that ran to its end (its exit's trim, to the time from
	 * there, cut that gap to nothing: 38 of 340 launches read [38, 38], the 15.4 ms the
	 * job called unseen gone) */
	*off = seen < end ? seen : 0;
	if (f->gap_ns)
		gp_log(GP_LOG_DEBUG, "budget: PID %u from %.3f ms of its period: its first probe in at %+.3f ms, the last at %+.3f, its first counted call %+.3f, its last %+.3f, its end %+.3f; unseen %.3f ms, seen %.3f",
		       f->pid, (double)(start - t0) / 1e6, ms_from(f->armed_ns, start), ms_from(f->done_ns, start),
		       ms_from(fh, start), ms_from(fresh_end(b, i), start), ms_from(end, start), (double)f->gap_ns / 1e6,
		       *one * 1e3);
	if (f->gap_ns && quiet_gap(b, i, n, fh, *one)) {
		/* the gap is dark, its calls taken as none (the report says it has no upper end) */
		*quiet = (double)f->gap_ns / 1e9;
		if (*quiet > *Te - *one)
			*quiet = *Te - *one;
		*Te -= *quiet;
		gp_log(GP_LOG_DEBUG, "budget: PID %u: its gap of %.2f ms was quiet before its first counted call: dark, taken as none",
		       f->pid, *quiet * 1e3);
	} else if (f->gap_ns && split_gap(b, i, t0, n, fh, *Te, *one, sp)) {
		gp_log(GP_LOG_DEBUG, "budget: PID %u: %.0f hits in %.2f ms of a window, then %.2f ms unseen and %.2f ms quiet before its first counted call: its gap taken between the window's rate and none",
		       f->pid, sp->n_win, sp->win_s * 1e3, sp->gap_s * 1e3, sp->quiet_s * 1e3);
		/* the rest, from its first call after the quiet part */
		*Te -= sp->win_s + sp->gap_s + sp->quiet_s;
		*one -= sp->win_s;
		if (*one > *Te)
			*one = *Te;
	} else if (f->gap_ns && n < MIN_WINDOW_HITS && *one < (double)f->gap_ns / 1e9) {
		/* a gap (before its seen part) that a window's least hits after it, in less time
		 * than the gap, cannot give a rate to: a job seen only as it wound down (its last
		 * launches, then a wait and its last synchronization), or one that paused while its
		 * probes went in. A seen part longer than the gap with few calls bounds it as any
		 * window. Instant-cuInit jobs of 340-360 launches at 20,000 a second, their first
		 * probe in 12-16 ms after their first call here, were read as 77 in [22, 199] and
		 * 89 in [29, 220] from 23 and 30 counted calls (7,800 a second seen, 20,000 in the
		 * gap): no upper end */
		acct_unbounded(&b->accounts[i].acc, f->pid);
	}
	f->since_ns = 0;
	f->gap_ns = 0;
}

/* A process that began in the period from t0 (born_ns), not armed for itself (fresh_seen
 * has its own start): the period's part before is none of its life, nor of its window's
 * (a job gone before its probes could be armed, whose account began at the next boundary,
 * ran from it with an unseen part of the last period's length before it: its few ms of
 * window, or its calls counted while its probes were failing to go in, were extrapolated
 * over a second it never lived). */
static void born_seen(struct account *a, uint64_t t0, double *Te, double *one)
{
	double d;

	if (!a->born_ns || a->born_ns <= t0)
		return;
	d = (double)(a->born_ns - t0) / 1e9;
	*one = *one > d ? *one - d : 0;
	*Te = *Te > d ? *Te - d : 1e-9; /* (its hits are still accounted) */
	if (*one > *Te)
		*one = *Te;
}

/* Its probes armed for slot i's owner alone, within the caps. Called with b->links held. */
static void fresh_arm(struct gp_budget *b, size_t i, uint64_t now)
{
	struct fresh *f = &b->fresh[i];
	int total = 0, n = 0, per_user = 0, r = 0;
	uint64_t first_ns = 0;

	if (b->multi) {
		count_unarmed(b, f, GP_UNARMED_MECHANISM);
		return;
	}
	if (now - b->rate_start >= 1000000000ULL) {
		b->rate_start = now;
		b->rate_n = 0;
	}
	if (b->nr_armed == GP_BUDGET_FRESH_MAX || b->rate_n >= GP_BUDGET_FRESH_RATE) {
		count_unarmed(b, f, GP_UNARMED_CAP);
		return;
	}
	f->uid = uid_of(f->pid);
	for (int k = 0; k < b->nr_armed; k++)
		per_user += b->fresh[b->armed[k]].uid == f->uid;
	if (per_user >= GP_BUDGET_FRESH_PER_USER) {
		count_unarmed(b, f, GP_UNARMED_USER);
		return;
	}
	b->rate_n++;
	for (int g = 0; g < b->ngroups; g++)
		total += b->groups[g].nue;
	f->fds = malloc((size_t)(total ? total : 1) * sizeof(*f->fds));
	if (!f->fds) {
		count_unarmed(b, f, GP_UNARMED_ERROR);
		return;
	}
	/* its first counted hit from here on is where its seen part begins (fresh_seen) */
	__atomic_store_n(&b->hits[i].first_ns, 0, __ATOMIC_RELEASE);
	f->arm_hits = __atomic_load_n(&b->hits[i].hits, __ATOMIC_RELAXED);
	/* counted before the breakpoints go in: a hit then is never a stray of a counted call */
	set_exact(b, i, true);
	for (int g = 0; g < b->ngroups && !r; g++)
		for (int k = 0; k < b->groups[g].nue && !r; k++) {
			int fd;

			test_pause("GPUPROBE_TEST_ARM_MS", total);
			fd = uevent__arm(b->groups[g].ue[k], f->pid);
			if (fd < 0) {
				r = fd;
			} else {
				f->fds[n++] = fd;
				if (!first_ns)
					first_ns = gp_mono_ns();
			}
		}
	if (r || __atomic_load_n(&b->hits[i].pid, __ATOMIC_ACQUIRE) != f->pid) {
		set_exact(b, i, false);
		for (int k = 0; k < n; k++)
			close(f->fds[k]);
		free(f->fds);
		f->fds = NULL;
		gp_log(GP_LOG_DEBUG, "budget: cannot arm the probes of PID %u alone: %s", f->pid,
		       r ? strerror(-r) : "its slot changed owner");
		if (r != -ESRCH && r) {
			count_unarmed(b, f, GP_UNARMED_ERROR);
		} else if (r == -ESRCH && (__atomic_load_n(&b->hits[i].flags, __ATOMIC_ACQUIRE) & GP_SLOT_READY)) {
			/* gone before its arm, after its cuInit returned: its calls were the shared
			 * probes' (on a loaded 2-CPU machine the budget's thread spent 1.5-2.1 s in
			 * one window's attach while five 130-ms jobs came and went; none armed, none
			 * counted, and the loss said nowhere): late, counted */
			f->state = FRESH_DONE;
			pthread_mutex_lock(&b->acc);
			if (first_ns) {
				/* gone while they went in: its calls were counted from its first probe
				 * on, as one armed that ended (fresh_seen), the part before unseen (an
				 * account begun at the next boundary took a window's few ms, or those
				 * calls, over a second it never lived: 3,633-61,748 for 200 under
				 * GPUPROBE_TEST_ARM_MS 150) */
				f->armed_ever = true;
				f->armed_ns = first_ns;
				f->done_ns = 0;
				__atomic_store_n(&f->off_ns, gp_mono_ns(), __ATOMIC_RELEASE);
				note_gap(b, f, __atomic_load_n(&b->hits[i].since_ns, __ATOMIC_RELAXED), first_ns, true);
				if (!f->end_ns)
					f->end_ns = fresh_end(b, i);
			}
			if (!b->unarmed[GP_UNARMED_LATE]++)
				gp_log(GP_LOG_WARN, "budget: PID %u was gone before its probes could be armed for it alone: its calls were sampled with the others' (counted in gpuprobe_budget_unarmed_processes_total{reason=\"late\"})",
				       f->pid);
			pthread_mutex_unlock(&b->acc);
		} else {
			f->state = FRESH_DONE; /* gone before its first context (no call to count), or its slot another's */
		}
		return;
	}
	f->nfds = n;
	f->armed_ns = first_ns; /* its first probe: counted from then (fresh_end) */
	f->done_ns = gp_mono_ns();
	f->state = FRESH_ARMED;
	f->armed_ever = true;
	b->armed[b->nr_armed++] = (uint32_t)i;
	pthread_mutex_lock(&b->acc);
	b->fresh_armed++;
	/* armed before its cuInit returned: before any call it could make (none unseen) */
	note_gap(b, f, __atomic_load_n(&b->hits[i].since_ns, __ATOMIC_RELAXED), first_ns,
		 __atomic_load_n(&b->hits[i].flags, __ATOMIC_ACQUIRE) & GP_SLOT_READY);
	if (f->gap_ns && !b->unarmed[GP_UNARMED_LATE]++)
		gp_log(GP_LOG_WARN, "budget: PID %u was armed for itself %.1f ms after its cuInit returned: its calls before were sampled with the others' (counted in gpuprobe_budget_unarmed_processes_total{reason=\"late\"})",
		       f->pid, (double)f->gap_ns / 1e6);
	pthread_mutex_unlock(&b->acc);
	gp_log(GP_LOG_DEBUG, "budget: PID %u is new: %d probes armed for it alone in %.2f ms, %.2f ms after its first driver call (%.2f ms of it unseen)",
	       f->pid, n, (double)(gp_mono_ns() - now) / 1e6, f->since_ns ? (double)(gp_mono_ns() - f->since_ns) / 1e6 : -1.0,
	       (double)f->gap_ns / 1e6);
}

/* Slot i's owner joins the shared sampling (its allowance spent, or it ended): counted as
 * the others from now (strays while its events go), its events disarmed. Called with
 * b->links held. */
static void fresh_disarm(struct gp_budget *b, int k, uint64_t now)
{
	size_t i = b->armed[k];
	struct fresh *f = &b->fresh[i];

	set_exact(b, i, false);
	if (f->nfds)
		close_many_async(b, f->fds, f->nfds, NULL, 0);
	else
		free(f->fds);
	f->fds = NULL;
	f->nfds = 0;
	f->state = FRESH_DONE;
	__atomic_store_n(&f->off_ns, now, __ATOMIC_RELEASE);
	b->armed[k] = b->armed[--b->nr_armed];
	gp_log(GP_LOG_DEBUG, "budget: PID %u joins the shared sampling", f->pid);
}

/* A new process left to the shared probes without an arm of its own: -v says why (its
 * calls there are the window's, counted; any before it, the period's unseen part). */
static void fresh_unarmed(struct fresh *f, const char *why)
{
	f->state = FRESH_DONE;
	gp_log(GP_LOG_DEBUG, "budget: PID %u is new, not armed for itself: %s",
	       f->pid, why);
}

/* The slots taken since the last look: their new owners armed (sampling: the shared probes
 * are off at times) or left pending. Called with b->links held. */
static void fresh_scan(struct gp_budget *b, uint64_t now)
{
	/* not while the window is open: it sees every call, and arming (up to tens of ms on a
	 * loaded machine) would hold the window open past its share; armed when it closes */
	bool sampling = b->fraction < 1 && !__atomic_load_n(&b->hits[GP_HIT_WINDOW].flags, __ATOMIC_RELAXED);

	for (size_t i = 0; i < GP_HIT_SLOTS; i++) {
		uint32_t pid = __atomic_load_n(&b->hits[i].pid, __ATOMIC_ACQUIRE);
		struct fresh *f = &b->fresh[i];

		if (pid == f->pid)
			continue;
		if (f->state == FRESH_ARMED) /* freed and taken again: the old owner's go first */
			for (int k = 0; k < b->nr_armed; k++)
				if (b->armed[k] == i)
					fresh_disarm(b, k, now);
		*f = (struct fresh){ .pid = pid, .state = pid ? FRESH_PENDING : FRESH_NONE };
		if (!pid)
			continue;
		if (fresh_spent(b, i))
			fresh_unarmed(f, "its allowance's calls made before it was looked at");
		else if (sampling)
			fresh_arm(b, i, now);
	}
}

/* The window is about to close (the shared probes go off): the pending processes still
 * within their allowance are armed for themselves. Called with b->links held. */
static void fresh_arm_pending(struct gp_budget *b, uint64_t now)
{
	for (size_t i = 0; i < GP_HIT_SLOTS; i++) {
		struct fresh *f = &b->fresh[i];

		if (f->state != FRESH_PENDING)
			continue;
		if (fresh_spent(b, i))
			fresh_unarmed(f, "its allowance's calls made in the window");
		else if (__atomic_load_n(&b->hits[i].pid, __ATOMIC_ACQUIRE) != f->pid)
			fresh_unarmed(f, "it ended in the window");
		else
			fresh_arm(b, i, now);
	}
}

/* Each tick of the budget's thread: new owners (only when a slot was taken), and the armed
 * processes that spent their allowance, lost their slot or ended (looked for every 100 ms). */
static void fresh_tick(struct gp_budget *b)
{
	uint64_t seq = __atomic_load_n(&b->hits[GP_HIT_WINDOW].hits, __ATOMIC_RELAXED), now = gp_mono_ns();
	/* every 5 ms (a short job's end bounds its account): a kill(0) and a read of its stat each */
	bool look_gone = b->nr_armed && now - b->gone_ns >= TICK_NS;


	if (seq == b->fresh_seq && !b->nr_armed)
		return;
	if (look_gone)
		b->gone_ns = now;
	pthread_mutex_lock(&b->links);
	if (seq != b->fresh_seq) {
		b->fresh_seq = seq;
		fresh_scan(b, now);
	}
	for (int k = b->nr_armed - 1; k >= 0; k--) {
		size_t i = b->armed[k];
		uint32_t pid = b->fresh[i].pid;

		bool gone = look_gone && ended(pid);

		if (gone) {
			pthread_mutex_lock(&b->acc);
			if (!b->fresh[i].end_ns)
				b->fresh[i].end_ns = fresh_end(b, i);
			pthread_mutex_unlock(&b->acc);
		}
		if (gone || fresh_spent(b, i) || !b->fresh[i].nfds || __atomic_load_n(&b->hits[i].pid, __ATOMIC_ACQUIRE) != pid)
			fresh_disarm(b, k, now);
	}
	pthread_mutex_unlock(&b->links);
}

/* Every armed process's events closed now (the run's end, a library removed). Called with
 * b->links held. */
static void fresh_disarm_all(struct gp_budget *b, bool wait)
{
	uint64_t now = gp_mono_ns();

	while (b->nr_armed) {
		struct fresh *f = &b->fresh[b->armed[b->nr_armed - 1]];

		if (wait) {
			for (int k = 0; k < f->nfds; k++)
				close(f->fds[k]);
			f->nfds = 0;
		}
		fresh_disarm(b, b->nr_armed - 1, now);
	}
}

/* -------------------------------------------------------------------------------------
 * Accounting */

/* pid's CPU time so far, all its threads (seconds; negative when it cannot be read). The
 * estimates' call-bound model counts calls per CPU second of the process (src/lib/sampling.c):
 * a paced process that sleeps between calls where the probes did not slow it gets the calls
 * its CPU time paid for, and threads on several CPUs are not read as one in probes. */
static double proc_cpu_s(uint32_t pid)
{
	struct timespec ts;
	clockid_t id;

	if (!pid || clock_getcpuclockid((pid_t)pid, &id) || clock_gettime(id, &ts))
		return -1;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}


static void read_gaps(struct gp_hit_slot *h, struct gap_counts *g)
{
	g->gaps = __atomic_load_n(&h->gaps, __ATOMIC_RELAXED);
	g->gap_ns = __atomic_load_n(&h->gap_ns, __ATOMIC_RELAXED);
	g->sleep_ns = __atomic_load_n(&h->sleep_ns, __ATOMIC_RELAXED);
	g->head = __atomic_load_n(&h->head, __ATOMIC_RELAXED);
	g->stray_calls = __atomic_load_n(&h->stray_calls, __ATOMIC_RELAXED);
	g->slept_ns = __atomic_load_n(&h->slept_ns, __ATOMIC_RELAXED);
}

/* What the gaps did since *last (its fields, into w), and *last moved to now; the window
 * began at t0 and lasted `on` seconds. */
static void gaps_since(struct gap_counts *last, const struct gap_counts *now, struct gp_window *w, uint64_t t0,
		       double on)
{
	w->gaps = now->gaps >= last->gaps ? (double)(now->gaps - last->gaps) : 0;
	w->gap_s = now->gap_ns >= last->gap_ns ? (double)(now->gap_ns - last->gap_ns) * 1e-9 : 0;
	w->sleep_s = now->sleep_ns >= last->sleep_ns ? (double)(now->sleep_ns - last->sleep_ns) * 1e-9 : 0;
	w->head = now->head >= last->head ? (double)(now->head - last->head) : 0;
	w->stray_calls = now->stray_calls >= last->stray_calls ? (double)(now->stray_calls - last->stray_calls) : 0;
	if (w->sleep_s > w->gap_s)
		w->sleep_s = w->gap_s;
	if (w->head > w->n)
		w->head = w->n;
	w->head_s = now->slept_ns >= t0 && (double)(now->slept_ns - t0) * 1e-9 <= on ? (double)(now->slept_ns - t0) * 1e-9
										   : -1;
	*last = *now;
}

/* pid's CPU seconds a second since it started (cpu_s of them so far; negative: not known):
 * its share where no period of it has been measured yet. */
static double lifetime_share(uint32_t pid, double cpu_s)
{
	char buf[512], *st, *tok, *save = NULL;
	unsigned long long start = 0;
	struct timespec now;
	long hz = sysconf(_SC_CLK_TCK);
	double age;
	int field = 3;

	if (cpu_s < 0 || hz <= 0 || gp_proc_stat(pid, buf, sizeof(buf), &st) ||
	    clock_gettime(CLOCK_BOOTTIME, &now))
		return -1;
	for (tok = strtok_r(st, " ", &save); tok && field < 22; tok = strtok_r(NULL, " ", &save))
		field++;
	if (!tok || sscanf(tok, "%llu", &start) != 1)
		return -1;
	age = (double)now.tv_sec + (double)now.tv_nsec * 1e-9 - (double)start / (double)hz;
	return age > 0.01 ? cpu_s / age : -1;
}

/* Thread tid of pid's seconds on a CPU and waiting on a run queue so far (its schedstat:
 * the wait is exact, counted when it ends; the time on a CPU up to a tick stale, which a
 * period's length makes little of); false when it cannot be read (gone, no CONFIG_SCHED_INFO). */
static bool thread_sched(uint32_t pid, uint32_t tid, double *run, double *wait)
{
	char path[64], buf[128];
	unsigned long long r, w;
	ssize_t n;
	int fd;

	if (!pid || !tid)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/schedstat", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &r, &w) != 2)
		return false;
	*run = (double)r * 1e-9;
	*wait = (double)w * 1e-9;
	return true;
}

#define BUSY_THREADS 256 /* a process's threads read for its busy share, at most */

/*
 * How busy the threads that called in a process's window were over the period (T seconds):
 * a thread's seconds on a CPU and waiting for one, over T. A thread that never slept is near
 * 1 however loaded the machine; one that sleeps between its calls (a paced loop, a blocking
 * synchronization) far less (sampling.c, the estimate). With `tid` (one thread made all but
 * all the window's calls) that thread's; else every thread's, weighted by its seconds on a
 * CPU (threads that ran little, a driver's or a runtime's, weigh little). Every thread's
 * times are kept in a->threads for the next boundary (the kernel lists a process's threads
 * by their ids). Negative when not known: the first boundary, the thread gone, nothing ran.
 */
static double threads_busy(struct account *a, uint32_t tid, double T)
{
	char path[32];
	struct thread_stat *now = calloc(BUSY_THREADS, sizeof(*now));
	double sum_run = 0, sum_busy = 0, one = -1;
	struct dirent *de;
	int n = 0, k = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%u/task", a->pid);
	d = now && a->pid ? opendir(path) : NULL;
	while (d && n < BUSY_THREADS && (de = readdir(d))) {
		char *end;
		unsigned long t = strtoul(de->d_name, &end, 10);

		if (*end || !t || t > UINT32_MAX || !thread_sched(a->pid, (uint32_t)t, &now[n].run, &now[n].wait))
			continue;
		now[n].tid = (uint32_t)t;
		n++;
	}
	if (d)
		closedir(d);
	for (int j = 0; j < n && a->threads; j++) {
		double run, wait, busy;

		while (k < a->nthreads && a->threads[k].tid < now[j].tid)
			k++;
		if (k == a->nthreads || a->threads[k].tid != now[j].tid)
			continue; /* new since the last boundary */
		run = now[j].run - a->threads[k].run;
		wait = now[j].wait - a->threads[k].wait;
		if (run < 0 || wait < 0 || T <= 0)
			continue;
		busy = run + wait > T ? 1 : (run + wait) / T;
		if (now[j].tid == tid)
			one = busy;
		sum_run += run;
		sum_busy += run * busy;
	}
	free(a->threads);
	a->threads = now;
	a->nthreads = n;
	if (tid)
		return one;
	return sum_run > 0 ? sum_busy / sum_run : -1;
}

/* Slot i's calling threads' busy share over the period (threads_busy): the thread of its
 * last counted hit where one thread made all but all of the window's calls (w's gaps). */
static double thread_busy(struct gp_budget *b, size_t i, struct account *a, const struct gp_window *w, double T)
{
	uint32_t tid = i < GP_HIT_SLOTS ? __atomic_load_n(&b->hits[i].last_tid, __ATOMIC_RELAXED) : 0;
	double busy;

	/* only while sampling, or about to (every 100 ms while every call is seen would read
	 * every thread of every process that calls, ten times a second) */
	if (i == GP_HIT_SLOTS || (w->on >= w->T && w->n * b->price <= b->target * w->on)) {
		free(a->threads);
		a->threads = NULL;
		a->nthreads = 0;
		return -1;
	}
	busy = threads_busy(a, w->n > 0 && w->gaps + 1 >= 0.9 * w->n ? tid : 0, T);
	if (busy >= 0)
		a->busy = busy;
	return busy;
}

/* The hits array as it is now (owners first: a slot's hits never belong to an older owner
 * than the one read with them). */
static void take_snapshot(struct gp_budget *b)
{
	for (size_t i = 0; i < SLOTS; i++) {
		b->snap_pid[i] = i == GP_HIT_SLOTS ? 0 : __atomic_load_n(&b->hits[i].pid, __ATOMIC_ACQUIRE);
		b->snap_hits[i] = __atomic_load_n(&b->hits[i].hits, __ATOMIC_RELAXED);
		b->snap_stray[i] = __atomic_load_n(&b->hits[i].stray, __ATOMIC_RELAXED);
		b->snap_fixed[i] = __atomic_load_n(&b->hits[i].fixed, __ATOMIC_RELAXED);
		b->snap_active[i] = __atomic_load_n(&b->hits[i].active_ns, __ATOMIC_RELAXED);
		read_gaps(&b->hits[i], &b->snap_gap[i]);
	}
}

/* Opens or closes the window: BPF counts only while it is open (a hit outside is a stray).
 * A window that opens gets a number of its own (GP_EPOCH_FIRST on; one that is open stays
 * as it is): the work a synchronization completes is timed only by one of its own window
 * (gpuprobe.h, GP_EPOCH_*). Called by the budget's thread alone (and before it starts). */
static void set_window(struct gp_budget *b, bool open)
{
	uint32_t *flags = &b->hits[GP_HIT_WINDOW].flags;

	if (open && __atomic_load_n(flags, __ATOMIC_RELAXED))
		return;
	if (open)
		b->epoch = b->epoch < GP_EPOCH_FIRST || b->epoch == UINT32_MAX ? GP_EPOCH_FIRST : b->epoch + 1;
	__atomic_store_n(flags, open ? b->epoch : 0, __ATOMIC_RELEASE);
}

/* The account's calls, each logged whole with -v (budget: acct ...): bench/budget_replay.c
 * replays a run's log through src/lib/sampling.c, so that an estimator can be tried on
 * the windows a real run took (and its workload's own count) without running it again. */
static void acct_begin(struct gp_account *a, uint32_t pid, double lead)
{
	gp_log(GP_LOG_DEBUG, "budget: acct %u begin %.9g", pid, lead);
	gp_account__begin(a, lead);
}

static void acct_period(struct gp_account *a, uint32_t pid, const struct gp_window *w, double cost, double price)
{
	gp_log(GP_LOG_DEBUG,
	       "budget: acct %u period %.0f %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.0f %.9g %.9g %.0f %.4g %.9g %.0f %.0f %.9g %.9g",
	       pid, w->n, w->stray, w->T, w->on, w->act, w->cpu_T, cost, price, w->gaps, w->gap_s, w->sleep_s, w->head,
	       w->busy, w->head_s, w->stray_calls, w->span_n, w->span_from, w->span_to);
	gp_account__window(a, w, cost, price);
}

/* A part of a process's life that no probe saw, its calls taken as none (quiet_gap). */
static void acct_dark(struct gp_account *a, uint32_t pid, double secs)
{
	struct gp_window w = { .T = secs, .on = 0, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };

	acct_period(a, pid, &w, 0, 0);
}

/* A late-armed job's window part and gap, then its quiet part seen with no call (split_gap):
 * accounted before the rest of its period. */
static void acct_split(struct gp_account *a, uint32_t pid, const struct split *sp, double cost, double price)
{
	struct gp_window w = { .n = sp->n_win, .T = sp->win_s + sp->gap_s, .on = sp->win_s, .act = -1, .cpu_T = -1,
			       .busy = -1, .head_s = -1 };
	struct gp_window q = { .T = sp->quiet_s, .on = sp->quiet_s, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };

	acct_period(a, pid, &w, cost, price);
	acct_period(a, pid, &q, cost, price);
}

/* What fresh_seen split off a late-armed job's period, accounted before the rest: a quiet
 * gap (dark) or a window part, gap and quiet part (split_gap). Returns the hits of those. */
static double acct_fresh_parts(struct gp_account *a, uint32_t pid, double quiet, const struct split *sp,
			       double cost, double price)
{
	if (quiet > 0)
		acct_dark(a, pid, quiet);
	if (sp->win_s <= 0)
		return 0;
	acct_split(a, pid, sp, cost, price);
	return sp->n_win;
}

static void acct_trim(struct gp_account *a, uint32_t pid, double unseen)
{
	gp_log(GP_LOG_DEBUG, "budget: acct %u trim %.9g", pid, unseen);
	gp_account__trim(a, unseen);
}

/* Its unseen part trimmed to what came after its seen part ended (off) until its exit (ts). */
static void acct_trim_to(struct gp_account *a, uint32_t pid, uint64_t off, uint64_t ts)
{
	acct_trim(a, pid, ts > off ? (double)(ts - off) / 1e9 : 0);
}

/* The account of a process that ended moves out of its slot; with free_slot the slot is
 * freed for the next process that hashes there (hits first, then the owner). */
static void end_account(struct gp_budget *b, size_t i, uint64_t now, bool free_slot)
{
	struct account *a = &b->accounts[i];
	struct ended *e = malloc(sizeof(*e));
	uint32_t pid = a->pid;

	/* its last unseen part ends in a step to no calls at a time unknown within it: the
	 * midpoint of its window's rate and none (sampling.h), not its window's rate all
	 * along (a process that exited early in a 500-ms period was counted as if it ran to
	 * its end); an empty instant with every call seen brings that next rate, 0 */
	if (a->acc.pending) {
		struct gp_window w = { .T = 1e-9, .on = 1e-9, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };

		acct_period(&a->acc, pid, &w, b->cost, b->price);
	}
	if (e) {
		e->acc = a->acc;
		e->floor = a->floor;
		e->end_ns = now;
		e->off_ns = a->off_ns;
		free(u64map__del(b->ended, pid));
		if (u64map__put(b->ended, pid, e))
			free(e);
	}
	free(a->threads);
	if (free_slot) {
		__atomic_store_n(&b->hits[i].hits, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].stray, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].fixed, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].active_ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].gaps, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].gap_ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].sleep_ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].head, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].stray_calls, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].first_ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].last_tid, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].last_ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->hits[i].flags, 0, __ATOMIC_RELAXED);
		__atomic_compare_exchange_n(&b->hits[i].pid, &pid, 0, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	memset(a, 0, sizeof(*a));
}

/* A process that has made fewer calls, all seen, than its exact allowance: its rate does
 * not make the budget sample (the spill slot's processes, together, never are). Called
 * with b->acc held. */
static bool in_allowance(const struct gp_budget *b, size_t i, double more)
{
	const struct account *a = &b->accounts[i];

	if (i == GP_HIT_SLOTS || a->acc.sampled)
		return false;
	return a->acc.obs + more < allowance_calls(b);
}

/* Whether slot i's owner is in its cuInit still: it has made no other call. */
static bool in_init(const struct gp_budget *b, size_t i)
{
	uint32_t f = __atomic_load_n(&b->hits[i].flags, __ATOMIC_ACQUIRE);

	return i < GP_HIT_SLOTS && (f & GP_SLOT_INIT) && !(f & GP_SLOT_READY);
}

/* When slot i's owner began, if in the period from t0: its slot taken at its first driver
 * call (cuInit, never sampled: GP_SLOT_INIT), no call of it before its since; else 0. */
static uint64_t born(const struct gp_budget *b, size_t i, uint64_t t0)
{
	uint32_t f = __atomic_load_n(&b->hits[i].flags, __ATOMIC_ACQUIRE);
	uint64_t since = __atomic_load_n(&b->hits[i].since_ns, __ATOMIC_RELAXED);

	return i < GP_HIT_SLOTS && (f & GP_SLOT_INIT) && since > t0 ? since : 0;
}

/* Whose hits slot i holds now, the period from t0 to now: false when none (nothing to
 * account). */
static bool slot_owner(struct gp_budget *b, size_t i, uint32_t pid, uint64_t t0, uint64_t now)
{
	struct account *a = &b->accounts[i];

	if (i == GP_HIT_SLOTS)
		return true;
	if (pid == a->pid)
		return pid != 0;
	if (a->pid) /* freed and taken again since the last boundary */
		end_account(b, i, now, false);
	if (!pid)
		return false;
	a->pid = pid;
	a->last = a->last_stray = a->last_fixed = a->last_active = 0;
	memset(&a->last_gap, 0, sizeof(a->last_gap));
	a->cpu_last = -1; /* not known until its first boundary */
	a->busy = a->cpu_share = a->cpu_poll = -1;
	a->work = 1;
	a->off_ns = a->exit_ns = 0;
	/* its exit may have come before its account (new and gone in one period) */
	if (b->fresh[i].pid == pid && b->fresh[i].end_ns && !b->fresh[i].armed_ever)
		a->exit_ns = b->fresh[i].end_ns;
	a->born_ns = born(b, i, t0);
	/* it may have begun in the last period's unseen part, unless it was armed for itself or
	 * began in this period */
	acct_begin(&a->acc, pid, in_init(b, i) || a->born_ns || (b->fresh[i].pid == pid && b->fresh[i].armed_ever) ?
				   0 : b->last_unseen);
	return true;
}

/*
 * The share of a process's wall time the budget aims at: MARGIN of P, and for a process that
 * works in bursts, that share of the time it works. A burst is work done back to back (its
 * window's one-thread gaps slept in under BURSTY_SLEPT of their time, gp_window_slept)
 * by a thread asleep most of the period (busy under BURSTY_BUSY): a request served, a batch
 * sent. Its probes slow each burst by their share of the burst, not of the wall time: on the
 * H200 the 50:200-ms bursts under a 1 % budget paid +2.4 % and +2.9 % of their time worked in
 * two runs (0.57 % and 0.69 % of their wall time, the budget's estimate 0.72 %; session 27),
 * the windows that met a burst taking it at the rate the wall time's share allowed. Such a
 * process is held at MARGIN x P of its time worked (its busy share over the period, at least
 * WORK_MIN of it). A paced loop (it sleeps between its calls) and one that calls all along
 * keep the wall time's share: their pace, not their work, sets how long they run. A window
 * that saw none of its calls (between two bursts) or too few to say keeps the last one.
 */
#define BURSTY_SLEPT 0.1
#define BURSTY_BUSY 0.5
#define WORK_MIN 0.1

static void bursty(struct account *a, const struct gp_window *w)
{
	double was = a->work, slept = gp_window_slept(w);

	if (w->n < MIN_WINDOW_HITS || slept < 0 || w->busy < 0)
		return;
	if (slept >= BURSTY_SLEPT || w->busy >= BURSTY_BUSY)
		a->work = 1;
	else
		a->work = w->busy > WORK_MIN ? w->busy : WORK_MIN;
	if (a->work != was)
		gp_log(GP_LOG_DEBUG, "budget: PID %u works %.0f %% of its time%s", a->pid, a->work * 100,
		       a->work < 1 ? " in bursts: held at the budget's share of that" : "");
}

static double aim(const struct gp_budget *b, const struct account *a)
{
	return b->target * (a->work > 0 && a->work < 1 ? a->work : 1);
}

/* The share of a T-second period every fresh account can afford: the least. */
static double least_fraction(struct gp_budget *b, double T, bool *over, bool *fixed_over)
{
	double f = 1.0;

	*over = *fixed_over = false;
	for (size_t i = 0; i < SLOTS; i++) {
		bool o;
		double g;

		if (!b->accounts[i].fresh)
			continue;
		/* the probes never sampled are priced whatever its allowance */
		*fixed_over |= b->accounts[i].fixed > b->target;
		if (in_allowance(b, i, 0))
			continue;
		/* what the probes never sampled take comes off the share first */
		g = gp_budget_fraction(b->accounts[i].rho, b->accounts[i].stray_s,
				       aim(b, &b->accounts[i]) - b->accounts[i].fixed, T, &o);
		if (g < f)
			f = g;
		*over |= o;
	}
	return f;
}

/* The least share of a T-second sampled period a's probes take: its least window at its
 * share of a window in probes, its strays, and the probes never sampled. */
static double least_share(const struct account *a, double T)
{
	return (a->rho * GP_MIN_WINDOW_S + a->stray_s) / T + a->fixed;
}

/* What the next period must be for every process to keep its budget (links are shared):
 * GP_PERIOD_S (500 ms), longer when a process's strays need it, or when the window its
 * share allows would be under GP_MIN_WINDOW_S (2 ms). Called with b->acc held. */
static void plan(struct gp_budget *b, struct plan *p)
{
	double T = GP_PERIOD_S;

	for (size_t i = 0; i < SLOTS; i++)
		if (b->accounts[i].fresh && gp_budget_period(b->accounts[i].stray_s, b->target) > T)
			T = gp_budget_period(b->accounts[i].stray_s, b->target);
	p->fraction = least_fraction(b, T, &p->over, &p->fixed_over);
	/* The least window at T passes a process's share (gp_budget_fraction clamps at it, so
	 * the share alone never says so): its window and its strays come once a period, and a
	 * longer one spreads them thinner. The least T that holds every process (its least
	 * window and strays within its share), at most OVER_PERIOD_S. It was left at 500 ms
	 * there, and a process at its floor ran above the floor said (GPUPROBE_TEST_PROBE_COST
	 * 30 us: held at 1.24-1.50x its floor; 1.19-1.20x with this); the price is a slower
	 * return to every call seen while over (at most a period, under a second). */
	if (p->over) {
		double need = T;

		for (size_t i = 0; i < SLOTS; i++) {
			const struct account *a = &b->accounts[i];
			double share = aim(b, a) - a->fixed, t;

			if (!a->fresh || in_allowance(b, i, 0))
				continue;
			t = share > 0 ? (a->rho * GP_MIN_WINDOW_S + a->stray_s) / share : OVER_PERIOD_S;
			if (t > need)
				need = t;
		}
		if (need > OVER_PERIOD_S) /* (never under what the strays asked: gp_budget_period) */
			need = T > OVER_PERIOD_S ? T : OVER_PERIOD_S;
		T = need;
		p->fraction = least_fraction(b, T, &p->over, &p->fixed_over);
	}
	/* A process whose strays alone (hits while the links go, priced) take more than the
	 * target of even the longest period passes the budget whatever the window: said so,
	 * never silently (the links' closing, slower on a loaded machine, sets them). */
	for (size_t i = 0; i < SLOTS; i++)
		if (b->accounts[i].fresh && b->accounts[i].stray_s > b->target * T)
			p->over = true;
	/* Over the budget, as the report says it (over_budget_now), is past the budget itself,
	 * not past the share aimed at: a paced 100,000/s loop at 0.5 % on the H200 was planned
	 * at its least window, took 0.47 % of its time in probes, and its record said
	 * over_budget with no process over it and no line saying why (budget_cov, thirteenth
	 * session). */
	p->past = false;
	for (size_t i = 0; i < SLOTS; i++) {
		const struct account *a = &b->accounts[i];

		if (!a->fresh)
			continue;
		if (a->fixed > b->pct / 100 ||
		    (!in_allowance(b, i, 0) && least_share(a, T) > b->pct / 100))
			p->past = true;
	}
	p->period_s = T;
}

static bool proc_over(const struct gp_budget *b, uint32_t pid, const struct gp_account *a, bool *allowance);

/* Once per process over the budget (the caller knows), when its floor passes the budget:
 * from the period that found it, or at the latest from the report that counts it
 * (gp_budget__stats: a process found over only at its exit). Called with b->acc held. */
static void floor_say(struct gp_budget *b, uint32_t pid, struct floor *f)
{
	if (f->said || f->n < 1 || f->sum / f->n <= b->pct / 100)
		return;
	f->said = true;
	gp_log(GP_LOG_WARN, "budget: %g %% cannot be held for PID %u: a probe hit costs %.1f us here (a counted call "
			    "%.1f us), and the least it can sample (a %.0f-ms window each %.2f s, its probes' %.0f us of hits "
			    "going in and out) costs it %.2f %% of its time; holding it there",
	       b->pct, pid, b->cold * 1e6, b->price * 1e6, GP_MIN_WINDOW_S * 1e3, f->T, f->stray_s * 1e6,
	       f->sum / f->n * 100);
}

/* Its floor (struct floor) from the period just accounted, T seconds long when sampled (the
 * planner lengthens the periods at the least window, up to OVER_PERIOD_S; a period
 * with every call seen is priced as the first sampled one would be, GP_PERIOD_S): when the
 * least window of such a period passes what the budget aims at, it counts toward its
 * floor; once the floor passes the budget itself and the process's own estimate has passed
 * it (proc_over: a floor over it in a fast phase alone, diluted by its slow ones, holds the
 * budget all the same), said once (floor_say). Called with b->acc held. */
static void budget_floor(struct gp_budget *b, struct account *a, double T)
{
	double least = least_share(a, T);
	bool o;

	if (least <= b->target)
		return;
	a->floor.sum += least;
	a->floor.n++;
	a->floor.T = T;
	a->floor.stray_s = a->stray_s;
	if (proc_over(b, a->pid, &a->acc, &o))
		floor_say(b, a->pid, &a->floor);
}

/*
 * Whether a sampled window that saw none of a process's calls keeps its last rate for the
 * plan (rho: the share of a window in probes), rather than taking 0. A process that calls in
 * bursts (50 ms of launches, 200 ms asleep) has windows that fall between them: at 0 the next
 * period saw every call, met the next burst at full cost until the rate check ended it (94-1,190
 * hits each, on the stand-in and on the H200), then sampled again, and again: the H200's bursts
 * ran the budget at 0.90 % of their time against the 0.35 % aimed at. Kept only where the rate
 * was measured (its window saw MIN_WINDOW_HITS calls: a burst) and the period says the process
 * ran (on a CPU for BURST_CPU of it): a process that went idle sleeps, and a slower one shows
 * its calls in the window (200/s: ~10 in 50 ms). A slow one whose short windows see none is
 * not kept: measured on no window's MIN_WINDOW_HITS calls, its rate goes to 0 as before.
 */
static bool keep_rate(const struct gp_budget *b, const struct account *a, double n, double on, double T,
		      double cpu_T)
{
	return n <= 0 && on > 0 && on < T && a->rho > b->target && a->rho_n >= MIN_WINDOW_HITS &&
	       cpu_T > BURST_CPU * T;
}

/*
 * One period ended (T seconds, counting for `on` of them): every process's hits and
 * strays in it, from the last snapshot, go to its account; *p gets what the next period
 * must be for every process to keep its budget.
 */
static void account_period(struct gp_budget *b, double T, double on, uint64_t now, struct plan *p)
{
	uint64_t t0 = now - (uint64_t)(T * 1e9);

	pthread_mutex_lock(&b->acc);
	b->nr_watch = 0;
	for (size_t i = 0; i < SLOTS; i++) {
		struct account *a = &b->accounts[i];
		uint64_t hits = b->snap_hits[i], stray = b->snap_stray[i], fixed = b->snap_fixed[i];
		uint64_t active = b->snap_active[i];
		double n, ns, nf, act, cpu_now, cpu_T = -1, Te, one, quiet;
		uint64_t off;
		struct split sp;
		struct gp_window w = { 0 };

		a->fresh = false;
		if (!slot_owner(b, i, b->snap_pid[i], t0, now))
			continue;
		n = hits >= a->last ? (double)(hits - a->last) : 0;
		ns = stray >= a->last_stray ? (double)(stray - a->last_stray) : 0;
		nf = fixed >= a->last_fixed ? (double)(fixed - a->last_fixed) : 0;
		a->last = hits;
		a->last_stray = stray;
		a->last_fixed = fixed;
		act = active >= a->last_active ? (double)(active - a->last_active) * 1e-9 : -1;
		a->last_active = active;
		w.n = n;
		gaps_since(&a->last_gap, &b->snap_gap[i], &w, t0, on);
		span_take(a, &w, t0);
		if (a->closed) { /* accounted to its exit: nothing more of it */
			if (a->pid && kill((pid_t)a->pid, 0) && errno == ESRCH)
				end_account(b, i, now, true);
			continue;
		}
		if (i == GP_HIT_SLOTS && !n && !ns && !nf && !a->acc.seconds)
			continue;
		cpu_now = a->pid ? proc_cpu_s(a->pid) : -1;
		if (cpu_now < 0) /* gone: its clock as last polled */
			cpu_now = a->cpu_poll;
		a->cpu_poll = -1;
		if (a->cpu_last >= 0 && cpu_now >= a->cpu_last)
			cpu_T = cpu_now - a->cpu_last;
		a->cpu_last = cpu_now;
		/* its share over the period, what the exit's last part is taken at (the process is
		 * gone by then); before it has one, over its life so far */
		a->cpu_share = cpu_T >= 0 && T > 0 ? cpu_T / T : a->pid ? lifetime_share(a->pid, cpu_now) : -1;
		w.T = T;
		w.on = on;
		w.busy = thread_busy(b, i, a, &w, T);
		/* A process that exited in this period (its exit record came first) lived only
		 * to its exit: the rest of the period is not an unseen part of it. */
		Te = T;
		one = on;
		if (a->exit_ns && a->exit_ns < t0 + (uint64_t)(T * 1e9)) {
			Te = a->exit_ns > t0 ? (double)(a->exit_ns - t0) / 1e9 : 0;
			if (Te <= on)
				one = Te;
		}
		/* new to the budget, in its cuInit still (no call of it seen, none it could make):
		 * nothing of it went unseen, whatever the window */
		if ((b->fresh[i].pid != a->pid || b->fresh[i].state == FRESH_PENDING) && !n && !ns &&
		    in_init(b, i))
			one = Te;
		/* armed for itself (a process new to the budget): ended since the last tick? */
		if (b->fresh[i].state == FRESH_ARMED && b->fresh[i].pid == a->pid && !b->fresh[i].end_ns &&
		    ended(a->pid))
			b->fresh[i].end_ns = fresh_end(b, i);
		if (!(b->fresh[i].pid == a->pid && b->fresh[i].armed_ever))
			born_seen(a, t0, &Te, &one);
		a->born_ns = 0;
		fresh_seen(b, i, t0, n, &Te, &one, &quiet, &off, &sp);
		n -= acct_fresh_parts(&a->acc, a->pid, quiet, &sp, b->cost, b->price);
		w.n = n;
		/* the priced hits cost the process like strays: never counted, always paid */
		if (Te > 0) {
			w.stray = ns + nf * b->fixed_price / b->price;
			w.T = Te;
			w.on = one;
			w.act = act;
			w.cpu_T = cpu_T;
			acct_period(&a->acc, a->pid, &w, b->cost, b->price);
		}
		a->off_ns = one < Te ? off : 0;
		gp_log(GP_LOG_DEBUG, "budget: period %.1f ms, window %.2f ms: PID %u took %.0f hits (on a CPU for %.2f ms; %.0f gaps of one thread, %.2f of %.2f ms asleep; %.0f before its first sleep, %.2f ms in), %.0f strays and %.0f priced hits, %.1f ms on a CPU, its calling thread busy %.2f",
		       T * 1e3, on * 1e3, a->pid, n, act * 1e3, w.gaps, w.sleep_s * 1e3, w.gap_s * 1e3, w.head, w.head_s * 1e3, ns, nf,
		       cpu_T * 1e3, w.busy);
		a->fresh = one > 0;
		if (one > 0 && one < Te)
			bursty(a, &w);
		/* what its wall time pays: 8 threads launching at once share their probes' time
		 * (summed, the H200's threads8 read 7-9 % of its wall time at a 1 % budget while it
		 * ran +0.64 % slower) */
		a->callers = Te > 0 ? gp_window_callers(&w) : 1;
		if (!keep_rate(b, a, n, one, Te, cpu_T)) {
			a->rho = one > 0 ? n * b->price / one / a->callers : 0;
			a->rho_n = n;
		}
		a->stray_s = ns * b->price / a->callers;
		a->fixed = T > 0 ? nf * b->fixed_price / T : 0;
		if (a->fresh && !in_allowance(b, i, 0))
			budget_floor(b, a, on < T ? T : GP_PERIOD_S);
		if (a->pid && kill((pid_t)a->pid, 0) && errno == ESRCH)
			end_account(b, i, now, true);
		else if (a->fresh && !in_allowance(b, i, 0))
			b->watch[b->nr_watch++] = (uint32_t)i;
	}
	b->periods++;
	if (on < T)
		b->sampled_periods++;
	b->last_unseen = T - on;
	plan(b, p);
	pthread_mutex_unlock(&b->acc);
}

/* Whether every process this period is sampled for (the watched ones) has exited: then
 * nothing needs the probes off, and a process that starts in the rest of the unseen part
 * would go unseen whole (a short job run right after a long one). The spill slot's
 * processes cannot be told apart: they count as running. */
static bool sampled_gone(struct gp_budget *b)
{
	bool gone = true;

	pthread_mutex_lock(&b->acc);
	for (size_t k = 0; k < b->nr_watch && gone; k++) {
		uint32_t pid = b->accounts[b->watch[k]].pid;

		gone = pid && kill((pid_t)pid, 0) && errno == ESRCH;
	}
	pthread_mutex_unlock(&b->acc);
	return gone;
}

/* Slot i's counted hits (or, with fixed, its priced ones) since the last boundary, read
 * now; a new owner since then: all of them are. Called with b->acc held. */
static double since_boundary(struct gp_budget *b, size_t i, bool fixed)
{
	const struct account *a = &b->accounts[i];
	uint32_t pid = i == GP_HIT_SLOTS ? 0 : __atomic_load_n(&b->hits[i].pid, __ATOMIC_ACQUIRE);
	uint64_t v = __atomic_load_n(fixed ? &b->hits[i].fixed : &b->hits[i].hits, __ATOMIC_RELAXED);
	uint64_t last = fixed ? a->last_fixed : a->last;

	return pid == a->pid && v >= last ? (double)(v - last) : (double)v;
}

/* The largest share of time in the probes since the last boundary, all calls seen: the
 * counted hits and the priced ones. */
static double rho_since(struct gp_budget *b, double secs)
{
	double rho = 0;

	if (secs <= 0)
		return 0;
	pthread_mutex_lock(&b->acc);
	for (size_t i = 0; i < SLOTS; i++) {
		uint32_t pid = i == GP_HIT_SLOTS ? 0 : __atomic_load_n(&b->hits[i].pid, __ATOMIC_ACQUIRE);
		double n = since_boundary(b, i, false), s;

		/* a process within its exact allowance (a new owner: none of it spent) */
		if (i < GP_HIT_SLOTS && (pid == b->accounts[i].pid ? in_allowance(b, i, n) :
					 n < allowance_calls(b)))
			n = 0;
		s = n * b->price + since_boundary(b, i, true) * b->fixed_price;
		if (s / secs > rho)
			rho = s / secs;
	}
	pthread_mutex_unlock(&b->acc);
	return rho;
}

static void set_fraction(struct gp_budget *b, double f, bool over, uint64_t now)
{
	pthread_mutex_lock(&b->acc);
	b->over = over;
	if (fabs(f - b->fraction) > 1e-3 * b->fraction) {
		if (b->nr_changes == MAX_CHANGES) {
			memmove(b->changes + 1, b->changes + 2, (MAX_CHANGES - 2) * sizeof(b->changes[0]));
			b->nr_changes--;
		}
		b->changes[b->nr_changes++] = (struct gp_budget_change){ now, f };
	}
	b->fraction = f;
	pthread_mutex_unlock(&b->acc);
}

/* -------------------------------------------------------------------------------------
 * The thread */

static bool stopping(struct gp_budget *b)
{
	return __atomic_load_n(&b->stop, __ATOMIC_ACQUIRE);
}

/* Sleeps until `until` (CLOCK_MONOTONIC ns) in ticks; false when stopped, or (watch)
 * when a hold came up. */
/*
 * Every 20 ms while it waits, the CPU clock of each process the period samples: a process
 * that exits in an unseen part is gone at the boundary, and its CPU time there (what its
 * call-bound model counts its calls by: how much of the part it still worked) is the last
 * one read. A clock read each (~1 us).
 */
static void poll_cpu(struct gp_budget *b, uint64_t now)
{
	if (now - b->cpu_poll_ns < CPU_POLL_NS)
		return;
	b->cpu_poll_ns = now;
	pthread_mutex_lock(&b->acc);
	for (size_t k = 0; k < b->nr_watch; k++) {
		struct account *a = &b->accounts[b->watch[k]];
		double c = a->pid && !a->closed ? proc_cpu_s(a->pid) : -1;

		if (c >= 0)
			a->cpu_poll = c;
	}
	pthread_mutex_unlock(&b->acc);
}

/*
 * An attach can take longer than the periods (a loaded machine: 6.3 s under ASan at load
 * 20), and the budget's thread, making it, waits for nothing else: the watched processes'
 * CPU clocks are read between its probes too (a process that exited meanwhile had its CPU
 * time taken as last read before the attach, 55 ms of its 390), and the calls of the
 * counted kinds that the probes already in catch (strays), with when: a rate measured
 * inside the unseen part, where the last window's is stale (sampling.c, "spanned").
 */
static uint64_t stray_calls_of(struct gp_budget *b, size_t i)
{
	return __atomic_load_n(&b->hits[i].stray_calls, __ATOMIC_RELAXED);
}

static void span_begin(struct gp_budget *b, uint64_t now)
{
	pthread_mutex_lock(&b->acc);
	for (size_t k = 0; k < b->nr_watch; k++) {
		struct account *a = &b->accounts[b->watch[k]];

		a->sp_t0 = now;
		a->sp_n0 = stray_calls_of(b, b->watch[k]);
		a->sp_t1 = a->sp_n1 = 0;
	}
	pthread_mutex_unlock(&b->acc);
}

static void attach_poll(struct gp_budget *b)
{
	uint64_t now = gp_mono_ns();

	poll_cpu(b, now);
	pthread_mutex_lock(&b->acc);
	for (size_t k = 0; k < b->nr_watch; k++) {
		struct account *a = &b->accounts[b->watch[k]];
		uint64_t v = stray_calls_of(b, b->watch[k]);

		if (!a->sp_t0 || v < a->sp_n0) /* not since span_begin, or a new owner */
			continue;
		if (a->sp_t1 || v > a->sp_n0) {
			a->sp_t1 = now;
			a->sp_n1 = v;
		} else {
			a->sp_t0 = now;
		}
	}
	pthread_mutex_unlock(&b->acc);
}

/* The span of strays attach_poll measured for account a, into w (t0: the period's start). */
static void span_take(struct account *a, struct gp_window *w, uint64_t t0)
{
	if (a->sp_t1 > a->sp_t0 && a->sp_t0 >= t0 && a->sp_n1 > a->sp_n0) {
		w->span_n = (double)(a->sp_n1 - a->sp_n0);
		w->span_from = (double)(a->sp_t0 - t0) / 1e9;
		w->span_to = (double)(a->sp_t1 - t0) / 1e9;
	}
	a->sp_t0 = a->sp_t1 = a->sp_n0 = a->sp_n1 = 0;
}

static bool wait_until(struct gp_budget *b, uint64_t until, bool watch)
{
	for (;;) {
		uint64_t now = gp_mono_ns(), step;
		struct timespec ts;

		if (stopping(b) || (watch && held(b)))
			return false;
		fresh_tick(b);
		poll_cpu(b, now);
		if (now >= until)
			return true;
		step = until - now < TICK_NS ? until - now : TICK_NS;
		ts.tv_sec = (time_t)(step / 1000000000ULL);
		ts.tv_nsec = (long)(step % 1000000000ULL);
		nanosleep(&ts, NULL);
	}
}

static double median_of(const double *ring, uint64_t nr)
{
	size_t n = nr < RING ? (size_t)nr : RING;
	double v[RING];

	if (!n)
		return 0;
	memcpy(v, ring, n * sizeof(v[0]));
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Run time and runs so far of the first group's entry (k 0) or return (k 1) program. */
static bool prog_stats(struct gp_budget *b, int k, uint64_t *ns, uint64_t *runs)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd;

	pthread_mutex_lock(&b->links);
	fd = !b->ngroups ? -1 : k ? b->groups[0].leave : b->groups[0].enter;
	pthread_mutex_unlock(&b->links);
	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return false;
	*ns = info.run_time_ns;
	*runs = info.run_cnt;
	return true;
}

/* A counted call's traps (two with a return probe) and programs, warm and cold. Called with
 * b->acc held (or before the thread starts). */
static void set_cost(struct gp_budget *b)
{
	int k = b->returns ? 2 : 1;
	double progs = b->prog.ns[0] * 1e-9 + (b->returns ? b->prog.ns[1] * 1e-9 : 0);

	b->cost = k * b->trap + progs;
	b->price = k * b->cold + progs;
	b->fixed_price = 2 * b->cold + progs;
}

/*
 * The price of a counted call: its traps (calibrated) and its programs' run time, which
 * the kernel measures only while asked to: from the start for 200 runs, then for at most
 * 10 s or 2000 runs, then again every 10 minutes. Without CAP_SYS_ADMIN (EPERM) the traps
 * alone, and said so.
 */
static void measure_progs(struct gp_budget *b, uint64_t now)
{
	struct prog_cost *pc = &b->prog;
	uint64_t ns[2] = { 0 }, runs[2] = { 0 };

	if (pc->refused)
		return;
	if (pc->stats_fd < 0) {
		if (now < pc->next)
			return;
		pc->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (pc->stats_fd < 0) {
			pc->refused = true;
			gp_log(GP_LOG_WARN, "budget: cannot measure the probes' programs (%s): a hit is priced at the trap alone",
			       strerror(errno));
			return;
		}
		pc->since = now;
		for (int k = 0; k < 2; k++)
			prog_stats(b, k, &pc->ns0[k], &pc->runs0[k]);
		return;
	}
	for (int k = 0; k < 2; k++)
		prog_stats(b, k, &ns[k], &runs[k]);
	if (runs[0] - pc->runs0[0] < (pc->measures == 0 ? PROG_WARMUP_RUNS : pc->measures == 1 ? PROG_FIRST_RUNS :
				      PROG_MEASURE_RUNS) &&
	    now - pc->since < PROG_MEASURE_NS)
		return;
	if (!pc->measures++ && runs[0] - pc->runs0[0] >= PROG_WARMUP_RUNS) { /* warmed up: measure now */
		pc->since = now;
		memcpy(pc->ns0, ns, sizeof(ns));
		memcpy(pc->runs0, runs, sizeof(runs));
		return;
	}
	close(pc->stats_fd);
	pc->stats_fd = -1;
	pc->next = pc->measures > 2 ? now + PROG_REMEASURE_NS : now;
	pthread_mutex_lock(&b->acc);
	for (int k = 0; k < 2; k++)
		if (runs[k] > pc->runs0[k])
			pc->ns[k] = (double)(ns[k] - pc->ns0[k]) / (double)(runs[k] - pc->runs0[k]);
	set_cost(b);
	pthread_mutex_unlock(&b->acc);
	gp_log(GP_LOG_DEBUG, "budget: programs %.0f ns (entry), %.0f ns (return) a run: a call costs %.2f us (%.2f us warm)",
	       pc->ns[0], pc->ns[1], b->price * 1e6, b->cost * 1e6);
}

/* The next period as planned, unless a hold (a stream capture) wants every call seen. */
static double next_fraction(struct gp_budget *b, const struct plan *p, uint64_t now)
{
	double f = held(b) ? 1.0 : p->fraction;

	measure_progs(b, now);
	b->period_s = p->period_s;
	/* over: even the least window passes the budget, or the probes it never samples do alone */
	set_fraction(b, f, (f < 1 || p->fixed_over) && p->past, now);
	return f;
}

/* Every call seen: a boundary each period, or as soon as a process's rate would pass the
 * target. Returns the share to sample next (its window begins now, at *start). */
/* The period now begins at start, its window open (or, with off, closed at off). */
static void set_current(struct gp_budget *b, uint64_t start, uint64_t off)
{
	pthread_mutex_lock(&b->acc);
	b->cur_start = start;
	b->cur_off = off;
	pthread_mutex_unlock(&b->acc);
}

static double exact_period(struct gp_budget *b, uint64_t *start)
{
	uint64_t t0 = *start, now = t0;
	struct plan p;

	while (now < t0 + PERIOD_NS) {
		if (!wait_until(b, now + EXACT_CHECK_NS, false))
			break;
		now = gp_mono_ns();
		measure_progs(b, now); /* priced before the first window if it can be */
		if (now - t0 >= 2 * EXACT_CHECK_NS && rho_since(b, (double)(now - t0) / 1e9) > b->target)
			break;
	}
	now = gp_mono_ns();
	take_snapshot(b);
	account_period(b, (double)(now - t0) / 1e9, (double)(now - t0) / 1e9, now, &p);
	set_current(b, now, 0);
	*start = now;
	return next_fraction(b, &p, now);
}

/*
 * Whether a process has taken, in the open window, twice the hits its budget allows for the
 * whole T-second period: its rate at least doubled since the plan (a window is planned to
 * take all of them, so the allowance alone would cut every other window on noise). Then the
 * window ends now and the next plan is made from the rate it found: a rise costs one
 * period at most twice the target. Only the processes accounted in the last period are
 * looked at (a new one waits for the next plan, as before the guard).
 */
static bool window_spent(struct gp_budget *b, double T)
{
	bool spent = false;

	pthread_mutex_lock(&b->acc);
	for (size_t k = 0; k < b->nr_watch && !spent; k++) {
		const struct account *a = &b->accounts[b->watch[k]];
		double allow = (aim(b, a) - a->fixed) * T - a->stray_s;

		spent = allow > 0 && since_boundary(b, b->watch[k], false) * b->price / (a->callers >= 1 ? a->callers : 1) >
				     GUARD * allow;
	}
	b->cut_windows += spent;
	pthread_mutex_unlock(&b->acc);
	return spent;
}

/*
 * Whether a process that called in the last window has taken fewer than MIN_WINDOW_HITS hits
 * in this one: the window then says little of its rate (a 2-ms window on a loaded machine can
 * fall in a slice the process spent waiting for a CPU: on the 2-CPU development machine a
 * window saw 0 calls of a loop that ran 254 ms of the period, and the stand-in's 2-us loop was
 * estimated at 0.17x its count), and costs it little (few hits): it goes on.
 */
static bool window_thin(struct gp_budget *b)
{
	bool thin = false;

	pthread_mutex_lock(&b->acc);
	for (size_t k = 0; k < b->nr_watch && !thin; k++)
		thin = b->accounts[b->watch[k]].rho > 0 && since_boundary(b, b->watch[k], false) < MIN_WINDOW_HITS;
	pthread_mutex_unlock(&b->acc);
	return thin;
}

/* The window of a sampled period: f of its T seconds from t0, ended sooner (never under
 * GP_MIN_WINDOW_S) once a process has taken twice its period's hits, later (up to
 * WIDEN_S, never past an eighth of the period) while a process that called in the last one
 * has taken too few to tell its rate. False when stopped. */
static bool wait_window(struct gp_budget *b, uint64_t t0, uint64_t T, double f)
{
	uint64_t end = t0 + (uint64_t)(f * (double)T), least = t0 + (uint64_t)(GP_MIN_WINDOW_S * 1e9);
	uint64_t widen = (uint64_t)(WIDEN_S * 1e9) < T / 8 ? (uint64_t)(WIDEN_S * 1e9) : T / 8;
	uint64_t cap = end > t0 + widen ? end : t0 + widen;

	for (;;) {
		uint64_t now = gp_mono_ns();

		if (now >= least && window_spent(b, (double)T / 1e9))
			return !stopping(b);
		if (now >= end && (now >= cap || !window_thin(b)))
			return !stopping(b);
		if (!wait_until(b, now < end && end < now + WINDOW_TICK_NS ? end : now + WINDOW_TICK_NS, false))
			return false;
	}
}

/* Stopped within a sampled period: the part of it until now is accounted (t_off: when its
 * window closed, 0: open until now), so that a final report taken after the stop holds the
 * calls of its last part (a process that ended in it: its unseen part ends in a step to none
 * at its account's end); without it, a report missed up to a period's calls and their price. */
static double last_period(struct gp_budget *b, uint64_t t0, uint64_t t_off, double f)
{
	uint64_t now = gp_mono_ns();
	struct plan p;

	take_snapshot(b);
	account_period(b, (double)(now - t0) / 1e9, (double)((t_off ? t_off : now) - t0) / 1e9, now, &p);
	return f;
}

/*
 * A sampled period: its window first (the links are in since *start), then the window
 * closes (BPF counts nothing more: what the links still catch until they are gone are
 * strays), the links close, and nothing until the next window. The period is accounted
 * when it ends, just before the next window's links come. A hold (a stream capture began)
 * ends the wait at once. Returns the share for the period that begins with the new window.
 */
static double sampled_period(struct gp_budget *b, uint64_t *start, double f)
{
	uint64_t t0 = *start, T, t_off, now;
	double attach_est, len;

	/* Windows a fixed period apart alias a process that calls in bursts of about that
	 * period (every window in a burst, or none): each period's length is drawn at random,
	 * so that windows fall at any point of a burst and consecutive ones disagree (their
	 * steps widen the interval) instead of agreeing on a wrong rate. */
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	len = b->period_s * (1 + JITTER * (2 * (double)(b->rng >> 11) / 9007199254740992.0 - 1));
	T = (uint64_t)((len < GP_MAX_PERIOD_S ? len : GP_MAX_PERIOD_S) * 1e9);
	struct plan p;

	if (!wait_window(b, t0, T, f))
		return last_period(b, t0, 0, f);
	/* the processes new to the budget that came in the window armed for themselves before
	 * it closes: none of their calls falls between the window and their own probes */
	pthread_mutex_lock(&b->links);
	fresh_arm_pending(b, gp_mono_ns());
	pthread_mutex_unlock(&b->links);
	set_window(b, false);
	t_off = gp_mono_ns();
	set_current(b, t0, t_off);
	gp_log(GP_LOG_DEBUG, "budget: window closed at %llu", (unsigned long long)t_off);
	pthread_mutex_lock(&b->links);
	detach_all(b);
	pthread_mutex_unlock(&b->links);
	pthread_mutex_lock(&b->acc);
	attach_est = median_of(b->attach_ms, b->nr_attach) * 1e6;
	pthread_mutex_unlock(&b->acc);
	if (attach_est > (double)T / 4)
		attach_est = (double)T / 4;
	/* the unseen part, ended early once every process it was for has exited */
	for (uint64_t at = gp_mono_ns(), until = t0 + T - (uint64_t)attach_est; at < until; at = gp_mono_ns())
		if (!wait_until(b, at + TICK_NS < until ? at + TICK_NS : until, true) || sampled_gone(b))
			break;
	if (stopping(b))
		return last_period(b, t0, t_off, f);
	gp_log(GP_LOG_DEBUG, "budget: attach begins at %llu", (unsigned long long)gp_mono_ns());
	pthread_mutex_lock(&b->links);
	attach_all(b);
	pthread_mutex_unlock(&b->links);
	/* the breakpoints are in: */
	/* this period ends and the next window opens */
	now = gp_mono_ns();
	take_snapshot(b);
	set_window(b, true);
	gp_log(GP_LOG_DEBUG, "budget: window open at %llu", (unsigned long long)now);
	pthread_mutex_lock(&b->acc);
	b->windows++;
	pthread_mutex_unlock(&b->acc);
	account_period(b, (double)(now - t0) / 1e9, (double)(t_off - t0) / 1e9, now, &p);
	set_current(b, now, 0);
	*start = now;
	return next_fraction(b, &p, now);
}

static void *budget_main(void *arg)
{
	struct gp_budget *b = arg;
	uint64_t start = gp_mono_ns();
	double f = 1.0;

	set_window(b, true);
	set_current(b, start, 0);
	measure_progs(b, start);
	gp_log(GP_LOG_DEBUG, "budget: window open at %llu", (unsigned long long)start);
	while (!stopping(b))
		f = f >= 1 ? exact_period(b, &start) : sampled_period(b, &start, f);
	return NULL;
}

/* -------------------------------------------------------------------------------------
 * The module */

enum gp_budget_how gp_budget_mechanism(bool mount, char *why, size_t len, const char **reason)
{
	char err[200];
	int r;

	*reason = "";
	/* uprobe events first: disarmed in well under a millisecond where a uprobe_multi link
	 * takes 30-120 ms to close with its breakpoints still in (strays), and they arm one
	 * process alone (a process new to the budget); uprobe_multi where tracefs cannot be used */
	r = uevent__available(mount, err, sizeof(err));
	if (!r)
		return GP_BUDGET_UEVENTS;
	if (attach__has_uprobe_multi()) {
		snprintf(why, len, "%s", err);
		return GP_BUDGET_MULTI;
	}
	*reason = r == -EOPNOTSUPP ? "uprobe_events_off" : r == -ENOENT ? "no_uprobe_events" :
		  r == -EROFS || r == -EACCES ? "uprobe_events_permission" : "no_tracefs";
	snprintf(why, len, "no uprobe_multi links (Linux 6.6 or later)%s, and no tracefs uprobe events: %s",
		 getenv("GPUPROBE_NO_UPROBE_MULTI") ? ", GPUPROBE_NO_UPROBE_MULTI is set" : "", err);
	return GP_BUDGET_NONE;
}

const char *gp_budget_how_name(enum gp_budget_how h)
{
	return h == GP_BUDGET_MULTI ? "uprobe_multi" : h == GP_BUDGET_UEVENTS ? "uprobe_events" : "none";
}

const char *gp_budget_unarmed_name(enum gp_budget_unarmed r)
{
	static const char *const n[GP_UNARMED__COUNT] = { "cap", "user_cap", "error", "mechanism", "late" };

	return r < GP_UNARMED__COUNT ? n[r] : "?";
}

struct gp_budget *gp_budget__new(double pct, const struct gp_probe_cost *c, enum gp_budget_how how, char *err,
				 size_t len)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	struct gp_budget *b = calloc(1, sizeof(*b));
	long page = sysconf(_SC_PAGESIZE);
	void *m;

	if (!b)
		goto oom;
	b->hits_fd = -1;
	b->pct = pct;
	b->multi = how == GP_BUDGET_MULTI;
	b->trap = c->warm;
	b->cold = c->cold; /* never under warm (calibrate.c) */
	set_cost(b);
	b->prog.stats_fd = -1;
	b->target = MARGIN * pct / 100.0;
	b->fraction = 1.0;
	b->period_s = GP_PERIOD_S;
	b->rng = gp_mono_ns() | 1;
	pthread_mutex_init(&b->links, NULL);
	pthread_mutex_init(&b->acc, NULL);
	pthread_cond_init(&b->closed, NULL);
	b->accounts = calloc(SLOTS, sizeof(*b->accounts));
	b->snap_pid = calloc(SLOTS, sizeof(*b->snap_pid));
	b->watch = calloc(SLOTS, sizeof(*b->watch));
	b->snap_hits = calloc(SLOTS, sizeof(*b->snap_hits));
	b->snap_stray = calloc(SLOTS, sizeof(*b->snap_stray));
	b->snap_fixed = calloc(SLOTS, sizeof(*b->snap_fixed));
	b->snap_active = calloc(SLOTS, sizeof(*b->snap_active));
	b->snap_gap = calloc(SLOTS, sizeof(*b->snap_gap));
	b->ended = u64map__new();
	b->fresh = calloc(GP_HIT_SLOTS, sizeof(*b->fresh));
	if (!b->fresh || !b->accounts || !b->ended || !b->snap_pid || !b->watch || !b->snap_hits || !b->snap_stray ||
	    !b->snap_fixed || !b->snap_active || !b->snap_gap)
		goto oom;
	b->hits_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "gp_hits", sizeof(__u32), sizeof(struct gp_hit_slot),
				    MAP_SLOTS, &o);
	if (b->hits_fd < 0) {
		snprintf(err, len, "cannot create the budget's hit counters: %s", strerror(errno));
		goto fail;
	}
	b->map_len = (MAP_SLOTS * sizeof(struct gp_hit_slot) + (size_t)page - 1) / (size_t)page * (size_t)page;
	m = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, b->hits_fd, 0);
	if (m == MAP_FAILED) {
		snprintf(err, len, "cannot map the budget's hit counters: %s", strerror(errno));
		goto fail;
	}
	b->hits = m;
	set_window(b, true);
	return b;
oom:
	snprintf(err, len, "out of memory");
fail:
	gp_budget__free(b);
	return NULL;
}

int gp_budget__hits_fd(const struct gp_budget *b)
{
	return b->hits_fd;
}

/*
 * The library, opened once for the life of the group: every window attaches to this very
 * file. The path the caller attached by may stop naming it: a "/proc/self/fd/N" whose
 * descriptor its owner closes after the attach (src/core/libwatch.c does, and N then
 * names whatever is opened next), or a path a process swaps. Opening "/proc/self/fd/N"
 * opens the file that descriptor holds.
 */
static int hold_file(struct group *g, const char *path)
{
	char own[32];
	struct stat st;

	g->file_fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (g->file_fd < 0)
		return -errno;
	if (fstat(g->file_fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	snprintf(own, sizeof(own), "/proc/self/fd/%d", g->file_fd);
	g->path = strdup(own);
	return g->path ? 0 : -ENOMEM;
}

/* Without uprobe_multi: the group's events, entries then returns, made once (uevent.h);
 * 0, or -errno with one line in why. */
static int group_events(struct group *g, char *why, size_t len)
{
	int total = g->n + (g->leave >= 0 ? g->nr : 0);

	g->ue = calloc((size_t)(total ? total : 1), sizeof(*g->ue));
	g->armed = malloc((size_t)(total ? total : 1) * sizeof(*g->armed));
	if (!g->ue || !g->armed) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < total; i++)
		g->armed[i] = -1;
	for (g->nue = 0; g->nue < total; g->nue++) {
		int i = g->nue, k = i - g->n;
		struct uevent *e = k < 0 ? uevent__new(g->path, g->offs[i], false, g->enter, g->cookies[i], why, len)
					 : uevent__new(g->path, g->roffs[k], true, g->leave, g->rcookies[k], why, len);

		if (!e)
			return -EIO;
		g->ue[i] = e;
	}
	return 0;
}

int gp_budget__add(struct gp_budget *b, const struct gp_sampled *s, char *err, size_t len)
{
	char why[256] = "";
	struct group g = { .enter = s->enter, .leave = s->leave, .pid = s->pid > 0 ? (__u32)s->pid : 0,
			   .hold = s->hold, .fd_enter = -1, .fd_leave = -1 };
	struct group *ng;
	int r = hold_file(&g, s->path);

	if (!r)
		r = compact(s->offsets, s->cookies, s->n, &g.offs, &g.cookies);
	if (r >= 0) {
		g.n = r;
		r = compact(s->ret_offsets ? s->ret_offsets : s->offsets, s->cookies, s->n, &g.roffs, &g.rcookies);
	}
	if (r >= 0) {
		g.nr = r;
		r = b->multi ? 0 : group_events(&g, why, sizeof(why));
	}
	if (!r) {
		pthread_mutex_lock(&b->links);
		ng = realloc(b->groups, (size_t)(b->ngroups + 1) * sizeof(*ng));
		r = ng ? 0 : -ENOMEM;
		if (ng) {
			b->groups = ng;
			/* while the probes are off, the next window attaches this group too */
			r = b->attached || !b->started ? group_attach(b, &g, &(bool){ false }) : 0;
			if (!r)
				b->groups[b->ngroups++] = g;
			/* a call with a return probe takes two traps for the one counted */
			if (!r && g.leave >= 0 && g.nr) {
				pthread_mutex_lock(&b->acc);
				b->returns = true;
				set_cost(b);
				pthread_mutex_unlock(&b->acc);
			}
			if (!b->started)
				b->attached = true;
		}
		pthread_mutex_unlock(&b->links);
	}
	if (r) {
		if (g.fd_enter >= 0)
			close(g.fd_enter);
		/* disarmed before they are freed: an armed event cannot be removed */
		for (int i = 0; g.armed && i < g.nue; i++)
			if (g.armed[i] >= 0)
				close(g.armed[i]), g.armed[i] = -1;
		if (g.ue)
			uevent__free_all(g.ue, g.nue);
		group_free(&g);
		snprintf(err, len, "cannot attach the %s probes to %s: %s", s->what, s->path, why[0] ? why : strerror(-r));
	}
	return r;
}

int gp_budget__remove_file(struct gp_budget *b, dev_t dev, ino_t ino)
{
	int gone = 0, k = 0;

	if (!b)
		return 0;
	pthread_mutex_lock(&b->links);
	for (int i = 0; i < b->ngroups; i++) {
		struct group *g = &b->groups[i];
		struct stat st;

		if (fstat(g->file_fd, &st) || st.st_dev != dev || st.st_ino != ino) {
			b->groups[k++] = *g;
			continue;
		}
		/* an armed event cannot be removed: the processes armed alone join the others */
		fresh_disarm_all(b, true);
		if (g->fd_leave >= 0)
			close_async(b, g->fd_leave);
		if (g->fd_enter >= 0)
			close_async(b, g->fd_enter);
		if (g->ue) { /* its events disarmed, then freed, in a thread of their own */
			int *fds = malloc((size_t)(g->nue ? g->nue : 1) * sizeof(*fds));

			if (fds) {
				close_many_async(b, fds, take_armed(g, fds, 0), g->ue, g->nue);
			} else {
				for (int j = 0; j < g->nue; j++)
					if (g->armed[j] >= 0)
						close(g->armed[j]), g->armed[j] = -1;
				uevent__free_all(g->ue, g->nue);
				free(g->ue);
			}
			g->ue = NULL;
		}
		gone += g->n + (g->leave >= 0 ? g->nr : 0);
		group_free(g);
	}
	b->ngroups = k;
	pthread_mutex_unlock(&b->links);
	return gone;
}

int gp_budget__start(struct gp_budget *b, char *err, size_t len)
{
	int r;

	b->attached = true;
	b->started = true;
	r = pthread_create(&b->thread, NULL, budget_main, b);
	if (r) {
		b->started = false;
		snprintf(err, len, "cannot start the budget's thread: %s", strerror(r));
		return -r;
	}
	return 0;
}

void gp_budget__stop(struct gp_budget *b)
{
	if (!b)
		return;
	if (b->started) {
		__atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
		pthread_join(b->thread, NULL);
		b->started = false;
	}
	if (b->prog.stats_fd >= 0)
		close(b->prog.stats_fd);
	b->prog.stats_fd = -1;
	/* as the run's own links: released from several threads at once */
	pthread_mutex_lock(&b->links);
	fresh_disarm_all(b, true);
	detach_all(b);
	pthread_mutex_unlock(&b->links);
	pthread_mutex_lock(&b->acc);
	while (b->closing)
		pthread_cond_wait(&b->closed, &b->acc);
	pthread_mutex_unlock(&b->acc);
}

/* Every group's events (disarmed: gp_budget__stop), all at once and apart: each takes the
 * kernel's grace periods (uevent.h), and gpuprobe's end does not wait for them. */
static void free_events(struct gp_budget *b)
{
	struct uevent **all;
	int n = 0;

	for (int i = 0; i < b->ngroups; i++)
		n += b->groups[i].nue;
	all = n ? malloc((size_t)n * sizeof(*all)) : NULL;
	n = 0;
	for (int i = 0; i < b->ngroups; i++) {
		struct group *g = &b->groups[i];

		for (int j = 0; g->ue && j < g->nue; j++) {
			if (all)
				all[n++] = g->ue[j];
			else
				uevent__free(g->ue[j]);
			g->ue[j] = NULL;
		}
	}
	if (all)
		uevent__free_all_apart(all, n);
	free(all);
}

void gp_budget__free(struct gp_budget *b)
{
	if (!b)
		return;
	gp_budget__stop(b);
	free_events(b);
	for (int i = 0; i < b->ngroups; i++)
		group_free(&b->groups[i]);
	free(b->groups);
	if (b->hits)
		munmap(b->hits, b->map_len);
	if (b->hits_fd >= 0)
		close(b->hits_fd);
	for (size_t i = 0; b->accounts && i < SLOTS; i++)
		free(b->accounts[i].threads);
	free(b->accounts);
	free(b->snap_pid);
	free(b->watch);
	free(b->snap_hits);
	free(b->snap_stray);
	free(b->snap_fixed);
	free(b->snap_active);
	free(b->snap_gap);
	free(b->fresh);
	u64map__free_all(b->ended, NULL);
	pthread_mutex_destroy(&b->links);
	pthread_mutex_destroy(&b->acc);
	pthread_cond_destroy(&b->closed);
	free(b);
}

/* The account of pid: its slot's, else the one it left when it ended, else (its slot
 * held by another process) the spill slot's, which all such processes share. */
static const struct gp_account *account_of(struct gp_budget *b, uint32_t pid)
{
	size_t i = pid & (GP_HIT_SLOTS - 1);
	struct ended *e;

	if (b->accounts[i].pid == pid)
		return &b->accounts[i].acc;
	e = u64map__get(b->ended, pid);
	if (e)
		return &e->acc;
	return b->accounts[i].pid ? &b->accounts[GP_HIT_SLOTS].acc : NULL;
}

void gp_budget__exited(struct gp_budget *b, uint32_t pid, uint64_t ts_ns)
{
	size_t i = pid & (GP_HIT_SLOTS - 1);
	struct ended *e;

	if (!b || !pid)
		return;
	gp_log(GP_LOG_DEBUG, "budget: PID %u exited at %llu", pid, (unsigned long long)ts_ns);
	pthread_mutex_lock(&b->acc);
	if (b->fresh && b->fresh[i].pid == pid && !b->fresh[i].end_ns)
		b->fresh[i].end_ns = ts_ns;
	if (b->accounts[i].pid == pid && !b->accounts[i].closed) {
		struct account *a = &b->accounts[i];

		a->exit_ns = ts_ns;
		if (ts_ns >= b->cur_start && b->cur_start) {
			/* It exited in the period now: its part of it is accounted at once, to its
			 * exit (the report that follows an exit would otherwise leave out the hits
			 * since the boundary, and scale them as if they had been sampled), and
			 * nothing of it after. */
			double T = (double)(ts_ns - b->cur_start) / 1e9;
			double on = b->cur_off && b->cur_off < ts_ns ? (double)(b->cur_off - b->cur_start) / 1e9 : T;
			double n = since_boundary(b, i, false), nf = since_boundary(b, i, true);
			uint64_t st = __atomic_load_n(&b->hits[i].stray, __ATOMIC_RELAXED);
			uint64_t act = __atomic_load_n(&b->hits[i].active_ns, __ATOMIC_RELAXED);
			struct gap_counts gc;
			double ns = st >= a->last_stray ? (double)(st - a->last_stray) : 0;
			double quiet;
			uint64_t off;
			struct split sp;

			a->last += (uint64_t)n;
			a->last_fixed += (uint64_t)nf;
			a->last_stray = st;
			fresh_seen(b, i, b->cur_start, n, &T, &on, &quiet, &off, &sp);
			n -= acct_fresh_parts(&a->acc, pid, quiet, &sp, b->cost, b->price);
			if (T > 0) {
				/* its CPU time since the boundary as last polled (it is gone), else at
				 * its share over the last period; its calling thread's busy share as
				 * over the last period */
				struct gp_window w = {
					.n = n, .stray = ns + nf * b->fixed_price / b->price, .T = T, .on = on,
					.act = act >= a->last_active ? (double)(act - a->last_active) * 1e-9 : -1,
					.cpu_T = a->cpu_poll >= 0 && a->cpu_last >= 0 && a->cpu_poll >= a->cpu_last ?
							 a->cpu_poll - a->cpu_last :
						 a->cpu_share >= 0 ? a->cpu_share * T : -1,
					.busy = a->busy,
				};

				read_gaps(&b->hits[i], &gc);
				gaps_since(&a->last_gap, &gc, &w, b->cur_start, on);
				/* a last look at its strays, at its exit: one that ended while the next
				 * window's links went in (uprobe_multi's return link after the entry one,
				 * tracefs events one at a time) took them up to it, and no look came
				 * after (its part stayed dark: rate_app's 3-s slow attaches) */
				if (a->sp_t0 && ts_ns > a->sp_t0 && stray_calls_of(b, i) > a->sp_n0 &&
				    stray_calls_of(b, i) >= a->sp_n1) {
					a->sp_t1 = ts_ns;
					a->sp_n1 = stray_calls_of(b, i);
				}
				span_take(a, &w, b->cur_start);
				acct_period(&a->acc, pid, &w, b->cost, b->price);
			}
			a->last_active = act;
			a->closed = true;
			/* nothing of it in the period now (a late-armed job found gone by its last
			 * call, before the boundary): the unseen part its last period left stands
			 * (trimmed to T - on, 0, its gap before its seen part went: 84 of 360
			 * launches read [84, 84]), but for what came after its window */
			if (T > 0)
				acct_trim(&a->acc, pid, T - on);
			else if (a->off_ns)
				acct_trim_to(&a->acc, pid, a->off_ns, ts_ns);
		} else if (a->off_ns) {
			acct_trim_to(&a->acc, pid, a->off_ns, ts_ns);
		}
	} else if ((e = u64map__get(b->ended, pid)) && e->off_ns) {
		acct_trim_to(&e->acc, pid, e->off_ns, ts_ns);
	}
	pthread_mutex_unlock(&b->acc);
}

bool gp_budget__sampling(struct gp_budget *b, uint32_t pid, struct gp_sampling *out)
{
	const struct gp_account *a;
	bool r = false;

	memset(out, 0, sizeof(*out));
	if (!b)
		return false;
	pthread_mutex_lock(&b->acc);
	a = account_of(b, pid);
	if (a)
		r = gp_account__sampling(a, out);
	pthread_mutex_unlock(&b->acc);
	return r;
}

bool gp_budget__sampling_settled(struct gp_budget *b, uint32_t pid, struct gp_sampling *out)
{
	const struct gp_account *a;
	struct gp_account c;
	bool r = false;

	memset(out, 0, sizeof(*out));
	if (!b)
		return false;
	pthread_mutex_lock(&b->acc);
	a = account_of(b, pid);
	if (a) {
		c = *a;
		c.pending = false;
		r = gp_account__sampling(&c, out);
	}
	pthread_mutex_unlock(&b->acc);
	return r;
}

void gp_budget__reap(struct gp_budget *b, uint64_t cutoff_ns, uint32_t keep_pid)
{
	uint64_t gone[256], pid;
	size_t n = 0;
	void *v;

	if (!b)
		return;
	pthread_mutex_lock(&b->acc);
	do {
		n = 0;
		for (size_t it = 0; n < 256 && u64map__next(b->ended, &it, &pid, &v);)
			if (pid != keep_pid && ((struct ended *)v)->end_ns < cutoff_ns)
				gone[n++] = pid;
		for (size_t i = 0; i < n; i++)
			free(u64map__del(b->ended, gone[i]));
	} while (n == 256);
	pthread_mutex_unlock(&b->acc);
}

/* Whether a process's own estimate of its time in the probes passed the budget (pct %),
 * its exact allowance left out (a process spends it by design, every call seen, however
 * short its life: the spill slot's processes, together, have none); *allowance: only with it. */
static bool proc_over(const struct gp_budget *b, uint32_t pid, const struct gp_account *a, bool *allowance)
{
	double lim = b->pct / 100 * a->seconds, allow = pid ? allowance_calls(b) * b->price : 0;

	*allowance = a->seconds > 0 && a->probe_s > lim && a->probe_s - allow <= lim;
	return a->seconds > 0 && a->probe_s - allow > lim;
}

static int add_proc(struct gp_budget_stats *s, size_t *cap, struct gp_budget *b, uint32_t pid, bool ended,
		    const struct gp_account *a, struct floor *fl)
{
	bool allowance, over = proc_over(b, pid, a, &allowance);
	double floor = fl->n > 0 ? fl->sum / fl->n : 0;

	if (over && pid)
		floor_say(b, pid, fl);

	if (s->nr_procs == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct gp_budget_proc *np = realloc(s->procs, nc * sizeof(*np));

		if (!np)
			return -ENOMEM;
		s->procs = np;
		*cap = nc;
	}
	s->procs[s->nr_procs++] = (struct gp_budget_proc){ pid, ended, *a, over, allowance, floor };
	if (over && floor > b->pct / 100) {
		s->floor_procs++;
		if (floor > s->floor)
			s->floor = floor;
	}
	s->over_procs += over;
	s->over |= over;
	return 0;
}

int gp_budget__stats(struct gp_budget *b, struct gp_budget_stats *s)
{
	size_t cap = 0;
	uint64_t pid;
	void *v;
	int r = 0;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&b->acc);
	s->pct = b->pct;
	s->cost = b->cold;
	s->call_cost = b->price;
	s->warm_cost = b->trap;
	s->allowance = allowance_calls(b);
	s->prog_ns[0] = b->prog.ns[0];
	s->prog_ns[1] = b->returns ? b->prog.ns[1] : 0;
	s->prog_measured = !b->prog.refused && (b->prog.ns[0] > 0);
	s->target = b->target;
	s->fraction = b->fraction;
	s->over = s->over_now = b->over;
	s->periods = b->periods;
	s->sampled_periods = b->sampled_periods;
	s->windows = b->windows;
	s->cut_windows = b->cut_windows;
	s->attach_ms = median_of(b->attach_ms, b->nr_attach);
	s->detach_ms = median_of(b->detach_ms, b->nr_detach);
	s->mechanism = gp_budget_how_name(b->multi ? GP_BUDGET_MULTI : GP_BUDGET_UEVENTS);
	s->fresh_armed = b->fresh_armed;
	s->fresh_now = (uint64_t)__atomic_load_n(&b->nr_armed, __ATOMIC_RELAXED);
	memcpy(s->unarmed, b->unarmed, sizeof(s->unarmed));
	s->changes = calloc(b->nr_changes ? b->nr_changes : 1, sizeof(*s->changes));
	if (s->changes) {
		memcpy(s->changes, b->changes, b->nr_changes * sizeof(*s->changes));
		s->nr_changes = b->nr_changes;
	}
	/* pid 0: the processes whose slot another one held, together */
	for (size_t i = 0; i < SLOTS && !r; i++)
		if (b->accounts[i].pid || (i == GP_HIT_SLOTS && b->accounts[i].acc.obs))
			r = add_proc(s, &cap, b, b->accounts[i].pid, false, &b->accounts[i].acc, &b->accounts[i].floor);
	for (size_t it = 0; !r && u64map__next(b->ended, &it, &pid, &v);)
		r = add_proc(s, &cap, b, (uint32_t)pid, true, &((struct ended *)v)->acc, &((struct ended *)v)->floor);
	pthread_mutex_unlock(&b->acc);
	if (!s->changes || r) {
		gp_budget__stats_free(s);
		return -ENOMEM;
	}
	return 0;
}

void gp_budget__stats_free(struct gp_budget_stats *s)
{
	free(s->changes);
	free(s->procs);
	s->changes = NULL;
	s->procs = NULL;
	s->nr_changes = s->nr_procs = 0;
}
