/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --nccl's renderers: text, JSON and Prometheus, from a snapshot only; and the arguments of
 * each call's --trace event. What is measured (calls, bytes from count x type size, API
 * time, the window to the covering sync, point-to-point peers) and what is inferred (the
 * collective bytes between ranks a ring in rank order implies, a split's shape from every
 * rank's split) is said where it is shown.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <json-c/json.h>
#include "out/json.h"
#include "modes/nccl/nccl_mode.h"
#include "out/prom.h"
#include "out/text.h"

#define SNAP(s) ((const struct nccl_snap *)(s))
#define PEER_SERIES 64 /* /metrics: peers with series of their own per communicator */

static const char ring_note[] = "inferred: each collective's bytes sent along a ring in rank order "
				"(rank r to r+1) as NCCL's RING algorithm moves them; NCCL orders rings by "
				"topology and may run TREE or other algorithms";

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static void comm_id_str(char *buf, size_t len, bool known, uint64_t id)
{
	if (known)
		snprintf(buf, len, "0x%016" PRIx64, id);
	else
		snprintf(buf, len, "unknown");
}

static json_object *id_json(bool known, uint64_t id)
{
	char buf[32];

	if (!known)
		return NULL;
	comm_id_str(buf, sizeof(buf), true, id);
	return json_object_new_string(buf);
}

static json_object *int_or_null(int v)
{
	return v < 0 ? NULL : json_object_new_int(v);
}

/* algbw and busbw lower bounds of a completion batch (bytes/s), 0 when not known. */
static double algbw(const struct nccl_time *t)
{
	return t->window_ns ? (double)t->size / secs(t->window_ns) : 0;
}

/* Seconds without a completion signal at now (nccl_comm_quiet_since); -1: it put nothing
 * on a stream. */
static double since_done(const struct nccl_comm_snap *c, uint64_t now)
{
	uint64_t t = nccl_comm_quiet_since(c);

	if (!c->issued)
		return -1;
	return now > t ? secs(now - t) : 0;
}

static uint64_t inflight(const struct nccl_comm_snap *c)
{
	return c->issued > c->completed ? c->issued - c->completed : 0;
}

static double wait_secs(const struct nccl_straggle *m, uint64_t now)
{
	return m->wait_since_ns && now > m->wait_since_ns ? secs(now - m->wait_since_ns) : 0;
}

/* ---- text ---- */

/* In flight and since the last completion; the matched collectives this rank was last into. */
static void text_hang(FILE *f, const struct nccl_comm_snap *c, uint64_t now, bool exited)
{
	double since = since_done(c, now);

	if (since < 0 && !c->entered)
		return;
	fprintf(f, "    %s entered", gp_text__n(c->entered, "collective", "collectives").s);
	if (since >= 0 && exited)
		fprintf(f, "; %s left in flight at its exit", gp_text__count(inflight(c)).s);
	else if (since >= 0)
		fprintf(f, "; %s in flight, %s since a completion%s", gp_text__count(inflight(c)).s,
			gp_text__duration(since).s,
			inflight(c) && since >= 1 ? " (in flight and not completing: hung or slow?)" : "");
	if (c->last_to_enter)
		fprintf(f, "; last rank into %s matched (lag %s in all, at most %s)",
			gp_text__n(c->last_to_enter, "collective", "collectives").s, gp_text__duration(secs(c->lag_ns)).s,
			gp_text__duration(secs(c->lag_max_ns)).s);
	fputc('\n', f);
}

static void text_colls(FILE *f, const struct nccl_comm_snap *c)
{
	if (!c->nr_colls)
		return;
	fprintf(f, "    %-14s %-18s %-10s %8s %10s %10s\n", "OP", "CALL", "DTYPE", "CALLS", "BYTES", "API TIME");
	for (size_t i = 0; i < c->nr_colls; i++) {
		const struct nccl_coll *x = &c->colls[i];

		fprintf(f, "    %-14s %-18s %-10s %8s %10s %10s\n", nccl_op_name(x->fn), nccl_fn_name(x->fn),
			nccl_dtype_name(x->dtype), gp_text__count(x->calls).s, gp_text__bytes(x->bytes).s,
			gp_text__duration(secs(x->api_ns)).s);
	}
}

static void text_p2p(FILE *f, const struct nccl_comm_snap *c)
{
	if (!c->nr_p2p)
		return;
	fprintf(f, "    %-8s %-6s %8s %10s %10s\n", "PEER", "DIR", "CALLS", "BYTES", "API TIME");
	for (size_t i = 0; i < c->nr_p2p; i++) {
		const struct nccl_p2p *x = &c->p2p[i];

		fprintf(f, "    %-8d %-6s %8s %10s %10s\n", x->peer, x->send ? "send" : "recv", gp_text__count(x->calls).s,
			gp_text__bytes(x->bytes).s, gp_text__duration(secs(x->api_ns)).s);
	}
}

/* The signal that closed most of a row's windows: "stream sync", ..., "event elapsed". */
static const char *closed_by(const struct nccl_time *t)
{
	static const char *const n[NCCL_SYNC__COUNT] = { "stream sync", "context sync", "event sync",
							 "stream query", "event query", "event elapsed" };
	int best = 0;

	for (int k = 1; k < NCCL_SYNC__COUNT; k++)
		if (t->by[k] > t->by[best])
			best = k;
	return n[best];
}

/* The row's figures above the link's limit, each signal's and the events' with them (the
 * keys of JSON's "suspect"), the limit and the link: why a column says "suspect". */
static void text_suspect(FILE *f, const struct nccl_time *t, const struct bw_link *l)
{
	struct gp_text_suspect sus = { 0 };

	if (!t->bus_factor)
		return;
	if (t->window_ns)
		gp_text__suspect_add(&sus, l, "busbw", algbw(t) * t->bus_factor);
	for (int k = 0; k < NCCL_SYNC__COUNT; k++)
		if (t->ns_by[k])
			gp_text__suspect_add(&sus, l, nccl_sync_name((enum nccl_sync)k),
					     (double)t->size_by[k] / secs(t->ns_by[k]) * t->bus_factor);
	if (t->event_ns)
		gp_text__suspect_add(&sus, l, "event_elapsed", (double)t->event_size / secs(t->event_ns) * t->bus_factor);
	gp_text__suspect_line(f, "      ", &sus);
}

static void text_times(FILE *f, const struct nccl_comm_snap *c, const struct bw_link *l)
{
	if (!c->nr_times)
		return;
	fprintf(f, "    completion (first submission to the sync that covered it: time upper bound, bandwidth lower bound)\n");
	fprintf(f, "    %-14s %10s %8s %10s %12s %12s  %s\n", "OP", "SIZE >=", "CALLS", "TIME <=", "ALGBW >=", "BUSBW >=",
		"CLOSED BY (most calls)");
	for (size_t i = 0; i < c->nr_times; i++) {
		const struct nccl_time *t = &c->times[i];
		/* above the link's limit, algbw and busbw say "suspect" (one window's figures) */
		double bus = algbw(t) * t->bus_factor, alg = bw_links__suspect(l, bus) ? bus : algbw(t);

		if (!t->calls)
			continue;
		fprintf(f, "    %-14s %10s %8s %10s %12s %12s  %s\n", nccl_op_name(t->fn), gp_text__bytes(1ULL << t->slot).s,
			gp_text__count(t->calls).s, gp_text__duration(secs(t->window_ns)).s,
			gp_text__link_rate(l, alg).s, gp_text__link_rate(l, bus).s, closed_by(t));
		if (t->event_ns) {
			double a = (double)t->event_size / secs(t->event_ns), b = a * t->bus_factor;

			fprintf(f, "    %-14s from CUDA events (GPU time %s, %s): algbw %s, busbw %s\n", "",
				gp_text__duration(secs(t->event_ns)).s, gp_text__n(t->event_windows, "window", "windows").s,
				gp_text__link_rate(l, bw_links__suspect(l, b) ? b : a).s, gp_text__link_rate(l, b).s);
		}
		text_suspect(f, t, l);
	}
}

static void text_comm(FILE *f, const struct nccl_comm_snap *c, uint64_t now, bool exited, const struct bw_links *links)
{
	char id[32], rank[32], dev[16];

	comm_id_str(id, sizeof(id), c->id_known, c->id);
	if (c->rank >= 0 && c->nranks >= 0)
		snprintf(rank, sizeof(rank), "rank %d of %d", c->rank, c->nranks);
	else
		snprintf(rank, sizeof(rank), "rank unknown");
	snprintf(dev, sizeof(dev), c->device >= 0 ? "GPU %d" : "GPU unknown", c->device);
	fprintf(f, "  comm %s (handle 0x%" PRIx64 "): %s, %s, made by %s%s\n", id, c->handle, rank, dev,
		c->made_by ? nccl_fn_name(c->made_by) : "a call before gpuprobe attached",
		c->destroyed ? ", destroyed" : "");
	text_hang(f, c, now, exited);
	text_colls(f, c);
	text_p2p(f, c);
	text_times(f, c, bw_links__for_ranks(links, c->nranks));
}

static void text_proc(FILE *f, const struct nccl_proc_snap *p, bool all, uint64_t now, const struct bw_links *links)
{
	fprintf(f, "PID %u (%s)%s: %s, %s", p->pid, p->comm, p->exec ? " before its exec" : p->exited ? " exited" : "",
		gp_text__n(p->calls, "NCCL call", "NCCL calls").s, gp_text__n(p->groups, "group", "groups").s);
	if (p->failed || all)
		fprintf(f, "; failed %s (null_comm %s, destroyed_comm %s, unknown_dtype %s)", gp_text__count(p->failed).s,
			gp_text__count(p->bad[NCCL_BAD_NULL_COMM]).s, gp_text__count(p->bad[NCCL_BAD_DESTROYED_COMM]).s,
			gp_text__count(p->bad[NCCL_BAD_UNKNOWN_DTYPE]).s);
	if (p->unsynced)
		fprintf(f, "; %s not yet covered by a synchronization", gp_text__count(p->unsynced).s);
	fputc('\n', f);
	for (size_t i = 0; i < p->nr_comms; i++)
		text_comm(f, &p->comms[i], now, p->exited, links);
}

static void text_matrix(FILE *f, const struct nccl_matrix *m, const uint64_t *cells, const char *what)
{
	int n = m->nranks > 16 ? 16 : m->nranks;

	fprintf(f, "  %s (rows: from rank, columns: to rank%s)\n    %6s", what, m->nranks > 16 ? "; the first 16" : "",
		"");
	for (int j = 0; j < n; j++)
		fprintf(f, " %10d", j);
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		fprintf(f, "    %6d", i);
		for (int j = 0; j < n; j++)
			fprintf(f, " %10s", cells[i * m->nranks + j] ? gp_text__bytes(cells[i * m->nranks + j]).s : "-");
		fputc('\n', f);
	}
}

