/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --ioctl's aggregator, pure C: which character-device majors are nvidia's, names of
 * device nodes and ioctl commands (tables in src/nv_ioctls.def), and a snapshot of the
 * BPF counters grouped per process -> device node -> command.
 */
#ifndef GP_IOCTL_H
#define GP_IOCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "nv_ioctl.h"

enum ioc_kind {
	IOC_KIND_NV = 0,    /* /dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-modeset: NV_ESC_* */
	IOC_KIND_UVM = 1,   /* /dev/nvidia-uvm: UVM_* */
	IOC_KIND_OTHER = 2, /* nvlink, nvswitch, caps: numbers only */
	IOC_KIND_ANY = 3,   /* --ioctl-dev: try every table */
};

struct ioc_major {
	uint32_t major;
	int kind;      /* enum ioc_kind */
	char name[48]; /* the driver's name in /proc/devices, or --ioctl-dev's NAME */
};

/* The nvidia majors of a /proc/devices text ("Character devices:" section), at most max;
 * returns how many. Several names may share one major (nvidia and nvidiactl): one entry. */
int ioctl__parse_devices(FILE *f, struct ioc_major *out, int max);
/* Adds a major unless present (--ioctl-dev); returns the new count. */
int ioctl__add_major(struct ioc_major *m, int n, int max, uint32_t major, int kind, const char *name);

/* Decoded name of request cmd on a device of kind, or NULL. */
const char *ioctl__cmd_name(int kind, uint32_t cmd);
/* NV_ESC_RM_CONTROL's control command name, or NULL. */
const char *ioctl__ctrl_name(uint32_t ctrl_cmd);
bool ioctl__is_rm_control(uint32_t cmd);
/* "/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm", ...; "/dev/char/MAJ:MIN" else. */
void ioctl__node_name(const struct ioc_major *m, uint32_t minor, char *buf, size_t len);

struct ioc_cmd {
	uint32_t cmd, ctrl_cmd;
	const char *name, *ctrl_name; /* NULL: unknown, shown as numbers */
	struct gp_ioctl_stat st;
};

struct ioc_dev {
	uint32_t major, minor;
	char node[64];
	const char *driver;
	uint64_t calls, errors;
	struct ioc_cmd *cmds; /* by calls, descending */
	size_t nr_cmds;
};

struct ioc_proc {
	uint32_t pid;
	char comm[16];
	uint64_t calls, errors, decoded;
	struct ioc_dev *devs;
	size_t nr_devs;
};

struct ioctl_agg;

struct ioctl_agg *ioctl_agg__new(const struct ioc_major *majors, int n);
void ioctl_agg__free(struct ioctl_agg *a);
/* A snapshot: begin, add every (key, counters) row, end; then procs() until next begin. */
void ioctl_agg__begin(struct ioctl_agg *a);
int ioctl_agg__add(struct ioctl_agg *a, const struct gp_ioctl_key *k, const struct gp_ioctl_stat *st);
int ioctl_agg__end(struct ioctl_agg *a);
/* Processes by PID; comm is left empty for the caller to fill. */
size_t ioctl_agg__procs(struct ioctl_agg *a, struct ioc_proc **out);

#endif
