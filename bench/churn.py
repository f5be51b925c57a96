#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Churn: many short CUDA processes under one node-wide gpuprobe, each process's truth
compared with what gpuprobe reported of it.

Starts `gpuprobe --json MODES... [-i N]` on the stand-in driver, then N launches of
`rate_app --phases 100000:10 --alloc-every 10 --copy-every 20` (1,000 launches, 102
allocations and frees with its two copy buffers, 50 copies of 64 KiB: known by
construction), PAR at a time, paced to RATE starts a second; after the last has exited,
SIGINT, and every report (exit, interval, final) is read back.

Per process: its last listing must say exited, with the exact counts; a process missing
or with wrong counts is a loss, and a loss is "counted" only when the drop counters of
the reports add up to at least what was lost. Used by tests/integration/test_churn.py
and by `bench/run.py --only churn` (docs/benchmarks.md). Prints one JSON object.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import docsection  # bench/docsection.py: this script's part of docs/benchmarks.md

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, ".output")
GPUPROBE = os.path.join(OUT, "gpuprobe")
FAKECUDA = os.path.join(OUT, "fakecuda", "libcuda.so.1")
RATE_APP = os.path.join(OUT, "apps", "rate_app")
APP_ARGS = ["--phases", "100000:10", "--alloc-every", "10", "--copy-every", "20"]
# rate_app's truth for APP_ARGS (its own JSON line says the same: launches, allocs + the two
# copy buffers, copies, copy_bytes)
TRUTH = {"launches": 1000, "allocs": 102, "frees": 102, "copies": 50, "copy_bytes": 50 * 65536}


def counts(mode, p):
    """What a report says of one process, in TRUTH's names."""
    if mode == "memleak":
        return {"allocs": p["allocs_total"], "frees": p["frees_total"]}
    if mode == "cudatrace":
        return {"launches": p["launches"]}
    if mode == "bandwidth":
        t = [x for x in p.get("transfers", []) if x.get("direction") == "H2D"]
        return {"copies": sum(x["copies"] for x in t), "copy_bytes": sum(x["bytes"] for x in t)}
    return {}


def drops_of(r):
    return sum(v for v in r.get("drops", {}).values() if isinstance(v, int))


def churn(n, par, rate, modes, interval=None, extra=(), settle=None, timeout=600):
    out = tempfile.TemporaryFile(mode="w+")
    err = tempfile.TemporaryFile(mode="w+")
    args = [GPUPROBE, "--json", "--libcuda", FAKECUDA] + ["--" + m for m in modes] + list(extra)
    if interval:
        args += ["-i", str(interval)]
    g = subprocess.Popen(args, stdout=out, stderr=err, start_new_session=True)
    res = {"n": n, "par": par, "rate": rate, "modes": modes, "interval": interval}
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            err.seek(0)
            if "gpuprobe: tracing" in err.read():
                break
            if g.poll() is not None:
                err.seek(0)
                raise RuntimeError(f"gpuprobe exited {g.returncode}: {err.read()[-2000:]}")
            time.sleep(0.05)
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(FAKECUDA))
        devnull = os.open(os.devnull, os.O_RDWR)
        fa = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
        starts = {}   # pid -> times started (a PID reused within the run counts twice)
        bad_exit = 0
        running = 0
        t0 = time.monotonic()
        stop_at = t0 + timeout
        for i in range(n):
            due = t0 + i / rate
            while running >= par or time.monotonic() < due:
                if running >= par:
                    _, st = os.waitpid(-1, 0)
                    running -= 1
                    bad_exit += st != 0
                else:
                    time.sleep(max(0.0, min(due - time.monotonic(), 0.005)))
                if time.monotonic() > stop_at:
                    raise RuntimeError("churn timed out")
            pid = os.posix_spawn(RATE_APP, [RATE_APP] + APP_ARGS, env, file_actions=fa)
            starts[pid] = starts.get(pid, 0) + 1
            running += 1
        while running:
            _, st = os.waitpid(-1, 0)
            running -= 1
            bad_exit += st != 0
        elapsed = time.monotonic() - t0
        os.close(devnull)
        res["achieved_rate"] = round(n / elapsed, 1)
        res["app_failures"] = bad_exit
        # the last exits' records, and an interval report after them
        time.sleep(settle if settle is not None else (2.5 * interval if interval else 0.5))
        t_sig = time.monotonic()
        g.send_signal(signal.SIGINT)
        g.wait(timeout=120)
        res["stop_s"] = round(time.monotonic() - t_sig, 3)
        res["gpuprobe_exit"] = g.returncode
    finally:
        if g.poll() is None:
            os.killpg(g.pid, signal.SIGKILL)
            g.wait()
    out.seek(0)
    reps = [json.loads(l) for l in out if l.startswith("{")]
    err.seek(0)
    res["stderr_tail"] = err.read()[-600:]
    return judge(res, reps, starts, modes)


