/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe check --bpf: loads and verifies every BPF object in every configuration the
 * options can produce, as the front ends configure them (src/cli/targets.h, gp_run__open),
 * and attaches nothing. One line per configuration, then the tables' own checks (every
 * const volatile setting of every object and every option is known to the check), the
 * programs no configuration loaded, and a summary.
 */
#ifndef GP_BPFCHECK_H
#define GP_BPFCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct bpfcheck_opts {
	bool verbose;        /* a failing configuration's log on stderr too */
	const char *libcuda; /* the file --trace lists its functions from (else discovered) */
	const char *log_dir; /* where failing configurations' logs go (else a new folder in $TMPDIR) */
};

/* Prints the lines on stdout; returns how many failed (0: every configuration loaded or
 * was refused by the front end for a kernel feature it names), or -errno. */
int bpfcheck__run(const struct bpfcheck_opts *o);

/* The tables' own checks alone (no loading, no privilege): every const volatile setting of
 * every object and every option known, every row naming an option; one "fail bpf tables"
 * line on out for each error. Returns the errors; *configs the configurations built. */
int bpfcheck__tables(FILE *out, int *configs);

/* What a failed load's log says, in one line (tests/unit/test_bpfcheck.c). */
struct bpfcheck_verdict {
	char prog[64];     /* the program the kernel refused, or "" */
	char reason[512];  /* the verifier's or libbpf's last word: why */
	char where[256];   /* the source line the verifier was at (its log's last "; " line) */
	char feature[160]; /* "helper bpf_find_vma (Linux 5.17)" when a kernel feature is missing */
};
/* Reads a libbpf log (the verifier's log among it) from text. */
void bpfcheck__verdict(const char *text, struct bpfcheck_verdict *v);

#endif
