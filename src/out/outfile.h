/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Output files a root gpuprobe writes (--trace, --csv, and for the front ends -o,
 * --folded), safe to name in a shared folder such as /tmp:
 *   - never through a symlink at the last component (O_NOFOLLOW: a link planted in /tmp
 *     cannot aim the write at another file), ELOOP;
 *   - created 0600 (whatever the umask allows less);
 *   - a regular file is truncated (or appended to) only when it has no other name
 *     (st_nlink 1: a hard link planted in a shared folder would make the write land in
 *     the linked file), EMLINK otherwise;
 *   - in a sticky world-writable folder, an existing regular file or FIFO is written only
 *     when gpuprobe's user or the folder's owner owns it (as fs.protected_regular and
 *     fs.protected_fifos = 2 do): another user's planted file would receive the output,
 *     EPERM otherwise;
 *   - a FIFO or a character device (a pipe a user set up, /dev/null) is written as it is,
 *     never truncated; anything else is EISDIR / EINVAL;
 *   - "-" is stdout.
 */
#ifndef GP_OUTFILE_H
#define GP_OUTFILE_H

#include <stdio.h>

/* Returns the stream (a regular file emptied first), or NULL with errno set. */
FILE *outfile__open(const char *path);
/* The same, appending: nothing is truncated, every write goes to the end (O_APPEND), so
 * ftell after fseek(SEEK_END) says whether a regular file was empty (--csv's header). */
FILE *outfile__open_append(const char *path);
/* Closes what outfile__open returned (stdout is flushed, not closed): 0 or -errno, a
 * write error included. NULL is fine. */
int outfile__close(FILE *f);

#endif
