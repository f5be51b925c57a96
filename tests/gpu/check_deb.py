# SPDX-License-Identifier: BSD-3-Clause
"""Scrapes and checks for tests/gpu/run_deb.sh (the installed .deb's daemon on the GPU).
  check_deb.py scrape PORT                 /metrics to stdout
  check_deb.py poll PORT FILE CGROUP...    every 0.5 s, one JSON line per scrape to FILE:
                                           each cgroup's counter sums and series count
  check_deb.py check DIR TORCH_CG CUDA_CG  the checks; prints figures, exits 1 on a failure
  check_deb.py gputime GT.jsonl GT.err     the installed binary's --gpu-time run of
                                           launch_cuda.cu: kernels per shape against its account
Standard library only (the GPU machine's python3)."""
import glob
import json
import os
import re
import sys
import time
import urllib.request

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')
COUNTERS = ("gpuprobe_cuda_kernel_launches_total", "gpuprobe_cuda_alloc_calls_total",
            "gpuprobe_cuda_sync_calls_total", "gpuprobe_probe_hits_total")


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def samples(text):
    out = []
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m or line.startswith("#"):
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in LABEL.findall(m.group(3) or "")}
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def total(s, name, **want):
    vals = [v for n, l, v in s if n == name and all(l.get(k) == x for k, x in want.items())]
    return sum(vals) if vals else None


def poll(port, path, cgroups):
    with open(path, "a") as f:
        while True:
            try:
                s = samples(scrape(port))
            except OSError:
                time.sleep(0.5)
                continue
            rec = {"t": time.time(), "sums": {}, "series": {}}
            for cg in cgroups:
                rec["sums"][cg] = {c: total(s, c, cgroup=cg) for c in COUNTERS}
                rec["series"][cg] = sum(1 for n, l, v in s if l.get("cgroup") == cg)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            time.sleep(0.5)


def last_json(path):
    for line in reversed(open(path, errors="replace").read().splitlines()):
        if line.startswith("{") and '"pid"' in line:
            return json.loads(line)
    return None


