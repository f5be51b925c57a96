/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "out/jsonnum.h"
#include "out/lines.h"
#include "out/outfile.h"
#include "out/text.h"
#include "out/trace.h"
#include "lib/u64map.h"

/* ioctls of thread T are drawn on track IOCTL_TID_BASE + T, named "ioctl (tid T)"; NCCL
 * calls on NCCL_TID_BASE + T, "nccl (tid T)" */
#define IOCTL_TID_BASE 1000000000U
#define NCCL_TID_BASE 2000000000U
/* GPU work (--gpu-time) of device D, stream S on GPU_TID_BASE + (D << 16 | S), "GPU D stream S" */
#define GPU_TID_BASE 3000000000U
/* JSON nesting convert accepts in a record (records nest 3 deep) */
#define CONVERT_JSON_DEPTH 16

struct trace_writer {
	FILE *f;
	bool own;
	enum trace_format fmt;
	uint64_t written, counters;
	bool first;
	struct u64map *named; /* (pid << 32 | track) of the thread tracks already named */
	struct u64map *comms; /* pid -> the name its process track was last given (malloc'd) */
	uint64_t instants;
};

static const int JFLAGS = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
static const char CHROME_HEAD[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";

/* A writer on f (not owned). Returns NULL when out of memory. */
static struct trace_writer *writer_new(FILE *f, enum trace_format fmt)
{
	struct trace_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->f = f;
	w->fmt = fmt;
	w->first = true;
	w->named = u64map__new();
	w->comms = u64map__new();
	if (!w->named || !w->comms) {
		u64map__free(w->named);
		u64map__free(w->comms);
		free(w);
		return NULL;
	}
	if (fmt == TRACE_CHROME)
		fputs(CHROME_HEAD, f);
	return w;
}

static void writer_free(struct trace_writer *w)
{
	if (!w)
		return;
	u64map__free(w->named);
	u64map__free_all(w->comms, NULL);
	free(w);
}

struct trace_writer *trace_writer__open(const char *path, enum trace_format fmt)
{
	FILE *raw = outfile__open(path), *f;
	struct trace_writer *w;

	if (!raw)
		return NULL;
	/* names a traced process chose (comm, kernel names): json-c escapes C0 controls, not
	 * DEL, C1 or bytes that are not UTF-8; the filter keeps the file valid UTF-8 JSON */
	f = gp_text__safe_stream(raw, raw != stdout);
	w = f ? writer_new(f, fmt) : NULL;
	if (!w) {
		if (f)
			outfile__close(f);
		else
			outfile__close(raw);
		errno = ENOMEM;
		return NULL;
	}
	w->own = true;
	return w;
}

static void emit_line(struct trace_writer *w, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JFLAGS);

	if (w->fmt == TRACE_JSONL)
		fprintf(w->f, "%s\n", s);
	else
		fprintf(w->f, "%s%s", w->first ? "" : ",\n", s);
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
	emit_line(w, o);
}

void trace_writer__process_name(struct trace_writer *w, uint32_t pid, const char *comm)
{
	const char *last = u64map__get(w->comms, pid);
	char buf[64], *copy;

	if (!comm)
		comm = "";
	if (last && (!*comm || !strcmp(last, comm)))
		return;
	copy = strdup(comm);
	if (!copy || u64map__put(w->comms, pid, copy)) {
		free(copy);
		if (last) /* out of memory: the track keeps its name */
			return;
	} else {
		free((char *)last);
	}
	if (w->fmt == TRACE_JSONL) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "type", json_object_new_string("process"));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "comm", json_object_new_string(comm));
		emit_line(w, o);
		return;
	}
	snprintf(buf, sizeof(buf), "%s (%u)", *comm ? comm : "process", pid);
	chrome_meta(w, "process_name", pid, 0, buf);
}

