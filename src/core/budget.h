/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --max-overhead: a run-level budget on the time a process spends in gpuprobe's probes.
 * Modes attach the probes it may sample (launches, syncs: high-rate, each call counted on
 * its own) through it (gp_run__attach_sampled); their BPF programs count each hit per
 * process in the shared array `gp_hits` (bpf/budget.bpf.h), which this module maps and
 * reads without a system call. A thread of its own cuts time into periods (100 ms while
 * every call is seen, 500 ms sampled); when a
 * process's probe time would pass the budget it attaches those probes for a window of
 * each period only and disarms their tracefs uprobe events for the rest (src/core/uevent.h;
 * where those cannot be made, closes their uprobe_multi links), and arms a process new to it
 * for itself until it spent its exact allowance (budget.c) — a detached uprobe
 * costs the process nothing, while a program that returns at once still costs the trap
 * (docs/benchmarks.md) — and estimates the unseen calls (src/lib/sampling.h). When the
 * rate falls it attaches them for good again. Allocation, free and copy probes never go
 * through it, but are priced (gp_priced_hit): their share comes off the budget first.
 */
#ifndef GP_BUDGET_H
#define GP_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "core/calibrate.h"
#include "lib/sampling.h"

struct gp_budget;

/* How the budget arms and disarms its probes on this kernel: uprobe_multi links (Linux
 * 6.6), tracefs uprobe events (src/core/uevent.h), or not at all (it cannot sample). */
enum gp_budget_how { GP_BUDGET_NONE, GP_BUDGET_MULTI, GP_BUDGET_UEVENTS };

/* This kernel's: tracefs uprobe events wherever they can be made, else uprobe_multi links
 * (why: what the uprobe events lack); with NONE, one line in why naming what is missing and
 * *reason a metric label for it (gpuprobe_budget_in_force). mount: tracefs may be mounted now (a check
 * only looks: an unmounted tracefs that could be mounted counts as there). */
enum gp_budget_how gp_budget_mechanism(bool mount, char *why, size_t len, const char **reason);
/* "uprobe_multi", "uprobe_events", "none". */
const char *gp_budget_how_name(enum gp_budget_how h);

/* Probes the budget may sample: one entry and (leave >= 0) one return program on the
 * functions of one library, as attach_pair__attach takes them. */
struct gp_sampled {
	int enter, leave;               /* program fds (leave -1: no return probes) */
	const char *path;
	const long long *offsets;       /* -1: not exported, skipped */
	const long long *ret_offsets;   /* NULL: the same; -1: no return probe there */
	const __u64 *cookies;
	int n;
	pid_t pid;                      /* the links' PID filter; -1: every process */
	const volatile int64_t *hold;   /* while non-zero every call is seen (NULL: none) */
	const char *what;               /* "launch": for error lines */
};

/* pct: the share of a process's time its probes may take, in percent (0 < pct < 100);
 * c: seconds per probe hit, warm and cold (calibrated: the budget holds the cold price, the
 * estimates' models take the warm one); how: gp_budget_mechanism's (not NONE). NULL with a
 * reason in err. */
struct gp_budget *gp_budget__new(double pct, const struct gp_probe_cost *c, enum gp_budget_how how, char *err,
				 size_t len);
/* The `gp_hits` array BPF objects reuse (bpf_map__reuse_fd). */
int gp_budget__hits_fd(const struct gp_budget *b);
/* Attaches g's probes now (every call seen until the budget says otherwise) and keeps what
 * it needs to attach them again; 0 or -errno with one line in err. */
int gp_budget__add(struct gp_budget *b, const struct gp_sampled *g, char *err, size_t len);
/* Forgets the groups on the file dev/ino (a library no process maps any more), their links
 * closed; returns the probes they held. */
int gp_budget__remove_file(struct gp_budget *b, dev_t dev, ino_t ino);
/* The thread that keeps the budget. */
int gp_budget__start(struct gp_budget *b, char *err, size_t len);
/* Ends the thread (a sampled period it was in is accounted until now) and closes every
 * sampled link (waits for the closes). */
void gp_budget__stop(struct gp_budget *b);
void gp_budget__free(struct gp_budget *b);

/* pid exited at ts_ns (CLOCK_MONOTONIC): its last unseen part ends there, not at the end
 * of the period (its calls were extrapolated to the period's end). */
void gp_budget__exited(struct gp_budget *b, uint32_t pid, uint64_t ts_ns);
/* pid's sampling, false when every call of it was seen. */
bool gp_budget__sampling(struct gp_budget *b, uint32_t pid, struct gp_sampling *out);
/* The same, through its last unseen part with windows on both sides: the one after its last
 * window, which __sampling extrapolates at that window's rate until the next window says how
 * the rate went on, is left out (a process that ended has none). What a counter may add
 * without running ahead of the calls: it cannot take back an extrapolation the next window
 * revises down (src/out/prom.c). */
