// SPDX-License-Identifier: BSD-3-Clause
/* --gpu-time's renderers: text, JSON and Prometheus, from the snapshot only. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "out/drops.h"
#include "modes/gputime/gputime_mode.h"
#include "inject/gputime_wire.h"
#include "out/json.h"
#include "core/options.h"
#include "out/prom.h"
#include "out/text.h"
#include "lib/util.h"

#define SNAP(s) ((const struct gputime_snap *)(s))
#define KERNEL_ROWS 20 /* a text report's kernels a process (all with -v) */
#define KERNEL_SERIES 20

/* "gpu0", "host", "gpu1->gpu2" */
static void devices(char *buf, size_t len, const struct gt_copy_snap *c)
{
	if (c->src_dev != GPT_NO_DEVICE && c->dst_dev != GPT_NO_DEVICE)
		snprintf(buf, len, "gpu%u->gpu%u", c->src_dev, c->dst_dev);
	else
		snprintf(buf, len, "gpu%u", c->device);
}

static double gbps_bytes_per_s(double gbps)
{
	return gbps * 1e9;
}

/* What bounds a copy's bandwidth: the host link, the GPUs' peer link, one GPU's memory;
 * NULL for a copy between host buffers. */
static const struct bw_link *copy_link(const struct bw_links *l, const struct gt_copy_snap *c)
{
	switch (c->kind) {
	case GPT_COPY_HTOD:
	case GPT_COPY_DTOH:
	case GPT_COPY_HTOA:
	case GPT_COPY_ATOH:
		return bw_links__for(l, BW_H2D);
	case GPT_COPY_HTOH:
		return NULL;
	case GPT_COPY_PTOP:
		return bw_links__for(l, BW_PEER);
	default: /* within a GPU, unless it names two */
		return bw_links__for(l, c->src_dev != GPT_NO_DEVICE && c->dst_dev != GPT_NO_DEVICE &&
						c->src_dev != c->dst_dev ? BW_PEER : BW_D2D);
	}
}

static void text_kernels(FILE *f, const struct gt_snap_data *d, uint32_t pid, bool all)
{
	size_t shown = 0, rows = 0;

	for (size_t i = 0; i < d->nr_kernels; i++)
		rows += d->kernels[i].pid == pid;
	if (!rows)
		return;
	fprintf(f, "  %-10s %-10s %-10s %-10s %-10s %-14s %-14s %s\n", "GPU time", "launches", "mean", "min", "max",
		"grid", "block", "kernel");
	for (size_t i = 0; i < d->nr_kernels; i++) {
		const struct gt_kernel_snap *k = &d->kernels[i];
		char grid[40], block[40], name[GPT_NAME_MAX + 32];

		if (k->pid != pid)
			continue;
		if (!all && shown == KERNEL_ROWS) {
			fprintf(f, "  ... %s more (-v lists all)\n", gp_text__count(rows - shown).s);
			break;
		}
		shown++;
		snprintf(grid, sizeof(grid), "%u,%u,%u", k->grid[0], k->grid[1], k->grid[2]);
		snprintf(block, sizeof(block), "%u,%u,%u", k->block[0], k->block[1], k->block[2]);
		if (k->name) /* the report's stream shows no control byte (gp_text__safe_stream) */
			snprintf(name, sizeof(name), "%s", k->name);
		else
			snprintf(name, sizeof(name), "(name id %u never sent)", k->name_id);
		fprintf(f, "  %-10s %-10s %-10s %-10s %-10s %-14s %-14s %s\n", gp_text__duration(k->total_ns / 1e9).s,
			gp_text__count(k->count).s, gp_text__duration(k->total_ns / 1e9 / (double)k->count).s,
			gp_text__duration(k->min_ns / 1e9).s, gp_text__duration(k->max_ns / 1e9).s, grid, block, name);
	}
}

