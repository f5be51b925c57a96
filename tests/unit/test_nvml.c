/* SPDX-License-Identifier: BSD-3-Clause */
/* NVML's per-process utilization over an interval (src/core/nvml.c, gp_nvml__weighted):
 * samples weighted by the time each covers, against means computed here by hand; and the
 * loader against a library that is not there (one state, no thread, every call safe). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "core/nvml.h"
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

/* The loader and its thread against the stand-in (tests/fakenvml), in this process: a
 * process list past the first buffer, samples, MIG, an XID, a failing call. */
static void test_stand_in(void)
{
	const char *lib = ".output/fakenvml/libnvidia-ml.so.1";
	char path[] = "/tmp/gp-unit-nvml-XXXXXX";
	struct gp_nvml *n = NULL;
	struct gp_nvml_snap s = { 0 };
	FILE *f;
	int fd;

	if (access(lib, R_OK))
		UNIT_SKIP("no .output/fakenvml/libnvidia-ml.so.1 (run from the repository's root after make)");
	fd = mkstemp(path);
	if (!ASSERT_TRUE(fd >= 0, "script file") || !ASSERT_TRUE((f = fdopen(fd, "w")) != NULL, "fdopen"))
		return;
	fprintf(f, "gpu 0 util=80 power=300000\ngpu 1 mig=1\nfail nvmlDeviceGetTemperature 3\nxid 0 94 0\n");
	for (int i = 0; i < 40; i++)
		fprintf(f, "proc %d %d mem=%d%s\n", i % 2, 1000 + i, (i + 1) * 4096, i % 2 ? "" : " sm=50 memutil=7");
	fclose(f);
	setenv("FAKENVML_SCRIPT", path, 1);
	n = gp_nvml__start(&(struct gp_nvml_opts){ .lib = lib, .period_s = 0.1 });
	if (!ASSERT_TRUE(n != NULL, "started"))
		goto cleanup;
	for (int i = 0; i < 100; i++) { /* two rounds and the XID */
		gp_nvml__snap_free(&s);
		if (!ASSERT_EQ(gp_nvml__snapshot(n, &s), 0, "snapshot"))
			goto cleanup;
		if (s.rounds >= 2 && s.xid_seq)
			break;
		usleep(20000);
	}
	ASSERT_EQ(s.state, GP_NVML_LOADED, "loaded");
	ASSERT_EQ(s.nr_gpus, 2, "GPUs");
	ASSERT_EQ(s.nr_procs, 40, "every process of both lists (grown past 4)");
	ASSERT_EQ(s.gpus[0].util_gpu, 80, "utilization");
	ASSERT_TRUE(s.gpus[0].power_w == 300, "power in watts");
	ASSERT_FALSE(s.gpus[0].have & GP_NVH_TEMP, "a failing call leaves its figure out");
	ASSERT_TRUE(s.fn_errors[GP_NVML_FN_TEMP] >= 2, "and is counted");
	ASSERT_TRUE(s.gpus[1].proc_util_unavailable != NULL, "MIG: unavailable");
	for (size_t i = 0; i < s.nr_procs; i++) {
		const struct gp_nvml_proc *p = &s.procs[i];
		unsigned int k = p->pid - 1000;

		ASSERT_EQ(p->gpu, k % 2, "its GPU");
		ASSERT_EQ(p->mem_bytes, (k + 1) * 4096, "its memory");
		ASSERT_EQ(p->util_known, k % 2 == 0, "utilization known off MIG only");
		if (p->util_known)
			ASSERT_TRUE(p->sm_util == 50 && p->mem_util == 7, "its utilization");
	}
	ASSERT_EQ(s.xid_seq, 1, "one XID");
	ASSERT_EQ(s.nr_xids, 1, "kept");
	if (s.nr_xids)
		ASSERT_EQ(s.xids[0].code, 94, "its code");
	ASSERT_EQ(s.gpus[0].xid_total, 1, "counted on GPU 0");
cleanup:
	gp_nvml__snap_free(&s);
	gp_nvml__free(n);
	unlink(path);
	unsetenv("FAKENVML_SCRIPT");
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_weighted);
	RUN_TEST(test_missing_library);
	RUN_TEST(test_stand_in);
	return unit_done();
}
