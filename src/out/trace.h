/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timeline files: JSON Lines (one object per call, ioctl, counter sample or process event,
 * a summary line last) and the Chrome trace event format (complete "X" events, one track
 * per process and thread, ioctls on tracks of their own, "C" counter events that Perfetto
 * draws as curves, process-scoped "i" instants for forks, execs and exits), which Perfetto
 * and chrome://tracing load. Times in Chrome files are exact microseconds.
 */
#ifndef GP_TRACE_H
#define GP_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "lib/tracesink.h"

struct json_object;

enum trace_format { TRACE_JSONL, TRACE_CHROME };

struct trace_writer;

/* path "-" writes to stdout; a file is opened with outfile__open (no symlinks, 0600,
 * truncated only when regular). Returns NULL with errno set. */
struct trace_writer *trace_writer__open(const char *path, enum trace_format fmt);
/* kind: "call", "ioctl" or "nccl"; args (may be NULL) is taken over. */
void trace_writer__event(struct trace_writer *w, const char *kind, uint32_t pid, uint32_t tid,
			 const char *name, uint64_t ts_ns, uint64_t dur_ns, int64_t ret,
			 struct json_object *args);
/* Names the process's track: a "process" record in JSON Lines, Chrome "process_name"
 * metadata; written again when the name changes (an exec), never for an empty one once
 * named. */
void trace_writer__process_name(struct trace_writer *w, uint32_t pid, const char *comm);
/* A moment in a process's life (fork, exec, exit): JSON Lines
 * {"type":"instant","ts_ns":…,"pid":…,"tid":…,"name":…,"args":{…}}, Chrome
 * {"name":…,"cat":"process","ph":"i","s":"p","ts":…,"pid":…,"tid":…,"args":{…}}, a marker
 * across the process's tracks. args (may be NULL) is taken over. */
void trace_writer__instant(struct trace_writer *w, uint32_t pid, uint32_t tid, const char *name, uint64_t ts_ns,
			   struct json_object *args);
uint64_t trace_writer__instants(const struct trace_writer *w);
uint64_t trace_writer__written(const struct trace_writer *w);

/* The writer as the --trace timeline's sink (src/lib/tracesink.h): a trace_sink_open_fn. */
int trace_writer__sink(struct trace_sink *s, const char *path, bool chrome);

/* A counter sample at ts_ns for process pid: JSON Lines
 * {"type":"counter","ts_ns":…,"pid":…,"name":…,"values":{SERIES:VALUE,…}}, Chrome
 * {"name":…,"cat":"counter","ph":"C","ts":…,"pid":…,"args":{SERIES:VALUE,…}}. A value that is
 * NaN or infinite is left out, a sample with none left (or n 0, or n > TRACE_SERIES_MAX)
 * is not written. Suggested names: "outstanding bytes" (series per GPU, "gpu0"…), "launches"
 * (per interval), "copy bytes" (series "H2D", "D2H", "D2D", "peer", "H2H"); counters of the
 * whole node can live on a pid of their own, named with trace_writer__process_name. Not
 * counted in trace_writer__written (the calls and ioctls). */
void trace_writer__counter(struct trace_writer *w, uint32_t pid, const char *name, uint64_t ts_ns,
			   const struct trace_series *series, size_t n);
uint64_t trace_writer__counters(const struct trace_writer *w);
/* Ends the file with summary (taken over): the last JSON line, or Chrome's otherData.
 * Returns 0 or -errno (a write error, e.g. a full disk). */
int trace_writer__close(struct trace_writer *w, struct json_object *summary);

/* Longest JSON Lines record convert reads; a longer line is dropped. */
#define TRACE_LINE_MAX (1024 * 1024)

struct trace_convert_stats {
	size_t lines;		/* lines read (blank ones are skipped, not counted as dropped) */
	size_t records;		/* records converted: process, call, ioctl, counter, instant, summary */
	size_t dropped;		/* lines not converted: the sum of the next four */
	size_t truncated;	/* 1 when the last line was cut short (no newline, not a record) */
	size_t malformed;	/* not JSON, not an object, or a record without its fields */
	size_t too_long;	/* longer than TRACE_LINE_MAX */
	size_t unknown;		/* a JSON object of a type this version does not know */
	size_t first_dropped;	/* 1-based line number of the first dropped line, 0 if none */
	bool summary;		/* the summary line was there */
};

/* JSON Lines (in_path, "-" for stdin) to the Chrome format on out. Once in_path is open,
 * out always receives a complete document: every complete record is converted and every
 * other line dropped and counted in st (never NULL), and otherData says what was dropped
 * ("convert":{"dropped_lines":N,…}) or that the summary is missing. Returns 0; or -errno
 * with err set when in_path cannot be opened (nothing written), when reading or writing
 * fails, or -EINVAL when lines were dropped and no record was found (not a gpuprobe trace;
 * the document written is still complete). */
int trace__convert(const char *in_path, FILE *out, struct trace_convert_stats *st, char *err,
		   size_t len);
/* `gpuprobe convert --chrome IN.jsonl`: trace__convert, and when it dropped lines but
 * succeeded, one line on stderr saying how many, which was first and why. */
int trace__convert_chrome(const char *in_path, FILE *out, char *err, size_t len);

#endif
