# SPDX-License-Identifier: BSD-3-Clause
"""Issue 29 item 1 on the real GPU: names of a PyTorch loop at steady state after -p.
  check_steady_names.py PID PROFILER_JSON ATTACH1_STDOUT [ATTACH2 ...]
Each attach: launches, named share (>= 99 % to pass), launches unnamed for want of a layout,
name sources; the kernel names against torch.profiler's (every name gpuprobe gives is one
the profiler recorded, and the profiler's kernels launched by the loop are named)."""
import collections
import json
import sys

from check_issue13 import final


def main():
    pid, prof_path, attaches = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    prof = [json.loads(l) for l in open(prof_path) if l.startswith("{") and '"profiler"' in l][-1]
    pnames = set(prof["kernels"])
    per_step = sum(prof["kernels"].values()) / prof["steps"]
    print(f"torch.profiler: {len(pnames)} kernel names, {per_step:.1f} kernels a step ({prof['steps']} steps)")
    ok = True
    for i, path in enumerate(attaches, 1):
        rep, p = final(path, pid)
        src = collections.Counter()
        for k in p["kernels"]:
            src[k["source"]] += k["launches"]
        named = p["launches"] - p["unnamed_launches"]
        share = named / max(p["launches"], 1)
        gnames = {k["name"] for k in p["kernels"] if k["source"] != "none"}
        foreign = sorted(gnames - pnames)
        missing = sorted(pnames - gnames)
        print(f"attach {i}: PID {pid} ({p['comm']}) {p['launches']} launches, {named} named ({100 * share:.2f} %), "
              f"unnamed {p['unnamed_launches']} (no layout {p.get('unnamed_no_layout')}), by source {dict(src)}; "
              f"{len(gnames)} names, {len(gnames & pnames)} also in the profiler's, "
              f"{len(foreign)} not there, {len(missing)} of the profiler's not seen; "
              f"dropped {rep['dropped_events']}")
        for n in foreign[:5]:
            print(f"  gpuprobe only: {n[:120]}")
        for n in missing[:5]:
            print(f"  profiler only: {n[:120]}")
        good = share >= 0.99 and p["comm"] != ""
        print(f"  {'PASS' if good else 'FAIL'}")
        ok &= good
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
