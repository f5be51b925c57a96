# SPDX-License-Identifier: BSD-3-Clause
"""Checks run_gputime.sh's runs (issue 34, item 2):
  check_gputime.py torch PROF.json PLAIN.err GT.err GT.jsonl
    kernel durations against torch.profiler's (a run of the same loop), the matmul batch
    against its CUDA events, the copies' exact bandwidth against the events', the cost;
  check_gputime.py nccl GT.err GT.jsonl [PLAIN.err]
    per rank, the exact bus bandwidth of each collective batch against the program's own
    (CUDA events around the batch: a window that holds the kernels, so exact >= its figure)."""
import json
import sys


def truth(path, api=None):
    out = []
    for l in open(path, errors="replace"):
        l = l.strip()
        if l.startswith("{") and '"api"' in l:
            t = json.loads(l)
            if api is None or t.get("api") == api:
                out.append(t)
    return out


def final(path):
    rep = None
    for l in open(path):
        r = json.loads(l)
        if r.get("mode") == "gputime" and r.get("report") == "final":
            rep = r
    return rep


fails = 0


def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += 0 if cond else 1


def torch_check(prof_path, plain_err, gt_err, gt_jsonl):
    prof = json.load(open(prof_path))["profiler"]
    t = truth(gt_err, "torch_gputime")[-1]
    plain = truth(plain_err, "torch_gputime")[-1]
    rep = final(gt_jsonl)
    p = [x for x in rep["processes"] if x["pid"] == t["pid"]][0]
    print(f"card {t['card']}, torch {t['torch']}; gpuprobe: {len(p['kernels'])} kernel rows, cupti {p['cupti']}, "
          f"drops {rep['drops']}, refused {rep['refused']}")
    by_name = {}
    for k in p["kernels"]:
        b = by_name.setdefault(k["name"], [0, 0])
        b[0] += k["launches"]
        b[1] += k["gpu_ns"]
    top = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:5]
    for name, (n, ns) in top:
        pr = prof.get(name)
        line = f"{name[:70]}: gpuprobe {n} launches {ns / 1e6:.3f} ms"
        if pr:
            line += f"; torch.profiler {pr[0]} launches {pr[1] / 1e3:.3f} ms (ratio {ns / 1e3 / pr[1]:.3f})"
        print(line)
    gemm = top[0]
    pr = prof.get(gemm[0])
    check(pr is not None, "the top kernel is one torch.profiler names")
    if pr:
        check(gemm[1][0] == pr[0], f"same launches as torch.profiler ({gemm[1][0]} vs {pr[0]})")
        r = gemm[1][1] / 1e3 / pr[1]
        check(0.95 <= r <= 1.05, f"GPU time within 5 % of torch.profiler's in another run (ratio {r:.3f})")
    per = gemm[1][1] / gemm[1][0]
    batch = per * t["n"] / 1e6
    check(0.85 * t["gemm_ms"] <= batch <= 1.001 * t["gemm_ms"],
          f"N matmuls at gpuprobe's mean ({batch:.3f} ms) within the events' batch ({t['gemm_ms']:.3f} ms), >= 85 % of it")
    for kind, ms in (("H2D", t["h2d_ms"]), ("D2H", t["d2h_ms"])):
        rows = [c for c in p["copies"] if c["kind"] == kind]
        check(bool(rows), f"{kind} copies reported")
        if not rows:
            continue
        c = max(rows, key=lambda c: c["bytes"])
        ev = t["copy_bytes"] / (ms / 1e3) / 1e9
        print(f"{kind}: gpuprobe {c['copies']} copies {c['bytes']} B, {c['bandwidth_gbps']:.1f} GB/s (fastest "
              f"{c['fastest_gbps']:.1f}); the program's events {ev:.1f} GB/s")
        check(c["bandwidth_gbps"] >= 0.98 * ev, f"{kind}: exact bandwidth >= the events' (their window holds the copies)")
        check(c["bandwidth_gbps"] <= 1.15 * ev, f"{kind}: and close to it (back-to-back copies)")
    cost = t["wall_s"] / plain["wall_s"] - 1
    print(f"in-process cost: loop {t['wall_s'] * 1e3:.1f} ms with --gpu-time, {plain['wall_s'] * 1e3:.1f} ms without "
          f"({cost * 100:+.1f} %)")
    check(rep["drops"]["gputime_not_sent"] == 0 and rep["drops"]["gputime_source_lost"] == 0, "nothing lost")


def nccl_check(gt_err, gt_jsonl):
    rep = final(gt_jsonl)
    ranks = truth(gt_err, "torch_nccl")
    check(len(ranks) >= 2, f"{len(ranks)} ranks' accounts")
    fn = {"AllReduce": "AllReduce", "Broadcast": "Broadcast", "AllGather": "AllGather"}
    for rk in ranks:
        ps = [x for x in rep["processes"] if x["pid"] == rk["pid"]]
        check(bool(ps), f"rank {rk['rank']}: records from its process")
        if not ps:
            continue
        p = ps[0]
        print(f"rank {rk['rank']} (NCCL {rk['nccl']}): profiler {p['nccl_profiler']}")
        for tm in rk["timing"]:
            if tm["op"] not in fn:
                continue
            rows = [c for c in p["collectives"] if c["op"] == fn[tm["op"]] and c["size"] == tm["size"]
                    and c["nranks"] == rk["nranks"]]
            check(bool(rows), f"rank {rk['rank']} {tm['op']} {tm['size']} B: a row")
            if not rows:
                continue
            c = rows[0]
            print(f"  {tm['op']} {tm['size']} B: gpuprobe {c['calls']} calls, busbw {c['busbw_gbps']:.1f} GB/s "
                  f"(best {c['best_busbw_gbps']:.1f}, timed by GPU {c['gpu_timed_calls']}/{c['calls']}); "
                  f"the program's events {tm['busbw'] / 1e9:.1f} GB/s")
            check(c["calls"] >= tm["calls"], "calls")
            if tm["size"] >= 8 << 20:
                check(c["busbw_gbps"] >= 0.95 * tm["busbw"] / 1e9,
                      f"  exact busbw >= 0.95 x the events' ({c['busbw_gbps']:.1f} vs {tm['busbw'] / 1e9:.1f})")
                check(c["busbw_gbps"] <= 1.5 * tm["busbw"] / 1e9, "  and not far above it")


if __name__ == "__main__":
    if sys.argv[1] == "torch":
        torch_check(*sys.argv[2:6])
    else:
        nccl_check(*sys.argv[2:4])
    print("overall:", "PASS" if not fails else f"FAIL ({fails})")
    sys.exit(1 if fails else 0)
