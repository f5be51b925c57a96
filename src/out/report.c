/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <json-c/json.h>
#include <time.h>
#include "apis.h"
#include "memleak.h"
#include "report.h"

static const char *const drop_names[GP_DROP__COUNT] = {
	[GP_DROP_RINGBUF] = "ringbuf_full",
	[GP_DROP_PENDING] = "pending_full",
	[GP_DROP_STACK] = "stack_unavailable",
	[GP_DROP_NORETURN] = "return_without_entry",
	[GP_DROP_PROCS] = "process_table_full",
};

uint64_t gp_drops__events(const struct gp_drops *d)
{
	/* stack failures still deliver their event, and a full process table only hides
	 * an exit: neither loses an allocation or a free. A return without its entry is
	 * either a call whose entry was dropped (already counted as pending_full) or one in
	 * flight when gpuprobe attached: shown, not added. */
	return d->bpf[GP_DROP_RINGBUF] + d->bpf[GP_DROP_PENDING] + d->table_full;
}

void report__human_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}

static double age_s(const struct report_ctx *c, const struct ml_proc *p, uint64_t ts)
{
	/* an exited process's allocations stop ageing when it exits */
	uint64_t end = p->exited ? p->exit_ns : c->now_ns;

	return end > ts ? (double)(end - ts) / 1e9 : 0.0;
}

static void text_drops(FILE *f, const struct report_ctx *c)
{
	const struct gp_drops *d = &c->drops;

	fprintf(f, "Dropped events: %" PRIu64, gp_drops__events(d));
	fprintf(f, " (ring buffer full %" PRIu64 ", pending table full %" PRIu64
		   ", return without entry %" PRIu64 ", allocation table full %" PRIu64 ")",
		d->bpf[GP_DROP_RINGBUF], d->bpf[GP_DROP_PENDING], d->bpf[GP_DROP_NORETURN],
		d->table_full);
	if (d->bpf[GP_DROP_STACK])
		fprintf(f, "; stacks unavailable %" PRIu64, d->bpf[GP_DROP_STACK]);
	if (d->bpf[GP_DROP_PROCS])
		fprintf(f, "; process table full %" PRIu64, d->bpf[GP_DROP_PROCS]);
	fputc('\n', f);
}

static void text_proc(FILE *f, struct ml_proc *p, const struct report_ctx *c)
{
	struct ml_alloc **v;
	size_t n = memleak__proc_allocs(p, &v);
	char hb[32];

	report__human_bytes(p->outstanding_bytes, hb, sizeof(hb));
	fprintf(f, "PID %u (%s)%s: %" PRIu64 " outstanding allocations, %" PRIu64 " bytes (%s)\n",
		p->pid, p->comm, p->exited ? " exited" : "", p->outstanding_allocs,
		p->outstanding_bytes, hb);
	fprintf(f, "    allocs %" PRIu64 ", frees %" PRIu64 ", untracked frees %" PRIu64,
		p->allocs_total, p->frees_total, p->untracked_frees);
	for (int k = 0; k < GP_KIND__COUNT; k++)
		if (p->allocs_by_kind[k])
			fprintf(f, ", %s %" PRIu64 " B", gp_kind_name(k), p->bytes_by_kind[k]);
	if (p->maps_total)
		fprintf(f, ", mapped %" PRIu64 " B", p->mapped_bytes);
	fputc('\n', f);
	for (size_t i = 0; i < n && (c->top < 0 || (int)i < c->top); i++) {
		struct ml_alloc *a = v[i];

		fprintf(f, "    %" PRIu64 " bytes %s 0x%" PRIx64 " by %s, age %.3fs, tid %u\n",
			a->size, a->kind == GP_KIND_PHYSICAL ? "handle" : "at", a->addr,
			gp_api_name(a->api), age_s(c, p, a->ts_ns), a->tid);
		for (uint32_t s = 0; c->stacks && s < a->nr_stack; s++)
			fprintf(f, "        %s\n", memleak__frame(p, a->stack[s]));
	}
	if (c->top > 0 && n > (size_t)c->top)
		fprintf(f, "    ... %zu more (--top)\n", n - (size_t)c->top);
	memleak__free_allocs_array(v);
}

