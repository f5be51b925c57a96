#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The budget's estimates against the truth on the stand-in, run by run, and replayed.

  run:    python3 bench/budget_runs.py run --out DIR [--reps N] [--load K] [--patterns a,b]
          each pattern x budget under `gpuprobe --cudatrace --max-overhead P -v` (K busy loops
          beside it with --load), one JSON file per run in DIR: rate_app's own account, what
          gpuprobe reported, and its "budget: acct" log lines.
  replay: python3 bench/budget_runs.py replay DIR...
          every stored run's accounts replayed through .output/budget_replay (built from
          bench/budget_replay.c and the src/lib/sampling.c of this checkout), its estimate and
          interval against the run's own count: coverage and ratios per pattern. With
          --reported, gpuprobe's own figures instead (a check that the replay matches them).
Root, after `make all`."""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, ".output")
GP = os.path.join(OUT, "gpuprobe")
FAKE = os.path.join(OUT, "fakecuda", "libcuda.so.1")
RATE = os.path.join(OUT, "apps", "rate_app")
REPLAY = os.path.join(OUT, "budget_replay")

# name: (rate_app arguments, budgets)
PATTERNS = {
    "tight": ("--phases 1000000:400 --spin 3000 --sync-every 1024", (1, 5)),
    "threads8": ("--phases 20000:1000 --threads 8 --spin 2000", (1, 5)),
    "paced20k": ("--phases 20000:1000 --spin 2000", (1, 5)),
    "paced2us": ("--phases 500000:1000", (1, 5)),
    # paced by a busy wait on the clock (budget_rate.cu's --rate on the H200): never sleeps
    "busypaced": ("--phases 100000:1500 --busy-pace", (1, 5)),
    "busypaced20k": ("--phases 20000:2000 --busy-pace", (1, 5)),
    "steps": ("--phases 200:500,100000:3000,2000:500", (1,)),
    "later": ("--phases 1000:300,100000:2500,1000:500", (1,)),
    "bursts": ("--phases 500000:20,1000:80 --repeat 30 --spin 1000", (1, 5)),
    "budget": ("--phases 200:1000,20000:1000,100000:1000,200:1000 --alloc-every 100", (1,)),
}


def build_replay():
    subprocess.run(["cc", "-O2", "-Wall", "-I" + os.path.join(ROOT, "src"), "-o", REPLAY,
                    os.path.join(ROOT, "bench/budget_replay.c"), os.path.join(ROOT, "src/lib/sampling.c"), "-lm"],
                   check=True)


def truth(stderr):
    """rate_app's last JSON line. It writes it in pieces to an unbuffered stderr, which it
    shares with gpuprobe -v: under QEMU's TCG a log line landed inside it. Such a line is
    cut out and the truth's pieces joined again."""
    lines = stderr.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if not (lines[i].startswith("{") and '"api"' in lines[i]):
            continue
        try:
            return json.loads(lines[i])
        except ValueError:
            pass
        text, rest = lines[i].split("gpuprobe:")[0], lines[i + 1:]
        for more in rest:
            if not more.startswith("gpuprobe:"):
                text += more.split("gpuprobe:")[0]
                if "gpuprobe:" not in more:
                    try:
                        return json.loads(text)
                    except ValueError:
                        continue
    return None


def one(name, args, pct):
    cmd = [GP, "--libcuda", FAKE, "--json", "-o", "-", "--cudatrace", "--max-overhead", str(pct), "-v", "--"]
    cmd += [RATE] + ("" if "--alloc-every" in args else "--alloc-every 0 ").split() + args.split()
    env = dict(os.environ, GPUPROBE_STATE_DIR=tempfile.mkdtemp(prefix="gp-state-"))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    t = truth(r.stderr)
    rep = None
    for line in r.stdout.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("mode") == "cudatrace" and j.get("report") == "final" and t:
            p = next((p for p in j["processes"] if p["pid"] == t["pid"]), None)
            if p:
                smp = p.get("sampling") or {}
                lo, hi = smp.get("intervals", {}).get("launches", [p["launches"], p["launches"]])
                rep = {"estimate": p["launches"], "lo": lo, "hi": hi, "observed": smp.get("observed", p["launches"])}
    log = [l for l in r.stderr.splitlines() if "budget:" in l]
    return {"pattern": name, "args": args, "pct": pct, "rc": r.returncode, "truth": t, "reported": rep, "log": log}


