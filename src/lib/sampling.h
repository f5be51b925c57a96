/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arithmetic of --max-overhead (pure C, unit tested; the module that drives it is
 * src/core/budget.c). Time is cut into periods; in a sampled period the probes count for
 * a window at its start (`on` seconds of `T`) and the rest is unseen. A process's calls in
 * an unseen part are estimated from the windows on either side of it, whose rates bracket
 * it when the rate moved once or not at all in between (a step at an unknown time: the
 * midpoint is off by at most half the difference), and from each window's
 * rate two models bracket every program:
 *   - paced (its rate does not depend on the probes: sleeps, a GPU it waits on): n / on
 *     (for the estimate, the calls after its first sleep in the window over their time);
 *   - call-bound (it calls as fast as it can, so the probes slowed it in the window: the
 *     window's CPU time less the time in probes ran its n calls, and the unseen part's CPU
 *     time runs as many a second): n / (cpu_on − n × cost) per CPU second.
 * The estimate follows the model the window (did its thread sleep between calls?) and the
 * period (was its thread on a CPU or waiting for one all along?) point to, and is their
 * geometric mean where they do not say (sampling.c, gp_window_slept and "bound_weight"); a thread
 * that never slept but whose gaps ran at one rate to a small part of a gap in two windows
 * running is paced by the clock in a busy wait, and follows the paced model (sampling.c,
 * "clocked"); the
 * interval holds both models' ends (added up: the same program is one or the other all
 * along) and 1.96 standard deviations of the steps and of arrival noise (Poisson) in every
 * period, and never drops under the calls seen and those that hit a probe outside the
 * windows. The last unseen part, whose next window has not come, is extrapolated from its
 * own window, with the last step's size as its own.
 * A process that spent most of two sampled windows running in the probes calls faster
 * unprobed than any window can tell (its calls cost less than a probe): its interval has
 * no upper end; so has one with an unseen part longer than GP_MAX_UNSEEN_S (an attach
 * slower than the periods stretched it, and its rate may have moved any number of times).
 */
#ifndef GP_SAMPLING_H
#define GP_SAMPLING_H

#include <stdbool.h>
#include <stdint.h>

/* One process's sampling, as its reports carry it (absent when every call was seen). */
struct gp_sampling {
	double fraction;     /* calls seen ÷ calls estimated, of the sampled probes */
	double observed;     /* hits the sampled probes took */
	double estimate;     /* calls estimated */
	double lo, hi;       /* 95 % interval of the calls; hi is INFINITY when unbounded */
	bool unbounded;      /* in two sampled windows running the process spent most of its time in the probes:
			      * its calls cost less than a probe, and how fast it calls unprobed
			      * cannot be told from the windows (estimate and lo stand); or long_unseen */
	bool long_unseen;    /* an unseen part outlasted GP_MAX_UNSEEN_S (the probes took that long
			      * to go in or out): unbounded too */
	double dark_s;       /* of those parts, the seconds no probe saw a call in: no window on
			      * either side and no strays timed while the next window's probes
			      * went in (their calls are the rates around them, taken on trust);
			      * 0 when none */
};

/* A count x_obs that is part of s's hits (launches of one kernel, syncs): its estimate
 * and interval in out[0..2] (estimate, lo, hi), lo never under x_obs; hi over x_obs where
 * calls went unseen, a count of none seen included (its share of the calls is bounded by
 * the hits seen, not known to be none). */
void gp_sampling__count(const struct gp_sampling *s, uint64_t x_obs, double out[3]);

/* A window's rates under each model (sampling.c). */
struct gp_rates {
	double pace;       /* paced: calls per wall second */
	double hi, wide;   /* call-bound per wall second (the warm price; COST_SPREAD x it) */
	double qhi, qwide; /* call-bound per CPU second (0: its CPU time not known) */
	double q0;         /* calls per CPU second in the window, probes and all (0: not known) */
	double after;      /* paced, the calls before its first sleep in the window left out */
	double clean;      /* paced, from the calls after its first sleep in the window, over
			    * their time (its pace once caught up; its window's pace if none) */
	double sigma;      /* how far its one-thread gaps say it slept, 0 to 1 (negative: not known) */
	double beta;       /* the call-bound model's weight in the estimate (negative: not known) */
	double grate;      /* its one-thread gaps' rate, gaps over their seconds, where enough of
			    * them that it never slept in say so (0: not known; sampling.c, "clocked") */
	double gaps;       /* how many */
	double late;       /* one hit's price in gaps at that rate: how late a window's ends may
			    * run behind a clock (sampling.c, "CLOCK_LATE") */
};

