/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "lib/apis.h"
#include "modes/trace/apitrace.h"
#include "out/text.h"
#include "out/jsonnum.h"
#include "lib/bandwidth.h"
#include "lib/symbolize.h"
#include "lib/u64map.h"

#define FL_STR_ARG2 1
#define FL_CONFIG_ARG0 2
#define TOP_GAPS 5

enum dec {
	DEC_NONE, DEC_ALLOC, DEC_PITCH, DEC_FREE, DEC_COPY, DEC_LAUNCH, DEC_LAUNCH_EX, DEC_GRAPH,
	DEC_NAME, DEC_ALIAS, DEC_SYNC,
};

struct fn {
	char *name;
	enum dec dec;
	unsigned int api; /* enum gp_api, where the other modes know it */
	enum gp_copy_layout copy; /* DEC_COPY: how it passes the copy (bpf/gp_apis.def) */
	uint64_t calls, errors, total_ns, max_ns;
};

struct gap {
	uint64_t gap_ns, at_ns;
	char before[96], after[96];
};

struct at_proc {
	uint32_t pid;
	char comm[GP_COMM_LEN];
	struct u64map *names; /* kernel handle -> name */
	struct u64map *pending; /* tid -> the name argument of its call about to be read */
	uint64_t *fn_calls;   /* per function */
	uint64_t *fn_ns;
	uint64_t *fn_errors;
	uint64_t allocs, alloc_bytes, frees;
	uint64_t copies[BW__COUNT], copy_bytes[BW__COUNT], copies_undecoded;
	uint64_t launches, graph_launches, syncs, sync_ns, ioctls, ioctl_ns, ioctl_errors;
	uint64_t last_launch_ns;
	char last_kernel[96];
	struct gap gaps[TOP_GAPS];
	int nr_gaps;
};

struct apitrace {
	struct fn *fns;
	int nr_fns;
	struct u64map *procs;
	struct bandwidth *bw; /* ranges, to tell unified copies' directions */
};

static enum dec dec_of(const char *n, unsigned int *api, enum gp_copy_layout *copy)
{
	const struct gp_api_info *mi;

	*api = GP_API_NONE;
	*copy = GP_CL_NONE;
	for (int i = 0; i < gp_mem_apis_cnt; i++) {
		mi = &gp_mem_apis[i];
		if (strcmp(n, mi->name))
			continue;
		*api = mi->id;
		/* a graph's memory nodes decode as the plain calls' first two arguments */
		return mi->layout == GP_LAYOUT_ALLOC || mi->layout == GP_LAYOUT_GALLOC ? DEC_ALLOC :
		       mi->layout == GP_LAYOUT_PITCH ? DEC_PITCH :
		       mi->layout == GP_LAYOUT_FREE || mi->layout == GP_LAYOUT_GFREE ? DEC_FREE : DEC_NONE;
	}
	for (int i = 0; i < gp_copy_apis_cnt; i++)
		if (!strcmp(n, gp_copy_apis[i].name)) {
			*api = gp_copy_apis[i].id;
			*copy = gp_copy_apis[i].layout;
			return *copy == GP_CL_NONE ? DEC_NONE : DEC_COPY;
		}
	for (int i = 0; i < gp_launch_apis_cnt; i++) {
		const struct gp_launch_api_info *l = &gp_launch_apis[i];

		if (strcmp(n, l->name))
			continue;
		*api = l->id;
		switch (l->prog) {
		case GP_LP_KERNEL:
		case GP_LP_COOP:
			return DEC_LAUNCH;
		case GP_LP_EX:
			return DEC_LAUNCH_EX;
		case GP_LP_GRAPH:
			return DEC_GRAPH;
		case GP_LP_NAME:
			return DEC_NAME;
		case GP_LP_ALIAS:
			return DEC_ALIAS;
		case GP_LP_SYNC:
			return DEC_SYNC;
		default:
			return DEC_NONE;
		}
	}
	return DEC_NONE;
}

struct apitrace *apitrace__new(const char *const *names, int n)
{
	struct apitrace *at = calloc(1, sizeof(*at));

