/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Minimal TAP-style unit test harness, header only.
 *
 * Each test is a void function; a failed ASSERT_* prints file:line with the
 * actual and expected values and returns from the test. RUN_TEST prints
 * "ok N - name" / "not ok N - name"; unit_done() prints the final
 * "N passed, M failed" line (which the Makefile aggregates) and returns the
 * exit status.
 */
#ifndef GPUPROBE_UNIT_H
#define GPUPROBE_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_tests_run, unit_tests_passed, unit_tests_failed;
static int unit_asserts_passed, unit_asserts_failed;
static int unit_cur_failed;

#define UNIT_FAIL_(...)							\
	do {								\
		printf("#   %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		unit_asserts_failed++;					\
		unit_cur_failed = 1;					\
	} while (0)

#define ASSERT_TRUE(cond)						\
	do {								\
		if (!(cond)) {						\
			UNIT_FAIL_("ASSERT_TRUE(%s) is false", #cond);	\
			return;						\
		}							\
		unit_asserts_passed++;					\
	} while (0)

/* integers of any kind, compared as long long */
#define ASSERT_EQ(actual, expected)					\
	do {								\
		long long a_ = (long long)(actual);			\
		long long e_ = (long long)(expected);			\
		if (a_ != e_) {						\
			UNIT_FAIL_("ASSERT_EQ(%s, %s): actual %lld (0x%llx), expected %lld (0x%llx)", \
				   #actual, #expected, a_,		\
				   (unsigned long long)a_, e_,		\
				   (unsigned long long)e_);		\
			return;						\
		}							\
		unit_asserts_passed++;					\
	} while (0)

#define ASSERT_STR_EQ(actual, expected)					\
	do {								\
		const char *a_ = (actual), *e_ = (expected);		\
		if (!a_ || !e_ || strcmp(a_, e_) != 0) {		\
			UNIT_FAIL_("ASSERT_STR_EQ(%s, %s): actual \"%s\", expected \"%s\"", \
				   #actual, #expected,			\
				   a_ ? a_ : "(null)", e_ ? e_ : "(null)"); \
			return;						\
		}							\
		unit_asserts_passed++;					\
	} while (0)

#define ASSERT_STR_CONTAINS(haystack, needle)				\
	do {								\
		const char *h_ = (haystack), *n_ = (needle);		\
		if (!h_ || !n_ || !strstr(h_, n_)) {			\
			UNIT_FAIL_("ASSERT_STR_CONTAINS(%s, %s): \"%s\" lacks \"%s\"", \
				   #haystack, #needle,			\
				   h_ ? h_ : "(null)", n_ ? n_ : "(null)"); \
			return;						\
		}							\
		unit_asserts_passed++;					\
	} while (0)

static inline void unit_run(const char *name, void (*fn)(void))
{
	unit_cur_failed = 0;
	fn();
	unit_tests_run++;
	if (unit_cur_failed) {
		unit_tests_failed++;
		printf("not ok %d - %s\n", unit_tests_run, name);
	} else {
		unit_tests_passed++;
		printf("ok %d - %s\n", unit_tests_run, name);
	}
	fflush(stdout);
}

#define RUN_TEST(fn) unit_run(#fn, fn)

static inline int unit_done(void)
{
	printf("# %d assertions passed, %d failed\n", unit_asserts_passed,
	       unit_asserts_failed);
	printf("%d passed, %d failed\n", unit_tests_passed, unit_tests_failed);
	return unit_tests_failed ? 1 : 0;
}

#endif /* GPUPROBE_UNIT_H */
