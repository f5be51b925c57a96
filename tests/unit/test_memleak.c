/* SPDX-License-Identifier: BSD-3-Clause */
/* The --memleak aggregator and the event dispatcher, fed with hand-made records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/apis.h"
#include "core/events.h"
#include <json-c/json.h>
#include "out/folded.h"
#include "modes/memleak/memleak.h"
#include "modes/memleak/memleak_mode.h"
#include "core/mode.h"
#include "core/run.h"
#include "unit.h"
#include "lib/u64map.h"
#include "core/ustack.h"

static struct gp_alloc_event alloc_ev(uint32_t pid, uint32_t api, uint64_t addr, uint64_t size)
{
	struct gp_alloc_event e;

	memset(&e, 0, sizeof(e));
	e.type = GP_EV_ALLOC;
	e.api = api;
	e.pid = pid;
	e.tid = pid + 1;
	e.ts_ns = 1000;
	e.addr = addr;
	e.size = size;
	strcpy(e.comm, "app");
	return e;
}

static struct gp_free_event free_ev(uint32_t type, uint32_t pid, uint32_t api, uint64_t addr)
{
	struct gp_free_event e;

	memset(&e, 0, sizeof(e));
	e.type = type;
	e.api = api;
	e.pid = pid;
	e.addr = addr;
	strcpy(e.comm, "app");
	return e;
}

static struct ml_proc *only_proc(struct memleak *ml, uint32_t pid)
{
	struct ml_proc **v;
	size_t n = memleak__procs(ml, &v);

	for (size_t i = 0; i < n; i++)
		if (v[i]->h.pid == pid)
			return v[i];
	return NULL;
}

/* Two stacks: what the mode would pass for two call sites. */
static const char *const chain_a[] = { "cuMemAlloc_v2+0x0 (libcuda.so.1)", "leaf+0x1a (app) at app.c:10",
				       "main+0x20 (app) at app.c:40" };
static const char *const chain_b[] = { "cuMemAlloc_v2+0x0 (libcuda.so.1)", "other+0x8 (app) at app.c:20",
				       "main+0x30 (app) at app.c:41" };
static const struct ml_stack_in stack_a = { chain_a, 3, 0 };
static const struct ml_stack_in stack_b = { chain_b, 3, USTACK_TRUNCATED };

static void test_alloc_free_accounting(void)
{
	struct memleak *ml = memleak__new(0);
	struct gp_alloc_event a;
	struct gp_free_event f;
	struct ml_proc *p;

	for (int i = 0; i < 5; i++) {
		a = alloc_ev(10, GP_API_cuMemAlloc_v2, 0x7000 + i * 0x100, 100 + i);
		memleak__on_alloc(ml, &a, i % 2 ? &stack_a : &stack_b);
	}
	for (int i = 0; i < 3; i++) {
		f = free_ev(GP_EV_FREE, 10, GP_API_cuMemFree_v2, 0x7000 + i * 0x100);
		memleak__on_free(ml, &f);
	}
	f = free_ev(GP_EV_FREE, 10, GP_API_cuMemFree_v2, 0xdead00); /* before attach */
	memleak__on_free(ml, &f);
	f = free_ev(GP_EV_FREE, 10, GP_API_cuMemFree_v2, 0); /* cuMemFree(0): a no-op */
	memleak__on_free(ml, &f);
	p = only_proc(ml, 10);
	if (!ASSERT_TRUE(p != NULL, "proc_found"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.outstanding_allocs, 2, "outstanding_allocs"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.outstanding_bytes, 103 + 104, "outstanding_bytes"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.allocs_total, 5, "allocs_total"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.frees_total, 4, "frees_total"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.untracked_frees, 1, "untracked_frees"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.bytes_by_kind[GP_KIND_DEVICE], 207, "device_bytes"))
		goto cleanup;
	/* five allocations from two stacks: two copies, each kept while used */
	if (!ASSERT_EQ(u64map__size(p->stacks), 2, "stacks kept once each"))
		goto cleanup;
	f = free_ev(GP_EV_FREE, 10, GP_API_cuMemFree_v2, 0x7300); /* the last one of stack_a */
	memleak__on_free(ml, &f);
	if (!ASSERT_EQ(u64map__size(p->stacks), 1, "a stack goes with its last allocation"))
		goto cleanup;
cleanup:
	memleak__free(ml);
}

