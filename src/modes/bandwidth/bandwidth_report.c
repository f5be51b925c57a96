/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --bandwidth-util's renderers: text, JSON and Prometheus, from a snapshot only. A rate
 * above what its link can carry (struct bw_links) is never printed as a measurement: text
 * says "suspect", JSON moves it to "suspect" with the limit it broke.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "modes/bandwidth/bandwidth_mode.h"
#include "out/json.h"
#include "out/prom.h"
#include "out/text.h"

#define SNAP(s) ((const struct bw_snap *)(s))
#define MATRIX_MAX 16 /* GPUs a text matrix shows; the JSON has every pair */

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static double pinned_rate(const struct bw_stat *x)
{
	return x->sync_ns > x->pageable_sync_ns ?
	       (double)(x->sync_bytes - x->pageable_sync_bytes) / secs(x->sync_ns - x->pageable_sync_ns) : 0;
}

static double pageable_rate(const struct bw_stat *x)
{
	return x->pageable_sync_ns ? (double)x->pageable_sync_bytes / secs(x->pageable_sync_ns) : 0;
}

static double async_rate(const struct bw_stat *x)
{
	return x->async_ns ? (double)x->async_done_bytes / secs(x->async_ns) : 0;
}

static double pair_rate(const struct bw_pair *x)
{
	return x->window_ns ? (double)x->done_bytes / secs(x->window_ns) : 0;
}

static const struct bw_link *pair_link(const struct bw_links *l, const struct bw_pair *x)
{
	return bw_links__for(l, x->src >= 0 && x->src == x->dst ? BW_D2D : BW_PEER);
}

/* A rate column: SI bytes per second, "-" when nothing was measured, or "suspect" when the
 * link cannot carry it. */
static void rate_col(char *buf, size_t len, const struct bw_link *l, double bps)
{
	snprintf(buf, len, "%s", gp_text__link_rate(l, bps).s);
}

static void gpu_name(char *buf, size_t len, int gpu)
{
	if (gpu < 0)
		snprintf(buf, len, "?");
	else
		snprintf(buf, len, "%d", gpu);
}

/* A duration column: "-" when there was no such copy */
static const char *dur_col(char *buf, size_t len, uint64_t ns, uint64_t copies)
{
	snprintf(buf, len, "%s", copies ? gp_text__duration(secs(ns)).s : "-");
	return buf;
}

static void text_stats(FILE *f, const struct bw_snap_proc *p, const struct bw_links *links)
{
	fprintf(f, "  %-4s %-5s %7s %10s %10s %11s %11s %11s %12s %8s\n", "GPU", "DIR", "COPIES", "BYTES",
		"SYNC TIME", "PINNED", "PAGED", "ASYNC <=", "ASYNC >=", "PAGEABLE");
	fprintf(f, "  %-4s %-5s %7s %10s %10s %11s %11s %11s %12s %8s\n", "", "", "", "", "", "sync rate", "sync rate",
		"time", "rate", "copies");
	for (size_t s = 0; s < p->nr_stats; s++) {
		const struct bw_stat *x = &p->stats[s];
		const struct bw_link *l = bw_links__for(links, x->dir);
		char gpu[16], pin[80], pag[80], asy[80], st[80], at[80];

		snprintf(gpu, sizeof(gpu), x->gpu < 0 ? "-" : "%d", x->gpu);
		rate_col(pin, sizeof(pin), l, pinned_rate(x));
		rate_col(pag, sizeof(pag), l, pageable_rate(x));
		rate_col(asy, sizeof(asy), l, async_rate(x));
		fprintf(f, "  %-4s %-5s %7s %10s %10s %11s %11s %11s %12s %8s\n", gpu, bw_dir_name(x->dir),
			gp_text__count(x->copies).s, gp_text__bytes(x->bytes).s,
			dur_col(st, sizeof(st), x->sync_ns, x->sync_copies), pin, pag,
			dur_col(at, sizeof(at), x->async_ns, x->async_done_copies), asy, gp_text__count(x->pageable_copies).s);
	}
}

