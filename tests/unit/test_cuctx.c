/* SPDX-License-Identifier: BSD-3-Clause */
/* A process's CUDA contexts, events and the work that waits for a synchronization
 * (src/lib/cuctx.h), shared by --bandwidth-util and --nccl. */
#include <stdint.h>
#include <string.h>
#include "lib/apis.h"
#include "lib/cuctx.h"
#include "lib/u64map.h"
#include "lib/util.h"
#include "unit.h"

struct stat {
	uint64_t done, bytes, ns, by[CU_SYNC__COUNT];
};

static void done(const struct cu_work *w, enum cu_sync kind)
{
	struct stat *s = w->key[0];

	s->done++;
	s->bytes += w->bytes;
	s->by[kind]++;
}

static void charge(int slot, void *key, uint64_t ns)
{
	(void)slot;
	((struct stat *)key)->ns += ns;
}

static const struct cu_work_ops ops = { .done = done, .charge = charge };

/* with the optional answers: per-batch figures and the events' GPU time */
struct sigstat {
	struct stat s;
	uint64_t batches, batch_bytes, batch_ns, ev_bytes, ev_ns, ev_windows;
};

static void batch(int slot, void *key, uint64_t bytes, uint64_t ns, enum cu_sync kind)
{
	struct sigstat *g = key;

	(void)slot;
	(void)kind;
	g->batches++;
	g->batch_bytes += bytes;
	g->batch_ns += ns;
}

static void timed(int slot, void *key, uint64_t bytes, uint64_t gpu_ns)
{
	struct sigstat *g = key;

	(void)slot;
	g->ev_bytes += bytes;
	g->ev_ns += gpu_ns;
	g->ev_windows++;
}

static const struct cu_work_ops sig_ops = { .done = done, .charge = charge, .batch = batch, .timed = timed };

static struct gp_aux_event aux(unsigned int api, uint32_t tid, uint64_t ts, uint64_t handle, uint64_t a)
{
	return (struct gp_aux_event){ .type = GP_EV_AUX, .api = api, .pid = 1, .tid = tid, .ts_ns = ts,
				      .handle = handle, .aux = a };
}

static void test_contexts(void)
{
	struct cuctx *c = cuctx__new(&ops);
	struct gp_aux_event e;

	if (!ASSERT_TRUE(c != NULL, "cuctx__new"))
		goto cleanup;
	e = aux(GP_API_cuDevicePrimaryCtxRetain, 7, 1, 0xa, 2);
	if (!ASSERT_TRUE(cuctx__on_aux(c, &e), "retain is a context call"))
		goto cleanup;
	if (!ASSERT_EQ(cuctx__thread_gpu(c, 7), -1, "retained, not current"))
		goto cleanup;
	e = aux(GP_API_cuCtxSetCurrent, 7, 2, 0xa, 0);
	cuctx__on_aux(c, &e);
	if (!ASSERT_EQ(cuctx__thread_gpu(c, 7), 2, "current: GPU 2"))
		goto cleanup;
	e = aux(GP_API_cuCtxCreate_v2, 7, 3, 0xb, 5);
	cuctx__on_aux(c, &e);
	if (!ASSERT_EQ(cuctx__thread_gpu(c, 7), 5, "a created context becomes current"))
		goto cleanup;
	if (!ASSERT_EQ(cuctx__thread_gpu(c, 8), -1, "another thread has none"))
		goto cleanup;
	e = aux(GP_API_cuCtxPopCurrent_v2, 7, 4, 0, 0);
	cuctx__on_aux(c, &e);
	if (!ASSERT_EQ(cuctx__thread_gpu(c, 7), 2, "popped: GPU 2 again"))
		goto cleanup;
	if (!ASSERT_EQ(cuctx__ctx_gpu(c, 0xb), 5, "context 0xb is on GPU 5"))
		goto cleanup;
	e = aux(GP_API_cuMemHostRegister_v2, 7, 5, 0x1000, 4096);
	if (!ASSERT_FALSE(cuctx__on_aux(c, &e), "not a call cuctx keeps"))
		goto cleanup;
cleanup:
	cuctx__free(c);
	cuctx__free(NULL);
}

