/* SPDX-License-Identifier: BSD-3-Clause */
/* Drains BPF ring buffers and dispatches records by their leading type. */
#ifndef GP_EVENTS_H
#define GP_EVENTS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"

/*
 * Every record type, one line each: its type (the common header's first field, enum
 * gp_event_type in bpf/gpuprobe.h) and its struct (in its BPF object's header in bpf/).
 * events.c checks each record's length against its type's struct before any handler sees
 * it, and reads the pid from it for the "any record" subscribers; GP_ON checks that a
 * handler takes that struct. Adding a record type: one line here, its handler in the mode.
 */
#define GP_RECORDS(X)                            \
	X(GP_EV_ALLOC, gp_alloc_event)           \
	X(GP_EV_FREE, gp_free_event)             \
	X(GP_EV_MAP, gp_free_event)              \
	X(GP_EV_UNMAP, gp_free_event)            \
	X(GP_EV_EXIT, gp_exit_event)             \
	X(GP_EV_NAME, gp_name_event)             \
	X(GP_EV_STUB, gp_stub_event)             \
	X(GP_EV_COPY, gp_copy_event)             \
	X(GP_EV_AUX, gp_aux_event)               \
	X(GP_EV_IOCTL, gp_ioctl_event)           \
	X(GP_EV_CALL, gp_call_event)             \
	X(GP_EV_FORK, gp_proc_event)             \
	X(GP_EV_EXEC, gp_proc_event)             \
	X(GP_EV_GONE, gp_proc_event)             \
	X(GP_EV_GRAPH, gp_graph_event)           \
	X(GP_EV_CALL_STR, gp_call_str_event)     \
	X(GP_EV_NCCL, gp_nccl_event)             \
	X(GP_EV_NCCL_CUDA, gp_aux_event)         \
	X(GP_EV_DLOPEN, gp_dlopen_event)         \
	X(GP_EV_STACK, gp_stack_event)           \
	X(GP_EV_PYCODE, gp_pycode_event)         \
	X(GP_EV_PYLINES, gp_pylines_event)       \
	X(GP_EV_NAMECOPY, gp_namecopy_event)     \
	X(GP_EV_PIN, gp_pin_event)

/* each type's handler: gp_on_GP_EV_ALLOC_fn takes a const struct gp_alloc_event *, ... */
#define GP_REC_DECLARE(ev, st) struct st; typedef void gp_on_##ev##_fn(void *ctx, const struct st *rec);
GP_RECORDS(GP_REC_DECLARE)
#undef GP_REC_DECLARE

typedef void (*gp_record_fn)(void *ctx, const void *rec);

/* One subscription: records of this type go to fn. */
struct gp_on {
	__u32 type;
	gp_record_fn fn;
};

/* A (type, handler) pair; a handler that does not take the type's struct does not compile. */
#define GP_ON(ev, fn) { (ev), (gp_record_fn)(1 ? (fn) : (gp_on_##ev##_fn *)0) }
/* the three that free (FREE, MAP, UNMAP: struct gp_free_event) and the three process
 * records (FORK, EXEC, GONE: struct gp_proc_event) to one handler */
#define GP_ON_FREES(fn) GP_ON(GP_EV_FREE, fn), GP_ON(GP_EV_MAP, fn), GP_ON(GP_EV_UNMAP, fn)
#define GP_ON_PROCS(fn) GP_ON(GP_EV_FORK, fn), GP_ON(GP_EV_EXEC, fn), GP_ON(GP_EV_GONE, fn)
/* .on and .nr_on of struct gp_handlers from an array of struct gp_on */
#define GP_ONS(arr) .on = (arr), .nr_on = sizeof(arr) / sizeof((arr)[0])

/* A subscriber: its records by type, read when it subscribes (the array may go after). */
struct gp_handlers {
	void *ctx;
	const struct gp_on *on; /* at most one per type; a type not in the table: -EINVAL */
	size_t nr_on;
	/* every well-formed record, before the handlers of its type: its type and its pid
	 * (the daemon's bookkeeping of which processes it has seen) */
	void (*on_any)(void *ctx, __u32 type, __u32 pid);
	/* after each gp_events__poll (at least every poll timeout): work that waits on time */
	void (*on_tick)(void *ctx);
};

struct gp_events;

struct gp_events *gp_events__new(void);
void gp_events__free(struct gp_events *ev);
/* Adds a ring buffer map fd whose records go to h; adding an fd again adds a subscriber
 * to the same buffer (the run's shared buffer feeds several modes). 0 or -errno (-EINVAL:
 * h subscribes to a type not in GP_RECORDS, or twice to one). */
int gp_events__add(struct gp_events *ev, int map_fd, const struct gp_handlers *h);
/* Reads end at once when *flag is non-zero (a front end's stop signal): a signal takes
 * effect after the record being handled, whatever the event rate; what is left is read
 * by the drains after a call with NULL (never stop), as before the final report. */
void gp_events__stop_on(struct gp_events *ev, const volatile sig_atomic_t *flag);
/* A subscriber wants its on_tick within ms: the next gp_events__poll waits no longer. */
void gp_events__want_tick(struct gp_events *ev, int ms);
/* Waits up to timeout_ms (not at all when the last read left records), then reads for at
 * most ~15 ms, and no longer than until timeout_ms from the call (the caller's next
 * deadline; past it, one record): the consumer yields, a signal or a timer of the
 * caller's is never kept waiting by a fast producer. Returns records handled or -errno
 * (-EINTR is not one). */
int gp_events__poll(struct gp_events *ev, int timeout_ms);
/* Handles what is in the buffers without waiting, for at most ~15 ms (see
 * gp_events__more). */
int gp_events__drain(struct gp_events *ev);
/* The same for at most ms (0: until the buffers are empty: only once the probes are
 * gone, or a fast producer keeps it reading). */
int gp_events__drain_for(struct gp_events *ev, int ms);
/* The same for a ring whose records must be read promptly whatever the others hold: each
 * read takes it first, and a read of another yields (gp_events__more) once it holds a
 * record. */
int gp_events__add_first(struct gp_events *ev, int map_fd, const struct gp_handlers *h);
/* The last read yielded with records left in a buffer: read again without waiting. */
bool gp_events__more(const struct gp_events *ev);
/* A ring holds records not read yet, now (its producer ahead of its consumer): also those
 * that came after the last read, which most records do without a wake-up. */
bool gp_events__unread(const struct gp_events *ev);
/* An fd that polls readable when a record that wakes waits, or a ring is half full
 * (ring_buffer__epoll_fd; most records come without a wake-up: drain on a timer too); -1
 * if none. */
int gp_events__epoll_fd(const struct gp_events *ev);
/* Records handled so far and records of unknown type or size (a bug if non-zero). */
uint64_t gp_events__handled(const struct gp_events *ev);
uint64_t gp_events__malformed(const struct gp_events *ev);

/* Dispatches one record to h; exposed for unit tests. Returns 0 or -EINVAL (a record of
 * unknown type or short of its type's size, or h subscribes to an unknown type). */
int gp_events__dispatch(struct gp_events *ev, const struct gp_handlers *h, const void *data,
			size_t size);

#endif
