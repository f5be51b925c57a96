#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# --cudatrace on the real GPU (run with the device tool, `make bundle` carried): a CUDA C
# program with known launches (cudart static and shared, and -p after its handles were
# made), a PyTorch loop (share of launches named), and all modes together on PyTorch.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-cudatrace
mkdir -p "$O" "$W" "$RESULTS"
status=0
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
nvcc -g -Xcompiler -fno-omit-frame-pointer -o $W/launch_static tests/gpu/launch_cuda.cu || exit 1
nvcc -g -cudart shared -Xcompiler -fno-omit-frame-pointer -o $W/launch_shared tests/gpu/launch_cuda.cu || exit 1

for v in static shared; do
	echo "== gpuprobe --cudatrace --json -- launch_$v"
	$GP -o $O/ct_$v.jsonl --cudatrace --json -- $W/launch_$v >$O/ct_$v.err 2>&1
	echo "exit $?"
	python3 tests/gpu/check_cudatrace.py cuda $O/ct_$v.err $O/ct_$v.jsonl || status=1
done

echo "== gpuprobe --cudatrace -p PID (handles made before attach)"
rm -f $W/fifo; mkfifo $W/fifo
$W/launch_static --wait <$W/fifo >$W/p.out 2>$O/ct_pid.err &
app=$!
exec 9>$W/fifo
for i in $(seq 100); do grep -q READY $W/p.out && break; sleep 0.1; done
$GP --cudatrace --json -p $app >$O/ct_pid.jsonl 2>$W/gp_pid.err &
gp=$!
for i in $(seq 100); do grep -q "gpuprobe: tracing" $W/gp_pid.err && break; sleep 0.1; done
cat $W/gp_pid.err
echo go >&9; exec 9>&-
wait $app; wait $gp; echo "gpuprobe exit $?"
python3 tests/gpu/check_cudatrace.py cuda $O/ct_pid.err $O/ct_pid.jsonl || status=1

echo "== text report (launch_shared)"
$GP --cudatrace -- $W/launch_shared 2>&1 | tail -45

echo "== gpuprobe --cudatrace -- $PY launch_torch.py"
$GP -o $O/ct_torch.jsonl --cudatrace --json -- $PY tests/gpu/launch_torch.py >$O/ct_torch.err 2>&1
echo "exit $?"
python3 tests/gpu/check_cudatrace.py torch $O/ct_torch.err $O/ct_torch.jsonl || status=1

echo "== gpuprobe --memleak --cudatrace -- $PY launch_torch.py (modes together)"
$GP -o $O/both_torch.jsonl --memleak --cudatrace --json -- $PY tests/gpu/launch_torch.py >$O/both_torch.err 2>&1
echo "exit $?"
python3 tests/gpu/check_cudatrace.py torch $O/both_torch.err $O/both_torch.jsonl || status=1
grep -c '"mode":"memleak","report":"final"' $O/both_torch.jsonl

tar czf "$RESULTS/gpu-cudatrace.tgz" -C "$W" out-cudatrace
echo "== overall cudatrace: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