def run(a):
    os.makedirs(a.out, exist_ok=True)
    busy = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.load)]
    try:
        for rep in range(a.reps):
            for name in a.patterns.split(","):
                args, budgets = PATTERNS[name]
                for pct in budgets:
                    res = one(name, args, pct)
                    res["load"] = a.load
                    path = os.path.join(a.out, f"{name}-{pct}-{rep}-{os.getpid()}.json")
                    with open(path, "w") as f:
                        json.dump(res, f)
                    print(line_of(res, res["reported"]), flush=True)
    finally:
        for b in busy:
            b.kill()
            b.wait()


def line_of(res, got):
    t = res["truth"]
    if not t or not got:
        return f"{res['pattern']} {res['pct']}%: no result (exit {res['rc']})"
    n = t["launches"]
    hi = got["hi"] if got["hi"] is not None else float("inf")
    ok = got["lo"] <= n <= hi
    return (f"{res['pattern']} {res['pct']}% load {res.get('load', 0)}: {n} est {got['estimate']} "
            f"({got['estimate'] / n:.2f}x) [{got['lo']}, {got['hi']}] {'held' if ok else 'MISSED'}")


def final_cost(log):
    """Every period priced at the last measure of the programs (as if it had been known from
    the start): the "a call costs X us (Y us warm)" line."""
    cost = price = None
    for l in log:
        m = re.search(r"a call costs ([\d.]+) us \(([\d.]+) us warm\)", l)
        if m:
            price, cost = float(m.group(1)) * 1e-6, float(m.group(2)) * 1e-6
    if cost is None:
        return log
    out = []
    for l in log:
        m = re.search(r"(.*budget: acct \d+ period(?: \S+){6}) \S+ \S+$", l)
        out.append(f"{m.group(1)} {cost:.9g} {price:.9g}" if m else l)
    return out


def replay_one(res, fixed_cost=False, no_sigma=False):
    t = res["truth"]
    log = final_cost(res["log"]) if fixed_cost else res["log"]
    r = subprocess.run([REPLAY] + (["--no-sigma"] if no_sigma else []), input="\n".join(log) + "\n", capture_output=True, text=True, check=True)
    for line in r.stdout.splitlines():
        j = json.loads(line)
        if t and j["pid"] == t["pid"]:
            if not j["sampled"]:
                return {"estimate": j["observed"], "lo": j["observed"], "hi": j["observed"]}
            return j
    return None


def replay(a):
    if not a.reported:
        build_replay()
    by = {}
    for d in a.dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            res = json.load(open(path))
            got = res["reported"] if a.reported else replay_one(res, a.final_cost, a.no_sigma)
            key = (res["pattern"], res["pct"], res.get("load", 0))
            by.setdefault(key, []).append((res, got))
            if a.verbose:
                print(line_of(res, got))
    tot = held = far = 0
    for key in sorted(by):
        rows = [(r, g) for r, g in by[key] if r["truth"] and g]
        ratios = [g["estimate"] / r["truth"]["launches"] for r, g in rows]
        if not rows:
            continue
        ok = [g["lo"] <= r["truth"]["launches"] <= (g["hi"] if g["hi"] is not None else float("inf")) for r, g in rows]
        wide = [(g["hi"] if g["hi"] is not None else float("inf")) / max(g["lo"], 1) for r, g in rows]
        tot += len(rows)
        held += sum(ok)
        far += sum(1 for x in ratios if not 0.5 <= x <= 2)
        print(f"{key[0]:9s} {key[1]:>3}% load {key[2]}: {len(rows):3d} runs, held {sum(ok):3d}, ratio median "
              f"{statistics.median(ratios):.2f} min {min(ratios):.2f} max {max(ratios):.2f}, hi/lo median "
              f"{statistics.median(wide):.1f}")
    print(f"all: {tot} runs, held {held} ({held / max(tot, 1) * 100:.0f} %), {far} off by more than 2x")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--reps", type=int, default=1)
    r.add_argument("--load", type=int, default=0)
    r.add_argument("--patterns", default=",".join(PATTERNS))
    p = sub.add_parser("replay")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--reported", action="store_true")
    p.add_argument("--final-cost", action="store_true", help="every period priced at the run's last measure")
    p.add_argument("--no-sigma", action="store_true", help="as if no window said how its process spent its gaps "
                   "(the estimate before they did)")
    p.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    run(a) if a.cmd == "run" else replay(a)


if __name__ == "__main__":
    sys.exit(main())
