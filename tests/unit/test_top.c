// SPDX-License-Identifier: BSD-3-Clause
/* gpuprobe top's view without a terminal (src/cli/top_view.c): frames from counter rows
 * (rates over the tick, per-process sums, copies per GPU and direction), sorting, and the
 * layout in 80x24 (every line fits, the selected process's detail, scrolling) and --batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/counters.h"
#include "cli/top_view.h"
#include "unit.h"

static void add(struct gp_counters *cs, uint32_t pid, const char *track, const char *series, double v,
		unsigned int flags)
{
	gp_counters__add(cs, &(struct gp_counter){ pid, track, series, v, flags });
}

/* Two ticks one second apart: process 100 launches and allocates, 200 copies. */
static size_t two_ticks(struct gp_counters *cs, const struct gp_counter_row **rows)
{
	for (int t = 0; t < 2; t++) {
		gp_counters__begin(cs, (uint64_t)(t + 1) * 1000000000ULL);
		add(cs, 100, GP_TRACK_LAUNCHES, "kernels", t ? 1500 : 500, GP_CTR_TOTAL);
		add(cs, 100, GP_TRACK_LAUNCHES, "graphs", t ? 20 : 10, GP_CTR_TOTAL);
		add(cs, 100, GP_TRACK_KERNELS, "gemm", t ? 1200 : 400, GP_CTR_TOTAL | GP_CTR_DETAIL);
		add(cs, 100, GP_TRACK_KERNELS, "relu", t ? 300 : 100, GP_CTR_TOTAL | GP_CTR_DETAIL);
		add(cs, 100, GP_TRACK_MEMORY, "device", t ? 3 << 20 : 1 << 20, 0);
		add(cs, 100, GP_TRACK_MEMORY, "host_pinned", 1 << 20, 0);
		add(cs, 100, TOP_TRACK_HITS, "all", t ? 4000 : 1000, GP_CTR_TOTAL);
		add(cs, 200, GP_TRACK_COPIES, "H2D gpu1", t ? 3e9 : 1e9, GP_CTR_TOTAL);
		add(cs, 200, GP_TRACK_COPIES, "H2D gpu0", t ? 5e9 : 0, GP_CTR_TOTAL);
		add(cs, 200, GP_TRACK_COPIES, "D2H gpu0", t ? 1e9 : 0, GP_CTR_TOTAL);
		add(cs, 200, GP_TRACK_COPIES, "H2H", 4096, GP_CTR_TOTAL);
		add(cs, 200, TOP_TRACK_HITS, "all", 10, GP_CTR_TOTAL);
		/* exited: what it held at its exit, for live views only */
		add(cs, 200, GP_TRACK_MEMORY, "device at exit", 5 << 20, GP_CTR_DETAIL);
		if (!t)
			gp_counters__end(cs, rows);
	}
	return gp_counters__end(cs, rows);
}

static const struct gp_snap_pid pids[] = {
	{ .pid = 200, .comm = "copier", .exited = true },
	{ .pid = 100, .comm = "trainer" },
};

