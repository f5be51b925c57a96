/* SPDX-License-Identifier: BSD-3-Clause */
/* The arithmetic of --max-overhead (src/lib/sampling.c): estimates and their intervals
 * against processes whose true calls are known, paced and call-bound, steady and
 * stepping, and the share of time the probes get. */
#include <math.h>
#include <stdint.h>
#include "lib/sampling.h"
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
	ASSERT_TRUE(none[0] == 0 && none[1] == 0, "nothing seen: none estimated, none certain");
	ASSERT_TRUE(none[2] > 0, "nothing seen of 9,000 unseen calls: not known to be none");
}

/*
 * A rare kind of call among the sampled ones (rate_app's four synchronizations among 120,400
 * launches, one at each phase's end), over runs where a share f of the calls is seen (a
 * window catches each one with chance f): its count's interval holds the truth in 95 % of
 * runs, and where no window saw one it is no [0, 0] (6.1 in QEMU, every phase sampled at
 * f 0.13: "true syncs 4 outside [0, 0]" in 57 % of runs before).
 */
static void test_rare_count_seen_in_no_window(void)
{
	const double calls = 120400, shares[] = { 0.02, 0.05, 0.13, 0.3 };
	int held = 0, runs = 0, none = 0, none_held = 0;

	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
		for (int r = 0; r < 500; r++, runs++) {
			double f = shares[i], obs = round(calls * f), iv[3];
			struct gp_sampling s = { .fraction = f, .observed = obs, .estimate = obs / f,
						 .lo = 0.9 * obs / f, .hi = 1.1 * obs / f };
			uint64_t x = 0;

			for (int k = 0; k < 4; k++)
				x += uniform() < f;
			gp_sampling__count(&s, x, iv);
			held += iv[1] <= 4 && 4 <= iv[2];
			none += x == 0;
			none_held += x == 0 && iv[1] <= 4 && 4 <= iv[2];
		}
	}
	printf("#   4 rare calls: held in %d of %d runs; none seen in %d, held there in %d\n", held, runs, none,
	       none_held);
	ASSERT_TRUE(held >= runs * 95 / 100, "a rare count's 95 % interval holds it");
	ASSERT_TRUE(none > 0 && none_held == none, "none seen: the interval still reaches the count");
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

#undef T /* struct gp_window's field from here on */

/* A tight loop (3.2 us of CPU a call, a hit 2.6 us as calibrated) with 40 % of a CPU on a
 * loaded machine, running half of each 3-ms window: its thread never slept in a window and
 * was always on a CPU or waiting for one (busy 1), so it calls as its CPU time pays for. The
 * geometric mean of that and its pace (the window's rate, slowed by the probes and by the
 * CPU it did not get) reads it at 0.83x here (rate_app's at 0.41-0.49x with two busy loops
 * beside it on the 2-CPU machine); the call-bound model alone, at its count. */
static void test_bound_by_its_cpu(void)
{
	const double w = 3.2e-6, c = 2.6e-6, Tp = 0.5, on = 0.003, share = 0.4;
	struct gp_account a = { 0 }, old = { 0 };
	struct gp_sampling s, s0;
	double truth = 0;

	for (int i = 0; i < 12; i++) {
		double act = on / 2, n = floor(act / (w + c)), cpu = share * Tp;
		struct gp_window win = { .n = n, .T = Tp, .on = on, .act = act, .cpu_T = cpu, .gaps = n - 1,
					 .gap_s = act, .sleep_s = 0, .head = n, .head_s = -1, .busy = 1 };

		gp_account__window(&a, &win, c, c);
		gp_account__period_cpu(&old, n, 0, Tp, on, act, cpu, c, c);
		truth += n + (cpu - act) / w;
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s) && gp_account__sampling(&old, &s0), "sampled"))
		return;
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(fabs(s.estimate / truth - 1) < 0.1, "the estimate within 10 % of the count");
	ASSERT_TRUE(s0.estimate < 0.9 * truth, "without the gaps' say: the geometric mean, low");
	printf("#   estimate %.2fx the count (the geometric mean: %.2fx)\n", s.estimate / truth, s0.estimate / truth);
}

/* A paced loop (100 000 calls/s, 1.5 us of CPU a call, a hit 2.6 us) that the links going in
 * put 60 calls behind before each 3-ms window: it catches up back to back at the window's
 * start (244 000/s), then sleeps between calls. Its windows read 120 000/s: the paced model
 * alone put the interval's low end over its count; counted from its first sleep, its pace. */
static void test_paced_caught_up_in_the_window(void)
{
	const double rate = 100000, w = 1.5e-6, c = 2.6e-6, Tp = 0.5, on = 0.003, back = 60;
	const double rmax = 1 / (w + c), tc = back / (rmax - rate);
	struct gp_account a = { 0 }, old = { 0 };
	struct gp_sampling s, s0;
	double truth = 0;

	for (int i = 0; i < 12; i++) {
		double n = rate * on + back, slept = (on - tc) * (1 - rate * (w + c)), cpu = rate * Tp * w + n * c;
		struct gp_window win = { .n = n, .T = Tp, .on = on, .act = on, .cpu_T = cpu, .gaps = n - 1, .gap_s = on,
					 .sleep_s = slept, .head = rmax * tc, .head_s = tc, .busy = cpu / Tp };

		gp_account__window(&a, &win, c, c);
		gp_account__period_cpu(&old, n, 0, Tp, on, on, cpu, c, c);
		truth += rate * Tp;
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s) && gp_account__sampling(&old, &s0), "sampled"))
		return;
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(fabs(s.estimate / truth - 1) < 0.05, "the estimate within 5 % of the count");
	ASSERT_TRUE(s0.lo > truth, "the paced model alone: the low end over the count");
	printf("#   estimate %.2fx the count, low end %.2fx (the paced model alone: %.2fx, %.2fx)\n", s.estimate / truth,
	       s.lo / truth, s0.estimate / truth, s0.lo / truth);
}

/* A link that took 2 s to close on a stalled machine (bench/budget_runs.py, two busy loops
 * beside rate_app's phases): 88 341 calls hit it outside the window, while the windows on
 * either side saw 20 000/s and 200/s and the 100 000/s phase fell between them. The calls
 * that hit a probe happened: the estimate and the low end are never under them. */
static void test_strays_are_calls(void)
{
	struct gp_account a = { 0 };
	struct gp_sampling s;
	struct gp_window w1 = { .n = 804, .T = 2.58, .on = 0.040, .act = 0.037, .cpu_T = 0.5, .busy = -1,
				.head_s = -1, .stray_calls = 88341 };
	struct gp_window w2 = { .n = 8, .T = 0.49, .on = 0.050, .act = 0.001, .cpu_T = 0.09, .busy = -1,
				.head_s = -1 };

	gp_account__window(&a, &w1, 2.8e-6, 4.5e-6);
	gp_account__window(&a, &w2, 2.8e-6, 4.5e-6);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.estimate >= 812 + 88341, "the estimate holds the calls that hit a probe");
	ASSERT_TRUE(s.lo >= 812 + 88341, "so does the low end");
	ASSERT_TRUE(s.hi >= s.estimate, "the high end over the estimate");
}

/* A tight loop that exits 0.42 s into an unseen part, working to its end (rate_app's, its
 * CPU clock polled while the budget waits): the part's calls are those its CPU time there
 * paid for, not the midpoint of its window's and none (0.89x of its count for the run). */
static void test_exit_part_by_its_cpu(void)
{
	/* its work a call moves by a few % from one window to the next, as a real loop's does
	 * (the stand-in's tight loop: 0.14-4.6 % between two windows; not a clock's pace) */
	const double w0 = 3.16e-6, c = 2.66e-6, on = 0.0019, wf[3] = { 1.0, 1.03, 0.98 };
	struct gp_account a = { 0 };
	struct gp_sampling s;
	double truth = 0;

	for (int i = 0; i < 3; i++) {
		double T = i < 2 ? 0.45 : 0.42, cpu = i < 2 ? T : 0.32, w = w0 * wf[i], n = floor(on / (w + c));
		struct gp_window win = { .n = n, .T = T, .on = on, .act = on, .cpu_T = cpu, .gaps = n - 1, .gap_s = on,
					 .head = n, .head_s = -1, .busy = 1 };

		gp_account__window(&a, &win, c, c);
		truth += n + (cpu - on) / w;
	}
	gp_account__trim(&a, 0.42 - on);
	{
		struct gp_window end = { .T = 1e-9, .on = 1e-9, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };

		gp_account__window(&a, &end, c, c);
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(fabs(s.estimate / truth - 1) < 0.1, "the estimate within 10 % of the count");
}

/* Windows that cannot say how the process spent its gaps (several threads taking turns:
 * fewer than 16 gaps of one thread) and periods that cannot say how busy its threads were
 * keep the geometric mean, exactly as before. */
static void test_cannot_say_keeps_the_geometric_mean(void)
{
	struct gp_account a = { 0 }, old = { 0 };
	struct gp_sampling s, s0;

	for (int i = 0; i < 8; i++) {
		double n = 500 + 50 * i;
		struct gp_window win = { .n = n, .T = 0.5, .on = 0.003, .act = 0.002, .cpu_T = 0.3, .gaps = 10,
					 .gap_s = 0.001, .sleep_s = 0, .head = n, .head_s = -1, .busy = -1 };

		gp_account__window(&a, &win, 2e-6, 4e-6);
		gp_account__period_cpu(&old, n, 0, 0.5, 0.003, 0.002, 0.3, 2e-6, 4e-6);
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s) && gp_account__sampling(&old, &s0), "sampled"))
		return;
	ASSERT_TRUE(s.estimate == s0.estimate && s.lo == s0.lo && s.hi == s0.hi, "the same estimate and interval");
}

