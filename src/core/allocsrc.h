/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The allocation records: bpf/cuda_mem.bpf.c's probes on every allocation family of the
 * driver and its frees, writing into the run's shared ring buffer, where the modes that
 * need them (--memleak, --bandwidth-util) subscribe. Opened by the run when an enabled
 * mode needs GP_NEED_ALLOCS; configured by those modes' open; loaded after them.
 */
#ifndef GP_ALLOCSRC_H
#define GP_ALLOCSRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"
#include "cuda_mem.h"

struct allocsrc;
struct attach_set;
struct objshare;
struct gp_snap_pid;

/* share (copied): the maps it adopts, the ring buffer it writes and the reader of it. */
int allocsrc__open(struct allocsrc **out, const struct objshare *share, char *err, size_t len);
/* User stacks at allocations (--memleak): mode (enum gp_stack_mode), bytes of stack to
 * copy (GP_STACKS_COPY, at most GP_STACK_COPY_MAX), CPython frames too; before the load. */
void allocsrc__want_stacks(struct allocsrc *as, int mode, uint32_t bytes, bool python);
/* The BPF map of CPython processes (tgid -> struct gp_py_proc) after the load, or -1. */
int allocsrc__py_map_fd(const struct allocsrc *as);
/* The GP_EV_PIN ring (bpf/gpuprobe.h) when stacks are taken, else -1: its subscriber reads
 * it first (gp_events__add_first). */
int allocsrc__pins_fd(const struct allocsrc *as);
int allocsrc__load(struct allocsrc *as, char *err, size_t len);
/* Probes on one libcuda file (links into links; pid: the uprobes' own filter, -1 none). */
int allocsrc__attach(struct allocsrc *as, struct attach_set *links, const char *lib, int pid, char *err,
		     size_t len);
int allocsrc__start(struct allocsrc *as, struct attach_set *links, char *err, size_t len);
/* The BPF drop counters (enum gp_drop) and successful calls per enum gp_api. */
void allocsrc__drops(const struct allocsrc *as, uint64_t drops[GP_DROP__COUNT]);
void allocsrc__ok_calls(const struct allocsrc *as, uint64_t calls[GP_API__COUNT]);
/* Probe hits of the allocation probes per process (entry and return of each call seen);
 * the array is owned by as, valid until the next call. */
size_t allocsrc__pids(struct allocsrc *as, const struct gp_snap_pid **out);
void allocsrc__reap(struct allocsrc *as, uint64_t cutoff_ns, uint32_t keep_pid);
void allocsrc__free(struct allocsrc *as);

#endif
