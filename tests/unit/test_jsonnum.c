/* SPDX-License-Identifier: BSD-3-Clause */
/* Numbers in JSON (shortest round trip, exact microseconds) and in text (units). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include "out/jsonnum.h"
#include "unit.h"

static const char *shortest(double v)
{
	static char buf[NUM_SHORTEST_MAX];

	if (num__shortest(v, buf, sizeof(buf)) < 0)
		return "(error)";
	return buf;
}

static void test_shortest_known_values(void)
{
	/* the example: json-c printed 6.7590350000000005e-07 */
	if (!ASSERT_STR_EQ(shortest(6.759035e-07), "6.759035e-07", "small_exponent"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(0.1), "0.1", "one_tenth"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(0.1 + 0.2), "0.30000000000000004", "sum_rounding"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(1.5), "1.5", "one_and_half"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(-2.25), "-2.25", "negative"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(0), "0", "zero"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(1500000000.0), "1500000000", "large_integer"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(12345678901234567.0), "12345678901234568", "past_2_53"))
		goto cleanup; /* %.17g: fixed */
	if (!ASSERT_STR_EQ(shortest(-59258725687668448.0), "-5.925872568766845e+16", "negative_past_2_53"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(1e300), "1e+300", "huge"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(5e-324), "5e-324", "smallest_subnormal"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(1234.567), "1234.567", "decimal"))
		goto cleanup;
	if (!ASSERT_STR_EQ(shortest(1.0 / 3), "0.3333333333333333", "one_third"))
		goto cleanup;
cleanup:;
}

static void test_shortest_errors(void)
{
	char small[4];

	if (!ASSERT_EQ(num__shortest(NAN, small, sizeof(small)), -EDOM, "nan_refused"))
		goto cleanup;
	if (!ASSERT_EQ(num__shortest(INFINITY, small, sizeof(small)), -EDOM, "infinity_refused"))
		goto cleanup;
	if (!ASSERT_EQ(num__shortest(-INFINITY, small, sizeof(small)), -EDOM, "minus_infinity_refused"))
		goto cleanup;
	if (!ASSERT_EQ(num__shortest(0.125, small, sizeof(small)), -ENOSPC, "too_small_buffer"))
		goto cleanup;
	if (!ASSERT_EQ(num__shortest(0.25, small, sizeof(small)), -ENOSPC, "too_small_by_one"))
		goto cleanup;
	if (!ASSERT_EQ(num__shortest(0.5, small, sizeof(small)), 3, "fits_buffer"))
		goto cleanup;
	if (!ASSERT_STR_EQ(small, "0.5", "fitted_text"))
		goto cleanup;
cleanup:;
}

