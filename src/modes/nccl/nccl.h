/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --nccl aggregation, pure C over bpf/nccl.bpf.c's records: per process (a rank) and
 * communicator, the collectives per op and data type (calls, bytes = count x the type's
 * size, API time) and the point-to-point calls per peer and direction; communicators
 * identified by a hash of the ncclUniqueId their init got (equal on every rank), a split's or
 * shrink's from its parent's; the device from the thread's current context at the init; the
 * completion of each call from the first synchronization that covers its stream (an upper
 * bound of its time, from which algorithm and bus bandwidth lower bounds, nccl-tests'
 * definitions); and, across the processes traced, a rank x rank matrix per communicator of
 * the point-to-point bytes (measured) and of the collective bytes a ring in rank order
 * implies (inferred).
 */
#ifndef GP_NCCL_H
#define GP_NCCL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"
#include "nccl_calls.h"

#define NCCL_NTYPES 12     /* ncclInt8 .. ncclFloat8e5m2 (NCCL 2.24+) */
#define NCCL_MATRIX_MAX 64 /* ranks of a communicator for which a matrix is kept */
#define NCCL_MAX_COMMS 256 /* communicators kept per process */
#define NCCL_SIZE_SLOTS 48 /* log2 size buckets */
/* Matching the n-th collective of each rank of a communicator on this node (stragglers):
 * the recent collectives kept per communicator, the communicators matched (every process
 * together) and of them the ones one process may open, the ranks a communicator may have
 * to be matched (a bit each), the log2-microsecond slots of the entry skew. */
#define NCCL_MATCH_RING 64
#define NCCL_MATCH_MAX 256
#define NCCL_MATCH_SHARE 16
#define NCCL_MATCH_RANKS 64
#define NCCL_SKEW_SLOTS 32
#define NCCL_INIT_ALL_MAX GP_NCCL_INIT_ALL_MAX /* ncclCommInitAll: the communicators a record carries */

/* enum cu_sync's completion signals */
enum nccl_sync {
	NCCL_SYNC_STREAM,
	NCCL_SYNC_CONTEXT,
	NCCL_SYNC_EVENT,
	NCCL_SYNC_STREAM_QUERY,
	NCCL_SYNC_EVENT_QUERY,
	NCCL_SYNC_ELAPSED,
	NCCL_SYNC__COUNT
};
enum nccl_bad { NCCL_BAD_NULL_COMM, NCCL_BAD_DESTROYED_COMM, NCCL_BAD_UNKNOWN_DTYPE, NCCL_BAD__COUNT };

/* Where a communicator's shape (nranks, rank) came from. */
enum nccl_shape {
	NCCL_SHAPE_UNKNOWN,
	NCCL_SHAPE_INIT,  /* the init's arguments */
	NCCL_SHAPE_QUERY, /* ncclCommCount / ncclCommUserRank returned it */
	NCCL_SHAPE_SPLIT, /* inferred from the (color, key) of every rank's ncclCommSplit, as the
			   * last is seen (or at the snapshot, for a split no table held) */
	NCCL_SHAPE_SHRINK, /* the parent's, less the excluded ranks */
};

struct nccl_coll {
	int fn;    /* enum gp_nccl_fn */
	int dtype; /* ncclDataType_t; -1: not one NCCL has */
	uint64_t calls, bytes, api_ns;
};

struct nccl_p2p {
	int peer;
	bool send;
	uint64_t calls, bytes, api_ns;
};

/* Calls of one op and size bucket completed by covering synchronizations. */
struct nccl_time {
	int fn;
	int slot;        /* floor(log2(size)) of the nccl-tests size */
	uint64_t calls;
	uint64_t size;   /* nccl-tests' "size": what algbw divides (AllGather: all ranks' data) */
	uint64_t window_ns; /* first submission to the sync, summed over batches: upper bound */
	double bus_factor;  /* nccl-tests' busbw / algbw for the communicator; 0: nranks unknown */
	uint64_t by[NCCL_SYNC__COUNT];
	/* per signal: the size and windows of the batches it completed (each a bound) */
	uint64_t size_by[NCCL_SYNC__COUNT], ns_by[NCCL_SYNC__COUNT];
	uint64_t window_hist[NCCL_SIZE_SLOTS]; /* per completed batch: log2 MB/s of algbw */
	/* calls on one stream between two CUDA events, over the GPU's time between them
	 * (cuEventElapsedTime): algbw from the GPU's clock */
	uint64_t event_size, event_ns, event_windows;
};