/* Figures above their link's limit say "suspect" (lib/links.h): never a measurement. */
static void text_copies(FILE *f, const struct gt_snap_data *d, uint32_t pid, const struct bw_links *links)
{
	bool head = false;

	for (size_t i = 0; i < d->nr_copies; i++) {
		const struct gt_copy_snap *c = &d->copies[i];
		struct gp_text_suspect sus = { 0 };
		char dev[48];

		if (c->pid != pid)
			continue;
		if (!head) {
			fprintf(f, "  %-6s %-14s %-10s %-12s %-10s %-12s %s\n", "copy", "GPUs", "copies", "bytes",
				"GPU time", "bandwidth", "fastest copy");
			head = true;
		}
		devices(dev, sizeof(dev), c);
		fprintf(f, "  %-6s %-14s %-10s %-12s %-10s %-12s %s\n", gt_copy_kind_name(c->kind), dev,
			gp_text__count(c->count).s, gp_text__bytes(c->bytes).s, gp_text__duration(c->total_ns / 1e9).s,
			gp_text__link_rate(copy_link(links, c), c->total_ns ? (double)c->bytes * 1e9 / (double)c->total_ns : -1).s,
			gp_text__link_rate(copy_link(links, c), c->peak_gbps > 0 ? gbps_bytes_per_s(c->peak_gbps) : -1).s);
		if (c->total_ns)
			gp_text__suspect_add(&sus, copy_link(links, c), "bandwidth", (double)c->bytes * 1e9 / (double)c->total_ns);
		if (c->peak_gbps > 0)
			gp_text__suspect_add(&sus, copy_link(links, c), "fastest", gbps_bytes_per_s(c->peak_gbps));
		gp_text__suspect_line(f, "    ", &sus);
	}
	for (size_t i = 0; i < d->nr_memsets; i++) {
		const struct gt_memset_snap *m = &d->memsets[i];

		if (m->pid != pid)
			continue;
		fprintf(f, "  memset gpu%-10u %s, %s in %s (%s)\n", m->device, gp_text__n(m->count, "memset", "memsets").s,
			gp_text__bytes(m->bytes).s, gp_text__duration(m->total_ns / 1e9).s,
			gp_text__rate(m->total_ns ? (double)m->bytes * 1e9 / (double)m->total_ns : -1).s);
	}
}

static void text_colls(FILE *f, const struct gt_snap_data *d, uint32_t pid, const struct bw_links *links)
{
	bool head = false;

	for (size_t i = 0; i < d->nr_colls; i++) {
		const struct gt_coll_snap *c = &d->colls[i];
		struct gp_text_suspect sus = { 0 };
		char comm[24], rank[24];
		const struct bw_link *l = bw_links__for_ranks(links, (int)c->nranks);
		/* a busbw above the link's limit: its algbw is the same window's, suspect too */
		double bus = c->size ? gbps_bytes_per_s(c->busbw_gbps) : -1;
		double alg = bw_links__suspect(l, bus) ? bus : c->size ? gbps_bytes_per_s(c->algbw_gbps) : -1;

		if (c->pid != pid)
			continue;
		if (!head) {
			fprintf(f, "  %-18s %-8s %-14s %-12s %-8s %-10s %-12s %-12s %-12s %s\n", "NCCL comm", "rank",
				"collective", "size", "calls", "mean", "algbw", "busbw", "best busbw", "timed by");
			head = true;
		}
		snprintf(comm, sizeof(comm), "%016" PRIx64, c->comm_hash);
		snprintf(rank, sizeof(rank), "%u/%u", c->rank, c->nranks);
		fprintf(f, "  %-18s %-8s %-14s %-12s %-8s %-10s %-12s %-12s %-12s %s\n", comm, rank, gt_coll_name(c->fn),
			c->size ? gp_text__bytes(c->size).s : "?", gp_text__count(c->calls).s,
			gp_text__duration(c->total_ns / 1e9 / (double)c->calls).s,
			gp_text__link_rate(l, alg).s, gp_text__link_rate(l, bus).s,
			gp_text__link_rate(l, c->size ? gbps_bytes_per_s(c->best_busbw_gbps) : -1).s,
			c->gpu_calls == c->calls ? "GPU" : c->gpu_calls ? "GPU and host" : "host");
		if (c->size) {
			gp_text__suspect_add(&sus, l, "busbw", bus);
			gp_text__suspect_add(&sus, l, "best busbw", gbps_bytes_per_s(c->best_busbw_gbps));
		}
		gp_text__suspect_line(f, "    ", &sus);
	}
}

static void text_lib(FILE *f, const char *what, const struct gt_lib_snap *l)
{
	if (!l->seen)
		return;
	fprintf(f, "  %s: %s, %s sent, %s not sent, %s lost by the source, %s of other kinds\n", what,
		gp_text__n(l->records, "record", "records").s, gp_text__count(l->sent).s,
		gp_text__count(l->send_dropped).s, gp_text__count(l->src_dropped).s, gp_text__count(l->unknown).s);
}

