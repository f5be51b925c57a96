#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 20 on a multi-GPU node of ANY size (written for 8, run on the 2-GPU machine
# nvidia-h200-x2 until a larger kind is lent): every count follows the GPU count
# (nvidia-smi -L; the programs ask cudaGetDeviceCount / torch.cuda.device_count()).
# Builds nothing there: `make gpu-node` here puts the static gpuprobe and peer_matrix under
# .output/bundle (carry .output/bundle with the tree).
#   1. peer_matrix under --bandwidth-util: the GPU x GPU matrix of copies and bytes exact,
#      bounds between the program's host window and its CUDA events, under the link;
#   2. nccl_node.py over all GPUs (torchrun) under --nccl: per rank and communicator
#      (world, tensor-parallel pairs, send/recv pairs) calls and bytes exact, p2p matrices,
#      busbw bounds >= the script's host-window figures and <= the link;
#   3. gpuprobe daemon --nccl --cudatrace scraped every second during nccl_node.py, without
#      and with --per-process-series: series count, the daemon's CPU and RSS, and its
#      gpuprobe_nccl_* counters exact per rank and communicator.
# Under 4 minutes on 2 GPUs. Logs on stdout; results in $OUT/gpu-node.tgz. Exits non-zero
# when a check fails.
set -u
cd "$(dirname "$0")/../.."
B=$PWD/.output/bundle
GP=$B/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-node
PORT=${GPUPROBE_PORT:-19474}
mkdir -p "$O" "$RESULTS"
# NVLink multicast stays off on these machines (docs: GPU-MACHINE.md), in every job
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
status=0
for f in "$GP" "$B/gpu/peer_matrix"; do
	[ -x "$f" ] || { echo "missing $f: run 'make gpu-node' on the development machine and carry .output/bundle"; exit 1; }
done
T0=$(date +%s)
lap() { echo "   ($(($(date +%s) - T0)) s so far)"; }

echo "== the machine"
N=$(nvidia-smi -L | wc -l)
echo "$N GPUs"
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader
nvidia-smi topo -m
[ "$N" -ge 2 ] || { echo "FAIL: $N GPUs, 2 needed"; exit 1; }

echo "== 1. peer_matrix ($N GPUs, $((N * (N - 1))) ordered pairs) under --bandwidth-util"
$GP -o $O/peer.jsonl --bandwidth-util --json -- $B/gpu/peer_matrix >$O/peer.err 2>&1
echo "exit $?"
grep -v '^{' $O/peer.err | head -5
python3 tests/gpu/check_node.py peer $O/peer.err $O/peer.jsonl || status=1
echo "-- text report"
$GP --bandwidth-util -- $B/gpu/peer_matrix 2>&1 | grep -v '^{' | head -60
lap

JOB="$PY -m torch.distributed.run --nproc_per_node $N tests/gpu/nccl_node.py"
echo "== 2. nccl_node.py, $N ranks, under --nccl (no --libnccl: the wheel's found when torch loads it)"
$GP -o $O/nccl.jsonl --nccl --json -- $JOB >$O/nccl.err 2>&1
echo "exit $?"
grep '^gpuprobe' $O/nccl.err
python3 tests/gpu/check_node.py nccl $O/nccl.err $O/nccl.jsonl $O/peer.jsonl || status=1
lap

scrape() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$PORT$1', timeout=10).read().decode())"; }
# The daemon starts first, the job runs while /metrics is scraped every second, three
# more scrapes after it exits (its counts stay in the series; docs/metrics.md).
daemon_run() {
	local tag=$1; shift
	local S=$O/scrapes-$tag
	mkdir -p $S
	echo "== 3. gpuprobe daemon --nccl --cudatrace $* --listen 127.0.0.1:$PORT, nccl_node.py scraped every second"
	$GP daemon --nccl --cudatrace "$@" --listen 127.0.0.1:$PORT --retention 600 --rescan-interval 1 2>$O/daemon-$tag.err &
	local gp=$! i=0
	for i in $(seq 100); do grep -q "listening on" $O/daemon-$tag.err && break; sleep 0.1; done
	cat $O/daemon-$tag.err
	[ "$(scrape /healthz)" = ok ] || { echo "FAIL: /healthz"; status=1; }
	$JOB >/dev/null 2>$O/job-$tag.err &
	local job=$! n=0 t
	while kill -0 $job 2>/dev/null; do
		n=$((n + 1))
		t=$(date +%s%N)
		scrape /metrics >$S/$(printf %04d $n).prom || echo "scrape $n failed"
		echo "$n $((($(date +%s%N) - t) / 1000000))" >>$S/scrape-ms.txt
		sleep 1
	done
	wait $job
	echo "job exit $?"
	for i in 1 2 3; do sleep 1; n=$((n + 1)); scrape /metrics >$S/$(printf %04d $n).prom; done
	awk '{ s += $2; if ($2 > m) m = $2 } END { printf "  %d scrapes during the job: %.0f ms mean, %d ms max (a python3 client started each time)\n", NR, s / NR, m }' $S/scrape-ms.txt
	python3 tests/gpu/check_node.py daemon $O/job-$tag.err $S || status=1
	grep -E '^gpuprobe_(events_dropped_total|probes_attached|libnccl|tracked_processes|series|scrape)' $S/$(printf %04d $n).prom | head -20
	kill -TERM $gp
	wait $gp
	local rc=$?
	echo "daemon exit $rc after SIGTERM"; [ $rc = 0 ] || status=1
	tail -3 $O/daemon-$tag.err
	lap
}
LIBNCCL=$($PY -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2>/dev/null)
NCCLOPT=(); [ -n "$LIBNCCL" ] && [ -e "$LIBNCCL" ] && NCCLOPT=(--libnccl "$LIBNCCL")
daemon_run shared "${NCCLOPT[@]}"
daemon_run perpid "${NCCLOPT[@]}" --per-process-series

tar czf "$RESULTS/gpu-node.tgz" -C "$W" out-node
echo "== overall node ($N GPUs, $(($(date +%s) - T0)) s): $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
