/* SPDX-License-Identifier: BSD-3-Clause */
/* --memleak's renderers: text, JSON and Prometheus, from a snapshot only. */
#include <inttypes.h>
#include <string.h>
#include <json-c/json.h>
#include "apis.h"
#include "json.h"
#include "memleak_mode.h"
#include "prom.h"
#include "text.h"
#include "trees.h"

#define SNAP(s) ((const struct ml_snap *)(s))

static void text_proc(FILE *f, const struct ml_snap_proc *p, const struct ml_snap *s)
{
	char hb[32];

	gp_text__bytes(p->st.outstanding_bytes, hb, sizeof(hb));
	fprintf(f, "PID %u (%s)%s: %" PRIu64 " outstanding allocations, %" PRIu64 " bytes (%s)\n",
		p->pid, p->comm, p->exec ? " before its exec" : p->exited ? " exited" : "", p->st.outstanding_allocs,
		p->st.outstanding_bytes, hb);
	fprintf(f, "    allocs %" PRIu64 ", frees %" PRIu64 ", untracked frees %" PRIu64,
		p->st.allocs_total, p->st.frees_total, p->st.untracked_frees);
	for (int k = 0; k < GP_KIND__COUNT; k++)
		if (p->st.allocs_by_kind[k])
			fprintf(f, ", %s %" PRIu64 " B", gp_kind_name(k), p->st.bytes_by_kind[k]);
	if (p->st.maps_total)
		fprintf(f, ", mapped %" PRIu64 " B", p->st.mapped_bytes);
	fputc('\n', f);
	for (size_t i = 0; i < p->nr_allocs && (s->top < 0 || (int)i < s->top); i++) {
		const struct ml_snap_alloc *a = &p->allocs[i];

		fprintf(f, "    %" PRIu64 " bytes %s 0x%" PRIx64 " by %s, age %.3fs, tid %u\n", a->size,
			a->kind == GP_KIND_PHYSICAL ? "handle" : "at", a->addr, gp_api_name(a->api), a->age_s,
			a->tid);
		for (uint32_t k = 0; s->stacks && k < a->nr_frames; k++)
			fprintf(f, "        %s\n", a->frames[k]);
	}
	if (s->top > 0 && p->nr_allocs > (size_t)s->top)
		fprintf(f, "    ... %zu more (--top)\n", p->nr_allocs - (size_t)s->top);
}

static struct gp_trees *jobs(const struct ml_snap *s, struct gp_run *run)
{
	struct gp_trees *t = gp_trees__new(run);

	for (size_t i = 0; t && i < s->d.nr_procs; i++) {
		const struct ml_stats *st = &s->d.procs[i].st;
		uint64_t v[GP_TREE_VALUES] = { st->outstanding_allocs, st->outstanding_bytes, st->allocs_total };

		gp_trees__add(t, s->d.procs[i].pid, v);
	}
	return t;
}

static void text_jobs(FILE *f, const struct ml_snap *s, struct gp_run *run)
{
	static const char *const fmt[GP_TREE_VALUES] = { "%" PRIu64 " outstanding allocations",
							 "%" PRIu64 " bytes", "%" PRIu64 " allocations in all" };
	struct gp_trees *t = jobs(s, run);

	gp_trees__text(t, f, fmt);
	gp_trees__free(t);
}

void ml_report__text(FILE *f, const struct gp_snap *hdr, struct gp_run *run)
{
	const struct ml_snap *s = SNAP(hdr);
	uint64_t bytes = 0, allocs = 0;
	char tbuf[32], hb[32];

	if (!strcmp(hdr->kind, "exit")) {
		for (size_t i = 0; i < s->d.nr_procs; i++) {
			const struct ml_snap_proc *p = &s->d.procs[i];

			fprintf(f, "Process %u (%s) %s with %" PRIu64 " allocations never freed (%" PRIu64 " bytes)\n",
				p->pid, p->comm, p->exec ? "replaced its image (exec)" : "exited",
				p->st.outstanding_allocs, p->st.outstanding_bytes);
			text_proc(f, p, s);
		}
		return;
	}
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		bytes += s->d.procs[i].st.outstanding_bytes;
		allocs += s->d.procs[i].st.outstanding_allocs;
	}
	gp_text__clock(tbuf, sizeof(tbuf));
	gp_text__bytes(bytes, hb, sizeof(hb));
	fprintf(f, "[%s] memleak %s report: %zu process%s, %" PRIu64 " outstanding allocations, %" PRIu64 " bytes (%s)\n",
		tbuf, hdr->kind, s->d.nr_procs, s->d.nr_procs == 1 ? "" : "es", allocs, bytes, hb);
	for (size_t i = 0; i < s->d.nr_procs; i++)
		text_proc(f, &s->d.procs[i], s);
	text_jobs(f, s, run);
	gp_drops__text(f, hdr);
}

static json_object *json_kinds(const struct ml_stats *st)
{
	json_object *kinds = json_object_new_object();

	for (int k = 0; k < GP_KIND__COUNT; k++) {
		json_object *ko = json_object_new_object();

		json_object_object_add(ko, "bytes", json_object_new_uint64(st->bytes_by_kind[k]));
		json_object_object_add(ko, "allocs", json_object_new_uint64(st->allocs_by_kind[k]));
		json_object_object_add(kinds, gp_kind_name(k), ko);
	}
	return kinds;
}

