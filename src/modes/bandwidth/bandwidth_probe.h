/* SPDX-License-Identifier: BSD-3-Clause */
/* --bandwidth-util's BPF side: bpf/cuda_copy.bpf.c, sharing the memory probes' ring
 * buffer, feeding src/bandwidth.c. */
#ifndef GP_COPY_PROBE_H
#define GP_COPY_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"

struct copy_probe;
struct gp_opts;
struct attach_set;
struct lib_set;
struct gp_handlers;

/* events_fd: the ring buffer to share (mem_probe__events_fd). */
int copy_probe__open(struct copy_probe **out, const struct gp_opts *o, int events_fd, char *err,
		     size_t len);
int copy_probe__attach(struct copy_probe *cp, struct attach_set *links, const struct lib_set *libs,
		       int pid, char *err, size_t len);
/* What the shared ring buffer's records should also be given to. */
void copy_probe__handlers(struct copy_probe *cp, struct gp_handlers *h);
void copy_probe__report(struct copy_probe *cp, const char *kind);
void copy_probe__free(struct copy_probe *cp);

/* For gpuprobe daemon: probes on more libraries later (no second exit tracepoint), the
 * aggregator, the BPF drop counters, the copies under --min-bytes (counted in BPF only),
 * and forgetting processes exited before cutoff_ns (CLOCK_MONOTONIC). */
struct bandwidth;
int copy_probe__attach_libs(struct copy_probe *cp, struct attach_set *links,
			    const struct lib_set *libs, int pid, char *err, size_t len);
struct bandwidth *copy_probe__bandwidth(struct copy_probe *cp);
void copy_probe__drops(struct copy_probe *cp, uint64_t drops[GP_CDROP__COUNT]);
uint64_t copy_probe__small_copies(struct copy_probe *cp);
void copy_probe__reap_before(struct copy_probe *cp, uint64_t cutoff_ns);

#endif
