/* SPDX-License-Identifier: BSD-3-Clause */
/* --cudatrace's renderers: text, JSON and Prometheus, from a snapshot only. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "modes/cudatrace/cudatrace_mode.h"
#include "out/json.h"
#include "lib/ncclkern.h"
#include "out/prom.h"
#include "out/text.h"
#include "out/trees.h"
#include "lib/unseen.h"

#define SNAP(s) ((const struct ct_snap *)(s))

/* A process's sampling; a snapshot made without (a test's) is every call seen. */
static const struct ct_sampled *sampled_of(const struct ct_snap *s, size_t i)
{
	static const struct ct_sampled exact;

	return s->sampled ? &s->sampled[i] : &exact;
}

static void text_hist(FILE *f, const char *what, const struct gp_hist *h, bool latency,
		      const struct ct_sampled *smp)
{
	if (!h->count)
		return;
	fprintf(f, "  %s: %s", what, gp_text__n(ct_sampled__count(smp, h->count), "call", "calls").s);
	if (latency && h->timed)
		fprintf(f, ", total %s, max %s, mean %s", gp_text__duration((double)h->total_ns / 1e9).s,
			gp_text__duration((double)h->max_ns / 1e9).s,
			gp_text__duration((double)h->total_ns / 1e9 / (double)h->timed).s);
	fputc('\n', f);
	if (latency)
		gp_text__log2_hist(f, (const uint64_t *)h->slots, GP_HIST_SLOTS, "usecs");
}

/* graphs: the process used CUDA graphs, so the GRAPH and CAPTURED columns are shown
 * and a shape's count is its executions (direct + in graphs) */
static void text_kernel(FILE *f, const struct ct_kernel *kn, int top_shapes, bool graphs,
			const struct ct_sampled *smp)
{
	char nccl[160];

	fprintf(f, "  %-48.*s %10s ", 120, kn->name, gp_text__count(ct_sampled__count(smp, kn->launches)).s);
	if (graphs)
		fprintf(f, "%10s %9s ", gp_text__count(ct_sampled__count(smp, kn->graph_executed)).s,
			gp_text__count(kn->captured).s);
	for (size_t s = 0; s < kn->nr_shapes && (int)s < top_shapes; s++) {
		const struct ct_shape *sh = &kn->shapes[s];

		fprintf(f, " (%u,%u,%u)x(%u,%u,%u): %s", sh->grid[0], sh->grid[1], sh->grid[2],
			sh->block[0], sh->block[1], sh->block[2],
			gp_text__count(ct_sampled__count(smp, sh->launches + sh->graph_executed)).s);
	}
	if (kn->nr_shapes > (size_t)top_shapes)
		fprintf(f, " ... %s", gp_text__n(kn->nr_shapes - (size_t)top_shapes, "more shape", "more shapes").s);
	if (kn->source == CT_NAME_HOST)
		fprintf(f, "  [host-side name]");
	else if (kn->source == CT_NAME_MEMORY)
		fprintf(f, "  [name read from memory]");
	if (nccl_kernel__describe(kn->name, nccl, sizeof(nccl)) > 0)
		fprintf(f, "  [NCCL: %s]", nccl);
	fputc('\n', f);
}

static void text_graph(FILE *f, const struct ct_graph *g, const struct ct_sampled *smp)
{
	static const char *const made_by[] = { "made before the attach", "captured", "graph API" };

	fprintf(f, "  graph 0x%" PRIx64 ": %s", g->handle,
		gp_text__n(ct_sampled__count(smp, g->launches), "launch", "launches").s);
	if (g->source > 0 && g->source < 3)
		fprintf(f, ", %s (%s)%s", gp_text__n(g->nodes, "kernel node", "kernel nodes").s, made_by[g->source],
			g->partial ? ", some nodes not followed" : "");
	else
		fprintf(f, " (%s)", made_by[0]);
	fputc('\n', f);
}

