#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 29 items 1-2 on the GPU machine: names read from a traced process's memory survive
# its exit (copied by BPF at their first sight). RUNS times each (default 5):
#  - a Python leak that exits at once, as a command: tests/stacks/pyalloc.py exit through
#    ctypes on the real libcuda, and tests/gpu/exit_torch.py leak through PyTorch's caching
#    allocator: the leak's CPython frames on their tagged lines (check_exit_names.py leak);
#  - a PyTorch loop at steady state that runs STEPS steps after the attach and exits at
#    once (os._exit: no teardown), attached with -p and node-wide: >= 99 % of its launches
#    named, none unnamed_unread, every name one torch.profiler recorded.
# Run from the repository root as root with `make bundle` carried. Outputs in $OUT (or
# /tmp/gp-gpu). Prints PASS/FAIL lines and "== overall". GP_ARGS: more options for the
# launch runs' gpuprobe (e.g. -v: their logs end in the tarball).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
GP=${GP:-$ROOT/.output/bundle/gpuprobe}	# GP=/path/to/an/older/gpuprobe for the "before"
[ -x "$GP" ] || GP=$ROOT/.output/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
RUNS=${RUNS:-5}
W=/tmp/gp-work/exitnames
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
LIBCUDA=$(ldconfig -p | awk '/libcuda.so.1 .*x86-64/ {print $NF; exit}')
rm -rf "$W"; mkdir -p "$W" "$RESULTS"
status=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uname -r; echo "libcuda $LIBCUDA"

for r in $(seq "$RUNS"); do
	echo "== pyalloc.py exit (ctypes, real libcuda), run $r"
	"$GP" -o - --memleak --json -- $PY tests/stacks/pyalloc.py "$LIBCUDA" exit >$W/pyalloc.$r.json 2>$W/pyalloc.$r.err
	echo "gpuprobe exit $?"
	python3 tests/gpu/check_exit_names.py leak $W/pyalloc.$r.json tests/stacks/pyalloc.py \
		leak_buffer=leak_buffer make_layer=make_layer Model.build=build main=main_exit "<module>=module" || status=1
	echo "== exit_torch.py leak (PyTorch), run $r"
	"$GP" -o - --memleak --json -- $PY tests/gpu/exit_torch.py leak >$W/torchleak.$r.json 2>$W/torchleak.$r.err
	echo "gpuprobe exit $?"
	python3 tests/gpu/check_exit_names.py leak $W/torchleak.$r.json tests/gpu/exit_torch.py \
		make_buffer=make_buffer train_step=train_step leak=module "<module>=main" || status=1
done

echo "== torch.profiler: the loop's kernels"
STEPS=20 $PY tests/gpu/profile_midrun.py >$W/profiler.json 2>$W/profiler.err || { cat $W/profiler.err; status=1; }
for how in p node; do
	for r in $(seq "$RUNS"); do
		echo "== exit_torch.py launch, attached $how, run $r"
		$PY tests/gpu/exit_torch.py launch >$W/launch-$how.$r.out 2>$W/launch-$how.$r.app &
		app=$!
		for i in $(seq 900); do grep -q READY $W/launch-$how.$r.out && break; sleep 0.1; done
		if [ $how = p ]; then
			"$GP" --cudatrace --json ${GP_ARGS:-} -p $app >$W/launch-$how.$r.json 2>$W/launch-$how.$r.err &
		else
			"$GP" --cudatrace --json ${GP_ARGS:-} --duration 15 >$W/launch-$how.$r.json 2>$W/launch-$how.$r.err &
		fi
		g=$!
		for i in $(seq 300); do grep -q "gpuprobe: tracing" $W/launch-$how.$r.err && break; sleep 0.1; done
		sleep 1
		kill -USR1 $app; wait $app; echo "app exit $?"
		wait $g; echo "gpuprobe exit $?"
		python3 tests/gpu/check_exit_names.py launch $W/launch-$how.$r.json $app $W/profiler.json || status=1
	done
done
tar czf "$RESULTS/gpu-exit-names.tgz" -C /tmp/gp-work exitnames
echo "== overall exit names: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