/* -------------------------------------------------------------------------------------
 * Simulated processes (issue 29's rows): a deterministic model of a loop per pattern, run
 * through sampled periods with a seeded generator; the interval must hold the true count
 * in >= 95 % of the seeds, and the estimate stay within 2x of it whenever the interval has
 * an upper end, and within 2x also when it has none where the pattern says so. */

struct pattern {
	const char *name;
	double w;        /* CPU seconds of host work per call (all of a thread's) */
	double rate;     /* paced: calls/s per thread (0: as fast as it can) */
	double gpu;      /* GPU seconds per call (0: none; > w: the GPU sets the pace) */
	bool spin_wait;  /* waiting on the GPU spins on a CPU (CUDA's default) */
	int threads;
	double burst_on, burst_off; /* seconds of calls and of sleep, in turn (0: steady) */
	double real;     /* a probe hit's true cost, x the calibrated warm price */
	double desched;  /* share of the machine's time the process loses to others (0-1) */
	double stall;    /* paced: seconds it falls behind while each window's links go in */
};

static uint64_t sim_rng;

static double urand(void)
{
	sim_rng ^= sim_rng << 13;
	sim_rng ^= sim_rng >> 7;
	sim_rng ^= sim_rng << 17;
	return (double)(sim_rng >> 11) / 9007199254740992.0;
}

/* Calls a thread makes in d seconds with a hit costing c (0 unseen), and its CPU seconds;
 * *slept the share of its time between calls it sleeps (NULL: not asked). */
static void sim_run_slept(const struct pattern *p, double d, double c, double *calls, double *cpu, double *slept)
{
	double per = p->w + c, r = 1 / per, busy = 1;

	if (p->gpu > per) { /* the GPU sets the pace; the probes' time hides in the wait */
		r = 1 / p->gpu;
		busy = p->spin_wait ? 1 : per / p->gpu;
	}
	if (p->rate > 0 && p->rate < r) {
		busy *= p->rate / r;
		r = p->rate;
	}
	*calls = r * d;
	*cpu = busy * d;
	if (slept)
		*slept = 1 - busy;
}

static void sim_run(const struct pattern *p, double d, double c, double *calls, double *cpu)
{
	sim_run_slept(p, d, c, calls, cpu, NULL);
}

/* One seed of a pattern: returns whether the interval held the truth; *ratio the
 * estimate's ratio to the truth, *bounded whether it had an upper end. With `gaps` the
 * windows say what BPF measures of how a thread spent its gaps (bpf/budget.bpf.h) and the
 * periods how busy the calling thread was (src/core/budget.c); without, neither (the
 * estimate before they did, printed beside). */
static bool sim_one(const struct pattern *p, uint64_t seed, double pct, bool gaps, double *ratio, bool *bounded)
{
	const double Tp = GP_PERIOD_S, cost = 1.2e-6, price = 2.4e-6, target = 0.35 * pct / 100;
	struct gp_account a = { 0 };
	struct gp_sampling s;
	double truth = 0, f = 1, phase;

	/* splitmix64 of the seed: nearby seeds start far apart */
	sim_rng = seed + 0x9e3779b97f4a7c15ULL;
	sim_rng = (sim_rng ^ (sim_rng >> 30)) * 0xbf58476d1ce4e5b9ULL;
	sim_rng = (sim_rng ^ (sim_rng >> 27)) * 0x94d049bb133111ebULL;
	sim_rng = (sim_rng ^ (sim_rng >> 31)) | 1;
	phase = urand() * (p->burst_on + p->burst_off);
	for (int i = 0; i < 16; i++) {
		double on = f >= 1 ? Tp : f * Tp, n = 0, nu = 0, cpu = 0, act_on = 0;
		struct gp_window w = { .busy = -1, .head_s = -1 };
		bool over;

		for (int t = 0; t < p->threads; t++) {
			double x, y, xc, yc, lost = p->desched * urand() * 2, son = on * (1 - (lost > 1 ? 1 : lost));
			double act = 1, calling, slept, b0, head = 0, tc = 0;

			if (p->burst_on > 0) {
				/* the window falls in a burst or between two (the budget draws each
				 * period's length at random: at any point of the bursts' cycle); the
				 * unseen part has its share */
				double at = fmod(phase + urand() * (p->burst_on + p->burst_off), p->burst_on + p->burst_off);

				act = at < p->burst_on ? 1 : 0;
				if (f >= 1) /* every call seen: the whole period, its bursts' share */
					act = p->burst_on / (p->burst_on + p->burst_off);
			}
			sim_run_slept(p, son * act, cost * p->real, &x, &xc, &slept);
			if (p->threads == 1 && f < 1 && act > 0 && x < 32 && on < 0.05) {
				/* too few hits to tell its rate: the window goes on, up to 50 ms (budget.c,
				 * window_thin), where the process runs its share of the time */
				son += (0.05 - on) * (1 - p->desched);
				on = 0.05;
				sim_run_slept(p, son * act, cost * p->real, &x, &xc, &slept);
			}
			sim_run(p, (Tp - on) * (1 - p->desched) * (p->burst_on > 0 ? p->burst_on / (p->burst_on + p->burst_off) : 1),
				0, &y, &yc);
			if (p->rate > 0 && p->desched > 0 && f < 1) {
				/* paced: what a loaded machine took from it, it catches up; the window sees
				 * all of its pace, and a backlog from the links going in, back to back */
				double rmax = 1 / (p->w + cost * p->real), back = p->rate * p->stall * urand() * 2;

				x = p->rate * on * act;
				y = p->rate * (Tp - on) * (p->burst_on > 0 ? p->burst_on / (p->burst_on + p->burst_off) : 1);
				yc = y * p->w;
				if (back > 0 && rmax > p->rate) {
					tc = back / (rmax - p->rate);
					if (tc > on)
						tc = on;
					x += (rmax - p->rate) * tc;
					y -= (rmax - p->rate) * tc; /* made in the window, not before it */
					head = rmax * tc;
					slept *= 1 - tc / on;
				}
			}
			/* arrivals: Poisson noise on what the window saw */
			x = floor(x + sqrt(x) * (urand() + urand() + urand() - 1.5) * 2);
			if (x < 0)
				x = 0;
			n += x;
			nu += f >= 1 ? 0 : y;
			cpu += xc + (f >= 1 ? 0 : yc);
			/* the window's gaps of one thread (several take turns: none), the period's busy
			 * share of the calling threads (all alike here) */
			if (p->threads == 1 && x > 0) {
				w.gaps = x;
				w.gap_s = son * act;
				w.sleep_s = slept * w.gap_s;
				w.head = head < x ? head : x;
				w.head_s = slept > 0 ? tc : -1;
			}
			sim_run(p, 1, 0, &calling, &b0);
			b0 *= p->burst_on > 0 ? p->burst_on / (p->burst_on + p->burst_off) : 1;
			w.busy = b0 / (1 - p->desched) > 1 ? 1 : b0 / (1 - p->desched);
			/* the time it was calling, as BPF measures it: gaps up to 100 us (threads
			 * overlap: the longest one's) */
			calling = x * 100e-6 < son * act ? x * 100e-6 : son * act;
			if (calling > act_on)
				act_on = calling;
		}
		truth += n + nu;
		w.n = n;
		w.T = Tp;
		w.on = on;
		w.act = act_on;
		w.cpu_T = cpu;
		if (!gaps)
			w.gaps = 0, w.busy = -1;
		gp_account__window(&a, &w, cost, price);
		f = gp_budget_fraction(n * price / on, 0, target, Tp, &over);
	}
	if (!gp_account__sampling(&a, &s)) {
		*ratio = 1;
		*bounded = true;
		return true;
	}
	*ratio = s.estimate / truth;
	*bounded = !s.unbounded;
	return s.lo <= truth && truth <= s.hi;
}

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void test_simulated_coverage(void)
{
	/* a launch on the H200 ~2-4 us of host work; the stand-in's ~0.1 us */
	static const struct pattern pats[] = {
		{ "tight loop, 3 us of host work a launch", 3e-6, 0, 0, false, 1, 0, 0, 1.0, 0, 0 },
		{ "tight loop, a hit 2x the calibrated price", 3e-6, 0, 0, false, 1, 0, 0, 2.0, 0, 0 },
		{ "a sync every 1024, the GPU setting the pace, spinning", 2e-6, 0, 5e-6, true, 1, 0, 0, 1.5, 0, 0 },
		{ "a sync every 1024, the GPU setting the pace, sleeping", 2e-6, 0, 5e-6, false, 1, 0, 0, 1.5, 0, 0 },
		{ "a paced loop every 2 us (the stand-in's row)", 0.3e-6, 500000, 0, false, 1, 0, 0, 1.5, 0.3, 0 },
		{ "a paced loop at 20000/s", 3e-6, 20000, 0, false, 1, 0, 0, 1.0, 0, 0 },
		{ "8 threads launching at once", 4e-6, 0, 0, false, 8, 0, 0, 1.0, 0.2, 0 },
		{ "tight loop, 40 % of a CPU (a loaded machine)", 3e-6, 0, 0, false, 1, 0, 0, 1.0, 0.6, 0 },
		{ "tight loop, a hit 2x the price, 40 % of a CPU", 3e-6, 0, 0, false, 1, 0, 0, 2.0, 0.6, 0 },
		/* ~0.5 ms behind: on the loaded 2-CPU machine its windows read 114-130k calls/s */
		{ "a paced loop at 100000/s, loaded, behind at each window", 1.5e-6, 100000, 0, false, 1, 0, 0, 1.0,
		  0.5, 0.5e-3 },
		/* not held yet (issue 29): windows 500 ms apart alias bursts shorter than that, and
		 * the steps between windows do not widen the interval enough; printed, not asserted */
		{ "bursts of 50 ms every 250 ms", 3e-6, 0, 0, false, 1, 0.05, 0.2, 1.0, 0, 0 },
	};
	static const double pcts[] = { 0.5, 1, 5, 10 };

	for (size_t k = 0; k < sizeof(pats) / sizeof(pats[0]); k++)
		for (size_t j = 0; j < sizeof(pcts) / sizeof(pcts[0]); j++) {
			int held = 0, runs = 200, far = 0, held0 = 0;
			double r[200], r0[200];

			for (int seed = 1; seed <= runs; seed++) {
				uint64_t sd = (uint64_t)seed + 1000 * k + 100000 * j;
				bool bounded;

				held += sim_one(&pats[k], sd, pcts[j], true, &r[seed - 1], &bounded);
				far += r[seed - 1] > 2 || r[seed - 1] < 0.5;
				held0 += sim_one(&pats[k], sd, pcts[j], false, &r0[seed - 1], &bounded);
			}
			/* the median estimate, and what it was before the windows said how the process
			 * spent its gaps */
			printf("#   %s, --max-overhead %g: %d of %d held, median %.2fx (before: %d held, median %.2fx)\n",
			       pats[k].name, pcts[j], held, runs, median(r, runs), held0, median(r0, runs));
			if (pats[k].burst_on > 0) {
				printf("#   %s, --max-overhead %g: %d of %d held, %d estimates off by more than 2x (known gap)\n",
				       pats[k].name, pcts[j], held, runs, far);
				continue;
			}
			if (!ASSERT_TRUE(held >= runs * 95 / 100, "the interval holds the truth in >= 95 % of the seeds") ||
			    !ASSERT_EQ(far, 0, "the estimate within 2x of the truth"))
				printf("#   %s, --max-overhead %g: %d of %d held, %d estimates off by more than 2x\n",
				       pats[k].name, pcts[j], held, runs, far);
		}
}