void gputime_report__text(FILE *f, const struct gp_snap *hdr)
{
	const struct gputime_snap *s = SNAP(hdr);
	bool all = gp_env_verbose(hdr->env);
	char tbuf[32];

	gp_text__clock(tbuf, sizeof(tbuf));
	fprintf(f, "[%s] gputime %s report (exact GPU times; channel: %s): %s\n", tbuf, gp_snap_kind_name(hdr->kind),
		s->channel, gp_text__n(s->d.nr_procs, "process", "processes").s);
	if (s->not_injected)
		fprintf(f, "  the command got no library: %s\n", s->not_injected);
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		const struct gt_proc_snap *p = &s->d.procs[i];
		char comm[GP_COMM_LEN * 4];

		snprintf(comm, sizeof(comm), "%s", p->comm[0] ? p->comm : "?");
		fprintf(f, "pid %u (%s)%s: %s, %s on the GPU; %s, %s; %s; %s\n", p->pid, comm, p->exited ? " exited" : "",
			gp_text__n(p->kernels, "kernel", "kernels").s, gp_text__duration(p->kernel_ns / 1e9).s,
			gp_text__n(p->copies, "copy", "copies").s, gp_text__bytes(p->copy_bytes).s,
			gp_text__n(p->memsets, "memset", "memsets").s, gp_text__n(p->colls, "NCCL collective", "NCCL collectives").s);
		text_kernels(f, &s->d, p->pid, all);
		text_copies(f, &s->d, p->pid, &s->links);
		text_colls(f, &s->d, p->pid, &s->links);
		text_lib(f, "CUPTI", &p->lib[GPT_SRC_CUPTI]);
		text_lib(f, "NCCL profiler", &p->lib[GPT_SRC_NCCL]);
		if (p->unnamed_kernels)
			fprintf(f, "  %s whose name never came\n", gp_text__n(p->unnamed_kernels, "kernel", "kernels").s);
	}
	if (s->d.nr_copies || s->d.nr_colls)
		fprintf(f, "Link limits (one direction; a figure above its limit is printed as suspect): host-GPU %s; "
			   "GPU-GPU %s; within a GPU %s\n", gp_text__link(&s->links.host).s, gp_text__link(&s->links.peer).s,
			gp_text__link(&s->links.local).s);
	if (!s->d.nr_procs)
		fprintf(f, "No exact GPU time received (a process sends once it calls cuInit, or creates an NCCL communicator).\n");
	for (int i = 0; i < GT_D__COUNT; i++)
		if (s->d.drops[i])
			fprintf(f, "refused or not counted (%s): %s\n", gt_drop_name(i), gp_text__count(s->d.drops[i]).s);
	gp_drops__text(f, hdr, all);
}

/* ---- JSON ---- */

static json_object *j_u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

static json_object *j_real(double v)
{
	return json_object_new_double(v);
}

static json_object *j_dims(const uint32_t *d)
{
	json_object *a = json_object_new_array();

	for (int i = 0; i < 3; i++)
		json_object_array_add(a, json_object_new_int64(d[i]));
	return a;
}

static json_object *j_lib(const struct gt_lib_snap *l)
{
	json_object *o;

	if (!l->seen)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "records", j_u64(l->records));
	json_object_object_add(o, "sent", j_u64(l->sent));
	json_object_object_add(o, "not_sent", j_u64(l->send_dropped));
	json_object_object_add(o, "source_lost", j_u64(l->src_dropped));
	json_object_object_add(o, "other_kinds", j_u64(l->unknown));
	return o;
}

/*
 * Copies' and collectives' GB/s above their link's limit (lib/links.h) are null, the
 * figure under the row's "suspect" with the limit (as --bandwidth-util's copies); a
 * collective's algbw goes with its busbw (one window).
 */
