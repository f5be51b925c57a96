/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "lib/procmaps.h"
#include "unit.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_root[256];	/* short: keeps snprintf sizes provable */

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void cleanup_tmp(void)
{
	if (tmp_root[0])
		nftw(tmp_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes "<root>/<pid>/maps" with the given content. */
static int write_maps(const char *root, int pid, const char *content)
{
	char path[PATH_MAX];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	if (mkdir(path, 0755) && errno != EEXIST) {
		err = -errno;
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/%d/maps", root, pid);
	f = fopen(path, "w");
	if (!f) {
		err = -errno;
		goto cleanup;
	}
	fputs(content, f);
	if (fclose(f))
		err = -errno;
cleanup:
	return err;
}

static void test_parse_normal(void)
{
	struct map_entry e;

	if (!ASSERT_EQ(procmaps__parse_line(
		"7f1234560000-7f1234580000 r-xp 00001000 fd:01 1234567"
		"                    /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05\n",
		&e), 0, "procmaps__parse_line( 7f1234560000-7f1234580000 r-xp 0000..."))
		goto cleanup;
	if (!ASSERT_EQ(e.start, 0x7f1234560000ULL, "start"))
		goto cleanup;
	if (!ASSERT_EQ(e.end, 0x7f1234580000ULL, "end"))
		goto cleanup;
	if (!ASSERT_EQ(e.offset, 0x1000, "offset"))
		goto cleanup;
	if (!ASSERT_EQ(e.dev_major, 0xfd, "dev_major"))
		goto cleanup;
	if (!ASSERT_EQ(e.dev_minor, 1, "dev_minor"))
		goto cleanup;
	if (!ASSERT_EQ(e.inode, 1234567, "inode"))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.perms, "r-xp", "perms"))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "path"))
		goto cleanup;
	if (!ASSERT_TRUE(!e.deleted, "not_deleted"))
		goto cleanup;

	/* no trailing newline, big device numbers, shared mapping */
	if (!ASSERT_EQ(procmaps__parse_line(
		"ffffffffff600000-ffffffffff601000 rw-s 7fffffff000 103:fffff 18446744073709551615 /dev/shm/x",
		&e), 0, "procmaps__parse_line( ffffffffff600000-ffffffffff601000 r..."))
		goto cleanup;
	if (!ASSERT_EQ(e.start, 0xffffffffff600000ULL, "start"))
		goto cleanup;
	if (!ASSERT_EQ(e.offset, 0x7fffffff000ULL, "offset"))
		goto cleanup;
	if (!ASSERT_EQ(e.dev_major, 0x103, "dev_major"))
		goto cleanup;
	if (!ASSERT_EQ(e.dev_minor, 0xfffff, "dev_minor"))
		goto cleanup;
	if (!ASSERT_TRUE(e.inode == 18446744073709551615ULL, "max_inode"))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.perms, "rw-s", "perms"))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "/dev/shm/x", "path"))
		goto cleanup;
cleanup:;
}

static void test_parse_spaces_in_path(void)
{
	struct map_entry e;

	if (!ASSERT_EQ(procmaps__parse_line(
		"1000-2000 r--p 00000000 08:02 42       /opt/my libs/lib cuda.so.1 \n",
		&e), 0, "procmaps__parse_line( 1000-2000 r--p 00000000 08:02 42 /o..."))
		goto cleanup;
	/* inner and trailing spaces belong to the file name */
	if (!ASSERT_STR_EQ(e.path, "/opt/my libs/lib cuda.so.1 ", "path"))
		goto cleanup;
	if (!ASSERT_TRUE(!e.deleted, "not_deleted"))
		goto cleanup;
cleanup:;
}

static void test_parse_deleted(void)
{
	struct map_entry e;

	if (!ASSERT_EQ(procmaps__parse_line(
		"7f0000000000-7f0000001000 r-xp 00000000 00:01 77 /memfd:cuda jit (deleted)\n",
		&e), 0, "procmaps__parse_line( 7f0000000000-7f0000001000 r-xp 0000..."))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "/memfd:cuda jit", "path"))
		goto cleanup;
	if (!ASSERT_TRUE(e.deleted, "deleted"))
		goto cleanup;

	if (!ASSERT_EQ(procmaps__parse_line(
		"1000-2000 r-xp 00000000 08:01 9 /usr/lib/libcuda.so.1 (deleted)", &e), 0, "procmaps__parse_line( 1000-2000 r-xp 00000000 08:01 9 /us..."))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "/usr/lib/libcuda.so.1", "path"))
		goto cleanup;
	if (!ASSERT_TRUE(e.deleted, "deleted"))
		goto cleanup;
cleanup:;
}

