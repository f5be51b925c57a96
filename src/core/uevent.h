/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Uprobes the overhead budget can arm and disarm cheaply where the kernel has no
 * uprobe_multi links (Linux < 6.6). A perf-event uprobe of libbpf's kind (the uprobe PMU)
 * is its own trace event: closing it waits for RCU grace periods under the kernel's global
 * event_mutex, ~0.1 s each, serially (32 probes: 3.9-5.1 s on 6.18, 1.5-2.3 s on 6.1 under
 * QEMU), and disabling one (PERF_EVENT_IOC_DISABLE) leaves its breakpoint in and its
 * program running (bench/pe_sampling.c). So each probe here is a tracefs uprobe event
 * (uprobe_events) whose program is held, for gpuprobe's whole life, by a perf event bound
 * to gpuprobe's own process: the event's PID filter keeps its breakpoint out of every
 * other process, which pays nothing for it. Arming opens a second, program-less perf
 * event on it for the traced process (or every process); the filter then lets the
 * breakpoint in, and closing that event takes it out again, without the grace periods
 * (the event stays registered): 32 probes armed and disarmed in 0.4 + 0.4 ms on 6.18,
 * 72 + 140 ms on 6.1 under QEMU, where uprobe_multi links take 19 + 88 ms on 6.12.
 *
 * The events are named gpuprobe_<pid>_<random>/b<n> in /sys/kernel/tracing/uprobe_events
 * and removed when freed; a gpuprobe that was killed leaves its names (no breakpoints, no
 * program): the next one removes those of processes that are gone.
 */
#ifndef GP_UEVENT_H
#define GP_UEVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct uevent;

/* Whether uprobe events can be made here: 0, or -errno with one line in err naming what
 * is missing: tracefs (-EPERM and others: as attach__ensure_tracefs), its uprobe_events
 * file (-ENOENT), the permission to read tracefs (-EACCES) or to write it (-EROFS). mount: tracefs is mounted if it is not
 * (else one that could be counts as there). GPUPROBE_NO_UPROBE_EVENTS=1 says they cannot
 * (-EOPNOTSUPP; tests use it). */
int uevent__available(bool mount, char *err, size_t len);
/* prog_fd (a uprobe program, not uprobe_multi) at offset of path, the entry or (ret) the
 * return, with cookie; armed for no process. path must be gpuprobe's own
 * "/proc/self/fd/N" (the kernel resolves it in this process). NULL with one line in err. */
struct uevent *uevent__new(const char *path, unsigned long long offset, bool ret, int prog_fd, __u64 cookie,
			   char *err, size_t len);
/* Arms e for pid (0: every process) until the returned descriptor is closed; -errno. */
int uevent__arm(const struct uevent *e, __u32 pid);
/* Disarms e for good and removes its event. Slow (the grace periods above): callers free
 * many from threads. Safe on NULL. */
void uevent__free(struct uevent *e);
/* Frees es[0..n) from several threads at once (they still wait for each other in the
 * kernel, but not for each other's returns here), then es[] is all NULL. */
void uevent__free_all(struct uevent **es, int n);
/* As uevent__free_all, at gpuprobe's end: a process of its own, named gpuprobe-detach, in a
 * session of its own and deaf to SIGINT, SIGTERM and SIGHUP, closes the links and removes
 * the names (~0.1 s an event, serially, in the kernel: 48 events took ~5.5 s on 6.18), and
 * the caller returns at once. The breakpoints are in no traced process by then: each
 * event is disarmed and its holder bound to gpuprobe's own PID. Where it cannot fork, the
 * caller frees them itself. */
void uevent__free_all_apart(struct uevent **es, int n);

#endif
