/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The err-buffer convention: a function that fails writes one reason into the caller's
 * (err, len) and returns -errno. Header-only, so the parsers that the fuzz targets build
 * alone (elfsym, procmaps, safeopen, pystack) share it without another object.
 */
#ifndef GP_ERRBUF_H
#define GP_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* One reason into err; err NULL or len 0: the caller wants none. */
static inline void __attribute__((format(printf, 3, 4)))
gp_set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

#endif
