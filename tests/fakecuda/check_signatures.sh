#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Checks fakecuda.h against the real cuda.h, when one is installed:
#   1. every prototype in fakecuda.h names a function cuda.h declares;
#   2. every prototype has cuda.h's exact type (the compiler sees both
#      declarations in one translation unit and rejects a mismatch);
#   3. every enum/#define constant in fakecuda.h has cuda.h's value, and the
#      structs the tracer reads have cuda.h's size, alignment and offsets.
# The stand-in must build without CUDA, so no cuda.h means SKIP (exit 0).
#
# Usage: check_signatures.sh [path/to/cuda.h]   (or CUDA_H=..., CC=...)
# Exit: 0 pass or skip, 1 mismatch.
set -eu
# ASCII quotes in compiler messages, for the grep below.
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
cuda_h=${1:-${CUDA_H:-/usr/local/cuda/include/cuda.h}}
cc=${CC:-cc}

if [ ! -f "$cuda_h" ]; then
	echo "SKIP: $cuda_h not found; fakecuda.h not checked against cuda.h"
	exit 0
fi
cuda_inc=$(dirname "$cuda_h")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# One prototype per line, "CUresult cuName(" (see fakecuda.h).
names=$(sed -n 's/^CUresult \(cu[A-Za-z0-9_]*\)(.*/\1/p' "$here/fakecuda.h")
[ -n "$names" ] || { echo "FAIL: no prototypes found in fakecuda.h"; exit 1; }

# cuda.h maps API names to versioned symbols with macros (cuMemcpy ->
# cuMemcpy_ptds, ...); undo that so each name means the symbol itself.
for n in $names; do
	printf '#ifdef %s\n#undef %s\n#endif\n' "$n" "$n"
done > "$tmp/undef.h"

fail=0

# __CUDA_API_VERSION_INTERNAL makes cuda.h declare every exported variant:
# the _ptds/_ptsz ones and the legacy ones (cuCtxCreate_v2,
# cuEventElapsedTime) next to the current ones.  The plain mode checks the
# declarations applications see.
for mode in -D__CUDA_API_VERSION_INTERNAL ""; do
	{
		echo '#include <cuda.h>'
		echo '#include "undef.h"'
		echo '#define FAKECUDA_USE_CUDA_H_TYPES 1'
		echo '#include "fakecuda.h"'
	} > "$tmp/proto.c"
	if ! $cc -std=c11 -Wall -Werror -c $mode -I"$cuda_inc" -I"$tmp" \
		-I"$here" -o "$tmp/proto.o" "$tmp/proto.c" 2> "$tmp/err"; then
		echo "FAIL: prototypes differ from cuda.h (${mode:-default mode}):"
		grep -E 'error|note' "$tmp/err" | head -40
		fail=1
	fi
done

# Existence: without fakecuda.h, taking each address only compiles if
# cuda.h itself declares the name.
{
	echo '#include <cuda.h>'
	echo '#include "undef.h"'
	echo 'void *fakecuda_names[] = {'
	for n in $names; do echo "	(void *)&$n,"; done
	echo '};'
} > "$tmp/exist.c"
if ! $cc -std=gnu11 -Wall -c -D__CUDA_API_VERSION_INTERNAL -I"$cuda_inc" \
	-I"$tmp" -o "$tmp/exist.o" "$tmp/exist.c" 2> "$tmp/err"; then
	echo "FAIL: names in fakecuda.h that cuda.h does not declare:"
	grep -o "'cu[A-Za-z0-9_]*' undeclared" "$tmp/err" | sort -u |
		sed "s/' undeclared//; s/^'/	/"
	fail=1
fi

