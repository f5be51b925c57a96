/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "out/flame.h"
#include "out/text.h"
#include "out/folded.h"
#include "out/jsonnum.h"
#include "lib/util.h"

#define XPAD 10.0
#define YPAD_TOP 56.0	/* title, subtitle, buttons */
#define YPAD_BOTTOM 30.0 /* the details line */
#define FRAME_H 16.0
#define FONT_PX 12.0
#define FONT_W (0.59 * FONT_PX) /* Verdana/DejaVu Sans average glyph width */

/* Frame-wise order: ';' sorts before every other byte and the end before ';', so all
 * stacks under one frame are adjacent and siblings come in name order. */
static int frame_cmp(const void *a, const void *b)
{
	const unsigned char *x = (const unsigned char *)((const struct folded_stack *)a)->stack;
	const unsigned char *y = (const unsigned char *)((const struct folded_stack *)b)->stack;

	for (;; x++, y++) {
		int cx = *x == ';' ? 1 : *x ? *x + 1 : 0;
		int cy = *y == ';' ? 1 : *y ? *y + 1 : 0;

		if (cx != cy)
			return cx - cy;
		if (!cx)
			return 0;
	}
}

struct open_frame {
	const char *name;
	size_t len;
	uint64_t start, value;
};

struct render {
	FILE *out;
	const struct flame_opts *o;
	uint64_t total;
	double scale, minval, height;
	size_t max_depth;	/* deepest frame drawn, "all" being 0 */
	bool emit;		/* false: the sizing pass */
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* XML text or attribute value: the text is already valid UTF-8 without control
 * characters (folded__sanitize_frame); this escapes the markup characters. */
static void xml_put(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default: fputc(s[i], out);
		}
	}
}

static void xml_put_safe(FILE *out, const char *s)
{
	char buf[FOLDED_FRAME_MAX + 1];
	size_t n = folded__sanitize_frame(s, s ? strlen(s) : 0, buf, sizeof(buf));

	xml_put(out, buf, n);
}

static bool has(const char *s, size_t n, const char *what)
{
	size_t w = strlen(what);

	for (size_t i = 0; i + w <= n; i++)
		if (!memcmp(s + i, what, w))
			return true;
	return false;
}

/* The function's part of a frame ("f+0x1a (lib)" -> "f") picks the shade, the kind of
 * code the hue family, so one function keeps its colour at every offset and in every run. */
static void colour(const char *name, size_t len, int rgb[3])
{
	size_t fn = len;
	uint64_t h;
	double a, b, c;

	for (size_t i = 0; i + 1 < len; i++)
		if ((name[i] == ' ' && name[i + 1] == '(') || (name[i] == '+' && name[i + 1] == '0')) {
			fn = i;
			break;
		}
	h = gp_fnv1a(name, fn, GP_FNV1A_INIT);
	a = (double)(h & 0xffff) / 65535.0;
	b = (double)((h >> 16) & 0xffff) / 65535.0;
	c = (double)((h >> 32) & 0xffff) / 65535.0;
	if (len == 9 && !memcmp(name, "[unknown]", 9)) {
		rgb[0] = rgb[1] = rgb[2] = 170 + (int)(30 * a);
	} else if (has(name, len, ".py:") || has(name, len, ".py)")) {
		rgb[0] = 50 + (int)(60 * a);
		rgb[1] = 170 + (int)(60 * b);
		rgb[2] = 190 + (int)(55 * c);
	} else if (has(name, len, "(libcu") || has(name, len, "(libnccl") || has(name, len, "(libnv")) {
		rgb[0] = 90 + (int)(60 * a);
		rgb[1] = 170 + (int)(60 * b);
		rgb[2] = 20 + (int)(50 * c);
	} else {
		rgb[0] = 205 + (int)(50 * a);
		rgb[1] = (int)(230 * b);
		rgb[2] = (int)(55 * c);
	}
}

static size_t utf8_chars(const char *s, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += ((unsigned char)s[i] & 0xc0) != 0x80;
	return k;
}

