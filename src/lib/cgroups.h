/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where each traced process runs, for the daemon's labels: its cgroup path (cgroup v2's
 * "0::" line; the v1 "memory" line on a hybrid host where that one is "/",
 * src/lib/k8s.h), and from that path its pod and container (pod_uid, container_id;
 * namespace, pod and container names from the kubelet's log folders).
 *
 * Read when the daemon learns of a process — its exec record, the first time a label
 * is asked for — and again for the processes still running at each refresh, so a
 * process moved to another cgroup (a job scheduler, systemd-run) is followed; kept after
 * the process exits for as long as its records may still be rendered.
 */
#ifndef GP_CGROUPS_H
#define GP_CGROUPS_H

#include <stdint.h>

struct cgroups;

/* log_dir: the kubelet's log folder, holding pods/ and containers/ (NULL: /var/log). */
struct cgroups *cgroups__new(const char *log_dir);
void cgroups__free(struct cgroups *c);
/* (Re)reads pid's cgroup now (CLOCK_MONOTONIC now_ns); a process that cannot be read
 * keeps what was known. comm: its name if known (an exec record's), else read once. */
void cgroups__refresh(struct cgroups *c, uint32_t pid, const char *comm, uint64_t now_ns);
/* Reads pid's cgroup unless it was read already (a process's first record). */
void cgroups__note(struct cgroups *c, uint32_t pid, uint64_t now_ns);
/* pid's cgroup path, read on first sight; "" when it cannot be read. Valid until the
 * next call on c. */
const char *cgroups__of(struct cgroups *c, uint32_t pid);
/* pid's labels as NULL-terminated name/value pairs: comm (its name, for records that
 * have none), cgroup, namespace, pod, container, pod_uid, container_id (values "" where
 * unknown), read again when older than max_age_ns. Valid until the next call on c. */
const char *const *cgroups__labels(struct cgroups *c, uint32_t pid, uint64_t now_ns, uint64_t max_age_ns);
/* For a process gone before its cgroup could be read: its labels from the ids of the
 * cgroups it ended in (bpf/common.bpf.h's gp_exits: v2's, and its memory controller's, 0:
 * none known), the path chosen as /proc/PID/cgroup's would be (v2's, or on a hybrid host
 * where that is "/", the v1 memory hierarchy's), kept as if read then; with no cgroup
 * where the hierarchy is not mounted here or the cgroup is gone too (counted; not looked
 * up again while its entry is kept). */
const char *const *cgroups__from_id(struct cgroups *c, uint32_t pid, uint64_t v2, uint64_t memory,
				    uint64_t now_ns);
/* Processes labelled by cgroups__from_id so far, and those whose cgroup it could not find. */
void cgroups__from_id_counts(const struct cgroups *c, unsigned long *found, unsigned long *not_found);
/* Forgets processes gone for longer than keep_ns (CLOCK_MONOTONIC now_ns). */
void cgroups__prune(struct cgroups *c, uint64_t now_ns, uint64_t keep_ns);
/* Scans of the kubelet's log folders so far (the names' cache misses). */
unsigned long cgroups__name_scans(const struct cgroups *c);

#endif
