#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gpuprobe's overhead measured inside one process on a real GPU (issue 16).

A workload runs without stopping and logs every step's time; gpuprobe attaches to it
(-p PID, --duration W) and goes away in alternating windows, the configurations taking
turns within the same process: off, config 1, off, config 2, ..., off. Each on-window is
compared with the off-windows on either side of it (ratio of median step times); a
configuration's figure is the median of its ratios with a distribution-free 95 % interval
(order statistics), and windows are added until every interval is narrower than the
budget (1 %) or the time is up. Steps within SETTLE of a change are left out.

Workloads: launch_inproc (steps of 1000 empty-kernel launches and a synchronize) and
torch_inproc.py (a ~2 ms PyTorch training step, ~35 launches), with
  three         --memleak --cudatrace --bandwidth-util (every call)
  three_budget  the same with --max-overhead 1
and, on PyTorch, torch.profiler (CPU and CUDA activities) switched the same way in the
process (the peer). gpuprobe's own estimate of each window (its overhead line: probe
hits x calibrated cost, over the window; and the budget's) is kept beside the measure, and
on the launch loop its launch count (or estimate and interval) beside the loop's own count
of its launches in the window. Exit status 1 when a configuration got no window or an
interval misses the loop's count.

Run on the GPU machine from the repository root, as root, with what `make bundle` and
bench/gpu/inproc.sh built here carried (nothing is built there):
    bench/gpu/inproc.sh        (about 5 minutes; writes $OUT or /tmp/gp-inproc)
GPU_INPROC_MOCK=1 runs the plumbing here on the stand-in driver (no GPU).
"""
import argparse
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import time

SETTLE_NS = 300_000_000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

THREE = ["--memleak", "--cudatrace", "--bandwidth-util"]
CONFIGS = {
    "launch": [("three", THREE), ("three_budget", THREE + ["--max-overhead", "1"])],
    "torch": [("three", THREE), ("three_budget", THREE + ["--max-overhead", "1"]), ("profiler", None)],
}
LABELS = {
    "three": "gpuprobe --memleak --cudatrace --bandwidth-util",
    "three_budget": "the same, --max-overhead 1",
    "profiler": "torch.profiler (CPU + CUDA activities)",
}


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def log(msg):
    print(msg, flush=True)


def read_steps(path):
    steps, prof = [], []
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "step":
                steps.append((int(w[1]), int(w[2])))
            elif len(w) == 2 and w[0].startswith("prof_"):
                prof.append((w[0], int(w[1])))
    return steps, prof


def median_ci(v):
    """The narrowest order-statistic interval of the median with >= 95 % coverage (or the
    widest there is when n is small), and its coverage."""
    x = sorted(v)
    n = len(x)
    k, cov = 1, 1 - 2 * 0.5 ** n
    for j in range(2, n // 2 + 1):
        c = 1 - 2 * sum(math.comb(n, i) for i in range(j)) * 0.5 ** n
        if c < 0.95:
            break
        k, cov = j, c
    return x[k - 1], x[n - k], cov


class Workload:
    def __init__(self, name, argv, env, logpath):
        self.name, self.logpath = name, logpath
        self.out = open(logpath + ".stdout", "w")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.out, text=True, env=env)
        line = self.p.stdout.readline()
        if not line.startswith("READY"):
            raise SystemExit("%s did not start: %r (see %s.stdout)" % (name, line, logpath))
        self.pid = self.p.pid
        self.windows = []  # (kind, config, t0, t1, extra)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def off_window(w, secs):
    t0 = now_ns() + SETTLE_NS
    time.sleep(secs + SETTLE_NS / 1e9)
    w.windows.append(("off", None, t0, now_ns(), {}))


def gp_window(w, a, cfg, flags, secs, n):
    out = os.path.join(a.out, "logs", "%s-%s-%d.json" % (w.name, cfg, n))
    err = out[:-5] + ".err"
    cmd = [a.gp] + flags + a.gp_extra + ["-p", str(w.pid), "--duration", "%.3f" % secs, "--json"]
    with open(out, "w") as fo, open(err, "w") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=subprocess.PIPE, text=True)
        t_on = None
        for line in p.stderr:
            fe.write(line)
            if t_on is None and "gpuprobe: tracing" in line:
                t_on = now_ns()
        p.wait()
    if p.returncode or t_on is None:
        raise SystemExit("gpuprobe failed (exit %s): %s; see %s" % (p.returncode, " ".join(cmd), err))
    extra = dict(cmd=" ".join(cmd), t_attached=t_on, t_done=t_on + int(secs * 1e9))
    with open(out) as f:
        for line in f:
            if not line.startswith('{"mode"'):
                continue
            r = json.loads(line)
            if r["mode"] == "overhead":
                ps = [x for x in r["processes"] if x["pid"] == w.pid]
                if ps and ps[0]["probe_seconds_estimate"] is not None:
                    extra["estimate_pct"] = 100 * ps[0]["probe_seconds_estimate"] / secs
            elif r["mode"] == "budget":
                ps = [x for x in r["processes"] if x.get("pid") == w.pid]
                if ps:
                    extra["budget_pct"] = ps[0]["overhead_pct_estimate"]
                    extra["fraction"] = ps[0].get("fraction", 1.0)
            elif r["mode"] == "cudatrace":
                ps = [x for x in r["processes"] if x["pid"] == w.pid]
                if ps:
                    extra["launches"] = ps[0]["launches"]
                    extra["interval"] = (ps[0].get("sampling") or {}).get("intervals", {}).get("launches")
    # probes in from "tracing" until the duration ran out (then the report and the detach)
    w.windows.append(("on", cfg, t_on + SETTLE_NS, t_on + int(secs * 1e9), extra))


def prof_window(w, secs):
    w.p.send_signal(signal.SIGUSR1)
    time.sleep(secs + SETTLE_NS / 1e9)
    w.p.send_signal(signal.SIGUSR2)
    # the window is read back from the workload's own marks once it is done
    deadline = time.time() + 120
    while time.time() < deadline:
        _, prof = read_steps(w.logpath)
        if prof and prof[-1][0] == "prof_done":
            break
        time.sleep(0.2)
    on = [t for k, t in prof if k == "prof_on"][-1]
    off = [t for k, t in prof if k == "prof_off"][-1]
    w.windows.append(("on", "profiler", on + SETTLE_NS, off, {}))
    w.windows.append(("gap", None, off, prof[-1][1] + SETTLE_NS, {}))


def summarize(w, steps):
    """Per on-window: median step time over the mean of its neighbouring off-windows'."""
    meds = []
    for kind, cfg, t0, t1, extra in w.windows:
        d = [dur for t, dur in steps if t0 <= t and t + dur <= t1]
        meds.append((kind, cfg, statistics.median(d) if len(d) >= 20 else None, len(d), extra))
    res = {}
    for i, (kind, cfg, m, n, extra) in enumerate(meds):
        if kind != "on" or m is None:
            continue
        before = next((x[2] for x in reversed(meds[:i]) if x[0] == "off" and x[2]), None)
        after = next((x[2] for x in meds[i + 1:] if x[0] == "off" and x[2]), None)
        if not before or not after:
            continue
        row = dict(ratio=m / ((before + after) / 2), on_ms=m / 1e6, steps=n, **extra)
        if w.name == "launch" and "t_attached" in extra:
            # the loop's own count of its launches while gpuprobe was attached (steps of 1000
            # wholly inside; the report is made as the duration runs out: +-2 steps)
            row["true_launches"] = 1000 * sum(1 for t, d in steps if extra["t_attached"] <= t and t + d <= extra["t_done"])
        res.setdefault(cfg, []).append(row)
    return res


