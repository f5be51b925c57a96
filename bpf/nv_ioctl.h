/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --ioctl's records and BPF maps, shared by bpf/nv_ioctl.bpf.c and src/modes/ioctl: the
 * per-ioctl record (struct gp_ioctl_event, only for --trace's timeline) and the aggregates
 * that never cross the ring buffer.
 */
#ifndef GP_NV_IOCTL_H
#define GP_NV_IOCTL_H

#include "gpuprobe.h"

#define GP_IOCTL_MAX_MAJORS 16

/* --ioctl: one ioctl on an nvidia device node, sent only when --trace wants a timeline
 * (the aggregates live in BPF maps). */
struct gp_ioctl_event {
	__u32 type; /* GP_EV_IOCTL */
	__u32 pid;
	__u32 tid;
	__u32 cmd;      /* the ioctl request number */
	__u64 ts_ns;    /* entry */
	__u64 dur_ns;
	__s64 ret;
	__u32 major, minor;
	__u32 ctrl_cmd; /* NV_ESC_RM_CONTROL: the control command in its parameters, else 0 */
	__u32 _pad;
};

/* One counter per process, device node and decoded command. */
struct gp_ioctl_key {
	__u32 pid; /* tgid */
	__u32 major, minor;
	__u32 cmd;      /* the ioctl request number */
	__u32 ctrl_cmd; /* NV_ESC_RM_CONTROL: NVOS54_PARAMETERS.cmd, else 0 */
	__u32 _pad;
};

struct gp_ioctl_stat {
	__u64 calls;
	__u64 errors; /* negative returns */
	__u64 total_ns;
	__u64 max_ns;
	__u64 slots[GP_HIST_SLOTS]; /* log2 of microseconds */
};

/* BPF .bss counters of nv_ioctl.bpf.c */
enum gp_idrop {
	GP_IDROP_KEYS = 0,      /* counter table full: ioctls not counted */
	GP_IDROP_PENDING = 1,   /* entry table full: ioctls not seen */
	GP_IDROP_RINGBUF = 2,   /* emit_events: record lost */
	GP_IDROP_PROCS = 3,     /* process-name table full (counted, named by /proc) */
	GP_IDROP_CTRL_READ = 4, /* RM_CONTROL parameters unreadable: ctrl_cmd 0 */
	GP_IDROP_SHARE = 5,     /* the caller's process or user held its share of the entry table */
	GP_IDROP__COUNT,
};

/* The NV_ESC_RM_CONTROL request is _IOWR('F', 0x2A, sizeof(NVOS54_PARAMETERS)) */
#define GP_NV_IOCTL_TYPE 0x46 /* 'F' */
#define GP_NV_ESC_RM_CONTROL 0x2A
#define GP_NVOS54_CMD_OFFSET 8

#endif
