/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the --trace timeline (src/core/timeline.c) writes through: a timeline file's writer
 * as a table of functions, so that the runtime hands its records to the writer of
 * src/out/trace.c without including it. The front end gives the run the opener
 * (gp_run__set_trace_writer(run, trace_writer__sink)). Header only.
 */
#ifndef GP_TRACESINK_H
#define GP_TRACESINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

/* One series of a counter sample: Perfetto draws a curve per series, on a track named
 * "NAME SERIES" under the process. */
struct trace_series {
	const char *name;
	double value;
};
#define TRACE_SERIES_MAX 64

/* src/out/trace.h says what each writes; w is the writer's own state, args taken over. */
struct trace_sink_ops {
	void (*event)(void *w, const char *kind, uint32_t pid, uint32_t tid, const char *name, uint64_t ts_ns,
		      uint64_t dur_ns, int64_t ret, struct json_object *args);
	void (*process_name)(void *w, uint32_t pid, const char *comm);
	void (*instant)(void *w, uint32_t pid, uint32_t tid, const char *name, uint64_t ts_ns,
			struct json_object *args);
	void (*counter)(void *w, uint32_t pid, const char *name, uint64_t ts_ns, const struct trace_series *series,
			size_t n);
	uint64_t (*written)(const void *w);
	uint64_t (*instants)(const void *w);
	uint64_t (*counters)(const void *w);
	/* Ends the file with summary (taken over) and frees w; 0 or -errno. */
	int (*close)(void *w, struct json_object *summary);
};

struct trace_sink {
	const struct trace_sink_ops *ops;
	void *w;
};

/* Opens a sink writing path ("-": stdout) as JSON Lines, or in Chrome's trace format;
 * 0 or -errno (errno set too). */
typedef int trace_sink_open_fn(struct trace_sink *s, const char *path, bool chrome);

#endif
