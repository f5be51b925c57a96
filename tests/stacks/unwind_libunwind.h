/* SPDX-License-Identifier: BSD-3-Clause */
/* The libunwind alternative, for the comparison only (unwind_libunwind.c). */
#ifndef GPUPROBE_TESTS_UNWIND_LIBUNWIND_H
#define GPUPROBE_TESTS_UNWIND_LIBUNWIND_H

#include "lib/unwind.h"

struct lu_unwinder;

/* One process: its maps are read once, here. */
struct lu_unwinder *lu__new(int pid);
void lu__free(struct lu_unwinder *u);
int lu__unwind(struct lu_unwinder *u, const struct gp_stack_copy *copy,
	       struct unwind_frames *out);

#endif
