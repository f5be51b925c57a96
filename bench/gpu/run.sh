#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gpuprobe's overhead on a real GPU: a launch-bound CUDA C loop (200 000 empty kernels) and a
# small PyTorch training loop (300 steps of a few ms), each with no tracer, each gpuprobe mode
# this build has, and --memleak --cudatrace together; torch.profiler (CPU + CUDA activities)
# is the peer on the PyTorch loop. Configurations run interleaved, in a shuffled order per
# repetition; the summary gives medians and ratios taken within each repetition.
#
# Run from the repository root on the GPU machine, as root, with `make bundle` carried:
#     bench/gpu/run.sh
# Needs: .output/bundle/gpuprobe (static), nvcc (PATH or /usr/local/cuda/bin), PyTorch with
# CUDA under /opt/torch/.venv/bin/python3 or python3. Writes to $OUT if set, else
# /tmp/gp-bench-gpu: gpu_bench.md (the table), gpu_bench_raw.txt (every run), logs/.
# Knobs: GPU_BENCH_REPS (3, CUDA C), GPU_BENCH_TORCH_REPS (2), GPU_BENCH_LAUNCHES (200000),
# GPU_BENCH_STEPS (300), GPU_BENCH_DEADLINE_S (330: later runs are skipped, and say so),
# GPU_BENCH_PYTHON (the interpreter with PyTorch), GP (the gpuprobe binary).
# GPU_BENCH_MOCK=1 dry-runs the plumbing without a GPU: the stand-in driver (`make bench`
# builds .output/bench) instead of CUDA, sleeps instead of PyTorch, .output/gpuprobe.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
MOCK=${GPU_BENCH_MOCK:-0}
REPS=${GPU_BENCH_REPS:-3}
TORCH_REPS=${GPU_BENCH_TORCH_REPS:-2}
N=${GPU_BENCH_LAUNCHES:-200000}
STEPS=${GPU_BENCH_STEPS:-300}
DEADLINE=${GPU_BENCH_DEADLINE_S:-330}
RESULTS=${OUT:-/tmp/gp-bench-gpu}
W=$(mktemp -d /tmp/gp-bench-gpu-work.XXXXXX) || exit 1
trap 'rm -rf "$W"' EXIT
RAW=$RESULTS/gpu_bench_raw.txt
LOGS=$RESULTS/logs
START=$(date +%s)

die() {
	echo "bench/gpu: error: $*" >&2
	exit 1
}

mkdir -p "$RESULTS" "$LOGS" || die "cannot create $RESULTS"
: >"$RAW" || die "cannot write $RAW"
[ "$(id -u)" = 0 ] || die "needs root (BPF)"

GP_EXTRA=()
if [ "$MOCK" = 1 ]; then
	GP=${GP:-$ROOT/.output/gpuprobe}
	[ -x "$ROOT/.output/bench/bench_workload" ] || die "mock mode needs .output/bench (run make bench first)"
	GP_EXTRA=(--libcuda "$ROOT/.output/bench/fakecuda_bench.so.1")
	export FAKECUDA_KERNEL_NS=0 FAKECUDA_TEARDOWN_MS=0
	CUDA_CMD=("$ROOT/.output/bench/bench_workload" launch -n $((N / 5)) -r 5 -w 2000)
	PY=python3
	TORCH_CMD=("$PY" "$ROOT/bench/gpu/torch_step.py" --mock --steps "$STEPS")
