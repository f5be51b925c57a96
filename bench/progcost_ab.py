#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""BPF time per call (kernel.bpf_stats_enabled, the tracer's own programs' run_time_ns over
100,000 calls of bench_workload FAM, FAM=copy by default) of two gpuprobe binaries, runs
interleaved; prints each run and the medians. Root, a built tree (make all).
usage: FAM=copy|launch|allocfree python3 bench/progcost_ab.py RUNS GP_A GP_B [gpuprobe flags]
(default flags --bandwidth-util); from the repository root."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as R
R.build()
runs, gps, flags = int(sys.argv[1]), sys.argv[2:4], sys.argv[4:] or ["--bandwidth-util"]
STATS = "/proc/sys/kernel/bpf_stats_enabled"
old = open(STATS).read().strip()
open(STATS, "w").write("1")
res = {g: [] for g in gps}
try:
    for i in range(runs):
        for g in (gps if i % 2 == 0 else gps[::-1]):
            work = [R.WL, os.environ.get("FAM", "copy"), "-n", "50000", "-r", "2", "-w", "0", "-H", "3"]
            cmd = [g] + flags + ["--libcuda", R.LIB, "-o", "-", "--"] + work
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                 env=R.ENV, start_new_session=True)
            progs = []
            for line in p.stdout:
                if line.startswith("result"):
                    time.sleep(0.3)
                    progs, _ = R.bpf_fd_info(p.pid)
                    break
            p.stdout.read()
            p.wait(timeout=60)
            ns = sum(int(x["run_time_ns"]) for x in progs)
            cnt = sum(int(x["run_cnt"]) for x in progs)
            res[g].append(ns / 100000)
            print(g, "run", i, "ns/call %.0f" % (ns / 100000), "runs", cnt, flush=True)
finally:
    open(STATS, "w").write(old)
for g in gps:
    v = sorted(res[g])
    print(g, "median %.0f" % v[len(v) // 2], "all", ["%.0f" % x for x in res[g]])
