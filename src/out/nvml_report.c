/* SPDX-License-Identifier: BSD-3-Clause */
/* NVML's figures in /metrics, the text report and JSON (nvml_report.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "out/json.h"
#include "core/mode.h"
#include "core/nvml.h"
#include "out/nvml_report.h"
#include "core/options.h"
#include "out/prom.h"
#include "out/hits.h"
#include "core/ptree.h"
#include "core/run.h"
#include "out/text.h"
#include "lib/u64map.h"
#include "lib/util.h"

/* nvmlClocksThrottleReason bits (nvml.h), named as metric labels and in reports */
static const struct {
	uint64_t bit;
	const char *name;
} throttles[] = {
	{ 0x1, "gpu_idle" },
	{ 0x2, "applications_clocks_setting" },
	{ 0x4, "sw_power_cap" },
	{ 0x8, "hw_slowdown" },
	{ 0x10, "sync_boost" },
	{ 0x20, "sw_thermal_slowdown" },
	{ 0x40, "hw_thermal_slowdown" },
	{ 0x80, "hw_power_brake_slowdown" },
	{ 0x100, "display_clock_setting" },
};
#define NR_THROTTLES (sizeof(throttles) / sizeof(throttles[0]))

/* The process names of the last render: prom_out keeps pointers to them until it folds. */
static struct {
	struct gp_snap_pid *v;
	size_t n;
} named;

/* One gp_snap_pid per PID of the snapshot (named; a process gone has none: NULL). */
static int name_procs(const struct gp_nvml_snap *s, const struct gp_snap_pid **of)
{
	free(named.v);
	named.v = calloc(s->nr_procs ? s->nr_procs : 1, sizeof(*named.v));
	named.n = 0;
	if (!named.v)
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_procs; i++) {
		size_t j;

		for (j = 0; j < named.n && named.v[j].pid != s->procs[i].pid; j++)
			;
		if (j == named.n) {
			named.v[j].pid = s->procs[i].pid;
			(void)gp_proc_comm(s->procs[i].pid, named.v[j].comm, sizeof(named.v[j].comm)); /* "" when gone */
			named.n++;
		}
		of[i] = named.v[j].comm[0] ? &named.v[j] : NULL;
	}
	return 0;
}

static void fam(struct prom_out *p, const char *name)
{
	prom__family(p, name);
}

/* ECC, retired pages, remapped rows, NVLink: each family only where the GPU gives it */
static void health_prom(struct prom_out *p, const struct gp_nvml_gpu *g, const char *idx)
{
	for (int i = 0; (g->have & GP_NVH_ECC) && i < 2; i++) {
		const char *k[] = { "gpu", idx, "uuid", g->uuid, "type", i ? "uncorrected" : "corrected", NULL };

		prom__u64(p, "gpuprobe_gpu_ecc_errors_total", NULL, k, i ? g->ecc_vol_unc : g->ecc_vol_corr);
		prom__u64(p, "gpuprobe_gpu_ecc_errors_lifetime", NULL, k, i ? g->ecc_agg_unc : g->ecc_agg_corr);
	}
	for (int i = 0; (g->have & GP_NVH_RETIRED) && i < 2; i++) {
		const char *k[] = { "gpu", idx, "uuid", g->uuid, "cause", i ? "double_bit" : "multiple_single_bit", NULL };

		prom__u64(p, "gpuprobe_gpu_retired_pages", NULL, k, i ? g->retired_dbe : g->retired_sbe);
	}
	for (int i = 0; (g->have & GP_NVH_REMAPPED) && i < 2; i++) {
		const char *k[] = { "gpu", idx, "uuid", g->uuid, "type", i ? "uncorrected" : "corrected", NULL };

		prom__u64(p, "gpuprobe_gpu_remapped_rows", NULL, k, i ? g->remap_unc : g->remap_corr);
	}
	if (g->have & GP_NVH_REMAPPED) {
		const char *k[] = { "gpu", idx, "uuid", g->uuid, NULL };

		prom__u64(p, "gpuprobe_gpu_row_remap_pending", NULL, k, g->remap_pending);
		prom__u64(p, "gpuprobe_gpu_row_remap_failed", NULL, k, g->remap_failed);
	}
	for (int d = 0; (g->have & GP_NVH_NVLINK) && d < 2; d++) {
		const char *k[] = { "gpu", idx, "uuid", g->uuid, "direction", d ? "rx" : "tx", NULL };

		prom__u64(p, "gpuprobe_gpu_nvlink_bytes_total", NULL, k, d ? g->nvlink_rx_bytes : g->nvlink_tx_bytes);
	}
}

