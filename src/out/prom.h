/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus text exposition (format 0.0.4) of the aggregators' state: pure C over
 * struct memleak, struct cudatrace and struct bandwidth, so it is unit-tested without BPF
 * or a server.
 */
#ifndef GP_PROM_H
#define GP_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct memleak;
struct cudatrace;
struct bandwidth;
struct ioc_proc;

struct prom_drop {
	const char *mode, *reason;
	uint64_t count;
};

struct prom_input {
	struct memleak *ml;   /* NULL: --memleak off */
	struct cudatrace *ct; /* NULL: --cudatrace off; snapshot taken by the caller */
	struct bandwidth *bw; /* NULL: --bandwidth-util off */
	uint64_t small_copies; /* --bandwidth-util: copies under --min-bytes (BPF counter) */
	/* --ioctl: its families are written when ioctl is set; ioc is a snapshot (src/ioctl.h,
	 * comm filled), nr_ioc processes */
	bool ioctl;
	const struct ioc_proc *ioc;
	size_t nr_ioc;
	unsigned int max_ioctl_series; /* (node, cmd, ctrl) series per process */
	/* The container label of pid (its cgroup path); NULL or "" when unknown. */
	const char *(*container)(void *ctx, uint32_t pid);
	void *ctx;
	const struct prom_drop *drops;
	size_t nr_drops;
	unsigned int max_kernel_series; /* kernels with their own series per process */
	double probe_cost;              /* seconds per probe hit (an estimate) */
	int libs, probes;               /* libcuda files probed, probes attached */
};

/* Writes every family, HELP and TYPE first; 0 or -errno. */
int prom__render(FILE *f, const struct prom_input *in);
/* A label value with backslash, double quote and newline escaped. */
void prom__label_value(FILE *f, const char *s);

#endif