static void text_ranks(FILE *f, uint64_t mask)
{
	int shown = 0;

	for (int r = 0; r < NCCL_MATCH_RANKS; r++) {
		if (!(mask & (1ULL << r)))
			continue;
		if (shown++ < 16)
			fprintf(f, " %d", r);
	}
	if (shown > 16)
		fprintf(f, " (+%d)", shown - 16);
}

/* Per communicator matched across its ranks here: entry skew, stragglers, a wait. */
static void text_straggles(FILE *f, const struct nccl_snap_data *d, uint64_t now)
{
	char id[32];

	for (size_t i = 0; i < d->nr_straggles; i++) {
		const struct nccl_straggle *m = &d->straggles[i];

		comm_id_str(id, sizeof(id), true, m->id);
		fprintf(f, "Stragglers %s: %d ranks, here:", id, m->nranks);
		text_ranks(f, m->local);
		fprintf(f, "; %s matched", gp_text__n(m->matched, "collective", "collectives").s);
		if (m->matched)
			fprintf(f, ", entry skew last %s (rank %d last in), mean %s, max %s",
				gp_text__duration(secs(m->last_skew_ns)).s, m->last_straggler,
				gp_text__duration(secs(m->skew_sum_ns) / (double)m->matched).s,
				gp_text__duration(secs(m->skew_max_ns)).s);
		if (m->evicted || m->late || m->duplicate)
			fprintf(f, "; not matched: %s evicted, %s late, %s duplicate", gp_text__count(m->evicted).s,
				gp_text__count(m->late).s, gp_text__count(m->duplicate).s);
		fputc('\n', f);
		for (int r = 0; r < m->nranks && r < NCCL_MATCH_RANKS; r++)
			if (m->last_to_enter[r])
				fprintf(f, "  rank %d (PID %u): last into %s, lag mean %s, max %s\n", r, m->pid[r],
					gp_text__count(m->last_to_enter[r]).s,
					gp_text__duration(secs(m->lag_ns[r]) / (double)m->last_to_enter[r]).s,
					gp_text__duration(secs(m->lag_max_ns[r])).s);
		if (m->wait_since_ns) {
			fprintf(f, "  WAITING: collective #%" PRIu64 " entered by %d, for %s, not yet by rank", m->wait_seq,
				m->wait_entered, gp_text__duration(wait_secs(m, now)).s);
			text_ranks(f, m->wait_missing);
			fputc('\n', f);
		}
	}
	if (d->match_full || d->match_share || d->match_too_large || d->match_mismatch || d->match_no_shape)
		fprintf(f, "Communicator ranks not matched: %s table full, %s past a process's share, %s over %d ranks, %s size mismatch, "
			   "%s splits of unknown shape now\n",
			gp_text__count(d->match_full).s, gp_text__count(d->match_share).s,
			gp_text__count(d->match_too_large).s, NCCL_MATCH_RANKS, gp_text__count(d->match_mismatch).s,
			gp_text__count(d->match_no_shape).s);
}