def enough(res, cfgs, min_pairs, width):
    for cfg, _ in cfgs:
        r = [x["ratio"] for x in res.get(cfg, [])]
        if len(r) < min_pairs:
            return False
        lo, hi, _ = median_ci(r)
        if (hi - lo) * 100 >= width:
            return False
    return True


def run_workload(a, name, argv, env, secs, cap):
    path = os.path.join(a.out, "logs", "%s.steps" % name)
    w = Workload(name, argv, env, path)
    cfgs = CONFIGS[name]
    t_end = time.time() + cap
    log("== %s: PID %d, windows of %.1f s, until every interval is under %.1f points or %d s" %
        (name, w.pid, secs, a.width, cap))
    try:
        time.sleep(2)
        off_window(w, secs)
        n = 0
        rng = random.Random(16)
        while time.time() < t_end:
            order = cfgs[:]
            rng.shuffle(order)
            for cfg, flags in order:
                if flags is None:
                    prof_window(w, secs)
                else:
                    gp_window(w, a, cfg, flags, secs, n)
                off_window(w, secs)
            n += 1
            res = summarize(w, read_steps(path)[0])
            log("  cycle %d: %s" % (n, "  ".join(
                "%s %+.2f %%" % (c, 100 * (statistics.median([x["ratio"] for x in res[c]]) - 1))
                for c, _ in cfgs if res.get(c))))
            if enough(res, cfgs, a.min_pairs, a.width):
                break
    finally:
        w.stop()
    steps, _ = read_steps(path)
    return summarize(w, steps), w