static void gpu_prom(struct prom_out *p, const struct gp_nvml_gpu *g)
{
	char idx[16];
	const char *kv[] = { "gpu", idx, "uuid", g->uuid, NULL };

	snprintf(idx, sizeof(idx), "%u", g->index);
	{
		const char *info[] = { "gpu", idx, "uuid", g->uuid, "name", g->name, "mig", g->mig ? "1" : "0", NULL };

		prom__u64(p, "gpuprobe_gpu_info", NULL, info, 1);
	}
	if (g->have & GP_NVH_UTIL) {
		prom__real(p, "gpuprobe_gpu_utilization_ratio", NULL, kv, g->util_gpu / 100.0);
		prom__real(p, "gpuprobe_gpu_memory_utilization_ratio", NULL, kv, g->util_mem / 100.0);
	}
	if (g->have & GP_NVH_MEMORY) {
		prom__u64(p, "gpuprobe_gpu_memory_used_bytes", NULL, kv, g->mem_used);
		prom__u64(p, "gpuprobe_gpu_memory_total_bytes", NULL, kv, g->mem_total);
	}
	if (g->have & GP_NVH_POWER)
		prom__real(p, "gpuprobe_gpu_power_watts", NULL, kv, g->power_w);
	if (g->have & GP_NVH_ENERGY)
		prom__real(p, "gpuprobe_gpu_energy_joules_total", NULL, kv, (double)g->energy_mj / 1000.0);
	if (g->have & GP_NVH_TEMP)
		prom__u64(p, "gpuprobe_gpu_temperature_celsius", NULL, kv, g->temp_c);
	for (int c = 0; c < 2; c++) {
		const char *ck[] = { "gpu", idx, "uuid", g->uuid, "clock", c ? "memory" : "sm", NULL };

		if (g->have & (c ? GP_NVH_CLOCK_MEM : GP_NVH_CLOCK_SM))
			prom__u64(p, "gpuprobe_gpu_clock_hertz", NULL, ck,
				  (uint64_t)(c ? g->clock_mem_mhz : g->clock_sm_mhz) * 1000000ULL);
	}
	for (size_t t = 0; (g->have & GP_NVH_THROTTLE) && t < NR_THROTTLES; t++) {
		const char *tk[] = { "gpu", idx, "uuid", g->uuid, "reason", throttles[t].name, NULL };

		prom__u64(p, "gpuprobe_gpu_clocks_throttled", NULL, tk, !!(g->throttle & throttles[t].bit));
	}
	for (int d = 0; d < 2; d++) {
		const char *dk[] = { "gpu", idx, "uuid", g->uuid, "direction", d ? "rx" : "tx", NULL };

		if (g->have & (d ? GP_NVH_PCIE_RX : GP_NVH_PCIE_TX))
			prom__u64(p, "gpuprobe_gpu_pcie_throughput_bytes", NULL, dk,
				  (d ? g->pcie_rx_kbs : g->pcie_tx_kbs) * 1024ULL);
	}
	health_prom(p, g, idx);
	for (unsigned int m = 0; m < g->nr_migs; m++) {
		const struct gp_nvml_mig *mi = &g->migs[m];
		char gi[16], ci[16];
		const char *k[] = { "gpu", idx, "uuid", g->uuid, "gi", gi, "ci", ci, "mig_uuid", mi->uuid, NULL };

		snprintf(gi, sizeof(gi), "%u", mi->gi);
		snprintf(ci, sizeof(ci), "%u", mi->ci);
		if (!mi->have_mem)
			continue;
		prom__u64(p, "gpuprobe_gpu_mig_memory_used_bytes", NULL, k, mi->mem_used);
		prom__u64(p, "gpuprobe_gpu_mig_memory_total_bytes", NULL, k, mi->mem_total);
	}
	for (unsigned int x = 0; x < g->nr_xids; x++) {
		char code[24];
		const char *xk[] = { "gpu", idx, "uuid", g->uuid, "xid", code, NULL };

		snprintf(code, sizeof(code), "%" PRIu64, g->xids[x].code);
		prom__u64(p, "gpuprobe_gpu_xid_errors_total", NULL, xk, g->xids[x].count);
		prom__secs(p, "gpuprobe_gpu_xid_last_timestamp_seconds", NULL, xk, (double)g->xids[x].last_ns / 1e9);
	}
	if (g->xid_other) {
		const char *xk[] = { "gpu", idx, "uuid", g->uuid, "xid", "other", NULL };

		prom__u64(p, "gpuprobe_gpu_xid_errors_total", NULL, xk, g->xid_other);
	}
	{
		const char *ak[] = { "gpu", idx, "uuid", g->uuid, g->proc_util_unavailable ? "reason" : NULL,
				     g->proc_util_unavailable, NULL };

		prom__u64(p, "gpuprobe_gpu_process_utilization_available", NULL, ak, !g->proc_util_unavailable);
	}
}

static bool followed(const struct gp_run *run, uint32_t pid);

/* The processes on a GPU at its XIDs (the last GP_NVML_MAX_XID_EVENTS kept): per process,
 * GPU and code, the time of the latest, for the processes the run follows that are still
 * on a GPU (named: a process gone has no series). */
