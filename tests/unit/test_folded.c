/* SPDX-License-Identifier: BSD-3-Clause */
/* Folded stacks: frame text made safe, equal stacks added up, sorted output, and a reader
 * that is bounded and reads back what the writer wrote. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "out/folded.h"
#include "unit.h"

static char san[FOLDED_FRAME_MAX + 1];

static const char *sanitize(const char *s)
{
	folded__sanitize_frame(s, s ? strlen(s) : 0, san, sizeof(san));
	return san;
}

/* Valid UTF-8 with no control characters, checked independently of folded.c. */
static int clean_utf8(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;

	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		unsigned cp;

		if (!k || i + k > n || (k == 1 && (c < 0x20 || c == 0x7f)))
			return 0;
		cp = k == 1 ? c : c & (0x7f >> k);
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
			return 0;
		i += k;
	}
	return 1;
}

static void test_sanitize_keeps_readable_forms(void)
{
	if (!ASSERT_STR_EQ(sanitize("cuMemAlloc_v2+0x1a (libcuda.so.1)"), "cuMemAlloc_v2+0x1a (libcuda.so.1)", "frame_offset"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("train_step (train.py:42)"), "train_step (train.py:42)", "frame_python"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("std::vector<int>::push_back(int const&)"), "std::vector<int>::push_back(int const&)", "frame_cpp"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("r\xc3\xa9sum\xc3\xa9 (\xe6\x97\xa5.py:1)"), "r\xc3\xa9sum\xc3\xa9 (\xe6\x97\xa5.py:1)", "sanitize(rxc3xa9sumxc3xa9 (xe6x97xa5.py:1))"))
		goto cleanup;
cleanup:;
}

