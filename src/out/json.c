/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
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