static void test_parse_anon_and_pseudo(void)
{
	struct map_entry e;

	if (!ASSERT_EQ(procmaps__parse_line(
		"7ffd00000000-7ffd00001000 rw-p 00000000 00:00 0 \n", &e), 0, "procmaps__parse_line( 7ffd00000000-7ffd00001000 rw-p 0000..."))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "", "path"))
		goto cleanup;
	if (!ASSERT_EQ(e.inode, 0, "anonymous_inode"))
		goto cleanup;
	if (!ASSERT_TRUE(!e.deleted, "not_deleted"))
		goto cleanup;

	if (!ASSERT_EQ(procmaps__parse_line(
		"7ffd00000000-7ffd00001000 rw-p 00000000 00:00 0\n", &e), 0, "procmaps__parse_line( 7ffd00000000-7ffd00001000 rw-p 0000..."))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "", "path"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__parse_line(
		"7ffd00000000-7ffd00001000 rw-p 00000000 00:00 0", &e), 0, "procmaps__parse_line( 7ffd00000000-7ffd00001000 rw-p 0000..."))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "", "path"))
		goto cleanup;

	if (!ASSERT_EQ(procmaps__parse_line(
		"55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]\n",
		&e), 0, "procmaps__parse_line( 55d0c0000000-55d0c0021000 rw-p 0000..."))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "[heap]", "path"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__parse_line(
		"7ffc1d0b2000-7ffc1d0d3000 rw-p 00000000 00:00 0                          [stack]\n",
		&e), 0, "procmaps__parse_line( 7ffc1d0b2000-7ffc1d0d3000 rw-p 0000..."))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "[stack]", "path"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__parse_line(
		"7ffc1d1f0000-7ffc1d1f2000 r-xp 00000000 00:00 0 [vdso]\n", &e), 0, "procmaps__parse_line( 7ffc1d1f0000-7ffc1d1f2000 r-xp 0000..."))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.path, "[vdso]", "path"))
		goto cleanup;
	if (!ASSERT_STR_EQ(e.perms, "r-xp", "perms"))
		goto cleanup;
cleanup:;
}

static void test_parse_bad_lines(void)
{
	static const char *const bad[] = {
		"",
		"\n",
		"garbage",
		"1000-2000",
		"1000-2000 r-xp",
		"1000-2000 r-xp 00000000 08:01",
		"1000-2000 r-xp 00000000 08:01 \n",
		"1000 2000 r-xp 00000000 08:01 1 /x",
		"1000-2000 rwzp 00000000 08:01 1 /x",
		"1000-2000 r-xpp 00000000 08:01 1 /x",
		"1000-2000 r-x 00000000 08:01 1 /x",
		"0x1000-2000 r-xp 00000000 08:01 1 /x",
		"-1000-2000 r-xp 00000000 08:01 1 /x",
		" 1000-2000 r-xp 00000000 08:01 1 /x",
		"2000-1000 r-xp 00000000 08:01 1 /x",	/* start > end */
		"1000-1000 r-xp 00000000 08:01 1 /x",	/* empty */
		"10000000000000000-10000000000000001 r-xp 0 08:01 1 /x",
		"1000-2000 r-xp 00000000 0801 1 /x",
		"1000-2000 r-xp 00000000 1000:01 1 /x",	/* major > 12 bits */
		"1000-2000 r-xp 00000000 08:01 18446744073709551616 /x",
		"1000-2000 r-xp 00000000 08:01 12x /x",
		"1000-2000 r-xp 00000000 08:01 1 /x\nsecond line",
		"1000-2000 r-xp 00000000 08:01 -1 /x",
	};
	struct map_entry e;
	char *longline;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (procmaps__parse_line(bad[i], &e) != -EINVAL) {
			printf("#   accepted bad line %zu: \"%s\"\n", i, bad[i]);
			if (!ASSERT_TRUE(0, "bad_line_refused"))
				goto cleanup;
		}
	}
	if (!ASSERT_EQ(procmaps__parse_line(NULL, &e), -EINVAL, "null_line"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__parse_line("1000-2000 r-xp 0 08:01 1 /x", NULL),
		  -EINVAL, "procmaps__parse_line(1000-2000 r-xp 0 08:01 1 /x, NULL)"))
		goto cleanup;

	/* a path that does not fit must be refused, not truncated */
	longline = malloc(6000);
	if (!ASSERT_TRUE(longline, "malloc"))
		goto cleanup;
	snprintf(longline, 6000, "1000-2000 r-xp 0 08:01 1 /");
	memset(longline + strlen(longline), 'a', 4500);
	longline[strlen("1000-2000 r-xp 0 08:01 1 /") + 4500] = '\0';
	i = (size_t)procmaps__parse_line(longline, &e);
	free(longline);
	if (!ASSERT_EQ((int)i, -EINVAL, "long_path_refused"))
		goto cleanup;