	if (!at)
		return NULL;
	at->fns = calloc((size_t)(n ? n : 1), sizeof(*at->fns));
	at->procs = u64map__new();
	at->bw = bandwidth__new();
	if (!at->fns || !at->procs || !at->bw) {
		apitrace__free(at);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		at->fns[i].name = strdup(names[i]);
		if (!at->fns[i].name) {
			apitrace__free(at);
			return NULL;
		}
		at->fns[i].dec = dec_of(names[i], &at->fns[i].api, &at->fns[i].copy);
		at->nr_fns++;
	}
	return at;
}

static void proc__free(struct at_proc *p)
{
	uint64_t k;
	void *v;

	if (!p)
		return;
	for (size_t it = 0; p->names && u64map__next(p->names, &it, &k, &v);)
		free(v);
	u64map__free(p->names);
	u64map__free_all(p->pending, NULL);
	free(p->fn_calls);
	free(p->fn_ns);
	free(p->fn_errors);
	free(p);
}

void apitrace__free(struct apitrace *at)
{
	uint64_t k;
	void *v;

	if (!at)
		return;
	for (int i = 0; i < at->nr_fns; i++)
		free(at->fns[i].name);
	free(at->fns);
	for (size_t it = 0; at->procs && u64map__next(at->procs, &it, &k, &v);)
		proc__free(v);
	u64map__free(at->procs);
	bandwidth__free(at->bw);
	free(at);
}

const char *apitrace__fn_name(const struct apitrace *at, uint32_t fn)
{
	return fn < (uint32_t)at->nr_fns ? at->fns[fn].name : "?";
}

uint32_t apitrace__fn_flags(const struct apitrace *at, uint32_t fn)
{
	if (fn >= (uint32_t)at->nr_fns)
		return 0;
	if (at->fns[fn].dec == DEC_NAME)
		return FL_STR_ARG2;
	if (at->fns[fn].dec == DEC_LAUNCH_EX)
		return FL_CONFIG_ARG0;
	return 0;
}

static struct at_proc *get_proc(struct apitrace *at, uint32_t pid)
{
	struct at_proc *p = u64map__get(at->procs, pid);
	size_t n = (size_t)(at->nr_fns ? at->nr_fns : 1);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->names = u64map__new();
	p->pending = u64map__new();
	p->fn_calls = calloc(n, sizeof(uint64_t));
	p->fn_ns = calloc(n, sizeof(uint64_t));
	p->fn_errors = calloc(n, sizeof(uint64_t));
	if (!p->names || !p->pending || !p->fn_calls || !p->fn_ns || !p->fn_errors || u64map__put(at->procs, pid, p)) {
		proc__free(p);
		return NULL;
	}
	return p;
}

void apitrace__set_comm(struct apitrace *at, uint32_t pid, const char *comm)
{
	struct at_proc *p = get_proc(at, pid);

	if (p && comm)
		snprintf(p->comm, sizeof(p->comm), "%.*s", GP_COMM_LEN - 1, comm);
}

const char *apitrace__comm(struct apitrace *at, uint32_t pid)
{
	struct at_proc *p = get_proc(at, pid);

	return p ? p->comm : "";
}

static json_object *hex(uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "0x%" PRIx64, v);
	return json_object_new_string(b);
}

static json_object *dims(uint64_t x, uint64_t y, uint64_t z)
{
	json_object *a = json_object_new_array();

	json_object_array_add(a, json_object_new_int64((uint32_t)x));
	json_object_array_add(a, json_object_new_int64((uint32_t)y));
	json_object_array_add(a, json_object_new_int64((uint32_t)z));
	return a;
}

static void set_name(struct at_proc *p, uint64_t handle, const char *name)
{
	char buf[4096], *s;

	symbolize__demangle(name, buf, sizeof(buf));
	s = strdup(buf);
	if (!s)
		return;
	free(u64map__del(p->names, handle));
	if (u64map__put(p->names, handle, s))
		free(s);
}

