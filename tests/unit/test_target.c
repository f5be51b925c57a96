/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Library sets: every file is opened once and checked, files a traced process names go
 * through safeopen (a fake proc tree <tmp>/<pid>/root stands in for the process, the
 * real /proc for map_files), the descriptor kept is what is parsed and attached.
 */
#define _GNU_SOURCE
#include "lib/procmaps.h"
#include "lib/target.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define FAKE_PID 4242

static char tmp[256];
static char root[512];	 /* <tmp>/4242/root */
static char fakecuda[PATH_MAX + 64];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = -1, out = -1, err = -1;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (in < 0 || out < 0)
		goto cleanup;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			goto cleanup;
	err = n < 0 ? -1 : 0;
cleanup:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return err;
}

/* A mapped_lib as procmaps__find_libs gives it for path (inside the root) with id of real. */
static struct mapped_lib mapped(const char *path, const char *real)
{
	struct mapped_lib m = { 0 };
	struct stat st;

	snprintf(m.path, sizeof(m.path), "%s", path);
	if (stat(real, &st) == 0) {
		m.dev_major = major(st.st_dev);
		m.dev_minor = minor(st.st_dev);
		m.inode = st.st_ino;
	}
	m.start = 0x1000;
	m.end = 0x2000; /* no map_files entry in the fake tree: the root route is taken */
	return m;
}

