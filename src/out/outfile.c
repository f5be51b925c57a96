/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "outfile.h"

static FILE *open_file(const char *path, bool append)
{
	struct stat st;
	FILE *f = NULL;
	int fd = -1, e = 0;

	if (!strcmp(path, "-"))
		return stdout;
	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (append ? O_APPEND : 0), 0600);
	if (fd < 0) {
		e = errno;
		goto cleanup;
	}
	if (fstat(fd, &st)) {
		e = errno;
		goto cleanup;
	}
	if (S_ISREG(st.st_mode)) {
		if (!append && ftruncate(fd, 0)) {
			e = errno;
			goto cleanup;
		}
	} else if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
		e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto cleanup;
	}
	f = fdopen(fd, append ? "a" : "w");
	if (!f)
		e = errno;
cleanup:
	if (!f && fd >= 0)
		close(fd);
	if (!f)
		errno = e;
	return f;
}

FILE *outfile__open(const char *path)
{
	return open_file(path, false);
}

FILE *outfile__open_append(const char *path)
{
	return open_file(path, true);
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
