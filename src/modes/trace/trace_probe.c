/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "api_trace.skel.h"
#include "apitrace.h"
#include "attach.h"
#include "elfsym.h"
#include "events.h"
#include "options.h"
#include "trace.h"
#include "trace_probe.h"
#include "target.h"

#define MAX_FUNCS 4096 /* bpf/api_trace.bpf.c */

struct trace_probe {
	const struct gp_opts *o;
	struct api_trace_bpf *skel;
	struct apitrace *at;
	struct trace_writer *w;
	char **names;
	int nr_names;
	bool multi;
	unsigned long long ioctl_drops;
};

struct collect {
	const struct gp_opts *o;
	char **names;
	int n, cap;
};

static bool wanted(const struct gp_opts *o, const char *name)
{
	if (strncmp(name, "cu", 2))
		return false;
	if (!o->nr_trace_filter)
		return true;
	for (int i = 0; i < o->nr_trace_filter; i++)
		if (!fnmatch(o->trace_filter[i], name, 0))
			return true;
	return false;
}

static int collect_cb(const char *name, unsigned long long value, unsigned long long size, void *ctx)
{
	struct collect *c = ctx;

	(void)value;
	(void)size;
	if (!wanted(c->o, name))
		return 0;
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->names[i], name))
			return 0;
	if (c->n == c->cap) {
		int cap = c->cap ? c->cap * 2 : 1024;
		char **nn = realloc(c->names, (size_t)cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		c->names = nn;
		c->cap = cap;
	}
	c->names[c->n] = strdup(name);
	if (!c->names[c->n])
		return -ENOMEM;
	c->n++;
	return c->n >= MAX_FUNCS ? -E2BIG : 0;
}

int trace_probe__open(struct trace_probe **out, const struct gp_opts *o, const struct lib_set *libs,
		      char *err, size_t len)
{
	struct trace_probe *tp = calloc(1, sizeof(*tp));
	struct collect c = { .o = o };
	int r;

	*out = NULL;
	if (!tp)
		return -ENOMEM;
	tp->o = o;
	/* automatic discovery: every exported cu* function of the libraries in use */
	for (int i = 0; i < libs->n; i++) {
		r = elfsym__foreach_func(libs->libs[i].path, collect_cb, &c);
		if (r < 0) {
			snprintf(err, len, "%s: cannot list its functions: %s", libs->libs[i].path,
				 strerror(-r));
			goto fail;
		}
	}
	tp->names = c.names;
	tp->nr_names = c.n;
	c.names = NULL;
	if (!tp->nr_names) {
		r = -ENOENT;
		snprintf(err, len, "--trace: no exported cu* function matches the --trace-filter patterns");
		goto fail;
	}
	tp->at = apitrace__new((const char *const *)tp->names, tp->nr_names);
	tp->skel = api_trace_bpf__open();
	if (!tp->at || !tp->skel) {
		r = -ENOMEM;
		snprintf(err, len, "cannot open the trace BPF object");
		goto fail;
	}
	tp->multi = attach__has_uprobe_multi();
	attach__prepare_prog(tp->skel->progs.trace_enter, tp->multi);
	attach__prepare_prog(tp->skel->progs.trace_leave, tp->multi);
	bpf_map__set_max_entries(tp->skel->maps.calls_rb, o->ringbuf_set ? o->ringbuf_size : 16UL << 20);
	bpf_map__set_max_entries(tp->skel->maps.stacks, o->max_pending);
	r = api_trace_bpf__load(tp->skel);
	if (r) {
		attach__load_error(r, err, len);
		goto fail;
	}
	for (int i = 0; i < tp->nr_names; i++) {
		__u32 k = (__u32)i, fl = apitrace__fn_flags(tp->at, k);

		if (fl)
			bpf_map_update_elem(bpf_map__fd(tp->skel->maps.fn_flags), &k, &fl, BPF_ANY);
	}
	tp->w = trace_writer__open(o->trace, o->trace_chrome ? TRACE_CHROME : TRACE_JSONL);
	if (!tp->w) {
		r = -errno;
		snprintf(err, len, "--trace %s: %s", o->trace, strerror(errno));
		goto fail;
	}
	*out = tp;
	return 0;
fail:
	for (int i = 0; i < c.n && c.names; i++)
		free(c.names[i]);
	free(c.names);
	trace_probe__free(tp);
	return r;
}