void report__memleak_text(FILE *f, struct memleak *ml, const struct report_ctx *c)
{
	struct ml_proc **procs;
	size_t n = memleak__procs(ml, &procs);
	uint64_t bytes = 0, allocs = 0;
	char tbuf[32], hb[32];
	time_t now = time(NULL);
	struct tm tm;

	for (size_t i = 0; i < n; i++) {
		bytes += procs[i]->outstanding_bytes;
		allocs += procs[i]->outstanding_allocs;
	}
	localtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	report__human_bytes(bytes, hb, sizeof(hb));
	fprintf(f, "[%s] memleak %s report: %zu process%s, %" PRIu64
		   " outstanding allocations, %" PRIu64 " bytes (%s)\n",
		tbuf, c->kind, n, n == 1 ? "" : "es", allocs, bytes, hb);
	for (size_t i = 0; i < n; i++)
		text_proc(f, procs[i], c);
	text_drops(f, c);
	fflush(f);
}

void report__memleak_exit_text(FILE *f, struct ml_proc *p, const struct report_ctx *c)
{
	fprintf(f, "Process %u (%s) exited with %" PRIu64 " allocations never freed (%" PRIu64
		   " bytes)\n",
		p->pid, p->comm, p->outstanding_allocs, p->outstanding_bytes);
	text_proc(f, p, c);
	fflush(f);
}

static json_object *json_hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

static json_object *json_proc(struct ml_proc *p, const struct report_ctx *c)
{
	json_object *o = json_object_new_object(), *arr, *kinds, *maps;
	struct ml_alloc **v;
	size_t n = memleak__proc_allocs(p, &v);

	json_object_object_add(o, "pid", json_object_new_int64(p->pid));
	json_object_object_add(o, "comm", json_object_new_string(p->comm));
	json_object_object_add(o, "exited", json_object_new_boolean(p->exited));
	json_object_object_add(o, "outstanding_bytes", json_object_new_uint64(p->outstanding_bytes));
	json_object_object_add(o, "outstanding_allocs", json_object_new_uint64(p->outstanding_allocs));
	json_object_object_add(o, "untracked_frees", json_object_new_uint64(p->untracked_frees));
	json_object_object_add(o, "allocs_total", json_object_new_uint64(p->allocs_total));
	json_object_object_add(o, "frees_total", json_object_new_uint64(p->frees_total));
	json_object_object_add(o, "alloc_bytes_total", json_object_new_uint64(p->alloc_bytes_total));
	json_object_object_add(o, "freed_bytes_total", json_object_new_uint64(p->freed_bytes_total));
	kinds = json_object_new_object();
	for (int k = 0; k < GP_KIND__COUNT; k++) {
		json_object *ko = json_object_new_object();

		json_object_object_add(ko, "bytes", json_object_new_uint64(p->bytes_by_kind[k]));
		json_object_object_add(ko, "allocs", json_object_new_uint64(p->allocs_by_kind[k]));
		json_object_object_add(kinds, gp_kind_name(k), ko);
	}
	json_object_object_add(o, "by_kind", kinds);
	maps = json_object_new_object();
	json_object_object_add(maps, "mapped_bytes", json_object_new_uint64(p->mapped_bytes));
	json_object_object_add(maps, "maps", json_object_new_uint64(p->maps_total));
	json_object_object_add(maps, "unmaps", json_object_new_uint64(p->unmaps_total));
	json_object_object_add(o, "mappings", maps);
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		struct ml_alloc *a = v[i];
		json_object *ao = json_object_new_object(), *st = json_object_new_array();

		json_object_object_add(ao, "address", json_hex(a->addr));
		json_object_object_add(ao, "size", json_object_new_uint64(a->size));
		json_object_object_add(ao, "api", json_object_new_string(gp_api_name(a->api)));
		json_object_object_add(ao, "kind", json_object_new_string(gp_kind_name(a->kind)));
		json_object_object_add(ao, "age_s", json_object_new_double(age_s(c, p, a->ts_ns)));
		json_object_object_add(ao, "tid", json_object_new_int64(a->tid));
		for (uint32_t s = 0; s < a->nr_stack; s++)
			json_object_array_add(st, json_object_new_string(memleak__frame(p, a->stack[s])));
		json_object_object_add(ao, "stack", st);
		json_object_array_add(arr, ao);
	}
	json_object_object_add(o, "allocs", arr);
	memleak__free_allocs_array(v);
	return o;
}

