/* SPDX-License-Identifier: BSD-3-Clause */
#include <math.h>
#include <string.h>
#include "lib/sampling.h"

#define Z95 1.96

/* A window whose time was almost all in the probes says little about the time outside
 * them: the call-bound model is capped there (a calibrated cost a little high must not
 * divide by zero). Past half of it in two sampled windows running, the interval has no
 * upper end (sampling.h). One such window alone is not enough: a paced process that fell
 * behind while the links went in (descheduled, or slowed by the links being made) catches
 * up inside the window and reads as call-bound there, then paced again in the next one
 * (on a loaded 2-CPU machine, test_budget's paced process did so in about one run in
 * three once a call's programs were priced from the start); its capped model still
 * widens the upper end of the unseen parts on either side of that window. */
#define MAX_BUSY 0.98
#define UNBOUNDED_BUSY 0.5
/* The part of a period of a process that began after its end (src/core/budget.c's
 * born_seen gives it 1 ns): none of its life */
#define BORN_AFTER_S 1e-6
/* A process on a CPU for this share of a part ran there (budget.c's BURST_CPU, 2 %) */
#define RAN_SHARE 0.02
/* The interval's upper end also holds the call-bound model with a hit priced at
 * COST_SPREAD x the calibrated cost: the calibration times a probe on a function of
 * gpuprobe's own, and a real call pays more around it (the trap's cache and TLB effects on
 * the program). On the H200 a launch-bound loop paid 2.0x the calibrated figure per hit
 * (bench/gpu/results-inproc-h200.md), and an interval built on the calibrated price alone
 * missed the loop's own count in 8 of 14 windows. The estimate stays on the calibrated
 * models. */
#define COST_SPREAD 2.5

/* An unseen part of u seconds longer than the step model holds (sampling.h, GP_MAX_UNSEEN_S):
 * no upper end. */
static void long_unseen(struct gp_account *a, double u)
{
	if (u > GP_MAX_UNSEEN_S)
		a->unbounded = a->long_unseen = true;
}

void gp_account__begin(struct gp_account *a, double lead_unseen)
{
	memset(a, 0, sizeof(*a));
	if (lead_unseen <= 0)
		return;
	/* a window of rate 0 before it: the next one's rate brackets its start */
	a->sampled = a->pending = true;
	long_unseen(a, lead_unseen);
	a->p_unseen = lead_unseen;
	a->p_cpu_u = -1; /* its CPU time before it was seen is not known */
	a->p_rate.sigma = a->p_rate.beta = -1;
	a->p_on = 1;
}

static double call_bound(double n, double on, double busy)
{
	return n / (on - (busy > MAX_BUSY * on ? MAX_BUSY * on : busy));
}

/* A window's rates (gp_rates) from n hits in `on` seconds, cpu_on of them on a CPU (negative:
 * not known), with `sigma` the share of its one-thread gaps it slept in (negative: not
 * known). A window's time that the process spent off any CPU (descheduled on a busy
 * machine, or waiting) ran none of its calls: per CPU second, the call-bound model needs no
 * guess of it, and an unseen part where the process waited more (a paced process sleeps
 * between calls, where in the window it was behind and did not) gets the calls its own CPU
 * time paid for, not the window's pace. */
static void window_rates(double n, double on, double cpu_on, double sigma, double head, double head_s,
			 double cost, struct gp_rates *r)
{
	memset(r, 0, sizeof(*r));
	r->sigma = sigma;
	if (on <= 0)
		return;
	r->pace = n / on;
	r->after = (n - head) / on;
	r->clean = r->pace;
	/* never over the window's rate: a voluntary switch is also a wait on a lock (the
	 * links going in hold the process's mmap lock), after which a process may still be
	 * catching up (rate_app's 100 000/s phase read 380 000/s after its first such switch,
	 * 3.4 ms into a 4.5-ms window) */
	if (sigma >= 0 && head_s >= 0 && head_s < 0.9 * on && n >= head + 8 && (n - head) / (on - head_s) < r->pace)
		r->clean = (n - head) / (on - head_s);
	r->hi = call_bound(n, on, n * cost);
	r->wide = call_bound(n, on, n * cost * COST_SPREAD);
	if (cpu_on > 0 && n > 0) {
		r->qhi = call_bound(n, cpu_on, n * cost);
		r->qwide = call_bound(n, cpu_on, n * cost * COST_SPREAD);
		r->q0 = n / cpu_on;
	}
}

/* An unseen part's calls under a window's models. */
struct models {
	double pace;  /* paced */
	double clean; /* paced, after it caught up in the window (its point) */
	double cb;    /* call-bound (its point: may be under the paced one) */
	double hi;    /* the interval's upper model: call-bound, never under paced */
	double wide;  /* the same at COST_SPREAD x the price */
	double low;   /* the interval's lower model (paced, unless the window says otherwise) */
	double c0;    /* the calls its CPU time pays for at the window's CPU time a call, probes
		       * and all: fewer than it makes unprobed (paced: its pace, when not known) */
	double sigma; /* rates' */
	double beta;  /* rates' */
};

