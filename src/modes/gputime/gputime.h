/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --gpu-time's aggregator: the datagrams of the libraries gpuprobe builds for the traced
 * processes (src/inject/gputime_wire.h), each read as hostile input and credited to the
 * process the kernel says sent it. Per process: GPU time per kernel name and launch shape,
 * copies per direction and GPU pair (their achieved bandwidth), memsets per GPU, NCCL
 * collectives per communicator, rank, function and size (time, algorithm and bus
 * bandwidth as nccl-tests defines them). Every record refused is counted by its reason.
 * Pure C: tests/unit/test_gputime.c feeds it datagrams.
 */
#ifndef GP_GPUTIME_H
#define GP_GPUTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"

/* what is refused, run-wide */
enum gt_drop {
	GT_D_OVERSIZED,  /* a datagram longer than GPT_DGRAM_MAX */
	GT_D_MALFORMED,  /* a datagram or record of a wrong magic, version, type or size */
	GT_D_NO_CREDS,   /* a datagram without the sender's credentials */
	GT_D_FLOOD,      /* datagrams past a process's share of one read */
	GT_D_PROCS,      /* processes past the table's cap: their records */
	GT_D_ROWS,       /* records past a process's caps (rows, names) */
	GT_D_BAD_TIME,   /* a record that ends before it starts, or lasts over an hour */
	GT_D_CONN,       /* connections past their user's share of the sockets' (refused) */
	GT_D_NOT_FOLLOWED, /* datagrams of a process the run does not follow (refused) */
	GT_D__COUNT,
};

struct gt_limits {
	uint32_t max_procs; /* processes with records */
	uint32_t max_rows;  /* kernel, copy, memset and collective rows, each kind, a process */
	uint32_t max_names; /* kernel names a process */
};

struct gt_kernel_snap {
	uint32_t pid;
	const char *name; /* NULL: the library named it by an id never sent */
	uint32_t name_id;
	uint32_t grid[3], block[3];
	uint64_t count, total_ns, min_ns, max_ns;
};

struct gt_copy_snap {
	uint32_t pid;
	uint32_t kind; /* enum gpt_copy_kind */
	uint32_t device, src_dev, dst_dev;
	uint64_t count, bytes, total_ns;
	double peak_gbps; /* the fastest copy's */
};

struct gt_memset_snap {
	uint32_t pid, device;
	uint64_t count, bytes, total_ns;
};

struct gt_coll_snap {
	uint32_t pid;
	uint64_t comm_hash;
	uint32_t rank, nranks, fn, type_size;
	uint64_t count;      /* elements a call */
	uint64_t size;       /* bytes, as nccl-tests' size (0: unknown element size) */
	uint64_t calls, gpu_calls, total_ns, min_ns;
	double algbw_gbps, busbw_gbps, best_busbw_gbps; /* 0 when size is unknown */
};

struct gt_lib_snap {
	bool seen; /* its hello arrived */
	uint64_t records, sent, send_dropped, src_dropped, unknown;
};

struct gt_proc_snap {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	bool unnamed, exited;
	uint64_t exit_ns;
	uint64_t datagrams, records;
	uint64_t kernels, kernel_ns, copies, copy_bytes, copy_ns, memsets, colls;
	uint64_t unnamed_kernels; /* kernel records whose name id was never sent */
	struct gt_lib_snap lib[3]; /* by enum gpt_source */
};

struct gt_snap_data {
	struct gt_proc_snap *procs;
	size_t nr_procs;
	struct gt_kernel_snap *kernels; /* GPU time, most first */
	size_t nr_kernels;
	struct gt_copy_snap *copies;
	size_t nr_copies;
	struct gt_memset_snap *memsets;
	size_t nr_memsets;
	struct gt_coll_snap *colls;
	size_t nr_colls;
	uint64_t drops[GT_D__COUNT];
	size_t cap_procs, cap_kernels, cap_copies, cap_memsets, cap_colls; /* room (internal) */
};

struct gt_agg;

/* One record of GPU work as it arrives, its times on CLOCK_MONOTONIC (the library's hello
 * gave the offset; records before it are not passed): for a timeline. */
struct gt_event {
	uint32_t pid;
	uint32_t type;       /* GPT_KERNEL, GPT_COPY, GPT_MEMSET */
	const char *name;    /* the kernel's (NULL: unknown), else NULL */
	uint64_t start_ns, dur_ns;
	uint32_t device, stream, grid[3], block[3], copy_kind, src_dev, dst_dev;
	uint64_t bytes;
};
typedef void (*gt_event_fn)(void *ctx, const struct gt_event *e);

struct gt_agg *gt_agg__new(const struct gt_limits *lim);
void gt_agg__free(struct gt_agg *a);
/* fn gets every kernel, copy and memset record from now on (NULL: none). */
void gt_agg__on_event(struct gt_agg *a, gt_event_fn fn, void *ctx);
/* One datagram of len bytes from pid (len: what arrived, the buffer holds it). */
void gt_agg__feed(struct gt_agg *a, uint32_t pid, const void *buf, size_t len);
/* Whether pid may have one more datagram in this read (share of budget), counting a flood. */
bool gt_agg__admit(struct gt_agg *a, uint32_t pid, uint32_t share);
/* A new read: every process's share is whole again. */
void gt_agg__new_read(struct gt_agg *a);
void gt_agg__drop(struct gt_agg *a, enum gt_drop why, uint64_t n);
/* pid's name (first one kept unless empty). */
void gt_agg__name(struct gt_agg *a, uint32_t pid, const char *comm);
void gt_agg__exit(struct gt_agg *a, uint32_t pid, uint64_t ts_ns);
/* Every process (pid 0) or one, into out (its arrays reused, owned by out). 0 or -ENOMEM. */
int gt_agg__snapshot(struct gt_agg *a, uint32_t pid, struct gt_snap_data *out);
void gt_snap_data__clear(struct gt_snap_data *d);
/* Forgets processes that exited before cutoff_ns (UINT64_MAX: all exited) but keep_pid. */
void gt_agg__reap(struct gt_agg *a, uint64_t cutoff_ns, uint32_t keep_pid);

/* nccl-tests' size of a call (bytes) and bus-bandwidth factor */
uint64_t gt_coll_size(uint32_t fn, uint64_t count, uint32_t type_size, uint32_t nranks);
double gt_busbw_factor(uint32_t fn, uint32_t nranks);
const char *gt_coll_name(uint32_t fn);
const char *gt_copy_kind_name(uint32_t kind);
const char *gt_drop_name(enum gt_drop d);

#endif
