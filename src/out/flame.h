/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * `gpuprobe flame FOLDED > leak.svg`: folded stacks drawn as an interactive SVG flame graph
 * (no Debian package ships flamegraph.pl). Root at the bottom, one box per frame as wide as
 * its value, siblings in name order; colour from a stable hash of the function, in a hue
 * family per kind of code (NVIDIA libraries green, Python aqua, unknown grey, other native
 * code warm). Each box has a tooltip (value and share of the total) and a label cut to fit.
 * The embedded script zooms on click (Reset Zoom, Escape), searches by regular expression
 * (Search, Ctrl-F) and sums the matched share; "#x=START&d=DEPTH&s=REGEX" after the file's
 * URL opens it zoomed and searched (what the tests and a shared link use).
 */
#ifndef GP_FLAME_H
#define GP_FLAME_H

#include <stdio.h>

struct folded;

#define FLAME_WIDTH_MIN 200
#define FLAME_WIDTH_MAX 20000
/* Frames narrower than this (pixels) are left out, as flamegraph.pl does. */
#define FLAME_MIN_PX 0.1

struct flame_opts {
	const char *title;	/* NULL: "Flame Graph" */
	const char *unit;	/* "bytes" (shown as KiB, MiB…) or a noun for counts; NULL: "bytes" */
	int width;		/* pixels, FLAME_WIDTH_MIN..FLAME_WIDTH_MAX; 0: 1200 */
};

/* Writes the SVG document. Returns 0, -EINVAL for a width out of range, -ENOMEM, or -EIO
 * for a write error. */
int flame__render(struct folded *f, const struct flame_opts *o, FILE *out);

/* Reads folded stacks from path ("-": stdin; skipped lines said on stderr) and writes the
 * SVG to out. 0 or -errno with one reason in err. */
int flame__file(const char *path, const struct flame_opts *o, FILE *out, char *err, size_t len);

#endif
