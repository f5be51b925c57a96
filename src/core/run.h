/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One tracing run: the enabled modes (src/core/mode.h) and what they share — settings,
 * symbolizer, ring-buffer reader, probe links, the ring buffer whose records' order
 * matters (allocations before the copies that use them), the allocation records, the
 * --trace timeline. The front ends (src/cli/) drive a run through these calls, and its
 * reports and /metrics through src/out/report.h.
 */
#ifndef GP_RUN_H
#define GP_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "core/mode.h"
#include "lib/unseen.h"
#include "lib/tracesink.h"

struct gp_opts;
struct symbolizer;
struct gp_events;
struct gp_handlers;
struct attach_set;
struct allocsrc;
struct gp_timeline;
struct lib_set;
struct bpf_map;
struct bpf_program;
struct attach_pair;
struct ptree;
struct gp_budget;
struct gp_sampling;
struct attach_pair;
struct libwatch;
struct libslots;
struct gp_nvml;

#define GP_MAX_MODES 16

struct gp_run; /* opaque outside src/core, the modes' runtime parts and src/out/report.c
                * (src/core/run_impl.h) */
struct gp_run_targets;

/* The front end's answer to a mode that reports a process as it exits (slot: the mode's). */
typedef void gp_exit_report_fn(struct gp_run *run, int slot, uint32_t pid);

/* The union of the needs of the modes in the mask (bit i: gp_modes[i]). */
unsigned int gp_run__needs(uint64_t modes);

/* Each enabled mode's prepare_command, before the CLI starts its command: 0 or -errno with
 * one line in err. */
int gp_run__prepare_command(uint64_t modes, char *err, size_t len);
/* A run of the enabled modes of o (not opened yet); NULL with a reason in err. */
struct gp_run *gp_run__new(const struct gp_opts *o, char *err, size_t len);
/*
 * The one order every front end starts a run in: gp_run__open (shared resources, each
 * mode's objects loaded), then attach(ctx) (the front end's own library files, through
 * gp_run__attach_lib; NULL: none), then gp_run__watch_libs(watch_kinds) (0: none), then
 * gp_run__start (tracepoints, ring buffers, the budget, NVML): every library known at the
 * start is attached before anything starts. Later libraries (the watcher's, a daemon's
 * rescans) are attached as they come. 0 or -errno with one line in err.
 */
struct gp_run_begin {
	int (*attach)(void *ctx, struct gp_run *run, char *err, size_t len);
	void *ctx;
	unsigned int watch_kinds; /* enum gp_need bits */
};
int gp_run__begin(struct gp_run *run, const struct gp_run_begin *b, char *err, size_t len);
/* The writer of the --trace timeline (src/out/trace.h's trace_writer__sink), before open. */
void gp_run__set_trace_writer(struct gp_run *run, trace_sink_open_fn *open);
/* gp_run__begin's steps (a front end calls gp_run__begin; gpuprobe check-bpf opens only). */
/* Opens the shared resources the modes need, then each mode (table order), and loads
 * every BPF object; nothing is attached. 0 or -errno with one reason in err. */
int gp_run__open(struct gp_run *run, char *err, size_t len);
/* Probes on one more library file of a kind, for every mode that needs that kind; a file
 * (device and inode) probed already for that kind is skipped (uprobes bind to inodes). */
int gp_run__attach_lib(struct gp_run *run, enum gp_lib kind, const char *path, char *err, size_t len);
/* The probes of one library file gone (no process maps it any more): the links attached
 * while run->links carried tag (attach_set__tag), the budget's groups on the file, and its
 * claim, so that it is probed again should it come back. Returns the probes removed. */
int gp_run__detach_lib(struct gp_run *run, enum gp_lib kind, int tag, dev_t dev, ino_t ino);
/* The library kinds (enum gp_need bits) the front end does not resolve itself: their files
 * now (libnccl: --libnccl, else discovery), then those followed processes load later (the
 * dynamic linker's hook, rescans: src/core/libwatch.h). After the front end's own
 * attach_lib calls. 0 or -errno with one line in err. */
int gp_run__watch_libs(struct gp_run *run, unsigned int kinds, char *err, size_t len);
/* From the front end's loop: the watcher's deferred scans and rescans. */
void gp_run__tick(struct gp_run *run);
/* Tracepoints and ring buffers, once every library is attached. */
int gp_run__start(struct gp_run *run, char *err, size_t len);
/* The run is over (the front end's end: a signal, its targets gone, --duration): from now
 * on its reports describe this moment, however long the probes then take to come out
 * (without uprobe_multi one RCU grace period each, under a global lock: seconds for a
 * mode's probes on 6.1), so that the final report's ages and rates do not grow by
 * gpuprobe's own teardown. Every probe of the objects that follow processes returns at
 * once from then (bpf/common.bpf.h, gp_ended): the front end reads what is left, reports,
 * and only then removes the probes. */
