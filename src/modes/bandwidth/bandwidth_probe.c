/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "apis.h"
#include "attach.h"
#include "bandwidth.h"
#include "bandwidth_probe.h"
#include "cuda_copy.skel.h"
#include "events.h"
#include "options.h"
#include "report.h"
#include "target.h"

struct copy_probe {
	const struct gp_opts *o;
	struct cuda_copy_bpf *skel;
	struct bandwidth *bw;
	bool multi;
	FILE *csv;
	struct timespec last_csv;
};

int copy_probe__open(struct copy_probe **out, const struct gp_opts *o, int events_fd, char *err,
		     size_t len)
{
	struct copy_probe *cp = calloc(1, sizeof(*cp));
	int r;

	*out = NULL;
	if (!cp)
		return -ENOMEM;
	cp->o = o;
	cp->bw = bandwidth__new();
	cp->skel = cuda_copy_bpf__open();
	if (!cp->bw || !cp->skel) {
		r = -ENOMEM;
		snprintf(err, len, "cannot open the copy BPF object");
		goto fail;
	}
	if (o->csv) {
		cp->csv = fopen(o->csv, "a+");
		if (!cp->csv) {
			r = -errno;
			snprintf(err, len, "--csv %s: %s", o->csv, strerror(-r));
			goto fail;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &cp->last_csv);
	cp->multi = attach__has_uprobe_multi();
	attach__prepare_prog(cp->skel->progs.copy_enter, cp->multi);
	attach__prepare_prog(cp->skel->progs.copy_leave, cp->multi);
	cp->skel->rodata->min_bytes = o->min_bytes;
	bpf_map__set_max_entries(cp->skel->maps.events, o->ringbuf_size);
	bpf_map__set_max_entries(cp->skel->maps.calls, o->max_pending);
	/* one ring buffer with the memory probes: one order for allocations and copies */
	r = bpf_map__reuse_fd(cp->skel->maps.events, events_fd);
	if (r) {
		snprintf(err, len, "cannot share the ring buffer: %s", strerror(-r));
		goto fail;
	}
	r = cuda_copy_bpf__load(cp->skel);
	if (r) {
		attach__load_error(r, err, len);
		goto fail;
	}
	*out = cp;
	return 0;
fail:
	copy_probe__free(cp);
	return r;
}

int copy_probe__attach_libs(struct copy_probe *cp, struct attach_set *links,
			    const struct lib_set *libs, int pid, char *err, size_t len)
{
	const char *names[GP_API__COUNT];
	long long offsets[GP_API__COUNT];
	__u64 cookies[GP_API__COUNT];
	int r, n = 0;

	for (int i = 0; i < gp_copy_apis_cnt; i++) {
		names[n] = gp_copy_apis[i].name;
		cookies[n++] = gp_copy_apis[i].id;
	}
	/* synchronizations end asynchronous copies */
	for (int i = 0; i < gp_launch_apis_cnt; i++) {
		if (gp_launch_apis[i].prog != GP_LP_SYNC)
			continue;
		names[n] = gp_launch_apis[i].name;
		cookies[n++] = gp_launch_apis[i].id;
	}
	for (int li = 0; li < libs->n; li++) {
		const char *path = libs->libs[li].path;

		r = attach__resolve(path, names, n, offsets, err, len);
		if (r < 0)
			return r;
		if (cp->o->verbose)
			for (int i = 0; i < n; i++)
				if (offsets[i] < 0)
					fprintf(stderr, "gpuprobe: %s: no %s, skipped\n", path, names[i]);
		r = attach_set__uprobes(links, cp->skel->progs.copy_enter, path, offsets, cookies, n,
					pid, false, cp->multi);
		if (!r)
			r = attach_set__uprobes(links, cp->skel->progs.copy_leave, path, offsets, cookies,
						n, pid, true, cp->multi);
		if (r) {
			snprintf(err, len, "cannot attach the copy probes to %s: %s", path, strerror(-r));
			return r;
		}
	}
	return 0;
}

int copy_probe__attach(struct copy_probe *cp, struct attach_set *links, const struct lib_set *libs,
		       int pid, char *err, size_t len)
{
	int r;

	r = copy_probe__attach_libs(cp, links, libs, pid, err, len);
	if (r)
		return r;
	return attach_set__auto(links, cp->skel->progs.copy_proc_exit, err, len);
}

static void h_alloc(void *ctx, const struct gp_alloc_event *e)
{
	bandwidth__on_alloc(((struct copy_probe *)ctx)->bw, e);
}

static void h_free(void *ctx, const struct gp_free_event *e)
{
	bandwidth__on_free(((struct copy_probe *)ctx)->bw, e);
}

static void h_copy(void *ctx, const struct gp_copy_event *e)
{
	bandwidth__on_copy(((struct copy_probe *)ctx)->bw, e);
}

static void h_aux(void *ctx, const struct gp_aux_event *e)
{
	bandwidth__on_aux(((struct copy_probe *)ctx)->bw, e);
}

static void h_exit(void *ctx, const struct gp_exit_event *e)
{
	bandwidth__on_exit(((struct copy_probe *)ctx)->bw, e);
}

void copy_probe__handlers(struct copy_probe *cp, struct gp_handlers *h)
{
	memset(h, 0, sizeof(*h));
	h->ctx = cp;
	h->on_alloc = h_alloc;
	h->on_free = h_free;
	h->on_copy = h_copy;
	h->on_aux = h_aux;
	h->on_exit = h_exit;
}

void copy_probe__report(struct copy_probe *cp, const char *kind)
{
	struct bw_report_ctx c = { .kind = kind };
	struct timespec now;

	for (int i = 0; i < GP_CDROP__COUNT; i++)
		c.cdrops[i] = __atomic_load_n(&cp->skel->bss->cdrops[i], __ATOMIC_RELAXED);
	c.small_copies = cp->skel->bss->small_copies;
	c.small_bytes = cp->skel->bss->small_bytes;
	c.failed_copies = cp->skel->bss->failed_copies;
	c.zero_copies = cp->skel->bss->zero_copies;
	c.min_bytes = cp->o->min_bytes;
	if (cp->o->json)
		report__bandwidth_json(stdout, cp->bw, &c);
	else
		report__bandwidth_text(stdout, cp->bw, &c);
	if (cp->csv) {
		double secs;

		clock_gettime(CLOCK_MONOTONIC, &now);
		secs = (double)(now.tv_sec - cp->last_csv.tv_sec) +
		       (double)(now.tv_nsec - cp->last_csv.tv_nsec) / 1e9;
		cp->last_csv = now;
		bandwidth__csv_rows(cp->bw, cp->csv, (double)time(NULL), secs);
	}
	bandwidth__reap_exited(cp->bw, strcmp(kind, "final") ? (uint32_t)(cp->o->cmd ? cp->o->child_pid :
				cp->o->pid > 0 ? cp->o->pid : 0) : 0);
}

/* gpuprobe daemon (src/daemon.c): the aggregator and counters behind /metrics. */
struct bandwidth *copy_probe__bandwidth(struct copy_probe *cp)
{
	return cp->bw;
}

void copy_probe__drops(struct copy_probe *cp, uint64_t drops[GP_CDROP__COUNT])
{
	for (int i = 0; i < GP_CDROP__COUNT; i++)
		drops[i] = __atomic_load_n(&cp->skel->bss->cdrops[i], __ATOMIC_RELAXED);
}

uint64_t copy_probe__small_copies(struct copy_probe *cp)
{
	return __atomic_load_n(&cp->skel->bss->small_copies, __ATOMIC_RELAXED);
}

void copy_probe__reap_before(struct copy_probe *cp, uint64_t cutoff_ns)
{
	bandwidth__reap_exited_before(cp->bw, cutoff_ns);
}

void copy_probe__free(struct copy_probe *cp)
{
	if (!cp)
		return;
	cuda_copy_bpf__destroy(cp->skel);
	bandwidth__free(cp->bw);
	if (cp->csv)
		fclose(cp->csv);
	free(cp);
}
