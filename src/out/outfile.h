/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Output files a root gpuprobe writes (--trace, -o, --csv, --folded):
 * never through a symlink (O_NOFOLLOW: a link planted in /tmp cannot aim the write at
 * another file), created 0600, truncated only when a regular file; a FIFO or a character
 * device (a pipe a user set up, /dev/null) is written as it is; "-" is stdout.
 */
#ifndef GP_OUTFILE_H
#define GP_OUTFILE_H

#include <stdio.h>

/* Returns the stream, or NULL with errno set (ELOOP for a symlink, EISDIR / EINVAL for
 * what is neither a regular file, a FIFO nor a character device). */
FILE *outfile__open(const char *path);
/* The same, appending: nothing is truncated, every write goes to the end (O_APPEND), so
 * ftell after fseek(SEEK_END) says whether a regular file was empty (--csv's header). */
FILE *outfile__open_append(const char *path);
/* Closes what outfile__open returned (stdout is flushed, not closed): 0 or -errno, a
 * write error included. NULL is fine. */
int outfile__close(FILE *f);

#endif
