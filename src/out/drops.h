/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The drop counters of a snapshot (reasons: src/lib/reasons.h) in the text reports, the
 * JSON reports ("drops") and /metrics (gpuprobe_events_dropped_total's reason label), all
 * by the same names.
 */
#ifndef GP_DROPS_H
#define GP_DROPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "lib/reasons.h"

struct gp_snap;
struct json_object;

/* The sum of the drops of s that lose events. */
uint64_t gp_snap__dropped(const struct gp_snap *s);
/* "Dropped events: N (ringbuf_full 3, ...)", N the events lost, then every counter that is
 * not 0: nothing at all when all are 0, unless all (-v), which names every counter. The
 * JSON reports always carry every counter. */
void gp_drops__text(FILE *f, const struct gp_snap *s, bool all);
/* "dropped_events": N and "drops": {name: count} */
void gp_drops__json(struct json_object *o, const struct gp_snap *s);

#endif
