/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "core/allocsrc.h"
#include "lib/apis.h"
#include "core/attach.h"
#include "cuda_mem.skel.h"
#include "core/events.h"
#include "core/mode.h"
#include "core/objshare.h"
#include "lib/u64map.h"
#include "lib/util.h"

struct hits {
	struct gp_snap_pid p;
	uint64_t exit_ns; /* when its exit was handled: a reap's time cutoff keeps it till a report has listed it */
};

struct allocsrc {
	struct cuda_mem_bpf *skel;
	struct attach_pair probes;
	struct u64map *hits; /* pid -> struct hits */
	struct gp_snap_pid *arr;
	struct objshare share;
};

int allocsrc__open(struct allocsrc **out, const struct objshare *share, char *err, size_t len)
{
	struct allocsrc *as = calloc(1, sizeof(*as));
	int r;

	*out = NULL;
	if (!as)
		return -ENOMEM;
	as->share = *share;
	as->hits = u64map__new();
	as->skel = cuda_mem_bpf__open();
	if (!as->hits || !as->skel) {
		r = -ENOMEM;
		snprintf(err, len, "cannot open the memory BPF object");
		goto fail;
	}
	attach_pair__prepare(&as->probes, as->skel->progs.mem_enter, as->skel->progs.mem_leave, "memory");
	allocsrc__want_stacks(as, GP_STACKS_NONE, 0, false);
	r = objshare__adopt(&as->share, as->skel->maps.traced, as->skel->maps.gp_ended,
			    as->skel->maps.gp_exits, (bool *)&as->skel->rodata->gp_filter);
	if (r) {
		snprintf(err, len, "cannot share the process table: %s", strerror(-r));
		goto fail;
	}
	/* allocations are never sampled, but priced under a budget */
	r = objshare__adopt_hits(&as->share, as->skel->maps.gp_hits, (bool *)&as->skel->rodata->gp_count_hits);
	if (r) {
		snprintf(err, len, "cannot share the budget's hit counters: %s", strerror(-r));
		goto fail;
	}
	bpf_map__set_max_entries(as->skel->maps.pending, as->share.max_pending);
	bpf_map__set_max_entries(as->skel->maps.procs, as->share.max_procs);
	/* per process and per user: one process's 11,000 blocked threads must not hide every other user's calls */
	objshare__set_shares(&as->share, as->skel->maps.gp_shares, (__u32 *)&as->skel->rodata->gp_share_free,
			     (__u32 *)&as->skel->rodata->gp_share_proc, (__u32 *)&as->skel->rodata->gp_share_user);
	/* the run's ordered buffer: allocations and the copies that use them, in one order */
	r = bpf_map__reuse_fd(as->skel->maps.events, as->share.ring_fd);
	if (r) {
		snprintf(err, len, "cannot share the ring buffer: %s", strerror(-r));
		goto fail;
	}
	*out = as;
	return 0;
fail:
	allocsrc__free(as);
	return r;
}

void allocsrc__want_stacks(struct allocsrc *as, int mode, uint32_t bytes, bool python)
{
	as->skel->rodata->stack_mode = (__u32)mode;
	as->skel->rodata->gp_stack_bytes = bytes > GP_STACK_COPY_MAX ? GP_STACK_COPY_MAX : bytes;
	as->skel->rodata->py_frames = python;
	/* only CPython processes get an entry: the map is small unless it is used */
	bpf_map__set_max_entries(as->skel->maps.gp_py_procs, mode == GP_STACKS_COPY && python ? 4096 : 1);
	/* (process, code object) pairs copied already (bpf/pystack.bpf.h) */
	bpf_map__set_max_entries(as->skel->maps.gp_py_seen, mode == GP_STACKS_COPY && python ? 16384 : 1);
}

int allocsrc__pins_fd(const struct allocsrc *as)
{
	return as && as->skel->rodata->stack_mode != GP_STACKS_NONE ? bpf_map__fd(as->skel->maps.pins) : -1;
}

int allocsrc__py_map_fd(const struct allocsrc *as)
{
	return as && as->skel->rodata->stack_mode == GP_STACKS_COPY && as->skel->rodata->py_frames ?
		       bpf_map__fd(as->skel->maps.gp_py_procs) : -1;
}

int allocsrc__load(struct allocsrc *as, char *err, size_t len)
{
	int r = cuda_mem_bpf__load(as->skel);

	if (r)
		attach__load_error(r, err, len);
	return r;
}

