#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gpuprobe's overhead measured inside one process on a real GPU (issue 16).

A workload runs without stopping and logs every step's time; gpuprobe attaches to it
(-p PID, --duration W) and goes away in alternating windows, the configurations taking
turns within the same process: off, config 1, off, config 2, ..., off. Each on-window is
compared with the off-windows on either side of it: the ratio of its mean step time to
theirs (the cost in time: under --max-overhead only a share of the steps meet the sampled
probes, and a window's median step would not see them), and beside it the ratio of median
step times. A configuration's figure is the Hodges-Lehmann estimate of its ratios of means
with the 95 % interval of the Wilcoxon signed-rank test (distribution-free for a symmetric
spread; normal approximation from 20 windows); the median of the ratios of medians comes
with its order-statistic interval. Windows are added until every interval is narrower
than --width points or the time is up. Steps within --settle of a change are left out.
With --lead L gpuprobe is attached L seconds before an on-window's measure begins and
stays to its end: under --max-overhead the first periods are planned from nothing (an
exact period, then the least window), so a window measured from the attach sees mostly
them and not the periods a daemon lives in (bench/gpu/results-inproc-h200.md, fifth look);
on the H200 gpuprobe's start costs the loop until ~0.75 s after "tracing", so --lead 1.0
(sixth look). Beside the figure (where it comes from):
  - under a budget (gpuprobe -v logs when links begin to go in, windows open and close and
    links are gone), each on-window's steps split into those that met breakpoints and the
    clean ones, and the first's extra time per sampled call or stray;
  - the steps by time since "tracing" (250-ms bins): how long the start costs;
  - the kernel's counters of the workload's main thread, its threads and gpuprobe, on-windows
    against their off-windows (system time, time on and waiting for a CPU, faults);
  - with --canary (bench/gpu/canary.c; inproc.sh passes it when built), a fixed piece of
    arithmetic and two cross-thread wake-ups timed beside the workload: the machine's own
    slowdowns, which no probe causes.

Why many short windows: on the GPU machines (VMs) a ~2 ms PyTorch step's window mean wanders
by ~4-5 % from one window to the next at every window length from 0.25 s to 4 s (measured
without tracing: docs/benchmarks.md), so the interval narrows only with the number of
windows, as 1/sqrt(n).

Workloads: launch (bench/gpu/launch_inproc.c: steps of 1000 empty-kernel launches and a
synchronize) and torch (torch_inproc.py: a ~2 ms PyTorch training step, ~35 launches), with
  three         --memleak --cudatrace --bandwidth-util (every call)
  three_budget  the same with --max-overhead 1
  unsampled     --memleak --bandwidth-util, every call (only when --configs names it): the
                probes a budget prices and never samples
and profiler: torch.profiler (CPU and CUDA activities) switched the same way inside a
PyTorch process of its own (the peer): after its first session the process stays ~25 %
slower (CUPTI stays on), which would spoil any window measured after it in the same process.
gpuprobe's own estimate of each window (its overhead line: probe hits x calibrated cost; and
the budget's) is kept beside the measure, and on the launch loop its launch count (or
estimate and interval) beside the loop's own count of its launches in the window. Exit
status 1 when a configuration got no window or an interval misses the loop's count.