static void xid_procs_prom(struct prom_out *p, const struct gp_run *run, const struct gp_nvml_snap *s,
			   const struct gp_snap_pid **of)
{
	for (size_t i = s->nr_xids; i-- > 0;) { /* newest first: the first of each key is the latest */
		const struct gp_nvml_xid *x = &s->xids[i];

		for (unsigned int k = 0; k < x->nr_pids; k++) {
			const struct gp_snap_pid *who = NULL;
			bool dup = false;

			for (size_t j = 0; j < s->nr_procs && !who; j++)
				if (s->procs[j].pid == x->pids[k])
					who = of[j];
			for (size_t l = i + 1; l < s->nr_xids && !dup; l++) /* a newer one of the same key */
				for (unsigned int m = 0; m < s->xids[l].nr_pids && !dup; m++)
					dup = s->xids[l].pids[m] == x->pids[k] && s->xids[l].gpu == x->gpu &&
					      s->xids[l].code == x->code;
			if (!who || dup || !followed(run, x->pids[k]))
				continue;
			{
				char idx[16], code[24];
				const char *kv[] = { "gpu", idx, "uuid", s->gpus[x->gpu].uuid, "xid", code, NULL };

				snprintf(idx, sizeof(idx), "%u", s->gpus[x->gpu].index);
				snprintf(code, sizeof(code), "%" PRIu64, x->code);
				prom__secs(p, "gpuprobe_process_gpu_xid_last_timestamp_seconds", who, kv,
					   (double)x->time_ns / 1e9);
			}
		}
	}
}

static const char *const families[] = {
	"gpuprobe_nvml_state", "gpuprobe_nvml_reads_total", "gpuprobe_nvml_read_seconds_total",
	"gpuprobe_nvml_errors_total", "gpuprobe_nvml_functions_missing", "gpuprobe_gpu_info",
	"gpuprobe_gpu_utilization_ratio", "gpuprobe_gpu_memory_utilization_ratio", "gpuprobe_gpu_memory_used_bytes",
	"gpuprobe_gpu_memory_total_bytes", "gpuprobe_gpu_power_watts", "gpuprobe_gpu_energy_joules_total",
	"gpuprobe_gpu_temperature_celsius", "gpuprobe_gpu_clock_hertz", "gpuprobe_gpu_clocks_throttled",
	"gpuprobe_gpu_pcie_throughput_bytes", "gpuprobe_gpu_xid_last_timestamp_seconds",
	"gpuprobe_process_gpu_xid_last_timestamp_seconds", "gpuprobe_gpu_ecc_errors_total", "gpuprobe_gpu_ecc_errors_lifetime",
	"gpuprobe_gpu_retired_pages", "gpuprobe_gpu_remapped_rows", "gpuprobe_gpu_row_remap_pending",
	"gpuprobe_gpu_row_remap_failed", "gpuprobe_gpu_nvlink_bytes_total", "gpuprobe_gpu_mig_memory_used_bytes",
	"gpuprobe_gpu_mig_memory_total_bytes", "gpuprobe_process_gpu_mig_instance", "gpuprobe_gpu_xid_errors_total",
	"gpuprobe_gpu_process_utilization_available", "gpuprobe_process_gpu_sm_utilization_ratio",
	"gpuprobe_process_gpu_memory_utilization_ratio", "gpuprobe_process_gpu_memory_bytes", NULL,
};

/* Whether the run follows pid: node-wide every process; with --comm or --cgroup, those
 * its process tree follows. */
static bool followed(const struct gp_run *run, uint32_t pid)
{
	const struct pt_proc *pt;

	if (!gp_run__filters(run) || !gp_run__ptree(run))
		return true;
	pt = ptree__get(gp_run__ptree(run), pid);
	return pt && !pt->exited;
}

