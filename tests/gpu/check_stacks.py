# SPDX-License-Identifier: BSD-3-Clause
"""Checks the leak stacks of gpuprobe --memleak --json --show-allocs against a GPU
workload's own account (issue 15).

  check_stacks.py cuda WORKLOAD_STDERR GPUPROBE_STDOUT
      tests/gpu/stacks_leak.cu: its three leaks are one stack naming stacks_leaf <-
      stacks_middle <- main, on the lines the program printed; nothing of stacks_temp.
  check_stacks.py torch SCRIPT WORKLOAD_STDERR GPUPROBE_STDOUT
      tests/gpu/stacks_torch.py: the allocation of each segment made for a kept tensor
      has a stack whose Python frames name the "# @grow", "# @layer" and "# @main"
      lines, in that order, among the native frames (not after them).
Prints what it saw; exits 1 when a check fails."""
import json
import re
import sys

ok = True


def check(cond, what):
    global ok
    print(("PASS " if cond else "FAIL ") + what)
    ok = ok and bool(cond)


def last_json(path, key):
    for line in reversed(open(path, errors="replace").read().splitlines()):
        line = line.strip()
        if line.startswith("{") and key in line:
            return json.loads(line)
    sys.exit(f"FAIL: no JSON line with {key} in {path}")


def final_proc(path, pid):
    rs = [json.loads(l) for l in open(path) if l.startswith('{"mode":"memleak"')]
    fin = [r for r in rs if r["report"] == "final"]
    if len(fin) != 1:
        sys.exit(f"FAIL: {len(fin)} final memleak reports in {path}")
    ps = [p for p in fin[0]["processes"] if p["pid"] == pid]
    if not ps:
        sys.exit(f"FAIL: PID {pid} not in the final report")
    print(f"report: stack_mode {fin[0]['stack_mode']}, dropped_events {fin[0]['dropped_events']}, "
          f"stack_unreadable {fin[0]['drops']['stack_unreadable']}")
    return fin[0], ps[-1]


def func(frame):
    return re.split(r"[+ ]", frame, 1)[0]


def show(s, n=40):
    print(f"  {s['outstanding_bytes']} bytes in {s['outstanding_allocs']} allocations from "
          f"{','.join(s['apis'])}, flags {s['flags']}:")
    for f in s["frames"][:n]:
        print("      " + f)
    if len(s["frames"]) > n:
        print(f"      ... {len(s['frames']) - n} more")


def cuda(truth_path, out_path):
    t = last_json(truth_path, '"lines"')
    rep, p = final_proc(out_path, t["pid"])
    print(f"workload: pid {t['pid']}, {t['leaks']} leaks, {t['leaked_bytes']} bytes, lines {t['lines']}")
    print(f"gpuprobe: {p['outstanding_allocs']} outstanding, {p['outstanding_bytes']} bytes, "
          f"{len(p['stacks'])} stacks")
    want = {int(a, 16) for a in t["addresses"]}
    mine = [s for s in p["stacks"] if {int(a["address"], 16) for a in s["allocs"]} & want]
    check(len(mine) == 1, f"the leaked buffers are one stack ({len(mine)})")
    if not mine:
        return
    s = mine[0]
    show(s)
    got = {int(a["address"], 16) for a in s["allocs"]}
    check(got == want, "its allocations are exactly the leaked buffers")
    names = [func(f) for f in s["frames"]]
    chain = ["stacks_leaf", "stacks_middle", "main"]
    idx = [names.index(n) if n in names else -1 for n in chain]
    check(all(i >= 0 for i in idx) and idx == sorted(idx) and idx[1] == idx[0] + 1,
          f"stacks_leaf <- stacks_middle ... main in order ({idx})")
    check(not s["partial"], f"a complete stack ({s['flags']})")
    lines = {func(f): f.rsplit(":", 1)[-1] for f in s["frames"] if " at stacks_leak.cu:" in f}
    check(all(lines.get(n) == str(t["lines"][n]) for n in chain), f"their lines {lines} = {t['lines']}")
    check(not any("stacks_temp" in f for x in p["stacks"] for f in x["frames"]), "nothing of the freed ones")


def tags(script):
    out = {}
    for n, line in enumerate(open(script), 1):
        m = re.search(r"# @(\w+)\s*$", line)
        if m:
            out[m.group(1)] = n
    return out


def torch(script, truth_path, out_path):
    t = last_json(truth_path, '"segments"')
    rep, p = final_proc(out_path, t["pid"])
    tg, base = tags(script), script.rsplit("/", 1)[-1]
    want = [f"{base}:{tg['grow']})", f"{base}:{tg['layer']})", f"{base}:{tg['main']})"]
    new = [s for s in t["segments"] if s["new"]]
    print(f"workload: pid {t['pid']}, python {t['python']}, torch {t['torch']}, expandable {t['expandable']}, "
          f"{len(new)} new segments {[s['size'] >> 20 for s in new]} MiB")
    print(f"gpuprobe: {p['outstanding_allocs']} outstanding, {p['outstanding_bytes']} bytes, "
          f"{len(p['stacks'])} stacks, mapped {p['mappings']['mapped_bytes']}")
    by_addr = {int(a["address"], 16): s for s in p["stacks"] for a in s["allocs"]}
    if t["expandable"]:
        # segments are mapped ranges of cuMemCreate handles: the handles' stacks
        found = [s for s in p["stacks"] if "physical" in s["kinds"] and any(w in f for w in want[:1] for f in s["frames"])]
        check(found, f"cuMemCreate stacks naming line {tg['grow']} ({len(found)})")
        cands = found
    else:
        cands = []
        for seg in new:
            s = by_addr.get(int(seg["address"], 16))
            check(s is not None, f"segment {seg['address']} ({seg['size'] >> 20} MiB) has an allocation")
            if s:
                cands.append(s)
    for s in {id(x): x for x in cands}.values():
        show(s, 60)
        py = [f for f in s["frames"] if ".py:" in f]
        pos = [next((i for i, f in enumerate(py) if w in f), -1) for w in want]
        check(all(i >= 0 for i in pos) and pos == sorted(pos),
              f"Python frames name lines {tg['grow']}, {tg['layer']}, {tg['main']} in order ({pos})")
        first = next((i for i, f in enumerate(s["frames"]) if ".py:" in f), -1)
        check(first > 0 and "python_after" not in s["flags"] and
              any("libtorch" in f or "libc10" in f for f in s["frames"][:first]),
              "PyTorch's native frames below them, interleaved (no python_after)")


def main():
    if sys.argv[1] == "cuda":
        cuda(*sys.argv[2:4])
    else:
        torch(*sys.argv[2:5])
    print("RESULT", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
