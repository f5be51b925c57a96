/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A process whose libcuda was probed only after it could call it (a library found after
 * the process mapped it, a -p attach to a running process): its calls before probed_ns
 * were not seen. The run keeps one note per process (gp_run__note_unseen); reports say it
 * in one line (gp_unseen__text) or as JSON (src/out/trees.c).
 */
#ifndef GP_UNSEEN_H
#define GP_UNSEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* mapped_ns: when it mapped the library or started (CLOCK_MONOTONIC), 0 unknown. */
struct gp_unseen {
	uint64_t mapped_ns, probed_ns;
	bool started; /* mapped_ns is the process's start (a -p attach), not a mapping */
};

/* One line for a report: "calls before ... not seen (...)", into buf. */
void gp_unseen__text(const struct gp_unseen *u, char *buf, size_t len);

#endif
