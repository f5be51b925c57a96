/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One process's CUDA state that work on streams needs to be placed and timed, from the
 * driver calls bpf/ writes as struct gp_aux_event (contexts, synchronizations, event
 * records): each thread's current context (a stack of CTX_STACK), each context's GPU, each
 * event's stream and record time, and the work submitted on streams that no
 * synchronization has covered yet. Shared by --bandwidth-util (asynchronous copies) and
 * --nccl (collectives). Pure C.
 *
 * Work whose call returns before it is done is timed from its submission to the return of
 * the first completion signal that covers it (enum cu_sync): on its stream, or on a stream
 * that waited (cuStreamWaitEvent) on an event recorded on its stream after it. One synchronization completes a batch
 * per statistic it is charged to: the batch is charged the window from its first
 * submission to the synchronization, more than the work took when the GPU did other work
 * too: an upper bound of its time, a lower bound of its bandwidth.
 *
 * Under a budget (--max-overhead) the synchronizations are sampled: work and
 * synchronizations carry the number of the budget's window they were seen in (`epoch`,
 * GP_EPOCH_* in gpuprobe.h), and work is timed only by a synchronization of its own
 * window. Work submitted while the window was closed, and work that a synchronization of
 * a later window covers (its own went unseen), is untimed: counted, never charged.
 */
#ifndef GP_CUCTX_H
#define GP_CUCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"

/* What completed a piece of work: the first completion signal that covered it: a
 * synchronization of its stream, of its context, of an event recorded after it; a
 * cuStreamQuery or cuEventQuery that returned CUDA_SUCCESS; a cuEventElapsedTime whose end
 * event was recorded after it. */
enum cu_sync {
	CU_SYNC_STREAM,
	CU_SYNC_CONTEXT,
	CU_SYNC_EVENT,
	CU_SYNC_STREAM_QUERY,
	CU_SYNC_EVENT_QUERY,
	CU_SYNC_ELAPSED,
	CU_SYNC__COUNT
};

/* Work on a stream (cu_stream_key), submitted at ts_ns: bytes, and the statistics it is
 * charged to (key[1] may be NULL), which the aggregator owns. */
struct cu_work {
	uint64_t stream, ts_ns, bytes;
	void *key[2];
	uint32_t epoch; /* GP_EPOCH_*, or the budget's window it was submitted in */
};

/* The aggregator's answers when a synchronization completes work. */
struct cu_work_ops {
	/* w is done, by a synchronization of kind */
	void (*done)(const struct cu_work *w, enum cu_sync kind);
	/* ns more time for statistic key[slot] of work done (slot 0 or 1) */
	void (*charge)(int slot, void *key, uint64_t ns);
	/* optional: one batch of statistic key[slot] done by one signal of kind, its bytes and
	 * its window (the time charge got for it): a per-window rate */
	void (*batch)(int slot, void *key, uint64_t bytes, uint64_t ns, enum cu_sync kind);
	/* optional: bytes of statistic key[slot] that ran on one stream between two events
	 * whose GPU time cuEventElapsedTime gave (gpu_ns, rounded up): each piece of work once */
	void (*timed)(int slot, void *key, uint64_t bytes, uint64_t gpu_ns);
};

struct cuctx;

/* ops is kept (static storage); NULL when out of memory. */
struct cuctx *cuctx__new(const struct cu_work_ops *ops);
void cuctx__free(struct cuctx *c);

/*
 * Applies e when it is one of the calls above (contexts made, made current, pushed,
 * popped; events recorded; streams, contexts and events synchronized: the work they cover
 * completes); false when it is not one of them.
 */
bool cuctx__on_aux(struct cuctx *c, const struct gp_aux_event *e);
/* The GPU of thread tid's current context, of context ctx; -1 when unknown. */
int cuctx__thread_gpu(const struct cuctx *c, uint64_t tid);
int cuctx__ctx_gpu(const struct cuctx *c, uint64_t ctx);

/* Work that waits for a synchronization; -ENOMEM (then it is never completed). Work of
 * GP_EPOCH_UNSEEN is untimed at once. */
int cuctx__submit(struct cuctx *c, const struct cu_work *w);
/* Work submitted and not covered by a synchronization (yet). */
size_t cuctx__pending(const struct cuctx *c);
/* Work untimed because its synchronization went unseen (a budget's); *bytes its bytes. */
uint64_t cuctx__untimed(const struct cuctx *c, uint64_t *bytes);

/* The key of the stream a call names by handle (0: the default stream): the legacy
 * default stream is 0 whatever names it (0 in a plain call, CU_STREAM_LEGACY); the
 * per-thread default stream (0 in a _ptds/_ptsz call, per_thread, or
 * CU_STREAM_PER_THREAD) is one stream per thread; other streams are their handles. */
uint64_t cu_stream_key(bool per_thread, uint64_t handle, uint64_t tid);

/* "stream", "context", "event", "stream_query", "event_query", "event_elapsed" */
const char *cu_sync_name(enum cu_sync k);
/* The entry points whose successful return is a completion signal (synchronizations,
 * queries, cuEventElapsedTime): under a budget they are sampled together. */
bool cu_signal_api(unsigned int api);

#endif
