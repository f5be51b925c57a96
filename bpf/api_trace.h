/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The records of bpf/api_trace.bpf.c (--trace): one per driver call, and a name argument
 * ahead of its call's record.
 */
#ifndef GP_API_TRACE_H
#define GP_API_TRACE_H

#include "gpuprobe.h"

/* --trace: one call of any exported cu* function. */
#define GP_TRACE_STR 32 /* cuLaunchKernelEx's config (names come in a GP_EV_CALL_STR record) */
struct gp_call_event {
	__u32 type; /* GP_EV_CALL */
	__u32 fn;   /* index into the loader's list of traced functions (the cookie) */
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;  /* entry */
	__u64 dur_ns;
	__s64 ret;    /* CUresult */
	__u64 args[6];
	__u64 stack_args[2]; /* [rsp+8], [rsp+16] at entry: cuLaunchKernel's blockDimZ, shmem */
	__u64 out0;          /* at return: the 8 bytes at args[0] (out-parameters) */
	char str[GP_TRACE_STR]; /* cuLaunchKernelEx: its CUlaunchConfig's grid and block */
};

/* The name argument of cuModuleGetFunction/cuLibraryGetKernel (--trace), whole (PyTorch's
 * mangled template names run past 255 bytes): sent just before the call's own record by
 * the same thread, so the reader joins them by thread. */
struct gp_call_str_event {
	__u32 type; /* GP_EV_CALL_STR */
	__u32 pid;
	__u32 tid;
	__u32 _pad;
	char str[GP_NAME_LEN];
};

#endif /* GP_API_TRACE_H */