static void test_frame(void)
{
	struct gp_counters *cs = gp_counters__new(64);
	struct top_frame f = { 0 };
	const struct gp_counter_row *rows;
	const struct top_proc *p, *q;
	size_t n;

	if (!ASSERT_TRUE(cs, "counters"))
		goto cleanup;
	n = two_ticks(cs, &rows);
	if (!ASSERT_EQ(top_frame__build(&f, rows, n, pids, 2, 1.0, 1e-6), 0, "build") ||
	    !ASSERT_EQ(f.nr_procs, 2, "two processes"))
		goto cleanup;
	p = &f.procs[0];
	q = &f.procs[1];
	if (!ASSERT_EQ(p->pid, 100, "by pid") || !ASSERT_STR_EQ(p->comm, "trainer", "named") || !ASSERT_FALSE(p->exited, "live") ||
	    !ASSERT_EQ(p->launch_rate, 1000, "launches/s: kernel launches, as --cudatrace counts them") ||
	    !ASSERT_EQ(p->launches, 1500, "total") || !ASSERT_EQ(p->graph_rate, 10, "graph launches/s apart") ||
	    !ASSERT_EQ(p->graph_launches, 20, "graph launches") || !ASSERT_FALSE(p->memory_at_exit, "live memory") ||
	    !ASSERT_EQ(p->memory, 4 << 20, "every kind") || !ASSERT_EQ(p->growth, 2 << 20, "growth/s") ||
	    !ASSERT_EQ(p->hits, 4000, "hits") || !ASSERT_EQ(p->probe_pct * 1000, 300, "3000 hits/s x 1 us = 0.3%") ||
	    !ASSERT_FALSE(p->has_copies, "no copies"))
		goto cleanup;
	if (!ASSERT_EQ(p->nr_kernels, 2, "kernels") || !ASSERT_STR_EQ(p->kernels[0].name, "gemm", "busiest first") ||
	    !ASSERT_EQ(p->kernels[0].rate, 800, "its rate") || !ASSERT_EQ(p->kernels[1].total, 300, "relu's total"))
		goto cleanup;
	if (!ASSERT_TRUE(q->exited, "exited") || !ASSERT_EQ(q->h2d, 7e9, "H2D over both GPUs") ||
	    !ASSERT_EQ(q->d2h, 1e9, "D2H") || !ASSERT_EQ(q->nr_copies, 4, "copies") ||
	    !ASSERT_TRUE(q->has_memory, "its memory at exit kept") || !ASSERT_EQ(q->memory, 5 << 20, "held at exit") ||
	    !ASSERT_TRUE(q->memory_at_exit, "said so") || !ASSERT_EQ(q->growth, 0, "no growth after its exit") ||
	    !ASSERT_STR_EQ(q->copies[0].dir, "H2D", "gpu0 H2D first") || !ASSERT_EQ(q->copies[0].gpu, 0, "gpu0") ||
	    !ASSERT_STR_EQ(q->copies[1].dir, "D2H", "then D2H") || !ASSERT_EQ(q->copies[2].gpu, 1, "then gpu1") ||
	    !ASSERT_EQ(q->copies[3].gpu, -1, "host last") || !ASSERT_EQ(q->launch_rate, 0, "no launches"))
		goto cleanup;
	if (!ASSERT_EQ(f.hit_rate, 3000, "hits/s of every process"))
		goto cleanup;
	top_frame__sort(&f, TOP_H2D, false);
	if (!ASSERT_EQ(f.procs[0].pid, 200, "by H2D"))
		goto cleanup;
	top_frame__sort(&f, TOP_H2D, true);
	if (!ASSERT_EQ(f.procs[0].pid, 100, "reversed"))
		goto cleanup;
	top_frame__sort(&f, TOP_COMM, false);
	if (!ASSERT_STR_EQ(f.procs[0].comm, "copier", "by name"))
		goto cleanup;
cleanup:
	top_frame__clear(&f);
	gp_counters__free(cs);
}

static bool has(const struct top_line *l, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strstr(l[i].text, s))
			return true;
	return false;
}