static void test_streams_and_syncs(void)
{
	struct cuctx *c = cuctx__new(&ops);
	struct stat a = { 0 }, b = { 0 };
	struct gp_aux_event e;

	if (!ASSERT_TRUE(c != NULL, "cuctx__new"))
		goto cleanup;
	/* stream 0x50: two copies of a at 100 and 150, one of b at 120; the legacy stream: b at 130 */
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 100, .bytes = 10, .key = { &a } });
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 120, .bytes = 20, .key = { &b } });
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 150, .bytes = 30, .key = { &a } });
	cuctx__submit(c, &(struct cu_work){ .stream = cu_stream_key(false, 0, 7), .ts_ns = 130, .bytes = 40,
					     .key = { &b } });
	if (!ASSERT_EQ(cuctx__pending(c), 4, "four pending"))
		goto cleanup;
	/* an event recorded on 0x50 at 140 covers what came before it */
	e = aux(GP_API_cuEventRecord, 7, 140, 0xe1, 0x50);
	cuctx__on_aux(c, &e);
	e = aux(GP_API_cuEventSynchronize, 7, 1000, 0xe1, 0);
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(a.done == 1 && a.bytes == 10 && a.ns == 900 && a.by[CU_SYNC_EVENT] == 1, "a: the copy at 100"))
		goto cleanup;
	if (!ASSERT_TRUE(b.done == 1 && b.bytes == 20 && b.ns == 880, "b: the copy at 120"))
		goto cleanup;
	/* the stream's sync: the rest of 0x50, one batch from 150 */
	e = aux(GP_API_cuStreamSynchronize, 7, 2000, 0x50, 0);
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(a.done == 2 && a.ns == 900 + 1850 && a.by[CU_SYNC_STREAM] == 1, "a: the copy at 150"))
		goto cleanup;
	if (!ASSERT_EQ(cuctx__pending(c), 1, "the legacy stream's copy waits"))
		goto cleanup;
	/* CU_STREAM_LEGACY names the legacy default stream too; a context sync covers all */
	if (!ASSERT_EQ(cu_stream_key(true, 1, 7), 0, "CU_STREAM_LEGACY"))
		goto cleanup;
	if (!ASSERT_TRUE(cu_stream_key(true, 0, 7) == cu_stream_key(false, 2, 7) &&
			 cu_stream_key(true, 0, 7) != cu_stream_key(true, 0, 8), "per-thread default streams"))
		goto cleanup;
	e = aux(GP_API_cuCtxSynchronize_v2, 7, 3000, 0, 0);
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(b.done == 2 && b.ns == 880 + 2870 && b.by[CU_SYNC_CONTEXT] == 1, "b: the legacy copy"))
		goto cleanup;
	if (!ASSERT_EQ(cuctx__pending(c), 0, "nothing waits"))
		goto cleanup;
	if (!ASSERT_STR_EQ(cu_sync_name(CU_SYNC_EVENT), "event", "cu_sync_name"))
		goto cleanup;
cleanup:
	cuctx__free(c);
}

/* Under a budget the synchronizations are sampled: work is timed only by a
 * synchronization of its own window (epoch); work made while the window was closed, or
 * covered by a synchronization of a later window, is untimed. */
