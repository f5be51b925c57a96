/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "apis.h"
#include "attach.h"
#include "cuda_launch.skel.h"
#include "cudatrace.h"
#include "elfsym.h"
#include "events.h"
#include "cudatrace_probe.h"
#include "options.h"
#include "report.h"
#include "symbolize.h"
#include "target.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct launch_probe {
	const struct gp_opts *o;
	struct cuda_launch_bpf *skel;
	struct cudatrace *ct;
	struct symbolizer *sym;
	struct gp_events *ev;
	bool multi;
};

int launch_probe__open(struct launch_probe **out, const struct gp_opts *o, struct symbolizer *sym,
		       char *err, size_t len)
{
	struct launch_probe *lp = calloc(1, sizeof(*lp));
	int r;

	*out = NULL;
	if (!lp)
		return -ENOMEM;
	lp->o = o;
	lp->sym = sym;
	lp->ct = cudatrace__new();
	lp->skel = cuda_launch_bpf__open();
	if (!lp->ct || !lp->skel) {
		r = -ENOMEM;
		snprintf(err, len, "cannot open the launch BPF object");
		goto fail;
	}
	lp->multi = attach__has_uprobe_multi();
	attach__prepare_prog(lp->skel->progs.launch_enter, lp->multi);
	attach__prepare_prog(lp->skel->progs.launch_leave, lp->multi);
	lp->skel->rodata->measure_latency = o->latency;
	bpf_map__set_max_entries(lp->skel->maps.launches, o->max_launch_keys);
	bpf_map__set_max_entries(lp->skel->maps.calls, o->max_pending);
	bpf_map__set_max_entries(lp->skel->maps.procs, o->max_procs);
	r = cuda_launch_bpf__load(lp->skel);
	if (r) {
		attach__load_error(r, err, len);
		goto fail;
	}
	*out = lp;
	return 0;
fail:
	launch_probe__free(lp);
	return r;
}

/* Return probes: always where a handle or an unload must be read back; on launches and
 * syncs only to time them (--no-latency leaves them out). */
static bool needs_return(const struct launch_probe *lp, enum gp_launch_prog p)
{
	return p == GP_LP_NAME || p == GP_LP_ALIAS || p == GP_LP_UNLOAD || lp->o->latency;
}

int launch_probe__attach_libs(struct launch_probe *lp, struct attach_set *links,
			      const struct lib_set *libs, int pid, char *err, size_t len)
{
	const char *names[GP_API__COUNT];
	long long offsets[GP_API__COUNT], ret_offsets[GP_API__COUNT];
	__u64 cookies[GP_API__COUNT];
	int r, n = gp_launch_apis_cnt;

	for (int i = 0; i < n; i++) {
		names[i] = gp_launch_apis[i].name;
		cookies[i] = gp_launch_apis[i].id;
	}
	for (int li = 0; li < libs->n; li++) {
		const char *path = libs->libs[li].path;

		r = attach__resolve(path, names, n, offsets, err, len);
		if (r < 0)
			return r;
		for (int i = 0; i < n; i++) {
			ret_offsets[i] = needs_return(lp, gp_launch_apis[i].prog) ? offsets[i] : -1;
			if (offsets[i] >= 0)
				continue;
			if (gp_launch_apis[i].id == GP_API_cuLaunchKernel) {
				snprintf(err, len, "%s: does not export cuLaunchKernel", path);
				return -ENOENT;
			}
			if (lp->o->verbose)
				fprintf(stderr, "gpuprobe: %s: no %s, skipped\n", path, names[i]);
		}
		r = attach_set__uprobes(links, lp->skel->progs.launch_enter, path, offsets, cookies, n,
					pid, false, lp->multi);
		if (!r)
			r = attach_set__uprobes(links, lp->skel->progs.launch_leave, path, ret_offsets,
						cookies, n, pid, true, lp->multi);
		if (r) {
			snprintf(err, len, "cannot attach the launch probes to %s: %s", path, strerror(-r));
			return r;
		}
	}
	return 0;
}

int launch_probe__attach(struct launch_probe *lp, struct attach_set *links,
			 const struct lib_set *libs, int pid, char *err, size_t len)
{
	int r;

	r = launch_probe__attach_libs(lp, links, libs, pid, err, len);
	if (r)
		return r;
	return attach_set__auto(links, lp->skel->progs.launch_proc_exit, err, len);
}

static void h_name(void *ctx, const struct gp_name_event *e)
{
	cudatrace__on_name(((struct launch_probe *)ctx)->ct, e);
}

/* A launch of a handle never named: name it after the host stub on its stack. */
static void h_stub(void *ctx, const struct gp_stub_event *e)
{
	struct launch_probe *lp = ctx;
	char frames[GP_MAX_STACK][512], name[1024];
	const char *ptrs[GP_MAX_STACK];
	uint32_t n = e->nr_stack > GP_MAX_STACK ? GP_MAX_STACK : e->nr_stack;

	for (uint32_t i = 0; i < n; i++) {
		symbolizer__format(lp->sym, (int)e->pid, e->stack[i], frames[i], sizeof(frames[i]));
		ptrs[i] = frames[i];
	}
	cudatrace__stub_name(ptrs, n, name, sizeof(name));
	if (name[0])
		cudatrace__on_host_name(lp->ct, e->pid, e->handle, name);
}

