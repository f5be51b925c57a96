/* SPDX-License-Identifier: BSD-3-Clause */
/* NVML's per-process utilization over an interval (src/core/nvml.c, gp_nvml__weighted):
 * samples weighted by the time each covers, against means computed here by hand; and the
 * loader against a library that is not there (one state, no thread, every call safe). */
#include <math.h>
#include <stdint.h>
#include "nvml.h"
#include "unit.h"

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

static void test_weighted(void)
{
	/* since 1000 us: 90 % for 100 us, then 10 % for 300 us -> (90*100 + 10*300) / 400 = 30 */
	uint64_t ts[] = { 1100, 1400 };
	unsigned int u[] = { 90, 10 };
	/* out of order: the same samples */
	uint64_t ts2[] = { 1400, 1100 };
	unsigned int u2[] = { 10, 90 };
	/* a sample covering more than the period is capped at it: 50 over 200 (capped), 100 over 100 */
	uint64_t ts3[] = { 2000, 2100 };
	unsigned int u3[] = { 50, 100 };
	/* timestamps not after since (another clock): the plain mean */
	uint64_t ts4[] = { 10, 20 };
	unsigned int u4[] = { 40, 60 };

	ASSERT_TRUE(near(gp_nvml__weighted(ts, u, 2, 1000, 0), 30), "time-weighted mean");
	ASSERT_TRUE(near(gp_nvml__weighted(ts2, u2, 2, 1000, 0), 30), "order does not matter");
	ASSERT_TRUE(near(gp_nvml__weighted(ts3, u3, 2, 1000, 200), (50.0 * 200 + 100.0 * 100) / 300), "capped weight");
	ASSERT_TRUE(near(gp_nvml__weighted(ts4, u4, 2, 1000, 0), 50), "plain mean for old stamps");
	ASSERT_TRUE(gp_nvml__weighted(ts, u, 0, 1000, 0) < 0, "no sample: -1, not 0");
}

static void test_missing_library(void)
{
	struct gp_nvml *n = gp_nvml__start(&(struct gp_nvml_opts){ .lib = "libgpuprobe-no-such-nvml.so.1", .period_s = 1,
								   .quiet = true });
	struct gp_nvml_snap s;

	if (!ASSERT_TRUE(n != NULL, "an object that says why"))
		return;
	gp_nvml__wait_round(n, 0.1);
	if (ASSERT_EQ(gp_nvml__snapshot(n, &s), 0, "snapshot")) {
		ASSERT_EQ(s.state, GP_NVML_NO_LIBRARY, "state");
		ASSERT_STR_CONTAINS(s.why, "libgpuprobe-no-such-nvml.so.1", "why names the library");
		ASSERT_EQ(s.nr_gpus, 0, "no GPU");
		ASSERT_EQ(s.rounds, 0, "no round");
		gp_nvml__snap_free(&s);
	}
	gp_nvml__free(n);
	gp_nvml__free(NULL);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_weighted);
	RUN_TEST(test_missing_library);
	return unit_done();
}
