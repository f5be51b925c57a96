#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""How noisy the in-process harness's measure is before any tracer (issue 16).

bench/gpu/inproc.py divides an on-window's mean step by its two neighbouring off-windows';
its interval narrows only as 1/sqrt(windows), and how many windows a point takes depends on
how much that ratio wanders with no tracer at all. This runs bench/gpu/torch_inproc.py
untraced, one process per variant of the loop (how it runs: --single-thread, --cpus,
--gc-freeze), and cuts each step log into the harness's pattern: measures of L seconds,
G seconds apart (the time a window's gpuprobe needs before its measure and after it),
every other one "on". For each variant, L and G: the spread of the on/off ratios (their
standard deviation and 1.4826 x their median absolute deviation, in points) and the windows
a 95 % interval half a point wide would take (normal approximation, (1.96 sd / 0.5)^2).

    noise.py --python PY --out DIR [--seconds 60] [--variants default,single,...]
    noise.py --logs DIR/*.steps --out DIR     (no run: the tables from step logs)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from inproc import read_steps  # noqa: E402 (beside this file: the step logs' reader)

HERE = os.path.dirname(os.path.abspath(__file__))
LAST2 = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[-2:])  # pinned: the last two CPUs
VARIANTS = {
    "default": [],
    "single": ["--single-thread"],
    "gcfreeze": ["--gc-freeze"],
    "pinned": ["--cpus", LAST2],
    "single_pinned": ["--single-thread", "--cpus", LAST2],
}
LENGTHS = (0.25, 0.5, 1.0, 2.0)
GAPS = (0.0, 1.5)  # 1.5 s: a window's gpuprobe start and lead before its measure, its exit after


def ratios(steps, length, gap):
    """On/off ratios of window means in the harness's pattern (off, on, off, ...)."""
    if not steps:
        return []
    t0, t_end = steps[0][0] + int(5e9), steps[-1][0]  # the first 5 s left out (warm-up)
    L, G = int(length * 1e9), int(gap * 1e9)
    means, i = [], 0
    while t0 + L <= t_end:
        while i < len(steps) and steps[i][0] < t0:
            i += 1
        j = i
        while j < len(steps) and steps[j][0] < t0 + L:
            j += 1
        means.append(statistics.fmean(s[1] for s in steps[i:j]) if j > i else None)
        t0 += L + G
    out = []
    for k in range(1, len(means) - 1, 2):
        a, m, b = means[k - 1], means[k], means[k + 1]
        if a and m and b:
            out.append(m / ((a + b) / 2) - 1)
    return out


def spread(rs):
    sd = statistics.stdev(rs)
    med = statistics.median(rs)
    mad = 1.4826 * statistics.median(abs(r - med) for r in rs)
    return sd, mad


def table(logs):
    rows = ["| variant | mean step (ms) | L (s) | G (s) | windows | ratio sd (points) | 1.4826 MAD (points) | windows for ±0.5 points |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    res = {}
    for name, path in logs:
        steps = read_steps(path)[0]
        if len(steps) < 100:
            rows.append("| %s | — | | | 0 | | | |" % name)
            continue
        mean_ms = statistics.fmean(s[1] for s in steps) / 1e6
        for g in GAPS:
            for length in LENGTHS:
                rs = ratios(steps, length, g)
                if len(rs) < 5:
                    continue
                sd, mad = spread(rs)
                need = (1.96 * sd / 0.005) ** 2
                res.setdefault(name, []).append(dict(L=length, G=g, n=len(rs), sd=sd, mad=mad, need=need))
                rows.append("| %s | %.3f | %.2f | %.1f | %d | %.2f | %.2f | %.0f |" % (
                    name, mean_ms, length, g, len(rs), 100 * sd, 100 * mad, need))
    return "\n".join(rows), res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--mock", action="store_true")
    ap.add_argument("--logs", nargs="+", help="no run: tables from these step logs")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.logs:
        logs = [(os.path.basename(p).rsplit(".", 1)[0], p) for p in a.logs]
    else:
        logs = []
        for name in a.variants.split(","):
            if name not in VARIANTS:
                raise SystemExit("bench/gpu/noise: unknown variant %r (%s)" % (name, ", ".join(VARIANTS)))
            path = os.path.join(a.out, name + ".steps")
            cmd = [a.python, os.path.join(HERE, "torch_inproc.py"), path, "--seconds", str(a.seconds)]
            cmd += VARIANTS[name] + (["--mock"] if a.mock else [])
            t0 = time.time()
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            if r.returncode:
                raise SystemExit("bench/gpu/noise: %s exited %d" % (" ".join(cmd), r.returncode))
            print("%s: %.0f s" % (name, time.time() - t0), flush=True)
            logs.append((name, path))
    text, res = table(logs)
    with open(os.path.join(a.out, "noise.md"), "w") as f:
        f.write("# Step-time noise of the in-process harness's pattern, untraced (bench/gpu/noise.py)\n\n")
        f.write(text + "\n")
    with open(os.path.join(a.out, "noise.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
