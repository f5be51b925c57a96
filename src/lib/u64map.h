/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An open-addressing hash map from __u64 keys to pointers, used for the per-process and
 * per-address tables of the aggregators. Linear probing with backward-shift deletion, so
 * lookups stay O(1) after many frees (no tombstones to wade through).
 */
#ifndef GP_U64MAP_H
#define GP_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map;

struct u64map *u64map__new(void);
/* Frees the table, not the values. */
void u64map__free(struct u64map *m);
void *u64map__get(const struct u64map *m, uint64_t key);
/* The value of key, else a zeroed one of size bytes put there (u64map__free_all with
 * free releases it); NULL when out of memory. */
void *u64map__get_new(struct u64map *m, uint64_t key, size_t size);
/* Inserts or replaces; returns 0 or -ENOMEM. */
int u64map__put(struct u64map *m, uint64_t key, void *val);
/* Removes and returns the value, or NULL. */
void *u64map__del(struct u64map *m, uint64_t key);
size_t u64map__size(const struct u64map *m);

/* Frees every value with free_value (NULL: free), then the table; safe on NULL. */
void u64map__free_all(struct u64map *m, void (*free_value)(void *v));

/* Every value, sorted with cmp (qsort's, on the void * elements), in *view: grown as
 * needed, kept and freed by the caller. The array with n values, or NULL when out of
 * memory (*view unchanged). */
void **u64map__sorted(const struct u64map *m, void ***view, size_t *n, int (*cmp)(const void *, const void *));

/* Iteration: for (size_t it = 0; u64map__next(m, &it, &k, &v);) — no insertions or
 * deletions while iterating. */
bool u64map__next(const struct u64map *m, size_t *it, uint64_t *key, void **val);

/* Removes every entry doomed(ctx, key, value) says to, handing its value to free_value
 * (NULL: kept); returns how many went. doomed must not change the map. */
size_t u64map__delete_if(struct u64map *m, bool (*doomed)(void *ctx, uint64_t key, void *val), void *ctx,
			 void (*free_value)(void *v));

#endif
