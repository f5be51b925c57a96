/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include "out/jsonnum.h"
#include "out/text.h"
#include "lib/links.h"
#include "lib/util.h"

struct gp_str gp_text__count(uint64_t n)
{
	struct gp_str r;
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%" PRIu64, n), o = 0;

	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			r.s[o++] = ',';
		r.s[o++] = digits[i];
	}
	r.s[o] = '\0';
	return r;
}

struct gp_str gp_text__n(uint64_t n, const char *one, const char *many)
{
	struct gp_str r;

	snprintf(r.s, sizeof(r.s), "%.30s %.40s", gp_text__count(n).s, n == 1 ? one : many);
	return r;
}

struct gp_str gp_text__bytes(uint64_t bytes)
{
	struct gp_str r;

	if (bytes < 1024) /* "1,000 B": the digits grouped, as every count */
		snprintf(r.s, sizeof(r.s), "%.30s B", gp_text__count(bytes).s);
	else
		num__bytes(bytes, r.s, sizeof(r.s));
	return r;
}

struct gp_str gp_text__bytes_exact(uint64_t bytes)
{
	struct gp_str r;

	if (bytes < 1024)
		return gp_text__bytes(bytes);
	else
		snprintf(r.s, sizeof(r.s), "%.24s (%.30s B)", gp_text__bytes(bytes).s, gp_text__count(bytes).s);
	return r;
}

struct gp_str gp_text__duration(double seconds)
{
	struct gp_str r;

	num__seconds(seconds, r.s, sizeof(r.s));
	return r;
}

struct gp_str gp_text__rate(double bytes_per_s)
{
	struct gp_str r;

	num__rate(bytes_per_s, r.s, sizeof(r.s));
	return r;
}

struct gp_str gp_text__link_rate(const struct bw_link *l, double bytes_per_s)
{
	struct gp_str r;

	if (bw_links__suspect(l, bytes_per_s))
		snprintf(r.s, sizeof(r.s), "suspect");
	else if (bytes_per_s <= 0)
		snprintf(r.s, sizeof(r.s), "-");
	else
		return gp_text__rate(bytes_per_s);
	return r;
}

void gp_text__suspect_add(struct gp_text_suspect *s, const struct bw_link *l, const char *what, double bytes_per_s)
{
	int n;

	if (!bw_links__suspect(l, bytes_per_s) || s->len >= sizeof(s->s) - 1)
		return;
	s->l = l;
	n = snprintf(s->s + s->len, sizeof(s->s) - s->len, "%s%s %s", s->len ? ", " : "", what,
		     gp_text__rate(bytes_per_s).s);
	if (n < 0 || (size_t)n >= sizeof(s->s) - s->len) {
		memcpy(s->s + sizeof(s->s) - 4, "...", 4);
		s->len = sizeof(s->s) - 1;
		return;
	}
	s->len += (size_t)n;
}

struct gp_str_long gp_text__link(const struct bw_link *l)
{
	struct gp_str_long r;

	if (l->bytes_per_s > 0)
		snprintf(r.s, sizeof(r.s), "%.100s %s", l->name, gp_text__rate(l->bytes_per_s).s);
	else
		snprintf(r.s, sizeof(r.s), "%.150s", l->name);
	return r;
}

void gp_text__suspect_line(FILE *f, const char *indent, const struct gp_text_suspect *s)
{
	if (!s->len || !s->l)
		return;
	fprintf(f, "%ssuspect, above the limit of %s (%s): %s\n", indent, s->l->name, gp_text__rate(s->l->bytes_per_s).s,
		s->s);
}

struct gp_str gp_text__per_s(double per_s)
{
	struct gp_str r;
	uint64_t tenths;

	if (!isfinite(per_s) || per_s < 0 || per_s >= 1e17) {
		snprintf(r.s, sizeof(r.s), "-");
		return r;
	}
	/* one decimal, the whole part grouped: 3,336.5/s */
	tenths = (uint64_t)llround(per_s * 10);
	snprintf(r.s, sizeof(r.s), "%.30s.%d/s", gp_text__count(tenths / 10).s, (int)(tenths % 10));
	return r;
}

