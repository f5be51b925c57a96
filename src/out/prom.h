/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus text exposition (format 0.0.4). Modes add samples to families through
 * this accumulator from their snapshots; it owns the series rules that hold for every mode
 * — labels of a process (pid, comm, container), escaping, one series per label set, an
 * exited process hidden behind a live one with its PID — and writes every family at the
 * end, HELP and TYPE first.
 */
#ifndef GP_PROM_H
#define GP_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gp_snap_pid;
struct prom_out;

/* The container label of pid (its cgroup path); NULL or "" when unknown. */
typedef const char *(*prom_container_fn)(void *ctx, uint32_t pid);

struct prom_out *prom_out__new(prom_container_fn container, void *ctx);
void prom_out__free(struct prom_out *p);
/* Processes alive now (any mode): an exited one with the same PID gets no series. */
void prom_out__live(struct prom_out *p, uint32_t pid);
bool prom_out__shadowed(const struct prom_out *p, uint32_t pid, bool exited);

/* Declares a family; its samples are written under it, families in declaration order. */
void prom__family(struct prom_out *p, const char *name, const char *type, const char *help);
/* A sample of family name: proc's labels (NULL: none), then labels ("key", "value", ...,
 * NULL; NULL: none), then the value. A second sample with the same labels is dropped. */
void prom__u64(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
	       const char *const *labels, uint64_t v);
/* Seconds and other reals, "%.9f" */
void prom__secs(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, double v);
/* A real in "%.9g" */
void prom__real(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, double v);

/* Writes every family to f; 0 or -errno (-ENOMEM if a sample could not be kept). */
int prom_out__write(struct prom_out *p, FILE *f);

/* A label value with backslash, double quote and newline escaped. */
void prom__label_value(FILE *f, const char *s);

#endif