/* xorshift64*: reproducible bit patterns, so every kind of double is tried */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next64(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static int sig_digits(const char *s)
{
	int n = 0, lead = 1;

	for (; *s && *s != 'e'; s++) {
		if (*s < '0' || *s > '9')
			continue;
		if (lead && *s == '0')
			continue;
		lead = 0;
		n++;
	}
	return n;
}

/* Every finite double reads back exactly, and no text with one digit fewer does. */
static void test_shortest_round_trips(void)
{
	for (int i = 0; i < 200000; i++) {
		uint64_t bits = next64();
		double v, back;
		char buf[NUM_SHORTEST_MAX], fewer[400];
		int n, d;

		if (i % 4 == 0) /* everyday magnitudes too, not only random exponents */
			v = (double)(bits >> 11) / (double)(1ULL << (bits & 31));
		else
			memcpy(&v, &bits, sizeof(v));
		if (!isfinite(v))
			continue;
		n = num__shortest(v, buf, sizeof(buf));
		if (!ASSERT_TRUE(n > 0 && n < NUM_SHORTEST_MAX, "length_in_range"))
			goto cleanup;
		back = strtod(buf, NULL);
		if (memcmp(&back, &v, sizeof(v)) && !(v == 0 && back == 0)) {
			printf("#   %.17g printed as %s\n", v, buf);
			if (!ASSERT_TRUE(0, "round_trip"))
				goto cleanup;
		}
		d = sig_digits(buf);
		if (strchr(buf, 'e') || strchr(buf, '.')) {
			snprintf(fewer, sizeof(fewer), "%.*g", d - 1, v);
			if (d > 1 && strtod(fewer, NULL) == v) {
				printf("#   %s is shorter than %s\n", fewer, buf);
				if (!ASSERT_TRUE(0, "fewest_digits"))
					goto cleanup;
			}
		}
	}
cleanup:;
}

/* Python's repr is the reference for shortest round trip (Gay's algorithm): the same
 * significant digits for a sample of doubles. */
static void test_shortest_matches_python_repr(void)
{
	char path[] = "/tmp/gp-jsonnum-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w+") : NULL;
	char cmd[1024], line[128];
	FILE *p;
	int n = 0, same = 0;

	if (!ASSERT_TRUE(f, "tmpfile_open"))
		goto cleanup;
	rng = 12345;
	for (int i = 0; i < 2000; i++) {
		uint64_t bits = next64();
		double v;

		memcpy(&v, &bits, sizeof(v));
		if (!isfinite(v))
			continue;
		fprintf(f, "%s\n", shortest(v));
		n++;
	}
	fclose(f);
	/* python reads each text back as a float and prints repr: equal digits, equal values */
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import sys\nfor l in open(sys.argv[1]):\n s=l.strip(); r=repr(float(s))\n"
		 " print(int(float(s)==float(r) and s.lstrip(\"-\").split(\"e\")[0].replace(\".\",\"\").strip(\"0\")"
		 "==r.lstrip(\"-\").split(\"e\")[0].replace(\".\",\"\").strip(\"0\")), s, r)' %s", path);
	p = popen(cmd, "r");
	if (!ASSERT_TRUE(p, "python_started"))
		goto cleanup;
	while (fgets(line, sizeof(line), p)) {
		if (line[0] == '1')
			same++;
		else
			printf("#   differs from repr: %s", line);
	}
	if (!ASSERT_EQ(pclose(p), 0, "python_status"))
		goto cleanup;
	unlink(path);
	if (!ASSERT_EQ(same, n, "same_as_repr"))
		goto cleanup;
	if (!ASSERT_TRUE(n > 1900, "sample_size"))
		goto cleanup;
cleanup:;
}

static void test_json_double_and_us(void)
{
	json_object *o = json_object_new_object();
	const char *s;

	json_object_object_add(o, "a", num__json_double(6.759035e-07));
	json_object_object_add(o, "b", num__json_double(NAN));
	json_object_object_add(o, "ts", num__json_us(1234567));
	json_object_object_add(o, "t0", num__json_us(5000));
	json_object_object_add(o, "t1", num__json_us(1));
	json_object_object_add(o, "t2", num__json_us(18446744073709551615ULL));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (!ASSERT_STR_EQ(s, "{\"a\":6.759035e-07,\"b\":null,\"ts\":1234.567,\"t0\":5,\"t1\":0.001,"
			 "\"t2\":18446744073709551.615}", "json_text"))
		goto cleanup;
	{
		json_object *a = NULL;

		json_object_object_get_ex(o, "a", &a);
		if (!ASSERT_TRUE(json_object_get_double(a) == 6.759035e-07, "double_kept"))
			goto cleanup;
	}
cleanup:
	json_object_put(o);
}