/*
 * The label that fits w pixels: the whole name; else the name without what follows the
 * function ("f+0x23 (app) at app.c:63" -> "f+0x23 (app)" -> "f+0x23" -> "f"), so that
 * a narrow frame still says which function it is; else the start of that and "..";
 * else nothing. The script computes the same when zooming.
 */
static size_t short_form(const char *name, size_t len, int form)
{
	const char *cut = NULL;

	if (form >= 1) { /* without " at file:line" */
		for (size_t i = len; i > 4; i--)
			if (!memcmp(name + i - 4, " at ", 4)) {
				len = i - 4;
				break;
			}
	}
	if (form >= 2 && (cut = memmem(name, len, " (", 2)) && cut > name) /* without " (file)" */
		len = (size_t)(cut - name);
	if (form >= 3 && (cut = memmem(name, len, "+0x", 3)) && cut > name) /* without "+0x23" */
		len = (size_t)(cut - name);
	return len;
}

static void put_label(FILE *out, const char *name, size_t len, double w)
{
	double fit = (w - 6) / FONT_W;
	size_t n = fit > 0 ? (size_t)fit : 0, i = 0, k = 0, l = len;

	if (n < 3)
		return;
	for (int form = 0; form <= 3; form++) {
		l = short_form(name, len, form);
		if (utf8_chars(name, l) <= n) {
			xml_put(out, name, l);
			return;
		}
	}
	for (; i < l; i++) {
		if (((unsigned char)name[i] & 0xc0) != 0x80 && k++ == n - 2)
			break;
	}
	xml_put(out, name, i);
	fputs("..", out);
}

static void value_text(const struct render *r, uint64_t v, char *buf, size_t len)
{
	const char *unit = r->o->unit ? r->o->unit : "bytes";

	/* docs/design.md's conventions: "3.01 MiB (3,158,016 B)", "1,200 samples" */
	if (!strcmp(unit, "bytes"))
		snprintf(buf, len, "%s", gp_text__bytes_exact(v).s);
	else
		snprintf(buf, len, "%s %s", gp_text__count(v).s, unit);
}

static void draw(struct render *r, const char *name, size_t len, uint64_t start, uint64_t value,
		 size_t depth)
{
	double x, w, y, pct;
	char vt[96];
	int rgb[3];

	if ((double)value < r->minval)
		return;
	if (!r->emit) {
		if (depth > r->max_depth)
			r->max_depth = depth;
		return;
	}
	x = XPAD + (double)start * r->scale;
	w = (double)value * r->scale;
	y = r->height - YPAD_BOTTOM - (double)(depth + 1) * FRAME_H;
	pct = r->total ? 100.0 * (double)value / (double)r->total : 0;
	colour(name, len, rgb);
	value_text(r, value, vt, sizeof(vt));
	fprintf(r->out, "<g class=\"f\" data-s=\"%" PRIu64 "\" data-v=\"%" PRIu64 "\" data-d=\"%zu\"><title>",
		start, value, depth);
	xml_put(r->out, name, len);
	fprintf(r->out, "\n%s, %.2f%%</title><svg x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\">"
		"<rect width=\"100%%\" height=\"100%%\" rx=\"2\" fill=\"rgb(%d,%d,%d)\"/><text x=\"3\" y=\"%.1f\">",
		vt, pct, x, y, w, FRAME_H - 1, rgb[0], rgb[1], rgb[2], FRAME_H - 4.5);
	put_label(r->out, name, len, w);
	fputs("</text></svg></g>\n", r->out);
}

/* Walks the stacks in frame-wise order, keeping only the open path: a frame is drawn when
 * its last stack has been seen, so memory stays O(depth) however many stacks there are. */
