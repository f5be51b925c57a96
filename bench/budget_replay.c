// SPDX-License-Identifier: BSD-3-Clause
/*
 * Replays the budget's accounts from a gpuprobe -v log (its "budget: acct PID ..." lines,
 * src/core/budget.c) through src/lib/sampling.c: one JSON line per process with what its
 * report would say (estimate, interval, calls seen) and the settled figures a daemon's
 * counter takes. An estimator can so be tried on the windows that real runs took, against
 * their workloads' own counts, without running them again (bench/budget_runs.py).
 *
 *   cc -O2 -Isrc -o .output/budget_replay bench/budget_replay.c src/lib/sampling.c -lm
 *   .output/budget_replay [-v] [--no-sigma] [--no-span] < gpuprobe.log
 * -v: the account after each call; --no-sigma: every window's gaps left out (the estimate as
 * before windows said how often the process slept); --no-span: the strays a slow attach's
 * probes caught, timed, left out (the estimate before sampling.c's "spanned").
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/sampling.h"

#define MAX_PROCS 256

struct proc {
	unsigned pid;
	struct gp_account acc;
};

static struct proc procs[MAX_PROCS];
static int nprocs;

static struct gp_account *account(unsigned pid)
{
	for (int i = 0; i < nprocs; i++)
		if (procs[i].pid == pid)
			return &procs[i].acc;
	if (nprocs == MAX_PROCS)
		return NULL;
	procs[nprocs].pid = pid;
	memset(&procs[nprocs].acc, 0, sizeof(procs[nprocs].acc));
	return &procs[nprocs++].acc;
}

static void print_hi(const char *key, const struct gp_sampling *s)
{
	if (s->unbounded || isinf(s->hi))
		printf(",\"%s\":null", key);
	else
		printf(",\"%s\":%.0f", key, s->hi);
}

int main(int argc, char **argv)
{
	char line[4096];
	bool trace = false, no_sigma = false, no_span = false;

	for (int i = 1; i < argc; i++) {
		trace |= !strcmp(argv[i], "-v");
		no_sigma |= !strcmp(argv[i], "--no-sigma"); /* as if no window said how it slept */
		no_span |= !strcmp(argv[i], "--no-span");   /* as if no slow attach's strays were timed */
	}

	while (fgets(line, sizeof(line), stdin)) {
		char *p = strstr(line, "budget: acct ");
		double v[18];
		unsigned pid;
		int off = 0, k;
		struct gp_account *a;

		if (!p || sscanf(p, "budget: acct %u %n", &pid, &off) < 1)
			continue;
		a = account(pid);
		if (!a)
			continue;
		p += off;
		if (sscanf(p, "begin %lf", &v[0]) == 1)
			gp_account__begin(a, v[0]);
		else if (sscanf(p, "trim %lf", &v[0]) == 1)
			gp_account__trim(a, v[0]);
		else if (!strncmp(p, "unbounded", 9))
			gp_account__unbounded(a);
		else if ((k = sscanf(p, "period %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf",
				     &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
				     &v[11], &v[12], &v[13], &v[14], &v[15], &v[16], &v[17])) >= 8) {
			/* n stray T on act cpu_T cost price [gaps gap_s sleep_s head busy head_s
			 * [stray_calls [span_n span_from span_to]]] */
			struct gp_window w = { .n = v[0], .stray = v[1], .T = v[2], .on = v[3], .act = v[4], .cpu_T = v[5],
					       .busy = -1, .head_s = -1 };

			if (k >= 15)
				w.stray_calls = v[14];
			if (k == 18 && !no_span) {
				w.span_n = v[15];
				w.span_from = v[16];
				w.span_to = v[17];
			}
			if (k >= 14 && !no_sigma) {
				w.busy = v[12];
				w.head_s = v[13];
				w.gaps = v[8];
				w.gap_s = v[9];
				w.sleep_s = v[10];
				w.head = v[11];
			}
			gp_account__window(a, &w, v[6], v[7]);
		}
		if (trace) /* the account after each call: what each period added */
			printf("# %u %s  -> obs %.0f est %.0f lo %.0f hi %.0f wide %.0f var %.3g pending %d\n", pid,
			       strtok(p, "\n"), a->obs, a->est, a->lo_sum, a->hi_sum, a->wide, a->var, a->pending);
	}
	for (int i = 0; i < nprocs; i++) {
		struct gp_sampling s, st;
		struct gp_account c = procs[i].acc;
		bool sampled = gp_account__sampling(&procs[i].acc, &s);

		c.pending = false;
		gp_account__sampling(&c, &st);
		printf("{\"pid\":%u,\"sampled\":%s,\"observed\":%.0f,\"overhead_pct\":%.3f", procs[i].pid,
		       sampled ? "true" : "false", procs[i].acc.obs, 100 * gp_account__overhead(&procs[i].acc));
		if (sampled) {
			printf(",\"estimate\":%.0f,\"lo\":%.0f", s.estimate, s.lo);
			print_hi("hi", &s);
			printf(",\"settled_estimate\":%.0f,\"settled_lo\":%.0f", st.estimate, st.lo);
			print_hi("settled_hi", &st);
			if (s.dark_s > 0)
				printf(",\"dark_s\":%.3f", s.dark_s);
		}
		printf("}\n");
	}
	return 0;
}
