/* SPDX-License-Identifier: BSD-3-Clause */
/* --memleak's BPF side: load bpf/cuda_mem.bpf.c, attach it, feed src/memleak.c, report. */
#ifndef GP_MEM_PROBE_H
#define GP_MEM_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"

struct mem_probe;
struct gp_opts;
struct attach_set;
struct lib_set;
struct gp_events;
struct symbolizer;

int mem_probe__open(struct mem_probe **out, const struct gp_opts *o, struct symbolizer *sym,
		    char *err, size_t len);
int mem_probe__attach(struct mem_probe *mp, struct attach_set *links, const struct lib_set *libs,
		      int pid, char *err, size_t len);
/* Records of the memory ring buffer also go to h (--bandwidth-util, whose copy probes
 * share the buffer); call before mem_probe__add_events. */
struct gp_handlers;
void mem_probe__set_listener(struct mem_probe *mp, const struct gp_handlers *h);
/* The ring buffer's fd, for other BPF objects to share. */
int mem_probe__events_fd(struct mem_probe *mp);
int mem_probe__add_events(struct mem_probe *mp, struct gp_events *ev);
void mem_probe__report(struct mem_probe *mp, const char *kind);
void mem_probe__free(struct mem_probe *mp);

/* For gpuprobe daemon: probes on more libraries later (no second exit tracepoint), the
 * aggregator, the BPF drop counters, and forgetting processes exited before cutoff_ns
 * (CLOCK_MONOTONIC). */
int mem_probe__attach_libs(struct mem_probe *mp, struct attach_set *links, const struct lib_set *libs,
			   int pid, char *err, size_t len);
struct memleak *mem_probe__memleak(struct mem_probe *mp);
void mem_probe__drops(struct mem_probe *mp, uint64_t drops[GP_DROP__COUNT]);
void mem_probe__reap_before(struct mem_probe *mp, uint64_t cutoff_ns);

#endif