int gp_nvml_report__prom(struct prom_out *p, struct gp_run *run)
{
	struct gp_nvml *n = gp_run__nvml(run);
	struct gp_nvml_snap s;
	const struct gp_snap_pid **of = NULL;
	int r;

	for (int i = 0; families[i]; i++)
		fam(p, families[i]);
	if (!n) {
		const char *kv[] = { "state", "off", NULL };

		prom__u64(p, "gpuprobe_nvml_state", NULL, kv, 1);
		return 0;
	}
	r = gp_nvml__snapshot(n, &s);
	if (r)
		return r;
	{
		const char *kv[] = { "state", gp_nvml_state_name(s.state), NULL };

		prom__u64(p, "gpuprobe_nvml_state", NULL, kv, 1);
	}
	prom__u64(p, "gpuprobe_nvml_reads_total", NULL, NULL, s.rounds);
	prom__secs(p, "gpuprobe_nvml_read_seconds_total", NULL, NULL, s.sample_seconds);
	for (int f = 0; f < GP_NVML_FN__COUNT; f++) {
		const char *kv[] = { "function", gp_nvml_fn_name(f), NULL };

		prom__u64(p, "gpuprobe_nvml_errors_total", NULL, kv, s.fn_errors[f]);
		if (s.fn_missing[f])
			prom__u64(p, "gpuprobe_nvml_functions_missing", NULL, kv, 1);
	}
	for (unsigned int i = 0; i < s.nr_gpus; i++)
		gpu_prom(p, &s.gpus[i]);
	of = calloc(s.nr_procs ? s.nr_procs : 1, sizeof(*of));
	r = of ? name_procs(&s, of) : -ENOMEM;
	for (size_t i = 0; !r && i < s.nr_procs; i++) {
		const struct gp_nvml_proc *q = &s.procs[i];
		const struct gp_nvml_gpu *g = &s.gpus[q->gpu];
		char idx[16];
		const char *kv[] = { "gpu", idx, "uuid", g->uuid, NULL };

		if (!of[i] || !followed(run, q->pid)) /* gone before it was named: never under comm="" */
			continue;
		snprintf(idx, sizeof(idx), "%u", g->index);
		if (q->util_known) {
			prom__real(p, "gpuprobe_process_gpu_sm_utilization_ratio", of[i], kv, q->sm_util / 100.0);
			prom__real(p, "gpuprobe_process_gpu_memory_utilization_ratio", of[i], kv, q->mem_util / 100.0);
		}
		if (q->mem_known)
			prom__u64(p, "gpuprobe_process_gpu_memory_bytes", of[i], kv, q->mem_bytes);
		if (g->mig && q->gi != ~0U) {
			char gi[16], ci[16];
			const char *mk[] = { "gpu", idx, "uuid", g->uuid, "gi", gi, "ci", ci, NULL };

			snprintf(gi, sizeof(gi), "%u", q->gi);
			snprintf(ci, sizeof(ci), "%u", q->ci);
			prom__u64(p, "gpuprobe_process_gpu_mig_instance", of[i], mk, 1);
		}
	}
	if (!r)
		xid_procs_prom(p, run, &s, of);
	free(of);
	gp_nvml__snap_free(&s);
	return r;
}

/* ---- the CLI's report ---- */

/* A process the run was asked to follow (-p, or its process tree) though no call of it was
 * seen: its name into buf (from the tree, else /proc; "" when unknown), or NULL when the run
 * does not follow it. */
static const char *asked(const struct gp_run *run, uint32_t pid, char *buf, size_t len)
{
	const struct pt_proc *pt = gp_run__ptree(run) ? ptree__get(gp_run__ptree(run), pid) : NULL;

	if (pt && !pt->exited) {
		snprintf(buf, len, "%s", pt->comm);
		return buf;
	}
	for (int i = 0; i < gp_run__opts(run)->nr_pids; i++)
		if ((uint32_t)gp_run__opts(run)->pids[i] == pid) {
			if (gp_proc_comm(pid, buf, len))
				buf[0] = 0;
			return buf;
		}
	return NULL;
}

struct seen {
	struct u64map *comm;  /* pid -> its gp_snap_pid copy (the run's traced processes) */
	struct u64map *bytes; /* pid -> outstanding device bytes + 1 (0: none known) */
};

static void on_pid(void *ctx, const struct gp_snap_pid *p)
{
	struct seen *s = ctx;
	struct gp_snap_pid *c = malloc(sizeof(*c));

	if (!c)
		return;
	*c = *p;
	if (u64map__put(s->comm, p->pid, c))
		free(c);
}

static void on_counter(void *ctx, const struct gp_counter *c)
{
	struct seen *s = ctx;
	uintptr_t v;

	if (strcmp(c->track, GP_TRACK_MEMORY) || strcmp(c->series, "device") || c->value < 0)
		return;
	v = (uintptr_t)u64map__get(s->bytes, c->pid);
	u64map__put(s->bytes, c->pid, (void *)(uintptr_t)((v ? v - 1 : 0) + (uint64_t)c->value + 1));
}

static struct gp_str pct(double v)
{
	struct gp_str s;

	snprintf(s.s, sizeof(s.s), "%.0f %%", v);
	return s;
}

static void throttle_text(char *buf, size_t len, uint64_t bits)
{
	size_t used = 0;

	buf[0] = 0;
	for (size_t t = 0; t < NR_THROTTLES && used < len; t++)
		if (bits & throttles[t].bit)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", throttles[t].name);
	if (!buf[0])
		snprintf(buf, len, "none");
}

