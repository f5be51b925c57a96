/* SPDX-License-Identifier: BSD-3-Clause */
/* Names from a process's memory (src/modes/cudatrace/midname.c) over a fake memory: a
 * layout learned from one known handle, its tag checked, contradictions and ambiguity
 * refusing it, names that end at an unmapped page, implausible names, notes read once a
 * layout is learned. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "modes/cudatrace/midname.h"
#include "unit.h"

#define BASE 0x10000000ULL
#define SIZE 65536

/* fake memory of one process: [BASE, BASE + mapped) readable */
static unsigned char mem[SIZE];
static size_t mapped = SIZE;

static long fake_read(void *ctx, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (pid < 7 || pid > 10) /* 7-10: processes of several users sharing one fake memory */
		return -ESRCH;
	if (addr < BASE || addr >= BASE + mapped)
		return -EFAULT;
	if (addr + len > BASE + mapped)
		len = (size_t)(BASE + mapped - addr); /* a partial read, as process_vm_readv */
	memcpy(buf, mem + (addr - BASE), len);
	return (long)len;
}

static uint64_t put_str(uint64_t at, const char *s)
{
	memcpy(mem + (at - BASE), s, strlen(s) + 1);
	return at;
}

/* a handle object at `at`: tag, then the name pointer in slot `slot` */
static uint64_t put_handle(uint64_t at, uint64_t tag, unsigned int slot, uint64_t name_ptr)
{
	uint64_t q[MN_SLOTS] = { tag };

	q[slot] = name_ptr;
	memcpy(mem + (at - BASE), q, sizeof(q));
	return at;
}

static void reset(void)
{
	memset(mem, 0, sizeof(mem));
	mapped = SIZE;
}

static void test_learn_then_resolve(void)
{
	struct midname *m = midname__new(fake_read, NULL);
	char buf[256];
	uint64_t known, unknown, other_kind;

	reset();
	known = put_handle(BASE + 0x100, 0x100000001ULL, 1, put_str(BASE + 0x1000, "_Z4lateii"));
	unknown = put_handle(BASE + 0x200, 0x100000001ULL, 1, put_str(BASE + 0x1100, "_Z6vecAddPfi"));
	other_kind = put_handle(BASE + 0x300, 0x2ULL, 1, put_str(BASE + 0x1200, "lib_kernel"));
	if (!ASSERT_TRUE(m != NULL, "midname"))
		return;
	if (!ASSERT_EQ(midname__resolve(m, 7, unknown, buf, sizeof(buf)), -EAGAIN, "nothing learned yet"))
		goto cleanup;
	midname__learn(m, 7, known, "_Z4lateii");
	if (!ASSERT_TRUE(midname__ready(m), "one known handle teaches its kind"))
		goto cleanup;
	if (!ASSERT_EQ(midname__resolve(m, 7, unknown, buf, sizeof(buf)), 0, "resolved") ||
	    !ASSERT_STR_EQ(buf, "_Z6vecAddPfi", "the name"))
		goto cleanup;
	/* another tag: no known handle of that kind, so no layout for it */
	ASSERT_EQ(midname__resolve(m, 7, other_kind, buf, sizeof(buf)), -EAGAIN, "another kind: not learned (yet)");
cleanup:
	midname__free(m);
}

static void test_contradiction_and_ambiguity(void)
{
	struct midname *m = midname__new(fake_read, NULL);
	char buf[256];
	uint64_t a, b, c, u;

	reset();
	if (!ASSERT_TRUE(m != NULL, "midname"))
		return;
	a = put_handle(BASE + 0x100, 0x5, 2, put_str(BASE + 0x1000, "alpha"));
	midname__learn(m, 7, a, "alpha");
	/* a second known handle of the same tag whose name is elsewhere: the rule breaks */
	b = put_handle(BASE + 0x200, 0x5, 3, put_str(BASE + 0x1100, "beta"));
	midname__learn(m, 7, b, "beta");
	u = put_handle(BASE + 0x300, 0x5, 2, put_str(BASE + 0x1200, "gamma"));
	if (!ASSERT_EQ(midname__resolve(m, 7, u, buf, sizeof(buf)), -ENOENT, "a contradicted layout is not used"))
		goto cleanup;
	midname__free(m);
	/* two slots both hold the name of every known handle: which one is the rule? none */
	m = midname__new(fake_read, NULL);
	reset();
	c = put_handle(BASE + 0x100, 0x9, 1, put_str(BASE + 0x1000, "delta"));
	memcpy(mem + 0x100 + 8 * 4, &(uint64_t){ BASE + 0x1000 }, 8);
	midname__learn(m, 7, c, "delta");
	u = put_handle(BASE + 0x300, 0x9, 1, put_str(BASE + 0x1200, "eps"));
	ASSERT_TRUE(midname__resolve(m, 7, u, buf, sizeof(buf)) < 0 && !midname__ready(m),
		    "an ambiguous layout is not used");
cleanup:
	midname__free(m);
}

