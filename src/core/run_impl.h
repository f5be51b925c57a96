/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The run's own state (src/core/run.h), for the runtime that drives it: src/core, the
 * modes' runtime parts (src/modes/X/X_mode.c and their helpers) and the report assembly
 * (src/out/report.c). The front ends (src/cli) and the renderers (a mode's *_report.c,
 * src/out/trees.c, src/out/nvml_report.c) never include it: they go through run.h's
 * functions and a snapshot's env (tests/tools/check_layers.py checks it).
 */
#ifndef GP_RUN_IMPL_H
#define GP_RUN_IMPL_H

#include "core/run.h"

struct gp_run {
	const struct gp_opts *o;
	struct symbolizer *sym;
	struct gp_events *events;
	struct attach_set *links;
	int shared_rb;               /* the ordered ring buffer's fd, or -1 */
	int ended_fd;                /* bpf/common.bpf.h's gp_ended, shared by the objects; -1 */
	int exits_fd;                /* bpf/common.bpf.h's gp_exits, shared by the objects; -1 */
	struct allocsrc *allocs;     /* when an enabled mode needs GP_NEED_ALLOCS */
	struct gp_timeline *timeline; /* --trace FILE */
	trace_sink_open_fn *trace_open; /* its writer, the front end's (gp_run__set_trace_writer) */
	const struct lib_set *libs[GP_LIB__COUNT]; /* the files of each kind found at start */
	int target_pid;              /* the uprobes' own PID filter; -1: none */
	struct ptree *ptree;         /* the processes followed, forks and execs */
	struct gp_budget *budget;    /* --max-overhead (src/core/budget.h), or NULL */
	double budget_pct;           /* the budget asked for (the daemon's default), 0: none */
	int budget_how;              /* enum gp_budget_how: how it samples, or that it cannot */
	const char *budget_reason;   /* then why, a metric label */
	struct libwatch *watch;      /* library files claimed, and those loaded later */
	struct libslots *slots;      /* the driver files probed that a sweep may free (libslots.h) */
	bool filter;                 /* only the processes in the ptree (else every one) */
	bool follow_forks;           /* a followed process's children are followed too */
	const char *comm, *cgroup;   /* --comm, --cgroup */
	uint32_t keep_pid;           /* its records stay until the final report; 0: none */
	bool behind;                 /* the last reap's read left records: no mode sweeps
	                              * (a process gone may have records still to be read) */
	FILE *out;                   /* reports */
	/* why a text report may list no process (the front end's, e.g. "no CUDA call seen: no
	 * libcuda was probed ..."); NULL: the general one. Printed under an empty report. */
	const char *empty_hint;
	uint64_t start_ns;
	uint64_t end_ns;             /* gp_run__end's moment; 0: the run goes on */
	/* the front end's answer to a mode that reports a process as it exits */
	gp_exit_report_fn *exit_report;
	void *fe;                    /* the front end's own state */
	struct u64map *unseen;       /* pid -> struct gp_unseen: calls before the probes not seen */
	uint64_t unseen_total;       /* processes noted so, the table's cap included */
	struct gp_nvml *nvml;        /* NVML's reader (src/core/nvml.h), started with the run; or NULL */
	uint64_t nvml_xids;          /* its XID events written to the --trace timeline so far */
	struct gp_snap_env env;      /* what its snapshots tell renderers (gp_run__env) */
	uint64_t caught_up_ns;       /* when the records were last found read up (gp_run__env) */
	struct {
		const struct gp_mode *m;
		void *st;
	} slot[GP_MAX_MODES];
	int nr;
};

#endif
