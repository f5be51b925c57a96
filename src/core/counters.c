/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/counters.h"
#include "lib/u64map.h"
#include "lib/util.h"

struct series {
	uint32_t pid;
	unsigned int flags;
	char *track, *name;
	double cur, prev;  /* this tick's sum, the last tick's value */
	double out;        /* the last tick's row: delta of a total, value of a gauge */
	uint64_t tick;     /* the last tick it was added in */
	bool seen;         /* it has had a tick before this one */
};

struct gp_counters {
	struct u64map *idx; /* hash of (pid, track, series) -> struct series */
	size_t max, n;
	uint64_t tick, now_ns, prev_ns, dropped;
	struct series **gone; /* stopped at the last end: freed at the next begin */
	size_t nr_gone;
	struct gp_counter_row *rows;
	size_t cap_rows;
};

/* FNV-1a over the pid and both names. Two series with one hash (names come from traced
 * processes: a kernel's name may be made to collide) keep the first; the other is
 * dropped and counted, never merged. */
static uint64_t hash(uint32_t pid, const char *track, const char *name)
{
	const uint8_t le[4] = { pid & 0xff, (pid >> 8) & 0xff, (pid >> 16) & 0xff, pid >> 24 };
	uint64_t h = gp_fnv1a(le, sizeof(le), GP_FNV1A_INIT);

	h = gp_fnv1a(track, strlen(track), h);
	h = gp_fnv1a("\xff", 1, h); /* "ab"+"c" is not "a"+"bc" */
	return gp_fnv1a(name, strlen(name), h);
}

static void series_free(void *v)
{
	struct series *s = v;

	if (!s)
		return;
	free(s->track);
	free(s->name);
	free(s);
}

struct gp_counters *gp_counters__new(size_t max_series)
{
	struct gp_counters *cs = calloc(1, sizeof(*cs));

	if (!cs || !(cs->idx = u64map__new())) {
		free(cs);
		return NULL;
	}
	cs->max = max_series;
	return cs;
}

static void free_gone(struct gp_counters *cs)
{
	for (size_t i = 0; i < cs->nr_gone; i++)
		series_free(cs->gone[i]);
	free(cs->gone);
	cs->gone = NULL;
	cs->nr_gone = 0;
}

void gp_counters__free(struct gp_counters *cs)
{
	if (!cs)
		return;
	free_gone(cs);
	u64map__free_all(cs->idx, series_free);
	free(cs->rows);
	free(cs);
}

void gp_counters__begin(struct gp_counters *cs, uint64_t now_ns)
{
	free_gone(cs);
	cs->prev_ns = cs->tick ? cs->now_ns : now_ns;
	cs->now_ns = now_ns;
	cs->tick++;
}

static struct series *series_new(struct gp_counters *cs, uint64_t key, const struct gp_counter *c)
{
	struct series *s;

	if (cs->n >= cs->max)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = c->pid;
	s->flags = c->flags;
	s->track = strdup(c->track);
	s->name = strdup(c->series);
	if (!s->track || !s->name || u64map__put(cs->idx, key, s)) {
		series_free(s);
		return NULL;
	}
	cs->n++;
	return s;
}

void gp_counters__add(void *ctx, const struct gp_counter *c)
{
	struct gp_counters *cs = ctx;
	uint64_t key;
	struct series *s;

	if (!c->track || !c->series)
		return;
	key = hash(c->pid, c->track, c->series);
	s = u64map__get(cs->idx, key);
	if (s && (s->pid != c->pid || strcmp(s->track, c->track) || strcmp(s->name, c->series)))
		s = NULL; /* a collision: see hash() */
	else if (!s)
		s = series_new(cs, key, c);
	if (!s) {
		cs->dropped++;
		return;
	}
	if (s->tick != cs->tick) {
		s->tick = cs->tick;
		s->cur = 0;
	}
	s->cur += c->value;
}

static int cmp_row(const void *a, const void *b)
{
	const struct gp_counter_row *x = a, *y = b;
	int r;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	r = strcmp(x->track, y->track);
	return r ? r : strcmp(x->series, y->series);
}

/* The row of s this tick; a series that stopped goes to the graveyard. */
static void row_of(struct gp_counters *cs, uint64_t key, struct series *s, struct gp_counter_row *r)
{
	bool live = s->tick == cs->tick, total = s->flags & GP_CTR_TOTAL;
	double out;

	*r = (struct gp_counter_row){ .pid = s->pid, .track = s->track, .series = s->name, .flags = s->flags,
				      .first = !s->seen, .gone = !live };
	if (live) {
		r->value = s->cur;
		if (total)
			r->delta = !s->seen ? s->cur : s->cur >= s->prev ? s->cur - s->prev : 0;
		else
			r->delta = s->seen ? s->cur - s->prev : 0;
		s->prev = s->cur;
	}
	out = total ? r->delta : r->value;
	r->quiet = s->seen && out == s->out && (!total || out == 0);
	s->out = out;
	s->seen = true;
	if (live)
		return;
	u64map__del(cs->idx, key);
	cs->n--;
	cs->gone[cs->nr_gone++] = s;
}

size_t gp_counters__end(struct gp_counters *cs, const struct gp_counter_row **rows)
{
	size_t n = 0, total = u64map__size(cs->idx);
	uint64_t *keys = NULL;
	uint64_t key;
	void *v;

	*rows = cs->rows;
	if (total > cs->cap_rows) {
		struct gp_counter_row *nr = realloc(cs->rows, total * sizeof(*nr));

		if (!nr)
			return 0;
		cs->rows = nr;
		cs->cap_rows = total;
	}
	keys = malloc((total ? total : 1) * sizeof(*keys));
	cs->gone = calloc(total ? total : 1, sizeof(*cs->gone));
	if (!keys || !cs->gone) {
		free(keys);
		return 0;
	}
	/* keys first: row_of deletes the stopped series, and the map must not change while
	 * it is iterated */
	for (size_t it = 0; u64map__next(cs->idx, &it, &key, &v);)
		keys[n++] = key;
	for (size_t i = 0; i < n; i++)
		row_of(cs, keys[i], u64map__get(cs->idx, keys[i]), &cs->rows[i]);
	free(keys);
	if (n > 1)
		qsort(cs->rows, n, sizeof(*cs->rows), cmp_row);
	*rows = cs->rows;
	return n;
}

uint64_t gp_counters__prev_ns(const struct gp_counters *cs)
{
	return cs->prev_ns;
}

uint64_t gp_counters__now_ns(const struct gp_counters *cs)
{
	return cs->now_ns;
}

uint64_t gp_counters__dropped(const struct gp_counters *cs)
{
	return cs->dropped;
}
