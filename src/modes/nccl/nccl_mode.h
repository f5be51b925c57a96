/* SPDX-License-Identifier: BSD-3-Clause */
/* --nccl as a mode: settings, snapshot, renderers (nccl_report.c). */
#ifndef GP_NCCL_MODE_H
#define GP_NCCL_MODE_H

#include <stdio.h>
#include "lib/links.h"
#include "out/drops.h"
#include "core/mode.h"
#include "modes/nccl/nccl.h"

struct nccl_settings {
	uint64_t max_comm_series; /* /metrics: communicators with series of their own a process */
};

extern struct nccl_settings nccl_settings;

#define NCCL_MAX_LIBS 16

/* A libnccl file with probes, and the calls it does not export. */
struct nccl_lib {
	char path[512];
	int probed;           /* functions probed */
	uint32_t missing;     /* bit fn: enum gp_nccl_fn not exported */
};

struct nccl_snap {
	struct gp_snap hdr;
	struct nccl_snap_data d;
	struct gp_snap_pid *pids;
	struct gp_snap_drop drops[GP_NDROP__COUNT + 1 + GP_RUN_DROPS];
	const struct nccl_lib *libs;
	size_t nr_libs;
	uint64_t max_comm_series;
	uint64_t polls; /* cuStreamQuery/cuEventQuery NOT_READY results: counted in BPF, never sent */
	struct bw_links links; /* what bounds a bus bandwidth (lib/links.h) */
};

void nccl_report__text(FILE *f, const struct gp_snap *s);
void nccl_report__json(struct json_object *o, const struct gp_snap *s);
int nccl_report__prom(struct prom_out *p, const struct gp_snap *s);
/* The args of one call's --trace event (comm_id: the communicator's, when known). */
struct json_object *nccl_report__trace_args(const struct gp_nccl_event *e, bool id_known, uint64_t comm_id);

extern const struct gp_mode gp_mode_nccl;

#endif