/* The H200's row: a loop synchronizing every 1024 launches, the GPU setting its pace, whose
 * windows ran 97.6 % in probes by the price (a hit priced dearer than it was): its midpoint
 * estimate was 21x its count. Now within 2x, and the interval says it has no upper end. */
static void test_h200_sync_row(void)
{
	struct gp_account a = { 0 };
	struct gp_sampling s;
	double truth = 0, rate = 240000, on = 0.004, cost = 0.976 / rate;

	for (int i = 0; i < 16; i++) {
		gp_account__period_cpu(&a, rate * on, 0, GP_PERIOD_S, on, on, GP_PERIOD_S, cost, cost);
		truth += rate * GP_PERIOD_S;
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.unbounded, "no upper end: most of each window in probes");
	ASSERT_TRUE(s.estimate <= 2 * truth && s.estimate >= truth, "the estimate within 2x of the count");
	ASSERT_TRUE(s.lo <= truth, "the interval's lower end holds it");
}

/* The H200's paced row (bench/gpu/budget_cov.py's paced-100k): a loop that waits for each
 * launch's due time in a busy loop, 100,000/s, never sleeping, on a CPU all along, a hit
 * 1.88 us. Its 2-ms windows' one-thread gaps ran at its clock's rate within a few parts in
 * 10,000 (99,998-100,019/s) while n / on read ~95,000/s (the window's ends), and the
 * call-bound model took the probes' time out of its wait: 1.16-1.27x its count. Two windows
 * whose gaps agree that closely are clocked: its pace. */
