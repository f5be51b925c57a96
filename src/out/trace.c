/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "trace.h"
#include "u64map.h"

/* ioctls of thread T are drawn on track IOCTL_TID_BASE + T, named "ioctl (tid T)" */
#define IOCTL_TID_BASE 1000000000U

struct trace_writer {
	FILE *f;
	bool own;
	enum trace_format fmt;
	uint64_t written;
	bool first;
	struct u64map *named; /* pid, or (pid << 32 | track) already named */
};

static const int JFLAGS = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;

struct trace_writer *trace_writer__open(const char *path, enum trace_format fmt)
{
	struct trace_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fmt = fmt;
	w->first = true;
	w->named = u64map__new();
	if (!strcmp(path, "-")) {
		w->f = stdout;
	} else {
		w->f = fopen(path, "w");
		w->own = true;
	}
	if (!w->f || !w->named) {
		int e = errno ? errno : ENOMEM;

		if (w->own && w->f)
			fclose(w->f);
		u64map__free(w->named);
		free(w);
		errno = e;
		return NULL;
	}
	if (fmt == TRACE_CHROME)
		fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", w->f);
	return w;
}

static void chrome_emit(struct trace_writer *w, json_object *o)
{
	fprintf(w->f, "%s%s", w->first ? "" : ",\n", json_object_to_json_string_ext(o, JFLAGS));
	w->first = false;
	json_object_put(o);
}

static void chrome_meta(struct trace_writer *w, const char *what, uint32_t pid, uint32_t tid,
			const char *name)
{
	json_object *o = json_object_new_object(), *a = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(what));
	json_object_object_add(o, "ph", json_object_new_string("M"));
	json_object_object_add(o, "pid", json_object_new_int64(pid));
	json_object_object_add(o, "tid", json_object_new_int64(tid));
	json_object_object_add(a, "name", json_object_new_string(name));
	json_object_object_add(o, "args", a);
	chrome_emit(w, o);
}

void trace_writer__process_name(struct trace_writer *w, uint32_t pid, const char *comm)
{
	char buf[64];

	if (u64map__get(w->named, pid))
		return;
	u64map__put(w->named, pid, (void *)1);
	if (w->fmt == TRACE_JSONL) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "type", json_object_new_string("process"));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "comm", json_object_new_string(comm ? comm : ""));
		fprintf(w->f, "%s\n", json_object_to_json_string_ext(o, JFLAGS));
		json_object_put(o);
		return;
	}
	snprintf(buf, sizeof(buf), "%s (%u)", comm && *comm ? comm : "process", pid);
	chrome_meta(w, "process_name", pid, 0, buf);
}

void trace_writer__event(struct trace_writer *w, const char *kind, uint32_t pid, uint32_t tid,
			 const char *name, uint64_t ts_ns, uint64_t dur_ns, int64_t ret,
			 json_object *args)
{
	json_object *o = json_object_new_object();
	bool ioctl = !strcmp(kind, "ioctl");

	if (w->fmt == TRACE_JSONL) {
		json_object_object_add(o, "type", json_object_new_string(kind));
		json_object_object_add(o, "ts_ns", json_object_new_uint64(ts_ns));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "tid", json_object_new_int64(tid));
		json_object_object_add(o, "fn", json_object_new_string(name));
		json_object_object_add(o, "dur_ns", json_object_new_uint64(dur_ns));
		json_object_object_add(o, "ret", json_object_new_int64(ret));
		json_object_object_add(o, "args", args ? args : json_object_new_object());
		fprintf(w->f, "%s\n", json_object_to_json_string_ext(o, JFLAGS));
		json_object_put(o);
	} else {
		uint32_t track = ioctl ? IOCTL_TID_BASE + tid : tid;
		uint64_t key = ((uint64_t)pid << 32) | track;

		if (!u64map__get(w->named, key)) {
			char buf[64];

			u64map__put(w->named, key, (void *)1);
			if (ioctl)
				snprintf(buf, sizeof(buf), "ioctl (tid %u)", tid);
			else
				snprintf(buf, sizeof(buf), "tid %u", tid);
			chrome_meta(w, "thread_name", pid, track, buf);
		}
		if (!args)
			args = json_object_new_object();
		json_object_object_add(args, "ret", json_object_new_int64(ret));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "cat", json_object_new_string(ioctl ? "ioctl" : "cuda"));
		json_object_object_add(o, "ph", json_object_new_string("X"));
		json_object_object_add(o, "ts", json_object_new_double((double)ts_ns / 1e3));
		json_object_object_add(o, "dur", json_object_new_double((double)dur_ns / 1e3));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "tid", json_object_new_int64(track));
		json_object_object_add(o, "args", args);
		chrome_emit(w, o);
	}
	w->written++;
}