static void text_matrices(FILE *f, const struct nccl_snap_data *d)
{
	char id[32];

	for (size_t i = 0; i < d->nr_matrices; i++) {
		const struct nccl_matrix *m = &d->matrices[i];

		comm_id_str(id, sizeof(id), true, m->id);
		fprintf(f, "Communicator %s: %d ranks; processes by rank:", id, m->nranks);
		for (int r = 0; r < m->nranks && r < 16; r++)
			fprintf(f, m->pid[r] ? " %u" : " -", m->pid[r]);
		fputc('\n', f);
		text_matrix(f, m, m->p2p, "bytes sent by ncclSend (measured)");
		text_matrix(f, m, m->ring, "collective bytes sent (inferred: a ring in rank order)");
	}
}

/* Whether a communicator has a completion row: its bandwidths are held against a limit. */
static bool timed(const struct nccl_snap_data *d)
{
	for (size_t i = 0; i < d->nr_procs; i++)
		for (size_t j = 0; j < d->procs[i].nr_comms; j++)
			if (d->procs[i].comms[j].nr_times)
				return true;
	return false;
}

void nccl_report__text(FILE *f, const struct gp_snap *hdr)
{
	const struct gp_snap_env *env = hdr->env;
	const struct nccl_snap *s = SNAP(hdr);
	bool all = gp_env_verbose(env);
	char tbuf[32];

	gp_text__clock(tbuf, sizeof(tbuf));
	fprintf(f, "[%s] nccl %s report: %s\n", tbuf, gp_snap_kind_name(hdr->kind), gp_text__n(s->d.nr_procs, "process", "processes").s);
	for (size_t i = 0; i < s->d.nr_procs; i++)
		text_proc(f, &s->d.procs[i], all, hdr->now_ns, &s->links);
	text_straggles(f, &s->d, hdr->now_ns);
	text_matrices(f, &s->d);
	if (timed(&s->d))
		fprintf(f, "Link limits of bus bandwidth (one direction; a figure above its limit is printed as suspect): "
			   "GPU-GPU %s; one rank, within a GPU %s\n", gp_text__link(&s->links.peer).s,
			gp_text__link(&s->links.local).s);
	for (size_t i = 0; i < s->nr_libs; i++) {
		int missing = __builtin_popcount(s->libs[i].missing);

		fprintf(f, "libnccl %s: %s probed", s->libs[i].path,
			gp_text__n((uint64_t)s->libs[i].probed, "call", "calls").s);
		/* an older NCCL lacks some: said when it does (and with -v) */
		if (missing || all)
			fprintf(f, ", %d not exported", missing);
		fputc('\n', f);
	}
	if (!s->nr_libs)
		fprintf(f, "No libnccl probed (none found yet).\n");
	gp_drops__text(f, hdr, all);
}

/* ---- JSON ---- */

static json_object *json_colls(const struct nccl_comm_snap *c)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < c->nr_colls; i++) {
		const struct nccl_coll *x = &c->colls[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "op", json_object_new_string(nccl_op_name(x->fn)));
		json_object_object_add(o, "call", json_object_new_string(nccl_fn_name(x->fn)));
		json_object_object_add(o, "dtype", json_object_new_string(nccl_dtype_name(x->dtype)));
		json_object_object_add(o, "calls", json_object_new_uint64(x->calls));
		json_object_object_add(o, "bytes", json_object_new_uint64(x->bytes));
		json_object_object_add(o, "api_seconds", json_object_new_double(secs(x->api_ns)));
		json_object_array_add(arr, o);
	}
	return arr;
}

static json_object *json_p2p(const struct nccl_comm_snap *c)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < c->nr_p2p; i++) {
		const struct nccl_p2p *x = &c->p2p[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "peer", json_object_new_int(x->peer));
		json_object_object_add(o, "direction", json_object_new_string(x->send ? "send" : "recv"));
		json_object_object_add(o, "calls", json_object_new_uint64(x->calls));
		json_object_object_add(o, "bytes", json_object_new_uint64(x->bytes));
		json_object_object_add(o, "api_seconds", json_object_new_double(secs(x->api_ns)));
		json_object_array_add(arr, o);
	}
	return arr;
}

/* A rate: size over ns, null when ns is 0; busbw with the communicator's factor (null
 * when nranks is unknown). A busbw above the link's limit: both null, the busbw in sus at
 * sus_key (suspect: never a measurement). */
