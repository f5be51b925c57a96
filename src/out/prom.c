/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "apis.h"
#include "bandwidth.h"
#include "cudatrace.h"
#include "ioctl.h"
#include "memleak.h"
#include "prom.h"
#include "u64map.h"

/* One process as /metrics shows it: every mode merged by PID. */
struct pp {
	uint32_t pid;
	const char *comm;
	uint64_t hits; /* allocs + frees + launches + graph launches + syncs + copies counted */
};

struct render {
	FILE *f;
	const struct prom_input *in;
	struct ml_proc **ml;
	size_t nr_ml;
	struct ct_proc **ct;
	size_t nr_ct;
	struct bw_proc **bw;
	size_t nr_bw;
	struct pp *pp;
	size_t nr_pp;
	size_t nr_tracked; /* nr_pp and the --ioctl processes without probe hits */
};

void prom__label_value(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void family(struct render *r, const char *name, const char *type, const char *help)
{
	fprintf(r->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* {pid="..",comm="..",container=".." and the rest is the caller's */
static void proc_labels(struct render *r, uint32_t pid, const char *comm)
{
	const char *c = r->in->container ? r->in->container(r->in->ctx, pid) : NULL;

	fprintf(r->f, "{pid=\"%" PRIu32 "\",comm=\"", pid);
	prom__label_value(r->f, comm);
	fputs("\",container=\"", r->f);
	prom__label_value(r->f, c ? c : "");
	fputc('"', r->f);
}

/* An exited process whose PID a live one already uses would repeat its series: the live
 * one wins (the exited one's series goes when it would have anyway). */
static bool shadowed(struct u64map *live, bool exited, uint32_t pid)
{
	return exited && u64map__get(live, pid);
}

/* Live --bandwidth-util processes with copies. One with none yet (contexts and
 * synchronizes only) shadows nothing: its exit may be seen only by housekeeping, later
 * than the other modes see it. */
static void add_live_bw(struct render *r, struct u64map *live)
{
	struct bw_stat **st;

	for (size_t i = 0; i < r->nr_bw; i++)
		if (!bw_proc__exited(r->bw[i]) && bw_proc__stats(r->bw[i], &st))
			u64map__put(live, bw_proc__pid(r->bw[i]), r->bw[i]);
}

/* A --bandwidth-util process without series: shadowed, or a second exited process with
 * the PID of the one before it (a PID reused within --retention; procs come sorted). */
static bool bw_hidden(struct render *r, struct u64map *live, size_t i)
{
	struct bw_proc *p = r->bw[i];

	if (shadowed(live, bw_proc__exited(p), bw_proc__pid(p)))
		return true;
	return bw_proc__exited(p) && i > 0 && bw_proc__exited(r->bw[i - 1]) &&
	       bw_proc__pid(r->bw[i - 1]) == bw_proc__pid(p);
}

/* Adds the pid's hits to r->pp (a new entry if it has none yet); 0 or -ENOMEM. */
static int add_hits(struct render *r, struct u64map *idx, uint32_t pid, const char *comm, uint64_t hits)
{
	uintptr_t at = (uintptr_t)u64map__get(idx, pid);

	if (!at) {
		r->pp[r->nr_pp].pid = pid;
		r->pp[r->nr_pp].comm = comm;
		if (u64map__put(idx, pid, (void *)(uintptr_t)(r->nr_pp + 1)))
			return -ENOMEM;
		at = ++r->nr_pp;
	}
	r->pp[at - 1].hits += hits;
	return 0;
}

static int collect(struct render *r)
{
	struct u64map *live = u64map__new(), *idx = u64map__new();
	size_t cap = 0;
	int err = 0;

	if (!live || !idx) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (r->in->ml)
		r->nr_ml = memleak__procs(r->in->ml, &r->ml);
	if (r->in->ct)
		r->nr_ct = cudatrace__procs(r->in->ct, &r->ct);
	if (r->in->bw)
		r->nr_bw = bandwidth__procs(r->in->bw, &r->bw);
	add_live_bw(r, live);
	for (size_t i = 0; i < r->nr_ml; i++)
		if (!r->ml[i]->exited)
			u64map__put(live, r->ml[i]->pid, r->ml[i]);
	for (size_t i = 0; i < r->nr_ct; i++)
		if (!r->ct[i]->exited)
			u64map__put(live, r->ct[i]->pid, r->ct[i]);
	cap = r->nr_ml + r->nr_ct + r->nr_bw;
	r->pp = calloc(cap ? cap : 1, sizeof(*r->pp));
	if (!r->pp) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < r->nr_ml + r->nr_ct; i++) {
		bool is_ml = i < r->nr_ml;
		struct ml_proc *m = is_ml ? r->ml[i] : NULL;
		struct ct_proc *c = is_ml ? NULL : r->ct[i - r->nr_ml];
		uint32_t pid = m ? m->pid : c->pid;
		bool exited = m ? m->exited : c->exited;
		uintptr_t at;
		struct pp *p;

		if (shadowed(live, exited, pid))
			continue;
		at = (uintptr_t)u64map__get(idx, pid);
		if (!at) {
			r->pp[r->nr_pp].pid = pid;
			r->pp[r->nr_pp].comm = m ? m->comm : c->comm;
			if (u64map__put(idx, pid, (void *)(uintptr_t)(r->nr_pp + 1))) {
				err = -ENOMEM;
				goto cleanup;
			}
			at = ++r->nr_pp;
		}
		p = &r->pp[at - 1];
		if (m)
			p->hits += m->allocs_total + m->frees_total;
		else
			p->hits += c->launches + c->graph_launches + c->hist[GP_HIST_SYNC].count;
	}
	for (size_t i = 0; i < r->nr_bw; i++) {
		struct bw_stat **st;
		size_t n = bw_proc__stats(r->bw[i], &st);
		uint64_t copies = 0;

		if (!n || bw_hidden(r, live, i)) /* no copies (synchronizes, contexts only) */
			continue;
		for (size_t j = 0; j < n; j++)
			copies += st[j]->copies;
		err = add_hits(r, idx, bw_proc__pid(r->bw[i]), bw_proc__comm(r->bw[i]), copies);
		if (err)
			goto cleanup;
	}
	/* ioctls are syscalls, not probe hits: those processes count as tracked only */
	r->nr_tracked = r->nr_pp;
	for (size_t i = 0; i < r->in->nr_ioc; i++)
		if (!u64map__get(idx, r->in->ioc[i].pid))
			r->nr_tracked++;
cleanup:
	u64map__free(live);
	u64map__free(idx);
	return err;
}

static void memleak_families(struct render *r, struct u64map *live)
{
	static const struct {
		const char *name, *type, *help;
	} fams[] = {
		{ "gpuprobe_cuda_outstanding_bytes", "gauge",
		  "Bytes allocated through the CUDA driver and not freed yet, per process and memory kind." },
		{ "gpuprobe_cuda_outstanding_allocations", "gauge",
		  "Allocations made through the CUDA driver and not freed yet, per process and memory kind." },
		{ "gpuprobe_cuda_alloc_calls_total", "counter",
		  "Successful CUDA driver allocation calls seen since gpuprobe attached." },
		{ "gpuprobe_cuda_free_calls_total", "counter",
		  "Successful CUDA driver free calls of allocations gpuprobe saw being made." },
		{ "gpuprobe_cuda_alloc_bytes_total", "counter",
		  "Bytes allocated by the calls counted in gpuprobe_cuda_alloc_calls_total." },
		{ "gpuprobe_cuda_freed_bytes_total", "counter",
		  "Bytes released by the calls counted in gpuprobe_cuda_free_calls_total." },
	};

	for (size_t fi = 0; fi < sizeof(fams) / sizeof(fams[0]); fi++) {
		family(r, fams[fi].name, fams[fi].type, fams[fi].help);
		for (size_t i = 0; i < r->nr_ml; i++) {
			struct ml_proc *p = r->ml[i];
			uint64_t v;

			if (shadowed(live, p->exited, p->pid))
				continue;
			if (fi < 2) {
				for (int k = 0; k < GP_KIND__COUNT; k++) {
					v = fi == 0 ? p->bytes_by_kind[k] : p->allocs_by_kind[k];
					fputs(fams[fi].name, r->f);
					proc_labels(r, p->pid, p->comm);
					fprintf(r->f, ",kind=\"%s\"} %" PRIu64 "\n", gp_kind_name(k), v);
				}
				continue;
			}
			v = fi == 2 ? p->allocs_total : fi == 3 ? p->frees_total :
			    fi == 4 ? p->alloc_bytes_total : p->freed_bytes_total;
			fputs(fams[fi].name, r->f);
			proc_labels(r, p->pid, p->comm);
			fprintf(r->f, "} %" PRIu64 "\n", v);
		}
	}
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct ct_kernel *x = *(struct ct_kernel *const *)a, *y = *(struct ct_kernel *const *)b;

	if (x->launches != y->launches)
		return x->launches > y->launches ? -1 : 1;
	return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* The top max_kernel_series kernels by launches get their own series; the rest (and a
 * kernel literally named "other") are summed under kernel="other". */
static int kernel_series(struct render *r, struct ct_proc *p)
{
	struct ct_kernel **sorted = calloc(p->nr_kernels ? p->nr_kernels : 1, sizeof(*sorted));
	uint64_t other = 0;
	bool has_other = false;

	if (!sorted)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_kernels; i++)
		sorted[i] = &p->kernels[i];
	qsort(sorted, p->nr_kernels, sizeof(*sorted), cmp_kernel);
	for (size_t i = 0; i < p->nr_kernels; i++) {
		const char *name = sorted[i]->name ? sorted[i]->name : "";

		if (i >= r->in->max_kernel_series || !strcmp(name, "other")) {
			other += sorted[i]->launches;
			has_other = true;
			continue;
		}
		fputs("gpuprobe_cuda_kernel_launches_total", r->f);
		proc_labels(r, p->pid, p->comm);
		fputs(",kernel=\"", r->f);
		prom__label_value(r->f, name);
		fprintf(r->f, "\"} %" PRIu64 "\n", sorted[i]->launches);
	}
	if (has_other) {
		fputs("gpuprobe_cuda_kernel_launches_total", r->f);
		proc_labels(r, p->pid, p->comm);
		fprintf(r->f, ",kernel=\"other\"} %" PRIu64 "\n", other);
	}
	free(sorted);
	return 0;
}

static int cudatrace_families(struct render *r, struct u64map *live)
{
	int err = 0;

	family(r, "gpuprobe_cuda_kernel_launches_total", "counter",
	       "Kernel launches per process and kernel name (cuLaunchKernel, cuLaunchKernelEx, cooperative; failed calls too). Kernels beyond the top --max-kernel-series per process are summed under kernel=\"other\".");
	for (size_t i = 0; i < r->nr_ct && !err; i++)
		if (!shadowed(live, r->ct[i]->exited, r->ct[i]->pid))
			err = kernel_series(r, r->ct[i]);
	if (err)
		return err;
	family(r, "gpuprobe_cuda_graph_launches_total", "counter", "CUDA graph launches (cuGraphLaunch) per process.");
	for (size_t i = 0; i < r->nr_ct; i++) {
		struct ct_proc *p = r->ct[i];

		if (shadowed(live, p->exited, p->pid))
			continue;
		fputs("gpuprobe_cuda_graph_launches_total", r->f);
		proc_labels(r, p->pid, p->comm);
		fprintf(r->f, "} %" PRIu64 "\n", p->graph_launches);
	}
	family(r, "gpuprobe_cuda_sync_calls_total", "counter",
	       "Stream, context and event synchronize calls per process.");
	for (size_t i = 0; i < r->nr_ct; i++) {
		struct ct_proc *p = r->ct[i];

		if (shadowed(live, p->exited, p->pid))
			continue;
		fputs("gpuprobe_cuda_sync_calls_total", r->f);
		proc_labels(r, p->pid, p->comm);
		fprintf(r->f, "} %llu\n", (unsigned long long)p->hist[GP_HIST_SYNC].count);
	}
	family(r, "gpuprobe_cuda_sync_seconds_total", "counter",
	       "Seconds the host spent blocked in the synchronize calls whose return was seen.");
	for (size_t i = 0; i < r->nr_ct; i++) {
		struct ct_proc *p = r->ct[i];

		if (shadowed(live, p->exited, p->pid))
			continue;
		fputs("gpuprobe_cuda_sync_seconds_total", r->f);
		proc_labels(r, p->pid, p->comm);
		fprintf(r->f, "} %.9f\n", (double)p->hist[GP_HIST_SYNC].total_ns / 1e9);
	}
	return 0;
}

static void bandwidth_families(struct render *r, struct u64map *live)
{
	static const struct {
		const char *name, *help;
	} fams[] = {
		{ "gpuprobe_cuda_memcpy_calls_total",
		  "Successful CUDA driver copies (cuMemcpy*) of at least --min-bytes bytes, per process, GPU and direction." },
		{ "gpuprobe_cuda_memcpy_bytes_total", "Bytes of the copies counted in gpuprobe_cuda_memcpy_calls_total." },
		{ "gpuprobe_cuda_memcpy_sync_seconds_total",
		  "Seconds spent in synchronous copy calls, entry to return." },
		{ "gpuprobe_cuda_memcpy_async_seconds_upper_bound_total",
		  "Upper bound of the seconds asynchronous copies took: from the first submission of a batch to the return of the synchronize covering it." },
		{ "gpuprobe_cuda_memcpy_pageable_bytes_total",
		  "Bytes of the counted copies whose host side is pageable (not pinned) memory." },
	};

	for (size_t fi = 0; fi < sizeof(fams) / sizeof(fams[0]); fi++) {
		family(r, fams[fi].name, "counter", fams[fi].help);
		for (size_t i = 0; i < r->nr_bw; i++) {
			struct bw_proc *p = r->bw[i];
			struct bw_stat **st;
			size_t n;

			if (bw_hidden(r, live, i))
				continue;
			n = bw_proc__stats(p, &st);
			for (size_t j = 0; j < n; j++) {
				fputs(fams[fi].name, r->f);
				proc_labels(r, bw_proc__pid(p), bw_proc__comm(p));
				if (st[j]->gpu >= 0)
					fprintf(r->f, ",gpu=\"%d\"", st[j]->gpu);
				else
					fputs(",gpu=\"\"", r->f);
				fprintf(r->f, ",direction=\"%s\"} ", bw_dir_name(st[j]->dir));
				switch (fi) {
				case 0:
					fprintf(r->f, "%" PRIu64 "\n", st[j]->copies);
					break;
				case 1:
					fprintf(r->f, "%" PRIu64 "\n", st[j]->bytes);
					break;
				case 2:
					fprintf(r->f, "%.9f\n", (double)st[j]->sync_ns / 1e9);
					break;
				case 3:
					fprintf(r->f, "%.9f\n", (double)st[j]->async_ns / 1e9);
					break;
				default:
					fprintf(r->f, "%" PRIu64 "\n", st[j]->pageable_bytes);
					break;
				}
			}
		}
	}
	family(r, "gpuprobe_cuda_memcpy_small_total", "counter",
	       "Successful copies under --min-bytes bytes, all processes together (counted in BPF, not in the families above).");
	fprintf(r->f, "gpuprobe_cuda_memcpy_small_total %" PRIu64 "\n", r->in->small_copies);
}

/* --ioctl: one series of a process, labels node, cmd, ctrl */
struct ioc_row {
	const char *node;
	char cmd[48], ctrl[64];
	uint64_t calls, errors, ns;
};

static int cmp_ioc_labels(const void *a, const void *b)
{
	const struct ioc_row *x = a, *y = b;
	int c = strcmp(x->node, y->node);

	if (!c)
		c = strcmp(x->cmd, y->cmd);
	return c ? c : strcmp(x->ctrl, y->ctrl);
}

static int cmp_ioc_calls(const void *a, const void *b)
{
	const struct ioc_row *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return cmp_ioc_labels(a, b);
}

/* Rows with equal labels (one name for several request numbers) summed into the first. */
static size_t merge_ioc_rows(struct ioc_row *rows, size_t n)
{
	size_t out = 0;

	qsort(rows, n, sizeof(*rows), cmp_ioc_labels);
	for (size_t i = 0; i < n; i++) {
		if (out && !cmp_ioc_labels(&rows[out - 1], &rows[i])) {
			rows[out - 1].calls += rows[i].calls;
			rows[out - 1].errors += rows[i].errors;
			rows[out - 1].ns += rows[i].ns;
			continue;
		}
		rows[out++] = rows[i];
	}
	return out;
}

/*
 * The series of one process: the top max (node, cmd, ctrl) label sets by calls get their
 * own, the rest are summed per device node under cmd="other", ctrl="". *rows is
 * allocated; returns how many, or -ENOMEM.
 */
static long ioctl_rows(const struct ioc_proc *p, unsigned int max, struct ioc_row **out)
{
	struct ioc_row *rows;
	size_t n = 0, keep;

	for (size_t d = 0; d < p->nr_devs; d++)
		n += p->devs[d].nr_cmds;
	rows = calloc(n ? n : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	n = 0;
	for (size_t d = 0; d < p->nr_devs; d++) {
		for (size_t k = 0; k < p->devs[d].nr_cmds; k++) {
			const struct ioc_cmd *c = &p->devs[d].cmds[k];
			struct ioc_row *w = &rows[n++];

			w->node = p->devs[d].node;
			if (c->name)
				snprintf(w->cmd, sizeof(w->cmd), "%s", c->name);
			else
				snprintf(w->cmd, sizeof(w->cmd), "0x%x", c->cmd);
			if (c->ctrl_name)
				snprintf(w->ctrl, sizeof(w->ctrl), "%s", c->ctrl_name);
			else if (c->ctrl_cmd || ioctl__is_rm_control(c->cmd))
				snprintf(w->ctrl, sizeof(w->ctrl), "0x%x", c->ctrl_cmd);
			w->calls = c->st.calls;
			w->errors = c->st.errors;
			w->ns = c->st.total_ns;
		}
	}
	n = merge_ioc_rows(rows, n);
	qsort(rows, n, sizeof(*rows), cmp_ioc_calls);
	keep = n < max ? n : max;
	for (size_t i = keep; i < n; i++) {
		snprintf(rows[i].cmd, sizeof(rows[i].cmd), "other");
		rows[i].ctrl[0] = 0;
	}
	n = keep + merge_ioc_rows(rows + keep, n - keep);
	*out = rows;
	return (long)n;
}

static int ioctl_families(struct render *r)
{
	static const struct {
		const char *name, *help;
	} fams[] = {
		{ "gpuprobe_nvidia_ioctl_calls_total",
		  "ioctls on nvidia device nodes per process, node, command (decoded name or hex) and RM control command (NV_ESC_RM_CONTROL only). Beyond the top --max-ioctl-series per process they are summed per node under cmd=\"other\"." },
		{ "gpuprobe_nvidia_ioctl_errors_total",
		  "Those ioctls that returned an error." },
		{ "gpuprobe_nvidia_ioctl_seconds_total",
		  "Seconds spent in those ioctls (entry to return)." },
	};
	struct ioc_row **rows = calloc(r->in->nr_ioc ? r->in->nr_ioc : 1, sizeof(*rows));
	long *nr = calloc(r->in->nr_ioc ? r->in->nr_ioc : 1, sizeof(*nr));
	int err = 0;

	if (!rows || !nr) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < r->in->nr_ioc; i++) {
		nr[i] = ioctl_rows(&r->in->ioc[i], r->in->max_ioctl_series, &rows[i]);
		if (nr[i] < 0) {
			err = (int)nr[i];
			goto cleanup;
		}
	}
	for (size_t fi = 0; fi < sizeof(fams) / sizeof(fams[0]); fi++) {
		family(r, fams[fi].name, "counter", fams[fi].help);
		for (size_t i = 0; i < r->in->nr_ioc; i++) {
			const struct ioc_proc *p = &r->in->ioc[i];

			for (long j = 0; j < nr[i]; j++) {
				const struct ioc_row *w = &rows[i][j];

				fputs(fams[fi].name, r->f);
				proc_labels(r, p->pid, p->comm);
				fputs(",node=\"", r->f);
				prom__label_value(r->f, w->node);
				fputs("\",cmd=\"", r->f);
				prom__label_value(r->f, w->cmd);
				fputs("\",ctrl=\"", r->f);
				prom__label_value(r->f, w->ctrl);
				if (fi == 2)
					fprintf(r->f, "\"} %.9f\n", (double)w->ns / 1e9);
				else
					fprintf(r->f, "\"} %" PRIu64 "\n", fi == 0 ? w->calls : w->errors);
			}
		}
	}
cleanup:
	if (rows)
		for (size_t i = 0; i < r->in->nr_ioc; i++)
			free(rows[i]);
	free(rows);
	free(nr);
	return err;
}

int prom__render(FILE *f, const struct prom_input *in)
{
	struct render r = { .f = f, .in = in };
	struct u64map *live = u64map__new();
	int err;

	if (!live) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = collect(&r);
	if (err)
		goto cleanup;
	for (size_t i = 0; i < r.nr_ml; i++)
		if (!r.ml[i]->exited)
			u64map__put(live, r.ml[i]->pid, r.ml[i]);
	for (size_t i = 0; i < r.nr_ct; i++)
		if (!r.ct[i]->exited)
			u64map__put(live, r.ct[i]->pid, r.ct[i]);
	add_live_bw(&r, live);

	if (in->ml)
		memleak_families(&r, live);
	if (in->ct) {
		err = cudatrace_families(&r, live);
		if (err)
			goto cleanup;
	}
	if (in->bw)
		bandwidth_families(&r, live);
	if (in->ioctl) {
		err = ioctl_families(&r);
		if (err)
			goto cleanup;
	}
	family(&r, "gpuprobe_probe_hits_total", "counter",
	       "Probed CUDA driver calls gpuprobe counted per process (allocations, frees, launches, graph launches, synchronizes, copies).");
	for (size_t i = 0; i < r.nr_pp; i++) {
		fputs("gpuprobe_probe_hits_total", f);
		proc_labels(&r, r.pp[i].pid, r.pp[i].comm);
		fprintf(f, "} %" PRIu64 "\n", r.pp[i].hits);
	}
	family(&r, "gpuprobe_probe_hit_cost_seconds", "gauge",
	       "Cost of one probe hit in seconds: calibrated at start-up on this node (a uprobe on a function of gpuprobe, timed with and without), or --probe-cost.");
	fprintf(f, "gpuprobe_probe_hit_cost_seconds %.9g\n", in->probe_cost);
	family(&r, "gpuprobe_probe_seconds_total", "counter",
	       "ESTIMATE of the seconds each process spent in gpuprobe's probes: gpuprobe_probe_hits_total times gpuprobe_probe_hit_cost_seconds, not a measurement.");
	for (size_t i = 0; i < r.nr_pp; i++) {
		fputs("gpuprobe_probe_seconds_total", f);
		proc_labels(&r, r.pp[i].pid, r.pp[i].comm);
		fprintf(f, "} %.9g\n", (double)r.pp[i].hits * in->probe_cost);
	}
	family(&r, "gpuprobe_events_dropped_total", "counter",
	       "Events or calls gpuprobe could not account for, by mode and reason (see docs/metrics.md).");
	for (size_t i = 0; i < in->nr_drops; i++) {
		fputs("gpuprobe_events_dropped_total{mode=\"", f);
		prom__label_value(f, in->drops[i].mode);
		fputs("\",reason=\"", f);
		prom__label_value(f, in->drops[i].reason);
		fprintf(f, "\"} %" PRIu64 "\n", in->drops[i].count);
	}
	family(&r, "gpuprobe_libcuda_files", "gauge", "Distinct libcuda files (device+inode) gpuprobe has probes on.");
	fprintf(f, "gpuprobe_libcuda_files %d\n", in->libs);
	family(&r, "gpuprobe_probes_attached", "gauge", "Probes attached (one per function and direction).");
	fprintf(f, "gpuprobe_probes_attached %d\n", in->probes);
	family(&r, "gpuprobe_tracked_processes", "gauge", "Processes with series on this endpoint.");
	fprintf(f, "gpuprobe_tracked_processes %zu\n", r.nr_tracked);
	if (ferror(f))
		err = -EIO;
cleanup:
	u64map__free(live);
	free(r.pp);
	return err;
}
