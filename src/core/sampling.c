/* SPDX-License-Identifier: BSD-3-Clause */
#include <math.h>
#include <string.h>
#include "sampling.h"

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
/* The interval's upper end also holds the call-bound model with a hit priced at
 * COST_SPREAD x the calibrated cost: the calibration times a probe on a function of
 * gpuprobe's own, and a real call pays more around it (the trap's cache and TLB effects on
 * the program). On the H200 a launch-bound loop paid 2.0x the calibrated figure per hit
 * (bench/gpu/results-inproc-h200.md), and an interval built on the calibrated price alone
 * missed the loop's own count in 8 of 14 windows. The estimate stays on the calibrated
 * models. */
#define COST_SPREAD 2.5

void gp_account__begin(struct gp_account *a, double lead_unseen)
{
	memset(a, 0, sizeof(*a));
	if (lead_unseen <= 0)
		return;
	/* a window of rate 0 before it: the next one's rate brackets its start */
	a->sampled = a->pending = true;
	a->p_unseen = lead_unseen;
	a->p_cpu_u = -1; /* its CPU time before it was seen is not known */
	a->p_on = 1;
}

static double call_bound(double n, double on, double busy)
{
	return n / (on - (busy > MAX_BUSY * on ? MAX_BUSY * on : busy));
}

/* A window's models, as calls in an unseen part of u wall seconds in which the process ran
 * cpu_u CPU seconds (negative: not known). */
struct rates {
	double lo;         /* paced: calls per wall second */
	double hi, wide;   /* call-bound, per wall second (the warm price; COST_SPREAD x it) */
	double qhi, qwide; /* call-bound per CPU second (0: the window's CPU time not known) */
};

/* The two models' rates of a window of `on` seconds (cpu_on of them on a CPU, negative:
 * not known) with n hits. A window's time that the process spent off any CPU (descheduled
 * on a busy machine, or waiting) ran none of its calls: per CPU second, the call-bound model
 * needs no guess of it, and an unseen part where the process waited more (a paced process
 * sleeps between calls, where in the window it was behind and did not) gets the calls its
 * own CPU time paid for, not the window's pace. */
static void window_rates(double n, double on, double cpu_on, double cost, struct rates *r)
{
	memset(r, 0, sizeof(*r));
	if (on <= 0)
		return;
	r->lo = n / on;
	r->hi = call_bound(n, on, n * cost);
	r->wide = call_bound(n, on, n * cost * COST_SPREAD);
	if (cpu_on > 0 && n > 0) {
		r->qhi = call_bound(n, cpu_on, n * cost);
		r->qwide = call_bound(n, cpu_on, n * cost * COST_SPREAD);
	}
}

/* The call-bound models' calls in an unseen part (u wall seconds, cpu_u on a CPU), never
 * under the paced one: by CPU time where both are known, else by wall time. */
static void unseen_calls(const struct rates *r, double u, double cpu_u, double *lo, double *hi, double *wide)
{
	*lo = r->lo * u;
	if (r->qhi > 0 && cpu_u >= 0) {
		*hi = r->qhi * cpu_u;
		*wide = r->qwide * cpu_u;
	} else {
		*hi = r->hi * u;
		*wide = r->wide * u;
	}
	if (*hi < *lo)
		*hi = *lo;
	if (*wide < *hi)
		*wide = *hi;
}

/* The estimate between a paced count lo and a call-bound one hi: their geometric mean, the
 * point whose worst ratio to either end is least (sqrt(hi / lo)); the arithmetic one is
 * off by up to (1 + hi / lo) / 2, which for a window all but spent in probes made a paced
 * process's estimate 21 times its count on the H200. Past EST_SPAN x lo (a window more
 * than three quarters in probes: the call-bound model then divides by what is left, and a
 * price a little high sends it anywhere) the estimate stays at sqrt(EST_SPAN) x lo, within
 * 2x of any count up to EST_SPAN x lo; the interval keeps the model's end, or none. */
#define EST_SPAN 4.0

static double middle(double lo, double hi)
{
	if (hi > EST_SPAN * lo)
		hi = EST_SPAN * lo;
	return lo > 0 && hi > lo ? sqrt(lo * hi) : lo;
}

/* The pending unseen part between its window and the next one (r2, from n2 hits in on2
 * seconds): estimate, its models' ends, variance. */
