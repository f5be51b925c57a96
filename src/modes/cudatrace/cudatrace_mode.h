/* SPDX-License-Identifier: BSD-3-Clause */
/* --cudatrace as a mode: its settings, its snapshot, its renderers (cudatrace_report.c). */
#ifndef GP_CUDATRACE_MODE_H
#define GP_CUDATRACE_MODE_H

#include <stdbool.h>
#include <stdio.h>
#include "modes/cudatrace/cudatrace.h"
#include "out/drops.h"
#include "core/mode.h"
#include "lib/sampling.h"

struct ct_settings {
	bool latency;     /* return probes on launches and syncs (--no-latency clears) */
	int top_shapes;   /* text: shapes per kernel */
	uint64_t max_launch_keys;
	uint64_t max_kernel_series; /* daemon: kernels with their own series per process */
	const char *state_dir; /* learned driver layouts (layouts.h); NULL: the default */
	bool self_learn;       /* learn a build's layouts from kernels of gpuprobe's own (selflearn.h) */
};

extern struct ct_settings ct_settings;

/* The counts of a process whose launches and syncs were sampled (--max-overhead): what the
 * probes saw stays in the snapshot (the /metrics counters are those); text and JSON print
 * the estimates, each count times `ratio`, with these intervals. */
enum ct_iv { CT_IV_LAUNCHES, CT_IV_UNNAMED, CT_IV_GRAPH_LAUNCHES, CT_IV_GRAPH_EXECUTED, CT_IV_SYNCS, CT_IV__COUNT };

struct ct_sampled {
	bool on;              /* false: every call seen */
	struct gp_sampling s;
	double ratio;         /* estimate ÷ observed */
	double iv[CT_IV__COUNT][3]; /* estimate, lo, hi */
};

/* A count as text and JSON print it: the estimate when sampled. */
uint64_t ct_sampled__count(const struct ct_sampled *smp, uint64_t v);

/* What the renderers read: the processes' snapshot parts (kernels, shapes, graphs,
 * histograms are plain arrays rebuilt at each snapshot). */
struct ct_snap {
	struct gp_snap hdr;
	const struct ct_proc **procs;
	const struct ct_sampled *sampled; /* one per process */
	const struct ct_sampled *counted; /* the same, settled (gp_run__sampling_settled): what
					   * /metrics counters add; NULL: none */
	size_t nr_procs;
	struct gp_snap_pid *pids;
	struct gp_snap_drop drops[GP_LDROP__COUNT + 1 + GP_RUN_DROPS];
	bool latency;
	int top_shapes;
	uint64_t max_kernel_series;
};

void ct_report__text(FILE *f, const struct gp_snap *s);
void ct_report__json(struct json_object *o, const struct gp_snap *s);
int ct_report__prom(struct prom_out *p, const struct gp_snap *s);

extern const struct gp_mode gp_mode_cudatrace;

#endif