/* Never mixed silently with exact counts: the line that says these are estimates. */
static void text_sampled(FILE *f, const struct ct_sampled *smp)
{
	static const struct {
		const char *what;
		enum ct_iv iv;
	} show[] = { { "launches", CT_IV_LAUNCHES }, { "graph launches", CT_IV_GRAPH_LAUNCHES }, { "syncs", CT_IV_SYNCS } };

	fprintf(f, "  sampled (--max-overhead): %.1f%% of its launch and sync calls seen; its counts are estimates (95%%:",
		smp->s.fraction * 100);
	for (size_t i = 0; i < sizeof(show) / sizeof(show[0]); i++) {
		const double *v = smp->iv[show[i].iv];

		if (isinf(v[2]))
			fprintf(f, "%s %s at least %s", i ? "," : "", show[i].what, gp_text__count((uint64_t)llround(v[1])).s);
		else
			fprintf(f, "%s %s %s-%s", i ? "," : "", show[i].what, gp_text__count((uint64_t)llround(v[1])).s,
				gp_text__count((uint64_t)llround(v[2])).s);
	}
	if (!smp->s.unbounded)
		fprintf(f, ")\n");
	else if (smp->s.long_unseen && smp->s.dark_s > 0)
		fprintf(f, "); an unseen part outlasted a period (the probes were that slow to go in; %.1f s of it seen by "
			"no probe): how many it made unseen has no upper bound\n", smp->s.dark_s);
	else if (smp->s.dark_s > 0) /* a part no window saw (sampling.c): armed for it late */
		fprintf(f, "); its probes were armed for it after its calls began (%.3f s of it seen by no probe): how "
			"many it made then has no upper bound\n", smp->s.dark_s);
	else
		fprintf(f, ")%s\n", smp->s.long_unseen ?
			"; an unseen part outlasted a period (the probes were that slow to go in): how many it made unseen has no upper bound" :
			"; its calls cost less than a probe: how many it made unseen has no upper bound");
}

static struct gp_trees *jobs(const struct ct_snap *s, const struct gp_snap_env *env)
{
	struct gp_trees *t = gp_trees__new(env);

	for (size_t i = 0; t && i < s->nr_procs; i++) {
		const struct ct_proc *p = s->procs[i];
		const struct ct_sampled *smp = sampled_of(s, i);
		uint64_t v[GP_TREE_VALUES] = { ct_sampled__count(smp, p->launches), ct_sampled__count(smp, p->graph_launches),
					       ct_sampled__count(smp, p->unnamed_launches) };

		gp_trees__add(t, p->pid, v);
	}
	return t;
}

static void job_values(FILE *f, const uint64_t v[GP_TREE_VALUES])
{
	fprintf(f, ", %s, %s, %s unnamed", gp_text__n(v[0], "launch", "launches").s,
		gp_text__n(v[1], "graph launch", "graph launches").s, gp_text__count(v[2]).s);
}

static void text_proc(FILE *f, const struct ct_snap *s, size_t i, const struct gp_snap_env *env)
{
	const struct ct_proc *p = s->procs[i];
	const struct ct_sampled *smp = sampled_of(s, i);
	uint64_t launches = ct_sampled__count(smp, p->launches);
	bool graphs;
	char rate[96] = "";

	/* a rate of nothing is no figure: "0 launches", never "(0.0/s)" */
	if (launches)
		snprintf(rate, sizeof(rate), " (%s)", gp_text__per_s(p->launches_per_s * (smp->on ? smp->ratio : 1)).s);
	fprintf(f, "PID %u (%s)%s: %s%s%s, %s unnamed, %s\n", p->pid, p->comm,
		p->exec ? " before its exec" : p->exited ? " exited" : "", smp->on ? "~" : "",
		gp_text__n(launches, "launch", "launches").s, rate,
		gp_text__count(ct_sampled__count(smp, p->unnamed_launches)).s,
		gp_text__n(ct_sampled__count(smp, p->graph_launches), "graph launch", "graph launches").s);
	if (smp->on)
		text_sampled(f, smp);
	if (p->unnamed_no_layout)
		fprintf(f, "  %s of the unnamed launches: no kernel-handle layout learned yet for this libcuda build "
			   "(made before the attach; one run of any CUDA program under gpuprobe with this driver teaches it, see --state-dir)\n",
			gp_text__count(ct_sampled__count(smp, p->unnamed_no_layout)).s);
	if (p->unnamed_unread)
		fprintf(f, "  %s of the unnamed launches: the process was gone before their kernels' names were read "
			   "(not in the copy made at their first launch: see gpuprobe -v)\n",
			gp_text__count(ct_sampled__count(smp, p->unnamed_unread)).s);
	if (gp_env_unseen(env, p->pid)) {
		char line[160];

		gp_unseen__text(gp_env_unseen(env, p->pid), line, sizeof(line));
		fprintf(f, "  [%s]\n", line);
	}
	graphs = p->graph_executed || p->captured_total;
	if (p->nr_kernels && graphs)
		fprintf(f, "  %-48s %10s %10s %9s  %s\n", "KERNEL", "LAUNCHES", "GRAPH", "CAPTURED",
			"GRID x BLOCK: RUNS");
	else if (p->nr_kernels)
		fprintf(f, "  %-48s %10s  %s\n", "KERNEL", "LAUNCHES", "GRID x BLOCK: LAUNCHES");
	for (size_t k = 0; k < p->nr_kernels; k++)
		text_kernel(f, &p->kernels[k], s->top_shapes, graphs, smp);
	for (size_t g = 0; g < p->nr_graphs; g++)
		text_graph(f, &p->graphs[g], smp);
	if (p->unexpanded_graph_launches)
		fprintf(f, "  %s of graphs made before gpuprobe attached: their kernels not counted\n",
			gp_text__n(ct_sampled__count(smp, p->unexpanded_graph_launches), "launch", "launches").s);
	text_hist(f, "launch API latency", &p->hist[GP_HIST_LAUNCH], s->latency, smp);
	text_hist(f, "synchronize", &p->hist[GP_HIST_SYNC], s->latency, smp);
}