static void test_windows(void)
{
	struct cuctx *c = cuctx__new(&ops);
	struct stat a = { 0 };
	struct gp_aux_event e;
	uint64_t bytes = 0;

	if (!ASSERT_TRUE(c != NULL, "cuctx__new"))
		goto cleanup;
	/* window 2: a copy at 100; the window closes: one at 200 (unseen); window 3: one at 300 */
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 100, .bytes = 10, .key = { &a }, .epoch = 2 });
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 200, .bytes = 20, .key = { &a },
					     .epoch = GP_EPOCH_UNSEEN });
	if (!ASSERT_TRUE(cuctx__pending(c) == 1 && cuctx__untimed(c, &bytes) == 1 && bytes == 20,
			 "made while the window was closed: untimed at once"))
		goto cleanup;
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 300, .bytes = 30, .key = { &a }, .epoch = 3 });
	cuctx__submit(c, &(struct cu_work){ .stream = 0x60, .ts_ns = 310, .bytes = 5, .key = { &a }, .epoch = 3 });
	/* a synchronization that entered in window 2 and returned late covers its window's copy only */
	e = aux(GP_API_cuStreamSynchronize, 7, 320, 0x50, 0);
	e.epoch = 2;
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(a.done == 1 && a.bytes == 10 && a.ns == 220, "window 2's copy timed by window 2's sync"))
		goto cleanup;
	if (!ASSERT_EQ(cuctx__pending(c), 2, "window 3's copies wait for window 3's synchronizations"))
		goto cleanup;
	/* window 4's stream sync: window 3's copy on 0x50 lost its own synchronization */
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 400, .bytes = 40, .key = { &a }, .epoch = 4 });
	e = aux(GP_API_cuStreamSynchronize, 7, 450, 0x50, 0);
	e.epoch = 4;
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(a.done == 2 && a.bytes == 50 && a.ns == 220 + 50, "window 4's copy timed"))
		goto cleanup;
	if (!ASSERT_TRUE(cuctx__untimed(c, &bytes) == 2 && bytes == 50, "window 3's copy on 0x50: untimed"))
		goto cleanup;
	if (!ASSERT_EQ(cuctx__pending(c), 1, "the copy on 0x60 is not covered yet"))
		goto cleanup;
	e = aux(GP_API_cuCtxSynchronize, 7, 500, 0, 0);
	e.epoch = 4;
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(cuctx__pending(c) == 0 && cuctx__untimed(c, &bytes) == 3 && bytes == 55,
			 "a later window's context sync: window 3's copy on 0x60 untimed"))
		goto cleanup;
cleanup:
	cuctx__free(c);
}

/* One synchronization charges at most 32 batches a slot; past them each piece of work is
 * charged from its own submission. */
static void test_batches_overflow(void)
{
	struct cuctx *c = cuctx__new(&ops);
	struct stat s[40];
	struct gp_aux_event e;
	uint64_t total = 0;

	memset(s, 0, sizeof(s));
	if (!ASSERT_TRUE(c != NULL, "cuctx__new"))
		goto cleanup;
	for (int i = 0; i < 40; i++) {
		cuctx__submit(c, &(struct cu_work){ .stream = 9, .ts_ns = 100 + (uint64_t)i, .bytes = 1, .key = { &s[i] } });
		cuctx__submit(c, &(struct cu_work){ .stream = 9, .ts_ns = 200 + (uint64_t)i, .bytes = 1, .key = { &s[i] } });
	}
	e = aux(GP_API_cuStreamSynchronize, 7, 1000, 9, 0);
	cuctx__on_aux(c, &e);
	for (int i = 0; i < 40; i++)
		total += s[i].ns;
	/* 32 batches: 1000 - (100 + i) each; 8 statistics past them: both of their copies alone */
	for (int i = 0; i < 32; i++)
		total -= 900 - (uint64_t)i;
	for (int i = 32; i < 40; i++)
		total -= (900 - (uint64_t)i) + (800 - (uint64_t)i);
	if (!ASSERT_EQ(total, 0, "windows charged"))
		goto cleanup;
	if (!ASSERT_TRUE(s[0].done == 2 && s[39].done == 2, "every copy done"))
		goto cleanup;
cleanup:
	cuctx__free(c);
}

