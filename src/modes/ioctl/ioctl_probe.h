/* SPDX-License-Identifier: BSD-3-Clause */
/* --ioctl's BPF side: choose a backend, load bpf/nv_ioctl.bpf.c, attach it, snapshot its
 * counters into src/ioctl.c, report. */
#ifndef GP_IOCTL_PROBE_H
#define GP_IOCTL_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ioctl_probe;
struct gp_opts;
struct attach_set;

/* Checks everything that can be checked without loading (backend, /proc/devices) and
 * opens the object. emit_events: one struct gp_ioctl_event per ioctl on the ring buffer
 * map ioctl_events (--trace). 0, or -errno with one reason in err. */
int ioctl_probe__open(struct ioctl_probe **out, const struct gp_opts *o, bool emit_events,
		      char *err, size_t len);
/* Loads with pid as the filter (-1: every process), attaches, says which backend on
 * stderr (one line). */
int ioctl_probe__attach(struct ioctl_probe *ip, struct attach_set *links, int pid, char *err,
			size_t len);
/* The ring buffer of per-ioctl records (emit_events), once attached; -1 before. */
int ioctl_probe__events_fd(const struct ioctl_probe *ip);
/* The decoded name of request cmd on a device of this major, or NULL. */
const char *ioctl_probe__name(const struct ioctl_probe *ip, uint32_t major, uint32_t cmd);
/* ioctl records --trace lost to a full ring buffer. */
unsigned long long ioctl_probe__ringbuf_drops(const struct ioctl_probe *ip);
void ioctl_probe__report(struct ioctl_probe *ip, const char *kind);
void ioctl_probe__free(struct ioctl_probe *ip);

/* For gpuprobe daemon (which sets o->quiet: then attach and open print nothing, and it
 * logs the backend itself): the backend ("kprobe", "tracepoint", "none") and why; the
 * device majors traced; a snapshot of the counters (comm filled; valid until the next
 * snapshot); the BPF drop counters; the PIDs with counters; and deleting every counter and the name of the
 * processes in pids (keys: PIDs), which the BPF side keeps after they exit. forget
 * returns how many counters it deleted. */
struct ioc_proc;
struct u64map;
const char *ioctl_probe__backend(const struct ioctl_probe *ip, const char **why);
int ioctl_probe__nr_majors(const struct ioctl_probe *ip);
size_t ioctl_probe__snapshot(struct ioctl_probe *ip, struct ioc_proc **procs);
void ioctl_probe__drops(const struct ioctl_probe *ip, uint64_t *drops); /* GP_IDROP__COUNT */
int ioctl_probe__pids(struct ioctl_probe *ip, struct u64map *pids); /* adds the PIDs with counters */
int ioctl_probe__forget(struct ioctl_probe *ip, struct u64map *pids);

#endif
