/* SPDX-License-Identifier: BSD-3-Clause */
/* --trace's BPF side: every exported cu* function (or those --trace-filter keeps), one
 * record per call into a timeline file and a summary. */
#ifndef GP_TRACE_PROBE_H
#define GP_TRACE_PROBE_H

#include <stddef.h>

struct trace_probe;
struct gp_opts;
struct attach_set;
struct lib_set;
struct gp_events;
struct gp_ioctl_event;

int trace_probe__open(struct trace_probe **out, const struct gp_opts *o, const struct lib_set *libs,
		      char *err, size_t len);
int trace_probe__attach(struct trace_probe *tp, struct attach_set *links, const struct lib_set *libs,
			int pid, char *err, size_t len);
int trace_probe__add_events(struct trace_probe *tp, struct gp_events *ev);
/* An ioctl record for the timeline (from --ioctl), with its decoded name or NULL. */
void trace_probe__ioctl(struct trace_probe *tp, const struct gp_ioctl_event *e, const char *name);
void trace_probe__add_ioctl_drops(struct trace_probe *tp, unsigned long long dropped);
/* Ends the file and prints the summary; returns 0 or -errno (the file could not be
 * written completely). */
int trace_probe__finish(struct trace_probe *tp, char *err, size_t len);
void trace_probe__free(struct trace_probe *tp);

#endif
