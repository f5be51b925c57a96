/* SPDX-License-Identifier: BSD-3-Clause */
/* --memleak's renderers: text, JSON and Prometheus, from a snapshot only. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <json-c/json.h>
#include "lib/apis.h"
#include "out/folded.h"
#include "out/json.h"
#include "modes/memleak/memleak_mode.h"
#include "out/prom.h"
#include "out/text.h"
#include "out/trees.h"
#include "lib/unseen.h"
#include "core/ustack.h"

#define SNAP(s) ((const struct ml_snap *)(s))

/* Stack flags by name, in JSON; the first partial one is the stack's status. */
static const struct {
	uint32_t flag;
	const char *name, *text;
} stack_flags[] = {
	{ USTACK_LOST, "lost", "no stack: its record was lost (ring buffer full)" },
	{ USTACK_NO_STACK, "no_stack", "partial: the stack could not be read, the called function alone" },
	{ USTACK_UNKEPT, "unkept", "partial: the process was gone and files it mapped had not been kept (over the limit of kept files, or not openable)" },
	{ USTACK_UNRESOLVED, "unresolved", "partial: the process was gone before its frames were named" },
	{ USTACK_TRUNCATED, "truncated", "partial: the stack copy ended before the stack did (--stack-bytes)" },
	{ USTACK_STOPPED, "stopped", "partial: a frame could not be unwound (no call-frame information)" },
	{ USTACK_TOO_DEEP, "too_deep", "partial: more frames than are kept" },
	{ USTACK_FP_END, "fp_ended", "partial: the frame-pointer walk reached code built without frame pointers (--stacks dwarf unwinds it)" },
	{ USTACK_PY_TRUNCATED, "python_truncated", "more than 64 Python frames: the outermost are missing" },
	{ USTACK_PY_AFTER, "python_after", "the Python frames could not be placed among the native ones: they follow them" },
	{ USTACK_PY_UNREAD, "python_unread", "the Python frames of this call could not be read" },
	{ USTACK_PY_UNNAMED, "python_unnamed", "a Python frame could not be named: the process was gone and its code object had not been copied" },
	{ USTACK_PY_NO_LINE, "python_no_line", "a Python frame's line lies past the part of its line table copied" },
};

const char *ml_report__stack_status(uint32_t flags, bool json)
{
	for (size_t i = 0; i < sizeof(stack_flags) / sizeof(stack_flags[0]); i++)
		if ((flags & stack_flags[i].flag) && (stack_flags[i].flag & USTACK_PARTIAL))
			return json ? stack_flags[i].name : stack_flags[i].text;
	return NULL;
}

/* "cuMemAlloc_v2, cuMemAllocAsync" */
static void api_list(uint64_t apis, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int a = 0; a < gp_mem_apis_cnt && a < 64 && off < len; a++)
		if (apis & (1ull << a))
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "", gp_mem_apis[a].name);
}

static void text_stack(FILE *f, const struct ml_snap_proc *p, const struct ml_snap_stack *st,
		       const struct ml_snap *s, bool all)
{
	char apis[256];

	api_list(st->apis, apis, sizeof(apis));
	fprintf(f, "    %s in %s from %s, oldest %s:\n", gp_text__bytes_exact(st->bytes).s,
		gp_text__n(st->allocs, "allocation", "allocations").s, apis, gp_text__duration(st->oldest_age_s).s);
	gp_text__stack(f, st->frames, st->nr_frames, "        ", all);
	if (s->stacks == GP_STACKS_NONE)
		fprintf(f, "        (no stacks taken)\n");
	for (size_t i = 0; i < sizeof(stack_flags) / sizeof(stack_flags[0]); i++)
		if (st->flags & stack_flags[i].flag)
			fprintf(f, "        [%s]\n", stack_flags[i].text);
	for (size_t i = st->first; s->show_allocs && i < st->first + st->allocs; i++) {
		const struct ml_snap_alloc *a = &p->allocs[i];

		fprintf(f, "      %s %s 0x%" PRIx64 " by %s, age %s, tid %u\n", gp_text__bytes_exact(a->size).s,
			a->kind == GP_KIND_PHYSICAL ? "handle" : "at", a->addr, gp_api_name(a->api),
			gp_text__duration(a->age_s).s, a->tid);
	}
}