void gp_run__end(struct gp_run *run);
/* The moment a report describes: now, or the run's end once gp_run__end was called. */
uint64_t gp_run__now(const struct gp_run *run);
/* A mode (by its state) wants process pid reported as it exits: the front end decides. */
void gp_run__exit_report(struct gp_run *run, const void *st, uint32_t pid);
/* Reports and /metrics of a run: src/out/report.h. */
/* Whether any enabled mode counts probe hits (has uprobes in libcuda). */
bool gp_run__counts_hits(const struct gp_run *run);
/* Every mode's counters (gp_mode.counters) through emit. */
void gp_run__counters(struct gp_run *run, gp_counter_fn emit, void *ctx);
/* With --trace: the records in flight, then one counter sample into the timeline
 * (running totals as their change since the last sample). Reaping and finishing sample
 * too, so the changes of a --trace file add up to the totals. */
void gp_run__sample(struct gp_run *run);
/* Forgets exited processes in every mode (see gp_mode.reap). */
void gp_run__reap(struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid);
/* Before a BPF object loads: it filters on the run's `traced` map (reused) when the run
 * follows processes (its const volatile gp_filter). */
#define gp_run__adopt(run, skel)                                                                     \
	gp_run__adopt_map(run, (skel)->maps.traced, (skel)->maps.gp_ended, (skel)->maps.gp_exits,            \
			  (bool *)&(skel)->rodata->gp_filter)
int gp_run__adopt_map(struct gp_run *run, struct bpf_map *traced, struct bpf_map *ended, struct bpf_map *exits,
		      bool *filter);
/* Before a BPF object with probes the budget may sample loads (bpf/budget.bpf.h): it
 * counts their hits in the budget's array, or not at all without a budget. */
#define gp_run__adopt_hits(run, skel) \
	gp_run__adopt_hits_map(run, (skel)->maps.gp_hits, (bool *)&(skel)->rodata->gp_count_hits)
int gp_run__adopt_hits_map(struct gp_run *run, struct bpf_map *hits, bool *count);
/* The fair shares of an object's in-flight tables (bpf/shares.bpf.h), all of --max-pending
 * places: set between open and load. */
#define gp_run__set_shares(run, skel)                                                             \
	gp_run__set_shares_of(run, (skel)->maps.gp_shares, (__u32 *)&(skel)->rodata->gp_share_free,  \
			      (__u32 *)&(skel)->rodata->gp_share_proc, (__u32 *)&(skel)->rodata->gp_share_user)
void gp_run__set_shares_of(struct gp_run *run, struct bpf_map *counters, __u32 *free_places, __u32 *proc,
			   __u32 *user);
/* Before the object loads: the pair the budget's probes take (gp_run__attach_sampled). all:
 * the mode's pair, prepared; enter_ev, leave_ev: the same programs as plain uprobes, loaded
 * only where the budget arms tracefs uprobe events and all's are uprobe_multi programs
 * (which a perf event cannot take); elsewhere *sampled is all. */
void gp_run__prepare_sampled(struct gp_run *run, struct attach_pair *sampled, const struct attach_pair *all,
			     struct bpf_program *enter_ev, struct bpf_program *leave_ev);
/* Probes the budget may sample (launches, syncs; never allocations): attach_pair__attach's
 * arguments, and hold (NULL: none), a counter of the mode's while which every call must be
 * seen. Without a budget, attached for good like any other. */
int gp_run__attach_sampled(struct gp_run *run, const struct attach_pair *p, const char *lib,
			   const long long *offsets, const long long *ret_offsets, const __u64 *cookies,
			   int n, pid_t pid, const volatile int64_t *hold, char *err, size_t len);
/* pid's sampling (a mode scales its counts of the sampled probes by it); false when every
 * call of it was seen. */
bool gp_run__sampling(struct gp_run *run, uint32_t pid, struct gp_sampling *out);
/* Ends the budget's sampling (its last period accounted until now; its links closed), as
 * gp_run__detach does: before a final report, so that it holds the last period's calls. */
void gp_run__stop_budget(struct gp_run *run);
/* The same, settled: what counters add (gp_budget__sampling_settled). */
bool gp_run__sampling_settled(struct gp_run *run, uint32_t pid, struct gp_sampling *out);
/* pid has exited, by ts_ns (CLOCK_MONOTONIC) at the latest: its sampled estimate ends there
 * (a front end that saw the exit itself, before or without the exit record). */
void gp_run__exited(struct gp_run *run, uint32_t pid, uint64_t ts_ns);
/* The ids of the cgroups pid ended in (v2's, and its memory controller's: v1's on a hybrid
 * host), kept by the exit program of an object that knew it (bpf/common.bpf.h, gp_exits):
 * false if none did, or its entry was evicted (the least recent of --max-procs go first).
 * The entry of a PID's last process to end. */
bool gp_run__exit_cgroup(const struct gp_run *run, uint32_t pid, uint64_t *v2, uint64_t *memory);
/* Follows pid (and with descendants, the processes it started already); after open. */
/* The run's own drops (the process tree's), appended at drops; returns how many
 * (GP_RUN_DROPS at most). */
