/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every reason gpuprobe counts a lost or unaccounted event for, named once: the runtime and
 * the modes count by these, and src/out/drops.h prints their names in the text reports, the
 * JSON reports ("drops") and /metrics (gpuprobe_events_dropped_total's reason label). A
 * mode maps its BPF .bss counters onto them.
 */
#ifndef GP_REASONS_H
#define GP_REASONS_H

#include <stdbool.h>

enum gp_reason {
	GP_R_RINGBUF_FULL,         /* bpf_ringbuf_reserve failed: a record was lost */
	GP_R_PENDING_TABLE_FULL,   /* the entry->return table was full: a call not seen */
	GP_R_RETURN_WITHOUT_ENTRY, /* a return probe found no entry record */
	GP_R_STACK_UNREADABLE,     /* a user stack could not be read (the event still counts) */
	GP_R_PROCESS_TABLE_FULL,   /* the BPF table of traced processes was full: an exit unseen */
	GP_R_ALLOCATION_TABLE_FULL, /* --max-allocs reached: allocations not tracked */
	GP_R_LAUNCH_TABLE_FULL,    /* --max-launch-keys reached: launches not counted */
	GP_R_ALLOCATION_RECORDS_LOST, /* allocation records lost: unified copies may be misclassified */
	GP_R_COUNTER_TABLE_FULL,   /* an in-kernel counter table was full: calls not counted */
	GP_R_PROCESS_NAME_TABLE_FULL, /* names read from /proc instead */
	GP_R_CONTROL_PARAMS_UNREADABLE, /* RM control parameters unreadable */
	GP_R_NESTED_TOO_DEEP,      /* --trace: calls nested deeper than the per-thread stack */
	GP_R_MALFORMED_RECORD,     /* a record of unknown type or size (a bug if non-zero) */
	GP_R_PROCESS_RECORDS_LOST, /* a fork/exec/exit record lost: an exec's images not told apart */
	GP_R_FOLLOWED_TABLE_FULL,  /* --max-procs followed processes: a child not followed */
	GP_R_GRAPH_TABLE_FULL,     /* a capture, graph or graph version not followed: kernels of graph launches not counted */
	GP_R_NCCL_COMM_TABLE_FULL, /* --nccl: a process's communicators past the table's size */
	GP_R_PENDING_SHARE_FULL,   /* a process or user held its share of the entry->return table */
	GP_R_PYTHON_CODE_LOST,     /* a code object's copy lost: its frames named only while it lives */
	GP_R_GPUTIME_REFUSED,      /* --gpu-time: a datagram or record refused (oversized, malformed, no sender) */
	GP_R_GPUTIME_FLOOD,        /* --gpu-time: datagrams past a process's share of one read */
	GP_R_GPUTIME_CAPS,         /* --gpu-time: records past the process table's or a process's caps */
	GP_R_GPUTIME_NOT_SENT,     /* --gpu-time: records a traced process's library could not send */
	GP_R_GPUTIME_SOURCE_LOST,  /* --gpu-time: records CUPTI says it lost (its buffers full) */
	GP_R__COUNT,
};

/* "ringbuf_full", ... */
const char *gp_reason_name(int reason);
/* Whether the reason loses an event of the mode (added up in dropped_events), or only
 * degrades one (a stack, a name, an exit seen late). */
bool gp_reason_loses(int reason);

#endif