static void test_hostile_names(void)
{
	struct midname *m = midname__new(fake_read, NULL);
	char buf[64];
	uint64_t known, bad;

	reset();
	if (!ASSERT_TRUE(m != NULL, "midname"))
		return;
	known = put_handle(BASE + 0x100, 0x1, 1, put_str(BASE + 0x1000, "known"));
	midname__learn(m, 7, known, "known");
	bad = put_handle(BASE + 0x200, 0x1, 1, put_str(BASE + 0x1100, "bad\x01name"));
	if (!ASSERT_EQ(midname__resolve(m, 7, bad, buf, sizeof(buf)), -ENOENT, "control characters"))
		goto cleanup;
	bad = put_handle(BASE + 0x200, 0x1, 1, put_str(BASE + 0x1100, " spaced"));
	if (!ASSERT_EQ(midname__resolve(m, 7, bad, buf, sizeof(buf)), -ENOENT, "not an identifier start"))
		goto cleanup;
	bad = put_handle(BASE + 0x200, 0x1, 1, 0x42); /* not a pointer */
	if (!ASSERT_EQ(midname__resolve(m, 7, bad, buf, sizeof(buf)), -ENOENT, "a small integer"))
		goto cleanup;
	/* a string running into an unmapped page without its NUL */
	mapped = 0x2000;
	memset(mem + 0x1f00, 'x', 0x100);
	bad = put_handle(BASE + 0x200, 0x1, 1, BASE + 0x1f00);
	if (!ASSERT_TRUE(midname__resolve(m, 7, bad, buf, sizeof(buf)) < 0,
			 "unterminated at the end of the mapping"))
		goto cleanup;
	{
		char big[1024];

		if (!ASSERT_EQ(midname__resolve(m, 7, bad, big, sizeof(big)), -EFAULT,
			       "unterminated, the next page unreadable"))
			goto cleanup;
	}
	/* longer than the buffer: refused, never cut */
	mapped = SIZE;
	memset(mem + 0x3000, 'y', 200);
	mem[0x3000 + 200] = 0;
	bad = put_handle(BASE + 0x200, 0x1, 1, BASE + 0x3000);
	if (!ASSERT_EQ(midname__resolve(m, 7, bad, buf, sizeof(buf)), -ENOENT, "too long for the buffer"))
		goto cleanup;
	/* a name ending exactly before an unmapped page is read whole */
	mapped = 0x5000;
	put_str(BASE + 0x5000 - 6, "tail_");
	bad = put_handle(BASE + 0x200, 0x1, 1, BASE + 0x5000 - 6);
	if (!ASSERT_EQ(midname__resolve(m, 7, bad, buf, sizeof(buf)), 0, "ends at the page") ||
	    !ASSERT_STR_EQ(buf, "tail_", "the name before the page end"))
		goto cleanup;
	ASSERT_EQ(midname__resolve(m, 6, bad, buf, sizeof(buf)), -ESRCH, "a process gone");
cleanup:
	midname__free(m);
}

static void test_notes(void)
{
	struct midname *m = midname__new(fake_read, NULL);
	char buf[64];
	uint64_t known, h;
	uint32_t img = 3;

	reset();
	if (!ASSERT_TRUE(m != NULL, "midname"))
		return;
	h = put_handle(BASE + 0x200, 0x1, 1, put_str(BASE + 0x1100, "noted"));
	midname__note(m, 7, img, h); /* no layout yet: kept */
	/* the process's memory changes (it exits: the note was read in time, or not) */
	known = put_handle(BASE + 0x100, 0x1, 1, put_str(BASE + 0x1000, "known"));
	midname__learn(m, 7, known, "known"); /* learning reads the waiting note now */
	memset(mem, 0, sizeof(mem));
	if (!ASSERT_EQ(midname__name(m, 7, img, h, buf, sizeof(buf)), 0, "the note read when learned") ||
	    !ASSERT_STR_EQ(buf, "noted", "its name"))
		goto cleanup;
	midname__forget(m, 7, &img);
	ASSERT_TRUE(midname__name(m, 7, img, h, buf, sizeof(buf)) < 0, "forgotten: read again, gone");
cleanup:
	midname__free(m);
}

