/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The NCCL unique id that rank 0 of a multi-process stand-in job hands the other ranks
 * through a file (nccl_app, hang_app): written whole under a temporary name and renamed,
 * read until it is whole or 30 s have passed. who names the program in the error line.
 * Include after common.h and the NCCL header.
 */
#ifndef GP_TEST_NCCLID_H
#define GP_TEST_NCCLID_H
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void ncclid_read(const char *who, const char *path, ncclUniqueId *id)
{
	unsigned long long deadline = app_now_ns() + 30000000000ull;
	struct timespec ts = { 0, 10000000 };

	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			ssize_t n = read(fd, id, sizeof(*id));

			close(fd);
			if (n == (ssize_t)sizeof(*id))
				return;
		}
		if (app_now_ns() > deadline) {
			fprintf(stderr, "%s: no unique id in %s after 30 s\n", who, path);
			exit(1);
		}
		nanosleep(&ts, NULL);
	}
}

static void ncclid_write(const char *who, const char *path, const ncclUniqueId *id)
{
	char tmp[4096];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, id, sizeof(*id)) != (ssize_t)sizeof(*id) || close(fd) ||
	    rename(tmp, path)) {
		fprintf(stderr, "%s: writing %s: %s\n", who, path, strerror(errno));
		exit(1);
	}
}
#endif
