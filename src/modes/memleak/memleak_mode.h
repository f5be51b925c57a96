/* SPDX-License-Identifier: BSD-3-Clause */
/* --memleak as a mode: its settings, its snapshot, its renderers (memleak_report.c). */
#ifndef GP_MEMLEAK_MODE_H
#define GP_MEMLEAK_MODE_H

#include <stdbool.h>
#include <stdio.h>
#include "drops.h"
#include "memleak.h"
#include "mode.h"

struct ml_settings {
	int top;          /* --top: allocations listed per process in text, -1 all */
	bool no_stacks;   /* --no-stacks */
	uint64_t max_allocs;
};

extern struct ml_settings ml_settings;

/* What the renderers read. */
struct ml_snap {
	struct gp_snap hdr;
	struct ml_snap_data d;
	struct gp_snap_pid *pids;
	struct gp_snap_drop drops[GP_DROP__COUNT + 1 + GP_RUN_DROPS];
	uint64_t calls[GP_API__COUNT]; /* successful calls per entry point */
	int top;
	bool stacks;
};

void ml_report__text(FILE *f, const struct gp_snap *s, struct gp_run *run);
void ml_report__json(struct json_object *o, const struct gp_snap *s, struct gp_run *run);
int ml_report__prom(struct prom_out *p, const struct gp_snap *s, struct gp_run *run);

extern const struct gp_mode gp_mode_memleak;

#endif