void trace_writer__event(struct trace_writer *w, const char *kind, uint32_t pid, uint32_t tid,
			 const char *name, uint64_t ts_ns, uint64_t dur_ns, int64_t ret,
			 json_object *args)
{
	json_object *o = json_object_new_object();
	bool ioctl = !strcmp(kind, "ioctl"), nccl = !strcmp(kind, "nccl"), gpu = !strcmp(kind, "gpu");

	if (w->fmt == TRACE_JSONL) {
		json_object_object_add(o, "type", json_object_new_string(kind));
		json_object_object_add(o, "ts_ns", json_object_new_uint64(ts_ns));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "tid", json_object_new_int64(tid));
		json_object_object_add(o, "fn", json_object_new_string(name));
		json_object_object_add(o, "dur_ns", json_object_new_uint64(dur_ns));
		json_object_object_add(o, "ret", json_object_new_int64(ret));
		json_object_object_add(o, "args", args ? args : json_object_new_object());
	} else {
		uint32_t track = ioctl ? IOCTL_TID_BASE + tid : nccl ? NCCL_TID_BASE + tid :
				 gpu ? GPU_TID_BASE + (tid & 0x3fffffffU) : tid;
		uint64_t key = ((uint64_t)pid << 32) | track;

		if (!u64map__get(w->named, key)) {
			char buf[64];

			u64map__put(w->named, key, (void *)1);
			if (gpu)
				snprintf(buf, sizeof(buf), "GPU %u stream %u", (tid >> 16) & 0x3fffU, tid & 0xffffU);
			else if (ioctl || nccl)
				snprintf(buf, sizeof(buf), "%s (tid %u)", kind, tid);
			else
				snprintf(buf, sizeof(buf), "tid %u", tid);
			chrome_meta(w, "thread_name", pid, track, buf);
		}
		if (!args)
			args = json_object_new_object();
		json_object_object_add(args, "ret", json_object_new_int64(ret));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "cat", json_object_new_string(ioctl ? "ioctl" : nccl ? "nccl" : gpu ? "gpu" : "cuda"));
		json_object_object_add(o, "ph", json_object_new_string("X"));
		json_object_object_add(o, "ts", num__json_us(ts_ns));
		json_object_object_add(o, "dur", num__json_us(dur_ns));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "tid", json_object_new_int64(track));
		json_object_object_add(o, "args", args);
	}
	emit_line(w, o);
	w->written++;
}

void trace_writer__counter(struct trace_writer *w, uint32_t pid, const char *name, uint64_t ts_ns,
			   const struct trace_series *series, size_t n)
{
	json_object *o, *vals;
	size_t kept = 0;

	if (!name || n > TRACE_SERIES_MAX)
		return;
	vals = json_object_new_object();
	for (size_t i = 0; i < n; i++) {
		if (!series[i].name || !isfinite(series[i].value))
			continue;
		json_object_object_add(vals, series[i].name, num__json_double(series[i].value));
		kept++;
	}
	if (!kept) {
		json_object_put(vals);
		return;
	}
	o = json_object_new_object();
	if (w->fmt == TRACE_JSONL) {
		json_object_object_add(o, "type", json_object_new_string("counter"));
		json_object_object_add(o, "ts_ns", json_object_new_uint64(ts_ns));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "values", vals);
	} else {
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "cat", json_object_new_string("counter"));
		json_object_object_add(o, "ph", json_object_new_string("C"));
		json_object_object_add(o, "ts", num__json_us(ts_ns));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "args", vals);
	}
	emit_line(w, o);
	w->counters++;
}

void trace_writer__instant(struct trace_writer *w, uint32_t pid, uint32_t tid, const char *name, uint64_t ts_ns,
			   json_object *args)
{
	json_object *o = json_object_new_object();

	if (!args)
		args = json_object_new_object();
	if (w->fmt == TRACE_JSONL) {
		json_object_object_add(o, "type", json_object_new_string("instant"));
		json_object_object_add(o, "ts_ns", json_object_new_uint64(ts_ns));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "tid", json_object_new_int64(tid));
		json_object_object_add(o, "name", json_object_new_string(name));
	} else {
		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "cat", json_object_new_string("process"));
		json_object_object_add(o, "ph", json_object_new_string("i"));
		json_object_object_add(o, "s", json_object_new_string("p"));
		json_object_object_add(o, "ts", num__json_us(ts_ns));
		json_object_object_add(o, "pid", json_object_new_int64(pid));
		json_object_object_add(o, "tid", json_object_new_int64(tid));
	}
	json_object_object_add(o, "args", args);
	emit_line(w, o);
	w->instants++;
}

uint64_t trace_writer__instants(const struct trace_writer *w)
{
	return w->instants;
}

uint64_t trace_writer__written(const struct trace_writer *w)
{
	return w->written;
}

uint64_t trace_writer__counters(const struct trace_writer *w)
{
	return w->counters;
}

static void chrome_tail(FILE *f, json_object *other)
{
	fprintf(f, "\n],\"otherData\":%s}\n", other ? json_object_to_json_string_ext(other, JFLAGS) : "{}");
}

