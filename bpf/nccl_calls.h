/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The records of bpf/nccl.bpf.c (--nccl): one per NCCL call. Not "nccl.h": that name is
 * src/modes/nccl's own header, which the compiler would find first.
 */
#ifndef GP_NCCL_CALLS_H
#define GP_NCCL_CALLS_H

#include "gpuprobe.h"

/* --nccl: which NCCL entry point made a call (the attach cookie), from the one list
 * (bpf/nccl_fns.def), which also names them. */
enum gp_nccl_fn {
	GP_NCCL_NONE = 0,
#define GP_NCCL_FN(name) GP_NCCL_##name,
#include "nccl_fns.def"
	GP_NCCL__COUNT,
};

#define GP_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */
/* ncclCommInitAll: the communicators made, comms[0..], its record carries in id[] */
#define GP_NCCL_INIT_ALL_MAX (GP_NCCL_ID_BYTES / 8)

/*
 * One NCCL call, entry to return, decoded by entry point in BPF (x86-64 ABI: the 128-byte
 * ncclUniqueId of ncclCommInitRank* is passed by value on the stack, so `rank` is the third
 * integer argument; the seventh and eighth arguments are on the stack).
 */
struct gp_nccl_event {
	__u32 type; /* GP_EV_NCCL */
	__u32 fn;   /* enum gp_nccl_fn */
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;  /* entry */
	__u64 dur_ns; /* entry to return: the API time */
	__u64 ret;    /* ncclResult_t */
	__u64 comm;   /* the communicator argument (the parent for a split or shrink) */
	__u64 newcomm; /* init, split, shrink: the communicator made (*newcomm at return) */
	__u64 count;  /* elements; shrink: excluded ranks */
	__u64 stream;
	__s32 dtype;  /* ncclDataType_t, -1 where the call has none */
	__s32 redop;  /* ncclRedOp_t, -1 where none */
	__s32 peer;   /* send/recv: the peer; rooted collectives: the root; -1 */
	__s32 nranks; /* init: nranks (ncclCommInitAll: ndev) */
	__s32 rank;   /* init: rank */
	__s32 color, key; /* split */
	__s32 out;    /* ncclCommCount/CuDevice/UserRank: *out at return */
	__u32 depth;  /* NCCL calls of this thread in flight around it: 0 for a call of the
		       * program, >0 for one NCCL made itself (counted once, as the outer) */
	__u32 img;    /* the process image (gp_image()) */
	__u32 id_len; /* bytes of id[] read (0: none or unreadable) */
	__u32 _pad;
	char comm_name[GP_COMM_LEN];
	/* init: the ncclUniqueId; shrink: the excluded ranks (int32 each); ncclCommInitAll:
	 * the first GP_NCCL_INIT_ALL_MAX communicators made (8 bytes each) */
	__u8 id[GP_NCCL_ID_BYTES];
};

/* BPF .bss counters of nccl.bpf.c */
enum gp_ndrop {
	GP_NDROP_RINGBUF = 0,  /* call records lost */
	GP_NDROP_PENDING = 1,  /* entry->return table full: a call not seen */
	GP_NDROP_NORETURN = 2, /* a return without its entry (in flight at attach) */
	GP_NDROP_TOO_DEEP = 3, /* NCCL calls nested deeper than the per-thread stack */
	GP_NDROP_PROCS = 4,    /* the NCCL process table was full: its syncs go unseen */
	GP_NDROP_SHARE = 5,    /* the caller's process or user held its share of a table */
	GP_NDROP__COUNT,
};

#endif /* GP_NCCL_CALLS_H */