/* pid 7: root, 8: the victim (uid 1000), 9: a hostile user (65534), 10: uid 2000 */
static int fake_who(void *ctx, uint32_t pid, uint32_t *build, uint32_t *uid)
{
	static const uint32_t uids[] = { 0, 1000, 65534, 2000 };

	(void)ctx;
	if (pid < 7 || pid > 10)
		return -ESRCH;
	*build = 1;
	*uid = uids[pid - 7];
	return 0;
}

#define FTAG 0x100000001ULL

/* A hostile process teaches a wrong layout (it forges its own handle objects): used for
 * its own handles only; another user's launches keep the right layout, taught by root. */
static void test_hostile_layouts_stay_theirs(void)
{
	struct midname *m = midname__new(fake_read, NULL), *m2 = NULL;
	struct mn_layout ex[MN_LAYOUTS];
	char buf[64];
	uint64_t forged, victim, known;
	size_t n;

	reset();
	if (!ASSERT_TRUE(m != NULL, "midname"))
		return;
	midname__set_who(m, fake_who);
	forged = put_handle(BASE + 0x100, FTAG, 3, put_str(BASE + 0x1000, "_Z4evilv"));
	victim = put_handle(BASE + 0x200, FTAG, 1, put_str(BASE + 0x1100, "_Z6victimv"));
	put_str(BASE + 0x1200, "_Z5wrongv"); /* what slot 3 of the victim's object leads to */
	memcpy(mem + 0x200 + 24, &(uint64_t){ BASE + 0x1200 }, 8);
	midname__learn(m, 9, forged, "_Z4evilv");
	if (!ASSERT_EQ(midname__resolve(m, 8, victim, buf, sizeof(buf)), -EAGAIN,
		       "a hostile user's lesson is not used for another user"))
		goto cleanup;
	if (!ASSERT_EQ(midname__resolve(m, 9, victim, buf, sizeof(buf)), 0, "its own user's handles use it") ||
	    !ASSERT_STR_EQ(buf, "_Z5wrongv", "(only its own processes can be misnamed)"))
		goto cleanup;
	known = put_handle(BASE + 0x300, FTAG, 1, put_str(BASE + 0x1300, "_Z4goodv"));
	midname__learn(m, 7, known, "_Z4goodv"); /* root's process, the driver's real layout */
	/* the hostile user now contradicts slot 1 with another forged handle */
	midname__learn(m, 9, put_handle(BASE + 0x400, FTAG, 3, put_str(BASE + 0x1400, "_Z5evil2v")), "_Z5evil2v");
	if (!ASSERT_EQ(midname__resolve(m, 8, victim, buf, sizeof(buf)), 0, "root's layout names the victim") ||
	    !ASSERT_STR_EQ(buf, "_Z6victimv", "the right name, whatever the hostile user taught"))
		goto cleanup;
	/* saved and loaded: the same trust in a later run, with no lesson */
	n = midname__export(m, ex, MN_LAYOUTS);
	if (!ASSERT_TRUE(midname__take_changed(m) && !midname__take_changed(m), "a change to save, once"))
		goto cleanup;
	m2 = midname__new(fake_read, NULL);
	if (!ASSERT_TRUE(m2 != NULL, "midname"))
		goto cleanup;
	midname__set_who(m2, fake_who);
	for (size_t i = 0; i < n; i++)
		if (!ex[i].contradicted)
			midname__seed(m2, &ex[i]);
	if (!ASSERT_EQ(midname__resolve(m2, 8, victim, buf, sizeof(buf)), 0, "seeded: named with no lesson") ||
	    !ASSERT_STR_EQ(buf, "_Z6victimv", "the seeded name") || !ASSERT_FALSE(midname__take_changed(m2), "seeding is no change"))
		goto cleanup;
	if (!ASSERT_EQ(midname__resolve(m2, 10, victim, buf, sizeof(buf)), 0, "root's layout serves every user"))
		goto cleanup;
	/* root's own process breaks the seeded rule (a driver changed under the same key):
	 * a change to save, the entry marked to go, and no longer used */
	midname__learn(m2, 7, put_handle(BASE + 0x500, FTAG, 2, put_str(BASE + 0x1500, "_Z3newv")), "_Z3newv");
	n = midname__export(m2, ex, MN_LAYOUTS);
	{
		bool gone = false;

		for (size_t i = 0; i < n; i++)
			gone |= ex[i].uid == 0 && ex[i].slot == 1 && ex[i].contradicted;
		if (!ASSERT_TRUE(midname__take_changed(m2) && gone, "a seeded layout contradicted: to be dropped"))
			goto cleanup;
	}
	ASSERT_EQ(midname__resolve(m2, 8, victim, buf, sizeof(buf)), -ENOENT, "root's new rule (slot 2) now, not slot 1");
cleanup:
	midname__free(m);
	midname__free(m2);
}

