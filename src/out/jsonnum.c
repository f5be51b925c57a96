/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "out/jsonnum.h"

int num__shortest(double v, char *buf, size_t len)
{
	char tmp[NUM_SHORTEST_MAX];
	int n = 0;

	if (!isfinite(v))
		return -EDOM;
	/* Below 2^53 an integral value's own digits are the shortest that read back (doubles
	 * there are at most 1 apart) and "1500000000" reads better than "1.5e+09". */
	if (v == trunc(v) && fabs(v) <= 9007199254740992.0) {
		n = snprintf(tmp, sizeof(tmp), "%.0f", v);
	} else {
		/* The first precision that reads back is the shortest, and %g rounds correctly,
		 * so its digits are the ones nearest to v (what Python's repr picks). */
		for (int p = 1; p <= 17; p++) {
			n = snprintf(tmp, sizeof(tmp), "%.*g", p, v);
			if (strtod(tmp, NULL) == v)
				break;
		}
	}
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	memcpy(buf, tmp, (size_t)n + 1);
	return n;
}

json_object *num__json_double(double v)
{
	char s[NUM_SHORTEST_MAX];

	if (num__shortest(v, s, sizeof(s)) < 0)
		return NULL;
	return json_object_new_double_s(v, s);
}

static void shorten(json_object *o, int depth)
{
	char s[NUM_SHORTEST_MAX];
	char *copy;

	if (!o || depth > 64)
		return;
	switch (json_object_get_type(o)) {
	case json_type_double:
		if (num__shortest(json_object_get_double(o), s, sizeof(s)) < 0)
			snprintf(s, sizeof(s), "null");
		copy = strdup(s);
		if (copy) /* else json-c's own form stays: still a number */
			json_object_set_serializer(o, json_object_userdata_to_json_string, copy,
						   json_object_free_userdata);
		break;
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			(void)key;
			shorten(val, depth + 1);
		}
		break;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			shorten(json_object_array_get_idx(o, i), depth + 1);
		break;
	default:
		break;
	}
}

void num__json_shorten(json_object *o)
{
	shorten(o, 0);
}

json_object *num__json_us(uint64_t ns)
{
	char s[32];
	uint64_t frac = ns % 1000;
	int n = snprintf(s, sizeof(s), "%" PRIu64, ns / 1000);

	if (frac) {
		snprintf(s + n, sizeof(s) - n, ".%03" PRIu64, frac);
		for (char *e = s + strlen(s) - 1; *e == '0'; e--)
			*e = '\0';
	}
	return json_object_new_double_s((double)ns / 1e3, s);
}

/* Three significant digits of x, where 1 <= x < 999.5 (the caller picked the unit). */
static void sig3(double x, const char *unit, char *buf, size_t len)
{
	int prec = x >= 99.95 ? 0 : x >= 9.995 ? 1 : 2;

	snprintf(buf, len, "%.*f %s", prec, x, unit);
}

void num__bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double x = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return;
	}
	x /= 1024;
	/* 1023.7 KiB would print "1024 KiB": such values move up a unit */
	while (x >= 1023.5 && u + 1 < sizeof(units) / sizeof(units[0])) {
		x /= 1024;
		u++;
	}
	if (x >= 999.5) /* 1000..1023 of a unit: four digits, no fraction */
		snprintf(buf, len, "%.0f %s", x, units[u]);
	else
		sig3(x, units[u], buf, len);
}

void num__seconds(double s, char *buf, size_t len)
{
	if (!isfinite(s) || s < 0) {
		snprintf(buf, len, "-");
	} else if (s < 999.5e-9) {
		snprintf(buf, len, "%.0f ns", s * 1e9);
	} else if (s < 999.5e-6) {
		sig3(s * 1e6, "us", buf, len);
	} else if (s < 0.9995) {
		sig3(s * 1e3, "ms", buf, len);
	} else if (s < 59.95) {
		sig3(s, "s", buf, len);
	} else if (s < 3599.5) {
		long t = lround(s);

		snprintf(buf, len, "%ldm %02lds", t / 60, t % 60);
	} else {
		double m = round(s / 60);

		if (m >= 1e12) /* past any uptime: no point in hours and minutes */
			snprintf(buf, len, "%.3g s", s);
		else
			snprintf(buf, len, "%.0fh %02.0fm", floor(m / 60), fmod(m, 60));
	}
}

void num__rate(double bytes_per_s, char *buf, size_t len)
{
	static const char *const units[] = { "B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s" };
	double x = bytes_per_s;
	size_t u = 0;

	if (!isfinite(x) || x < 0) {
		snprintf(buf, len, "-");
		return;
	}
	if (x < 999.5) {
		snprintf(buf, len, x >= 1 || x == 0 ? "%.0f B/s" : "%.2g B/s", x);
		return;
	}
	while (x >= 999.5 && u + 1 < sizeof(units) / sizeof(units[0])) {
		x /= 1000;
		u++;
	}
	if (x >= 999.5)
		snprintf(buf, len, "%.0f %s", x, units[u]);
	else
		sig3(x, units[u], buf, len);
}