static const struct ml_snap_proc *snap_proc(const struct ml_snap_data *d, uint32_t pid)
{
	for (size_t i = 0; i < d->nr_procs; i++)
		if (d->procs[i].pid == pid)
			return &d->procs[i];
	return NULL;
}

/* Outstanding allocations grouped by stack, most bytes first, with their oldest age. */
static void test_groups_by_stack(void)
{
	struct memleak *ml = memleak__new(0);
	struct ml_snap_data d = { 0 };
	const struct ml_snap_proc *sp;
	const struct ml_snap_stack *g;
	struct gp_alloc_event a;

	/* stack_a: 3 x 100 bytes at t = 1, 2, 3 s; stack_b: 1 x 500 at t = 5 s (two APIs) */
	for (int i = 0; i < 3; i++) {
		a = alloc_ev(4, GP_API_cuMemAlloc_v2, 0x1000 + i * 0x100, 100);
		a.ts_ns = (uint64_t)(i + 1) * 1000000000;
		memleak__on_alloc(ml, &a, &stack_a);
	}
	a = alloc_ev(4, GP_API_cuMemAllocAsync, 0x9000, 500);
	a.ts_ns = 5000000000;
	memleak__on_alloc(ml, &a, &stack_b);
	if (!ASSERT_EQ(memleak__snapshot(ml, 10000000000ull, 0, ML_SNAP_ALLOCS, 0, &d), 0, "snapshot"))
		goto cleanup;
	sp = snap_proc(&d, 4);
	if (!ASSERT_TRUE(sp != NULL, "process in the snapshot") || !ASSERT_EQ(sp->nr_stacks, 2, "two stacks"))
		goto cleanup;
	g = &sp->stacks[0];
	if (!ASSERT_EQ(g->bytes, 500, "biggest stack first") || !ASSERT_EQ(g->allocs, 1, "its allocations") ||
	    !ASSERT_EQ(g->flags, USTACK_TRUNCATED, "its flags") ||
	    !ASSERT_STR_EQ(g->frames[1], "other+0x8 (app) at app.c:20", "its frames") ||
	    !ASSERT_EQ(g->apis, gp_mem_api_bit(GP_API_cuMemAllocAsync), "its API"))
		goto cleanup;
	g = &sp->stacks[1];
	if (!ASSERT_EQ(g->bytes, 300, "second stack's bytes") || !ASSERT_EQ(g->allocs, 3, "second stack's allocations") ||
	    !ASSERT_TRUE(g->oldest_age_s > 8.99 && g->oldest_age_s < 9.01, "oldest age 9 s") ||
	    !ASSERT_EQ(g->nr_frames, 3, "frames") || !ASSERT_EQ(g->first, 1, "its allocations follow the first stack's") ||
	    !ASSERT_EQ(sp->allocs[1].size + sp->allocs[2].size + sp->allocs[3].size, 300, "allocations of the group"))
		goto cleanup;
	if (!ASSERT_EQ(sp->shown_bytes, sp->st.outstanding_bytes, "stacks sum to outstanding_bytes") ||
	    !ASSERT_EQ(sp->shown_allocs, 4, "stacks sum to outstanding_allocs"))
		goto cleanup;
	/* --older-than 7.5 s: only the two oldest of stack_a */
	if (!ASSERT_EQ(memleak__snapshot(ml, 10000000000ull, 0, ML_SNAP_ALLOCS, 7500000000ull, &d), 0, "snapshot"))
		goto cleanup;
	sp = snap_proc(&d, 4);
	if (!ASSERT_EQ(sp->nr_stacks, 1, "one stack older than 7.5 s") ||
	    !ASSERT_EQ(sp->stacks[0].bytes, 200, "its bytes") || !ASSERT_EQ(sp->shown_bytes, 200, "shown bytes") ||
	    !ASSERT_EQ(sp->st.outstanding_bytes, 800, "totals unchanged"))
		goto cleanup;
cleanup:
	ml_snap_data__clear(&d);
	memleak__free(ml);
}

