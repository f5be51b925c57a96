#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 13 on the real GPU (device tool, `make bundle` carried).
#   run_issue13.sh single   names after a mid-run -p attach on a PyTorch loop that ran for
#                           WARM (30) s; a PyTorch CUDA graph's kernels with graph counts
#   run_issue13.sh multi    (2 GPUs) gpuprobe --cudatrace --memleak -- torchrun, 2 ranks
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work/i13
mkdir -p "$W" "$RESULTS"
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
status=0

single() {
	echo "== names after a mid-run attach: gpuprobe --cudatrace --json -p PID --duration ${DUR:-10}"
	WARM=${WARM:-30} $PY tests/gpu/midrun_torch.py >$W/midrun.out 2>$W/midrun.err &
	app=$!
	for i in $(seq 600); do grep -q READY $W/midrun.out && break; sleep 0.1; done
	cat $W/midrun.out
	$GP --cudatrace --json -p $app --duration ${DUR:-10} >$W/midrun.jsonl 2>$W/midrun_gp.err
	echo "gpuprobe exit $?"; cat $W/midrun_gp.err
	kill $app; wait $app 2>/dev/null
	python3 tests/gpu/check_issue13.py midrun $W/midrun.jsonl $app || status=1

	echo "== PyTorch CUDA graph: gpuprobe --cudatrace --json -- graph_torch.py"
	$GP -o $W/graph.jsonl --cudatrace --json -- $PY tests/gpu/graph_torch.py >$W/graph.err 2>&1
	echo "exit $?"
	python3 tests/gpu/check_issue13.py graph $W/graph.err $W/graph.jsonl || status=1
	$GP -o - --cudatrace -- $PY tests/gpu/graph_torch.py 2>/dev/null | sed -n 1,30p
}

multi() {
	nvidia-smi topo -m | head -4
	nvcc -shared -Xcompiler -fPIC -o $W/librank_work.so tests/gpu/rank_work.cu || exit 1
	echo "== gpuprobe --cudatrace --memleak --json -- torch.distributed.run --nproc_per_node 2 ddp_ranks.py"
	RANK_WORK_LIB=$W/librank_work.so $GP -o $W/ddp.jsonl --cudatrace --memleak --json --show-allocs -- \
		$PY -m torch.distributed.run --nproc_per_node 2 tests/gpu/ddp_ranks.py >$W/ddp.err 2>&1
	echo "exit $?"
	grep "gpuprobe:" $W/ddp.err
	python3 tests/gpu/check_ptree.py $W/ddp.err $W/ddp.jsonl || status=1
	echo "== text (the job lines)"
	RANK_WORK_LIB=$W/librank_work.so $GP -o - --cudatrace -- $PY -m torch.distributed.run --nproc_per_node 2 \
		tests/gpu/ddp_ranks.py 2>/dev/null | grep -E "^PID|^job|report" | head -20
}

case "${1:-single}" in
single) single ;;
multi) multi ;;
esac
tar czf "$RESULTS/gpu-issue13-${1:-single}.tgz" -C /tmp/gp-work i13
echo "== overall issue 13 ${1:-single}: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
