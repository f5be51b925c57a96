#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 29 item 1, self-learned layouts, on the real GPU (`make bundle` carried): a PyTorch
# training loop at steady state attached with -p three times with an EMPTY state folder and
# no learning run: the first attach teaches itself the driver's layouts (a child that loads
# libcuda, one log line "learned kernel-handle layouts ... from a kernel of its own (N ms)")
# and must name >= 99 % of the launches, as the later ones (compared with torch.profiler's
# kernel records of the same loop in another process). Then --no-self-learn with another
# empty folder: unnamed, counted as "no layout". The dynamically linked gpuprobe first; then
# the static one (make bundle's) with another empty folder: static glibc cannot host the
# driver, so it learns through its own dynamically linked learning program (run from a
# memory file) and must name >= 99 % too (before session 30 it said "statically linked" and
# named none).
set -u
cd "$(dirname "$0")/../.."
GP=${GP:-$PWD/.output/bundle/dyn/run}
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work/selflearn
rm -rf "$W"; mkdir -p "$W" "$RESULTS"
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
S=$W/state; N=$W/nolearn; T=$W/static
status=0
nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv,noheader

echo "== torch.profiler: the loop's kernels"
STEPS=20 $PY tests/gpu/profile_midrun.py >$W/profiler.json 2>$W/profiler.err || { cat $W/profiler.err; status=1; }

WARM=${WARM:-30} $PY tests/gpu/midrun_torch.py >$W/midrun.out 2>$W/midrun.err &
app=$!
for i in $(seq 900); do grep -q READY $W/midrun.out && break; sleep 0.1; done
cat $W/midrun.out
for n in 1 2 3; do
	echo "== attach $n: gpuprobe --cudatrace --json --state-dir (empty at 1) -p $app --duration ${DUR:-10}"
	$GP --cudatrace --json --state-dir $S -p $app --duration ${DUR:-10} >$W/attach-state-$n.jsonl 2>$W/attach-state-$n.err
	echo "exit $?"; grep "gpuprobe:" $W/attach-state-$n.err
	[ $n = 1 ] && { ls -la $S; cat $S/layouts; }
done
echo "== --no-self-learn, empty state"
$GP --cudatrace --json --state-dir $N --no-self-learn -p $app --duration ${DUR:-10} >$W/attach-nolearn-1.jsonl 2>$W/attach-nolearn-1.err
echo "exit $?"; grep "gpuprobe:" $W/attach-nolearn-1.err
echo "== the static build, empty state (expected: learned through its learning program, named)"
$PWD/.output/bundle/gpuprobe --cudatrace --json --state-dir $T -p $app --duration ${DUR:-10} >$W/attach-static.jsonl 2>$W/attach-static.err
echo "exit $?"; grep "gpuprobe:" $W/attach-static.err
kill $app; wait $app 2>/dev/null
cd tests/gpu
python3 check_steady_names.py $app $W/profiler.json $W/attach-state-{1,2,3}.jsonl || status=1
echo "== the static build"
python3 check_steady_names.py $app $W/profiler.json $W/attach-static.jsonl || status=1
echo "== --no-self-learn (expected: unnamed, counted as 'no layout')"
python3 check_steady_names.py $app $W/profiler.json $W/attach-nolearn-1.jsonl
cd ../..
tar czf "$RESULTS/gpu-selflearn.tgz" -C /tmp/gp-work selflearn
echo "== overall self-learned steady names: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