static json_object *j_proc(const struct gt_snap_data *d, const struct gt_proc_snap *p, const struct bw_links *links)
{
	json_object *o = json_object_new_object(), *ks = json_object_new_array(), *cs = json_object_new_array(),
		    *ms = json_object_new_array(), *ns = json_object_new_array();

	json_object_object_add(o, "pid", json_object_new_int64(p->pid));
	json_object_object_add(o, "comm", json_object_new_string(p->comm));
	json_object_object_add(o, "exited", json_object_new_boolean(p->exited));
	json_object_object_add(o, "datagrams", j_u64(p->datagrams));
	json_object_object_add(o, "records", j_u64(p->records));
	for (size_t i = 0; i < d->nr_kernels; i++) {
		const struct gt_kernel_snap *k = &d->kernels[i];
		json_object *x;

		if (k->pid != p->pid)
			continue;
		x = json_object_new_object();
		json_object_object_add(x, "name", k->name ? json_object_new_string(k->name) : NULL);
		json_object_object_add(x, "grid", j_dims(k->grid));
		json_object_object_add(x, "block", j_dims(k->block));
		json_object_object_add(x, "launches", j_u64(k->count));
		json_object_object_add(x, "gpu_ns", j_u64(k->total_ns));
		json_object_object_add(x, "min_ns", j_u64(k->min_ns));
		json_object_object_add(x, "max_ns", j_u64(k->max_ns));
		json_object_array_add(ks, x);
	}
	for (size_t i = 0; i < d->nr_copies; i++) {
		const struct gt_copy_snap *c = &d->copies[i];
		json_object *x, *sus;

		if (c->pid != p->pid)
			continue;
		x = json_object_new_object();
		json_object_object_add(x, "kind", json_object_new_string(gt_copy_kind_name(c->kind)));
		json_object_object_add(x, "device", json_object_new_int64(c->device));
		json_object_object_add(x, "src_gpu", c->src_dev == GPT_NO_DEVICE ? NULL : json_object_new_int64(c->src_dev));
		json_object_object_add(x, "dst_gpu", c->dst_dev == GPT_NO_DEVICE ? NULL : json_object_new_int64(c->dst_dev));
		json_object_object_add(x, "copies", j_u64(c->count));
		json_object_object_add(x, "bytes", j_u64(c->bytes));
		json_object_object_add(x, "gpu_ns", j_u64(c->total_ns));
		sus = json_object_new_object();
		gp_json__link_rate(x, "bandwidth_gbps", sus, "bandwidth_gbps", c->total_ns,
				   c->total_ns ? (double)c->bytes / (double)c->total_ns : 0, 1e9, copy_link(links, c));
		gp_json__link_rate(x, "fastest_gbps", sus, "fastest_gbps", c->peak_gbps > 0, c->peak_gbps, 1e9,
				   copy_link(links, c));
		gp_json__add_suspect(x, sus, copy_link(links, c)); /* H2H: no limit, never suspect */
		json_object_array_add(cs, x);
	}
	for (size_t i = 0; i < d->nr_memsets; i++) {
		const struct gt_memset_snap *m = &d->memsets[i];
		json_object *x;

		if (m->pid != p->pid)
			continue;
		x = json_object_new_object();
		json_object_object_add(x, "device", json_object_new_int64(m->device));
		json_object_object_add(x, "memsets", j_u64(m->count));
		json_object_object_add(x, "bytes", j_u64(m->bytes));
		json_object_object_add(x, "gpu_ns", j_u64(m->total_ns));
		json_object_array_add(ms, x);
	}
	for (size_t i = 0; i < d->nr_colls; i++) {
		const struct gt_coll_snap *c = &d->colls[i];
		const struct bw_link *l;
		json_object *x, *sus;
		char hash[24];

		if (c->pid != p->pid)
			continue;
		x = json_object_new_object();
		snprintf(hash, sizeof(hash), "%016" PRIx64, c->comm_hash);
		json_object_object_add(x, "comm_hash", json_object_new_string(hash));
		json_object_object_add(x, "rank", json_object_new_int64(c->rank));
		json_object_object_add(x, "nranks", json_object_new_int64(c->nranks));
		json_object_object_add(x, "op", json_object_new_string(gt_coll_name(c->fn)));
		json_object_object_add(x, "count", j_u64(c->count));
		json_object_object_add(x, "type_size", j_u64(c->type_size));
		json_object_object_add(x, "size", c->size ? j_u64(c->size) : NULL);
		json_object_object_add(x, "calls", j_u64(c->calls));
		json_object_object_add(x, "gpu_timed_calls", j_u64(c->gpu_calls));
		json_object_object_add(x, "total_ns", j_u64(c->total_ns));
		json_object_object_add(x, "min_ns", j_u64(c->min_ns));
		l = bw_links__for_ranks(links, (int)c->nranks);
		sus = json_object_new_object();
		json_object_object_add(x, "algbw_gbps", c->size && !bw_links__suspect(l, gbps_bytes_per_s(c->busbw_gbps)) ?
							j_real(c->algbw_gbps) : NULL);
		gp_json__link_rate(x, "busbw_gbps", sus, "busbw_gbps", c->size, c->busbw_gbps, 1e9, l);
		gp_json__link_rate(x, "best_busbw_gbps", sus, "best_busbw_gbps", c->size, c->best_busbw_gbps, 1e9, l);
		gp_json__add_suspect(x, sus, l);
		json_object_array_add(ns, x);
	}
	json_object_object_add(o, "kernels", ks);
	json_object_object_add(o, "copies", cs);
	json_object_object_add(o, "memsets", ms);
	json_object_object_add(o, "collectives", ns);
	json_object_object_add(o, "cupti", j_lib(&p->lib[GPT_SRC_CUPTI]));
	json_object_object_add(o, "nccl_profiler", j_lib(&p->lib[GPT_SRC_NCCL]));
	json_object_object_add(o, "unnamed_kernels", j_u64(p->unnamed_kernels));
	return o;
}

