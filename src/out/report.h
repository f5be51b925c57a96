/* SPDX-License-Identifier: BSD-3-Clause */
/* Text and JSON Lines renderings of the aggregators' state. Results go to stdout. */
#ifndef GP_REPORT_H
#define GP_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "gpuprobe.h"

struct memleak;
struct ml_proc;

/* Everything lost on the way, so every report can say so. */
struct gp_drops {
	uint64_t bpf[GP_DROP__COUNT]; /* BPF .bss counters */
	uint64_t table_full;          /* allocations beyond --max-allocs */
};

uint64_t gp_drops__events(const struct gp_drops *d);

struct report_ctx {
	const char *kind;    /* "interval", "final" or "exit" */
	uint64_t now_ns;     /* CLOCK_MONOTONIC, the clock of the events */
	struct gp_drops drops;
	const uint64_t *ok_calls; /* successful calls per enum gp_api, or NULL */
	int top;             /* text: allocations listed per process */
	bool stacks;
};

void report__memleak_text(FILE *f, struct memleak *ml, const struct report_ctx *c);
void report__memleak_json(FILE *f, struct memleak *ml, const struct report_ctx *c);
/* The leak report of one process that just exited. */
void report__memleak_exit_text(FILE *f, struct ml_proc *p, const struct report_ctx *c);
void report__memleak_exit_json(FILE *f, struct ml_proc *p, const struct report_ctx *c);

/* "1.5 MiB" */
void report__human_bytes(uint64_t bytes, char *buf, size_t len);

#endif

struct cudatrace;

struct ct_report_ctx {
	const char *kind; /* "interval", "final" or "exit" */
	uint64_t ldrops[GP_LDROP__COUNT];
	bool latency;   /* return probes were attached */
	int top_shapes; /* text: shapes listed per kernel */
	uint64_t malformed;
};

uint64_t gp_ldrops__events(const uint64_t *ldrops);
void report__cudatrace_text(FILE *f, struct cudatrace *ct, const struct ct_report_ctx *c);
void report__cudatrace_json(FILE *f, struct cudatrace *ct, const struct ct_report_ctx *c);
/* bcc-style log2 histogram of microseconds */
void report__log2_hist(FILE *f, const __u64 *slots, int n, const char *unit);

struct bandwidth;

struct bw_report_ctx {
	const char *kind;
	uint64_t cdrops[GP_CDROP__COUNT];
	uint64_t small_copies, small_bytes, failed_copies, zero_copies;
	unsigned long long min_bytes;
};

uint64_t gp_cdrops__events(const uint64_t *cdrops);
void report__bandwidth_text(FILE *f, struct bandwidth *bw, const struct bw_report_ctx *c);
void report__bandwidth_json(FILE *f, struct bandwidth *bw, const struct bw_report_ctx *c);
