/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * safeopen against what a hostile process can plant in its root: FIFOs,
 * device nodes, symlinks out of the root, magic links, swapped inodes.
 * A fake proc tree (<tmp>/<pid>/root, <tmp>/<pid>/map_files) stands in for
 * the process; the real /proc is used for magic links and map_files.
 */
#define _GNU_SOURCE
#include "lib/procmaps.h"
#include "lib/safeopen.h"
#include "unit.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define FAKE_PID 4242

static char tmp[256];
static char root[512];	/* short: keeps snprintf sizes provable */

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(content, f);
	return fclose(f);
}

static struct safeopen_id id_of(const char *path)
{
	struct safeopen_id id = { 0 };
	struct stat st;

	if (stat(path, &st) == 0) {
		id.dev_major = major(st.st_dev);
		id.dev_minor = minor(st.st_dev);
		id.ino = st.st_ino;
	}
	return id;
}

static int setup(void)
{
	char p[PATH_MAX], q[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "/tmp/gp-safeopen-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	snprintf(p, sizeof(p), "%s/%d", tmp, FAKE_PID);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/map_files", tmp, FAKE_PID);
	mkdir(p, 0755);
	snprintf(root, sizeof(root), "%s/%d/root", tmp, FAKE_PID);
	mkdir(root, 0755);
	snprintf(p, sizeof(p), "%s/lib", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/lib/real.so", root);
	if (write_file(p, "inside"))
		return -1;
	snprintf(p, sizeof(p), "%s/lib/other.so", root);
	if (write_file(p, "other"))
		return -1;
	/* a file outside the root that the traced process must not reach */
	snprintf(p, sizeof(p), "%s/secret", tmp);
	if (write_file(p, "secret"))
		return -1;
	snprintf(p, sizeof(p), "%s/lib/fifo.so", root);
	if (mkfifo(p, 0644))
		return -1;
	snprintf(p, sizeof(p), "%s/lib/link.so", root);
	if (symlink("real.so", p))
		return -1;
	snprintf(p, sizeof(p), "%s/lib/up.so", root);
	if (symlink("../../../secret", p))
		return -1;
	snprintf(p, sizeof(p), "%s/lib/abs.so", root);
	snprintf(q, sizeof(q), "%s/secret", tmp);
	if (symlink(q, p))
		return -1;
	snprintf(p, sizeof(p), "%s/lib/loop.so", root);
	if (symlink("loop.so", p))
		return -1;
	/* map_files entries of the fake process */
	snprintf(p, sizeof(p), "%s/%d/map_files/1000-2000", tmp, FAKE_PID);
	snprintf(q, sizeof(q), "%s/lib/fifo.so", root);
	if (symlink(q, p))
		return -1;
	snprintf(p, sizeof(p), "%s/%d/map_files/3000-4000", tmp, FAKE_PID);
	snprintf(q, sizeof(q), "%s/lib/real.so", root);
	if (symlink(q, p))
		return -1;
	return 0;
}

static void test_regular_file_opens(void)
{
	char p[PATH_MAX], buf[16] = { 0 }, err[256] = "";
	struct safeopen_id id;
	int fd;

	snprintf(p, sizeof(p), "%s/lib/real.so", root);
	id = id_of(p);
	fd = safe_open_mapped(tmp, FAKE_PID, "/lib/real.so", &id, err,
			      sizeof(err));
	if (!ASSERT_TRUE(fd >= 0, "real_opens"))
		goto cleanup;
	if (!ASSERT_EQ(read(fd, buf, sizeof(buf) - 1), 6, "content_length"))
		goto cleanup;
	close(fd);
	if (!ASSERT_STR_EQ(buf, "inside", "content"))
		goto cleanup;
	/* O_NONBLOCK must not leak into the readable descriptor's use */
	fd = safe_open_mapped(tmp, FAKE_PID, "/lib/link.so", &id, err,
			      sizeof(err));
	if (!ASSERT_TRUE(fd >= 0, "link_inside_opens"))
		goto cleanup;	/* a symlink inside the root is fine */
cleanup:
	close(fd);
}

static void test_fifo_refused_without_blocking(void)
{
	char p[PATH_MAX], err[256] = "";
	struct safeopen_id id;
	time_t t0 = time(NULL);
	int fd;

	snprintf(p, sizeof(p), "%s/lib/fifo.so", root);
	id = id_of(p);	/* even with the FIFO's own identity */
	fd = safe_open_mapped(tmp, FAKE_PID, "/lib/fifo.so", &id, err,
			      sizeof(err));
	if (!ASSERT_EQ(fd, -EINVAL, "fifo_refused"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "not a regular file", "contains not a regular file"))
		goto cleanup;
	if (!ASSERT_TRUE(time(NULL) - t0 < 2, "fifo_no_block"))
		goto cleanup;
cleanup:;
}

static void test_device_refused(void)
{
	char p[PATH_MAX], err[256] = "";
	struct safeopen_id id;
	int fd;

	snprintf(p, sizeof(p), "%s/lib/dev.so", root);
	/* /dev/zero's numbers: an open of a device node is never attempted */
	if (!ASSERT_EQ(mknod(p, S_IFCHR | 0644, makedev(1, 5)), 0, "mknod"))
		goto cleanup;
	id = id_of(p);
	fd = safe_open_mapped(tmp, FAKE_PID, "/lib/dev.so", &id, err,
			      sizeof(err));
	if (!ASSERT_EQ(fd, -EINVAL, "device_refused"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "not a regular file", "contains not a regular file"))
		goto cleanup;
	/* a symlink to the host's /dev/zero resolves inside the root: absent */
	snprintf(p, sizeof(p), "%s/lib/devlink.so", root);
	if (!ASSERT_EQ(symlink("/dev/zero", p), 0, "symlink_dev_zero"))
		goto cleanup;
	fd = safe_open_mapped(tmp, FAKE_PID, "/lib/devlink.so", NULL, err,
			      sizeof(err));
	if (!ASSERT_EQ(fd, -ENOENT, "host_device_link_absent"))
		goto cleanup;
cleanup:;
}

static void test_symlinks_cannot_escape_root(void)
{
	char p[PATH_MAX], err[256] = "";
	struct safeopen_id secret;
	int fd;

	snprintf(p, sizeof(p), "%s/secret", tmp);
	secret = id_of(p);
	if (!ASSERT_TRUE(secret.ino != 0, "secret_exists"))
		goto cleanup;
	/* relative "..": clamped at the root, where there is no "secret" */
	fd = safe_open_mapped(tmp, FAKE_PID, "/lib/up.so", &secret, err,
			      sizeof(err));
	if (!ASSERT_EQ(fd, -ENOENT, "relative_up_clamped"))
		goto cleanup;
	/* absolute target: resolved below the root, not the host's "/" */
	fd = safe_open_mapped(tmp, FAKE_PID, "/lib/abs.so", &secret, err,
			      sizeof(err));
	if (!ASSERT_EQ(fd, -ENOENT, "absolute_link_inside_root"))
		goto cleanup;
	/* ".." in the path itself */
	fd = safe_open_mapped(tmp, FAKE_PID, "/../../../secret", NULL, err,
			      sizeof(err));
	if (!ASSERT_EQ(fd, -ENOENT, "dotdot_clamped"))
		goto cleanup;
	/* and once a copy of the name exists inside, that is what opens */
	snprintf(p, sizeof(p), "%s/secret", root);
	if (!ASSERT_EQ(write_file(p, "decoy"), 0, "write_file_decoy"))
		goto cleanup;
	fd = safe_open_mapped(tmp, FAKE_PID, "/lib/up.so", &secret, err,
			      sizeof(err));
	if (!ASSERT_EQ(fd, -ESTALE, "decoy_not_the_mapped_file"))
		goto cleanup;	/* the decoy is not the host file */
cleanup:
	unlink(p);
}

static void test_symlink_loop(void)
{
	char err[256] = "";

	if (!ASSERT_EQ(safe_open_mapped(tmp, FAKE_PID, "/lib/loop.so", NULL, err,
				   sizeof(err)), -ELOOP, "safe_open_mapped(tmp, FAKE_PID, /lib/loop.so, NULL, err, ..."))
		goto cleanup;
cleanup:;
}

static void test_wrong_inode(void)
{
	char p[PATH_MAX], err[256] = "";
	struct safeopen_id id;

	snprintf(p, sizeof(p), "%s/lib/other.so", root);
	id = id_of(p);
	if (!ASSERT_EQ(safe_open_mapped(tmp, FAKE_PID, "/lib/real.so", &id, err,
				   sizeof(err)), -ESTALE, "safe_open_mapped(tmp, FAKE_PID, /lib/real.so, &id, err, s..."))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "not the mapped", "contains not the mapped"))
		goto cleanup;
	id.ino = 0;
	id.dev_major++;
	if (!ASSERT_EQ(safe_open_mapped(tmp, FAKE_PID, "/lib/other.so", &id, err,
				   sizeof(err)), -ESTALE, "safe_open_mapped(tmp, FAKE_PID, /lib/other.so, &id, err, ..."))
		goto cleanup;
