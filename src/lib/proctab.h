/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-process records of an aggregator: live ones by PID, and those of exited
 * processes, detached from their PID (a new process may reuse it) and kept until they
 * have been reported. Shared by every mode that keeps records per process.
 */
#ifndef GP_PROCTAB_H
#define GP_PROCTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"

struct proctab;

/* How a table makes and frees its records. */
struct proctab_ops {
	size_t size; /* of a record: the table allocates it zeroed */
	/* what the record of pid holds (its pid, its tables); 0 or -ENOMEM */
	int (*init)(void *p, uint32_t pid);
	/* releases what it holds, not the record itself: at reap, at proctab__free, and
	 * after a failed init */
	void (*fini)(void *ctx, void *p);
};

/* ctx is fini's. */
struct proctab *proctab__new(const struct proctab_ops *ops, void *ctx);
void proctab__free(struct proctab *t);

/*
 * An aggregator of size bytes, zeroed, whose FIRST member is the struct proctab * of its
 * records (made with ops; the aggregator is fini's ctx); NULL when out of memory.
 * proctab__free_owner frees it and its table (safe on NULL).
 */
void *proctab__new_owner(size_t size, const struct proctab_ops *ops);
void proctab__free_owner(void *owner);

/* The live record of pid, or NULL. */
void *proctab__live(const struct proctab *t, uint32_t pid);
/* The live record of pid, made when there is none; NULL on failure. */
void *proctab__get(struct proctab *t, uint32_t pid);
/* The live record of pid, else the newest exited one awaiting its report, or NULL. */
void *proctab__find(const struct proctab *t, uint32_t pid);
/* The first of pid's records, live then exited from the newest, for which match(p, ctx)
 * holds (the records of one PID's successive images, see GP_EV_EXEC), or NULL. */
void *proctab__find_if(const struct proctab *t, uint32_t pid, bool (*match)(const void *p, void *ctx),
		       void *ctx);
/* Detaches pid's record as exited at exit_ns and returns it (still owned by t), or NULL. */
void *proctab__exit(struct proctab *t, uint32_t pid, uint64_t exit_ns);

/* Every record, live ones first, each group by PID; the array is owned by t and valid
 * until the next call that changes t. */
size_t proctab__list(struct proctab *t, void ***out);

/* Releases the exited records that exited, and whose exit was handled, before before_ns
 * (CLOCK_MONOTONIC; UINT64_MAX: all), or with before_ns GP_REAP_SEQ(n), those among the
 * first n exits handled (proctab__exits), except keep_pid's (0: none); before_free(rctx, p),
 * when given, runs first for each. */
void proctab__reap(struct proctab *t, uint32_t keep_pid, uint64_t before_ns,
		   void (*before_free)(void *rctx, void *p), void *rctx);
/* The same, keeping too the records for which held(rctx, p) says so (a later reap
 * releases them once it no longer does). */
void proctab__reap_held(struct proctab *t, uint32_t keep_pid, uint64_t before_ns,
			bool (*held)(void *rctx, const void *p), void (*before_free)(void *rctx, void *p),
			void *rctx);

/*
 * How many exits every table has handled so far. A report lists what was handled before
 * it: GP_REAP_SEQ(proctab__exits()) taken right after a report, as a reap's cutoff,
 * releases exactly the records that report listed as exited, never one whose exit was
 * handled after it (read while the reap drains the buffers, or found by a sweep). Cutoffs
 * with the top bit are counts, others CLOCK_MONOTONIC times (no time reaches 2^63 ns);
 * reapers that keep no exit order read them as times, "every exited one".
 */
uint64_t proctab__exits(void);
#define GP_REAP_SEQ(n) ((1ULL << 63) | (uint64_t)(n))

/* A sweep ends a process only once it has been gone for ns (0, the default: at once),
 * for every table: a front end that reads while processes still run sets one, and 0
 * once its probes are out and the buffers read. */
void proctab__set_sweep_grace(uint64_t ns);

/* Calls on_gone(ctx, pid) for each live record whose process is gone without an exit
 * record (lost, or the process made no call that asks for one); on_gone applies the exit.
 * Drain the records still in flight first, or they would make it live again. */
void proctab__sweep(struct proctab *t, void (*on_gone)(void *ctx, uint32_t pid), void *ctx);

/* The head of the records of the calls below (their first member), which end records
 * themselves: what every report says of a process's record. */
struct gp_proc_head {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	bool exited;
	bool exec;        /* ended by an exec: the PID lives on in a new image (a new record) */
	uint64_t exit_ns; /* CLOCK_MONOTONIC, from the exit record */
	bool unnamed;     /* made without a name after its process was gone (gp_snap_pid.unnamed) */
};

/* proctab__get, and comm (when given, not empty) as the record's name; a record made without
 * one is named from /proc, or marked unnamed until a record with one names it. */
void *proctab__get_named(struct proctab *t, uint32_t pid, const char *comm);
/* proctab__exit of a record that ended at ts_ns by an exit, or by an exec (GP_EV_EXEC);
 * returns it (still owned by t), or NULL. */
void *proctab__end(struct proctab *t, uint32_t pid, uint64_t ts_ns, bool exec);
/* proctab__sweep: the records of processes gone end (by an exit) at now_ns. */
void proctab__sweep_end(struct proctab *t, uint64_t now_ns);

#endif
