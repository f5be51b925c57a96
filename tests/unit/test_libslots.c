/* SPDX-License-Identifier: BSD-3-Clause */
/* The library slots' rule (src/lib/libslots.c), shared by the daemon and the CLI's
 * library watcher: which files a sweep frees, and when. */
#include <stdlib.h>
#include "lib/libslots.h"
#include "unit.h"

struct dropped {
	int n;
	ino_t ino[8];
	int tag[8];
};

static void drop(void *ctx, const struct libslot *e)
{
	struct dropped *d = ctx;

	if (d->n < 8) {
		d->ino[d->n] = e->ino;
		d->tag[d->n] = e->tag;
	}
	d->n++;
}

static bool has(const struct dropped *d, ino_t ino)
{
	for (int i = 0; i < d->n && i < 8; i++)
		if (d->ino[i] == ino)
			return true;
	return false;
}

/* A user's file unmapped for one sweep keeps its slot, for two loses it (its probes' tag
 * handed to drop); root's files and pinned ones stay unless the slots are full; a file
 * mapped again in between keeps its slot. */
static void test_sweep_rule(void)
{
	struct libslots *s = libslots__new();
	struct dropped d = { 0 };
	struct libslot *user, *root, *pinned;

	if (!ASSERT_TRUE(s != NULL, "slots"))
		goto cleanup;
	user = libslots__add(s, 1, 10, 65534, false, false, true);
	if (!ASSERT_TRUE(user != NULL, "a user's file") || !ASSERT_TRUE(user->tag > 0, "a tag for its probes"))
		goto cleanup;
	root = libslots__add(s, 1, 11, 0, true, false, true);
	pinned = libslots__add(s, 1, 12, 1000, false, true, false);
	libslots__add(s, 1, 13, 1000, false, false, true); /* mapped at every sweep */
	if (!ASSERT_TRUE(root && pinned, "root's and a pinned file") || !ASSERT_EQ(pinned->tag, 0, "no probes: no tag") ||
	    !ASSERT_TRUE(root->tag != user->tag, "tags differ") ||
	    !ASSERT_TRUE(libslots__add(s, 1, 10, 65534, false, false, true) == user, "a file once") ||
	    !ASSERT_EQ(libslots__count(s), 4, "slots") || !ASSERT_EQ(libslots__freeable(s), 2, "freeable: the users'"))
		goto cleanup;
	/* sweep 1: the file added during it counts as seen */
	libslots__mapped(s, 1, 13);
	if (!ASSERT_EQ(libslots__sweep(s, false, drop, &d), 0, "sweep 1: nothing freed"))
		goto cleanup;
	/* sweep 2: unmapped since the one before: kept one more sweep */
	libslots__mapped(s, 1, 13);
	if (!ASSERT_EQ(libslots__sweep(s, false, drop, &d), 0, "sweep 2: nothing freed"))
		goto cleanup;
	/* sweep 3: the user's file goes, root's and the pinned one stay */
	libslots__mapped(s, 1, 13);
	if (!ASSERT_EQ(libslots__sweep(s, false, drop, &d), 1, "sweep 3: one freed") ||
	    !ASSERT_TRUE(has(&d, 10), "the user's file") || !ASSERT_TRUE(d.tag[0] > 0, "with its tag") ||
	    !ASSERT_TRUE(libslots__find(s, 1, 10) == NULL, "its slot free") ||
	    !ASSERT_TRUE(libslots__find(s, 1, 13) != NULL, "the mapped file kept") ||
	    !ASSERT_EQ(libslots__freed(s), 1, "counted"))
		goto cleanup;
	/* full: root's unmapped file goes too, the pinned one never */
	libslots__mapped(s, 1, 13);
	if (!ASSERT_EQ(libslots__sweep(s, true, drop, &d), 1, "full: one freed") ||
	    !ASSERT_TRUE(has(&d, 11), "root's file") || !ASSERT_TRUE(libslots__find(s, 1, 12) != NULL, "pinned kept") ||
	    !ASSERT_EQ(libslots__freed(s), 2, "counted"))
		goto cleanup;
	/* a file mapped again after one unmapped sweep keeps its slot */
	libslots__add(s, 2, 20, 65534, false, false, true);
	libslots__mapped(s, 1, 13);
	d.n = 0;
	libslots__sweep(s, false, drop, &d);
	libslots__sweep(s, false, drop, &d); /* unmapped in this one only: kept */
	libslots__mapped(s, 2, 20);
	libslots__mapped(s, 1, 13);
	if (!ASSERT_EQ(libslots__sweep(s, false, drop, &d), 0, "mapped again: kept") || !ASSERT_EQ(d.n, 0, "none dropped"))
		goto cleanup;
	/* a file not probed after all: its slot free, not counted as freed */
	libslots__remove(s, 2, 20);
	ASSERT_TRUE(libslots__find(s, 2, 20) == NULL, "removed");
	ASSERT_EQ(libslots__freed(s), 2, "a removal is no freeing");
cleanup:
	libslots__free(s);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_sweep_rule);
	return unit_done();
}