/* The GPUs that appear in p's pairs, sorted (-1 first), at most MATRIX_MAX. */
static int matrix_gpus(const struct bw_snap_proc *p, int *gpus)
{
	int n = 0;

	for (size_t i = 0; i < p->nr_pairs; i++) {
		int g[2] = { p->pairs[i].src, p->pairs[i].dst };

		for (int k = 0; k < 2; k++) {
			int j;

			for (j = 0; j < n && gpus[j] != g[k]; j++)
				;
			if (j == n && n < MATRIX_MAX)
				gpus[n++] = g[k];
		}
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && gpus[j - 1] > gpus[j]; j--) {
			int t = gpus[j];

			gpus[j] = gpus[j - 1];
			gpus[j - 1] = t;
		}
	return n;
}

static const struct bw_pair *find_pair(const struct bw_snap_proc *p, int src, int dst)
{
	for (size_t i = 0; i < p->nr_pairs; i++)
		if (p->pairs[i].src == src && p->pairs[i].dst == dst)
			return &p->pairs[i];
	return NULL;
}

/* One matrix: bytes (rate false) or the bandwidth lower bound (rate true). */
static void text_matrix(FILE *f, const struct bw_snap_proc *p, const struct bw_links *links,
			const int *gpus, int n, bool rate)
{
	char name[16], cell[80];

	fprintf(f, "    %-8s", rate ? "rate >=" : "bytes");
	for (int j = 0; j < n; j++) {
		gpu_name(name, sizeof(name), gpus[j]);
		fprintf(f, " %11s", name);
	}
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		gpu_name(name, sizeof(name), gpus[i]);
		fprintf(f, "    %-8s", name);
		for (int j = 0; j < n; j++) {
			const struct bw_pair *x = find_pair(p, gpus[i], gpus[j]);

			if (!x)
				snprintf(cell, sizeof(cell), "-");
			else if (!rate)
				snprintf(cell, sizeof(cell), "%s", gp_text__bytes(x->bytes).s);
			else if (!x->window_ns)
				snprintf(cell, sizeof(cell), "unsynced");
			else
				rate_col(cell, sizeof(cell), pair_link(links, x), pair_rate(x));
			fprintf(f, " %11s", cell);
		}
		fputc('\n', f);
	}
}

/* "stream sync", "context sync", "event sync", "stream query", "event query", "event elapsed" */
static const char *signal_label(enum bw_sync_kind k)
{
	static const char *const n[BW_SYNC__COUNT] = { "stream sync", "context sync", "event sync",
						       "stream query", "event query", "event elapsed" };

	return k < BW_SYNC__COUNT ? n[k] : "?";
}

/* What closed the windows of `what`'s copies (each signal's bound), the GPU's own time
 * between events when events covered them, and the rate of each completed batch. */
static void text_signals(FILE *f, const char *what, const struct bw_signals *g, const struct bw_link *l)
{
	bool any = false;
	char r[80];

	for (int k = 0; k < BW_SYNC__COUNT; k++)
		any |= g->ns[k] != 0;
	if (!any && !g->event_ns)
		return;
	fprintf(f, "  %s, bandwidth by the signal that closed the window (>=):", what);
	for (int k = 0, first = 1; k < BW_SYNC__COUNT; k++) {
		if (!g->ns[k])
			continue;
		rate_col(r, sizeof(r), l, (double)g->bytes[k] / secs(g->ns[k]));
		fprintf(f, "%s %s %s (%s)", first ? "" : ",", signal_label((enum bw_sync_kind)k), r,
			gp_text__bytes(g->bytes[k]).s);
		first = 0;
	}
	fputc('\n', f);
	if (g->event_ns) {
		rate_col(r, sizeof(r), l, (double)g->event_bytes / secs(g->event_ns));
		fprintf(f, "    from CUDA events (the GPU's time between two records): %s in %s = %s (%s)\n",
			gp_text__bytes(g->event_bytes).s, gp_text__duration(secs(g->event_ns)).s, r,
			gp_text__n(g->event_windows, "window", "windows").s);
	}
	fprintf(f, "    per completed batch:\n");
	gp_text__rate_hist(f, g->window_hist, BW_HIST_SLOTS, 1e6);
}