static void json_tail(json_object *o, const struct report_ctx *c)
{
	json_object *d = json_object_new_object();

	json_object_object_add(o, "dropped_events", json_object_new_uint64(gp_drops__events(&c->drops)));
	for (int i = 0; i < GP_DROP__COUNT; i++)
		json_object_object_add(d, drop_names[i], json_object_new_uint64(c->drops.bpf[i]));
	json_object_object_add(d, "allocation_table_full", json_object_new_uint64(c->drops.table_full));
	json_object_object_add(o, "drops", d);
	if (c->ok_calls) {
		json_object *calls = json_object_new_object();

		for (int i = 0; i < gp_mem_apis_cnt; i++)
			json_object_object_add(calls, gp_mem_apis[i].name,
					       json_object_new_uint64(c->ok_calls[gp_mem_apis[i].id]));
		json_object_object_add(o, "calls", calls);
	}
}

static void json_print(FILE *f, json_object *o)
{
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(f);
	json_object_put(o);
}

void report__memleak_json(FILE *f, struct memleak *ml, const struct report_ctx *c)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	struct ml_proc **procs;
	size_t n = memleak__procs(ml, &procs);

	json_object_object_add(o, "mode", json_object_new_string("memleak"));
	json_object_object_add(o, "report", json_object_new_string(c->kind));
	json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, json_proc(procs[i], c));
	json_object_object_add(o, "processes", arr);
	json_tail(o, c);
	json_print(f, o);
}

void report__memleak_exit_json(FILE *f, struct ml_proc *p, const struct report_ctx *c)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	json_object_object_add(o, "mode", json_object_new_string("memleak"));
	json_object_object_add(o, "report", json_object_new_string("exit"));
	json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
	json_object_array_add(arr, json_proc(p, c));
	json_object_object_add(o, "processes", arr);
	json_tail(o, c);
	json_print(f, o);
}

/* ---- --cudatrace ---- */
#include "cudatrace.h"

static const char *const ldrop_names[GP_LDROP__COUNT] = {
	[GP_LDROP_RINGBUF] = "ringbuf_full",
	[GP_LDROP_KEYS] = "launch_table_full",
	[GP_LDROP_PENDING] = "pending_full",
	[GP_LDROP_NORETURN] = "return_without_entry",
	[GP_LDROP_PROCS] = "process_table_full",
};

uint64_t gp_ldrops__events(const uint64_t *d)
{
	/* launches not counted, names lost, timings lost (returns without entry: see
	 * gp_drops__events) */
	return d[GP_LDROP_RINGBUF] + d[GP_LDROP_KEYS] + d[GP_LDROP_PENDING];
}

static void stars(FILE *f, uint64_t val, uint64_t max, int width)
{
	int n = max ? (int)((double)val * width / (double)max) : 0;

	if (n > width)
		n = width;
	for (int i = 0; i < width; i++)
		fputc(i < n ? '*' : ' ', f);
}

void report__log2_hist(FILE *f, const __u64 *slots, int n, const char *unit)
{
	int first = -1, last = -1;
	uint64_t max = 0;

	for (int i = 0; i < n; i++) {
		if (slots[i] && first < 0)
			first = i;
		if (slots[i])
			last = i;
		if (slots[i] > max)
			max = slots[i];
	}
	if (last < 0)
		return;
	/* bcc prints from 0; leading empty rows say nothing, so start at the first count */
	fprintf(f, "     %-19s : count    distribution\n", unit);
	for (int i = first; i <= last; i++) {
		uint64_t lo = i ? 1ULL << i : 0, hi = (1ULL << (i + 1)) - 1;

		fprintf(f, "%10" PRIu64 " -> %-10" PRIu64 " : %-8" PRIu64 " |", lo, hi, (uint64_t)slots[i]);
		stars(f, slots[i], max, 40);
		fprintf(f, "|\n");
	}
}

static void text_hist(FILE *f, const char *what, const struct gp_hist *h, bool latency)
{
	if (!h->count)
		return;
	fprintf(f, "  %s: %" PRIu64 " calls", what, (uint64_t)h->count);
	if (latency && h->timed)
		fprintf(f, ", total %.6fs, max %.6fs, mean %.1fus", (double)h->total_ns / 1e9,
			(double)h->max_ns / 1e9, (double)h->total_ns / 1e3 / (double)h->timed);
	fputc('\n', f);
	if (latency)
		report__log2_hist(f, h->slots, GP_HIST_SLOTS, "usecs");
}