void ct_report__text(FILE *f, const struct gp_snap *hdr)
{
	const struct gp_snap_env *env = hdr->env;
	const struct ct_snap *s = SNAP(hdr);
	struct gp_trees *t = jobs(s, env);
	char tbuf[32];

	gp_text__clock(tbuf, sizeof(tbuf));
	fprintf(f, "[%s] cudatrace %s report: %s\n", tbuf, gp_snap_kind_name(hdr->kind), gp_text__n(s->nr_procs, "process", "processes").s);
	for (size_t i = 0; i < s->nr_procs; i++)
		text_proc(f, s, i, env);
	gp_trees__text(t, f, job_values);
	gp_trees__free(t);
	gp_drops__text(f, hdr, gp_env_verbose(env));
}

static json_object *json_hist(const struct gp_hist *h, bool latency, const struct ct_sampled *smp)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "calls", json_object_new_uint64(ct_sampled__count(smp, h->count)));
	if (!latency) {
		/* no return probes: times unknown, not zero */
		json_object_object_add(o, "total_s", NULL);
		json_object_object_add(o, "max_s", NULL);
		json_object_object_add(o, "hist_us", NULL);
		return o;
	}
	json_object_object_add(o, "timed", json_object_new_uint64(h->timed));
	json_object_object_add(o, "total_s", json_object_new_double((double)h->total_ns / 1e9));
	json_object_object_add(o, "max_s", json_object_new_double((double)h->max_ns / 1e9));
	json_object_object_add(o, "hist_us", gp_json__log2_hist((const uint64_t *)h->slots, GP_HIST_SLOTS));
	return o;
}

static json_object *json_u32x3(const uint32_t *v)
{
	json_object *a = json_object_new_array();

	for (int i = 0; i < 3; i++)
		json_object_array_add(a, json_object_new_int64(v[i]));
	return a;
}

/* An NCCL kernel's name decoded (src/lib/ncclkern.h): what it says, and only that. */
static void json_nccl(json_object *ko, const char *name)
{
	struct nccl_kernel k;
	json_object *o;

	if (nccl_kernel__decode(name, &k))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "op", json_object_new_string(k.op));
	json_object_object_add(o, "dtypes", json_object_new_string(k.dtypes));
	json_object_object_add(o, "algorithm", json_object_new_string(k.algo));
	json_object_object_add(o, "protocol", json_object_new_string(k.proto));
	json_object_object_add(ko, "nccl", o);
}

static json_object *json_kernel(const struct ct_kernel *kn, const struct ct_sampled *smp)
{
	static const char *const sources[] = { "driver", "host", "none", "memory" };
	json_object *ko = json_object_new_object(), *ss = json_object_new_array();

	json_object_object_add(ko, "name", json_object_new_string(kn->name));
	json_object_object_add(ko, "source", json_object_new_string(sources[kn->source]));
	json_object_object_add(ko, "launches", json_object_new_uint64(ct_sampled__count(smp, kn->launches)));
	json_object_object_add(ko, "captured", json_object_new_uint64(kn->captured));
	json_nccl(ko, kn->name);
	json_object_object_add(ko, "graph_executed", json_object_new_uint64(ct_sampled__count(smp, kn->graph_executed)));
	for (size_t s = 0; s < kn->nr_shapes; s++) {
		const struct ct_shape *sh = &kn->shapes[s];
		json_object *so = json_object_new_object();

		json_object_object_add(so, "grid", json_u32x3(sh->grid));
		json_object_object_add(so, "block", json_u32x3(sh->block));
		json_object_object_add(so, "launches", json_object_new_uint64(ct_sampled__count(smp, sh->launches)));
		json_object_object_add(so, "captured", json_object_new_uint64(sh->captured));
		json_object_object_add(so, "graph_executed", json_object_new_uint64(ct_sampled__count(smp, sh->graph_executed)));
		json_object_array_add(ss, so);
	}
	json_object_object_add(ko, "shapes", ss);
	return ko;
}