static void test_paced_by_a_busy_wait(void)
{
	const double rate = 100000, c = 1.88e-6, Tp = 0.5, dead = 0.00012;
	struct gp_account a = { 0 };
	struct gp_sampling s;
	double truth = 0;

	for (int i = 0; i < 8; i++) {
		/* 200 gaps, off by up to 0.02 of a gap at their ends */
		double k = 200, gap_s = (k + 0.02 * (i % 3 - 1)) / rate, on = gap_s + dead;
		struct gp_window win = { .n = k + 1, .T = Tp, .on = on, .act = on, .cpu_T = Tp, .gaps = k, .gap_s = gap_s,
					 .head = k + 1, .head_s = -1, .busy = 1 };

		gp_account__window(&a, &win, c, c);
		truth += rate * Tp;
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(fabs(s.estimate / truth - 1) < 0.05, "the estimate within 5 % of the count");
	printf("#   estimate %.3fx the count, [%.2fx, %.2fx]\n", s.estimate / truth, s.lo / truth, s.hi / truth);
}

/*
 * A loop bound by its CPU whose gap rates agreed by chance in one pair of windows (the H200's
 * tight-spin3us at 5 %, its budget lines: 115,799/s, then 116,919/s and 116,918/s, 1,145 and
 * 1,589 gaps): that pair alone made the part between them clocked (paced at its probed gap
 * rate, 22 % under its call-bound estimate). The pair before disagreed by 7.3 gaps: not a
 * clock's (sampling.c, CLOCK_LOOSE), and the part stays call-bound. A busy-waiting paced
 * loop whose windows agree all along stays clocked (test_paced_by_a_busy_wait).
 */
static void test_chance_agreement_is_not_a_clock(void)
{
	static const double log[][14] = {
		{ 0, 1, 0.102156654, 0.102156654, 0, -1, 1.321442e-06, 4.982e-06, 0, 0, 0, 0, -1, -1 },
		{ 0, 1, 0.101930619, 0.101930619, 0, 0.098387688, 1.321442e-06, 4.982e-06, 0, 0, 0, 0, -1, -1 },
		{ 3324, 1, 0.05114503, 0.05114503, 0.027656012, 0.051998241, 2.20638668e-06, 5.86694468e-06, 3322,
		  0.027456012, 0, 3324, -1, -1 },
		{ 2225, 312, 0.429265996, 0.01923253, 0.019214251, 0.429283419, 2.20638668e-06, 5.86694468e-06, 2225,
		  0.019214251, 0, 2225, 0.9994, -1 },
		{ 1146, 203, 0.483133812, 0.009984099, 0.00989314, 0.483644134, 1.86220106e-06, 5.52275906e-06, 1145,
		  0.00979314, 0, 1146, 1, -1 },
		{ 1590, 234, 0.564189148, 0.013682146, 0.013690743, 0.564586118, 1.86220106e-06, 5.52275906e-06, 1589,
		  0.013590743, 0, 1590, 1, -1 },
	};
	struct gp_account a;

	gp_account__begin(&a, 0);
	for (size_t i = 0; i < sizeof(log) / sizeof(log[0]); i++) {
		const double *l = log[i];
		struct gp_window w = { .n = l[0], .stray = l[1], .T = l[2], .on = l[3], .act = l[4], .cpu_T = l[5],
				       .gaps = l[8], .gap_s = l[9], .sleep_s = l[10], .head = l[11], .busy = l[12],
				       .head_s = l[13], .stray_calls = l[1] };

		gp_account__window(&a, &w, l[6], l[7]);
	}
	ASSERT_TRUE(a.clock == 0, "two windows agreeing by chance after a pair 7 gaps apart: not clocked");
}

/*
 * Bursts of 50 ms of launching every 250 ms on the H200 (bench/gpu/inproc.sh --workloads
 * patterns, --max-overhead 1; bench/gpu/raw/2026-11-29-s15-inproc, its budget: acct lines in
 * bench/budget_replay.c's order; a row: n stray T on act cpu_T cost price gaps gap_s sleep_s
 * head busy head_s stray_calls). Windows that caught a burst read its pace, and windows that
 * fell between two saw no call while the process's CPU time says it ran its bursts there.
 * The loop's own counts over the budget's periods (from its first window to its last
 * boundary, what the estimate covers: bench/gpu/inproc.py's true_launches_acct): 103,424 and
 * 96,256 launches (+-2,048). Before: 0.40x (the part between two windows that saw no call
 * counted none; a window next to one had its call-bound model halved) and 1.46x (the burst's
 * pace extrapolated over the sleeps).
 */
/* An account begun and fed k such rows; no_first_act: the first row's act unknown (-1). */
static void replay15(struct gp_account *a, const double (*log)[15], size_t k, bool no_first_act)
{
	gp_account__begin(a, 0);
	for (size_t i = 0; i < k; i++) {
		const double *l = log[i];
		struct gp_window w = { .n = l[0], .stray = l[1], .T = l[2], .on = l[3],
				       .act = i == 0 && no_first_act ? -1 : l[4], .cpu_T = l[5], .gaps = l[8],
				       .gap_s = l[9], .sleep_s = l[10], .head = l[11], .busy = l[12], .head_s = l[13],
				       .stray_calls = l[14] };

		gp_account__window(a, &w, l[6], l[7]);
	}
}

static void h200_bursts(const double (*log)[15], size_t k, double truth, const char *what)
{
	struct gp_account a;
	struct gp_sampling s;

	replay15(&a, log, k, false);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	printf("#   %s: estimate %.2fx the loop's count, [%.2fx, %.2fx]\n", what, s.estimate / truth, s.lo / truth,
	       s.hi / truth);
	ASSERT_TRUE(s.estimate >= truth / 2 && s.estimate <= 2 * truth, "the estimate within 2x of the loop's count");
	ASSERT_TRUE(s.lo <= truth + 2048 && truth - 2048 <= s.hi, "the interval holds the loop's count");
}

static void test_h200_bursts(void)
{
	static const double run2[][15] = {
		{ 1108, 1, 0.011448173, 0.011448173, 0.008207422, -1, 2.39299794e-06, 4.98707994e-06, 1107, 0.008107422, 0, 1108, -1, -1, 0 },
		{ 570, 24, 0.433933116, 0.004114381, 0.00404672, 0.090366613, 2.39299794e-06, 4.98707994e-06, 570, 0.00404672, 0, 570, 0.2077, -1, 24 },
		{ 0, 2, 0.427877202, 0.050341008, 0, 0.096513146, 2.39299794e-06, 4.98707994e-06, 0, 0, 0, 0, 0.2239, -1, 1 },
		{ 0, 0, 0.102015931, 0.102015931, 0, 7.2779e-05, 2.39299794e-06, 4.98707994e-06, 0, 0, 0, 0, -1, -1, 0 },
		{ 188, 0, 0.030742034, 0.030742034, 0.001559833, 0, 2.39299794e-06, 4.98707994e-06, 187, 0.001459833, 0, 188, -1, -1, 0 },
		{ 821, 34, 0.551079978, 0.006341569, 0.006293047, 0.147001942, 2.39299794e-06, 4.98707994e-06, 821, 0.006304521, 0, 821, 0.2661, -1, 31 },
		{ 0, 0, 0.528377248, 0.050547503, 0, 0.100510597, 2.39299794e-06, 4.98707994e-06, 0, 0, 0, 0, 0.1885, -1, 0 },
		{ 0, 0, 0.10178419, 0.10178419, 0, 6.3867e-05, 2.39299794e-06, 4.98707994e-06, 0, 0, 0, 0, -1, -1, 0 },
	};
	static const double run0[][15] = {
		{ 677, 1, 0.076800143, 0.076800143, 0.004913944, -1, 1.526896e-06, 5.548e-06, 676, 0.004813944, 0, 677, -1, -1, 0 },
		{ 622, 27, 0.581058432, 0.004556182, 0.004516275, 0.146057959, 2.51063223e-06, 6.53173623e-06, 622, 0.004516275, 0, 622, 0.2506, -1, 25 },
		{ 0, 250, 0.436308802, 0.05037971, 0, 0.071059696, 2.51063223e-06, 6.53173623e-06, 0, 0, 0, 0, 0.1616, -1, 250 },
		{ 1435, 14, 0.01046593, 0.01046593, 0.010455853, 0.010558348, 2.51063223e-06, 6.53173623e-06, 1434, 0.010355853, 0, 1435, 1, -1, 13 },
		{ 285, 240, 0.505351786, 0.002106569, 0.002048368, 0.105378469, 2.51063223e-06, 6.53173623e-06, 285, 0.002048368, 0, 285, 0.208, -1, 239 },
		{ 249, 30, 0.551922901, 0.001922006, 0.001894372, 0.113259562, 2.42531607e-06, 6.44642007e-06, 248, 0.001794372, 0, 249, 0.2044, -1, 30 },
	};

	h200_bursts(run2, sizeof(run2) / sizeof(run2[0]), 103424, "windows between bursts");
	h200_bursts(run0, sizeof(run0) / sizeof(run0[0]), 96256, "windows in bursts");
}

/*
 * The same bursts where every sampled window fell between two bursts (bench/gpu/raw/
 * 2026-11-30-s25-bursts, window 10 of 50: windows opened 569, 497, 520 and 555 ms apart, each
 * 50 ms of a 250-ms cycle, and none met a burst). Only the first period, exact, saw calls
 * (1,332), and its CPU clock was not polled yet (cpu_T -1): no window carried a rate per CPU
 * second, the unseen parts counted none, and the run was printed as 1,332 launches,
 * interval [1332, 1332], every call seen, against the loop's 101,376 (+-2,048). Rows
 * rebuilt from that window's budget events and the first rows of the windows logged beside
 * it (rows as test_h200_bursts's).
 */
static void test_h200_bursts_all_windows_between(void)
{
	static const double run[][15] = {
		{ 1332, 1, 0.011204689, 0.011204689, 0.00874728, -1, 1.84436467e-06, 4.01418267e-06, 1331, 0.00866297, 0, 1332, -1, -1, 0 },
		{ 0, 0, 0.569, 0.050310039, 0, 0.110310658, 1.84436467e-06, 4.01418267e-06, 0, 0, 0, 0, 0.2333, -1, 0 },
		{ 0, 0, 0.497, 0.050590604, 0, 0.100329277, 1.84436467e-06, 4.01418267e-06, 0, 0, 0, 0, 0.189, -1, 0 },
		{ 0, 0, 0.520, 0.050291138, 0, 0.10023635, 1.84436467e-06, 4.01418267e-06, 0, 0, 0, 0, 0.2376, -1, 0 },
		{ 0, 0, 0.555, 0.05039669, 0, 0.100192552, 1.84436467e-06, 4.01418267e-06, 0, 0, 0, 0, 0.1254, -1, 0 },
	};
	struct gp_account a;
	struct gp_sampling s;
	size_t k = sizeof(run) / sizeof(run[0]);

	h200_bursts(run, k, 101376, "every window between bursts");
	/* where not even BPF timed its first period on a CPU: no upper end, not every call seen */
	replay15(&a, run, k, true);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.unbounded && isinf(s.hi), "no upper end where no rate per CPU second was known");
	ASSERT_TRUE(s.lo <= 101376 && s.fraction < 1 + 1e-9, "the low end under the count");
}

/*
 * 8 threads launching at once on the H200 (bench/gpu/inproc.sh --workloads patterns,
 * --max-overhead 1, bench/gpu/raw/2026-11-29-s15-inproc; rows as test_h200_bursts's): their
 * probes' time was charged summed over the threads, 9.47 % of the process's wall time
 * (over_budget), while inside the process the loop ran +0.64 % slower (95 %: -1.22 ...
 * +5.35 %; by 0.25 s since the attach +0.97 ... +1.95 %). The threads took their hits on ~7
 * CPUs at once (cpu_T / T 7.1-7.2; hits after one of the same thread: 0-15 of 1,335-16,977),
 * and the wall time pays a seventh of it. One thread's windows (the paced loop's) are charged
 * as before, every hit and stray at its price.
 */
static double replay_overhead(const double (*log)[15], size_t k, double *summed)
{
	struct gp_account a;
	double s = 0, t = 0;

	gp_account__begin(&a, 0);
	for (size_t i = 0; i < k; i++) {
		const double *l = log[i];
		struct gp_window w = { .n = l[0], .stray = l[1], .T = l[2], .on = l[3], .act = l[4], .cpu_T = l[5],
				       .gaps = l[8], .gap_s = l[9], .sleep_s = l[10], .head = l[11], .busy = l[12],
				       .head_s = l[13], .stray_calls = l[14] };

		gp_account__window(&a, &w, l[6], l[7]);
		s += (l[0] + l[1]) * l[7];
		t += l[2];
	}
	*summed = 100 * s / t;
	return 100 * gp_account__overhead(&a);
}

