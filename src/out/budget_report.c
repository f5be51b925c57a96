/* SPDX-License-Identifier: BSD-3-Clause */
/* The budget's own report (--max-overhead): text, JSON and /metrics, from its stats. */
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <json-c/json.h>
#include "core/budget.h"
#include "out/budget_report.h"
#include "out/prom.h"
#include "out/text.h"

static struct gp_str count(double v)
{
	return gp_text__count(v > 0 ? (uint64_t)llround(v) : 0);
}

/* The processes new to the budget armed alone, and those that could not be: when some
 * were either (-v and JSON have the 0s). */
static void armed_line(FILE *f, const struct gp_budget_stats *s, bool all)
{
	uint64_t un = 0;

	for (int r = 0; r < GP_UNARMED__COUNT; r++)
		un += s->unarmed[r];
	if (!s->fresh_armed && !un && !all)
		return;
	fprintf(f, "  %s new to it counted exactly on probes armed for them alone",
		gp_text__n(s->fresh_armed, "process", "processes").s);
	if (un) {
		fprintf(f, "; %s could not be (their calls sampled with the others'):", gp_text__count(un).s);
		for (int r = 0; r < GP_UNARMED__COUNT; r++)
			if (s->unarmed[r])
				fprintf(f, " %s %s", gp_text__count(s->unarmed[r]).s, gp_budget_unarmed_name(r));
	}
	fprintf(f, "\n");
}

void gp_budget__text(FILE *f, const struct gp_budget_stats *s, bool all)
{
	fprintf(f, "gpuprobe budget (--max-overhead %g%%, %s): a probe hit costs %s here (%s in a tight loop), a counted call %s; "
		   "launch and sync probes attached %.1f%% of the time now%s; %s of %s periods sampled, %s of %s windows "
		   "ended early by a rate that rose (attaching took %s, closing %s, medians)\n",
		s->pct, !strcmp(s->mechanism, "uprobe_multi") ? "uprobe_multi links" : "tracefs uprobe events",
		gp_text__duration(s->cost).s, gp_text__duration(s->warm_cost).s, gp_text__duration(s->call_cost).s,
		s->fraction * 100, s->over_now ? " (a process passes the budget even then)" : "",
		gp_text__count(s->sampled_periods).s, gp_text__count(s->periods).s, gp_text__count(s->cut_windows).s,
		gp_text__count(s->windows).s, gp_text__duration(s->attach_ms / 1e3).s, gp_text__duration(s->detach_ms / 1e3).s);
	if (s->over_procs)
		fprintf(f, "  over the budget: %s spent more than %g%% of %s time in the probes by the budget's own estimate, "
			   "beyond the exact allowance\n", gp_text__n(s->over_procs, "process", "processes").s,
			s->pct, s->over_procs == 1 ? "its" : "their");
	if (s->floor_procs)
		fprintf(f, "  cannot be held here: for %s the least the budget can sample passes %g%% (a probe hit costs %s, "
			   "a counted call %s): held there, at up to %.2f%%\n",
			gp_text__n(s->floor_procs, "process", "processes").s, s->pct, gp_text__duration(s->cost).s,
			gp_text__duration(s->call_cost).s, s->floor * 100);
	armed_line(f, s, all);
	for (size_t i = 0; i < s->nr_procs; i++) {
		const struct gp_budget_proc *p = &s->procs[i];
		struct gp_sampling smp;

		if (!p->pid)
			fprintf(f, "  processes sharing a slot:");
		else
			fprintf(f, "  PID %u%s:", p->pid, p->ended ? " (ended)" : "");
		if (gp_account__sampling(&p->acc, &smp) && smp.unbounded && smp.long_unseen && smp.dark_s > 0)
			fprintf(f, " %.1f%% of its launch and sync calls seen, ~%s calls (at least %s: no upper bound, "
				"an unseen part outlasted a period: its probes were that slow to go in, %.1f s of it seen by no probe),",
				smp.fraction * 100, count(smp.estimate).s, count(smp.lo).s, smp.dark_s);
		else if (smp.unbounded)
			fprintf(f, " %.1f%% of its launch and sync calls seen, ~%s calls (at least %s: no upper bound, %s),",
				smp.fraction * 100, count(smp.estimate).s, count(smp.lo).s,
				smp.long_unseen ? "an unseen part outlasted a period: its probes were that slow to go in" :
						  "its calls cost less than a probe");
		else if (smp.observed || p->acc.sampled)
			fprintf(f, " %.1f%% of its launch and sync calls seen, ~%s calls (95%%: %s-%s),",
				smp.fraction * 100, count(smp.estimate).s, count(smp.lo).s, count(smp.hi).s);
		else
			fprintf(f, " every launch and sync call seen (%s),", count(p->acc.obs).s);
		fprintf(f, " %.3f%% of its time in those probes (estimate%s", gp_account__overhead(&p->acc) * 100,
			p->over ? ": over the budget" : p->allowance_over ? ": its exact allowance" : "");
		if (p->over && p->floor > s->pct / 100)
			fprintf(f, "; the least the budget can hold it at: %.2f%%", p->floor * 100);
		fprintf(f, ")\n");
	}
	fflush(f);
}

