/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include "lib/u64map.h"

struct slot {
	uint64_t key;
	void *val; /* NULL marks an empty slot: values are never NULL */
};

struct u64map {
	struct slot *slots;
	size_t cap; /* power of two */
	size_t size;
};

static size_t hash64(uint64_t k)
{
	/* splitmix64 finalizer: addresses are aligned, so low bits alone hash badly */
	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ULL;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebULL;
	k ^= k >> 31;
	return (size_t)k;
}

struct u64map *u64map__new(void)
{
	struct u64map *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cap = 16;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (!m->slots) {
		free(m);
		return NULL;
	}
	return m;
}

void u64map__free(struct u64map *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m);
}

static struct slot *find(const struct u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i = hash64(key) & mask;

	while (m->slots[i].val) {
		if (m->slots[i].key == key)
			return &m->slots[i];
		i = (i + 1) & mask;
	}
	return NULL;
}

void *u64map__get(const struct u64map *m, uint64_t key)
{
	struct slot *s = find(m, key);

	return s ? s->val : NULL;
}

void *u64map__get_new(struct u64map *m, uint64_t key, size_t size)
{
	void *v = u64map__get(m, key);

	if (v)
		return v;
	v = calloc(1, size);
	if (v && u64map__put(m, key, v)) {
		free(v);
		v = NULL;
	}
	return v;
}

static void insert(struct slot *slots, size_t cap, uint64_t key, void *val)
{
	size_t mask = cap - 1, i = hash64(key) & mask;

	while (slots[i].val)
		i = (i + 1) & mask;
	slots[i].key = key;
	slots[i].val = val;
}

static int grow(struct u64map *m)
{
	size_t ncap = m->cap * 2;
	struct slot *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].val)
			insert(n, ncap, m->slots[i].key, m->slots[i].val);
	free(m->slots);
	m->slots = n;
	m->cap = ncap;
	return 0;
}

int u64map__put(struct u64map *m, uint64_t key, void *val)
{
	struct slot *s;

	if (!val)
		return -EINVAL;
	s = find(m, key);
	if (s) {
		s->val = val;
		return 0;
	}
	if ((m->size + 1) * 4 > m->cap * 3 && grow(m))
		return -ENOMEM;
	insert(m->slots, m->cap, key, val);
	m->size++;
	return 0;
}

void *u64map__del(struct u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1, i, j;
	struct slot *s = find(m, key);
	void *val;

	if (!s)
		return NULL;
	val = s->val;
	i = (size_t)(s - m->slots);
	/* backward-shift: move later members of the probe run into the hole */
	for (j = (i + 1) & mask; m->slots[j].val; j = (j + 1) & mask) {
		size_t home = hash64(m->slots[j].key) & mask;

		/* slot j may move to i only if its home is not in (i, j] cyclically */
		if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].val = NULL;
	m->slots[i].key = 0;
	m->size--;
	return val;
}

size_t u64map__size(const struct u64map *m)
{
	return m->size;
}

bool u64map__next(const struct u64map *m, size_t *it, uint64_t *key, void **val)
{
	while (*it < m->cap) {
		struct slot *s = &m->slots[(*it)++];

		if (s->val) {
			if (key)
				*key = s->key;
			if (val)
				*val = s->val;
			return true;
		}
	}
	return false;
}

size_t u64map__delete_if(struct u64map *m, bool (*doomed)(void *ctx, uint64_t key, void *val), void *ctx,
			 void (*free_value)(void *v))
{
	uint64_t keys[256], k;
	size_t n, total = 0;
	void *v;

	/* deletions shift entries: collect a batch, delete it, look again */
	do {
		n = 0;
		for (size_t it = 0; m && n < 256 && u64map__next(m, &it, &k, &v);)
			if (doomed(ctx, k, v))
				keys[n++] = k;
		for (size_t i = 0; i < n; i++) {
			v = u64map__del(m, keys[i]);
			if (free_value)
				free_value(v);
		}
		total += n;
	} while (n == 256);
	return total;
}

void u64map__free_all(struct u64map *m, void (*free_value)(void *v))
{
	uint64_t k;
	void *v;

	if (!m)
		return;
	for (size_t it = 0; u64map__next(m, &it, &k, &v);)
		(free_value ? free_value : free)(v);
	u64map__free(m);
}

void **u64map__sorted(const struct u64map *m, void ***view, size_t *n, int (*cmp)(const void *, const void *))
{
	size_t cnt = u64map__size(m), i = 0;
	void **v = realloc(*view, (cnt ? cnt : 1) * sizeof(*v));
	uint64_t k;
	void *val;

	*n = 0;
	if (!v)
		return NULL;
	*view = v;
	for (size_t it = 0; u64map__next(m, &it, &k, &val);)
		v[i++] = val;
	qsort(v, cnt, sizeof(*v), cmp);
	*n = cnt;
	return v;
}