static void text_pairs(FILE *f, const struct bw_snap_proc *p, const struct bw_links *links)
{
	uint64_t by[BW_SYNC__COUNT] = { 0 }, copies = 0, done = 0;
	int gpus[MATRIX_MAX], n = matrix_gpus(p, gpus);

	if (!p->nr_pairs)
		return;
	for (size_t i = 0; i < p->nr_pairs; i++) {
		copies += p->pairs[i].copies;
		done += p->pairs[i].done_copies;
		for (int k = 0; k < BW_SYNC__COUNT; k++)
			by[k] += p->pairs[i].done_by[k];
	}
	fprintf(f, "  Copies between device memory, GPU x GPU (rows: source, columns: destination; ?: GPU unknown):\n");
	text_matrix(f, p, links, gpus, n, false);
	fprintf(f, "    bandwidth: bytes over the window from the first submission to the synchronization that\n"
		   "    covered them (a lower bound; the calls return before the copy is done):\n");
	text_matrix(f, p, links, gpus, n, true);
	fprintf(f, "    %s of %s completed by a signal:", gp_text__count(done).s, gp_text__count(copies).s);
	for (int k = 0; k < BW_SYNC__COUNT; k++) /* the three syncs always, the other signals when they did */
		if (k <= BW_SYNC_EVENT || by[k])
			fprintf(f, "%s %s %s", k ? "," : "", signal_label((enum bw_sync_kind)k), gp_text__count(by[k]).s);
	fputc('\n', f);
	for (size_t i = 0; i < p->nr_pairs; i++) {
		char what[64];

		snprintf(what, sizeof(what), "GPU %d -> %d", p->pairs[i].src, p->pairs[i].dst);
		text_signals(f, what, &p->pairs[i].sig, pair_link(links, &p->pairs[i]));
	}
}

static void text_proc(FILE *f, const struct bw_snap_proc *p, const struct bw_links *links)
{
	uint64_t copies = 0, bytes = 0;

	for (size_t s = 0; s < p->nr_stats; s++) {
		copies += p->stats[s].copies;
		bytes += p->stats[s].bytes;
	}
	fprintf(f, "PID %u (%s)%s: %s, %s\n", p->pid, p->comm, p->exec ? " before its exec" : p->exited ? " exited" : "",
		gp_text__n(copies, "copy", "copies").s, gp_text__bytes_exact(bytes).s);
	if (!p->nr_stats)
		return;
	text_stats(f, p, links);
	for (size_t s = 0; s < p->nr_stats; s++) {
		const struct bw_stat *x = &p->stats[s];
		char what[64];

		if (x->dir == BW_D2D || x->dir == BW_PEER)
			continue; /* its pairs say it, below */
		if (x->gpu < 0)
			snprintf(what, sizeof(what), "%s asynchronous", bw_dir_name(x->dir));
		else
			snprintf(what, sizeof(what), "GPU %d %s asynchronous", x->gpu, bw_dir_name(x->dir));
		text_signals(f, what, &x->sig, bw_links__for(links, x->dir));
	}
	text_pairs(f, p, links);
	for (size_t s = 0; s < p->nr_stats; s++) {
		const struct bw_stat *x = &p->stats[s];

		if (!x->sync_copies)
			continue;
		if (x->gpu < 0)
			fprintf(f, "  %s synchronous copy bandwidth:\n", bw_dir_name(x->dir));
		else
			fprintf(f, "  GPU %d %s synchronous copy bandwidth:\n", x->gpu, bw_dir_name(x->dir));
		gp_text__rate_hist(f, x->rate_hist, BW_HIST_SLOTS, 1048576.0);
	}
	if (p->unsynced)
		fprintf(f, "  %s not yet covered by a synchronization\n",
			gp_text__n(p->unsynced, "asynchronous copy", "asynchronous copies").s);
	if (p->untimed)
		fprintf(f, "  %s (%s) counted, not timed: the budget sampled "
			"their synchronizations, and theirs came outside its windows\n",
			gp_text__n(p->untimed, "asynchronous copy", "asynchronous copies").s,
			gp_text__bytes_exact(p->untimed_bytes).s);
}

/* Whether a process made a copy this report counts, or has copies waiting for a sync. */
static bool copied(const struct bw_snap_proc *p)
{
	for (size_t s = 0; s < p->nr_stats; s++)
		if (p->stats[s].copies)
			return true;
	return p->unsynced || p->untimed;
}

static void text_links(FILE *f, const struct bw_links *l)
{
	fprintf(f, "Link limits (one direction; a rate above its limit is printed as suspect): host-GPU %s; "
		   "GPU-GPU %s; within a GPU %s\n", gp_text__link(&l->host).s, gp_text__link(&l->peer).s,
		gp_text__link(&l->local).s);
}