static void launch(struct at_proc *p, const struct gp_call_event *e, uint64_t handle,
		   json_object *args)
{
	const char *name = u64map__get(p->names, handle);
	char kname[96];

	json_object_object_add(args, "function", hex(handle));
	if (name)
		json_object_object_add(args, "kernel", json_object_new_string(name));
	snprintf(kname, sizeof(kname), "%s", name ? name : "unknown");
	p->launches++;
	if (p->last_launch_ns && e->ts_ns > p->last_launch_ns) {
		uint64_t gap = e->ts_ns - p->last_launch_ns;
		int slot = p->nr_gaps < TOP_GAPS ? p->nr_gaps++ : TOP_GAPS - 1;

		/* keep the TOP_GAPS largest, sorted: insert from the end */
		if (slot == TOP_GAPS - 1 && p->nr_gaps == TOP_GAPS && gap <= p->gaps[slot].gap_ns)
			goto done;
		while (slot > 0 && p->gaps[slot - 1].gap_ns < gap) {
			p->gaps[slot] = p->gaps[slot - 1];
			slot--;
		}
		p->gaps[slot].gap_ns = gap;
		p->gaps[slot].at_ns = p->last_launch_ns;
		snprintf(p->gaps[slot].before, sizeof(p->gaps[slot].before), "%s", p->last_kernel);
		snprintf(p->gaps[slot].after, sizeof(p->gaps[slot].after), "%s", kname);
	}
done:
	p->last_launch_ns = e->ts_ns;
	snprintf(p->last_kernel, sizeof(p->last_kernel), "%s", kname);
}

/* The copy as bpf/cuda_copy.bpf.c would have recorded it, from registers alone (2D/3D
 * descriptors are not read by --trace: their bytes stay undecoded). */
static bool copy_event(const struct fn *f, const struct gp_call_event *e, struct gp_copy_event *c)
{
	const __u64 *a = e->args;

	memset(c, 0, sizeof(*c));
	c->pid = e->pid;
	c->tid = e->tid;
	c->dst = a[0];
	c->src = a[1];
	c->bytes = a[2];
	c->dst_type = c->src_type = GP_MEMTYPE_UNIFIED;
	switch (f->copy) {
	case GP_CL_HTOD:
	case GP_CL_HTOD_ASYNC:
		c->dst_type = GP_MEMTYPE_DEVICE;
		c->src_type = GP_MEMTYPE_HOST;
		return true;
	case GP_CL_DTOH:
	case GP_CL_DTOH_ASYNC:
		c->dst_type = GP_MEMTYPE_HOST;
		c->src_type = GP_MEMTYPE_DEVICE;
		return true;
	case GP_CL_DTOD:
	case GP_CL_DTOD_ASYNC:
		c->dst_type = c->src_type = GP_MEMTYPE_DEVICE;
		return true;
	case GP_CL_PEER:
	case GP_CL_PEER_ASYNC:
		c->peer = 1;
		c->dst = a[0];
		c->src = a[2];
		c->bytes = a[4];
		c->dst_type = c->src_type = GP_MEMTYPE_DEVICE;
		return true;
	case GP_CL_UNIFIED:
	case GP_CL_UNIFIED_ASYNC:
		return true;
	default: /* descriptors (2D, 3D, 3D peer) */
		return false;
	}
}

/* Calls, time and errors per function, overall and per process. */
static void account(struct apitrace *at, struct at_proc *p, const struct gp_call_event *e)
{
	struct fn *f = &at->fns[e->fn];

	f->calls++;
	f->total_ns += e->dur_ns;
	if (e->dur_ns > f->max_ns)
		f->max_ns = e->dur_ns;
	p->fn_calls[e->fn]++;
	p->fn_ns[e->fn] += e->dur_ns;
	if (e->ret) {
		p->fn_errors[e->fn]++;
		f->errors++;
	}
}

/* cuMemAlloc-like and cuMemAllocPitch-like: sizes, the address, and the range for copies */
static void dec_alloc(struct apitrace *at, struct at_proc *p, const struct fn *f,
		      const struct gp_call_event *e, json_object *args)
{
	const __u64 *a = e->args;
	struct gp_alloc_event ae = { .type = GP_EV_ALLOC, .api = f->api, .pid = e->pid, .tid = e->tid,
				     .addr = e->out0, .size = a[1] };

	if (f->dec == DEC_ALLOC) {
		json_object_object_add(args, "size", json_object_new_uint64(a[1]));
	} else {
		json_object_object_add(args, "width", json_object_new_uint64(a[2]));
		json_object_object_add(args, "height", json_object_new_uint64(a[3]));
	}
	if (e->ret)
		return;
	json_object_object_add(args, "address", hex(e->out0));
	p->allocs++;
	if (f->dec == DEC_ALLOC) {
		p->alloc_bytes += a[1];
		bandwidth__on_alloc(at->bw, &ae);
	}
}

