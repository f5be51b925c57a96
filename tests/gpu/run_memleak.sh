#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# --memleak on the real GPU (run with the device tool, `make bundle` carried):
# CUDA C with cudart static and shared, -p on a running process, PyTorch with and
# without expandable segments. Outputs land in $OUT (or /tmp/gp-gpu).
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out
mkdir -p "$O" "$W" "$RESULTS"
status=0
echo "== machine"; nvidia-smi -L; uname -r; ls -l /usr/local/nvidia/lib64/libcuda.so.1 2>&1
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
nvcc -g -Xcompiler -fno-omit-frame-pointer -o $W/memleak_static tests/gpu/memleak_cuda.cu || exit 1
nvcc -g -cudart shared -Xcompiler -fno-omit-frame-pointer -o $W/memleak_shared tests/gpu/memleak_cuda.cu || exit 1

for v in static shared; do
	echo "== gpuprobe --memleak --json -- memleak_$v"
	$GP -o $O/ml_$v.jsonl --memleak --json --show-allocs -- $W/memleak_$v >$O/ml_$v.err 2>&1
	echo "exit $?"
	python3 tests/gpu/check_memleak.py cuda $O/ml_$v.err $O/ml_$v.jsonl || status=1
done

echo "== gpuprobe --memleak -p PID (attached to a running memleak_static)"
rm -f $W/fifo; mkfifo $W/fifo
$W/memleak_static --wait <$W/fifo >$W/p.out 2>$O/ml_pid.err &
app=$!
exec 9>$W/fifo
for i in $(seq 100); do grep -q READY $W/p.out && break; sleep 0.1; done
$GP --memleak --json --show-allocs -p $app >$O/ml_pid.jsonl 2>$W/gp_pid.err &
gp=$!
for i in $(seq 100); do grep -q "gpuprobe: tracing" $W/gp_pid.err && break; sleep 0.1; done
cat $W/gp_pid.err
echo go >&9; exec 9>&-
wait $app; wait $gp; echo "gpuprobe exit $?"
python3 tests/gpu/check_memleak.py cuda $O/ml_pid.err $O/ml_pid.jsonl || status=1

echo "== text report (memleak_shared)"
$GP --memleak --top 3 -- $W/memleak_shared 2>&1 | tail -40

for conf in "" "expandable_segments:True"; do
	echo "== gpuprobe --memleak -- $PY memleak_torch.py (PYTORCH_CUDA_ALLOC_CONF=$conf)"
	t0=$(date +%s%N)
	PYTORCH_CUDA_ALLOC_CONF=$conf $GP -o $O/torch$conf.jsonl --memleak --json --show-allocs -- $PY tests/gpu/memleak_torch.py >$O/torch$conf.err 2>&1
	echo "exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
	python3 tests/gpu/check_memleak.py torch "$O/torch$conf.err" "$O/torch$conf.jsonl" || status=1
done
nm -D --defined-only /usr/local/nvidia/lib64/libcuda.so.1 >$O/libcuda-exports.txt 2>&1
tar czf "$RESULTS/gpu-memleak.tgz" -C "$W" out
echo "== overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