/*
 * A window that says how its process spent its gaps (sigma, the share of its one-thread gaps
 * it slept in: a paced loop sleeps until its next call is due, a blocking synchronization
 * sleeps until the GPU is done; a loop bound by its CPU never sleeps) says which model its
 * calls follow:
 *   - the estimate is pace^sigma x cb^(1 - sigma): a loop that never slept gets the calls
 *     its CPU time pays for, a paced one its pace. The geometric mean of the two (what a
 *     window that cannot say gets) read rate_app's tight loop (3 us of work, 3.2 us a
 *     launch) at 0.62-0.95x here, and a launch-bound loop on the H200 at 0.78-0.85x:
 *     the paced model of a loop bound by its CPU is its rate slowed by the probes, and on a
 *     loaded machine the window's share of a CPU, not its pace;
 *   - the low end is sigma x pace + (1 - sigma) x min(pace, c0), c0 the calls its CPU time
 *     pays for at the window's CPU time per call, probes and all (fewer than any, unprobed):
 *     a paced process that fell behind (the links going in stall it: on a loaded 2-CPU
 *     machine up to 5 ms of every attach in uninterruptible sleep, bpftrace on
 *     sched_switch) calls back to back in the window until it caught up, faster than its
 *     pace, and the paced model alone put the daemon's low end 2-3 % over rate_app's
 *     count.
 * Where the window cannot say (fewer than SIGMA_GAPS one-thread gaps: several threads
 * taking turns, or few calls) the estimate stays the geometric mean and the low end paced.
 */
#define SIGMA_GAPS 16
/* A dark part's counted hits give its call-bound end a rate from this many one-thread gaps */
#define DARK_GAPS 8

/* By CPU time where both are known, else by wall time. */
static void unseen_calls(const struct gp_rates *r, double u, double cpu_u, struct models *m)
{
	double c0;

	m->pace = r->pace * u;
	m->clean = r->clean * u;
	m->sigma = r->sigma;
	m->beta = r->beta;
	if (r->qhi > 0 && cpu_u >= 0) {
		m->cb = r->qhi * cpu_u;
		m->wide = r->qwide * cpu_u;
		c0 = r->q0 * cpu_u;
	} else {
		m->cb = r->hi * u;
		m->wide = r->wide * u;
		c0 = m->pace;
	}
	m->hi = m->cb > m->pace ? m->cb : m->pace;
	if (m->wide < m->hi)
		m->wide = m->hi;
	m->c0 = c0;
	m->low = m->pace;
	if (m->sigma >= 0)
		m->low = m->sigma * r->after * u + (1 - m->sigma) * (c0 < m->pace ? c0 : m->pace);
}

/* The estimate between a paced count lo and a call-bound one hi where the window cannot
 * say which: their geometric mean, the point whose worst ratio to either end is least
 * (sqrt(hi / lo)); the arithmetic one is off by up to (1 + hi / lo) / 2, which for a window
 * all but spent in probes made a paced process's estimate 21 times its count on the H200.
 * Past EST_SPAN x lo (a window more than three quarters in probes: the call-bound model
 * then divides by what is left, and a price a little high sends it anywhere) the estimate
 * stays at sqrt(EST_SPAN) x lo, within 2x of any count up to EST_SPAN x lo; the interval
 * keeps the model's end, or none. */
#define EST_SPAN 4.0

static double middle(double lo, double hi)
{
	if (hi > EST_SPAN * lo)
		hi = EST_SPAN * lo;
	return lo > 0 && hi > lo ? sqrt(lo * hi) : lo;
}

/* An unseen part's estimate under its models (the block comment above SIGMA_GAPS). */
static double point(const struct models *m)
{
	double cb = m->cb, c0 = m->c0 > m->pace ? m->c0 : m->pace, y;

	/* no window on either side saw a call, but its CPU time paid for some (carried): between
	 * the calls that time makes at the windows' CPU time a call, probes and all, and unprobed */
	if (m->pace <= 0 && m->cb > 0)
		return middle(m->c0, m->cb);
	if (m->beta < 0)
		return middle(m->pace, m->hi);
	/* past EST_SPAN x the calls at the window's CPU time a call (its CPU more than three
	 * quarters in probes) the call-bound model divides by what is left, and the window
	 * cannot say how fast it calls unprobed: the geometric mean takes its place, as where it
	 * cannot say which model (the stand-in's 2-us loop, a launch 0.2 us against a probe's
	 * 2.7) */
	if (cb > EST_SPAN * c0)
		cb = middle(m->pace, m->hi);
	if (m->beta <= 0 || cb <= 0)
		return m->clean;
	if (m->clean <= 0)
		return cb;
	y = pow(m->clean, 1 - m->beta) * pow(cb, m->beta);
	return y < m->low ? m->low : y;
}

/* The models of an unseen part between two windows: each one's, averaged (a step anywhere
 * in it). Whether the process slept is known when both windows say. */
static void average(const struct models *a, const struct models *b, struct models *m)
{
	m->pace = (a->pace + b->pace) / 2;
	m->clean = (a->clean + b->clean) / 2;
	m->cb = (a->cb + b->cb) / 2;
	m->hi = (a->hi + b->hi) / 2;
	m->wide = (a->wide + b->wide) / 2;
	m->low = (a->low + b->low) / 2;
	m->c0 = (a->c0 + b->c0) / 2;
	m->sigma = a->sigma >= 0 && b->sigma >= 0 ? (a->sigma + b->sigma) / 2 : -1;
	m->beta = a->beta >= 0 && b->beta >= 0 ? (a->beta + b->beta) / 2 : -1;
}

