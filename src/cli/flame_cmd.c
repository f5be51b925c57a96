/* SPDX-License-Identifier: BSD-3-Clause */
/* gpuprobe flame [--title T] [--width PX] [--unit U] FOLDED > graph.svg */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cmdline.h"
#include "flame.h"
#include "mode.h"
#include "option.h"

static struct {
	const char *title, *unit;
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
	{},
};

int flame__main(int argc, char **argv)
{
	struct gp_cmdline cl = {
		.name = "gpuprobe flame", .args_doc = "FOLDED > graph.svg",
		.doc = "Draws folded stacks (a 'frame;frame;... value' line per stack, e.g. from --folded) as an\n"
		       "interactive SVG flame graph on stdout. FOLDED '-' reads stdin.\n",
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
	if (flame__file(cl.args[0], &o, stdout, err, sizeof(err))) {
		fprintf(stderr, "gpuprobe: flame: %s\n", err);
		return 1;
	}
	return 0;
}