int trace_writer__close(struct trace_writer *w, json_object *summary)
{
	int err = 0;

	if (!w) {
		json_object_put(summary);
		return 0;
	}
	num__json_shorten(summary);
	if (w->fmt == TRACE_JSONL) {
		if (summary) {
			json_object_object_add(summary, "type", json_object_new_string("summary"));
			fprintf(w->f, "%s\n", json_object_to_json_string_ext(summary, JFLAGS));
		}
	} else {
		chrome_tail(w->f, summary);
	}
	json_object_put(summary);
	if (w->own) {
		err = outfile__close(w->f);
	} else if (fflush(w->f) || ferror(w->f)) {
		err = -EIO;
	}
	writer_free(w);
	return err;
}

/* --- convert ------------------------------------------------------------------------- */

static bool get_int(json_object *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	errno = 0;
	*out = json_object_get_int64(v);
	return !errno && *out >= lo && *out <= hi;
}

static bool get_u64(json_object *o, const char *key, uint64_t *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return false;
	/* json-c reads a negative number as 0 here: ask for the signed value first */
	if (json_object_get_int64(v) < 0)
		return false;
	*out = json_object_get_uint64(v);
	return true;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

enum rec { REC_BAD, REC_UNKNOWN, REC_OK };

/* The optional "args" object of o, with a reference for the writer (NULL: none);
 * false when it is there but not an object. */
static bool get_args(json_object *o, json_object **args)
{
	*args = NULL;
	if (!json_object_object_get_ex(o, "args", args))
		return true;
	if (!json_object_is_type(*args, json_type_object))
		return false;
	json_object_get(*args);
	return true;
}

/* The pid and tid (32-bit) and ts_ns every thread record has. */
static bool get_thread(json_object *o, int64_t *pid, int64_t *tid, uint64_t *ts)
{
	return get_int(o, "pid", 0, UINT32_MAX, pid) && get_int(o, "tid", 0, UINT32_MAX, tid) &&
	       get_u64(o, "ts_ns", ts);
}

/* "call", "ioctl", "nccl": one call, entry to return. */
static enum rec convert_event(struct trace_writer *w, json_object *o, const char *type)
{
	const char *fn = get_str(o, "fn");
	int64_t pid, tid, ret;
	uint64_t ts, dur;
	json_object *args;

	if (!fn || !get_thread(o, &pid, &tid, &ts) || !get_u64(o, "dur_ns", &dur) ||
	    !get_int(o, "ret", INT64_MIN, INT64_MAX, &ret) || !get_args(o, &args))
		return REC_BAD;
	trace_writer__event(w, type, (uint32_t)pid, (uint32_t)tid, fn, ts, dur, ret, args);
	return REC_OK;
}

static enum rec convert_instant(struct trace_writer *w, json_object *o)
{
	const char *name = get_str(o, "name");
	int64_t pid, tid;
	json_object *args;
	uint64_t ts;

	if (!name || !get_thread(o, &pid, &tid, &ts) || !get_args(o, &args))
		return REC_BAD;
	trace_writer__instant(w, (uint32_t)pid, (uint32_t)tid, name, ts, args);
	return REC_OK;
}

/* A counter sample: 1 to TRACE_SERIES_MAX numbers. */
static enum rec convert_counter(struct trace_writer *w, json_object *o)
{
	struct trace_series s[TRACE_SERIES_MAX];
	const char *name = get_str(o, "name");
	json_object *vals;
	size_t n = 0;
	int64_t pid;
	uint64_t ts;

	if (!name || !get_int(o, "pid", 0, UINT32_MAX, &pid) || !get_u64(o, "ts_ns", &ts) ||
	    !json_object_object_get_ex(o, "values", &vals) || !json_object_is_type(vals, json_type_object) ||
	    json_object_object_length(vals) < 1 || json_object_object_length(vals) > TRACE_SERIES_MAX)
		return REC_BAD;
	json_object_object_foreach(vals, k, v) {
		if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
			return REC_BAD;
		s[n].name = k;
		s[n++].value = json_object_get_double(v);
	}
	trace_writer__counter(w, (uint32_t)pid, name, ts, s, n);
	return REC_OK;
}

/* Writes one JSON Lines record to w; the summary is kept in *summary. */
static enum rec convert_record(struct trace_writer *w, json_object *o, json_object **summary)
{
	const char *type = json_object_is_type(o, json_type_object) ? get_str(o, "type") : NULL;
	int64_t pid;

	if (!type)
		return REC_BAD;
	if (!strcmp(type, "process")) {
		if (!get_int(o, "pid", 0, UINT32_MAX, &pid))
			return REC_BAD;
		trace_writer__process_name(w, (uint32_t)pid, get_str(o, "comm"));
		return REC_OK;
	}
	if (!strcmp(type, "summary")) {
		json_object_put(*summary);
		*summary = json_object_get(o);
		json_object_object_del(*summary, "type");
		return REC_OK;
	}
	if (!strcmp(type, "call") || !strcmp(type, "ioctl") || !strcmp(type, "nccl") || !strcmp(type, "gpu"))
		return convert_event(w, o, type);
	if (!strcmp(type, "instant"))
		return convert_instant(w, o);
	if (!strcmp(type, "counter"))
		return convert_counter(w, o);
	return REC_UNKNOWN;
}

/* A whole line as one JSON value, nothing after it but spaces; NULL otherwise. */
static json_object *parse_line(struct json_tokener *tok, const char *line, size_t n)
{
	json_object *o;
	size_t end;

	if (memchr(line, '\0', n))
		return NULL;
	json_tokener_reset(tok);
	o = json_tokener_parse_ex(tok, line, (int)n);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		return NULL;
	}
	for (end = json_tokener_get_parse_end(tok); end < n; end++)
		if (line[end] != ' ' && line[end] != '\t' && line[end] != '\r') {
			json_object_put(o);
			return NULL;
		}
	return o;
}

