/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every family gpuprobe daemon serves on /metrics, described once: its name, type,
 * labels, the option that brings it, its # HELP line and its entry in docs/metrics.md
 * (generated from this table: `make metrics-doc`; tests/unit/test_metrics_doc fails when
 * the file and the table differ). Renderers name a family by its name only
 * (src/out/prom.h); its type and HELP come from here. A new family is one more row.
 */
#ifndef GP_METRICS_H
#define GP_METRICS_H

#include <stddef.h>
#include <stdio.h>

enum gp_metric_type {
	GP_COUNTER,
	GP_GAUGE,
	GP_HISTOGRAM, /* log2 buckets of nanoseconds, printed in seconds (src/out/prom.c) */
};

enum gp_metric_flags {
	/* a per-process family: its samples carry the process labels (comm, cgroup, the pod
	 * labels; pid with --per-process-series) and are folded by src/out/prom.c */
	GP_M_PROCESS = 1 << 0,
	/* a per-process counter whose samples may be estimates (--max-overhead) that a later
	 * one can revise down: a process adds what passes the most it reported before, so the
	 * series never goes down; a process's record is folded while it is listed, after its
	 * exit too (its estimate is finished at the budget's next period boundary) */
	GP_M_ESTIMATE = 1 << 1,
};

struct gp_metric {
	const char *name;
	enum gp_metric_type type;
	unsigned int flags;  /* enum gp_metric_flags */
	const char *labels;  /* the family's own labels, "kernel" or "gpu,direction"; "" none */
	const char *capped;  /* labels whose values are capped per series (the rest become
			      * "other", the following capped labels ""), or NULL */
	const char *with;    /* the option that brings it ("--memleak"), "" always there */
	const char *help;    /* the # HELP line */
	const char *doc;     /* more for docs/metrics.md (Markdown), or NULL */
};

/* The table, in the order families are written; ends with a NULL name. */
extern const struct gp_metric gp_metrics[];

/* The index of a family in gp_metrics, or -1. */
int gp_metric__find(const char *name);
const char *gp_metric__type_name(enum gp_metric_type t);

/* The Markdown table of every family (the generated part of docs/metrics.md). */
void gp_metrics__doc(FILE *f);

#endif
