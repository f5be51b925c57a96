/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arithmetic of --max-overhead (pure C, unit tested; the module that drives it is
 * src/core/budget.c). Time is cut into periods; in a sampled period the probes are
 * attached for a window of `on` seconds out of `T` and a process's hits are counted in the
 * window only. Its calls in the rest of the period are estimated from the window, between
 * two models that bracket every program:
 *   - paced (the program's rate does not depend on the probes: sleeps, a GPU it waits on):
 *     n × T / on;
 *   - call-bound (the program calls as fast as it can, so the probes slowed it in the
 *     window): the window's time less the time in probes ran n calls, n × (T − on) /
 *     (on − n × cost) more in the rest.
 * The estimate is their midpoint; the interval holds both ends, widened by 1.96 standard
 * deviations of arrival noise (Poisson) and of a rate change inside the unseen part
 * (successive periods' estimates differ by it: Yates's estimator for systematic samples).
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
	double lo, hi;       /* 95 % interval of the calls */
};

/* A count x_obs that is part of s's hits (launches of one kernel, syncs): its estimate
 * and interval in out[0..2] (estimate, lo, hi), lo never under x_obs. */
void gp_sampling__count(const struct gp_sampling *s, uint64_t x_obs, double out[3]);

/* One process's account of its sampled probes' hits, period by period. */
struct gp_account {
	double obs;          /* hits seen */
	double est;          /* calls estimated */
	double half;         /* sum of the periods' half ranges between the two models */
	double var;          /* variance from arrivals and rate changes */
	double prev_y, prev_u; /* the last period's estimate and unseen share */
	bool have_prev;
	bool sampled;        /* some period of its life was sampled */
	double probe_s;      /* seconds it spent in the probes (hits × cost) */
	double seconds;      /* seconds accounted */
};

/* A period of T seconds whose probes were attached for `on` of them (on == T: every call
 * seen) in which the process took n hits at `cost` seconds each. */
void gp_account__period(struct gp_account *a, double n, double T, double on, double cost);
/* The account as a report carries it; false when every call was seen. */
bool gp_account__sampling(const struct gp_account *a, struct gp_sampling *out);
/* Its share of time in the probes so far (0 before any period). */
double gp_account__overhead(const struct gp_account *a);

/*
 * The share of the next period to attach the probes for: rho is the largest share of
 * time a process spent in the probes while they were attached (hits × cost ÷ window),
 * target the share allowed (the budget, less a margin). 1 when rho fits; never under
 * min_fraction (then the budget cannot be kept: *over is set).
 */
double gp_budget_fraction(double rho, double target, double min_fraction, bool *over);

#endif
