/* SPDX-License-Identifier: BSD-3-Clause */
/* The reports of a run: each mode's snapshot through its renderers, with what is common to
 * every report added once, the budget's record, and the run's /metrics families. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <json-c/json.h>
#include "core/budget.h"
#include "out/budget_report.h"
#include "out/drops.h"
#include "core/events.h"
#include "out/json.h"
#include "out/nvml_report.h"
#include "core/options.h"
#include "out/prom.h"
#include "out/hits.h"
#include "out/report.h"
#include "core/run_impl.h"
static void report_one(struct gp_run *run, int i, enum gp_snap_kind kind, uint32_t pid)
{
	const struct gp_mode *m = run->slot[i].m;
	const struct gp_snap *s = m->snapshot(run->slot[i].st, run, kind, pid);
	json_object *o;

	if (!s)
		return;
	if (m->report_files)
		m->report_files(run->slot[i].st, s, pid);
	if (!run->o->json) {
		if (m->text)
			m->text(run->out, s);
		/* "0 processes" alone reads as "nothing wrong": say why there is nothing */
		if (m->text && !s->nr_pids && kind != GP_SNAP_EXIT)
			fprintf(run->out, "  nothing to report: %s\n", run->empty_hint ? run->empty_hint :
				"no traced process has made a call this mode follows yet");
		fflush(run->out);
		return;
	}
	if (!m->json)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "mode", json_object_new_string(m->name));
	json_object_object_add(o, "report", json_object_new_string(gp_snap_kind_name(kind)));
	json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
	m->json(o, s);
	gp_drops__json(o, s);
	gp_json__print(run->out, o);
}

/* The budget's own record, after the modes': what it sampled and what the probes cost. */
static void report_budget(struct gp_run *run, enum gp_snap_kind kind)
{
	struct gp_budget_stats st;
	json_object *o;

	if (!run->budget || gp_budget__stats(run->budget, &st))
		return;
	if (!run->o->json) {
		gp_budget__text(run->out, &st, run->o->verbose);
	} else {
		o = json_object_new_object();
		json_object_object_add(o, "mode", json_object_new_string("budget"));
		json_object_object_add(o, "report", json_object_new_string(gp_snap_kind_name(kind)));
		json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
		gp_budget__json(o, &st);
		gp_json__print(run->out, o);
	}
	gp_budget__stats_free(&st);
}

void gp_report__run(struct gp_run *run, enum gp_snap_kind kind, uint32_t pid)
{
	for (int i = 0; i < run->nr; i++)
		report_one(run, i, kind, pid);
	report_budget(run, kind);
	gp_nvml_report__run(run, kind);
}

void gp_report__slot(struct gp_run *run, int slot, enum gp_snap_kind kind, uint32_t pid)
{
	if (slot >= 0 && slot < run->nr)
		report_one(run, slot, kind, pid);
}

struct prom_hits {
	struct prom_out *p;
	double cost;
};

static void prom_hit(void *ctx, const struct gp_snap_pid *pp)
{
	struct prom_hits *h = ctx;

	prom__u64(h->p, "gpuprobe_probe_hits_total", pp, NULL, pp->probe_hits);
	prom__real(h->p, "gpuprobe_probe_seconds_total", pp, NULL, (double)pp->probe_hits * h->cost);
}

static void count_pid(void *ctx, const struct gp_snap_pid *p)
{
	(void)ctx, (void)p;
}

int gp_report__prom(struct gp_run *run, struct prom_out *p, double probe_cost)
{
	const struct gp_snap *snaps[GP_MAX_MODES] = { 0 };
	struct prom_hits h = { .p = p, .cost = probe_cost };
	int r = 0;

	for (int i = 0; i < run->nr; i++)
		snaps[i] = run->slot[i].m->snapshot(run->slot[i].st, run, GP_SNAP_SCRAPE, 0);
	for (int i = 0; i < run->nr && !r; i++)
		if (snaps[i] && run->slot[i].m->prom)
			r = run->slot[i].m->prom(p, snaps[i]);
	if (r)
		return r;
	r = gp_nvml_report__prom(p, run);
	if (r)
		return r;
	prom__family(p, "gpuprobe_probe_hits_total");
	prom__family(p, "gpuprobe_probe_seconds_total");
	gp_hits__pids(run, snaps, false, prom_hit, &h);
	prom__family(p, "gpuprobe_probe_hit_cost_seconds");
	prom__real(p, "gpuprobe_probe_hit_cost_seconds", NULL, NULL, probe_cost);
	prom__family(p, "gpuprobe_events_dropped_total");
	for (int i = 0; i < run->nr; i++) {
		for (size_t j = 0; snaps[i] && j < snaps[i]->nr_drops; j++) {
			const char *kv[] = { "mode", run->slot[i].m->name, "reason",
					     gp_reason_name(snaps[i]->drops[j].reason), NULL };

			prom__u64(p, "gpuprobe_events_dropped_total", NULL, kv, snaps[i]->drops[j].count);
		}
	}
	{
		const char *kv[] = { "mode", "all", "reason", gp_reason_name(GP_R_MALFORMED_RECORD), NULL };

		prom__u64(p, "gpuprobe_events_dropped_total", NULL, kv, gp_events__malformed(run->events));
	}
	if (run->budget_pct > 0) {
		/* reason: only where it cannot sample */
		const char *kv[] = { "mechanism", gp_budget_how_name(run->budget_how),
				     run->budget ? NULL : "reason", run->budget_reason, NULL };
		struct gp_budget_stats st;

		prom__family(p, "gpuprobe_budget_in_force");
		prom__u64(p, "gpuprobe_budget_in_force", NULL, kv, run->budget != NULL);
		if (run->budget && !gp_budget__stats(run->budget, &st)) {
			gp_budget__prom(p, &st);
			gp_budget__stats_free(&st);
		} else if (!run->budget) {
			prom__family(p, "gpuprobe_budget_max_overhead_ratio");
			prom__real(p, "gpuprobe_budget_max_overhead_ratio", NULL, NULL, run->budget_pct / 100);
		}
	}
	prom__family(p, "gpuprobe_processes_unseen_calls_total");
	prom__u64(p, "gpuprobe_processes_unseen_calls_total", NULL, NULL, run->unseen_total);
	prom__family(p, "gpuprobe_tracked_processes");
	prom__u64(p, "gpuprobe_tracked_processes", NULL, NULL, gp_hits__pids(run, snaps, true, count_pid, NULL));
	return 0;
}