struct nccl_comm_snap {
	uint64_t handle;
	bool id_known;
	uint64_t id;     /* comm_id */
	int nranks, rank, device; /* -1: unknown */
	enum nccl_shape shape;
	int made_by;     /* enum gp_nccl_fn of the init; GP_NCCL_NONE: made before gpuprobe saw it */
	bool parent_known;
	uint64_t parent_id;
	int color, key;
	bool destroyed;
	size_t nr_colls, nr_p2p, nr_times;
	struct nccl_coll *colls;
	struct nccl_p2p *p2p;
	struct nccl_time *times;
	uint64_t unattributed_bytes; /* sent while the rank or nranks was unknown: not in a matrix */
	/* this rank's rows of its communicator's matrices, [nranks] when 0 < nranks <=
	 * NCCL_MATRIX_MAX (else NULL): bytes it sent to each rank, measured (ncclSend) and
	 * inferred (a ring in rank order for the collectives) */
	uint64_t *p2p_row, *ring_row;
	/* a split's place in its parent: for its shape when only every rank's split says it */
	int split_seq, parent_rank, parent_nranks;
	/* hangs: the calls put on a stream (collectives and point-to-point calls with data)
	 * and those a completion signal has covered since; in flight: the difference */
	uint64_t issued, completed;
	/* CLOCK_MONOTONIC, 0: none yet: the last completion signal; the call that found
	 * nothing in flight (the oldest in flight, while any is) */
	uint64_t last_done_ns, busy_since_ns;
	/* stragglers: collectives entered (the sequence matched across the ranks), and of
	 * those matched on this node, the ones this rank entered last and by how much */
	uint64_t entered, last_to_enter, lag_ns, lag_max_ns;
};

/* One communicator's collectives matched across its ranks on this node, by their order. */
struct nccl_straggle {
	uint64_t id;
	int nranks;
	uint64_t local;   /* bit r: rank r is one of the processes traced (its init seen) */
	uint32_t pid[NCCL_MATCH_RANKS]; /* the process of each local rank; 0: none */
	uint64_t matched; /* collectives every local rank entered */
	uint64_t evicted; /* left the ring before every local rank entered */
	uint64_t late;    /* a rank's entry after its collective left the ring */
	uint64_t duplicate; /* a second entry of one rank into one collective (two processes claim it) */
	uint64_t skew_sum_ns, skew_max_ns, last_skew_ns; /* first to last entry, per matched collective */
	int last_straggler; /* the rank last into the newest matched collective; -1 none */
	uint64_t skew_hist[NCCL_SKEW_SLOTS]; /* log2 us */
	uint64_t last_to_enter[NCCL_MATCH_RANKS], lag_ns[NCCL_MATCH_RANKS], lag_max_ns[NCCL_MATCH_RANKS];
	/* the oldest collective some local rank entered and another has not: its number, the
	 * ranks it waits for, when its first rank entered (0: none waiting) */
	uint64_t wait_seq, wait_missing, wait_since_ns;
	int wait_entered;
};

struct nccl_proc_snap {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	bool unnamed; /* gp_snap_pid's */
	bool exited, exec;
	uint64_t exit_ns; /* when it exited (CLOCK_MONOTONIC) */
	size_t nr_comms;
	struct nccl_comm_snap *comms;
	uint64_t groups;          /* outermost ncclGroupStart/ncclGroupEnd pairs */
	uint64_t bad[NCCL_BAD__COUNT];
	uint64_t failed;          /* calls that returned an error (the bad ones among them) */
	uint64_t nested;          /* calls NCCL made itself, inside one of the program's */
	uint64_t other;           /* ncclCommInitAll: its communicators are not followed */
	uint64_t unsynced;        /* calls no synchronization has covered yet */
	uint64_t calls;           /* every NCCL call of the program seen */
};

