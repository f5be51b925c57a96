#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Output streams, --trace counter tracks and gpuprobe top on the real GPU (run with the
# device tool, `make bundle` carried; builds no gpuprobe there, the CUDA C workload with
# nvcc as the other scripts do). Prints its figures; exits non-zero when a check fails.
#   1. --json with a PyTorch workload that prints: its stdout stays its own (the 'step'
#      lines, no report), the reports are whole JSON lines on stderr, as strace users
#      expect; --trace - alone on stdout is one valid Chrome trace.
#   2. --trace with --memleak --cudatrace --bandwidth-util: the counter samples' changes
#      add up to the final reports (launches, copy bytes per GPU and direction); the Chrome
#      conversion passes tests/tools/check_chrome_trace.py.
#   3. gpuprobe top against the PyTorch workload and a CUDA C copy program: screens
#      captured with tmux (capture-pane) at 100x30 and 80x24 when tmux is there, and
#      --batch frames always, into $OUT for docs/; the torch row must show launches/s,
#      memory and H2D bandwidth.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-output
mkdir -p "$O" "$W" "$RESULTS"
status=0
fail() { echo "FAIL: $*"; status=1; }
echo "== machine"; nvidia-smi -L; uname -r
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
TORCH="$PY $PWD/tests/gpu/top_torch.py"
[ -x $W/copy_static ] || nvcc -g -o $W/copy_static tests/gpu/copy_cuda.cu || fail "nvcc copy_cuda.cu"

echo "== 1. streams: the command keeps its stdout, the reports go to stderr (as strace's)"
$GP --cudatrace --memleak --json -- $TORCH 4 >$O/json.out 2>$O/json.err
echo "exit $?"
python3 - $O/json.out $O/json.err <<'PY' || fail "the command's stdout is not its own, or the reports are not on stderr"
import json, sys
out = open(sys.argv[1]).read().splitlines()
reps = [json.loads(l) for l in open(sys.argv[2]).read().splitlines() if l.startswith('{"mode"')]  # raises on a cut line
modes = {r["mode"] for r in reps}
print(f"  stdout: {len(out)} lines, {sum(l.startswith('step') for l in out)} 'step' lines; stderr: {len(reps)} reports {sorted(modes)}")
sys.exit(0 if any(l.startswith("step") for l in out) and not any(l.startswith('{"mode"') for l in out)
         and {"memleak", "cudatrace"} <= modes else 1)
PY
$GP --trace - --trace-format chrome --cudatrace -- $TORCH 3 >$O/stdout-trace.json 2>$O/stdout-trace.err
echo "exit $?"
python3 tests/tools/check_chrome_trace.py $O/stdout-trace.json | cut -c1-300 || fail "--trace - is not one Chrome document"
grep -q "trace summary" $O/stdout-trace.err || fail "no summary on stderr"

echo "== 2. counter tracks add up (PyTorch, 8 s)"
$GP --memleak --cudatrace --bandwidth-util --trace $O/counters.jsonl --json -o $O/counters.reports -- \
	$TORCH 8 >$O/counters.out 2>$O/counters.err
echo "exit $?"
python3 - $O/counters.jsonl $O/counters.reports $O/counters.err <<'PY' || fail "counter sums"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
reps = [json.loads(l) for l in open(sys.argv[2])]
t = [json.loads(l) for l in open(sys.argv[3]) if l.startswith('{"pid"') and "torch-top" in l][-1]
pid = t["pid"]
def final(mode):
    return [p for p in [r for r in reps if r["mode"] == mode and r.get("report") == "final"][-1]["processes"] if p["pid"] == pid][0]
sums = {}
for r in recs:
    if r["type"] == "counter" and r["pid"] == pid:
        d = sums.setdefault(r["name"], {})
        for k, v in r["values"].items():
            d[k] = d.get(k, 0) + v