MODE_OF = {"memleak": "memleak", "cudatrace": "cudatrace", "bandwidth-util": "bandwidth"}


def judge(res, reps, starts, modes):
    ours = set(starts)
    res["modes_judged"] = {}
    for flag in modes:
        mode = MODE_OF.get(flag)
        if not mode:
            continue
        got = {}          # pid -> summed counts of its exited listings
        last = {}         # pid -> (exited, counts) of its last listing
        listed_exited = {}
        final_drops = 0
        for r in reps:
            if r.get("mode") != mode:
                continue
            if r.get("report") == "final":
                final_drops = drops_of(r)
            for p in r.get("processes", []):
                pid = p["pid"]
                if pid not in ours:
                    continue
                c = counts(mode, p)
                last[pid] = (p["exited"], c)
                # an exit report and the interval/final report after it list one record
                # twice: count a record once, by the report kind that saw it first
                if p["exited"] and r.get("report") in ("exit", "interval", "final"):
                    listed_exited.setdefault(pid, []).append((r.get("report"), c))
        want_keys = [k for k in TRUTH if k in counts(mode, _probe(mode))]
        missing = wrong = running = 0
        lost = {k: 0 for k in want_keys}
        extra = {k: 0 for k in want_keys}
        for pid, times in starts.items():
            want = {k: TRUTH[k] * times for k in want_keys}
            if pid not in last:
                missing += 1
                for k in want_keys:
                    lost[k] += want[k]
                continue
            if not last[pid][0]:
                running += 1
            # the record's totals: its exit report's (memleak, JSON) or its last exited listing
            seen = listed_exited.get(pid, [])
            exits = [c for kind, c in seen if kind == "exit"]
            if exits and times == 1:
                c = exits[-1]
            elif times == 1 and seen:
                c = seen[-1][1]
            else:
                c = last[pid][1]
            if c != want:
                wrong += 1
            for k in want_keys:
                d = want[k] - c.get(k, 0)
                if d > 0:
                    lost[k] += d
                else:
                    extra[k] += -d
        res["modes_judged"][mode] = {"processes": len(ours), "missing": missing, "wrong": wrong,
                                     "listed_running": running, "lost": lost, "extra": extra,
                                     "drops": final_drops}
    return res


def _probe(mode):
    if mode == "memleak":
        return {"allocs_total": 0, "frees_total": 0}
    if mode == "cudatrace":
        return {"launches": 0}
    return {"transfers": []}


def exact(res):
    return all(m["missing"] == 0 and m["wrong"] == 0 and m["listed_running"] == 0 and
               not any(m["extra"].values()) for m in res["modes_judged"].values())


def counted(res):
    """Every loss shows in a drop counter (and nothing is listed running, nothing added)."""
    return all(m["listed_running"] == 0 and not any(m["extra"].values()) and
               (sum(m["lost"].values()) == 0 or m["drops"] > 0) for m in res["modes_judged"].values())


