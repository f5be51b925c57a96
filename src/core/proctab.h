/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-process records of an aggregator: live ones by PID, and those of exited
 * processes, detached from their PID (a new process may reuse it) and kept until they
 * have been reported. Shared by --memleak, --cudatrace and --bandwidth-util.
 */
#ifndef GP_PROCTAB_H
#define GP_PROCTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proctab;

/* free_proc(ctx, p) releases one record (on reap and on proctab__free). */
struct proctab *proctab__new(void (*free_proc)(void *ctx, void *p), void *ctx);
void proctab__free(struct proctab *t);

/* The live record of pid, or NULL. */
void *proctab__live(const struct proctab *t, uint32_t pid);
/* The live record of pid, made with make(pid) when there is none; NULL on failure. */
void *proctab__get(struct proctab *t, uint32_t pid, void *(*make)(uint32_t pid));
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

/* Releases the exited records that exited before before_ns (UINT64_MAX: all), except
 * keep_pid's (0: none); before_free(rctx, p), when given, runs first for each. */
void proctab__reap(struct proctab *t, uint32_t keep_pid, uint64_t before_ns,
		   void (*before_free)(void *rctx, void *p), void *rctx);

/* Calls on_gone(ctx, pid) for each live record whose process is gone without an exit
 * record (lost, or the process made no call that asks for one); on_gone applies the exit.
 * Drain the records still in flight first, or they would make it live again. */
void proctab__sweep(struct proctab *t, void (*on_gone)(void *ctx, uint32_t pid), void *ctx);

#endif