void gputime_report__json(json_object *o, const struct gp_snap *hdr)
{
	const struct gputime_snap *s = SNAP(hdr);
	json_object *procs = json_object_new_array(), *refused = json_object_new_object();

	for (size_t i = 0; i < s->d.nr_procs; i++)
		json_object_array_add(procs, j_proc(&s->d, &s->d.procs[i], &s->links));
	json_object_object_add(o, "processes", procs);
	json_object_object_add(o, "channel", json_object_new_string(s->channel));
	for (int i = 0; i < GT_D__COUNT; i++)
		json_object_object_add(refused, gt_drop_name(i), j_u64(s->d.drops[i]));
	json_object_object_add(o, "refused", refused);
	json_object_object_add(o, "links", gp_json__links(&s->links));
}

/* ---- Prometheus ---- */

static const char *const fams[] = {
	"gpuprobe_gputime_kernels_total", "gpuprobe_gputime_kernel_seconds_total",
	"gpuprobe_gputime_copy_bytes_total", "gpuprobe_gputime_copy_seconds_total",
	"gpuprobe_gputime_nccl_calls_total", "gpuprobe_gputime_nccl_seconds_total",
	"gpuprobe_gputime_nccl_bus_bytes_total",
};

int gputime_report__prom(struct prom_out *p, const struct gp_snap *hdr)
{
	const struct gputime_snap *s = SNAP(hdr);

	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
		prom__family(p, fams[f]);
	prom__cap(p, "gpuprobe_gputime_kernels_total", KERNEL_SERIES);
	prom__cap(p, "gpuprobe_gputime_kernel_seconds_total", KERNEL_SERIES);
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		const struct gp_snap_pid *proc = &hdr->pids[i];
		uint32_t pid = s->d.procs[i].pid;

		for (size_t k = 0; k < s->d.nr_kernels; k++) {
			const struct gt_kernel_snap *x = &s->d.kernels[k];
			const char *l[] = { "kernel", x->name ? x->name : "unknown", NULL };

			if (x->pid != pid)
				continue;
			prom__u64(p, "gpuprobe_gputime_kernels_total", proc, l, x->count);
			prom__secs(p, "gpuprobe_gputime_kernel_seconds_total", proc, l, x->total_ns / 1e9);
		}
		for (size_t k = 0; k < s->d.nr_copies; k++) {
			const struct gt_copy_snap *c = &s->d.copies[k];
			char src[16], dst[16];
			const char *l[] = { "direction", gt_copy_kind_name(c->kind), "src_gpu", src, "dst_gpu", dst, NULL };

			if (c->pid != pid)
				continue;
			snprintf(src, sizeof(src), "%u", c->src_dev != GPT_NO_DEVICE ? c->src_dev : c->device);
			snprintf(dst, sizeof(dst), "%u", c->dst_dev != GPT_NO_DEVICE ? c->dst_dev : c->device);
			prom__u64(p, "gpuprobe_gputime_copy_bytes_total", proc, l, c->bytes);
			prom__secs(p, "gpuprobe_gputime_copy_seconds_total", proc, l, c->total_ns / 1e9);
		}
		for (size_t k = 0; k < s->d.nr_colls; k++) {
			const struct gt_coll_snap *c = &s->d.colls[k];
			char hash[24], rank[16], size[24];
			const char *l[] = { "comm_hash", hash, "rank", rank, "op", gt_coll_name(c->fn), "size", size, NULL };

			if (c->pid != pid)
				continue;
			snprintf(hash, sizeof(hash), "%016" PRIx64, c->comm_hash);
			snprintf(rank, sizeof(rank), "%u", c->rank);
			snprintf(size, sizeof(size), "%" PRIu64, c->size);
			prom__u64(p, "gpuprobe_gputime_nccl_calls_total", proc, l, c->calls);
			prom__secs(p, "gpuprobe_gputime_nccl_seconds_total", proc, l, c->total_ns / 1e9);
			prom__u64(p, "gpuprobe_gputime_nccl_bus_bytes_total", proc, l,
				  (uint64_t)((double)c->size * (double)c->calls * gt_busbw_factor(c->fn, c->nranks)));
		}
	}
	return 0;
}
