# SPDX-License-Identifier: BSD-3-Clause
"""Compares gpuprobe --cudatrace --json output with a GPU workload's account.
usage: check_cudatrace.py cuda|torch WORKLOAD_STDERR GPUPROBE_STDOUT"""
import json
import sys


def last_json(path, key):
    for line in reversed(open(path, errors="replace").read().splitlines()):
        if line.startswith("{") and key in line:
            return json.loads(line)
    sys.exit(f"FAIL: no JSON with {key} in {path}")


def main():
    mode, truth_path, out_path = sys.argv[1:4]
    t = last_json(truth_path, '"pid"')
    reps = [json.loads(l) for l in open(out_path) if l.startswith('{"mode":"cudatrace"')]
    fin = [r for r in reps if r["report"] == "final"]
    if len(fin) != 1:
        sys.exit(f"FAIL: {len(fin)} final reports")
    procs = {p["pid"]: p for p in fin[0]["processes"]}
    p = procs.get(t["pid"])
    if not p:
        sys.exit(f"FAIL: PID {t['pid']} not reported ({list(procs)})")
    named = p["launches"] - p["unnamed_launches"]
    print(f"pid {p['pid']} ({p['comm']}): launches={p['launches']} unnamed={p['unnamed_launches']} "
          f"named={named} ({100.0 * named / max(p['launches'], 1):.1f}%) graph_launches={p['graph_launches']} "
          f"sync calls={p['sync']['calls']} sync total={p['sync']['total_s']} max={p['sync']['max_s']} "
          f"dropped={fin[0]['dropped_events']}")
    ll = p["launch_latency"]
    if ll.get("timed"):
        print(f"launch API latency: {ll['calls']} calls, mean {1e6 * ll['total_s'] / ll['timed']:.2f} us, "
              f"max {1e6 * ll['max_s']:.1f} us")
    ok = True
    got = {k["name"]: k for k in p["kernels"]}
    if mode == "cuda":
        for name, want in t["kernels"].items():
            k = got.get(name)
            if not k:
                ok = False
                print(f"  MISSING {name!r}")
                continue
            if k.get("captured"):
                # launched on a capturing stream: a graph node, run once per graph launch
                shapes = {"%d,%d,%dx%d,%d,%d" % tuple(s["grid"] + s["block"]): s["captured"] for s in k["shapes"]}
                good = (k["captured"] == want["launches"] and shapes == want["shapes"] and
                        k["graph_executed"] == want["launches"] * t["graph_launches"] and k["launches"] == 0)
                ok &= good
                print(f"  {'ok' if good else 'WRONG'} {name}: captured {k['captured']} (the program's {want['launches']} "
                      f"launches in its capture), run {k['graph_executed']} times in {t['graph_launches']} graph launches")
                continue
            shapes = {"%d,%d,%dx%d,%d,%d" % tuple(s["grid"] + s["block"]): s["launches"] for s in k["shapes"]}
            good = k["launches"] == want["launches"] and shapes == want["shapes"]
            ok &= good
            print(f"  {'ok' if good else 'WRONG'} {name}: {k['launches']} launches (want {want['launches']}), "
                  f"shapes {shapes} (want {want['shapes']}), name from {k['source']}")
        for name in sorted(set(got) - set(t["kernels"])):
            print(f"  other: {name}: {got[name]['launches']} launches, source {got[name]['source']}")
        if p["graph_launches"] != t["graph_launches"]:
            ok = False
        print(f"  graph launches {p['graph_launches']} (want {t['graph_launches']})")
        want_sync = t["stream_syncs"] + t["device_syncs"]
        print(f"  sync calls {p['sync']['calls']} (workload: {t['stream_syncs']} stream + "
              f"{t['device_syncs']} device syncs = {want_sync}; the runtime may add its own)")
    else:
        share = named / max(p["launches"], 1)
        ok = share >= 0.95
        for k in sorted(p["kernels"], key=lambda k: -k["launches"])[:12]:
            print(f"  {k['launches']:6d} {k['source']:6s} {k['name'][:110]}")
        print(f"named share {100 * share:.1f}% (target >= 95%)")
    print("RESULT:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
