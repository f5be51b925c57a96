#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Kernel features and the real driver's first instructions on the GPU machine (run with
# the device tool after `make bundle .output/unit/test_features`; the dynamic bundle's
# libraries serve the unit test binary too). Prints the matrix for the machine's kernel,
# runs the feature unit tests there (live probes included), and classifies the first
# instruction of every driver function gpuprobe probes in each libcuda found: how many
# this kernel emulates at the trap and how many it single-steps (~10x dearer per hit).
set -u
cd "$(dirname "$0")/../.."
T=$PWD/.output/unit/test_features
export LD_LIBRARY_PATH=$PWD/.output/bundle/dyn/lib
status=0
echo "== machine"
uname -r
nvidia-smi -L 2>&1 | head -4
echo "== feature matrix"
"$T" --matrix || status=1
echo "== feature unit tests on this kernel"
"$T" || status=1
for lib in /usr/local/nvidia/lib64/libcuda.so.1 /usr/local/cuda/compat/libcuda.so.1 \
	/usr/lib/x86_64-linux-gnu/libcuda.so.1; do
	[ -e "$lib" ] || continue
	echo "== first instructions of the probed functions: $lib -> $(readlink -f "$lib")"
	"$T" --classify "$(readlink -f "$lib")" || status=1
done
exit $status
