/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared per-process table: live records by PID, exited ones until reaped. */
#include <stdint.h>
#include <stdlib.h>
#include "proctab.h"
#include "unit.h"

struct rec {
	uint32_t pid;
};

static int freed;

static void free_rec(void *ctx, void *p)
{
	(void)ctx;
	freed++;
	free(p);
}

static void *make_rec(uint32_t pid)
{
	struct rec *r = calloc(1, sizeof(*r));

	if (r)
		r->pid = pid;
	return r;
}

static int forgotten;

static void count_forget(void *ctx, void *p)
{
	(void)ctx;
	(void)p;
	forgotten++;
}

static void test_live_exit_reuse_list(void)
{
	struct proctab *t = proctab__new(free_rec, NULL);
	struct rec *a, *b, *old, **v;

	ASSERT_TRUE(t != NULL);
	a = proctab__get(t, 30, make_rec);
	b = proctab__get(t, 10, make_rec);
	ASSERT_TRUE(a && b && proctab__get(t, 30, make_rec) == a);
	ASSERT_TRUE(proctab__exit(t, 30, 100) == a);
	ASSERT_TRUE(proctab__live(t, 30) == NULL);
	ASSERT_TRUE(proctab__find(t, 30) == a); /* awaiting its report */
	ASSERT_TRUE(proctab__exit(t, 99, 1) == NULL);
	/* PID reuse: a new live record; find prefers it */
	old = a;
	a = proctab__get(t, 30, make_rec);
	ASSERT_TRUE(a != old && proctab__find(t, 30) == a);
	/* live first, by pid, then exited */
	ASSERT_EQ(proctab__list(t, (void ***)&v), 3);
	ASSERT_TRUE(v[0] == b && v[1] == a && v[2] == old);
	proctab__free(t);
	ASSERT_EQ(freed, 3);
}

static void test_reap_keep_and_cutoff(void)
{
	struct proctab *t = proctab__new(free_rec, NULL);
	void **v;

	freed = forgotten = 0;
	for (uint32_t pid = 1; pid <= 4; pid++) {
		proctab__get(t, pid, make_rec);
		proctab__exit(t, pid, pid * 10);
	}
	proctab__reap(t, 0, 25, count_forget, NULL); /* exited before 25: pids 1, 2 */
	ASSERT_EQ(freed, 2);
	ASSERT_EQ(forgotten, 2);
	proctab__reap(t, 3, UINT64_MAX, NULL, NULL); /* all but the kept one */
	ASSERT_EQ(proctab__list(t, &v), 1);
	ASSERT_EQ(((struct rec *)v[0])->pid, 3);
	proctab__free(t);
	proctab__free(NULL);
	ASSERT_EQ(freed, 4);
}

int main(void)
{
	RUN_TEST(test_live_exit_reuse_list);
	RUN_TEST(test_reap_keep_and_cutoff);
	return unit_done();
}
