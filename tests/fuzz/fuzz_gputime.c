// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target: --gpu-time's aggregator reads datagrams a traced process chose
 * (src/modes/gputime/gputime.c). The input is split into datagrams by a leading byte
 * (its length / 256 of the rest) and fed from two processes; every snapshot is taken and
 * walked: no crash, no read outside, caps held.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "modes/gputime/gputime.h"
#include "inject/gputime_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gt_limits lim = { .max_procs = 4, .max_rows = 8, .max_names = 8 };
	struct gt_agg *a = gt_agg__new(&lim);
	struct gt_snap_data s = { 0 };
	size_t off = 0;
	uint32_t pid = 1;

	if (!a)
		return 0;
	while (off < size) {
		size_t n = size - off - 1 < (size_t)data[off] * 64 ? size - off - 1 : (size_t)data[off] * 64;
		unsigned char *b = malloc(n + sizeof(struct gpt_dgram));
		struct gpt_dgram h = { GPT_MAGIC, GPT_VERSION, (uint16_t)(n / 8) };

		if (!b)
			break;
		/* a valid header most of the time, so the records are reached */
		memcpy(b, &h, sizeof(h));
		memcpy(b + sizeof(h), data + off + 1, n);
		gt_agg__feed(a, pid, b, n + sizeof(h));
		gt_agg__feed(a, pid + 1, data + off + 1, n);
		free(b);
		off += n + 1;
		pid = pid % 7 + 1;
	}
	if (!gt_agg__snapshot(a, 0, &s)) {
		for (size_t i = 0; i < s.nr_kernels; i++)
			if (s.kernels[i].name && strlen(s.kernels[i].name) > GPT_NAME_MAX)
				abort();
		if (s.nr_procs > lim.max_procs || s.nr_kernels > (size_t)lim.max_rows * lim.max_procs)
			abort();
	}
	gt_snap_data__clear(&s);
	gt_agg__reap(a, UINT64_MAX, 0);
	gt_agg__free(a);
	return 0;
}