static json_object *json_proc(const struct gp_budget_proc *p)
{
	json_object *o = json_object_new_object(), *iv;
	struct gp_sampling smp;
	bool sampled = gp_account__sampling(&p->acc, &smp);

	json_object_object_add(o, "pid", p->pid ? json_object_new_int64(p->pid) : NULL);
	json_object_object_add(o, "ended", json_object_new_boolean(p->ended));
	json_object_object_add(o, "sampled", json_object_new_boolean(sampled));
	json_object_object_add(o, "hits", json_object_new_uint64((uint64_t)p->acc.obs));
	json_object_object_add(o, "calls_estimate", json_object_new_double(sampled ? smp.estimate : p->acc.obs));
	if (sampled) {
		iv = json_object_new_array();
		json_object_array_add(iv, json_object_new_double(smp.lo));
		json_object_array_add(iv, smp.unbounded ? NULL : json_object_new_double(smp.hi));
		json_object_object_add(o, "interval", iv);
		if (smp.long_unseen)
			json_object_object_add(o, "long_unseen", json_object_new_boolean(true));
		if (smp.dark_s > 0)
			json_object_object_add(o, "dark_s", json_object_new_double(smp.dark_s));
		json_object_object_add(o, "fraction", json_object_new_double(smp.fraction));
	}
	json_object_object_add(o, "probe_seconds_estimate", json_object_new_double(p->acc.probe_s));
	json_object_object_add(o, "seconds", json_object_new_double(p->acc.seconds));
	json_object_object_add(o, "overhead_pct_estimate", json_object_new_double(gp_account__overhead(&p->acc) * 100));
	json_object_object_add(o, "over_budget", json_object_new_boolean(p->over));
	if (p->allowance_over)
		json_object_object_add(o, "over_by_allowance", json_object_new_boolean(true));
	json_object_object_add(o, "floor_pct", p->floor > 0 ? json_object_new_double(p->floor * 100) : NULL);
	return o;
}