static void between(const struct gp_account *a, const struct rates *r2, double n2, double on2, double *y,
		    double *ylo, double *yhi, double *ywide, double *var)
{
	double u = a->p_unseen, lo1, hi1, w1, lo2, hi2, w2, m1, m2, step;
	struct rates r1 = { a->p_rlo, a->p_rhi, a->p_rwide, a->p_qhi, a->p_qwide };

	unseen_calls(&r1, u, a->p_cpu_u, &lo1, &hi1, &w1);
	unseen_calls(r2, u, a->p_cpu_u, &lo2, &hi2, &w2);
	m1 = middle(lo1, hi1);
	m2 = middle(lo2, hi2);
	step = m2 - m1;
	*ylo = (lo1 + lo2) / 2;
	*yhi = (hi1 + hi2) / 2;
	*ywide = (w1 + w2) / 2;
	*y = middle(*ylo, *yhi);
	/* a step anywhere in it: within ±step/2 of the midpoint, at worst at either end (the
	 * largest variance a bounded error can have); arrivals: the windows' rates and the
	 * unseen count itself. Each window's rate serves the unseen parts on both sides of it,
	 * so its noise counts twice over (their errors go together): /2 where two independent
	 * halves would be /4 (at /4 a paced process's interval held its count in 94 % of
	 * simulated runs, test_sampling's test_simulated_coverage) */
	*var = step * step / 4 + u * u * (a->p_n / (a->p_on * a->p_on) + n2 / (on2 * on2)) / 2 + *y;
}

void gp_account__period(struct gp_account *a, double n, double stray, double T, double on, double cost,
			double price)
{
	gp_account__period_cpu(a, n, stray, T, on, -1, -1, cost, price);
}

void gp_account__period_cpu(struct gp_account *a, double n, double stray, double T, double on, double act,
			    double cpu_T, double cost, double price)
{
	double y, ylo, yhi, ywide, var, m, ulo, uhi, uwide, cpu_on = -1;
	struct rates r;

	if (T <= 0)
		return;
	if (on > T)
		on = T;
	/* The window's CPU time: the kernel's count of it is a tick stale for a process that
	 * ran through a 2-ms window (it moves only when the process is scheduled or the tick
	 * comes), so it is taken as the time the process was calling in the window (act: the
	 * gaps between its hits, each up to 100 us, so that a slice it waited for a CPU is not
	 * in it; the window's wall time when not known) on as many CPUs as the process kept
	 * busy over the period, and at least one: a process that ran threads on several CPUs
	 * (8 threads launching at once) took its n hits on all of them. */
	if (cpu_T >= 0 && on > 0 && on < T) {
		double base = act > 0 && act < on ? act : on;

		cpu_on = base * (cpu_T / T > 1 ? cpu_T / T : 1);
		if (cpu_on > cpu_T)
			cpu_T = cpu_on;
	} else {
		cpu_T = -1;
	}
	window_rates(n, on, cpu_on, cost, &r);
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
		between(a, &r, n, on, &y, &ylo, &yhi, &ywide, &var);
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
		unseen_calls(&r, T - on, cpu_T >= 0 ? cpu_T - cpu_on : -1, &ulo, &uhi, &uwide);
		m = middle(ulo, uhi) / (T - on);
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
		a->p_rlo = r.lo;
		a->p_rhi = r.hi;
		a->p_rwide = r.wide;
		a->p_qhi = r.qhi;
		a->p_qwide = r.qwide;
		a->p_n = n;
		a->p_on = on;
	} else if (on > 0) {
		/* an exact period's rate: what the next unseen part starts from */
		a->p_rlo = r.lo;
		a->p_rhi = r.hi;
		a->p_rwide = r.wide;
		a->p_qhi = r.qhi;
		a->p_qwide = r.qwide;
		a->p_mid = middle(r.lo, r.hi);
	}
	a->have_rate = on > 0;
	a->probe_s += (n + stray) * price;
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
		double u = a->p_unseen, ylo, yhi, ywide, y;
		struct rates r = { a->p_rlo, a->p_rhi, a->p_rwide, a->p_qhi, a->p_qwide };

		unseen_calls(&r, u, a->p_cpu_u, &ylo, &yhi, &ywide);
		y = middle(ylo, yhi);
		est += y;
		lo += ylo;
		hi += yhi;
		wide += ywide - yhi;
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
	out->estimate = est > a->obs ? est : a->obs;
	/* the models' ends, each widened by the steps' and arrivals' noise */
	out->lo = lo - sd > a->obs ? lo - sd : a->obs;
	if (out->lo > out->estimate)
		out->lo = out->estimate;
	out->hi = hi + wide + sd;
	if (out->hi < out->estimate)
		out->hi = out->estimate;
	out->fraction = out->estimate > 0 ? out->observed / out->estimate : 1.0;
	out->unbounded = a->unbounded;
	if (a->unbounded)
		out->hi = INFINITY;
	return true;
}

void gp_account__trim(struct gp_account *a, double unseen)
{
	if (!a->pending)
		return;
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

void gp_sampling__count(const struct gp_sampling *s, uint64_t x_obs, double out[3])
{
	double x = (double)x_obs, ratio, rel, v;

	if (s->observed <= 0 || x <= 0) {
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
	out[2] = s->unbounded ? INFINITY : x * s->hi / s->observed + Z95 * sqrt(v);
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
