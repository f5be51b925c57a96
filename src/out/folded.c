/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "out/folded.h"
#include "out/lines.h"
#include "lib/util.h"

struct entry {
	char *stack;
	size_t len, depth;
	uint64_t hash, value;
};

struct folded {
	struct entry *e;
	size_t n, cap;
	uint32_t *slot;		/* open addressing: entry index + 1, 0 = empty */
	size_t nslots;		/* a power of two, kept at least twice n */
	uint64_t total;
	struct folded_stack *sorted; /* built on demand, dropped by every add */
};

struct folded *folded__new(void)
{
	return calloc(1, sizeof(struct folded));
}

void folded__free(struct folded *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->e[i].stack);
	free(f->e);
	free(f->slot);
	free(f->sorted);
	free(f);
}

/* Bytes of the UTF-8 character at s (at most n bytes there), or 0 if it is not a valid one
 * or one XML cannot carry (U+FFFE, U+FFFF). */
static size_t utf8_char(const unsigned char *s, size_t n)
{
	uint32_t cp = 0;
	size_t k = gp_utf8_decode(s, n, &cp);

	if (k == GP_SAFE_MORE || cp == 0xfffe || cp == 0xffff)
		return 0;
	return k;
}

size_t folded__sanitize_frame(const char *in, size_t in_len, char *out, size_t out_len)
{
	const unsigned char *s = (const unsigned char *)(in ? in : "");
	size_t limit = out_len - 1, o = 0, safe = 0, i = 0;
	bool cut = false;

	if (limit > FOLDED_FRAME_MAX)
		limit = FOLDED_FRAME_MAX;
	if (!in)
		in_len = 0;
	while (i < in_len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	while (i < in_len) {
		size_t k = utf8_char(s + i, in_len - i), skip;
		char c = 0;

		if (k == 0 || (k == 1 && (s[i] < 0x20 || s[i] == 0x7f)))
			c = s[i] == '\t' ? ' ' : '?';
		else if (k > 1 && gp_safe_char(s + i, k, false, &skip) != k) /* C1, bidi controls */
			c = '?';
		else if (k == 1 && s[i] == ';')
			c = ':';
		if (o + (c ? 1 : k) > limit) {
			cut = true;
			break;
		}
		if (c)
			out[o++] = c;
		else
			memcpy(out + o, s + i, k), o += k;
		i += k ? k : 1;
		if (o + 3 <= limit)
			safe = o;
	}
	if (cut) {
		o = safe;
		memcpy(out + o, "...", 3);
		o += 3;
	}
	while (!cut && o && out[o - 1] == ' ')
		o--;
	if (!o) {
		o = strlen("[unknown]");
		memcpy(out, "[unknown]", o);
	}
	out[o] = '\0';
	return o;
}

static int grow_slots(struct folded *f)
{
	size_t ns = f->nslots ? f->nslots * 2 : 64;
	uint32_t *slot = calloc(ns, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++) {
		size_t j = f->e[i].hash & (ns - 1);

		while (slot[j])
			j = (j + 1) & (ns - 1);
		slot[j] = (uint32_t)(i + 1);
	}
	free(f->slot);
	f->slot = slot;
	f->nslots = ns;
	return 0;
}

/* Adds value to the stack text s (root-first, sanitized frames) of depth frames. */
static int add_text(struct folded *f, const char *s, size_t len, size_t depth, uint64_t value)
{
	uint64_t h = gp_fnv1a(s, len, GP_FNV1A_INIT);
	struct entry *e;
	size_t j;

	if (!value)
		return 0;
	if (f->nslots && f->nslots >= 2 * (f->n + 1)) {
		j = h & (f->nslots - 1);
		for (; f->slot[j]; j = (j + 1) & (f->nslots - 1)) {
			e = &f->e[f->slot[j] - 1];
			if (e->hash == h && e->len == len && !memcmp(e->stack, s, len))
				goto found;
		}
	} else {
		/* grow first, then look up in the bigger table */
		if (grow_slots(f))
			return -ENOMEM;
		return add_text(f, s, len, depth, value);
	}
	if (f->n >= FOLDED_STACKS_MAX)
		return -E2BIG;
	if (f->n == f->cap) {
		size_t nc = f->cap ? f->cap * 2 : 64;
		struct entry *ne = realloc(f->e, nc * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		f->e = ne;
		f->cap = nc;
	}
	e = &f->e[f->n];
	e->stack = malloc(len + 1);
	if (!e->stack)
		return -ENOMEM;
	memcpy(e->stack, s, len);
	e->stack[len] = '\0';
	e->len = len;
	e->depth = depth;
	e->hash = h;
	e->value = 0;
	f->slot[j] = (uint32_t)(++f->n);
found:
	e->value = e->value > UINT64_MAX - value ? UINT64_MAX : e->value + value;
	f->total = f->total > UINT64_MAX - value ? UINT64_MAX : f->total + value;
	free(f->sorted);
	f->sorted = NULL;
	return 0;
}

/* Joins sanitized frames root-first. frames[i] for i in order given by step. */
static int add_frames(struct folded *f, const char *const *frames, const size_t *lens, size_t n,
		      bool innermost_first, uint64_t value)
{
	size_t cap = (n ? n : 1) * (FOLDED_FRAME_MAX + 1) + 1, o = 0;
	char *buf;
	int r;

	if (n > FOLDED_DEPTH_MAX)
		return -E2BIG;
	if (!value)
		return 0;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		size_t i = innermost_first ? n - 1 - k : k;
		const char *fr = frames[i];

		if (k)
			buf[o++] = ';';
		o += folded__sanitize_frame(fr, fr ? (lens ? lens[i] : strlen(fr)) : 0, buf + o,
					    FOLDED_FRAME_MAX + 1);
	}
	if (!n)
		o = strlen(strcpy(buf, "[unknown]"));
	r = add_text(f, buf, o, n ? n : 1, value);
	free(buf);
	return r;
}

int folded__add(struct folded *f, const char *const *frames, size_t n, uint64_t value)
{
	return add_frames(f, frames, NULL, n, true, value);
}

size_t folded__count(const struct folded *f)
{
	return f ? f->n : 0;
}

uint64_t folded__total(const struct folded *f)
{
	return f ? f->total : 0;
}

static int cmp_stack(const void *a, const void *b)
{
	return strcmp(((const struct folded_stack *)a)->stack, ((const struct folded_stack *)b)->stack);
}

size_t folded__sorted(struct folded *f, const struct folded_stack **out)
{
	*out = NULL;
	if (!f->n)
		return 0;
	if (!f->sorted) {
		f->sorted = malloc(f->n * sizeof(*f->sorted));
		if (!f->sorted)
			return 0;
		for (size_t i = 0; i < f->n; i++)
			f->sorted[i] = (struct folded_stack){ f->e[i].stack, f->e[i].value, f->e[i].depth };
		qsort(f->sorted, f->n, sizeof(*f->sorted), cmp_stack);
	}
	*out = f->sorted;
	return f->n;
}

int folded__write(struct folded *f, FILE *out)
{
	const struct folded_stack *s;
	size_t n = folded__sorted(f, &s);

	if (f->n && !s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s %" PRIu64 "\n", s[i].stack, s[i].value);
	if (fflush(out))
		return -(errno ? errno : EIO); /* ENOSPC says more than EIO */
	return ferror(out) ? -EIO : 0;
}

static void skip(struct folded_read_stats *st, size_t *counter, const char *why)
{
	(*counter)++;
	st->skipped++;
	if (!st->first_bad_line) {
		st->first_bad_line = st->lines;
		st->first_bad_why = why;
	}
}

/* "STACK VALUE": VALUE after the last space, an unsigned decimal that fits 64 bits. */
static bool parse_value(char *line, size_t len, size_t *stack_len, uint64_t *value)
{
	char *sp = NULL;
	uint64_t v = 0;

	for (size_t i = len; i > 0; i--)
		if (line[i - 1] == ' ') {
			sp = line + i - 1;
			break;
		}
	if (!sp || sp == line || !sp[1])
		return false;
	for (char *p = sp + 1; *p; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*stack_len = (size_t)(sp - line);
	*value = v;
	return true;
}

/* The frames of the stack text line[0, slen), split at ';' into frames and lens; their
 * count, or FOLDED_DEPTH_MAX + 1 when there are more. */
static size_t split_frames(const char *line, size_t slen, const char **frames, size_t *lens)
{
	size_t depth = 0;

	for (size_t i = 0, start = 0; i <= slen; i++) {
		if (i < slen && line[i] != ';')
			continue;
		if (depth == FOLDED_DEPTH_MAX)
			return depth + 1;
		frames[depth] = line + start;
		lens[depth++] = i - start;
		start = i + 1;
	}
	return depth;
}

/* One line of n bytes (its newline gone): a stack added, or counted as skipped;
 * -ENOMEM, else 0. */
static int read_stack(struct folded *f, char *line, size_t n, struct folded_read_stats *st,
		      const char **frames, size_t *lens)
{
	size_t slen, depth;
	uint64_t value;
	int r;

	if (n && line[n - 1] == '\r')
		line[--n] = '\0';
	if (!n)
		return 0;
	if (memchr(line, '\0', n) || !parse_value(line, n, &slen, &value)) {
		skip(st, &st->malformed, "not \"frame;frame;... value\"");
		return 0;
	}
	depth = split_frames(line, slen, frames, lens);
	if (depth > FOLDED_DEPTH_MAX) {
		skip(st, &st->too_deep, "deeper than the frame limit");
		return 0;
	}
	r = add_frames(f, frames, lens, depth, false, value);
	if (r == -E2BIG) {
		skip(st, &st->too_many, "past the limit of distinct stacks");
		return 0;
	}
	if (!r)
		st->stacks++;
	return r;
}

int folded__read(struct folded *f, FILE *in, struct folded_read_stats *st, char *err, size_t len)
{
	struct folded_read_stats dummy;
	const char **frames = NULL;
	size_t *lens = NULL;
	char *line = NULL;
	int r = 0;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	line = malloc(FOLDED_LINE_MAX + 1);
	frames = malloc(FOLDED_DEPTH_MAX * sizeof(*frames));
	lens = malloc(FOLDED_DEPTH_MAX * sizeof(*lens));
	if (!line || !frames || !lens) {
		r = -ENOMEM;
		snprintf(err, len, "out of memory");
		goto cleanup;
	}
	for (;;) {
		size_t n;
		bool nl;
		enum line_status ls = lines__read(in, line, FOLDED_LINE_MAX + 1, &n, &nl);

		if (ls == LINE_EOF)
			break;
		if (ls == LINE_ERROR) {
			r = -errno;
			snprintf(err, len, "reading line %zu: %s", st->lines + 1, strerror(-r));
			goto cleanup;
		}
		st->lines++;
		if (ls == LINE_LONG) {
			skip(st, &st->too_long, "longer than the line limit");
			continue;
		}
		r = read_stack(f, line, n, st, frames, lens);
		if (r) {
			snprintf(err, len, "out of memory");
			goto cleanup;
		}
	}
cleanup:
	free(line);
	free(frames);
	free(lens);
	return r;
}
