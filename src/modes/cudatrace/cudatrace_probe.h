/* SPDX-License-Identifier: BSD-3-Clause */
/* --cudatrace's BPF side: load bpf/cuda_launch.bpf.c, attach it, snapshot its maps into
 * src/cudatrace.c, report. */
#ifndef GP_LAUNCH_PROBE_H
#define GP_LAUNCH_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"

struct launch_probe;
struct gp_opts;
struct attach_set;
struct lib_set;
struct gp_events;
struct symbolizer;

int launch_probe__open(struct launch_probe **out, const struct gp_opts *o, struct symbolizer *sym,
		       char *err, size_t len);
int launch_probe__attach(struct launch_probe *lp, struct attach_set *links,
			 const struct lib_set *libs, int pid, char *err, size_t len);
int launch_probe__add_events(struct launch_probe *lp, struct gp_events *ev);
void launch_probe__report(struct launch_probe *lp, const char *kind);
void launch_probe__free(struct launch_probe *lp);

/* For gpuprobe daemon: probes on more libraries later (no second exit tracepoint), a
 * snapshot of the BPF counts into the aggregator without a report, the aggregator, the
 * BPF drop counters, and forgetting processes exited before cutoff_ns (CLOCK_MONOTONIC)
 * along with their BPF map entries. */
int launch_probe__attach_libs(struct launch_probe *lp, struct attach_set *links,
			      const struct lib_set *libs, int pid, char *err, size_t len);
void launch_probe__snapshot(struct launch_probe *lp);
struct cudatrace *launch_probe__cudatrace(struct launch_probe *lp);
void launch_probe__drops(struct launch_probe *lp, uint64_t drops[GP_LDROP__COUNT]);
void launch_probe__reap_before(struct launch_probe *lp, uint64_t cutoff_ns);

#endif
