/* SPDX-License-Identifier: BSD-3-Clause */
/* The trace writer's counter events and process instants in both formats, renamed tracks,
 * exact microseconds, and convert:
 * every complete record carried over (counters included), every other line dropped and
 * counted, a complete document every time, checked against the Trace Event Format by
 * tests/tools/check_chrome_trace.py. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <json-c/json.h>
#include "out/outfile.h"
#include "out/trace.h"
#include "unit.h"

#define PLEN 512
static char tools[PLEN];
static char tmpdir[] = "/tmp/gp-trace-XXXXXX";
static char last_out[4096];

/* tests/tools beside this binary's .output/unit, or under the working directory (a build
 * elsewhere, e.g. with sanitizers) */
static void find_tools(void)
{
	char exe[PLEN - 16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *p;

	snprintf(tools, sizeof(tools), "tests/tools");
	if (n <= 0)
		return;
	exe[n] = '\0';
	for (int i = 0; i < 3 && (p = strrchr(exe, '/')); i++)
		*p = '\0';
	snprintf(tools, sizeof(tools), "%s/tests/tools", exe);
	if (access(tools, F_OK))
		snprintf(tools, sizeof(tools), "tests/tools");
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* check_chrome_trace.py on path: its exit status, its JSON line in last_out */
static int validate(const char *path)
{
	char cmd[PLEN * 3];
	FILE *p;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "python3 %s/check_chrome_trace.py %s 2>&1", tools, path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(last_out, 1, sizeof(last_out) - 1, p);
	last_out[n] = '\0';
	st = pclose(p);
	if (st)
		printf("#   %s", last_out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1))) {
		buf[fread(buf, 1, (size_t)n, f)] = '\0';
	}
	fclose(f);
	return buf;
}

static void write_sample(struct trace_writer *w)
{
	struct trace_series mem[] = { { "gpu0", 1048576 }, { "gpu1", 0.5 } };
	struct trace_series copy[] = { { "H2D", 6.759035e-07 }, { "D2H", NAN }, { "D2D", 3e9 } };
	struct trace_series none[] = { { "x", INFINITY }, { NULL, 1 } };
	json_object *args = json_object_new_object();

	json_object_object_add(args, "bytes", json_object_new_int(4096));
	trace_writer__process_name(w, 42, "train");
	trace_writer__event(w, "call", 42, 43, "cuMemcpyHtoD_v2", 1234567, 11537, 0, args);
	trace_writer__event(w, "ioctl", 42, 43, "NV_ESC_RM_CONTROL", 1300000, 2000, -25, NULL);
	trace_writer__counter(w, 42, "outstanding bytes", 1234567, mem, 2);
	trace_writer__counter(w, 42, "copy bytes", 2000000, copy, 3);
	trace_writer__counter(w, 42, "nothing", 2000001, none, 2);	/* no finite value: not written */
	trace_writer__counter(w, 42, "too many", 2000002, mem, TRACE_SERIES_MAX + 1);
	trace_writer__counter(w, 42, "launches", 3000000, (struct trace_series[]){ { "launches", 250 } }, 1);
}

static void test_jsonl_counter_records(void)
{
	char path[PLEN];
	struct trace_writer *w;
	char *text, *p;

	tmp_path(path, sizeof(path), "w.jsonl");
	w = trace_writer__open(path, TRACE_JSONL);
	if (!ASSERT_TRUE(w, "jsonl_opened"))
		goto cleanup;
	write_sample(w);
	if (!ASSERT_EQ(trace_writer__written(w), 2, "written"))
		goto cleanup;
	if (!ASSERT_EQ(trace_writer__counters(w), 3, "counters"))
		goto cleanup;
	if (!ASSERT_EQ(trace_writer__close(w, json_object_new_object()), 0, "close"))
		goto cleanup;
	text = slurp(path);
	if (!ASSERT_TRUE(text, "jsonl_read"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(text, "{\"type\":\"counter\",\"ts_ns\":1234567,\"pid\":42,\"name\":\"outstanding bytes\","
				  "\"values\":{\"gpu0\":1048576,\"gpu1\":0.5}}\n", "contains {type:counter,ts_ns:1234567,pid:42,name:outstand..."))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(text, "{\"type\":\"counter\",\"ts_ns\":2000000,\"pid\":42,\"name\":\"copy bytes\","
				  "\"values\":{\"H2D\":6.759035e-07,\"D2D\":3000000000}}\n", "contains {type:counter,ts_ns:2000000,pid:42,name:copy bytes,"))
		goto cleanup;
	if (!ASSERT_TRUE(!strstr(text, "nothing") && !strstr(text, "too many"), "no_nothing_or_too_many"))
		goto cleanup;
	/* every line is one JSON object */
	for (p = text; *p;) {
		char *nl = strchr(p, '\n');
		json_object *o;

		if (!ASSERT_TRUE(nl, "line_ended"))
			goto cleanup;
		*nl = '\0';
		o = json_tokener_parse(p);
		if (!ASSERT_TRUE(o && json_object_is_type(o, json_type_object), "line_is_object"))
			goto cleanup;
		json_object_put(o);
		p = nl + 1;
	}
cleanup:
	free(text);
}