static void test_sanitize_hostile_text(void)
{
	if (!ASSERT_STR_EQ(sanitize("a;b"), "a:b", "frame_semicolon"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("line\nbreak\r"), "line?break?", "sanitize(linebreakr)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("tab\there"), "tab here", "sanitize(tabthere)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("  padded  "), "padded", "sanitize( padded )"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize(""), "[unknown]", "frame_empty"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("   "), "[unknown]", "sanitize( )"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize(NULL), "[unknown]", "null_frame"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("bad\xff\xfe utf8"), "bad?? utf8", "sanitize(badxffxfe utf8)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("overlong \xc0\xaf"), "overlong ??", "sanitize(overlong xc0xaf)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("surrogate \xed\xa0\x80"), "surrogate ???", "sanitize(surrogate xedxa0x80)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("cut \xe6\x97"), "cut ??", "sanitize(cut xe6x97)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("nonchar \xef\xbf\xbe"), "nonchar ???", "sanitize(nonchar xefxbfxbe)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("del\x7f"), "del?", "sanitize(delx7f)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(sanitize("esc\x1b[31m"), "esc?[31m", "sanitize(escx1b[31m)"))
		goto cleanup;
cleanup:;
}

static void test_sanitize_bounds(void)
{
	char big[4096], small[16];
	size_t n;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	n = folded__sanitize_frame(big, strlen(big), san, sizeof(san));
	if (!ASSERT_EQ(n, FOLDED_FRAME_MAX, "long_len"))
		goto cleanup;
	if (!ASSERT_EQ(strlen(san), FOLDED_FRAME_MAX, "long_strlen"))
		goto cleanup;
	if (!ASSERT_STR_EQ(san + FOLDED_FRAME_MAX - 3, "...", "long_ellipsis"))
		goto cleanup;
	/* a 3-byte character across the limit is dropped whole, never cut in half */
	for (size_t i = 0; i + 3 <= sizeof(big) - 1; i += 3)
		memcpy(big + i, "\xe6\x97\xa5", 3);
	big[sizeof(big) - 1 - (sizeof(big) - 1) % 3] = '\0';
	n = folded__sanitize_frame(big, strlen(big), san, sizeof(san));
	if (!ASSERT_TRUE(n <= FOLDED_FRAME_MAX, "utf8_len_bounded"))
		goto cleanup;
	if (!ASSERT_TRUE(clean_utf8(san, n), "utf8_clean"))
		goto cleanup;
	if (!ASSERT_STR_EQ(san + n - 3, "...", "utf8_ellipsis"))
		goto cleanup;
	if (!ASSERT_EQ((n - 3) % 3, 0, "utf8_whole_chars"))
		goto cleanup;
	/* the caller's buffer bounds it too */
	n = folded__sanitize_frame("0123456789abcdefghij", 20, small, sizeof(small));
	if (!ASSERT_EQ(n, 15, "small_len"))
		goto cleanup;
	if (!ASSERT_STR_EQ(small, "0123456789ab...", "small_cut"))
		goto cleanup;
	/* every byte value in a frame: the result is clean UTF-8 without ';' */
	for (int b = 0; b < 256; b++) {
		char in[8] = { 'a', (char)b, (char)b, 'z', (char)0x80, (char)b, 'q', 0 };

		n = folded__sanitize_frame(in, 7, san, sizeof(san));
		if (!ASSERT_TRUE(n > 0 && clean_utf8(san, n) && !memchr(san, ';', n), "bad_utf8_cleaned"))
			goto cleanup;
	}
cleanup:;
}

static char *write_to_string(struct folded *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	if (folded__write(f, m)) {
		fclose(m);
		free(buf);
		return NULL;
	}
	fclose(m);
	return buf;
}

static void test_add_aggregates_and_writes_sorted(void)
{
	struct folded *f = folded__new();
	/* innermost first, as an unwinder gives them */
	const char *a[] = { "cuMemAlloc_v2+0x1a (libcuda.so.1)", "alloc_buffers (app.c:10)", "main (app.c:40)" };
	const char *b[] = { "cuMemAlloc_v2+0x1a (libcuda.so.1)", "grow;cache (app.c:20)", "main (app.c:40)" };
	const char *c[] = { "main (app.c:40)" };
	char *out;

	if (!ASSERT_TRUE(f, "made"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, a, 3, 1024), 0, "add_a"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, b, 3, 4096), 0, "add_b"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, a, 3, 1024), 0, "add_a_again"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, c, 1, 7), 0, "add_c"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, c, 1, 0), 0, "add_zero"))
		goto cleanup; /* nothing outstanding: nothing to draw */
	if (!ASSERT_EQ(folded__add(f, NULL, 0, 5), 0, "add_empty"))
		goto cleanup;
	if (!ASSERT_EQ(folded__count(f), 4, "stacks"))
		goto cleanup;
	if (!ASSERT_EQ(folded__total(f), 1024 + 4096 + 1024 + 7 + 5, "total"))
		goto cleanup;
	out = write_to_string(f);
	if (!ASSERT_STR_EQ(out, "[unknown] 5\n"
			   "main (app.c:40) 7\n"
			   "main (app.c:40);alloc_buffers (app.c:10);cuMemAlloc_v2+0x1a (libcuda.so.1) 2048\n"
			   "main (app.c:40);grow:cache (app.c:20);cuMemAlloc_v2+0x1a (libcuda.so.1) 4096\n", "out"))
		goto cleanup;
cleanup:
	free(out);
	folded__free(f);
	folded__free(NULL);
}

static void test_add_limits_and_saturation(void)
{
	struct folded *f = folded__new();
	const char *deep[FOLDED_DEPTH_MAX + 1];
	const char *one[] = { "x" };

	for (size_t i = 0; i <= FOLDED_DEPTH_MAX; i++)
		deep[i] = "f";
	if (!ASSERT_EQ(folded__add(f, deep, FOLDED_DEPTH_MAX + 1, 1), -E2BIG, "too_deep_refused"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, deep, FOLDED_DEPTH_MAX, 1), 0, "deepest_added"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, one, 1, UINT64_MAX - 1), 0, "near_max_added"))
		goto cleanup;
	if (!ASSERT_EQ(folded__add(f, one, 1, 5), 0, "saturating_add"))
		goto cleanup;
	{
		const struct folded_stack *s;
		size_t n = folded__sorted(f, &s);

		if (!ASSERT_EQ(n, 2, "stacks"))
			goto cleanup;
		if (!ASSERT_EQ(s[0].depth, FOLDED_DEPTH_MAX, "deepest_depth"))
			goto cleanup;
		if (!ASSERT_STR_EQ(s[1].stack, "x", "one_stack"))
			goto cleanup;
		if (!ASSERT_TRUE(s[1].value == UINT64_MAX, "saturated_value"))
			goto cleanup;
	}
	if (!ASSERT_TRUE(folded__total(f) == UINT64_MAX, "saturated_total"))
		goto cleanup;
