/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVML's figures (src/core/nvml.h) in the outputs: the daemon's /metrics families, and the
 * CLI's text and JSON reports, per GPU and per traced process (the GPU memory the driver
 * accounts to it beside gpuprobe's outstanding bytes), with the XID errors seen.
 */
#ifndef GP_NVML_REPORT_H
#define GP_NVML_REPORT_H

#include "core/mode.h"

struct gp_run;
struct gp_nvml;
struct prom_out;

/* The NVML families into p: its state always ("off" when the run reads none), the rest from
 * its last read; process series only for the processes the run follows (all of them
 * node-wide; with --comm or --cgroup, those). Process samples name their process until
 * the next call. 0 or -ENOMEM. */
int gp_nvml_report__prom(struct prom_out *p, struct gp_run *run);
/* The run's NVML report (run->nvml) to run->out, text or JSON (kind: interval or final). */
void gp_nvml_report__run(struct gp_run *run, enum gp_snap_kind kind);

#endif
