/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * procpin: a process's maps and descriptors on its executable files, kept while it lives
 * and used once it is gone; against a fake proc tree (<tmp>/<pid>/maps, <tmp>/<pid>/root)
 * with what a hostile process can plant there (a FIFO, a swapped inode), the limits, the
 * sharing of one file between processes and the release.
 */
#define _GNU_SOURCE
#include "lib/procpin.h"
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define PID_A 4242
#define PID_B 4243
#define PID_C 4244

static char tmp[256];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* "<start>-<end> <perms> 00000000 MM:mm INODE <path>" for the file at root<path>. */
static void map_line(FILE *f, int pid, unsigned long long start, const char *perms, const char *path)
{
	char p[PATH_MAX];
	struct stat st = { 0 };

	snprintf(p, sizeof(p), "%s/%d/root%s", tmp, pid, path);
	stat(p, &st);
	fprintf(f, "%llx-%llx %s 00000000 %02x:%02x %llu %s\n", start, start + 0x1000, perms,
		major(st.st_dev), minor(st.st_dev), (unsigned long long)st.st_ino, path);
}

static int make_lib_dir(int pid)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%d/root/lib", tmp, pid);
	return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

static int setup(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "/tmp/gp-procpin-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	for (int pid = PID_A; pid <= PID_C; pid++) {
		snprintf(p, sizeof(p), "%s/%d", tmp, pid);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/%d/root", tmp, pid);
		mkdir(p, 0755);
		if (make_lib_dir(pid))
			return -1;
	}
	/* A's root: two libraries, a data file, a FIFO; B and C map A's a.so (a hard link:
	 * the same dev, inode) and a library of their own */
	snprintf(p, sizeof(p), "%s/%d/root/lib/a.so", tmp, PID_A);
	f = fopen(p, "w");
	if (!f || fputs("a", f) < 0 || fclose(f))
		return -1;
	snprintf(p, sizeof(p), "%s/%d/root/lib/b.so", tmp, PID_A);
	f = fopen(p, "w");
	if (!f || fputs("b", f) < 0 || fclose(f))
		return -1;
	snprintf(p, sizeof(p), "%s/%d/root/lib/data.bin", tmp, PID_A);
	f = fopen(p, "w");
	if (!f || fputs("d", f) < 0 || fclose(f))
		return -1;
	snprintf(p, sizeof(p), "%s/%d/root/lib/fifo.so", tmp, PID_A);
	if (mkfifo(p, 0600))
		return -1;
	for (int pid = PID_B; pid <= PID_C; pid++) {
		snprintf(p, sizeof(p), "%s/%d/root/lib/a.so", tmp, PID_A);
		snprintf(q, sizeof(q), "%s/%d/root/lib/a.so", tmp, pid);
		if (link(p, q))
			return -1;
		snprintf(q, sizeof(q), "%s/%d/root/lib/own.so", tmp, pid);
		f = fopen(q, "w");
		if (!f || fputs("own", f) < 0 || fclose(f))
			return -1;
	}
	snprintf(p, sizeof(p), "%s/%d/maps", tmp, PID_A);
	f = fopen(p, "w");
	if (!f)
		return -1;
	map_line(f, PID_A, 0x400000, "r-xp", "/lib/a.so");
	map_line(f, PID_A, 0x500000, "r--p", "/lib/a.so");
	map_line(f, PID_A, 0x600000, "r-xp", "/lib/b.so");
	map_line(f, PID_A, 0x700000, "r--p", "/lib/data.bin");
	map_line(f, PID_A, 0x800000, "r-xp", "/lib/fifo.so");
	fprintf(f, "7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]\n");
	if (fclose(f))
		return -1;
	for (int pid = PID_B; pid <= PID_C; pid++) {
		snprintf(p, sizeof(p), "%s/%d/maps", tmp, pid);
		f = fopen(p, "w");
		if (!f)
			return -1;
		map_line(f, pid, 0x400000, "r-xp", "/lib/a.so");
		map_line(f, pid, 0x600000, "r-xp", "/lib/own.so");
		if (fclose(f))
			return -1;
	}
	return 0;
}

struct count {
	int n, exec;
};