The patterns of issue 29's budget (bench/gpu/budget_rate.cu's, measured here inside one
process rather than across processes as budget_cov.py does): launch_inproc loops of steps of
1024 launches, one workload each, `--workloads patterns` for all five:
  launch-sync1024   a synchronize every 1024 launches (the step's end)
  launch-tight      3 us of host work after each launch, no synchronize at all
  launch-paced      paced at 100 000 launches/s (busy wait), a synchronize every 1024
  launch-bursts     50 ms of launching, 200 ms asleep, a synchronize every 1024
  launch-threads8   8 threads at once, each on its own stream, a synchronize every 1024;
                    every thread's steps count (a step: 1024 launches of one thread)
with three_budget and three_budget5 (--max-overhead 5), and three on request (--configs).
A step's time there is the time the loop worked (launch_inproc.c): its wall time less the
waits for a paced launch's due time and the sleeps between bursts, so that the paced and
bursty loops' figure is what a launch's work costs more (pacing hides it from the wall time:
a paced loop that keeps its pace takes as long traced as not; it is left less time for other
work). Beside it, for those two, the same extra time as a share of the steps' wall time
(what the loop's time pays, closer to the budget's own share of time). Their windows are
--pattern-window long (1 s), --pattern-cap seconds at most a pattern (90); the launch counts
are checked within 2 steps of each thread.

Run on the GPU machine from the repository root, as root, with what `make bundle` and
bench/gpu/inproc.sh built here carried (nothing is built there):
    bench/gpu/inproc.sh                  (about 6 minutes; writes $OUT or /tmp/gp-inproc)
    bench/gpu/inproc.sh --workloads torch --configs three_budget --lead 1.0 --torch-window 1.0 --torch-cap 500
    bench/gpu/inproc.sh --workloads patterns --configs three_budget --lead 1.0 --pattern-cap 85
With --torch-single-thread the PyTorch loop runs backward on the thread that calls it
(torch_inproc.py --single-thread): the same launches, every one on the step's own thread,
steps ~30 % shorter. Untraced, its window means wandered a quarter as much as the default
loop's (bench/gpu/noise.py on the H200: 1.5 against 5.3 points, 1.4826 x MAD); in one
harness run under a budget its interval was no narrower (bench/gpu/results-inproc-h200.md,
seventh look).
Runs' raw results (inproc_raw.json) merge into one table: inproc.py --merge A.json B.json --out DIR;
the H200 runs' are kept, gzipped, in bench/gpu/raw/ (--merge reads .json.gz), so that later
sessions can merge windows of the same build.
The per-window files and step logs end in logs.tgz beside them.
GPU_INPROC_MOCK=1 runs the plumbing here on the stand-in driver (no GPU).
"""
import argparse
import gzip
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from run import median_ci  # noqa: E402 (bench/run.py: constants and functions only at import)

THREE = ["--memleak", "--cudatrace", "--bandwidth-util"]
ON_REQUEST = {"unsampled"}  # run only when --configs names them
# issue 29's sampled programs (bench/gpu/budget_rate.cu, budget_cov.py's names), each a
# launch_inproc loop of steps of 1024 launches: its options, threads and title
PATTERNS = {
    "launch-sync1024": (["--sync-every", "1024"], 1,
                        "steps of 1024 empty-kernel launches and a synchronize (budget_cov's sync1024)"),
    "launch-tight": (["--sync-every", "0", "--spin", "3000"], 1,
                     "a launch and 3 us of host work, no synchronize (tight-spin3us); a step: 1024 launches"),
    "launch-paced": (["--rate", "100000", "--sync-every", "1024"], 1,
                     "paced at 100 000 launches/s, a synchronize every 1024 (paced-100k); a step: 1024 "
                     "launches, its time less the waits for the pace"),
    "launch-bursts": (["--burst", "50:200", "--sync-every", "1024"], 1,
                      "bursts: 50 ms of launching, 200 ms asleep, a synchronize every 1024 (bursts); a step: "
                      "1024 launches, its time less the sleeps"),
    "launch-threads8": (["--threads", "8", "--sync-every", "1024"], 8,
                        "8 threads launching at once, each on a stream of its own, a synchronize every 1024 "
                        "(threads8); a step: 1024 launches of one thread, every thread's steps"),
}
PATTERN_K = 1024
PATTERN_ON_REQUEST = {"three"}  # every call: on a pattern only when --configs names it


def selected(a, cfg, name=None):
    """Whether this run measures configuration cfg (--configs, else all but ON_REQUEST, and
    on a pattern of PATTERNS all but PATTERN_ON_REQUEST)."""
    if a.configs:
        return cfg in a.configs
    return cfg not in ON_REQUEST and not (name in PATTERNS and cfg in PATTERN_ON_REQUEST)

BUDGETS = [("three_budget", THREE + ["--max-overhead", "1"]), ("three_budget5", THREE + ["--max-overhead", "5"])]
CONFIGS = {
    "launch": [("three", THREE), ("three_budget", THREE + ["--max-overhead", "1"])],
    "torch": [("three", THREE), ("three_budget", THREE + ["--max-overhead", "1"]),
              ("unsampled", ["--memleak", "--bandwidth-util"])],
    "profiler": [("profiler", None)],
}
CONFIGS.update({p: BUDGETS + [("three", THREE)] for p in PATTERNS})
LABELS = {
    "three": "gpuprobe --memleak --cudatrace --bandwidth-util",
    "three_budget": "the same, --max-overhead 1",
    "three_budget5": "the same, --max-overhead 5",
    "unsampled": "gpuprobe --memleak --bandwidth-util (the probes a budget never samples, every call)",
    "profiler": "torch.profiler (CPU + CUDA activities)",
}
TITLES = {
    "launch": "Launch-bound CUDA loop (steps of 1000 empty-kernel launches and a synchronize)",
    "torch": "PyTorch training loop (one step: forward, backward, AdamW)",
    "profiler": "The peer: torch.profiler in a PyTorch process of its own (the same loop)",
}
TITLES.update({p: "Pattern %s: %s" % (p, t) for p, (_, _, t) in PATTERNS.items()})
ORDER = ["launch"] + list(PATTERNS) + ["torch", "profiler"]


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def log(msg):
    print(msg, flush=True)


def read_steps(path):
    """The steps (start, time, wall time) and torch_inproc's profiler marks of a log: "step T D"
    (wall time D), or launch_inproc's "step T D W I" (D the time worked, W the wall time)."""
    steps, prof = [], []
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) == 3 and w[0] == "step":
                steps.append((int(w[1]), int(w[2]), int(w[2])))
            elif len(w) == 5 and w[0] == "step":
                steps.append((int(w[1]), int(w[2]), int(w[3])))
            elif len(w) == 2 and w[0].startswith("prof_"):
                prof.append((w[0], int(w[1])))
    return steps, prof


