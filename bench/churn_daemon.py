#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The daemon under process churn (issue 30): short processes of the stand-in
(tests/apps/rate_app --phases 100000:10 --alloc-every 10 --copy-every 20: 1,000 launches,
102 allocations and frees, 50 copies each), 20 at a time, started at stepped rates by
tests/apps/spawn_app, against one `gpuprobe daemon --memleak --cudatrace --bandwidth-util
--max-overhead 100`. For each step: the rate achieved, each family's total on /metrics
against the processes' truth, and the drops counted (gpuprobe_events_dropped_total).
The highest rate held exactly, and the first rate with counted losses, go to
docs/benchmarks.md (bench/run.py's `churn_daemon` section); alone: `python3 bench/churn_daemon.py`
prints the table. Environment: BENCH_GPUPROBE (the binary, default .output/gpuprobe), BENCH_CHURN_N (processes a step, 400), BENCH_CHURN_RATES
(comma-separated starts a second, 0 = as fast as 20 at a time go; default 50,100,200,400,800,0).
"""
import json
import os
import re
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, ".output")
GPUPROBE = os.environ.get("BENCH_GPUPROBE", os.path.join(OUT, "gpuprobe"))
FAKE_DIR = os.path.join(OUT, "fakecuda")
RATE = os.path.join(OUT, "apps", "rate_app")
SPAWN = os.path.join(OUT, "apps", "spawn_app")
WORK = [RATE, "--phases", "100000:10", "--alloc-every", "10", "--copy-every", "20"]
FAMS = ("gpuprobe_cuda_alloc_calls_total", "gpuprobe_cuda_free_calls_total",
        "gpuprobe_cuda_kernel_launches_total", "gpuprobe_cuda_memcpy_calls_total")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')


def total(text, name, comm=None):
    s = 0.0
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and m.group(1) == name and (comm is None or f'comm="{comm}"' in (m.group(3) or "")):
            s += float(m.group(4))
    return s


def scrape(port):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def settled(port):
    prev = None
    for _ in range(100):
        t = scrape(port)
        now = [total(t, f, "rate_app") for f in FAMS]
        if now == prev:
            return t
        prev = now
        time.sleep(0.5)
    return t


def truth(stderr):
    for line in reversed(stderr.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no truth line: " + stderr[-500:])


def measure(results, log=print):
    n = int(os.environ.get("BENCH_CHURN_N", "400"))
    rates = [float(x) for x in os.environ.get("BENCH_CHURN_RATES", "50,100,200,400,800,0").split(",")]
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DIR)
    r = subprocess.run(WORK, env=env, capture_output=True, text=True, check=True)
    t = truth(r.stderr)
    one = dict(zip(FAMS, (t["allocs"] + 2, t["frees"] + 2, t["launches"], t["copies"])))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    d = subprocess.Popen([GPUPROBE, "daemon", "--memleak", "--cudatrace", "--bandwidth-util", "--max-overhead", "100",
                          "--libcuda", os.path.join(FAKE_DIR, "libcuda.so.1"), "--listen", f"127.0.0.1:{port}"],
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    rows = []
    try:
        for line in d.stderr:
            if "listening on" in line:
                break
        for rate in rates:
            base = settled(port)
            r = subprocess.run([SPAWN, "--n", str(n), "--jobs", "20", "--rate", str(rate), "--", *WORK],
                               env=env, capture_output=True, text=True, timeout=600)
            sp = truth(r.stderr)
            text = settled(port)
            got = {f: total(text, f, "rate_app") - total(base, f, "rate_app") for f in FAMS}
            drops = total(text, "gpuprobe_events_dropped_total") - total(base, "gpuprobe_events_dropped_total")
            want = {f: sp["exited_ok"] * v for f, v in one.items()}
            exact = all(got[f] == want[f] for f in FAMS)
            lost = {f: want[f] - got[f] for f in FAMS}
            row = dict(asked=rate, achieved=sp["rate"], n=sp["started"], ok=sp["exited_ok"], got=got, want=want,
                       drops=drops, exact=exact, lost_uncounted=any(lost[f] > drops or lost[f] < 0 for f in FAMS))
            rows.append(row)
            log("  churn: asked %s/s, achieved %.0f/s: %s, drops %d" % (
                rate or "max", sp["rate"], "exact" if exact else
                ", ".join("%s %d of %d" % (f[14:], got[f], want[f]) for f in FAMS if got[f] != want[f]), drops))
    finally:
        d.terminate()
        try:
            d.wait(timeout=20)
        except subprocess.TimeoutExpired:
            d.kill()
    held = [r["achieved"] for r in rows if r["exact"]]
    lossy = [r["achieved"] for r in rows if not r["exact"]]
    results["churn_daemon"] = dict(n=n, jobs=20, rows=rows, per_process=one, nproc=os.cpu_count(),
                            held_exactly=max(held) if held else None,
                            losses_from=min(lossy) if lossy else None,
                            uncounted=any(r["lost_uncounted"] for r in rows))
    return results["churn_daemon"]


def doc_lines(results):
    c = results.get("churn_daemon")
    if not c:
        return []
    L = ["## Churn: the daemon under short processes (issue 30)", "",
         "`bench/churn_daemon.py`: %d short processes a step, 20 at a time, started by tests/apps/spawn_app at the "
         "asked rate (max: as fast as 20 at a time go) on %s CPUs, each `rate_app --phases 100000:10 --alloc-every 10 "
         "--copy-every 20` (per process: %s); one `gpuprobe daemon --memleak --cudatrace --bandwidth-util "
         "--max-overhead 100` (default series, comm and cgroup) scraped after each step. *Exact*: each family's "
         "total on /metrics equals the processes' truth; otherwise the shortfall and the drops counted." % (
             c["n"], c["nproc"], ", ".join("%s %d" % (f[14:], v) for f, v in c["per_process"].items())), "",
         "| asked /s | achieved /s | result | drops counted |", "|---|---|---|---|"]
    for r in c["rows"]:
        res = "exact" if r["exact"] else ", ".join("%s %d of %d" % (f[14:], r["got"][f], r["want"][f])
                                                   for f in r["want"] if r["got"][f] != r["want"][f])
        L.append("| %s | %.0f | %s | %d |" % (("%g" % r["asked"]) if r["asked"] else "max", r["achieved"], res, r["drops"]))
    L.append("")
    L.append("Highest rate held exactly: **%s**; counted losses begin at: **%s**%s." % (
        "%.0f processes/s" % c["held_exactly"] if c["held_exactly"] else "none",
        "%.0f processes/s" % c["losses_from"] if c["losses_from"] else
        "no loss up to the highest rate this machine started (%.0f/s)" % max(r["achieved"] for r in c["rows"]),
        "; **a loss was not counted**" if c["uncounted"] else ""))
    L.append("")
    return L


if __name__ == "__main__":
    res = {}
    measure(res, log=lambda m: print(m, file=sys.stderr, flush=True))
    print("\n".join(doc_lines(res)))
