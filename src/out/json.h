/* SPDX-License-Identifier: BSD-3-Clause */
/* Pieces of the JSON reports every mode uses. */
#ifndef GP_JSON_H
#define GP_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

/* "0x7f..." */
json_object *gp_json__hex(uint64_t v);
/* The non-empty log2 buckets as [{lo, hi, count}] */
json_object *gp_json__log2_hist(const uint64_t *slots, int n);
struct bw_link;
/* A rate measured over link l (lib/links.h) at o's key: v (in units of unit bytes/s: 1,
 * or 1e9 for GB/s) when ok; null when not, or when v is above what l can carry
 * (bw_links__suspect): then v goes into sus at sus_key, a suspect figure, never a
 * measurement. */
void gp_json__link_rate(json_object *o, const char *key, json_object *sus, const char *sus_key, bool ok, double v,
			double unit, const struct bw_link *l);
/* t's "suspect": sus with l's limit and name, or null when sus holds nothing (sus taken over). */
void gp_json__add_suspect(json_object *t, json_object *sus, const struct bw_link *l);
struct bw_links;
/* {"gpus", "host", "peer", "local"}: each link's name, bytes_per_second (null: unknown) and
 * read_here: the limits a report's "suspect" figures were held against. */
json_object *gp_json__links(const struct bw_links *l);
/* One JSON Lines record on f, flushed, its doubles in shortest form (num__json_shorten);
 * takes o over. */
void gp_json__print(FILE *f, json_object *o);

#endif
