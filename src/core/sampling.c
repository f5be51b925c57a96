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
	a->p_on = 1;
}

static double call_bound(double n, double on, double busy)
{
	return n / (on - (busy > MAX_BUSY * on ? MAX_BUSY * on : busy));
}

/* The two models' rates of a window of `on` seconds with n hits, and the call-bound one at
 * the spread's price (wide). */
static void window_rates(double n, double on, double cost, double *lo, double *hi, double *wide)
{
	if (on <= 0) {
		*lo = *hi = *wide = 0;
		return;
	}
	*lo = n / on;
	*hi = call_bound(n, on, n * cost);
	*wide = call_bound(n, on, n * cost * COST_SPREAD);
}

/* The pending unseen part between its window and the next one (rates lo2, hi2 from n2
 * hits in on2 seconds): estimate, models' half range, variance. */
static void between(const struct gp_account *a, double lo2, double hi2, double n2, double on2, double *y,
		    double *half, double *var)
{
	double u = a->p_unseen, m1 = (a->p_rlo + a->p_rhi) / 2, m2 = (lo2 + hi2) / 2, step = m2 - m1;

	*y = (m1 + m2) / 2 * u;
	*half = ((a->p_rhi - a->p_rlo) + (hi2 - lo2)) / 4 * u;
	/* a step anywhere in it: within ±step/2 of the midpoint, at worst at either end (the
	 * largest variance a bounded error can have); arrivals: the windows' rates and the
	 * unseen count itself */
	*var = step * step * u * u / 4 + u * u * (a->p_n / (a->p_on * a->p_on) + n2 / (on2 * on2)) / 4 + *y;
}

void gp_account__period(struct gp_account *a, double n, double stray, double T, double on, double cost,
			double price)
{
	double lo, hi, wide, y, half, var, m;

	if (T <= 0)
		return;
	if (on > T)
		on = T;
	window_rates(n, on, cost, &lo, &hi, &wide);
	m = (lo + hi) / 2;
	if (on > 0 && on < T) {
		bool busy = n * cost > UNBOUNDED_BUSY * on;

		if (busy && a->busy)
			a->unbounded = true;
		a->busy = busy;
	}
	if (a->pending && on > 0) {
		between(a, lo, hi, n, on, &y, &half, &var);
		a->wide += ((a->p_rwide - a->p_rhi) + (wide - hi)) / 2 * a->p_unseen;
		a->est += y;
		a->half += half;
		a->var += var;
		a->pending = false;
	}
	a->obs += n;
	a->est += n;
	if (on > 0 && on < T) {
		a->sampled = a->pending = true;
		a->p_step = a->have_rate ? fabs(m - (a->p_rlo + a->p_rhi) / 2) : m;
		a->p_unseen = T - on;
		a->p_rlo = lo;
		a->p_rhi = hi;
		a->p_rwide = wide;
		a->p_n = n;
		a->p_on = on;
	} else if (on > 0) {
		a->p_rlo = lo; /* an exact period's rate: what the next unseen part starts from */
		a->p_rhi = hi;
		a->p_rwide = wide;
	}
	a->have_rate = on > 0;
	a->probe_s += (n + stray) * price;
	a->seconds += T;
}

bool gp_account__sampling(const struct gp_account *a, struct gp_sampling *out)
{
	double est = a->est, half = a->half, var = a->var, wide = a->wide, w;

	memset(out, 0, sizeof(*out));
	if (!a->sampled)
		return false;
	if (a->pending) {
		/* its next window has not come: its own rate, with the last step's size */
		double u = a->p_unseen, y = (a->p_rlo + a->p_rhi) / 2 * u;

		est += y;
		half += (a->p_rhi - a->p_rlo) / 2 * u;
		wide += (a->p_rwide - a->p_rhi) * u;
		var += a->p_step * a->p_step * u * u / 4 + u * u * a->p_n / (a->p_on * a->p_on) + y;
	}
	w = half + Z95 * sqrt(var);
	out->observed = a->obs;
	out->estimate = est > a->obs ? est : a->obs;
	out->lo = out->estimate - w > a->obs ? out->estimate - w : a->obs;
	out->hi = out->estimate + w + wide;
	out->fraction = out->estimate > 0 ? out->observed / out->estimate : 1.0;
	out->unbounded = a->unbounded;
	if (a->unbounded)
		out->hi = INFINITY;
	return true;
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