static void bw_fields(json_object *o, const char *alg_key, const char *bus_key, uint64_t size, uint64_t ns,
		      double bus_factor, json_object *sus, const char *sus_key, const struct bw_link *l)
{
	double v = ns ? (double)size / secs(ns) : 0;
	bool bad = ns && bus_factor && bw_links__suspect(l, v * bus_factor);

	json_object_object_add(o, alg_key, ns && !bad ? json_object_new_double(v) : NULL);
	gp_json__link_rate(o, bus_key, sus, sus_key, ns && bus_factor, v * bus_factor, 1, l);
}

/* Per completion signal: the size of the calls it completed, their windows, the bounds. */
static json_object *json_signals(const struct nccl_time *t, json_object *sus, const struct bw_link *l)
{
	json_object *by = json_object_new_object();

	for (int k = 0; k < NCCL_SYNC__COUNT; k++) {
		json_object *x = json_object_new_object();

		json_object_object_add(x, "size_bytes", json_object_new_uint64(t->size_by[k]));
		json_object_object_add(x, "seconds_upper_bound", json_object_new_double(secs(t->ns_by[k])));
		bw_fields(x, "algbw_bytes_per_second_lower_bound", "busbw_bytes_per_second_lower_bound", t->size_by[k],
			  t->ns_by[k], t->bus_factor, sus, nccl_sync_name((enum nccl_sync)k), l);
		json_object_object_add(by, nccl_sync_name((enum nccl_sync)k), x);
	}
	return by;
}

/* The calls between two CUDA events on their stream, over the GPU's time between them. */
static json_object *json_events(const struct nccl_time *t, json_object *sus, const struct bw_link *l)
{
	json_object *x = json_object_new_object();

	json_object_object_add(x, "size_bytes", json_object_new_uint64(t->event_size));
	json_object_object_add(x, "gpu_seconds", json_object_new_double(secs(t->event_ns)));
	json_object_object_add(x, "windows", json_object_new_uint64(t->event_windows));
	bw_fields(x, "algbw_bytes_per_second", "busbw_bytes_per_second", t->event_size, t->event_ns, t->bus_factor, sus,
		  "event_elapsed", l);
	return x;
}

/* Bus bandwidths above the link's limit go to "suspect" (as --bandwidth-util's copies): the
 * row's as "busbw_bytes_per_second_lower_bound", a signal's by its name, "event_elapsed". */
static json_object *json_time(const struct nccl_time *t, const struct bw_link *l)
{
	json_object *o = json_object_new_object(), *by = json_object_new_object(), *b = json_object_new_array();
	json_object *sus = json_object_new_object();

	json_object_object_add(o, "op", json_object_new_string(nccl_op_name(t->fn)));
	json_object_object_add(o, "call", json_object_new_string(nccl_fn_name(t->fn)));
	json_object_array_add(b, json_object_new_uint64(1ULL << t->slot));
	json_object_array_add(b, json_object_new_uint64((1ULL << (t->slot + 1)) - 1));
	json_object_object_add(o, "size_bucket", b);
	json_object_object_add(o, "calls", json_object_new_uint64(t->calls));
	json_object_object_add(o, "size_bytes", json_object_new_uint64(t->size));
	json_object_object_add(o, "seconds_upper_bound", json_object_new_double(secs(t->window_ns)));
	bw_fields(o, "algbw_bytes_per_second_lower_bound", "busbw_bytes_per_second_lower_bound", t->size, t->window_ns,
		  t->bus_factor, sus, "busbw_bytes_per_second_lower_bound", l);
	for (int k = 0; k < NCCL_SYNC__COUNT; k++)
		json_object_object_add(by, nccl_sync_name((enum nccl_sync)k), json_object_new_uint64(t->by[k]));
	json_object_object_add(o, "completed_by", by);
	json_object_object_add(o, "by_signal", json_signals(t, sus, l));
	json_object_object_add(o, "window_rate_hist_mb_s", gp_json__log2_hist(t->window_hist, NCCL_SIZE_SLOTS));
	json_object_object_add(o, "event_elapsed", json_events(t, sus, l));
	gp_json__add_suspect(o, sus, l);
	return o;
}

static json_object *json_comm(const struct nccl_comm_snap *c, uint64_t now, const struct bw_links *links)
{
	json_object *o = json_object_new_object(), *ts = json_object_new_array();

	json_object_object_add(o, "comm_id", id_json(c->id_known, c->id));
	json_object_object_add(o, "handle", gp_json__hex(c->handle));
	json_object_object_add(o, "nranks", int_or_null(c->nranks));
	json_object_object_add(o, "rank", int_or_null(c->rank));
	json_object_object_add(o, "device", int_or_null(c->device));
	json_object_object_add(o, "shape_from", json_object_new_string(nccl_shape_name(c->shape)));
	json_object_object_add(o, "made_by", c->made_by ? json_object_new_string(nccl_fn_name(c->made_by)) : NULL);
	json_object_object_add(o, "parent_id", id_json(c->parent_known, c->parent_id));
	if (c->made_by == GP_NCCL_CommSplit) {
		json_object_object_add(o, "color", json_object_new_int(c->color));
		json_object_object_add(o, "key", json_object_new_int(c->key));
	}
	json_object_object_add(o, "destroyed", json_object_new_boolean(c->destroyed));
	json_object_object_add(o, "collectives", json_colls(c));
	json_object_object_add(o, "p2p", json_p2p(c));
	for (size_t i = 0; i < c->nr_times; i++)
		if (c->times[i].calls)
			json_object_array_add(ts, json_time(&c->times[i], bw_links__for_ranks(links, c->nranks)));
	json_object_object_add(o, "completion", ts);
	json_object_object_add(o, "unattributed_bytes", json_object_new_uint64(c->unattributed_bytes));
	json_object_object_add(o, "issued_calls", json_object_new_uint64(c->issued));
	json_object_object_add(o, "completed_calls", json_object_new_uint64(c->completed));
	json_object_object_add(o, "inflight_calls", json_object_new_uint64(inflight(c)));
	json_object_object_add(o, "seconds_since_completion",
			       since_done(c, now) >= 0 ? json_object_new_double(since_done(c, now)) : NULL);
	json_object_object_add(o, "entered_collectives", json_object_new_uint64(c->entered));
	json_object_object_add(o, "last_to_enter", json_object_new_uint64(c->last_to_enter));
	json_object_object_add(o, "straggler_lag_seconds", json_object_new_double(secs(c->lag_ns)));
	json_object_object_add(o, "straggler_lag_max_seconds", json_object_new_double(secs(c->lag_max_ns)));
	return o;
}

