/* SPDX-License-Identifier: BSD-3-Clause */
/* The overhead budget's own report (--max-overhead): its stats (src/core/budget.h) as text,
 * JSON and /metrics families. */
#ifndef GP_BUDGET_REPORT_H
#define GP_BUDGET_REPORT_H

#include <stdio.h>
#include "core/budget.h"

struct json_object;
struct prom_out;

void gp_budget__text(FILE *f, const struct gp_budget_stats *s, bool all);
void gp_budget__json(struct json_object *o, const struct gp_budget_stats *s);
void gp_budget__prom(struct prom_out *p, const struct gp_budget_stats *s);

#endif