static void gpu_text(FILE *f, const struct gp_nvml_gpu *g)
{
	char thr[256];

	fprintf(f, "  GPU %u %s (%s)%s:", g->index, g->name, g->uuid, g->mig ? ", MIG mode" : "");
	if (g->have & GP_NVH_UTIL)
		fprintf(f, " %s busy, memory %s busy;", pct(g->util_gpu).s, pct(g->util_mem).s);
	if (g->have & GP_NVH_MEMORY)
		fprintf(f, " %s of %s used;", gp_text__bytes(g->mem_used).s, gp_text__bytes(g->mem_total).s);
	if (g->have & GP_NVH_POWER)
		fprintf(f, " %.0f W;", g->power_w);
	if (g->have & GP_NVH_ENERGY)
		fprintf(f, " %s J since the driver loaded;", gp_text__count(g->energy_mj / 1000).s);
	if (g->have & GP_NVH_TEMP)
		fprintf(f, " %u C;", g->temp_c);
	if (g->have & GP_NVH_CLOCK_SM)
		fprintf(f, " SM %s MHz,", gp_text__count(g->clock_sm_mhz).s);
	if (g->have & GP_NVH_CLOCK_MEM)
		fprintf(f, " memory %s MHz;", gp_text__count(g->clock_mem_mhz).s);
	if (g->have & GP_NVH_THROTTLE) {
		throttle_text(thr, sizeof(thr), g->throttle);
		fprintf(f, " clocks held back: %s;", thr);
	}
	if (g->have & (GP_NVH_PCIE_TX | GP_NVH_PCIE_RX))
		fprintf(f, " PCIe tx %s rx %s;", gp_text__rate(g->have & GP_NVH_PCIE_TX ? g->pcie_tx_kbs * 1024.0 : -1).s,
			gp_text__rate(g->have & GP_NVH_PCIE_RX ? g->pcie_rx_kbs * 1024.0 : -1).s);
	if (g->have & GP_NVH_NVLINK)
		fprintf(f, " NVLink tx %s rx %s since the driver loaded;", gp_text__bytes(g->nvlink_tx_bytes).s,
			gp_text__bytes(g->nvlink_rx_bytes).s);
	if (g->have & GP_NVH_ECC)
		fprintf(f, " ECC errors %s corrected, %s uncorrected (lifetime %s, %s);", gp_text__count(g->ecc_vol_corr).s,
			gp_text__count(g->ecc_vol_unc).s, gp_text__count(g->ecc_agg_corr).s, gp_text__count(g->ecc_agg_unc).s);
	if (g->have & GP_NVH_RETIRED)
		fprintf(f, " pages retired %s (single-bit) %s (double-bit);", gp_text__count(g->retired_sbe).s,
			gp_text__count(g->retired_dbe).s);
	if (g->have & GP_NVH_REMAPPED)
		fprintf(f, " rows remapped %s corrected, %s uncorrected%s%s;", gp_text__count(g->remap_corr).s,
			gp_text__count(g->remap_unc).s, g->remap_pending ? ", a remap pending (reset the GPU)" : "",
			g->remap_failed ? ", A REMAP FAILED" : "");
	fprintf(f, " %s\n", gp_text__n(g->xid_total, "XID error", "XID errors").s);
	if (g->proc_util_unavailable)
		fprintf(f, "    per-process utilization unavailable: %s\n", g->proc_util_unavailable);
	for (unsigned int m = 0; m < g->nr_migs; m++) {
		const struct gp_nvml_mig *mi = &g->migs[m];

		fprintf(f, "    MIG instance GI %u CI %u (%s):", mi->gi, mi->ci, mi->uuid);
		if (mi->have_mem)
			fprintf(f, " %s of %s used\n", gp_text__bytes(mi->mem_used).s, gp_text__bytes(mi->mem_total).s);
		else
			fprintf(f, " memory -\n");
	}
}

static void proc_text(FILE *f, const struct gp_nvml_snap *s, const struct gp_nvml_proc *q, const char *comm,
		      uintptr_t outstanding)
{
	const struct gp_nvml_gpu *g = &s->gpus[q->gpu];

	fprintf(f, "  PID %u (%s) on GPU %u", q->pid, comm, g->index);
	if (g->mig && q->gi != ~0U)
		fprintf(f, " MIG GI %u CI %u", q->gi, q->ci);
	fprintf(f, ":");
	if (q->util_known)
		fprintf(f, " SM %s, memory %s over the last %s (%s)", pct(q->sm_util).s, pct(q->mem_util).s,
			gp_text__duration(s->period_s).s, gp_text__n(q->samples, "NVML sample", "NVML samples").s);
	else
		fprintf(f, " utilization unavailable (%s)", g->proc_util_unavailable ? g->proc_util_unavailable : "not read");
	if (q->mem_known) {
		fprintf(f, "; driver-accounted memory %s", gp_text__bytes_exact(q->mem_bytes).s);
		if (outstanding) {
			uint64_t o = outstanding - 1;

			fprintf(f, ", gpuprobe's outstanding device bytes %s", gp_text__bytes_exact(o).s);
			if (q->mem_bytes > o)
				fprintf(f, ": %s that no allocation call seen explains (context, allocations before the attach)",
					gp_text__bytes(q->mem_bytes - o).s);
		}
	} else {
		fprintf(f, "; driver-accounted memory -");
	}
	fprintf(f, "\n");
}

