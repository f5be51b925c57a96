#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# --bandwidth-util on the real GPU (device tool, `make bundle` carried): copy_cuda with
# cudart static and shared; per-batch gpuprobe runs give each batch's bandwidth alone.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-bandwidth
mkdir -p "$O" "$W" "$RESULTS"
status=0
nvcc -O2 -std=c++17 -o $W/copy_static tests/gpu/copy_cuda.cu || exit 1
nvcc -O2 -std=c++17 -cudart shared -o $W/copy_shared tests/gpu/copy_cuda.cu || exit 1
for v in static shared; do
	echo "== gpuprobe --bandwidth-util --json --csv -- copy_$v"
	$GP -o $O/bw_$v.jsonl --bandwidth-util --json --csv $O/bw_$v.csv -- $W/copy_$v >$O/bw_$v.err 2>&1
	echo "exit $?"
	python3 tests/gpu/check_bandwidth.py $O/bw_$v.err $O/bw_$v.jsonl || status=1
	cat $O/bw_$v.csv
done
echo "== text report (copy_shared)"
$GP --bandwidth-util -- $W/copy_shared 2>&1 | grep -v "^{" | head -40
tar czf "$RESULTS/gpu-bandwidth.tgz" -C "$W" out-bandwidth
echo "== overall bandwidth: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
