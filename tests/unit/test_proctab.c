/* SPDX-License-Identifier: BSD-3-Clause */
/* The shared per-process table: live records by PID, exited ones until reaped. */
#include <stdbool.h>
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

	if (!ASSERT_TRUE(t != NULL, "t != NULL"))
		goto cleanup;
	a = proctab__get(t, 30, make_rec);
	b = proctab__get(t, 10, make_rec);
	if (!ASSERT_TRUE(a && b && proctab__get(t, 30, make_rec) == a, "a && b && proctab__get(t, 30, make_rec) == a"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__exit(t, 30, 100) == a, "proctab__exit(t, 30, 100) == a"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__live(t, 30) == NULL, "proctab__live(t, 30) == NULL"))
		goto cleanup;
	if (!ASSERT_TRUE(proctab__find(t, 30) == a, "proctab__find(t, 30) == a"))
		goto cleanup; /* awaiting its report */
	if (!ASSERT_TRUE(proctab__exit(t, 99, 1) == NULL, "proctab__exit(t, 99, 1) == NULL"))
		goto cleanup;
	/* PID reuse: a new live record; find prefers it */
	old = a;
	a = proctab__get(t, 30, make_rec);
	if (!ASSERT_TRUE(a != old && proctab__find(t, 30) == a, "a != old && proctab__find(t, 30) == a"))
		goto cleanup;
	/* live first, by pid, then exited */
	if (!ASSERT_EQ(proctab__list(t, (void ***)&v), 3, "proctab__list(t, (void ***)&v)"))
		goto cleanup;
	if (!ASSERT_TRUE(v[0] == b && v[1] == a && v[2] == old, "v[0] == b && v[1] == a && v[2] == old"))
		goto cleanup;
	proctab__free(t);
	if (!ASSERT_EQ(freed, 3, "freed"))
		goto cleanup;
cleanup:;
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
	if (!ASSERT_EQ(freed, 2, "freed"))
		goto cleanup;
	if (!ASSERT_EQ(forgotten, 2, "forgotten"))
		goto cleanup;
	proctab__reap(t, 3, UINT64_MAX, NULL, NULL); /* all but the kept one */
	if (!ASSERT_EQ(proctab__list(t, &v), 1, "proctab__list(t, &v)"))
		goto cleanup;
	if (!ASSERT_EQ(((struct rec *)v[0])->pid, 3, "((struct rec *)v[0])->pid"))
		goto cleanup;
	proctab__free(t);
	proctab__free(NULL);
	if (!ASSERT_EQ(freed, 4, "freed"))
		goto cleanup;
cleanup:;
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
	struct proctab *t = proctab__new(free_rec, NULL);
	struct rec *img1, *img2, *img3;
	uint32_t want;

	if (!ASSERT_TRUE(t != NULL, "t != NULL"))
		goto cleanup;
	img1 = proctab__get(t, 7, make_rec);
	if (!ASSERT_TRUE(img1 != NULL, "image 1"))
		goto cleanup;
	img1->pid = 1;
	proctab__exit(t, 7, 10);
	img2 = proctab__get(t, 7, make_rec);
	if (!ASSERT_TRUE(img2 != NULL, "image 2"))
		goto cleanup;
	img2->pid = 2;
	proctab__exit(t, 7, 20);
	img3 = proctab__get(t, 7, make_rec);
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

int main(void)
{
	RUN_TEST(test_live_exit_reuse_list);
	RUN_TEST(test_find_if_images);
	RUN_TEST(test_reap_keep_and_cutoff);
	return unit_done();
}
