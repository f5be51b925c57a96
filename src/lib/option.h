/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One option descriptor for every front end and mode [retsnoop env.c]: the parser
 * (src/cli/options.c) builds getopt_long's table, the help text and the checks from these,
 * so a flag means the same thing, with the same bounds, wherever it is accepted.
 */
#ifndef GP_OPTION_H
#define GP_OPTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gp_opt_type {
	GP_OPT_SWITCH,  /* bool *dest = true */
	GP_OPT_CLEAR,   /* bool *dest = false (--no-latency) */
	GP_OPT_STRING,  /* const char **dest */
	GP_OPT_U64,     /* uint64_t *dest in [min, max] */
	GP_OPT_COUNT,   /* int *dest in [min, max], or -1 for "all" */
	GP_OPT_SECONDS, /* double *dest in [min, max], finite */
	GP_OPT_CHOICE,  /* int *dest = index of the argument in choices ("a|b|c") */
	GP_OPT_CUSTOM,  /* parse(arg, dest, err, len) */
};

/* Help sections, in the order --help prints them. */
enum gp_opt_group {
	GP_GRP_MODES = 1,
	GP_GRP_TARGET,
	GP_GRP_OUTPUT,
	GP_GRP_DAEMON,
	GP_GRP_LIMITS,
	GP_GRP_MODE, /* a mode's own options: printed under the mode's name */
};

struct gp_option {
	const char *name;   /* long name without "--"; NULL ends a table */
	int key;            /* short option letter, or 0 */
	const char *arg;    /* argument name, NULL for a switch */
	const char *doc;
	enum gp_opt_type type;
	void *dest;
	double min, max;    /* GP_OPT_U64, GP_OPT_COUNT, GP_OPT_SECONDS */
	const char *choices; /* GP_OPT_CHOICE */
	/* GP_OPT_CHOICE: a choice this build cannot honour (on this architecture) and why, or
	 * NULL: refused with that reason as a usage error; gpuprobe check --bpf skips the
	 * configurations that give it, saying why */
	const char *unbuilt, *unbuilt_why;
	int (*parse)(const char *arg, void *dest, char *err, size_t len); /* GP_OPT_CUSTOM */
	unsigned int frontends; /* enum gp_frontend (src/core/mode.h) */
	int group;              /* enum gp_opt_group */
};

#endif
