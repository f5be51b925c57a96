/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Minimal TAP-style unit test harness, header only, in the kernel selftests' style:
 *
 *	if (!ASSERT_EQ(got, want, "allocations outstanding"))
 *		goto cleanup;
 *
 * Every check is named and returns whether it held, so a test reaches its cleanup. A
 * failed check prints file:line, its name and the actual and expected values. RUN_TEST
 * prints "ok N - name" / "not ok N - name"; unit_done() prints the final "N passed, M
 * failed" line that tests/run.sh adds up. Tests are selectable by name: the arguments of
 * the test binary (unit_select) are substrings of the tests to run.
 */
#ifndef GPUPROBE_UNIT_H
#define GPUPROBE_UNIT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int unit_tests_run, unit_tests_passed, unit_tests_failed, unit_tests_skipped;
static int unit_asserts_passed, unit_asserts_failed;
static int unit_cur_failed;
static const char *unit_cur_skip;

/* A test that cannot run here returns through this: "ok N - name # SKIP reason", counted
 * as a skip (tests/run.sh adds them up), never a silent pass. */
#define UNIT_SKIP(reason)                                                                          \
	do {                                                                                       \
		unit_cur_skip = (reason);                                                          \
		return;                                                                            \
	} while (0)
static char **unit_only;
static int unit_nr_only;

__attribute__((format(printf, 4, 5), unused))
static bool unit_fail(const char *file, int line, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("#   %s:%d: %s: ", file, line, name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	unit_asserts_failed++;
	unit_cur_failed = 1;
	return false;
}

static inline bool unit_pass(void)
{
	unit_asserts_passed++;
	return true;
}

#define ASSERT_TRUE(cond, name)                                                                    \
	((cond) ? unit_pass() : unit_fail(__FILE__, __LINE__, name, "ASSERT_TRUE(%s) is false", #cond))

#define ASSERT_FALSE(cond, name)                                                                   \
	(!(cond) ? unit_pass() : unit_fail(__FILE__, __LINE__, name, "ASSERT_FALSE(%s) is true", #cond))

/* integers of any kind, compared as long long */
#define ASSERT_EQ(actual, expected, name)                                                          \
	unit_eq((long long)(actual), (long long)(expected), #actual, #expected, name, __FILE__, __LINE__)

static inline bool unit_eq(long long a, long long e, const char *as, const char *es, const char *name,
			   const char *file, int line)
{
	if (a == e)
		return unit_pass();
	return unit_fail(file, line, name, "ASSERT_EQ(%s, %s): actual %lld (0x%llx), expected %lld (0x%llx)",
			 as, es, a, (unsigned long long)a, e, (unsigned long long)e);
}

#define ASSERT_STR_EQ(actual, expected, name)                                                      \
	unit_str_eq(actual, expected, #actual, #expected, name, __FILE__, __LINE__)

static inline bool unit_str_eq(const char *a, const char *e, const char *as, const char *es,
			       const char *name, const char *file, int line)
{
	if (a && e && !strcmp(a, e))
		return unit_pass();
	return unit_fail(file, line, name, "ASSERT_STR_EQ(%s, %s): actual \"%s\", expected \"%s\"", as, es,
			 a ? a : "(null)", e ? e : "(null)");
}

#define ASSERT_STR_CONTAINS(haystack, needle, name)                                                \
	unit_str_contains(haystack, needle, #haystack, #needle, name, __FILE__, __LINE__)

static inline bool unit_str_contains(const char *h, const char *n, const char *hs, const char *ns,
				     const char *name, const char *file, int line)
{
	if (h && n && strstr(h, n))
		return unit_pass();
	return unit_fail(file, line, name, "ASSERT_STR_CONTAINS(%s, %s): \"%s\" lacks \"%s\"", hs, ns,
			 h ? h : "(null)", n ? n : "(null)");
}

/* The tests to run: those whose names contain one of argv[1..]; all when none given. */
static inline void unit_select(int argc, char **argv)
{
	unit_only = argv + 1;
	unit_nr_only = argc > 1 ? argc - 1 : 0;
}

static inline bool unit_selected(const char *name)
{
	for (int i = 0; i < unit_nr_only; i++)
		if (strstr(name, unit_only[i]))
			return true;
	return unit_nr_only == 0;
}

static inline void unit_run(const char *name, void (*fn)(void))
{
	if (!unit_selected(name))
		return;
	unit_cur_failed = 0;
	unit_cur_skip = NULL;
	fn();
	unit_tests_run++;
	if (unit_cur_skip && !unit_cur_failed) {
		unit_tests_skipped++;
		printf("ok %d - %s # SKIP %s\n", unit_tests_run, name, unit_cur_skip);
	} else if (unit_cur_failed) {
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
	printf("# %d assertions passed, %d failed\n", unit_asserts_passed, unit_asserts_failed);
	printf("%d passed, %d failed, %d skipped\n", unit_tests_passed, unit_tests_failed, unit_tests_skipped);
	return unit_tests_failed ? 1 : 0;
}

#endif /* GPUPROBE_UNIT_H */
