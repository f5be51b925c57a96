/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the readers of src/out: the input as a folded file (folded__read,
 * then flame__render of what it read) and as a JSON Lines trace (trace__convert). Built
 * and run by hand (not part of `make fuzz`, whose targets are the parsers of traced
 * processes' files):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *     tests/tools/fuzz_out.c src/out/folded.c src/out/flame.c src/out/jsonnum.c \
 *     src/out/lines.c src/out/outfile.c src/out/trace.c src/lib/u64map.c -ljson-c -lm -o .output/fuzz_out
 *   .output/fuzz_out -max_total_time=300 -max_len=65536 CORPUS_DIR
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "out/flame.h"
#include "out/folded.h"
#include "out/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct folded_read_stats st;
	struct trace_convert_stats cst;
	struct folded *f = folded__new();
	char err[256], path[64];
	FILE *in = fmemopen((void *)data, size ? size : 1, "r");
	int fd;

	if (!null)
		null = fopen("/dev/null", "w");
	if (in && size) {
		if (!folded__read(f, in, &st, err, sizeof(err)))
			flame__render(f, NULL, null);
	}
	if (in)
		fclose(in);
	folded__free(f);
	/* trace__convert takes a path: a memfd's */
	fd = memfd_create("fuzz", 0);
	if (fd >= 0) {
		if (write(fd, data, size) == (ssize_t)size) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			trace__convert(path, null, &cst, err, sizeof(err));
		}
		close(fd);
	}
	return 0;
}