static void dec_free(struct apitrace *at, struct at_proc *p, const struct fn *f,
		     const struct gp_call_event *e, json_object *args)
{
	struct gp_free_event fe = { .type = GP_EV_FREE, .api = f->api, .pid = e->pid, .addr = e->args[0] };

	json_object_object_add(args, "address", hex(e->args[0]));
	if (e->ret)
		return;
	p->frees++;
	bandwidth__on_free(at->bw, &fe);
}

/* bytes and direction, told apart with the ranges allocated so far */
static void dec_copy(struct apitrace *at, struct at_proc *p, const struct fn *f,
		     const struct gp_call_event *e, json_object *args)
{
	struct gp_copy_event ce;
	enum bw_dir d;
	int gpu;

	if (!copy_event(f, e, &ce)) {
		p->copies_undecoded++;
		return;
	}
	d = bandwidth__direction(at->bw, &ce, &gpu);
	json_object_object_add(args, "bytes", json_object_new_uint64(ce.bytes));
	json_object_object_add(args, "direction", json_object_new_string(bw_dir_name(d)));
	if (!e->ret) {
		p->copies[d]++;
		p->copy_bytes[d] += ce.bytes;
	}
}

/* handle creation with a name, and cuKernelGetFunction's alias of a named kernel */
static void dec_name(struct at_proc *p, const struct fn *f, const struct gp_call_event *e,
		     json_object *args)
{
	char n[GP_NAME_LEN + 1];
	const char *known;

	if (f->dec == DEC_NAME) {
		char *arg = u64map__del(p->pending, e->tid); /* its GP_EV_CALL_STR, just before */

		json_object_object_add(args, "name", json_object_new_string(arg ? arg : ""));
		if (e->ret || !arg) {
			free(arg);
			return;
		}
		json_object_object_add(args, "handle", hex(e->out0));
		set_name(p, e->out0, arg);
		free(arg);
		return;
	}
	json_object_object_add(args, "kernel", hex(e->args[1]));
	if (e->ret)
		return;
	json_object_object_add(args, "function", hex(e->out0));
	known = u64map__get(p->names, e->args[1]);
	if (known) {
		snprintf(n, sizeof(n), "%s", known);
		set_name(p, e->out0, n);
	}
}

void apitrace__on_call_str(struct apitrace *at, const struct gp_call_str_event *e)
{
	struct at_proc *p = get_proc(at, e->pid);
	char *s = p ? strndup(e->str, GP_NAME_LEN) : NULL;

	if (!s)
		return;
	free(u64map__del(p->pending, e->tid));
	if (u64map__put(p->pending, e->tid, s))
		free(s);
}

json_object *apitrace__on_call(struct apitrace *at, const struct gp_call_event *e)
{
	struct at_proc *p = get_proc(at, e->pid);
	json_object *args = json_object_new_object();
	const __u64 *a = e->args;
	const struct fn *f;
	uint32_t cfg[6];

	if (!p || e->fn >= (uint32_t)at->nr_fns)
		return args;
	f = &at->fns[e->fn];
	account(at, p, e);
	switch (f->dec) {
	case DEC_ALLOC:
	case DEC_PITCH:
		dec_alloc(at, p, f, e, args);
		break;
	case DEC_FREE:
		dec_free(at, p, f, e, args);
		break;
	case DEC_COPY:
		dec_copy(at, p, f, e, args);
		break;
	case DEC_LAUNCH:
		json_object_object_add(args, "grid", dims(a[1], a[2], a[3]));
		json_object_object_add(args, "block", dims(a[4], a[5], e->stack_args[0]));
		launch(p, e, a[0], args);
		break;
	case DEC_LAUNCH_EX:
		memcpy(cfg, e->str, sizeof(cfg));
		json_object_object_add(args, "grid", dims(cfg[0], cfg[1], cfg[2]));
		json_object_object_add(args, "block", dims(cfg[3], cfg[4], cfg[5]));
		launch(p, e, a[1], args);
		break;
	case DEC_GRAPH:
		json_object_object_add(args, "graph", hex(a[0]));
		p->graph_launches++;
		break;
	case DEC_NAME:
	case DEC_ALIAS:
		dec_name(p, f, e, args);
		break;
	case DEC_SYNC:
		p->syncs++;
		p->sync_ns += e->dur_ns;
		break;
	default:
		break;
	}
	return args;
}

