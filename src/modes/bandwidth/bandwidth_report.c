/* SPDX-License-Identifier: BSD-3-Clause */
/* --bandwidth-util's renderers: text, JSON and Prometheus, from a snapshot only. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "bandwidth_mode.h"
#include "json.h"
#include "prom.h"
#include "text.h"

#define SNAP(s) ((const struct bw_snap *)(s))

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static double pinned_rate(const struct bw_stat *x)
{
	return x->sync_ns > x->pageable_sync_ns ?
	       (double)(x->sync_bytes - x->pageable_sync_bytes) / secs(x->sync_ns - x->pageable_sync_ns) : 0;
}

static double pageable_rate(const struct bw_stat *x)
{
	return x->pageable_sync_ns ? (double)x->pageable_sync_bytes / secs(x->pageable_sync_ns) : 0;
}

static void text_proc(FILE *f, const struct bw_snap_proc *p)
{
	fprintf(f, "PID %u (%s)%s\n", p->pid, p->comm, p->exec ? " before its exec" : p->exited ? " exited" : "");
	if (!p->nr_stats)
		return;
	fprintf(f, "  %-4s %-5s %8s %14s %10s %12s %12s %12s %10s\n", "GPU", "DIR", "COPIES", "BYTES",
		"SYNC_S", "PINNED_MiB/s", "PAGED_MiB/s", "ASYNC_S<=", "PAGEABLE");
	for (size_t s = 0; s < p->nr_stats; s++) {
		const struct bw_stat *x = &p->stats[s];
		char gpu[16];

		snprintf(gpu, sizeof(gpu), x->gpu < 0 ? "-" : "%d", x->gpu);
		fprintf(f, "  %-4s %-5s %8" PRIu64 " %14" PRIu64 " %10.6f %12.1f %12.1f %12.6f %10" PRIu64 "\n",
			gpu, bw_dir_name(x->dir), x->copies, x->bytes, secs(x->sync_ns),
			pinned_rate(x) / 1048576.0, pageable_rate(x) / 1048576.0, secs(x->async_ns),
			x->pageable_copies);
	}
	for (size_t s = 0; s < p->nr_stats; s++) {
		const struct bw_stat *x = &p->stats[s];

		if (!x->sync_copies)
			continue;
		if (x->gpu < 0)
			fprintf(f, "  %s synchronous copy bandwidth:\n", bw_dir_name(x->dir));
		else
			fprintf(f, "  GPU %d %s synchronous copy bandwidth:\n", x->gpu, bw_dir_name(x->dir));
		gp_text__log2_hist(f, x->rate_hist, BW_HIST_SLOTS, "MiB/s");
	}
	if (p->unsynced)
		fprintf(f, "  %" PRIu64 " asynchronous copies not yet covered by a synchronization\n", p->unsynced);
}

void bw_report__text(FILE *f, const struct gp_snap *hdr, struct gp_run *run)
{
	const struct bw_snap *s = SNAP(hdr);
	char tbuf[32], hb[32];

	(void)run;
	gp_text__clock(tbuf, sizeof(tbuf));
	fprintf(f, "[%s] bandwidth %s report: %zu process%s\n", tbuf, hdr->kind, s->d.nr_procs,
		s->d.nr_procs == 1 ? "" : "es");
	for (size_t i = 0; i < s->d.nr_procs; i++)
		text_proc(f, &s->d.procs[i]);
	gp_text__bytes(s->small_bytes, hb, sizeof(hb));
	if (s->min_bytes)
		fprintf(f, "Small copies (< %" PRIu64 " bytes, not counted above): %" PRIu64 " (%s); ",
			s->min_bytes, s->small_copies, hb);
	fprintf(f, "zero-byte copies %" PRIu64 ", failed %" PRIu64 "\n", s->zero_copies, s->failed_copies);
	gp_drops__text(f, hdr);
}

static json_object *dbl_or_null(bool ok, double v)
{
	return ok ? json_object_new_double(v) : NULL;
}

static json_object *json_stat(const struct bw_stat *x)
{
	json_object *t = json_object_new_object();

	json_object_object_add(t, "gpu", x->gpu < 0 ? NULL : json_object_new_int(x->gpu));
	json_object_object_add(t, "direction", json_object_new_string(bw_dir_name(x->dir)));
	json_object_object_add(t, "copies", json_object_new_uint64(x->copies));
	json_object_object_add(t, "bytes", json_object_new_uint64(x->bytes));
	json_object_object_add(t, "sync_copies", json_object_new_uint64(x->sync_copies));
	json_object_object_add(t, "sync_bytes", json_object_new_uint64(x->sync_bytes));
	json_object_object_add(t, "sync_seconds", json_object_new_double(secs(x->sync_ns)));
	json_object_object_add(t, "bytes_per_second",
			       dbl_or_null(x->sync_ns, (double)x->sync_bytes / secs(x->sync_ns)));
	json_object_object_add(t, "pinned_bytes_per_second", dbl_or_null(x->sync_ns > x->pageable_sync_ns, pinned_rate(x)));
	json_object_object_add(t, "pageable_bytes_per_second", dbl_or_null(x->pageable_sync_ns, pageable_rate(x)));
	json_object_object_add(t, "async_copies", json_object_new_uint64(x->async_copies));
	json_object_object_add(t, "async_bytes", json_object_new_uint64(x->async_bytes));
	json_object_object_add(t, "async_synced_copies", json_object_new_uint64(x->async_done_copies));
	json_object_object_add(t, "async_seconds_upper_bound", json_object_new_double(secs(x->async_ns)));
	json_object_object_add(t, "async_bytes_per_second_lower_bound",
			       dbl_or_null(x->async_ns, (double)x->async_done_bytes / secs(x->async_ns)));
	json_object_object_add(t, "pageable_copies", json_object_new_uint64(x->pageable_copies));
	json_object_object_add(t, "pageable_bytes", json_object_new_uint64(x->pageable_bytes));
	json_object_object_add(t, "size_hist_bytes", gp_json__log2_hist(x->size_hist, BW_HIST_SLOTS));
	json_object_object_add(t, "sync_rate_hist_mib_s", gp_json__log2_hist(x->rate_hist, BW_HIST_SLOTS));
	return t;
}

void bw_report__json(json_object *o, const struct gp_snap *hdr, struct gp_run *run)
{
	const struct bw_snap *s = SNAP(hdr);
	json_object *arr = json_object_new_array();

	(void)run;
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		const struct bw_snap_proc *p = &s->d.procs[i];
		json_object *po = json_object_new_object(), *ts = json_object_new_array();

		json_object_object_add(po, "pid", json_object_new_int64(p->pid));
		json_object_object_add(po, "comm", json_object_new_string(p->comm));
		json_object_object_add(po, "exited", json_object_new_boolean(p->exited));
		json_object_object_add(po, "exec", json_object_new_boolean(p->exec));
		for (size_t j = 0; j < p->nr_stats; j++)
			json_object_array_add(ts, json_stat(&p->stats[j]));
		json_object_object_add(po, "transfers", ts);
		json_object_object_add(po, "unsynced_async_copies", json_object_new_uint64(p->unsynced));
		json_object_array_add(arr, po);
	}
	json_object_object_add(o, "processes", arr);
	json_object_object_add(o, "min_bytes", json_object_new_uint64(s->min_bytes));
	json_object_object_add(o, "small_copies", json_object_new_uint64(s->small_copies));
	json_object_object_add(o, "small_bytes", json_object_new_uint64(s->small_bytes));
	json_object_object_add(o, "zero_byte_copies", json_object_new_uint64(s->zero_copies));
	json_object_object_add(o, "failed_copies", json_object_new_uint64(s->failed_copies));
}

int bw_report__prom(struct prom_out *p, const struct gp_snap *hdr, struct gp_run *run)
{
	static const char *const fams[] = {
		"gpuprobe_cuda_memcpy_calls_total", "gpuprobe_cuda_memcpy_bytes_total",
		"gpuprobe_cuda_memcpy_sync_seconds_total", "gpuprobe_cuda_memcpy_async_upper_bound_seconds_total",
		"gpuprobe_cuda_memcpy_pageable_bytes_total",
	};
	const struct bw_snap *s = SNAP(hdr);
	/* one per process: src/out/prom.c tells a render's processes apart by these */
	struct gp_snap_pid *pids = calloc(s->d.nr_procs + 1, sizeof(*pids));

	(void)run;
	if (!pids)
		return -ENOMEM;
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
		prom__family(p, fams[f]);
	for (size_t i = 0; i < s->d.nr_procs; i++) {
		const struct bw_snap_proc *sp = &s->d.procs[i];
		struct gp_snap_pid *pp = &pids[i];

		/* a process without copies (contexts and synchronizes only) has no series */
		*pp = (struct gp_snap_pid){ .pid = sp->pid, .exited = sp->exited };
		memcpy(pp->comm, sp->comm, sizeof(pp->comm));
		for (size_t j = 0; j < sp->nr_stats; j++) {
			const struct bw_stat *x = &sp->stats[j];
			char gpu[16] = "";
			const char *kv[] = { "gpu", gpu, "direction", bw_dir_name(x->dir), NULL };

			if (x->gpu >= 0)
				snprintf(gpu, sizeof(gpu), "%d", x->gpu);
			prom__u64(p, fams[0], pp, kv, x->copies);
			prom__u64(p, fams[1], pp, kv, x->bytes);
			prom__secs(p, fams[2], pp, kv, secs(x->sync_ns));
			prom__secs(p, fams[3], pp, kv, secs(x->async_ns));
			prom__u64(p, fams[4], pp, kv, x->pageable_bytes);
		}
	}
	prom__family(p, "gpuprobe_cuda_memcpy_small_calls_total");
	prom__u64(p, "gpuprobe_cuda_memcpy_small_calls_total", NULL, NULL, s->small_copies);
	free(pids); /* prom.c tells records apart by pointer while they are added, no later */
	return 0;
}