static void test_layout_80x24(void)
{
	struct gp_counters *cs = gp_counters__new(4096);
	struct top_frame f = { .cost = 1e-6 };
	const struct gp_counter_row *rows;
	static struct top_line lines[64];
	char name[96];
	size_t n, k;

	if (!ASSERT_TRUE(cs, "counters"))
		goto cleanup;
	/* 30 processes, one with long kernel names */
	for (int t = 0; t < 2; t++) {
		gp_counters__begin(cs, (uint64_t)(t + 1) * 1000000000ULL);
		for (uint32_t pid = 1000; pid < 1030; pid++) {
			add(cs, pid, GP_TRACK_LAUNCHES, "kernels", t * (pid - 999) * 100.0, GP_CTR_TOTAL);
			add(cs, pid, TOP_TRACK_HITS, "all", 0, GP_CTR_TOTAL);
		}
		for (int j = 0; j < 8; j++) {
			snprintf(name, sizeof(name), "kernel_%d_with_a_name_long_enough_to_be_cut_somewhere", j);
			add(cs, 1029, GP_TRACK_KERNELS, name, t * 10.0 * (j + 1), GP_CTR_TOTAL | GP_CTR_DETAIL);
		}
		add(cs, 1029, GP_TRACK_COPIES, "H2D gpu0", t * 52e9, GP_CTR_TOTAL);
		n = gp_counters__end(cs, &rows);
	}
	snprintf(f.who, sizeof(f.who), "every CUDA process");
	snprintf(f.drops, sizeof(f.drops), "none");
	if (!ASSERT_EQ(top_frame__build(&f, rows, n, NULL, 0, 1.0, 1e-6), 0, "build"))
		goto cleanup;
	top_frame__sort(&f, TOP_LAUNCHES, false);
	k = top__layout(&f, 80, 24, TOP_LAUNCHES, false, 0, lines, 64);
	for (size_t i = 0; getenv("TOP_SHOW") && i < k; i++)
		printf("# %s\n", lines[i].text);
	if (!ASSERT_EQ(k, 24, "24 lines"))
		goto cleanup;
	for (size_t i = 0; i < k; i++)
		if (!ASSERT_TRUE(strlen(lines[i].text) <= 80, lines[i].text))
			goto cleanup;
	if (!ASSERT_STR_CONTAINS(lines[0].text, "30 processes", "title") ||
	    !ASSERT_STR_CONTAINS(lines[2].text, "LAUNCH/s", "the table's header") ||
	    !ASSERT_STR_CONTAINS(lines[3].text, "   1029 ", "busiest first") || !ASSERT_EQ(lines[3].attr, TOP_SELECTED, "selected") ||
	    !ASSERT_STR_CONTAINS(lines[3].text, "3.00k", "3000 launches/s") ||
	    !ASSERT_STR_CONTAINS(lines[3].text, "52.0 GB/s", "H2D/s") ||
	    !ASSERT_TRUE(has(lines, k, "PID 1029: 3000 launches"), "its detail") ||
	    !ASSERT_TRUE(has(lines, k, "kernel_7_with"), "its busiest kernel") ||
	    !ASSERT_TRUE(has(lines, k, "  gpu0      52.0 GB/s"), "its copies") ||
	    !ASSERT_STR_CONTAINS(lines[23].text, "q quit", "the keys last"))
		goto cleanup;
	/* a selection below the visible rows scrolls the table */
	k = top__layout(&f, 80, 24, TOP_LAUNCHES, false, 25, lines, 64);
	if (!ASSERT_TRUE(has(lines, k, "   1004 "), "the 26th row shows") || !ASSERT_FALSE(has(lines, k, "   1029 "), "the first does not"))
		goto cleanup;
	/* a wider terminal gets the busiest kernel of each process */
	k = top__layout(&f, 132, 24, TOP_LAUNCHES, false, 0, lines, 64);
	if (!ASSERT_STR_CONTAINS(lines[2].text, "TOP KERNEL", "wide header") ||
	    !ASSERT_STR_CONTAINS(lines[3].text, "kernel_7_with", "wide row"))
		goto cleanup;
	/* --batch: every process, each with its detail */
	k = top__layout(&f, 80, 0, TOP_LAUNCHES, false, 0, lines, 64);
	if (!ASSERT_EQ(k, 64, "fills what it is given") || !ASSERT_TRUE(has(lines, k, "   1000 "), "the last process") ||
	    !ASSERT_FALSE(has(lines, k, "q quit"), "data only: no keys"))
		goto cleanup;
	/* a long description of what is traced is shortened, never cut at the screen's edge */
	snprintf(f.who, sizeof(f.who), "PIDs 4242,4243,4244,4245,4246,4247 and their descendants");
	f.ended = true;
	k = top__layout(&f, 80, 24, TOP_LAUNCHES, false, 0, lines, 64);
	if (!ASSERT_TRUE(strlen(lines[0].text) <= 80, lines[0].text) || !ASSERT_STR_CONTAINS(lines[0].text, "ENDED", "ended") ||
	    !ASSERT_STR_CONTAINS(lines[0].text, "...", "shortened"))
		goto cleanup;
	f.ended = false;
	/* narrower than 80: PROBE%, then GROWTH/s go before COMM narrows below 10 */
	k = top__layout(&f, 60, 24, TOP_LAUNCHES, false, 0, lines, 64);
	for (size_t i = 0; i < k; i++)
		if (!ASSERT_TRUE(strlen(lines[i].text) <= 60, lines[i].text))
			goto cleanup;
	if (!ASSERT_STR_EQ(lines[2].text, "    PID S COMM        LAUNCH/s    MEMORY     H2D/s     D2H/s", "60: the columns") ||
	    !ASSERT_STR_CONTAINS(lines[3].text, "3.00k         - 52.0 GB/s", "60: the cells under them"))
		goto cleanup;
	/* a tiny terminal still gets the title and the keys */
	k = top__layout(&f, 40, 5, TOP_LAUNCHES, false, 0, lines, 64);
	if (!ASSERT_EQ(k, 5, "5 lines") || !ASSERT_STR_CONTAINS(lines[4].text, "q quit", "keys") ||
	    !ASSERT_TRUE(strlen(lines[0].text) <= 40, "cut to the width"))
		goto cleanup;
cleanup:
	top_frame__clear(&f);
	gp_counters__free(cs);
}