void bw_report__text(FILE *f, const struct gp_snap *hdr)
{
	const struct gp_snap_env *env = hdr->env;
	const struct bw_snap *s = SNAP(hdr);
	bool all = gp_env_verbose(env);
	char tbuf[32];

	size_t quiet = 0;

	/* a process that made no copy is a "0 copies, 0 B" line: listed with -v (JSON has it) */
	for (size_t i = 0; i < s->d.nr_procs; i++)
		quiet += !copied(&s->d.procs[i]);
	if (all)
		quiet = 0;
	gp_text__clock(tbuf, sizeof(tbuf));
	fprintf(f, "[%s] bandwidth %s report: %s", tbuf, gp_snap_kind_name(hdr->kind),
		gp_text__n(s->d.nr_procs - quiet, "process", "processes").s);
	if (quiet)
		fprintf(f, " (and %s without a copy: -v lists %s)", gp_text__n(quiet, "process", "processes").s,
			quiet == 1 ? "it" : "them");
	fputc('\n', f);
	for (size_t i = 0; i < s->d.nr_procs; i++)
		if (all || copied(&s->d.procs[i]))
			text_proc(f, &s->d.procs[i], &s->links);
	if (s->min_bytes)
		fprintf(f, "Small copies (under %s B, not counted above): %s, %s\n", gp_text__count(s->min_bytes).s,
			gp_text__n(s->small_copies, "copy", "copies").s, gp_text__bytes_exact(s->small_bytes).s);
	if (s->zero_copies || s->failed_copies || all)
		fprintf(f, "Not counted: %s, %s\n", gp_text__n(s->zero_copies, "zero-byte copy", "zero-byte copies").s,
			gp_text__n(s->failed_copies, "failed copy", "failed copies").s);
	if (s->polls)
		fprintf(f, "Polls: %s returned not ready (counted in BPF, no record: each completes nothing)\n",
			gp_text__n(s->polls, "stream or event query", "stream or event queries").s);
	if (s->d.nr_procs > quiet || all)
		text_links(f, &s->links);
	gp_drops__text(f, hdr, all);
}

/* A measured rate (null when there is none), or null with the figure under "suspect". */
static void rate_field(json_object *o, json_object *suspect, const char *key, bool ok, double v,
		       const struct bw_link *l)
{
	gp_json__link_rate(o, key, suspect, key, ok, v, 1, l);
}

static json_object *json_by_kind(const uint64_t *by)
{
	json_object *o = json_object_new_object();

	for (int k = 0; k < BW_SYNC__COUNT; k++)
		json_object_object_add(o, bw_sync_kind_name((enum bw_sync_kind)k), json_object_new_uint64(by[k]));
	return o;
}

/*
 * What the completion signals and CUDA events said of copies that returned before they
 * completed: per signal its bytes, windows and their rate (a lower bound, null when that
 * signal completed none); per completed batch its rate (log2 MB/s); the rate from the
 * GPU's time between two events ("event_elapsed", null when none covered a copy). Rates
 * above the link's limit go to "suspect" as "<signal>" and "event_elapsed".
 */
/* o's key: bytes over ns, null when ns is 0; above the link's limit, null with the figure
 * in sus under sus_key */
static void sig_rate(json_object *o, json_object *sus, const char *key, const char *sus_key, uint64_t bytes,
		     uint64_t ns, const struct bw_link *l)
{
	gp_json__link_rate(o, key, sus, sus_key, ns, ns ? (double)bytes / secs(ns) : 0, 1, l);
}

static json_object *json_signals(const struct bw_signals *g, json_object *sus, const struct bw_link *l)
{
	json_object *o = json_object_new_object(), *by = json_object_new_object(), *ev = json_object_new_object();

	for (int k = 0; k < BW_SYNC__COUNT; k++) {
		json_object *x = json_object_new_object();
		const char *name = bw_sync_kind_name((enum bw_sync_kind)k);

		json_object_object_add(x, "bytes", json_object_new_uint64(g->bytes[k]));
		json_object_object_add(x, "seconds_upper_bound", json_object_new_double(secs(g->ns[k])));
		sig_rate(x, sus, "bytes_per_second_lower_bound", name, g->bytes[k], g->ns[k], l);
		json_object_object_add(by, name, x);
	}
	json_object_object_add(o, "by_signal", by);
	json_object_object_add(o, "window_rate_hist_mb_s", gp_json__log2_hist(g->window_hist, BW_HIST_SLOTS));
	json_object_object_add(ev, "bytes", json_object_new_uint64(g->event_bytes));
	json_object_object_add(ev, "gpu_seconds", json_object_new_double(secs(g->event_ns)));
	json_object_object_add(ev, "windows", json_object_new_uint64(g->event_windows));
	sig_rate(ev, sus, "bytes_per_second", "event_elapsed", g->event_bytes, g->event_ns, l);
	json_object_object_add(o, "event_elapsed", ev);
	return o;
}