void report__cudatrace_text(FILE *f, struct cudatrace *ct, const struct ct_report_ctx *c)
{
	struct ct_proc **procs;
	size_t n = cudatrace__procs(ct, &procs);
	time_t now = time(NULL);
	char tbuf[32];
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	fprintf(f, "[%s] cudatrace %s report: %zu process%s\n", tbuf, c->kind, n, n == 1 ? "" : "es");
	for (size_t i = 0; i < n; i++) {
		struct ct_proc *p = procs[i];

		fprintf(f, "PID %u (%s)%s: %" PRIu64 " launches (%.1f/s), %" PRIu64
			   " unnamed, %" PRIu64 " graph launches\n",
			p->pid, p->comm, p->exited ? " exited" : "", p->launches, p->launches_per_s,
			p->unnamed_launches, p->graph_launches);
		if (p->nr_kernels)
			fprintf(f, "  %-48s %10s  %s\n", "KERNEL", "LAUNCHES", "GRID x BLOCK: LAUNCHES");
		for (size_t k = 0; k < p->nr_kernels; k++) {
			struct ct_kernel *kn = &p->kernels[k];

			fprintf(f, "  %-48.*s %10" PRIu64 " ", 120, kn->name, kn->launches);
			for (size_t s = 0; s < kn->nr_shapes && (int)s < c->top_shapes; s++) {
				struct ct_shape *sh = &kn->shapes[s];

				fprintf(f, " (%u,%u,%u)x(%u,%u,%u): %" PRIu64, sh->grid[0], sh->grid[1],
					sh->grid[2], sh->block[0], sh->block[1], sh->block[2], sh->launches);
			}
			if (kn->nr_shapes > (size_t)c->top_shapes)
				fprintf(f, " ... %zu more shapes", kn->nr_shapes - (size_t)c->top_shapes);
			if (kn->source == CT_NAME_HOST)
				fprintf(f, "  [host-side name]");
			fputc('\n', f);
		}
		for (size_t g = 0; g < p->nr_graphs; g++)
			fprintf(f, "  graph 0x%" PRIx64 ": %" PRIu64 " launches\n", p->graphs[g].handle,
				p->graphs[g].launches);
		text_hist(f, "launch API latency", &p->hist[GP_HIST_LAUNCH], c->latency);
		text_hist(f, "synchronize", &p->hist[GP_HIST_SYNC], c->latency);
	}
	fprintf(f, "Dropped events: %" PRIu64 " (ring buffer full %" PRIu64 ", launch table full %" PRIu64
		   ", pending table full %" PRIu64 ", return without entry %" PRIu64 ")\n",
		gp_ldrops__events(c->ldrops), c->ldrops[GP_LDROP_RINGBUF], c->ldrops[GP_LDROP_KEYS],
		c->ldrops[GP_LDROP_PENDING], c->ldrops[GP_LDROP_NORETURN]);
	fflush(f);
}

/* Non-empty log2 buckets as [{lo, hi, count}] */
static json_object *json_hist_arr(const __u64 *slots, int n)
{
	json_object *arr = json_object_new_array();

	for (int i = 0; i < n; i++) {
		json_object *b;

		if (!slots[i])
			continue;
		b = json_object_new_object();
		json_object_object_add(b, "lo", json_object_new_uint64(i ? 1ULL << i : 0));
		json_object_object_add(b, "hi", json_object_new_uint64((1ULL << (i + 1)) - 1));
		json_object_object_add(b, "count", json_object_new_uint64(slots[i]));
		json_object_array_add(arr, b);
	}
	return arr;
}

static json_object *json_hist(const struct gp_hist *h, bool latency)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "calls", json_object_new_uint64(h->count));
	if (!latency) {
		/* no return probes: times unknown, not zero */
		json_object_object_add(o, "total_s", NULL);
		json_object_object_add(o, "max_s", NULL);
		json_object_object_add(o, "hist_us", NULL);
		return o;
	}
	json_object_object_add(o, "timed", json_object_new_uint64(h->timed));
	json_object_object_add(o, "total_s", json_object_new_double((double)h->total_ns / 1e9));
	json_object_object_add(o, "max_s", json_object_new_double((double)h->max_ns / 1e9));
	json_object_object_add(o, "hist_us", json_hist_arr(h->slots, GP_HIST_SLOTS));
	return o;
}