void apitrace__on_ioctl(struct apitrace *at, uint32_t pid, uint64_t dur_ns, int64_t ret)
{
	struct at_proc *p = get_proc(at, pid);

	if (p) {
		p->ioctls++;
		p->ioctl_ns += dur_ns;
		p->ioctl_errors += ret < 0;
	}
}

static int cmp_u32_by_ns(const void *a, const void *b, void *ctx)
{
	const uint64_t *ns = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return ns[x] < ns[y] ? 1 : ns[x] > ns[y] ? -1 : 0;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct at_proc *x = *(struct at_proc *const *)a, *y = *(struct at_proc *const *)b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* processes sorted by pid, and per process the functions called, by total time */
static size_t sorted_procs(struct apitrace *at, struct at_proc ***out)
{
	size_t n = u64map__size(at->procs), i = 0;
	struct at_proc **v = malloc((n ? n : 1) * sizeof(*v));
	uint64_t k;
	void *val;

	*out = v;
	if (!v)
		return 0;
	for (size_t it = 0; u64map__next(at->procs, &it, &k, &val);)
		v[i++] = val;
	qsort(v, n, sizeof(*v), cmp_pid);
	return n;
}

static size_t called_fns(struct apitrace *at, struct at_proc *p, uint32_t **out)
{
	uint32_t *v = malloc((size_t)(at->nr_fns ? at->nr_fns : 1) * sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v)
		return 0;
	for (int i = 0; i < at->nr_fns; i++)
		if (p->fn_calls[i])
			v[n++] = (uint32_t)i;
	qsort_r(v, n, sizeof(*v), cmp_u32_by_ns, p->fn_ns);
	return n;
}

static json_object *json_functions(struct apitrace *at, struct at_proc *p)
{
	json_object *fa = json_object_new_array();
	uint32_t *fns;
	size_t nf = called_fns(at, p, &fns);

	for (size_t j = 0; j < nf; j++) {
		json_object *fo = json_object_new_object();

		json_object_object_add(fo, "name", json_object_new_string(at->fns[fns[j]].name));
		json_object_object_add(fo, "calls", json_object_new_uint64(p->fn_calls[fns[j]]));
		json_object_object_add(fo, "errors", json_object_new_uint64(p->fn_errors[fns[j]]));
		json_object_object_add(fo, "total_s", json_object_new_double((double)p->fn_ns[fns[j]] / 1e9));
		json_object_array_add(fa, fo);
	}
	free(fns);
	return fa;
}

static json_object *json_copies(const struct at_proc *p)
{
	json_object *c = json_object_new_object();

	for (int k = 0; k < BW__COUNT; k++) {
		json_object *x = json_object_new_object();

		json_object_object_add(x, "copies", json_object_new_uint64(p->copies[k]));
		json_object_object_add(x, "bytes", json_object_new_uint64(p->copy_bytes[k]));
		json_object_object_add(c, bw_dir_name(k), x);
	}
	return c;
}

static json_object *json_gaps(const struct at_proc *p)
{
	json_object *ga = json_object_new_array();

	for (int g = 0; g < p->nr_gaps; g++) {
		json_object *x = json_object_new_object();

		json_object_object_add(x, "gap_s", json_object_new_double((double)p->gaps[g].gap_ns / 1e9));
		json_object_object_add(x, "at_ns", json_object_new_uint64(p->gaps[g].at_ns));
		json_object_object_add(x, "before", json_object_new_string(p->gaps[g].before));
		json_object_object_add(x, "after", json_object_new_string(p->gaps[g].after));
		json_object_array_add(ga, x);
	}
	return ga;
}

static json_object *json_counts(uint64_t calls, const char *k2, json_object *v2, const char *k3, json_object *v3)
{
	json_object *c = json_object_new_object();

	json_object_object_add(c, "calls", json_object_new_uint64(calls));
	json_object_object_add(c, k2, v2);
	if (k3)
		json_object_object_add(c, k3, v3);
	return c;
}

static json_object *json_proc(struct apitrace *at, struct at_proc *p)
{
	json_object *po = json_object_new_object();

	json_object_object_add(po, "pid", json_object_new_int64(p->pid));
	json_object_object_add(po, "comm", json_object_new_string(p->comm));
	json_object_object_add(po, "functions", json_functions(at, p));
	json_object_object_add(po, "allocations", json_counts(p->allocs, "bytes", json_object_new_uint64(p->alloc_bytes), NULL, NULL));
	json_object_object_add(po, "frees", json_object_new_uint64(p->frees));
	json_object_object_add(po, "copies", json_copies(p));
	json_object_object_add(po, "copies_undecoded", json_object_new_uint64(p->copies_undecoded));
	json_object_object_add(po, "launches", json_object_new_uint64(p->launches));
	json_object_object_add(po, "graph_launches", json_object_new_uint64(p->graph_launches));
	json_object_object_add(po, "sync", json_counts(p->syncs, "blocked_s", json_object_new_double((double)p->sync_ns / 1e9), NULL, NULL));
	json_object_object_add(po, "ioctls", json_counts(p->ioctls, "errors", json_object_new_uint64(p->ioctl_errors),
						      "total_s", json_object_new_double((double)p->ioctl_ns / 1e9)));
	json_object_object_add(po, "launch_gaps", json_gaps(p));
	return po;
}

json_object *apitrace__summary_json(struct apitrace *at, const struct at_drops *d, const struct at_file *file)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array(), *dr;
	struct at_proc **procs;
	size_t n = sorted_procs(at, &procs);

	json_object_object_add(o, "mode", json_object_new_string("trace"));
	json_object_object_add(o, "report", json_object_new_string("final"));
	json_object_object_add(o, "file", json_object_new_string(file->path));
	json_object_object_add(o, "format", json_object_new_string(file->format));
	json_object_object_add(o, "events_written", json_object_new_uint64(file->written));
	json_object_object_add(o, "counter_events", json_object_new_uint64(file->counters));
	json_object_object_add(o, "counter_interval_s", json_object_new_double(file->counter_interval_s));
	json_object_object_add(o, "process_events", json_object_new_uint64(file->instants));
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, json_proc(at, procs[i]));
	free(procs);
	json_object_object_add(o, "processes", arr);
	json_object_object_add(o, "dropped_events",
			       json_object_new_uint64(d->ringbuf + d->pending + d->share + d->too_deep +
						      d->ioctl_ringbuf + d->counter_series));
	dr = json_object_new_object();
	json_object_object_add(dr, "ringbuf_full", json_object_new_uint64(d->ringbuf));
	json_object_object_add(dr, "pending_table_full", json_object_new_uint64(d->pending));
	json_object_object_add(dr, "pending_share_full", json_object_new_uint64(d->share));
	json_object_object_add(dr, "nested_too_deep", json_object_new_uint64(d->too_deep));
	json_object_object_add(dr, "return_without_entry", json_object_new_uint64(d->noreturn));
	json_object_object_add(dr, "ioctl_ringbuf_full", json_object_new_uint64(d->ioctl_ringbuf));
	json_object_object_add(dr, "counter_series_full", json_object_new_uint64(d->counter_series));
	json_object_object_add(dr, "name_args_lost", json_object_new_uint64(d->names_lost));
	json_object_object_add(dr, "functions_not_traced", json_object_new_uint64(d->fns_skipped));
	json_object_object_add(o, "drops", dr);
	return o;
}