/* No stack (--stacks none, or a lost stack record): one group per flag set. */
static void test_no_stack_groups(void)
{
	struct memleak *ml = memleak__new(0);
	struct ml_stack_in lost = { .flags = USTACK_LOST };
	struct ml_snap_data d = { 0 };
	const struct ml_snap_proc *sp;
	struct gp_alloc_event a;

	for (int i = 0; i < 4; i++) {
		a = alloc_ev(8, GP_API_cuMemAlloc_v2, 0x100 * (i + 1), 10);
		memleak__on_alloc(ml, &a, i < 3 ? NULL : &lost);
	}
	if (!ASSERT_EQ(memleak__snapshot(ml, 2000, 8, ML_SNAP_ALLOCS, 0, &d), 0, "snapshot"))
		goto cleanup;
	sp = snap_proc(&d, 8);
	if (!ASSERT_EQ(sp->nr_stacks, 2, "no stack and lost stacks apart") ||
	    !ASSERT_EQ(sp->stacks[0].allocs, 3, "no stack") || !ASSERT_EQ(sp->stacks[0].nr_frames, 0, "no frames") ||
	    !ASSERT_EQ(sp->stacks[1].flags, USTACK_LOST, "lost"))
		goto cleanup;
cleanup:
	ml_snap_data__clear(&d);
	memleak__free(ml);
}

/* A report's snapshot: two processes, three stacks (one partial). */
static int report_snap(struct memleak *ml, struct ml_snap *s, bool show_allocs, int top)
{
	static const char *const py[] = { "cuMemAlloc_v2+0x0 (libcuda.so.1)", "leak (a;b.py:3)", "<module> (b.py:9)" };
	struct ml_stack_in in_py = { py, 3, 0 };
	struct gp_alloc_event a;

	for (int i = 0; i < 3; i++) {
		a = alloc_ev(21, GP_API_cuMemAlloc_v2, 0x1000 + i * 0x100, 1000);
		memleak__on_alloc(ml, &a, &stack_a);
	}
	a = alloc_ev(21, GP_API_cuMemAlloc_v2, 0x5000, 70);
	memleak__on_alloc(ml, &a, &stack_b);
	a = alloc_ev(22, GP_API_cuMemAllocManaged, 0x9000, 4096);
	strcpy(a.comm, "trainer");
	memleak__on_alloc(ml, &a, &in_py);
	memset(s, 0, sizeof(*s));
	s->hdr = (struct gp_snap){ .mode = "memleak", .kind = GP_SNAP_FINAL, .now_ns = 1000 };
	s->top = top;
	s->stacks = GP_STACKS_COPY;
	s->show_allocs = show_allocs;
	return memleak__snapshot(ml, 1000, 0, ML_SNAP_ALLOCS, 0, &s->d);
}

static char *render(void (*fn)(FILE *, const struct ml_snap *), const struct ml_snap *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fn(f, s);
	fclose(f);
	return buf;
}

static void as_text(FILE *f, const struct ml_snap *s)
{
	ml_report__text(f, &s->hdr);
}

static void as_folded(FILE *f, const struct ml_snap *s)
{
	ml_report__folded(f, &s->hdr);
}

/* --folded: one line per stack, root-first under its process, the values summing to the
 * outstanding bytes; read back by the folded reader. */