static json_object *json_u32x3(const uint32_t *v)
{
	json_object *a = json_object_new_array();

	for (int i = 0; i < 3; i++)
		json_object_array_add(a, json_object_new_int64(v[i]));
	return a;
}

void report__cudatrace_json(FILE *f, struct cudatrace *ct, const struct ct_report_ctx *c)
{
	static const char *const sources[] = { "driver", "host", "none" };
	json_object *o = json_object_new_object(), *arr = json_object_new_array(), *d;
	struct ct_proc **procs;
	size_t n = cudatrace__procs(ct, &procs);

	json_object_object_add(o, "mode", json_object_new_string("cudatrace"));
	json_object_object_add(o, "report", json_object_new_string(c->kind));
	json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
	json_object_object_add(o, "latency", json_object_new_boolean(c->latency));
	for (size_t i = 0; i < n; i++) {
		struct ct_proc *p = procs[i];
		json_object *po = json_object_new_object(), *ks = json_object_new_array();
		json_object *gs = json_object_new_array();

		json_object_object_add(po, "pid", json_object_new_int64(p->pid));
		json_object_object_add(po, "comm", json_object_new_string(p->comm));
		json_object_object_add(po, "exited", json_object_new_boolean(p->exited));
		json_object_object_add(po, "launches", json_object_new_uint64(p->launches));
		json_object_object_add(po, "launches_per_s", json_object_new_double(p->launches_per_s));
		json_object_object_add(po, "unnamed_launches", json_object_new_uint64(p->unnamed_launches));
		for (size_t k = 0; k < p->nr_kernels; k++) {
			struct ct_kernel *kn = &p->kernels[k];
			json_object *ko = json_object_new_object(), *ss = json_object_new_array();

			json_object_object_add(ko, "name", json_object_new_string(kn->name));
			json_object_object_add(ko, "source", json_object_new_string(sources[kn->source]));
			json_object_object_add(ko, "launches", json_object_new_uint64(kn->launches));
			for (size_t s = 0; s < kn->nr_shapes; s++) {
				json_object *so = json_object_new_object();

				json_object_object_add(so, "grid", json_u32x3(kn->shapes[s].grid));
				json_object_object_add(so, "block", json_u32x3(kn->shapes[s].block));
				json_object_object_add(so, "launches", json_object_new_uint64(kn->shapes[s].launches));
				json_object_array_add(ss, so);
			}
			json_object_object_add(ko, "shapes", ss);
			json_object_array_add(ks, ko);
		}
		json_object_object_add(po, "kernels", ks);
		json_object_object_add(po, "graph_launches", json_object_new_uint64(p->graph_launches));
		for (size_t g = 0; g < p->nr_graphs; g++) {
			json_object *go = json_object_new_object();

			json_object_object_add(go, "handle", json_hex(p->graphs[g].handle));
			json_object_object_add(go, "launches", json_object_new_uint64(p->graphs[g].launches));
			json_object_array_add(gs, go);
		}
		json_object_object_add(po, "graphs", gs);
		json_object_object_add(po, "launch_latency", json_hist(&p->hist[GP_HIST_LAUNCH], c->latency));
		json_object_object_add(po, "sync", json_hist(&p->hist[GP_HIST_SYNC], c->latency));
		json_object_array_add(arr, po);
	}
	json_object_object_add(o, "processes", arr);
	json_object_object_add(o, "dropped_events", json_object_new_uint64(gp_ldrops__events(c->ldrops)));
	d = json_object_new_object();
	for (int i = 0; i < GP_LDROP__COUNT; i++)
		json_object_object_add(d, ldrop_names[i], json_object_new_uint64(c->ldrops[i]));
	json_object_object_add(d, "malformed_records", json_object_new_uint64(c->malformed));
	json_object_object_add(o, "drops", d);
	json_print(f, o);
}

/* ---- --bandwidth-util ---- */
#include "bandwidth.h"