int trace_probe__attach(struct trace_probe *tp, struct attach_set *links, const struct lib_set *libs,
			int pid, char *err, size_t len)
{
	long long *offsets = calloc((size_t)tp->nr_names, sizeof(*offsets));
	__u64 *cookies = calloc((size_t)tp->nr_names, sizeof(*cookies));
	int r = 0;

	if (!offsets || !cookies) {
		r = -ENOMEM;
		goto cleanup;
	}
	for (int i = 0; i < tp->nr_names; i++)
		cookies[i] = (__u64)i;
	if (!tp->multi)
		fprintf(stderr, "gpuprobe: warning: no uprobe_multi links (Linux < 6.6): %d functions attach "
				"one by one, and detaching takes ~0.1 s each\n", tp->nr_names);
	for (int li = 0; li < libs->n; li++) {
		const char *path = libs->libs[li].path;

		r = attach__resolve(path, (const char *const *)tp->names, tp->nr_names, offsets, err, len);
		if (r < 0)
			goto cleanup;
		/* aliases (two names, one address) would be probed twice: keep the first */
		for (int i = 0; i < tp->nr_names; i++)
			for (int j = 0; j < i && offsets[i] >= 0; j++)
				if (offsets[j] == offsets[i])
					offsets[i] = -1;
		r = attach_set__uprobes(links, tp->skel->progs.trace_enter, path, offsets, cookies,
					tp->nr_names, pid, false, tp->multi);
		if (!r)
			r = attach_set__uprobes(links, tp->skel->progs.trace_leave, path, offsets, cookies,
						tp->nr_names, pid, true, tp->multi);
		if (r) {
			snprintf(err, len, "cannot attach the trace probes to %s: %s", path, strerror(-r));
			goto cleanup;
		}
	}
	r = attach_set__auto(links, tp->skel->progs.trace_proc_exit, err, len);
cleanup:
	free(offsets);
	free(cookies);
	return r;
}

static void name_process(struct trace_probe *tp, uint32_t pid)
{
	const char *comm = apitrace__comm(tp->at, pid);
	char path[64], buf[32] = "";
	FILE *f;

	if (!*comm) {
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		f = fopen(path, "r");
		if (f) {
			if (fgets(buf, sizeof(buf), f))
				buf[strcspn(buf, "\n")] = '\0';
			fclose(f);
		}
		apitrace__set_comm(tp->at, pid, buf);
		comm = buf;
	}
	trace_writer__process_name(tp->w, pid, comm);
}

static void h_call(void *ctx, const struct gp_call_event *e)
{
	struct trace_probe *tp = ctx;
	json_object *args;

	name_process(tp, e->pid);
	args = apitrace__on_call(tp->at, e);
	trace_writer__event(tp->w, "call", e->pid, e->tid, apitrace__fn_name(tp->at, e->fn), e->ts_ns,
			    e->dur_ns, e->ret, args);
}

void trace_probe__ioctl(struct trace_probe *tp, const struct gp_ioctl_event *e, const char *name)
{
	json_object *args;

	name_process(tp, e->pid);
	args = apitrace__on_ioctl(tp->at, e, name);
	trace_writer__event(tp->w, "ioctl", e->pid, e->tid, name ? name : "ioctl", e->ts_ns, e->dur_ns,
			    e->ret, args);
}

void trace_probe__add_ioctl_drops(struct trace_probe *tp, unsigned long long dropped)
{
	tp->ioctl_drops = dropped;
}

int trace_probe__add_events(struct trace_probe *tp, struct gp_events *ev)
{
	struct gp_handlers h = { .ctx = tp, .on_call = h_call };

	return gp_events__add(ev, bpf_map__fd(tp->skel->maps.calls_rb), &h);
}

int trace_probe__finish(struct trace_probe *tp, char *err, size_t len)
{
	struct at_drops d = {
		.ringbuf = tp->skel->bss->tdrops[GP_CDROP_RINGBUF],
		.pending = tp->skel->bss->tdrops[GP_CDROP_PENDING],
		.noreturn = tp->skel->bss->tdrops[GP_CDROP_NORETURN],
		.too_deep = tp->skel->bss->tdeep,
		.ioctl_ringbuf = tp->ioctl_drops,
	};
	const char *fmt = tp->o->trace_chrome ? "chrome" : "jsonl";
	uint64_t written = trace_writer__written(tp->w);
	int r;

	r = trace_writer__close(tp->w, apitrace__summary_json(tp->at, &d, tp->o->trace, fmt, written));
	tp->w = NULL;
	if (tp->o->json)
		json_object_put(({
			json_object *s = apitrace__summary_json(tp->at, &d, tp->o->trace, fmt, written);
			printf("%s\n", json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN |
								JSON_C_TO_STRING_NOSLASHESCAPE));
			s;
		}));
	else
		apitrace__summary_text(tp->at, stdout, &d, tp->o->trace, fmt, written);
	fflush(stdout);
	if (r)
		snprintf(err, len, "--trace %s: %s", tp->o->trace, strerror(-r));
	return r;
}

void trace_probe__free(struct trace_probe *tp)
{
	if (!tp)
		return;
	trace_writer__close(tp->w, NULL);
	api_trace_bpf__destroy(tp->skel);
	apitrace__free(tp->at);
	for (int i = 0; i < tp->nr_names; i++)
		free(tp->names[i]);
	free(tp->names);
	free(tp);
}
