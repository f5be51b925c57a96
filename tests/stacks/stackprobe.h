/* SPDX-License-Identifier: BSD-3-Clause */
/* The test probe's record: who, and the stack copy (bpf/stackcopy.bpf.h). */
#ifndef GPUPROBE_TESTS_STACKPROBE_H
#define GPUPROBE_TESTS_STACKPROBE_H

#include "pystack.bpf.h"
#include "stackcopy.bpf.h"

struct stackprobe_event {
	__u32 pid;
	__u32 tid;
	__u64 ktime_ns;	/* the BPF side's cost is measured between probes */
	struct gp_py_stack py;
	struct gp_stack_copy copy;
};

#endif