/* Two users that agree are not trusted by a third (whoever holds two uids would be two
 * users). A user's flood of forged kinds fills its own share, not the table. */
static void test_agreement_and_shares(void)
{
	struct midname *m = midname__new(fake_read, NULL);
	char buf[64];
	uint64_t a, b, u;

	reset();
	if (!ASSERT_TRUE(m != NULL, "midname"))
		return;
	midname__set_who(m, fake_who);
	a = put_handle(BASE + 0x100, 0x2, 2, put_str(BASE + 0x1000, "ka"));
	b = put_handle(BASE + 0x200, 0x2, 2, put_str(BASE + 0x1100, "kb"));
	u = put_handle(BASE + 0x300, 0x2, 2, put_str(BASE + 0x1200, "ku"));
	midname__learn(m, 8, a, "ka");
	if (!ASSERT_EQ(midname__resolve(m, 9, u, buf, sizeof(buf)), -EAGAIN, "one other user: not trusted"))
		goto cleanup;
	midname__learn(m, 10, b, "kb");
	if (!ASSERT_EQ(midname__resolve(m, 9, u, buf, sizeof(buf)), -EAGAIN, "two other users agree: not trusted"))
		goto cleanup;
	if (!ASSERT_EQ(midname__resolve(m, 10, u, buf, sizeof(buf)), 0, "its own user's lesson: trusted") ||
	    !ASSERT_STR_EQ(buf, "ku", "the name"))
		goto cleanup;
	for (unsigned int i = 0; i < 40; i++) {
		uint64_t h = BASE + 0x2000 + i * 0x80;

		put_handle(h, 0x1000 + i, 1, put_str(h + 0x40, "_Z1fv"));
		midname__learn(m, 9, h, "_Z1fv");
	}
	if (!ASSERT_TRUE(midname__stats(m).full >= 40 - MN_PER_UID, "the flood is counted"))
		goto cleanup;
	midname__learn(m, 7, put_handle(BASE + 0x5000, 0x77, 1, put_str(BASE + 0x5040, "_Z1gv")), "_Z1gv");
	ASSERT_EQ(midname__resolve(m, 8, put_handle(BASE + 0x5100, 0x77, 1, put_str(BASE + 0x5140, "_Z1hv")), buf,
				   sizeof(buf)), 0, "root still learns after the flood");
cleanup:
	midname__free(m);
}

/* A copy of a handle's object as BPF would make it (the strings of slots 1..7 given). */
static void make_copy(struct mn_copy *c, uint32_t uid, uint64_t tag, const char *const str[MN_SLOTS])
{
	memset(c, 0, sizeof(*c));
	c->build = 1;
	c->uid = uid;
	c->obj_ok = 1;
	c->q[0] = tag;
	for (unsigned int s = 1; s < MN_SLOTS; s++) {
		c->str[s] = str[s];
		c->q[s] = str[s] ? BASE + 0x8000 + s * 0x100 : 0; /* a user pointer, never read */
	}
}

/* Processes gone before their records are read (pid 42: fake_read says ESRCH): a layout
 * learned from a naming call's copy, an unknown handle named from its first sight's copy,
 * under the same trust as from memory (another user's lesson not used, a forged implausible
 * string refused); a copy that lacks the string the layout names is counted unread; the
 * hints follow the usable layouts. */