cleanup:;
}

static void test_bad_arguments(void)
{
	char err[256] = "";

	if (!ASSERT_EQ(safe_open_mapped(tmp, FAKE_PID, "lib/real.so", NULL, err,
				   sizeof(err)), -EINVAL, "safe_open_mapped(tmp, FAKE_PID, lib/real.so, NULL, err, s..."))
		goto cleanup;
	if (!ASSERT_EQ(safe_open_mapped(tmp, FAKE_PID, NULL, NULL, NULL, 0), -EINVAL, "null_path"))
		goto cleanup;
	if (!ASSERT_EQ(safe_open_mapped(tmp, 99999999, "/lib/real.so", NULL, err,
				   sizeof(err)), -ENOENT, "safe_open_mapped(tmp, 99999999, /lib/real.so, NULL, err, ..."))
		goto cleanup;
	if (!ASSERT_EQ(safe_open_map_file(tmp, FAKE_PID, 0x2000, 0x1000, NULL, err,
				     sizeof(err)), -EINVAL, "safe_open_map_file(tmp, FAKE_PID, 0x2000, 0x1000, NULL, e..."))
		goto cleanup;
cleanup:;
}

/* The real /proc: magic links (/proc/self/exe) are refused inside a root. */
static void test_magic_link_refused(void)
{
	char err[256] = "";
	int fd;

	fd = safe_open_mapped(NULL, getpid(), "/proc/self/exe", NULL, err,
			      sizeof(err));
	if (!ASSERT_EQ(fd, -ELOOP, "magic_exe_refused"))
		goto cleanup;
	fd = safe_open_mapped(NULL, getpid(), "/proc/self/root/etc/hostname",
			      NULL, err, sizeof(err));
	if (!ASSERT_EQ(fd, -ELOOP, "magic_root_refused"))
		goto cleanup;
cleanup:;
}

