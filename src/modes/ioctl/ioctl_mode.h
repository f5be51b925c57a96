/* SPDX-License-Identifier: BSD-3-Clause */
/* --ioctl as a mode: settings, snapshot, renderers (ioctl_report.c). */
#ifndef GP_IOCTL_MODE_H
#define GP_IOCTL_MODE_H

#include <stdio.h>
#include "out/drops.h"
#include "modes/ioctl/ioctl.h"
#include "core/mode.h"

enum { IOC_BACKEND_AUTO = -1, IOC_BACKEND_KPROBE = 0, IOC_BACKEND_TRACEPOINT = 1 };

struct ioc_settings {
	int backend;          /* --ioctl-backend */
	int nr_devs;          /* --ioctl-dev MAJOR[:NAME] (tests) */
	unsigned int dev_major[8];
	const char *dev_name[8];
	uint64_t max_series;  /* daemon: (node, cmd, ctrl) series per process */
};

extern struct ioc_settings ioc_settings;

struct ioc_snap {
	struct gp_snap hdr;
	struct ioc_proc *procs; /* comm filled; the aggregator's, valid until the next snapshot */
	size_t nr_procs;
	struct gp_snap_pid *pids;
	struct gp_snap_drop drops[GP_IDROP__COUNT + GP_RUN_DROPS];
	const char *backend;
	uint64_t max_series;
};

void ioc_report__text(FILE *f, const struct gp_snap *s);
void ioc_report__json(struct json_object *o, const struct gp_snap *s);
int ioc_report__prom(struct prom_out *p, const struct gp_snap *s);
/* The args of one ioctl's timeline event. */
struct json_object *ioc_report__trace_args(const struct gp_ioctl_event *e, const char *name);

extern const struct gp_mode gp_mode_ioctl;

#endif
