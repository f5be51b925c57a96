/* SPDX-License-Identifier: BSD-3-Clause */
/* The arithmetic of --max-overhead (src/core/sampling.c): estimates and their intervals
 * against processes whose true calls are known, paced and call-bound, steady and
 * stepping, and the share of time the probes get. */
#include <math.h>
#include <stdint.h>
#include "sampling.h"
#include "unit.h"

#define T 0.1
#define COST 1e-6

/* A paced process: `rate` calls a second whatever the probes do; `f` of each period seen. */
static double paced(struct gp_account *a, const double *rates, int n, double f)
{
	double truth = 0;

	for (int i = 0; i < n; i++) {
		double on = f * T;

		gp_account__period(a, rates[i] * on, 0, T, on, COST, COST);
		truth += rates[i] * T;
	}
	return truth;
}

static void test_exact_periods(void)
{
	struct gp_account a = { 0 };
	struct gp_sampling s;

	for (int i = 0; i < 10; i++)
		gp_account__period(&a, 1000, 0, T, T, COST, COST);
	if (!ASSERT_FALSE(gp_account__sampling(&a, &s), "every call seen: no sampling"))
		return;
	ASSERT_EQ(a.obs, 10000, "hits seen");
	ASSERT_EQ(a.est, 10000, "estimate is what was seen");
	ASSERT_TRUE(fabs(gp_account__overhead(&a) - 0.01) < 1e-9, "1000 hits of 1 us in 0.1 s: 1 %");
}

static void test_paced_steady(void)
{
	double rates[20], truth;
	struct gp_account a = { 0 };
	struct gp_sampling s;

	for (int i = 0; i < 20; i++)
		rates[i] = 50000;
	truth = paced(&a, rates, 20, 0.1);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(s.fraction > 0.095 && s.fraction <= 0.1, "a tenth of the calls seen, a little less estimated");
	/* a paced process sits at the interval's low model: 5 % in probes in the window */
	ASSERT_TRUE(s.estimate > truth && s.estimate < truth * 1.05, "estimate within the model range");
	/* steady: the interval is narrow; its upper end also allows a hit dearer than
	 * calibrated (COST_SPREAD: the window's 5 % in probes could be 12.5 %) */
	ASSERT_TRUE(s.estimate - s.lo < 0.075 * truth, "steady: the interval is narrow below");
	ASSERT_TRUE(s.hi - s.lo < 0.25 * truth, "steady: and above, the cost's allowance included");
	ASSERT_TRUE(s.hi - s.estimate > 0.05 * truth, "the upper end allows a dearer hit");
}

static void test_paced_steps(void)
{
	/* rate_app's phases: 1000, 20000, 100000, 1000 calls/s, 500 ms each */
	double rates[20], truth;
	struct gp_account a = { 0 };
	struct gp_sampling s;

	for (int i = 0; i < 20; i++)
		rates[i] = i < 5 ? 1000 : i < 10 ? 20000 : i < 15 ? 100000 : 1000;
	truth = paced(&a, rates, 20, 0.1);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(s.lo >= s.observed, "never under what was seen");
}

/* A call-bound process: each call costs `p` unprobed, `p + COST` probed (a real driver's
 * launch: 3 us, a probe 1 us); its rate steps down right after a window (the worst place:
 * the whole unseen part differs) and stays. */
