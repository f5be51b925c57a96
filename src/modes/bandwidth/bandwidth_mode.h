/* SPDX-License-Identifier: BSD-3-Clause */
/* --bandwidth-util as a mode: settings, snapshot, renderers (bandwidth_report.c). */
#ifndef GP_BANDWIDTH_MODE_H
#define GP_BANDWIDTH_MODE_H

#include <stdio.h>
#include "lib/bandwidth.h"
#include "out/drops.h"
#include "lib/links.h"
#include "core/mode.h"

struct bw_settings {
	uint64_t min_bytes; /* --min-bytes: smaller copies only counted, in BPF */
	const char *csv;    /* --csv FILE */
};

extern struct bw_settings bw_settings;

struct bw_snap {
	struct gp_snap hdr;
	struct bw_snap_data d;
	struct gp_snap_pid *pids;
	struct gp_snap_drop drops[GP_CDROP__COUNT + 1 + GP_RUN_DROPS];
	uint64_t small_copies, small_bytes, failed_copies, zero_copies, min_bytes;
	uint64_t polls; /* queries that returned CUDA_ERROR_NOT_READY: counted in BPF, never sent */
	uint64_t quiet_signals; /* successful queries and elapsed times of processes that never copied: not sent */
	struct bw_links links; /* what each kind of link can carry (zero: no bound) */
};

void bw_report__text(FILE *f, const struct gp_snap *s);
void bw_report__json(struct json_object *o, const struct gp_snap *s);
int bw_report__prom(struct prom_out *p, const struct gp_snap *s);

extern const struct gp_mode gp_mode_bandwidth;

#endif
