/* SPDX-License-Identifier: BSD-3-Clause */
/* The text reports' conventions (src/out/text.h, docs/design.md "Output conventions"):
 * grouped digits, human units with the exact figure beside them, singular and plural,
 * scaled durations and SI rates, and stacks that fold interpreter and FFI frames. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "out/text.h"
#include "lib/util.h"
#include "unit.h"

static void test_numbers(void)
{
	if (!ASSERT_STR_EQ(gp_text__count(0).s, "0", "0") || !ASSERT_STR_EQ(gp_text__count(999).s, "999", "999") ||
	    !ASSERT_STR_EQ(gp_text__count(1000).s, "1,000", "1,000") ||
	    !ASSERT_STR_EQ(gp_text__count(12582912).s, "12,582,912", "grouped") ||
	    !ASSERT_STR_EQ(gp_text__count(18446744073709551615ULL).s, "18,446,744,073,709,551,615", "the largest"))
		return;
	if (!ASSERT_STR_EQ(gp_text__n(1, "allocation", "allocations").s, "1 allocation", "one") ||
	    !ASSERT_STR_EQ(gp_text__n(0, "allocation", "allocations").s, "0 allocations", "none") ||
	    !ASSERT_STR_EQ(gp_text__n(1200, "launch", "launches").s, "1,200 launches", "many"))
		return;
	if (!ASSERT_STR_EQ(gp_text__bytes_exact(512).s, "512 B", "small: exact alone") ||
	    !ASSERT_STR_EQ(gp_text__bytes_exact(1000).s, "1,000 B", "small: its digits grouped") ||
	    !ASSERT_STR_EQ(gp_text__bytes(1023).s, "1,023 B", "table: its digits grouped") ||
	    !ASSERT_STR_EQ(gp_text__bytes_exact(12582912).s, "12.0 MiB (12,582,912 B)", "human, then exact") ||
	    !ASSERT_STR_EQ(gp_text__bytes(3158016).s, "3.01 MiB", "IEC, three digits"))
		return;
	if (!ASSERT_STR_EQ(gp_text__duration(0.002490).s, "2.49 ms", "scaled") ||
	    !ASSERT_STR_EQ(gp_text__duration(3.4e-6).s, "3.40 us", "us") || !ASSERT_STR_EQ(gp_text__duration(-1).s, "-", "none") ||
	    !ASSERT_STR_EQ(gp_text__rate(52e9).s, "52.0 GB/s", "SI rate") ||
	    !ASSERT_STR_EQ(gp_text__per_s(3336.46).s, "3,336.5/s", "a count per second"))
		return;
}

static char *stack_text(const char *const *frames, size_t n, bool all, size_t *folded)
{
	static char buf[4096];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	*folded = gp_text__stack(f, frames, n, "  ", all);
	fclose(f);
	return buf;
}

static void test_stack_folding(void)
{
	static const char *const frames[] = {
		"cuMemAlloc_v2+0x0 (libcuda.so.1) at fakecuda.c:2554",
		"ffi_call_unix64+0x4c (libffi.so.8.1.2)",
		"ffi_call+0xcd (libffi.so.8.1.2)",
		"_ctypes_callproc+0x2a1 (_ctypes.cpython-311-x86_64-linux-gnu.so)",
		"_PyObject_MakeTpCall+0x223 (python3.11)",
		"leak_buffer (/app/pyalloc.py:27)",
		"_PyEval_Vector+0x11 (libpython3.11.so.1.0)",
		"main (/app/pyalloc.py:98)",
		"Py_RunMain+0x20f (python3.11)",
		"Py_BytesMain+0x2b (python3.11)",
		"_start+0x21 (python3.11)",
	};
	size_t folded;
	char *t = stack_text(frames, sizeof(frames) / sizeof(frames[0]), false, &folded);

	if (!ASSERT_EQ(folded, 7, "the runs of two or more") ||
	    !ASSERT_STR_EQ(t, "  cuMemAlloc_v2+0x0 (libcuda.so.1) at fakecuda.c:2554\n"
			      "  [4 interpreter and FFI frames (libffi, _ctypes, python3.11); -v shows them]\n"
			      "  leak_buffer (/app/pyalloc.py:27)\n"
			      "  _PyEval_Vector+0x11 (libpython3.11.so.1.0)\n"
			      "  main (/app/pyalloc.py:98)\n"
			      "  [3 interpreter and FFI frames (python3.11); -v shows them]\n", "folded"))
		return;
	t = stack_text(frames, sizeof(frames) / sizeof(frames[0]), true, &folded);
	if (!ASSERT_EQ(folded, 0, "-v: every frame") || !ASSERT_STR_CONTAINS(t, "  ffi_call+0xcd (libffi.so.8.1.2)\n", "shown"))
		return;
	if (!ASSERT_TRUE(gp_text__internal_frame("_PyEval_EvalFrameDefault+0x1 (libpython3.12.so.1.0) at ceval.c:9"), "libpython") ||
	    !ASSERT_FALSE(gp_text__internal_frame("leak (train.py:3)"), "a Python line") ||
	    !ASSERT_FALSE(gp_text__internal_frame("main+0x2a5 (memleak_app) at memleak_app.c:523"), "the user's") ||
	    !ASSERT_FALSE(gp_text__internal_frame("f (/opt/python3/lib/x.so)"), "a path is no interpreter") ||
	    !ASSERT_FALSE(gp_text__internal_frame("0x7f0000001000"), "no file"))
		return;
}

/* gp_sanitize on a copy of in (n bytes, NULs allowed): the text it leaves */
static const char *sanitized(const char *in, size_t n, bool lines)
{
	static char buf[256];

	memcpy(buf, in, n);
	buf[gp_sanitize(buf, n, lines)] = '\0';
	return buf;
}