void gp_budget__json(json_object *o, const struct gp_budget_stats *s)
{
	json_object *ch = json_object_new_array(), *ps = json_object_new_array();

	json_object_object_add(o, "max_overhead_pct", json_object_new_double(s->pct));
	json_object_object_add(o, "mechanism", json_object_new_string(s->mechanism));
	json_object_object_add(o, "target_pct", json_object_new_double(s->target * 100));
	json_object_object_add(o, "probe_hit_cost_s", json_object_new_double(s->cost));
	json_object_object_add(o, "probe_hit_warm_cost_s", json_object_new_double(s->warm_cost));
	json_object_object_add(o, "call_cost_s", json_object_new_double(s->call_cost));
	json_object_object_add(o, "exact_allowance_calls", json_object_new_double(s->allowance));
	json_object_object_add(o, "program_ns", s->prog_measured ? json_object_new_double(s->prog_ns[0] + s->prog_ns[1]) : NULL);
	json_object_object_add(o, "fraction", json_object_new_double(s->fraction));
	json_object_object_add(o, "over_budget", json_object_new_boolean(s->over));
	json_object_object_add(o, "over_budget_now", json_object_new_boolean(s->over_now));
	json_object_object_add(o, "over_budget_processes", json_object_new_uint64(s->over_procs));
	json_object_object_add(o, "floor_processes", json_object_new_uint64(s->floor_procs));
	json_object_object_add(o, "floor_pct", json_object_new_double(s->floor * 100));
	json_object_object_add(o, "periods", json_object_new_uint64(s->periods));
	json_object_object_add(o, "sampled_periods", json_object_new_uint64(s->sampled_periods));
	json_object_object_add(o, "windows", json_object_new_uint64(s->windows));
	json_object_object_add(o, "windows_cut", json_object_new_uint64(s->cut_windows));
	json_object_object_add(o, "attach_ms_median", json_object_new_double(s->attach_ms));
	json_object_object_add(o, "detach_ms_median", json_object_new_double(s->detach_ms));
	json_object_object_add(o, "exact_processes", json_object_new_uint64(s->fresh_armed));
	{
		json_object *u = json_object_new_object();

		for (int r = 0; r < GP_UNARMED__COUNT; r++)
			json_object_object_add(u, gp_budget_unarmed_name(r), json_object_new_uint64(s->unarmed[r]));
		json_object_object_add(o, "unarmed_processes", u);
	}
	for (size_t i = 0; i < s->nr_changes; i++) {
		json_object *c = json_object_new_object();

		json_object_object_add(c, "t_ns", json_object_new_uint64(s->changes[i].ns));
		json_object_object_add(c, "fraction", json_object_new_double(s->changes[i].fraction));
		json_object_array_add(ch, c);
	}
	json_object_object_add(o, "changes", ch);
	for (size_t i = 0; i < s->nr_procs; i++)
		json_object_array_add(ps, json_proc(&s->procs[i]));
	json_object_object_add(o, "processes", ps);
}

void gp_budget__prom(struct prom_out *p, const struct gp_budget_stats *s)
{
	prom__family(p, "gpuprobe_budget_max_overhead_ratio");
	prom__real(p, "gpuprobe_budget_max_overhead_ratio", NULL, NULL, s->pct / 100);
	prom__family(p, "gpuprobe_budget_attached_ratio");
	prom__real(p, "gpuprobe_budget_attached_ratio", NULL, NULL, s->fraction);
	prom__family(p, "gpuprobe_budget_over");
	prom__u64(p, "gpuprobe_budget_over", NULL, NULL, s->over);
	prom__family(p, "gpuprobe_budget_floor_processes");
	prom__u64(p, "gpuprobe_budget_floor_processes", NULL, NULL, s->floor_procs);
	prom__family(p, "gpuprobe_budget_floor_ratio");
	prom__real(p, "gpuprobe_budget_floor_ratio", NULL, NULL, s->floor);
	prom__family(p, "gpuprobe_budget_sampled_periods_total");
	prom__u64(p, "gpuprobe_budget_sampled_periods_total", NULL, NULL, s->sampled_periods);
	prom__family(p, "gpuprobe_budget_windows_cut_total");
	prom__u64(p, "gpuprobe_budget_windows_cut_total", NULL, NULL, s->cut_windows);
	prom__family(p, "gpuprobe_budget_exact_allowance_calls");
	prom__u64(p, "gpuprobe_budget_exact_allowance_calls", NULL, NULL, (uint64_t)s->allowance);
	prom__family(p, "gpuprobe_budget_exact_processes_total");
	prom__u64(p, "gpuprobe_budget_exact_processes_total", NULL, NULL, s->fresh_armed);
	prom__family(p, "gpuprobe_budget_unarmed_processes_total");
	for (int r = 0; r < GP_UNARMED__COUNT; r++) {
		const char *kv[] = { "reason", gp_budget_unarmed_name(r), NULL };

		prom__u64(p, "gpuprobe_budget_unarmed_processes_total", NULL, kv, s->unarmed[r]);
	}
}
