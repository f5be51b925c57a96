/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for safeopen fed a fuzzed tree: the input is a list of operations
 * that build a process's root (folders, files, FIFOs, symlinks with relative, absolute,
 * climbing and /proc targets, hard links, renames) beside a file outside it, then a path
 * and the identity maps would give. Whatever the tree:
 *   - safe_open_mapped returns only a regular file, with that identity when one is given,
 *     and one whose inode is reachable inside the root (never the outside file unless
 *     the tree hard-linked it in); it never blocks (libFuzzer's -timeout);
 *   - safe_path_is_plain says yes only when the kernel's own walk of the name from here
 *     (stat, following links) reaches that same inode.
 * Build (make fuzz does):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -o fuzz_safeopen \
 *         tests/fuzz/fuzz_safeopen.c src/lib/safeopen.c
 */
#define _GNU_SOURCE
#include "lib/safeopen.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define PID 7
#define MAX_INODES 64

static char top[256];	  /* <tmp> */
static char proc[300];	  /* <tmp>/proc: the fake proc root */
static char root[340];	  /* <tmp>/proc/7/root: the process's root */
static char outside[300]; /* <tmp>/outside/secret */

static const char *const names[] = { "a", "b", "lib", "x.so", "..", "." };

struct input {
	const uint8_t *p;
	size_t left;
};

static unsigned int take(struct input *in)
{
	unsigned int v = 0;

	if (in->left) {
		v = *in->p++;
		in->left--;
	}
	return v;
}

/* A path of 1-3 names from the input, absolute ("/a/lib/x.so"), at most len bytes. */
static void take_path(struct input *in, char *buf, size_t len)
{
	unsigned int n = 1 + take(in) % 3;
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "/%s",
					names[take(in) % (sizeof(names) / sizeof(names[0]))]);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

static dev_t inode_dev[MAX_INODES];
static ino_t inode_ino[MAX_INODES];
static int nr_inodes;

static int collect(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F && S_ISREG(sb->st_mode) && nr_inodes < MAX_INODES) {
		inode_dev[nr_inodes] = sb->st_dev;
		inode_ino[nr_inodes++] = sb->st_ino;
	}
	return 0;
}

static void remove_all(void)
{
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	rmdir(top);
}

