#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 29 item 1 on the real GPU (device tool, `make bundle` carried): a PyTorch training
# loop at steady state (every kernel made before the attach) attached with -p three times,
# after ONE learning run of another, short PyTorch program with a fresh state folder; then
# the same three attaches with an empty state folder (the unnamed counted, with why).
# Compared with torch.profiler's kernel records of the same loop in another process.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work/steady
rm -rf "$W"; mkdir -p "$W" "$RESULTS"
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
S=$W/state; E=$W/empty
status=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

echo "== torch.profiler: the loop's kernels"
STEPS=20 $PY tests/gpu/profile_midrun.py >$W/profiler.json 2>$W/profiler.err || { cat $W/profiler.err; status=1; }

echo "== learning run: gpuprobe --cudatrace --state-dir S -- launch_torch.py (another program)"
$GP -o $W/learn.jsonl --cudatrace --json --state-dir $S -- $PY tests/gpu/launch_torch.py >$W/learn.err 2>&1
echo "exit $?"; grep "gpuprobe:" $W/learn.err; ls -la $S; cat $S/layouts

WARM=${WARM:-30} $PY tests/gpu/midrun_torch.py >$W/midrun.out 2>$W/midrun.err &
app=$!
for i in $(seq 900); do grep -q READY $W/midrun.out && break; sleep 0.1; done
cat $W/midrun.out
for dir in $S $E; do
	tag=$(basename $dir)
	for n in 1 2 3; do
		echo "== attach $n ($tag): gpuprobe --cudatrace --json --state-dir $tag -p $app --duration ${DUR:-10}"
		$GP --cudatrace --json --state-dir $dir -p $app --duration ${DUR:-10} >$W/attach-$tag-$n.jsonl 2>$W/attach-$tag-$n.err
		echo "exit $?"; grep "gpuprobe:" $W/attach-$tag-$n.err
	done
	[ $tag = state ] && $GP --cudatrace --state-dir $dir -p $app --duration 3 2>/dev/null | sed -n 1,12p
done
kill $app; wait $app 2>/dev/null
cd tests/gpu
python3 check_steady_names.py $app $W/profiler.json $W/attach-state-{1,2,3}.jsonl || status=1
echo "== without a learned layout (expected: unnamed, counted as 'no layout')"
python3 check_steady_names.py $app $W/profiler.json $W/attach-empty-{1,2,3}.jsonl
cd ../..
tar czf "$RESULTS/gpu-steady-names.tgz" -C /tmp/gp-work steady
echo "== overall steady names: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
