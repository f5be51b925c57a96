/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <json-c/json.h>
#include "out/drops.h"
#include "core/mode.h"
#include "out/text.h"

uint64_t gp_snap__dropped(const struct gp_snap *s)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nr_drops; i++)
		if (gp_reason_loses(s->drops[i].reason))
			n += s->drops[i].count;
	return n;
}

void gp_drops__text(FILE *f, const struct gp_snap *s, bool all)
{
	bool any = false, first = true;

	for (size_t i = 0; i < s->nr_drops; i++)
		any = any || s->drops[i].count;
	if (!any && !all)
		return;
	fprintf(f, "Dropped events: %s (", gp_text__count(gp_snap__dropped(s)).s);
	for (size_t i = 0; i < s->nr_drops; i++) {
		if (!s->drops[i].count && !all)
			continue;
		fprintf(f, "%s%s %s", first ? "" : ", ", gp_reason_name(s->drops[i].reason),
			gp_text__count(s->drops[i].count).s);
		first = false;
	}
	fputs(")\n", f);
}

void gp_drops__json(struct json_object *o, const struct gp_snap *s)
{
	json_object *d = json_object_new_object();

	json_object_object_add(o, "dropped_events", json_object_new_uint64(gp_snap__dropped(s)));
	for (size_t i = 0; i < s->nr_drops; i++)
		json_object_object_add(d, gp_reason_name(s->drops[i].reason),
				       json_object_new_uint64(s->drops[i].count));
	json_object_object_add(o, "drops", d);
}