static void dropped(struct trace_convert_stats *st, size_t *why)
{
	(*why)++;
	st->dropped++;
	if (!st->first_dropped)
		st->first_dropped = st->lines;
}

/* Converts every line of in into w, counting in st; 0, or -errno with one line in err
 * when reading fails (what was converted stays). */
static int convert_lines(FILE *in, const char *in_path, struct trace_writer *w, struct json_tokener *tok,
			 char *line, struct trace_convert_stats *st, json_object **summary, char *err,
			 size_t len)
{
	for (;;) {
		size_t n;
		bool nl;
		enum line_status ls = lines__read(in, line, TRACE_LINE_MAX + 1, &n, &nl);
		json_object *o;
		enum rec k;

		if (ls == LINE_EOF)
			return 0;
		if (ls == LINE_ERROR) {
			int r = -errno;

			snprintf(err, len, "%s: reading line %zu: %s", in_path, st->lines + 1, strerror(-r));
			return r;
		}
		st->lines++;
		if (ls == LINE_LONG) {
			dropped(st, &st->too_long);
			continue;
		}
		if (!n)
			continue;
		o = parse_line(tok, line, n);
		if (!o) {
			/* a last line without its newline that does not parse: the writer was
			 * stopped inside it */
			dropped(st, nl ? &st->malformed : &st->truncated);
			continue;
		}
		k = convert_record(w, o, summary);
		json_object_put(o);
		if (k == REC_OK)
			st->records++;
		else
			dropped(st, k == REC_BAD ? &st->malformed : &st->unknown);
	}
}

/* The document's otherData: the trace's summary, and what convert dropped when it
 * dropped anything or found no summary. */
static json_object *other_data(const struct trace_convert_stats *st, json_object *summary)
{
	json_object *other, *c;

	if (!st->dropped && summary)
		return json_object_get(summary);
	other = summary ? json_object_get(summary) : json_object_new_object();
	c = json_object_new_object();
	json_object_object_add(c, "lines", json_object_new_uint64(st->lines));
	json_object_object_add(c, "records", json_object_new_uint64(st->records));
	json_object_object_add(c, "dropped_lines", json_object_new_uint64(st->dropped));
	json_object_object_add(c, "truncated", json_object_new_boolean(st->truncated > 0));
	json_object_object_add(c, "summary_missing", json_object_new_boolean(!summary));
	json_object_object_add(other, "convert", c);
	return other;
}

/* Input that gave no record at all is not a trace: -EINVAL with the reason. */
static int no_record(const char *in_path, const struct trace_convert_stats *st, char *err, size_t len)
{
	if (!st->dropped || st->records)
		return 0;
	if (st->dropped == st->truncated)
		snprintf(err, len, "%s: no complete record: the trace ends inside its first line", in_path);
	else
		snprintf(err, len, "%s: not a gpuprobe JSON Lines trace (no record in %zu lines)", in_path,
			 st->lines);
	return -EINVAL;
}

