#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The budget's honesty on a real GPU (issue 29): bench/gpu/budget_rate.cu run under
`gpuprobe --cudatrace --max-overhead P` across patterns and budgets, each run's estimated
launches and 95 % interval against the workload's own count, and the in-process slowdown
(the workload's mean time per launch iteration against plain runs of the same pattern,
alternated, on the same machine).

On the GPU machine, from the repository root, with a static gpuprobe in .output/bundle:
    nvcc -O2 -o /tmp/budget_rate bench/gpu/budget_rate.cu -lpthread
    python3 bench/gpu/budget_cov.py --bin /tmp/budget_rate --reps 3 > budget_cov.txt
Prints one line per run and a summary: runs whose interval held the count, estimates off by
more than 2x, the slowdown per pattern and budget (median of the reps). Exit 1 when coverage
is under 95 % or an estimate is off by more than 2x."""
import argparse
import json
import os
import statistics
import subprocess
import sys

PATTERNS = [
    ("sync1024", "--n 2000000 --sync-every 1024"),
    ("tight-spin3us", "--n 600000 --sync-every 0 --spin 3000"),
    ("paced-100k", "--n 300000 --rate 100000"),
    ("bursts", "--n 600000 --burst 50:200"),
    ("threads8", "--n 100000 --threads 8"),
]
BUDGETS = [0.5, 1, 5, 10]


def account(stderr):
    # the workload's own line (gpuprobe's reports of a command go to stderr too, or to -o)
    for line in reversed(stderr.splitlines()):
        if line.startswith("{") and '"launch_ns"' in line:
            return json.loads(line)
    raise SystemExit(f"no account from the workload:\n{stderr[-1500:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="/tmp/budget_rate")
    ap.add_argument("--gpuprobe", default=".output/bundle/gpuprobe")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--patterns", default=",".join(p for p, _ in PATTERNS))
    ap.add_argument("--budgets", default=",".join(str(b) for b in BUDGETS))
    ap.add_argument("--logs", default="", help="a folder for each run's gpuprobe -v log (its periods, "
                    "windows, hits and strays: where a slowdown comes from)")
    a = ap.parse_args()
    pats = [p for p in PATTERNS if p[0] in a.patterns.split(",")]
    budgets = [float(b) for b in a.budgets.split(",")]
    held = runs = far = 0
    slow = {}
    for rep in range(a.reps):
        for name, args in pats:
            for pct in budgets:
                plain = subprocess.run([a.bin] + args.split(), capture_output=True, text=True, timeout=600)
                base = account(plain.stderr)
                r = subprocess.run([a.gpuprobe, "--cudatrace", "--json", "-o", "-", "--max-overhead", f"{pct:g}"]
                                   + (["-v"] if a.logs else []) + ["--", a.bin] + args.split(),
                                   capture_output=True, text=True, timeout=600)
                if a.logs:
                    os.makedirs(a.logs, exist_ok=True)
                    with open(os.path.join(a.logs, f"{name}-{pct:g}-{rep}.log"), "w") as f:
                        f.write(r.stderr)
                t = account(r.stderr)
                ct = bud = None
                for line in r.stdout.splitlines():
                    try:
                        j = json.loads(line)
                    except ValueError:
                        continue
                    if j.get("mode") == "cudatrace" and j.get("report") == "final":
                        ct = next((p for p in j["processes"] if p["pid"] == t["pid"]), None)
                    if j.get("mode") == "budget" and j.get("report") == "final":
                        bud = j
                # the budget's own estimate of the process's time in probes, and whether it said
                # so when that passed the budget (over_budget; since 2026-11-28 s14)
                bp = next((p for p in (bud or {}).get("processes", []) if p["pid"] == t["pid"]), None)
                own = (f"; budget's own {bp['overhead_pct_estimate']:.2f} %, over_budget {bud.get('over_budget')}"
                       if bp else "")
                if ct is None:
                    print(f"{name} {pct:g}%: no report for PID {t['pid']} (exit {r.returncode})", flush=True)
                    runs += 1
                    far += 1
                    continue
                est = ct["launches"]
                smp = ct.get("sampling")
                lo, hi = smp["intervals"]["launches"] if smp else (est, est)
                ok = lo <= t["launches"] <= (hi if hi is not None else float("inf"))
                ratio = est / t["launches"]
                s = t["launch_ns"] / base["launch_ns"] - 1
                slow.setdefault((name, pct), []).append(s)
                held += ok
                runs += 1
                far += not 0.5 <= ratio <= 2
                print(f"{name} {pct:g}%: truth {t['launches']} estimate {est} ({ratio:.2f}x) [{lo}, {hi}]"
                      f" {'held' if ok else 'MISSED'}; slowdown {s * 100:+.2f} % (plain {base['launch_ns']:.0f} ns,"
                      f" traced {t['launch_ns']:.0f} ns a launch){own}", flush=True)
    print(f"coverage: {held} of {runs} intervals held the count; {far} estimates off by more than 2x")
    for (name, pct), v in sorted(slow.items()):
        print(f"slowdown {name} --max-overhead {pct:g}: median {statistics.median(v) * 100:+.2f} %"
              f" ({', '.join(f'{x * 100:+.2f}' for x in v)}){'  OVER' if statistics.median(v) * 100 > pct else ''}")
    return 0 if runs and held >= 0.95 * runs and not far else 1


if __name__ == "__main__":
    sys.exit(main())