/*
 * A thread paced by the clock that waits for its next call in a busy loop (budget_rate.cu's
 * --rate; a launch loop spinning on a timer) never sleeps and is on a CPU all along: sigma
 * and busy say "bound by its CPU", and the call-bound model read the H200's paced 100,000/s
 * loop at 1.16-1.27x, because its probes' time came out of its wait, not out of its calls.
 * Its gaps tell it apart: each call is due at a fixed time, so a window's k one-thread gaps
 * add up to the time between its first and last due times, off by the two ends' lateness
 * only, and their rate is the clock's within a small part of one gap over k: on the H200,
 * 99,998-100,019/s in 7 of its 9 windows (0.002-0.02 of a gap in 200), where n / on read
 * 94,200-98,500/s. A loop bound by its CPU has gaps that move with its calls' and probes'
 * costs, and two windows' rates differ by its gaps' spread over sqrt(k), many gaps' worth
 * (the stand-in's tight loop: 0.25-2 gaps' worth, 0.14-4.6 %; the H200's synchronizing loop
 * 1.7-7 %). Two successive windows whose gap rates differ by CLOCK_SAME of a gap or less
 * (over 1/k1 + 1/k2) are clocked (weight 1), by CLOCK_APART or more not (0), linearly
 * between; a clocked unseen part follows the paced model at their gap rate (the window's
 * n / on counts its ends, where no gap of it was yet or any more). A window behind its clock
 * (it catches up in it) differs by far more, and leaves the weights as they were; so does a
 * window whose one thread did not call all through it (gaps over CLOCK_SPAN of it: several
 * threads, a loaded machine), and the part its exit ended (its CPU time there says where its
 * calls stopped).
 */
#define CLOCK_GAPS 64
#define CLOCK_SIGMA 0.1
#define CLOCK_SPAN 0.9
#define CLOCK_SAME 0.05
#define CLOCK_APART 0.15
#define CLOCK_BUSY 0.9

/*
 * One pair that agrees can be chance. A loop bound by its CPU has gap rates that wander by
 * many gaps from one window to the next, and now and then two of them land within
 * CLOCK_SAME of a gap of each other: one pair in 51 of the H200's call-bound loops did
 * (tight-spin3us at 5 %: 116,919/s then 116,918/s, after 115,799/s, 7.3 gaps from it), and
 * its part was estimated at its probed gap rate, 22 % under its call-bound one (0.98x the
 * count where 1.00x without). A loop paced by the clock keeps its rate from window to window
 * within a gap (the H200's paced pairs that did not qualify: 0.2-0.5 gap) unless a window
 * caught up (4.2 gaps faster). So the pair before must agree within CLOCK_LOOSE gaps too,
 * where there is one (the account's last pair of windows that both had a gap rate): a
 * call-bound loop must land twice in a row; a clocked one after a window that caught up waits
 * a pair.
 */
#define CLOCK_LOOSE 1.0

/* Two windows' gap rates' difference in gaps: the relative difference over the ends' share
 * of each window (negative: not both have one). */
static double clock_gaps(const struct gp_rates *r1, const struct gp_rates *r2)
{
	if (r1->grate <= 0 || r2->grate <= 0 || r1->gaps <= 0 || r2->gaps <= 0)
		return -1;
	return fabs(r1->grate - r2->grate) / ((r1->grate + r2->grate) / 2) / (1 / r1->gaps + 1 / r2->gaps);
}

/*
 * How far apart a clock's two windows may read depends on how late their ends ran: a hit's
 * own price delays the next call by up to that much, and a window's first and last hits
 * may each be late by about it. At 100,000/s a 4.75-us hit is 0.475 of a gap, and the H200's
 * busy-waiting paced loop (bench/gpu/raw/2026-11-29-s15-inproc, windows of 2-4 ms, 170-380
 * gaps) read pairs 0.1-0.95 of a gap apart (one 1.51) where CLOCK_SAME took only 0.05: none
 * qualified and its parts stayed call-bound, 1.13-1.26x the loop's count. The tolerance is
 * CLOCK_LATE x that price in gaps (never under CLOCK_SAME, never over LATE_CAP gaps: a fast
 * call-bound loop's hit is several gaps, and its windows wander by a few), CLOCK_APART /
 * CLOCK_SAME times it for none; the pair before within LOOSE_K times it (at least
 * CLOCK_LOOSE). Replayed: the paced loop 1.01-1.05x (s15), 0.99-1.07x (s13, s14 budget_cov);
 * of 40 call-bound H200 runs two moved (a synchronizing loop's chance pair: 0.82x -> 0.76x,
 * 0.89x -> 0.86x). Only for a thread busy all its period (CLOCK_BUSY): bursts whose windows
 * each caught one at the same pace are no clock (their unseen parts sleep).
 */
#define CLOCK_LATE 1.5
#define LATE_CAP 0.75
#define LOOSE_K 2.0

static double clocked(const struct gp_account *a, const struct gp_rates *r1, const struct gp_rates *r2)
{
	double d = clock_gaps(r1, r2), c, same = CLOCK_SAME, late = CLOCK_LATE * (r1->late + r2->late) / 2;

	if (late > LATE_CAP)
		late = LATE_CAP;
	if (late > same)
		same = late;
	if (d < 0 || (a->clock_d > 0 && a->clock_d - 1 > (LOOSE_K * same > CLOCK_LOOSE ? LOOSE_K * same : CLOCK_LOOSE)))
		return 0;
	c = (CLOCK_APART / CLOCK_SAME * same - d) / (CLOCK_APART / CLOCK_SAME * same - same);
	return c < 0 ? 0 : c > 1 ? 1 : c;
}

