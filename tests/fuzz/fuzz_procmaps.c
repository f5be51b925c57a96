/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for procmaps__parse_line: each input line, and the input
 * as a whole, must either be refused or yield a sane entry. Build:
 *   clang -g -O1 -fsanitize=fuzzer,address -Isrc -o fuzz_procmaps \
 *         tests/fuzz/fuzz_procmaps.c src/core/procmaps.c
 */
#include "procmaps.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
	return 0;
}
