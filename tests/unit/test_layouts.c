/* SPDX-License-Identifier: BSD-3-Clause */
/* The state file of learned driver layouts (src/modes/cudatrace/layouts.c): the parser
 * bounded and strict (every malformed line refuses the whole file), a written file read
 * back, a link or a file others may write refused, build keys from the GNU build id or,
 * without one, size and hash. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "modes/cudatrace/layouts.h"
#include "unit.h"

static struct lay_entry e[LAY_MAX + 1];

static int parse(const char *text, size_t *n)
{
	char err[128];

	return layouts__parse(text, strlen(text), e, LAY_MAX, n, err, sizeof(err));
}

static void test_parse(void)
{
	size_t n = 99;
	char *big;

	if (!ASSERT_EQ(parse("# c\ngpuprobe-layouts 1\n\ngnu-ab12 0000000100000001 1 0\nfnv-10-ff 2 7 4294967294\n", &n), 0,
		       "a valid file") ||
	    !ASSERT_EQ(n, 2, "its entries") || !ASSERT_STR_EQ(e[0].key, "gnu-ab12", "key") ||
	    !ASSERT_EQ(e[0].tag, 0x100000001ULL, "tag") || !ASSERT_EQ(e[1].slot, 7, "slot") ||
	    !ASSERT_EQ(e[1].uid, 4294967294U, "uid"))
		return;
	ASSERT_EQ(parse("", &n), 0, "empty: nothing learned");
	ASSERT_EQ(n, 0, "no entries");
	ASSERT_EQ(parse("gpuprobe-layouts 2\n", &n), -EINVAL, "another version");
	ASSERT_EQ(parse("gnu-ab 1 1 0\n", &n), -EINVAL, "no magic line first");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu-AB 1 1 0\n", &n), -EINVAL, "upper case key");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu/ab 1 1 0\n", &n), -EINVAL, "a slash in the key");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu-ab 1g 1 0\n", &n), -EINVAL, "a tag not hex");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu-ab 11111111111111111 1 0\n", &n), -EINVAL, "a tag over 64 bits");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu-ab 1 0 0\n", &n), -EINVAL, "slot 0 (the tag's own)");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu-ab 1 8 0\n", &n), -EINVAL, "slot past the searched ones");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu-ab 1 1 4294967295\n", &n), -EINVAL, "uid -1");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu-ab 1 1 -1\n", &n), -EINVAL, "a sign");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu-ab 1 1 0 extra\n", &n), -EINVAL, "a fifth field");
	ASSERT_EQ(parse("gpuprobe-layouts 1\ngnu-ab 1 1\n", &n), -EINVAL, "a field missing");
	ASSERT_EQ(layouts__parse("gpuprobe-layouts 1\n\0", 20, e, LAY_MAX, &n, (char[64]){ 0 }, 64), -EINVAL, "a NUL");
	ASSERT_EQ(n, 0, "a refused file has no entries");
	big = malloc(LAY_MAX_FILE + 2);
	if (!ASSERT_TRUE(big != NULL, "memory"))
		return;
	/* a line too long, and more entries than the cap: refused, no overflow */
	memset(big, 'a', 400);
	memcpy(big, "gpuprobe-layouts 1\ngnu-", 23);
	strcpy(big + 400, " 1 1 0\n");
	ASSERT_EQ(parse(big, &n), -EINVAL, "a line over 256 characters");
	strcpy(big, "gpuprobe-layouts 1\n");
	for (int i = 0; i <= LAY_MAX; i++)
		snprintf(big + strlen(big), 64, "gnu-%d 1 1 0\n", i);
	ASSERT_EQ(parse(big, &n), -E2BIG, "over LAY_MAX entries");
	memset(big, '#', LAY_MAX_FILE + 1);
	big[LAY_MAX_FILE + 1] = '\0';
	ASSERT_EQ(parse(big, &n), -E2BIG, "over LAY_MAX_FILE bytes");
	free(big);
}

