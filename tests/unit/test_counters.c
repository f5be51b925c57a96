// SPDX-License-Identifier: BSD-3-Clause
/* The counter set (src/core/counters.c): sums per series within a tick, changes of running
 * totals, a last row for series that stop, quiet rows, order, bounds and copied names. */
#include <stdio.h>
#include <string.h>
#include "core/counters.h"
#include "unit.h"

static void add(struct gp_counters *cs, uint32_t pid, const char *track, const char *series, double v,
		unsigned int flags)
{
	struct gp_counter c = { pid, track, series, v, flags };

	gp_counters__add(cs, &c);
}

/* The row of (pid, track, series) in rows, or NULL. */
static const struct gp_counter_row *find(const struct gp_counter_row *rows, size_t n, uint32_t pid,
					 const char *track, const char *series)
{
	for (size_t i = 0; i < n; i++)
		if (rows[i].pid == pid && !strcmp(rows[i].track, track) && !strcmp(rows[i].series, series))
			return &rows[i];
	return NULL;
}

static void test_totals(void)
{
	struct gp_counters *cs = gp_counters__new(16);
	const struct gp_counter_row *rows, *r;
	size_t n;

	if (!ASSERT_TRUE(cs, "new"))
		goto cleanup;
	gp_counters__begin(cs, 1000);
	add(cs, 7, "launches", "kernels", 5, GP_CTR_TOTAL);
	add(cs, 7, "launches", "kernels", 5, GP_CTR_TOTAL); /* two records of one process add up */
	n = gp_counters__end(cs, &rows);
	r = find(rows, n, 7, "launches", "kernels");
	if (!ASSERT_EQ(n, 1, "rows") || !ASSERT_TRUE(r, "the row") || !ASSERT_EQ(r->value, 10, "summed") ||
	    !ASSERT_EQ(r->delta, 10, "first tick: the total so far") || !ASSERT_TRUE(r->first, "first") ||
	    !ASSERT_FALSE(r->quiet, "not quiet"))
		goto cleanup;
	if (!ASSERT_EQ(gp_counters__prev_ns(cs), 1000, "first tick: prev is now"))
		goto cleanup;
	gp_counters__begin(cs, 2000);
	add(cs, 7, "launches", "kernels", 25, GP_CTR_TOTAL);
	n = gp_counters__end(cs, &rows);
	r = find(rows, n, 7, "launches", "kernels");
	if (!ASSERT_TRUE(r, "row 2") || !ASSERT_EQ(r->delta, 15, "the change") || !ASSERT_FALSE(r->first, "not first") ||
	    !ASSERT_EQ(gp_counters__prev_ns(cs), 1000, "prev") || !ASSERT_EQ(gp_counters__now_ns(cs), 2000, "now"))
		goto cleanup;
	gp_counters__begin(cs, 3000);
	add(cs, 7, "launches", "kernels", 20, GP_CTR_TOTAL); /* a record was forgotten */
	n = gp_counters__end(cs, &rows);
	r = find(rows, n, 7, "launches", "kernels");
	if (!ASSERT_TRUE(r, "row 3") || !ASSERT_EQ(r->delta, 0, "a total that went down: no change"))
		goto cleanup;
	gp_counters__begin(cs, 4000);
	add(cs, 7, "launches", "kernels", 20, GP_CTR_TOTAL);
	n = gp_counters__end(cs, &rows);
	r = find(rows, n, 7, "launches", "kernels");
	if (!ASSERT_TRUE(r, "row 4") || !ASSERT_EQ(r->delta, 0, "no change") || !ASSERT_TRUE(r->quiet, "0 after 0: quiet"))
		goto cleanup;
	gp_counters__begin(cs, 5000); /* the process was forgotten */
	n = gp_counters__end(cs, &rows);
	r = find(rows, n, 7, "launches", "kernels");
	if (!ASSERT_EQ(n, 1, "its last row") || !ASSERT_TRUE(r && r->gone, "gone") ||
	    !ASSERT_EQ(r->value, 0, "value 0") || !ASSERT_EQ(r->delta, 0, "delta 0"))
		goto cleanup;
	gp_counters__begin(cs, 6000);
	n = gp_counters__end(cs, &rows);
	if (!ASSERT_EQ(n, 0, "then nothing"))
		goto cleanup;
	gp_counters__begin(cs, 7000); /* the same name again: a new series */
	add(cs, 7, "launches", "kernels", 3, GP_CTR_TOTAL);
	n = gp_counters__end(cs, &rows);
	r = find(rows, n, 7, "launches", "kernels");
	if (!ASSERT_TRUE(r && r->first, "new again") || !ASSERT_EQ(r->delta, 3, "its total"))
		goto cleanup;
cleanup:
	gp_counters__free(cs);
}