static void walk(struct render *r, const struct folded_stack *s, size_t n, struct open_frame *path)
{
	size_t open = 0;
	uint64_t x = 0;

	for (size_t i = 0; i < n; i++) {
		const char *p = s[i].stack;
		size_t depth = 0, common = 0;
		struct open_frame fr[FOLDED_DEPTH_MAX];

		while (depth < FOLDED_DEPTH_MAX) {
			const char *e = strchr(p, ';');
			size_t l = e ? (size_t)(e - p) : strlen(p);

			fr[depth].name = p;
			fr[depth++].len = l;
			if (!e)
				break;
			p = e + 1;
		}
		while (common < open && common < depth && path[common].len == fr[common].len &&
		       !memcmp(path[common].name, fr[common].name, fr[common].len))
			common++;
		while (open > common) {
			open--;
			draw(r, path[open].name, path[open].len, path[open].start, path[open].value, open + 1);
		}
		for (; open < depth; open++)
			path[open] = (struct open_frame){ fr[open].name, fr[open].len, x, 0 };
		for (size_t k = 0; k < depth; k++)
			path[k].value = sat_add(path[k].value, s[i].value);
		x = sat_add(x, s[i].value);
	}
	while (open > 0) {
		open--;
		draw(r, path[open].name, path[open].len, path[open].start, path[open].value, open + 1);
	}
	draw(r, "all", 3, 0, r->total, 0);
}