cleanup:;
}

struct find_addr_ctx {
	unsigned long long addr;
	int calls;
	struct map_entry hit;
};

static int find_addr_cb(const struct map_entry *e, void *data)
{
	struct find_addr_ctx *ctx = data;

	ctx->calls++;
	if (ctx->addr >= e->start && ctx->addr < e->end) {
		ctx->hit = *e;
		return 42;	/* stop: foreach must hand this back */
	}
	return 0;
}

static void test_foreach_self(void)
{
	static struct find_addr_ctx ctx;

	ctx.addr = (unsigned long long)(uintptr_t)&test_foreach_self;
	if (!ASSERT_EQ(procmaps__foreach(NULL, getpid(), find_addr_cb, &ctx), 42, "foreach_stops_at_callback_value"))
		goto cleanup;
	if (!ASSERT_TRUE(ctx.calls > 0, "callbacks_made"))
		goto cleanup;
	if (!ASSERT_EQ(ctx.hit.perms[2], 'x', "hit_executable"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(ctx.hit.path, "test_procmaps", "contains test_procmaps"))
		goto cleanup;
	if (!ASSERT_TRUE(ctx.hit.inode != 0, "hit_inode"))
		goto cleanup;
cleanup:;
}

static int count_cb(const struct map_entry *e, void *data)
{
	(void)e;
	(*(int *)data)++;
	return 0;
}

static void test_foreach_errors(void)
{
	int n = 0;

	/* beyond any pid_max */
	if (!ASSERT_EQ(procmaps__foreach("/proc", 0x3fffffff, count_cb, &n), -ENOENT, "foreach_proc"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__foreach(tmp_root, 99999, count_cb, &n), -ENOENT, "no_such_pid"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__foreach(tmp_root, 0, count_cb, &n), -EINVAL, "pid_0_refused"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__foreach(tmp_root, 1, NULL, &n), -EINVAL, "null_callback_refused"))
		goto cleanup;
	if (!ASSERT_EQ(n, 0, "no_callback_made"))
		goto cleanup;

	/* bad lines are skipped, good ones still reported */
	if (!ASSERT_EQ(write_maps(tmp_root, 77,
			     "1000-2000 r-xp 00000000 08:01 1 /a\n"
			     "this is not a maps line\n"
			     "3000-4000 r-xp 00000000 08:01 2 /b\n"), 0, "write_maps(tmp_root, 77, 1000-2000 r-xp 00000000 08:01 1 ..."))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__foreach(tmp_root, 77, count_cb, &n), 0, "foreach_fake"))
		goto cleanup;
	if (!ASSERT_EQ(n, 2, "fake_lines"))
		goto cleanup;
cleanup:;
}

