/* SPDX-License-Identifier: BSD-3-Clause */
/* Where CPython frames go among native ones (src/core/ustack.c), by hand-made stacks. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "lib/symbolize.h"
#include "unit.h"
#include "core/ustack.h"

/* The merged order as text: native frames by index ("n0"), Python frames as "p0". */
static void order_text(const int *order, size_t n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%c%d", i ? " " : "", order[i] >= 0 ? 'n' : 'p',
					order[i] >= 0 ? order[i] : -1 - order[i]);
}

static void merged(const bool *ev, size_t nn, const bool *entry, size_t np, bool partial, char *buf,
		   size_t len, unsigned int *flags)
{
	int order[USTACK_MAX_FRAMES];
	size_t n;

	*flags = 0;
	n = ustack__interleave(ev, nn, entry, np, partial, order, USTACK_MAX_FRAMES, flags);
	order_text(order, n, buf, len);
}

/* 3.11+: one interpreter-loop frame runs several Python frames (n3 ran p0..p2, n5 ran p3..p4). */
static void test_runs_replace_loop_frames(void)
{
	bool ev[8] = { false, false, false, true, false, true, false, false };
	bool entry[5] = { false, false, true, false, true };
	unsigned int flags;
	char buf[256];

	merged(ev, 8, entry, 5, false, buf, sizeof(buf), &flags);
	if (!ASSERT_STR_EQ(buf, "n0 n1 n2 p0 p1 p2 n4 p3 p4 n6 n7", "each run where its loop frame was") ||
	    !ASSERT_EQ(flags, 0, "no flag"))
		return;
}

/* 3.10: every Python frame is a loop run of its own. */
static void test_one_frame_per_run(void)
{
	bool ev[6] = { false, true, false, true, false, true };
	bool entry[3] = { true, true, true };
	unsigned int flags;
	char buf[256];

	merged(ev, 6, entry, 3, false, buf, sizeof(buf), &flags);
	ASSERT_STR_EQ(buf, "n0 p0 n2 p1 n4 p2", "one Python frame per loop frame");
}

/* A partial native stack (truncated copy): the outer runs follow it, in order. */
static void test_partial_native_stack(void)
{
	bool ev[3] = { false, true, false };
	bool entry[4] = { true, false, true, true };
	unsigned int flags;
	char buf[256];

	merged(ev, 3, entry, 4, true, buf, sizeof(buf), &flags);
	if (!ASSERT_STR_EQ(buf, "n0 p0 n2 p1 p2 p3", "the runs beyond the copy after it"))
		return;
	ASSERT_EQ(flags, 0, "placed, not a fallback");
	/* no loop frame at all within the copy: all of them after it */
	bool none[2] = { false, false };
	merged(none, 2, entry, 4, true, buf, sizeof(buf), &flags);
	if (!ASSERT_STR_EQ(buf, "n0 n1 p0 p1 p2 p3", "all after a copy that holds no loop frame"))
		return;
	ASSERT_EQ(flags, 0, "placed, not a fallback");
}

/* A complete native stack with fewer loop frames than runs (the loop's frames are not
 * named): the Python frames follow, said so. */
static void test_unmatched_runs_follow(void)
{
	bool ev[4] = { false, false, false, false };
	bool entry[2] = { false, true };
	unsigned int flags;
	char buf[256];

	merged(ev, 4, entry, 2, false, buf, sizeof(buf), &flags);
	if (!ASSERT_STR_EQ(buf, "n0 n1 n2 n3 p0 p1", "after the native frames"))
		return;
	ASSERT_EQ(flags, USTACK_PY_AFTER, "USTACK_PY_AFTER");
}

/* More loop frames than runs (the Python walk kept the innermost 64): the inner ones get
 * them, the rest stay native. No Python frames: the native stack as it is. */
static void test_more_loop_frames_than_runs(void)
{
	bool ev[5] = { true, false, true, false, true };
	bool entry[1] = { true };
	unsigned int flags;
	char buf[256];

	merged(ev, 5, entry, 1, false, buf, sizeof(buf), &flags);
	if (!ASSERT_STR_EQ(buf, "p0 n1 n2 n3 n4", "the innermost loop frame takes the run"))
		return;
	merged(ev, 5, entry, 0, false, buf, sizeof(buf), &flags);
	if (!ASSERT_STR_EQ(buf, "n0 n1 n2 n3 n4", "native only") || !ASSERT_EQ(flags, 0, "no flag"))
		return;
}