static json_object *json_alloc(const struct ml_snap_alloc *a)
{
	json_object *ao = json_object_new_object(), *st = json_object_new_array();

	json_object_object_add(ao, "address", gp_json__hex(a->addr));
	json_object_object_add(ao, "size", json_object_new_uint64(a->size));
	json_object_object_add(ao, "api", json_object_new_string(gp_api_name(a->api)));
	json_object_object_add(ao, "kind", json_object_new_string(gp_kind_name(a->kind)));
	json_object_object_add(ao, "age_s", json_object_new_double(a->age_s));
	json_object_object_add(ao, "tid", json_object_new_int64(a->tid));
	for (uint32_t k = 0; k < a->nr_frames; k++)
		json_object_array_add(st, json_object_new_string(a->frames[k]));
	json_object_object_add(ao, "stack", st);
	return ao;
}

static json_object *json_proc(const struct ml_snap_proc *p, struct gp_run *run)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array(), *maps;
	const struct ml_stats *st = &p->st;

	json_object_object_add(o, "pid", json_object_new_int64(p->pid));
	json_object_object_add(o, "comm", json_object_new_string(p->comm));
	json_object_object_add(o, "exited", json_object_new_boolean(p->exited));
	json_object_object_add(o, "exec", json_object_new_boolean(p->exec));
	gp_trees__json_proc(run, o, p->pid);
	json_object_object_add(o, "outstanding_bytes", json_object_new_uint64(st->outstanding_bytes));
	json_object_object_add(o, "outstanding_allocs", json_object_new_uint64(st->outstanding_allocs));
	json_object_object_add(o, "untracked_frees", json_object_new_uint64(st->untracked_frees));
	json_object_object_add(o, "allocs_total", json_object_new_uint64(st->allocs_total));
	json_object_object_add(o, "frees_total", json_object_new_uint64(st->frees_total));
	json_object_object_add(o, "alloc_bytes_total", json_object_new_uint64(st->alloc_bytes_total));
	json_object_object_add(o, "freed_bytes_total", json_object_new_uint64(st->freed_bytes_total));
	json_object_object_add(o, "by_kind", json_kinds(st));
	maps = json_object_new_object();
	json_object_object_add(maps, "mapped_bytes", json_object_new_uint64(st->mapped_bytes));
	json_object_object_add(maps, "maps", json_object_new_uint64(st->maps_total));
	json_object_object_add(maps, "unmaps", json_object_new_uint64(st->unmaps_total));
	json_object_object_add(o, "mappings", maps);
	for (size_t i = 0; i < p->nr_allocs; i++)
		json_object_array_add(arr, json_alloc(&p->allocs[i]));
	json_object_object_add(o, "allocs", arr);
	return o;
}

void ml_report__json(json_object *o, const struct gp_snap *hdr, struct gp_run *run)
{
	const struct ml_snap *s = SNAP(hdr);
	json_object *arr = json_object_new_array(), *calls = json_object_new_object();

	static const char *const keys[GP_TREE_VALUES] = { "outstanding_allocs", "outstanding_bytes", "allocs_total" };
	struct gp_trees *t = jobs(s, run);

	for (size_t i = 0; i < s->d.nr_procs; i++)
		json_object_array_add(arr, json_proc(&s->d.procs[i], run));
	json_object_object_add(o, "processes", arr);
	gp_trees__json(t, o, keys);
	gp_trees__free(t);
	for (int i = 0; i < gp_mem_apis_cnt; i++)
		json_object_object_add(calls, gp_mem_apis[i].name,
				       json_object_new_uint64(s->calls[gp_mem_apis[i].id]));
	json_object_object_add(o, "calls", calls);
}

int ml_report__prom(struct prom_out *p, const struct gp_snap *hdr, struct gp_run *run)
{
	static const char *const fams[] = {
		"gpuprobe_cuda_outstanding_bytes", "gpuprobe_cuda_outstanding_allocations",
		"gpuprobe_cuda_alloc_calls_total", "gpuprobe_cuda_free_calls_total",
		"gpuprobe_cuda_alloc_bytes_total", "gpuprobe_cuda_freed_bytes_total",
	};
	const struct ml_snap *s = SNAP(hdr);

	(void)run;
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
		prom__family(p, fams[f]);
	/* exited processes too: src/out/prom.c keeps their counts and drops their gauges */
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		const struct gp_snap_pid *pp = &s->pids[i];
		const struct ml_stats *st = &s->d.procs[i].st;

		for (int k = 0; k < GP_KIND__COUNT; k++) {
			const char *kv[] = { "kind", gp_kind_name(k), NULL };

			prom__u64(p, fams[0], pp, kv, st->bytes_by_kind[k]);
			prom__u64(p, fams[1], pp, kv, st->allocs_by_kind[k]);
		}
		prom__u64(p, fams[2], pp, NULL, st->allocs_total);
		prom__u64(p, fams[3], pp, NULL, st->frees_total);
		prom__u64(p, fams[4], pp, NULL, st->alloc_bytes_total);
		prom__u64(p, fams[5], pp, NULL, st->freed_bytes_total);
	}
	return 0;
}
