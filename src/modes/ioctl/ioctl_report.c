/* SPDX-License-Identifier: BSD-3-Clause */
/* --ioctl's renderers: text (bcc style), JSON and Prometheus, from a snapshot only. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "modes/ioctl/ioctl_mode.h"
#include "out/json.h"
#include "out/prom.h"
#include "out/text.h"

#define SNAP(s) ((const struct ioc_snap *)(s))

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

static void text_dev(FILE *f, const struct ioc_dev *dv)
{
	char lbl[128], ctl[128];

	fprintf(f, "  %s (%u:%u%s%s): %s, %s\n", dv->node, dv->major, dv->minor, dv->driver[0] ? " " : "", dv->driver,
		gp_text__n(dv->calls, "ioctl", "ioctls").s, gp_text__n(dv->errors, "error", "errors").s);
	fprintf(f, "    %-44s %-52s %8s %7s %10s %10s\n", "COMMAND", "CONTROL", "CALLS", "ERRORS", "TOTAL", "MAX");
	for (size_t k = 0; k < dv->nr_cmds; k++) {
		const struct ioc_cmd *cm = &dv->cmds[k];

		cmd_label(cm, lbl, sizeof(lbl));
		ctrl_label(cm, ctl, sizeof(ctl));
		fprintf(f, "    %-44s %-52s %8s %7s %10s %10s\n", lbl, ctl, gp_text__count(cm->st.calls).s,
			gp_text__count(cm->st.errors).s, gp_text__duration((double)cm->st.total_ns / 1e9).s,
			gp_text__duration((double)cm->st.max_ns / 1e9).s);
		gp_text__log2_hist(f, (const uint64_t *)cm->st.slots, GP_HIST_SLOTS, "usecs");
	}
}

void ioc_report__text(FILE *f, const struct gp_snap *hdr)
{
	const struct gp_snap_env *env = hdr->env;
	const struct ioc_snap *s = SNAP(hdr);
	char tbuf[32];

	gp_text__clock(tbuf, sizeof(tbuf));
	fprintf(f, "[%s] ioctl %s report (backend %s): %s\n", tbuf, gp_snap_kind_name(hdr->kind), s->backend,
		gp_text__n(s->nr_procs, "process", "processes").s);
	for (size_t i = 0; i < s->nr_procs; i++) {
		const struct ioc_proc *p = &s->procs[i];

		fprintf(f, "PID %u (%s)%s: %s, %s, %.1f%% decoded\n", p->pid, p->comm, hdr->pids[i].exited ? " exited" : "",
			gp_text__n(p->calls, "ioctl", "ioctls").s,
			gp_text__n(p->errors, "error", "errors").s,
			p->calls ? 100.0 * (double)p->decoded / (double)p->calls : 0.0);
		for (size_t d = 0; d < p->nr_devs; d++)
			text_dev(f, &p->devs[d]);
	}
	gp_drops__text(f, hdr, gp_env_verbose(env));
}

static json_object *json_hex32(uint32_t v)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "0x%x", v);
	return json_object_new_string(buf);
}

static json_object *json_cmd(const struct ioc_cmd *cm)
{
	json_object *o = json_object_new_object();
	bool ctrl = cm->ctrl_cmd || ioctl__is_rm_control(cm->cmd);

	json_object_object_add(o, "cmd", json_hex32(cm->cmd));
	json_object_object_add(o, "name", cm->name ? json_object_new_string(cm->name) : NULL);
	json_object_object_add(o, "ctrl_cmd", ctrl ? json_hex32(cm->ctrl_cmd) : NULL);
	json_object_object_add(o, "ctrl_name", cm->ctrl_name ? json_object_new_string(cm->ctrl_name) : NULL);
	json_object_object_add(o, "calls", json_object_new_uint64(cm->st.calls));
	json_object_object_add(o, "errors", json_object_new_uint64(cm->st.errors));
	json_object_object_add(o, "total_s", json_object_new_double((double)cm->st.total_ns / 1e9));
	json_object_object_add(o, "max_s", json_object_new_double((double)cm->st.max_ns / 1e9));
	json_object_object_add(o, "hist_us", gp_json__log2_hist((const uint64_t *)cm->st.slots, GP_HIST_SLOTS));
	return o;
}

static json_object *json_dev(const struct ioc_dev *dv)
{
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
	return dobj;
}

void ioc_report__json(json_object *o, const struct gp_snap *hdr)
{
	const struct ioc_snap *s = SNAP(hdr);
	json_object *arr = json_object_new_array();

	json_object_object_add(o, "backend", json_object_new_string(s->backend));
	for (size_t i = 0; i < s->nr_procs; i++) {
		const struct ioc_proc *p = &s->procs[i];
		json_object *po = json_object_new_object(), *devs = json_object_new_array();

		json_object_object_add(po, "pid", json_object_new_int64(p->pid));
		json_object_object_add(po, "comm", json_object_new_string(p->comm));
		json_object_object_add(po, "exited", json_object_new_boolean(hdr->pids[i].exited));
		json_object_object_add(po, "ioctls", json_object_new_uint64(p->calls));
		json_object_object_add(po, "errors", json_object_new_uint64(p->errors));
		json_object_object_add(po, "decoded_calls", json_object_new_uint64(p->decoded));
		json_object_object_add(po, "decoded_fraction",
				       json_object_new_double(p->calls ? (double)p->decoded / (double)p->calls : 0));
		for (size_t k = 0; k < p->nr_devs; k++)
			json_object_array_add(devs, json_dev(&p->devs[k]));
		json_object_object_add(po, "devices", devs);
		json_object_array_add(arr, po);
	}
	json_object_object_add(o, "processes", arr);
}

json_object *ioc_report__trace_args(const struct gp_ioctl_event *e, const char *name)
{
	json_object *args = json_object_new_object();
	char dev[32];

	snprintf(dev, sizeof(dev), "%u:%u", e->major, e->minor);
	json_object_object_add(args, "cmd", gp_json__hex(e->cmd));
	if (name)
		json_object_object_add(args, "name", json_object_new_string(name));
	if (e->ctrl_cmd)
		json_object_object_add(args, "ctrl_cmd", gp_json__hex(e->ctrl_cmd));
	json_object_object_add(args, "dev", json_object_new_string(dev));
	return args;
}

/* one series of a process: labels node, cmd, ctrl */
struct ioc_row {
	const char *node;
	char cmd[48], ctrl[64];
	uint64_t calls, errors, ns;
};

