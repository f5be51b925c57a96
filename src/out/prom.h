/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus text exposition (format 0.0.4), with Prometheus semantics for the
 * per-process families (src/out/metrics.c, GP_M_PROCESS):
 *
 *  - A series is keyed by what outlives a process: comm and the process's attribution
 *    labels (cgroup, pod, container, from the front end's callback) plus the family's own
 *    labels (kernel, gpu, direction...). With per_process, the pid label too, for at most
 *    max_process_series processes at a time (the others under pid="other"); a new process
 *    with the PID of a series starts it again from zero (a counter reset).
 *  - Counters and histograms are monotonic sums over every process that ever counted
 *    into the series, exited ones included: each render adds what each process counted
 *    since the render before (its current values minus those seen last time), so a
 *    process's counts stay in the series after gpuprobe forgets it, a process that
 *    lived between two scrapes still adds exactly its counts, and a process whose labels
 *    change (a rename, a cgroup move) leaves what it counted where it was.
 *  - Estimate families (GP_M_ESTIMATE: counts --max-overhead estimates for a sampled
 *    process): a process adds only what passes the most it reported before, so a series
 *    never goes down when an estimate is revised down; an exited process's record is
 *    folded as a running one's while it is listed, from a state of its own (its estimate
 *    may still be finished after its exit): the image an exec started, or a new process of
 *    a reused PID, counts from zero beside it.
 *  - Gauges are the sum over the processes running now: an exited process leaves at
 *    its exit.
 *  - Capped labels (the table's `capped`): a series admits at most the given number of
 *    distinct values, first come; later ones go to "other", and a value never moves.
 *  - A series is first written with zeros, and with its counts from the next scrape on,
 *    so rate() and increase() count a new series' first counts too (born_at_zero).
 *  - A series nothing has counted into for retention_ns is dropped.
 *  - Process label sets are capped (max_label_sets, in all and per cgroup, the options
 *    above): a tenant starting processes of ever new names gets comm="other" past its
 *    share, and cannot take the others' (docs/security.md).
 *
 * One prom_out per render: modes add samples from their snapshots (a sample names its
 * process, a struct gp_snap_pid, whose pointer tells records apart within one render);
 * prom_out__fold applies the render to the store, prom_out__write also writes it. The
 * store (struct prom_store) is what outlives renders.
 */
#ifndef GP_PROM_H
#define GP_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gp_snap_pid;
struct prom_out;
struct prom_store;

struct prom_store_opts {
	bool per_process;           /* a pid label on the per-process families */
	size_t max_process_series;  /* per_process: processes with their own pid label */
	uint64_t retention_ns;      /* a series nothing counted into this long goes */
	bool born_at_zero;          /* a new series is written with zeros once */
	/* Process label sets (comm and the attribution labels, pid aside) with series of
	 * their own, in all (0: no cap) and per cgroup (the attribution's "cgroup" label; 0:
	 * no cap): the first come; a new set past a cap is summed under comm="other", of its
	 * cgroup (that cgroup's share full) or of none (the whole cap full), counted and
	 * logged. A set nothing counted into for retention_ns frees its place. */
	size_t max_label_sets, max_label_sets_per_cgroup;
};

/* Why a process's samples went to an overflow series (comm="other"). */
enum prom_overflow {
	PROM_OVERFLOW_CGROUP, /* its cgroup had max_label_sets_per_cgroup label sets */
	PROM_OVERFLOW_TOTAL,  /* the store had max_label_sets */
	PROM_OVERFLOW__COUNT,
};

struct prom_store *prom_store__new(const struct prom_store_opts *o);
void prom_store__free(struct prom_store *s);
/* Series of the per-process families held now. */
size_t prom_store__series(const struct prom_store *s);
/* Process label sets with series of their own now. */
size_t prom_store__label_sets(const struct prom_store *s);
/* Processes whose samples went to an overflow series for reason (enum prom_overflow), so
 * far: once a process (while its records are listed). */
uint64_t prom_store__overflow(const struct prom_store *s, int reason);

/*
 * The attribution labels of a process, as NULL-terminated name/value pairs (values ""
 * are not written), valid until the next call; NULL: none. A pair named "comm" is no
 * label: it names a process whose record has no name. Called during fold.
 */
typedef const char *const *(*prom_attr_fn)(void *ctx, uint32_t pid);

/* A render at now_ns (CLOCK_MONOTONIC); store NULL: a store of its own, freed with it. */
struct prom_out *prom_out__new(struct prom_store *store, prom_attr_fn attr, void *ctx, uint64_t now_ns);
void prom_out__free(struct prom_out *p);

/* Declares a family of src/out/metrics.c; families are written in the table's order,
 * each with HELP and TYPE even without samples. Unknown names fail the render. */
void prom__family(struct prom_out *p, const char *name);
/* The cap on the distinct values of a family's capped labels per series (0: none). */
void prom__cap(struct prom_out *p, const char *name, uint64_t max);

/*
 * A sample of a declared family: proc's labels (NULL for a family without
 * process labels), then the family's own labels ("key", "value", ..., NULL; NULL: none),
 * then the value. Samples of one process with the same labels are added up; a second
 * sample with the same labels without a process is dropped.
 */
void prom__u64(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
	       const char *const *labels, uint64_t v);
/* Seconds, written "%.9f" */
void prom__secs(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, double v);
/* A real, written "%.9g" */
void prom__real(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, double v);

/* Histograms: slots[i] counts durations d with floor(log2(d in microseconds)) == i
 * (slot 0: under 2 us; the last: at least 2^31 us), as the BPF programs make them
 * (gp_log2_slot(ns / 1000)); sum in seconds. Written as _bucket with le = 2^(i+1) us for
 * i up to 24 (2e-06 ... 33.554432 s), then +Inf, _sum and _count. */
#define PROM_HIST_SLOTS 32
void prom__hist(struct prom_out *p, const char *name, const struct gp_snap_pid *proc,
		const char *const *labels, const uint64_t *slots, double sum_secs);

/* Applies the render to the store (once); 0 or -ENOMEM. */
int prom_out__fold(struct prom_out *p);
/* Folds, then writes every family to f; 0 or -errno. */
int prom_out__write(struct prom_out *p, FILE *f);

/* A label value with backslash, double quote and newline escaped. */
void prom__label_value(FILE *f, const char *s);

#endif