int allocsrc__attach(struct allocsrc *as, struct attach_set *links, const char *lib, int pid, char *err,
		     size_t len)
{
	const char *names[GP_API__COUNT] = { 0 };
	long long offsets[GP_API__COUNT];
	__u64 cookies[GP_API__COUNT];
	int r, n = gp_mem_apis_cnt;

	for (int i = 0; i < n; i++) {
		names[i] = gp_mem_apis[i].name;
		/* tells mem_enter which entry point it is and how to read its arguments */
		cookies[i] = GP_MEM_COOKIE(gp_mem_apis[i].id, gp_mem_apis[i].layout);
	}
	r = attach__resolve(lib, names, n, offsets, err, len);
	if (r < 0)
		return r;
	for (int i = 0; i < n; i++) {
		if (offsets[i] < 0 && gp_mem_apis[i].required) {
			snprintf(err, len, "%s: does not export %s", lib, names[i]);
			return -ENOENT;
		}
	}
	attach__log_missing(lib, names, offsets, n);
	return attach_pair__attach(&as->probes, links, lib, offsets, NULL, cookies, n, pid, err, len);
}

static struct hits *hits_of(struct allocsrc *as, uint32_t pid, const char *comm)
{
	struct hits *h = u64map__get(as->hits, pid);

	if (h && h->p.exited) { /* a new process with the PID of one gone */
		u64map__del(as->hits, pid);
		free(h);
		h = NULL;
	}
	if (!h) {
		h = calloc(1, sizeof(*h));
		if (!h || u64map__put(as->hits, pid, h)) {
			free(h);
			return NULL;
		}
		h->p.pid = pid;
	}
	if (comm && comm[0] && !h->p.comm[0])
		memcpy(h->p.comm, comm, sizeof(h->p.comm));
	return h;
}

/* entry and return of each call a record stands for */
static void on_alloc(void *ctx, const struct gp_alloc_event *e)
{
	struct hits *h = hits_of(ctx, e->pid, e->comm);

	if (h)
		h->p.probe_hits += 2;
}

static void on_free(void *ctx, const struct gp_free_event *e)
{
	struct hits *h = hits_of(ctx, e->pid, e->comm);

	if (h)
		h->p.probe_hits += 2;
}

static void proc_exit(void *ctx, const struct gp_exit_event *e)
{
	struct allocsrc *as = ctx;
	struct hits *h = u64map__get(as->hits, e->pid);

	if (h && !h->p.exited) {
		h->p.exited = true;
		/* handled now, whenever it happened (a reader behind reads it late): proctab.h */
		h->exit_ns = gp_mono_ns();
	}
}

int allocsrc__start(struct allocsrc *as, struct attach_set *links, char *err, size_t len)
{
	static const struct gp_on on[] = {
		GP_ON(GP_EV_ALLOC, on_alloc), GP_ON_FREES(on_free), GP_ON(GP_EV_EXIT, proc_exit)
	};
	struct gp_handlers h = { .ctx = as, GP_ONS(on) };
	int r = attach_set__auto(links, as->skel->progs.mem_proc_exit, err, len);

	if (!r)
		r = objshare__subscribe(&as->share, &h);
	if (r && !*err)
		snprintf(err, len, "cannot read the ring buffer: %s", strerror(-r));
	return r;
}

void allocsrc__drops(const struct allocsrc *as, uint64_t drops[GP_DROP__COUNT])
{
	for (int i = 0; i < GP_DROP__COUNT; i++)
		drops[i] = __atomic_load_n(&as->skel->bss->drops[i], __ATOMIC_RELAXED);
}

void allocsrc__ok_calls(const struct allocsrc *as, uint64_t calls[GP_API__COUNT])
{
	for (int i = 0; i < GP_API__COUNT; i++)
		calls[i] = __atomic_load_n(&as->skel->bss->ok_calls[i], __ATOMIC_RELAXED);
}

size_t allocsrc__pids(struct allocsrc *as, const struct gp_snap_pid **out)
{
	size_t n = 0, cap = u64map__size(as->hits);
	struct gp_snap_pid *arr = realloc(as->arr, (cap ? cap : 1) * sizeof(*arr));
	uint64_t k;
	void *v;

	*out = NULL;
	if (!arr)
		return 0;
	as->arr = arr;
	for (size_t it = 0; u64map__next(as->hits, &it, &k, &v);)
		arr[n++] = ((struct hits *)v)->p;
	*out = arr;
	return n;
}

void allocsrc__reap(struct allocsrc *as, uint64_t cutoff_ns, uint32_t keep_pid)
{
	uint64_t doomed[256], k;
	size_t n;
	void *v;

	/* deleting while iterating is not allowed: in batches */
	do {
		n = 0;
		for (size_t it = 0; n < 256 && u64map__next(as->hits, &it, &k, &v);) {
			struct hits *h = v;

			if (h->p.exited && h->exit_ns < cutoff_ns && h->p.pid != keep_pid)
				doomed[n++] = k;
		}
		for (size_t i = 0; i < n; i++)
			free(u64map__del(as->hits, doomed[i]));
	} while (n == 256);
}

void allocsrc__free(struct allocsrc *as)
{
	uint64_t k;
	void *v;

	if (!as)
		return;
	cuda_mem_bpf__destroy(as->skel);
	for (size_t it = 0; as->hits && u64map__next(as->hits, &it, &k, &v);)
		free(v);
	u64map__free(as->hits);
	free(as->arr);
	free(as);
}