static void text_proc(FILE *f, const struct ml_snap_proc *p, const struct ml_snap *s, const struct gp_snap_env *env)
{
	const struct gp_unseen *u = gp_env_unseen(env, p->pid);
	bool all = gp_env_verbose(env);
	char line[160];

	fprintf(f, "PID %u (%s)%s: %s, %s\n", p->pid, p->comm,
		p->exec ? " before its exec" : p->exited ? " exited" : "",
		gp_text__n(p->st.outstanding_allocs, "outstanding allocation", "outstanding allocations").s,
		gp_text__bytes_exact(p->st.outstanding_bytes).s);
	fprintf(f, "    %s, %s", gp_text__n(p->st.allocs_total, "allocation", "allocations").s,
		gp_text__n(p->st.frees_total, "free", "frees").s);
	if (p->st.untracked_frees || all)
		fprintf(f, ", %s", gp_text__n(p->st.untracked_frees, "untracked free", "untracked frees").s);
	for (int k = 0; k < GP_KIND__COUNT; k++)
		if (p->st.allocs_by_kind[k])
			fprintf(f, "; %s %s", gp_kind_name(k), gp_text__bytes(p->st.bytes_by_kind[k]).s);
	if (p->st.maps_total)
		fprintf(f, "; mapped %s", gp_text__bytes(p->st.mapped_bytes).s);
	if (p->st.graph_relaunch_frees)
		fprintf(f, "; frees of graph memory a relaunch made again %s", gp_text__count(p->st.graph_relaunch_frees).s);
	fputc('\n', f);
	if (u) {
		gp_unseen__text(u, line, sizeof(line));
		fprintf(f, "    [%s]\n", line);
	}
	if (s->older_than > 0)
		fprintf(f, "    outstanding for more than %s: %s, %s\n", gp_text__duration(s->older_than).s,
			gp_text__n(p->shown_allocs, "allocation", "allocations").s, gp_text__bytes_exact(p->shown_bytes).s);
	for (size_t i = 0; i < p->nr_stacks && (s->top < 0 || (int)i < s->top); i++)
		text_stack(f, p, &p->stacks[i], s, all);
	if (s->top >= 0 && p->nr_stacks > (size_t)s->top)
		fprintf(f, "    ... %s (--top)\n", gp_text__n(p->nr_stacks - (size_t)s->top, "more stack", "more stacks").s);
}

static struct gp_trees *jobs(const struct ml_snap *s, const struct gp_snap_env *env)
{
	struct gp_trees *t = gp_trees__new(env);

	for (size_t i = 0; t && i < s->d.nr_procs; i++) {
		const struct ml_stats *st = &s->d.procs[i].st;
		uint64_t v[GP_TREE_VALUES] = { st->outstanding_allocs, st->outstanding_bytes, st->allocs_total };

		gp_trees__add(t, s->d.procs[i].pid, v);
	}
	return t;
}

static void job_values(FILE *f, const uint64_t v[GP_TREE_VALUES])
{
	fprintf(f, ", %s, %s, %s in all", gp_text__n(v[0], "outstanding allocation", "outstanding allocations").s,
		gp_text__bytes_exact(v[1]).s, gp_text__n(v[2], "allocation", "allocations").s);
}

static void text_jobs(FILE *f, const struct ml_snap *s, const struct gp_snap_env *env)
{
	struct gp_trees *t = jobs(s, env);

	gp_trees__text(t, f, job_values);
	gp_trees__free(t);
}

