#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 15 (leak stacks that name the user's code) and issue 17's leak parts, on the GPU
# machine with the real driver: gpuprobe --memleak (--stacks auto: dwarf there) against
#   1. tests/gpu/stacks_leak.cu, built -O2 -Xcompiler -fomit-frame-pointer, cudart static
#      and shared: its three leaks are one stack naming stacks_leaf <- stacks_middle <- main
#      on their lines; as a command and with -p attached mid-run;
#   2. tests/gpu/stacks_torch.py under the PyTorch venv's python (Ubuntu's stripped 3.12):
#      the stack of each segment the caching allocator made for a kept tensor names the
#      script's "# @grow", "# @layer" and "# @main" lines among PyTorch's native frames;
#      as a command, with -p mid-run, and with expandable segments (cuMemCreate);
#   3. --folded of the CUDA C and PyTorch runs, summed against outstanding_bytes, drawn
#      with gpuprobe flame and checked (tests/tools/check_flame.py).
# Run from the repository root as root, with `make bundle gpu-stacks` carried
# (.output/bundle/gpuprobe, .output/gpu/stacks_leak_{static,shared} built here with the
# CUDA 13 toolkit): `bash tests/gpu/run_gpu_stacks.sh`. Nothing is built there unless the
# CUDA C binaries were not carried: then they are built with the machine's nvcc (said so).
# Outputs in $OUT (or /tmp/gp-gpu): the logs, the reports, the folded files and SVGs. The
# docs picture is then made back on the development machine (headless Chromium):
#   tests/tools/svg2png.sh torch-leak.svg docs/leak-flame.png
# Prints PASS/FAIL per check and "== overall: PASS|FAIL"; exits 1 on a failure.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
GP=$ROOT/.output/bundle/gpuprobe
PY=${PY:-/opt/torch/.venv/bin/python}
[ -x "$PY" ] || PY=python3
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-stacks
O=$W/out
rm -rf "$W"; mkdir -p "$O" "$RESULTS"
status=0
fail() { echo "FAIL $*"; status=1; }

echo "== machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uname -r
echo "python: $($PY -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, sys.executable)' 2>&1)"
[ -x "$GP" ] || { echo "FAIL no $GP: carry .output/bundle (make bundle)"; exit 1; }
for v in static shared; do
	bin=$ROOT/.output/gpu/stacks_leak_$v
	if [ ! -x "$bin" ]; then
		echo "== building stacks_leak_$v with this machine's nvcc (not carried)"
		mkdir -p "$ROOT/.output/gpu"
		flags="-O2 -g -Xcompiler -fomit-frame-pointer"
		[ $v = shared ] && flags="$flags -cudart shared"
		nvcc $flags -o "$bin" tests/gpu/stacks_leak.cu || exit 1
	fi
done

# cmd... with stdin from a FIFO: a line once it printed READY, closed 1 s after DONE
drive() {
	local out=$1 err=$2 pid i
	shift 2
	rm -f $W/in; mkfifo $W/in
	"$@" <$W/in >"$out" 2>"$err" &
	pid=$!
	exec 8>$W/in
	for i in $(seq 1200); do grep -q '^READY' "$out" && break; sleep 0.1; done
	echo go >&8
	for i in $(seq 1200); do grep -q '^DONE' "$out" && break; sleep 0.1; done
	sleep 1
	exec 8>&-
	wait $pid
	echo "exit $?"
}

# the workload started alone, gpuprobe -p attached after its READY
drive_pid() {
	local out=$1 err=$2 app gp i
	shift 2
	rm -f $W/in; mkfifo $W/in
	"$@" <$W/in >$W/app.out 2>"$err" &
	app=$!
	exec 8>$W/in
	for i in $(seq 1200); do grep -q '^READY' $W/app.out && break; sleep 0.1; done
	"$GP" -o - --memleak --json --show-allocs -p $app >"$out" 2>$W/gp.err 8>&- &
	gp=$!
	for i in $(seq 200); do grep -q "gpuprobe: tracing" $W/gp.err && break; sleep 0.1; done
	cat $W/gp.err
	echo go >&8
	for i in $(seq 1200); do grep -q '^DONE' $W/app.out && break; sleep 0.1; done
	sleep 1
	exec 8>&-
	wait $app; wait $gp
	echo "gpuprobe exit $?"
}

