#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 14 on the 2-GPU machine (nvidia-h200-x2): peer copies and NCCL, checked against the
# programs' own accounts. Builds nothing there: `make gpu-nccl` here puts the static gpuprobe
# and peer_cuda under .output/bundle (carry .output/bundle with the tree).
#   1. peer_cuda under --bandwidth-util: pairs both ways, sync kinds, bounds vs CUDA events;
#   2. a 2-rank torch.distributed job (nccl_torch.py) under --nccl --trace, no --libnccl:
#      the wheel's libnccl found when the workers import torch; every call per rank;
#      busbw lower bounds vs the script's nccl-tests figures;
#   3. the same job under --cudatrace: NCCL's kernel names (for the decoding);
#   4. the same job under --bandwidth-util: NCCL moves data with its kernels (device-
#      initiated loads and stores over NVLink), not copies: no peer copies expected.
# Prints every figure; exits non-zero when a check fails. Results also in $OUT/gpu-nccl.tgz.
set -u
cd "$(dirname "$0")/../.."
B=$PWD/.output/bundle
GP=$B/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-nccl
mkdir -p "$O" "$RESULTS"
# NVLink multicast stays off on these machines (docs: GPU-MACHINE.md), in every job
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
status=0
for f in "$GP" "$B/gpu/peer_cuda"; do
	[ -x "$f" ] || { echo "missing $f: run 'make gpu-nccl' on the development machine and carry .output/bundle"; exit 1; }
done

echo "== the machine"
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader
nvidia-smi topo -m
for d in /sys/bus/pci/devices/*; do
	[ "$(cat $d/vendor 2>/dev/null)" = 0x10de ] || continue
	case "$(cat $d/class)" in 0x03*) ;; *) continue ;; esac
	echo "$(basename $d) device $(cat $d/device) link $(cat $d/current_link_speed 2>/dev/null) x$(cat $d/current_link_width 2>/dev/null) (max $(cat $d/max_link_speed 2>/dev/null) x$(cat $d/max_link_width 2>/dev/null))"
done

echo "== 1. peer_cuda under --bandwidth-util"
$GP -o $O/peer.jsonl --bandwidth-util --json -- $B/gpu/peer_cuda >$O/peer.err 2>&1
echo "exit $?"
grep -v '^{' $O/peer.err | head -5
python3 tests/gpu/check_nccl.py peer $O/peer.err $O/peer.jsonl || status=1
echo "-- text report"
$GP -o - --bandwidth-util -- $B/gpu/peer_cuda 2>/dev/null | grep -v '^{' | head -40

JOB="$PY -m torch.distributed.run --nproc_per_node 2 tests/gpu/nccl_torch.py"
echo "== 2. torch.distributed, 2 ranks, under --nccl --trace (no --libnccl)"
$GP -o $O/nccl.jsonl --nccl --json --trace $O/nccl-trace.jsonl --trace-filter "cu*Synchronize*" -- $JOB >$O/nccl.err 2>&1
echo "exit $?"
grep '^gpuprobe' $O/nccl.err
python3 tests/gpu/check_nccl.py nccl $O/nccl.err $O/nccl.jsonl $O/nccl-trace.jsonl || status=1
echo "-- text report"
$GP --nccl -- $JOB 2>&1 | grep -v '^{' | head -80

echo "== 3. the same job under --cudatrace: NCCL's kernels"
$GP -o $O/ct.jsonl --cudatrace --json -- $JOB >$O/ct.err 2>&1
echo "exit $?"
python3 tests/gpu/check_nccl.py kernels $O/ct.jsonl || status=1

echo "== 4. the same job under --bandwidth-util"
$GP --bandwidth-util -- $JOB 2>&1 | grep -v '^{' | head -30

tar czf "$RESULTS/gpu-nccl.tgz" -C "$W" out-nccl
echo "== overall nccl: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