/* The names, once; the tree itself is made again for every input (see build). */
static void setup(void)
{
	const char *tmp = getenv("FUZZ_TMPDIR"); /* make fuzz: in the build folder */

	snprintf(top, sizeof(top), "%s/fuzz-safeopen-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(top))
		abort();
	snprintf(proc, sizeof(proc), "%s/proc", top);
	snprintf(root, sizeof(root), "%s/%d/root", proc, PID);
	snprintf(outside, sizeof(outside), "%s/outside/secret", top);
	atexit(remove_all);
}

/*
 * A fresh tree: <top>/proc/7/{root,map_files} and <top>/outside/secret. All of it,
 * since ".." names let an input reach beyond the root and leave things there.
 */
static void fresh_tree(void)
{
	char p[400];

	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir(proc, 0755);
	snprintf(p, sizeof(p), "%s/%d", proc, PID);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/map_files", proc, PID);
	mkdir(p, 0755);
	mkdir(root, 0755);
	snprintf(p, sizeof(p), "%s/outside", top);
	mkdir(p, 0755);
	close(open(outside, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
}

/* Builds the root from the operations in the input. */
static void build(struct input *in, int *linked_outside)
{
	char a[64], b[256], p[700], q[700];
	unsigned int ops = take(in) % 12;

	fresh_tree();
	*linked_outside = 0;
	while (ops--) {
		unsigned int op = take(in) % 7;

		take_path(in, a, sizeof(a));
		snprintf(p, sizeof(p), "%s%s", root, a);
		switch (op) {
		case 0:
			mkdir(p, 0755);
			break;
		case 1:
			/* non-blocking: p may be a FIFO the tree made */
			close(open(p, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644));
			break;
		case 2:
			mkfifo(p, 0644);
			break;
		case 3: /* symlink: relative, absolute (their "/"), climbing, or a magic link */
			switch (take(in) % 5) {
			case 0:
				take_path(in, b, sizeof(b));
				symlink(b + 1, p);
				break;
			case 1:
				take_path(in, b, sizeof(b));
				symlink(b, p);
				break;
			case 2:
				symlink("../../../../../../outside/secret", p);
				break;
			case 3:
				symlink(outside, p);
				break;
			default:
				symlink("/proc/self/root/etc/hostname", p);
				break;
			}
			break;
		case 4: /* a hard link of something in the root, or of the outside file */
			if (take(in) % 4 == 0) {
				if (link(outside, p) == 0)
					*linked_outside = 1;
			} else {
				take_path(in, b, sizeof(b));
				snprintf(q, sizeof(q), "%s%s", root, b);
				link(q, p);
			}
			break;
		case 5:
			take_path(in, b, sizeof(b));
			snprintf(q, sizeof(q), "%s%s", root, b);
			rename(p, q);
			break;
		default: /* map_files/1000-2000: the kernel's link, a plain symlink here */
			snprintf(q, sizeof(q), "%s/%d/map_files/1000-2000", proc, PID);
			unlink(q);
			symlink(take(in) % 2 ? outside : p, q);
			break;
		}
		/* a rename may have moved the root itself away: the tree is then done */
		if (access(root, F_OK))
			break;
	}
}

static void check_fd(int fd, const struct safeopen_id *id, int linked_outside)
{
	struct stat st, sec;
	int i;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		abort();
	if (id && (major(st.st_dev) != id->dev_major || minor(st.st_dev) != id->dev_minor ||
		   st.st_ino != id->ino))
		abort();
	if (stat(outside, &sec) == 0 && sec.st_ino == st.st_ino && sec.st_dev == st.st_dev &&
	    !linked_outside)
		abort(); /* the outside file, never linked in */
	nr_inodes = 0;
	nftw(root, collect, 16, FTW_PHYS);
	for (i = 0; i < nr_inodes; i++)
		if (inode_dev[i] == st.st_dev && inode_ino[i] == st.st_ino)
			break;
	if (i == nr_inodes)
		abort(); /* not a file of the root */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct safeopen_id id = { 0 }, *idp = NULL;
	char q[64], full[512], err[256];
	int linked_outside, fd, plain;
	struct stat st, walked;

	if (!top[0])
		setup();
	build(&in, &linked_outside);
	take_path(&in, q, sizeof(q));
	/* the identity maps would give: a file of the tree, the outside file, or none */
	switch (take(&in) % 3) {
	case 0:
		take_path(&in, full + 400, 64);
		snprintf(full, 400, "%s%s", root, full + 400);
		if (lstat(full, &st) == 0) {
			id = (struct safeopen_id){ major(st.st_dev), minor(st.st_dev), st.st_ino };
			idp = &id;
		}
		break;
	case 1:
		if (stat(outside, &st) == 0) {
			id = (struct safeopen_id){ major(st.st_dev), minor(st.st_dev), st.st_ino };
			idp = &id;
		}
		break;
	default:
		break;
	}
	fd = safe_open_mapped(proc, PID, q, idp, err, sizeof(err));
	check_fd(fd, idp, linked_outside);
	if (fd >= 0) {
		plain = safe_path_is_plain(proc, PID, q, fd);
		snprintf(full, sizeof(full), "%s%s", root, q);
		if (plain && (stat(full, &walked) || fstat(fd, &st) || walked.st_ino != st.st_ino ||
			      walked.st_dev != st.st_dev))
			abort(); /* "plain", yet the kernel's walk of the name leads elsewhere */
		close(fd);
	}
	fd = safe_open_map_file(proc, PID, 0x1000, 0x2000, idp, err, sizeof(err));
	if (fd >= 0) {
		if (fstat(fd, &st) || !S_ISREG(st.st_mode))
			abort();
		if (idp && st.st_ino != idp->ino)
			abort();
		close(fd);
	}
	return 0;
}