static void test_h200_threads_share_their_probes(void)
{
	static const double threads8[][15] = {
		{ 16977, 13, 0.014480151, 0.014480151, 0.027414215, -1, 1.39027e-06, 5.002e-06, 15, 0.000212082, 0, 16977, -1, -1, 0 },
		{ 13174, 1272, 0.511102726, 0.02071414, 0.020718443, 3.62324066, 3.24696931e-06, 6.85869931e-06, 5, 4.2109e-05, 0, 13174, 0.8864, -1, 1257 },
		{ 1357, 1137, 0.999786905, 0.002128329, 0.002151732, 7.20471301, 3.24696931e-06, 6.85869931e-06, 0, 0, 0, 1357, 0.9009, -1, 1136 },
		{ 1335, 116, 0.703768476, 0.002086747, 0.002105515, 5.09392647, 3.24696931e-06, 6.85869931e-06, 0, 0, 0, 1335, 0.905, -1, 114 },
	};
	static const double paced[][15] = {
		{ 1940, 1, 0.011347819, 0.011347819, 0.01942736, -1, 2.33046903e-06, 4.74764103e-06, 1939, 0.01932736, 0.000674828, 4, -1, -1, 0 },
		{ 379, 132, 0.590694839, 0.003804605, 0.00378015, 0.592751824, 2.33046903e-06, 4.74764103e-06, 379, 0.00378015, 0, 0, 1, -1, 131 },
		{ 250, 147, 0.536186439, 0.002594528, 0.00258981, 0.536563152, 2.33046903e-06, 4.74764103e-06, 249, 0.00248981, 0, 250, 1, -1, 147 },
		{ 240, 149, 0.519742051, 0.002490645, 0.002473976, 0.51940049, 2.33046903e-06, 4.74764103e-06, 239, 0.002373976, 0, 240, 0.9988, -1, 148 },
		{ 246, 17, 0.521413969, 0.002534797, 0.002549677, 0.519797295, 2.33046903e-06, 4.74764103e-06, 245, 0.002449677, 0, 246, 0.9964, -1, 17 },
	};
	double summed, o = replay_overhead(threads8, sizeof(threads8) / sizeof(threads8[0]), &summed);

	printf("#   8 threads: %.2f %% of the wall time in probes (summed over the threads: %.2f %%); the loop's own: "
	       "+0.64 %% (-1.22 ... +5.35 %%)\n", o, summed);
	ASSERT_TRUE(o <= 5.35, "within the in-process slowdown's interval");
	ASSERT_TRUE(o >= 100 * 16977 * 5.002e-6 / 8 / 2.229, "no less than the first period's hits shared by 8");
	o = replay_overhead(paced, sizeof(paced) / sizeof(paced[0]), &summed);
	printf("#   one thread: %.3f %% (summed: %.3f %%)\n", o, summed);
	ASSERT_TRUE(fabs(o - summed) < 1e-9 * summed, "one thread's windows charged every hit and stray");
}

/*
 * The H200's paced loop (a launch due every 10 us, waited for in a busy loop; s15 inproc,
 * --max-overhead 1; rows as test_h200_bursts's), 217,088 launches by its own count over the
 * budget's periods. Its 2.5-3.8-ms windows' gap rates agreed within 0.38-0.81 of a gap, under
 * a hit's price (4.75 us, 0.475 of a gap), where the clock's tolerance was 0.05 of a gap: its
 * parts stayed call-bound, the probes' time taken out of its wait, 1.26x (sampling.c,
 * CLOCK_LATE).
 */
static void test_h200_paced_windows_agree_within_a_hit(void)
{
	static const double log[][15] = {
		{ 1940, 1, 0.011347819, 0.011347819, 0.01942736, -1, 2.33046903e-06, 4.74764103e-06, 1939, 0.01932736, 0.000674828, 4, -1, -1, 0 },
		{ 379, 132, 0.590694839, 0.003804605, 0.00378015, 0.592751824, 2.33046903e-06, 4.74764103e-06, 379, 0.00378015, 0, 0, 1, -1, 131 },
		{ 250, 147, 0.536186439, 0.002594528, 0.00258981, 0.536563152, 2.33046903e-06, 4.74764103e-06, 249, 0.00248981, 0, 250, 1, -1, 147 },
		{ 240, 149, 0.519742051, 0.002490645, 0.002473976, 0.51940049, 2.33046903e-06, 4.74764103e-06, 239, 0.002373976, 0, 240, 0.9988, -1, 148 },
		{ 246, 17, 0.521413969, 0.002534797, 0.002549677, 0.519797295, 2.33046903e-06, 4.74764103e-06, 245, 0.002449677, 0, 246, 0.9964, -1, 17 },
	};
	const double truth = 217088;
	struct gp_account a;
	struct gp_sampling s;

	gp_account__begin(&a, 0);
	for (size_t i = 0; i < sizeof(log) / sizeof(log[0]); i++) {
		const double *l = log[i];
		struct gp_window w = { .n = l[0], .stray = l[1], .T = l[2], .on = l[3], .act = l[4], .cpu_T = l[5],
				       .gaps = l[8], .gap_s = l[9], .sleep_s = l[10], .head = l[11], .busy = l[12],
				       .head_s = l[13], .stray_calls = l[14] };

		gp_account__window(&a, &w, l[6], l[7]);
	}
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	printf("#   estimate %.3fx the loop's count, [%.2fx, %.2fx]\n", s.estimate / truth, s.lo / truth, s.hi / truth);
	ASSERT_TRUE(fabs(s.estimate / truth - 1) <= 0.1, "the estimate within 10 % of the loop's count");
	ASSERT_TRUE(s.lo <= truth + 2048 && truth - 2048 <= s.hi, "the interval holds the loop's count");
}

/*
 * The stand-in's loop paced by a busy wait (rate_app --phases 20000:2000 --busy-pace,
 * --max-overhead 5, bench/budget_runs.py busypaced20k) on the 2-CPU machine at load 15,
 * 40,000 launches by its own count (bench/raw/2026-11-29-s15-busypaced20k-5pct-load15.log.gz;
 * rows as test_h200_bursts's). Its fifth window's thread was held off for all but 0.33 ms of
 * its 9.6 ms, then called back to back: 116 hits on 0.43 ms of CPU, a per-CPU rate 5x its
 * windows that called through, which the unseen part's 256 ms of spinning multiplied: 7.15x
 * the count (sampling.c, CATCH_UP_SPAN).
 */
static void test_catch_up_window_is_no_cpu_rate(void)
{
	static const double log[][15] = {
		{ 2003, 3, 0.102885974, 0.102885974, 0.046949041, -1, 2.61527258e-06, 4.37000858e-06, 2002, 0.100049583, 0, 2003, -1, -1, 0 },
		{ 2058, 0, 0.107016416, 0.107016416, 0.047703004, 0.047658893, 2.51209381e-06, 4.26682981e-06, 2058, 0.102899944, 0, 2058, 0.9862, -1, 0 },
		{ 240, 0, 0.011958525, 0.011958525, 0.005573046, 0.00545579, 2.51209381e-06, 4.26682981e-06, 240, 0.011999996, 0, 240, 0.5119, -1, 0 },
		{ 1850, 13510, 0.76661117, 0.088371124, 0.041262254, 0.409258255, 2.51209381e-06, 4.26682981e-06, 1850, 0.092502227, 0, 1850, 1, -1, 13510 },
		{ 116, 325, 0.766107602, 0.009636727, 0.000433325, 0.255949959, 2.51209381e-06, 4.26682981e-06, 115, 0.000333325, 0, 116, 0.9972, -1, 325 },
		{ 3120, 0, 0.359221453, 0.15409921, 0.047550998, 0.07754226, 2.51209381e-06, 4.26682981e-06, 3119, 0.147900567, 0, 3120, 0.9972, -1, 0 },
	};
	struct gp_window end = { .T = 1e-9, .on = 1e-9, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };
	const double truth = 40000;
	struct gp_account a;
	struct gp_sampling s;

	gp_account__begin(&a, 0);
	for (size_t i = 0; i < sizeof(log) / sizeof(log[0]); i++) {
		const double *l = log[i];
		struct gp_window w = { .n = l[0], .stray = l[1], .T = l[2], .on = l[3], .act = l[4], .cpu_T = l[5],
				       .gaps = l[8], .gap_s = l[9], .sleep_s = l[10], .head = l[11], .busy = l[12],
				       .head_s = l[13], .stray_calls = l[14] };

		gp_account__window(&a, &w, l[6], l[7]);
	}
	gp_account__trim(&a, 0.205122243);
	gp_account__window(&a, &end, 2.51209381e-06, 4.26682981e-06);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	printf("#   estimate %.2fx the loop's count, [%.2fx, %.2fx]\n", s.estimate / truth, s.lo / truth, s.hi / truth);
	ASSERT_TRUE(s.estimate >= truth / 2 && s.estimate <= 2 * truth, "the estimate within 2x of the loop's count");
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the interval holds the loop's count");
}

/*
 * rate_app's steps on the stand-in (200/s, 20,000/s, 100,000/s, 200/s, a second each, a sleep
 * until each launch is due; test_budget's workload, --max-overhead 1, the 2-CPU machine at
 * load 22; bench/raw/2026-11-29-s15-steps-catch-up-load22.log.gz), 120,400 launches by its own
 * count. Its windows at 20,000/s slept between calls (a sleep's system call a launch: 21,000
 * calls a CPU second); its window at the step to 100,000/s was behind and called back to back
 * (321,000 a CPU second). Carrying the sleeping windows' per-CPU rate into that catch-up read
 * the run at 0.31x with an interval under its count (sampling.c, CATCH_UP_SPAN: only a window
 * that called through without sleeping lends its rate).
 */
