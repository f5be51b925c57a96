/* SPDX-License-Identifier: BSD-3-Clause */
/* gpuprobe's self-learning (src/modes/cudatrace/selflearn.c): the child's answer parsed
 * strictly (it ran driver code), and which libcuda file may be loaded into the child. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "modes/cudatrace/selflearn.h"
#include "unit.h"

static int parse(const char *text, size_t *n, char *why, size_t wlen)
{
	static struct sl_lesson l[SL_MAX_LESSONS];

	return selflearn__parse(text, strlen(text), l, SL_MAX_LESSONS, n, why, wlen);
}

static void test_parse(void)
{
	struct sl_lesson l[2];
	char why[512], many[2048];
	size_t n = 99;

	ASSERT_EQ(selflearn__parse("L 0000000000000002 1\nL 0000000100000001 1\nEND\n", 44, l, 2, &n, why, sizeof(why)), 0,
		  "two lessons");
	ASSERT_EQ(n, 2, "their count");
	ASSERT_EQ(l[1].tag, 0x100000001ULL, "the tag");
	ASSERT_EQ(l[1].slot, 1, "the slot");
	ASSERT_STR_EQ(why, "", "nothing failed");
	ASSERT_EQ(parse("L 0000000000000002 1\nE context 101\nEND\n", &n, why, sizeof(why)), 0, "a lesson and a failure");
	ASSERT_EQ(n, 1, "the lesson kept");
	ASSERT_STR_CONTAINS(why, "primary context was refused (compute mode EXCLUSIVE_PROCESS", "the failure said");
	ASSERT_STR_CONTAINS(why, "(101)", "with its code");
	ASSERT_EQ(parse("E init 100\nEND\n", &n, why, sizeof(why)), 0, "no GPU");
	ASSERT_EQ(n, 0, "nothing learned");
	ASSERT_EQ(parse("L 0000000000000002 1\nL 00000000000000", &n, why, sizeof(why)), 0, "a line cut by the kill");
	ASSERT_EQ(n, 1, "the whole lines only");
	/* anything else voids the whole answer */
	ASSERT_EQ(parse("L 0000000000000002 0\n", &n, why, sizeof(why)), -EINVAL, "slot 0");
	ASSERT_EQ(parse("L 0000000000000002 8\n", &n, why, sizeof(why)), -EINVAL, "slot 8 (MN_SLOTS)");
	ASSERT_EQ(parse("L 2 1\n", &n, why, sizeof(why)), -EINVAL, "a short tag");
	ASSERT_EQ(parse("L 000000000000000G 1\n", &n, why, sizeof(why)), -EINVAL, "not hex");
	ASSERT_EQ(parse("L 0000000000000002 1 0\n", &n, why, sizeof(why)), -EINVAL, "a field too many");
	ASSERT_EQ(parse("L 0000000000000002 1\nE rm_rf 1\n", &n, why, sizeof(why)), -EINVAL, "an unknown step");
	ASSERT_EQ(n, 0, "no lesson kept from a voided answer");
	ASSERT_EQ(parse("hello\n", &n, why, sizeof(why)), -EINVAL, "noise");
	many[0] = '\0';
	for (int i = 0; i <= SL_MAX_LESSONS; i++)
		strcat(many, "L 0000000000000002 1\n");
	ASSERT_EQ(parse(many, &n, why, sizeof(why)), -EINVAL, "more lessons than SL_MAX_LESSONS");
}

static void test_safe(void)
{
	char dir[] = "/var/tmp/gp-sl-XXXXXX", sub[1024], lib[PATH_MAX], real[PATH_MAX], why[512], fdpath[64], *slash;
	ssize_t k;
	int fd;

	if (geteuid()) {
		printf("# skipped: needs root (files of root's)\n");
		return;
	}
	ASSERT_TRUE(selflearn__safe("/proc/1/root/usr/lib/libcuda.so.1", real, sizeof(real), why, sizeof(why)) < 0,
		    "another process's root: refused");
	/* /var/tmp is world-writable (sticky): nothing under it is loaded */
	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "a folder"))
		return;
	snprintf(lib, sizeof(lib), "%s/libcuda.so.1", dir);
	fd = open(lib, O_CREAT | O_WRONLY, 0755);
	ASSERT_TRUE(fd >= 0, "a file");
	ASSERT_EQ(selflearn__safe(lib, real, sizeof(real), why, sizeof(why)), -EPERM, "under a world-writable folder");
	ASSERT_STR_CONTAINS(why, "writable by others", "says which folder");
	close(fd);
	unlink(lib);
	rmdir(dir);
	/* the folder of this test's binary (the build's output): its file is safe unless others
	 * may write it */
	k = readlink("/proc/self/exe", sub, sizeof(sub) - 1);
	if (!ASSERT_TRUE(k > 0, "this binary's path"))
		return;
	sub[k] = '\0';
	slash = strrchr(sub, '/');
	if (slash)
		*slash = '\0';
	snprintf(lib, sizeof(lib), "%s/sl-lib.so", sub);
	unlink(lib);
	fd = open(lib, O_CREAT | O_WRONLY, 0755);
	if (!ASSERT_TRUE(fd >= 0, "a file in the output folder"))
		return;
	if (!selflearn__safe(lib, real, sizeof(real), why, sizeof(why))) {
		ASSERT_TRUE(real[0] == '/', "its real path");
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
		ASSERT_EQ(selflearn__safe(fdpath, real, sizeof(real), why, sizeof(why)), 0, "through gpuprobe's own descriptor");
		fchmod(fd, 0757);
		ASSERT_EQ(selflearn__safe(lib, real, sizeof(real), why, sizeof(why)), -EPERM, "writable by others");
		fchmod(fd, 0755);
		if (!fchown(fd, 65534, 65534))
			ASSERT_EQ(selflearn__safe(lib, real, sizeof(real), why, sizeof(why)), -EPERM, "owned by nobody");
	} else {
		printf("# the output folder is not root's only (%s): the accepted case is not checked\n", why);
	}
	close(fd);
	unlink(lib);
}

int main(void)
{
	RUN_TEST(test_parse);
	RUN_TEST(test_safe);
	return unit_done();
}
