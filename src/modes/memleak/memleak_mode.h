/* SPDX-License-Identifier: BSD-3-Clause */
/* --memleak as a mode: its settings, its snapshot, its renderers (memleak_report.c). */
#ifndef GP_MEMLEAK_MODE_H
#define GP_MEMLEAK_MODE_H

#include <stdbool.h>
#include <stdio.h>
#include "out/drops.h"
#include "modes/memleak/memleak.h"
#include "core/mode.h"

/* --stacks, in the order of the option's choices */
enum ml_stacks { ML_STACKS_AUTO, ML_STACKS_FP, ML_STACKS_DWARF, ML_STACKS_NONE };

struct ml_settings {
	int top;          /* --top: stacks listed per process in text, -1 all */
	bool no_stacks;   /* --no-stacks (the same as --stacks none) */
	int stacks;       /* --stacks: enum ml_stacks */
	uint64_t stack_bytes; /* --stack-bytes */
	bool no_python;   /* --no-python-frames */
	bool show_allocs; /* --show-allocs: each allocation under its stack */
	double older_than; /* --older-than SECONDS: only allocations outstanding longer */
	const char *folded; /* --folded FILE */
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
	int stacks;       /* enum gp_stack_mode in effect */
	bool show_allocs;
	double older_than;
};

void ml_report__text(FILE *f, const struct gp_snap *s);
void ml_report__json(struct json_object *o, const struct gp_snap *s);
int ml_report__prom(struct prom_out *p, const struct gp_snap *s);
/* Outstanding bytes per stack, folded (frames root-first: the process, then the stack);
 * 0 or -errno. */
int ml_report__folded(FILE *f, const struct gp_snap *s);
/* The text of a stack's status ("partial: ..."), or NULL for a complete stack. */
const char *ml_report__stack_status(uint32_t flags, bool json);

extern const struct gp_mode gp_mode_memleak;

#endif