/* "sampling":{"fraction":F,"intervals":{"launches":[LO,HI],...}}: the count fields beside
 * it hold estimates. */
static json_object *json_sampling(const struct ct_sampled *smp)
{
	static const char *const keys[CT_IV__COUNT] = {
		[CT_IV_LAUNCHES] = "launches", [CT_IV_UNNAMED] = "unnamed_launches",
		[CT_IV_GRAPH_LAUNCHES] = "graph_launches", [CT_IV_GRAPH_EXECUTED] = "graph_executed",
		[CT_IV_SYNCS] = "sync_calls",
	};
	json_object *o = json_object_new_object(), *iv = json_object_new_object();

	json_object_object_add(o, "fraction", json_object_new_double(smp->s.fraction));
	if (smp->s.unbounded)
		json_object_object_add(o, "unbounded", json_object_new_boolean(true));
	if (smp->s.long_unseen)
		json_object_object_add(o, "long_unseen", json_object_new_boolean(true));
	if (smp->s.dark_s > 0)
		json_object_object_add(o, "dark_s", json_object_new_double(smp->s.dark_s));
	for (int i = 0; i < CT_IV__COUNT; i++) {
		json_object *a = json_object_new_array();

		json_object_array_add(a, json_object_new_uint64((uint64_t)floor(smp->iv[i][1])));
		/* no upper end known: null */
		json_object_array_add(a, isinf(smp->iv[i][2]) ? NULL : json_object_new_uint64((uint64_t)ceil(smp->iv[i][2])));
		json_object_object_add(iv, keys[i], a);
	}
	json_object_object_add(o, "intervals", iv);
	return o;
}

static json_object *json_proc(const struct ct_proc *p, bool latency, const struct gp_snap_env *env,
			      const struct ct_sampled *smp)
{
	json_object *po = json_object_new_object(), *ks = json_object_new_array();
	json_object *gs = json_object_new_array();

	json_object_object_add(po, "pid", json_object_new_int64(p->pid));
	json_object_object_add(po, "comm", json_object_new_string(p->comm));
	json_object_object_add(po, "exited", json_object_new_boolean(p->exited));
	json_object_object_add(po, "exec", json_object_new_boolean(p->exec));
	gp_trees__json_proc(env, po, p->pid);
	if (smp->on)
		json_object_object_add(po, "sampling", json_sampling(smp));
	json_object_object_add(po, "launches", json_object_new_uint64(ct_sampled__count(smp, p->launches)));
	json_object_object_add(po, "launches_per_s", json_object_new_double(p->launches_per_s * (smp->on ? smp->ratio : 1)));
	json_object_object_add(po, "unnamed_launches", json_object_new_uint64(ct_sampled__count(smp, p->unnamed_launches)));
	json_object_object_add(po, "unnamed_no_layout", json_object_new_uint64(ct_sampled__count(smp, p->unnamed_no_layout)));
	json_object_object_add(po, "unnamed_unread", json_object_new_uint64(ct_sampled__count(smp, p->unnamed_unread)));
	for (size_t k = 0; k < p->nr_kernels; k++)
		json_object_array_add(ks, json_kernel(&p->kernels[k], smp));
	json_object_object_add(po, "kernels", ks);
	json_object_object_add(po, "graph_launches", json_object_new_uint64(ct_sampled__count(smp, p->graph_launches)));
	json_object_object_add(po, "graph_executed", json_object_new_uint64(ct_sampled__count(smp, p->graph_executed)));
	json_object_object_add(po, "unexpanded_graph_launches",
			       json_object_new_uint64(ct_sampled__count(smp, p->unexpanded_graph_launches)));
	json_object_object_add(po, "captured", json_object_new_uint64(p->captured_total));
	for (size_t g = 0; g < p->nr_graphs; g++) {
		static const char *const made_by[] = { "unknown", "stream_capture", "graph_api" };
		const struct ct_graph *gr = &p->graphs[g];
		json_object *go = json_object_new_object();

		json_object_object_add(go, "handle", gp_json__hex(gr->handle));
		json_object_object_add(go, "launches", json_object_new_uint64(ct_sampled__count(smp, gr->launches)));
		json_object_object_add(go, "made_by", json_object_new_string(made_by[gr->source < 3 ? gr->source : 0]));
		json_object_object_add(go, "kernel_nodes", json_object_new_uint64(gr->nodes));
		json_object_object_add(go, "partial", json_object_new_boolean(gr->partial));
		json_object_array_add(gs, go);
	}
	json_object_object_add(po, "graphs", gs);
	json_object_object_add(po, "launch_latency", json_hist(&p->hist[GP_HIST_LAUNCH], latency, smp));
	json_object_object_add(po, "sync", json_hist(&p->hist[GP_HIST_SYNC], latency, smp));
	return po;
}