/* One process's account of its sampled probes' hits, period by period. */
struct gp_account {
	double obs;          /* hits seen */
	double est;          /* calls estimated, in the periods done with */
	double lo_sum, hi_sum; /* the paced and the call-bound models' calls, seen ones included */
	double var;          /* their variance: steps and arrivals */
	double wide;         /* the upper end's allowance for a hit dearer than calibrated */
	bool sampled;        /* some part of its life was unseen */
	bool unbounded;      /* see struct gp_sampling */
	bool long_unseen;    /* see struct gp_sampling */
	bool busy;           /* its last sampled window was more than half in probes */
	bool ended;          /* trimmed at its exit (gp_account__trim) */
	/* the last unseen part, waiting for the next window */
	bool pending;
	double p_unseen;     /* seconds */
	struct gp_rates p_rate; /* its window's */
	double p_cpu_u;      /* the process's CPU seconds in the unseen part (negative: not known) */
	double p_mid;        /* the estimate's rate there (calls/s) */
	double p_n, p_on;    /* its window's hits and seconds */
	double p_step;       /* the rate's change at that window (calls/s) */
	double p_sn, p_s0, p_s1; /* the calls that hit the next window's probes as they went in,
			      * over [p_s0, p_s1] seconds into the part (p_sn 0: none; sampling.c,
			      * "spanned") */
	double clock_d;      /* 1 + its last two windows' gap rates' difference in gaps (0: not both
			      * had one; sampling.c, "CLOCK_LOOSE") */
	double clock;        /* how surely its last two windows said it is paced by the clock without
			      * sleeping, 0 to 1 (sampling.c, "clocked") */
	struct gp_rates q_last; /* the per-CPU rates (qhi, qwide, q0) of its last window with calls: a
			      * window that saw none says nothing of what a CPU second of its pays
			      * for (sampling.c, "carried") */
	bool q_exact;        /* q_last is an exact period's: no sampled window with calls has
			      * measured one yet (sampling.c) */
	struct gp_rates q_run; /* the same of its last window that called through it without
			      * sleeping (sampling.c, CATCH_UP_SPAN) */
	bool have_rate;
	uint64_t windows;    /* sampled windows */
	double ssd;          /* the sum of squared differences of successive windows' rates */
	double u2;           /* the sum of squared unseen parts' seconds */
	double m_min, m_max; /* the least and the largest of those rates */
	double probe_s;      /* seconds it spent in the probes (hits and strays × cost) */
	double strays;       /* calls that hit a probe outside the windows: made, never counted,
			      * so the estimate and the interval's low end are never under
			      * obs + strays (a link that took 2 s to close on a stalled machine
			      * caught 88 341 of them, and the estimate had been 0.23x the count) */
	double seconds;      /* seconds accounted */
	double dark_s;       /* see struct gp_sampling: the parts done with */
};

/* A process first seen in a period: it may have begun in the previous period's unseen
 * part (lead_unseen seconds), when its calls went uncounted. */
void gp_account__begin(struct gp_account *a, double lead_unseen);
/* A period of T seconds whose probes counted for `on` of them (on == T: every call seen),
 * in which the process took n hits in the window and `stray` outside it (probes not yet
 * gone or already back, which cost it without being counted): `cost` seconds each in the
 * call-bound model (the warm price: a program calling as fast as it can keeps the trap's
 * path in its caches), `price` each in its time in probes (the cold price). */
void gp_account__period(struct gp_account *a, double n, double stray, double T, double on, double cost,
			double price);
/* The same with the time the process was calling in the window (act seconds: the gaps
 * between its counted hits, each up to GP_ACTIVE_GAP_NS) and its CPU time in the period
 * (cpu_T seconds, all its threads; either negative: not known, as gp_account__period): the
 * call-bound model then counts calls per CPU second, and an unseen part gets the calls its
 * CPU time paid for (sampling.c). */
void gp_account__period_cpu(struct gp_account *a, double n, double stray, double T, double on, double act,
			    double cpu_T, double cost, double price);
/* A period as the budget measured it (gp_account__window). */
struct gp_window {
	double n, stray;  /* hits counted in the window; strays (priced, never counted) */
	double T, on;     /* the period's seconds and its window's (on == T: every call seen) */
	double act;       /* seconds on a CPU in the window, calling or between calls (BPF's
			   * active_ns; negative: not known) */
	double cpu_T;     /* the process's CPU seconds in the period, all threads (negative: not
			   * known) */
	double gaps;      /* the window's gaps between two counted hits of one thread ... */
	double gap_s;     /* ... their seconds ... */
	double sleep_s;   /* ... and those of the ones the thread slept in (a voluntary switch) */
	double head;      /* hits before the process first slept in the window ... */
	double head_s;    /* ... and its seconds from the window's start (negative: not known) */
	double stray_calls; /* calls of the counted kinds that hit a probe outside the window */
	double busy;      /* the share of the period the thread that called spent on a CPU or
			   * waiting for one (negative: not known) */
	double span_n;    /* calls of the counted kinds that hit the next window's probes while
			   * they went in (strays, part of stray_calls), between span_from and
			   * span_to seconds from the period's start (0: none measured) */
	double span_from, span_to;
};
/* The same, with a hit priced at cost in the call-bound model and at price in the time in
 * probes; how often the process slept between its calls in the window moves the estimate
 * between the models and the interval's low end (gp_window_slept). */
