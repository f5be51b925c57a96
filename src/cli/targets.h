/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who a front end's run follows, from the options parsed into gp_opts: the one place the
 * CLI (gpuprobe, gpuprobe top), the daemon and the load check (gpuprobe check --bpf) decide
 * it, so that the check loads the BPF programs exactly as the front ends configure them.
 */
#ifndef GP_TARGETS_H
#define GP_TARGETS_H

#include <sys/types.h>

struct gp_cmdline;
struct gp_run;

/* What picks the processes, one way at a time, and the CLI's other exclusions that
 * concern the run: GP_EXIT_USAGE with one line on stderr, or 0. */
int cli_targets__usage(const struct gp_cmdline *cl);
/* The CLI's run: a command (child: its PID, or 0 before it exists), -p, --tree, --comm,
 * --cgroup or the whole node. */
void cli_targets__choose(struct gp_run *run, pid_t child);
/* The daemon's run: the whole node, or --comm / --cgroup and what they start. */
void daemon_targets__choose(struct gp_run *run);

#endif