/* The output is bounded by cap. */
static void test_bounded(void)
{
	bool ev[3] = { true, true, true };
	bool entry[3] = { true, true, true };
	int order[4];
	unsigned int flags = 0;

	ASSERT_EQ(ustack__interleave(ev, 3, entry, 3, false, order, 2, &flags), 2, "at most cap entries");
}

/* --stacks fp past code without frame pointers: the kernel's walk reads "return addresses"
 * of 0 or in the low page; the stack ends there, flagged, never with a bare 0x0 frame. */
static void test_fp_walk_end(void)
{
	struct symbolizer *sym = symbolizer__new("/proc");
	struct ustack *u = sym ? ustack__new(sym, "/proc", -1) : NULL;
	const __u64 pcs[] = { (__u64)(uintptr_t)test_fp_walk_end + 4, 0, 0x7f0000001000ULL };
	struct ustack_frames f;

	if (!ASSERT_TRUE(u, "ustack__new"))
		goto cleanup;
	if (!ASSERT_EQ(ustack__from_pcs(u, (uint32_t)getpid(), pcs, 3, &f), 0, "from_pcs"))
		goto cleanup;
	if (!ASSERT_EQ(f.nr, 1, "the frames before the walk's end") ||
	    !ASSERT_STR_CONTAINS(f.frames[0], "test_fp_walk_end", "named") ||
	    !ASSERT_TRUE(f.flags & USTACK_FP_END, "flagged fp_ended") || !ASSERT_TRUE(f.flags & USTACK_PARTIAL, "partial"))
		goto cleanup;
cleanup:
	ustack__free(u);
	symbolizer__free(sym);
}

/* The walk's end where the "return address" it read lies on the stack (or in data): no
 * bare 0x7ffd... frame; a frame in code after the first stays. */
static void test_fp_walk_end_off_code(void)
{
	struct symbolizer *sym = symbolizer__new("/proc");
	struct ustack *u = sym ? ustack__new(sym, "/proc", -1) : NULL;
	int on_stack = 0;
	static int in_data;
	const __u64 pcs[] = { (__u64)(uintptr_t)test_fp_walk_end_off_code + 4, (__u64)(uintptr_t)test_fp_walk_end + 4,
			      (__u64)(uintptr_t)&on_stack, (__u64)(uintptr_t)test_bounded + 4 };
	const __u64 data[] = { (__u64)(uintptr_t)test_fp_walk_end_off_code + 4, (__u64)(uintptr_t)&in_data };
	struct ustack_frames f;

	if (!ASSERT_TRUE(u, "ustack__new"))
		goto cleanup;
	if (!ASSERT_EQ(ustack__from_pcs(u, (uint32_t)getpid(), pcs, 4, &f), 0, "from_pcs"))
		goto cleanup;
	if (!ASSERT_EQ(f.nr, 2, "the frames in code before the stack address") ||
	    !ASSERT_STR_CONTAINS(f.frames[1], "test_fp_walk_end", "a frame in code kept") ||
	    !ASSERT_TRUE(f.flags & USTACK_FP_END, "flagged fp_ended"))
		goto cleanup;
	if (!ASSERT_EQ(ustack__from_pcs(u, (uint32_t)getpid(), data, 2, &f), 0, "from_pcs (data)") ||
	    !ASSERT_EQ(f.nr, 1, "ended at an address in data") || !ASSERT_TRUE(f.flags & USTACK_FP_END, "flagged"))
		goto cleanup;
cleanup:
	ustack__free(u);
	symbolizer__free(sym);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_runs_replace_loop_frames);
	RUN_TEST(test_one_frame_per_run);
	RUN_TEST(test_partial_native_stack);
	RUN_TEST(test_unmatched_runs_follow);
	RUN_TEST(test_more_loop_frames_than_runs);
	RUN_TEST(test_bounded);
	RUN_TEST(test_fp_walk_end);
	RUN_TEST(test_fp_walk_end_off_code);
	return unit_done();
}
