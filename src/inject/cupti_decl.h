/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The part of CUPTI's activity API libgpuprobe_cupti.so uses, declared from the public
 * cupti_activity.h (CUDA 13.0): result codes, kinds, the buffer callbacks' types, and the
 * offsets of the record fields read. Records are packed and 8-byte aligned.
 */
#ifndef GP_CUPTI_DECL_H
#define GP_CUPTI_DECL_H

#include <stddef.h>
#include <stdint.h>

#define CUPTIAPI
typedef int CUptiResult;
#define CUPTI_SUCCESS 0
#define CUPTI_ERROR_MAX_LIMIT_REACHED 12

typedef int CUpti_ActivityKind;
#define CUPTI_ACTIVITY_KIND_MEMCPY 1
#define CUPTI_ACTIVITY_KIND_MEMSET 2
#define CUPTI_ACTIVITY_KIND_KERNEL 3
#define CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL 10
#define CUPTI_ACTIVITY_KIND_MEMCPY2 22 /* peer copies: CUpti_ActivityMemcpyPtoP */
#define CUPTI_ACTIVITY_FLAG_FLUSH_FORCED 1
#define CUPTI_RECORD_ALIGN 8

typedef struct CUpti_Activity CUpti_Activity; /* starts with its CUpti_ActivityKind */

typedef void(CUPTIAPI *gpt_cupti_request_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void(CUPTIAPI *gpt_cupti_complete_fn)(void *context, uint32_t stream, uint8_t *buffer, size_t size,
					      size_t valid);

/* CUpti_ActivityKernel4..10 */
#define CUPTI_KERNEL_START 16
#define CUPTI_KERNEL_END 24
#define CUPTI_KERNEL_DEVICE 40
#define CUPTI_KERNEL_STREAM 48
#define CUPTI_KERNEL_GRID 52  /* gridX, gridY, gridZ (int32) */
#define CUPTI_KERNEL_BLOCK 64 /* blockX, blockY, blockZ */
#define CUPTI_KERNEL_CORR 92
#define CUPTI_KERNEL_NAME 104 /* const char * */
#define CUPTI_KERNEL_MIN 112  /* bytes a record has at least */

/* CUpti_ActivityMemcpy4..6 and CUpti_ActivityMemcpyPtoP2..4 (one prefix) */
#define CUPTI_COPY_KIND 4 /* uint8_t copyKind */
#define CUPTI_COPY_BYTES 8
#define CUPTI_COPY_START 16
#define CUPTI_COPY_END 24
#define CUPTI_COPY_DEVICE 32
#define CUPTI_COPY_STREAM 40
#define CUPTI_COPY_CORR 44
#define CUPTI_PTOP_SRC_DEVICE 44
#define CUPTI_PTOP_DST_DEVICE 52
#define CUPTI_PTOP_CORR 60

/* CUpti_ActivityMemset2..4 */
#define CUPTI_MEMSET_BYTES 8
#define CUPTI_MEMSET_START 16
#define CUPTI_MEMSET_END 24
#define CUPTI_MEMSET_DEVICE 32
#define CUPTI_MEMSET_STREAM 40
#define CUPTI_MEMSET_CORR 44

#endif