static const char SCRIPT[] =
"\"use strict\";\n"
"(function () {\n"
"\tvar root = document.getElementById(\"fg\");\n"
"\tvar frames = Array.prototype.slice.call(root.querySelectorAll(\"g.f\"));\n"
"\tvar xpad = +root.getAttribute(\"data-xpad\"), W = +root.getAttribute(\"data-w\");\n"
"\tvar total = +root.getAttribute(\"data-total\"), fontw = +root.getAttribute(\"data-fontw\");\n"
"\tvar resetBtn = document.getElementById(\"fg-reset\"), searchBtn = document.getElementById(\"fg-search\");\n"
"\tvar matched = document.getElementById(\"fg-matched\"), details = document.getElementById(\"fg-details\");\n"
"\tvar searching = null, zoomed = null;\n"
"\n"
"\tfunction num(g, a) { return +g.getAttribute(a); }\n"
"\tfunction name(g) { return g.querySelector(\"title\").textContent.split(\"\\n\")[0]; }\n"
"\t/* the label that fits w pixels, as the C side makes it: the name, shorter forms of it\n"
"\t * (without \" at file:line\", \" (file)\", \"+0x..\"), then the shortest's start */\n"
"\tfunction forms(text) {\n"
"\t\tvar f = [text], t = text, i = t.lastIndexOf(\" at \");\n"
"\t\tif (i > 0) t = t.slice(0, i);\n"
"\t\tf.push(t);\n"
"\t\ti = t.indexOf(\" (\");\n"
"\t\tif (i > 0) t = t.slice(0, i);\n"
"\t\tf.push(t);\n"
"\t\ti = t.indexOf(\"+0x\");\n"
"\t\tif (i > 0) t = t.slice(0, i);\n"
"\t\tf.push(t);\n"
"\t\treturn f;\n"
"\t}\n"
"\tfunction label(text, w) {\n"
"\t\tvar n = Math.floor((w - 6) / fontw), f = forms(text), chars;\n"
"\t\tif (n < 3) return \"\";\n"
"\t\tfor (var k = 0; k < f.length; k++)\n"
"\t\t\tif (Array.from(f[k]).length <= n) return f[k];\n"
"\t\tchars = Array.from(f[f.length - 1]);\n"
"\t\treturn chars.slice(0, n - 2).join(\"\") + \"..\";\n"
"\t}\n"
"\tfunction place(g, x, w) {\n"
"\t\tvar box = g.querySelector(\"svg\");\n"
"\t\tbox.setAttribute(\"x\", x.toFixed(2));\n"
"\t\tbox.setAttribute(\"width\", w.toFixed(2));\n"
"\t\tg.querySelector(\"text\").textContent = label(name(g), w);\n"
"\t\tg.style.display = \"\";\n"
"\t}\n"
"\tfunction remember() {\n"
"\t\tvar h = zoomed ? \"x=\" + zoomed.getAttribute(\"data-s\") + \"&d=\" + zoomed.getAttribute(\"data-d\") : \"\";\n"
"\t\tif (searching) h += (h ? \"&\" : \"\") + \"s=\" + encodeURIComponent(searching.source);\n"
"\t\ttry { history.replaceState(null, \"\", h ? \"#\" + h : location.pathname + location.search); } catch (e) { }\n"
"\t}\n"
"\t/* g fills the width; its ancestors span it, dimmed; everything beside it hides */\n"
"\tfunction zoom(g) {\n"
"\t\tvar s0 = num(g, \"data-s\"), v0 = num(g, \"data-v\"), d0 = num(g, \"data-d\"), k = W / v0;\n"
"\t\tframes.forEach(function (f) {\n"
"\t\t\tvar s = num(f, \"data-s\"), v = num(f, \"data-v\"), d = num(f, \"data-d\");\n"
"\t\t\tf.classList.remove(\"anc\");\n"
"\t\t\tif (d < d0 && s <= s0 && s + v >= s0 + v0) {\n"
"\t\t\t\tplace(f, xpad, W);\n"
"\t\t\t\tf.classList.add(\"anc\");\n"
"\t\t\t} else if (d >= d0 && s >= s0 && s + v <= s0 + v0) {\n"
"\t\t\t\tplace(f, xpad + (s - s0) * k, v * k);\n"
"\t\t\t} else {\n"
"\t\t\t\tf.style.display = \"none\";\n"
"\t\t\t}\n"
"\t\t});\n"
"\t\tzoomed = d0 > 0 ? g : null;\n"
"\t\tresetBtn.style.display = zoomed ? \"\" : \"none\";\n"
"\t\tremember();\n"
"\t}\n"
"\tfunction unzoom() {\n"
"\t\tvar k = W / total;\n"
"\t\tframes.forEach(function (f) {\n"
"\t\t\tf.classList.remove(\"anc\");\n"
"\t\t\tplace(f, xpad + num(f, \"data-s\") * k, num(f, \"data-v\") * k);\n"
"\t\t});\n"
"\t\tzoomed = null;\n"
"\t\tresetBtn.style.display = \"none\";\n"
"\t\tremember();\n"
"\t}\n"
"\t/* matches turn magenta; the share counts a match inside another match once */\n"
"\tfunction search(re) {\n"
"\t\tvar hits = [], sum = 0, end = -1;\n"
"\t\tframes.forEach(function (f) {\n"
"\t\t\tvar m = re !== null && re.test(name(f));\n"
"\t\t\tf.classList.toggle(\"m\", m);\n"
"\t\t\tif (m) hits.push([num(f, \"data-s\"), num(f, \"data-v\")]);\n"
"\t\t});\n"
"\t\thits.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
"\t\thits.forEach(function (h) {\n"
"\t\t\tif (h[0] >= end) { sum += h[1]; end = h[0] + h[1]; }\n"
"\t\t});\n"
"\t\tsearching = re;\n"
"\t\tmatched.textContent = re ? \"Matched: \" + (total ? 100 * sum / total : 0).toFixed(2) + \"%\" : \"\";\n"
"\t\tmatched.setAttribute(\"data-sum\", String(sum));\n"
"\t\tsearchBtn.textContent = re ? \"Clear search\" : \"Search\";\n"
"\t\tremember();\n"
"\t}\n"
"\tfunction ask() {\n"
"\t\tvar t;\n"
"\t\tif (searching) { search(null); return; }\n"
"\t\tt = prompt(\"Search frames (regular expression)\", \"\");\n"
"\t\tif (!t) return;\n"
"\t\ttry { search(new RegExp(t)); } catch (e) { alert(e.message); }\n"
"\t}\n"
"\troot.addEventListener(\"click\", function (e) {\n"
"\t\tvar g = e.target.closest ? e.target.closest(\"g.f\") : null;\n"
"\t\tif (g) zoom(g);\n"
"\t});\n"
"\troot.addEventListener(\"mouseover\", function (e) {\n"
"\t\tvar g = e.target.closest ? e.target.closest(\"g.f\") : null;\n"
"\t\tdetails.textContent = g ? g.querySelector(\"title\").textContent.replace(\"\\n\", \": \") : \"\";\n"
"\t});\n"
"\tresetBtn.addEventListener(\"click\", function (e) { e.stopPropagation(); unzoom(); });\n"
"\tsearchBtn.addEventListener(\"click\", function (e) { e.stopPropagation(); ask(); });\n"
"\tdocument.addEventListener(\"keydown\", function (e) {\n"
"\t\tif ((e.ctrlKey || e.metaKey) && e.key === \"f\") { e.preventDefault(); ask(); }\n"
"\t\telse if (e.key === \"Escape\") { unzoom(); search(null); }\n"
"\t});\n"
"\t/* #x=START&d=DEPTH&s=REGEX: open zoomed on that frame and searched */\n"
"\ttry {\n"
"\t\tvar p = {};\n"
"\t\tlocation.hash.replace(/^#/, \"\").split(\"&\").forEach(function (kv) {\n"
"\t\t\tvar i = kv.indexOf(\"=\");\n"
"\t\t\tif (i > 0) p[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1));\n"
"\t\t});\n"
"\t\tif (p.x !== undefined && p.d !== undefined) {\n"
"\t\t\tvar g = frames.find(function (f) {\n"
"\t\t\t\treturn f.getAttribute(\"data-s\") === p.x && f.getAttribute(\"data-d\") === p.d;\n"
"\t\t\t});\n"
"\t\t\tif (g) zoom(g);\n"
"\t\t}\n"
"\t\tif (p.s) search(new RegExp(p.s));\n"
"\t} catch (e) { }\n"
"\troot.setAttribute(\"data-ready\", \"1\");\n"
"})();\n";