static void stars(FILE *f, uint64_t val, uint64_t max, int width)
{
	int n = max ? (int)((double)val * width / (double)max) : 0;

	if (n > width)
		n = width;
	for (int i = 0; i < width; i++)
		fputc(i < n ? '*' : ' ', f);
}

void gp_text__log2_hist(FILE *f, const uint64_t *slots, int n, const char *unit)
{
	int first = -1, last = -1;
	uint64_t max = 0;

	for (int i = 0; i < n; i++) {
		if (slots[i] && first < 0)
			first = i;
		if (slots[i])
			last = i;
		if (slots[i] > max)
			max = slots[i];
	}
	if (last < 0)
		return;
	/* bcc prints from 0; leading empty rows say nothing, so start at the first count */
	fprintf(f, "     %-19s : count    distribution\n", unit);
	for (int i = first; i <= last; i++) {
		uint64_t lo = i ? 1ULL << i : 0, hi = (1ULL << (i + 1)) - 1;

		fprintf(f, "%10" PRIu64 " -> %-10" PRIu64 " : %-8s |", lo, hi, gp_text__count(slots[i]).s);
		stars(f, slots[i], max, 40);
		fprintf(f, "|\n");
	}
}

void gp_text__rate_hist(FILE *f, const uint64_t *slots, int n, double unit_bytes_per_s)
{
	int first = -1, last = -1;
	uint64_t max = 0;

	for (int i = 0; i < n; i++) {
		if (slots[i] && first < 0)
			first = i;
		if (slots[i])
			last = i;
		if (slots[i] > max)
			max = slots[i];
	}
	if (last < 0)
		return;
	fprintf(f, "%-26s : count    distribution\n", "       rate");
	for (int i = first; i <= last; i++) {
		double lo = i ? ldexp(1, i) * unit_bytes_per_s : 0, hi = ldexp(1, i + 1) * unit_bytes_per_s;

		fprintf(f, "%11s .. %-10s : %-8s |", gp_text__rate(lo).s, gp_text__rate(hi).s, gp_text__count(slots[i]).s);
		stars(f, slots[i], max, 40);
		fprintf(f, "|\n");
	}
}

void gp_text__clock(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

/* The file a native frame names: "f+0x1 (libffi.so.8) at x.c:3" -> "libffi.so.8"; NULL for
 * a Python frame ("f (file.py:12)") or a frame without one. */
static const char *frame_module(const char *frame, size_t *len)
{
	const char *at = strstr(frame, ") at "), *open, *close;

	close = at ? at : strrchr(frame, ')');
	if (!close)
		return NULL;
	for (open = close; open > frame && *open != '('; open--)
		;
	if (*open != '(' || open == frame || open[-1] != ' ')
		return NULL;
	*len = (size_t)(close - open - 1);
	open++;
	/* a Python frame's parentheses hold its file and line */
	if (*len > 3 && memchr(open, ':', *len) && memmem(open, *len, ".py:", 4))
		return NULL;
	return open;
}

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && !memcmp(s, prefix, k);
}

bool gp_text__internal_frame(const char *frame)
{
	size_t n = 0;
	const char *m = frame_module(frame, &n);

	if (!m)
		return false;
	/* libffi, ctypes' extension module, the interpreter's binary or library */
	return starts(m, n, "libffi.so") || starts(m, n, "_ctypes") || starts(m, n, "libpython") ||
	       (starts(m, n, "python") && !memchr(m, '/', n));
}

/* "libffi.so.8.1.2" -> "libffi", "python3.11" stays */
static void short_module(const char *frame, char *buf, size_t len)
{
	size_t n = 0;
	const char *m = frame_module(frame, &n);
	size_t k = n;

	if (!m) {
		snprintf(buf, len, "?");
		return;
	}
	if (memmem(m, n, ".so", 3))
		k = (size_t)((const char *)memmem(m, n, ".so", 3) - m);
	if (starts(m, n, "_ctypes"))
		k = 7;
	snprintf(buf, len, "%.*s", (int)k, m);
}

