#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Leaks as a flame graph, and counter tracks in the timeline, on the real GPU (run with the
# device tool, `make bundle` carried). Needs `--memleak --folded FILE` and the `flame`
# subcommand wired into the front end, and counter events in --trace Chrome output.
#   1. --memleak --folded: outstanding bytes by stack for the CUDA C leak workload and the
#      PyTorch script; the folded values add up to the final report's outstanding_bytes.
#   2. gpuprobe flame FOLDED > SVG, checked frame by frame against the folded file
#      (tests/tools/check_flame.py). The PNG for docs/ is taken back on a machine with
#      Chromium: tests/tools/svg2png.sh torch-leak.svg docs/leak-flame.png
#   3. --trace Chrome output with counters: valid Trace Event Format, "C" events listed.
# Outputs land in $OUT (or /tmp/gp-gpu): folded files, SVGs, traces, logs.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out
mkdir -p "$O" "$W" "$RESULTS"
status=0
echo "== machine"; nvidia-smi -L; uname -r
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
nvcc -g -Xcompiler -fno-omit-frame-pointer -o $W/memleak_static tests/gpu/memleak_cuda.cu || exit 1

# folded values add up to the outstanding bytes of the final --memleak report
sum_check() {
	python3 - "$1" "$2" <<'PY'
import json, sys
folded = sum(int(l.rsplit(" ", 1)[1]) for l in open(sys.argv[1]) if l.strip())
final = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{") and '"memleak"' in l and '"final"' in l]
want = sum(p["outstanding_bytes"] for p in final[-1]["processes"]) if final else None
lines = sum(1 for l in open(sys.argv[1]) if l.strip())
print(f"  folded: {lines} stacks, {folded} bytes; final report outstanding_bytes {want}")
sys.exit(0 if final and folded == want else 1)
PY
}

for w in cuda torch; do
	if [ $w = cuda ]; then cmd=($W/memleak_static); else cmd=($PY tests/gpu/memleak_torch.py); fi
	echo "== gpuprobe --memleak --folded $w.folded --json -- ${cmd[*]}"
	$GP -o $O/$w.jsonl --memleak --folded $O/$w.folded --json -- "${cmd[@]}" >$O/$w.err 2>&1
	echo "exit $?"; tail -3 $O/$w.err
	sum_check $O/$w.folded $O/$w.jsonl || { echo "FAIL: folded sum"; status=1; }
	head -5 $O/$w.folded
	echo "== gpuprobe flame $w.folded > $w-leak.svg"
	$GP flame --title "Outstanding GPU memory by allocating stack ($w)" $O/$w.folded >$O/$w-leak.svg
	echo "exit $?"
	python3 tests/tools/check_flame.py $O/$w-leak.svg --folded $O/$w.folded || { echo "FAIL: flame"; status=1; }
	cp $O/$w.folded $O/$w-leak.svg "$RESULTS/"
done

echo "== gpuprobe --memleak --cudatrace --bandwidth-util --trace torch-trace.json --trace-format chrome"
$GP -o $O/trace.out --memleak --cudatrace --bandwidth-util --trace $O/torch-trace.json --trace-format chrome -- \
	$PY tests/gpu/memleak_torch.py >$O/trace.err 2>&1
echo "exit $?"
python3 tests/tools/check_chrome_trace.py $O/torch-trace.json || { echo "FAIL: chrome trace"; status=1; }
python3 - $O/torch-trace.json <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
cs = [e for e in ev if e["ph"] == "C"]
print(f"  {len(cs)} counter events; first ones:")
for e in cs[:5]:
    print("   ", json.dumps(e))
PY
cp $O/torch-trace.json "$RESULTS/"
tar czf "$RESULTS/gpu-flame.tgz" -C "$W" out
echo "== overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
