/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared per-process table: live records by PID, exited ones until reaped. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/proctab.h"
#include "lib/util.h"
#include "unit.h"

struct rec {
	uint32_t pid;
};

static int freed;

static int init_rec(void *p, uint32_t pid)
{
	((struct rec *)p)->pid = pid;
	return 0;
}

static void fini_rec(void *ctx, void *p)
{
	(void)ctx;
	(void)p;
	freed++;
}

static const struct proctab_ops rec_ops = { sizeof(struct rec), init_rec, fini_rec };

static int forgotten;

static void count_forget(void *ctx, void *p)
{
	(void)ctx;
	(void)p;
	forgotten++;
}

static void test_live_exit_reuse_list(void)
{
	struct proctab *t = proctab__new(&rec_ops, NULL);
	struct rec *a, *b, *old, **v;

	if (!ASSERT_TRUE(t != NULL, "table_new"))
		goto cleanup;
	a = proctab__get(t, 30);
	b = proctab__get(t, 10);
	if (!ASSERT_TRUE(a && b && proctab__get(t, 30) == a, "get_same_record"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__exit(t, 30, 100) == a, "exit_returns_record"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__live(t, 30) == NULL, "exited_not_live"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__find(t, 30) == a, "find_exited"))
		goto cleanup; /* awaiting its report */
	if (!ASSERT_TRUE(proctab__exit(t, 99, 1) == NULL, "exit_of_unknown"))
		goto cleanup;
	/* PID reuse: a new live record; find prefers it */
	old = a;
	a = proctab__get(t, 30);
	if (!ASSERT_TRUE(a != old && proctab__find(t, 30) == a, "reuse_new_record"))
		goto cleanup;
	/* live first, by pid, then exited */
	if (!ASSERT_EQ(proctab__list(t, (void ***)&v), 3, "list_count"))
		goto cleanup;
	if (!ASSERT_TRUE(v[0] == b && v[1] == a && v[2] == old, "list_order"))
		goto cleanup;
	proctab__free(t);
	if (!ASSERT_EQ(freed, 3, "all_freed"))
		goto cleanup;
cleanup:;
}

static void test_reap_keep_and_cutoff(void)
{
	struct proctab *t = proctab__new(&rec_ops, NULL);
	void **v;

	uint64_t t0 = gp_mono_ns();

	freed = forgotten = 0;
	for (uint32_t pid = 1; pid <= 4; pid++) { /* exits stamped seconds from now */
		proctab__get(t, pid);
		proctab__exit(t, pid, t0 + pid * 1000000000ULL);
	}
	/* handled now, exited before t0 + 2.5 s: pids 1, 2 */
	proctab__reap(t, 0, t0 + 2500000000ULL, count_forget, NULL);
	if (!ASSERT_EQ(freed, 2, "reaped_freed"))
		goto cleanup;
	if (!ASSERT_EQ(forgotten, 2, "reaped_forgotten"))
		goto cleanup;
	proctab__reap(t, 3, UINT64_MAX, NULL, NULL); /* all but the kept one */
	if (!ASSERT_EQ(proctab__list(t, &v), 1, "kept_listed"))
		goto cleanup;
	if (!ASSERT_EQ(((struct rec *)v[0])->pid, 3, "kept_pid"))
		goto cleanup;
	proctab__free(t);
	proctab__free(NULL);
	if (!ASSERT_EQ(freed, 4, "all_freed"))
		goto cleanup;
cleanup:;
}

/* An exit handled after a time cutoff stays, though the process exited before it: a
 * reader behind by more than the cutoff's margin reads it late, and no report has listed
 * it yet (the daemon lost a churn process's last allocations so). */
static void test_reap_handled_late(void)
{
	struct proctab *t = proctab__new(&rec_ops, NULL);
	uint64_t cutoff = gp_mono_ns();

	freed = 0;
	proctab__get(t, 7);
	proctab__exit(t, 7, 1); /* exited long ago, handled now */
	proctab__reap(t, 0, cutoff, NULL, NULL);
	if (!ASSERT_EQ(freed, 0, "handled after the cutoff: kept"))
		goto cleanup;
	proctab__reap(t, 0, gp_mono_ns() + 1, NULL, NULL);
	ASSERT_EQ(freed, 1, "released by a cutoff after its handling");
cleanup:
	proctab__free(t);
}

static bool rec_is(const void *p, void *ctx)
{
	return ((const struct rec *)p)->pid == *(uint32_t *)ctx;
}

static bool never(const void *p, void *ctx)
{
	(void)p;
	(void)ctx;
	return false;
}

/* One PID's successive images: find_if looks at the live record, then the exited ones
 * from the newest. The records tag their image in pid's place here. */
