# SPDX-License-Identifier: BSD-3-Clause
"""Checks a --trace JSON Lines file from a GPU run against the workload's account.
usage: check_trace.py launch|memleak|torch WORKLOAD_STDERR TRACE.jsonl [CHROME.json]"""
import json
import sys


def main():
    kind, truth_path, trace_path = sys.argv[1:4]
    t = None
    for line in reversed(open(truth_path, errors="replace").read().splitlines()):
        if line.startswith("{") and '"pid"' in line:
            t = json.loads(line)
            break
    recs = [json.loads(l) for l in open(trace_path)]
    summ = recs[-1]
    assert summ["type"] == "summary", "last line is the summary"
    calls = {}
    for r in recs:
        if r["type"] == "call" and r["pid"] == t["pid"]:
            calls[r["fn"]] = calls.get(r["fn"], 0) + 1
    total = sum(calls.values())
    print(f"pid {t['pid']}: {total} calls of {len(calls)} functions; events written "
          f"{summ['events_written']}, dropped {summ['dropped_events']} {summ['drops']}")
    top = sorted(calls.items(), key=lambda kv: -kv[1])[:12]
    print("  most called: " + ", ".join(f"{k} {v}" for k, v in top))
    p = [x for x in summ["processes"] if x["pid"] == t["pid"]][0]
    ok = summ["dropped_events"] == 0
    if kind == "launch":
        launches = sum(v for k, v in calls.items() if k.startswith("cuLaunchKernel"))
        want = {"launch calls": (launches, sum(k["launches"] for k in t["kernels"].values())),
                "cuGraphLaunch*": (calls.get("cuGraphLaunch", 0) + calls.get("cuGraphLaunch_ptsz", 0),
                                   t["graph_launches"]),
                "cuStreamSynchronize*": (calls.get("cuStreamSynchronize", 0) + calls.get("cuStreamSynchronize_ptsz", 0),
                                         t["stream_syncs"]),
                "cuCtxSynchronize*": (calls.get("cuCtxSynchronize", 0) + calls.get("cuCtxSynchronize_v2", 0),
                                      t["device_syncs"])}
        named = sum(1 for r in recs if r["type"] == "call" and r["pid"] == t["pid"]
                    and r["fn"].startswith("cuLaunchKernel") and "kernel" in r["args"])
        print(f"  launches with a kernel name in the timeline: {named}/{launches}")
    elif kind == "memleak":
        leaks = t["leaks"]
        want = {"allocation calls": (p["allocations"]["calls"], t["allocs"])}
        print(f"  allocations {p['allocations']}, frees {p['frees']}")
    else:
        want = {}
        print(f"  launches {p['launches']}, sync {p['sync']}, allocations {p['allocations']}, "
              f"copies {json.dumps(p['copies'])}")
    for k, (got, exp) in want.items():
        good = got == exp
        ok &= good
        print(f"  {'ok' if good else 'WRONG'} {k}: {got} (workload: {exp})")
    print(f"  launch gaps: {[(round(g['gap_s'] * 1e6, 1), g['before'][:30], g['after'][:30]) for g in p['launch_gaps'][:3]]}")
    if len(sys.argv) > 4:
        doc = json.load(open(sys.argv[4]))
        xs = sum(1 for e in doc["traceEvents"] if e["ph"] == "X")
        print(f"  chrome trace: {len(doc['traceEvents'])} events, {xs} complete (X) events; loads as JSON")
        ok &= xs > 0
    print("RESULT:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