static void test_catch_up_after_sleeping_windows(void)
{
	static const double log[][15] = {
		{ 24, 3, 0.105022576, 0.105022576, 0.0024, -1, 1.478676e-06, 3.064e-06, 23, 0.115002202, 0.115002202, 1, -1, -1, 0 },
		{ 33, 0, 0.166676603, 0.166676603, 0.0033, 0.001021426, 1.478676e-06, 3.064e-06, 33, 0.164973595, 0.164973595, 0, -1, -1, 0 },
		{ 20, 0, 0.102111114, 0.102111114, 0.002, 0.000566419, 1.478676e-06, 3.064e-06, 20, 0.100052337, 0.100052337, 0, -1, -1, 0 },
		{ 22, 0, 0.10526779, 0.10526779, 0.0022, 0.000813856, 1.478676e-06, 3.064e-06, 22, 0.110000817, 0.110000817, 0, -1, -1, 0 },
		{ 21, 2, 0.1081441, 0.1081441, 0.0021, 0.000800721, 1.478676e-06, 3.064e-06, 21, 0.106838782, 0.106838782, 0, -1, -1, 0 },
		{ 21, 0, 0.104505924, 0.104505924, 0.0021, 0.000709584, 1.478676e-06, 3.064e-06, 21, 0.103120247, 0.103120247, 0, -1, -1, 0 },
		{ 20, 0, 0.100371731, 0.100371731, 0.002, 0.000649856, 1.478676e-06, 3.064e-06, 20, 0.100041961, 0.100041961, 0, -1, -1, 0 },
		{ 20, 0, 0.101335742, 0.101335742, 0.002, 0.000583674, 1.478676e-06, 3.064e-06, 20, 0.099971116, 0.099971116, 0, -1, -1, 0 },
		{ 159, 4, 0.103549129, 0.103549129, 0.007477289, 0.001865745, 1.478676e-06, 3.064e-06, 159, 0.106950408, 0.106686829, 0, -1, -1, 0 },
		{ 441, 8, 0.021201697, 0.021201697, 0.013601603, 0.002987878, 3.02501718e-06, 4.61034118e-06, 441, 0.022083938, 0.020979202, 0, 0.599, -1, 0 },
		{ 183, 202, 0.506125665, 0.009019051, 0.006589674, 0.054834961, 3.02501718e-06, 4.61034118e-06, 183, 0.00912608, 0.008660835, 0, 0.3426, -1, 0 },
		{ 179, 191, 0.438612103, 0.008130802, 0.005864494, 0.044587915, 3.02501718e-06, 4.61034118e-06, 178, 0.006307865, 0.00571637, 61, 0.3723, 0.002273846, 15 },
		{ 153, 1097, 0.514287958, 0.007648856, 0.007395771, 0.07354814, 3.02501718e-06, 4.61034118e-06, 152, 0.007553234, 0.007275526, 2, 0.4697, 0.00018191, 111 },
		{ 460, 1026, 0.575180755, 0.006311751, 0.001432729, 0.077225312, 3.02501718e-06, 4.61034118e-06, 459, 0.002157033, 0, 460, 0.3606, -1, 0 },
		{ 10, 2, 0.463941169, 0.050394891, 0.001, 0.002117147, 3.02501718e-06, 4.61034118e-06, 9, 0.044425778, 0.044425778, 1, 0.01505, 0.006823151, 0 },
		{ 21, 0, 0.105215693, 0.105215693, 0.0021, 0.000753108, 3.02501718e-06, 4.61034118e-06, 20, 0.100016263, 0.100016263, 1, -1, 0.007855683, 0 },
		{ 20, 0, 0.100713959, 0.100713959, 0.002, 0.000720739, 3.02501718e-06, 4.61034118e-06, 20, 0.100022783, 0.100022783, 0, -1, -1, 0 },
		{ 21, 0, 0.103922252, 0.103922252, 0.0021, 0.000804043, 3.02501718e-06, 4.61034118e-06, 21, 0.105235812, 0.105235812, 0, -1, -1, 0 },
		{ 20, 0, 0.102136491, 0.102136491, 0.001725338, 0.00079437, 3.02501718e-06, 4.61034118e-06, 20, 0.099740063, 0.099714725, 0, -1, -1, 0 },
		{ 13, 2, 0.102418189, 0.102418189, 0.0013, 0.000757324, 3.02501718e-06, 4.61034118e-06, 13, 0.065022999, 0.065022999, 0, -1, -1, 0 },
		{ 0, 0, 0.0587464, 0.0587464, 0, 0, 3.02501718e-06, 4.61034118e-06, 0, 0, 0, 0, 0.01505, -1, 0 },
	};
	const double truth = 120400;
	struct gp_account a;
	struct gp_sampling s;

	gp_account__begin(&a, 0);
	for (size_t i = 0; i < sizeof(log) / sizeof(log[0]); i++) {
		const double *l = log[i];
		struct gp_window w = { .n = l[0], .stray = l[1], .T = l[2], .on = l[3], .act = l[4], .cpu_T = l[5],
				       .gaps = l[8], .gap_s = l[9], .sleep_s = l[10], .head = l[11], .busy = l[12],
				       .head_s = l[13], .stray_calls = l[14] };

		gp_account__window(&a, &w, l[6], l[7]);
	}
	gp_account__trim(&a, 0);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	printf("#   estimate %.2fx the count, [%.2fx, %.2fx]\n", s.estimate / truth, s.lo / truth, s.hi / truth);
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the interval holds the count");
}

/* A process that stopped calling after its last window and exited later: its last unseen
 * part ends at the exit, and may hold no calls at all. */
static void test_exit_ends_the_last_part(void)
{
	struct gp_account a = { 0 };
	struct gp_sampling s;
	double rate = 20000, on = 0.05, truth = 0;

	for (int i = 0; i < 3; i++) {
		gp_account__period(&a, rate * on, 0, GP_PERIOD_S, on, COST, COST);
		truth += rate * GP_PERIOD_S;
	}
	/* the last period: its window, then 50 ms of calls and 200 ms without before the exit */
	gp_account__period(&a, rate * on, 0, GP_PERIOD_S, on, COST, COST);
	truth += rate * (on + 0.05);
	gp_account__trim(&a, 0.25);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(s.estimate < truth + rate * 0.25, "the part after the exit not estimated");
}

/*
 * An attach slower than the process's life (GPUPROBE_TEST_ATTACH_MS=3000 here, as an ASan
 * build at load 20 took 6.3 s): rate_app's windows, as its -v log gave them (budget: acct
 * lines, bench/budget_replay.c's order), 120,400 launches by its own count. Its only sampled
 * window (20 ms, cut at the step to 100,000/s) was followed by 3.05 s unseen until its exit,
 * in which its rate moved twice; the strays the probes caught while going in (109,163) were
 * the estimate's floor, and the interval was [110,386-110,386]. No window brackets such a
 * part: no upper end, and the low end still under the count.
 */
static void test_unseen_part_longer_than_a_period(void)
{
	static const double log[][15] = {
		{ 20, 3, 0.104240134, 0.104240134, 0.002, -1, 1.364668e-06, 3.486e-06, 19, 0.095041086, 0.095041086, 1, -1,
		  0.013713861, 0 },
		{ 22, 0, 0.112110239, 0.112110239, 0.0022, 0.00100368, 1.364668e-06, 3.486e-06, 22, 0.110012214,
		  0.110012214, 0, -1, -1, 0 },
		{ 20, 0, 0.100954576, 0.100954576, 0.002, 0.000837812, 1.364668e-06, 3.486e-06, 20, 0.099979258,
		  0.099979258, 0, -1, -1, 0 },
		{ 20, 0, 0.107962801, 0.107962801, 0.002, 0.00070342, 1.364668e-06, 3.486e-06, 20, 0.099994671,
		  0.099994671, 0, -1, -1, 0 },
		{ 22, 2, 0.107451363, 0.107451363, 0.002114351, 0.000844853, 1.364668e-06, 3.486e-06, 22, 0.110030071,
		  0.11001572, 0, -1, -1, 0 },
		{ 22, 0, 0.100450407, 0.100450407, 0.001956092, 0.000763481, 1.364668e-06, 3.486e-06, 22, 0.109981058,
		  0.109924966, 0, -1, -1, 0 },
		{ 20, 0, 0.10435151, 0.10435151, 0.002, 0.00099819, 1.364668e-06, 3.486e-06, 20, 0.099997445,
		  0.099997445, 0, -1, -1, 0 },
		{ 20, 0, 0.101135385, 0.101135385, 0.002, 0.000789945, 1.364668e-06, 3.486e-06, 20, 0.100001261,
		  0.100001261, 0, -1, -1, 0 },
		{ 21, 0, 0.102948927, 0.102948927, 0.0021, 0.000953237, 1.364668e-06, 3.486e-06, 21, 0.106221265,
		  0.106221265, 0, -1, -1, 0 },
		{ 590, 12, 0.095513378, 0.095513378, 0.017750487, 0.006271832, 3.36251277e-06, 5.48384477e-06, 590,
		  0.097598383, 0.095587398, 0, -1, -1, 0 },
		{ 446, 111557, 3.07184252, 0.02192409, 0.012540978, 0.054729443, 3.36251277e-06, 5.48384477e-06, 446,
		  0.022345166, 0.020825631, 0, -1, -1, 109163 },
	};
	struct gp_window end = { .T = 1e-9, .on = 1e-9, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };
	struct gp_account a;
	struct gp_sampling s;
	double truth = 120400;

	gp_account__begin(&a, 0);
	for (size_t i = 0; i < sizeof(log) / sizeof(log[0]); i++) {
		const double *l = log[i];
		struct gp_window w = { .n = l[0], .stray = l[1], .T = l[2], .on = l[3], .act = l[4], .cpu_T = l[5],
				       .gaps = l[8], .gap_s = l[9], .sleep_s = l[10], .head = l[11], .busy = l[12],
				       .head_s = l[13], .stray_calls = l[14] };

		gp_account__window(&a, &w, l[6], l[7]);
	}
	gp_account__trim(&a, 3.04991843);
	gp_account__window(&a, &end, 3.36251277e-06, 5.48384477e-06);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	ASSERT_TRUE(s.lo <= truth, "the low end under the count");
	ASSERT_TRUE(s.unbounded && s.long_unseen && isinf(s.hi), "no upper end after a 3-s unseen part");
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	printf("#   estimate %.3fx the count, [%.2fx, %s], %.2f s seen by no probe\n", s.estimate / truth, s.lo / truth,
	       isinf(s.hi) ? "none" : "bounded", s.dark_s);
	/* what is missing, said: the part to its exit, no strays timed in it */
	ASSERT_TRUE(fabs(s.dark_s - 3.04991843) < 1e-6, "the whole 3.05-s part seen by no probe");
}