static void xid_text(FILE *f, const struct gp_nvml_snap *s, const struct gp_nvml_xid *x, const struct u64map *traced)
{
	char when[32];
	struct tm tm;
	time_t t = (time_t)(x->time_ns / 1000000000ULL);

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	fprintf(f, "  XID %" PRIu64 " on GPU %u at %s; processes on it:", x->code, s->gpus[x->gpu].index, when);
	for (unsigned int i = 0; i < x->nr_pids; i++) {
		const struct gp_snap_pid *p = u64map__get(traced, x->pids[i]);

		/* a traced process named (as its own line names it), the others by PID */
		if (p)
			fprintf(f, " %u (%s)", x->pids[i], p->comm);
		else
			fprintf(f, " %u", x->pids[i]);
	}
	if (x->more_pids)
		fprintf(f, " and %u more", x->more_pids);
	fprintf(f, "%s\n", x->nr_pids ? "" : " none seen");
}

static json_object *opt_double(bool have, double v)
{
	return have ? json_object_new_double(v) : NULL;
}

static json_object *opt_u64(bool have, uint64_t v)
{
	return have ? json_object_new_uint64(v) : NULL;
}

static json_object *gpu_json(const struct gp_nvml_gpu *g)
{
	json_object *o = json_object_new_object(), *t = json_object_new_array(), *x = json_object_new_array();

	json_object_object_add(o, "index", json_object_new_int((int)g->index));
	json_object_object_add(o, "uuid", json_object_new_string(g->uuid));
	json_object_object_add(o, "name", json_object_new_string(g->name));
	json_object_object_add(o, "mig", json_object_new_boolean(g->mig));
	json_object_object_add(o, "utilization_pct", opt_u64(g->have & GP_NVH_UTIL, g->util_gpu));
	json_object_object_add(o, "memory_utilization_pct", opt_u64(g->have & GP_NVH_UTIL, g->util_mem));
	json_object_object_add(o, "memory_used_bytes", opt_u64(g->have & GP_NVH_MEMORY, g->mem_used));
	json_object_object_add(o, "memory_total_bytes", opt_u64(g->have & GP_NVH_MEMORY, g->mem_total));
	json_object_object_add(o, "power_watts", opt_double(g->have & GP_NVH_POWER, g->power_w));
	json_object_object_add(o, "energy_joules", opt_double(g->have & GP_NVH_ENERGY, g->energy_mj / 1000.0));
	json_object_object_add(o, "temperature_celsius", opt_u64(g->have & GP_NVH_TEMP, g->temp_c));
	json_object_object_add(o, "clock_sm_mhz", opt_u64(g->have & GP_NVH_CLOCK_SM, g->clock_sm_mhz));
	json_object_object_add(o, "clock_memory_mhz", opt_u64(g->have & GP_NVH_CLOCK_MEM, g->clock_mem_mhz));
	for (size_t i = 0; i < NR_THROTTLES; i++)
		if (g->throttle & throttles[i].bit)
			json_object_array_add(t, json_object_new_string(throttles[i].name));
	json_object_object_add(o, "clocks_throttled", (g->have & GP_NVH_THROTTLE) ? t : NULL);
	if (!(g->have & GP_NVH_THROTTLE))
		json_object_put(t);
	json_object_object_add(o, "pcie_tx_bytes_per_second", opt_u64(g->have & GP_NVH_PCIE_TX, g->pcie_tx_kbs * 1024ULL));
	json_object_object_add(o, "pcie_rx_bytes_per_second", opt_u64(g->have & GP_NVH_PCIE_RX, g->pcie_rx_kbs * 1024ULL));
	json_object_object_add(o, "nvlink_tx_bytes", opt_u64(g->have & GP_NVH_NVLINK, g->nvlink_tx_bytes));
	json_object_object_add(o, "nvlink_rx_bytes", opt_u64(g->have & GP_NVH_NVLINK, g->nvlink_rx_bytes));
	json_object_object_add(o, "ecc_corrected", opt_u64(g->have & GP_NVH_ECC, g->ecc_vol_corr));
	json_object_object_add(o, "ecc_uncorrected", opt_u64(g->have & GP_NVH_ECC, g->ecc_vol_unc));
	json_object_object_add(o, "ecc_corrected_lifetime", opt_u64(g->have & GP_NVH_ECC, g->ecc_agg_corr));
	json_object_object_add(o, "ecc_uncorrected_lifetime", opt_u64(g->have & GP_NVH_ECC, g->ecc_agg_unc));
	json_object_object_add(o, "retired_pages_single_bit", opt_u64(g->have & GP_NVH_RETIRED, g->retired_sbe));
	json_object_object_add(o, "retired_pages_double_bit", opt_u64(g->have & GP_NVH_RETIRED, g->retired_dbe));
	json_object_object_add(o, "remapped_rows_corrected", opt_u64(g->have & GP_NVH_REMAPPED, g->remap_corr));
	json_object_object_add(o, "remapped_rows_uncorrected", opt_u64(g->have & GP_NVH_REMAPPED, g->remap_unc));
	json_object_object_add(o, "row_remap_pending", (g->have & GP_NVH_REMAPPED) ? json_object_new_boolean(g->remap_pending) : NULL);
	json_object_object_add(o, "row_remap_failed", (g->have & GP_NVH_REMAPPED) ? json_object_new_boolean(g->remap_failed) : NULL);
	{
		json_object *mig = json_object_new_array();

		for (unsigned int m = 0; m < g->nr_migs; m++) {
			json_object *e = json_object_new_object();

			json_object_object_add(e, "gi", json_object_new_int64(g->migs[m].gi));
			json_object_object_add(e, "ci", json_object_new_int64(g->migs[m].ci));
			json_object_object_add(e, "uuid", json_object_new_string(g->migs[m].uuid));
			json_object_object_add(e, "memory_used_bytes", opt_u64(g->migs[m].have_mem, g->migs[m].mem_used));
			json_object_object_add(e, "memory_total_bytes", opt_u64(g->migs[m].have_mem, g->migs[m].mem_total));
			json_object_array_add(mig, e);
		}
		json_object_object_add(o, "mig_instances", mig);
	}
	json_object_object_add(o, "xid_errors", json_object_new_uint64(g->xid_total));
	for (unsigned int i = 0; i < g->nr_xids; i++) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "xid", json_object_new_uint64(g->xids[i].code));
		json_object_object_add(e, "count", json_object_new_uint64(g->xids[i].count));
		json_object_array_add(x, e);
	}
	json_object_object_add(o, "xid_counts", x);
	json_object_object_add(o, "xid_other", json_object_new_uint64(g->xid_other));
	json_object_object_add(o, "process_utilization_unavailable",
			       g->proc_util_unavailable ? json_object_new_string(g->proc_util_unavailable) : NULL);
	return o;
}

