/* SPDX-License-Identifier: BSD-3-Clause */
#include <math.h>
#include <string.h>
#include "sampling.h"

#define Z95 1.96

/* A window whose time was almost all in the probes says little about the time outside
 * them: the call-bound model is capped there (a calibrated cost a little high must not
 * divide by zero). */
#define MAX_BUSY 0.9

void gp_account__period(struct gp_account *a, double n, double T, double on, double cost)
{
	double u, lo, hi, y, var = 0, busy;

	if (T <= 0)
		return;
	if (on > T)
		on = T;
	u = (T - on) / T;
	if (on >= T || on <= 0) {
		y = on > 0 ? n : 0; /* on == 0: nothing attached, nothing known of it */
		lo = hi = y;
	} else {
		a->sampled = true;
		busy = n * cost;
		if (busy > MAX_BUSY * on)
			busy = MAX_BUSY * on;
		lo = n * T / on;
		hi = n + n * (T - on) / (on - busy);
		y = (lo + hi) / 2;
		/* arrivals: n ~ Poisson(rate × on), the unseen part Poisson(rate × (T − on)) */
		var = (n > 1 ? n : 1) * (T - on) * T / (on * on);
	}
	/* a rate change in the unseen part of this period or the last: its size is what
	 * separates their estimates; a first period may have begun anywhere in its own */
	var += (y - (a->have_prev ? a->prev_y : 0)) * (y - (a->have_prev ? a->prev_y : 0)) *
	       (u * u + (a->have_prev ? a->prev_u * a->prev_u : 0)) / 4;
	a->obs += n;
	a->est += y;
	a->half += (hi - lo) / 2;
	a->var += var;
	a->prev_y = y;
	a->prev_u = u;
	a->have_prev = true;
	a->probe_s += n * cost;
	a->seconds += T;
}

bool gp_account__sampling(const struct gp_account *a, struct gp_sampling *out)
{
	double w = a->half + Z95 * sqrt(a->var);

	memset(out, 0, sizeof(*out));
	if (!a->sampled)
		return false;
	out->observed = a->obs;
	out->estimate = a->est > a->obs ? a->est : a->obs;
	out->lo = out->estimate - w > a->obs ? out->estimate - w : a->obs;
	out->hi = out->estimate + w;
	out->fraction = out->estimate > 0 ? out->observed / out->estimate : 1.0;
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
	out[2] = x * s->hi / s->observed + Z95 * sqrt(v);
}

double gp_budget_fraction(double rho, double target, double min_fraction, bool *over)
{
	double f;

	*over = false;
	if (rho <= target || rho <= 0)
		return 1.0;
	f = target / rho;
	if (f < min_fraction) {
		*over = true;
		f = min_fraction;
	}
	return f;
}