struct find_exe {
	char exe[PATH_MAX];
	struct map_entry hit;
	int found;
};

static int find_exe_cb(const struct map_entry *e, void *ctx)
{
	struct find_exe *f = ctx;

	if (!f->found && strcmp(e->path, f->exe) == 0) {
		f->hit = *e;
		f->found = 1;
	}
	return 0;
}

/* Our own executable through the real /proc, by path and by map_files. */
static void test_real_process(void)
{
	struct find_exe f = { 0 };
	struct safeopen_id id, bad;
	char err[256] = "";
	ssize_t n;
	int fd;

	n = readlink("/proc/self/exe", f.exe, sizeof(f.exe) - 1);
	if (!ASSERT_TRUE(n > 0, "readlink_exe"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__foreach(NULL, getpid(), find_exe_cb, &f), 0, "foreach_maps"))
		goto cleanup;
	if (!ASSERT_TRUE(f.found, "exe_mapped"))
		goto cleanup;
	id.dev_major = f.hit.dev_major;
	id.dev_minor = f.hit.dev_minor;
	id.ino = f.hit.inode;
	fd = safe_open_mapped(NULL, getpid(), f.exe, &id, err, sizeof(err));
	if (!ASSERT_TRUE(fd >= 0, "exe_by_path"))
		goto cleanup;
	close(fd);
	fd = safe_open_map_file(NULL, getpid(), f.hit.start, f.hit.end, &id,
				err, sizeof(err));
	if (!ASSERT_TRUE(fd >= 0, "exe_by_map_files"))
		goto cleanup;
	close(fd);
	bad = id;
	bad.ino++;
	if (!ASSERT_EQ(safe_open_map_file(NULL, getpid(), f.hit.start, f.hit.end,
				     &bad, err, sizeof(err)), -ESTALE, "safe_open_map_file(NULL, getpid(), f.hit.start, f.hit.end..."))
		goto cleanup;
cleanup:;
}

