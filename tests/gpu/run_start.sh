#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 29 items 5 and 6 on the GPU (device tool, `make bundle` carried): graph memory
# nodes (graphmem_cuda.cu), a libcuda found only through the program's RPATH (a copy of
# the driver), the real driver dlopened by path and called at once (with and without the
# hold), and the GPU of copies after a -p attach to PyTorch. Outputs in $OUT.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-start
O=$W/out
rm -rf "$W"; mkdir -p "$O" "$W/drv" "$RESULTS"
status=0
echo "== machine"; nvidia-smi -L; uname -r
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
LIBCUDA=$(ldconfig -p | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
[ -n "$LIBCUDA" ] || LIBCUDA=/usr/local/nvidia/lib64/libcuda.so.1
cp -L "$LIBCUDA" "$W/drv/libcuda.so.1" || exit 1
echo "driver $LIBCUDA copied to $W/drv"

echo "== graph memory nodes: gpuprobe --memleak -- graphmem 3"
nvcc -g -Xcompiler -fno-omit-frame-pointer -o $W/graphmem tests/gpu/graphmem_cuda.cu || exit 1
$GP -o $O/gm.jsonl --memleak --json --show-allocs -- $W/graphmem 3 >$O/gm.err 2>&1; echo "exit $?"
python3 tests/gpu/check_start.py graphmem $O/gm.err $O/gm.jsonl || status=1

echo "== libcuda only through the program's RPATH (a copy of the driver)"
nvcc -g -Xcompiler -fno-omit-frame-pointer -o $W/leak_rpath tests/gpu/memleak_cuda.cu -lcuda \
	-Xlinker -rpath=$W/drv || exit 1
readelf -d $W/leak_rpath | grep -E "RPATH|RUNPATH|libcuda"
$GP -o $O/rp.jsonl -v --memleak --json --show-allocs -- $W/leak_rpath >$O/rp.err 2>&1; echo "exit $?"
grep -E "own library folders|probing libcuda|not seen|no CUDA call" $O/rp.err
python3 tests/gpu/check_memleak.py cuda $O/rp.err $O/rp.jsonl || status=1

for how in hold nohold; do
	echo "== the driver dlopened by path and called at once ($how)"
	env $([ $how = nohold ] && echo GPUPROBE_NO_HOLD=1) $GP -o $O/late_$how.jsonl -v --memleak --json -- \
		$PY tests/gpu/late_libcuda.py $W/drv/libcuda.so.1 5 >$O/late_$how.err 2>&1
	echo "exit $?"
	grep -E "held|not seen|no CUDA call|probing libcuda" $O/late_$how.err
	python3 tests/gpu/check_start.py late $O/late_$how.err $O/late_$how.jsonl $how || status=1
done

echo "== the GPU of copies after a -p attach (PyTorch)"
$PY tests/gpu/ctxgpu_torch.py 8 200 >$W/ct.out 2>$O/ct.err &
app=$!
for i in $(seq 300); do grep -q READY $W/ct.out && break; sleep 0.1; done
$GP --bandwidth-util --json -p $app >$O/ct.jsonl 2>$W/gp_ct.err &
gp=$!
wait $app; wait $gp; echo "gpuprobe exit $?"
python3 tests/gpu/check_start.py ctxgpu $O/ct.jsonl $app || status=1

tar czf "$RESULTS/gpu-start.tgz" -C "$W" out
echo "== overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
