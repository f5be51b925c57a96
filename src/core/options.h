/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The settings every mode may read, whatever the front end: output, target, limits of the
 * BPF tables, the daemon's endpoint. A mode's own settings live with the mode (its
 * struct gp_option table); the defaults of both are written once, where they are stored.
 */
#ifndef GP_OPTIONS_H
#define GP_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define GP_MAX_PIDS 256

struct gp_opts {
	unsigned int frontend;  /* enum gp_frontend of the running front end */
	uint64_t modes;         /* bit i: gp_modes[i] enabled */
	bool json, verbose;
	/* target (CLI) */
	int pids[GP_MAX_PIDS];  /* -p PID[,PID...] (repeatable) */
	int nr_pids;
	bool tree;              /* --tree: the -p processes' descendants too */
	const char *comm;       /* --comm: node-wide, processes with this name */
	const char *cgroup;     /* --cgroup: node-wide, processes in this cgroup v2 subtree */
	char **cmd;             /* the command after the options, or NULL */
	const char *libcuda;    /* --libcuda: probe this file instead of discovering them */
	const char *libnccl;    /* --libnccl (--nccl's): likewise for libnccl */
	/* reports (CLI) */
	double interval, duration;
	/* --trace FILE: the timeline every mode with lanes writes to */
	const char *trace;
	int trace_format;       /* 0 jsonl, 1 chrome */
	double trace_counters;  /* --trace-counters: seconds between counter samples; 0: none */
	/* BPF table limits, every mode */
	uint64_t ringbuf_size, max_pending, max_procs;
	bool ringbuf_set;       /* --ringbuf-size given */
	/* --max-overhead: the share of a process's time the probes may take, in percent
	 * (src/core/budget.h); -1: the front end's default (the daemon's 1, the CLI's none) */
	double max_overhead;
	/* gpuprobe daemon */
	const char *listen;
	double retention, rescan, probe_cost;
	const char *web_config;      /* --web-config: TLS and basic auth (src/out/webconfig.h) */
	const char *config;          /* --config: the options file read before the command line */
	const char *kubelet_log_dir; /* holds pods/ and containers/: pod and container names */
	bool per_process;            /* --per-process-series: a pid label on per-process series */
	uint64_t max_process_series; /* of those, how many processes at a time */
	uint64_t max_label_sets;     /* process label sets with series of their own (0: no cap) */
	uint64_t max_label_sets_per_cgroup; /* of those, one cgroup's share (0: no cap) */
	/* NVML (src/core/nvml.h): --nvml 1, --no-nvml 0, -1 the front end's default (the
	 * daemon's on where the library loads, the CLI's off); seconds between its reads */
	int nvml;
	double nvml_period;
};

/* The one set of settings of this process, with its defaults (src/cli/options.c). */
extern struct gp_opts gp_opts;

#endif
