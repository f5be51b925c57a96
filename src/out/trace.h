/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timeline files: JSON Lines (one object per call or ioctl, a summary line last) and the
 * Chrome trace event format (complete "X" events, one track per process and thread,
 * ioctls on tracks of their own), which Perfetto and chrome://tracing load.
 */
#ifndef GP_TRACE_H
#define GP_TRACE_H

#include <stdint.h>
#include <stdio.h>

struct json_object;

enum trace_format { TRACE_JSONL, TRACE_CHROME };

struct trace_writer;

/* path "-" writes to stdout. Returns NULL with errno set. */
struct trace_writer *trace_writer__open(const char *path, enum trace_format fmt);
/* kind: "call" or "ioctl"; args (may be NULL) is taken over. */
void trace_writer__event(struct trace_writer *w, const char *kind, uint32_t pid, uint32_t tid,
			 const char *name, uint64_t ts_ns, uint64_t dur_ns, int64_t ret,
			 struct json_object *args);
/* Names the process's track (Chrome metadata; ignored in JSON Lines). */
void trace_writer__process_name(struct trace_writer *w, uint32_t pid, const char *comm);
uint64_t trace_writer__written(const struct trace_writer *w);
/* Ends the file with summary (taken over): the last JSON line, or Chrome's otherData.
 * Returns 0 or -errno (a write error, e.g. a full disk). */
int trace_writer__close(struct trace_writer *w, struct json_object *summary);

/* `gpuprobe convert --chrome IN.jsonl`: JSON Lines to the Chrome format on out. */
int trace__convert_chrome(const char *in_path, FILE *out, char *err, size_t len);

#endif