static int count_cb(const struct map_entry *e, void *ctx)
{
	struct count *c = ctx;

	c->n++;
	c->exec += e->perms[2] == 'x';
	return 0;
}

static void test_keep_share_gone_release(void)
{
	struct procpin *pp = procpin__new(tmp);
	struct procpin_stats st;
	struct safeopen_id a, own, root;
	struct count c = { 0 };
	char p[PATH_MAX];
	struct stat sa, sr;
	int fds = open_fds(), fd = -1;

	if (!ASSERT_TRUE(pp != NULL, "new"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/%d/root/lib/a.so", tmp, PID_A);
	stat(p, &sa);
	a = (struct safeopen_id){ major(sa.st_dev), minor(sa.st_dev), sa.st_ino };
	if (!ASSERT_EQ(procpin__take(pp, PID_A, 0), 0, "take A") ||
	    !ASSERT_EQ(procpin__unkept(pp, PID_A), 1, "the FIFO not kept (refused, without blocking)") ||
	    !ASSERT_TRUE(procpin__covers(pp, PID_A, 0x600800), "b.so's executable mapping covered") ||
	    !ASSERT_FALSE(procpin__covers(pp, PID_A, 0x500800), "a read-only mapping is not"))
		goto cleanup;
	procpin__stats(pp, &st);
	if (!ASSERT_EQ(st.files_open, 2, "a.so and b.so open") || !ASSERT_EQ(open_fds(), fds + 2, "two descriptors"))
		goto cleanup;
	/* its root's identity, kept for after its end (the unwinder keys debug files by it) */
	snprintf(p, sizeof(p), "%s/%d/root", tmp, PID_A);
	stat(p, &sr);
	if (!ASSERT_EQ(procpin__root(pp, PID_A, &root), 0, "A's root kept") ||
	    !ASSERT_TRUE(root.ino == sr.st_ino && root.dev_major == major(sr.st_dev) && root.dev_minor == minor(sr.st_dev),
			 "its root directory's device and inode") ||
	    !ASSERT_EQ(procpin__root(pp, PID_B, &root), -ENOENT, "none for B, not taken"))
		goto cleanup;
	/* B maps the same a.so: shared; its own.so is one more */
	if (!ASSERT_EQ(procpin__take(pp, PID_B, 0), 0, "take B"))
		goto cleanup;
	procpin__stats(pp, &st);
	if (!ASSERT_EQ(st.files_open, 3, "a.so shared") || !ASSERT_EQ(open_fds(), fds + 3, "three descriptors"))
		goto cleanup;
	/* a read that misses mappings (the process exiting while it is read) loses none of
	 * those kept; a new mapping where an old one was replaces it */
	snprintf(p, sizeof(p), "%s/%d/maps", tmp, PID_A);
	{
		FILE *f = fopen(p, "w");

		if (!ASSERT_TRUE(f != NULL, "maps"))
			goto cleanup;
		map_line(f, PID_A, 0x400000, "r-xp", "/lib/a.so");
		map_line(f, PID_A, 0x600800, "r--p", "/lib/data.bin");
		fclose(f);
	}
	c = (struct count){ 0 };
	if (!ASSERT_EQ(procpin__take(pp, PID_A, 0), 0, "take A, fewer maps") ||
	    !ASSERT_EQ(procpin__foreach(pp, PID_A, count_cb, &c), 0, "the kept maps") ||
	    !ASSERT_EQ(c.n, 5, "4 kept + 1 new, b.so's replaced") || !ASSERT_EQ(c.exec, 2, "a.so, fifo.so") ||
	    !ASSERT_FALSE(procpin__covers(pp, PID_A, 0x600900), "b.so's range is data.bin's now") ||
	    !ASSERT_TRUE(procpin__covers(pp, PID_A, 0x800100), "fifo.so's kept"))
		goto cleanup;
	c = (struct count){ 0 };
	/* A is gone: its maps file empty (a zombie) */
	snprintf(p, sizeof(p), "%s/%d/maps", tmp, PID_A);
	if (!ASSERT_EQ(truncate(p, 0), 0, "A gone") || !ASSERT_EQ(procpin__take(pp, PID_A, 0), -ESRCH, "take A gone") ||
	    !ASSERT_TRUE(procpin__gone(pp, PID_A), "gone") ||
	    !ASSERT_EQ(procpin__foreach(pp, PID_A, count_cb, &c), 0, "the kept maps") ||
	    !ASSERT_EQ(c.n, 5, "file mappings kept (not the stack)") || !ASSERT_EQ(c.exec, 2, "executable"))
		goto cleanup;
	fd = procpin__open(pp, &a);
	if (!ASSERT_TRUE(fd >= 0, "a.so from the kept descriptor") ||
	    !ASSERT_EQ(procpin__root(pp, PID_A, &root), 0, "A's root still known once it is gone") ||
	    !ASSERT_EQ(root.ino, (unsigned long long)sr.st_ino, "the same"))
		goto cleanup;
	{
		struct stat s2;
		char ch = 0;

		if (!ASSERT_EQ(fstat(fd, &s2), 0, "fstat") || !ASSERT_EQ(s2.st_ino, sa.st_ino, "the mapped inode") ||
		    !ASSERT_EQ(pread(fd, &ch, 1, 0), 1, "read") || !ASSERT_EQ(ch, 'a', "its bytes"))
			goto cleanup;
	}
	close(fd);
	fd = -1;
	/* A let go: a.so stays for B, b.so closes */
	procpin__release(pp, PID_A);
	if (!ASSERT_EQ(open_fds(), fds + 2, "b.so closed, a.so kept for B") ||
	    !ASSERT_EQ(procpin__foreach(pp, PID_A, count_cb, &c), -ENOENT, "nothing kept for A"))
		goto cleanup;
	procpin__release(pp, PID_B);
	if (!ASSERT_EQ(open_fds(), fds, "all closed") || !ASSERT_EQ(procpin__open(pp, &a), -ENOENT, "a.so gone"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/%d/root/lib/own.so", tmp, PID_B);
	stat(p, &sa);
	own = (struct safeopen_id){ major(sa.st_dev), minor(sa.st_dev), sa.st_ino };
	ASSERT_EQ(procpin__open(pp, &own), -ENOENT, "own.so gone");
cleanup:
	if (fd >= 0)
		close(fd);
	procpin__free(pp);
}

static void test_limits(void)
{
	struct procpin *pp = procpin__new(tmp);
	struct procpin_stats st;
	int fds = open_fds();

	if (!ASSERT_TRUE(pp != NULL, "new"))
		goto cleanup;
	/* one file a process: C's second file is counted, not kept */
	procpin__set_limits(pp, 1, 0);
	if (!ASSERT_EQ(procpin__take(pp, PID_C, 0), 0, "take C") || !ASSERT_EQ(procpin__unkept(pp, PID_C), 1, "one not kept"))
		goto cleanup;
	/* taken again: counted again, not added up */
	if (!ASSERT_EQ(procpin__take(pp, PID_C, 0), 0, "take C again") ||
	    !ASSERT_EQ(procpin__unkept(pp, PID_C), 1, "still one"))
		goto cleanup;
	procpin__stats(pp, &st);
	if (!ASSERT_EQ(st.files_unkept, 1, "counted once") || !ASSERT_EQ(open_fds(), fds + 1, "one descriptor"))
		goto cleanup;
	/* one in all: B's a.so is C's (shared, so it is kept), its own.so is not */
	procpin__set_limits(pp, 8, 1);
	if (!ASSERT_EQ(procpin__take(pp, PID_B, 0), 0, "take B") || !ASSERT_EQ(procpin__unkept(pp, PID_B), 1, "own.so over the total"))
		goto cleanup;
	ASSERT_EQ(procpin__take(pp, 99999999, 0), -ESRCH, "no such process");
	ASSERT_EQ(procpin__take(pp, 0, 0), -EINVAL, "pid 0");
cleanup:
	procpin__free(pp);
	ASSERT_EQ(open_fds(), fds, "free closes everything");
}

int main(void)
{
	int ret;

	if (setup()) {
		printf("not ok 1 - setup: %s\n", strerror(errno));
		printf("0 passed, 1 failed\n");
		return 1;
	}
	RUN_TEST(test_keep_share_gone_release);
	RUN_TEST(test_limits);
	ret = unit_done();
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return ret;
}