/*
 * The same slow attach (the test hook's 3 s, tracefs uprobe events armed one at a time),
 * with the strays its probes caught going in timed by the budget's thread (span_n over
 * [span_from, span_to]: 104,956 calls from 0.73 s to 3.03 s of the last period): rate_app's
 * part after its window ran 1 s at 20,000/s and 1 s at 100,000/s unseen. The estimate
 * takes the strays as a rate measured there (sampling.c, "spanned") and holds the count
 * within 10 %: 1.084x (the three such runs here: 1.044-1.084x); on the window's rate alone,
 * halved by its exit, under the floor of the strays seen, 0.884x (0.884-0.909x). The
 * interval keeps no upper end.
 */
static void test_slow_attach_strays_timed(void)
{
	static const double log[][18] = {
		{ 20, 3, 0.100979984, 0.100979984, 0.002, -1, 1.370714e-06, 3.064e-06, 19, 0.095376634, 0.095376634, 1, -1,
		  0.007612591, 0, 0, 0, 0 },
		{ 21, 0, 0.101615637, 0.101615637, 0.0021, 0.001204638, 1.370714e-06, 3.064e-06, 21, 0.104667098,
		  0.104667098, 0, -1, -1, 0, 0, 0, 0 },
		{ 20, 0, 0.101146061, 0.101146061, 0.002, 0.000907043, 1.370714e-06, 3.064e-06, 20, 0.100859266,
		  0.100859266, 0, -1, -1, 0, 0, 0, 0 },
		{ 20, 0, 0.100550897, 0.100550897, 0.002, 0.000908216, 1.370714e-06, 3.064e-06, 20, 0.099128655,
		  0.099128655, 0, -1, -1, 0, 0, 0, 0 },
		{ 21, 2, 0.104948295, 0.104948295, 0.0021, 0.001098389, 1.370714e-06, 3.064e-06, 21, 0.105016427,
		  0.105016427, 0, -1, -1, 0, 0, 0, 0 },
		{ 21, 0, 0.106505037, 0.106505037, 0.002020731, 0.000838852, 1.370714e-06, 3.064e-06, 21, 0.107974489,
		  0.107953758, 0, -1, -1, 0, 0, 0, 0 },
		{ 22, 0, 0.107122244, 0.107122244, 0.0022, 0.000940012, 1.370714e-06, 3.064e-06, 22, 0.10720102,
		  0.10720102, 0, -1, -1, 0, 0, 0, 0 },
		{ 20, 0, 0.103771538, 0.103771538, 0.002, 0.000996291, 1.370714e-06, 3.064e-06, 20, 0.099823257,
		  0.099823257, 0, -1, -1, 0, 0, 0, 0 },
		{ 21, 0, 0.102348746, 0.102348746, 0.0021, 0.001127391, 1.370714e-06, 3.064e-06, 21, 0.10510623,
		  0.10510623, 0, -1, -1, 0, 0, 0, 0 },
		{ 583, 12, 0.102244191, 0.102244191, 0.02657904, 0.006361635, 2.94591176e-06, 4.63919776e-06, 583,
		  0.103376482, 0.102164975, 0, -1, -1, 0, 0, 0, 0 },
		{ 753, 107350, 3.07316627, 0.037483802, 0.034771883, 0.461864036, 2.94591176e-06, 4.63919776e-06, 753,
		  0.037646703, 0.036147694, 0, -1, -1, 104956, 104956, 0.733727037, 3.02571096 },
	};
	struct gp_window end = { .T = 1e-9, .on = 1e-9, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };
	double truth = 120400, est[2] = { 0 };

	for (int timed = 1; timed >= 0; timed--) {
		struct gp_account a;
		struct gp_sampling s;

		gp_account__begin(&a, 0);
		for (size_t i = 0; i < sizeof(log) / sizeof(log[0]); i++) {
			const double *l = log[i];
			struct gp_window w = { .n = l[0], .stray = l[1], .T = l[2], .on = l[3], .act = l[4],
					       .cpu_T = l[5], .gaps = l[8], .gap_s = l[9], .sleep_s = l[10],
					       .head = l[11], .busy = l[12], .head_s = l[13], .stray_calls = l[14] };

			if (timed) {
				w.span_n = l[15];
				w.span_from = l[16];
				w.span_to = l[17];
			}
			gp_account__window(&a, &w, l[6], l[7]);
		}
		gp_account__trim(&a, 3.03568247);
		gp_account__window(&a, &end, 2.94591176e-06, 4.63919776e-06);
		if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
			return;
		ASSERT_TRUE(s.lo <= truth, "the low end under the count");
		ASSERT_TRUE(s.unbounded && s.long_unseen && isinf(s.hi), "no upper end after a 3-s unseen part");
		est[timed] = s.estimate;
		/* seen by no probe: the part to its exit less the span its strays were timed over
		 * (0.73-3.03 s), all of it when they were not timed */
		ASSERT_TRUE(fabs(s.dark_s - (timed ? 3.03568247 - (3.02571096 - 0.733727037) : 3.03568247)) < 1e-6,
			    "the seconds seen by no probe");
	}
	printf("#   estimate %.3fx the count with the strays timed, %.3fx without\n", est[1] / truth, est[0] / truth);
	ASSERT_TRUE(fabs(est[1] / truth - 1) <= 0.1, "the estimate within 10 % of the count, the strays timed");
}

/*
 * A process stalled in its first window (rate_app under the test hook's 3-s uprobe_multi
 * attach, as logged): its exact periods ran 200/s, then 1,057 calls in a 17-ms one (a
 * catch-up: one 50-ms gap it slept through, then calls back to back, 2.9 ms on a CPU), and
 * the window after saw no call and no stray for 50 ms; its 3-s part to its exit ran 208 ms
 * of CPU time unseen (20,000/s, 100,000/s, 200/s). The window's rates are none, and no
 * sampled window had measured what a CPU second of it pays for: the part counted none and
 * the estimate was 0.01x the count (1,431 of 120,400). An exact period's calls per CPU
 * second are carried there (its last one's): 0.64x, still with no upper end, said dark.
 */
