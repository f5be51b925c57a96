/* SPDX-License-Identifier: BSD-3-Clause */
/* --bandwidth-util's BPF side: bpf/cuda_copy.bpf.c, sharing the memory probes' ring
 * buffer, feeding src/bandwidth.c. */
#ifndef GP_COPY_PROBE_H
#define GP_COPY_PROBE_H

#include <stddef.h>

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

#endif