cleanup:
	folded__free(f);
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Many random stacks: the written lines, read back, sum to the same totals per stack. */
static void test_round_trip_random(void)
{
	static const char *vocab[] = { "main (a.c:1)", "run_epoch (train.py:88)", "forward",
				       "torch::autograd::engine", "cuMemAlloc_v2+0x10 (libcuda.so.1)",
				       "cudaMalloc (libcudart.so.13)", "a;b", "\xce\xbb (m.py:3)" };
	struct folded *f = folded__new(), *g = folded__new();
	struct folded_read_stats st;
	const struct folded_stack *s1, *s2;
	char *out, err[128] = "";
	uint64_t want = 0;
	size_t n1, n2;
	FILE *in;

	for (int i = 0; i < 5000; i++) {
		const char *fr[12];
		size_t depth = 1 + next64() % 12;
		uint64_t v = next64() % 100000;

		for (size_t d = 0; d < depth; d++)
			fr[d] = vocab[next64() % (sizeof(vocab) / sizeof(vocab[0]))];
		if (!ASSERT_EQ(folded__add(f, fr, depth, v), 0, "random_added"))
			goto cleanup;
		want += v;
	}
	if (!ASSERT_TRUE(folded__total(f) == want, "random_total"))
		goto cleanup;
	out = write_to_string(f);
	if (!ASSERT_TRUE(out, "written"))
		goto cleanup;
	in = fmemopen(out, strlen(out), "r");
	if (!ASSERT_EQ(folded__read(g, in, &st, err, sizeof(err)), 0, "read_back"))
		goto cleanup;
	fclose(in);
	if (!ASSERT_EQ(st.skipped, 0, "none_skipped"))
		goto cleanup;
	if (!ASSERT_EQ(st.stacks, folded__count(f), "stacks_read"))
		goto cleanup;
	if (!ASSERT_TRUE(folded__total(g) == want, "total_read"))
		goto cleanup;
	n1 = folded__sorted(f, &s1);
	n2 = folded__sorted(g, &s2);
	if (!ASSERT_EQ(n1, n2, "same_count"))
		goto cleanup;
	for (size_t i = 0; i < n1; i++) {
		if (!ASSERT_STR_EQ(s1[i].stack, s2[i].stack, "same_stack"))
			goto cleanup;
		if (!ASSERT_TRUE(s1[i].value == s2[i].value, "same_value"))
			goto cleanup;
		if (!ASSERT_EQ(s1[i].depth, s2[i].depth, "same_depth"))
			goto cleanup;
	}
cleanup:
	free(out);
	folded__free(f);
	folded__free(g);
}