int trace__convert(const char *in_path, FILE *out, struct trace_convert_stats *st, char *err,
		   size_t len)
{
	bool std = !strcmp(in_path, "-");
	FILE *in = std ? stdin : fopen(in_path, "r");
	struct json_tokener *tok = NULL;
	struct trace_writer *w = NULL;
	json_object *summary = NULL, *other = NULL;
	char *line = NULL;
	int r = 0;

	memset(st, 0, sizeof(*st));
	if (!in) {
		r = -errno;
		snprintf(err, len, "%s: %s", in_path, strerror(errno));
		goto cleanup;
	}
	line = malloc(TRACE_LINE_MAX + 1);
	tok = json_tokener_new_ex(CONVERT_JSON_DEPTH);
	if (!line || !tok || !(w = writer_new(out, TRACE_CHROME))) {
		r = -ENOMEM;
		snprintf(err, len, "out of memory");
		goto cleanup;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	/* from here on the document is always finished, whatever the input holds */
	r = convert_lines(in, in_path, w, tok, line, st, &summary, err, len);
	st->summary = summary != NULL;
	other = other_data(st, summary);
	num__json_shorten(other);
	chrome_tail(out, other);
	if ((fflush(out) || ferror(out)) && !r) {
		r = -EIO;
		snprintf(err, len, "writing the output: %s", strerror(EIO));
	}
	if (!r)
		r = no_record(in_path, st, err, len);
cleanup:
	json_object_put(summary);
	json_object_put(other);
	if (tok)
		json_tokener_free(tok);
	free(line);
	if (in && !std)
		fclose(in);
	writer_free(w);
	return r;
}

int trace__convert_chrome(const char *in_path, FILE *out, char *err, size_t len)
{
	struct trace_convert_stats st;
	int r = trace__convert(in_path, out, &st, err, len);
	char why[160] = "";
	size_t o = 0;

	if (r || !st.dropped)
		return r;
	if (st.truncated)
		o += snprintf(why + o, sizeof(why) - o, ", the last cut short");
	if (st.malformed && o < sizeof(why))
		o += snprintf(why + o, sizeof(why) - o, ", %zu not a complete record", st.malformed);
	if (st.too_long && o < sizeof(why))
		o += snprintf(why + o, sizeof(why) - o, ", %zu longer than %d bytes", st.too_long, TRACE_LINE_MAX);
	if (st.unknown && o < sizeof(why))
		snprintf(why + o, sizeof(why) - o, ", %zu of a record type this gpuprobe does not know", st.unknown);
	fprintf(stderr, "gpuprobe: convert: %s: dropped %zu of %zu lines (first: line %zu%s); converted %zu records\n",
		in_path, st.dropped, st.lines, st.first_dropped, why, st.records);
	return 0;
}

/* ---- the writer as a trace_sink (src/lib/tracesink.h) ---- */

static void sink_event(void *w, const char *kind, uint32_t pid, uint32_t tid, const char *name, uint64_t ts_ns,
		       uint64_t dur_ns, int64_t ret, struct json_object *args)
{
	trace_writer__event(w, kind, pid, tid, name, ts_ns, dur_ns, ret, args);
}

static void sink_process_name(void *w, uint32_t pid, const char *comm)
{
	trace_writer__process_name(w, pid, comm);
}

static void sink_instant(void *w, uint32_t pid, uint32_t tid, const char *name, uint64_t ts_ns,
			 struct json_object *args)
{
	trace_writer__instant(w, pid, tid, name, ts_ns, args);
}

static void sink_counter(void *w, uint32_t pid, const char *name, uint64_t ts_ns, const struct trace_series *series,
			 size_t n)
{
	trace_writer__counter(w, pid, name, ts_ns, series, n);
}

static uint64_t sink_written(const void *w)
{
	return trace_writer__written(w);
}

static uint64_t sink_instants(const void *w)
{
	return trace_writer__instants(w);
}

static uint64_t sink_counters(const void *w)
{
	return trace_writer__counters(w);
}

static int sink_close(void *w, struct json_object *summary)
{
	return trace_writer__close(w, summary);
}

static const struct trace_sink_ops writer_ops = {
	.event = sink_event,
	.process_name = sink_process_name,
	.instant = sink_instant,
	.counter = sink_counter,
	.written = sink_written,
	.instants = sink_instants,
	.counters = sink_counters,
	.close = sink_close,
};

int trace_writer__sink(struct trace_sink *s, const char *path, bool chrome)
{
	struct trace_writer *w = trace_writer__open(path, chrome ? TRACE_CHROME : TRACE_JSONL);

	if (!w)
		return -errno;
	s->ops = &writer_ops;
	s->w = w;
	return 0;
}