ct, bw = final("cudatrace"), final("bandwidth")
ok = True
got = sums.get("launches", {})
want = {"kernels": ct["launches"], "graphs": ct["graph_launches"]}
print(f"  launches: counters {got} report {want}")
ok &= all(got.get(k, 0) == v for k, v in want.items())
want = {x["direction"] if x["gpu"] is None else f"{x['direction']} gpu{x['gpu']}": x["bytes"] for x in bw["transfers"]}
got = sums.get("copy bytes", {})
print(f"  copy bytes: counters {got}\n              report   {want}")
ok &= got == want
mem = [r for r in recs if r["type"] == "counter" and r["pid"] == pid and r["name"] == "outstanding bytes"]
print(f"  outstanding bytes: {len(mem)} samples, largest {max((sum(r['values'].values()) for r in mem), default=0)}, "
      f"workload reserved {t['reserved']}; summary counter_events {recs[-1]['counter_events']}, "
      f"process_events {recs[-1]['process_events']}")
inst = [r for r in recs if r["type"] == "instant"]
print(f"  instants: {[(r['name'], r['pid']) for r in inst][:6]}")
sys.exit(0 if ok else 1)
PY
$GP convert --chrome $O/counters.jsonl >$O/counters.json || fail "convert"
python3 tests/tools/check_chrome_trace.py $O/counters.json | cut -c1-600 || fail "converted trace invalid"

echo "== 3. gpuprobe top (PyTorch + CUDA C copies)"
TOPCMD="$TORCH 16 & $W/copy_static; wait"
if command -v tmux >/dev/null; then
	tmux kill-session -t gptop 2>/dev/null
	tmux new-session -d -s gptop -x 100 -y 30 "$GP top --command-log $O/top-cmd.log -- sh -c '$TOPCMD'"
	sleep 7
	tmux capture-pane -p -t gptop >$RESULTS/top-screen-100x30.txt
	tmux resize-window -t gptop -x 80 -y 24
	sleep 2
	tmux capture-pane -p -t gptop >$RESULTS/top-screen-80x24.txt
	tmux send-keys -t gptop q
	sleep 1; tmux kill-session -t gptop 2>/dev/null
	echo "-- 100x30:"; cat $RESULTS/top-screen-100x30.txt
	echo "-- 80x24:"; cat $RESULTS/top-screen-80x24.txt
	grep -q "python3\|python" $RESULTS/top-screen-100x30.txt || fail "no python row on the tmux screen"
	sleep 10 # the workload ends on its own
else
	echo "  no tmux here: --batch frames only"
fi
$GP top --batch -i 2 --width 100 --command-log $O/topb-cmd.log -- sh -c "$TOPCMD" >$O/top-batch.txt 2>$O/top-batch.err
echo "exit $?"
python3 - $O/top-batch.txt <<'PY' || fail "top --batch: no live figures for the PyTorch process"
import re, sys
frames = [f for f in open(sys.argv[1]).read().split("\n\n") if f.strip()]
print(f"  {len(frames)} frames; the 4th:")
print(frames[min(3, len(frames) - 1)])
ok = False
for f in frames[1:-1]:
    head = next((l for l in f.splitlines() if l.split()[:3] == ["PID", "S", "COMM"]), "")
    # the table's fixed columns (src/cli/top_view.c), right-aligned under the header's titles
    ends = {c: head.index(c) + len(c) for c in ("COMM", "LAUNCH/s", "MEMORY", "GROWTH/s", "H2D/s")}
    cell = lambda l, a, b: l[ends[a]:ends[b]].strip()
    for l in f.splitlines():
        if head and re.match(r"^ *\d+ \S ", l) and l.split()[2].startswith("python"):
            launch = l[:ends["LAUNCH/s"]].split()[-1]  # after COMM, which is left-aligned
            mem, h2d = cell(l, "LAUNCH/s", "MEMORY"), cell(l, "GROWTH/s", "H2D/s")
            ok |= launch not in ("0", "-") and mem not in ("-", "0 B") and h2d not in ("-", "0 B/s")
print("  a frame with launches/s, memory and H2D/s for python:", ok)
sys.exit(0 if ok else 1)
PY
cp $O/top-batch.txt "$RESULTS/"
tar czf "$RESULTS/gpu-output.tgz" -C "$W" out-output --exclude='*.json' 2>/dev/null
echo "== overall output: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