else
	GP=${GP:-$ROOT/.output/bundle/gpuprobe}
	[ -x "$GP" ] || die "no gpuprobe at $GP: run 'make bundle' on the build host and carry .output/bundle"
	command -v nvcc >/dev/null 2>&1 || PATH=$PATH:/usr/local/cuda/bin
	command -v nvcc >/dev/null 2>&1 || die "nvcc not found (PATH, /usr/local/cuda/bin)"
	PY=python3
	[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
	PY=${GPU_BENCH_PYTHON:-$PY}
	"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>"$LOGS/torch_check.err" ||
		die "$PY: no PyTorch with a usable GPU ($(tail -1 "$LOGS/torch_check.err"))"
	echo "== nvcc -O2 bench/gpu/launch_loop.cu"
	nvcc -O2 -o "$W/launch_loop" bench/gpu/launch_loop.cu >"$LOGS/nvcc.log" 2>&1 ||
		die "nvcc failed: $(tail -5 "$LOGS/nvcc.log")"
	"$W/launch_loop" 1000 1 >"$LOGS/preflight.log" 2>&1 ||
		die "launch_loop does not run here: $(tail -2 "$LOGS/preflight.log")"
	CUDA_CMD=("$W/launch_loop" "$N" 5)
	TORCH_CMD=("$PY" "$ROOT/bench/gpu/torch_step.py" --steps "$STEPS")
fi
help=$("$GP" --help 2>&1) || die "$GP --help failed: $help"

# name|gpuprobe options ("-" = no tracer); only the modes this build has
CONFIGS=("none|-" "memleak|--memleak" "cudatrace|--cudatrace")
grep -q -- "--no-latency" <<<"$help" && CONFIGS+=("count|--cudatrace --no-latency")
grep -q -- "--bandwidth-util" <<<"$help" && CONFIGS+=("bandwidth|--bandwidth-util")
grep -q -- "--trace=FILE" <<<"$help" && CONFIGS+=("trace|--trace $W/trace.jsonl")
CONFIGS+=("both|--memleak --cudatrace")

{
	echo "# machine: $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	if [ "$MOCK" = 1 ]; then echo "# gpu: none (GPU_BENCH_MOCK=1)"; else
		echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
		echo "# torch: $("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null)"
	fi
	echo "# gpuprobe: $GP ($("$GP" --version 2>/dev/null))"
	echo "# columns: suite config rep value dropped"
} >>"$RAW"

failed=0
skipped=0

# run SUITE NAME REP OPTS CMD...: one run, one raw line
run() {
	local suite=$1 name=$2 rep=$3 opts=$4
	shift 4
	local log=$LOGS/$suite-$name-$rep.log val dropped
	if [ $(($(date +%s) - START)) -ge "$DEADLINE" ]; then
		echo "$suite $name $rep skipped -" >>"$RAW"
		skipped=$((skipped + 1))
		return
	fi
	if [ "$opts" = - ]; then
		timeout 180 "$@" >"$log" 2>&1
	else
		# shellcheck disable=SC2086 # opts are words
		timeout 180 "$GP" $opts ${GP_EXTRA[@]+"${GP_EXTRA[@]}"} -- "$@" >"$log" 2>&1
	fi
	local rc=$?
	rm -f "$W/trace.jsonl"
	if [ "$suite" = cuda ]; then
		val=$(sed -n 's/^result launch ns_per_call \([0-9.]*\).*/\1/p' "$log")
	else
		val=$(sed -n 's/^result torch step_ms \([0-9.]*\).*/\1/p' "$log")
	fi
	dropped=$(sed -n 's/^Dropped events: \([0-9]*\).*/\1/p' "$log" | awk '{s+=$1} END {print NR ? s : "-"}')
	if [ $rc -ne 0 ] || [ -z "$val" ]; then
		echo "bench/gpu: $suite $name (rep $rep) failed, exit $rc; last lines of $log:" >&2
		tail -5 "$log" >&2
		echo "$suite $name $rep failed -" >>"$RAW"
		failed=$((failed + 1))
		return
	fi
	echo "$suite $name $rep $val $dropped" >>"$RAW"
	printf '  %-5s %-10s rep %d: %s %s\n' "$suite" "$name" "$rep" "$val" "$([ "$suite" = cuda ] && echo ns/launch || echo ms/step)"
}

echo "== CUDA C: ${N} empty kernels per run, $REPS repetitions"
for rep in $(seq "$REPS"); do
	while IFS= read -r c; do
		run cuda "${c%%|*}" "$rep" "${c#*|}" "${CUDA_CMD[@]}"
	done < <(printf '%s\n' "${CONFIGS[@]}" | shuf)
done

echo "== PyTorch: $STEPS steps per run, $TORCH_REPS repetitions (torch.profiler is the peer)"
for rep in $(seq "$TORCH_REPS"); do
	while IFS= read -r c; do
		if [ "$c" = "profiler|-" ]; then
			run torch profiler "$rep" - "${TORCH_CMD[@]}" --profile
		else
			run torch "${c%%|*}" "$rep" "${c#*|}" "${TORCH_CMD[@]}"
		fi
	done < <(printf '%s\n' "${CONFIGS[@]}" "profiler|-" | shuf)
done

python3 bench/gpu/summarize.py "$RAW" >"$RESULTS/gpu_bench.md" || die "summarize.py failed"
cat "$RESULTS/gpu_bench.md"
echo "== $(($(date +%s) - START)) s; $failed failed, $skipped skipped (deadline ${DEADLINE}s); results in $RESULTS"
[ $failed -eq 0 ]
