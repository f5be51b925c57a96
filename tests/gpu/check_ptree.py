# SPDX-License-Identifier: BSD-3-Clause
"""Checks gpuprobe --cudatrace --memleak --json over a torchrun job against each rank's
own account (ddp_ranks.py): both ranks found as the launcher's descendants, the known
kernel counted exactly per rank, every leaked buffer and every caching-allocator segment
outstanding at exit, NCCL kernels named.
usage: check_ptree.py JOB_STDERR GPUPROBE_STDOUT"""
import json
import sys


def main():
    err_path, out_path = sys.argv[1:3]
    ranks = [json.loads(l) for l in open(err_path, errors="replace") if l.startswith("{") and '"ddp_rank"' in l]
    reps = [json.loads(l) for l in open(out_path) if l.startswith('{"mode"')]
    ct = [r for r in reps if r["mode"] == "cudatrace" and r["report"] == "final"]
    ml = [r for r in reps if r["mode"] == "memleak" and r["report"] == "final"]
    ok = len(ranks) == 2 and len(ct) == 1 and len(ml) == 1
    print(f"ranks reported by the job: {len(ranks)}; final reports: cudatrace {len(ct)}, memleak {len(ml)}")
    if not ok:
        sys.exit("FAIL")
    cprocs = {p["pid"]: p for p in ct[0]["processes"]}
    mprocs = {p["pid"]: p for p in ml[0]["processes"] if not p.get("exec")}
    print(f"processes in the cudatrace report: {[(p['pid'], p['comm'], p.get('root'), p['launches']) for p in ct[0]['processes']]}")
    print(f"jobs: {ct[0].get('jobs')}")
    for r in sorted(ranks, key=lambda r: r["rank"]):
        pid, w = r["pid"], r["work"]
        p, m = cprocs.get(pid), mprocs.get(pid)
        if not p or not m:
            print(f"rank {r['rank']} PID {pid}: MISSING (cudatrace {bool(p)}, memleak {bool(m)})")
            ok = False
            continue
        ks = {k["name"]: k for k in p["kernels"]}
        k = ks.get(w["kernel"])
        got = k["launches"] if k else None
        shape_ok = bool(k) and any(s["grid"] == w["grid"] and s["block"] == w["block"] and s["launches"] == w["launches"]
                                   for s in k["shapes"])
        nccl = {n: v["launches"] for n, v in ks.items() if "ncclDevKernel" in n}
        named = p["launches"] - p["unnamed_launches"]
        allocs = {a["address"]: a["size"] for s in m["stacks"] for a in s["allocs"]}
        leaks_ok = all(allocs.get(a) == w["leak_size"] for a in w["leaked"])
        segs_ok = all(allocs.get(s["address"]) == s["size"] for s in r["segments"])
        rank_ok = got == w["launches"] and shape_ok and leaks_ok and segs_ok and bool(nccl)
        ok &= rank_ok
        print(f"rank {r['rank']} PID {pid} ({p['comm']}, root {p.get('root')}): {w['kernel']} {got} launches "
              f"(want {w['launches']}, shape {'ok' if shape_ok else 'WRONG'}); launches {p['launches']}, "
              f"named {named} ({100.0 * named / max(p['launches'], 1):.1f}%); NCCL kernels {nccl}; "
              f"leaked buffers {sum(a in allocs for a in w['leaked'])}/{len(w['leaked'])} "
              f"({'exact' if leaks_ok else 'WRONG'}); torch segments outstanding "
              f"{sum(s['address'] in allocs for s in r['segments'])}/{len(r['segments'])} "
              f"({'exact' if segs_ok else 'WRONG'}); outstanding {m['outstanding_allocs']} allocations, "
              f"{m['outstanding_bytes']} bytes")
    print(f"dropped: cudatrace {ct[0]['dropped_events']}, memleak {ml[0]['dropped_events']}")
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