static void test_report_folded(void)
{
	struct memleak *ml = memleak__new(0);
	struct folded *back = folded__new();
	struct folded_read_stats st = { 0 };
	const struct folded_stack *v;
	struct ml_snap s;
	char *out = NULL, err[128];
	FILE *f = NULL;
	size_t n;

	if (!ASSERT_EQ(report_snap(ml, &s, false, 10), 0, "snapshot"))
		goto cleanup;
	out = render(as_folded, &s);
	if (!ASSERT_TRUE(out != NULL, "rendered"))
		goto cleanup;
	f = fmemopen(out, strlen(out), "r");
	if (!ASSERT_EQ(folded__read(back, f, &st, err, sizeof(err)), 0, "folded__read") ||
	    !ASSERT_EQ(st.skipped, 0, "no line skipped") || !ASSERT_EQ(folded__count(back), 3, "three stacks") ||
	    !ASSERT_EQ(folded__total(back), 3000 + 70 + 4096, "the outstanding bytes"))
		goto cleanup;
	n = folded__sorted(back, &v);
	if (!ASSERT_EQ(n, 3, "sorted") ||
	    !ASSERT_STR_EQ(v[0].stack, "app (PID 21);[partial stack];main+0x30 (app) at app.c:41;"
			   "other+0x8 (app) at app.c:20;cuMemAlloc_v2+0x0 (libcuda.so.1)", "partial, root-first") ||
	    !ASSERT_EQ(v[0].value, 70, "its bytes") ||
	    !ASSERT_STR_EQ(v[1].stack, "app (PID 21);main+0x20 (app) at app.c:40;leaf+0x1a (app) at app.c:10;"
			   "cuMemAlloc_v2+0x0 (libcuda.so.1)", "complete") ||
	    !ASSERT_EQ(v[1].value, 3000, "three allocations in one line") ||
	    !ASSERT_STR_EQ(v[2].stack, "trainer (PID 22);<module> (b.py:9);leak (a:b.py:3);cuMemAlloc_v2+0x0 (libcuda.so.1)",
			   "Python frames, ';' made safe"))
		goto cleanup;
cleanup:
	if (f)
		fclose(f);
	free(out);
	folded__free(back);
	ml_snap_data__clear(&s.d);
	memleak__free(ml);
}

/* Text: a block per stack, biggest first, its status, --top and --show-allocs. */
static void test_report_text(void)
{
	struct memleak *ml = memleak__new(0);
	struct ml_snap s;
	char *out = NULL;

	if (!ASSERT_EQ(report_snap(ml, &s, false, 1), 0, "snapshot"))
		goto cleanup;
	out = render(as_text, &s);
	if (!ASSERT_STR_CONTAINS(out, "PID 21 (app): 4 outstanding allocations, 3.00 KiB (3,070 B)\n", "process line") ||
	    !ASSERT_STR_CONTAINS(out, "PID 22 (trainer): 1 outstanding allocation, 4.00 KiB (4,096 B)\n", "the singular") ||
	    !ASSERT_STR_CONTAINS(out, "    4 allocations, 0 frees; device 3.00 KiB\n", "its calls, no untracked frees") ||
	    !ASSERT_STR_CONTAINS(out, "    2.93 KiB (3,000 B) in 3 allocations from cuMemAlloc_v2, oldest 0 ns:\n"
				 "        cuMemAlloc_v2+0x0 (libcuda.so.1)\n        leaf+0x1a (app) at app.c:10\n", "the stack") ||
	    !ASSERT_FALSE(strstr(out, "Dropped events") != NULL, "no drop line when none was dropped") ||
	    !ASSERT_STR_CONTAINS(out, "    ... 1 more stack (--top)", "--top 1") ||
	    !ASSERT_FALSE(strstr(out, " by cuMemAlloc_v2, age ") != NULL, "no allocation listed"))
		goto cleanup;
	free(out);
	ml_snap_data__clear(&s.d);
	memleak__free(ml);
	ml = memleak__new(0);
	if (!ASSERT_EQ(report_snap(ml, &s, true, -1), 0, "snapshot"))
		goto cleanup;
	out = render(as_text, &s);
	if (!ASSERT_STR_CONTAINS(out, "        [partial: the stack copy ended before the stack did (--stack-bytes)]\n"
				 "      70 B at 0x5000 by cuMemAlloc_v2", "partial, then its allocation") ||
	    !ASSERT_STR_CONTAINS(out, "      4.00 KiB (4,096 B) at 0x9000 by cuMemAllocManaged", "the managed one"))
		goto cleanup;
cleanup:
	free(out);
	ml_snap_data__clear(&s.d);
	memleak__free(ml);
}