static int setup(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	ssize_t n;

	/* the stand-in driver beside this binary: .output/unit/.. /fakecuda */
	n = readlink("/proc/self/exe", p, sizeof(p) - 1);
	if (n <= 0)
		return -1;
	p[n] = '\0';
	*strrchr(p, '/') = '\0';
	snprintf(fakecuda, sizeof(fakecuda), "%s/../fakecuda/libcuda.so.1", p);
	if (access(fakecuda, R_OK))
		return -1;
	snprintf(tmp, sizeof(tmp), "/tmp/gp-target-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	snprintf(p, sizeof(p), "%s/%d", tmp, FAKE_PID);
	mkdir(p, 0755);
	snprintf(root, sizeof(root), "%s/%d/root", tmp, FAKE_PID);
	mkdir(root, 0755);
	snprintf(p, sizeof(p), "%s/lib", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/lib/libcuda.so.1", root);
	if (copy_file(fakecuda, p, 0644))
		return -1;
	snprintf(p, sizeof(p), "%s/lib/libcuda.so.fifo", root);
	if (mkfifo(p, 0644))
		return -1;
	/* a driver outside the root, root's only: a process must not lead gpuprobe to it */
	snprintf(p, sizeof(p), "%s/secret-libcuda.so.1", tmp);
	if (copy_file(fakecuda, p, 0600))
		return -1;
	snprintf(q, sizeof(q), "%s/lib/libcuda.so.abs", root);
	if (symlink(p, q))
		return -1;
	return 0;
}

static void test_add_chosen(void)
{
	struct lib_set *s = calloc(1, sizeof(*s));
	char fifo[PATH_MAX], err[512] = "";
	struct stat st;
	double t0;
	int fd;

	if (!ASSERT_TRUE(s, "set allocated"))
		goto cleanup;
	if (!ASSERT_EQ(libset__add(s, fakecuda), 1, "libset__add(fakecuda)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(s->libs[0].path, fakecuda, "a chosen file keeps its path"))
		goto cleanup;
	if (!ASSERT_STR_EQ(s->libs[0].name, fakecuda, "and its name"))
		goto cleanup;
	if (!ASSERT_EQ(fstat(s->libs[0].fd, &st), 0, "its descriptor is open"))
		goto cleanup;
	if (!ASSERT_TRUE(st.st_ino == s->libs[0].ino && st.st_dev == s->libs[0].dev, "dev/ino are the descriptor's"))
		goto cleanup;
	if (!ASSERT_EQ(libset__add(s, fakecuda), 0, "the same file again is a duplicate"))
		goto cleanup;
	if (!ASSERT_EQ(target__check_lib(&s->libs[0], err, sizeof(err)), 0, "the stand-in driver checks out"))
		goto cleanup;
	if (!ASSERT_EQ(target__check_libcuda(fakecuda, err, sizeof(err)), 0, "by path too"))
		goto cleanup;
	/* a FIFO among gpuprobe's own candidates: refused without blocking */
	snprintf(fifo, sizeof(fifo), "%s/lib/libcuda.so.fifo", root);
	t0 = (double)time(NULL);
	if (!ASSERT_EQ(libset__add(s, fifo), -EINVAL, "libset__add(FIFO)"))
		goto cleanup;
	if (!ASSERT_EQ(target__check_libcuda(fifo, err, sizeof(err)), -EINVAL, "target__check_libcuda(FIFO)"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "libcuda.so.fifo: not a regular file", "FIFO message"))
		goto cleanup;
	if (!ASSERT_TRUE((double)time(NULL) - t0 < 2, "no blocking"))
		goto cleanup;
	if (!ASSERT_EQ(libset__add(s, tmp), -EISDIR, "libset__add(directory)"))
		goto cleanup;
	if (!ASSERT_EQ(libset__add(s, "/nonexistent/libcuda.so.1"), -ENOENT, "libset__add(missing)"))
		goto cleanup;
	if (!ASSERT_EQ(s->n, 1, "one entry"))
		goto cleanup;
	fd = s->libs[0].fd;
	libset__clear(s);
	if (!ASSERT_EQ(s->n, 0, "clear empties the set"))
		goto cleanup;
	if (!ASSERT_EQ(fcntl(fd, F_GETFD), -1, "clear closes the descriptors"))
		goto cleanup;
cleanup:
	libset__clear(s);
	free(s);
}

static void test_add_mapped_fake_root(void)
{
	struct lib_set *s = calloc(1, sizeof(*s)), *t = calloc(1, sizeof(*t));
	char p[PATH_MAX], q[PATH_MAX], want[PATH_MAX + 64], err[1024] = "";
	struct mapped_lib m;
	struct stat st;

	if (!ASSERT_TRUE(s && t, "sets allocated"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/lib/libcuda.so.1", root);
	m = mapped("/lib/libcuda.so.1", p);
	if (!ASSERT_EQ(libset__add_mapped(s, tmp, FAKE_PID, &m, err, sizeof(err)), 1, "the mapped file is added"))
		goto cleanup;
	snprintf(want, sizeof(want), "/proc/self/fd/%d", s->libs[0].fd);
	if (!ASSERT_STR_EQ(s->libs[0].fd_path, want, "fd_path is its descriptor's"))
		goto cleanup;
	snprintf(want, sizeof(want), "%s/%d/root/lib/libcuda.so.1", tmp, FAKE_PID);
	if (!ASSERT_STR_EQ(s->libs[0].name, want, "its name is where the process has it"))
		goto cleanup;
	if (!ASSERT_STR_EQ(s->libs[0].path, want, "a name without links is the by-path name too"))
		goto cleanup;
	if (!ASSERT_EQ(stat(s->libs[0].fd_path, &st), 0, "fd_path leads to a file"))
		goto cleanup;
	if (!ASSERT_EQ(st.st_ino, m.inode, "the mapped inode"))
		goto cleanup;
	/*
	 * Reached through links inside the root: a relative one, and an absolute one that
	 * the kernel would resolve against gpuprobe's root when walking the name from
	 * here. The file is the mapped one (the check holds), but its name is never the
	 * by-path name: that is fd_path.
	 */
	snprintf(q, sizeof(q), "%s/rlib", root);
	if (!ASSERT_EQ(symlink("lib", q), 0, "relative link to lib"))
		goto cleanup;
	snprintf(q, sizeof(q), "%s/alib", root);
	if (!ASSERT_EQ(symlink("/lib", q), 0, "absolute link to /lib"))
		goto cleanup;
	for (int i = 0; i < 2; i++) {
		struct lib_set *u = calloc(1, sizeof(*u));

		m = mapped(i ? "/alib/libcuda.so.1" : "/rlib/libcuda.so.1", p);
		if (!ASSERT_EQ(libset__add_mapped(u, tmp, FAKE_PID, &m, err, sizeof(err)), 1, "added through a link inside the root"))
			i = 2;
		else if (!ASSERT_STR_EQ(u->libs[0].path, u->libs[0].fd_path, "by-path name is fd_path"))
			i = 2;
		else if (!ASSERT_STR_CONTAINS(u->libs[0].name, m.path, "named as the process has it"))
			i = 2;
		libset__clear(u);
		free(u);
	}
	if (!ASSERT_EQ(target__check_lib(&s->libs[0], err, sizeof(err)), 0, "checks out through its descriptor"))
		goto cleanup;
	/* swapped for another file since maps was read: the wrong inode is refused */
	snprintf(q, sizeof(q), "%s/lib/libcuda.so.other", root);
	if (!ASSERT_EQ(copy_file(fakecuda, q, 0644), 0, "copy"))
		goto cleanup;
	m = mapped("/lib/libcuda.so.other", p); /* maps says: the inode of libcuda.so.1 */
	if (!ASSERT_EQ(libset__add_mapped(s, tmp, FAKE_PID, &m, err, sizeof(err)), -ESTALE, "another inode at the path"))
		goto cleanup;
	snprintf(want, sizeof(want), "%s/%d/root/lib/libcuda.so.other: is ", tmp, FAKE_PID);
	if (!ASSERT_STR_CONTAINS(err, want, "one line naming the file"))
		goto cleanup;
	/* a FIFO at the mapped path: refused at once */
	snprintf(q, sizeof(q), "%s/lib/libcuda.so.fifo", root);
	m = mapped("/lib/libcuda.so.fifo", q);
	if (!ASSERT_EQ(libset__add_mapped(s, tmp, FAKE_PID, &m, err, sizeof(err)), -EINVAL, "a FIFO"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "/root/lib/libcuda.so.fifo: not a regular file", "FIFO message"))
		goto cleanup;
	/* an absolute symlink to the root-only driver, with that driver's dev/inode in maps */
	snprintf(q, sizeof(q), "%s/secret-libcuda.so.1", tmp);
	m = mapped("/lib/libcuda.so.abs", q);
	if (!ASSERT_EQ(libset__add_mapped(s, tmp, FAKE_PID, &m, err, sizeof(err)), -ENOENT, "an absolute symlink out of the root"))
		goto cleanup;
	if (!ASSERT_EQ(s->n, 1, "only the mapped file is in the set"))
		goto cleanup;
	/* a copy into another set: its own descriptor, path and name follow */
	if (!ASSERT_EQ(libset__add_entry(t, &s->libs[0]), 1, "libset__add_entry"))
		goto cleanup;
	if (!ASSERT_TRUE(t->libs[0].fd != s->libs[0].fd, "a descriptor of its own"))
		goto cleanup;
	snprintf(want, sizeof(want), "/proc/self/fd/%d", t->libs[0].fd);
	if (!ASSERT_STR_EQ(t->libs[0].fd_path, want, "fd_path of its own descriptor"))
		goto cleanup;
	if (!ASSERT_STR_EQ(t->libs[0].path, s->libs[0].path, "same by-path name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(t->libs[0].name, s->libs[0].name, "same name"))
		goto cleanup;
	libset__clear(s);
	if (!ASSERT_EQ(target__check_lib(&t->libs[0], err, sizeof(err)), 0, "the copy outlives the original set"))
		goto cleanup;
	/* another set's fd_path: re-opened, not borrowed */
	if (!ASSERT_EQ(libset__add(s, t->libs[0].fd_path), 1, "libset__add(/proc/self/fd/N)"))
		goto cleanup;
	if (!ASSERT_TRUE(s->libs[0].fd != t->libs[0].fd, "its own descriptor"))
		goto cleanup;
	snprintf(want, sizeof(want), "/proc/self/fd/%d", s->libs[0].fd);
	if (!ASSERT_STR_EQ(s->libs[0].path, want, "by-path name of its own descriptor"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(s->libs[0].name, "/lib/libcuda.so.1", "named as the kernel names it"))
		goto cleanup;
cleanup:
	libset__clear(s);
	libset__clear(t);
	free(s);
	free(t);
}

/* Our own mappings through the real /proc: map_files (root) names the mapped inode. */
static void test_add_mapped_self(void)
{
	struct lib_set *s = calloc(1, sizeof(*s));
	struct mapped_lib libs[2];
	char err[1024] = "", fifo[PATH_MAX], byname[PATH_MAX + 64];
	struct stat st;
	int n;

	if (!ASSERT_TRUE(s, "set allocated"))
		goto cleanup;
	n = procmaps__find_libs("/proc", getpid(), "libc.so", libs, 2);
	if (!ASSERT_EQ(n, 1, "this process maps libc"))
		goto cleanup;
	if (!ASSERT_EQ(libset__add_mapped(s, NULL, getpid(), &libs[0], err, sizeof(err)), 1, "added"))
		goto cleanup;
	if (!ASSERT_EQ(fstat(s->libs[0].fd, &st), 0, "fstat"))
		goto cleanup;
	if (!ASSERT_EQ(st.st_ino, libs[0].inode, "the mapped inode"))
		goto cleanup;
	if (!ASSERT_EQ(major(st.st_dev), libs[0].dev_major, "the mapped device"))
		goto cleanup;
	/* names a process controls, given by path (the daemon's rescan): opened in its root */
	snprintf(fifo, sizeof(fifo), "%s/lib/libcuda.so.fifo", root);
	snprintf(byname, sizeof(byname), "/proc/%d/root%s", getpid(), fifo);
	if (!ASSERT_EQ(libset__add(s, byname), -EINVAL, "libset__add(/proc/PID/root/.../FIFO)"))
		goto cleanup;
	if (!ASSERT_EQ(target__check_libcuda(byname, err, sizeof(err)), -EINVAL, "target__check_libcuda(/proc/PID/root/.../FIFO)"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "libcuda.so.fifo: not a regular file", "FIFO message"))
		goto cleanup;
	/* by path through a link inside the root: opened, but its by-path name is fd_path */
	snprintf(byname, sizeof(byname), "/proc/%d/root%s/rlib/libcuda.so.1", getpid(), root);
	if (!ASSERT_EQ(libset__add(s, byname), 1, "libset__add(/proc/PID/root/.../rlib/libcuda.so.1)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(s->libs[1].path, s->libs[1].fd_path, "by-path name is fd_path"))
		goto cleanup;
	if (!ASSERT_STR_EQ(s->libs[1].name, byname, "named as given"))
		goto cleanup;
	snprintf(byname, sizeof(byname), "/proc/%d/root%s/lib/libcuda.so.1", getpid(), root);
	libset__clear(s);
	if (!ASSERT_EQ(libset__add(s, byname), 1, "libset__add(/proc/PID/root/.../lib/libcuda.so.1)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(s->libs[0].path, byname, "a plain name is kept"))
		goto cleanup;
	libset__clear(s);
	if (!ASSERT_EQ(libset__add_mapped(s, NULL, getpid(), &libs[0], err, sizeof(err)), 1, "libc again"))
		goto cleanup;
	snprintf(byname, sizeof(byname), "/proc/%d/root/proc/self/exe", getpid());
	if (!ASSERT_EQ(libset__add(s, byname), -ELOOP, "a magic link inside the root"))
		goto cleanup;
	snprintf(byname, sizeof(byname), "/proc/%d/map_files/%llx-%llx", getpid(), libs[0].start, libs[0].end);
	if (!ASSERT_EQ(libset__add(s, byname), 0, "map_files by path: the libc already there"))
		goto cleanup;
cleanup:
	libset__clear(s);
	free(s);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	if (setup()) {
		printf("# setup failed: %s\n", strerror(errno));
		printf("0 passed, 1 failed\n");
		return 1;
	}
	RUN_TEST(test_add_chosen);
	RUN_TEST(test_add_mapped_fake_root);
	RUN_TEST(test_add_mapped_self);
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return unit_done();
}
