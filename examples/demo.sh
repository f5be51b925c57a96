#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# `make demo`: gpuprobe --memleak on a bundled workload. On a machine with an NVIDIA GPU,
# its driver and nvcc, that is a real CUDA program (tests/gpu/memleak_cuda.cu); anywhere
# else, the stand-in driver (tests/fakecuda) and a workload that leaks 3 of 10 buffers.
set -e
cd "$(dirname "$0")/.."
GP=.output/gpuprobe
if [ -e /dev/nvidiactl ] && command -v nvcc >/dev/null 2>&1 && ldconfig -p | grep -q "libcuda.so.1 "; then
	mkdir -p .output/demo
	nvcc -g -Xcompiler -fno-omit-frame-pointer -o .output/demo/memleak_cuda tests/gpu/memleak_cuda.cu
	echo "# real GPU: $GP --memleak -- .output/demo/memleak_cuda"
	exec $GP --memleak -- .output/demo/memleak_cuda
fi
echo "# no GPU here: the stand-in driver .output/fakecuda/libcuda.so.1"
echo "# $GP --memleak --top 3 --libcuda .output/fakecuda/libcuda.so.1 -- .output/apps/memleak_app --api all --allocs 10 --leaks 3"
exec $GP --memleak --top 3 --libcuda .output/fakecuda/libcuda.so.1 -- \
	.output/apps/memleak_app --api all --allocs 10 --leaks 3
