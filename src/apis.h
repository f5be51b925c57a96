/* SPDX-License-Identifier: BSD-3-Clause */
/* The driver entry points gpuprobe probes, by id (bpf/gpuprobe.h's enum gp_api). */
#ifndef GP_APIS_H
#define GP_APIS_H

#include <stdbool.h>
#include <linux/types.h>
#include "gpuprobe.h"

/* Which entry program of bpf/cuda_mem.bpf.c reads this function's arguments. */
enum gp_mem_shape {
	GP_SHAPE_ALLOC,
	GP_SHAPE_PITCH,
	GP_SHAPE_FREE,
	GP_SHAPE_MAP,
	GP_SHAPE_UNMAP,
};

struct gp_api_info {
	enum gp_api id;
	const char *name;     /* exported symbol of libcuda.so.1 */
	enum gp_mem_shape shape;
	enum gp_mem_kind kind; /* what it allocates or frees */
	bool required;        /* a library without it is not a CUDA driver */
};

/* The memory entry points, in enum order; GP_API_NONE excluded. */
extern const struct gp_api_info gp_mem_apis[];
extern const int gp_mem_apis_cnt;

const char *gp_api_name(unsigned int id);
const struct gp_api_info *gp_api_info(unsigned int id);
const char *gp_kind_name(unsigned int kind);

#endif
