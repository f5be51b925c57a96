/* SPDX-License-Identifier: BSD-3-Clause */
/* --ioctl reports: text (bcc style) and JSON Lines. */
#include <inttypes.h>
#include <time.h>
#include <json-c/json.h>
#include "ioctl.h"
#include "report.h"

static const char *const idrop_names[GP_IDROP__COUNT] = {
	[GP_IDROP_KEYS] = "counter_table_full",
	[GP_IDROP_PENDING] = "pending_table_full",
	[GP_IDROP_RINGBUF] = "ringbuf_full",
	[GP_IDROP_PROCS] = "process_name_table_full",
	[GP_IDROP_CTRL_READ] = "control_params_unreadable",
};

uint64_t gp_idrops__events(const uint64_t *d)
{
	/* ioctls not counted; names and unreadable parameters lose detail, not calls */
	return d[GP_IDROP_KEYS] + d[GP_IDROP_PENDING] + d[GP_IDROP_RINGBUF];
}

static void cmd_label(const struct ioc_cmd *c, char *buf, size_t len)
{
	if (c->name)
		snprintf(buf, len, "%s (0x%x)", c->name, c->cmd);
	else
		snprintf(buf, len, "0x%x", c->cmd);
}

static void ctrl_label(const struct ioc_cmd *c, char *buf, size_t len)
{
	if (!c->ctrl_cmd && !ioctl__is_rm_control(c->cmd))
		snprintf(buf, len, "-");
	else if (c->ctrl_name)
		snprintf(buf, len, "%s (0x%x)", c->ctrl_name, c->ctrl_cmd);
	else
		snprintf(buf, len, "0x%x", c->ctrl_cmd);
}

void report__ioctl_text(FILE *f, struct ioc_proc *procs, size_t n, const struct ioc_report_ctx *c)
{
	time_t now = time(NULL);
	char tbuf[32], lbl[128], ctl[128];
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	fprintf(f, "[%s] ioctl %s report (backend %s): %zu process%s\n", tbuf, c->kind, c->backend, n,
		n == 1 ? "" : "es");
	for (size_t i = 0; i < n; i++) {
		struct ioc_proc *p = &procs[i];

		fprintf(f, "PID %u (%s): %" PRIu64 " ioctls, %" PRIu64 " errors, %.1f%% decoded\n", p->pid,
			p->comm, p->calls, p->errors, p->calls ? 100.0 * (double)p->decoded / (double)p->calls : 0.0);
		for (size_t d = 0; d < p->nr_devs; d++) {
			struct ioc_dev *dv = &p->devs[d];

			fprintf(f, "  %s (%u:%u%s%s): %" PRIu64 " ioctls, %" PRIu64 " errors\n", dv->node, dv->major,
				dv->minor, dv->driver[0] ? " " : "", dv->driver, dv->calls, dv->errors);
			fprintf(f, "    %-44s %-52s %8s %7s %11s %10s\n", "COMMAND", "CONTROL", "CALLS", "ERRORS",
				"TOTAL ms", "MAX ms");
			for (size_t k = 0; k < dv->nr_cmds; k++) {
				struct ioc_cmd *cm = &dv->cmds[k];

				cmd_label(cm, lbl, sizeof(lbl));
				ctrl_label(cm, ctl, sizeof(ctl));
				fprintf(f, "    %-44s %-52s %8" PRIu64 " %7" PRIu64 " %11.3f %10.3f\n", lbl, ctl,
					(uint64_t)cm->st.calls, (uint64_t)cm->st.errors, (double)cm->st.total_ns / 1e6,
					(double)cm->st.max_ns / 1e6);
				report__log2_hist(f, cm->st.slots, GP_HIST_SLOTS, "usecs");
			}
		}
	}
	fprintf(f, "Dropped events: %" PRIu64 " (counter table full %" PRIu64 ", pending table full %" PRIu64
		   ", ring buffer full %" PRIu64 "; control parameters unreadable %" PRIu64 ")\n",
		gp_idrops__events(c->idrops), c->idrops[GP_IDROP_KEYS], c->idrops[GP_IDROP_PENDING],
		c->idrops[GP_IDROP_RINGBUF], c->idrops[GP_IDROP_CTRL_READ]);
	fflush(f);
}

static json_object *json_hex32(uint32_t v)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "0x%x", v);
	return json_object_new_string(buf);
}