size_t gp_run__drops(const struct gp_run *run, struct gp_snap_drop *drops);
int gp_run__follow(struct gp_run *run, uint32_t pid, bool descendants, char *err, size_t len);

/* A process whose libcuda was probed only after it could call it (src/lib/unseen.h): its
 * calls before probed_ns were not seen. The first note of a process stays; GP_UNSEEN_MAX
 * processes are kept, every one counted. */
#define GP_UNSEEN_MAX 4096
void gp_run__note_unseen(struct gp_run *run, uint32_t pid, uint64_t mapped_ns, uint64_t probed_ns);
void gp_run__note_unseen_start(struct gp_run *run, uint32_t pid, uint64_t started_ns, uint64_t probed_ns);
/* The note of pid, or NULL when its calls were all seen from the library's mapping. */
const struct gp_unseen *gp_run__unseen(const struct gp_run *run, uint32_t pid);
/* What a mode's snapshot carries for its renderers (gp_snap.env): the run's settings and
 * its view of the processes, as they are now. */
const struct gp_snap_env *gp_run__env(struct gp_run *run);
/* Subscribes h to the shared ring buffer (call from a mode's start). */
int gp_run__subscribe(struct gp_run *run, const struct gp_handlers *h);
/* The mode state of slot i's mode, for a mode's own callbacks. */
int gp_run__slot_of(const struct gp_run *run, const void *st);
/* Removes every probe (the records already written stay to be read). */
void gp_run__detach(struct gp_run *run);
/* The end: the modes' last records and files; the first error is returned. */
int gp_run__finish(struct gp_run *run, char *err, size_t len);
/* Detaches everything and frees; safe on NULL. */
void gp_run__free(struct gp_run *run);

/*
 * What the front ends set (before gp_run__begin) and read. Every front end drives a run in
 * one order: gp_run__new, its setters, gp_run__begin (open; the front end's own library
 * files; the libraries the run resolves and watches; start), then its loop (gp_run__tick,
 * reports), gp_run__end, gp_run__detach, gp_run__finish, gp_run__free.
 */
void gp_run__set_fe(struct gp_run *run, void *fe); /* the front end's own state */
void *gp_run__fe(const struct gp_run *run);
void gp_run__set_out(struct gp_run *run, FILE *out); /* reports; stdout unless set */
FILE *gp_run__out(const struct gp_run *run);
void gp_run__set_exit_report(struct gp_run *run, gp_exit_report_fn *fn);
/* The library files of a kind the front end found (gp_run__attach_lib's), for the modes. */
void gp_run__set_libs(struct gp_run *run, enum gp_lib kind, const struct lib_set *libs);
/* Who the probes count (src/cli/targets.c decides). */
struct gp_run_targets {
	bool filter;               /* only the processes in the process tree (else every one) */
	bool follow_forks;         /* a followed process's children are followed too */
	const char *comm, *cgroup; /* --comm, --cgroup */
	int target_pid;            /* the uprobes' own PID filter; -1: none */
	uint32_t keep_pid;         /* its records stay until the final report; 0: none */
};
void gp_run__set_targets(struct gp_run *run, const struct gp_run_targets *t);
bool gp_run__filters(const struct gp_run *run);
/* Whether pid is one the run counts: the -p PID of a run that filters by it alone, else
 * every process when the run does not filter (node-wide; the daemon without --comm or
 * --cgroup), else a process of its tree (an exited one until reaped) or of the BPF `traced`
 * map (a child forked before its fork record was read). For input that names its sender
 * (--gpu-time's records): a process not followed adds nothing. */
bool gp_run__follows(const struct gp_run *run, uint32_t pid);
uint32_t gp_run__keep_pid(const struct gp_run *run);
/* Why a text report may list no process (e.g. "no CUDA call seen: no libcuda was probed
 * ..."); NULL: the general one. Printed under an empty report. */
void gp_run__set_empty_hint(struct gp_run *run, const char *hint);
const struct gp_opts *gp_run__opts(const struct gp_run *run);
struct gp_events *gp_run__events(const struct gp_run *run);
struct attach_set *gp_run__links(const struct gp_run *run);
struct libslots *gp_run__slots(const struct gp_run *run);
struct libwatch *gp_run__watch(const struct gp_run *run);
struct ptree *gp_run__ptree(const struct gp_run *run);
struct gp_nvml *gp_run__nvml(const struct gp_run *run);
bool gp_run__has_ring(const struct gp_run *run); /* the ordered ring buffer is open */
uint64_t gp_run__start_ns(const struct gp_run *run);
/* Processes whose calls before the probes were not seen (gp_run__note_unseen), all counted. */
uint64_t gp_run__unseen_total(const struct gp_run *run);
int gp_run__nr_modes(const struct gp_run *run);
const struct gp_mode *gp_run__mode(const struct gp_run *run, int slot); /* NULL out of range */

/* "memleak,cudatrace" of the enabled modes */
void gp_run__mode_names(const struct gp_run *run, char *buf, size_t len);

#endif
