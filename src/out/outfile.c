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
#include "outfile.h"

/*
 * A file another user owns in a sticky world-writable folder (/tmp) may have been planted
 * there for us to write into; the folder's owner and we ourselves are trusted.
 */
static bool planted(const struct stat *file, const struct stat *dir)
{
	return (dir->st_mode & S_ISVTX) && (dir->st_mode & S_IWOTH) &&
	       file->st_uid != geteuid() && file->st_uid != dir->st_uid;
}

static FILE *open_out(const char *path, bool append)
{
	char *copy = NULL, *slash;
	const char *dir = ".", *base = path;
	int dfd = -1, fd = -1, e = 0, flags;
	struct stat st, dst;
	FILE *f = NULL;

	if (!path || !*path) {
		e = EINVAL;
		goto cleanup;
	}
	if (!strcmp(path, "-"))
		return stdout;
	copy = strdup(path);
	if (!copy) {
		e = ENOMEM;
		goto cleanup;
	}
	slash = strrchr(copy, '/');
	if (slash) {
		*slash = '\0';
		dir = slash == copy ? "/" : copy;
		base = slash + 1;
	}
	if (!*base) {
		e = EISDIR;
		goto cleanup;
	}
	/* the folder the file is in, so the checks below are on that very folder */
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &dst)) {
		e = errno;
		goto cleanup;
	}
	flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | (append ? O_APPEND : 0);
	/*
	 * Non-blocking first: opening a FIFO nobody reads would wait for a reader, and a
	 * planted one must be refused before that, not after its owner came to read.
	 */
	fd = openat(dfd, base, flags | O_NONBLOCK, 0600);
	if (fd < 0 && errno == ENXIO) {
		if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
			e = errno;
			goto cleanup;
		}
		if (S_ISFIFO(st.st_mode) && planted(&st, &dst)) {
			e = EPERM;
			goto cleanup;
		}
		/* the user's own FIFO: wait for its reader, as any writer would */
		fd = openat(dfd, base, flags, 0600);
	}
	if (fd < 0) {
		e = errno;
		goto cleanup;
	}
	if (fstat(fd, &st) || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		e = errno;
		goto cleanup;
	}
	if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode)) {
		if (planted(&st, &dst)) {
			e = EPERM;
			goto cleanup;
		}
	} else if (!S_ISCHR(st.st_mode)) {
		e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto cleanup;
	}
	if (S_ISREG(st.st_mode)) {
		if (st.st_nlink > 1) {
			e = EMLINK;
			goto cleanup;
		}
		if (!append && ftruncate(fd, 0)) {
			e = errno;
			goto cleanup;
		}
	}
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
