/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for procmaps: each input line, and the input as a whole, must either
 * be refused or yield a sane entry; the input is also a process's maps in a fake proc
 * tree, and the library entries procmaps__find_libs derives from it (hostile paths:
 * "..", embedded " (deleted)", 4 KiB names, NUL bytes) keep their invariants. Build:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -o fuzz_procmaps \
 *         tests/fuzz/fuzz_procmaps.c src/lib/procmaps.c
 */
#define _GNU_SOURCE
#include "lib/procmaps.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void check(const char *line)
{
	static struct map_entry e;

	if (procmaps__parse_line(line, &e) != 0)
		return;
	/* invariants the rest of gpuprobe relies on */
	if (e.start >= e.end || strlen(e.path) >= sizeof(e.path) ||
	    strlen(e.perms) != 4 || strchr(e.path, '\n'))
		abort();
}

static int count_cb(const struct map_entry *e, void *ctx)
{
	if (e->start >= e->end)
		abort();
	++*(int *)ctx;
	return 0;
}

static char root[256], maps[300];

static void remove_tree(void)
{
	char dir[sizeof(root) + 8];

	unlink(maps);
	snprintf(dir, sizeof(dir), "%s/1", root);
	rmdir(dir);
	rmdir(root);
}

/* The input as <tmp>/1/maps; find_libs' entries must be sane and distinct. */
static void check_find_libs(const uint8_t *data, size_t size)
{
	static struct mapped_lib libs[8];
	char want[sizeof(root) + 32];
	int n, lines = 0;
	FILE *f;

	if (!root[0]) {
		const char *tmp = getenv("FUZZ_TMPDIR"); /* make fuzz: in the build folder */

		snprintf(root, sizeof(root), "%s/fuzz-procmaps-XXXXXX", tmp ? tmp : "/tmp");
		if (!mkdtemp(root))
			abort();
		snprintf(maps, sizeof(maps), "%s/1", root);
		mkdir(maps, 0755);
		snprintf(maps, sizeof(maps), "%s/1/maps", root);
		atexit(remove_tree);
	}
	f = fopen(maps, "w");
	if (!f)
		return;
	fwrite(data, 1, size, f);
	fclose(f);
	if (procmaps__foreach(root, 1, count_cb, &lines) != 0)
		abort();
	n = procmaps__find_libs(root, 1, "libcuda.so", libs, 8);
	if (n < 0 || n > 8 || n > lines)
		abort();
	for (int i = 0; i < n; i++) {
		const struct mapped_lib *l = &libs[i];
		const char *base = strrchr(l->path, '/');

		if (l->path[0] != '/' || !base || strncmp(base + 1, "libcuda.so", 10) ||
		    l->start >= l->end || strlen(l->host_path) >= sizeof(l->host_path))
			abort();
		snprintf(want, sizeof(want), l->deleted ? "%s/1/map_files/" : "%s/1/root/", root);
		if (strncmp(l->host_path, want, strlen(want)))
			abort();
		for (int j = 0; j < i; j++)
			if (libs[j].dev_major == l->dev_major && libs[j].dev_minor == l->dev_minor &&
			    libs[j].inode == l->inode && (l->inode || !strcmp(libs[j].path, l->path)))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *line, *nl;

	/* exact-size copy: ASan catches any read past the terminator */
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	check(buf);
	for (line = buf; line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		check(line);
	}
	free(buf);
	check_find_libs(data, size);
	return 0;
}
