/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Folded stacks, the format flamegraph.pl, speedscope and Perfetto's importers read: one
 * line per stack, frames root-first joined by ';', a space, then the value (for --memleak:
 * outstanding bytes). Equal stacks are added up; lines are written sorted by stack, as
 * stackcollapse tools write them. Frame text is made safe for the format (no ';', no line
 * breaks or control characters, valid UTF-8, bounded) and keeps its readable forms,
 * "function (file:line)" and "func+0x1a (lib)".
 */
#ifndef GP_FOLDED_H
#define GP_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Longest frame kept, in bytes; longer ones end in "..." */
#define FOLDED_FRAME_MAX 512
/* Reader bounds: a longer line, a deeper stack or more distinct stacks are skipped. */
#define FOLDED_LINE_MAX (256 * 1024)
#define FOLDED_DEPTH_MAX 1024
#define FOLDED_STACKS_MAX 1000000

struct folded;

struct folded_stack {
	const char *stack;	/* frames root-first, ';'-separated, NUL-terminated */
	uint64_t value;
	size_t depth;		/* number of frames */
};

struct folded_read_stats {
	size_t lines;		/* lines read, blank ones included */
	size_t stacks;		/* lines added (an equal stack twice counts twice) */
	size_t skipped;		/* lines not added, for one of the reasons below */
	size_t too_long, too_deep, too_many, malformed;
	size_t first_bad_line;	/* 1-based line number of the first skipped line, 0 if none */
	const char *first_bad_why;
};

struct folded *folded__new(void);
void folded__free(struct folded *f);

/* Adds value to the stack of n frames given innermost first (as unwinders list them);
 * a NULL or empty frame is "[unknown]". A value of 0 adds nothing; sums saturate at
 * UINT64_MAX. Returns 0, -E2BIG past FOLDED_DEPTH_MAX frames or FOLDED_STACKS_MAX stacks,
 * or -ENOMEM. */
int folded__add(struct folded *f, const char *const *frames, size_t n, uint64_t value);

size_t folded__count(const struct folded *f);
uint64_t folded__total(const struct folded *f);

/* The stacks sorted by their text (byte order); valid until the next add or free. Returns
 * the count, with *out NULL when out of memory and the count 0. */
size_t folded__sorted(struct folded *f, const struct folded_stack **out);

/* Writes every stack, sorted. Returns 0 or -errno (-EIO for a write error). */
int folded__write(struct folded *f, FILE *out);

/* Reads folded lines ("a;b;c 123", blank lines ignored, CRLF accepted) and adds them; lines
 * that are too long, too deep, past the stack count or not "STACK VALUE" with VALUE an
 * unsigned integer are skipped and counted in st (may be NULL). Returns 0, or -errno for a
 * read error or lack of memory (err says which). */
int folded__read(struct folded *f, FILE *in, struct folded_read_stats *st, char *err, size_t len);

/* Writes in's frame text made safe for the format to out (out_len >= 16): ';' becomes ':',
 * control characters (C0, DEL, C1), bidi formatting characters (gp_safe_char's rule), U+FFFE,
 * U+FFFF and bytes that are not UTF-8 become '?', a tab a space, spaces at either end go,
 * an empty result is "[unknown]", and text past out_len - 1 or FOLDED_FRAME_MAX bytes is
 * cut at a character boundary and ends in "...". Returns the length written. */
size_t folded__sanitize_frame(const char *in, size_t in_len, char *out, size_t out_len);

#endif