/* The drops line: every counter that is not 0, or all of them with -v. */
static void drops_text(FILE *f, const struct at_drops *d, bool all)
{
	const struct {
		const char *name;
		uint64_t n;
	} c[] = {
		{ "ring buffer full", d->ringbuf }, { "pending table full", d->pending },
		{ "pending share full", d->share }, { "nested too deep", d->too_deep }, { "ioctl ring buffer full", d->ioctl_ringbuf },
		{ "counter series", d->counter_series }, { "name arguments lost", d->names_lost },
		{ "functions not traced", d->fns_skipped },
	};
	bool any = false, first = true;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		any = any || c[i].n;
	if (!any && !all)
		return;
	fprintf(f, "Dropped events: %s (", gp_text__count(d->ringbuf + d->pending + d->share + d->too_deep + d->ioctl_ringbuf +
						     d->counter_series).s);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (!c[i].n && !all)
			continue;
		fprintf(f, "%s%s %s", first ? "" : ", ", c[i].name, gp_text__count(c[i].n).s);
		first = false;
	}
	fputs(")\n", f);
}

void apitrace__summary_text(struct apitrace *at, FILE *f, const struct at_drops *d, const struct at_file *file,
			    bool all)
{
	struct at_proc **procs;
	size_t n = sorted_procs(at, &procs);

	fprintf(f, "trace summary: %s, %s and %s written to %s (%s)\n", gp_text__n(file->written, "call", "calls").s,
		gp_text__n(file->counters, "counter sample", "counter samples").s,
		gp_text__n(file->instants, "process event", "process events").s, file->path, file->format);
	for (size_t i = 0; i < n; i++) {
		struct at_proc *p = procs[i];
		uint32_t *fns;
		size_t nf = called_fns(at, p, &fns);
		bool any = false;

		fprintf(f, "PID %u (%s)\n", p->pid, p->comm);
		fprintf(f, "  %-36s %10s %8s %10s\n", "FUNCTION", "CALLS", "ERRORS", "TOTAL");
		for (size_t j = 0; j < nf && j < 25; j++)
			fprintf(f, "  %-36s %10s %8s %10s\n", at->fns[fns[j]].name, gp_text__count(p->fn_calls[fns[j]]).s,
				gp_text__count(p->fn_errors[fns[j]]).s, gp_text__duration((double)p->fn_ns[fns[j]] / 1e9).s);
		if (nf > 25)
			fprintf(f, "  ... %s\n", gp_text__n(nf - 25, "more function", "more functions").s);
		free(fns);
		if (p->allocs || p->frees || all)
			fprintf(f, "  %s (%s), %s\n", gp_text__n(p->allocs, "allocation", "allocations").s,
				gp_text__bytes_exact(p->alloc_bytes).s, gp_text__n(p->frees, "free", "frees").s);
		for (int k = 0; k < BW__COUNT; k++) {
			if (!p->copies[k])
				continue;
			fprintf(f, "%s %s %s (%s)", any ? "," : "  copies:", bw_dir_name(k), gp_text__count(p->copies[k]).s,
				gp_text__bytes_exact(p->copy_bytes[k]).s);
			any = true;
		}
		if (p->copies_undecoded)
			fprintf(f, "%s%s (not decoded)", any ? ", " : "  copies: ",
				gp_text__n(p->copies_undecoded, "2D/3D copy", "2D/3D copies").s);
		if (any || p->copies_undecoded)
			fputc('\n', f);
		fprintf(f, "  %s, %s, %s blocked %s", gp_text__n(p->launches, "launch", "launches").s,
			gp_text__n(p->graph_launches, "graph launch", "graph launches").s,
			gp_text__n(p->syncs, "sync call", "sync calls").s, gp_text__duration((double)p->sync_ns / 1e9).s);
		/* the ioctls show with --ioctl beside the trace: not a "0 ioctls" in every summary */
		if (p->ioctls || all)
			fprintf(f, ", %s (%s)", gp_text__n(p->ioctls, "ioctl", "ioctls").s,
				gp_text__duration((double)p->ioctl_ns / 1e9).s);
		fputc('\n', f);
		for (int g = 0; g < p->nr_gaps; g++)
			fprintf(f, "  launch gap %s between %s and %s\n", gp_text__duration((double)p->gaps[g].gap_ns / 1e9).s,
				p->gaps[g].before, p->gaps[g].after);
	}
	free(procs);
	drops_text(f, d, all);
	fflush(f);
}