def signed_rank_cdf(n):
    """P(W+ <= w) for w = 0 .. n(n+1)/2 under the null (exact, by counting subsets)."""
    cnt = [1] + [0] * (n * (n + 1) // 2)
    for r in range(1, n + 1):
        for w in range(len(cnt) - 1, r - 1, -1):
            cnt[w] += cnt[w - r]
    total, acc, out = 2 ** n, 0, []
    for c in cnt:
        acc += c
        out.append(acc / total)
    return out


def hl_ci(v):
    """The Hodges-Lehmann estimate (median of the Walsh averages) and the 95 % interval of
    the Wilcoxon signed-rank test: exact up to 60 values, normal approximation above; the
    widest there is when n is small. Returns (estimate, low, high, coverage)."""
    n = len(v)
    walsh = sorted((v[i] + v[j]) / 2 for i in range(n) for j in range(i, n))
    est = statistics.median(walsh)
    if n <= 60:
        cdf = signed_rank_cdf(n)
        d, cov = 1, 1 - 2 * cdf[0]
        while d + 1 < len(cdf) and cdf[d] <= 0.025:
            d += 1
            cov = 1 - 2 * cdf[d - 1]
    else:
        m, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        d = max(1, int(math.floor(m - 1.959964 * sd)))
        cov = 1 - math.erfc((m - d + 0.5) / (sd * math.sqrt(2)))
    return est, walsh[d - 1], walsh[len(walsh) - d], cov


class Workload:
    def __init__(self, name, argv, env, logpath, launches=0):
        self.name, self.logpath = name, logpath
        self.launches = launches  # a step's launches (launch_inproc), else 0
        self.threads = PATTERNS[name][1] if name in PATTERNS else 1
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


TCK = os.sysconf("SC_CLK_TCK")


def counters(pid, gp=None):
    """What the kernel counts of the workload's main thread and whole process (and of
    gpuprobe's process): where a cost the step times show comes from (page faults,
    preemptions, time waiting for a CPU, system time). None where a file is gone."""
    c = {}
    try:
        with open("/proc/%d/task/%d/stat" % (pid, pid)) as f:
            v = f.read().rsplit(")", 1)[1].split()
        c["main_minflt"], c["main_stime_s"] = int(v[7]), int(v[12]) / TCK
        with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
            run, wait, _ = f.read().split()
        c["main_run_s"], c["main_wait_s"] = int(run) / 1e9, int(wait) / 1e9
        with open("/proc/%d/task/%d/status" % (pid, pid)) as f:
            for line in f:
                if line.startswith("nonvoluntary_ctxt_switches"):
                    c["main_nvcsw"] = int(line.split()[1])
        with open("/proc/%d/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        c["proc_minflt"], c["proc_utime_s"], c["proc_stime_s"] = int(v[7]), int(v[11]) / TCK, int(v[12]) / TCK
        run = wait = 0
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                    v = f.read().split()
                run, wait = run + int(v[0]), wait + int(v[1])
            except (OSError, ValueError, IndexError):
                pass  # a thread that ended
        c["proc_run_s"], c["proc_wait_s"] = run / 1e9, wait / 1e9
        if gp:
            with open("/proc/%d/stat" % gp) as f:
                v = f.read().rsplit(")", 1)[1].split()
            c["gp_cpu_s"] = (int(v[11]) + int(v[12])) / TCK
    except (OSError, ValueError, IndexError):
        pass
    c["t"] = now_ns() / 1e9
    return c


def rates(c0, c1):
    """Per second between two counters() readings, of what both hold."""
    dt = c1["t"] - c0["t"]
    return {k: (c1[k] - c0[k]) / dt for k in c0 if k in c1 and k != "t"} if dt > 0 else {}


def off_window(w, a, secs):
    t0 = now_ns() + a.settle_ns
    time.sleep(a.settle_ns / 1e9)
    c0 = counters(w.pid)
    time.sleep(secs)
    w.windows.append(("off", None, t0, now_ns(), {"ctr": rates(c0, counters(w.pid))}))


def read_report(path, pid, secs, extra):
    """gpuprobe's own figures for the window from its --json lines."""
    with open(path) as f:
        for line in f:
            if not line.startswith('{"mode"'):
                continue
            r = json.loads(line)
            ps = [x for x in r.get("processes", []) if x.get("pid") == pid]
            if not ps:
                continue
            if r["mode"] == "overhead" and ps[0]["probe_seconds_estimate"] is not None:
                extra["estimate_pct"] = 100 * ps[0]["probe_seconds_estimate"] / secs
            elif r["mode"] == "budget":
                extra["budget_pct"] = ps[0]["overhead_pct_estimate"]
                extra["fraction"] = ps[0].get("fraction", 1.0)
            elif r["mode"] == "cudatrace":
                extra["launches"] = ps[0]["launches"]
                extra["interval"] = (ps[0].get("sampling") or {}).get("intervals", {}).get("launches")


BUDGET_EVENT = re.compile(r"budget: (attach begins|window open|window closed|link closed) at (\d+)")
BUDGET_PERIOD = re.compile(r"budget: period .* PID (\d+) took (\d+) hits (?:\([^)]*\))?, (\d+) strays")
# the period's length, for the span the budget's account (and so its estimate) covers
BUDGET_PERIOD_T = re.compile(r"budget: period ([\d.]+) ms, window [\d.]+ ms: PID (\d+) took")
BUDGET_KINDS = {"attach begins": "attach", "window open": "open", "window closed": "close", "link closed": "gone"}


def budget_line(line, pid, bw):
    """gpuprobe -v's budget lines: when links began to go in, windows opened and closed and
    links were gone (src/core/budget.c), and the hits and strays the process took."""
    m = BUDGET_EVENT.search(line)
    if m:
        bw.setdefault(BUDGET_KINDS[m.group(1)], []).append(int(m.group(2)))
        return
    m = BUDGET_PERIOD_T.search(line)
    if m and int(m.group(2)) == pid:
        bw["acct_ms"] = bw.get("acct_ms", 0.0) + float(m.group(1))
    m = BUDGET_PERIOD.search(line)
    if m and int(m.group(1)) == pid:
        # logged as the window that ends the period opens
        bw.setdefault("periods", []).append((bw.get("open", [0])[-1], float(m.group(2)), float(m.group(3))))


def probed_spans(bw, t_end):
    """The parts of a window when breakpoints may be in: from an attach (or the first
    window's opening) to the last link closed after its window closed; the rest is clean.
    A window still open at the end runs to t_end."""
    ev = sorted([(t, k) for k in ("attach", "open", "close", "gone") for t in bw.get(k, [])])
    spans, start, closed, last = [], None, False, None
    for t, k in ev:
        if k == "attach" or (k == "open" and start is None):
            if start is not None:
                spans.append((start, last if closed and last else t))
            start, closed, last = t, False, None
        elif k == "close":
            closed = True
        elif k == "gone" and closed:
            last = t
    if start is not None:
        spans.append((start, last if closed and last else t_end))
    return spans


def gp_window(w, a, cfg, flags, secs, n):
    out = os.path.join(a.out, "logs", "%s-%s-%d.json" % (w.name, cfg, n))
    err = out[:-5] + ".err"
    budget = "--max-overhead" in flags
    cmd = [a.gp] + flags + a.gp_extra + (["-v"] if budget else []) + [
        "-p", str(w.pid), "--duration", "%.3f" % (a.lead + secs), "--json"]
    bw, snaps = {}, {}
    with open(out, "w") as fo, open(err, "w") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=subprocess.PIPE, text=True)
        t_on, timers = None, []
        for line in p.stderr:
            fe.write(line)
            if t_on is None and "gpuprobe: tracing" in line:
                t_on = now_ns()
                for key, at in (("c0", max(a.settle, a.lead)), ("c1", a.lead + secs - 0.05)):
                    timers.append(threading.Timer(at, lambda k=key: snaps.__setitem__(k, counters(w.pid, p.pid))))
                    timers[-1].start()
            if budget:
                budget_line(line, w.pid, bw)
        p.wait()
        for t in timers:
            t.cancel()
    if p.returncode or t_on is None:
        raise SystemExit("gpuprobe failed (exit %s): %s; see %s" % (p.returncode, " ".join(cmd), err))
    t_done = t_on + a.lead_ns + int(secs * 1e9)
    extra = dict(t_attached=t_on, t_measure=t_on + max(a.settle_ns, a.lead_ns), t_done=t_done)
    if "c0" in snaps and "c1" in snaps:
        extra["ctr"] = rates(snaps["c0"], snaps["c1"])
    if bw:
        t0 = extra["t_measure"]
        extra["probed"] = [s for s in probed_spans(bw, t_done) if s[1] > t0 and s[0] < t_done]
        per = [x for x in bw.get("periods", []) if t0 < x[0] <= t_done]
        extra["hits"], extra["strays"] = sum(x[1] for x in per), sum(x[2] for x in per)
        extra["budget_events"] = {k: bw[k] for k in ("attach", "open", "close", "gone") if k in bw}
        if bw.get("open") and bw.get("acct_ms"):
            # what the estimate covers: the budget's periods, from its first window (before
            # "tracing" is printed) to the last boundary; the loop's count from "tracing" to
            # the duration's end covered ~8 % less of a paced loop's launches on the H200
            # (2.18 s of periods against 2.0 s), and read a right estimate as 1.09x
            extra["acct_span"] = (bw["open"][0], bw["open"][0] + int(bw["acct_ms"] * 1e6))
    read_report(out, w.pid, a.lead + secs, extra)
    # every window's files are kept (about 9 KB a window, 5 MB for 500): a window whose count
    # misses its interval is replayed from its -v log (two misses in 357 bursts windows went
    # unexplained while only the first three rounds' were kept)
    extra["cmd"] = " ".join(cmd)
    extra["log"] = os.path.relpath(err, a.out)
    # probes in from "tracing" until the duration ran out (then the report and the detach);
    # with --lead the first seconds are left out (a budget's first periods plan from nothing)
    w.windows.append(("on", cfg, extra["t_measure"], t_done, extra))


def prof_window(w, a, secs):
    done = sum(1 for k, _ in read_steps(w.logpath)[1] if k == "prof_done")
    w.p.send_signal(signal.SIGUSR1)
    time.sleep(secs + a.settle_ns / 1e9)
    w.p.send_signal(signal.SIGUSR2)
    # the window is read back from the workload's own marks once this session's are in
    deadline = time.time() + 120
    while time.time() < deadline:
        _, prof = read_steps(w.logpath)
        if sum(1 for k, _ in prof if k == "prof_done") > done:
            break
        time.sleep(0.2)
    else:
        raise SystemExit("%s: torch.profiler's session did not end within 120 s" % w.name)
    on = [t for k, t in prof if k == "prof_on"][-1]
    off = [t for k, t in prof if k == "prof_off"][-1]
    w.windows.append(("on", "profiler", on + a.settle_ns, off, {}))
    w.windows.append(("gap", None, off, prof[-1][1] + a.settle_ns, {}))


def window_stats(w, steps):
    """(kind, config, mean, median, steps, extra, mean wall time) of every window's steps
    (those begun and ended in it); None where under 20 steps."""
    out, j = [], 0
    steps = sorted(steps)
    for kind, cfg, t0, t1, extra in w.windows:
        while j < len(steps) and steps[j][0] < t0:
            j += 1
        d, wall, k = [], [], j
        while k < len(steps) and steps[k][0] < t1:
            if steps[k][0] + steps[k][2] <= t1:
                d.append(steps[k][1])
                wall.append(steps[k][2])
            k += 1
        ok = len(d) >= 20
        out.append((kind, cfg, statistics.mean(d) if ok else None, statistics.median(d) if ok else None, len(d), extra,
                    statistics.mean(wall) if ok else None))
    return out


def split_steps(steps, extra, off_mean):
    """An on-window's steps under a budget, split: those that met a probed part of a period
    (breakpoints in: the window and its strays) and the clean ones (links closed). Each
    part's mean step over the off-windows', and the share of steps that met a probed part."""
    spans = extra["probed"]
    probed, clean = [], []
    for t, d, wall in steps:
        if t < extra["t_measure"] or t + wall > extra["t_done"]:
            continue
        (probed if any(a < t + wall and t < b for a, b in spans) else clean).append(d)
    out = {"n_probed": len(probed), "n_clean": len(clean)}
    if len(probed) >= 5:
        out["ratio_probed"] = statistics.mean(probed) / off_mean
    if len(clean) >= 20:
        out["ratio_clean"] = statistics.mean(clean) / off_mean
    return out


PROFILE_NS = 250000000  # the bins of the profile since the attach


def profile(steps, extra, off_mean):
    """An on-window's steps by time since gpuprobe said "tracing", in 250-ms bins from one
    bin before it to the window's end: {bin: [sum of step/off-mean, steps]}. How long the
    start's cost lasts, which --lead must outlast (bench/gpu/results-inproc-h200.md)."""
    out = {}
    t0 = extra["t_attached"]
    for t, d, wall in steps:
        if t >= t0 - PROFILE_NS and t + wall <= extra["t_done"]:
            b = out.setdefault(str((t - t0) // PROFILE_NS), [0.0, 0])
            b[0] += d / off_mean
            b[1] += 1
    return out


def neighbours(st, i):
    """The measured off-windows before and after window i of window_stats() (None where none)."""
    return (next((x for x in reversed(st[:i]) if x[0] == "off" and x[2]), None),
            next((x for x in st[i + 1:] if x[0] == "off" and x[2]), None))


def summarize(w, steps, canaries=None):
    """Per on-window: its mean (and median) step time over the mean of its neighbouring
    off-windows' means (medians); the same of each canary's pieces (canary.c) beside it."""
    st = window_stats(w, steps)
    cst = {k: window_stats(w, v) for k, v in (canaries or {}).items()}
    res = {}
    for i, (kind, cfg, mean, med, n, extra, _) in enumerate(st):
        if kind != "on" or mean is None:
            continue
        before, after = neighbours(st, i)
        if not before or not after:
            continue
        off_mean = (before[2] + after[2]) / 2
        row = dict(ratio_mean=mean / off_mean, ratio=med / ((before[3] + after[3]) / 2),
                   on_ms=mean / 1e6, steps=n, **extra)
        off_wall = (before[6] + after[6]) / 2
        if off_wall > 1.001 * off_mean:
            # a paced or bursty loop's: the extra time it worked as a share of its wall time
            row["ratio_wall_share"] = 1 + (mean - off_mean) / off_wall
        bc, ac = before[5].get("ctr"), after[5].get("ctr")
        if bc and ac:
            row["ctr_off"] = {k: (bc[k] + ac[k]) / 2 for k in bc if k in ac}
        if "probed" in extra:
            row.update(split_steps(steps, extra, off_mean))
        if "t_attached" in extra:
            row["profile"] = profile(steps, extra, off_mean)
        for k, cs in cst.items():
            b, f = neighbours(cs, i)
            if b and f and cs[i][2]:
                row["canary_" + k] = cs[i][2] / ((b[2] + f[2]) / 2)
        if w.launches and "t_attached" in extra:
            # the loop's own count of its launches while gpuprobe was attached (steps wholly
            # inside; the report is made as the duration runs out: +-2 steps of each thread)
            row["true_launches"] = w.launches * sum(
                1 for t, d, wall in steps if extra["t_attached"] <= t and t + wall <= extra["t_done"])
            row["true_tol"] = 2 * w.launches * w.threads
            if "acct_span" in extra:
                a0, a1 = extra["acct_span"]
                row["true_launches_acct"] = w.launches * sum(1 for t, d, wall in steps if a0 <= t and t + wall <= a1)
        if "log" in extra:
            row["log"] = extra["log"]
        res.setdefault(cfg, []).append(row)
    return res


def enough(res, cfgs, min_pairs, width):
    for cfg, _ in cfgs:
        r = [x["ratio_mean"] for x in res.get(cfg, [])]
        if len(r) < min_pairs:
            return False
        _, lo, hi, _ = hl_ci(r)
        if (hi - lo) * 100 >= width:
            return False
    return True


def progress(res, cfgs):
    out = []
    for c, _ in cfgs:
        if res.get(c):
            est, lo, hi, _ = hl_ci([x["ratio_mean"] for x in res[c]])
            out.append("%s %+.2f %% (%+.2f … %+.2f, %d)" % (c, 100 * (est - 1), 100 * (lo - 1), 100 * (hi - 1), len(res[c])))
    return "  ".join(out)


def run_workload(a, name, argv, env, secs, cap, launches=0):
    path = os.path.join(a.out, "logs", "%s.steps" % name)
    w = Workload(name, argv, env, path, launches)
    cfgs = [c for c in CONFIGS[name] if selected(a, c[0], name)]
    t_end = time.time() + cap
    log("== %s: PID %d, windows of %.2f s, until every interval is under %.1f points or %d s" %
        (name, w.pid, secs, a.width, cap))
    canary = None
    try:
        if a.canary:  # inside the try: the workload is stopped if the canary cannot start
            try:
                canary = subprocess.Popen([a.canary, os.path.join(a.out, "logs", "canary"), "%d" % (cap + 120)],
                                          stdout=subprocess.PIPE, text=True)
            except OSError as e:
                raise SystemExit("bench/gpu/inproc: cannot run the canary %s: %s" % (a.canary, e.strerror))
            if not canary.stdout.readline().startswith("READY"):
                raise SystemExit("bench/gpu/inproc: the canary %s did not start" % a.canary)
        time.sleep(2)
        off_window(w, a, secs)
        n = 0
        rng = random.Random(16)
        while time.time() < t_end:
            order = cfgs[:]
            rng.shuffle(order)
            for cfg, flags in order:
                if flags is None:
                    prof_window(w, a, secs)
                else:
                    gp_window(w, a, cfg, flags, secs, n)
                off_window(w, a, secs)
            n += 1
            if n % 10 == 0 or time.time() >= t_end:
                res = summarize(w, read_steps(path)[0])
                log("  round %d: %s" % (n, progress(res, cfgs)))
                if enough(res, cfgs, a.min_pairs, a.width):
                    break
    finally:
        w.stop()
        if canary:
            canary.terminate()
            canary.wait()
    steps, _ = read_steps(path)
    canaries = {}
    if canary:
        canaries = {k: read_steps(os.path.join(a.out, "logs", "canary." + k))[0] for k in ("compute", "wake")}
    return summarize(w, steps, canaries)


def budget_pct(cfg):
    """The --max-overhead P of a configuration (None: no budget)."""
    for name in CONFIGS.values():
        for c, flags in name:
            if c == cfg and flags and "--max-overhead" in flags:
                return float(flags[flags.index("--max-overhead") + 1])
    return None


def under_budget(v, pct):
    """Whether the slowdown is shown under the budget: the 95 % interval's upper end under P %
    (issue 29 item 3), and, where the estimate is under P, about how many windows at this
    spread would put the upper end there (the window means wander by 2-3 % of a step on the
    H200 at every window length from 0.5 to 4 s, so the interval narrows only with the number
    of windows, as 1/sqrt(n)): the Hodges-Lehmann estimate's spread taken as 1.05 x the ratios'
    robust spread (1.4826 x their MAD) over sqrt(n)."""
    est, lo, hi, _ = hl_ci(v)
    held = hi - 1 < pct / 100
    med = statistics.median(v)
    s = 1.4826 * statistics.median(abs(x - med) for x in v)
    room = pct / 100 - (est - 1)
    if held:
        more = "shown"
    elif room <= 0 or s <= 0:
        more = "not shown: the estimate itself is at or over P"
    else:
        more = "not shown: about %d windows at this spread would show it" % math.ceil((1.96 * 1.05 * s / room) ** 2)
    return "upper end %+.2f %% against P = %g %%: %s" % (100 * (hi - 1), pct, more)


def table(a, name, res):
    out = ["| configuration | windows | mean step, on (ms) | overhead: ratio of window means, Hodges-Lehmann | its 95 % interval (coverage) | ratio of window medians: median | its 95 % interval (coverage) | gpuprobe's own estimate | budget's estimate, sampled share |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    checks = []
    for cfg, _ in CONFIGS[name]:
        rs = res.get(cfg, [])
        for x in rs:
            if "true_launches" in x and "launches" in x:
                iv = x.get("interval")
                tol = x.get("true_tol", 2000)
                # against the loop's count over the span the budget's account covers, where known
                tl = x.get("true_launches_acct", x["true_launches"])
                checks.append("%s: %d counted or estimated, %d by the loop (+-%d)%s%s" % (
                    cfg, x["launches"], tl, tol,
                    "" if "true_launches_acct" not in x else " over the budget's periods (%d from \"tracing\" to the"
                    " duration's end)" % x["true_launches"],
                    "" if not iv else ", interval [%s, %s]%s" % (iv[0], iv[1], "" if (
                        iv[0] - tol <= tl <= (iv[1] if iv[1] is not None else 1e18) + tol) else
                        " MISSES IT" + (" (its log: %s)" % x["log"] if "log" in x else ""))))
        if not rs and not selected(a, cfg, name):
            continue
        if not rs:
            out.append("| %s | 0 | — | — | — | — | — | — | — |" % LABELS[cfg])
            continue
        est, lo, hi, cov = hl_ci([x["ratio_mean"] for x in rs])
        r = [x["ratio"] for x in rs]
        mlo, mhi, mcov = median_ci(r)
        gest = [x["estimate_pct"] for x in rs if "estimate_pct" in x]
        bud = [x["budget_pct"] for x in rs if "budget_pct" in x]
        frac = [x["fraction"] for x in rs if "fraction" in x]
        out.append("| %s | %d | %.4g | %+.2f %% | %+.2f … %+.2f %% (%.1f %%) | %+.2f %% | %+.2f … %+.2f %% (%.1f %%) | %s | %s |" % (
            LABELS[cfg], len(rs), statistics.median(x["on_ms"] for x in rs), 100 * (est - 1),
            100 * (lo - 1), 100 * (hi - 1), 100 * cov, 100 * (statistics.median(r) - 1),
            100 * (mlo - 1), 100 * (mhi - 1), 100 * mcov,
            "%.2f %%" % statistics.median(gest) if gest else "—",
            "%.2f %%, %.3f" % (statistics.median(bud), statistics.median(frac)) if bud else "—"))
    for cfg, _ in CONFIGS[name]:
        pct = budget_pct(cfg)
        v = [x["ratio_mean"] for x in res.get(cfg, [])]
        if pct is not None and len(v) >= 2:
            out += ["", "%s, the slowdown of the time worked under the budget: %s" % (LABELS[cfg], under_budget(v, pct))]
        sh = [x["ratio_wall_share"] for x in res.get(cfg, []) if "ratio_wall_share" in x]
        if pct is not None and len(sh) >= 2:
            out += ["", "%s, the same as a share of the wall time under the budget: %s" % (
                LABELS[cfg], under_budget(sh, pct))]
        if sh:
            est, lo, hi, _ = hl_ci(sh)
            out += ["", "%s: the step's extra time worked as a share of its wall time (pacing waits and sleeps "
                    "included: what the loop's time pays, not what a launch's work costs): %+.2f %% (%+.2f … %+.2f %%)" % (
                        LABELS[cfg], 100 * (est - 1), 100 * (lo - 1), 100 * (hi - 1))]
    if checks:
        miss = [c for c in checks if "MISSES IT" in c]
        out += ["", "Launches per window, gpuprobe's against the loop's own count (%d windows, %d missed):" % (
            len(checks), len(miss)), ""] + ["- " + c for c in (checks[:6] + [c for c in miss if c not in checks[:6]])]
    return out


CTRS = [("main_minflt", "main thread's minor faults /s", 1), ("main_nvcsw", "its preemptions /s", 1),
        ("main_wait_s", "its wait for a CPU (ms/s)", 1e3), ("main_stime_s", "its system time (ms/s)", 1e3),
        ("main_run_s", "its time on a CPU (ms/s)", 1e3),
        ("proc_stime_s", "the process's system time (ms/s)", 1e3), ("proc_minflt", "its minor faults /s", 1),
        ("proc_run_s", "its threads' time on a CPU (ms/s)", 1e3), ("proc_wait_s", "their wait for a CPU (ms/s)", 1e3),
        ("gp_cpu_s", "gpuprobe's CPU time (ms/s)", 1e3)]


def diag_table(res):
    """Where the cost is: under a budget, the steps that met a probed part of a period
    against the clean ones (the price of a call in the traced process itself), and what
    the kernel counted of the workload and of gpuprobe, on-windows against their off ones."""
    out = []
    for cfg, rs in res.items():
        sp = [x for x in rs if "ratio_clean" in x and "ratio_probed" in x]
        if sp:
            ec, lc, hc, _ = hl_ci([x["ratio_clean"] for x in sp])
            ep, lp, hp, _ = hl_ci([x["ratio_probed"] for x in sp])
            share = statistics.mean(x["n_probed"] / (x["n_probed"] + x["n_clean"]) for x in sp)
            calls = sum(x.get("hits", 0) + x.get("strays", 0) for x in sp)
            extra = sum((x["ratio_probed"] - 1) * x["on_ms"] / x["ratio_mean"] * 1e-3 * x["n_probed"] for x in sp)
            out += ["%s, %d windows: steps that met breakpoints (%.1f %% of them) %+.2f %% (%+.2f … %+.2f); "
                    "clean steps %+.2f %% (%+.2f … %+.2f); the probed steps' extra time over the sampled "
                    "calls and strays they took: %s a call" % (
                        LABELS[cfg], len(sp), 100 * share, 100 * (ep - 1), 100 * (lp - 1), 100 * (hp - 1),
                        100 * (ec - 1), 100 * (lc - 1), 100 * (hc - 1),
                        "%.2f us" % (extra / calls * 1e6) if calls else "—"), ""]
        pr = {}
        for x in rs:
            for k, (v, n) in x.get("profile", {}).items():
                pr.setdefault(int(k), [0.0, 0])
                pr[int(k)][0] += v
                pr[int(k)][1] += n
        if pr:
            out += ["%s, steps by time since the attach (mean step over the off-windows'): %s" % (
                LABELS[cfg], ", ".join("%+.2f s %+.2f %%" % (k * PROFILE_NS / 1e9, 100 * (pr[k][0] / pr[k][1] - 1))
                                       for k in sorted(pr) if pr[k][1] >= 100)), ""]
        cr = [x for x in rs if "ctr" in x and "ctr_off" in x]
        if cr:
            out += ["%s, %d windows, on against off:" % (LABELS[cfg], len(cr)), ""]
            for k, label, scale in CTRS:
                on = [x["ctr"][k] for x in cr if k in x["ctr"]]
                off = [x["ctr_off"][k] for x in cr if k in x["ctr_off"]]
                if on:
                    out.append("- %s: %.3g%s" % (label, scale * statistics.mean(on), " against %.3g" % (
                        scale * statistics.mean(off)) if off else ""))
            out.append("")
        for k, what in (("compute", "a fixed piece of arithmetic"), ("wake", "two cross-thread wake-ups")):
            v = [x["canary_" + k] for x in rs if "canary_" + k in x]
            if len(v) >= 2:
                e, lo, hi, _ = hl_ci(v)
                out += ["%s, canary (bench/gpu/canary.c), %s: %+.2f %% (%+.2f … %+.2f), %d windows" % (
                    LABELS[cfg], what, 100 * (e - 1), 100 * (lo - 1), 100 * (hi - 1), len(v)), ""]
    return out


def describe(a, secs):
    gpu = "none (GPU_INPROC_MOCK=1: the stand-in driver)" if a.mock else (subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
        capture_output=True, text=True).stdout.strip().splitlines() or ["?"])[0]
    ver = subprocess.run([a.gp, "--version"], capture_output=True, text=True).stdout.strip()
    return dict(machine="%s, %d CPUs" % (os.uname()[2], os.cpu_count()), gpu=gpu, gpuprobe="%s (%s)" % (a.gp, ver),
                args=" ".join(sys.argv[1:]), seconds=round(secs))


def report(a, results, metas):
    md = ["# gpuprobe's overhead inside one process (bench/gpu/inproc.py)", ""]
    for m in metas:
        md.append("- run: %s; gpu %s; %s; `%s`; %d s" % (m["machine"], m["gpu"], m["gpuprobe"], m["args"], m["seconds"]))
    md += ["- method: alternating windows in one process (off, each configuration in a shuffled order, off between); "
           "each on-window's mean (median) step time over the mean of its neighbouring off-windows'; the figure is "
           "the Hodges-Lehmann estimate of the ratios of means with the Wilcoxon signed-rank interval, beside the "
           "median of the ratios of medians with its order-statistic interval", ""]
    for name in ORDER:
        if results.get(name):
            md += ["## " + TITLES[name], ""] + table(a, name, results[name]) + [""] + diag_table(results[name])
    return md


def merge(paths):
    results, metas = {}, []
    for p in paths:
        with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
            raw = json.load(f)
        metas += raw.get("meta", [])
        for name, cfgs in raw["results"].items():
            for cfg, rows in cfgs.items():
                results.setdefault(name, {}).setdefault(cfg, []).extend(rows)
    return results, metas


def measure(a):
    env = dict(os.environ)
    t0 = time.time()
    results = {}
    torch_log = lambda n: [a.python, os.path.join(ROOT, "bench", "gpu", "torch_inproc.py"),
                           os.path.join(a.out, "logs", "%s.steps" % n), "--seconds", "3600"] + (["--mock"] if a.mock else []) + (
                               ["--single-thread"] if a.torch_single_thread else [])
    runs = {
        "launch": ([a.launch_bin, os.path.join(a.out, "logs", "launch.steps"), "1000", "3600"], a.launch_window,
                   a.launch_cap, 1000),
        "torch": (torch_log("torch"), a.torch_window, a.torch_cap, 0),
        "profiler": (torch_log("profiler"), a.profiler_window, a.profiler_cap, 0),
    }
    for p, (opts, _, _) in PATTERNS.items():
        runs[p] = ([a.launch_bin, os.path.join(a.out, "logs", "%s.steps" % p), str(PATTERN_K), "3600"] + opts,
                   a.pattern_window, a.pattern_cap, PATTERN_K)
    for name in a.workloads:
        argv, secs, cap, launches = runs[name]
        if any(selected(a, c, name) for c, _ in CONFIGS[name]):
            results[name] = run_workload(a, name, argv, env, secs, cap, launches)
    return results, [describe(a, time.time() - t0)]


def pack_logs(out):
    """The per-window files and step logs into one logs.tgz beside the results: the device
    tool brings back a limited number of files, and a run's dozens of logs crowded out
    another run's inproc_raw.json (2026-11-23)."""
    logs = os.path.join(out, "logs")
    with tarfile.open(os.path.join(out, "logs.tgz"), "w:gz") as t:
        t.add(logs, arcname="logs")
    shutil.rmtree(logs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gp")
    ap.add_argument("--launch-bin")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mock", action="store_true", help="the stand-in driver and a sleeping 'PyTorch'")
    ap.add_argument("--libcuda", help="probe this file (mock runs)")
    ap.add_argument("--workloads", default="launch,torch,profiler",
                    help="which of launch,torch,profiler and the patterns %s ('patterns': all five)" % ",".join(PATTERNS))
    ap.add_argument("--configs", default="",
                    help="only these configurations (%s)" % ",".join(LABELS))
    ap.add_argument("--width", type=float, default=1.0, help="stop once every interval is narrower (points)")
    ap.add_argument("--min-pairs", type=int, default=8)
    ap.add_argument("--settle", type=float, default=0.15, help="seconds left out after each change")
    ap.add_argument("--lead", type=float, default=0.0,
                    help="seconds gpuprobe is attached before an on-window's measure begins (steady state)")
    ap.add_argument("--launch-window", type=float, default=1.5)
    ap.add_argument("--torch-window", type=float, default=0.6)
    ap.add_argument("--profiler-window", type=float, default=2.0)
    ap.add_argument("--launch-cap", type=float, default=90)
    ap.add_argument("--torch-cap", type=float, default=180)
    ap.add_argument("--profiler-cap", type=float, default=80)
    ap.add_argument("--pattern-window", type=float, default=1.0, help="window length on each launch-* pattern")
    ap.add_argument("--pattern-cap", type=float, default=90, help="seconds at most on each launch-* pattern")
    ap.add_argument("--torch-single-thread", action="store_true",
                    help="the PyTorch loop runs backward on the thread that calls it (torch_inproc.py --single-thread)")
    ap.add_argument("--canary", help="bench/gpu/canary.c's binary: run it beside each workload (the machine's own slowdowns)")
    ap.add_argument("--merge", nargs="+", metavar="RAW", help="no run: one table from these inproc_raw.json files")
    a = ap.parse_args()
    a.workloads = [y for x in a.workloads.split(",") if x for y in (PATTERNS if x == "patterns" else [x])]
    a.configs = [x for x in a.configs.split(",") if x]
    a.settle_ns = int(a.settle * 1e9)
    a.lead_ns = int(a.lead * 1e9)
    bad = [x for x in a.workloads if x not in CONFIGS] + [x for x in a.configs if x not in LABELS]
    if bad:
        ap.error("unknown workload or configuration: " + ", ".join(bad))
    if a.lead < 0:
        ap.error("--lead must be 0 or more seconds")
    os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)
    if a.merge:
        results, metas = merge(a.merge)
        if not a.configs:
            # what the merged runs measured (each one's --configs; all when one named none):
            # a merge of --configs three_budget runs asked for three_budget5 too, and exited 1
            asked = [re.search(r"--configs (\S+)", m.get("args", "")) for m in metas]
            if metas and all(asked):
                a.configs = sorted({c for m in asked for c in m.group(1).split(",") if c})
    else:
        if not a.gp or not a.launch_bin:
            ap.error("--gp and --launch-bin are needed to measure")
        a.gp_extra = ["--libcuda", a.libcuda] if a.libcuda else []
        results, metas = measure(a)
        with open(os.path.join(a.out, "inproc_raw.json"), "w") as f:
            json.dump(dict(meta=metas, results=results), f, indent=1)
    md = report(a, results, metas)
    text = "\n".join(md)
    with open(os.path.join(a.out, "inproc.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    if not a.merge:
        pack_logs(a.out)
    # the checks: every configuration measured; every interval holds the loop's own count
    bad, sec = [], ""
    for l in md:
        if l.startswith("## "):
            sec = next((n for n in results if TITLES[n] == l[3:]), l[3:])
        elif "MISSES IT" in l:
            bad.append("%s, %s" % (sec, l.lstrip("- ")))
    bad += ["%s %s: no window" % (n, c) for n in results for c, _ in CONFIGS[n]
            if selected(a, c, n) and not results[n].get(c)]
    for b in bad:
        print("bench/gpu/inproc: check failed: " + b.lstrip("- "), file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
