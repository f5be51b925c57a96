/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NCCL's kernel names, decoded: `ncclDevKernel_AllReduce_Sum_f32_RING_LL` (NCCL 2.19 and
 * later; mangled `_Z39ncclDevKernel_..._LL24ncclDevKernelArgsStorageILm4096EE` or demangled
 * with its parameters) and `ncclKernel_AllReduce_RING_LL_Sum_float` (2.12-2.18) into the
 * operation, data type, algorithm and protocol, with what a name cannot tell: NCCL builds a
 * kernel per (op, Sum, type, algorithm, LL) only and runs every other reduction (Prod,
 * Min/Max, Avg, PreMulSum), the signed integer types and the LL128 and SIMPLE protocols in
 * that kernel, so a name says the op, the type up to its sign and the algorithm; the call's
 * reduction and protocol it does not. `ncclDevKernel_SendRecv` runs point-to-point calls,
 * AlltoAll, Gather and Scatter; `ncclDevKernel_Generic` any of them.
 *
 * --cudatrace shows kernel names: nccl_kernel__describe gives the one-line decoding for a
 * name (see docs/design.md).
 */
#ifndef GP_NCCLKERN_H
#define GP_NCCLKERN_H

#include <stdbool.h>
#include <stddef.h>

struct nccl_kernel {
	char op[24];    /* "AllReduce", "AllGather", "SendRecv", "Generic", ... */
	char redop[16]; /* the kernel's reduction ("Sum"), "" for none */
	char type[16];  /* the kernel's type as named ("f32", "u32", "float"), "" for none */
	char dtypes[40]; /* the NCCL data types it runs: "float32", "int32 or uint32", "" */
	char algo[24];  /* "RING", "TREE", "NVLS", "COLLNET_DIRECT", ..., "" */
	char proto[8];  /* "LL", "LL128", "SIMPLE", "" */
	bool legacy;    /* the ncclKernel_ form of NCCL 2.12-2.18 */
};

/* 0 and *out filled, or -EINVAL when name is not an NCCL device kernel's (bounded: a name
 * longer than 4 KiB is not one). */
int nccl_kernel__decode(const char *name, struct nccl_kernel *out);

/* "AllReduce, float32, RING, LL kernel (reduction and protocol of the call not in the name)"
 * or "" when name is not NCCL's; returns the length written (snprintf's). */
int nccl_kernel__describe(const char *name, char *buf, size_t len);

#endif