static json_object *json_proc(const struct nccl_proc_snap *p, uint64_t now, const struct bw_links *links)
{
	json_object *o = json_object_new_object(), *cs = json_object_new_array(), *bad = json_object_new_object();

	json_object_object_add(o, "pid", json_object_new_int64(p->pid));
	json_object_object_add(o, "comm", json_object_new_string(p->comm));
	json_object_object_add(o, "exited", json_object_new_boolean(p->exited));
	json_object_object_add(o, "exec", json_object_new_boolean(p->exec));
	json_object_object_add(o, "calls", json_object_new_uint64(p->calls));
	json_object_object_add(o, "groups", json_object_new_uint64(p->groups));
	json_object_object_add(o, "failed_calls", json_object_new_uint64(p->failed));
	for (int k = 0; k < NCCL_BAD__COUNT; k++)
		json_object_object_add(bad, nccl_bad_name((enum nccl_bad)k), json_object_new_uint64(p->bad[k]));
	json_object_object_add(o, "bad_calls", bad);
	json_object_object_add(o, "nested_calls", json_object_new_uint64(p->nested));
	json_object_object_add(o, "init_all_calls", json_object_new_uint64(p->other));
	json_object_object_add(o, "unsynced_calls", json_object_new_uint64(p->unsynced));
	for (size_t i = 0; i < p->nr_comms; i++)
		json_object_array_add(cs, json_comm(&p->comms[i], now, links));
	json_object_object_add(o, "comms", cs);
	return o;
}

static json_object *json_cells(const struct nccl_matrix *m, const uint64_t *cells)
{
	json_object *rows = json_object_new_array();

	for (int i = 0; i < m->nranks; i++) {
		json_object *row = json_object_new_array();

		for (int j = 0; j < m->nranks; j++)
			json_object_array_add(row, json_object_new_uint64(cells[i * m->nranks + j]));
		json_object_array_add(rows, row);
	}
	return rows;
}

static json_object *json_matrix(const struct nccl_matrix *m)
{
	json_object *o = json_object_new_object(), *ranks = json_object_new_array();

	json_object_object_add(o, "comm_id", id_json(true, m->id));
	json_object_object_add(o, "nranks", json_object_new_int(m->nranks));
	for (int r = 0; r < m->nranks; r++)
		json_object_array_add(ranks, m->pid[r] ? json_object_new_int64(m->pid[r]) : NULL);
	json_object_object_add(o, "pids_by_rank", ranks);
	json_object_object_add(o, "p2p_bytes", json_cells(m, m->p2p));
	json_object_object_add(o, "collective_bytes_inferred", json_cells(m, m->ring));
	json_object_object_add(o, "inference", json_object_new_string(ring_note));
	return o;
}

static json_object *json_rank_list(uint64_t mask)
{
	json_object *a = json_object_new_array();

	for (int r = 0; r < NCCL_MATCH_RANKS; r++)
		if (mask & (1ULL << r))
			json_object_array_add(a, json_object_new_int(r));
	return a;
}

static json_object *json_straggle(const struct nccl_straggle *m, uint64_t now)
{
	json_object *o = json_object_new_object(), *ranks = json_object_new_array(), *w = NULL;

	json_object_object_add(o, "comm_id", id_json(true, m->id));
	json_object_object_add(o, "nranks", json_object_new_int(m->nranks));
	json_object_object_add(o, "ranks_here", json_rank_list(m->local));
	json_object_object_add(o, "matched", json_object_new_uint64(m->matched));
	json_object_object_add(o, "evicted", json_object_new_uint64(m->evicted));
	json_object_object_add(o, "late", json_object_new_uint64(m->late));
	json_object_object_add(o, "duplicate", json_object_new_uint64(m->duplicate));
	json_object_object_add(o, "skew_seconds_sum", json_object_new_double(secs(m->skew_sum_ns)));
	json_object_object_add(o, "skew_seconds_max", json_object_new_double(secs(m->skew_max_ns)));
	json_object_object_add(o, "last_skew_seconds", json_object_new_double(secs(m->last_skew_ns)));
	json_object_object_add(o, "last_straggler", int_or_null(m->last_straggler));
	json_object_object_add(o, "skew_hist_us", gp_json__log2_hist(m->skew_hist, NCCL_SKEW_SLOTS));
	for (int r = 0; r < m->nranks && r < NCCL_MATCH_RANKS; r++) {
		json_object *x;

		if (!(m->local & (1ULL << r)))
			continue;
		x = json_object_new_object();
		json_object_object_add(x, "rank", json_object_new_int(r));
		json_object_object_add(x, "pid", json_object_new_int64(m->pid[r]));
		json_object_object_add(x, "last_to_enter", json_object_new_uint64(m->last_to_enter[r]));
		json_object_object_add(x, "lag_seconds", json_object_new_double(secs(m->lag_ns[r])));
		json_object_object_add(x, "lag_max_seconds", json_object_new_double(secs(m->lag_max_ns[r])));
		json_object_array_add(ranks, x);
	}
	json_object_object_add(o, "ranks", ranks);
	if (m->wait_since_ns) {
		w = json_object_new_object();
		json_object_object_add(w, "collective", json_object_new_uint64(m->wait_seq));
		json_object_object_add(w, "entered_by", json_object_new_int(m->wait_entered));
		json_object_object_add(w, "missing_ranks", json_rank_list(m->wait_missing));
		json_object_object_add(w, "seconds", json_object_new_double(wait_secs(m, now)));
	}
	json_object_object_add(o, "waiting", w);
	return o;
}