static void test_fake_map_files(void)
{
	char p[PATH_MAX], err[256] = "";
	struct safeopen_id id;
	time_t t0 = time(NULL);
	int fd;

	if (!ASSERT_EQ(safe_open_map_file(tmp, FAKE_PID, 0x1000, 0x2000, NULL, err,
				     sizeof(err)), -EINVAL, "safe_open_map_file(tmp, FAKE_PID, 0x1000, 0x2000, NULL, e..."))
		goto cleanup;
	if (!ASSERT_TRUE(time(NULL) - t0 < 2, "map_files_no_block"))
		goto cleanup;
	snprintf(p, sizeof(p), "%s/lib/real.so", root);
	id = id_of(p);
	fd = safe_open_map_file(tmp, FAKE_PID, 0x3000, 0x4000, &id, err,
				sizeof(err));
	if (!ASSERT_TRUE(fd >= 0, "map_files_opens"))
		goto cleanup;
	close(fd);
	if (!ASSERT_EQ(safe_open_map_file(tmp, FAKE_PID, 0x5000, 0x6000, NULL, err,
				     sizeof(err)), -ENOENT, "safe_open_map_file(tmp, FAKE_PID, 0x5000, 0x6000, NULL, e..."))
		goto cleanup;
cleanup:;
}

/* A header whose tables point past the file, then a sane copy of it. */
static int write_elf(const char *path, unsigned long long shoff, unsigned int shnum,
		     unsigned int shentsize)
{
	Elf64_Ehdr eh;
	char pad[512] = { 0 };
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shoff = shoff;
	eh.e_shnum = (Elf64_Half)shnum;
	eh.e_shentsize = (Elf64_Half)shentsize;
	fwrite(&eh, sizeof(eh), 1, f);
	fwrite(pad, sizeof(pad), 1, f);	/* zeroed section headers */
	return fclose(f);
}

static void test_safe_elf_begin(void)
{
	char p[PATH_MAX], err[256] = "";
	Elf *elf;
	int fd;

	snprintf(p, sizeof(p), "%s/bad.elf", tmp);
	/* 65535 section headers in a 576-byte file: refused before libelf sizes them */
	if (!ASSERT_EQ(write_elf(p, 64, 65535, sizeof(Elf64_Shdr)), 0, "write_many_headers"))
		goto cleanup;
	fd = open(p, O_RDONLY);
	if (!ASSERT_TRUE(fd >= 0, "open_many_headers"))
		goto cleanup;
	elf = safe_elf_begin(fd, err, sizeof(err));
	if (!ASSERT_TRUE(elf == NULL, "many_headers_refused"))
		goto cleanup;
	if (!ASSERT_EQ(errno, EBADMSG, "many_headers_errno"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "past the end", "contains past the end"))
		goto cleanup;
	close(fd);
	/* a table offset beyond the file */
	if (!ASSERT_EQ(write_elf(p, 1ull << 40, 1, sizeof(Elf64_Shdr)), 0, "write_far_table"))
		goto cleanup;
	fd = open(p, O_RDONLY);
	elf = safe_elf_begin(fd, err, sizeof(err));
	if (!ASSERT_TRUE(elf == NULL, "far_table_refused"))
		goto cleanup;
	close(fd);
	/* a wrong entry size */
	if (!ASSERT_EQ(write_elf(p, 64, 2, 12), 0, "write_wrong_entsize"))
		goto cleanup;
	fd = open(p, O_RDONLY);
	elf = safe_elf_begin(fd, err, sizeof(err));
	if (!ASSERT_TRUE(elf == NULL, "wrong_entsize_refused"))
		goto cleanup;
	close(fd);
	/* not ELF at all */
	snprintf(p, sizeof(p), "%s/lib/real.so", root);
	fd = open(p, O_RDONLY);
	elf = safe_elf_begin(fd, err, sizeof(err));
	if (!ASSERT_TRUE(elf == NULL, "not_elf_refused"))
		goto cleanup;
	if (!ASSERT_EQ(errno, ENOEXEC, "not_elf_errno"))
		goto cleanup;
	close(fd);
	/* two section headers inside the file: fine */
	snprintf(p, sizeof(p), "%s/ok.elf", tmp);
	if (!ASSERT_EQ(write_elf(p, 64, 2, sizeof(Elf64_Shdr)), 0, "write_sane_elf"))
		goto cleanup;
	fd = open(p, O_RDONLY);
	elf = safe_elf_begin(fd, err, sizeof(err));
	if (!ASSERT_TRUE(elf != NULL, "sane_elf_opens"))
		goto cleanup;
	elf_end(elf);
	close(fd);
	/* and a real one: this test binary */
	fd = open("/proc/self/exe", O_RDONLY);
	elf = safe_elf_begin(fd, err, sizeof(err));
	if (!ASSERT_TRUE(elf != NULL, "own_binary_opens"))
		goto cleanup;
	elf_end(elf);
cleanup:
	close(fd);
}