/* The models of a clocked share c of an unseen part of u seconds: paced, at gap rate g. */
static void clock_models(struct models *m, double c, double g, double u)
{
	if (c <= 0 || g <= 0 || m->beta < 0)
		return;
	m->clean = (1 - c) * m->clean + c * g * u;
	m->beta *= 1 - c;
}

/*
 * An unseen part longer than GP_MAX_UNSEEN_S was stretched by an attach slower than the
 * periods, and its rate may have moved any number of times there: the window before it says
 * nothing of its later part. But an attach that slow puts the next window's probes in one at
 * a time (tracefs uprobe events, entries first), and the ones in catch the process's calls
 * as strays: the budget's thread counts them, with when, between its probes (budget.c,
 * attach_poll). Those calls were made, at a rate measured where the window's is stale: the
 * part is then the dark time before them, at the mean of the window's rate and theirs (a step
 * anywhere), the strays themselves, and the dark time after (to the next window, at the mean
 * of theirs and its rate, or to the exit, a step to none anywhere). Under the test hook's
 * 3-s attach, rate_app's part ran 1,000 ms at 20,000/s then 1,000 ms at 100,000/s unseen,
 * and the window's rate alone, halved by its exit, read 0.26x of it. Only the estimate
 * moves: the part still has no upper end (a probe not yet in missed calls of its own).
 * Negative when no such span was measured.
 */
static double spanned(const struct gp_account *a, double u, double r_before, double r_after)
{
	double s0 = a->p_s0 < u ? a->p_s0 : u, s1 = a->p_s1 < u ? a->p_s1 : u, rs;

	if (u <= GP_MAX_UNSEEN_S || a->p_sn <= 0 || s1 - s0 < GP_MIN_SPAN_S)
		return -1;
	rs = a->p_sn / (s1 - s0);
	if (r_after < 0)
		r_after = rs;
	return s0 * (r_before + rs) / 2 + a->p_sn + (u - s1) * (rs + r_after) / 2;
}

/* The seconds of the pending unseen part (u of them) that no probe saw a call in: all of a
 * part longer than GP_MAX_UNSEEN_S but the span its strays were timed over (spanned), none of
 * a shorter one (a window on either side brackets it). With uprobe_multi links, or tracefs
 * events whose first probes went in only at the end of a slow attach, a rate that moved there
 * is seen by nothing: the report says how long that was, beside the estimate that takes the
 * rates around it. */
static double dark(const struct gp_account *a, double u)
{
	double s0 = a->p_s0 < u ? a->p_s0 : u, s1 = a->p_s1 < u ? a->p_s1 : u;

	if (u <= GP_MAX_UNSEEN_S)
		return 0;
	return a->p_sn > 0 && s1 - s0 >= GP_MIN_SPAN_S ? u - (s1 - s0) : u;
}

/* The pending unseen part between its window and the next one (r2, from n2 hits in on2
 * seconds): estimate, its models' ends, variance. */
static void between(const struct gp_account *a, const struct gp_rates *r2, double n2, double on2, double *y,
		    double *ylo, double *yhi, double *ywide, double *var)
{
	double u = a->p_unseen, step, ys;
	struct models m1, m2, m;

	unseen_calls(&a->p_rate, u, a->p_cpu_u, &m1);
	unseen_calls(r2, u, a->p_cpu_u, &m2);
	average(&m1, &m2, &m);
	/* the part its exit ended, with its CPU time there known: the call-bound model counts
	 * the calls that time paid for, which says itself where they stopped (a step to none
	 * anywhere in it, the paced model's midpoint, halved a tight loop's last part) */
	if (a->ended && n2 <= 0 && a->p_cpu_u >= 0 && a->p_rate.qhi > 0) {
		m.cb = m1.cb;
		m.beta = m1.beta;
		m.sigma = m1.sigma;
		if (m.hi < m.cb)
			m.hi = m.cb;
		if (m.wide < m.hi)
			m.wide = m.hi;
	}
	clock_models(&m, clocked(a, &a->p_rate, r2), (a->p_rate.grate + r2->grate) / 2, u);
	step = point(&m2) - point(&m1);
	*ylo = m.low;
	*yhi = m.hi;
	*ywide = m.wide;
	*y = point(&m);
	/* a slow attach's strays measured its later part (spanned): to the exit, a step to none */
	ys = spanned(a, u, a->p_mid, a->ended && n2 <= 0 ? 0 : point(&m2) / u);
	if (ys > *y)
		*y = ys;
	/* a step anywhere in it: within ±step/2 of the midpoint, at worst at either end (the
	 * largest variance a bounded error can have); arrivals: the windows' rates and the
	 * unseen count itself. Each window's rate serves the unseen parts on both sides of it,
	 * so its noise counts twice over (their errors go together): /2 where two independent
	 * halves would be /4 (at /4 a paced process's interval held its count in 94 % of
	 * simulated runs, test_sampling's test_simulated_coverage) */
	*var = step * step / 4 + u * u * (a->p_n / (a->p_on * a->p_on) + n2 / (on2 * on2)) / 2 + *y;
}

/* How far a window's one-thread gaps say the process slept (the share of their time in
 * gaps with a voluntary switch, twice over: a paced loop sleeps only in the gaps it was not
 * late for, rate_app's 20 000/s one 0.6-0.8 of the time, and any sleep at all says its
 * rate was not its CPU's); negative when too few to say. */
double gp_window_slept(const struct gp_window *w)
{
	double s;

	if (w->gaps < SIGMA_GAPS || w->gap_s <= 0)
		return -1;
	s = 2 * w->sleep_s / w->gap_s;
	return s > 1 ? 1 : s;
}