bool gp_budget__sampling_settled(struct gp_budget *b, uint32_t pid, struct gp_sampling *out);
/* Forgets the processes that ended before cutoff_ns (UINT64_MAX: all), except keep_pid. */
void gp_budget__reap(struct gp_budget *b, uint64_t cutoff_ns, uint32_t keep_pid);

/* A change of the share of time the probes were attached. */
struct gp_budget_change {
	uint64_t ns;      /* CLOCK_MONOTONIC */
	double fraction;  /* 1: every call seen */
};

/*
 * Processes new to the budget (their first driver call, cuInit, took a hit slot: bpf/
 * budget.bpf.h) are counted exactly until they spend their exact allowance: while the
 * shared probes are off, theirs are armed for them alone (a tracefs uprobe event's
 * per-process perf event, uevent__arm). The processes that could not be, by reason: */
enum gp_budget_unarmed {
	GP_UNARMED_CAP,       /* GP_BUDGET_FRESH_MAX armed at once, or GP_BUDGET_FRESH_RATE a second */
	GP_UNARMED_USER,      /* its user holds GP_BUDGET_FRESH_PER_USER of them */
	GP_UNARMED_ERROR,     /* arming failed (descriptors, memory, the process gone) */
	GP_UNARMED_MECHANISM, /* uprobe_multi links (no tracefs uprobe events): not per process */
	GP_UNARMED_LATE,      /* armed only after its cuInit had returned: its calls before, if
			       * any, were sampled (its account says so: an estimate) */
	GP_UNARMED__COUNT,
};
#define GP_BUDGET_FRESH_MAX 32
#define GP_BUDGET_FRESH_PER_USER 8
#define GP_BUDGET_FRESH_RATE 64
/* "cap", "user_cap", "error", "mechanism", "late": a metric label */
const char *gp_budget_unarmed_name(enum gp_budget_unarmed r);

/* A process the budget has an account of. */
struct gp_budget_proc {
	uint32_t pid;
	bool ended;
	struct gp_account acc;
	/* its time in the probes by the budget's own estimate (gp_account__overhead), beyond its
	 * exact allowance (spent by design, all calls seen: budget.c), passed the budget: an
	 * attach slowed 3 s by the test hook, its uprobe events going in one at a time, caught
	 * ~110,000 of rate_app's calls as strays, 14.8 % of its life in probes, while the
	 * planner's flag (over_now, one period ahead) said nothing */
	bool over;
	bool allowance_over; /* its share passed the budget, by its exact allowance alone */
	/* the least share of its time in the probes the budget can hold it at, where that
	 * passed what it aims at (budget.c's struct floor: a probe hit dear, 6.1 under QEMU's
	 * TCG); 0: none. Over pct/100 and over: the budget cannot hold it under pct, and holds
	 * it there */
	double floor;
};

/* What the budget did, for a report (gp_budget__stats fills it; free with __stats_free). */
struct gp_budget_stats {
	double pct, target;         /* the budget, the share aimed at */
	double cost, call_cost;     /* the price of a probe hit (the trap, cold), and of a counted
				     * call (its traps, two with a return probe, and its programs) */
	double warm_cost;           /* a hit in a tight loop (calibrate.h) */
	double allowance;           /* a process's exact allowance, in calls (budget.c) */
	double prog_ns[2];          /* the programs' mean run time: entry, return (0: none) */
	bool prog_measured;
	double fraction;            /* now */
	bool over;                  /* over_now, or a process's own estimate passed it (procs[].over) */
	bool over_now;              /* a process would pass the budget even at the least share */
	uint64_t over_procs;        /* processes whose own estimate passed it (procs[].over) */
	uint64_t floor_procs;       /* processes over it whose floor passes it (procs[].floor) */
	double floor;               /* the highest of those floors (0: none) */
	uint64_t periods, sampled_periods, windows;
	uint64_t cut_windows;       /* windows ended early: a process took its period's hits */
	double attach_ms, detach_ms; /* medians: making the links, closing them */
	const char *mechanism;      /* gp_budget_how_name: how it takes the probes off */
	uint64_t fresh_armed;       /* processes new to it armed for themselves, ever */
	uint64_t fresh_now;         /* armed now */
	uint64_t unarmed[GP_UNARMED__COUNT]; /* processes new to it that could not be (counted) */
	struct gp_budget_change *changes;
	size_t nr_changes;
	struct gp_budget_proc *procs;
	size_t nr_procs;
};

int gp_budget__stats(struct gp_budget *b, struct gp_budget_stats *out);
void gp_budget__stats_free(struct gp_budget_stats *s);

/* Its renderers: src/out/budget_report.h. */

#endif
