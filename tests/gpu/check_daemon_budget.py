#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The daemon's launch counters at its default budget against a program's own count
(tests/gpu/run_daemon_budget.sh): check_daemon_budget.py BEFORE AFTER TRUTH... compares the
node-wide increase of the launch families of comm launch_static (--comm=NAME: another) (the sum a dashboard
takes) between two scrapes with the sum of the programs' own launch counts (their JSON lines).
--exact: every call must have been seen (short jobs): counter, seen, low and high equal the
truth. Otherwise the truth must lie in [low, high] and the counter inside it."""
import json
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')
FAMS = {"counter": ("gpuprobe_cuda_kernel_launches_total", {}),
        "seen": ("gpuprobe_cuda_launches_seen_total", {}),
        "low": ("gpuprobe_cuda_launches_interval_total", {"bound": "low"}),
        "high": ("gpuprobe_cuda_launches_interval_total", {"bound": "high"}),
        "unbounded": ("gpuprobe_cuda_launches_unbounded_total", {})}


COMM = "launch_static"


def sums(path):
    out = {k: 0.0 for k in FAMS}
    for line in open(path):
        m = SAMPLE.match(line.strip())
        if not m or line.startswith("#"):
            continue
        labels = dict(LABEL.findall(m.group(3) or ""))
        for k, (name, want) in FAMS.items():
            if m.group(1) == name and labels.get("comm") == COMM and \
                    all(labels.get(a) == b for a, b in want.items()):
                out[k] += float(m.group(4))
    return out


def main():
    args = sys.argv[1:]
    global COMM
    exact = "--exact" in args
    args = [a for a in args if a != "--exact"]
    if args[0].startswith("--comm="):
        COMM = args.pop(0).split("=", 1)[1]
    before, after = sums(args[0]), sums(args[1])
    truth = 0
    for f in args[2:]:
        lines = [json.loads(l) for l in open(f) if l.startswith("{") and '"cuda-launch-count"' in l]
        truth += lines[-1]["launches"]
    d = {k: after[k] - before[k] for k in FAMS}
    print(f"truth {truth}: counter +{d['counter']:.0f} ({d['counter'] / truth:.4f} of the truth), "
          f"seen +{d['seen']:.0f}, interval [{d['low']:.0f}, {d['high']:.0f}], unbounded +{d['unbounded']:.0f}")
    if exact:
        ok = d["counter"] == d["seen"] == d["low"] == d["high"] == truth
    else:
        ok = d["low"] <= truth <= d["high"] + d["unbounded"] and d["low"] <= d["counter"] <= d["high"]
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