def check(d, torch_cg, cuda_cg):
    ok = True

    def verdict(good, what):
        nonlocal ok
        ok &= bool(good)
        print(f"  {'ok' if good else 'FAIL'}: {what}")

    final = samples(open(os.path.join(d, "metrics.txt")).read())
    after = [samples(open(p).read()) for p in sorted(glob.glob(os.path.join(d, "after-torch*.txt")))]
    launches = [total(s, COUNTERS[0], cgroup=torch_cg) or 0 for s in after]
    series = [sum(1 for n, l, v in s if l.get("cgroup") == torch_cg) for s in after]
    print(f"torch cgroup {torch_cg}: launches after each job {launches}, series {series}")
    verdict(launches and launches[0] > 0, "the first PyTorch job's launches are on a series")
    verdict(all(b > a for a, b in zip(launches, launches[1:])), "each later job adds launches (exited jobs' counts kept)")
    verdict(len(set(series)) == 1, f"series of the cgroup flat across jobs: {series}")
    comms = sorted({l.get("comm") for n, l, v in final if l.get("cgroup") == torch_cg})
    print(f"  comm labels: {comms}")
    kern = [(l.get("kernel"), v) for n, l, v in final if n == COUNTERS[0] and l.get("cgroup") == torch_cg]
    unknown = sum(v for k, v in kern if k == "unknown")
    alltorch = sum(v for k, v in kern)
    print(f"  {len(kern)} kernel series, {alltorch:g} launches, {unknown:g} unnamed "
          f"({100 * unknown / alltorch if alltorch else 0:.1f}%)")
    for k, v in sorted(kern, key=lambda x: -x[1])[:5]:
        print(f"    {v:8g} {k[:100]}")
    t = last_json(os.path.join(d, "launch.err"))
    verdict(t is not None, "launch_static's account")
    if t:
        for name, k in t["kernels"].items():
            got = total(final, COUNTERS[0], cgroup=cuda_cg, kernel=name)
            cap = total(final, "gpuprobe_cuda_kernel_captures_total", cgroup=cuda_cg, kernel=name)
            verdict((got or 0) + (cap or 0) == k["launches"], f"CUDA C {name}: {got} launches + {cap} captured (want {k['launches']} calls)")
        got = total(final, "gpuprobe_cuda_graph_launches_total", cgroup=cuda_cg)
        verdict(got == t["graph_launches"], f"CUDA C graph launches {got} (want {t['graph_launches']})")
    for cg in (torch_cg, cuda_cg):
        got = total(final, "gpuprobe_cuda_outstanding_bytes", cgroup=cg)
        verdict(not got, f"{cg}: no outstanding bytes once its processes exited ({got})")
    verdict(not any("pid" in l for n, l, v in final), "no pid label by default")
    # counters never go down between scrapes
    recs = [json.loads(x) for x in open(os.path.join(d, "scrapes.jsonl"))]
    downs = []
    for a, b in zip(recs, recs[1:]):
        for cg in (torch_cg, cuda_cg):
            for c in COUNTERS:
                x, y = a["sums"][cg][c], b["sums"][cg][c]
                if x is not None and (y is None or y < x):
                    downs.append((cg, c, x, y))
    verdict(not downs, f"{len(recs)} scrapes during the run, no counter of the cgroups went down {downs[:3]}")
    drops = [(l, v) for n, l, v in final if n == "gpuprobe_events_dropped_total" and v]
    verdict(not drops, f"no drops {drops}")
    fig = {n: total(final, n) for n in ("gpuprobe_probes_attached", "gpuprobe_libcuda_files", "gpuprobe_series",
                                        "gpuprobe_probe_hit_cost_seconds", "process_cpu_seconds_total",
                                        "process_resident_memory_bytes", "gpuprobe_scrapes_total",
                                        "gpuprobe_scrape_duration_seconds_sum", "gpuprobe_scrape_duration_seconds_count")}
    print("figures: " + ", ".join(f"{k} {v:g}" for k, v in fig.items() if v is not None))
    if fig.get("gpuprobe_scrape_duration_seconds_count"):
        print(f"  mean scrape {1e3 * fig['gpuprobe_scrape_duration_seconds_sum'] / fig['gpuprobe_scrape_duration_seconds_count']:.2f} ms")
    for l in (l for n, l, v in final if n == "gpuprobe_build_info"):
        print(f"  build: {l}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def gputime(jsonl, errfile):
    """Kernel executions per grid x block shape in the final --gpu-time report against
    launch_cuda.cu's account (a captured launch runs once per graph launch)."""
    t = last_json(errfile)
    rep = None
    for line in open(jsonl, errors="replace"):
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("mode") == "gputime" and r.get("report") == "final":
                rep = r
    if not t or not rep:
        print(f"  FAIL: no account ({t is not None}) or no final --gpu-time report ({rep is not None})")
        return 1
    procs = [p for p in rep.get("processes", []) if p.get("pid") == t["pid"]]
    if not procs:
        print(f"  FAIL: no --gpu-time record of pid {t['pid']} (the installed libraries not loaded?)")
        return 1
    p = procs[0]
    got = {}
    for k in p["kernels"]:
        shape = ",".join(map(str, k["grid"])) + "x" + ",".join(map(str, k["block"]))
        got[shape] = got.get(shape, 0) + k["launches"]
    want = {}
    for name, k in t["kernels"].items():
        for shape, n in k["shapes"].items():
            want[shape] = want.get(shape, 0) + n * (t["graph_launches"] if name.startswith("k_graph") else 1)
    ok = got == want and p["cupti"]["not_sent"] == 0
    print(f"  {'ok' if ok else 'FAIL'}: kernels per shape {got} (want {want}), "
          f"{p['cupti']['records']} CUPTI records, {p['cupti']['not_sent']} not sent")
    return 0 if ok else 1


def main():
    cmd = sys.argv[1]
    if cmd == "gputime":
        return gputime(sys.argv[2], sys.argv[3])
    if cmd == "scrape":
        sys.stdout.write(scrape(int(sys.argv[2])))
        return 0
    if cmd == "poll":
        poll(int(sys.argv[2]), sys.argv[3], sys.argv[4:])
        return 0
    return check(sys.argv[2], sys.argv[3], sys.argv[4])


if __name__ == "__main__":
    sys.exit(main())
