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
	 * an exit: neither loses an allocation or a free */
	return d->bpf[GP_DROP_RINGBUF] + d->bpf[GP_DROP_PENDING] + d->bpf[GP_DROP_NORETURN] +
	       d->table_full;
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
	if (c->top >= 0 && n > (size_t)c->top)
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
	fprintf(f, "[%s] memleak %s report: %zu processes, %" PRIu64
		   " outstanding allocations, %" PRIu64 " bytes (%s)\n",
		tbuf, c->kind, n, allocs, bytes, hb);
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