static void test_find_libs_fake_root(void)
{
	struct mapped_lib libs[8];
	char expect[PATH_MAX + 64];
	int n;

	if (!ASSERT_EQ(write_maps(tmp_root, 1234,
		"55d0c0000000-55d0c0001000 r--p 00000000 08:01 100 /usr/bin/app\n"
		"7f0000000000-7f0000100000 r--p 00000000 08:01 200 /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05\n"
		"7f0000100000-7f0000800000 r-xp 00100000 08:01 200 /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05\n"
		"7f0000800000-7f0000900000 rw-p 00800000 08:01 200 /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05\n"
		"7f0000900000-7f0000a00000 rw-p 00000000 00:00 0 \n"
		"7f1000000000-7f1000100000 r-xp 00000000 08:01 300 /usr/lib/x86_64-linux-gnu/libcudart.so.12\n"
		"7f2000000000-7f2000100000 r-xp 00000000 00:2a 200 /opt/my libs/libcuda.so.1\n"
		"7f3000000000-7f3000100000 r-xp 00000000 08:01 400 /old/libcuda.so.1 (deleted)\n"
		"7f4000000000-7f4000100000 r-xp 00000000 08:01 500 /usr/lib/notlibcuda.so\n"
		"7ffc1d1f0000-7ffc1d1f2000 r-xp 00000000 00:00 0 [vdso]\n"), 0, "write_maps(tmp_root, 1234, 55d0c0000000-55d0c0001000 r--p..."))
		goto cleanup;

	n = procmaps__find_libs(tmp_root, 1234, "libcuda.so", libs, 8);
	if (!ASSERT_EQ(n, 3, "libs_found"))
		goto cleanup;

	/* three mappings of inode 200 on 08:01 collapse into one entry */
	if (!ASSERT_STR_EQ(libs[0].path,
		      "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "lib0_path"))
		goto cleanup;
	snprintf(expect, sizeof(expect),
		 "%s/1234/root/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05",
		 tmp_root);
	if (!ASSERT_STR_EQ(libs[0].host_path, expect, "lib0_host_path"))
		goto cleanup;
	if (!ASSERT_EQ(libs[0].inode, 200, "lib0_inode"))
		goto cleanup;
	if (!ASSERT_EQ(libs[0].dev_major, 8, "lib0_dev_major"))
		goto cleanup;
	if (!ASSERT_EQ(libs[0].dev_minor, 1, "lib0_dev_minor"))
		goto cleanup;
	/* the first mapping, for map_files */
	if (!ASSERT_EQ(libs[0].start, 0x7f0000000000ULL, "lib0_start"))
		goto cleanup;
	if (!ASSERT_EQ(libs[0].end, 0x7f0000100000ULL, "lib0_end"))
		goto cleanup;
	if (!ASSERT_FALSE(libs[0].deleted, "lib0_deleted"))
		goto cleanup;

	/* same inode number on another device is another file */
	if (!ASSERT_STR_EQ(libs[1].path, "/opt/my libs/libcuda.so.1", "lib1_path"))
		goto cleanup;
	snprintf(expect, sizeof(expect), "%s/1234/root/opt/my libs/libcuda.so.1",
		 tmp_root);
	if (!ASSERT_STR_EQ(libs[1].host_path, expect, "lib1_host_path"))
		goto cleanup;
	if (!ASSERT_EQ(libs[1].dev_major, 0, "lib1_dev_major"))
		goto cleanup;
	if (!ASSERT_EQ(libs[1].dev_minor, 0x2a, "lib1_dev_minor"))
		goto cleanup;

	/* deleted: the path is gone, map_files still names the inode */
	if (!ASSERT_STR_EQ(libs[2].path, "/old/libcuda.so.1", "lib2_path"))
		goto cleanup;
	snprintf(expect, sizeof(expect),
		 "%s/1234/map_files/7f3000000000-7f3000100000", tmp_root);
	if (!ASSERT_STR_EQ(libs[2].host_path, expect, "lib2_host_path"))
		goto cleanup;
	if (!ASSERT_TRUE(libs[2].deleted, "lib2_deleted"))
		goto cleanup;
	if (!ASSERT_EQ(libs[2].start, 0x7f3000000000ULL, "lib2_start"))
		goto cleanup;

	/* max caps the output */
	if (!ASSERT_EQ(procmaps__find_libs(tmp_root, 1234, "libcuda.so", libs, 1), 1, "find_libs_libcuda_so"))
		goto cleanup;
	if (!ASSERT_STR_EQ(libs[0].path,
		      "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "lib0_path"))
		goto cleanup;

	if (!ASSERT_EQ(procmaps__find_libs(tmp_root, 1234, "libnothing", libs, 8), 0, "find_libs_libnothing"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__find_libs(tmp_root, 4321, "libcuda.so", libs, 8),
		  -ENOENT, "procmaps__find_libs(tmp_root, 4321, libcuda.so, libs, 8)"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__find_libs(tmp_root, 1234, "libcuda.so", libs, 0),
		  -EINVAL, "procmaps__find_libs(tmp_root, 1234, libcuda.so, libs, 0)"))
		goto cleanup;
	if (!ASSERT_EQ(procmaps__find_libs(tmp_root, 1234, NULL, libs, 8), -EINVAL, "null_name_refused"))
		goto cleanup;
cleanup:;
}

static void test_find_libs_self(void)
{
	struct mapped_lib libs[4];
	struct stat st;
	int n;

	n = procmaps__find_libs("/proc", getpid(), "libc.so", libs, 4);
	if (!ASSERT_EQ(n, 1, "libc_found"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(libs[0].path, "/libc.so.6", "contains /libc.so.6"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(libs[0].host_path, "/root/", "contains /root/"))
		goto cleanup;
	if (!ASSERT_EQ(stat(libs[0].host_path, &st), 0, "stat_host_path"))
		goto cleanup;
	if (!ASSERT_TRUE((unsigned long long)st.st_ino == libs[0].inode, "host_path_inode"))
		goto cleanup;
cleanup:;
}

int main(void)
{
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/gpuprobe-procmaps-XXXXXX");
	if (!mkdtemp(tmp_root)) {
		perror("mkdtemp");
		return 2;
	}
	atexit(cleanup_tmp);

	RUN_TEST(test_parse_normal);
	RUN_TEST(test_parse_spaces_in_path);
	RUN_TEST(test_parse_deleted);
	RUN_TEST(test_parse_anon_and_pseudo);
	RUN_TEST(test_parse_bad_lines);
	RUN_TEST(test_foreach_self);
	RUN_TEST(test_foreach_errors);
	RUN_TEST(test_find_libs_fake_root);
	RUN_TEST(test_find_libs_self);
	return unit_done();
}
