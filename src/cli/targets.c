/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "cli/cmdline.h"
#include "core/options.h"
#include "core/run.h"
#include "cli/targets.h"

int cli_targets__usage(const struct gp_cmdline *cl)
{
	if (gp_opts.cmd && gp_opts.nr_pids)
		return gp_options__error(cl, "-p and a command exclude each other");
	if (gp_opts.tree && !gp_opts.nr_pids)
		return gp_options__error(cl, "--tree needs -p (a command's children are always followed)");
	if (gp_opts.nr_pids && (gp_opts.comm || gp_opts.cgroup))
		return gp_options__error(cl, "-p excludes --comm and --cgroup (they choose processes node-wide)");
	if (gp_opts.cmd && (gp_opts.comm || gp_opts.cgroup))
		return gp_options__error(cl, "a command excludes --comm and --cgroup (they choose processes node-wide)");
	for (int i = 0; gp_opts.tree && i < gp_opts.nr_pids; i++)
		if (gp_opts.pids[i] == 1)
			return gp_options__error(cl, "--tree on PID 1 would follow every process: trace the node without -p (or use --comm, --cgroup)");
	/* the trace probes every call, and its launch counter tracks read the sampled table */
	if (gp_opts.trace && gp_opts.max_overhead > 0 && gp_opts.max_overhead < 100)
		return gp_options__error(cl, "--max-overhead with --trace: the trace probes every call, which no budget bounds");
	return 0;
}

/*
 * Who the probes count: one -p PID alone is filtered by the uprobes themselves (cheapest);
 * a command, several PIDs, --tree, --comm and --cgroup follow a set of processes that
 * grows as they fork (bpf/procs.bpf.c), with the probes node-wide.
 */
void cli_targets__choose(struct gp_run *run, pid_t child)
{
	struct gp_run_targets t = { .comm = gp_opts.comm, .cgroup = gp_opts.cgroup, .target_pid = -1 };

	t.follow_forks = gp_opts.cmd || gp_opts.tree || gp_opts.comm || gp_opts.cgroup;
	t.filter = t.follow_forks || gp_opts.nr_pids > 1;
	if (gp_opts.cmd)
		t.keep_pid = (uint32_t)(child > 0 ? child : 0);
	else if (gp_opts.nr_pids == 1)
		t.keep_pid = (uint32_t)gp_opts.pids[0];
	if (!t.filter && gp_opts.nr_pids == 1)
		t.target_pid = gp_opts.pids[0];
	gp_run__set_targets(run, &t);
}

/* --comm, --cgroup: the node's processes of that name or cgroup, and their children */
void daemon_targets__choose(struct gp_run *run)
{
	struct gp_run_targets t = { .comm = gp_opts.comm, .cgroup = gp_opts.cgroup, .target_pid = -1 };

	t.filter = t.follow_forks = gp_opts.comm || gp_opts.cgroup;
	gp_run__set_targets(run, &t);
}