/* Names a traced process chooses (docs/security.md, "Names on the terminal"): each control
 * character, bidi formatting character and byte that is not valid UTF-8 is one '?';
 * valid UTF-8 stays. */
static void test_sanitize(void)
{
	static const struct { const char *in, *want, *name; } c[] = {
		{ "vecAdd(float*)", "vecAdd(float*)", "printable ASCII as it is" },
		{ "a\x1b[31mred", "a?[31mred", "ESC" },
		{ "\r\a\b\x7f", "????", "CR, BEL, BS, DEL" },
		{ "x\xc2\x9b" "2J", "x?2J", "C1 CSI as UTF-8: one '?'" },
		{ "x\x9b" "2J", "x?2J", "C1 as a raw byte (not UTF-8)" },
		{ "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
		  "valid UTF-8 stays (2, 3 and 4 bytes)" },
		{ "\xc2\xa0", "\xc2\xa0", "U+00A0, past C1, stays" },
		{ "\xff\xfe", "??", "bytes never in UTF-8" },
		{ "\xc0\xaf", "??", "an overlong '/'" },
		{ "\xed\xa0\x80", "???", "a surrogate" },
		{ "\xf4\x90\x80\x80", "????", "past U+10FFFF" },
		{ "ab\xe6\x97", "ab??", "a sequence cut at the end" },
		{ "\xe6" "a", "?a", "a start without its continuation" },
		{ "x\xe2\x80\xaey", "x?y", "U+202E RIGHT-TO-LEFT OVERRIDE" },
		{ "x\xe2\x81\xa6y", "x?y", "U+2066 LEFT-TO-RIGHT ISOLATE" },
		{ "a\nb\tc", "a?b?c", "'\\n' and '\\t' in a name" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (!ASSERT_STR_EQ(sanitized(c[i].in, strlen(c[i].in), false), c[i].want, c[i].name))
			return;
	if (!ASSERT_STR_EQ(sanitized("a\nb\tc\r", 6, true), "a\nb\tc?", "lines: '\\n' and '\\t' stay") ||
	    !ASSERT_STR_EQ(sanitized("a\0b", 3, false), "a?b", "a NUL inside"))
		return;
	{
		char s[] = "k\x1b]0;x\a";

		if (!ASSERT_TRUE(gp_sanitize_str(s) == s, "gp_sanitize_str returns its argument") ||
		    !ASSERT_STR_EQ(s, "k?]0;x?", "gp_sanitize_str") || !ASSERT_TRUE(!gp_sanitize_str(NULL), "NULL"))
			return;
	}
}

/* The report streams: what reaches the file under gp_text__safe_stream. */
static void test_safe_stream(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *inner = open_memstream(&buf, &len), *f;

	if (!ASSERT_TRUE(inner != NULL, "memstream"))
		return;
	f = gp_text__safe_stream(inner, false);
	if (!ASSERT_TRUE(f != NULL, "the stream"))
		return;
	fprintf(f, "PID 1 (%s) exited\n\t%s\n", "a\x1b[31mred", "caf\xc3\xa9\xc2\x9b");
	/* a character cut across two writes of the stream is whole */
	fputs("\xe6", f);
	fflush(f);
	fputs("\x97", f);
	fflush(f);
	fputs("\xa5|", f);
	fflush(f);
	/* and a start the next write does not complete is one '?', the rest read afresh */
	fputs("\xe6", f);
	fflush(f);
	fputs("ab", f);
	fputs("\xf0\x9f", f); /* cut at the close: '?' each */
	if (!ASSERT_EQ(fclose(f), 0, "close"))
		return;
	fflush(inner);
	ASSERT_STR_EQ(buf, "PID 1 (a?[31mred) exited\n\tcaf\xc3\xa9?\n\xe6\x97\xa5|?ab??", "filtered");
	fclose(inner);
	free(buf);
	if (!ASSERT_TRUE(gp_text__safe_stream(NULL, false) == NULL, "NULL inner"))
		return;
}

/* Whether s (n bytes) is valid UTF-8 with no character the rule replaces ('\n', '\t' aside):
 * checked byte by byte, apart from gp_safe_char. */
static bool clean_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = s[i] < 0x80 ? 1 : (s[i] & 0xe0) == 0xc0 ? 2 : (s[i] & 0xf0) == 0xe0 ? 3 :
			   (s[i] & 0xf8) == 0xf0 ? 4 : 0;

		if (!k || i + k > n)
			return false;
		cp = k == 1 ? s[i] : s[i] & (0x7f >> k);
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		if ((cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f) ||
		    cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
			return false;
		i += k;
	}
	return true;
}

/* Random bytes (biased to UTF-8 starts, continuations and controls), written through the
 * stream in random pieces: the file is clean, and the same as gp_sanitize of the whole. */
static void test_safe_stream_random(void)
{
	static const unsigned char pick[] = { 0x1b, '\r', '\n', '\t', 0x07, 0x7f, 0x80, 0x9b, 0xbf, 0xc2,
					      0xc3, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 'a', ';' };
	unsigned int seed = 12345;

	for (int round = 0; round < 2000; round++) {
		unsigned char in[64], want[64];
		size_t n = (size_t)rand_r(&seed) % sizeof(in), wn, len = 0;
		char *buf = NULL;
		FILE *inner = open_memstream(&buf, &len), *f = gp_text__safe_stream(inner, false);

		if (!ASSERT_TRUE(inner && f, "streams"))
			return;
		for (size_t i = 0; i < n; i++)
			in[i] = rand_r(&seed) % 3 ? pick[rand_r(&seed) % sizeof(pick)] : (unsigned char)rand_r(&seed);
		for (size_t i = 0; i < n;) {
			size_t k = 1 + (size_t)rand_r(&seed) % 5;

			k = k > n - i ? n - i : k;
			fwrite(in + i, 1, k, f);
			if (rand_r(&seed) % 2)
				fflush(f);
			i += k;
		}
		fclose(f);
		fflush(inner);
		memcpy(want, in, n);
		wn = gp_sanitize((char *)want, n, true);
		if (!ASSERT_TRUE(clean_utf8((unsigned char *)buf, len), "clean UTF-8") ||
		    !ASSERT_TRUE(clean_utf8(want, wn), "gp_sanitize: clean UTF-8") ||
		    !ASSERT_TRUE(len == wn && !memcmp(buf, want, wn), "the stream as gp_sanitize of the whole")) {
			fclose(inner);
			free(buf);
			return;
		}
		fclose(inner);
		free(buf);
	}
}

static int vprint(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int vprint(FILE *f, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = gp_vfprintf_safe(f, fmt, ap);
	va_end(ap);
	return r;
}

/* libbpf's messages (they may name a library path): the rule, lines kept. */
static void test_vfprintf_safe(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!ASSERT_TRUE(f != NULL, "memstream"))
		return;
	ASSERT_EQ(vprint(f, "libbpf: failed to open '%s'\n", "/x\x1b[2J\xc2\x9b/libcuda.so.1"), 46, "bytes written");
	fclose(f);
	ASSERT_STR_EQ(buf, "libbpf: failed to open '/x?[2J?/libcuda.so.1'\n", "sanitized, its newline kept");
	free(buf);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_numbers);
	RUN_TEST(test_stack_folding);
	RUN_TEST(test_sanitize);
	RUN_TEST(test_safe_stream);
	RUN_TEST(test_safe_stream_random);
	RUN_TEST(test_vfprintf_safe);
	return unit_done();
}