/* JSON: "stacks" per process, with allocations only on request. */
static void test_report_json(void)
{
	struct memleak *ml = memleak__new(0);
	json_object *o = json_object_new_object(), *procs, *p, *st, *x;
	struct ml_snap s;

	if (!ASSERT_EQ(report_snap(ml, &s, true, 10), 0, "snapshot"))
		goto cleanup;
	ml_report__json(o, &s.hdr);
	if (!ASSERT_TRUE(json_object_object_get_ex(o, "processes", &procs), "processes"))
		goto cleanup;
	p = json_object_array_get_idx(procs, 0);
	json_object_object_get_ex(p, "stacks", &st);
	if (!ASSERT_EQ(json_object_array_length(st), 2, "two stacks of PID 21"))
		goto cleanup;
	x = json_object_array_get_idx(st, 1);
	if (!ASSERT_STR_EQ(json_object_to_json_string_ext(x, JSON_C_TO_STRING_PLAIN),
			   "{\"outstanding_bytes\":70,\"outstanding_allocs\":1,\"oldest_age_s\":0.0,"
			   "\"apis\":[\"cuMemAlloc_v2\"],\"kinds\":[\"device\"],\"partial\":true,"
			   "\"flags\":[\"truncated\"],\"frames\":[\"cuMemAlloc_v2+0x0 (libcuda.so.1)\","
			   "\"other+0x8 (app) at app.c:20\",\"main+0x30 (app) at app.c:41\"],"
			   "\"allocs\":[{\"address\":\"0x5000\",\"size\":70,\"api\":\"cuMemAlloc_v2\","
			   "\"kind\":\"device\",\"age_s\":0.0,\"tid\":22}]}", "a partial stack"))
		goto cleanup;
	json_object_object_get_ex(p, "stacks_bytes", &x);
	if (!ASSERT_EQ(json_object_get_uint64(x), 3070, "stacks_bytes"))
		goto cleanup;
	json_object_object_get_ex(o, "stack_mode", &x);
	ASSERT_STR_EQ(json_object_get_string(x), "dwarf", "the stacks mode");
cleanup:
	json_object_put(o);
	ml_snap_data__clear(&s.d);
	memleak__free(ml);
}

static void test_free_families_do_not_cross(void)
{
	struct memleak *ml = memleak__new(0);
	struct gp_alloc_event a = alloc_ev(7, GP_API_cuMemCreate, 5, 2 << 20);
	struct gp_free_event f;
	struct ml_proc *p;
	struct ml_alloc **v;

	memleak__on_alloc(ml, &a, NULL);
	a = alloc_ev(7, GP_API_cuMemAlloc_v2, 5, 64); /* same number as the handle */
	memleak__on_alloc(ml, &a, NULL);
	f = free_ev(GP_EV_FREE, 7, GP_API_cuMemRelease, 5);
	memleak__on_free(ml, &f);
	p = only_proc(ml, 7);
	if (!ASSERT_EQ(p->st.outstanding_allocs, 1, "outstanding_allocs"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.outstanding_bytes, 64, "outstanding_bytes"))
		goto cleanup;
	if (!ASSERT_EQ(memleak__proc_allocs(p, &v), 1, "allocs_listed"))
		goto cleanup;
	if (!ASSERT_EQ(v[0]->api, GP_API_cuMemAlloc_v2, "alloc_api"))
		goto cleanup;
	memleak__free_allocs_array(v);
cleanup:
	memleak__free(ml);
}

static void test_mappings(void)
{
	struct memleak *ml = memleak__new(0);
	struct gp_free_event m = free_ev(GP_EV_MAP, 3, GP_API_cuMemMap, 0x9000);
	struct ml_proc *p;

	m.size = 4096;
	m.handle = 1;
	memleak__on_free(ml, &m);
	m.addr = 0xa000;
	memleak__on_free(ml, &m);
	m = free_ev(GP_EV_UNMAP, 3, GP_API_cuMemUnmap, 0x9000);
	memleak__on_free(ml, &m);
	p = only_proc(ml, 3);
	if (!ASSERT_EQ(p->st.maps_total, 2, "maps_total"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.unmaps_total, 1, "unmaps_total"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.mapped_bytes, 4096, "mapped_bytes"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.frees_total, 0, "frees_total"))
		goto cleanup;
cleanup:
	memleak__free(ml);
}