void ml_report__text(FILE *f, const struct gp_snap *hdr)
{
	const struct gp_snap_env *env = hdr->env;
	const struct ml_snap *s = SNAP(hdr);
	uint64_t bytes = 0, allocs = 0;
	char tbuf[32];

	if (hdr->kind == GP_SNAP_EXIT) {
		for (size_t i = 0; i < s->d.nr_procs; i++) {
			const struct ml_snap_proc *p = &s->d.procs[i];

			fprintf(f, "Process %u (%s) %s with %s never freed, %s\n", p->pid, p->comm,
				p->exec ? "replaced its image (exec)" : "exited",
				gp_text__n(p->st.outstanding_allocs, "allocation", "allocations").s,
				gp_text__bytes_exact(p->st.outstanding_bytes).s);
			/* a command's processes stay until the final report, which has their stacks:
			 * the line is enough (node-wide and -p, that report may be hours away) */
			if (!env || !env->command || env->verbose)
				text_proc(f, p, s, env);
		}
		return;
	}
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		bytes += s->d.procs[i].st.outstanding_bytes;
		allocs += s->d.procs[i].st.outstanding_allocs;
	}
	gp_text__clock(tbuf, sizeof(tbuf));
	fprintf(f, "[%s] memleak %s report: %s, %s, %s\n", tbuf, gp_snap_kind_name(hdr->kind),
		gp_text__n(s->d.nr_procs, "process", "processes").s,
		gp_text__n(allocs, "outstanding allocation", "outstanding allocations").s, gp_text__bytes_exact(bytes).s);
	for (size_t i = 0; i < s->d.nr_procs; i++)
		text_proc(f, &s->d.procs[i], s, env);
	text_jobs(f, s, env);
	gp_drops__text(f, hdr, gp_env_verbose(env));
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
	json_object *ao = json_object_new_object();

	json_object_object_add(ao, "address", gp_json__hex(a->addr));
	json_object_object_add(ao, "size", json_object_new_uint64(a->size));
	json_object_object_add(ao, "api", json_object_new_string(gp_api_name(a->api)));
	json_object_object_add(ao, "kind", json_object_new_string(gp_kind_name(a->kind)));
	json_object_object_add(ao, "age_s", json_object_new_double(a->age_s));
	json_object_object_add(ao, "tid", json_object_new_int64(a->tid));
	return ao;
}

static json_object *json_stack(const struct ml_snap_proc *p, const struct ml_snap_stack *st,
			       const struct ml_snap *s)
{
	json_object *o = json_object_new_object(), *apis = json_object_new_array(),
		    *kinds = json_object_new_array(), *flags = json_object_new_array(),
		    *frames = json_object_new_array();

	json_object_object_add(o, "outstanding_bytes", json_object_new_uint64(st->bytes));
	json_object_object_add(o, "outstanding_allocs", json_object_new_uint64(st->allocs));
	json_object_object_add(o, "oldest_age_s", json_object_new_double(st->oldest_age_s));
	for (int a = 0; a < 64; a++)
		if (a < gp_mem_apis_cnt && (st->apis & (1ull << a)))
			json_object_array_add(apis, json_object_new_string(gp_mem_apis[a].name));
	json_object_object_add(o, "apis", apis);
	for (int k = 0; k < GP_KIND__COUNT; k++)
		if (st->kinds & (1u << k))
			json_object_array_add(kinds, json_object_new_string(gp_kind_name(k)));
	json_object_object_add(o, "kinds", kinds);
	json_object_object_add(o, "partial", json_object_new_boolean((st->flags & USTACK_PARTIAL) != 0));
	for (size_t i = 0; i < sizeof(stack_flags) / sizeof(stack_flags[0]); i++)
		if (st->flags & stack_flags[i].flag)
			json_object_array_add(flags, json_object_new_string(stack_flags[i].name));
	json_object_object_add(o, "flags", flags);
	for (uint32_t k = 0; k < st->nr_frames; k++)
		json_object_array_add(frames, json_object_new_string(st->frames[k]));
	json_object_object_add(o, "frames", frames);
	if (s->show_allocs) {
		json_object *arr = json_object_new_array();

		for (size_t i = st->first; i < st->first + st->allocs; i++)
			json_object_array_add(arr, json_alloc(&p->allocs[i]));
		json_object_object_add(o, "allocs", arr);
	}
	return o;
}

