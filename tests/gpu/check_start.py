# SPDX-License-Identifier: BSD-3-Clause
"""Checks for issue 29 items 5 and 6 on the GPU (tests/gpu/run_start.sh).
usage: check_start.py graphmem WORKLOAD_STDERR GPUPROBE_STDOUT
       check_start.py late WORKLOAD_STDERR GPUPROBE_STDOUT hold|nohold
       check_start.py ctxgpu GPUPROBE_STDOUT PID
Prints what matched and what did not, and exits non-zero on a mismatch."""
import json
import sys


def last_json(path, key):
    for line in reversed(open(path, errors="replace").read().splitlines()):
        line = line.strip()
        if line.startswith("{") and key in line:
            return json.loads(line)
    sys.exit(f"FAIL: no JSON with {key} in {path}")


def final(path, mode):
    rs = [json.loads(l) for l in open(path) if l.startswith('{"mode":"%s"' % mode)]
    fin = [r for r in rs if r["report"] == "final"]
    if len(fin) != 1:
        sys.exit(f"FAIL: {len(fin)} final {mode} reports in {path}")
    return fin[0]


def proc(rep, pid):
    for p in rep["processes"]:
        if p["pid"] == pid:
            return p
    sys.exit(f"FAIL: PID {pid} not in the report ({[p['pid'] for p in rep['processes']]})")


def expect(what, got, want, bad):
    ok = got == want
    print(f"{'ok  ' if ok else 'FAIL'} {what}: {got} (truth {want})")
    if not ok:
        bad.append(what)


def graphmem(truth_path, out_path):
    t = last_json(truth_path, '"pid"')
    rep = final(out_path, "memleak")
    p = proc(rep, t["pid"])
    bad = []
    print("calls:", {k: v for k, v in rep["calls"].items() if v})
    expect("cuGraphAddMemAllocNode calls", rep["calls"].get("cuGraphAddMemAllocNode"), t["alloc_nodes"], bad)
    expect("cuGraphAddMemFreeNode calls", rep["calls"].get("cuGraphAddMemFreeNode"), t["free_nodes"], bad)
    expect("untracked frees", p["untracked_frees"], 0, bad)
    expect("frees of graph memory a relaunch made again", p["graph_relaunch_frees"], t["graph_relaunch_frees"], bad)
    expect("outstanding graph allocations", p["by_kind"]["graph"]["allocs"], t["leaks"], bad)
    expect("outstanding graph bytes", p["by_kind"]["graph"]["bytes"], t["leaked_bytes"], bad)
    addrs = [int(a["address"], 16) for s in p["stacks"] for a in s["allocs"] if a["kind"] == "graph"]
    expect("the leaked node's address", addrs, [t["leaked_address"]], bad)
    for s in p["stacks"]:
        print("stack", s["kinds"], s["outstanding_bytes"], " <- ".join(s["frames"][:4]))
    return bad


def late(truth_path, out_path, how):
    t = last_json(truth_path, '"pid"')
    rep = final(out_path, "memleak")
    bad = []
    p = next((x for x in rep["processes"] if x["pid"] == t["pid"]), None)
    if how == "hold":
        expect("outstanding allocations", p and p["outstanding_allocs"], t["allocs"], bad)
        expect("unseen_before_probes", p and p["unseen_before_probes"], None, bad)
    else:
        u = p and p["unseen_before_probes"]
        print(f"without the hold: {p and p['outstanding_allocs']} of {t['allocs']} allocations seen, note {u}")
        if p and not u:
            bad.append("the note")
    return bad


def ctxgpu(out_path, pid):
    rep = final(out_path, "bandwidth")
    p = proc(rep, int(pid))
    bad = []
    for x in p["transfers"]:
        print(f"gpu {x['gpu']} {x['direction']}: {x['copies']} copies, {x['bytes']} bytes")
    expect("transfers with an unknown GPU", [x["direction"] for x in p["transfers"] if x["gpu"] is None], [], bad)
    if not p["transfers"]:
        bad.append("no transfers")
    return bad


def main():
    what = sys.argv[1]
    bad = {"graphmem": lambda: graphmem(*sys.argv[2:4]), "late": lambda: late(*sys.argv[2:5]),
           "ctxgpu": lambda: ctxgpu(*sys.argv[2:4])}[what]()
    print(f"{what}: {'PASS' if not bad else 'FAIL ' + ', '.join(bad)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