/* "suspect": the figures above their link's limit, with it; null when none is. */
static void add_suspect(json_object *t, json_object *sus, const struct bw_link *l)
{
	gp_json__add_suspect(t, sus, l);
}

static json_object *json_stat(const struct bw_stat *x, const struct bw_links *links)
{
	json_object *t = json_object_new_object(), *sus = json_object_new_object();
	const struct bw_link *l = bw_links__for(links, x->dir);

	json_object_object_add(t, "gpu", x->gpu < 0 ? NULL : json_object_new_int(x->gpu));
	json_object_object_add(t, "direction", json_object_new_string(bw_dir_name(x->dir)));
	json_object_object_add(t, "copies", json_object_new_uint64(x->copies));
	json_object_object_add(t, "bytes", json_object_new_uint64(x->bytes));
	json_object_object_add(t, "sync_copies", json_object_new_uint64(x->sync_copies));
	json_object_object_add(t, "sync_bytes", json_object_new_uint64(x->sync_bytes));
	json_object_object_add(t, "sync_seconds", json_object_new_double(secs(x->sync_ns)));
	rate_field(t, sus, "bytes_per_second", x->sync_ns, (double)x->sync_bytes / secs(x->sync_ns), l);
	rate_field(t, sus, "pinned_bytes_per_second", x->sync_ns > x->pageable_sync_ns, pinned_rate(x), l);
	rate_field(t, sus, "pageable_bytes_per_second", x->pageable_sync_ns, pageable_rate(x), l);
	json_object_object_add(t, "async_copies", json_object_new_uint64(x->async_copies));
	json_object_object_add(t, "async_bytes", json_object_new_uint64(x->async_bytes));
	json_object_object_add(t, "async_synced_copies", json_object_new_uint64(x->async_done_copies));
	json_object_object_add(t, "async_completed_by", json_by_kind(x->async_done_by));
	json_object_object_add(t, "async_seconds_upper_bound", json_object_new_double(secs(x->async_ns)));
	rate_field(t, sus, "async_bytes_per_second_lower_bound", x->async_ns, async_rate(x), l);
	json_object_object_add(t, "async_signals", json_signals(&x->sig, sus, l));
	json_object_object_add(t, "pageable_copies", json_object_new_uint64(x->pageable_copies));
	json_object_object_add(t, "pageable_bytes", json_object_new_uint64(x->pageable_bytes));
	json_object_object_add(t, "size_hist_bytes", gp_json__log2_hist(x->size_hist, BW_HIST_SLOTS));
	json_object_object_add(t, "sync_rate_hist_mib_s", gp_json__log2_hist(x->rate_hist, BW_HIST_SLOTS));
	add_suspect(t, sus, l);
	return t;
}

static json_object *json_pair(const struct bw_pair *x, const struct bw_links *links)
{
	json_object *t = json_object_new_object(), *sus = json_object_new_object();
	const struct bw_link *l = pair_link(links, x);

	json_object_object_add(t, "src_gpu", x->src < 0 ? NULL : json_object_new_int(x->src));
	json_object_object_add(t, "dst_gpu", x->dst < 0 ? NULL : json_object_new_int(x->dst));
	json_object_object_add(t, "copies", json_object_new_uint64(x->copies));
	json_object_object_add(t, "bytes", json_object_new_uint64(x->bytes));
	json_object_object_add(t, "api_seconds", json_object_new_double(secs(x->api_ns)));
	json_object_object_add(t, "completed_copies", json_object_new_uint64(x->done_copies));
	json_object_object_add(t, "completed_bytes", json_object_new_uint64(x->done_bytes));
	json_object_object_add(t, "completed_by", json_by_kind(x->done_by));
	json_object_object_add(t, "seconds_upper_bound", json_object_new_double(secs(x->window_ns)));
	rate_field(t, sus, "bytes_per_second_lower_bound", x->window_ns, pair_rate(x), l);
	json_object_object_add(t, "signals", json_signals(&x->sig, sus, l));
	json_object_object_add(t, "limit_bytes_per_second", l->bytes_per_s > 0 ? json_object_new_double(l->bytes_per_s) : NULL);
	add_suspect(t, sus, l);
	return t;
}

