/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libleakhelp.so: leakexit's allocations go through here, as a program's go through a
 * shared cudart: a file the program's first stacks never went through, whose frames must
 * still be named once the program is gone.
 */
#include "common.h"

#ifdef LATE
#define help_alloc late_alloc /* libleaklate.so: dlopen'ed after the first stack */
#endif

__attribute__((noinline)) CUdeviceptr help_alloc(size_t bytes)
{
	CUdeviceptr p = 0;

	CHECK(cuMemAlloc_v2(&p, bytes)); /* @help_alloc */
	__asm__ volatile("" ::: "memory"); /* after the call: not a tail call */
	return p;
}