/*
 * The call-bound model's weight in the estimate. A thread that slept in the window was not
 * held back by its CPU there, probes and all: it is paced (its pace counted from its first
 * sleep, the clean rate). One that did not sleep was bound by its CPU in the window; if it
 * was on a CPU or waiting for one all the period too (busy near 1, however loaded the
 * machine), it is bound by its CPU unprobed as well. If it slept through the rest of the
 * period (busy under a half), the probes pushed a paced process past what its CPU could do
 * (8 threads at 20 000/s each, 2 us of work a launch, on a loaded machine) or it was behind
 * all the window (the links going in stall it): its pace is between the two models, and the
 * estimate their geometric mean. Negative when neither the window nor the period says.
 */
static double bound_weight(double sigma, double busy)
{
	double b;

	if (busy < 0 && sigma < 0)
		return -1;
	b = busy < 0 ? 0 : (busy - 0.5) / 0.4;
	b = b < 0 ? 0 : b > 1 ? 1 : b;
	return (sigma < 0 ? 1 : 1 - sigma) * (0.5 + 0.5 * b);
}

/*
 * A window that saw no call (a process between two bursts, or asleep all its window) says
 * nothing of how many calls a CPU second of its pays for: not none. An unseen part next to it
 * whose CPU time is known (its process ran 85 ms of a 377-ms part between two such windows,
 * bursts of 50 ms every 250 ms on the H200) gets the calls that time pays for at the last
 * rates per CPU second a window measured (`carried`), not none: before, that part counted
 * nothing and a window next to a burst had its call-bound model halved (0.47x the count).
 * The paced model (and the interval's low end) keeps none: the window saw none.
 */
/*
 * A window whose thread did not sleep but called through less than CATCH_UP_SPAN of it (its
 * one-thread gaps span that little: it was held off at the window's start, by the links going
 * in or a loaded machine, and called back to back once it ran) measured a catch-up, not its
 * calls per CPU second: a loop paced by a busy wait has no wait left to spin while behind, and
 * its per-CPU rate there read 248,000/s where its windows that called through read 27,000/s
 * (the stand-in's busy-paced 20,000/s loop at load 15: 3.5x and 7.2x its count). Such a window
 * takes the last per-CPU rates of one that called through without sleeping (a loop bound by
 * its CPU has the same either way); the pace and the interval's low end stay its own. Not those
 * of a window it slept in: rate_app's 20,000/s phase spends a sleep's system call a launch, and
 * its rate per CPU second there (21,000/s), carried into the 100,000/s phase's catch-up window
 * (321,000/s), read the run at 0.31x with an interval under its count.
 */
#define CATCH_UP_SPAN 0.5

static void carried(struct gp_account *a, const struct gp_window *w, double n, struct gp_rates *r)
{
	bool awake = n > 0 && w->gaps >= SIGMA_GAPS && r->sigma >= 0 && r->sigma < CLOCK_SIGMA;
	bool behind = awake && w->gap_s < CATCH_UP_SPAN * w->on;

	if (behind && a->q_run.qhi > 0) {
		r->qhi = a->q_run.qhi;
		r->qwide = a->q_run.qwide;
		r->q0 = a->q_run.q0;
		return;
	}
	if (awake && !behind && r->qhi > 0)
		a->q_run = *r;
	if (n > 0 && r->qhi > 0) {
		a->q_last = *r;
	} else if (n <= 0 && a->q_last.qhi > 0 && !a->ended) { /* (its exit's end: a step to none) */
		r->qhi = a->q_last.qhi;
		r->qwide = a->q_last.qwide;
		r->q0 = a->q_last.q0;
	}
}

double gp_window_callers(const struct gp_window *w)
{
	double par = w->cpu_T >= 0 && w->T > 0 ? w->cpu_T / w->T : w->act > w->on && w->on > 0 ? w->act / w->on : 1, k;

	if (w->n < SIGMA_GAPS || w->gaps < 0 || par <= 1)
		return 1;
	k = w->n / (w->gaps + 1);
	return k < 1 ? 1 : k > par ? par : k;
}

/* The wall time s seconds of probes took from the process in `at` seconds: shared by the
 * threads that called at once (gp_window_callers), and never more than the time itself. On
 * the H200, 8 threads launching at once were charged their probes' time summed over the
 * threads, 7.1-9.5 % of their wall time under a 1 % budget (over_budget said so), where their
 * loop ran +0.64 % (-1.22 ... +5.35) slower inside the process. */
static double wall_paid(const struct gp_window *w, double s, double at)
{
	s /= gp_window_callers(w);
	return s < at ? s : at;
}

void gp_account__period(struct gp_account *a, double n, double stray, double T, double on, double cost,
			double price)
{
	gp_account__period_cpu(a, n, stray, T, on, -1, -1, cost, price);
}

void gp_account__period_cpu(struct gp_account *a, double n, double stray, double T, double on, double act,
			    double cpu_T, double cost, double price)
{
	struct gp_window w = { .n = n, .stray = stray, .T = T, .on = on, .act = act, .cpu_T = cpu_T, .busy = -1,
			       .head_s = -1 };

	gp_account__window(a, &w, cost, price);
}

