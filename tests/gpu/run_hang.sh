#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 34 item 3 on the GPU machine: hangs and stragglers per communicator and rank, checked
# against the programs' own accounts (check_hang.py). Builds nothing there: `make gpu-hang`
# here puts the static gpuprobe and hang_cuda under .output/bundle (carry .output/bundle).
#   1. (1 GPU) hang_cuda: a single-rank communicator's AllReduce held behind a kernel that
#      spins on a host-mapped flag: the daemon's in-flight gauge stays at 1 and its seconds
#      since a completion grow across two scrapes; once the flag is set, nothing in flight;
#   2. (4 GPUs; skipped, and said, with fewer) a 4-rank torch job whose rank 2 sleeps 0.2 s
#      before each all_reduce, under --nccl --json: named as the straggler, its lag the
#      program's own;
#   3. (4 GPUs) a 4-rank torch job whose rank 1 does not enter its 4th all_reduce for 20 s,
#      under the daemon: named as the rank waited for, the others' calls in flight with their
#      seconds growing across two scrapes; after it enters, nothing in flight.
# Prints every figure; exits non-zero when a check fails. Results also in $OUT/gpu-hang.tgz.
set -u
cd "$(dirname "$0")/../.."
B=$PWD/.output/bundle
GP=$B/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-hang
PORT=${PORT:-9478}
mkdir -p "$O" "$RESULTS"
# NVLink multicast stays off on these machines (docs: GPU-MACHINE.md), in every job
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
status=0
for f in "$GP" "$B/gpu/hang_cuda"; do
	[ -x "$f" ] || { echo "missing $f: run 'make gpu-hang' on the development machine and carry .output/bundle"; exit 1; }
done
NGPU=$(nvidia-smi -L | grep -c '^GPU')
echo "== the machine: $NGPU GPUs"
nvidia-smi --query-gpu=index,name --format=csv,noheader

scrape() { curl -s "http://127.0.0.1:$PORT/metrics" >"$1"; }
wait_line() { # FILE TEXT SECONDS
	for i in $(seq $((${3} * 10))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}

echo "== the daemon: gpuprobe daemon --nccl --per-process-series --listen 127.0.0.1:$PORT"
$GP daemon --nccl --per-process-series --listen 127.0.0.1:$PORT --rescan-interval 1 2>$O/daemon.err &
DPID=$!
wait_line $O/daemon.err "listening on" 20 || { cat $O/daemon.err; exit 1; }

echo "== 1. hang_cuda (1 GPU): a collective held 8 s behind a spinning kernel"
$B/gpu/hang_cuda 8 4 5 2>$O/held.err &
HP=$!
wait_line $O/held.err HELD 60 || { cat $O/held.err; status=1; }
sleep 2; scrape $O/held-1.txt
sleep 3; scrape $O/held-2.txt
wait_line $O/held.err RELEASED 30
sleep 1.5; scrape $O/held-3.txt
wait $HP; echo "exit $?"
grep -h 'gpuprobe_nccl_\(inflight\|since_completion\)' $O/held-[12].txt | grep "pid=\"$HP\""
python3 tests/gpu/check_hang.py held $O/held.err $O/held-1.txt $O/held-2.txt $O/held-3.txt 3 || status=1

if [ "$NGPU" -ge 4 ]; then
	JOB="$PY -m torch.distributed.run --nproc_per_node 4 tests/gpu/hang_torch.py"
	echo "== 2. torch, 4 ranks, rank 2 0.2 s late to each all_reduce, under --nccl --json"
	$GP -o $O/straggler.jsonl --nccl --json -- $JOB straggler 2 0.2 10 >$O/straggler.err 2>&1
	echo "exit $?"
	python3 tests/gpu/check_hang.py straggler $O/straggler.err $O/straggler.jsonl || status=1
	echo "-- text report"
	$GP --nccl -- $JOB straggler 2 0.2 5 2>&1 | grep -E '^(Stragglers|  rank|  WAITING|    .*entered)' | head -20

	echo "== 3. torch, 4 ranks, rank 1 stalls 20 s before its 4th all_reduce, under the daemon"
	$JOB hang 1 3 20 6 >$O/hang.out 2>$O/hang.err &
	JP=$!
	for i in $(seq 120); do scrape $O/hang-1.txt; grep -q '^gpuprobe_nccl_waiting_for_rank_seconds{.*rank="1"' $O/hang-1.txt && break; sleep 0.5; done
	sleep 2; scrape $O/hang-1.txt
	sleep 3; scrape $O/hang-2.txt
	grep -h 'gpuprobe_nccl_\(waiting\|inflight\|since_completion\)' $O/hang-1.txt $O/hang-2.txt | head -20
	wait_line $O/hang.err ENTERED 60
	sleep 1.5; scrape $O/hang-3.txt   # the job lingers 3 s after its last collective
	wait $JP; echo "exit $?"
	python3 tests/gpu/check_hang.py hang $O/hang.err $O/hang-1.txt $O/hang-2.txt $O/hang-3.txt 3 || status=1
else
	echo "== 2, 3: skipped: $NGPU GPU(s), the torch jobs need 4"
fi

kill $DPID; wait $DPID 2>/dev/null
tar czf "$RESULTS/gpu-hang.tgz" -C "$W" out-hang
echo "== overall hang: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
