#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 29 on the GPU machine: tests/gpu/leak_exit.cu (the memleak example: three
# cudaMalloc, a kernel, two cudaFree, exit at once; the leaking helper inlined twice over),
# built -O2 -g with cudart static and shared, under gpuprobe --memleak as a command,
# RUNS times each (default 5): every run's leak stack must be complete and read
# make_buffer <- train_step <- main on the tagged lines, as addr2line -i -f gives them
# (tests/gpu/check_leak_exit.py). Run from the repository root as root with `make bundle`
# carried (and .output/gpu/leak_exit_{static,shared} from `make gpu-stacks`, else built
# here with nvcc). Outputs in $OUT (or /tmp/gp-gpu). Prints PASS/FAIL, "== overall".
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
GP=${GP:-$ROOT/.output/bundle/gpuprobe}	# GP=/path/to/an/older/gpuprobe for the "before"
[ -x "$GP" ] || GP=$ROOT/.output/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
RUNS=${RUNS:-5}
mkdir -p "$RESULTS" "$ROOT/.output/gpu"
status=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uname -r
for v in static shared; do
	bin=$ROOT/.output/gpu/leak_exit_$v
	if [ ! -x "$bin" ]; then
		flags="-O2 -g"
		[ $v = shared ] && flags="$flags -cudart shared"
		echo "== building leak_exit_$v with this machine's nvcc: nvcc $flags"
		nvcc $flags -o "$bin" tests/gpu/leak_exit.cu || exit 1
	fi
	for r in $(seq "$RUNS"); do
		out=$RESULTS/leak_exit_$v.$r.json
		echo "== leak_exit_$v run $r"
		"$GP" -o - --memleak --json -- "$bin" >"$out" 2>"$RESULTS/leak_exit_$v.$r.err"
		echo "gpuprobe exit $?"
		python3 tests/gpu/check_leak_exit.py "$out" "$bin" tests/gpu/leak_exit.cu || status=1
	done
done
echo "== overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
