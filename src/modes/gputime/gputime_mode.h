/* SPDX-License-Identifier: BSD-3-Clause */
/* --gpu-time: the mode's settings and its snapshot (src/modes/gputime/gputime_mode.c). */
#ifndef GP_GPUTIME_MODE_H
#define GP_GPUTIME_MODE_H

#include "lib/links.h"
#include "modes/gputime/gputime.h"
#include "core/mode.h"

struct gputime_settings {
	const char *socket; /* --gpu-time-socket PATH: processes started elsewhere send here */
	const char *cupti;  /* --cupti PATH: the libcupti.so the command's library loads */
	const char *libdir; /* --gpu-time-libs DIR: libgpuprobe_cupti.so, libgpuprobe_ncclprof.so */
	uint64_t max_rows;  /* rows of each kind a process */
};

extern struct gputime_settings gputime_settings;

struct gputime_snap {
	struct gp_snap hdr;
	struct gt_snap_data d;
	struct gp_snap_pid *pids;
	struct gp_snap_drop drops[GT_D__COUNT + 2 + GP_RUN_DROPS];
	const char *channel; /* "inherited socket", "PATH", or both */
	bool injected_cupti, injected_nccl; /* the command got the libraries */
	const char *not_injected; /* why not, or NULL */
	struct bw_links links; /* what bounds copies' and collectives' bandwidths (lib/links.h) */
};

void gputime_report__text(FILE *f, const struct gp_snap *s);
void gputime_report__json(struct json_object *report, const struct gp_snap *s);
int gputime_report__prom(struct prom_out *p, const struct gp_snap *s);

#endif