uint64_t gp_cdrops__events(const uint64_t *d)
{
	return d[GP_CDROP_RINGBUF] + d[GP_CDROP_PENDING];
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

void report__bandwidth_text(FILE *f, struct bandwidth *bw, const struct bw_report_ctx *c)
{
	struct bw_proc **procs;
	size_t n = bandwidth__procs(bw, &procs);
	time_t now = time(NULL);
	char tbuf[32], hb[32];
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	fprintf(f, "[%s] bandwidth %s report: %zu process%s\n", tbuf, c->kind, n, n == 1 ? "" : "es");
	for (size_t i = 0; i < n; i++) {
		struct bw_proc *p = procs[i];
		struct bw_stat **st;
		size_t ns = bw_proc__stats(p, &st);

		fprintf(f, "PID %u (%s)%s\n", bw_proc__pid(p), bw_proc__comm(p),
			bw_proc__exited(p) ? " exited" : "");
		if (!ns)
			continue;
		fprintf(f, "  %-4s %-5s %8s %14s %10s %12s %12s %12s %10s\n", "GPU", "DIR", "COPIES", "BYTES",
			"SYNC_S", "PINNED_MiB/s", "PAGED_MiB/s", "ASYNC_S<=", "PAGEABLE");
		for (size_t s = 0; s < ns; s++) {
			struct bw_stat *x = st[s];
			char gpu[8];

			snprintf(gpu, sizeof(gpu), x->gpu < 0 ? "-" : "%d", x->gpu);
			fprintf(f, "  %-4s %-5s %8" PRIu64 " %14" PRIu64 " %10.6f %12.1f %12.1f %12.6f %10" PRIu64 "\n",
				gpu, bw_dir_name(x->dir), x->copies, x->bytes, secs(x->sync_ns),
				x->sync_ns > x->pageable_sync_ns ?
				(double)(x->sync_bytes - x->pageable_sync_bytes) /
				secs(x->sync_ns - x->pageable_sync_ns) / 1048576.0 : 0.0,
				x->pageable_sync_ns ?
				(double)x->pageable_sync_bytes / secs(x->pageable_sync_ns) / 1048576.0 : 0.0,
				secs(x->async_ns), x->pageable_copies);
		}
		for (size_t s = 0; s < ns; s++) {
			if (!st[s]->sync_copies)
				continue;
			if (st[s]->gpu < 0)
				fprintf(f, "  %s synchronous copy bandwidth:\n", bw_dir_name(st[s]->dir));
			else
				fprintf(f, "  GPU %d %s synchronous copy bandwidth:\n", st[s]->gpu,
					bw_dir_name(st[s]->dir));
			report__log2_hist(f, (const __u64 *)st[s]->rate_hist, BW_HIST_SLOTS, "MiB/s");
		}
		if (bw_proc__unsynced(p))
			fprintf(f, "  %" PRIu64 " asynchronous copies not yet covered by a synchronization\n",
				bw_proc__unsynced(p));
	}
	report__human_bytes(c->small_bytes, hb, sizeof(hb));
	fprintf(f, "Small copies (< %llu bytes, not counted above): %" PRIu64 " (%s); zero-byte %" PRIu64
		   ", failed %" PRIu64 "\n",
		c->min_bytes, c->small_copies, hb, c->zero_copies, c->failed_copies);
	fprintf(f, "Dropped events: %" PRIu64 " (ring buffer full %" PRIu64 ", pending table full %" PRIu64
		   ", return without entry %" PRIu64 ")\n",
		gp_cdrops__events(c->cdrops), c->cdrops[GP_CDROP_RINGBUF], c->cdrops[GP_CDROP_PENDING],
		c->cdrops[GP_CDROP_NORETURN]);
	fflush(f);
}

void report__bandwidth_json(FILE *f, struct bandwidth *bw, const struct bw_report_ctx *c)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array(), *d;
	struct bw_proc **procs;
	size_t n = bandwidth__procs(bw, &procs);

	json_object_object_add(o, "mode", json_object_new_string("bandwidth"));
	json_object_object_add(o, "report", json_object_new_string(c->kind));
	json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
	for (size_t i = 0; i < n; i++) {
		struct bw_proc *p = procs[i];
		json_object *po = json_object_new_object(), *ts = json_object_new_array();
		struct bw_stat **st;
		size_t ns = bw_proc__stats(p, &st);

		json_object_object_add(po, "pid", json_object_new_int64(bw_proc__pid(p)));
		json_object_object_add(po, "comm", json_object_new_string(bw_proc__comm(p)));
		json_object_object_add(po, "exited", json_object_new_boolean(bw_proc__exited(p)));
		for (size_t s = 0; s < ns; s++) {
			struct bw_stat *x = st[s];
			json_object *t = json_object_new_object();

			json_object_object_add(t, "gpu", x->gpu < 0 ? NULL : json_object_new_int(x->gpu));
			json_object_object_add(t, "direction", json_object_new_string(bw_dir_name(x->dir)));
			json_object_object_add(t, "copies", json_object_new_uint64(x->copies));
			json_object_object_add(t, "bytes", json_object_new_uint64(x->bytes));
			json_object_object_add(t, "sync_copies", json_object_new_uint64(x->sync_copies));
			json_object_object_add(t, "sync_bytes", json_object_new_uint64(x->sync_bytes));
			json_object_object_add(t, "sync_seconds", json_object_new_double(secs(x->sync_ns)));
			json_object_object_add(t, "bytes_per_second",
					       x->sync_ns ? json_object_new_double((double)x->sync_bytes / secs(x->sync_ns)) : NULL);
			json_object_object_add(t, "pinned_bytes_per_second",
					       x->sync_ns > x->pageable_sync_ns ?
					       json_object_new_double((double)(x->sync_bytes - x->pageable_sync_bytes) /
								      secs(x->sync_ns - x->pageable_sync_ns)) : NULL);
			json_object_object_add(t, "pageable_bytes_per_second",
					       x->pageable_sync_ns ?
					       json_object_new_double((double)x->pageable_sync_bytes / secs(x->pageable_sync_ns)) : NULL);
			json_object_object_add(t, "async_copies", json_object_new_uint64(x->async_copies));
			json_object_object_add(t, "async_bytes", json_object_new_uint64(x->async_bytes));
			json_object_object_add(t, "async_synced_copies", json_object_new_uint64(x->async_done_copies));
			json_object_object_add(t, "async_seconds_upper_bound", json_object_new_double(secs(x->async_ns)));
			json_object_object_add(t, "async_bytes_per_second_lower_bound",
					       x->async_ns ? json_object_new_double((double)x->async_done_bytes / secs(x->async_ns)) : NULL);
			json_object_object_add(t, "pageable_copies", json_object_new_uint64(x->pageable_copies));
			json_object_object_add(t, "pageable_bytes", json_object_new_uint64(x->pageable_bytes));
			json_object_object_add(t, "size_hist_bytes", json_hist_arr((const __u64 *)x->size_hist, BW_HIST_SLOTS));
			json_object_object_add(t, "sync_rate_hist_mib_s", json_hist_arr((const __u64 *)x->rate_hist, BW_HIST_SLOTS));
			json_object_array_add(ts, t);
		}
		json_object_object_add(po, "transfers", ts);
		json_object_object_add(po, "unsynced_async_copies", json_object_new_uint64(bw_proc__unsynced(p)));
		json_object_array_add(arr, po);
	}
	json_object_object_add(o, "processes", arr);
	json_object_object_add(o, "min_bytes", json_object_new_uint64(c->min_bytes));
	json_object_object_add(o, "small_copies", json_object_new_uint64(c->small_copies));
	json_object_object_add(o, "small_bytes", json_object_new_uint64(c->small_bytes));
	json_object_object_add(o, "zero_byte_copies", json_object_new_uint64(c->zero_copies));
	json_object_object_add(o, "failed_copies", json_object_new_uint64(c->failed_copies));
	json_object_object_add(o, "dropped_events", json_object_new_uint64(gp_cdrops__events(c->cdrops)));
	d = json_object_new_object();
	json_object_object_add(d, "ringbuf_full", json_object_new_uint64(c->cdrops[GP_CDROP_RINGBUF]));
	json_object_object_add(d, "pending_full", json_object_new_uint64(c->cdrops[GP_CDROP_PENDING]));
	json_object_object_add(d, "return_without_entry", json_object_new_uint64(c->cdrops[GP_CDROP_NORETURN]));
	json_object_object_add(o, "drops", d);
	json_print(f, o);
}
