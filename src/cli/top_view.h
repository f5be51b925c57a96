/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What `gpuprobe top` shows, as plain data and text lines, apart from the terminal: a
 * frame is built from one tick's counter rows (src/core/counters.h, the tracks of
 * src/core/mode.h: no mode is named) and the processes' probe hits, sorted by a column,
 * and laid out into lines of a given width and height (80x24 and up). Unit-tested
 * without a terminal; src/cli/top.c draws the lines with ncurses or prints them (--batch).
 */
#ifndef GP_TOP_VIEW_H
#define GP_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/counters.h"
#include "gpuprobe.h"
#include "core/mode.h"
#include "core/nvml.h"

enum top_col { TOP_PID, TOP_COMM, TOP_LAUNCHES, TOP_MEMORY, TOP_GROWTH, TOP_H2D, TOP_D2H, TOP_PROBE, TOP_SM, TOP__COLS };

/* "pid|comm|launches|memory|growth|h2d|d2h|probe|sm": --sort's choices, in enum order */
#define TOP_SORT_CHOICES "pid|comm|launches|memory|growth|h2d|d2h|probe|sm"

struct top_kernel {
	const char *name; /* the counter row's: valid until the next tick */
	double rate, total; /* runs: launched + run inside graph launches */
};

/* One direction of copies on one GPU ("H2D gpu0"; "H2H" has none). */
struct top_copy {
	char dir[8];
	int gpu; /* -1: none (H2H) or unknown */
	double rate, total;
};

struct top_proc {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	bool exited;
	/* the S column: X exited (its final figures), else the process's state as ps shows
	 * it (R, S, D...; top.c reads it), '?' where unknown */
	char state;
	/* kernel launches (as --cudatrace counts them: graph launches apart), per second over
	 * the last tick and since first seen; graph launches the same */
	double launch_rate, launches;
	double graph_rate, graph_launches;
	bool has_memory;
	bool memory_at_exit;          /* memory is what it held when it exited */
	double memory, growth;        /* outstanding bytes; their change per second */
	double h2d, d2h;              /* bytes per second, every GPU */
	bool has_copies;
	double hits, probe_pct;       /* probe hits so far; % of one CPU in probes (estimate) */
	struct top_kernel *kernels;   /* busiest (last tick) first, then by total */
	size_t nr_kernels;
	struct top_copy *copies;      /* by GPU, then direction */
	size_t nr_copies;
	/* NVML (top_frame__nvml): SM utilization over NVML's last interval, summed over the
	 * GPUs the process uses (as top sums CPUs); sm_known false: NVML gave no figure for
	 * it ("-", never 0) */
	bool sm_known;
	double sm;
	unsigned int nvml_gpus;       /* GPUs NVML lists it on */
	int mig_gpu;                  /* a GPU it is on in MIG mode (no per-process figure), or -1 */
	bool has_driver_memory;
	double driver_memory;         /* GPU memory the driver accounts to it, every GPU */
	/* --nccl: its ranks' calls in flight; the longest any of its ranks with calls in
	 * flight has gone without a completion (stall_of: "comm 0x... rank r"); the longest
	 * the other ranks of a collective have waited for one of its ranks to enter it */
	bool has_nccl;
	double nccl_inflight, nccl_stall, nccl_wait;
	char nccl_stall_of[64], nccl_wait_of[64];
};

struct top_frame {
	char who[160];     /* what is traced: "every CUDA process", "PID 42 and ..." */
	char clock[16];    /* HH:MM:SS */
	double dt;         /* seconds the rates are over */
	double cost;       /* seconds per probe hit (< 0: not calibrated) */
	double hit_rate;   /* probe hits per second, every process */
	char drops[160];   /* "none", or what dropped anything: "memleak 3, counter series 2" */
	uint64_t dropped;  /* all of them (what the title shows where drops does not fit) */
	bool ended;        /* the traced processes ended: the figures are final */
	struct top_proc *procs;
	size_t nr_procs;
	/* NVML: shown (the SM% column and a line per GPU) when top reads it; nvml_state is
	 * enum gp_nvml_state, nvml_why its reason when not loaded */
	bool nvml;
	int nvml_state;
	char nvml_why[256];
	struct gp_nvml_gpu *gpus;
	unsigned int nr_gpus;
};

/* Builds f from a tick's counter rows (sorted as gp_counters__end gives them; the
 * "probe hits" track of top's own holds each process's hits) and the processes' names
 * (pids: the run's, any order), over dt seconds. 0 or -ENOMEM. */
int top_frame__build(struct top_frame *f, const struct gp_counter_row *rows, size_t n,
		     const struct gp_snap_pid *pids, size_t nr_pids, double dt, double cost);
void top_frame__clear(struct top_frame *f);
/* NVML's last read into f (after top_frame__build): each process's SM utilization and
 * driver memory, the GPUs' figures; s NULL: no NVML shown. 0 or -ENOMEM. */
int top_frame__nvml(struct top_frame *f, const struct gp_nvml_snap *s);
void top_frame__sort(struct top_frame *f, enum top_col col, bool reverse);

/* A rank named on top's NCCL line: in flight with no completion, or waited for, this long. */
#define TOP_NCCL_ALERT_S 1.0

/* The longest line the layout writes (wider terminals get no more). */
#define TOP_MAX_WIDTH 240

enum top_attr { TOP_TEXT, TOP_TITLE, TOP_HEADER, TOP_SELECTED, TOP_EXITED /* a row of final figures */ };

struct top_line {
	char text[TOP_MAX_WIDTH + 1];
	enum top_attr attr;
};

/* The screen: header, the process table (sorted by col, the selected row marked), the
 * selected process's kernels and copies, the keys. width >= 80 is best (every line fits
 * it: COMM narrows, long detail lines wrap), height 0 means as long as it takes (--batch:
 * every process's detail, no keys). Returns the number of lines written to lines (max). */
size_t top__layout(const struct top_frame *f, int width, int height, enum top_col col, bool reverse,
		   size_t selected, struct top_line *lines, size_t max);

/* The track of top's own for each process's probe hits (a running total). */
#define TOP_TRACK_HITS "probe hits"

#endif
