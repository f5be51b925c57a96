/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cgroup path of each traced process (the daemon's container label), read from
 * /proc/PID/cgroup while the process is there to read and kept after it exits, for as
 * long as its series are.
 */
#ifndef GP_CGROUPS_H
#define GP_CGROUPS_H

#include <stdint.h>

struct cgroups;

struct cgroups *cgroups__new(void);
void cgroups__free(struct cgroups *c);
/* pid's path (cgroup v2's "0::" line, else the first hierarchy's), read on first sight;
 * "" when it cannot be read. Valid until cgroups__prune forgets pid. */
const char *cgroups__of(struct cgroups *c, uint32_t pid);
/* Forgets processes gone for longer than keep_ns (CLOCK_MONOTONIC now_ns). */
void cgroups__prune(struct cgroups *c, uint64_t now_ns, uint64_t keep_ns);

#endif
