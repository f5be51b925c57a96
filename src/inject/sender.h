/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sending side of --gpu-time's channel, linked into the libraries gpuprobe builds for
 * traced processes: records batched into datagrams (gputime_wire.h), sent without ever
 * blocking the process; what cannot be sent (gpuprobe gone, its socket full) is counted
 * and reported in the next GPT_STATS record that gets through.
 */
#ifndef GP_INJECT_SENDER_H
#define GP_INJECT_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gpt_counts {
	uint64_t records, sent, send_dropped, src_dropped, unknown;
};

/* The channel from the environment (GPUPROBE_GPUTIME_FD, else GPUPROBE_GPUTIME_SOCK);
 * false when there is none (nothing is sent, nothing else changes). */
bool gpt_sender_open(uint32_t source);
/* One record of size bytes (its header filled in by the caller) into the batch. */
void gpt_sender_add(const void *rec, size_t size);
/* Sends the batch; last: retries a full socket for up to ~100 ms (the process's exit). */
void gpt_sender_flush(bool last);
/* The counts, updated under the sender's lock. */
void gpt_sender_count(uint64_t records, uint64_t src_dropped, uint64_t unknown);
/* A GPT_STATS record with the counts so far, then a flush. */
void gpt_sender_stats(bool last);

#endif