static void test_bytes(void)
{
	char b[32];
	static const struct { uint64_t v; const char *want; } cases[] = {
		{ 0, "0 B" }, { 1023, "1023 B" }, { 1024, "1.00 KiB" }, { 1536, "1.50 KiB" },
		{ 10 * 1024 - 1, "10.0 KiB" }, { 123456, "121 KiB" }, { 1024 * 1000, "1000 KiB" },
		{ 1024 * 1023 + 600, "1.00 MiB" }, { 1ULL << 20, "1.00 MiB" },
		{ 3ULL << 30, "3.00 GiB" }, { 141ULL << 30, "141 GiB" }, { UINT64_MAX, "16.0 EiB" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		num__bytes(cases[i].v, b, sizeof(b));
		if (!ASSERT_STR_EQ(b, cases[i].want, "bytes_text"))
			goto cleanup;
	}
cleanup:;
}

static void test_seconds(void)
{
	char b[32];
	static const struct { double v; const char *want; } cases[] = {
		{ 0, "0 ns" }, { 850e-9, "850 ns" }, { 999.7e-9, "1.00 us" }, { 12.5e-6, "12.5 us" },
		{ 3.2e-3, "3.20 ms" }, { 0.99996, "1.00 s" }, { 1.25, "1.25 s" }, { 59.9, "59.9 s" },
		{ 125, "2m 05s" }, { 3599.4, "59m 59s" }, { 3600, "1h 00m" }, { 11220, "3h 07m" },
		{ -1, "-" }, { NAN, "-" }, { INFINITY, "-" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		num__seconds(cases[i].v, b, sizeof(b));
		if (!ASSERT_STR_EQ(b, cases[i].want, "seconds_text"))
			goto cleanup;
	}
cleanup:;
}

static void test_rate(void)
{
	char b[32];
	static const struct { double v; const char *want; } cases[] = {
		{ 0, "0 B/s" }, { 950, "950 B/s" }, { 999.6, "1.00 kB/s" }, { 12.5e6, "12.5 MB/s" },
		{ 52e9, "52.0 GB/s" }, { 450e9, "450 GB/s" }, { 0.5, "0.5 B/s" }, { -3, "-" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		num__rate(cases[i].v, b, sizeof(b));
		if (!ASSERT_STR_EQ(b, cases[i].want, "rate_text"))
			goto cleanup;
	}
cleanup:;
}

/* A report built with json_object_new_double prints every double in shortest form once
 * num__json_shorten ran over it, nested ones included; non-finite ones as null. */
static void test_json_shorten_tree(void)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array(), *in = json_object_new_object();
	const char *s;

	json_object_object_add(o, "cost_s", json_object_new_double(6.759035e-07)); /* json-c: 6.7590350000000005e-07 */
	json_object_object_add(o, "rate", json_object_new_double(54.9e9));
	json_object_object_add(o, "n", json_object_new_int64(7));
	json_object_object_add(in, "x", json_object_new_double(0.1 + 0.2));
	json_object_object_add(in, "nan", json_object_new_double(NAN));
	json_object_array_add(arr, in);
	json_object_array_add(arr, json_object_new_double(1.5e-3));
	json_object_object_add(o, "list", arr);
	json_object_object_add(o, "name", json_object_new_string("1.0000000000000002"));
	num__json_shorten(o);
	num__json_shorten(NULL);
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (!ASSERT_STR_EQ(s, "{\"cost_s\":6.759035e-07,\"rate\":54900000000,\"n\":7,\"list\":[{\"x\":0.30000000000000004,"
			      "\"nan\":null},0.0015],\"name\":\"1.0000000000000002\"}", "shortest everywhere"))
		goto cleanup;
	/* what json-c parses back is the same doubles */
	{
		json_object *back = json_tokener_parse(s), *v;

		if (!ASSERT_TRUE(back && json_object_object_get_ex(back, "cost_s", &v), "parsed") ||
		    !ASSERT_TRUE(json_object_get_double(v) == 6.759035e-07, "the same double")) {
			json_object_put(back);
			goto cleanup;
		}
		json_object_put(back);
	}
cleanup:
	json_object_put(o);
}

int main(void)
{
	RUN_TEST(test_shortest_known_values);
	RUN_TEST(test_shortest_errors);
	RUN_TEST(test_shortest_round_trips);
	RUN_TEST(test_shortest_matches_python_repr);
	RUN_TEST(test_json_double_and_us);
	RUN_TEST(test_bytes);
	RUN_TEST(test_seconds);
	RUN_TEST(test_rate);
	RUN_TEST(test_json_shorten_tree);
	return unit_done();
}