void ct_report__json(json_object *o, const struct gp_snap *hdr)
{
	const struct gp_snap_env *env = hdr->env;
	const struct ct_snap *s = SNAP(hdr);
	json_object *arr = json_object_new_array();

	static const char *const keys[GP_TREE_VALUES] = { "launches", "graph_launches", "unnamed_launches" };
	struct gp_trees *t = jobs(s, env);

	json_object_object_add(o, "latency", json_object_new_boolean(s->latency));
	for (size_t i = 0; i < s->nr_procs; i++)
		json_object_array_add(arr, json_proc(s->procs[i], s->latency, env, sampled_of(s, i)));
	json_object_object_add(o, "processes", arr);
	gp_trees__json(t, o, keys);
	gp_trees__free(t);
}

/* Every kernel of the process: src/out/prom.c caps the distinct names per series
 * (--max-kernel-series, the rest under kernel="other"). Unnamed handles are one name,
 * "unknown": their handle values differ in every process. */
static void kernel_series(struct prom_out *p, const struct ct_proc *cp, const struct gp_snap_pid *pp,
			  const struct ct_sampled *smp)
{
	for (size_t i = 0; i < cp->nr_kernels; i++) {
		const struct ct_kernel *k = &cp->kernels[i];
		bool unnamed = k->source == CT_NAME_NONE || !k->name;
		const char *kv[] = { "kernel", unnamed ? "unknown" : k->name, NULL };

		/* Launches are read from the maps, names from the records: a kernel not yet
		 * named may be named by a record still unread, and a series once written never
		 * goes (kernel="unknown" would keep launches its name's series counts again).
		 * Held back while so (ct_kernel.held, CT_HOLD_S at most); the process's own
		 * launch counters carry them meanwhile. */
		if (k->held)
			continue;

		prom__u64(p, "gpuprobe_cuda_kernel_launches_total", pp, kv, ct_sampled__count(smp, k->launches));
		prom__u64(p, "gpuprobe_cuda_kernel_captures_total", pp, kv, k->captured);
		prom__u64(p, "gpuprobe_cuda_graph_kernel_executions_total", pp, kv,
			  ct_sampled__count(smp, k->graph_executed));
	}
}

/* The launches' companions: the calls seen, and the ends of the 95 % interval (a process
 * counted exactly: its count at both); src/out/prom.c keeps every estimate family from going
 * down. No upper end: the estimate, and as much in the unbounded family. */
static void launch_bounds(struct prom_out *p, const struct ct_proc *cp, const struct gp_snap_pid *pp,
			  const struct ct_sampled *smp)
{
	const char *kv[] = { "bound", "low", NULL };
	double lo = (double)cp->launches, hi = lo, unbounded = 0;

	if (smp->on) {
		lo = smp->iv[CT_IV_LAUNCHES][1];
		hi = smp->iv[CT_IV_LAUNCHES][2];
		if (isinf(hi)) {
			unbounded = hi = (double)ct_sampled__count(smp, cp->launches);
		}
	}
	prom__u64(p, "gpuprobe_cuda_launches_seen_total", pp, NULL, cp->launches);
	prom__u64(p, "gpuprobe_cuda_launches_interval_total", pp, kv, (uint64_t)floor(lo));
	kv[1] = "high";
	prom__u64(p, "gpuprobe_cuda_launches_interval_total", pp, kv, (uint64_t)ceil(hi));
	prom__u64(p, "gpuprobe_cuda_launches_unbounded_total", pp, NULL, (uint64_t)unbounded);
}

/* A sampled process that runs: its calls seen and estimated as they stand now, in gauges
 * (the counters add the estimates and never go down). Summed per series: a series of
 * several processes gets their calls added (src/out/metrics.c). */
