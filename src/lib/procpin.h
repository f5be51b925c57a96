/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * procpin: what naming a process's frames needs once the process is gone, kept while
 * it lives.
 *
 * A program that exits a millisecond after its last allocation takes its
 * /proc/PID/maps, /proc/PID/root and /proc/PID/map_files with it, before its stack
 * records are read. procpin__take() reads the maps while the process lives and keeps
 * them, with a descriptor on each file the process maps executable, opened through
 * safeopen (map_files, else the path inside the process's root; regular files only,
 * checked against the dev/inode of maps). The unwinder and the symbolizer fall back
 * on them (procpin__foreach, procpin__open) when /proc has nothing any more.
 *
 * Bounded: PROCPIN_MAX_PIDS processes, PROCPIN_MAX_MAPS mappings a process,
 * PROCPIN_PID_FILES files a process and PROCPIN_MAX_FILES descriptors in all. A file
 * mapped by several processes (same dev, inode) is kept once, counted for each. What a
 * limit left out is counted (procpin__unkept, the stats) so a report can say so.
 * Everything a process kept is let go at procpin__release (its records are handled).
 * Not thread-safe.
 */
#ifndef GPUPROBE_PROCPIN_H
#define GPUPROBE_PROCPIN_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/procmaps.h"
#include "lib/safeopen.h"

#define PROCPIN_MAX_PIDS 1024
#define PROCPIN_MAX_MAPS 4096
#define PROCPIN_PID_FILES 256
#define PROCPIN_MAX_FILES 2048 /* fewer where RLIMIT_NOFILE cannot make room */

struct procpin;

/* proc_root NULL means "/proc". */
struct procpin *procpin__new(const char *proc_root);
void procpin__free(struct procpin *pp);

/* Lower limits (tests): files a process, descriptors in all (0 keeps the default). */
void procpin__set_limits(struct procpin *pp, unsigned int pid_files, unsigned int max_files);
/* The limits in force: files a process, descriptors in all. */
void procpin__limits(const struct procpin *pp, unsigned int *pid_files, unsigned int *max_files);

/*
 * Reads pid's maps now and keeps them, and a descriptor on each file it maps executable
 * that is not kept yet (files kept earlier stay, also when unmapped since: records of
 * that time may still come; so do mappings a new read does not have where nothing else
 * is mapped now: a read while the process exits misses some). The file mapped at hint
 * (a pc; 0 for none) is opened first. 0; -ESRCH when the process is gone (what was kept
 * stays); -ENOSPC when PROCPIN_MAX_PIDS processes are kept; other -errno.
 */
int procpin__take(struct procpin *pp, int pid, unsigned long long hint);

/* Nanoseconds (CLOCK_MONOTONIC) of pid's last successful take; 0 when nothing is kept. */
uint64_t procpin__taken_ns(const struct procpin *pp, int pid);

/* The identity of pid's root directory at its last take that read it (safe_proc_root_id):
 * 0, or -ENOENT when none was read. */
int procpin__root(const struct procpin *pp, int pid, struct safeopen_id *id);

/* Whether the last take of pid found it gone. */
bool procpin__gone(const struct procpin *pp, int pid);

/* Whether addr lies in an executable mapping kept for pid. */
bool procpin__covers(const struct procpin *pp, int pid, unsigned long long addr);

/* Calls cb for each kept mapping of pid, as procmaps__foreach does. -ENOENT: none kept. */
int procpin__foreach(const struct procpin *pp, int pid,
		     int (*cb)(const struct map_entry *e, void *ctx), void *ctx);

/* A new descriptor (the caller closes it) on the kept file id, or -ENOENT. */
int procpin__open(const struct procpin *pp, const struct safeopen_id *id);

/* Files pid maps executable that are not kept (a limit, or they could not be opened). */
unsigned int procpin__unkept(const struct procpin *pp, int pid);

/* Lets go of what pid kept. */
void procpin__release(struct procpin *pp, int pid);

/* The pids kept whose last take found them gone longer than age_ns ago, up to max. */
size_t procpin__dead(const struct procpin *pp, uint64_t now_ns, uint64_t age_ns, int *pids, size_t max);

struct procpin_stats {
	uint64_t takes, procs_kept, procs_unkept, files_open, files_kept, files_unkept, files_failed;
};
void procpin__stats(const struct procpin *pp, struct procpin_stats *st);

#endif /* GPUPROBE_PROCPIN_H */
