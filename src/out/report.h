/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reports of a run (src/core/run.h): every enabled mode's snapshot through its
 * renderers, with what is common to every report added once ("mode", "report", "time",
 * the drops), then the overhead budget's record; and the run's /metrics.
 */
#ifndef GP_REPORT_H
#define GP_REPORT_H

#include <stdint.h>
#include "core/mode.h"

struct gp_run;
struct prom_out;

/* Reports of every mode (pid 0: every process) to run->out, text or JSON. */
void gp_report__run(struct gp_run *run, enum gp_snap_kind kind, uint32_t pid);
/* One mode's report (by slot) of one process or all (pid 0). */
void gp_report__slot(struct gp_run *run, int slot, enum gp_snap_kind kind, uint32_t pid);
/* Every mode's families into p (their snapshots), then the probe hits and the drops. */
int gp_report__prom(struct gp_run *run, struct prom_out *p, double probe_cost);

#endif
