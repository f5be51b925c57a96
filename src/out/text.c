/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <time.h>
#include "text.h"

void gp_text__bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}

static void stars(FILE *f, uint64_t val, uint64_t max, int width)
{
	int n = max ? (int)((double)val * width / (double)max) : 0;

	if (n > width)
		n = width;
	for (int i = 0; i < width; i++)
		fputc(i < n ? '*' : ' ', f);
}

void gp_text__log2_hist(FILE *f, const uint64_t *slots, int n, const char *unit)
{
	int first = -1, last = -1;
	uint64_t max = 0;

	for (int i = 0; i < n; i++) {
		if (slots[i] && first < 0)
			first = i;
		if (slots[i])
			last = i;
		if (slots[i] > max)
			max = slots[i];
	}
	if (last < 0)
		return;
	/* bcc prints from 0; leading empty rows say nothing, so start at the first count */
	fprintf(f, "     %-19s : count    distribution\n", unit);
	for (int i = first; i <= last; i++) {
		uint64_t lo = i ? 1ULL << i : 0, hi = (1ULL << (i + 1)) - 1;

		fprintf(f, "%10" PRIu64 " -> %-10" PRIu64 " : %-8" PRIu64 " |", lo, hi, slots[i]);
		stars(f, slots[i], max, 40);
		fprintf(f, "|\n");
	}
}

void gp_text__clock(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}