static void test_first_window_saw_none(void)
{
	static const double log[][18] = {
		{ 27, 3, 0.13090302, 0.13090302, 0.001791034, -1, 1.323086e-06, 3.006e-06, 26, 0.130846426, 0.130731877,
		  1, -1, 0.011607643, 0, 0, 0, 0 },
		{ 20, 0, 0.10257332, 0.10257332, 0.001655793, 0.00050337, 1.323086e-06, 3.006e-06, 20, 0.099203156, 0.099147363,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 21, 0, 0.101543781, 0.101543781, 0.001471647, 0.000489606, 1.323086e-06, 3.006e-06, 21, 0.10497789, 0.104906243,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 21, 0, 0.107993131, 0.107993131, 0.001297025, 0.000508689, 1.323086e-06, 3.006e-06, 21, 0.107789018, 0.107691993,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 20, 0, 0.10391367, 0.10391367, 0.001662553, 0.00082866, 1.323086e-06, 3.006e-06, 20, 0.097226301, 0.097163748,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 18, 0, 0.103778749, 0.103778749, 0.001627261, 0.000834577, 1.323086e-06, 3.006e-06, 18, 0.090012891, 0.08998563,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 24, 0, 0.102052546, 0.102052546, 0.000392277, 0.000200568, 1.323086e-06, 3.006e-06, 24, 0.120225618, 0.120133341,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 20, 0, 0.102201828, 0.102201828, 0.00176097, 0.000896938, 1.323086e-06, 3.006e-06, 20, 0.099773928, 0.099712958,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 14, 0, 0.103438074, 0.103438074, 0.0014, 0.00039071, 1.323086e-06, 3.006e-06, 14, 0.070360574, 0.070360574,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 17, 0, 0.103859469, 0.103859469, 0.000430044, 0.000222088, 1.323086e-06, 3.006e-06, 17, 0.096494464, 0.09636442,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 1057, 0, 0.016974602, 0.016974602, 0.002913538, 0.002846686, 2.49809073e-06, 4.18100473e-06, 1057, 0.052874042, 0.050060504,
		  0, -1, -1, 0, 0, 0, 0 },
		{ 0, 172, 3.04042085, 0.050119341, 0, 0.208720338, 2.49809073e-06, 4.18100473e-06, 0, 0, 0,
		  0, -1, -1, 172, 0, 0, 0 },
	};
	struct gp_window end = { .T = 1e-9, .on = 1e-9, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };
	struct gp_account a;
	struct gp_sampling s;
	double truth = 120400;
	size_t n = sizeof(log) / sizeof(log[0]);

	gp_account__begin(&a, 0);
	for (size_t i = 0; i < n; i++) {
		const double *l = log[i];
		struct gp_window w = { .n = l[0], .stray = l[1], .T = l[2], .on = l[3], .act = l[4], .cpu_T = l[5],
				       .gaps = l[8], .gap_s = l[9], .sleep_s = l[10], .head = l[11], .busy = l[12],
				       .head_s = l[13], .stray_calls = l[14], .span_n = l[15], .span_from = l[16],
				       .span_to = l[17] };

		gp_account__window(&a, &w, l[6], l[7]);
	}
	gp_account__trim(&a, 2.99030151);
	/* its account's end (budget.c, end_account): an empty instant, every call seen */
	gp_account__window(&a, &end, log[n - 1][6], log[n - 1][7]);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled"))
		return;
	printf("#   estimate %.3fx the count, [%.2fx, %s], %.2f s seen by no probe\n", s.estimate / truth, s.lo / truth,
	       isinf(s.hi) ? "none" : "bounded", s.dark_s);
	ASSERT_TRUE(s.lo <= truth && truth <= s.hi, "the truth within the interval");
	ASSERT_TRUE(s.unbounded && s.long_unseen, "no upper end after a 3-s unseen part");
	ASSERT_TRUE(s.estimate >= truth / 2 && s.estimate <= 2 * truth, "the estimate within 2x of the count");
}

/* A part no window saw, with calls counted in it: a process armed for itself late, whose
 * unseen gap before its arm took the whole of its seen time (src/core/budget.c,
 * fresh_seen). Under QEMU's TCG such a job's 28 counted calls of 200 were printed as every
 * call seen; now sampled, with no upper end and its seconds dark. */
static void test_part_with_no_window_is_unbounded(void)
{
	struct gp_account a;
	struct gp_sampling s;
	struct gp_window w = { .n = 29, .T = 0.065, .on = 0, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };

	gp_account__begin(&a, 0);
	gp_account__window(&a, &w, COST, COST);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled: not every call seen"))
		return;
	ASSERT_TRUE(s.unbounded && isinf(s.hi), "no upper end");
	ASSERT_TRUE(s.lo <= 29 && s.estimate >= 29 && s.observed == 29, "the calls counted, and the low end at them");
	ASSERT_TRUE(fabs(s.dark_s - 0.065) < 1e-9, "its 65 ms dark");
	ASSERT_TRUE(a.seconds > 0.064 && gp_account__overhead(&a) > 0, "its time and its probes' counted");
}

/* The same with a rate in its counted hits (90 one-thread gaps in 5 ms): 6.1 x86-64 under QEMU's
 * TCG, test_short_jobs_armed_slowly at b5fa04c, job 4 of 200 launches: 91 counted in a
 * 12.8-ms dark part, read as 91 (0.46x). Now the geometric mean of those counted and of their
 * rate over the part (230): 145, still with no upper end, the low end at the 91. A dark part
 * with no hit (a quiet gap, budget.c's quiet_gap) stays none. */
static void test_dark_part_estimated_from_its_hits_rate(void)
{
	struct gp_account a;
	struct gp_sampling s;
	struct gp_window w = { .n = 91, .gaps = 90, .gap_s = 0.005, .T = 0.0128, .on = 0, .act = -1, .cpu_T = -1,
			       .busy = -1, .head_s = -1 };
	struct gp_window q = { .T = 0.2, .on = 0, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };

	gp_account__begin(&a, 0);
	gp_account__window(&a, &w, COST, COST);
	if (!ASSERT_TRUE(gp_account__sampling(&a, &s), "sampled: not every call seen"))
		return;
	printf("#   dark part: %.1f in [%.0f, %s] of 200 (91 counted)\n", s.estimate, s.lo, isinf(s.hi) ? "none" : "bounded");
	ASSERT_TRUE(s.unbounded && isinf(s.hi) && s.lo <= 91, "no upper end, the low end at the calls counted");
	ASSERT_TRUE(fabs(s.estimate - sqrt(91 * 90 / 0.005 * 0.0128)) < 1e-6, "the geometric mean of 91 and 230");
	ASSERT_TRUE(s.estimate >= 100 && s.estimate <= 400, "within 2x of the job's 200");
	gp_account__begin(&a, 0);
	gp_account__window(&a, &q, COST, COST);
	gp_account__sampling(&a, &s);
	ASSERT_TRUE(s.estimate == 0 && s.unbounded, "a quiet dark part: none, no upper end");
}

/*
 * A short job whose cuInit came after the period's end but before its accounting (6.1 x86-64
 * under QEMU's TCG, test_daemon_default_budget_short_jobs_exact, its -v log: acct 455): its
 * first part is a nanosecond with no window (born_seen), then two exact periods saw its 141
 * hits. That nanosecond was taken as dark: the job was "sampled", its 140 launches went under
 * the unbounded family, and out of its exact allowance its rate took the budget to sampling.
 */
static void test_born_after_the_period_is_not_dark(void)
{
	static const double run[][15] = {
		{ 0, 1, 1e-09, 0, 0, -1, 0.000132636634, 0.000163031828, 0, 0, 0, 0, -1, -1, 0 },
		{ 65, 2, 0.01511198, 0.01511198, 0.00306935, 0.011774915, 0.000132636634, 0.000163031828, 64, 0.00296935,
		  0, 65, -1, -1, 0 },
		{ 76, 0, 0.12760431, 0.12760431, 0.00729311, 0.02020632, 0.000132636634, 0.000163031828, 76, 0.00729311,
		  0, 76, -1, -1, 0 },
	};
	struct gp_account a;
	struct gp_sampling s;
	struct gp_window w = { .n = 3, .T = 1e-9, .on = 0, .act = -1, .cpu_T = -1, .busy = -1, .head_s = -1 };

	replay15(&a, run, sizeof(run) / sizeof(run[0]), false);
	gp_account__trim(&a, 0);
	ASSERT_TRUE(!a.sampled && !a.unbounded && a.dark_s == 0, "not sampled, nothing dark");
	ASSERT_TRUE(!gp_account__sampling(&a, &s), "every call seen: no estimate");
	ASSERT_TRUE(a.obs == 141, "its 141 hits");
	/* hits made since the end (the slot read after it) are counted, not taken as a rate */
	gp_account__begin(&a, 0);
	gp_account__window(&a, &w, COST, COST);
	ASSERT_TRUE(!a.sampled && a.obs == 3 && a.est == 3 && !a.have_rate, "its 3 hits seen, no rate from a nanosecond");
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
	RUN_TEST(test_rare_count_seen_in_no_window);
	RUN_TEST(test_fraction_policy);
	RUN_TEST(test_strays_cost);
	RUN_TEST(test_hit_dearer_than_calibrated);
	RUN_TEST(test_bound_by_its_cpu);
	RUN_TEST(test_paced_caught_up_in_the_window);
	RUN_TEST(test_cannot_say_keeps_the_geometric_mean);
	RUN_TEST(test_strays_are_calls);
	RUN_TEST(test_exit_part_by_its_cpu);
	RUN_TEST(test_simulated_coverage);
	RUN_TEST(test_h200_sync_row);
	RUN_TEST(test_paced_by_a_busy_wait);
	RUN_TEST(test_chance_agreement_is_not_a_clock);
	RUN_TEST(test_h200_bursts);
	RUN_TEST(test_h200_bursts_all_windows_between);
	RUN_TEST(test_h200_threads_share_their_probes);
	RUN_TEST(test_h200_paced_windows_agree_within_a_hit);
	RUN_TEST(test_catch_up_window_is_no_cpu_rate);
	RUN_TEST(test_catch_up_after_sleeping_windows);
	RUN_TEST(test_exit_ends_the_last_part);
	RUN_TEST(test_unseen_part_longer_than_a_period);
	RUN_TEST(test_slow_attach_strays_timed);
	RUN_TEST(test_first_window_saw_none);
	RUN_TEST(test_part_with_no_window_is_unbounded);
	RUN_TEST(test_born_after_the_period_is_not_dark);
	RUN_TEST(test_dark_part_estimated_from_its_hits_rate);
	return unit_done();
}