/* One communicator across the processes traced: its ranks' rows. */
struct nccl_matrix {
	uint64_t id;
	int nranks;
	uint32_t *pid;   /* [nranks] the process of each rank seen, 0: not traced */
	uint64_t *p2p;   /* [nranks * nranks] bytes rank r sent to rank c: its ncclSend calls */
	uint64_t *ring;  /* [nranks * nranks] collective bytes a ring in rank order implies */
};

struct nccl_snap_data {
	size_t nr_procs;
	struct nccl_proc_snap *procs; /* live first, by PID */
	size_t nr_matrices;
	struct nccl_matrix *matrices; /* by comm_id */
	uint64_t comm_table_full;     /* communicators not kept (NCCL_MAX_COMMS a process) */
	size_t nr_straggles;
	struct nccl_straggle *straggles; /* by comm_id */
	/* ranks of communicators (one per process and communicator) not matched: the table
	 * full, a process past its share, more ranks than NCCL_MATCH_RANKS, a rank claimed with
	 * a different size */
	uint64_t match_full, match_share, match_too_large, match_mismatch;
	/* split communicators now not matched because their shape is not known: not every rank
	 * of the parent traced here (another node's), nor asked (ncclCommCount/UserRank) */
	uint64_t match_no_shape;
};

struct nccl_agg;

struct nccl_agg *nccl_agg__new(void);
void nccl_agg__free(struct nccl_agg *a);

void nccl_agg__on_call(struct nccl_agg *a, const struct gp_nccl_event *e);
void nccl_agg__on_cuda(struct nccl_agg *a, const struct gp_aux_event *e); /* GP_EV_NCCL_CUDA */
void nccl_agg__on_exit(struct nccl_agg *a, const struct gp_exit_event *e);
void nccl_agg__on_exec(struct nccl_agg *a, const struct gp_proc_event *e);
void nccl_agg__sweep(struct nccl_agg *a, uint64_t now_ns);
void nccl_agg__reap(struct nccl_agg *a, uint64_t cutoff_ns, uint32_t keep_pid);

/* The comm_id of the communicator handle of live process pid, when known. */
bool nccl_agg__comm_id(struct nccl_agg *a, uint32_t pid, uint64_t handle, uint64_t *id);

/* pid 0: every process; 0 or -ENOMEM. Free with nccl_snap_data__clear. */
int nccl_agg__snapshot(struct nccl_agg *a, uint32_t pid, struct nccl_snap_data *out);
void nccl_snap_data__clear(struct nccl_snap_data *d);

/* Since when c has had no completion: while calls are in flight, the later of the last
 * completion and the call that started the busy spell (a rank idle in its program is not
 * hung); else its last completion. 0: it put nothing on a stream. */
uint64_t nccl_comm_quiet_since(const struct nccl_comm_snap *c);

/* The comm_id an init with this unique id gets (FNV-1a 64 of its bytes). */
uint64_t nccl_comm_id(const uint8_t *id, size_t len);

/* "AllReduce", ... (NCCL's names without the prefix; ncclBcast is "Broadcast") */
const char *nccl_op_name(int fn);
/* "ncclAllReduce", ... as exported */
const char *nccl_fn_name(int fn);
/* "float32", ...; "unknown" for a value NCCL does not have */
const char *nccl_dtype_name(int dtype);
/* bytes of one element; 0 for an unknown type */
unsigned int nccl_dtype_size(int dtype);
const char *nccl_sync_name(enum nccl_sync k);
const char *nccl_bad_name(enum nccl_bad b);
const char *nccl_shape_name(enum nccl_shape s);
/* Whether fn is a collective or point-to-point call (it has a communicator and data). */
bool nccl_fn_is_data(int fn);

#endif