static void test_exit_detaches_pid(void)
{
	struct memleak *ml = memleak__new(0);
	struct gp_alloc_event a = alloc_ev(42, GP_API_cuMemAlloc_v2, 0x100, 10);
	struct gp_exit_event x = { .type = GP_EV_EXIT, .pid = 42, .ts_ns = 5000 };
	struct ml_proc **v, *gone;

	memleak__on_alloc(ml, &a, NULL);
	gone = memleak__on_exit(ml, &x);
	if (!ASSERT_TRUE(gone != NULL, "exited_proc_found"))
		goto cleanup;
	if (!ASSERT_TRUE(gone->h.exited, "exited_flag"))
		goto cleanup;
	if (!ASSERT_EQ(gone->st.outstanding_allocs, 1, "exited_outstanding_allocs"))
		goto cleanup;
	/* PID reuse: the new process starts clean */
	a = alloc_ev(42, GP_API_cuMemAlloc_v2, 0x200, 20);
	memleak__on_alloc(ml, &a, NULL);
	if (!ASSERT_EQ(memleak__procs(ml, &v), 2, "procs_listed"))
		goto cleanup;
	if (!ASSERT_TRUE(!v[0]->h.exited, "first_running"))
		goto cleanup;
	if (!ASSERT_EQ(v[0]->st.outstanding_bytes, 20, "first_outstanding_bytes"))
		goto cleanup;
	if (!ASSERT_TRUE(v[1]->h.exited, "second_exited"))
		goto cleanup;
	if (!ASSERT_EQ(v[1]->st.outstanding_bytes, 10, "second_outstanding_bytes"))
		goto cleanup;
	memleak__reap(ml, UINT64_MAX, 42); /* the target's record stays for the final report */
	if (!ASSERT_EQ(memleak__procs(ml, &v), 2, "procs_listed"))
		goto cleanup;
	memleak__reap(ml, UINT64_MAX, 0);
	if (!ASSERT_EQ(memleak__procs(ml, &v), 1, "procs_listed"))
		goto cleanup;
	/* an exit of a process never seen is ignored */
	x.pid = 99;
	if (!ASSERT_TRUE(memleak__on_exit(ml, &x) == NULL, "exit_of_unknown_proc"))
		goto cleanup;
cleanup:
	memleak__free(ml);
}

static void test_table_limit(void)
{
	struct memleak *ml = memleak__new(3);
	struct gp_alloc_event a;
	struct gp_free_event f;

	for (int i = 0; i < 5; i++) {
		a = alloc_ev(1, GP_API_cuMemAlloc_v2, 0x100 * (i + 1), 1);
		memleak__on_alloc(ml, &a, NULL);
	}
	if (!ASSERT_EQ(memleak__table_full(ml), 2, "table_full"))
		goto cleanup;
	f = free_ev(GP_EV_FREE, 1, GP_API_cuMemFree_v2, 0x100);
	memleak__on_free(ml, &f);
	a = alloc_ev(1, GP_API_cuMemAlloc_v2, 0x900, 1); /* room again after a free */
	memleak__on_alloc(ml, &a, NULL);
	if (!ASSERT_EQ(memleak__table_full(ml), 2, "table_full"))
		goto cleanup;
cleanup:
	memleak__free(ml);
}

static void test_reused_address_replaces(void)
{
	struct memleak *ml = memleak__new(0);
	struct gp_alloc_event a = alloc_ev(1, GP_API_cuMemAlloc_v2, 0x100, 10);
	struct ml_proc *p;

	memleak__on_alloc(ml, &a, NULL);
	a.size = 30; /* its free was lost: the driver's word wins */
	memleak__on_alloc(ml, &a, NULL);
	p = only_proc(ml, 1);
	if (!ASSERT_EQ(p->st.outstanding_allocs, 1, "outstanding_allocs"))
		goto cleanup;
	if (!ASSERT_EQ(p->st.outstanding_bytes, 30, "outstanding_bytes"))
		goto cleanup;
cleanup:
	memleak__free(ml);
}

static int n_alloc, n_free, n_exit, n_any;
static __u32 any_pid_sum, any_last_type;
static void c_alloc(void *c, const struct gp_alloc_event *e) { (void)c; (void)e; n_alloc++; }
static void c_any(void *c, __u32 type, __u32 pid) { (void)c; n_any++; any_pid_sum += pid; any_last_type = type; }
static void c_free(void *c, const struct gp_free_event *e) { (void)c; (void)e; n_free++; }
static void c_exit(void *c, const struct gp_exit_event *e) { (void)c; (void)e; n_exit++; }