static json_object *proc_json(const struct gp_nvml_snap *s, const struct gp_nvml_proc *q, const char *comm,
			      uintptr_t outstanding)
{
	json_object *o = json_object_new_object();
	const struct gp_nvml_gpu *g = &s->gpus[q->gpu];

	json_object_object_add(o, "pid", json_object_new_int64(q->pid));
	json_object_object_add(o, "comm", json_object_new_string(comm));
	json_object_object_add(o, "gpu", json_object_new_int((int)g->index));
	json_object_object_add(o, "uuid", json_object_new_string(g->uuid));
	json_object_object_add(o, "sm_utilization_pct", opt_double(q->util_known, q->sm_util));
	json_object_object_add(o, "memory_utilization_pct", opt_double(q->util_known, q->mem_util));
	json_object_object_add(o, "utilization_samples", json_object_new_int64(q->samples));
	json_object_object_add(o, "utilization_unavailable",
			       q->util_known ? NULL : json_object_new_string(g->proc_util_unavailable ? g->proc_util_unavailable : "not read"));
	json_object_object_add(o, "driver_memory_bytes", opt_u64(q->mem_known, q->mem_bytes));
	json_object_object_add(o, "outstanding_device_bytes", opt_u64(outstanding != 0, outstanding - 1));
	json_object_object_add(o, "mig_gi", opt_u64(g->mig && q->gi != ~0U, q->gi));
	json_object_object_add(o, "mig_ci", opt_u64(g->mig && q->gi != ~0U, q->ci));
	return o;
}

static json_object *xid_json(const struct gp_nvml_snap *s, const struct gp_nvml_xid *x, const struct u64map *traced)
{
	json_object *o = json_object_new_object(), *pids = json_object_new_array(), *tr = json_object_new_array();

	json_object_object_add(o, "time_ns", json_object_new_uint64(x->time_ns));
	json_object_object_add(o, "gpu", json_object_new_int((int)s->gpus[x->gpu].index));
	json_object_object_add(o, "xid", json_object_new_uint64(x->code));
	for (unsigned int i = 0; i < x->nr_pids; i++)
		json_object_array_add(pids, json_object_new_int64(x->pids[i]));
	json_object_object_add(o, "pids", pids);
	for (unsigned int i = 0; i < x->nr_pids; i++) {
		const struct gp_snap_pid *p = u64map__get(traced, x->pids[i]);
		json_object *e;

		if (!p)
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "pid", json_object_new_int64(x->pids[i]));
		json_object_object_add(e, "comm", json_object_new_string(p->comm));
		json_object_array_add(tr, e);
	}
	json_object_object_add(o, "traced", tr);
	json_object_object_add(o, "more_pids", json_object_new_int64(x->more_pids));
	return o;
}