void gp_account__window(struct gp_account *a, const struct gp_window *w, double cost, double price)
{
	double n = w->n, T = w->T, on = w->on, act = w->act, cpu_T = w->cpu_T;
	double y, ylo, yhi, ywide, var, m, cpu_on = -1;
	double sigma = gp_window_slept(w);
	struct gp_rates r;
	struct models um;

	if (T <= 0)
		return;
	if (on > T)
		on = T;
	if (sigma > 1)
		sigma = 1;
	/* A part of T seconds that no window saw, with no window to give its rate: a process
	 * armed for itself late (src/core/budget.c, fresh_seen: its unseen gap took the whole
	 * part, the calls it made while its probes went in counted). Under QEMU's TCG its arm
	 * took 66-73 ms, and 0-127 of 200 launches were reported as every call seen. Its
	 * count has no upper end and those seconds are dark, said so. */
	if (on <= 0) {
		/* A process that began after the period's end (budget.c's born_seen: its part of
		 * it a nanosecond) lived none of it: nothing of it is dark, and its hits (made
		 * since) are seen. Under QEMU's TCG a short job whose cuInit came between the
		 * boundary and its accounting was taken as dark and sampled: its 140 launches,
		 * every one counted, went under the unbounded family, and, sampled, it was out of
		 * its exact allowance, so its rate took the budget to sampling (6.1, both
		 * architectures, test_daemon_default_budget_short_jobs_exact). */
		bool born_after = T <= BORN_AFTER_S;
		/* Otherwise its calls there: at least those counted (the paced end: none but
		 * them), at most their one-thread rate all along (gaps over their seconds), the
		 * call-bound end; the estimate their geometric mean, as where a window does not
		 * say which (bound_weight). Under 6.1 x86-64 in QEMU's TCG a job whose 200
		 * launches ran mostly while its probes went in had 91 counted in a 12.8-ms dark
		 * part and was read as 91 (0.46x), its interval without an upper end but its
		 * estimate past 2x. A gap judged quiet (budget.c, quiet_gap) has no hits and
		 * stays none. */
		double all = n;

		if (!born_after && n > 0 && w->gaps >= DARK_GAPS && w->gap_s > 0 && w->gaps / w->gap_s * T > n)
			all = w->gaps / w->gap_s * T;
		if (!born_after) {
			a->sampled = true;
			a->unbounded = true;
			a->dark_s += T;
			a->have_rate = false;
		}
		a->obs += n;
		a->est += sqrt(n * all);
		a->lo_sum += n;
		a->hi_sum += all;
		a->probe_s += wall_paid(w, n * price, T) + wall_paid(w, w->stray * price, T);
		a->strays += w->stray_calls;
		a->seconds += T;
		return;
	}
	/* The window's CPU time: the kernel's count of it is a tick stale for a process that
	 * ran through a 2-ms window (it moves only when the process is scheduled or the tick
	 * comes), so it is taken as the time the process was on a CPU in the window (act: from
	 * BPF, bpf/budget.bpf.h's gp_gap_active; the window's wall time when not known) on as
	 * many CPUs as the process kept busy over the period, and at least one: a process that
	 * ran threads on several CPUs (8 threads launching at once) took its n hits on all of
	 * them. */
	if (cpu_T >= 0 && on > 0 && on < T && n <= 0) {
		/* no call in the window, so no gap timed it: its share of the period's CPU time */
		cpu_on = cpu_T * on / T;
	} else if (cpu_T >= 0 && on > 0 && on < T) {
		double base = act > 0 && act < on ? act : on;

		cpu_on = base * (cpu_T / T > 1 ? cpu_T / T : 1);
		if (cpu_on > cpu_T)
			cpu_T = cpu_on;
	} else {
		cpu_T = -1;
	}
	window_rates(n, on, cpu_on, sigma, w->head, w->head_s, cost, &r);
	r.beta = bound_weight(sigma, w->busy);
	carried(a, w, n, &r);
	/* An exact period's calls per CPU second, where no sampled window measured them yet: what
	 * a first window that saw none of its calls carries (`carried`). A process stalled in
	 * its first window (no call, no stray; the budget thread late too) whose CPU time then
	 * ran 208 ms of a 3-s part made its calls there unseen; with no per-CPU rate to carry,
	 * the part counted none, and rate_app under a 3-s uprobe_multi attach read 0.01x. The last
	 * exact period's (its first ones, paced at 200/s, pay a sleep's system call a launch).
	 * Its CPU time is the clock's, else the time BPF saw it on a CPU (act): a first period
	 * ends before the budget polled its clock twice, and bursts whose every later window
	 * fell between two (the H200, one run in 50) carried nothing and counted none unseen. */
	double q_cpu = w->cpu_T > 0 ? w->cpu_T : act > 0 ? act : -1;

	if (on >= T && n > 0 && q_cpu > 0 && (a->q_last.qhi <= 0 || a->q_exact)) {
		struct gp_rates q;

		window_rates(n, on, q_cpu, sigma, w->head, w->head_s, cost, &q);
		a->q_last.qhi = q.qhi;
		a->q_last.qwide = q.qwide;
		a->q_last.q0 = q.q0;
		a->q_exact = true;
	} else if (on < T && n > 0 && r.qhi > 0) {
		a->q_exact = false; /* a window's own (carried) */
	}
	/* A window that saw none of the calls of a process that made some, with no rate per
	 * CPU second to carry, while the process ran on a CPU in the part after it: nothing
	 * bounds that part's calls (bursts whose every window fell between two, where no
	 * exact period's CPU time was known, were printed as every call seen). */
	if (on < T && n <= 0 && w->stray <= 0 && r.qhi <= 0 && a->obs > 0 && cpu_T > 0 &&
	    cpu_T - cpu_on > RAN_SHARE * (T - on))
		a->unbounded = true;
	/* A thread that did not sleep in its window but was off any CPU most of the period
	 * caught a burst (or a catch-up) in the window: its pace there is not the period's
	 * (bursts of 50 ms every 250 ms on the H200: n / on extrapolated over the sleeps read
	 * 1.2-1.5x), while the calls its CPU time pays for are (a CPU second of the burst makes
	 * as many calls unprobed as one of the window, less the probes' time). Not where the
	 * probes took most of its window's CPU time: a paced loop they pushed past its CPU (the
	 * stand-in's 2-us loop, a launch 0.3 us against a hit 1.8) reads as one that never
	 * slept, and the call-bound model, dividing by what is left, is no surer than the pace. */
	if (r.qhi > 0 && n > 0 && sigma >= 0 && sigma < CLOCK_SIGMA && w->busy >= 0 && w->busy < 0.5 &&
	    n * cost < UNBOUNDED_BUSY * cpu_on)
		r.beta = 1 - sigma;
	/* a thread that called all through its window (one thread's gaps span it) */
	if (w->gaps >= CLOCK_GAPS && w->gap_s >= CLOCK_SPAN * on && sigma >= 0 && sigma < CLOCK_SIGMA &&
	    (w->busy < 0 || w->busy >= CLOCK_BUSY)) {
		r.grate = w->gaps / w->gap_s;
		r.gaps = w->gaps;
		r.late = price * r.grate;
	}
	if (on > 0 && on < T) {
		/* Most of the window in probes, on as many CPUs as it kept busy (8 threads take
		 * their hits on several). Not by the time it was calling: a paced process that
		 * lost the CPU catches up in a burst, all but all in probes, and would read as
		 * one whose calls cost less than a probe (test_budget's paced 100 000/s phase
		 * lost its upper end on a loaded machine). */
		bool busy = n * cost > UNBOUNDED_BUSY * on * (cpu_T > 0 && cpu_T / T > 1 ? cpu_T / T : 1);

		if (busy && a->busy)
			a->unbounded = true;
		a->busy = busy;
	}
	if (a->pending && on > 0) {
		long_unseen(a, a->p_unseen);
		a->dark_s += dark(a, a->p_unseen);
		between(a, &r, n, on, &y, &ylo, &yhi, &ywide, &var);
		if (r.grate > 0)
			a->clock = clocked(a, &a->p_rate, &r);
		/* this pair, for the next one's (clocked): 1 + its difference in gaps, 0 none */
		a->clock_d = clock_gaps(&a->p_rate, &r) >= 0 ? 1 + clock_gaps(&a->p_rate, &r) : 0;
		a->est += y;
		a->lo_sum += ylo;
		a->hi_sum += yhi;
		a->wide += ywide - yhi;
		a->var += var;
		a->pending = false;
	}
	a->obs += n;
	a->est += n;
	a->lo_sum += n;
	a->hi_sum += n;
	if (on > 0 && on < T) {
		unseen_calls(&r, T - on, cpu_T >= 0 ? cpu_T - cpu_on : -1, &um);
		m = point(&um) / (T - on);
		/* successive windows' rates, for the spread of an irregular process */
		if (a->windows)
			a->ssd += (m - a->p_mid) * (m - a->p_mid);
		if (!a->windows || m < a->m_min)
			a->m_min = m;
		if (!a->windows || m > a->m_max)
			a->m_max = m;
		a->windows++;
		a->u2 += (T - on) * (T - on);
		a->sampled = a->pending = true;
		a->p_step = a->have_rate ? fabs(m - a->p_mid) : m;
		a->p_mid = m;
		a->p_unseen = T - on;
		a->p_cpu_u = cpu_T >= 0 ? cpu_T - cpu_on : -1;
		a->p_rate = r;
		a->p_n = n;
		a->p_on = on;
		/* the strays its next window's probes caught going in, when measured in the part */
		a->p_sn = a->p_s0 = a->p_s1 = 0;
		if (w->span_n > 0 && w->span_from >= on && w->span_to > w->span_from) {
			a->p_sn = w->span_n;
			a->p_s0 = w->span_from - on;
			a->p_s1 = w->span_to - on;
		}
	} else if (on > 0) {
		/* an exact period's rate: what the next unseen part starts from */
		a->p_rate = r;
		unseen_calls(&r, 1, -1, &um);
		a->p_mid = point(&um);
	}
	a->have_rate = on > 0;
	a->probe_s += wall_paid(w, n * price, on) + wall_paid(w, w->stray * price, T);
	a->strays += w->stray_calls;
	a->seconds += T;
}