static const char STYLE[] =
"text { font-family: Verdana, \"DejaVu Sans\", sans-serif; font-size: 12px; fill: #000; }\n"
"#fg-title { font-size: 17px; }\n"
".sub { fill: #555; }\n"
".btn { fill: #224; cursor: pointer; text-decoration: underline; }\n"
"g.f { cursor: pointer; }\n"
"g.f:hover rect { stroke: #000; stroke-width: 1; }\n"
"g.anc { opacity: 0.55; }\n"
"g.m rect { fill: rgb(230,0,230); }\n";

/* A copy of f's stacks in frame-wise order (the folded's own order is byte order), in
 * *out (the caller's to free); -ENOMEM. */
static int frame_order(struct folded *f, struct folded_stack **out, size_t *n)
{
	const struct folded_stack *sorted;
	struct folded_stack *s;

	*n = folded__sorted(f, &sorted);
	*out = NULL;
	if (folded__count(f) && !sorted)
		return -ENOMEM;
	s = malloc((*n ? *n : 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (*n)
		memcpy(s, sorted, *n * sizeof(*s));
	qsort(s, *n, sizeof(*s), frame_cmp);
	*out = s;
	return 0;
}

/* Everything before the frames: the SVG element, style, background, title, the line
 * that says what is drawn, the buttons and the details line. */
static void svg_head(const struct render *r, double width, double drawable, size_t n)
{
	FILE *out = r->out;
	char tot[96];

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg id=\"fg\" version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" data-xpad=\"%.0f\" data-w=\"%.2f\" data-total=\"%" PRIu64 "\" data-fontw=\"%.3f\">\n",
		width, r->height, width, r->height, XPAD, drawable, r->total, FONT_W);
	fprintf(out, "<style>\n%s</style>\n", STYLE);
	fputs("<defs><linearGradient id=\"fg-bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
	      "<stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop stop-color=\"#eeeeb0\" offset=\"95%\"/>"
	      "</linearGradient></defs>\n", out);
	fputs("<rect width=\"100%\" height=\"100%\" fill=\"url(#fg-bg)\"/>\n", out);
	fprintf(out, "<text id=\"fg-title\" x=\"%.0f\" y=\"24\" text-anchor=\"middle\">", width / 2);
	xml_put_safe(out, r->o->title ? r->o->title : "Flame Graph");
	value_text(r, r->total, tot, sizeof(tot));
	fprintf(out, "</text>\n<text class=\"sub\" x=\"%.0f\" y=\"42\" text-anchor=\"middle\">", width / 2);
	if (n)
		fprintf(out, "%zu stack%s, total ", n, n == 1 ? "" : "s");
	else
		fputs("no stacks: nothing to draw", out);
	if (n)
		xml_put_safe(out, tot);
	fputs(". Click a frame to zoom, Ctrl-F to search.</text>\n", out);
	fprintf(out, "<text id=\"fg-reset\" class=\"btn\" x=\"%.0f\" y=\"24\" style=\"display:none\">Reset Zoom</text>\n", XPAD);
	fprintf(out, "<text id=\"fg-search\" class=\"btn\" x=\"%.0f\" y=\"24\" text-anchor=\"end\">Search</text>\n",
		width - XPAD);
	fprintf(out, "<text id=\"fg-matched\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\"></text>\n", width - XPAD,
		r->height - 10);
	fprintf(out, "<text id=\"fg-details\" x=\"%.0f\" y=\"%.0f\"> </text>\n", XPAD, r->height - 10);
}

int flame__render(struct folded *f, const struct flame_opts *o, FILE *out)
{
	struct flame_opts def = { 0 };
	struct render r = { .out = out };
	struct folded_stack *s = NULL;
	struct open_frame *path = NULL;
	double width, drawable;
	size_t n;
	int err = 0;

	if (!o)
		o = &def;
	r.o = o;
	width = o->width ? o->width : 1200;
	if (width < FLAME_WIDTH_MIN || width > FLAME_WIDTH_MAX) {
		err = -EINVAL;
		goto cleanup;
	}
	err = frame_order(f, &s, &n);
	if (err)
		goto cleanup;
	path = malloc(FOLDED_DEPTH_MAX * sizeof(*path));
	if (!path) {
		err = -ENOMEM;
		goto cleanup;
	}
	r.total = folded__total(f);
	drawable = width - 2 * XPAD;
	r.scale = r.total ? drawable / (double)r.total : 0;
	r.minval = r.total ? FLAME_MIN_PX / r.scale : 1;
	walk(&r, s, n, path); /* the sizing pass: how deep the drawn frames go */
	r.height = YPAD_TOP + (double)(r.max_depth + 1) * FRAME_H + YPAD_BOTTOM;
	svg_head(&r, width, drawable, n);
	fputs("<g id=\"fg-frames\">\n", out);
	r.emit = true;
	if (n)
		walk(&r, s, n, path);
	fprintf(out, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", SCRIPT);
	if (fflush(out) || ferror(out))
		err = -EIO;
cleanup:
	free(s);
	free(path);
	return err;
}

int flame__file(const char *path, const struct flame_opts *o, FILE *out, char *err, size_t len)
{
	struct folded_read_stats st;
	struct folded *f = NULL;
	char why[128] = "";
	FILE *in = strcmp(path, "-") ? fopen(path, "re") : stdin;
	int r = 0;

	if (!in) {
		r = -errno;
		snprintf(err, len, "%s: %s", path, strerror(errno));
		goto cleanup;
	}
	f = folded__new();
	if (!f) {
		r = -ENOMEM;
		snprintf(err, len, "out of memory");
		goto cleanup;
	}
	r = folded__read(f, in, &st, why, sizeof(why));
	if (r) {
		snprintf(err, len, "%s: %s", path, why);
		goto cleanup;
	}
	/* nothing read but lines that are no folded stacks: not an empty graph, an error (an
	 * empty file, or blank lines only, is a run with nothing outstanding: drawn empty) */
	if (st.skipped && !st.stacks) {
		r = -EINVAL;
		snprintf(err, len, "%s: not folded stacks (line %zu: %s)", path, st.first_bad_line, st.first_bad_why);
		goto cleanup;
	}
	if (st.skipped)
		fprintf(stderr, "gpuprobe: flame: %s: skipped %zu of %zu lines (first: line %zu, %s)\n", path,
			st.skipped, st.lines, st.first_bad_line, st.first_bad_why);
	r = flame__render(f, o, out);
	if (r)
		snprintf(err, len, "writing the SVG: %s", strerror(-r));
cleanup:
	if (in && in != stdin)
		fclose(in);
	folded__free(f);
	return r;
}
