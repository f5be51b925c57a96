/* SPDX-License-Identifier: BSD-3-Clause */
/* Output files: see outfile.h for each rule and the attack it stops. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "out/outfile.h"

/*
 * A file another user owns in a sticky world-writable folder (/tmp) may have been planted
 * there for us to write into; the folder's owner and we ourselves are trusted.
 */
static bool planted(const struct stat *file, const struct stat *dir)
{
	return (dir->st_mode & S_ISVTX) && (dir->st_mode & S_IWOTH) &&
	       file->st_uid != geteuid() && file->st_uid != dir->st_uid;
}

/* The folder of path, opened O_PATH (so the checks are on that very folder) and its
 * stat in dst; the file's name in it through base (in *copy, the caller's to free).
 * A descriptor, or -errno. */
static int open_dir(const char *path, char **copy, const char **base, struct stat *dst)
{
	const char *dir = ".";
	char *slash;
	int dfd;

	*base = path;
	*copy = strdup(path);
	if (!*copy)
		return -ENOMEM;
	slash = strrchr(*copy, '/');
	if (slash) {
		*slash = '\0';
		dir = slash == *copy ? "/" : *copy;
		*base = slash + 1;
	}
	if (!**base)
		return -EISDIR;
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, dst)) {
		int e = errno;

		close(dfd);
		return -e;
	}
	return dfd;
}

/*
 * base in dfd, never through a link. Non-blocking first: opening a FIFO nobody reads
 * would wait for a reader, and a planted one must be refused before that, not after its
 * owner came to read. A descriptor, or -errno.
 */
static int open_file(int dfd, const char *base, int flags, const struct stat *dst)
{
	struct stat st;
	int fd = openat(dfd, base, flags | O_NONBLOCK, 0600);

	if (fd < 0 && errno == ENXIO) {
		if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW))
			return -errno;
		if (S_ISFIFO(st.st_mode) && planted(&st, dst))
			return -EPERM;
		/* the user's own FIFO: wait for its reader, as any writer would */
		fd = openat(dfd, base, flags, 0600);
	}
	return fd < 0 ? -errno : fd;
}

/* What was opened: blocking again; a regular file (one link only, truncated unless
 * appending), a FIFO or a character device, not planted. 0 or an errno. */
static int check_opened(int fd, const struct stat *dst, bool append)
{
	struct stat st;

	if (fstat(fd, &st) || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		return errno;
	if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) {
		if (planted(&st, dst))
			return EPERM;
	} else if (!S_ISCHR(st.st_mode)) {
		return S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
	}
	if (S_ISREG(st.st_mode)) {
		if (st.st_nlink > 1)
			return EMLINK;
		if (!append && ftruncate(fd, 0))
			return errno;
	}
	return 0;
}

static FILE *open_out(const char *path, bool append)
{
	int dfd = -1, fd = -1, e = 0;
	const char *base;
	char *copy = NULL;
	struct stat dst;
	FILE *f = NULL;

	if (!path || !*path) {
		e = EINVAL;
		goto cleanup;
	}
	if (!strcmp(path, "-"))
		return stdout;
	dfd = open_dir(path, &copy, &base, &dst);
	if (dfd < 0) {
		e = -dfd;
		goto cleanup;
	}
	fd = open_file(dfd, base, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC |
				  (append ? O_APPEND : 0), &dst);
	e = fd < 0 ? -fd : check_opened(fd, &dst, append);
	if (e)
		goto cleanup;
	f = fdopen(fd, append ? "a" : "w");
	if (!f)
		e = errno;
cleanup:
	if (!f && fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	free(copy);
	if (!f)
		errno = e;
	return f;
}

FILE *outfile__open(const char *path)
{
	return open_out(path, false);
}

FILE *outfile__open_append(const char *path)
{
	return open_out(path, true);
}

int outfile__close(FILE *f)
{
	int err = 0;

	if (!f)
		return 0;
	if (fflush(f) || ferror(f))
		err = -(errno ? errno : EIO);
	if (f != stdout && fclose(f) && !err)
		err = -(errno ? errno : EIO);
	return err;
}