static void test_save_load(void)
{
	char dir[] = "/tmp/gp-layouts-XXXXXX", path[128], err[512], buf[LAY_MAX_FILE];
	struct lay_entry w[2] = { { "gnu-0102", 0x100000001ULL, 1, 0 }, { "fnv-5-abc", 0x2, 3, 1000 } };
	size_t n = 0;
	struct stat st;
	int len;

	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "a folder"))
		return;
	len = layouts__format(w, 2, buf, sizeof(buf));
	if (!ASSERT_TRUE(len > 0, "formatted") || !ASSERT_EQ(layouts__parse(buf, (size_t)len, e, LAY_MAX, &n, err, sizeof(err)), 0,
							  "what is written parses") || !ASSERT_EQ(n, 2, "both"))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/sub", dir);
	if (!ASSERT_EQ(layouts__load(path, e, LAY_MAX, &n, err, sizeof(err)), 0, "no folder yet: nothing learned") ||
	    !ASSERT_EQ(layouts__save(path, w, 2, err, sizeof(err)), 0, "saved (the folder made)") ||
	    !ASSERT_EQ(layouts__load(path, e, LAY_MAX, &n, err, sizeof(err)), 0, "read back") || !ASSERT_EQ(n, 2, "both") ||
	    !ASSERT_STR_EQ(e[1].key, "fnv-5-abc", "key") || !ASSERT_EQ(e[1].uid, 1000, "uid"))
		goto cleanup;
	stat(path, &st);
	ASSERT_EQ(st.st_mode & 0777, 0700, "folder 0700");
	snprintf(path, sizeof(path), "%s/sub/layouts", dir);
	stat(path, &st);
	ASSERT_EQ(st.st_mode & 0777, 0600, "file 0600");
	/* a link in its place: refused, to read and to write */
	unlink(path);
	if (!ASSERT_EQ(symlink("/etc/passwd", path), 0, "a link"))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/sub", dir);
	ASSERT_EQ(layouts__load(path, e, LAY_MAX, &n, err, sizeof(err)), -ELOOP, "a linked file is not read");
	ASSERT_STR_CONTAINS(err, "symbolic link", "said so");
	/* a folder others may write: refused */
	chmod(path, 0777);
	ASSERT_EQ(layouts__load(path, e, LAY_MAX, &n, err, sizeof(err)), -EPERM, "others may write the folder");
	ASSERT_EQ(layouts__save(path, w, 2, err, sizeof(err)), -EPERM, "... nor written");
	chmod(path, 0700);
	snprintf(path, sizeof(path), "%s/sub/layouts", dir);
	unlink(path);
cleanup:
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
}

static void test_build_key(void)
{
	char key[LAY_KEY_LEN], key2[LAY_KEY_LEN], path[] = "/tmp/gp-nokey-XXXXXX";
	int fd;

	/* this test binary: gcc and ld give it a GNU build id */
	if (!ASSERT_EQ(layouts__build_key("/proc/self/exe", key, sizeof(key)), 0, "an ELF file's key"))
		return;
	ASSERT_TRUE(!strncmp(key, "gnu-", 4) && strlen(key) > 4 + 16, "its GNU build id");
	fd = mkstemp(path);
	if (!ASSERT_TRUE(fd >= 0, "a file") || !ASSERT_EQ(write(fd, "not an ELF", 10), 10, "written"))
		return;
	close(fd);
	ASSERT_EQ(layouts__build_key(path, key, sizeof(key)), 0, "a file without a build id");
	ASSERT_TRUE(!strncmp(key, "fnv-10-", 7), "its size and hash");
	fd = open(path, O_WRONLY | O_APPEND);
	if (fd >= 0 && write(fd, "!", 1) == 1)
		ASSERT_TRUE(!layouts__build_key(path, key2, sizeof(key2)) && strcmp(key, key2), "another file, another key");
	if (fd >= 0)
		close(fd);
	unlink(path);
	ASSERT_TRUE(layouts__build_key("/nonexistent/libcuda.so.1", key, sizeof(key)) < 0, "no file: no key");
}

int main(void)
{
	RUN_TEST(test_parse);
	RUN_TEST(test_save_load);
	RUN_TEST(test_build_key);
	return unit_done();
}