static void test_reader_skips_and_counts(void)
{
	size_t big = FOLDED_LINE_MAX + 100, deep = FOLDED_DEPTH_MAX + 1, o = 0;
	char *text = malloc(big + deep * 2 + 1024), err[128] = "";
	struct folded *f = folded__new();
	struct folded_read_stats st;
	const struct folded_stack *s;
	FILE *in;

	if (!ASSERT_TRUE(text && f, "opened"))
		goto cleanup;
	o += sprintf(text + o, "a;b 10\r\n");				/* 1: CRLF */
	o += sprintf(text + o, "\n");					/* 2: blank */
	o += sprintf(text + o, "a;b 5\n");				/* 3: adds up with 1 */
	o += sprintf(text + o, "no value here\n");			/* 4: malformed */
	o += sprintf(text + o, "a;b 18446744073709551616\n");		/* 5: past 64 bits */
	o += sprintf(text + o, "a;b 1.5\n");				/* 6: not an integer */
	o += sprintf(text + o, " 7\n");					/* 7: no stack */
	memset(text + o, 'x', big);					/* 8: too long */
	o += big;
	o += sprintf(text + o, " 1\n");
	for (size_t i = 0; i < deep; i++)				/* 9: too deep */
		text[o++] = 'f', text[o++] = ';';
	o--;
	o += sprintf(text + o, " 1\n");
	memcpy(text + o, "nul\0byte 3\n", 11);				/* 10: a NUL byte */
	o += 11;
	o += sprintf(text + o, "c;d e;f 18446744073709551615\n");	/* 11: spaces in frames */
	o += sprintf(text + o, "a;b 2");				/* 12: no final newline */
	in = fmemopen(text, o, "r");
	if (!ASSERT_EQ(folded__read(f, in, &st, err, sizeof(err)), 0, "read"))
		goto cleanup;
	fclose(in);
	if (!ASSERT_EQ(st.lines, 12, "lines"))
		goto cleanup;
	if (!ASSERT_EQ(st.stacks, 4, "stacks"))
		goto cleanup;
	if (!ASSERT_EQ(st.skipped, 7, "skipped"))
		goto cleanup;
	if (!ASSERT_EQ(st.malformed, 5, "malformed"))
		goto cleanup;
	if (!ASSERT_EQ(st.too_long, 1, "too_long"))
		goto cleanup;
	if (!ASSERT_EQ(st.too_deep, 1, "too_deep"))
		goto cleanup;
	if (!ASSERT_EQ(st.first_bad_line, 4, "first_bad_line"))
		goto cleanup;
	if (!ASSERT_EQ(folded__sorted(f, &s), 2, "sorted"))
		goto cleanup;
	if (!ASSERT_STR_EQ(s[0].stack, "a;b", "first_stack"))
		goto cleanup;
	if (!ASSERT_EQ(s[0].value, 17, "first_value"))
		goto cleanup;
	if (!ASSERT_STR_EQ(s[1].stack, "c;d e;f", "second_stack"))
		goto cleanup;
	if (!ASSERT_TRUE(s[1].value == UINT64_MAX, "second_value_saturated"))
		goto cleanup;
cleanup:
	free(text);
	folded__free(f);
}

static void test_reader_stack_count_limit(void)
{
	size_t n = FOLDED_STACKS_MAX + 3, cap = n * 16, o = 0;
	char *text = malloc(cap), err[128] = "";
	struct folded *f = folded__new();
	struct folded_read_stats st;
	FILE *in;

	if (!ASSERT_TRUE(text && f, "opened"))
		goto cleanup;
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(text + o, cap - o, "s%zu 1\n", i);
	in = fmemopen(text, o, "r");
	if (!ASSERT_EQ(folded__read(f, in, &st, err, sizeof(err)), 0, "read"))
		goto cleanup;
	fclose(in);
	if (!ASSERT_EQ(folded__count(f), FOLDED_STACKS_MAX, "stacks_capped"))
		goto cleanup;
	if (!ASSERT_EQ(st.too_many, 3, "too_many"))
		goto cleanup;
	if (!ASSERT_EQ(st.first_bad_line, FOLDED_STACKS_MAX + 1, "first_bad_line"))
		goto cleanup;
	if (!ASSERT_TRUE(folded__total(f) == FOLDED_STACKS_MAX, "total_capped"))
		goto cleanup;
cleanup:
	free(text);
	folded__free(f);
}

int main(void)
{
	RUN_TEST(test_sanitize_keeps_readable_forms);
	RUN_TEST(test_sanitize_hostile_text);
	RUN_TEST(test_sanitize_bounds);
	RUN_TEST(test_add_aggregates_and_writes_sorted);
	RUN_TEST(test_add_limits_and_saturation);
	RUN_TEST(test_round_trip_random);
	RUN_TEST(test_reader_skips_and_counts);
	RUN_TEST(test_reader_stack_count_limit);
	return unit_done();
}