static json_object *json_libs(const struct nccl_snap *s)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < s->nr_libs; i++) {
		json_object *o = json_object_new_object(), *miss = json_object_new_array();

		json_object_object_add(o, "path", json_object_new_string(s->libs[i].path));
		json_object_object_add(o, "probed_calls", json_object_new_int(s->libs[i].probed));
		for (int fn = 1; fn < GP_NCCL__COUNT; fn++)
			if (s->libs[i].missing & (1U << fn))
				json_object_array_add(miss, json_object_new_string(nccl_fn_name(fn)));
		json_object_object_add(o, "missing_calls", miss);
		json_object_array_add(arr, o);
	}
	return arr;
}

void nccl_report__json(json_object *o, const struct gp_snap *hdr)
{
	const struct nccl_snap *s = SNAP(hdr);
	json_object *procs = json_object_new_array(), *ms = json_object_new_array();

	json_object *st = json_object_new_array(), *nm = json_object_new_object();

	for (size_t i = 0; i < s->d.nr_procs; i++)
		json_object_array_add(procs, json_proc(&s->d.procs[i], hdr->now_ns, &s->links));
	json_object_object_add(o, "processes", procs);
	for (size_t i = 0; i < s->d.nr_straggles; i++)
		json_object_array_add(st, json_straggle(&s->d.straggles[i], hdr->now_ns));
	json_object_object_add(o, "stragglers", st);
	json_object_object_add(nm, "table_full", json_object_new_uint64(s->d.match_full));
	json_object_object_add(nm, "share", json_object_new_uint64(s->d.match_share));
	json_object_object_add(nm, "too_large", json_object_new_uint64(s->d.match_too_large));
	json_object_object_add(nm, "mismatch", json_object_new_uint64(s->d.match_mismatch));
	json_object_object_add(nm, "shape_unknown", json_object_new_uint64(s->d.match_no_shape));
	json_object_object_add(o, "communicators_not_matched", nm);
	for (size_t i = 0; i < s->d.nr_matrices; i++)
		json_object_array_add(ms, json_matrix(&s->d.matrices[i]));
	json_object_object_add(o, "communicators", ms);
	json_object_object_add(o, "libraries", json_libs(s));
	json_object_object_add(o, "polls", json_object_new_uint64(s->polls));
	json_object_object_add(o, "links", gp_json__links(&s->links));
}

/* ---- --trace ---- */

json_object *nccl_report__trace_args(const struct gp_nccl_event *e, bool id_known, uint64_t comm_id)
{
	json_object *a = json_object_new_object();
	uint64_t size = nccl_dtype_size(e->dtype);

	if (e->fn == GP_NCCL_GroupStart || e->fn == GP_NCCL_GroupEnd)
		return a;
	json_object_object_add(a, "comm", gp_json__hex(e->newcomm ? e->newcomm : e->comm));
	json_object_object_add(a, "comm_id", id_json(id_known, comm_id));
	if (!nccl_fn_is_data((int)e->fn)) {
		if (e->nranks >= 0)
			json_object_object_add(a, "nranks", json_object_new_int(e->nranks));
		if (e->rank >= 0)
			json_object_object_add(a, "rank", json_object_new_int(e->rank));
		if (e->fn == GP_NCCL_CommSplit) {
			json_object_object_add(a, "color", json_object_new_int(e->color));
			json_object_object_add(a, "key", json_object_new_int(e->key));
		}
		return a;
	}
	json_object_object_add(a, "op", json_object_new_string(nccl_op_name((int)e->fn)));
	json_object_object_add(a, "dtype", json_object_new_string(nccl_dtype_name(e->dtype)));
	json_object_object_add(a, "count", json_object_new_uint64(e->count));
	json_object_object_add(a, "bytes", size ? json_object_new_uint64(e->count * size) : NULL);
	if (e->peer >= 0)
		json_object_object_add(a, e->fn == GP_NCCL_Send || e->fn == GP_NCCL_Recv ? "peer" : "root",
				       json_object_new_int(e->peer));
	json_object_object_add(a, "stream", gp_json__hex(e->stream));
	return a;
}

/* ---- /metrics ---- */

static const struct {
	const char *name;
} fams[] = {
	{ "gpuprobe_nccl_calls_total" }, { "gpuprobe_nccl_bytes_total" }, { "gpuprobe_nccl_api_seconds_total" },
	{ "gpuprobe_nccl_p2p_bytes_total" }, { "gpuprobe_nccl_p2p_calls_total" }, { "gpuprobe_nccl_completed_calls_total" },
	{ "gpuprobe_nccl_completion_upper_bound_seconds_total" }, { "gpuprobe_nccl_completed_size_bytes_total" },
	{ "gpuprobe_nccl_bad_calls_total" }, { "gpuprobe_nccl_failed_calls_total" }, { "gpuprobe_nccl_groups_total" },
	{ "gpuprobe_nccl_inflight_collectives" }, { "gpuprobe_nccl_since_completion_seconds" },
	{ "gpuprobe_nccl_entered_collectives_total" }, { "gpuprobe_nccl_last_to_enter_total" },
	{ "gpuprobe_nccl_straggler_lag_seconds_total" }, { "gpuprobe_nccl_entry_skew_seconds" },
	{ "gpuprobe_nccl_entry_skew_last_seconds" }, { "gpuprobe_nccl_last_straggler_rank" },
	{ "gpuprobe_nccl_waiting_for_rank_seconds" },
	{ "gpuprobe_nccl_match_dropped_total" },
};
enum {
	F_CALLS, F_BYTES, F_API, F_P2P_BYTES, F_P2P_CALLS, F_DONE, F_WINDOW, F_SIZE, F_BAD, F_FAILED, F_GROUPS,
	F_INFLIGHT, F_SINCE, F_ENTERED, F_LAST, F_LAG, F_SKEW, F_SKEW_LAST, F_STRAGGLER, F_WAITING, F_MATCH_DROP,
};
#define WAIT_SERIES 8 /* ranks waited for with a series of their own, per communicator */
_Static_assert(NCCL_SKEW_SLOTS == PROM_HIST_SLOTS, "the skew histogram is written as prom__hist's slots");

/* Sums of the communicators past the series cap, per (fn, dtype) and p2p direction. */
struct other {
	uint64_t calls[GP_NCCL__COUNT][NCCL_NTYPES + 1], bytes[GP_NCCL__COUNT][NCCL_NTYPES + 1];
	uint64_t api[GP_NCCL__COUNT][NCCL_NTYPES + 1];
	uint64_t p2p_calls[2], p2p_bytes[2];
	uint64_t inflight, entered, last, lag_ns;
	double since; /* the largest; < 0: none */
	bool any;
};

