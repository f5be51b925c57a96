# SPDX-License-Identifier: BSD-3-Clause
"""Checks for issue 13 on the real GPU.
  check_issue13.py midrun GPUPROBE_STDOUT PID   names after a mid-run -p attach (>= 95 %)
  check_issue13.py graph WORKLOAD_STDERR GPUPROBE_STDOUT   PyTorch CUDA graph counts"""
import collections
import json
import sys


def final(path, pid):
    reps = [json.loads(l) for l in open(path) if l.startswith('{"mode":"cudatrace"')]
    fin = [r for r in reps if r["report"] == "final"]
    if len(fin) != 1:
        sys.exit(f"FAIL: {len(fin)} final cudatrace reports")
    procs = [p for p in fin[0]["processes"] if p["pid"] == pid]
    if not procs:
        sys.exit(f"FAIL: PID {pid} not reported")
    return fin[0], procs[-1]


def midrun(out_path, pid):
    rep, p = final(out_path, pid)
    by_src = collections.Counter()
    for k in p["kernels"]:
        by_src[k["source"]] += k["launches"]
    named = p["launches"] - p["unnamed_launches"]
    share = named / max(p["launches"], 1)
    print(f"PID {pid}: {p['launches']} launches, {named} named ({100 * share:.2f}%), "
          f"by name source {dict(by_src)}; kernels {len(p['kernels'])}; dropped {rep['dropped_events']}")
    for k in sorted(p["kernels"], key=lambda k: -k["launches"])[:15]:
        print(f"  {k['launches']:8d} {k['source']:6s} {k['name'][:110]}")
    unk = [k for k in p["kernels"] if k["source"] == "none"]
    for k in unk[:10]:
        print(f"  unnamed: {k['name']} {k['launches']}")
    print("PASS" if share >= 0.95 else "FAIL")
    return share >= 0.95


def graph(err_path, out_path):
    t = [json.loads(l) for l in open(err_path, errors="replace") if l.startswith("{") and "torch_graph" in l][-1]
    rep, p = final(out_path, t["pid"])
    r = t["replays"]
    ok = p["graph_launches"] == r and p["unexpanded_graph_launches"] == 0 and p["captured"] > 0
    print(f"PID {t['pid']}: graph launches {p['graph_launches']} (the script's replays {r}), captured "
          f"{p['captured']}, graph-executed {p['graph_executed']}, unexpanded {p['unexpanded_graph_launches']}, "
          f"direct launches {p['launches']}; graphs {p['graphs']}")
    for k in sorted(p["kernels"], key=lambda k: -k["graph_executed"]):
        if not k["captured"] and not k["graph_executed"]:
            continue
        good = k["graph_executed"] == r * k["captured"]
        ok &= good
        print(f"  {'ok' if good else 'WRONG'} {k['name'][:90]}: captured {k['captured']}, graph-executed "
              f"{k['graph_executed']} (= {r} x {k['captured']}: {good}), direct {k['launches']}, source {k['source']}")
    print("PASS" if ok else "FAIL")
    return ok


if __name__ == "__main__":
    if sys.argv[1] == "midrun":
        sys.exit(0 if midrun(sys.argv[2], int(sys.argv[3])) else 1)
    sys.exit(0 if graph(sys.argv[2], sys.argv[3]) else 1)
