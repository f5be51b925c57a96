/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Output files in a shared folder (a 1777 folder like /tmp): symlinks, hard links, files
 * and FIFOs planted by another user are refused and left untouched; files are created
 * 0600; appending (--csv) keeps what is there. Run as root (the tests chown to nobody).
 */
#define _GNU_SOURCE
#include "out/outfile.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NOBODY 65534

static char tmp[64];
static char shared[128]; /* root's, mode 1777, as /tmp */

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode), r = 0;

	if (fd < 0)
		return -1;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		r = -1;
	close(fd);
	return r;
}

static int holds(const char *path, const char *text)
{
	char buf[256] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n >= 0 && !strcmp(buf, text);
}

static int write_with(FILE *(*opener)(const char *), const char *path, const char *text)
{
	FILE *f = opener(path);

	if (!f)
		return -errno;
	fputs(text, f);
	return outfile__close(f);
}

static void test_create_truncate_append(void)
{
	char p[256];
	struct stat st;
	mode_t old = umask(0);

	snprintf(p, sizeof(p), "%s/out.csv", tmp);
	if (!ASSERT_EQ(write_with(outfile__open_append, p, "a\n"), 0, "append creates"))
		goto cleanup;
	if (!ASSERT_EQ(stat(p, &st), 0, "stat"))
		goto cleanup;
	if (!ASSERT_EQ(st.st_mode & 07777, 0600, "created 0600 (umask 0)"))
		goto cleanup;
	if (!ASSERT_EQ(write_with(outfile__open_append, p, "b\n"), 0, "append again"))
		goto cleanup;
	if (!ASSERT_TRUE(holds(p, "a\nb\n"), "appended, nothing lost"))
		goto cleanup;
	if (!ASSERT_EQ(write_with(outfile__open, p, "c\n"), 0, "open truncates"))
		goto cleanup;
	if (!ASSERT_TRUE(holds(p, "c\n"), "truncated"))
		goto cleanup;
	if (!ASSERT_TRUE(outfile__open("-") == stdout, "- is stdout"))
		goto cleanup;
	if (!ASSERT_TRUE(outfile__open_append("-") == stdout, "- is stdout when appending"))
		goto cleanup;
	errno = 0;
	if (!ASSERT_TRUE(!outfile__open(""), "empty path"))
		goto cleanup;
	if (!ASSERT_EQ(errno, EINVAL, "empty path: EINVAL"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/", tmp);
	if (!ASSERT_EQ(write_with(outfile__open, p, "x"), -EISDIR, "a folder"))
		goto cleanup;
	if (!ASSERT_EQ(write_with(outfile__open_append, tmp, "x"), -EISDIR, "a folder when appending"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/no/such/folder/x", tmp);
	if (!ASSERT_EQ(write_with(outfile__open, p, "x"), -ENOENT, "a missing folder"))
		goto cleanup;
cleanup:
	umask(old);
}

/* What a user can plant in a shared folder for a root run to write into. */
static void test_planted_in_shared_folder(void)
{
	char secret[256], p[256];
	FILE *(*openers[2])(const char *) = { outfile__open, outfile__open_append };
	time_t t0;
	int r;

	snprintf(secret, sizeof(secret), "%s/secret", tmp);
	if (!ASSERT_EQ(put(secret, "root's\n", 0600), 0, "a root-owned file"))
		goto cleanup;
	for (int i = 0; i < 2; i++) {
		/* a symlink to it */
		snprintf(p, sizeof(p), "%s/link.json", shared);
		unlink(p);
		if (!ASSERT_EQ(symlink(secret, p), 0, "symlink"))
			goto cleanup;
		if (!ASSERT_EQ(write_with(openers[i], p, "x"), -ELOOP, "symlink refused (O_NOFOLLOW)"))
			goto cleanup;
		/* nobody's link: kernel 6.18 refuses it first (EACCES) in a sticky folder */
		if (!ASSERT_EQ(lchown(p, NOBODY, NOBODY), 0, "the link is nobody's"))
			goto cleanup;
		r = write_with(openers[i], p, "x");
		if (!ASSERT_TRUE(r == -ELOOP || r == -EACCES, "nobody's symlink refused"))
			goto cleanup;
		/* a hard link to it (fs.protected_hardlinks=0 lets a user make one) */
		snprintf(p, sizeof(p), "%s/hard.json", shared);
		unlink(p);
		if (!ASSERT_EQ(link(secret, p), 0, "hard link"))
			goto cleanup;
		if (!ASSERT_EQ(write_with(openers[i], p, "x"), -EMLINK, "hard link refused"))
			goto cleanup;
		unlink(p);
		/* a regular file of nobody's, for the output to land in */
		snprintf(p, sizeof(p), "%s/theirs.json", shared);
		if (!ASSERT_EQ(put(p, "theirs\n", 0666), 0, "their file"))
			goto cleanup;
		if (!ASSERT_EQ(chown(p, NOBODY, NOBODY), 0, "chown nobody"))
			goto cleanup;
		if (!ASSERT_EQ(write_with(openers[i], p, "x"), -EPERM, "another user's file refused"))
			goto cleanup;
		if (!ASSERT_TRUE(holds(p, "theirs\n"), "their file untouched"))
			goto cleanup;
		unlink(p);
		/* a FIFO of nobody's: refused at once, no waiting for its reader */
		snprintf(p, sizeof(p), "%s/fifo.json", shared);
		if (!ASSERT_EQ(mkfifo(p, 0666), 0, "their FIFO"))
			goto cleanup;
		if (!ASSERT_EQ(chown(p, NOBODY, NOBODY), 0, "chown nobody"))
			goto cleanup;
		t0 = time(NULL);
		if (!ASSERT_EQ(write_with(openers[i], p, "x"), -EPERM, "another user's FIFO refused"))
			goto cleanup;
		if (!ASSERT_TRUE(time(NULL) - t0 < 2, "without blocking"))
			goto cleanup;
		unlink(p);
	}
	if (!ASSERT_TRUE(holds(secret, "root's\n"), "the root-owned file untouched"))
		goto cleanup;
	/* our own file in the shared folder is fine */
	snprintf(p, sizeof(p), "%s/ours.json", shared);
	if (!ASSERT_EQ(write_with(outfile__open, p, "ours\n"), 0, "our file"))
		goto cleanup;
	if (!ASSERT_TRUE(holds(p, "ours\n"), "written"))
		goto cleanup;
cleanup:;
}

/* A folder nobody owns (their home, mode 1777): their files there are theirs to offer. */
static void test_folder_owner_trusted(void)
{
	char dir[256], p[300];

	snprintf(dir, sizeof(dir), "%s/home", tmp);
	if (!ASSERT_EQ(mkdir(dir, 01777), 0, "mkdir") || !ASSERT_EQ(chmod(dir, 01777), 0, "chmod 1777"))
		goto cleanup;
	if (!ASSERT_EQ(chown(dir, NOBODY, NOBODY), 0, "nobody's folder"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/out.json", dir);
	if (!ASSERT_EQ(put(p, "old\n", 0666), 0, "their file") || !ASSERT_EQ(chown(p, NOBODY, NOBODY), 0, "chown"))
		goto cleanup;
	if (!ASSERT_EQ(write_with(outfile__open, p, "new\n"), 0, "the folder owner's file is written"))
		goto cleanup;
	if (!ASSERT_TRUE(holds(p, "new\n"), "written"))
		goto cleanup;
cleanup:;
}

int main(int argc, char **argv)
{
	int ret;

	unit_select(argc, argv);
	snprintf(tmp, sizeof(tmp), "/tmp/gp-outfile-XXXXXX");
	if (!mkdtemp(tmp) || chmod(tmp, 0755)) {
		printf("not ok 1 - setup: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	snprintf(shared, sizeof(shared), "%s/shared", tmp);
	if (mkdir(shared, 0755) || chmod(shared, 01777)) {
		printf("not ok 1 - setup: %s\n0 passed, 1 failed\n", strerror(errno));
		return 1;
	}
	RUN_TEST(test_create_truncate_append);
	RUN_TEST(test_planted_in_shared_folder);
	RUN_TEST(test_folder_owner_trusted);
	ret = unit_done();
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return ret;
}