/* A running process's hang figures and the collectives it was last into. */
static void prom_hang(struct prom_out *p, const struct gp_snap_pid *pp, const struct nccl_comm_snap *c,
		      const char *id, const char *rank, uint64_t now)
{
	const char *kv[] = { "comm_id", id, "rank", rank, NULL };
	double since = since_done(c, now);

	if (since >= 0 && !pp->exited) {
		prom__u64(p, fams[F_INFLIGHT].name, pp, kv, inflight(c));
		prom__secs(p, fams[F_SINCE].name, pp, kv, since);
	}
	if (c->entered)
		prom__u64(p, fams[F_ENTERED].name, pp, kv, c->entered);
	if (c->last_to_enter) {
		prom__u64(p, fams[F_LAST].name, pp, kv, c->last_to_enter);
		prom__secs(p, fams[F_LAG].name, pp, kv, secs(c->lag_ns));
	}
}

static void prom_colls(struct prom_out *p, const struct gp_snap_pid *pp, const struct nccl_comm_snap *c,
		       const char *id, const char *rank)
{
	for (size_t i = 0; i < c->nr_colls; i++) {
		const struct nccl_coll *x = &c->colls[i];
		const char *kv[] = { "comm_id", id, "rank", rank, "op", nccl_op_name(x->fn), "call",
				     nccl_fn_name(x->fn), "dtype", nccl_dtype_name(x->dtype), NULL };

		prom__u64(p, fams[F_CALLS].name, pp, kv, x->calls);
		prom__u64(p, fams[F_BYTES].name, pp, kv, x->bytes);
		prom__secs(p, fams[F_API].name, pp, kv, secs(x->api_ns));
	}
}

static void prom_p2p(struct prom_out *p, const struct gp_snap_pid *pp, const struct nccl_comm_snap *c,
		     const char *id, const char *rank)
{
	uint64_t oc[2] = { 0 }, ob[2] = { 0 };
	char peer[16];

	for (size_t i = 0; i < c->nr_p2p; i++) {
		const struct nccl_p2p *x = &c->p2p[i];
		const char *kv[] = { "comm_id", id, "rank", rank, "peer", peer, "direction", x->send ? "send" : "recv",
				     NULL };

		if (i >= PEER_SERIES) {
			oc[x->send] += x->calls;
			ob[x->send] += x->bytes;
			continue;
		}
		snprintf(peer, sizeof(peer), "%d", x->peer);
		prom__u64(p, fams[F_P2P_CALLS].name, pp, kv, x->calls);
		prom__u64(p, fams[F_P2P_BYTES].name, pp, kv, x->bytes);
	}
	for (int s = 0; s < 2 && c->nr_p2p > PEER_SERIES; s++) {
		const char *kv[] = { "comm_id", id, "rank", rank, "peer", "other", "direction", s ? "send" : "recv", NULL };

		prom__u64(p, fams[F_P2P_CALLS].name, pp, kv, oc[s]);
		prom__u64(p, fams[F_P2P_BYTES].name, pp, kv, ob[s]);
	}
}

/* Completion per op: the size buckets summed (the JSON has them apart). */
static void prom_times(struct prom_out *p, const struct gp_snap_pid *pp, const struct nccl_comm_snap *c,
		       const char *id, const char *rank)
{
	for (int fn = GP_NCCL_AllReduce; fn <= GP_NCCL_Recv; fn++) {
		uint64_t calls = 0, ns = 0, size = 0;
		const char *kv[] = { "comm_id", id, "rank", rank, "op", nccl_op_name(fn), "call", nccl_fn_name(fn), NULL };

		for (size_t i = 0; i < c->nr_times; i++) {
			if (c->times[i].fn != fn)
				continue;
			calls += c->times[i].calls;
			ns += c->times[i].window_ns;
			size += c->times[i].size;
		}
		if (!calls)
			continue;
		prom__u64(p, fams[F_DONE].name, pp, kv, calls);
		prom__secs(p, fams[F_WINDOW].name, pp, kv, secs(ns));
		prom__u64(p, fams[F_SIZE].name, pp, kv, size);
	}
}

static void add_other(struct other *o, const struct nccl_comm_snap *c, uint64_t now)
{
	double since = since_done(c, now);

	o->any = true;
	o->inflight += inflight(c);
	o->entered += c->entered;
	o->last += c->last_to_enter;
	o->lag_ns += c->lag_ns;
	if (since > o->since)
		o->since = since;
	for (size_t i = 0; i < c->nr_colls; i++) {
		const struct nccl_coll *x = &c->colls[i];

		o->calls[x->fn][x->dtype + 1] += x->calls;
		o->bytes[x->fn][x->dtype + 1] += x->bytes;
		o->api[x->fn][x->dtype + 1] += x->api_ns;
	}
	for (size_t i = 0; i < c->nr_p2p; i++) {
		o->p2p_calls[c->p2p[i].send] += c->p2p[i].calls;
		o->p2p_bytes[c->p2p[i].send] += c->p2p[i].bytes;
	}
}

