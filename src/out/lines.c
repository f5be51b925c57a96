/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include "out/lines.h"

enum line_status lines__read(FILE *f, char *buf, size_t cap, size_t *len, bool *nl)
{
	size_t n = 0, total = 0;
	int c = EOF;

	*nl = false;
	while ((c = getc_unlocked(f)) != EOF) {
		if (c == '\n') {
			*nl = true;
			break;
		}
		if (n + 1 < cap)
			buf[n++] = (char)c;
		total++;
	}
	if (cap)
		buf[n] = '\0';
	*len = n;
	if (c == EOF && ferror(f)) {
		if (!errno)
			errno = EIO;
		return LINE_ERROR;
	}
	if (c == EOF && total == 0)
		return LINE_EOF;
	return total > n ? LINE_LONG : LINE_OK;
}
