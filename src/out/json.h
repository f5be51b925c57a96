/* SPDX-License-Identifier: BSD-3-Clause */
/* Pieces of the JSON reports every mode uses. */
#ifndef GP_JSON_H
#define GP_JSON_H

#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

/* "0x7f..." */
json_object *gp_json__hex(uint64_t v);
/* The non-empty log2 buckets as [{lo, hi, count}] */
json_object *gp_json__log2_hist(const uint64_t *slots, int n);
/* One JSON Lines record on f, flushed, its doubles in shortest form (num__json_shorten);
 * takes o over. */
void gp_json__print(FILE *f, json_object *o);

#endif