/* An exited process: S X, its row dimmed; a detail line too long for 80 columns wraps
 * between its parts; columns keep their places. */
static void test_exited_and_wrap(void)
{
	struct gp_counters *cs = gp_counters__new(64);
	struct top_frame f = { .cost = 1e-6 };
	const struct gp_counter_row *rows;
	static struct top_line lines[64];
	static const struct gp_snap_pid ps[] = {
		{ .pid = 4194303, .comm = "fifteen_chars_x", .exited = true },
		{ .pid = 7, .comm = "live" },
	};
	size_t n, k;

	if (!ASSERT_TRUE(cs, "counters"))
		goto cleanup;
	for (int t = 0; t < 2; t++) {
		gp_counters__begin(cs, (uint64_t)(t + 1) * 1000000000ULL);
		add(cs, 4194303, GP_TRACK_LAUNCHES, "kernels", 123456789, GP_CTR_TOTAL);
		add(cs, 4194303, GP_TRACK_LAUNCHES, "graphs", 98765432, GP_CTR_TOTAL);
		add(cs, 4194303, GP_TRACK_MEMORY, "device at exit", 40 << 20, GP_CTR_DETAIL);
		add(cs, 4194303, TOP_TRACK_HITS, "all", 987654321, GP_CTR_TOTAL);
		add(cs, 7, GP_TRACK_LAUNCHES, "kernels", t * 5.0, GP_CTR_TOTAL);
		n = gp_counters__end(cs, &rows);
	}
	if (!ASSERT_EQ(top_frame__build(&f, rows, n, ps, 2, 1.0, 1e-6), 0, "build"))
		goto cleanup;
	top_frame__sort(&f, TOP_PID, false);
	if (!ASSERT_EQ(f.procs[1].state, 'X', "exited: X"))
		goto cleanup;
	f.procs[0].state = 'S';
	k = top__layout(&f, 80, 0, TOP_PID, false, 0, lines, 64);
	for (size_t i = 0; getenv("TOP_SHOW") && i < k; i++)
		printf("# %s\n", lines[i].text);
	for (size_t i = 0; i < k; i++)
		if (!ASSERT_TRUE(strlen(lines[i].text) <= 80, lines[i].text))
			goto cleanup;
	if (!ASSERT_STR_CONTAINS(lines[2].text, "    PID S COMM ", "the header") ||
	    !ASSERT_STR_CONTAINS(lines[3].text, "      7 S live ", "a live row") ||
	    !ASSERT_STR_CONTAINS(lines[4].text, "4194303 X fifteen_chars_", "an exited row") ||
	    !ASSERT_EQ(lines[4].attr, TOP_EXITED, "dimmed") || !ASSERT_STR_CONTAINS(lines[4].text, "40.0 MiB", "held") ||
	    !ASSERT_EQ(strlen(lines[3].text), strlen(lines[4].text), "the columns in place") ||
	    !ASSERT_STR_EQ(lines[6].text, "PID 4194303 fifteen_chars_x (exited): 123456789 launches,",
			   "the detail's first line") ||
	    !ASSERT_STR_EQ(lines[7].text, "    98765432 graph launches, 40.0 MiB held at exit, 987654321 probe hits",
			   "wrapped between its parts, not cut"))
		goto cleanup;
	/* drops: which modes where that fits, how many in all where it does not */
	snprintf(f.drops, sizeof(f.drops), "memleak 123456, cudatrace 7890123, counter series 99999");
	f.dropped = 123456 + 7890123 + 99999;
	k = top__layout(&f, 80, 24, TOP_PID, false, 0, lines, 64);
	if (!ASSERT_STR_CONTAINS(lines[1].text, "; dropped: 8113578 in all", "the total at 80") ||
	    !ASSERT_TRUE(strlen(lines[1].text) <= 80, lines[1].text))
		goto cleanup;
	k = top__layout(&f, 160, 24, TOP_PID, false, 0, lines, 64);
	if (!ASSERT_STR_CONTAINS(lines[1].text, "; dropped: memleak 123456, cudatrace 7890123, counter series 99999",
				 "which, where it fits"))
		goto cleanup;
cleanup:
	top_frame__clear(&f);
	gp_counters__free(cs);
}