static void test_gauges_and_quiet(void)
{
	struct gp_counters *cs = gp_counters__new(16);
	const struct gp_counter_row *rows, *r;
	static const double v[] = { 100, 100, 50, 0, 0 };
	static const bool quiet[] = { false, true, false, false, true };
	static const double delta[] = { 0, 0, -50, -50, 0 };
	size_t n;

	if (!ASSERT_TRUE(cs, "new"))
		goto cleanup;
	for (int i = 0; i < 5; i++) {
		gp_counters__begin(cs, (uint64_t)i * 100);
		add(cs, 1, "outstanding bytes", "device", v[i], 0);
		n = gp_counters__end(cs, &rows);
		r = find(rows, n, 1, "outstanding bytes", "device");
		if (!ASSERT_TRUE(r, "row") || !ASSERT_EQ(r->value, v[i], "value") || !ASSERT_EQ(r->delta, delta[i], "its change") ||
		    !ASSERT_EQ(r->quiet, quiet[i], "quiet when unchanged"))
			goto cleanup;
	}
	gp_counters__begin(cs, 600);
	n = gp_counters__end(cs, &rows);
	if (!ASSERT_EQ(n, 1, "the last row") || !ASSERT_TRUE(rows[0].gone && rows[0].quiet, "0 after 0: gone, quiet"))
		goto cleanup;
cleanup:
	gp_counters__free(cs);
}

static void test_order_bounds_copies(void)
{
	struct gp_counters *cs = gp_counters__new(4);
	const struct gp_counter_row *rows;
	char name[32];
	size_t n;

	if (!ASSERT_TRUE(cs, "new"))
		goto cleanup;
	gp_counters__begin(cs, 1);
	snprintf(name, sizeof(name), "H2D gpu1");
	add(cs, 9, "copy bytes", name, 1, GP_CTR_TOTAL);
	snprintf(name, sizeof(name), "H2D gpu0"); /* the set keeps its own copy */
	add(cs, 9, "copy bytes", name, 2, GP_CTR_TOTAL);
	add(cs, 3, "outstanding bytes", "device", 4, 0);
	add(cs, 9, "copy bytes", "D2H gpu0", 8, GP_CTR_TOTAL);
	add(cs, 9, "launches", "kernels", 16, GP_CTR_TOTAL); /* a fifth series: over the bound */
	add(cs, 9, "copy bytes", NULL, 1, GP_CTR_TOTAL);     /* no name: ignored */
	n = gp_counters__end(cs, &rows);
	if (!ASSERT_EQ(n, 4, "rows") || !ASSERT_EQ(gp_counters__dropped(cs), 1, "one dropped"))
		goto cleanup;
	if (!ASSERT_EQ(rows[0].pid, 3, "by pid first") || !ASSERT_STR_EQ(rows[1].series, "D2H gpu0", "then series") ||
	    !ASSERT_STR_EQ(rows[2].series, "H2D gpu0", "copied") || !ASSERT_STR_EQ(rows[3].series, "H2D gpu1", "sorted") ||
	    !ASSERT_EQ(rows[2].value, 2, "its value"))
		goto cleanup;
	/* a stopped series frees its place */
	gp_counters__begin(cs, 2);
	add(cs, 3, "outstanding bytes", "device", 4, 0);
	n = gp_counters__end(cs, &rows);
	if (!ASSERT_EQ(n, 4, "three gone rows and one live"))
		goto cleanup;
	gp_counters__begin(cs, 3);
	add(cs, 9, "launches", "kernels", 16, GP_CTR_TOTAL);
	n = gp_counters__end(cs, &rows);
	if (!ASSERT_EQ(gp_counters__dropped(cs), 1, "room again") || !ASSERT_EQ(n, 2, "two rows"))
		goto cleanup;
cleanup:
	gp_counters__free(cs);
	gp_counters__free(NULL);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_totals);
	RUN_TEST(test_gauges_and_quiet);
	RUN_TEST(test_order_bounds_copies);
	return unit_done();
}