void gp_account__window(struct gp_account *a, const struct gp_window *w, double cost, double price);
/* How many threads took a window's hits at once: its hits over those that followed one of
 * the same thread (gaps; 1 when one thread took them all), at most the CPUs the process kept
 * busy over the period (cpu_T / T), at least 1. The time its probes took is divided among
 * them: the process's wall time pays that share (gp_account__overhead, the budget's plan). */
double gp_window_callers(const struct gp_window *w);
/* How far a window's one-thread gaps say its thread slept, 0 to 1: the share of their time
 * in gaps with a voluntary switch, twice over; negative where too few gaps to say. */
double gp_window_slept(const struct gp_window *w);
/* The process ended `unseen` seconds into the unseen part waiting for its next window (which
 * will not come): that part is no longer than that, and its calls may have stopped anywhere
 * in it (its interval then reaches down to none there). */
void gp_account__trim(struct gp_account *a, double unseen);
/* An unseen part whose rate no window brackets (src/core/budget.c, fresh_seen: a late-armed
 * job's gap before a seen part too short to give its rate): the count has no upper end. */
void gp_account__unbounded(struct gp_account *a);
/* The account as a report carries it; false when every call was seen. */
bool gp_account__sampling(const struct gp_account *a, struct gp_sampling *out);
/* Its share of time in the probes so far (0 before any period). */
double gp_account__overhead(const struct gp_account *a);

/* A sampled period, unless strays need a longer one. Each one makes and closes the sampled
 * links once, which costs the process more than its strays (breakpoints written into its
 * text under its mmap lock, TLB flushes): on the H200 a PyTorch loop under a 1 % budget paid
 * +2.16 % (1.53-2.81) with 100-ms periods, +1.21 % (0.27-2.15) with 500-ms ones. A rate
 * that rises inside a long period's window ends the window (src/core/budget.c). */
#define GP_PERIOD_S 0.5
#define GP_MAX_PERIOD_S 1.0  /* never longer: the budget reacts to a new rate within two periods */
/* The unseen parts' model holds a rate that moves at most once between two windows: a
 * program whose rate moves less often than the longest period. An unseen part longer than
 * this was not planned (a period is never over GP_MAX_PERIOD_S) but stretched by an attach
 * that took longer than the periods themselves (a loaded machine: under ASan at load 20 a
 * window's tracefs uprobe events took 6.3 s to arm, longer than rate_app's whole 4-s life,
 * and its interval [65,807-92,631] missed its 120,400 launches, its rate having moved twice
 * unseen). The rate may then have moved any number of times there, and no window brackets
 * it: the interval has no upper end (the estimate and the low end, never under the calls
 * seen and the strays, stand). A quarter of a period over it: a median attach's overrun. */
#define GP_MAX_UNSEEN_S (1.25 * GP_MAX_PERIOD_S)
/* A long unseen part's later calls hit the next window's probes while an attach that slow put
 * them in one at a time (strays, counted with when by the budget's thread between them):
 * measured over at least this long, their rate is the part's there (sampling.c, "spanned"). */
#define GP_MIN_SPAN_S 0.05
/* A window shorter than this sees too little: at 1 ms, a paced workload that fell behind
 * while the links were made (a loaded 2-CPU machine) caught up within the window, which
 * then read as call-bound (test_budget_no_latency_and_text: about one run in eight with no
 * upper end; none in ten at 2 ms). */
#define GP_MIN_WINDOW_S 0.002

/*
 * The next sampled period's length: GP_PERIOD_S, longer when a process's strays (seconds of
 * its time in probes outside the window, per period: the links take that long to go) would
 * take more than half of the target (the share of time allowed) of it.
 */
double gp_budget_period(double stray_s, double target);
/*
 * The share of a period of T seconds to count in: rho is the share of time a process spent
 * in the probes while they counted (hits × cost ÷ window), stray_s its strays' seconds per
 * period. 1 when rho fits the target with every call seen; never under the least window
 * (then the budget cannot be kept: *over is set).
 */
double gp_budget_fraction(double rho, double stray_s, double target, double T, bool *over);

#endif