/* The helpers it is built on. */
static void test_helpers(void)
{
	struct u64map *m = u64map__new();
	uint64_t *v;

	if (!ASSERT_TRUE(m != NULL, "u64map__new"))
		goto cleanup;
	v = u64map__get_new(m, 5, sizeof(*v));
	if (!ASSERT_TRUE(v && *v == 0, "a zeroed new value"))
		goto cleanup;
	*v = 42;
	if (!ASSERT_TRUE(u64map__get_new(m, 5, sizeof(*v)) == v && *v == 42, "the same value again"))
		goto cleanup;
	if (!ASSERT_EQ(gp_log2_slot(0, 48), 0, "slot of 0") || !ASSERT_EQ(gp_log2_slot(1, 48), 0, "slot of 1") ||
	    !ASSERT_EQ(gp_log2_slot(1024, 48), 10, "slot of 1024") ||
	    !ASSERT_EQ(gp_log2_slot(UINT64_MAX, 48), 47, "clamped to the last slot"))
		goto cleanup;
	/* FNV-1a's published test vectors */
	if (!ASSERT_TRUE(gp_fnv1a("", 0, GP_FNV1A_INIT) == 0xcbf29ce484222325ULL &&
			 gp_fnv1a("a", 1, GP_FNV1A_INIT) == 0xaf63dc4c8601ec8cULL &&
			 gp_fnv1a("foobar", 6, GP_FNV1A_INIT) == 0x85944171f73967e8ULL, "FNV-1a test vectors"))
		goto cleanup;
	if (!ASSERT_TRUE(gp_fnv1a("bar", 3, gp_fnv1a("foo", 3, GP_FNV1A_INIT)) == 0x85944171f73967e8ULL,
			 "FNV-1a continued"))
		goto cleanup;
cleanup:
	u64map__free_all(m, NULL);
}

/* Queries that returned CUDA_SUCCESS (BPF sends no other), event queries, waits between
 * streams and cuEventElapsedTime: each completes the work its stream had before it. */
