/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one option parser of every front end and subcommand: getopt_long driven by the
 * descriptors of src/lib/option.h (the global ones here, each mode's in its table
 * entry), help generated from them, the same bounds and messages everywhere. argp was the
 * other candidate; it prints its own two-line errors, which the daemon cannot prefix with
 * the journald priority its log lines carry.
 */
#ifndef GP_CMDLINE_H
#define GP_CMDLINE_H

#include <stdbool.h>

#define GP_EXIT_USAGE 2
#define GP_PARSED_EXIT (-1) /* --help or --version printed: exit 0 */

enum gp_positionals {
	GP_POS_NONE,    /* no arguments after the options */
	GP_POS_COMMAND, /* the first non-option starts a command, the rest is its own */
	GP_POS_FILES,   /* up to max_args plain arguments */
};

struct gp_cmdline {
	const char *name;      /* "gpuprobe", "gpuprobe daemon": usage and messages */
	unsigned int frontend; /* whose options (enum gp_frontend); 0: only -h and -V */
	bool modes;            /* takes mode flags, and needs at least one */
	const char *args_doc;  /* after "[OPTION...]" in the usage line */
	const char *doc;       /* what it does, printed under the usage line */
	const char *epilog;    /* printed last: examples, streams, exit status */
	int positionals;       /* enum gp_positionals */
	int min_args, max_args; /* GP_POS_FILES */
	const struct gp_option *extra; /* the subcommand's own options, or NULL */
	/* options of other front ends this one refuses with a reason ("json", "top draws a
	 * view: gpuprobe --json prints reports"), NULL-terminated; not in --help (it lists
	 * what is accepted), but a better line than "unrecognized option" */
	const char *const (*refused)[2];
	const char *log_prefix; /* before "gpuprobe: " on error lines ("<3>" for journald) */
	/* out: GP_POS_FILES arguments */
	char **args;
	int nr_args;
};

/* Parses argv into gp_opts and the modes' option storage. Returns 0, GP_PARSED_EXIT, or
 * GP_EXIT_USAGE after one error line on stderr. */
int gp_options__parse(struct gp_cmdline *c, int argc, char **argv);
/* After a parse that returned GP_EXIT_USAGE: why, when it refused a choice this build
 * cannot honour (struct gp_option's unbuilt: --stacks dwarf on arm64), else NULL. */
const char *gp_options__unbuilt(void);
/* One usage error line in c's style (for checks made after parsing); GP_EXIT_USAGE. */
int gp_options__error(const struct gp_cmdline *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The options that are no mode's own (name NULL ends): gpuprobe check --bpf reads them. */
struct gp_option;
const struct gp_option *gp_options__globals(void);

#endif