static void test_find_if_images(void)
{
	struct proctab *t = proctab__new(&rec_ops, NULL);
	struct rec *img1, *img2, *img3;
	uint32_t want;

	if (!ASSERT_TRUE(t != NULL, "table_new"))
		goto cleanup;
	img1 = proctab__get(t, 7);
	if (!ASSERT_TRUE(img1 != NULL, "image 1"))
		goto cleanup;
	img1->pid = 1;
	proctab__exit(t, 7, 10);
	img2 = proctab__get(t, 7);
	if (!ASSERT_TRUE(img2 != NULL, "image 2"))
		goto cleanup;
	img2->pid = 2;
	proctab__exit(t, 7, 20);
	img3 = proctab__get(t, 7);
	if (!ASSERT_TRUE(img3 != NULL, "image 3"))
		goto cleanup;
	img3->pid = 3;
	want = 3;
	if (!ASSERT_TRUE(proctab__find_if(t, 7, rec_is, &want) == img3, "the live image"))
		goto cleanup;
	want = 1;
	if (!ASSERT_TRUE(proctab__find_if(t, 7, rec_is, &want) == img1, "the oldest exited image"))
		goto cleanup;
	want = 2;
	if (!ASSERT_TRUE(proctab__find_if(t, 7, rec_is, &want) == img2, "the newer exited image"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__find_if(t, 8, rec_is, &want) == NULL, "another PID"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__find_if(t, 7, never, NULL) == NULL, "no match"))
		goto cleanup;
cleanup:
	proctab__free(t);
}

/* Records with a head: named, ended by an exit or an exec, swept when gone; an owner
 * made and freed with its table; a failed init frees what it made. */
struct hrec {
	struct gp_proc_head h;
	int *mem;
};

struct owner {
	struct proctab *procs;
	int fini_calls;
};

static bool fail_init;

static int init_hrec(void *p, uint32_t pid)
{
	struct hrec *r = p;

	r->h.pid = pid;
	r->mem = fail_init ? NULL : malloc(sizeof(int));
	return r->mem ? 0 : -ENOMEM;
}

static void fini_hrec(void *ctx, void *p)
{
	((struct owner *)ctx)->fini_calls++;
	free(((struct hrec *)p)->mem);
}

static const struct proctab_ops hrec_ops = { sizeof(struct hrec), init_hrec, fini_hrec };

