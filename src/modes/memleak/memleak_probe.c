/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "apis.h"
#include "attach.h"
#include "cuda_mem.skel.h"
#include "elfsym.h"
#include "events.h"
#include "memleak_probe.h"
#include "memleak.h"
#include "options.h"
#include "report.h"
#include "symbolize.h"
#include "target.h"

struct mem_probe {
	const struct gp_opts *o;
	struct cuda_mem_bpf *skel;
	struct memleak *ml;
	struct symbolizer *sym;
	struct report_ctx rc;
	bool multi; /* uprobe_multi links */
	struct gp_handlers listener;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int sym_cb(void *ctx, int pid, uint64_t addr, char *buf, size_t len)
{
	return symbolizer__format(ctx, pid, addr, buf, len);
}

int mem_probe__open(struct mem_probe **out, const struct gp_opts *o, struct symbolizer *sym,
		    char *err, size_t len)
{
	struct mem_probe *mp = calloc(1, sizeof(*mp));
	int r;

	*out = NULL;
	if (!mp)
		return -ENOMEM;
	mp->o = o;
	mp->sym = sym;
	mp->ml = memleak__new(o->max_allocs, sym_cb, sym);
	mp->skel = cuda_mem_bpf__open();
	if (!mp->ml || !mp->skel) {
		r = -ENOMEM;
		snprintf(err, len, "cannot open the memory BPF object");
		goto fail;
	}
	/* configure between open and load */
	mp->multi = attach__has_uprobe_multi();
	attach__prepare_prog(mp->skel->progs.mem_enter, mp->multi);
	attach__prepare_prog(mp->skel->progs.mem_leave, mp->multi);
	/* stacks serve --memleak only */
	mp->skel->rodata->capture_stacks = o->stacks && o->memleak;
	bpf_map__set_max_entries(mp->skel->maps.events, o->ringbuf_size);
	bpf_map__set_max_entries(mp->skel->maps.pending, o->max_pending);
	bpf_map__set_max_entries(mp->skel->maps.procs, o->max_procs);
	r = cuda_mem_bpf__load(mp->skel);
	if (r) {
		attach__load_error(r, err, len);
		goto fail;
	}
	*out = mp;
	return 0;
fail:
	mem_probe__free(mp);
	return r;
}

int mem_probe__attach_libs(struct mem_probe *mp, struct attach_set *links, const struct lib_set *libs,
			   int pid, char *err, size_t len)
{
	const char *names[GP_API__COUNT];
	long long offsets[GP_API__COUNT];
	__u64 cookies[GP_API__COUNT];
	int r, n = gp_mem_apis_cnt;

	for (int i = 0; i < n; i++) {
		names[i] = gp_mem_apis[i].name;
		cookies[i] = gp_mem_apis[i].id; /* tells mem_enter how to read the arguments */
	}
	for (int li = 0; li < libs->n; li++) {
		const char *path = libs->libs[li].path;

		r = attach__resolve(path, names, n, offsets, err, len);
		if (r < 0)
			return r;
		for (int i = 0; i < n; i++) {
			if (offsets[i] >= 0)
				continue;
			if (gp_mem_apis[i].required) {
				snprintf(err, len, "%s: does not export %s", path, names[i]);
				return -ENOENT;
			}
			if (mp->o->verbose)
				fprintf(stderr, "gpuprobe: %s: no %s, skipped\n", path, names[i]);
		}
		r = attach_set__uprobes(links, mp->skel->progs.mem_enter, path, offsets, cookies, n,
					pid, false, mp->multi);
		if (!r)
			r = attach_set__uprobes(links, mp->skel->progs.mem_leave, path, offsets, cookies,
						n, pid, true, mp->multi);
		if (r) {
			snprintf(err, len, "cannot attach the memory probes to %s: %s", path, strerror(-r));
			return r;
		}
	}
	return 0;
}

int mem_probe__attach(struct mem_probe *mp, struct attach_set *links, const struct lib_set *libs,
		      int pid, char *err, size_t len)
{
	int r;

	r = mem_probe__attach_libs(mp, links, libs, pid, err, len);
	if (r)
		return r;
	return attach_set__auto(links, mp->skel->progs.mem_proc_exit, err, len);
}

static void fill_ctx(struct mem_probe *mp, const char *kind)
{
	mp->rc.kind = kind;
	mp->rc.now_ns = mono_ns();
	for (int i = 0; i < GP_DROP__COUNT; i++)
		mp->rc.drops.bpf[i] = __atomic_load_n(&mp->skel->bss->drops[i], __ATOMIC_RELAXED);
	mp->rc.drops.table_full = memleak__table_full(mp->ml);
	mp->rc.ok_calls = (const uint64_t *)mp->skel->bss->ok_calls;
	mp->rc.top = mp->o->top;
	mp->rc.stacks = mp->o->stacks;
}

#define FORWARD(mp, fn, e) do { if ((mp)->listener.fn) (mp)->listener.fn((mp)->listener.ctx, e); } while (0)

static void h_alloc(void *ctx, const struct gp_alloc_event *e)
{
	struct mem_probe *mp = ctx;

	memleak__on_alloc(mp->ml, e);
	FORWARD(mp, on_alloc, e);
}

static void h_free(void *ctx, const struct gp_free_event *e)
{
	struct mem_probe *mp = ctx;

	memleak__on_free(mp->ml, e);
	FORWARD(mp, on_free, e);
}

static void h_copy(void *ctx, const struct gp_copy_event *e)
{
	FORWARD((struct mem_probe *)ctx, on_copy, e);
}

static void h_aux(void *ctx, const struct gp_aux_event *e)
{
	FORWARD((struct mem_probe *)ctx, on_aux, e);
}

void mem_probe__set_listener(struct mem_probe *mp, const struct gp_handlers *h)
{
	mp->listener = *h;
}

int mem_probe__events_fd(struct mem_probe *mp)
{
	return bpf_map__fd(mp->skel->maps.events);
}

static void h_exit(void *ctx, const struct gp_exit_event *e)
{
	struct mem_probe *mp = ctx;
	struct ml_proc *p = memleak__on_exit(mp->ml, e);

	FORWARD(mp, on_exit, e);
	/* its maps are gone; a new process may reuse the PID */
	symbolizer__forget_pid(mp->sym, (int)e->pid);
	if (!p || !mp->o->memleak || mp->o->quiet)
		return;
	fill_ctx(mp, "exit");
	if (mp->o->json)
		report__memleak_exit_json(stdout, p, &mp->rc);
	else if (!mp->o->cmd || (pid_t)e->pid != mp->o->child_pid) /* the final report follows */
		report__memleak_exit_text(stdout, p, &mp->rc);
}

int mem_probe__add_events(struct mem_probe *mp, struct gp_events *ev)
{
	struct gp_handlers h = {
		.ctx = mp, .on_alloc = h_alloc, .on_free = h_free, .on_exit = h_exit,
		.on_copy = h_copy, .on_aux = h_aux,
	};

	return gp_events__add(ev, bpf_map__fd(mp->skel->maps.events), &h);
}

void mem_probe__report(struct mem_probe *mp, const char *kind)
{
	if (!mp->o->memleak) {
		memleak__reap_exited(mp->ml, 0); /* loaded for --bandwidth-util only */
		return;
	}
	fill_ctx(mp, kind);
	if (mp->o->json)
		report__memleak_json(stdout, mp->ml, &mp->rc);
	else
		report__memleak_text(stdout, mp->ml, &mp->rc);
	/* the target's record stays until the final report; all others go once reported */
	memleak__reap_exited(mp->ml, strcmp(kind, "final") ? (uint32_t)(mp->o->cmd ? mp->o->child_pid :
					   mp->o->pid > 0 ? mp->o->pid : 0) : 0);
}

/* gpuprobe daemon (src/daemon.c): the aggregator and counters behind /metrics. */
struct memleak *mem_probe__memleak(struct mem_probe *mp)
{
	return mp->ml;
}

void mem_probe__drops(struct mem_probe *mp, uint64_t drops[GP_DROP__COUNT])
{
	for (int i = 0; i < GP_DROP__COUNT; i++)
		drops[i] = __atomic_load_n(&mp->skel->bss->drops[i], __ATOMIC_RELAXED);
}

void mem_probe__reap_before(struct mem_probe *mp, uint64_t cutoff_ns)
{
	memleak__reap_exited_before(mp->ml, cutoff_ns);
}

void mem_probe__free(struct mem_probe *mp)
{
	if (!mp)
		return;
	cuda_mem_bpf__destroy(mp->skel);
	memleak__free(mp->ml);
	free(mp);
}
