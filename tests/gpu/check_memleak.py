# SPDX-License-Identifier: BSD-3-Clause
"""Compares gpuprobe --memleak --json --show-allocs output with a GPU workload's own account.
usage: check_memleak.py cuda|torch WORKLOAD_STDERR GPUPROBE_STDOUT
Prints what matched and what did not, and exits non-zero on a mismatch."""
import json
import sys


def last_json(path, key):
    for line in reversed(open(path, errors="replace").read().splitlines()):
        line = line.strip()
        if line.startswith("{") and key in line:
            return json.loads(line)
    sys.exit(f"FAIL: no JSON with {key} in {path}")


def final(path):
    rs = [json.loads(l) for l in open(path) if l.startswith('{"mode":"memleak"')]
    fin = [r for r in rs if r["report"] == "final"]
    if len(fin) != 1:
        sys.exit(f"FAIL: {len(fin)} final reports in {path}")
    return fin[0], [r for r in rs if r["report"] == "exit"]


def main():
    mode, truth_path, out_path = sys.argv[1:4]
    truth = last_json(truth_path, '"pid"')
    rep, exits = final(out_path)
    procs = {p["pid"]: p for p in rep["processes"]}
    p = procs.get(truth["pid"])
    if not p:
        sys.exit(f"FAIL: PID {truth['pid']} not in the final report ({list(procs)})")
    print(f"pid {p['pid']} comm {p['comm']} exited={p['exited']} allocs_total={p['allocs_total']} "
          f"frees_total={p['frees_total']} untracked_frees={p['untracked_frees']} "
          f"outstanding_allocs={p['outstanding_allocs']} outstanding_bytes={p['outstanding_bytes']} "
          f"dropped_events={rep['dropped_events']}")
    print("calls:", {k: v for k, v in rep["calls"].items() if v})
    # --show-allocs lists each allocation under its stack; each gets its stack's frames
    got = {(int(a["address"], 16), a["size"]): dict(a, stack=s["frames"]) for s in p["stacks"] for a in s["allocs"]}
    print(f"stacks: {len(p['stacks'])} ({rep['stack_mode']}), partial: {sum(s['partial'] for s in p['stacks'])}")
    ok = True
    if mode == "cuda":
        want = {(int(l["address"], 16), l["size"]): l for l in truth["leaks"]}
        print(f"workload: allocs={truth['allocs']} frees={truth['frees']} leaks={len(want)} "
              f"leaked_bytes={sum(k[1] for k in want)}")
        for k, l in sorted(want.items()):
            a = got.get(k)
            if not a:
                ok = False
                print(f"  MISSING {l['kind']} {hex(k[0])} {k[1]}")
                continue
            if a["kind"] != l["kind"]:
                ok = False
            print(f"  found {hex(k[0])} {k[1]} {a['api']} {a['kind']} (want {l['kind']}) "
                  f"age {a['age_s']:.3f}s stack: {' <- '.join(a['stack'][:6])}")
        for k in sorted(set(got) - set(want)):
            a = got[k]
            ok = False
            print(f"  EXTRA {hex(k[0])} {k[1]} {a['api']} {a['kind']} stack: {' <- '.join(a['stack'][:4])}")
        named = sum(any("workload_device_alloc" in f or f.startswith("run") for f in a["stack"])
                    for a in got.values())
        print(f"allocations whose stack names the workload's function: {named}/{len(got)}")
    else:
        segs = {(int(s["address"], 16), s["size"]) for s in truth["segments"]}
        dev = {k: a for k, a in got.items() if a["kind"] == "device"}
        phys = [a for a in got.values() if a["kind"] == "physical"]
        print(f"torch: reserved={truth['reserved']} segments={len(segs)} "
              f"bytes={sum(s[1] for s in segs)} expandable={truth['expandable']}")
        print(f"gpuprobe: device allocations={len(dev)} bytes={sum(k[1] for k in dev)}; "
              f"physical handles={len(phys)} bytes={sum(a['size'] for a in phys)}; "
              f"mapped={p['mappings']}")
        if truth["expandable"]:
            # segments are mapped ranges of cuMemCreate handles: compare bytes
            mapped = p["mappings"]["mapped_bytes"]
            ok = mapped == sum(s[1] for s in segs)
            print(f"mapped bytes {mapped} vs segment bytes {sum(s[1] for s in segs)}")
        else:
            # every segment of the caching allocator, exactly; anything else must come
            # from outside it (cuBLAS allocates its own workspace with cuMemAlloc_v2)
            missing = segs - set(dev)
            extra = set(dev) - segs
            for k in sorted(missing):
                print(f"  MISSING segment {hex(k[0])} {k[1]}")
            bad = 0
            for k in sorted(extra):
                inside = any("CUDACachingAllocator" in f for f in dev[k]["stack"])
                bad += inside
                where = [f for f in dev[k]["stack"] if "(libcuda." not in f and not f.startswith("0x")]
                print(f"  {'EXTRA from the caching allocator' if inside else 'outside the caching allocator'}: "
                      f"{hex(k[0])} {k[1]} {dev[k]['api']} via {where[0] if where else '?'}")
            print(f"segments matched exactly: {len(segs & set(dev))}/{len(segs)}")
            ok = not missing and not bad
        for a in list(dev.values())[:2]:
            print(f"  sample stack: {' <- '.join(a['stack'][:8])}")
    print("RESULT:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