static void test_dispatch_by_type_and_size(void)
{
	static const struct gp_on on[] = { GP_ON(GP_EV_ALLOC, c_alloc), GP_ON_FREES(c_free),
					   GP_ON(GP_EV_EXIT, c_exit) };
	static const struct gp_on unknown[] = { { 77, (gp_record_fn)c_alloc } };
	static const struct gp_on twice[] = { GP_ON(GP_EV_EXIT, c_exit), GP_ON(GP_EV_EXIT, c_exit) };
	struct gp_handlers h = { GP_ONS(on), .on_any = c_any };
	struct gp_handlers hu = { GP_ONS(unknown) }, ht = { GP_ONS(twice) };
	struct gp_events *ev = gp_events__new();
	struct gp_alloc_event a = alloc_ev(10, 1, 1, 1);
	struct gp_free_event f = free_ev(GP_EV_UNMAP, 200, 1, 1);
	struct gp_exit_event x = { .type = GP_EV_EXIT, .pid = 3000 };
	__u32 bogus = 77;

	if (!ASSERT_EQ(gp_events__dispatch(ev, &h, &a, sizeof(a)), 0, "dispatch_alloc"))
		goto cleanup;
	if (!ASSERT_EQ(gp_events__dispatch(ev, &h, &f, sizeof(f)), 0, "dispatch_free"))
		goto cleanup;
	if (!ASSERT_EQ(gp_events__dispatch(ev, &h, &x, sizeof(x)), 0, "dispatch_exit"))
		goto cleanup;
	if (!ASSERT_EQ(gp_events__dispatch(ev, &h, &a, sizeof(a) - 8), -22, "dispatch_short_record"))
		goto cleanup; /* short record */
	if (!ASSERT_EQ(gp_events__dispatch(ev, &h, &bogus, sizeof(bogus)), -22, "dispatch_unknown_type"))
		goto cleanup;
	if (!ASSERT_EQ(gp_events__dispatch(ev, &h, &bogus, 2), -22, "dispatch_truncated"))
		goto cleanup;
	if (!ASSERT_EQ(n_alloc, 1, "alloc_handled"))
		goto cleanup;
	if (!ASSERT_EQ(n_free, 1, "free_handled"))
		goto cleanup;
	if (!ASSERT_EQ(n_exit, 1, "exit_handled"))
		goto cleanup;
	if (!ASSERT_EQ(gp_events__handled(ev), 3, "records_handled"))
		goto cleanup;
	if (!ASSERT_EQ(gp_events__malformed(ev), 3, "records_malformed"))
		goto cleanup;
	/* every well-formed record's pid, whatever its struct's layout, and no malformed one */
	if (!ASSERT_EQ(n_any, 3, "any_handled"))
		goto cleanup;
	if (!ASSERT_EQ(any_pid_sum, 3210, "any_pids"))
		goto cleanup;
	if (!ASSERT_EQ(any_last_type, GP_EV_EXIT, "any_type"))
		goto cleanup;
	/* a subscription to a type with no size, or to one type twice, is refused */
	if (!ASSERT_EQ(gp_events__dispatch(ev, &hu, &a, sizeof(a)), -22, "subscribe_unknown_type"))
		goto cleanup;
	if (!ASSERT_EQ(gp_events__dispatch(ev, &ht, &x, sizeof(x)), -22, "subscribe_twice"))
		goto cleanup;
	if (!ASSERT_EQ(n_exit, 1, "refused_not_handled"))
		goto cleanup;
cleanup:
	gp_events__free(ev);
}