bool gp_account__sampling(const struct gp_account *a, struct gp_sampling *out)
{
	double est = a->est, lo = a->lo_sum, hi = a->hi_sum, var = a->var, wide = a->wide, sd;

	memset(out, 0, sizeof(*out));
	if (!a->sampled)
		return false;
	if (a->pending) {
		/* its next window has not come: its own rate, with the last step's size */
		double u = a->p_unseen, y;
		struct models m;

		if (u > GP_MAX_UNSEEN_S)
			out->long_unseen = true;
		out->dark_s = dark(a, u);
		unseen_calls(&a->p_rate, u, a->p_cpu_u, &m);
		/* as clocked as its last two windows said (its next one has not come) */
		clock_models(&m, a->clock, a->p_rate.grate, u);
		y = point(&m);
		/* a slow attach's strays measured its later part (spanned); its exit ended it */
		if (spanned(a, u, a->p_mid, a->ended ? 0 : -1) > y)
			y = spanned(a, u, a->p_mid, a->ended ? 0 : -1);
		est += y;
		lo += m.low;
		hi += m.hi;
		wide += m.wide - m.hi;
		var += a->p_step * a->p_step * u * u / 4 + u * u * a->p_n / (a->p_on * a->p_on) + y;
	}
	/* A process whose rate moves from one window to the next more than once between two
	 * (bursts shorter than a period, which windows at random points of them catch or miss)
	 * is no step model's: its windows' rates are a sample of its rate, and their spread
	 * (half the mean squared difference of successive ones, which a trend moves little)
	 * on each unseen part is the variance to hold when it is larger. */
	if (a->windows >= 3) {
		/* one more difference, the widest the windows saw: a few windows in bursts say
		 * little of how often bursts come (a binomial count's small-sample pull) */
		double spread = a->m_max - a->m_min, v = (a->ssd + spread * spread) / (2.0 * (double)a->windows) * a->u2;

		if (v > var)
			var = v;
	}
	sd = Z95 * sqrt(var);
	out->observed = a->obs;
	out->estimate = est > a->obs + a->strays ? est : a->obs + a->strays;
	/* the models' ends, each widened by the steps' and arrivals' noise */
	out->lo = lo - sd > a->obs + a->strays ? lo - sd : a->obs + a->strays;
	if (out->lo > out->estimate)
		out->lo = out->estimate;
	out->hi = hi + wide + sd;
	if (out->hi < out->estimate)
		out->hi = out->estimate;
	out->fraction = out->estimate > 0 ? out->observed / out->estimate : 1.0;
	out->long_unseen |= a->long_unseen;
	out->dark_s += a->dark_s;
	out->unbounded = a->unbounded || out->long_unseen;
	if (out->unbounded)
		out->hi = INFINITY;
	return true;
}

