/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The table of modes. Adding a mode is adding its folder under src/modes/ and one line
 * here (docs/design.md has the checklist); the front ends and the run iterate over this.
 * The order is the order of reports and of the open and finish steps.
 */
#include <stddef.h>
#include "core/mode.h"

extern const struct gp_mode gp_mode_memleak;
extern const struct gp_mode gp_mode_cudatrace;
extern const struct gp_mode gp_mode_bandwidth;
extern const struct gp_mode gp_mode_ioctl;
extern const struct gp_mode gp_mode_trace;
extern const struct gp_mode gp_mode_nccl;
extern const struct gp_mode gp_mode_gputime;

const struct gp_mode *const gp_modes[] = {
	&gp_mode_memleak,
	&gp_mode_cudatrace,
	&gp_mode_bandwidth,
	&gp_mode_ioctl,
	&gp_mode_nccl,
	&gp_mode_trace,
	&gp_mode_gputime,
	NULL,
};