# the folded file's bytes against the final report's outstanding_bytes; then the SVG
folded_and_flame() {
	local name=$1 jsonl=$2 title=$3
	python3 - $O/$name.folded "$jsonl" <<'PY' || fail "$name: folded sum"
import json, sys
folded = sum(int(l.rsplit(" ", 1)[1]) for l in open(sys.argv[1]) if l.strip())
final = [json.loads(l) for l in open(sys.argv[2]) if l.startswith('{"mode":"memleak"') and '"final"' in l]
want = sum(p["outstanding_bytes"] for p in final[-1]["processes"])
lines = sum(1 for l in open(sys.argv[1]) if l.strip())
print(f"  folded: {lines} stacks, {folded} bytes; final report outstanding_bytes {want}")
print(("PASS" if folded == want else "FAIL") + " folded bytes = outstanding_bytes")
sys.exit(folded != want)
PY
	"$GP" flame --title "$title" $O/$name.folded >$O/$name-leak.svg || fail "$name: gpuprobe flame"
	python3 tests/tools/check_flame.py $O/$name-leak.svg --folded $O/$name.folded || fail "$name: flame SVG"
	cp $O/$name.folded $O/$name-leak.svg "$RESULTS/"
}

for v in static shared; do
	echo "== gpuprobe --memleak --json --show-allocs -- stacks_leak_$v (cudart $v, no frame pointers)"
	drive $O/cuda_$v.jsonl $O/cuda_$v.err "$GP" -o - --memleak --json --show-allocs --folded $O/cuda_$v.folded \
		-- "$ROOT/.output/gpu/stacks_leak_$v"
	tail -2 $O/cuda_$v.err
	python3 tests/gpu/check_stacks.py cuda $O/cuda_$v.err $O/cuda_$v.jsonl || status=1
done
folded_and_flame cuda_static $O/cuda_static.jsonl "Outstanding GPU memory by allocating stack (CUDA C, -O2 without frame pointers)"

echo "== gpuprobe --memleak -p PID (stacks_leak_static attached after start-up)"
drive_pid $O/cuda_pid.jsonl $O/cuda_pid.err "$ROOT/.output/gpu/stacks_leak_static"
python3 tests/gpu/check_stacks.py cuda $O/cuda_pid.err $O/cuda_pid.jsonl || status=1

echo "== text report (stacks_leak_shared)"
drive $O/cuda_text.out $O/cuda_text.err "$GP" -o - --memleak --top 3 -- "$ROOT/.output/gpu/stacks_leak_shared"
sed -n '/memleak final report/,/Dropped events/p' $O/cuda_text.out | cut -c1-200

echo "== gpuprobe --memleak --json --show-allocs -- $PY stacks_torch.py"
t0=$(date +%s%N)
drive $O/torch.jsonl $O/torch.err "$GP" -o - --memleak --json --show-allocs --folded $O/torch.folded -- \
	"$PY" tests/gpu/stacks_torch.py
echo "run took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
tail -2 $O/torch.err
python3 tests/gpu/check_stacks.py torch tests/gpu/stacks_torch.py $O/torch.err $O/torch.jsonl || status=1
folded_and_flame torch $O/torch.jsonl "Outstanding GPU memory by allocating stack (PyTorch, Python frames included)"

echo "== gpuprobe --memleak -p PID ($PY stacks_torch.py attached after start-up)"
drive_pid $O/torch_pid.jsonl $O/torch_pid.err "$PY" tests/gpu/stacks_torch.py
python3 tests/gpu/check_stacks.py torch tests/gpu/stacks_torch.py $O/torch_pid.err $O/torch_pid.jsonl || status=1

echo "== expandable segments (cuMemCreate): PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
drive $O/torch_exp.jsonl $O/torch_exp.err env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
	"$GP" -o - --memleak --json --show-allocs -- "$PY" tests/gpu/stacks_torch.py
python3 tests/gpu/check_stacks.py torch tests/gpu/stacks_torch.py $O/torch_exp.err $O/torch_exp.jsonl || status=1

echo "== gpuprobe -v: what the stacks cost gpuprobe (torch, command mode)"
drive $O/torch_v.jsonl $O/torch_v.err "$GP" -o - -v --memleak --json -- "$PY" tests/gpu/stacks_torch.py
grep -E "stacks: |CPython" $O/torch_v.err

tar czf "$RESULTS/gpu-stacks.tgz" -C "$W" out
echo "== overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
