#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Summarizes bench/gpu/run.sh's raw lines ("suite config rep value dropped") as Markdown:
medians per configuration, the cost added over no tracer, and ratios taken within each
repetition (then their median): slowdown = config ÷ none; against torch.profiler, the
added costs divided."""
import statistics
import sys

LABELS = {
    "none": "no tracer", "memleak": "gpuprobe --memleak", "cudatrace": "gpuprobe --cudatrace",
    "count": "gpuprobe --cudatrace --no-latency", "bandwidth": "gpuprobe --bandwidth-util",
    "trace": "gpuprobe --trace FILE", "both": "gpuprobe --memleak --cudatrace",
    "profiler": "torch.profiler (CPU + CUDA activities)",
}


def main(path):
    head, runs = [], {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                head.append(line[1:].strip())
                continue
            w = line.split()
            if len(w) != 5:
                continue
            suite, cfg, rep, val, dropped = w
            runs.setdefault(suite, {}).setdefault(cfg, {})[int(rep)] = (val, dropped)
    out = ["# gpuprobe overhead on the GPU machine (bench/gpu/run.sh)", ""]
    out += ["- " + h for h in head] + [""]
    units = {"cuda": ("CUDA C launch loop", "ns per launch"), "torch": ("PyTorch training loop", "ms per step")}
    for suite in ("cuda", "torch"):
        if suite not in runs:
            continue
        title, unit = units[suite]
        cfgs = runs[suite]
        num = {c: {r: float(v) for r, (v, _) in reps.items() if v not in ("failed", "skipped")}
               for c, reps in cfgs.items()}
        base = num.get("none", {})
        peer = suite == "torch"
        out += ["## %s (%s)" % (title, unit), "",
                "| configuration | runs | median | added | slowdown (× none) |%s dropped |" %
                (" added ÷ torch.profiler's added |" if peer else ""),
                "|---|---:|---:|---:|---:|%s---:|" % ("---:|" if peer else "")]
        prof = num.get("profiler", {})
        order = [c for c in LABELS if c in cfgs]
        for c in order:
            v = num[c]
            bad = [r for r, (x, _) in cfgs[c].items() if x in ("failed", "skipped")]
            if not v:
                out.append("| %s | 0 | — | — | — |%s %s |" % (LABELS[c], " — |" if peer else "", ", ".join(
                    "rep %d %s" % (r, cfgs[c][r][0]) for r in bad)))
                continue
            md = statistics.median(v.values())
            paired = [r for r in v if r in base]
            added = statistics.median([v[r] - base[r] for r in paired]) if paired and c != "none" else None
            slow = statistics.median([v[r] / base[r] for r in paired]) if paired and c != "none" else None
            vs = None
            if suite == "torch" and c not in ("none", "profiler"):
                q = [(v[r] - base[r]) / (prof[r] - base[r]) for r in paired if r in prof and prof[r] - base[r] > 0]
                vs = statistics.median(q) if q else None
            drops = [d for r, (x, d) in cfgs[c].items() if d != "-"]
            out.append("| %s | %d%s | %.4g | %s | %s |%s %s |" % (
                LABELS[c], len(v), " (%d failed/skipped)" % len(bad) if bad else "", md,
                "—" if added is None else "%+.4g" % added, "—" if slow is None else "%.3f" % slow,
                (" %s |" % ("—" if vs is None else "%.2f" % vs)) if peer else "",
                ", ".join(drops) if drops else "—"))
        out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize.py RAW")
    main(sys.argv[1])