static json_object *json_proc(const struct bw_snap_proc *p, const struct bw_links *links)
{
	json_object *po = json_object_new_object(), *ts = json_object_new_array(), *ps = json_object_new_array();

	json_object_object_add(po, "pid", json_object_new_int64(p->pid));
	json_object_object_add(po, "comm", json_object_new_string(p->comm));
	json_object_object_add(po, "exited", json_object_new_boolean(p->exited));
	json_object_object_add(po, "exec", json_object_new_boolean(p->exec));
	for (size_t j = 0; j < p->nr_stats; j++)
		json_object_array_add(ts, json_stat(&p->stats[j], links));
	json_object_object_add(po, "transfers", ts);
	for (size_t j = 0; j < p->nr_pairs; j++)
		json_object_array_add(ps, json_pair(&p->pairs[j], links));
	json_object_object_add(po, "pairs", ps);
	json_object_object_add(po, "unsynced_async_copies", json_object_new_uint64(p->unsynced));
	json_object_object_add(po, "untimed_async_copies", json_object_new_uint64(p->untimed));
	json_object_object_add(po, "untimed_async_bytes", json_object_new_uint64(p->untimed_bytes));
	return po;
}

void bw_report__json(json_object *o, const struct gp_snap *hdr)
{
	const struct bw_snap *s = SNAP(hdr);
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < s->d.nr_procs; i++)
		json_object_array_add(arr, json_proc(&s->d.procs[i], &s->links));
	json_object_object_add(o, "processes", arr);
	json_object_object_add(o, "min_bytes", json_object_new_uint64(s->min_bytes));
	json_object_object_add(o, "small_copies", json_object_new_uint64(s->small_copies));
	json_object_object_add(o, "small_bytes", json_object_new_uint64(s->small_bytes));
	json_object_object_add(o, "zero_byte_copies", json_object_new_uint64(s->zero_copies));
	json_object_object_add(o, "failed_copies", json_object_new_uint64(s->failed_copies));
	json_object_object_add(o, "polls", json_object_new_uint64(s->polls));
	json_object_object_add(o, "quiet_signals", json_object_new_uint64(s->quiet_signals));
	json_object_object_add(o, "links", gp_json__links(&s->links));
}

static const char *const fams[] = {
	"gpuprobe_cuda_memcpy_calls_total", "gpuprobe_cuda_memcpy_bytes_total",
	"gpuprobe_cuda_memcpy_sync_seconds_total", "gpuprobe_cuda_memcpy_async_upper_bound_seconds_total",
	"gpuprobe_cuda_memcpy_pageable_bytes_total",
	"gpuprobe_cuda_copy_pair_copies_total", "gpuprobe_cuda_copy_pair_bytes_total",
	"gpuprobe_cuda_copy_pair_completed_bytes_total", "gpuprobe_cuda_copy_pair_upper_bound_seconds_total",
	"gpuprobe_cuda_memcpy_signal_bytes_total", "gpuprobe_cuda_memcpy_signal_upper_bound_seconds_total",
	"gpuprobe_cuda_memcpy_event_bytes_total", "gpuprobe_cuda_memcpy_event_gpu_seconds_total",
};

/* A row's figures by completion signal (only the signals that completed copies) and from events. */
static void prom_signals(struct prom_out *p, const struct gp_snap_pid *pp, const char *gpu, const struct bw_stat *x)
{
	const struct bw_signals *g = &x->sig;

	for (int k = 0; k < BW_SYNC__COUNT; k++) {
		const char *kv[] = { "gpu", gpu, "direction", bw_dir_name(x->dir), "signal",
				     bw_sync_kind_name((enum bw_sync_kind)k), NULL };

		if (!g->bytes[k])
			continue;
		prom__u64(p, fams[9], pp, kv, g->bytes[k]);
		prom__secs(p, fams[10], pp, kv, secs(g->ns[k]));
	}
	if (g->event_windows) {
		const char *kv[] = { "gpu", gpu, "direction", bw_dir_name(x->dir), NULL };

		prom__u64(p, fams[11], pp, kv, g->event_bytes);
		prom__secs(p, fams[12], pp, kv, secs(g->event_ns));
	}
}

