/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --gpu-time's records, from the libraries gpuprobe builds for the traced processes
 * (libgpuprobe_cupti.so: CUPTI's activity records; libgpuprobe_ncclprof.so: NCCL's
 * profiler plugin) to gpuprobe, one unix datagram at a time. A datagram is a header and
 * records, each starting with its type and its size in bytes; fixed records have exactly
 * their struct's size, a name its struct plus its bytes. No record names a process: the
 * sender is the one the kernel says sent the datagram (SCM_CREDENTIALS), so that a process
 * cannot put records on another. gpuprobe reads all of it as hostile input
 * (src/modes/gputime/gputime.c). Plain fixed-width fields, host byte order (one machine).
 */
#ifndef GP_GPUTIME_WIRE_H
#define GP_GPUTIME_WIRE_H

#include <stdint.h>

#define GPT_MAGIC 0x31545047u /* "GPT1" */
#define GPT_VERSION 1
#define GPT_DGRAM_MAX 8192 /* bytes in one datagram, header included; a longer one is refused */
#define GPT_NAME_MAX 512   /* bytes of a kernel's name (longer ones are cut there) */

/* the env of a process that sends: the inherited socket's number (a command gpuprobe
 * starts), else a socket path (a process started elsewhere, gpuprobe --gpu-time-socket) */
#define GPT_ENV_FD "GPUPROBE_GPUTIME_FD"
#define GPT_ENV_SOCK "GPUPROBE_GPUTIME_SOCK"
#define GPT_ENV_CUPTI "GPUPROBE_CUPTI_LIB" /* libcupti.so to dlopen, else the usual names */

enum gpt_source {
	GPT_SRC_CUPTI = 1,
	GPT_SRC_NCCL = 2,
};

enum gpt_type {
	GPT_HELLO = 1,  /* struct gpt_hello: a library started in this process */
	GPT_NAME = 2,   /* struct gpt_name + its bytes: a kernel name's id */
	GPT_KERNEL = 3, /* struct gpt_kernel */
	GPT_COPY = 4,   /* struct gpt_copy */
	GPT_MEMSET = 5, /* struct gpt_memset */
	GPT_COLL = 6,   /* struct gpt_coll: one NCCL collective */
	GPT_STATS = 7,  /* struct gpt_stats: the library's running counts */
	GPT__TYPES,
};

struct gpt_dgram {
	uint32_t magic;
	uint16_t version;
	uint16_t nrec;
};

struct gpt_rec {
	uint16_t type;
	uint16_t size;
	uint32_t _pad;
};

struct gpt_hello {
	struct gpt_rec h;
	uint32_t source; /* enum gpt_source */
	uint32_t _pad;
	uint64_t src_ts;  /* the source's clock (CUPTI's timestamp) ... */
	uint64_t mono_ns; /* ... and CLOCK_MONOTONIC at the same moment */
};

struct gpt_name {
	struct gpt_rec h;
	uint32_t id;
	uint32_t len; /* bytes that follow, no NUL */
};

struct gpt_kernel {
	struct gpt_rec h;
	uint64_t start, end; /* GPU ns (the source's clock) */
	uint32_t name_id;
	uint32_t grid[3], block[3];
	uint32_t device, stream, corr;
};

/* copy kinds, as CUPTI's CUpti_ActivityMemcpyKind */
enum gpt_copy_kind {
	GPT_COPY_UNKNOWN = 0, GPT_COPY_HTOD = 1, GPT_COPY_DTOH = 2, GPT_COPY_HTOA = 3,
	GPT_COPY_ATOH = 4, GPT_COPY_ATOA = 5, GPT_COPY_ATOD = 6, GPT_COPY_DTOA = 7,
	GPT_COPY_DTOD = 8, GPT_COPY_HTOH = 9, GPT_COPY_PTOP = 10, GPT_COPY__KINDS,
};

#define GPT_NO_DEVICE 0xffffffffu

struct gpt_copy {
	struct gpt_rec h;
	uint64_t start, end, bytes;
	uint32_t kind; /* enum gpt_copy_kind */
	uint32_t device, src_dev, dst_dev; /* src/dst: GPT_NO_DEVICE unless a peer copy */
	uint32_t stream, corr;
};

struct gpt_memset {
	struct gpt_rec h;
	uint64_t start, end, bytes;
	uint32_t device, stream, corr, _pad;
};

/* NCCL collectives, nccl-tests' names */
enum gpt_coll_fn {
	GPT_COLL_OTHER = 0, GPT_COLL_ALLREDUCE, GPT_COLL_ALLGATHER, GPT_COLL_REDUCESCATTER,
	GPT_COLL_BROADCAST, GPT_COLL_REDUCE, GPT_COLL_ALLTOALL, GPT_COLL__FNS,
};

struct gpt_coll {
	struct gpt_rec h;
	uint64_t comm_hash;
	uint64_t start, end; /* ns: GPU (globaltimer) when gpu_timed, else the host's CLOCK_MONOTONIC */
	uint64_t count;      /* elements, as the call gave them */
	uint32_t fn;         /* enum gpt_coll_fn */
	uint32_t type_size;  /* bytes an element */
	uint32_t nranks, rank;
	uint32_t gpu_timed;  /* 1: the kernel channels' GPU timers; 0: the host's start and stop */
	uint32_t channels;   /* kernel channels timed */
};

struct gpt_stats {
	struct gpt_rec h;
	uint32_t source; /* enum gpt_source */
	uint32_t _pad;
	uint64_t records;      /* records the source gave the library */
	uint64_t sent;         /* records sent */
	uint64_t send_dropped; /* records not sent: gpuprobe gone, its socket full */
	uint64_t src_dropped;  /* records the source says it lost (CUPTI's dropped records) */
	uint64_t unknown;      /* records of a kind the library does not read */
};

#endif