static void test_signals(void)
{
	struct cuctx *c = cuctx__new(&sig_ops);
	struct sigstat a = { 0 }, b = { 0 };
	struct gp_aux_event e;
	float ms = 0.5f;

	if (!ASSERT_TRUE(c != NULL, "cuctx__new"))
		goto cleanup;
	/* stream 0x50: copies at 100 and 200; a query at 300 completes both, one batch */
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 100, .bytes = 10, .key = { &a } });
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 200, .bytes = 20, .key = { &a } });
	cuctx__submit(c, &(struct cu_work){ .stream = 0x60, .ts_ns = 210, .bytes = 5, .key = { &b } });
	e = aux(GP_API_cuStreamQuery, 7, 300, 0x50, 0);
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(a.s.done == 2 && a.s.by[CU_SYNC_STREAM_QUERY] == 2 && a.s.ns == 200, "stream query") ||
	    !ASSERT_TRUE(a.batches == 1 && a.batch_bytes == 30 && a.batch_ns == 200, "one batch of 30 B in 200 ns") ||
	    !ASSERT_EQ(b.s.done, 0, "another stream's work is not covered"))
		goto cleanup;
	/* an event recorded on 0x60 at 250, then more work at 260: an event query covers 210 only */
	e = aux(GP_API_cuEventRecord, 7, 250, 0xe1, 0x60);
	cuctx__on_aux(c, &e);
	cuctx__submit(c, &(struct cu_work){ .stream = 0x60, .ts_ns = 260, .bytes = 7, .key = { &b } });
	e = aux(GP_API_cuEventQuery, 7, 400, 0xe1, 0);
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(b.s.done == 1 && b.s.bytes == 5 && b.s.by[CU_SYNC_EVENT_QUERY] == 1, "event query") ||
	    !ASSERT_EQ(cuctx__pending(c), 1, "the work after the record waits"))
		goto cleanup;
	/* stream 0x70 waits at 520 on event 0xe2 recorded on 0x60 at 510: a query of 0x70 at
	 * 600 completes 0x60's work before 510 (the copy at 260), not the one at 530 */
	e = aux(GP_API_cuEventRecordWithFlags, 7, 510, 0xe2, 0x60);
	cuctx__on_aux(c, &e);
	e = aux(GP_API_cuStreamWaitEvent, 7, 520, 0x70, 0xe2);
	cuctx__on_aux(c, &e);
	cuctx__submit(c, &(struct cu_work){ .stream = 0x60, .ts_ns = 530, .bytes = 9, .key = { &b } });
	e = aux(GP_API_cuStreamQuery, 7, 600, 0x70, 0);
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(b.s.done == 2 && b.s.bytes == 12 && b.s.by[CU_SYNC_STREAM_QUERY] == 1, "a wait ties the streams") ||
	    !ASSERT_EQ(b.s.ns, 190 + 340, "charged to the query's return") ||
	    !ASSERT_EQ(cuctx__pending(c), 1, "work after the record still waits"))
		goto cleanup;
	/* events 0xe3 (at 700) and 0xe4 (at 900) on 0x50 around copies at 710 and 800;
	 * cuEventElapsedTime gives 0.5 ms: the two copies' 70 B over 500,000 ns (+1, rounded up) */
	e = aux(GP_API_cuEventRecord, 7, 700, 0xe3, 0x50);
	cuctx__on_aux(c, &e);
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 710, .bytes = 30, .key = { &a } });
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 800, .bytes = 40, .key = { &a } });
	e = aux(GP_API_cuEventRecord, 7, 900, 0xe4, 0x50);
	cuctx__on_aux(c, &e);
	cuctx__submit(c, &(struct cu_work){ .stream = 0x50, .ts_ns = 950, .bytes = 1000, .key = { &a } });
	e = aux(GP_API_cuEventSynchronize, 7, 1000, 0xe4, 0);
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(a.s.done == 4 && a.s.by[CU_SYNC_EVENT] == 2, "the event sync covers the two copies"))
		goto cleanup;
	e = aux(GP_API_cuEventElapsedTime_v2, 7, 1100, 0xe3, 0xe4);
	memcpy(&e.ms_bits, &ms, sizeof(ms));
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(a.ev_windows == 1 && a.ev_bytes == 70 && a.ev_ns == 500001, "bytes between the events") ||
	    !ASSERT_EQ(b.ev_windows, 0, "other streams' work is not between them"))
		goto cleanup;
	cuctx__on_aux(c, &e); /* asked again: each piece of work is timed once */
	if (!ASSERT_EQ(a.ev_windows, 1, "timed once"))
		goto cleanup;
	/* an elapsed time is a completion too: the copy at 950 before an event at 1200 */
	e = aux(GP_API_cuEventRecord, 7, 1200, 0xe5, 0x50);
	cuctx__on_aux(c, &e);
	e = aux(GP_API_cuEventElapsedTime, 7, 1300, 0xe4, 0xe5);
	memcpy(&e.ms_bits, &ms, sizeof(ms));
	cuctx__on_aux(c, &e);
	if (!ASSERT_TRUE(a.s.by[CU_SYNC_ELAPSED] == 1 && a.ev_bytes == 1070, "elapsed completes and times the copy at 950"))
		goto cleanup;
	if (!ASSERT_STR_EQ(cu_sync_name(CU_SYNC_ELAPSED), "event_elapsed", "cu_sync_name") ||
	    !ASSERT_TRUE(cu_signal_api(GP_API_cuEventQuery) && !cu_signal_api(GP_API_cuEventRecord), "signal apis"))
		goto cleanup;
cleanup:
	cuctx__free(c);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_contexts);
	RUN_TEST(test_streams_and_syncs);
	RUN_TEST(test_windows);
	RUN_TEST(test_batches_overflow);
	RUN_TEST(test_helpers);
	RUN_TEST(test_signals);
	return unit_done();
}