static void test_copies_outlive_the_process(void)
{
	struct midname *m = midname__new(fake_read, NULL);
	const char *known[MN_SLOTS] = { NULL, "_Z4decov", NULL, "_Z5knownv" };
	const char *unk[MN_SLOTS] = { NULL, "_Z5decoyv", NULL, "_Z6copiedv" };
	const char *evil[MN_SLOTS] = { NULL, NULL, NULL, "bad name\x01" };
	const char *lacks[MN_SLOTS] = { NULL, "_Z5decoyv" };
	struct mn_hint h[4];
	struct mn_copy c;
	uint64_t gen;
	char buf[64];
	uint32_t img = 1;

	reset();
	if (!ASSERT_TRUE(m != NULL, "midname"))
		return;
	midname__set_who(m, fake_who);
	gen = midname__hints_gen(m);
	make_copy(&c, 1000, FTAG, unk);
	midname__note_copy(m, 42, img, 0x1000, &c); /* no layout yet: it waits */
	if (!ASSERT_EQ(midname__name(m, 42, img, 0x1000, buf, sizeof(buf)), -ENODATA, "waiting for a layout"))
		goto cleanup;
	make_copy(&c, 1000, FTAG, known);
	midname__learn_copy(m, 42, "_Z5knownv", &c); /* the naming call's copy: slot 3 */
	if (!ASSERT_TRUE(midname__hints_gen(m) != gen, "the hints moved") ||
	    !ASSERT_EQ(midname__hints(m, h, 4), 1, "one hint") || !ASSERT_EQ(h[0].tag, FTAG, "its tag") ||
	    !ASSERT_EQ(h[0].uid, 1000, "its uid") || !ASSERT_EQ(h[0].mask, 1u << 3, "slot 3"))
		goto cleanup;
	if (!ASSERT_EQ(midname__name(m, 42, img, 0x1000, buf, sizeof(buf)), 0, "named from its copy, the process gone") ||
	    !ASSERT_STR_EQ(buf, "_Z6copiedv", "the copied name"))
		goto cleanup;
	/* another user's handle: uid 1000's lesson is not its */
	make_copy(&c, 2000, FTAG, unk);
	midname__note_copy(m, 42, img, 0x2000, &c);
	if (!ASSERT_EQ(midname__name(m, 42, img, 0x2000, buf, sizeof(buf)), -ENODATA, "not another user's layout"))
		goto cleanup;
	/* its own user's, but the string is not a symbol name: refused */
	make_copy(&c, 1000, FTAG, evil);
	midname__note_copy(m, 42, img, 0x3000, &c);
	if (!ASSERT_EQ(midname__name(m, 42, img, 0x3000, buf, sizeof(buf)), -ENOENT, "an implausible name refused"))
		goto cleanup;
	/* the slot the layout names was not copied, and the process is gone: counted */
	make_copy(&c, 1000, FTAG, lacks);
	c.q[3] = BASE + 0x8300;
	midname__note_copy(m, 42, img, 0x4000, &c);
	if (!ASSERT_EQ(midname__name(m, 42, img, 0x4000, buf, sizeof(buf)), -ESRCH, "gone before its name was read") ||
	    !ASSERT_EQ(midname__stats(m).unread, 1, "counted unread") ||
	    !ASSERT_EQ(midname__stats(m).from_copy, 1, "one named from a copy") ||
	    !ASSERT_EQ(midname__stats(m).copied, 4, "four copies noted"))
		goto cleanup;
	/* a copy whose object was unreadable teaches nothing and names nothing */
	make_copy(&c, 1000, 0x77, known);
	c.obj_ok = 0;
	midname__learn_copy(m, 42, "_Z5knownv", &c);
	if (!ASSERT_EQ(midname__hints(m, h, 4), 1, "no lesson from an unread object"))
		goto cleanup;
	midname__forget(m, 42, NULL);
	ASSERT_EQ(midname__name(m, 42, img, 0x1000, buf, sizeof(buf)), -ESRCH, "forgotten: its copy went with it");
cleanup:
	midname__free(m);
}

int main(void)
{
	RUN_TEST(test_learn_then_resolve);
	RUN_TEST(test_contradiction_and_ambiguity);
	RUN_TEST(test_hostile_names);
	RUN_TEST(test_notes);
	RUN_TEST(test_hostile_layouts_stay_theirs);
	RUN_TEST(test_agreement_and_shares);
	RUN_TEST(test_copies_outlive_the_process);
	return unit_done();
}