/* NVML shown: the SM% column (a process's samples summed over its GPUs; "-" where none,
 * MIG), a line per GPU, at most what leaves the table room at 80x24; every line fits. */
static void test_nvml_80x24(void)
{
	struct gp_counters *cs = gp_counters__new(4096);
	struct top_frame f = { .cost = 1e-6 };
	const struct gp_counter_row *rows;
	static struct top_line lines[64];
	struct gp_nvml_gpu gpus[8] = { 0 };
	struct gp_nvml_proc procs[3] = {
		{ .pid = 1000, .gpu = 0, .util_known = true, .sm_util = 30 },
		{ .pid = 1000, .gpu = 1, .util_known = true, .sm_util = 12.4 },
		{ .pid = 1001, .gpu = 2, .mem_known = true, .mem_bytes = 4096 }, /* MIG: no figure */
	};
	struct gp_nvml_snap s = { .state = GP_NVML_LOADED, .gpus = gpus, .nr_gpus = 8, .procs = procs, .nr_procs = 3 };
	const struct top_proc *p;
	size_t n = 0, k;
	char *hdr;

	if (!ASSERT_TRUE(cs, "counters"))
		goto cleanup;
	for (unsigned int i = 0; i < 8; i++)
		gpus[i] = (struct gp_nvml_gpu){ .index = i, .have = GP_NVH_UTIL | GP_NVH_THROTTLE, .util_gpu = 50 + i,
						.mig = i == 2, .throttle = 0x24 };
	for (int t = 0; t < 2; t++) {
		gp_counters__begin(cs, (uint64_t)(t + 1) * 1000000000ULL);
		for (uint32_t pid = 1000; pid < 1004; pid++)
			add(cs, pid, GP_TRACK_LAUNCHES, "kernels", t * 100.0, GP_CTR_TOTAL);
		n = gp_counters__end(cs, &rows);
	}
	snprintf(f.who, sizeof(f.who), "every CUDA process");
	snprintf(f.drops, sizeof(f.drops), "none");
	if (!ASSERT_EQ(top_frame__build(&f, rows, n, NULL, 0, 1.0, 1e-6), 0, "build") ||
	    !ASSERT_EQ(top_frame__nvml(&f, &s), 0, "nvml"))
		goto cleanup;
	top_frame__sort(&f, TOP_SM, false);
	p = &f.procs[0];
	if (!ASSERT_EQ(p->pid, 1000, "the busiest first") || !ASSERT_TRUE(p->sm_known, "known") ||
	    !ASSERT_EQ(p->sm, 42.4, "summed over its GPUs") || !ASSERT_EQ(p->nvml_gpus, 2, "two GPUs") ||
	    !ASSERT_TRUE(!f.procs[1].sm_known && f.procs[1].mig_gpu == 2, "1001: MIG, no figure") ||
	    !ASSERT_TRUE(f.procs[1].has_driver_memory, "its driver memory"))
		goto cleanup;
	k = top__layout(&f, 80, 24, TOP_SM, false, 0, lines, 64);
	for (size_t i = 0; getenv("TOP_SHOW") && i < k; i++)
		printf("# %s\n", lines[i].text);
	if (!ASSERT_EQ(k, 24, "24 lines"))
		goto cleanup;
	for (size_t i = 0; i < k; i++)
		if (!ASSERT_TRUE(strlen(lines[i].text) <= 80, lines[i].text))
			goto cleanup;
	hdr = lines[2 + 8].text; /* 2 title lines, 8 GPU lines at most: fewer here */
	for (size_t i = 0; i < k; i++)
		if (!strncmp(lines[i].text, "    PID", 7))
			hdr = lines[i].text;
	if (!ASSERT_STR_CONTAINS(hdr, "SM%", "the column") || !ASSERT_TRUE(!strstr(hdr, "PROBE%"), "PROBE% dropped at 80") ||
	    !ASSERT_TRUE(strstr(hdr, "LAUNCH/s") - strstr(hdr, "COMM") >= 11, "COMM 10 wide at least") ||
	    !ASSERT_TRUE(has(lines, k, "GPU2 (MIG: no per-process SM%)"), "MIG said") ||
	    !ASSERT_TRUE(has(lines, k, "throttle sw_power,sw_thermal"), "throttle reasons") ||
	    !ASSERT_TRUE(has(lines, k, "-  42%"), "1000's SM%"))
		goto cleanup;
	/* 80x16: 5 lines left to the table and the detail, the GPUs past the room counted */
	k = top__layout(&f, 80, 16, TOP_SM, false, 0, lines, 64);
	if (!ASSERT_EQ(k, 16, "16 lines") || !ASSERT_STR_CONTAINS(lines[8].text, "... and 2 more GPUs (top --batch", "counted") ||
	    !ASSERT_STR_CONTAINS(lines[9].text, "    PID S COMM", "the table next"))
		goto cleanup;
	k = top__layout(&f, 80, 0, TOP_SM, false, 0, lines, 64); /* --batch: every GPU */
	if (!ASSERT_TRUE(has(lines, k, "GPU7 util 57%"), "the last GPU in --batch") ||
	    !ASSERT_TRUE(has(lines, k, "SM % not available on MIG (GPU 2)"), "the detail says why"))
		goto cleanup;
	top_frame__nvml(&f, &(struct gp_nvml_snap){ .state = GP_NVML_NO_LIBRARY, .why = "cannot load it" });
	k = top__layout(&f, 80, 24, TOP_SM, false, 0, lines, 64);
	ASSERT_TRUE(has(lines, k, "NVML not used (no_library): cannot load it"), "why not");
cleanup:
	top_frame__clear(&f);
	gp_counters__free(cs);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_frame);
	RUN_TEST(test_layout_80x24);
	RUN_TEST(test_exited_and_wrap);
	RUN_TEST(test_nvml_80x24);
	return unit_done();
}