static void test_chrome_counter_events(void)
{
	char path[PLEN];
	struct trace_writer *w;
	char *text;

	tmp_path(path, sizeof(path), "w.json");
	w = trace_writer__open(path, TRACE_CHROME);
	if (!ASSERT_TRUE(w, "chrome_opened"))
		goto cleanup;
	write_sample(w);
	if (!ASSERT_EQ(trace_writer__close(w, NULL), 0, "close"))
		goto cleanup;
	if (!ASSERT_EQ(validate(path), 0, "validate"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(last_out, "\"by_ph\": {\"M\": 3, \"X\": 2, \"C\": 3}", "contains by_ph: {M: 3, X: 2, C: 3}"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(last_out, "\"counter_tracks\": [\"42 copy bytes D2D\", \"42 copy bytes H2D\", "
				      "\"42 launches launches\", \"42 outstanding bytes gpu0\", \"42 outstanding bytes gpu1\"]", "contains counter_tracks: [42 copy bytes D2D, 42 copy byte..."))
		goto cleanup;
	text = slurp(path);
	if (!ASSERT_TRUE(text, "chrome_read"))
		goto cleanup;
	/* exact microseconds: no 11.537000000000001 */
	if (!ASSERT_STR_CONTAINS(text, "\"ts\":1234.567,\"dur\":11.537,", "contains ts:1234.567,dur:11.537,"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(text, "{\"name\":\"outstanding bytes\",\"cat\":\"counter\",\"ph\":\"C\",\"ts\":1234.567,"
				  "\"pid\":42,\"args\":{\"gpu0\":1048576,\"gpu1\":0.5}}", "contains {name:outstanding bytes,cat:counter,ph:C,ts:1234..."))
		goto cleanup;
cleanup:
	free(text);
}

/* The JSON Lines file converted gives what the Chrome writer gives directly. */
static void test_convert_matches_the_chrome_writer(void)
{
	char jl[PLEN], direct[PLEN], conv[PLEN], err[256] = "";
	struct trace_convert_stats st;
	struct trace_writer *w;
	char *a, *b;
	FILE *out;

	tmp_path(jl, sizeof(jl), "m.jsonl");
	tmp_path(direct, sizeof(direct), "m-direct.json");
	tmp_path(conv, sizeof(conv), "m-conv.json");
	for (int k = 0; k < 2; k++) {
		json_object *sum = json_object_new_object();

		json_object_object_add(sum, "events_written", json_object_new_int(2));
		w = trace_writer__open(k ? direct : jl, k ? TRACE_CHROME : TRACE_JSONL);
		if (!ASSERT_TRUE(w, "writer_opened"))
			goto cleanup;
		write_sample(w);
		if (!ASSERT_EQ(trace_writer__close(w, sum), 0, "close"))
			goto cleanup;
	}
	out = fopen(conv, "w");
	if (!ASSERT_TRUE(out, "out_opened"))
		goto cleanup;
	if (!ASSERT_EQ(trace__convert(jl, out, &st, err, sizeof(err)), 0, "convert"))
		goto cleanup;
	fclose(out);
	if (!ASSERT_EQ(st.lines, 7, "lines"))
		goto cleanup;
	if (!ASSERT_EQ(st.records, 7, "records"))
		goto cleanup;
	if (!ASSERT_EQ(st.dropped, 0, "dropped"))
		goto cleanup;
	if (!ASSERT_TRUE(st.summary, "summary"))
		goto cleanup;
	a = slurp(direct);
	b = slurp(conv);
	if (!ASSERT_TRUE(a && b, "both_read"))
		goto cleanup;
	if (!ASSERT_STR_EQ(b, a, "same_as_direct"))
		goto cleanup;
cleanup:
	free(a);
	free(b);
}

static int convert_text(const char *text, size_t n, struct trace_convert_stats *st, char *err, size_t len,
			char **doc)
{
	char in[PLEN], outp[PLEN];
	FILE *f;
	int r;

	tmp_path(in, sizeof(in), "c.jsonl");
	tmp_path(outp, sizeof(outp), "c.json");
	f = fopen(in, "w");
	if (!f)
		return -errno;
	fwrite(text, 1, n, f);
	fclose(f);
	f = fopen(outp, "w");
	if (!f)
		return -errno;
	r = trace__convert(in, f, st, err, len);
	fclose(f);
	*doc = slurp(outp);
	if (validate(outp))
		r = 1000;
	return r;
}

static void test_convert_drops_and_counts(void)
{
	static const char good1[] = "{\"type\":\"process\",\"pid\":7,\"comm\":\"a\"}\n";
	static const char call[] = "{\"type\":\"call\",\"ts_ns\":1000,\"pid\":7,\"tid\":7,\"fn\":\"cuInit\",\"dur_ns\":5,\"ret\":0,\"args\":{}}\n";
	static const char ctr[] = "{\"type\":\"counter\",\"ts_ns\":2000,\"pid\":7,\"name\":\"launches\",\"values\":{\"n\":3}}\n";
	static const char *const bad[] = {
		"not json at all\n",
		"[1,2,3]\n",
		"{\"no_type\":1}\n",
		"{\"type\":\"call\",\"ts_ns\":1,\"pid\":7,\"tid\":7,\"dur_ns\":1,\"ret\":0}\n",		/* no fn */
		"{\"type\":\"call\",\"ts_ns\":-1,\"pid\":7,\"tid\":7,\"fn\":\"f\",\"dur_ns\":1,\"ret\":0}\n",	/* negative time */
		"{\"type\":\"call\",\"ts_ns\":1,\"pid\":\"7\",\"tid\":7,\"fn\":\"f\",\"dur_ns\":1,\"ret\":0}\n",	/* pid a string */
		"{\"type\":\"call\",\"ts_ns\":1,\"pid\":4294967296,\"tid\":7,\"fn\":\"f\",\"dur_ns\":1,\"ret\":0}\n",
		"{\"type\":\"call\",\"ts_ns\":1,\"pid\":7,\"tid\":7,\"fn\":\"f\",\"dur_ns\":1,\"ret\":0,\"args\":[]}\n",
		"{\"type\":\"counter\",\"ts_ns\":1,\"pid\":7,\"name\":\"c\",\"values\":{}}\n",
		"{\"type\":\"counter\",\"ts_ns\":1,\"pid\":7,\"name\":\"c\",\"values\":{\"a\":\"1\"}}\n",
		"{\"type\":\"call\"} trailing\n",
		"{\"type\":\"process\",\"pid\":7}{\"type\":\"process\",\"pid\":8}\n",
		"{'type':'process','pid':9}\n",		/* not strict JSON */
	};
	char *text = malloc(TRACE_LINE_MAX + 8192), err[256] = "", *doc = NULL;
	struct trace_convert_stats st;
	size_t o = 0;
	int r;

	if (!ASSERT_TRUE(text, "read"))
		goto cleanup;
	o += (size_t)sprintf(text + o, "%s%s\n", good1, call);	/* a blank line: skipped, not dropped */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		o += (size_t)sprintf(text + o, "%s", bad[i]);
	o += (size_t)sprintf(text + o, "{\"type\":\"future_kind\",\"x\":1}\n");
	memcpy(text + o, "{\"type\":\"process\",\0\"pid\":1}\n", 28);		/* a NUL byte */
	o += 28;
	memset(text + o, ' ', TRACE_LINE_MAX + 1);				/* too long */
	o += TRACE_LINE_MAX + 1;
	text[o++] = '\n';
	o += (size_t)sprintf(text + o, "%s%s", ctr, call);
	o += (size_t)sprintf(text + o, "{\"type\":\"call\",\"ts_ns\":3000,\"pid\":7,\"tid\":8,\"fn\":\"cu");	/* cut */
	r = convert_text(text, o, &st, err, sizeof(err), &doc);
	if (!ASSERT_EQ(r, 0, "convert_ok"))
		goto cleanup;
	if (!ASSERT_EQ(st.lines, 3 + 13 + 1 + 1 + 1 + 3, "lines"))
		goto cleanup;
	if (!ASSERT_EQ(st.records, 4, "records"))
		goto cleanup;
	if (!ASSERT_EQ(st.malformed, 14, "malformed"))
		goto cleanup;
	if (!ASSERT_EQ(st.unknown, 1, "unknown"))
		goto cleanup;
	if (!ASSERT_EQ(st.too_long, 1, "too_long"))
		goto cleanup;
	if (!ASSERT_EQ(st.truncated, 1, "truncated"))
		goto cleanup;
	if (!ASSERT_EQ(st.dropped, 17, "dropped"))
		goto cleanup;
	if (!ASSERT_EQ(st.first_dropped, 4, "first_dropped"))
		goto cleanup;
	if (!ASSERT_TRUE(!st.summary, "no_summary"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(last_out, "\"by_ph\": {\"M\": 2, \"X\": 2, \"C\": 1}", "contains by_ph: {M: 2, X: 2, C: 1}"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(doc, "\"otherData\":{\"convert\":{\"lines\":22,\"records\":4,\"dropped_lines\":17,"
				 "\"truncated\":true,\"summary_missing\":true}}", "contains otherData:{convert:{lines:22,records:4,dropped_l..."))
		goto cleanup;
cleanup:
	free(doc);
	free(text);
}

static void test_convert_edge_cases(void)
{
	struct trace_convert_stats st;
	char err[256] = "", *doc = NULL;
	static const char chrome[] = "{\"traceEvents\":[\n{\"name\":\"x\",\"ph\":\"X\"}\n]}\n";
	static const char cut[] = "{\"type\":\"process\",\"pid\"";
	static const char summary[] = "{\"events_written\":0,\"type\":\"summary\"}";

	/* empty: a complete, empty document that says the summary is missing */
	if (!ASSERT_EQ(convert_text("", 0, &st, err, sizeof(err), &doc), 0, "convert_empty"))
		goto cleanup;
	if (!ASSERT_STR_EQ(doc, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n\n],\"otherData\":{\"convert\":{\"lines\":0,"
			   "\"records\":0,\"dropped_lines\":0,\"truncated\":false,\"summary_missing\":true}}}\n", "doc"))
		goto cleanup;
	free(doc);
	/* a Chrome file is not JSON Lines: an error, and still a complete document */
	if (!ASSERT_EQ(convert_text(chrome, strlen(chrome), &st, err, sizeof(err), &doc), -EINVAL, "convert_chrome"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "not a gpuprobe JSON Lines trace (no record in 3 lines)", "contains not a gpuprobe JSON Lines trace (no record in 3 ..."))
		goto cleanup;
	free(doc);
	if (!ASSERT_EQ(convert_text(cut, strlen(cut), &st, err, sizeof(err), &doc), -EINVAL, "convert_text"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "no complete record: the trace ends inside its first line", "contains no complete record: the trace ends inside its fi..."))
		goto cleanup;
	free(doc);
	/* the summary without its newline is complete: kept, nothing dropped */
	if (!ASSERT_EQ(convert_text(summary, strlen(summary), &st, err, sizeof(err), &doc), 0, "convert_summary_only"))
		goto cleanup;
	if (!ASSERT_EQ(st.dropped, 0, "dropped"))
		goto cleanup;
	if (!ASSERT_TRUE(st.summary, "summary"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(doc, "],\"otherData\":{\"events_written\":0}}\n", "contains ],otherData:{events_written:0}}"))
		goto cleanup;
	free(doc);
	/* an input that cannot be opened: an error and nothing written */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);

		if (!ASSERT_EQ(trace__convert("/nonexistent/t.jsonl", m, &st, err, sizeof(err)), -ENOENT, "convert_missing"))
			goto cleanup;
		fclose(m);
		if (!ASSERT_EQ(len, 0, "no_err_len"))
			goto cleanup;
		if (!ASSERT_STR_EQ(err, "/nonexistent/t.jsonl: No such file or directory", "err_names_file"))
			goto cleanup;
		free(buf);
	}
	/* a full disk */
	{
		char in[PLEN];
		FILE *full = fopen("/dev/full", "w"), *f;

		tmp_path(in, sizeof(in), "full.jsonl");
		f = fopen(in, "w");
		if (!ASSERT_TRUE(full && f, "full_opened"))
			goto cleanup;
		fputs(summary, f);
		fclose(f);
		if (!ASSERT_EQ(trace__convert(in, full, &st, err, sizeof(err)), -EIO, "convert"))
			goto cleanup;
		if (!ASSERT_STR_CONTAINS(err, "writing the output", "contains writing the output"))
			goto cleanup;
		fclose(full);
	}
cleanup:;
}

/* trace__convert_chrome (what `gpuprobe convert --chrome` calls) says on stderr what it
 * dropped, in one line, and succeeds. */
static void test_convert_chrome_reports_drops(void)
{
	char in[PLEN], errf[PLEN], err[256] = "";
	static const char text[] = "{\"type\":\"process\",\"pid\":7,\"comm\":\"a\"}\ngarbage\n{\"type\":\"process\",\"pid\":8,\"co";
	FILE *f, *null = fopen("/dev/null", "w");
	int se, fe, r;
	char *msg;

	tmp_path(in, sizeof(in), "r.jsonl");
	tmp_path(errf, sizeof(errf), "r.err");
	f = fopen(in, "w");
	if (!ASSERT_TRUE(f && null, "files_opened"))
		goto cleanup;
	fputs(text, f);
	fclose(f);
	fflush(stderr);
	se = dup(2);
	fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fe, 2);
	r = trace__convert_chrome(in, null, err, sizeof(err));
	fflush(stderr);
	dup2(se, 2);
	close(se);
	close(fe);
	fclose(null);
	if (!ASSERT_EQ(r, 0, "convert_ok"))
		goto cleanup;
	msg = slurp(errf);
	if (!ASSERT_TRUE(msg, "err_read"))
		goto cleanup;
	if (!ASSERT_TRUE(strstr(msg, "gpuprobe: convert: ") == msg, "err_prefixed"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(msg, "r.jsonl: dropped 2 of 3 lines (first: line 2, the last cut short, 1 not a complete record); converted 1 records\n", "contains r.jsonl: dropped 2 of 3 lines (first: line 2, th..."))
		goto cleanup;
	if (!ASSERT_TRUE(!strchr(msg, '\n')[1], "!strchr(msg, '')[1]"))
		goto cleanup;
cleanup:
	free(msg);
}

/* Output files: no symlinks followed, 0600, only regular files truncated. */
static void test_output_files(void)
{
	char file[PLEN], link[PLEN], fifo[PLEN];
	struct stat st;
	FILE *f;
	char *text;

	tmp_path(file, sizeof(file), "out.json");
	tmp_path(link, sizeof(link), "link.json");
	tmp_path(fifo, sizeof(fifo), "fifo");
	f = outfile__open(file);
	if (!ASSERT_TRUE(f, "opened"))
		goto cleanup;
	fputs("first version, longer\n", f);
	if (!ASSERT_EQ(outfile__close(f), 0, "close"))
		goto cleanup;
	if (!ASSERT_EQ(stat(file, &st), 0, "stat"))
		goto cleanup;
	if (!ASSERT_EQ(st.st_mode & 0777, 0600, "st_mode"))
		goto cleanup;
	f = outfile__open(file);
	if (!ASSERT_TRUE(f, "reopened"))
		goto cleanup;
	fputs("second\n", f);
	if (!ASSERT_EQ(outfile__close(f), 0, "close"))
		goto cleanup;
	text = slurp(file);
	if (!ASSERT_STR_EQ(text, "second\n", "rewritten"))
		goto cleanup;
	free(text);
	/* a symlink, even to a file we may write, is not followed: the target is untouched */
	if (!ASSERT_EQ(symlink(file, link), 0, "symlink"))
		goto cleanup;
	errno = 0;
	if (!ASSERT_TRUE(!outfile__open(link), "no_open"))
		goto cleanup;
	if (!ASSERT_EQ(errno, ELOOP, "errno_eloop"))
		goto cleanup;
	if (!ASSERT_TRUE(!trace_writer__open(link, TRACE_CHROME), "no_open"))
		goto cleanup;
	if (!ASSERT_EQ(errno, ELOOP, "errno_eloop"))
		goto cleanup;
	text = slurp(file);
	if (!ASSERT_STR_EQ(text, "second\n", "unchanged"))
		goto cleanup;
	free(text);
	errno = 0;
	if (!ASSERT_TRUE(!outfile__open(tmpdir), "no_open"))
		goto cleanup;
	if (!ASSERT_EQ(errno, EISDIR, "errno_eisdir"))
		goto cleanup;
	/* a character device and a FIFO are written as they are */
	f = outfile__open("/dev/null");
	if (!ASSERT_TRUE(f, "devnull_opened"))
		goto cleanup;
	if (!ASSERT_EQ(outfile__close(f), 0, "close"))
		goto cleanup;
	if (!ASSERT_EQ(mkfifo(fifo, 0600), 0, "mkfifo"))
		goto cleanup;
	{
		int rd = open(fifo, O_RDONLY | O_NONBLOCK);
		char buf[16] = "";

		if (!ASSERT_TRUE(rd >= 0, "fifo_reader"))
			goto cleanup;
		f = outfile__open(fifo);
		if (!ASSERT_TRUE(f, "fifo_opened"))
			goto cleanup;
		fputs("via fifo", f);
		if (!ASSERT_EQ(outfile__close(f), 0, "close"))
			goto cleanup;
		if (!ASSERT_EQ(read(rd, buf, sizeof(buf) - 1), 8, "read"))
			goto cleanup;
		if (!ASSERT_STR_EQ(buf, "via fifo", "fifo_content"))
			goto cleanup;
		close(rd);
	}
	if (!ASSERT_EQ(outfile__close(NULL), 0, "close"))
		goto cleanup;
cleanup:;
}

/* --csv's files: appended to, never truncated, the same refusals as outfile__open. */
static void test_output_files_append(void)
{
	char path[PLEN], link[PLEN];
	struct stat st;
	char *text = NULL;
	FILE *f;

	tmp_path(path, sizeof(path), "append.csv");
	tmp_path(link, sizeof(link), "append-link.csv");
	for (int i = 0; i < 2; i++) {
		f = outfile__open_append(path);
		if (!ASSERT_TRUE(f, "open for appending"))
			goto cleanup;
		if (!ASSERT_EQ(fseek(f, 0, SEEK_END), 0, "seek") || !ASSERT_EQ(ftell(f), i ? 6 : 0, "empty the first time only"))
			goto cleanup;
		fputs(i ? "row 2\n" : "row 1\n", f);
		if (!ASSERT_EQ(outfile__close(f), 0, "close"))
			goto cleanup;
	}
	text = slurp(path);
	if (!ASSERT_STR_EQ(text, "row 1\nrow 2\n", "appended") || !ASSERT_EQ(stat(path, &st), 0, "stat") ||
	    !ASSERT_EQ(st.st_mode & 0777, 0600, "0600"))
		goto cleanup;
	if (!ASSERT_EQ(symlink(path, link), 0, "symlink"))
		goto cleanup;
	errno = 0;
	if (!ASSERT_TRUE(!outfile__open_append(link) && errno == ELOOP, "never through a symlink") ||
	    !ASSERT_TRUE(outfile__open_append("-") == stdout, "- is stdout"))
		goto cleanup;
cleanup:
	free(text);
}

static void write_lives(struct trace_writer *w)
{
	json_object *a = json_object_new_object();

	json_object_object_add(a, "ppid", json_object_new_int(41));
	trace_writer__process_name(w, 42, "sh");
	trace_writer__instant(w, 42, 42, "fork", 1000, a);
	trace_writer__process_name(w, 42, "sh");	/* unchanged: nothing written */
	trace_writer__process_name(w, 42, "");		/* no name: the track keeps its own */
	trace_writer__process_name(w, 42, "python3");	/* an exec: renamed */
	trace_writer__instant(w, 42, 42, "exec", 2500, NULL);
	trace_writer__event(w, "call", 42, 43, "cuInit", 3000, 10, 0, NULL);
	trace_writer__instant(w, 42, 42, "exit", 4000, NULL);
}

/* Fork, exec and exit as instant events; a renamed track; both formats, and convert. */
static void test_instants_and_renames(void)
{
	char jl[PLEN], direct[PLEN], conv[PLEN], err[256] = "";
	struct trace_convert_stats st;
	struct trace_writer *w = NULL;
	char *a = NULL, *b = NULL;
	FILE *out = NULL;

	tmp_path(jl, sizeof(jl), "lives.jsonl");
	tmp_path(direct, sizeof(direct), "lives.json");
	tmp_path(conv, sizeof(conv), "lives-conv.json");
	w = trace_writer__open(jl, TRACE_JSONL);
	if (!ASSERT_TRUE(w, "jsonl writer"))
		goto cleanup;
	write_lives(w);
	if (!ASSERT_EQ(trace_writer__instants(w), 3, "instants") || !ASSERT_EQ(trace_writer__written(w), 1, "calls"))
		goto cleanup;
	if (!ASSERT_EQ(trace_writer__close(w, json_object_new_object()), 0, "close jsonl"))
		goto cleanup;
	w = trace_writer__open(direct, TRACE_CHROME);
	if (!ASSERT_TRUE(w, "chrome writer"))
		goto cleanup;
	write_lives(w);
	if (!ASSERT_EQ(trace_writer__close(w, NULL), 0, "close chrome") || !ASSERT_EQ(validate(direct), 0, "valid"))
		goto cleanup;
	w = NULL;
	if (!ASSERT_STR_CONTAINS(last_out, "\"by_ph\": {\"M\": 3, \"i\": 3, \"X\": 1}", "two process names, a thread's"))
		goto cleanup;
	a = slurp(jl);
	b = slurp(direct);
	if (!ASSERT_TRUE(a && b, "read back"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(a, "{\"type\":\"process\",\"pid\":42,\"comm\":\"sh\"}\n"
				    "{\"type\":\"instant\",\"ts_ns\":1000,\"pid\":42,\"tid\":42,\"name\":\"fork\","
				    "\"args\":{\"ppid\":41}}\n{\"type\":\"process\",\"pid\":42,\"comm\":\"python3\"}\n",
				 "jsonl: named, forked, renamed"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(b, "{\"name\":\"exec\",\"cat\":\"process\",\"ph\":\"i\",\"s\":\"p\",\"ts\":2.5,"
				    "\"pid\":42,\"tid\":42,\"args\":{}}", "chrome: a process-scoped instant") ||
	    !ASSERT_STR_CONTAINS(b, "\"args\":{\"name\":\"python3 (42)\"}", "chrome: the new name"))
		goto cleanup;
	out = fopen(conv, "w");
	if (!ASSERT_TRUE(out, "conv out") || !ASSERT_EQ(trace__convert(jl, out, &st, err, sizeof(err)), 0, "convert") ||
	    !ASSERT_EQ(st.dropped, 0, "nothing dropped") || !ASSERT_EQ(st.records, 7, "records: 2 process names, 3 instants, a call, the summary"))
		goto cleanup;
	fclose(out);
	out = NULL;
	free(a);
	a = slurp(conv);
	if (!ASSERT_TRUE(a, "converted") || !ASSERT_EQ(validate(conv), 0, "converted valid") ||
	    !ASSERT_STR_CONTAINS(last_out, "\"by_ph\": {\"M\": 3, \"i\": 3, \"X\": 1}", "converted: the same events"))
		goto cleanup;
cleanup:
	if (out)
		fclose(out);
	trace_writer__close(w, NULL);
	free(a);
	free(b);
}

int main(void)
{
	char cmd[64];

	find_tools();
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_jsonl_counter_records);
	RUN_TEST(test_chrome_counter_events);
	RUN_TEST(test_convert_matches_the_chrome_writer);
	RUN_TEST(test_convert_drops_and_counts);
	RUN_TEST(test_convert_edge_cases);
	RUN_TEST(test_convert_chrome_reports_drops);
	RUN_TEST(test_output_files);
	RUN_TEST(test_instants_and_renames);
	RUN_TEST(test_output_files_append);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd))
		printf("# could not remove %s\n", tmpdir);
	return unit_done();
}