static void free_comm(void *v)
{
	free(v);
}

void gp_nvml_report__run(struct gp_run *run, enum gp_snap_kind kind)
{
	struct gp_nvml_snap s;
	struct seen seen = { u64map__new(), u64map__new() };
	FILE *f = gp_run__out(run);
	json_object *o = NULL, *gpus = NULL, *procs = NULL, *xids = NULL;
	size_t others = 0, listed = 0;

	if (!gp_run__nvml(run) || !seen.comm || !seen.bytes || gp_nvml__snapshot(gp_run__nvml(run), &s))
		goto cleanup;
	gp_hits__run(run, on_pid, &seen);
	gp_run__counters(run, on_counter, &seen);
	if (gp_run__opts(run)->json) {
		o = json_object_new_object();
		gpus = json_object_new_array(), procs = json_object_new_array(), xids = json_object_new_array();
		json_object_object_add(o, "mode", json_object_new_string("nvml"));
		json_object_object_add(o, "report", json_object_new_string(gp_snap_kind_name(kind)));
		json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
		json_object_object_add(o, "state", json_object_new_string(gp_nvml_state_name(s.state)));
		json_object_object_add(o, "reason", s.why[0] ? json_object_new_string(s.why) : NULL);
		json_object_object_add(o, "interval_s", json_object_new_double(s.period_s));
		json_object_object_add(o, "reads", json_object_new_uint64(s.rounds));
		{
			json_object *e = json_object_new_object(), *m = json_object_new_array();

			for (int i = 0; i < GP_NVML_FN__COUNT; i++) {
				if (s.fn_errors[i])
					json_object_object_add(e, gp_nvml_fn_name(i), json_object_new_uint64(s.fn_errors[i]));
				if (s.fn_missing[i])
					json_object_array_add(m, json_object_new_string(gp_nvml_fn_name(i)));
			}
			json_object_object_add(o, "errors", e);
			json_object_object_add(o, "missing_functions", m);
		}
	} else {
		if (s.state == GP_NVML_LOADED || s.state == GP_NVML_STARTING)
			fprintf(f, "nvml: %s; %s, read every %s\n", gp_nvml_state_name(s.state),
				gp_text__n(s.nr_gpus, "GPU", "GPUs").s, gp_text__duration(s.period_s).s);
		else
			fprintf(f, "nvml: not read (%s): %s\n", gp_nvml_state_name(s.state), s.why);
		for (int i = 0; i < GP_NVML_FN__COUNT; i++)
			if (s.fn_errors[i] && (s.fn_missing[i] || gp_run__opts(run)->verbose || s.state == GP_NVML_LOADED))
				fprintf(f, "  %s: %s%s\n", gp_nvml_fn_name(i), s.fn_missing[i] ? "missing from the library" :
					gp_text__n(s.fn_errors[i], "failed call", "failed calls").s,
					s.fn_missing[i] ? "" : " (its figure left out)");
	}
	for (unsigned int i = 0; i < s.nr_gpus; i++) {
		if (o)
			json_object_array_add(gpus, gpu_json(&s.gpus[i]));
		else
			gpu_text(f, &s.gpus[i]);
	}
	for (size_t i = 0; i < s.nr_procs; i++) {
		const struct gp_snap_pid *p = u64map__get(seen.comm, s.procs[i].pid);
		uintptr_t b = (uintptr_t)u64map__get(seen.bytes, s.procs[i].pid);
		char name[GP_COMM_LEN];
		const char *comm = p ? p->comm : asked(run, s.procs[i].pid, name, sizeof(name));

		/* on the GPU and neither seen calling nor followed (a -p target that made no call
		 * the modes watch since the attach is still traced) */
		if (!comm) {
			others++;
			continue;
		}
		listed++;
		if (o)
			json_object_array_add(procs, proc_json(&s, &s.procs[i], comm, b));
		else
			proc_text(f, &s, &s.procs[i], comm, b);
	}
	for (size_t i = 0; i < s.nr_xids; i++) {
		if (o)
			json_object_array_add(xids, xid_json(&s, &s.xids[i], seen.comm));
		else
			xid_text(f, &s, &s.xids[i], seen.comm);
	}
	if (o) {
		json_object_object_add(o, "gpus", gpus);
		json_object_object_add(o, "processes", procs);
		json_object_object_add(o, "untraced_processes", json_object_new_uint64(others));
		json_object_object_add(o, "xid_events", xids);
		gp_json__print(f, o);
	} else {
		if (others)
			fprintf(f, "  %s on the GPUs that this run does not trace\n",
				gp_text__n(others, "process", "processes").s);
		else if (!listed && s.state == GP_NVML_LOADED)
			fprintf(f, "  no traced process on a GPU\n");
		fflush(f);
	}
	gp_nvml__snap_free(&s);
cleanup:
	u64map__free_all(seen.comm, free_comm);
	u64map__free(seen.bytes);
}
