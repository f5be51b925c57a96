/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --trace: decodes driver calls (arguments of the functions the other modes understand)
 * and keeps the end-of-run summary: calls and time per function, allocations, copies per
 * direction, launches, time blocked in syncs, ioctls, and the longest gaps between kernel
 * launches. Pure C over gp_call_event / gp_ioctl_event.
 */
#ifndef GP_APITRACE_H
#define GP_APITRACE_H

#include <stdint.h>
#include <stdio.h>
#include "gpuprobe.h"
#include "api_trace.h"
#include "nv_ioctl.h"

struct json_object;
struct apitrace;

/* names[i] is the function whose cookie is i. */
struct apitrace *apitrace__new(const char *const *names, int n);
void apitrace__free(struct apitrace *at);
const char *apitrace__fn_name(const struct apitrace *at, uint32_t fn);
/* Flags for bpf/api_trace.bpf.c's fn_flags map: what to read besides registers. */
uint32_t apitrace__fn_flags(const struct apitrace *at, uint32_t fn);

/* Accounts the call and returns its decoded arguments (a new JSON object). */
struct json_object *apitrace__on_call(struct apitrace *at, const struct gp_call_event *e);
/* A name argument, whole, just before the call it belongs to (same thread). */
void apitrace__on_call_str(struct apitrace *at, const struct gp_call_str_event *e);
/* Accounts one ioctl of the timeline (the ioctl lane). */
void apitrace__on_ioctl(struct apitrace *at, uint32_t pid, uint64_t dur_ns, int64_t ret);
void apitrace__set_comm(struct apitrace *at, uint32_t pid, const char *comm);
const char *apitrace__comm(struct apitrace *at, uint32_t pid);

struct at_drops {
	uint64_t ringbuf, pending, noreturn, too_deep, ioctl_ringbuf;
	uint64_t share;          /* threads whose process or user held its share of the stacks table */
	uint64_t counter_series; /* counter series the timeline could not keep */
	uint64_t names_lost;     /* name arguments lost: their calls are there, without the name */
	uint64_t fns_skipped;    /* cu* functions of a library over its cap: never probed */
};

/* What the timeline file holds besides the calls' tallies. */
struct at_file {
	const char *path, *format;
	uint64_t written;   /* call and ioctl events */
	uint64_t counters;  /* counter events */
	uint64_t instants;  /* fork, exec and exit events */
	double counter_interval_s; /* 0: no counter samples */
};

/* The summary, as JSON (new object) or text. */
struct json_object *apitrace__summary_json(struct apitrace *at, const struct at_drops *d, const struct at_file *file);
/* all (-v): every drop counter, and the lines that say 0 */
void apitrace__summary_text(struct apitrace *at, FILE *f, const struct at_drops *d, const struct at_file *file,
			    bool all);

#endif
