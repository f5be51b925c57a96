#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# --gpu-time on the real GPU (issue 34, item 2): carry .output/bundle (make bundle: the static
# gpuprobe and libgpuprobe_cupti.so, libgpuprobe_ncclprof.so beside it).
#   1. one GPU: a PyTorch loop (gputime_torch.py) under --gpu-time, its kernels against
#      torch.profiler's (another run of the loop), its copies against its CUDA events, the
#      in-process cost against a run without gpuprobe;
#   2. with 2 or more GPUs: a torch.distributed job (nccl_torch.py, one rank a GPU) under
#      --gpu-time: NCCL's profiler plugin, exact bus bandwidth against the job's events.
# CUPTI: --cupti from GPUPROBE_CUPTI, else the torch wheel's nvidia/cu13 or cuda_cupti, else
# /usr/local/cuda/extras/CUPTI/lib64.
set -u
cd "$(dirname "$0")/../.."
B=$PWD/.output/bundle
GP=$B/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-gputime
mkdir -p "$O" "$RESULTS"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
status=0
for f in "$GP" "$B/libgpuprobe_cupti.so" "$B/libgpuprobe_ncclprof.so"; do
	[ -e "$f" ] || { echo "missing $f: run 'make bundle' and carry .output/bundle"; exit 1; }
done
CUPTI=${GPUPROBE_CUPTI:-}
if [ -z "$CUPTI" ]; then
	site=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* "$site"/nvidia/cuda_cupti/lib/libcupti.so* \
		/usr/local/cuda/extras/CUPTI/lib64/libcupti.so* 2>/dev/null | head -1)
fi
echo "== CUPTI: ${CUPTI:-none found}"; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
ngpu=$(nvidia-smi -L | wc -l)

echo "== 1. gputime_torch.py: torch.profiler's run, a plain run, the --gpu-time run"
$PY tests/gpu/gputime_torch.py --profile $O/prof.json 2>$O/prof.err || status=1
$PY tests/gpu/gputime_torch.py 2>$O/plain.err || status=1
$GP -o $O/gt_torch.jsonl --gpu-time --json ${CUPTI:+--cupti "$CUPTI"} -- $PY tests/gpu/gputime_torch.py >$O/gt_torch.err 2>&1
echo "exit $?"
grep -i 'gpuprobe' $O/gt_torch.err | head -5
python3 tests/gpu/check_gputime.py torch $O/prof.json $O/plain.err $O/gt_torch.err $O/gt_torch.jsonl || status=1
$GP --gpu-time ${CUPTI:+--cupti "$CUPTI"} -- $PY tests/gpu/gputime_torch.py 2>&1 | tail -30

if [ "$ngpu" -ge 2 ]; then
	n=$ngpu; [ "$n" -gt 4 ] && n=4
	echo "== 2. nccl_torch.py on $n GPUs under --gpu-time"
	$GP -o $O/gt_nccl.jsonl --gpu-time --json ${CUPTI:+--cupti "$CUPTI"} -- \
		$PY -m torch.distributed.run --nproc_per_node $n tests/gpu/nccl_torch.py >$O/gt_nccl.err 2>&1
	echo "exit $?"
	python3 tests/gpu/check_gputime.py nccl $O/gt_nccl.err $O/gt_nccl.jsonl || status=1
fi
tar czf "$RESULTS/gpu-gputime.tgz" -C "$W" out-gputime
echo "== overall gputime: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