def table(name, res, unit):
    out = ["| configuration | windows | median step, on (%s) | overhead: median of ratios | 95 %% interval (coverage) | mean ± 1.96 s.e. | gpuprobe's own estimate | budget's estimate, sampled share |" % unit,
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    checks = []
    for cfg, _ in CONFIGS[name]:
        rs = res.get(cfg, [])
        for x in rs:
            if "true_launches" in x and "launches" in x:
                iv = x.get("interval")
                checks.append("%s: %d counted or estimated, %d by the loop (+-2000)%s" % (
                    cfg, x["launches"], x["true_launches"],
                    "" if not iv else ", interval [%s, %s]%s" % (iv[0], iv[1], "" if (
                        iv[0] - 2000 <= x["true_launches"] <= (iv[1] if iv[1] is not None else 1e18) + 2000) else " MISSES IT")))
        if not rs:
            out.append("| %s | 0 | — | — | — | — | — | — |" % LABELS[cfg])
            continue
        r = [x["ratio"] for x in rs]
        lo, hi, cov = median_ci(r)
        m = statistics.mean(r)
        se = statistics.stdev(r) / math.sqrt(len(r)) if len(r) > 1 else float("nan")
        est = [x["estimate_pct"] for x in rs if "estimate_pct" in x]
        bud = [x["budget_pct"] for x in rs if "budget_pct" in x]
        frac = [x["fraction"] for x in rs if "fraction" in x]
        out.append("| %s | %d | %.4g | %+.2f %% | %+.2f … %+.2f %% (%.1f %%) | %+.2f ± %.2f %% | %s | %s |" % (
            LABELS[cfg], len(r), statistics.median(x["on_ms"] for x in rs), 100 * (statistics.median(r) - 1),
            100 * (lo - 1), 100 * (hi - 1), 100 * cov, 100 * (m - 1), 196 * se,
            "%.2f %%" % statistics.median(est) if est else "—",
            "%.2f %%, %.2f" % (statistics.median(bud), statistics.median(frac)) if bud else "—"))
    if checks:
        out += ["", "Launches per window, gpuprobe's against the loop's own count:", ""] + ["- " + c for c in checks]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gp", required=True)
    ap.add_argument("--launch-bin", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mock", action="store_true", help="the stand-in driver and a sleeping 'PyTorch'")
    ap.add_argument("--libcuda", help="probe this file (mock runs)")
    ap.add_argument("--width", type=float, default=1.0, help="stop once every interval is narrower (points)")
    ap.add_argument("--min-pairs", type=int, default=8)
    ap.add_argument("--launch-cap", type=float, default=100)
    ap.add_argument("--torch-cap", type=float, default=190)
    a = ap.parse_args()
    os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)
    a.gp_extra = ["--libcuda", a.libcuda] if a.libcuda else []
    env = dict(os.environ)
    t0 = time.time()
    results = {}
    launch_argv = [a.launch_bin, os.path.join(a.out, "logs", "launch.steps"), "1000", "900"]
    results["launch"], _ = run_workload(a, "launch", launch_argv, env, 1.5, a.launch_cap)
    torch_argv = [a.python, os.path.join(ROOT, "bench", "gpu", "torch_inproc.py"),
                  os.path.join(a.out, "logs", "torch.steps"), "--seconds", "900"] + (["--mock"] if a.mock else [])
    results["torch"], _ = run_workload(a, "torch", torch_argv, env, 2.0, a.torch_cap)
    with open(os.path.join(a.out, "inproc_raw.json"), "w") as f:
        json.dump(results, f, indent=1)
    md = ["# gpuprobe's overhead inside one process (bench/gpu/inproc.py)", "",
          "- machine: %s" % " ".join(os.uname()[2:3]) + ", %d CPUs" % os.cpu_count(),
          "- gpu: %s" % (subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                         capture_output=True, text=True).stdout.strip().splitlines() or ["none (mock)"])[0]
          if not a.mock else "- gpu: none (GPU_INPROC_MOCK=1: the stand-in driver)",
          "- gpuprobe: %s (%s)" % (a.gp, subprocess.run([a.gp, "--version"], capture_output=True, text=True).stdout.strip()),
          "- method: alternating windows in one process (off, each configuration in a shuffled order, off between), "
          "ratio of an on-window's median step time to the mean of its neighbouring off-windows'; the figure is the "
          "median of the ratios with its order-statistic interval; %.0f s in all" % (time.time() - t0), ""]
    md += ["## Launch-bound CUDA loop (steps of 1000 empty-kernel launches and a synchronize)", ""]
    md += table("launch", results["launch"], "ms") + [""]
    md += ["## PyTorch training loop (one step: forward, backward, AdamW)", ""]
    md += table("torch", results["torch"], "ms") + [""]
    text = "\n".join(md)
    with open(os.path.join(a.out, "inproc.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    # the checks: every configuration measured; every interval holds the loop's own count
    bad = [l for l in md if "MISSES IT" in l]
    bad += ["%s %s: no window" % (n, c) for n in CONFIGS for c, _ in CONFIGS[n] if not results[n].get(c)]
    for b in bad:
        print("bench/gpu/inproc: check failed: " + b.lstrip("- "), file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