# Layout and constants: the same program built against each header must
# print the same lines.  Constants are taken from fakecuda.h itself, so a
# new one is checked without editing this script.
{
	sed -n 's/^[[:space:]]*\(CU[A-Za-z0-9_]*\)[[:space:]]*=.*/E(\1)/p' \
		"$here/fakecuda.h"
	sed -n 's/^#define \(CU_[A-Z0-9_]*\)[[:space:]].*/E(\1)/p' \
		"$here/fakecuda.h"
	cat <<'EOF'
Z(CUresult) Z(CUdeviceptr) Z(CUdevice) Z(CUmemGenericAllocationHandle)
Z(CUmemorytype) Z(CUcontext) Z(cuuint64_t)
Z(CUDA_MEMCPY2D)
F(CUDA_MEMCPY2D, srcXInBytes) F(CUDA_MEMCPY2D, srcY)
F(CUDA_MEMCPY2D, srcMemoryType) F(CUDA_MEMCPY2D, srcHost)
F(CUDA_MEMCPY2D, srcDevice) F(CUDA_MEMCPY2D, srcArray)
F(CUDA_MEMCPY2D, srcPitch) F(CUDA_MEMCPY2D, dstXInBytes)
F(CUDA_MEMCPY2D, dstY) F(CUDA_MEMCPY2D, dstMemoryType)
F(CUDA_MEMCPY2D, dstHost) F(CUDA_MEMCPY2D, dstDevice)
F(CUDA_MEMCPY2D, dstArray) F(CUDA_MEMCPY2D, dstPitch)
F(CUDA_MEMCPY2D, WidthInBytes) F(CUDA_MEMCPY2D, Height)
Z(CUDA_MEMCPY3D)
F(CUDA_MEMCPY3D, srcXInBytes) F(CUDA_MEMCPY3D, srcY) F(CUDA_MEMCPY3D, srcZ)
F(CUDA_MEMCPY3D, srcLOD) F(CUDA_MEMCPY3D, srcMemoryType)
F(CUDA_MEMCPY3D, srcHost) F(CUDA_MEMCPY3D, srcDevice)
F(CUDA_MEMCPY3D, srcArray) F(CUDA_MEMCPY3D, reserved0)
F(CUDA_MEMCPY3D, srcPitch) F(CUDA_MEMCPY3D, srcHeight)
F(CUDA_MEMCPY3D, dstXInBytes) F(CUDA_MEMCPY3D, dstY) F(CUDA_MEMCPY3D, dstZ)
F(CUDA_MEMCPY3D, dstLOD) F(CUDA_MEMCPY3D, dstMemoryType)
F(CUDA_MEMCPY3D, dstHost) F(CUDA_MEMCPY3D, dstDevice)
F(CUDA_MEMCPY3D, dstArray) F(CUDA_MEMCPY3D, reserved1)
F(CUDA_MEMCPY3D, dstPitch) F(CUDA_MEMCPY3D, dstHeight)
F(CUDA_MEMCPY3D, WidthInBytes) F(CUDA_MEMCPY3D, Height)
F(CUDA_MEMCPY3D, Depth)
Z(CUlaunchAttributeValue) Z(CUlaunchAttribute)
F(CUlaunchAttribute, id) F(CUlaunchAttribute, value)
F(CUlaunchAttribute, value.cooperative) F(CUlaunchAttribute, value.priority)
F(CUlaunchAttribute, value.clusterDim.z)
F(CUlaunchAttribute, value.accessPolicyWindow.num_bytes)
F(CUlaunchAttribute, value.accessPolicyWindow.missProp)
Z(CUlaunchConfig)
F(CUlaunchConfig, gridDimX) F(CUlaunchConfig, gridDimY)
F(CUlaunchConfig, gridDimZ) F(CUlaunchConfig, blockDimX)
F(CUlaunchConfig, blockDimY) F(CUlaunchConfig, blockDimZ)
F(CUlaunchConfig, sharedMemBytes) F(CUlaunchConfig, hStream)
F(CUlaunchConfig, attrs) F(CUlaunchConfig, numAttrs)
Z(CUmemLocation) F(CUmemLocation, type) F(CUmemLocation, id)
Z(CUmemAllocationProp)
F(CUmemAllocationProp, type) F(CUmemAllocationProp, requestedHandleTypes)
F(CUmemAllocationProp, location) F(CUmemAllocationProp, location.id)
F(CUmemAllocationProp, win32HandleMetaData)
F(CUmemAllocationProp, allocFlags)
F(CUmemAllocationProp, allocFlags.compressionType)
F(CUmemAllocationProp, allocFlags.gpuDirectRDMACapable)
F(CUmemAllocationProp, allocFlags.usage)
F(CUmemAllocationProp, allocFlags.reserved)
Z(CUmemPoolProps) F(CUmemPoolProps, location) F(CUmemPoolProps, maxSize)
F(CUmemPoolProps, usage) F(CUmemPoolProps, reserved)
Z(CUmemAccessDesc) F(CUmemAccessDesc, flags)
Z(CUDA_MEM_ALLOC_NODE_PARAMS) F(CUDA_MEM_ALLOC_NODE_PARAMS, poolProps)
F(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescs) F(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescCount)
F(CUDA_MEM_ALLOC_NODE_PARAMS, bytesize) F(CUDA_MEM_ALLOC_NODE_PARAMS, dptr)
E(CU_GRAPH_NODE_TYPE_MEM_ALLOC) E(CU_GRAPH_NODE_TYPE_MEM_FREE)
Z(CUctxCreateParams)
F(CUctxCreateParams, execAffinityParams)
F(CUctxCreateParams, numExecAffinityParams)
F(CUctxCreateParams, cigParams)
Z(CUexecAffinityParam) F(CUexecAffinityParam, type)
F(CUexecAffinityParam, param.smCount.val)
Z(CUctxCigParam) F(CUctxCigParam, sharedDataType) F(CUctxCigParam, sharedData)
Z(CUpointer_attribute) Z(CUgraphNode) Z(CUstreamCaptureMode) Z(CUstreamCaptureStatus)
Z(CUDA_MEMCPY3D_PEER)
F(CUDA_MEMCPY3D_PEER, srcXInBytes) F(CUDA_MEMCPY3D_PEER, srcY) F(CUDA_MEMCPY3D_PEER, srcZ)
F(CUDA_MEMCPY3D_PEER, srcLOD) F(CUDA_MEMCPY3D_PEER, srcMemoryType)
F(CUDA_MEMCPY3D_PEER, srcHost) F(CUDA_MEMCPY3D_PEER, srcDevice)
F(CUDA_MEMCPY3D_PEER, srcArray) F(CUDA_MEMCPY3D_PEER, srcContext)
F(CUDA_MEMCPY3D_PEER, srcPitch) F(CUDA_MEMCPY3D_PEER, srcHeight)
F(CUDA_MEMCPY3D_PEER, dstXInBytes) F(CUDA_MEMCPY3D_PEER, dstY) F(CUDA_MEMCPY3D_PEER, dstZ)
F(CUDA_MEMCPY3D_PEER, dstLOD) F(CUDA_MEMCPY3D_PEER, dstMemoryType)
F(CUDA_MEMCPY3D_PEER, dstHost) F(CUDA_MEMCPY3D_PEER, dstDevice)
F(CUDA_MEMCPY3D_PEER, dstArray) F(CUDA_MEMCPY3D_PEER, dstContext)
F(CUDA_MEMCPY3D_PEER, dstPitch) F(CUDA_MEMCPY3D_PEER, dstHeight)
F(CUDA_MEMCPY3D_PEER, WidthInBytes) F(CUDA_MEMCPY3D_PEER, Height)
F(CUDA_MEMCPY3D_PEER, Depth)
Z(CUgraphEdgeData) F(CUgraphEdgeData, from_port) F(CUgraphEdgeData, to_port)
F(CUgraphEdgeData, type) F(CUgraphEdgeData, reserved)
Z(CUDA_KERNEL_NODE_PARAMS_v1)
F(CUDA_KERNEL_NODE_PARAMS_v1, func) F(CUDA_KERNEL_NODE_PARAMS_v1, gridDimX)
F(CUDA_KERNEL_NODE_PARAMS_v1, gridDimZ) F(CUDA_KERNEL_NODE_PARAMS_v1, blockDimX)
F(CUDA_KERNEL_NODE_PARAMS_v1, blockDimZ) F(CUDA_KERNEL_NODE_PARAMS_v1, sharedMemBytes)
F(CUDA_KERNEL_NODE_PARAMS_v1, kernelParams) F(CUDA_KERNEL_NODE_PARAMS_v1, extra)
Z(CUDA_KERNEL_NODE_PARAMS)
F(CUDA_KERNEL_NODE_PARAMS, func) F(CUDA_KERNEL_NODE_PARAMS, gridDimX)
F(CUDA_KERNEL_NODE_PARAMS, gridDimY) F(CUDA_KERNEL_NODE_PARAMS, gridDimZ)
F(CUDA_KERNEL_NODE_PARAMS, blockDimX) F(CUDA_KERNEL_NODE_PARAMS, blockDimY)
F(CUDA_KERNEL_NODE_PARAMS, blockDimZ) F(CUDA_KERNEL_NODE_PARAMS, sharedMemBytes)
F(CUDA_KERNEL_NODE_PARAMS, kernelParams) F(CUDA_KERNEL_NODE_PARAMS, extra)
F(CUDA_KERNEL_NODE_PARAMS, kern) F(CUDA_KERNEL_NODE_PARAMS, ctx)
Z(CUDA_GRAPH_INSTANTIATE_PARAMS) F(CUDA_GRAPH_INSTANTIATE_PARAMS, flags)
F(CUDA_GRAPH_INSTANTIATE_PARAMS, hUploadStream)
F(CUDA_GRAPH_INSTANTIATE_PARAMS, hErrNode_out)
F(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out)
Z(CUgraphExecUpdateResultInfo) F(CUgraphExecUpdateResultInfo, result)
F(CUgraphExecUpdateResultInfo, errorNode) F(CUgraphExecUpdateResultInfo, errorFromNode)
EOF
} > "$tmp/layout.inc"