static json_object *json_proc(const struct ml_snap_proc *p, const struct ml_snap *s, const struct gp_snap_env *env)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array(), *maps;
	const struct ml_stats *st = &p->st;

	json_object_object_add(o, "pid", json_object_new_int64(p->pid));
	json_object_object_add(o, "comm", json_object_new_string(p->comm));
	json_object_object_add(o, "exited", json_object_new_boolean(p->exited));
	json_object_object_add(o, "exec", json_object_new_boolean(p->exec));
	gp_trees__json_proc(env, o, p->pid);
	json_object_object_add(o, "outstanding_bytes", json_object_new_uint64(st->outstanding_bytes));
	json_object_object_add(o, "outstanding_allocs", json_object_new_uint64(st->outstanding_allocs));
	json_object_object_add(o, "untracked_frees", json_object_new_uint64(st->untracked_frees));
	json_object_object_add(o, "graph_relaunch_frees", json_object_new_uint64(st->graph_relaunch_frees));
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
	json_object_object_add(o, "stacks_bytes", json_object_new_uint64(p->shown_bytes));
	json_object_object_add(o, "stacks_allocs", json_object_new_uint64(p->shown_allocs));
	for (size_t i = 0; i < p->nr_stacks; i++)
		json_object_array_add(arr, json_stack(p, &p->stacks[i], s));
	json_object_object_add(o, "stacks", arr);
	return o;
}

void ml_report__json(json_object *o, const struct gp_snap *hdr)
{
	const struct gp_snap_env *env = hdr->env;
	const struct ml_snap *s = SNAP(hdr);
	json_object *arr = json_object_new_array(), *calls = json_object_new_object();

	static const char *const keys[GP_TREE_VALUES] = { "outstanding_allocs", "outstanding_bytes", "allocs_total" };
	struct gp_trees *t = jobs(s, env);

	static const char *const modes[] = { [GP_STACKS_NONE] = "none", [GP_STACKS_FP] = "fp",
					     [GP_STACKS_COPY] = "dwarf" };

	json_object_object_add(o, "stack_mode", json_object_new_string(modes[s->stacks]));
	json_object_object_add(o, "older_than_s", s->older_than > 0 ? json_object_new_double(s->older_than) : NULL);
	for (size_t i = 0; i < s->d.nr_procs; i++)
		json_object_array_add(arr, json_proc(&s->d.procs[i], s, env));
	json_object_object_add(o, "processes", arr);
	gp_trees__json(t, o, keys);
	gp_trees__free(t);
	for (int i = 0; i < gp_mem_apis_cnt; i++)
		json_object_object_add(calls, gp_mem_apis[i].name,
				       json_object_new_uint64(s->calls[gp_mem_apis[i].id]));
	json_object_object_add(o, "calls", calls);
}

int ml_report__prom(struct prom_out *p, const struct gp_snap *hdr)
{
	static const char *const fams[] = {
		"gpuprobe_cuda_outstanding_bytes", "gpuprobe_cuda_outstanding_allocations",
		"gpuprobe_cuda_alloc_calls_total", "gpuprobe_cuda_free_calls_total",
		"gpuprobe_cuda_alloc_bytes_total", "gpuprobe_cuda_freed_bytes_total",
	};
	const struct ml_snap *s = SNAP(hdr);

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

/* Frames root-first: "comm (PID n)", "[partial stack]" where the outermost frames are
 * missing, then the stack from its outermost frame in. */
static int folded_proc(struct folded *fo, const struct ml_snap_proc *p, bool stacks)
{
	const char *fr[USTACK_MAX_FRAMES + 2];
	char proc[64];
	int r = 0;

	snprintf(proc, sizeof(proc), "%s (PID %u)", p->comm, p->pid);
	for (size_t i = 0; i < p->nr_stacks && !r; i++) {
		const struct ml_snap_stack *st = &p->stacks[i];
		size_t n = 0;

		for (uint32_t k = 0; k < st->nr_frames && n < USTACK_MAX_FRAMES; k++)
			fr[n++] = st->frames[k];
		if (!stacks)
			fr[n++] = "[no stack]";
		else if (st->flags & USTACK_PARTIAL)
			fr[n++] = "[partial stack]";
		fr[n++] = proc;
		r = folded__add(fo, fr, n, st->bytes);
	}
	return r;
}

int ml_report__folded(FILE *f, const struct gp_snap *hdr)
{
	const struct ml_snap *s = SNAP(hdr);
	struct folded *fo = folded__new();
	int r = fo ? 0 : -ENOMEM;

	for (size_t i = 0; !r && i < s->d.nr_procs; i++)
		r = folded_proc(fo, &s->d.procs[i], s->stacks != GP_STACKS_NONE);
	if (!r)
		r = folded__write(fo, f);
	folded__free(fo);
	return r;
}