static void prom_stats(struct prom_out *p, const struct gp_snap_pid *pp, const struct bw_snap_proc *sp)
{
	for (size_t j = 0; j < sp->nr_stats; j++) {
		const struct bw_stat *x = &sp->stats[j];
		char gpu[16] = "";
		const char *kv[] = { "gpu", gpu, "direction", bw_dir_name(x->dir), NULL };

		if (x->gpu >= 0)
			snprintf(gpu, sizeof(gpu), "%d", x->gpu);
		prom__u64(p, fams[0], pp, kv, x->copies);
		prom__u64(p, fams[1], pp, kv, x->bytes);
		prom__secs(p, fams[2], pp, kv, secs(x->sync_ns));
		prom__secs(p, fams[3], pp, kv, secs(x->async_ns));
		prom__u64(p, fams[4], pp, kv, x->pageable_bytes);
		prom_signals(p, pp, gpu, x);
	}
	for (size_t j = 0; j < sp->nr_pairs; j++) {
		const struct bw_pair *x = &sp->pairs[j];
		char src[16] = "", dst[16] = "";
		const char *kv[] = { "src_gpu", src, "dst_gpu", dst, NULL };

		if (x->src >= 0)
			snprintf(src, sizeof(src), "%d", x->src);
		if (x->dst >= 0)
			snprintf(dst, sizeof(dst), "%d", x->dst);
		prom__u64(p, fams[5], pp, kv, x->copies);
		prom__u64(p, fams[6], pp, kv, x->bytes);
		prom__u64(p, fams[7], pp, kv, x->done_bytes);
		prom__secs(p, fams[8], pp, kv, secs(x->window_ns));
	}
}

static void prom_links(struct prom_out *p, const struct bw_links *l)
{
	const struct {
		const char *kind;
		const struct bw_link *l;
	} ls[] = { { "host", &l->host }, { "peer", &l->peer }, { "local", &l->local } };

	prom__family(p, "gpuprobe_link_speed_bytes");
	for (size_t i = 0; i < sizeof(ls) / sizeof(ls[0]); i++) {
		const char *kv[] = { "link", ls[i].kind, "name", ls[i].l->name, "read_here",
				     ls[i].l->read_here ? "1" : "0", NULL };

		if (!ls[i].l->bytes_per_s) /* unknown: no series (a 0 would read as a dead link) */
			continue;

		prom__real(p, "gpuprobe_link_speed_bytes", NULL, kv, ls[i].l->bytes_per_s);
	}
}

int bw_report__prom(struct prom_out *p, const struct gp_snap *hdr)
{
	const struct bw_snap *s = SNAP(hdr);
	/* one per process: src/out/prom.c tells a render's processes apart by these */
	struct gp_snap_pid *pids = calloc(s->d.nr_procs + 1, sizeof(*pids));

	if (!pids)
		return -ENOMEM;
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
		prom__family(p, fams[f]);
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		const struct bw_snap_proc *sp = &s->d.procs[i];
		struct gp_snap_pid *pp = &pids[i];

		/* a process without copies (contexts and synchronizes only) has no series */
		*pp = (struct gp_snap_pid){ .pid = sp->pid, .exited = sp->exited, .exit_ns = sp->exit_ns,
					    .unnamed = sp->unnamed };
		memcpy(pp->comm, sp->comm, sizeof(pp->comm));
		prom_stats(p, pp, sp);
	}
	prom__family(p, "gpuprobe_cuda_memcpy_small_calls_total");
	prom__u64(p, "gpuprobe_cuda_memcpy_small_calls_total", NULL, NULL, s->small_copies);
	prom__family(p, "gpuprobe_cuda_polls_total");
	prom__u64(p, "gpuprobe_cuda_polls_total", NULL, NULL, s->polls);
	prom_links(p, &s->links);
	free(pids); /* prom.c tells records apart by pointer while they are added, no later */
	return 0;
}
