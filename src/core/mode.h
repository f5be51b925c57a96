/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A mode is one `struct gp_mode` in the table of src/modes/modes.c [bpftool's cmds[],
 * retsnoop's mass_attacher]: its name and options, what it needs, and the steps every
 * front end runs for it — open (configure and load its BPF objects), attach (probes on one
 * library file for the run's target), start (tracepoints, ring buffers), snapshot (plain
 * data) and the renderers that read only that snapshot (text, JSON, Prometheus), reap
 * (forget exited processes), finish and free. The front ends (src/cli/) loop over the
 * enabled modes through src/core/run.h and never name one.
 */
#ifndef GP_MODE_H
#define GP_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "gpuprobe.h"

struct gp_run;
struct gp_option;
struct json_object;
struct prom_out;

/* The libraries modes probe; a mode's attach step gets each file of the kinds it needs. */
enum gp_lib {
	GP_LIB_CUDA,  /* libcuda.so.1, the driver */
	GP_LIB_NCCL,  /* libnccl.so.2 */
	GP_LIB__COUNT,
};

/* What a mode needs from the run before it opens. */
enum gp_need {
	GP_NEED_LIBCUDA = 1 << 0, /* probes in libcuda: the driver files are resolved */
	GP_NEED_ALLOCS = 1 << 1,  /* the allocation records (src/core/allocsrc.h) */
	GP_NEED_LIBNCCL = 1 << 2, /* probes in libnccl */
};

/* The need bit of a library kind. */
static inline unsigned int gp_need_of_lib(enum gp_lib kind)
{
	return kind == GP_LIB_CUDA ? GP_NEED_LIBCUDA : GP_NEED_LIBNCCL;
}

/* Where a mode or an option exists. */
enum gp_frontend {
	GP_FE_CLI = 1 << 0,    /* gpuprobe [--mode...] [-p PID | -- COMMAND] */
	GP_FE_DAEMON = 1 << 1, /* gpuprobe daemon */
	GP_FE_ALL = GP_FE_CLI | GP_FE_DAEMON,
	/* gpuprobe top: parsed as the CLI (its options), running as a live view that prints no
	 * reports (no stacks are captured) */
	GP_FE_TOP = 1 << 2,
};

/* One process in a snapshot, as every front end reads it whatever the mode. */
struct gp_snap_pid {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	bool exited;
	/* when it exited (CLOCK_MONOTONIC; 0: unknown): one process's exited records, listed
	 * by several renders, are told from another's of a reused PID by it (src/out/prom.c) */
	uint64_t exit_ns;
	uint64_t probe_hits; /* uprobe hits this mode's probes took in this process */
	/* no name known yet: its record was made from a table or record that carries none
	 * after the process was gone (/proc/PID/comm unreadable); a later record (its exit's)
	 * names it. src/out/prom.c counts a running one only once it has a name */
	bool unnamed;
};

/* One drop counter: reason is an enum gp_reason (src/lib/reasons.h). */
struct gp_snap_drop {
	int reason;
	uint64_t count;
};

/* The drops a run adds to each mode's (gp_run__drops): its process tree's. */
#define GP_RUN_DROPS 2

/*
 * What a snapshot is taken for, one list (its name is a report's "report" field and its
 * text header's word):
 *   INTERVAL "interval"  the CLI's report every --interval seconds, every process
 *   FINAL    "final"     the CLI's report at the run's end, every process
 *   EXIT     "exit"      the CLI's report of one process as it exits (gp_mode.exit_reports)
 *   SCRAPE   "scrape"    a /metrics scrape (the daemon, --prom-file): no per-allocation lists
 *   HITS     "hits"      the run's look at each process's probe hits and each mode's drops
 *                        (gp_hits__run_drops, gpuprobe top and the overhead record): nothing
 *                        is rendered from it, so nothing costly is gathered
 * A snapshot has no side effect: what a report writes besides the report (--folded,
 * --csv) is gp_mode.report_files, called by the report.
 */
#define GP_SNAP_KINDS(X) X(INTERVAL, "interval") X(FINAL, "final") X(EXIT, "exit") \
	X(SCRAPE, "scrape") X(HITS, "hits")

enum gp_snap_kind {
#define GP_SNAP_ENUM(id, name) GP_SNAP_##id,
	GP_SNAP_KINDS(GP_SNAP_ENUM)
#undef GP_SNAP_ENUM
	GP_SNAP__COUNT,
};

static inline const char *gp_snap_kind_name(enum gp_snap_kind kind)
{
	static const char *const names[GP_SNAP__COUNT] = {
#define GP_SNAP_NAME(id, name) [GP_SNAP_##id] = name,
		GP_SNAP_KINDS(GP_SNAP_NAME)
#undef GP_SNAP_NAME
	};

	return (unsigned int)kind < GP_SNAP__COUNT ? names[kind] : "unknown";
}

struct gp_unseen;

/* A process's place among the trees the run follows (gp_snap_env.lineage). */
struct gp_lineage {
	uint32_t ppid;
	uint32_t root;               /* the tree's root, the launcher of its job (pid itself for a root) */
	char root_comm[GP_COMM_LEN]; /* "" unknown */
};

/*
 * What a renderer knows besides a mode's records: the run's settings and its view of the
 * processes, as a mode's snapshot carries them (gp_snap.env, from gp_run__env). Renderers
 * read these, never the run; the functions take run, the pointer beside them.
 */
struct gp_snap_env {
	bool verbose; /* -v: every row, every error */
	bool command; /* the run started the command it traces (-- COMMAND) */
	bool trees;   /* the run follows process trees: reports sum by job (src/out/trees.h) */
	/* pid's place in the followed trees; false when not known */
	bool (*lineage)(const void *run, uint32_t pid, struct gp_lineage *out);
	/* pid's calls before the probes not seen (src/lib/unseen.h); NULL: none */
	const struct gp_unseen *(*unseen)(const void *run, uint32_t pid);
	const void *run;
};

/* the longest a reap waits for records a reader behind has not read yet (run.c) */
#define GP_NAMES_PENDING_S 10

static inline bool gp_env_verbose(const struct gp_snap_env *env)
{
	return env && env->verbose;
}

static inline const struct gp_unseen *gp_env_unseen(const struct gp_snap_env *env, uint32_t pid)
{
	return env && env->unseen ? env->unseen(env->run, pid) : NULL;
}

/* The head of every mode's snapshot (its first member). */
struct gp_snap {
	const char *mode; /* the mode's name */
	enum gp_snap_kind kind;
	uint64_t now_ns;  /* CLOCK_MONOTONIC when taken */
	const struct gp_snap_env *env; /* the run's settings and process view (gp_run__env) */
	const struct gp_snap_pid *pids;
	size_t nr_pids;
	const struct gp_snap_drop *drops;
	size_t nr_drops;
};

/* A quantity a mode offers to live views (gpuprobe top) and to the --trace timeline, where
 * it becomes a counter track that Perfetto draws as a curve (src/core/counters.h). */
struct gp_counter {
	uint32_t pid;
	const char *track;  /* GP_TRACK_* */
	const char *series; /* "device", "H2D gpu0", a kernel's name... (copied by the reader) */
	double value;
	unsigned int flags; /* enum gp_counter_flag */
};

enum gp_counter_flag {
	/* a running total (since the process was first seen): drawn as its change from one
	 * sample to the next; counters of one series emitted in one call add up */
	GP_CTR_TOTAL = 1 << 0,
	/* for live views only: too many series for a timeline (one per kernel), or a figure an
	 * exited process left (what it held at its exit), which a timeline draws as 0 */
	GP_CTR_DETAIL = 1 << 1,
};

/* The tracks, by name: front ends pick what they show by these, never by mode. */
#define GP_TRACK_MEMORY "outstanding bytes" /* gauge; series: memory kind (device, host_pinned…) */
#define GP_TRACK_LAUNCHES "launches"        /* total; series: "kernels", "graphs" */
#define GP_TRACK_COPIES "copy bytes"        /* total; series: "H2D gpu0", "D2H gpu1", "H2H"… */
#define GP_TRACK_KERNELS "kernel launches"  /* total, detail; series: kernel names; runs: launched + in graphs */
/* --nccl, detail gauges; series "comm 0x<comm_id> rank <r>": a rank's calls in flight,
 * its seconds since a completion (while any is in flight), and, under the process of a
 * rank that has not entered a collective the others entered, the seconds they waited */
#define GP_TRACK_NCCL_INFLIGHT "nccl in flight"
#define GP_TRACK_NCCL_STALL "nccl seconds since completion"
#define GP_TRACK_NCCL_WAIT "nccl waited for"

typedef void (*gp_counter_fn)(void *ctx, const struct gp_counter *c);

struct gp_mode {
	const char *name;  /* "memleak": the "mode" of its reports and metrics */
	const char *flag;  /* its option, without "--" */
	const char *arg;   /* the flag's argument name, or NULL (a plain switch) */
	const char **arg_dest; /* where the flag's argument goes */
	const char *doc;   /* one line for --help */
	unsigned int needs;     /* enum gp_need */
	unsigned int frontends; /* enum gp_frontend */
	bool exit_reports;      /* wants a report of each process as it exits (CLI) */
	bool probe_hits;        /* its snapshots count the uprobe hits of its processes */
	const struct gp_option *options; /* the options it owns; name NULL ends */

	/* optional: before the CLI starts its command (before the run opens): what the
	 * command's environment and inherited descriptors must carry (--gpu-time's channel and
	 * libraries); 0 or -errno with one line in err */
	int (*prepare_command)(char *err, size_t len);
	/* bytes the run's ordered ring buffer should have at least unless --ringbuf-size is
	 * given (NULL: no wish); asked before anything is opened */
	uint64_t (*ring_bytes)(const struct gp_run *run);
	int (*open)(struct gp_run *run, void **st, char *err, size_t len);
	/* probes on one more library file of a kind it needs (enum gp_lib) */
	int (*attach)(void *st, struct gp_run *run, enum gp_lib kind, const char *lib, char *err, size_t len);
	int (*start)(void *st, struct gp_run *run, char *err, size_t len);
	/* pid 0: every process; the snapshot is owned by st and valid until the next one. It
	 * reads and changes nothing else: taking one more changes no report or file */
	const struct gp_snap *(*snapshot)(void *st, struct gp_run *run, enum gp_snap_kind kind, uint32_t pid);
	/* optional: the files a report writes besides the run's output (--csv rows with each
	 * interval and final report, the --folded file with the final one), given the
	 * report's snapshot of pid (0: every process); called by the report (src/out/report.c)
	 * right after the snapshot is taken, before it is rendered */
	void (*report_files)(void *st, const struct gp_snap *s, uint32_t pid);
	/* the renderers: they read the snapshot only (its env for the run's settings) */
	void (*text)(FILE *f, const struct gp_snap *s);
	void (*json)(struct json_object *report, const struct gp_snap *s);
	int (*prom)(struct prom_out *p, const struct gp_snap *s);
	/* forgets exited processes: all reported ones (cutoff_ns UINT64_MAX) or those that
	 * exited before cutoff_ns, except keep_pid (0: none); BPF map entries too */
	void (*reap)(void *st, struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid);
	/* optional: the mode's counters now, each through emit(ctx, …), without changing what
	 * its reports will say (a --trace sample, a tick of gpuprobe top) */
	void (*counters)(void *st, struct gp_run *run, gp_counter_fn emit, void *ctx);
	/* end of the run, probes detached: last records, files closed; 0 or -errno */
	int (*finish)(void *st, struct gp_run *run, char *err, size_t len);
	void (*free)(void *st);
};

/* The table (src/modes/modes.c), NULL-terminated. */
extern const struct gp_mode *const gp_modes[];

const struct gp_mode *gp_mode__find(const char *name);

#endif
