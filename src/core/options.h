/* SPDX-License-Identifier: BSD-3-Clause */
/* Command-line settings shared by the modes. */
#ifndef GP_OPTIONS_H
#define GP_OPTIONS_H

#include <stdbool.h>
#include <sys/types.h>

struct gp_opts {
	bool memleak, cudatrace, bandwidth;
	bool json, verbose, stacks, latency;
	int pid;
	const char *libcuda;
	double interval, duration;
	int top, top_shapes;
	unsigned long ringbuf_size, max_pending, max_procs, max_allocs, max_launch_keys;
	unsigned long long min_bytes;
	const char *csv;
	const char *trace;        /* --trace FILE */
	int trace_chrome;         /* --trace-format chrome */
	const char *trace_filter[32];
	int nr_trace_filter;
	bool ringbuf_set;         /* --ringbuf-size given */
	char **cmd;
	pid_t child_pid; /* the command gpuprobe started, once forked */
	bool quiet; /* gpuprobe daemon: no per-exit reports on stdout */
	/* --ioctl */
	bool ioctl;
	const char *ioctl_backend; /* "kprobe", "tracepoint", or NULL: probe */
	int nr_ioctl_devs;         /* --ioctl-dev MAJOR[:NAME] (tests) */
	unsigned int ioctl_dev_major[8];
	const char *ioctl_dev_name[8];
};

#endif
