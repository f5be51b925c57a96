/* SPDX-License-Identifier: BSD-3-Clause */
/* Drains BPF ring buffers and dispatches records by their leading type. */
#ifndef GP_EVENTS_H
#define GP_EVENTS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"

/* each BPF object's records, in its header in bpf/ (events.c reads their sizes) */
struct gp_alloc_event;
struct gp_free_event;
struct gp_stack_event;
struct gp_pycode_event;
struct gp_pylines_event;
struct gp_name_event;
struct gp_stub_event;
struct gp_namecopy_event;
struct gp_graph_event;
struct gp_copy_event;
struct gp_call_event;
struct gp_call_str_event;
struct gp_ioctl_event;
struct gp_nccl_event;

struct gp_handlers {
	void *ctx;
	void (*on_alloc)(void *ctx, const struct gp_alloc_event *e);
	void (*on_free)(void *ctx, const struct gp_free_event *e); /* FREE, MAP, UNMAP */
	void (*on_exit)(void *ctx, const struct gp_exit_event *e);
	void (*on_name)(void *ctx, const struct gp_name_event *e);
	void (*on_stub)(void *ctx, const struct gp_stub_event *e);
	void (*on_namecopy)(void *ctx, const struct gp_namecopy_event *e);
	void (*on_copy)(void *ctx, const struct gp_copy_event *e);
	void (*on_aux)(void *ctx, const struct gp_aux_event *e);
	void (*on_call)(void *ctx, const struct gp_call_event *e);
	void (*on_ioctl)(void *ctx, const struct gp_ioctl_event *e);
	void (*on_proc)(void *ctx, const struct gp_proc_event *e); /* FORK, EXEC, GONE */
	void (*on_graph)(void *ctx, const struct gp_graph_event *e);
	void (*on_call_str)(void *ctx, const struct gp_call_str_event *e);
	void (*on_nccl)(void *ctx, const struct gp_nccl_event *e);
	void (*on_nccl_cuda)(void *ctx, const struct gp_aux_event *e); /* GP_EV_NCCL_CUDA */
	void (*on_dlopen)(void *ctx, const struct gp_dlopen_event *e);
	void (*on_stack)(void *ctx, const struct gp_stack_event *e);
	void (*on_pycode)(void *ctx, const struct gp_pycode_event *e);
	void (*on_pylines)(void *ctx, const struct gp_pylines_event *e);
	/* after each gp_events__poll (at least every poll timeout): work that waits on time */
	void (*on_tick)(void *ctx);
};

struct gp_events;

struct gp_events *gp_events__new(void);
void gp_events__free(struct gp_events *ev);
/* Adds a ring buffer map fd whose records go to h; adding an fd again adds a subscriber
 * to the same buffer (the run's shared buffer feeds several modes). 0 or -errno. */
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
/* The last read yielded with records left in a buffer: read again without waiting. */
bool gp_events__more(const struct gp_events *ev);
/* An fd that polls readable when a record that wakes waits, or a ring is half full
 * (ring_buffer__epoll_fd; most records come without a wake-up: drain on a timer too); -1
 * if none. */
int gp_events__epoll_fd(const struct gp_events *ev);
/* Records handled so far and records of unknown type or size (a bug if non-zero). */
uint64_t gp_events__handled(const struct gp_events *ev);
uint64_t gp_events__malformed(const struct gp_events *ev);

/* Dispatches one record to h; exposed for unit tests. Returns 0 or -EINVAL. */
int gp_events__dispatch(struct gp_events *ev, const struct gp_handlers *h, const void *data,
			size_t size);

#endif
