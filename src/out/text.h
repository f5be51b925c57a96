/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pieces of the text reports every mode uses, so that they read alike (docs/design.md,
 * "Output conventions"): human units first, the exact figure beside them where a reader
 * checks it against the program's own; digits grouped; one unit family per quantity —
 * bytes in IEC units (KiB, MiB), rates in SI bytes per second (kB/s, MB/s, GB/s),
 * durations scaled (ns, us, ms, s); nouns in the singular for one. JSON keeps the raw
 * numbers (src/out/jsonnum.h).
 *
 * The gp_text__* formatters return a small struct holding the text, so that a call can
 * stand as a printf argument: fprintf(f, "%s", gp_text__count(n).s). The struct is a
 * temporary that lives until the end of the full expression (C11 6.2.4p8).
 */
#ifndef GP_TEXT_H
#define GP_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gp_str {
	char s[80];
};

/* "12,582,912" */
struct gp_str gp_text__count(uint64_t n);
/* "1 allocation", "3 allocations", "1,024 allocations" */
struct gp_str gp_text__n(uint64_t n, const char *one, const char *many);
/* "512 B", "3.01 MiB": IEC units, three significant digits */
struct gp_str gp_text__bytes(uint64_t bytes);
/* "3.01 MiB (3,158,016 B)": the human figure, then the exact one (below 1 KiB, "512 B") */
struct gp_str gp_text__bytes_exact(uint64_t bytes);
/* "752 ns", "3.40 us", "2.49 ms", "1.50 s", "2m 05s"; "-" when nothing was measured (< 0) */
struct gp_str gp_text__duration(double seconds);
/* "950 B/s", "12.5 MB/s", "3.43 GB/s"; "-" when nothing was measured (< 0) */
struct gp_str gp_text__rate(double bytes_per_s);
struct bw_link;
/* A rate measured over link l (lib/links.h): gp_text__rate's, "-" when nothing was
 * measured (<= 0), or "suspect" when it is above what l can carry (bw_links__suspect). */
struct gp_str gp_text__link_rate(const struct bw_link *l, double bytes_per_s);
/*
 * The figures of one row above their link's limit, gathered for one line under the row that
 * says what they were, the limit and the link: what JSON's "suspect" holds (gp_json__add_suspect),
 * so that a text reader sees why a column says "suspect". Start zeroed; add each figure
 * (only those above l's limit are kept); print once. A long list ends in "...".
 */
struct gp_text_suspect {
	char s[240];
	size_t len;
	const struct bw_link *l;
};
void gp_text__suspect_add(struct gp_text_suspect *s, const struct bw_link *l, const char *what, double bytes_per_s);
/* "<indent>suspect, above the limit of <link> (<rate>): busbw 786 GB/s, stream 786 GB/s"; nothing when none */
void gp_text__suspect_line(FILE *f, const char *indent, const struct gp_text_suspect *s);
/* "NVLink4 x18 (H200 SXM 141GB, by PCI device id) 450 GB/s", or the name alone when the
 * limit is unknown (it says why) */
struct gp_str_long {
	char s[200];
};
struct gp_str_long gp_text__link(const struct bw_link *l);
/* "3,336.5/s": a count per second */
struct gp_str gp_text__per_s(double per_s);

/* bcc-style log2 histogram of n slots (slot i holds [2^i, 2^(i+1)) of unit) */
void gp_text__log2_hist(FILE *f, const uint64_t *slots, int n, const char *unit);
/* The same for rates: slot i holds [2^i, 2^(i+1)) x unit_bytes_per_s, each row labelled in
 * SI bytes per second ("537 MB/s .. 1.07 GB/s"), one unit family with the reports' rates. */
void gp_text__rate_hist(FILE *f, const uint64_t *slots, int n, double unit_bytes_per_s);
/* "HH:MM:SS", local time now */
void gp_text__clock(char *buf, size_t len);

/*
 * Stacks for people: a run of interpreter and FFI frames (libffi, ctypes, the CPython
 * interpreter's own functions) between the user's frames is one line,
 * "[5 interpreter and FFI frames: ffi_call, _PyObject_MakeTpCall, ...; -v shows them]".
 * The full stack stays in JSON and with -v. Writes each line of frames (innermost first)
 * with indent; returns the number of frames folded away.
 */
size_t gp_text__stack(FILE *f, const char *const *frames, size_t n, const char *indent, bool all);
/* Whether a frame's text is the interpreter's or FFI machinery ("ffi_call+0xcd (libffi.so.8)",
 * "_PyEval_EvalFrameDefault+0x… (python3.11)"), not a line the user wrote. */
bool gp_text__internal_frame(const char *frame);

/*
 * Names a traced process chooses (its comm, kernel and symbol names, library and source
 * paths, cgroup names) are hostile text in a root tool's output. Every report stream
 * (text or JSON, -o FILE, stderr, the --trace file) goes through this filter once, so no
 * printing site can forget it: valid UTF-8, '\n' and '\t' pass; control characters (C0,
 * DEL, C1), bidirectional formatting characters and bytes that are not valid UTF-8 become
 * '?' (gp_sanitize, src/lib/util.h). A sequence cut across two writes is held until the
 * next. Writes reach inner on each flush of the returned stream; closing it flushes inner
 * and closes it when own. NULL (errno set) if the stream cannot be made.
 */
FILE *gp_text__safe_stream(FILE *inner, bool own);

#endif
