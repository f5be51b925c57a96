#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# --trace on the real GPU (device tool, `make bundle` carried): CUDA C programs with known
# calls and a PyTorch script; JSON Lines and Chrome outputs, and gpuprobe convert.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-trace
mkdir -p "$O" "$W" "$RESULTS"
status=0
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
[ -x $W/launch_static ] || nvcc -g -o $W/launch_static tests/gpu/launch_cuda.cu || exit 1
[ -x $W/memleak_static ] || nvcc -g -o $W/memleak_static tests/gpu/memleak_cuda.cu || exit 1
echo "== exported cu* functions: $(nm -D --defined-only /usr/local/nvidia/lib64/libcuda.so.1 | awk '$3 ~ /^cu/' | wc -l)"
t0=$(date +%s%N)
$GP -o $O/launch.summary --trace $O/launch.jsonl --json -- $W/launch_static >$O/launch.err 2>&1
echo "exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -o '[0-9]* probes on [^ ]*\|([0-9]* in all)' $O/launch.err | tr '\n' ' ')"
$GP convert --chrome $O/launch.jsonl >$O/launch.json || status=1
python3 tests/gpu/check_trace.py launch $O/launch.err $O/launch.jsonl $O/launch.json || status=1
$GP -o $O/memleak.summary --trace $O/memleak.json --trace-format chrome --json -- $W/memleak_static >$O/memleak.err 2>&1
python3 -c "import json,sys; d=json.load(open('$O/memleak.json')); print('  memleak chrome trace loads:', len(d['traceEvents']), 'events; drops', d['otherData']['dropped_events'])" || status=1
$GP -o $O/memleak2.summary --trace $O/memleak.jsonl --json -- $W/memleak_static >$O/memleak2.err 2>&1
python3 tests/gpu/check_trace.py memleak $O/memleak2.err $O/memleak.jsonl || status=1
echo "== PyTorch"
$GP -o $O/torch.summary --trace $O/torch.jsonl --json -- $PY tests/gpu/launch_torch.py >$O/torch.err 2>&1
echo "exit $?"
python3 tests/gpu/check_trace.py torch $O/torch.err $O/torch.jsonl || status=1
echo "== --trace with --ioctl (Chrome), launch_static"
$GP -o $O/ioctl.summary --trace $O/ioctl.json --trace-format chrome --ioctl --json -- $W/launch_static >$O/ioctl.err 2>&1
python3 - $O/ioctl.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
io = [e for e in ev if e.get("cat") == "ioctl"]
named = sum(1 for e in io if e["name"] != "ioctl")
print("chrome trace: %d events, %d cuda calls, %d ioctls (%d decoded, %.1f%%), ioctl tracks %d, dropped %d" % (
    len(ev), sum(1 for e in ev if e.get("cat") == "cuda"), len(io), named, 100.0 * named / max(len(io), 1),
    sum(1 for e in ev if e["ph"] == "M" and e["args"]["name"].startswith("ioctl")), d["otherData"]["dropped_events"]))
PY
echo "== text summary (launch_static)"
$GP -o - --trace $O/l2.jsonl -- $W/launch_static 2>/dev/null | head -30
ls -la $O
tar czf "$RESULTS/gpu-trace.tgz" -C "$W" out-trace --exclude='*.json' 2>/dev/null || tar czf "$RESULTS/gpu-trace.tgz" -C "$W" out-trace
echo "== overall trace: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
