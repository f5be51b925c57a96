/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bounded line reading for the files gpuprobe reads back (JSON Lines traces, folded
 * stacks): a line never grows past the caller's buffer, a longer one is skipped whole, and
 * the caller learns whether the last line was cut short (no newline: a killed writer).
 */
#ifndef GP_LINES_H
#define GP_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum line_status {
	LINE_EOF = 0,	/* nothing left */
	LINE_OK,	/* buf holds the line, NUL-terminated, without its newline */
	LINE_LONG,	/* longer than cap - 1: consumed to its end, buf holds its start */
	LINE_ERROR,	/* a read error (errno set) */
};

/* *len: bytes in buf (a line may hold NUL bytes: check memchr(buf, 0, len) if it matters);
 * *nl: the line ended with '\n' (false when the file ended inside it). */
enum line_status lines__read(FILE *f, char *buf, size_t cap, size_t *len, bool *nl);

#endif
