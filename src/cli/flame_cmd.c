/* SPDX-License-Identifier: BSD-3-Clause */
/* gpuprobe flame [--title T] [--width PX] [--unit U] [-o FILE] FOLDED > graph.svg */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cmdline.h"
#include "out/flame.h"
#include "core/mode.h"
#include "lib/option.h"
#include "out/outfile.h"

static struct {
	const char *title, *unit, *output;
	uint64_t width;
} fl = { .width = 1200 };

static int parse_unit(const char *arg, void *dest, char *err, size_t len)
{
	if (!*arg || strlen(arg) > 32) {
		snprintf(err, len, "--unit: a word of 1 to 32 characters");
		return -EINVAL;
	}
	*(const char **)dest = arg;
	return 0;
}

static const struct gp_option options[] = {
	{ "title", 0, "TEXT", "The graph's title (default: Flame Graph)", GP_OPT_STRING, &fl.title,
	  .frontends = GP_FE_CLI },
	{ "width", 0, "PIXELS", "The image width (default: 1200)", GP_OPT_U64, &fl.width, FLAME_WIDTH_MIN,
	  FLAME_WIDTH_MAX, .frontends = GP_FE_CLI },
	{ "unit", 0, "UNIT", "What the values count: bytes (default; shown as KiB, MiB...) or a noun such as samples or allocations",
	  GP_OPT_CUSTOM, &fl.unit, .parse = parse_unit, .frontends = GP_FE_CLI },
	{ "output", 'o', "FILE", "Write the graph to FILE (created 0600, never through a symlink), only once the input "
	  "read as folded stacks: no empty or partial file on an error", GP_OPT_STRING, &fl.output, .frontends = GP_FE_CLI },
	{},
};

/* The graph drawn in memory first: an input that is not folded stacks leaves no file, and
 * stdout gets the whole graph or nothing. */
static int draw(const char *in, const struct flame_opts *o, char *err, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *mem = open_memstream(&buf, &n), *out = NULL;
	int r = -ENOMEM;

	if (!mem) {
		snprintf(err, len, "%s", strerror(errno));
		goto cleanup;
	}
	r = flame__file(in, o, mem, err, len);
	if (fclose(mem) && !r) {
		r = -ENOMEM;
		snprintf(err, len, "%s", strerror(ENOMEM));
	}
	mem = NULL;
	if (r)
		goto cleanup;
	out = fl.output && strcmp(fl.output, "-") ? outfile__open(fl.output) : stdout;
	if (!out) {
		r = -errno;
		snprintf(err, len, "-o %s: %s", fl.output, strerror(errno));
		goto cleanup;
	}
	if (fwrite(buf, 1, n, out) != n || (out == stdout ? fflush(out) : outfile__close(out))) {
		r = -EIO;
		snprintf(err, len, "%s: %s", out == stdout ? "stdout" : fl.output, strerror(errno ? errno : EIO));
	}
	out = NULL;
cleanup:
	if (mem)
		fclose(mem);
	free(buf);
	return r;
}

int flame__main(int argc, char **argv)
{
	struct gp_cmdline cl = {
		.name = "gpuprobe flame", .args_doc = "FOLDED > graph.svg",
		.doc = "Draws folded stacks (a 'frame;frame;... value' line per stack, e.g. from --folded) as an\n"
		       "interactive SVG flame graph on stdout (or -o FILE). FOLDED '-' reads stdin.\n",
		.epilog = "Open the SVG in a browser: click a frame to zoom, Ctrl-F or Search to highlight\n"
			  "frames matching a regular expression; FILE.svg#x=START&d=DEPTH&s=REGEX opens it so.\n",
		.positionals = GP_POS_FILES, .min_args = 1, .max_args = 1, .extra = options,
	};
	struct flame_opts o;
	char err[512] = "";
	int r = gp_options__parse(&cl, argc, argv);

	if (r)
		return r == GP_PARSED_EXIT ? 0 : r;
	o = (struct flame_opts){ .title = fl.title, .unit = fl.unit, .width = (int)fl.width };
	if (draw(cl.args[0], &o, err, sizeof(err))) {
		fprintf(stderr, "gpuprobe: flame: %s\n", err);
		return 1;
	}
	return 0;
}