static void test_head_records(void)
{
	struct owner *o = proctab__new_owner(sizeof(struct owner), &hrec_ops);
	struct hrec *a, *b;
	uint32_t gone_pid = 4000000; /* above pid_max's default: no such process */

	if (!ASSERT_TRUE(o && o->procs, "owner and its table"))
		goto cleanup;
	a = proctab__get_named(o->procs, 10, "first");
	if (!ASSERT_TRUE(a && a->h.pid == 10, "a's pid"))
		goto cleanup;
	if (!ASSERT_STR_EQ(a->h.comm, "first", "a's name"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__get_named(o->procs, 10, "") == a, "no name keeps the name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(a->h.comm, "first", "a's name kept"))
		goto cleanup;
	proctab__get_named(o->procs, 10, "a-name-longer-than-sixteen");
	if (!ASSERT_EQ(strlen(a->h.comm), GP_COMM_LEN - 1, "a name cut to GP_COMM_LEN - 1"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__end(o->procs, 10, 500, true) == a, "end by exec"))
		goto cleanup;
	if (!ASSERT_TRUE(a->h.exited && a->h.exec && a->h.exit_ns == 500, "a ended by an exec at 500"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__end(o->procs, 10, 600, false) == NULL, "nothing live to end"))
		goto cleanup;
	b = proctab__get_named(o->procs, gone_pid, NULL);
	if (!ASSERT_TRUE(b && !b->h.exited && b->h.comm[0] == 0, "b live, unnamed"))
		goto cleanup;
	proctab__sweep_end(o->procs, 700);
	if (!ASSERT_TRUE(b->h.exited && !b->h.exec && b->h.exit_ns == 700, "b swept: exited at 700"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__live(o->procs, gone_pid) == NULL, "b no longer live"))
		goto cleanup;
	fail_init = true;
	if (!ASSERT_TRUE(proctab__get(o->procs, 11) == NULL, "a failed init makes no record"))
		goto cleanup;
	if (!ASSERT_EQ(o->fini_calls, 1, "and is finished"))
		goto cleanup;
cleanup:
	fail_init = false;
	proctab__free_owner(o);
	proctab__free_owner(NULL);
}

/* An interval report's reap: only the exits handled before the report (GP_REAP_SEQ),
 * whatever their times; a time cutoff still reads as a time. */
static void test_reap_by_exit_order(void)
{
	struct proctab *t = proctab__new(&rec_ops, NULL);
	uint64_t mark;
	void **v;

	freed = 0;
	for (uint32_t pid = 1; pid <= 3; pid++) {
		proctab__get(t, pid);
		proctab__exit(t, pid, 1000 - pid); /* later exits, earlier times */
	}
	mark = proctab__exits(); /* the report */
	proctab__get(t, 4);
	proctab__exit(t, 4, 1); /* read after it, though it exited first */
	proctab__reap(t, 0, GP_REAP_SEQ(mark), NULL, NULL);
	if (!ASSERT_EQ(freed, 3, "the three listed are released"))
		goto cleanup;
	if (!ASSERT_EQ(proctab__list(t, &v), 1, "one left"))
		goto cleanup;
	if (!ASSERT_EQ(((struct rec *)v[0])->pid, 4, "the exit read after the report stays"))
		goto cleanup;
	proctab__reap(t, 0, GP_REAP_SEQ(proctab__exits()), NULL, NULL);
	if (!ASSERT_EQ(freed, 4, "released by the next report's reap"))
		goto cleanup;
cleanup:
	proctab__free(t);
}

static bool hold_even(void *rctx, const void *p)
{
	(void)rctx;
	return ((const struct rec *)p)->pid % 2 == 0;
}

/* A record its owner holds (cudatrace: kernels held back for their names) stays through a
 * reap that lists it, by exit order or by time, and goes at a later one once not held. */
static void test_reap_held(void)
{
	struct proctab *t = proctab__new(&rec_ops, NULL);
	void **v;

	freed = 0;
	for (uint32_t pid = 1; pid <= 4; pid++) {
		proctab__get(t, pid);
		proctab__exit(t, pid, pid);
	}
	proctab__reap_held(t, 0, GP_REAP_SEQ(proctab__exits()), hold_even, NULL, NULL);
	if (!ASSERT_EQ(freed, 2, "the two not held released") || !ASSERT_EQ(proctab__list(t, &v), 2, "two held"))
		goto cleanup;
	if (!ASSERT_TRUE(((struct rec *)v[0])->pid % 2 == 0 && ((struct rec *)v[1])->pid % 2 == 0, "the held ones"))
		goto cleanup;
	proctab__reap_held(t, 0, UINT64_MAX, hold_even, NULL, NULL);
	if (!ASSERT_EQ(freed, 2, "still held, by time too"))
		goto cleanup;
	proctab__reap(t, 0, GP_REAP_SEQ(proctab__exits()), NULL, NULL);
	ASSERT_EQ(freed, 4, "released once not held");
cleanup:
	proctab__free(t);
}

static int gone_calls;

static void on_gone(void *ctx, uint32_t pid)
{
	proctab__exit(ctx, pid, 0);
	gone_calls++;
}

/* With a grace, a process gone without an exit record ends at the first sweep that finds
 * it gone the grace after an earlier one did; without one, at once. */
static void test_sweep_grace(void)
{
	struct proctab *t = proctab__new(&rec_ops, NULL);
	uint32_t gone_pid = 4000001; /* above pid_max's default: no such process */

	gone_calls = 0;
	proctab__get(t, gone_pid);
	proctab__set_sweep_grace(3600ULL * 1000000000ULL);
	proctab__sweep(t, on_gone, t);
	proctab__sweep(t, on_gone, t);
	if (!ASSERT_TRUE(gone_calls == 0 && proctab__live(t, gone_pid), "within the grace: live"))
		goto cleanup;
	proctab__set_sweep_grace(1);
	proctab__sweep(t, on_gone, t);
	if (!ASSERT_TRUE(gone_calls == 1 && !proctab__live(t, gone_pid), "gone longer than the grace: ended"))
		goto cleanup;
	proctab__get(t, gone_pid + 1);
	proctab__set_sweep_grace(0);
	proctab__sweep(t, on_gone, t);
	if (!ASSERT_TRUE(gone_calls == 2 && !proctab__live(t, gone_pid + 1), "no grace: ended at once"))
		goto cleanup;
cleanup:
	proctab__set_sweep_grace(0);
	proctab__free(t);
}

/* One sweep ends every gone process, not a batch of them: the final report's reap is the
 * last (1,000 processes gone without their exit records read left 256 listed running). */
static void test_sweep_takes_every_gone_process(void)
{
	struct proctab *t = proctab__new(&rec_ops, NULL);
	uint32_t first = 4100000, n = 1000; /* above pid_max's default: no such processes */
	uint32_t left = 0;

	if (!ASSERT_TRUE(t, "table_new"))
		goto cleanup;
	gone_calls = 0;
	for (uint32_t i = 0; i < n; i++)
		proctab__get(t, first + i);
	proctab__set_sweep_grace(0);
	proctab__sweep(t, on_gone, t);
	for (uint32_t i = 0; i < n; i++)
		left += proctab__live(t, first + i) != NULL;
	ASSERT_EQ(gone_calls, (int)n, "every gone process ended by one sweep");
	ASSERT_EQ(left, 0, "none left live");
cleanup:
	proctab__free(t);
}

int main(void)
{
	RUN_TEST(test_head_records);
	RUN_TEST(test_live_exit_reuse_list);
	RUN_TEST(test_find_if_images);
	RUN_TEST(test_reap_keep_and_cutoff);
	RUN_TEST(test_reap_handled_late);
	RUN_TEST(test_reap_by_exit_order);
	RUN_TEST(test_reap_held);
	RUN_TEST(test_sweep_grace);
	RUN_TEST(test_sweep_takes_every_gone_process);
	return unit_done();
}