static void h_exit(void *ctx, const struct gp_exit_event *e)
{
	struct launch_probe *lp = ctx;

	cudatrace__on_exit(lp->ct, e);
	symbolizer__forget_pid(lp->sym, (int)e->pid);
}

int launch_probe__add_events(struct launch_probe *lp, struct gp_events *ev)
{
	struct gp_handlers h = {
		.ctx = lp, .on_name = h_name, .on_stub = h_stub, .on_exit = h_exit,
	};

	lp->ev = ev;
	cudatrace__set_start(lp->ct, mono_ns());
	return gp_events__add(ev, bpf_map__fd(lp->skel->maps.names), &h);
}

static void snapshot(struct launch_probe *lp)
{
	int lfd = bpf_map__fd(lp->skel->maps.launches), hfd = bpf_map__fd(lp->skel->maps.hists);
	struct gp_launch_key k, next;
	struct gp_hist_key hk, hnext;
	struct gp_hist h;
	__u64 count;
	void *prev = NULL;

	cudatrace__snapshot_begin(lp->ct);
	while (!bpf_map_get_next_key(lfd, prev, &next)) {
		if (!bpf_map_lookup_elem(lfd, &next, &count))
			cudatrace__add_launch(lp->ct, &next, count);
		k = next;
		prev = &k;
	}
	prev = NULL;
	while (!bpf_map_get_next_key(hfd, prev, &hnext)) {
		if (!bpf_map_lookup_elem(hfd, &hnext, &h))
			cudatrace__set_hist(lp->ct, hnext.pid, hnext.kind, &h);
		hk = hnext;
		prev = &hk;
	}
	cudatrace__snapshot_end(lp->ct, mono_ns());
}

/* Deletes every key of map whose leading __u32 is pid (all keys here start with it). */
static void delete_pid_keys(int fd, size_t key_size, uint32_t pid)
{
	char key[64], next[64];
	void *prev = NULL;
	char (*doomed)[64] = NULL;
	size_t n = 0, cap = 0;

	while (!bpf_map_get_next_key(fd, prev, next)) {
		if (*(uint32_t *)next == pid) {
			if (n == cap) {
				size_t c = cap ? cap * 2 : 64;
				char (*d)[64] = realloc(doomed, c * sizeof(*d));

				if (!d)
					break;
				doomed = d;
				cap = c;
			}
			memcpy(doomed[n++], next, key_size);
		}
		memcpy(key, next, key_size);
		prev = key;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, doomed[i]);
	free(doomed);
}

static void forget_pid(void *ctx, uint32_t pid)
{
	struct launch_probe *lp = ctx;
	struct cuda_launch_bpf *s = lp->skel;

	delete_pid_keys(bpf_map__fd(s->maps.launches), sizeof(struct gp_launch_key), pid);
	delete_pid_keys(bpf_map__fd(s->maps.hists), sizeof(struct gp_hist_key), pid);
	delete_pid_keys(bpf_map__fd(s->maps.known), bpf_map__key_size(s->maps.known), pid);
	delete_pid_keys(bpf_map__fd(s->maps.sampled), bpf_map__key_size(s->maps.sampled), pid);
	delete_pid_keys(bpf_map__fd(s->maps.unloaded), bpf_map__key_size(s->maps.unloaded), pid);
}

void launch_probe__report(struct launch_probe *lp, const char *kind)
{
	struct ct_report_ctx c = {
		.kind = kind, .latency = lp->o->latency, .top_shapes = lp->o->top_shapes,
		.malformed = lp->ev ? gp_events__malformed(lp->ev) : 0,
	};

	snapshot(lp);
	for (int i = 0; i < GP_LDROP__COUNT; i++)
		c.ldrops[i] = __atomic_load_n(&lp->skel->bss->ldrops[i], __ATOMIC_RELAXED);
	if (lp->o->json)
		report__cudatrace_json(stdout, lp->ct, &c);
	else
		report__cudatrace_text(stdout, lp->ct, &c);
	cudatrace__reap_exited(lp->ct, strcmp(kind, "final") ? (uint32_t)(lp->o->cmd ? lp->o->child_pid :
				lp->o->pid > 0 ? lp->o->pid : 0) : 0, forget_pid, lp);
}

/* gpuprobe daemon (src/daemon.c): fresh counts behind /metrics, without printing. */
void launch_probe__snapshot(struct launch_probe *lp)
{
	snapshot(lp);
}

struct cudatrace *launch_probe__cudatrace(struct launch_probe *lp)
{
	return lp->ct;
}

void launch_probe__drops(struct launch_probe *lp, uint64_t drops[GP_LDROP__COUNT])
{
	for (int i = 0; i < GP_LDROP__COUNT; i++)
		drops[i] = __atomic_load_n(&lp->skel->bss->ldrops[i], __ATOMIC_RELAXED);
}

void launch_probe__reap_before(struct launch_probe *lp, uint64_t cutoff_ns)
{
	cudatrace__reap_exited_before(lp->ct, cutoff_ns, forget_pid, lp);
}

void launch_probe__free(struct launch_probe *lp)
{
	if (!lp)
		return;
	cuda_launch_bpf__destroy(lp->skel);
	cudatrace__free(lp->ct);
	free(lp);
}
