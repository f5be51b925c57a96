#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""NVML's cost to the daemon (issue 33): the CPU time of its thread ("gpuprobe-nvml",
/proc/PID/task/TID/stat) per read round, and the daemon's whole CPU time with and without
NVML, on the stand-in libnvidia-ml.so.1 (tests/fakenvml) scripted with G GPUs and P
processes each (every process with an SM sample at each read, as a busy GPU gives).

What it measures is gpuprobe's side of a round (the calls, the process-list protocol, the
per-process weighting, the snapshot) plus the stand-in's own work (it stats its script at
every call: an upper bound of what the stand-in adds). The driver's time inside the real
library is the GPU machine's to measure (docs/validation.md: ~50 ms wall per round on the
H200, most of it waiting on the driver, not CPU). Used by `bench/run.py --only nvml`
(docs/benchmarks.md); prints one JSON object when run alone.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

import docsection  # bench/docsection.py: this script's part of docs/benchmarks.md
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, ".output")
GPUPROBE = os.path.join(OUT, "gpuprobe")
FAKECUDA_DIR = os.path.join(OUT, "fakecuda")
FAKENVML_DIR = os.path.join(OUT, "fakenvml")
BEGIN, END = "<!-- nvml:begin -->", "<!-- nvml:end -->"
# (GPUs, processes per GPU, --nvml-interval)
CASES = [(1, 4, 1.0), (8, 16, 1.0), (8, 64, 0.1)]
SECONDS = 20
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_s(path):
    """utime + stime of /proc/.../stat, in seconds (fields after the name's last ')')."""
    with open(path) as f:
        f_ = f.read()
    rest = f_[f_.rindex(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / TICK


def run_ns(path):
    """Time on a CPU in nanoseconds (schedstat's first field: finer than stat's ticks)."""
    with open(path) as f:
        return int(f.read().split()[0])


def nvml_tid(pid):
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == "gpuprobe-nvml":
                    return tid
        except OSError:
            pass
    return None


def metric(text, name):
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def one(gpus, per_gpu, interval, nvml=True, seconds=SECONDS):
    """The daemon (--memleak) for `seconds` with the stand-in: its thread's CPU per round."""
    procs = [subprocess.Popen(["sleep", str(seconds + 60)]) for _ in range(gpus * per_gpu)]
    script = tempfile.NamedTemporaryFile("w", prefix="gp-nvml-bench-", suffix=".script", delete=False)
    for g in range(gpus):
        script.write(f"gpu {g} util=90 memused={1 << 30} memtotal={80 << 30} power=500000 temp=60 "
                     f"ecc=0,0,0,0 remap=0,0,0,0 nvlink=1000,1000\n")
        for i in range(per_gpu):
            script.write(f"proc {g} {procs[g * per_gpu + i].pid} mem={64 << 20} sm={10 + i % 80} memutil=5\n")
    script.close()
    port = free_port()
    env = dict(os.environ, LD_LIBRARY_PATH=f"{FAKECUDA_DIR}:{FAKENVML_DIR}", FAKENVML_SCRIPT=script.name)
    args = [GPUPROBE, "daemon", "--memleak", "--listen", f"127.0.0.1:{port}", "--nvml-interval", str(interval)]
    if not nvml:
        args.append("--no-nvml")
    err = tempfile.TemporaryFile(mode="w+")
    d = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=err)
    res = dict(gpus=gpus, per_gpu=per_gpu, interval=interval, nvml=nvml)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            err.seek(0)
            if "listening on" in err.read():
                break
            if d.poll() is not None:
                raise RuntimeError("daemon exited %s" % d.returncode)
            time.sleep(0.05)
        time.sleep(2)  # past the start (calibration, attach)
        tid = nvml_tid(d.pid) if nvml else None
        if nvml and not tid:
            raise RuntimeError("no gpuprobe-nvml thread")
        t0, r0 = scrape(port), time.monotonic()
        c0 = cpu_s(f"/proc/{d.pid}/stat")
        n0 = run_ns(f"/proc/{d.pid}/task/{tid}/schedstat") / 1e9 if tid else 0
        time.sleep(seconds)
        c1 = cpu_s(f"/proc/{d.pid}/stat")
        n1 = run_ns(f"/proc/{d.pid}/task/{tid}/schedstat") / 1e9 if tid else 0
        t1, r1 = scrape(port), time.monotonic()
        wall = r1 - r0
        res["daemon_cpu_pct"] = 100 * (c1 - c0) / wall
        if nvml:
            rounds = metric(t1, "gpuprobe_nvml_reads_total") - metric(t0, "gpuprobe_nvml_reads_total")
            rs = metric(t1, "gpuprobe_nvml_read_seconds_total") - metric(t0, "gpuprobe_nvml_read_seconds_total")
            res.update(rounds=rounds, thread_cpu_s=n1 - n0, thread_cpu_pct=100 * (n1 - n0) / wall,
                       cpu_ms_per_round=1000 * (n1 - n0) / rounds if rounds else None,
                       wall_ms_per_round=1000 * rs / rounds if rounds else None,
                       series=len([l for l in t1.splitlines() if l.startswith("gpuprobe_process_gpu_")]))
        return res
    finally:
        d.terminate()
        try:
            d.wait(timeout=20)
        except subprocess.TimeoutExpired:
            d.kill()
        for p in procs:
            p.kill()
            p.wait()
        os.unlink(script.name)


def measure(results=None, log=print, seconds=SECONDS):
    rows = []
    for gpus, per, interval in CASES:
        log(f"bench: nvml, {gpus} GPU(s) x {per} processes, every {interval:g} s")
        on = one(gpus, per, interval, True, seconds)
        off = one(gpus, per, interval, False, seconds)
        on["daemon_cpu_pct_without"] = off["daemon_cpu_pct"]
        rows.append(on)
    if results is not None:
        results["nvml"] = rows
    return rows


def machine():
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    return f"{os.uname().release}, {os.cpu_count()} CPUs, load average {load} at the end"


def doc_lines(rows):
    out = [BEGIN, "## NVML's cost to the daemon (`bench/nvml_cost.py`, `make bench` section `nvml`)", "",
           "`gpuprobe daemon --memleak` with the stand-in `libnvidia-ml.so.1` (tests/fakenvml) scripted with G GPUs "
           "and P processes on each (every process an SM sample at each read, ECC, remapped rows and NVLink "
           "answered), %d s per run; the NVML thread's CPU time (its own task, `gpuprobe-nvml`) per read round, "
           "the round's wall time (`gpuprobe_nvml_read_seconds_total` / `gpuprobe_nvml_reads_total`), and the "
           "whole daemon's CPU with NVML and with `--no-nvml`. The stand-in's own work is inside the thread's "
           "time (it stats its script at every call); the driver's is not here: on the H200 a round took ~50 ms "
           "wall, mostly waiting on the driver (docs/validation.md)." % SECONDS, "",
           "| GPUs x processes | --nvml-interval | rounds | thread CPU per round | wall per round | thread CPU % | "
           "daemon CPU % with NVML | without |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %d x %d | %g s | %d | %.2f ms | %.2f ms | %.2f %% | %.2f %% | %.2f %% |" % (
            r["gpus"], r["per_gpu"], r["interval"], r["rounds"], r["cpu_ms_per_round"] or 0,
            r["wall_ms_per_round"] or 0, r["thread_cpu_pct"], r["daemon_cpu_pct"], r["daemon_cpu_pct_without"]))
    out += ["", "The thread's CPU time from its `schedstat` (nanoseconds); the daemon's from `stat` (clock ticks, "
            "%d a second). Machine: %s (shared by other work: the daemon's CPU with and without NVML differ by the "
            "thread's share and noise)." % (TICK, machine()), END]
    return out


def replace_doc(path, lines):
    docsection.replace(path, lines, BEGIN, END)


def section(path):
    return docsection.section(path, BEGIN, END)


if __name__ == "__main__":
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else SECONDS
    print(json.dumps(measure(seconds=secs), indent=1))