static void test_u64map_many(void)
{
	struct u64map *m = u64map__new();
	static int vals[20000];
	size_t it = 0, seen = 0;
	uint64_t k;
	void *v;

	for (int i = 0; i < 20000; i++)
		if (!ASSERT_EQ(u64map__put(m, (uint64_t)i << 8, &vals[i]), 0, "map_put"))
			goto cleanup;
	if (!ASSERT_EQ(u64map__size(m), 20000, "map_size"))
		goto cleanup;
	/* delete every other key: the rest must stay reachable (backward-shift delete) */
	for (int i = 0; i < 20000; i += 2)
		if (!ASSERT_TRUE(u64map__del(m, (uint64_t)i << 8) == &vals[i], "map_del"))
			goto cleanup;
	for (int i = 0; i < 20000; i++)
		if (!ASSERT_TRUE(u64map__get(m, (uint64_t)i << 8) == (i % 2 ? &vals[i] : NULL), "map_get_after_del"))
			goto cleanup;
	while (u64map__next(m, &it, &k, &v))
		seen++;
	if (!ASSERT_EQ(seen, 10000, "map_each_count"))
		goto cleanup;
	if (!ASSERT_TRUE(u64map__del(m, 12345) == NULL, "map_del_missing"))
		goto cleanup;
	if (!ASSERT_EQ(u64map__put(m, 1, NULL), -22, "map_put_null"))
		goto cleanup;
cleanup:
	u64map__free(m);
	u64map__free(NULL);
}

static void test_api_table(void)
{
	if (!ASSERT_STR_EQ(gp_api_name(GP_API_cuMemAllocAsync_ptsz), "cuMemAllocAsync_ptsz", "mem_api_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(gp_api_name(9999), "unknown", "unknown_api_name"))
		goto cleanup;
	/* every id is in one of the mem, launch and copy tables, in enum order, or in the graph
	 * table (which shares the event records and cuStreamWaitEvent, 6 GP_GRAPH_COPY lines,
	 * with the copy table); the launch table's last
	 * entries, a context's making (a new process's readiness for the budget), are the copy
	 * table's too */
	int shared = 0;

	for (int i = 0; i < gp_launch_apis_cnt; i++)
		shared += gp_launch_apis[i].prog == GP_LP_CTX;
	if (!ASSERT_EQ(shared, 4, "context calls in the launch table") ||
	    !ASSERT_EQ(gp_mem_apis_cnt + gp_launch_apis_cnt + gp_copy_apis_cnt + gp_graph_apis_cnt - 6 - shared,
		       GP_API__COUNT - 1, "every id in a table"))
		goto cleanup;
	for (int i = 0; i < gp_graph_apis_cnt; i++)
		if (!ASSERT_STR_EQ(gp_api_name(gp_graph_apis[i].id), gp_graph_apis[i].name, "graph entry point named"))
			goto cleanup;
	/* every id named by its own table's name, so no id is in two tables but the shared ones */
	for (int i = 0; i < gp_copy_apis_cnt; i++)
		if (!ASSERT_STR_EQ(gp_api_name(gp_copy_apis[i].id), gp_copy_apis[i].name, "copy entry point named"))
			goto cleanup;
	for (int id = 1; id < GP_API__COUNT; id++)
		if (!ASSERT_TRUE(strcmp(gp_api_name((unsigned int)id), "unknown"), "every id in a table"))
			goto cleanup;
	for (int i = 0; i < gp_mem_apis_cnt; i++)
		if (!ASSERT_EQ(gp_mem_apis[i].id, i + 1, "mem_table_order"))
			goto cleanup;
	for (int i = 0; i < gp_launch_apis_cnt - shared; i++)
		if (!ASSERT_EQ(gp_launch_apis[i].id, gp_mem_apis_cnt + i + 1, "launch_table_order"))
			goto cleanup;
	if (!ASSERT_STR_EQ(gp_api_name(GP_API_cuLaunchKernelEx_ptsz), "cuLaunchKernelEx_ptsz", "launch_api_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(gp_kind_name(GP_KIND_HOST), "host_pinned", "kind_name"))
		goto cleanup;
cleanup:;
}

int main(void)
{
	RUN_TEST(test_alloc_free_accounting);
	RUN_TEST(test_groups_by_stack);
	RUN_TEST(test_no_stack_groups);
	RUN_TEST(test_report_folded);
	RUN_TEST(test_report_text);
	RUN_TEST(test_report_json);
	RUN_TEST(test_free_families_do_not_cross);
	RUN_TEST(test_mappings);
	RUN_TEST(test_exit_detaches_pid);
	RUN_TEST(test_table_limit);
	RUN_TEST(test_reused_address_replaces);
	RUN_TEST(test_dispatch_by_type_and_size);
	RUN_TEST(test_u64map_many);
	RUN_TEST(test_api_table);
	memleak__free(NULL);
	return unit_done();
}
