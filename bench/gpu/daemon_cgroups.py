#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The daemon's per-cgroup launch counters against a forking CUDA program's own counts
(bench/gpu/fork_workers.cu), on a real GPU: each job in a cgroup of its own, with the
daemon reading as it goes ("live") and with the daemon stopped (SIGSTOP) for the whole job,
so that it reads every record after the job's processes have exited and been reaped
("stopped": the labels then come from the cgroup each process ended in).

  daemon_cgroups.py --gp GPUPROBE --bin FORK_WORKERS [--reps 3] [--out DIR]
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def cgroup2_root():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            p = line.split()
            sep = p.index("-")
            if p[sep + 1] == "cgroup2" and p[3] == "/":
                return p[4]
    sys.exit("daemon_cgroups: no cgroup v2 hierarchy mounted")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, val = line.rpartition(" ")
        name, _, labels = head.partition("{")
        out.append((name, dict(LABEL.findall(labels)), float(val)))
    return out


def total(samples, name, **labels):
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == x for k, x in labels.items()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gp", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    root = cgroup2_root()
    port = free_port()
    err = open(os.path.join(a.out, "daemon.log"), "w")
    d = subprocess.Popen([a.gp, "daemon", "--max-overhead", "100", "--listen", f"127.0.0.1:{port}",
                          "--memleak", "--cudatrace"], stderr=err)
    rows, made, bad = [], [], 0
    try:
        for _ in range(100):
            try:
                metrics(port)
                break
            except OSError:
                time.sleep(0.1)
        subprocess.run([a.bin, "1", "10"], check=True, capture_output=True)  # probes in
        time.sleep(2)
        for rep in range(a.reps):
            for how in ("live", "stopped"):
                rel = f"gp-bench-{how}-{uuid.uuid4().hex[:6]}"
                os.mkdir(os.path.join(root, rel))
                made.append(os.path.join(root, rel))
                argv = ["sh", "-c", f'echo $$ > "{root}/{rel}/cgroup.procs" && exec "$@"', "sh",
                        a.bin, str(a.workers), str(a.n)]
                if how == "stopped":
                    os.kill(d.pid, signal.SIGSTOP)
                t0 = time.time()
                try:
                    r = subprocess.run(argv, capture_output=True, text=True)
                finally:
                    if how == "stopped":
                        os.kill(d.pid, signal.SIGCONT)
                job_s = time.time() - t0
                truth = json.loads(r.stdout.strip().splitlines()[-1])
                want = {"fork_workers": truth["parent"], "fork_worker": sum(truth["workers"])}
                got, deadline = {}, time.time() + 20
                while time.time() < deadline:
                    s = metrics(port)
                    got = {c: total(s, "gpuprobe_cuda_kernel_launches_total", cgroup="/" + rel, comm=c)
                           for c in want}
                    if got == want:
                        break
                    time.sleep(0.25)
                unlabelled = {c: total(s, "gpuprobe_cuda_kernel_launches_total", cgroup="", comm=c) for c in want}
                ok = got == want
                bad += not ok
                rows.append({"how": how, "cgroup": "/" + rel, "job_s": round(job_s, 2), "want": want, "got": got,
                             "ok": ok, "unlabelled": unlabelled})
                print(f"{how:8s} job {job_s:5.2f} s  want {want}  got {got}  {'ok' if ok else 'WRONG'}", flush=True)
        s = metrics(port)
        after = {k: total(s, "gpuprobe_cgroups_read_after_exit_total", result=k) for k in ("found", "not_found")}
        print(f"gpuprobe_cgroups_read_after_exit_total: {after}")
        with open(os.path.join(a.out, "daemon_cgroups.json"), "w") as f:
            json.dump({"rows": rows, "read_after_exit": after, "workers": a.workers, "n": a.n}, f, indent=1)
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(timeout=30)
        for p in reversed(made):
            for _ in range(50):
                try:
                    os.rmdir(p)
                    break
                except OSError:
                    time.sleep(0.1)
    print(f"{len(rows) - bad} of {len(rows)} jobs counted under their own cgroup")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