BEGIN, END = "<!-- churn:begin -->", "<!-- churn:end -->"
LADDER = (50, 100, 200, 400)
CONFIGS = (("--stacks none, -i 1", ["--stacks", "none"], 1), ("--stacks fp", ["--stacks", "fp"], None),
           ("default stacks (dwarf), -i 1", [], 1))


def ladder(n=600):
    """Each configuration at each paced rate: what was reached, and whether it was exact."""
    rows = []
    for name, extra, interval in CONFIGS:
        for rate in LADDER:
            r = churn(n, 20, rate, ["memleak", "cudatrace", "bandwidth-util"], interval, extra)
            m = r["modes_judged"]
            rows.append({"config": name, "paced": rate, "reached": r["achieved_rate"], "exact": exact(r),
                         "counted": counted(r), "stop_s": r["stop_s"],
                         "lost_allocs": m["memleak"]["lost"]["allocs"], "lost_copies": m["bandwidth"]["lost"]["copies"],
                         "drops": sum(x["drops"] for x in m.values()),
                         "running_after_exit": sum(x["listed_running"] for x in m.values())})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def doc_lines(rows, n=600):
    L = [BEGIN, "## Churn (`bench/churn.py`, `make bench` section `churn`)", "",
         f"{n} processes of `rate_app --phases 100000:10 --alloc-every 10 --copy-every 20` (1,000 launches, "
         "102 allocations and frees, 50 copies of 64 KiB each), 20 at a time, paced to each rate, under one "
         "node-wide `gpuprobe --json --memleak --cudatrace --bandwidth-util`; every process's last listing "
         "compared with its truth. *Reached* is the rate the machine started them at (the pacing cannot "
         "beat the machine); *exact*: every process present, exited, with its exact counts; *counted*: "
         "what is missing shows in the drop counters, nothing listed running after its exit, nothing added "
         "to another process.", "",
         "| configuration | paced /s | reached /s | exact | counted | allocations lost | copies lost | drops | SIGINT to exit |",
         "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        L.append(f"| {r['config']} | {r['paced']} | {r['reached']} | {'yes' if r['exact'] else 'no'} | "
                 f"{'yes' if r['counted'] else 'no'} | {r['lost_allocs']} | {r['lost_copies']} | {r['drops']} | "
                 f"{r['stop_s']:.2f} s |")
    L.append("")
    for name, _, _ in CONFIGS:
        rs = [r for r in rows if r["config"] == name]
        held = [r["reached"] for r in rs if r["exact"]]
        lossy = [r for r in rs if not r["exact"]]
        L.append(f"- {name}: exact in {len(held)} of {len(rs)} runs, the fastest at "
                 f"{max(held) if held else '—'}/s; "
                 + ("losses in the runs at " + ", ".join(f"{r['reached']}/s ({r['drops']} drops counted"
                                                        f"{'' if r['counted'] else ', NOT all counted'})" for r in lossy)
                    if lossy else "no loss at any rate this machine reached") + ".")
    L += ["", "Machine: " + os.uname().release + f", {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at the end (shared: where every run was exact, the rates reached are the "
          "machine's limit, not gpuprobe's).", END]
    return L


def replace_doc(path, lines):
    docsection.replace(path, lines, BEGIN, END)


def section(path):
    return docsection.section(path, BEGIN, END)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--doc", help="run the rate ladder and write its section into this markdown file")
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--par", type=int, default=20)
    ap.add_argument("--rate", type=float, default=400)
    ap.add_argument("-i", "--interval", type=float)
    ap.add_argument("--modes", default="memleak,cudatrace,bandwidth-util")
    ap.add_argument("--extra", default="", help="more gpuprobe arguments, space-separated")
    a = ap.parse_args()
    if a.doc:
        replace_doc(a.doc, doc_lines(ladder()))
        return 0
    res = churn(a.n, a.par, a.rate, a.modes.split(","), a.interval, a.extra.split())
    res["exact"] = exact(res)
    res["counted"] = counted(res)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
