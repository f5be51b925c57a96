/* SPDX-License-Identifier: BSD-3-Clause */
#include <math.h>
#include <stdio.h>
#include "lib/unseen.h"

/* A gap scaled as docs/design.md's durations ("8.8 ms", "12.3 s", "2m 05s"); src/out's
 * formatters are a layer above this one. */
static void gap_text(double s, char *buf, size_t len)
{
	long t = lround(s);

	if (s < 0.9995)
		snprintf(buf, len, "%.3g ms", s * 1e3);
	else if (s < 59.95)
		snprintf(buf, len, "%.3g s", s);
	else
		snprintf(buf, len, "%ldm %02lds", t / 60, t % 60);
}

void gp_unseen__text(const struct gp_unseen *u, char *buf, size_t len)
{
	double ms = u->mapped_ns && u->probed_ns > u->mapped_ns ? (double)(u->probed_ns - u->mapped_ns) / 1e6 : -1;
	char gap[32];

	gap_text(ms / 1e3, gap, sizeof(gap));
	if (u->started && ms >= 0)
		snprintf(buf, len, "calls before the attach not seen (attached %s after the process started)", gap);
	else if (u->started)
		snprintf(buf, len, "calls before the attach not seen (attached after the process started)");
	else if (ms >= 0)
		snprintf(buf, len, "calls before the probes not seen (libcuda probed %s after the process mapped it)", gap);
	else
		snprintf(buf, len, "calls before the probes not seen (libcuda probed after the process mapped it, found by a rescan)");
}