static void prom_other(struct prom_out *p, const struct gp_snap_pid *pp, const struct other *o)
{
	const char *hk[] = { "comm_id", "other", "rank", "", NULL };

	if (o->any && o->since >= 0 && !pp->exited) {
		prom__u64(p, fams[F_INFLIGHT].name, pp, hk, o->inflight);
		prom__secs(p, fams[F_SINCE].name, pp, hk, o->since);
	}
	if (o->entered)
		prom__u64(p, fams[F_ENTERED].name, pp, hk, o->entered);
	if (o->last) {
		prom__u64(p, fams[F_LAST].name, pp, hk, o->last);
		prom__secs(p, fams[F_LAG].name, pp, hk, secs(o->lag_ns));
	}
	for (int fn = 0; o->any && fn < GP_NCCL__COUNT; fn++)
		for (int t = 0; t <= NCCL_NTYPES; t++) {
			const char *kv[] = { "comm_id", "other", "rank", "", "op", nccl_op_name(fn), "call", nccl_fn_name(fn),
					     "dtype", nccl_dtype_name(t - 1), NULL };

			if (!o->calls[fn][t])
				continue;
			prom__u64(p, fams[F_CALLS].name, pp, kv, o->calls[fn][t]);
			prom__u64(p, fams[F_BYTES].name, pp, kv, o->bytes[fn][t]);
			prom__secs(p, fams[F_API].name, pp, kv, secs(o->api[fn][t]));
		}
	for (int s = 0; o->any && s < 2; s++) {
		const char *kv[] = { "comm_id", "other", "rank", "", "peer", "other", "direction", s ? "send" : "recv", NULL };

		if (!o->p2p_calls[s])
			continue;
		prom__u64(p, fams[F_P2P_CALLS].name, pp, kv, o->p2p_calls[s]);
		prom__u64(p, fams[F_P2P_BYTES].name, pp, kv, o->p2p_bytes[s]);
	}
}

/* pp: this process's own, for the render (src/out/prom.c tells processes apart by it) */
static void prom_proc(struct prom_out *p, const struct nccl_proc_snap *sp, uint64_t max_comms,
		      struct gp_snap_pid *pp, uint64_t now)
{
	struct other *o = calloc(1, sizeof(*o));

	if (o)
		o->since = -1;
	*pp = (struct gp_snap_pid){ .pid = sp->pid, .exited = sp->exited, .exit_ns = sp->exit_ns, .unnamed = sp->unnamed };
	memcpy(pp->comm, sp->comm, sizeof(pp->comm));
	for (size_t j = 0; j < sp->nr_comms; j++) {
		const struct nccl_comm_snap *c = &sp->comms[j];
		char id[32], rank[16] = "";

		if (j >= max_comms) {
			if (o)
				add_other(o, c, now);
			continue;
		}
		comm_id_str(id, sizeof(id), c->id_known, c->id);
		if (!c->id_known) /* one series per communicator even when its id is unknown */
			snprintf(id, sizeof(id), "handle:0x%" PRIx64, c->handle);
		if (c->rank >= 0)
			snprintf(rank, sizeof(rank), "%d", c->rank);
		prom_colls(p, pp, c, id, rank);
		prom_p2p(p, pp, c, id, rank);
		prom_times(p, pp, c, id, rank);
		prom_hang(p, pp, c, id, rank, now);
	}
	if (o)
		prom_other(p, pp, o);
	free(o);
	for (int k = 0; k < NCCL_BAD__COUNT; k++) {
		const char *kv[] = { "reason", nccl_bad_name((enum nccl_bad)k), NULL };

		prom__u64(p, fams[F_BAD].name, pp, kv, sp->bad[k]);
	}
	prom__u64(p, fams[F_FAILED].name, pp, NULL, sp->failed);
	prom__u64(p, fams[F_GROUPS].name, pp, NULL, sp->groups);
}

/* The ranks a communicator's oldest unfinished collective waits for: the first
 * WAIT_SERIES their own, the rest under "other" (the wait is one: their collective's). */
static void prom_waiting(struct prom_out *p, const struct nccl_straggle *m, const char *id, uint64_t now)
{
	int shown = 0;
	char rank[16];

	for (int r = 0; r < NCCL_MATCH_RANKS && m->wait_since_ns; r++) {
		const char *kv[] = { "comm_id", id, "rank", rank, NULL };

		if (!(m->wait_missing & (1ULL << r)))
			continue;
		if (shown++ == WAIT_SERIES) {
			kv[3] = "other";
			prom__secs(p, fams[F_WAITING].name, NULL, kv, wait_secs(m, now));
			return;
		}
		snprintf(rank, sizeof(rank), "%d", r);
		prom__secs(p, fams[F_WAITING].name, NULL, kv, wait_secs(m, now));
	}
}

/* Node-wide: per communicator matched, its entry skew and who waits; what was not matched. */
static void prom_straggles(struct prom_out *p, const struct nccl_snap_data *d, uint64_t now)
{
	uint64_t evicted = 0, late = 0, dup = 0;
	char id[32];

	for (size_t i = 0; i < d->nr_straggles; i++) {
		const struct nccl_straggle *m = &d->straggles[i];
		const char *kv[] = { "comm_id", id, NULL };

		comm_id_str(id, sizeof(id), true, m->id);
		evicted += m->evicted;
		late += m->late;
		dup += m->duplicate;
		if (m->matched) {
			prom__hist(p, fams[F_SKEW].name, NULL, kv, m->skew_hist, secs(m->skew_sum_ns));
			prom__secs(p, fams[F_SKEW_LAST].name, NULL, kv, secs(m->last_skew_ns));
			prom__u64(p, fams[F_STRAGGLER].name, NULL, kv, (uint64_t)m->last_straggler);
		}
		prom_waiting(p, m, id, now);
	}
	const struct {
		const char *why;
		uint64_t n;
	} drop[] = { { "evicted", evicted }, { "late", late }, { "duplicate", dup }, { "table_full", d->match_full },
		     { "share", d->match_share }, { "too_large", d->match_too_large }, { "mismatch", d->match_mismatch } };

	for (size_t k = 0; k < sizeof(drop) / sizeof(drop[0]); k++) {
		const char *kv[] = { "reason", drop[k].why, NULL };

		prom__u64(p, fams[F_MATCH_DROP].name, NULL, kv, drop[k].n);
	}
}

int nccl_report__prom(struct prom_out *p, const struct gp_snap *hdr)
{
	const struct nccl_snap *s = SNAP(hdr);
	struct gp_snap_pid *pids = calloc(s->d.nr_procs + 1, sizeof(*pids));

	if (!pids)
		return -ENOMEM;
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
		prom__family(p, fams[f].name);
	for (size_t i = 0; i < s->d.nr_procs; i++)
		if (s->d.procs[i].calls) /* no NCCL call yet: no series */
			prom_proc(p, &s->d.procs[i], s->max_comm_series, &pids[i], hdr->now_ns);
	free(pids);
	prom_straggles(p, &s->d, hdr->now_ns);
	return 0;
}
