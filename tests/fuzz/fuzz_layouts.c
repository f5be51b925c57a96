/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the state file of learned layouts (src/modes/cudatrace/layouts.c):
 * any input is refused or yields entries within their bounds (key [0-9a-z-], shorter than
 * LAY_KEY_LEN; slot 1-7; uid not -1; at most LAY_MAX), and what it yields is written and
 * parsed back to the same entries. Build:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -Ibpf \
 *         -o fuzz_layouts tests/fuzz/fuzz_layouts.c src/modes/cudatrace/layouts.c src/lib/util.c -lelf
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "modes/cudatrace/layouts.h"

static struct lay_entry e[LAY_MAX], back[LAY_MAX];
static char text[LAY_MAX_FILE];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[128];
	size_t n = 0, m = 0;
	int len;

	if (layouts__parse((const char *)data, size, e, LAY_MAX, &n, err, sizeof(err)))
		return 0;
	if (n > LAY_MAX)
		abort();
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(e[i].key);

		if (!k || k >= LAY_KEY_LEN || strspn(e[i].key, "0123456789abcdefghijklmnopqrstuvwxyz-") != k ||
		    e[i].slot < 1 || e[i].slot > 7 || e[i].uid == UINT32_MAX)
			abort();
	}
	len = layouts__format(e, n, text, sizeof(text));
	if (len < 0)
		return 0; /* entries fit the file's bound only as the parser read them */
	if (layouts__parse(text, (size_t)len, back, LAY_MAX, &m, err, sizeof(err)) || m != n)
		abort();
	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i].key, back[i].key) || e[i].tag != back[i].tag || e[i].slot != back[i].slot ||
		    e[i].uid != back[i].uid)
			abort();
	return 0;
}
