# SPDX-License-Identifier: BSD-3-Clause
"""Checks gpuprobe on programs that exit at once (issue 29 items 1-2, run_exit_names.sh):
  check_exit_names.py leak REPORT.json SOURCE.py [TAG ...]
      the leak's stack (the largest outstanding one) has every CPython frame of the tags,
      in order (innermost first), on their lines, complete and with no python_* flag;
  check_exit_names.py launch REPORT.json PID PROFILER_JSON
      the process's launches: at least 99 % named, none unnamed for want of a layout or
      because it was gone before its names were read (unnamed_unread), every name one the
      CUDA profiler recorded for the same loop.
Prints what it saw and PASS/FAIL; exit 1 on a failure."""
import json
import re
import sys


def final(path, mode):
    reps = [json.loads(l) for l in open(path) if l.startswith("{") and '"mode"' in l]
    return [r for r in reps if r.get("mode") == mode and r.get("report") == "final"][-1]


def leak(path, src, names):
    tags = {}
    for n, line in enumerate(open(src), 1):
        m = re.search(r"# @(\w+)", line)
        if m:
            tags[m.group(1)] = n
    rep = final(path, "memleak")
    stacks = sorted((s for p in rep["processes"] for s in p["stacks"]), key=lambda s: -s["outstanding_bytes"])
    s = stacks[0]
    print("\n".join("    " + f for f in s["frames"]))
    print("flags", s["flags"], "partial", s["partial"], "drops", rep["drops"])
    base = src.rsplit("/", 1)[-1]
    py = [re.sub(r"\((/[^:]*/)?([^/:]+\.py):", r"(\2:", f) for f in s["frames"] if ".py:" in f or f.endswith("(?)")]
    # a list comprehension is a frame of its own before 3.12
    mine = [f for f in py if (f"({base}:" in f or f.endswith("(?)")) and "<listcomp>" not in f]
    want = [f"{n} ({base}:{tags[t]})" for n, t in names]
    good = mine[:len(want)] == want and not s["partial"] and not [f for f in s["flags"] if f.startswith("python")]
    print("want", want, "got", mine)
    print("PASS" if good else "FAIL")
    return good


def launch(path, pid, prof_path):
    prof = [json.loads(l) for l in open(prof_path) if l.startswith("{") and '"profiler"' in l][-1]
    rep = final(path, "cudatrace")
    p = next(p for p in rep["processes"] if p["pid"] == pid)
    named = p["launches"] - p["unnamed_launches"]
    gnames = {k["name"] for k in p["kernels"] if k["source"] != "none"}
    foreign = sorted(gnames - set(prof["kernels"]))
    print(f"PID {pid} ({p['comm']}) {p['launches']} launches, {named} named ({100 * named / max(p['launches'], 1):.2f} %), "
          f"no layout {p['unnamed_no_layout']}, unread {p.get('unnamed_unread')}, by source "
          f"{sorted({k['source'] for k in p['kernels']})}; {len(gnames)} names, {len(foreign)} not in the profiler's; "
          f"exited {p.get('exited')}; dropped {rep['dropped_events']}")
    for n in foreign[:5]:
        print(f"  gpuprobe only: {n[:120]}")
    good = named >= 0.99 * p["launches"] and p["launches"] > 0 and not p["unnamed_no_layout"] and \
        not p.get("unnamed_unread") and not foreign
    print("PASS" if good else "FAIL")
    return good


if __name__ == "__main__":
    if sys.argv[1] == "leak":
        pairs = [tuple(a.split("=")) for a in sys.argv[4:]]
        ok = leak(sys.argv[2], sys.argv[3], pairs)
    else:
        ok = launch(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    sys.exit(0 if ok else 1)