cat > "$tmp/layout.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include HEADER
#define E(c) printf("%s = %lld\n", #c, (long long)(uintptr_t)(c));
#define Z(t) printf("sizeof(%s) = %zu align %zu\n", #t, sizeof(t), \
		    (size_t)_Alignof(t));
#define F(t, f) printf("%s.%s at %zu size %zu\n", #t, #f, offsetof(t, f), \
		       sizeof(((t *)0)->f));
int main(void)
{
#include "layout.inc"
	return 0;
}
EOF
ok=1
for h in cuda fakecuda; do
	if ! $cc -std=c11 -Wall -I"$cuda_inc" -I"$here" -I"$tmp" \
		-DHEADER="<$h.h>" -o "$tmp/layout_$h" "$tmp/layout.c" \
		2> "$tmp/err"; then
		echo "FAIL: layout probe does not build against $h.h:"
		grep error "$tmp/err" | head -20
		ok=0
		fail=1
	fi
done
if [ $ok = 1 ]; then
	"$tmp/layout_cuda" > "$tmp/cuda.out"
	"$tmp/layout_fakecuda" > "$tmp/fakecuda.out"
	if ! diff -u "$tmp/cuda.out" "$tmp/fakecuda.out" > "$tmp/diff"; then
		echo "FAIL: constants or layouts differ (- cuda.h, + fakecuda.h):"
		grep '^[-+][^-+]' "$tmp/diff"
		fail=1
	fi
fi

nprotos=$(echo "$names" | wc -l)
nitems=$(wc -l < "$tmp/cuda.out" 2>/dev/null || echo 0)
if [ $fail = 0 ]; then
	echo "PASS: $nprotos prototypes and $nitems constants/layout items match $cuda_h"
fi
exit $fail