static int cmp_labels(const void *a, const void *b)
{
	const struct ioc_row *x = a, *y = b;
	int c = strcmp(x->node, y->node);

	if (!c)
		c = strcmp(x->cmd, y->cmd);
	return c ? c : strcmp(x->ctrl, y->ctrl);
}

static int cmp_calls(const void *a, const void *b)
{
	const struct ioc_row *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return cmp_labels(a, b);
}

/* Rows with equal labels (one name for several request numbers) summed into the first. */
static size_t merge_rows(struct ioc_row *rows, size_t n)
{
	size_t out = 0;

	qsort(rows, n, sizeof(*rows), cmp_labels);
	for (size_t i = 0; i < n; i++) {
		if (out && !cmp_labels(&rows[out - 1], &rows[i])) {
			rows[out - 1].calls += rows[i].calls;
			rows[out - 1].errors += rows[i].errors;
			rows[out - 1].ns += rows[i].ns;
			continue;
		}
		rows[out++] = rows[i];
	}
	return out;
}

static void row_of(struct ioc_row *w, const struct ioc_dev *d, const struct ioc_cmd *c)
{
	w->node = d->node;
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

/* The series of one process, busiest first: src/out/prom.c gives the first
 * --max-ioctl-series (cmd, ctrl) pairs of a series their own, the rest go to
 * cmd="other", ctrl="" of their node. */
static long rows_of(const struct ioc_proc *p, struct ioc_row **out)
{
	struct ioc_row *rows;
	size_t n = 0;

	for (size_t d = 0; d < p->nr_devs; d++)
		n += p->devs[d].nr_cmds;
	rows = calloc(n ? n : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	n = 0;
	for (size_t d = 0; d < p->nr_devs; d++)
		for (size_t k = 0; k < p->devs[d].nr_cmds; k++)
			row_of(&rows[n++], &p->devs[d], &p->devs[d].cmds[k]);
	n = merge_rows(rows, n);
	qsort(rows, n, sizeof(*rows), cmp_calls);
	*out = rows;
	return (long)n;
}

int ioc_report__prom(struct prom_out *p, const struct gp_snap *hdr)
{
	static const char *const fams[] = { "gpuprobe_nvidia_ioctl_calls_total", "gpuprobe_nvidia_ioctl_errors_total",
					    "gpuprobe_nvidia_ioctl_seconds_total" };
	const struct ioc_snap *s = SNAP(hdr);

	for (int f = 0; f < 3; f++) {
		prom__family(p, fams[f]);
		prom__cap(p, fams[f], s->max_series);
	}
	for (size_t i = 0; i < s->nr_procs; i++) {
		struct ioc_row *rows;
		long n = rows_of(&s->procs[i], &rows);

		if (n < 0)
			return (int)n;
		for (long j = 0; j < n; j++) {
			const char *kv[] = { "node", rows[j].node, "cmd", rows[j].cmd, "ctrl", rows[j].ctrl, NULL };

			prom__u64(p, fams[0], &s->pids[i], kv, rows[j].calls);
			prom__u64(p, fams[1], &s->pids[i], kv, rows[j].errors);
			prom__secs(p, fams[2], &s->pids[i], kv, (double)rows[j].ns / 1e9);
		}
		free(rows);
	}
	return 0;
}
