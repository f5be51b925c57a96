/* SPDX-License-Identifier: BSD-3-Clause */
/* The budget's own report (src/out/budget_report.c): its text says over the budget wherever
 * the budget's own estimate of a process's time in the probes passed it, as its JSON does. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "out/budget_report.h"
#include "lib/sampling.h"
#include "unit.h"

static char *render(const struct gp_budget_stats *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	gp_budget__text(f, s, false);
	fclose(f);
	return buf;
}

/* A process that spent 0.6 s of its 4.1 s in the probes (a slow attach's strays) under a
 * 1 % budget, and one within it: the first is said over, the second not. */
static void test_text_says_over(void)
{
	struct gp_budget_proc procs[2] = { 0 };
	struct gp_budget_stats s = { .pct = 1, .target = 0.0035, .mechanism = "uprobe_events", .fraction = 1,
				     .procs = procs, .nr_procs = 2 };
	char *t;

	procs[0].pid = 101;
	procs[0].acc.probe_s = 0.6;
	procs[0].acc.seconds = 4.1;
	procs[0].acc.obs = 1000;
	procs[0].over = true;
	procs[1].pid = 102;
	procs[1].acc.probe_s = 0.001;
	procs[1].acc.seconds = 4.1;
	procs[1].acc.obs = 100;
	s.over = true;
	s.over_procs = 1;
	t = render(&s);
	if (!ASSERT_TRUE(t != NULL, "rendered"))
		return;
	ASSERT_TRUE(strstr(t, "over the budget: 1 process spent more than 1% of its time in the probes") != NULL,
		    "the budget's line says a process passed it");
	ASSERT_TRUE(strstr(t, "PID 101: every launch and sync call seen (1,000), 14.634% of its time in those probes "
			      "(estimate: over the budget)") != NULL, "the process over it says so");
	ASSERT_TRUE(strstr(t, "PID 102: every launch and sync call seen (100), 0.024% of its time in those probes "
			      "(estimate)\n") != NULL, "the one within it says nothing more");
	if (unit_cur_failed)
		printf("# the text:\n%s", t);
	free(t);
}

/* Nothing over: no such line. */
static void test_text_quiet_within(void)
{
	struct gp_budget_proc p = { .pid = 7 };
	struct gp_budget_stats s = { .pct = 1, .target = 0.0035, .mechanism = "uprobe_multi", .fraction = 1,
				     .procs = &p, .nr_procs = 1 };
	char *t;

	p.acc.probe_s = 0.001;
	p.acc.seconds = 1;
	t = render(&s);
	if (!ASSERT_TRUE(t != NULL, "rendered"))
		return;
	ASSERT_TRUE(strstr(t, "over the budget") == NULL, "no process over it: nothing said");
	free(t);
}

/* A process whose last unseen part lasted 2.99 s (an attach that slow), no strays timed in it:
 * no upper bound, and the text says how long no probe saw a call. */
static void test_text_says_what_is_dark(void)
{
	struct gp_budget_proc p = { .pid = 9 };
	struct gp_budget_stats s = { .pct = 1, .target = 0.0035, .mechanism = "uprobe_multi", .fraction = 0.01,
				     .procs = &p, .nr_procs = 1 };
	char *t;

	gp_account__begin(&p.acc, 0);
	gp_account__period(&p.acc, 2000, 0, 0.1, 0.1, 2e-6, 4e-6);
	gp_account__period(&p.acc, 200, 0, 3.0, 0.01, 2e-6, 4e-6);
	t = render(&s);
	if (!ASSERT_TRUE(t != NULL, "rendered"))
		return;
	ASSERT_TRUE(strstr(t, "no upper bound, an unseen part outlasted a period: its probes were that slow to go in, "
			      "3.0 s of it seen by no probe),") != NULL, "the seconds no probe saw, said");
	if (unit_cur_failed)
		printf("# the text:\n%s", t);
	free(t);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_text_says_over);
	RUN_TEST(test_text_quiet_within);
	RUN_TEST(test_text_says_what_is_dark);
	return unit_done();
}