/*
 * safe_path_is_plain: a name the kernel may walk from here by itself (libbpf
 * attaches by path) only if no link is on the way and it reaches fd's inode.
 */
static void test_path_is_plain(void)
{
	char p[PATH_MAX], q[PATH_MAX];
	int fd = -1, other = -1;

	snprintf(p, sizeof(p), "%s/lib/real.so", root);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	snprintf(p, sizeof(p), "%s/lib/other.so", root);
	other = open(p, O_RDONLY | O_CLOEXEC);
	if (!ASSERT_TRUE(fd >= 0 && other >= 0, "opened"))
		goto cleanup;
	if (!ASSERT_EQ(safe_path_is_plain(tmp, FAKE_PID, "/lib/real.so", fd), 1, "a plain path"))
		goto cleanup;
	if (!ASSERT_EQ(safe_path_is_plain(tmp, FAKE_PID, "/lib/real.so", other), 0, "another inode"))
		goto cleanup;
	if (!ASSERT_EQ(safe_path_is_plain(tmp, FAKE_PID, "/lib/link.so", fd), 0, "a symlink, last component"))
		goto cleanup;
	snprintf(q, sizeof(q), "%s/lnk", root);
	if (!ASSERT_EQ(symlink("lib", q), 0, "symlink to lib"))
		goto cleanup;
	if (!ASSERT_EQ(safe_path_is_plain(tmp, FAKE_PID, "/lnk/real.so", fd), 0, "a symlink, middle component"))
		goto cleanup;
	if (!ASSERT_EQ(safe_path_is_plain(tmp, FAKE_PID, "/lib/../lib/real.so", fd), 1, "'..' that stays inside"))
		goto cleanup;
	snprintf(q, sizeof(q), "/../root/lib/real.so");
	if (!ASSERT_EQ(safe_path_is_plain(tmp, FAKE_PID, q, fd), 0, "'..' above the root"))
		goto cleanup;
	if (!ASSERT_EQ(safe_path_is_plain(tmp, FAKE_PID, "/lib/fifo.so", fd), 0, "a FIFO"))
		goto cleanup;
	if (!ASSERT_EQ(safe_path_is_plain(tmp, FAKE_PID, "lib/real.so", fd), 0, "a relative path"))
		goto cleanup;
	if (!ASSERT_EQ(safe_path_is_plain(tmp, FAKE_PID, "/lib/real.so", -1), 0, "no descriptor"))
		goto cleanup;
	if (!ASSERT_EQ(safe_path_is_plain(tmp, 99999999, "/lib/real.so", fd), 0, "no such process"))
		goto cleanup;
cleanup:
	if (fd >= 0)
		close(fd);
	if (other >= 0)
		close(other);
}

int main(void)
{
	int ret;

	if (setup()) {
		printf("not ok 1 - setup: %s\n", strerror(errno));
		printf("0 passed, 1 failed\n");
		return 1;
	}
	RUN_TEST(test_regular_file_opens);
	RUN_TEST(test_fifo_refused_without_blocking);
	RUN_TEST(test_device_refused);
	RUN_TEST(test_symlinks_cannot_escape_root);
	RUN_TEST(test_symlink_loop);
	RUN_TEST(test_wrong_inode);
	RUN_TEST(test_bad_arguments);
	RUN_TEST(test_magic_link_refused);
	RUN_TEST(test_real_process);
	RUN_TEST(test_fake_map_files);
	RUN_TEST(test_safe_elf_begin);
	RUN_TEST(test_path_is_plain);
	ret = unit_done();
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return ret;
}