static json_object *json_cmd(const struct ioc_cmd *cm)
{
	json_object *o = json_object_new_object(), *h = json_object_new_array();
	bool ctrl = cm->ctrl_cmd || ioctl__is_rm_control(cm->cmd);

	json_object_object_add(o, "cmd", json_hex32(cm->cmd));
	json_object_object_add(o, "name", cm->name ? json_object_new_string(cm->name) : NULL);
	json_object_object_add(o, "ctrl_cmd", ctrl ? json_hex32(cm->ctrl_cmd) : NULL);
	json_object_object_add(o, "ctrl_name", cm->ctrl_name ? json_object_new_string(cm->ctrl_name) : NULL);
	json_object_object_add(o, "calls", json_object_new_uint64(cm->st.calls));
	json_object_object_add(o, "errors", json_object_new_uint64(cm->st.errors));
	json_object_object_add(o, "total_s", json_object_new_double((double)cm->st.total_ns / 1e9));
	json_object_object_add(o, "max_s", json_object_new_double((double)cm->st.max_ns / 1e9));
	for (int i = 0; i < GP_HIST_SLOTS; i++) {
		json_object *b;

		if (!cm->st.slots[i])
			continue;
		b = json_object_new_object();
		json_object_object_add(b, "lo", json_object_new_uint64(i ? 1ULL << i : 0));
		json_object_object_add(b, "hi", json_object_new_uint64((1ULL << (i + 1)) - 1));
		json_object_object_add(b, "count", json_object_new_uint64(cm->st.slots[i]));
		json_object_array_add(h, b);
	}
	json_object_object_add(o, "hist_us", h);
	return o;
}

void report__ioctl_json(FILE *f, struct ioc_proc *procs, size_t n, const struct ioc_report_ctx *c)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array(), *d;

	json_object_object_add(o, "mode", json_object_new_string("ioctl"));
	json_object_object_add(o, "report", json_object_new_string(c->kind));
	json_object_object_add(o, "time", json_object_new_int64((int64_t)time(NULL)));
	json_object_object_add(o, "backend", json_object_new_string(c->backend));
	for (size_t i = 0; i < n; i++) {
		struct ioc_proc *p = &procs[i];
		json_object *po = json_object_new_object(), *devs = json_object_new_array();

		json_object_object_add(po, "pid", json_object_new_int64(p->pid));
		json_object_object_add(po, "comm", json_object_new_string(p->comm));
		json_object_object_add(po, "ioctls", json_object_new_uint64(p->calls));
		json_object_object_add(po, "errors", json_object_new_uint64(p->errors));
		json_object_object_add(po, "decoded_calls", json_object_new_uint64(p->decoded));
		json_object_object_add(po, "decoded_fraction",
				       json_object_new_double(p->calls ? (double)p->decoded / (double)p->calls : 0));
		for (size_t k = 0; k < p->nr_devs; k++) {
			struct ioc_dev *dv = &p->devs[k];
			json_object *dobj = json_object_new_object(), *cmds = json_object_new_array();

			json_object_object_add(dobj, "major", json_object_new_int64(dv->major));
			json_object_object_add(dobj, "minor", json_object_new_int64(dv->minor));
			json_object_object_add(dobj, "node", json_object_new_string(dv->node));
			json_object_object_add(dobj, "driver", json_object_new_string(dv->driver));
			json_object_object_add(dobj, "ioctls", json_object_new_uint64(dv->calls));
			json_object_object_add(dobj, "errors", json_object_new_uint64(dv->errors));
			for (size_t m = 0; m < dv->nr_cmds; m++)
				json_object_array_add(cmds, json_cmd(&dv->cmds[m]));
			json_object_object_add(dobj, "commands", cmds);
			json_object_array_add(devs, dobj);
		}
		json_object_object_add(po, "devices", devs);
		json_object_array_add(arr, po);
	}
	json_object_object_add(o, "processes", arr);
	json_object_object_add(o, "dropped_events", json_object_new_uint64(gp_idrops__events(c->idrops)));
	d = json_object_new_object();
	for (int i = 0; i < GP_IDROP__COUNT; i++)
		json_object_object_add(d, idrop_names[i], json_object_new_uint64(c->idrops[i]));
	json_object_object_add(o, "drops", d);
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(f);
	json_object_put(o);
}