static void prom_sampled(struct prom_out *p, const struct gp_snap_pid *pp, const struct ct_proc *cp,
			 const struct ct_sampled *smp)
{
	static const char *const bounds[3] = { "estimate", "low", "high" };
	static const struct {
		const char *family;
		enum ct_iv iv;
	} fams[] = {
		{ "gpuprobe_cuda_launches_estimate", CT_IV_LAUNCHES },
		{ "gpuprobe_cuda_graph_launches_estimate", CT_IV_GRAPH_LAUNCHES },
		{ "gpuprobe_cuda_sync_calls_estimate", CT_IV_SYNCS },
	};
	const uint64_t seen[CT_IV__COUNT] = {
		[CT_IV_LAUNCHES] = cp->launches, [CT_IV_GRAPH_LAUNCHES] = cp->graph_launches,
		[CT_IV_SYNCS] = cp->hist[GP_HIST_SYNC].count,
	};
	const char *kv[] = { "bound", "seen", NULL };

	prom__u64(p, "gpuprobe_sampled_processes", pp, NULL, 1);
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		kv[1] = "seen";
		prom__u64(p, fams[f].family, pp, kv, seen[fams[f].iv]);
		for (int b = 0; b < 3; b++) {
			kv[1] = bounds[b];
			if (!isinf(smp->iv[fams[f].iv][b])) /* no upper end known: no "high" sample */
				prom__real(p, fams[f].family, pp, kv, smp->iv[fams[f].iv][b]);
		}
	}
}

int ct_report__prom(struct prom_out *p, const struct gp_snap *hdr)
{
	const struct ct_snap *s = SNAP(hdr);

	prom__family(p, "gpuprobe_cuda_kernel_launches_total");
	prom__cap(p, "gpuprobe_cuda_kernel_launches_total", s->max_kernel_series);
	prom__family(p, "gpuprobe_cuda_kernel_captures_total");
	prom__cap(p, "gpuprobe_cuda_kernel_captures_total", s->max_kernel_series);
	prom__family(p, "gpuprobe_cuda_graph_kernel_executions_total");
	prom__cap(p, "gpuprobe_cuda_graph_kernel_executions_total", s->max_kernel_series);
	prom__family(p, "gpuprobe_cuda_graph_launches_total");
	prom__family(p, "gpuprobe_cuda_sync_calls_total");
	prom__family(p, "gpuprobe_cuda_launches_seen_total");
	prom__family(p, "gpuprobe_cuda_launches_interval_total");
	prom__family(p, "gpuprobe_cuda_launches_unbounded_total");
	prom__family(p, "gpuprobe_cuda_sync_duration_seconds");
	prom__family(p, "gpuprobe_cuda_launch_duration_seconds");
	prom__family(p, "gpuprobe_sampled_processes");
	prom__family(p, "gpuprobe_cuda_launches_estimate");
	prom__family(p, "gpuprobe_cuda_graph_launches_estimate");
	prom__family(p, "gpuprobe_cuda_sync_calls_estimate");
	for (size_t i = 0; i < s->nr_procs; i++) {
		const struct ct_proc *cp = s->procs[i];
		const struct gp_snap_pid *pp = &s->pids[i];
		const struct gp_hist *sync = &cp->hist[GP_HIST_SYNC], *launch = &cp->hist[GP_HIST_LAUNCH];

		const struct ct_sampled *smp = sampled_of(s, i), *cnt = s->counted ? &s->counted[i] : smp;

		/* counters: the settled estimate, never ahead of the calls; gauges: the latest */
		kernel_series(p, cp, pp, cnt);
		launch_bounds(p, cp, pp, cnt);
		prom__u64(p, "gpuprobe_cuda_graph_launches_total", pp, NULL, ct_sampled__count(cnt, cp->graph_launches));
		prom__u64(p, "gpuprobe_cuda_sync_calls_total", pp, NULL, ct_sampled__count(cnt, sync->count));
		if (smp->on && !cp->exited)
			prom_sampled(p, pp, cp, smp);
		if (!s->latency)
			continue;
		prom__hist(p, "gpuprobe_cuda_sync_duration_seconds", pp, NULL, (const uint64_t *)sync->slots, (double)sync->total_ns / 1e9);
		prom__hist(p, "gpuprobe_cuda_launch_duration_seconds", pp, NULL, (const uint64_t *)launch->slots,
			   (double)launch->total_ns / 1e9);
	}
	return 0;
}
