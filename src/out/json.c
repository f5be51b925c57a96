/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include "lib/links.h"
#include "out/json.h"
#include "out/jsonnum.h"

json_object *gp_json__hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

json_object *gp_json__log2_hist(const uint64_t *slots, int n)
{
	json_object *arr = json_object_new_array();

	for (int i = 0; i < n; i++) {
		json_object *b;

		if (!slots[i])
			continue;
		b = json_object_new_object();
		json_object_object_add(b, "lo", json_object_new_uint64(i ? 1ULL << i : 0));
		json_object_object_add(b, "hi", json_object_new_uint64((1ULL << (i + 1)) - 1));
		json_object_object_add(b, "count", json_object_new_uint64(slots[i]));
		json_object_array_add(arr, b);
	}
	return arr;
}

void gp_json__print(FILE *f, json_object *o)
{
	num__json_shorten(o);
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(f);
	json_object_put(o);
}

void gp_json__link_rate(json_object *o, const char *key, json_object *sus, const char *sus_key, bool ok, double v,
			double unit, const struct bw_link *l)
{
	if (ok && bw_links__suspect(l, v * unit)) {
		json_object_object_add(sus, sus_key, json_object_new_double(v));
		ok = false;
	}
	json_object_object_add(o, key, ok ? json_object_new_double(v) : NULL);
}

void gp_json__add_suspect(json_object *t, json_object *sus, const struct bw_link *l)
{
	if (!json_object_object_length(sus)) {
		json_object_put(sus);
		json_object_object_add(t, "suspect", NULL);
		return;
	}
	json_object_object_add(sus, "limit_bytes_per_second", json_object_new_double(l->bytes_per_s));
	json_object_object_add(sus, "link", json_object_new_string(l->name));
	json_object_object_add(t, "suspect", sus);
}

static json_object *link_json(const struct bw_link *l)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(l->name));
	json_object_object_add(o, "bytes_per_second", l->bytes_per_s > 0 ? json_object_new_double(l->bytes_per_s) : NULL);
	json_object_object_add(o, "read_here", json_object_new_boolean(l->read_here));
	return o;
}

json_object *gp_json__links(const struct bw_links *l)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "gpus", json_object_new_int(l->gpus));
	json_object_object_add(o, "host", link_json(&l->host));
	json_object_object_add(o, "peer", link_json(&l->peer));
	json_object_object_add(o, "local", link_json(&l->local));
	return o;
}
