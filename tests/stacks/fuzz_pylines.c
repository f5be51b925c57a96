// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target: the CPython line-table decoders read tables copied out of
 * a traced process (hostile bytes). Input: 4 bytes of code offset, then the
 * table. Both formats; must neither crash nor read past the table.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/pystack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t off;
	unsigned char *tab;

	if (size < 4)
		return 0;
	memcpy(&off, data, 4);
	/* an exact-size heap copy, so ASan sees any overrun */
	tab = malloc(size - 4 ? size - 4 : 1);
	if (!tab)
		return 0;
	memcpy(tab, data + 4, size - 4);
	pystack__line_310(tab, size - 4, 1, off);
	pystack__line_311(tab, size - 4, 1, off);
	free(tab);
	return 0;
}