static void test_call_bound_and_step_in_the_dark(void)
{
	struct gp_account a = { 0 };
	struct gp_sampling s;
	double truth = 0, p = 3e-6, on = 0.01 * T;

	for (int i = 0; i < 30; i++) {
		double pp = i >= 15 ? 5 * p : p;
		double n = floor(on / (pp + COST)), off = (T - on) / (i >= 14 ? 5 * p : p);

		gp_account__period(&a, n, 0, T, on, COST, COST);
		truth += n + off;
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_FALSE(s.unbounded, "a window a quarter in probes bounds the rest");
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(s.estimate < truth, "a paced process would have made fewer: the estimate is under");
}

/* Calls cheaper than the probe (the stand-in's 55 ns launches, a probe 1 us): the window is
 * mostly probes, and the unprobed speed is anyone's guess: no upper end. */
static void test_calls_cheaper_than_probes(void)
{
	struct gp_account a = { 0 };
	struct gp_sampling s;
	double truth = 0, p = 55e-9, on = 0.01 * T;

	for (int i = 0; i < 10; i++) {
		double n = floor(on / (p + COST));

		gp_account__period(&a, n, 0, T, on, COST, COST);
		truth += n + (T - on) / p;
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.unbounded && isinf(s.hi), "no upper end");
	ASSERT_TRUE(s.lo <= truth, "the lower end holds");
}

/* A paced process (20 000 calls/s, a hit priced 5 us) that fell 10 ms behind while the
 * links went in and caught up inside one 2-ms window (200 calls more, back to back: the
 * window reads call-bound): one such window keeps an upper end, wider around it, that holds
 * the truth; two running take it away. */
static void test_one_catch_up_window(void)
{
	struct gp_account a = { 0 }, b = { 0 };
	struct gp_sampling s;
	double on = 0.002, cost = 5 * COST, rate = 20000, truth = 0;

	for (int i = 0; i < 10; i++) {
		gp_account__period(&a, rate * on + (i == 4 ? 200 : 0), 0, T, on, cost, cost);
		truth += rate * T; /* it catches up, so it made as many as ever */
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_FALSE(s.unbounded, "one catch-up window leaves an upper end");
	ASSERT_TRUE(isfinite(s.hi), "a finite upper end");
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	for (int i = 0; i < 10; i++)
		gp_account__period(&b, rate * on + (i == 4 || i == 5 ? 200 : 0), 0, T, on, cost, cost);
	ASSERT_TRUE(gp_account__sampling(&b, &s) && s.unbounded && isinf(s.hi), "two running: no upper end");
}

/* A process that begins in an unseen part: its first window brackets its start. */
static void test_begins_unseen(void)
{
	struct gp_account a;
	struct gp_sampling s;
	double truth = 20000 * 0.05; /* began half-way into the last 0.09 s unseen */

	gp_account__begin(&a, 0.09);
	for (int i = 0; i < 5; i++) {
		gp_account__period(&a, 20000 * 0.01, 0, T, 0.01, COST, COST);
		truth += 20000 * T;
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
}

/* Poisson arrivals at a rate that wanders: the interval holds the truth in (nearly) 95 %
 * of runs or more. */
static unsigned long long rng = 88172645463325252ULL;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / (double)(1ULL << 53);
}

static double poisson(double mean)
{
	/* normal approximation above 30, Knuth below */
	if (mean > 30) {
		double u = uniform(), v = uniform();

		return fmax(0, round(mean + sqrt(mean) * sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v)));
	}
	double l = exp(-mean), k = 0, pr = 1;

	do {
		k++;
		pr *= uniform();
	} while (pr > l);
	return k - 1;
}

static void test_poisson_coverage(void)
{
	int held = 0, runs = 300;

	for (int r = 0; r < runs; r++) {
		struct gp_account a = { 0 };
		struct gp_sampling s;
		double truth = 0, rate = 2000 + 20000 * uniform(), f = 0.05 + 0.3 * uniform();

		for (int i = 0; i < 40; i++) {
			double seen = poisson(rate * f * T), unseen = poisson(rate * (1 - f) * T);

			gp_account__period(&a, seen, 0, T, f * T, COST, COST);
			truth += seen + unseen;
			if (uniform() < 0.1)
				rate *= 0.5 + uniform();
		}
		gp_account__sampling(&a, &s);
		held += s.lo <= truth && truth <= s.hi;
	}
	ASSERT_TRUE(held >= runs * 93 / 100, "95 % intervals hold the truth");
}

static void test_a_part_of_the_hits(void)
{
	struct gp_sampling s = { .fraction = 0.1, .observed = 1000, .estimate = 10000, .lo = 9000, .hi = 11000 };
	double all[3], part[3], none[3];

	gp_sampling__count(&s, 1000, all);
	gp_sampling__count(&s, 100, part);
	gp_sampling__count(&s, 0, none);
	ASSERT_TRUE(fabs(all[0] - 10000) < 1e-6 && fabs(all[1] - 9000) < 1e-6 && fabs(all[2] - 11000) < 1e-6,
		    "all the hits: the account's own interval");
	ASSERT_TRUE(fabs(part[0] - 1000) < 1e-6, "a tenth of the hits: a tenth of the estimate");
	ASSERT_TRUE(part[1] < 900 && part[2] > 1100, "a part is less certain than its share of the whole");
	ASSERT_TRUE(part[1] >= 100, "never under what was seen");
	ASSERT_TRUE(none[0] == 0 && none[1] == 0 && none[2] == 0, "nothing seen: nothing estimated");
}

static void test_fraction_policy(void)
{
	bool over;

	ASSERT_TRUE(gp_budget_fraction(0.005, 0, 0.008, T, &over) == 1.0 && !over, "under the target: all");
	ASSERT_TRUE(fabs(gp_budget_fraction(0.08, 0, 0.008, T, &over) - 0.1) < 1e-12 && !over,
		    "ten times the target: a tenth");
	ASSERT_TRUE(fabs(gp_budget_fraction(0.08, 0.0004, 0.008, T, &over) - 0.05) < 1e-12 && !over,
		    "strays take their share first");
	ASSERT_TRUE(fabs(gp_budget_fraction(50, 0, 0.008, T, &over) - GP_MIN_WINDOW_S / T) < 1e-12 && over,
		    "the least window, over budget");
	ASSERT_TRUE(gp_budget_fraction(0, 0, 0.008, T, &over) == 1.0, "idle: all");
	ASSERT_TRUE(fabs(gp_budget_period(0, 0.008) - GP_PERIOD_S) < 1e-12, "no strays: the usual period");
	ASSERT_TRUE(fabs(gp_budget_period(0.008 * GP_PERIOD_S / 2, 0.008) - GP_PERIOD_S) < 1e-12,
		    "strays of half the target of a period: the usual period still");
	ASSERT_TRUE(fabs(gp_budget_period(0.003, 0.008) - 0.75) < 1e-12,
		    "strays of more: a period they take half the target of");
	ASSERT_TRUE(gp_budget_period(1, 0.008) == 1.0, "never over a second");
}

static void test_strays_cost(void)
{
	struct gp_account a = { 0 };

	struct gp_account b = { 0 };
	struct gp_sampling sa, sb;

	gp_account__period(&a, 100, 50, T, 0.01, COST, 3 * COST);
	ASSERT_EQ(a.obs, 100, "strays are not seen calls");
	ASSERT_TRUE(fabs(a.probe_s - 150 * 3 * COST) < 1e-12, "but they cost, at the cold price");
	/* the price is what the process paid; the models of its rate take the warm cost */
	gp_account__period(&b, 100, 50, T, 0.01, COST, COST);
	gp_account__period(&a, 120, 0, T, 0.01, COST, 3 * COST);
	gp_account__period(&b, 120, 0, T, 0.01, COST, COST);
	ASSERT_TRUE(gp_account__sampling(&a, &sa) && gp_account__sampling(&b, &sb), "sampled");
	ASSERT_TRUE(sa.estimate == sb.estimate && sa.lo == sb.lo && sa.hi == sb.hi,
		    "the price does not move the estimate or its interval");
}

/* The H200's launch-bound loop (bench/gpu/results-inproc-h200.md): 2.84 us a launch
 * unprobed, 4.16 us probed with 3 modes, i.e. 1.32 us of probes a launch where the
 * calibration priced them at 0.66 us. The truth must stay inside the interval. */
static void test_hit_dearer_than_calibrated(void)
{
	struct gp_account a = { 0 };
	struct gp_sampling s;
	double truth = 0, p = 2.84e-6, real = 1.32e-6, priced = 0.66e-6, on = 0.02 * T;

	for (int i = 0; i < 50; i++) {
		double n = floor(on / (p + real));

		gp_account__period(&a, n, 0, T, on, priced, priced);
		truth += n + (T - on) / p;
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_FALSE(s.unbounded, "bounded");
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(s.estimate < truth, "the estimate, on the calibrated price, is under");
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_exact_periods);
	RUN_TEST(test_paced_steady);
	RUN_TEST(test_paced_steps);
	RUN_TEST(test_call_bound_and_step_in_the_dark);
	RUN_TEST(test_calls_cheaper_than_probes);
	RUN_TEST(test_one_catch_up_window);
	RUN_TEST(test_begins_unseen);
	RUN_TEST(test_poisson_coverage);
	RUN_TEST(test_a_part_of_the_hits);
	RUN_TEST(test_fraction_policy);
	RUN_TEST(test_strays_cost);
	RUN_TEST(test_hit_dearer_than_calibrated);
	return unit_done();
}