void gp_account__unbounded(struct gp_account *a)
{
	a->unbounded = true;
}

void gp_account__trim(struct gp_account *a, double unseen)
{
	if (!a->pending)
		return;
	a->ended = true;
	if (unseen < 0)
		unseen = 0;
	if (unseen < a->p_unseen) {
		if (a->p_cpu_u > 0 && a->p_unseen > 0)
			a->p_cpu_u *= unseen / a->p_unseen;
		a->p_unseen = unseen;
	}
	/* A process's last calls come some time before its exit (a synchronization, its
	 * teardown): a step to no calls anywhere in the part, whose variance holds it. */
	if (a->p_step < a->p_mid)
		a->p_step = a->p_mid;
}

double gp_account__overhead(const struct gp_account *a)
{
	return a->seconds > 0 ? a->probe_s / a->seconds : 0;
}

/* The upper end of a Poisson mean that gave x (the 97.5 % quantile of Garwood's interval: the
 * Wilson-Hilferty cube of chi-square's, within 1 % of it from x = 1; exact, -ln 0.025, at 0). */
static double poisson_hi(double x)
{
	double k = x + 1, c;

	if (x <= 0)
		return -log(0.025);
	c = 1 - 1 / (9 * k) + Z95 / (3 * sqrt(k));
	return k * c * c * c;
}

void gp_sampling__count(const struct gp_sampling *s, uint64_t x_obs, double out[3])
{
	double x = (double)x_obs, ratio, rel, v, share, thin;

	if (s->observed <= 0) {
		out[0] = out[1] = out[2] = x;
		return;
	}
	ratio = s->estimate / s->observed;
	rel = x / s->observed;
	if (rel > 1)
		rel = 1;
	/* a part of the hits: which of the unseen calls were its is a thinning on top */
	v = x * ratio * (ratio > 1 ? ratio - 1 : 0) * (1 - rel);
	out[0] = x * ratio;
	out[1] = x * s->lo / s->observed - Z95 * sqrt(v);
	if (out[1] < x)
		out[1] = x;
	if (s->unbounded) {
		out[2] = INFINITY;
		return;
	}
	out[2] = x * s->hi / s->observed + Z95 * sqrt(v);
	/* A rare kind of call (rate_app's four synchronizations, one at each phase's end) is seen
	 * in a few windows or in none: the normal thinning above has no width at x = 0, and a
	 * count none of whose calls was seen read [0, 0] over all the unseen time (6.1 in QEMU,
	 * where every phase was sampled: "true syncs 4 outside [0, 0]"). Its share of the calls
	 * is at most the upper end of a Poisson count that gave x over the hits seen (never over
	 * all of them), and the unseen calls at the interval's upper end have at most that share. */
	share = poisson_hi(x) / s->observed;
	thin = x + (share < 1 ? share : 1) * (s->hi > s->observed ? s->hi - s->observed : 0);
	if (out[2] < thin)
		out[2] = thin;
}

double gp_budget_period(double stray_s, double target)
{
	double t = GP_PERIOD_S;

	if (target > 0 && stray_s > target * t / 2)
		t = 2 * stray_s / target;
	return t > GP_MAX_PERIOD_S ? GP_MAX_PERIOD_S : t;
}

double gp_budget_fraction(double rho, double stray_s, double target, double T, bool *over)
{
	double f, min = GP_MIN_WINDOW_S / T;

	*over = false;
	if (rho <= target || rho <= 0)
		return 1.0;
	/* rho × f × T in the window, stray_s around it, target × T in all */
	f = (target * T - stray_s) / (rho * T);
	if (f >= 1)
		return 1.0;
	if (f < min) {
		*over = true;
		f = min;
	}
	return f;
}
