#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# --ioctl on the real GPU (run with the device tool from the repo root, `make bundle`
# carried): a CUDA C program (tests/gpu/memleak_cuda.cu) and a PyTorch script, each under
# `gpuprobe --ioctl --json`; prints per-command counts and the share of calls decoded.
# Results (JSON, stderr, summaries) go to $OUT/gpu-ioctl.tgz when OUT is set.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-ioctl
mkdir -p "$O" "$W" "$RESULTS"
status=0
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
grep -E "nvidia" /proc/devices | tee $O/proc_devices.txt
ls -l /dev/nvidia* > $O/dev_nodes.txt 2>&1
nvcc -g -o $W/memleak_cuda tests/gpu/memleak_cuda.cu || exit 1

summarize() { # file.jsonl pid-file.err
	python3 - "$1" "$2" <<'PY'
import json, sys
rep = [json.loads(l) for l in open(sys.argv[1]) if '"mode":"ioctl"' in l and '"final"' in l]
if len(rep) != 1:
    print("FAIL: %d final ioctl reports" % len(rep)); sys.exit(1)
r = rep[0]
print("backend:", r["backend"], "dropped_events:", r["dropped_events"], "drops:", r["drops"])
ok = True
for p in r["processes"]:
    frac = p["decoded_calls"] / p["ioctls"] if p["ioctls"] else 0
    print("PID %d (%s): %d ioctls, %d errors, decoded %d (%.1f%%)" % (
        p["pid"], p["comm"], p["ioctls"], p["errors"], p["decoded_calls"], 100 * frac))
    for d in p["devices"]:
        print("  %s (%d:%d %s): %d ioctls, %d errors" % (d["node"], d["major"], d["minor"],
              d["driver"], d["ioctls"], d["errors"]))
        for c in d["commands"]:
            ctrl = "" if c["ctrl_cmd"] is None else " ctrl %s %s" % (c["ctrl_cmd"], c["ctrl_name"] or "")
            print("    %-34s %-11s%s calls %d errors %d total %.6fs max %.6fs" % (
                c["name"] or "?", c["cmd"], ctrl, c["calls"], c["errors"], c["total_s"], c["max_s"]))
    ok = ok and p["ioctls"] > 0 and any(d["node"] == "/dev/nvidiactl" for d in p["devices"])
if not r["processes"]:
    ok = False
print("RESULT:", "PASS" if ok else "FAIL (no ioctls on /dev/nvidiactl)")
sys.exit(0 if ok else 1)
PY
}

echo "== gpuprobe --ioctl --json -- memleak_cuda"
timeout 50 $GP -o $O/cuda.jsonl --ioctl --json -- $W/memleak_cuda >$O/cuda.err 2>&1
echo "exit $?"; grep "^gpuprobe:" $O/cuda.err
summarize $O/cuda.jsonl $O/cuda.err | tee $O/cuda.summary || status=1

echo "== gpuprobe --ioctl -- memleak_cuda (text, head)"
timeout 30 $GP -o - --ioctl -- $W/memleak_cuda 2>/dev/null | grep -v "^ \+[0-9]* -> \|usecs" | head -40

echo "== gpuprobe --ioctl --json -- $PY launch_torch.py"
timeout 60 $GP -o $O/torch.jsonl --ioctl --json -- $PY tests/gpu/launch_torch.py >$O/torch.err 2>&1
echo "exit $?"; grep "^gpuprobe:" $O/torch.err
summarize $O/torch.jsonl $O/torch.err | tee $O/torch.summary || status=1

tar czf "$RESULTS/gpu-ioctl.tgz" -C "$W" out-ioctl
echo "== overall ioctl: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