uint64_t trace_writer__written(const struct trace_writer *w)
{
	return w->written;
}

int trace_writer__close(struct trace_writer *w, json_object *summary)
{
	int err = 0;

	if (!w) {
		json_object_put(summary);
		return 0;
	}
	if (w->fmt == TRACE_JSONL) {
		if (summary) {
			json_object_object_add(summary, "type", json_object_new_string("summary"));
			fprintf(w->f, "%s\n", json_object_to_json_string_ext(summary, JFLAGS));
		}
	} else {
		fprintf(w->f, "\n],\"otherData\":%s}\n",
			summary ? json_object_to_json_string_ext(summary, JFLAGS) : "{}");
	}
	json_object_put(summary);
	if (fflush(w->f) || ferror(w->f))
		err = -EIO;
	if (w->own && fclose(w->f) && !err)
		err = -errno;
	u64map__free(w->named);
	free(w);
	return err;
}

int trace__convert_chrome(const char *in_path, FILE *out, char *err, size_t len)
{
	FILE *in = strcmp(in_path, "-") ? fopen(in_path, "r") : stdin;
	struct trace_writer *w = NULL;
	json_object *summary = NULL;
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0;
	int r = 0;

	if (!in) {
		r = -errno;
		snprintf(err, len, "%s: %s", in_path, strerror(errno));
		goto cleanup;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->named = u64map__new())) {
		r = -ENOMEM;
		snprintf(err, len, "out of memory");
		goto cleanup;
	}
	w->f = out;
	w->fmt = TRACE_CHROME;
	w->first = true;
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", out);
	while (getline(&line, &cap, in) > 0) {
		json_object *o, *v;
		const char *type;

		lineno++;
		o = json_tokener_parse(line);
		if (!o || !json_object_object_get_ex(o, "type", &v)) {
			json_object_put(o);
			r = -EINVAL;
			snprintf(err, len, "%s:%ld: not a gpuprobe trace record", in_path, lineno);
			goto cleanup;
		}
		type = json_object_get_string(v);
		if (!strcmp(type, "process")) {
			json_object *pid = NULL, *comm = NULL;

			json_object_object_get_ex(o, "pid", &pid);
			json_object_object_get_ex(o, "comm", &comm);
			trace_writer__process_name(w, (uint32_t)json_object_get_int64(pid),
						   json_object_get_string(comm));
			json_object_put(o);
			continue;
		}
		if (!strcmp(type, "summary")) {
			json_object_put(summary);
			summary = o;
			json_object_object_del(summary, "type");
			continue;
		}
		{
			json_object *args = NULL, *fn = NULL, *pid, *tid, *ts, *dur, *ret;

			json_object_object_get_ex(o, "fn", &fn);
			json_object_object_get_ex(o, "pid", &pid);
			json_object_object_get_ex(o, "tid", &tid);
			json_object_object_get_ex(o, "ts_ns", &ts);
			json_object_object_get_ex(o, "dur_ns", &dur);
			json_object_object_get_ex(o, "ret", &ret);
			if (json_object_object_get_ex(o, "args", &args))
				json_object_get(args);
			trace_writer__event(w, type, (uint32_t)json_object_get_int64(pid),
					    (uint32_t)json_object_get_int64(tid), json_object_get_string(fn),
					    (uint64_t)json_object_get_int64(ts), (uint64_t)json_object_get_int64(dur),
					    json_object_get_int64(ret), args);
		}
		json_object_put(o);
	}
	fprintf(out, "\n],\"otherData\":%s}\n",
		summary ? json_object_to_json_string_ext(summary, JFLAGS) : "{}");
	if (fflush(out) || ferror(out)) {
		r = -EIO;
		snprintf(err, len, "writing the output: %s", strerror(EIO));
	}
cleanup:
	json_object_put(summary);
	free(line);
	if (in && in != stdin)
		fclose(in);
	if (w) {
		u64map__free(w->named);
		free(w);
	}
	return r;
}