static void fold_line(FILE *f, const char *const *frames, size_t from, size_t to, const char *indent)
{
	char mods[3][48], m[48];
	size_t nm = 0;

	for (size_t i = from; i < to; i++) {
		size_t k;

		short_module(frames[i], m, sizeof(m));
		for (k = 0; k < nm && strcmp(mods[k], m); k++)
			;
		if (k == nm && nm < 3)
			snprintf(mods[nm++], sizeof(mods[0]), "%s", m);
	}
	fprintf(f, "%s[%zu interpreter and FFI frames (%s%s%s%s%s); -v shows them]\n", indent, to - from, mods[0],
		nm > 1 ? ", " : "", nm > 1 ? mods[1] : "", nm > 2 ? ", " : "", nm > 2 ? mods[2] : "");
}

size_t gp_text__stack(FILE *f, const char *const *frames, size_t n, const char *indent, bool all)
{
	size_t folded = 0;

	for (size_t i = 0; i < n;) {
		size_t j = i;

		/* the innermost frame is the probed call itself: always shown */
		while (!all && i > 0 && j < n && gp_text__internal_frame(frames[j]))
			j++;
		if (j - i >= 2) { /* one line for one frame saves nothing */
			fold_line(f, frames, i, j, indent);
			folded += j - i;
			i = j;
			continue;
		}
		fprintf(f, "%s%s\n", indent, frames[i]);
		i++;
	}
	return folded;
}

struct safe_stream {
	FILE *inner;
	bool own;
	unsigned char held[4]; /* the start of a UTF-8 sequence the last write cut */
	size_t nheld;
};

/* buf[0..n) to inner, each character to replace as '?'; with more, a sequence cut at the
 * end is held for the next write. */
static int safe_put(struct safe_stream *ss, const unsigned char *buf, size_t n, bool more)
{
	size_t i = 0, run = 0, k, skip;

	while (i < n) {
		if (buf[i] >= 0x20 && buf[i] < 0x7f) { /* most of a report: printable ASCII */
			i++;
			continue;
		}
		k = gp_safe_char(buf + i, n - i, true, &skip);
		if (k == GP_SAFE_MORE && more) {
			memcpy(ss->held, buf + i, n - i);
			ss->nheld = n - i;
			break;
		}
		if (k && k != GP_SAFE_MORE) {
			i += k;
			continue;
		}
		if (i > run && fwrite(buf + run, 1, i - run, ss->inner) != i - run)
			return -1;
		if (fputc('?', ss->inner) == EOF)
			return -1;
		i += skip;
		run = i;
	}
	if (i > run && fwrite(buf + run, 1, i - run, ss->inner) != i - run)
		return -1;
	return 0;
}

static ssize_t safe_write(void *cookie, const char *buf, size_t size)
{
	struct safe_stream *ss = cookie;
	unsigned char *join = NULL;
	const unsigned char *p = (const unsigned char *)buf;
	size_t n = size;
	int r;

	/* a held start is read again with this write's bytes */
	if (ss->nheld) {
		join = malloc(ss->nheld + size);
		if (!join)
			return -1;
		memcpy(join, ss->held, ss->nheld);
		memcpy(join + ss->nheld, buf, size);
		p = join;
		n = ss->nheld + size;
		ss->nheld = 0;
	}
	r = safe_put(ss, p, n, true);
	free(join);
	if (r || fflush(ss->inner))
		return -1;
	return (ssize_t)size;
}

static int safe_close(void *cookie)
{
	struct safe_stream *ss = cookie;
	int r = 0;

	/* a cut sequence at the end is not a character */
	for (size_t i = 0; i < ss->nheld; i++)
		if (fputc('?', ss->inner) == EOF)
			r = -1;
	if (fflush(ss->inner) || ferror(ss->inner))
		r = -1;
	if (ss->own && fclose(ss->inner))
		r = -1;
	free(ss);
	return r;
}

FILE *gp_text__safe_stream(FILE *inner, bool own)
{
	cookie_io_functions_t io = { .write = safe_write, .close = safe_close };
	struct safe_stream *ss;
	FILE *f;

	if (!inner) {
		errno = EINVAL;
		return NULL;
	}
	ss = calloc(1, sizeof(*ss));
	if (!ss)
		return NULL;
	ss->inner = inner;
	ss->own = own;
	f = fopencookie(ss, "w", io);
	if (!f)
		free(ss);
	return f;
}
