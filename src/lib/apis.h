/* SPDX-License-Identifier: BSD-3-Clause */
/* The driver entry points gpuprobe probes, by id (bpf/gpuprobe.h's enum gp_api): each
 * mode's table, generated in id order from the one list, bpf/gp_apis.def. */
#ifndef GP_APIS_H
#define GP_APIS_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "gpuprobe.h"
#include "cuda_mem.h"
#include "cuda_copy.h"
#include "cuda_launch.h"

struct gp_api_info {
	enum gp_api id;
	const char *name;     /* exported symbol of libcuda.so.1 */
	enum gp_mem_layout layout; /* how mem_enter reads its arguments (the cookie's) */
	enum gp_mem_kind kind; /* what it allocates or frees */
	bool required;        /* a library without it is not a CUDA driver */
};

struct gp_launch_api_info {
	enum gp_api id;
	const char *name;
	enum gp_launch_prog prog;
};

extern const struct gp_launch_api_info gp_launch_apis[];
extern const int gp_launch_apis_cnt;

/* --cudatrace's stream-capture and graph entry points (graph_enter/graph_leave of
 * bpf/cuda_launch.bpf.c); with_return: the return is read (success, out-pointers). */
struct gp_graph_api_info {
	enum gp_api id;
	const char *name;
	bool with_return;
	enum gp_graph_call call; /* how it passes its arguments (the cookie's) */
};

extern const struct gp_graph_api_info gp_graph_apis[];
extern const int gp_graph_apis_cnt;

/* --bandwidth-util's own entry points (copies, contexts, event records, host
 * registration); it probes the launch table's GP_LP_SYNC entries too. */
struct gp_copy_api_info {
	enum gp_api id;
	const char *name;
	enum gp_copy_layout layout; /* GP_CL_NONE: no copy */
};

extern const struct gp_copy_api_info gp_copy_apis[];
extern const int gp_copy_apis_cnt;

/* The memory entry points, in id order. */
extern const struct gp_api_info gp_mem_apis[];
extern const int gp_mem_apis_cnt;

const char *gp_api_name(unsigned int id);
const struct gp_api_info *gp_api_info(unsigned int id);
/* A memory entry point's bit in a set of them (its place in gp_mem_apis, which the
 * enum's ids outgrew: 64 and more); 0 for any other id. */
uint64_t gp_mem_api_bit(unsigned int id);
const char *gp_kind_name(unsigned int kind);
/* How a context, synchronization or event call passes what its struct gp_aux_event
 * reports (GP_AUX_LAYOUT in bpf/gp_apis.def; GP_AUX_ARG1 for one not listed). */
enum gp_aux_layout gp_aux_layout_of(unsigned int id);
/* A _ptsz entry point: its stream 0 is the calling thread's default stream (cuda.h's
 * per-thread variants; GP_COOKIE_PTSZ in the launch and graph programs' cookies). */
bool gp_api_ptsz(unsigned int id);

#endif
