#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What one stack costs per allocation event, on the stand-in driver with
real BPF (root): `make bench-stacks`. Prints a Markdown report (docs/stacks.md
keeps a copy).

BPF side, per probe hit, from the kernel's own accounting (bpf_stats
run_time_ns / run_cnt) and as the workload sees it (ns per cuMemAlloc_v2
call in a loop, probe included):
  none   no probe                       empty  a probe that does nothing
  fp     bpf_get_stack (today's --memleak stacks: frame-pointer walk)
  copy   registers + 16 KiB stack copy into the ring buffer (stackcopy.bpf.h),
         the consumer woken at every record (libbpf's default)
  copy-nw  the same, submitted with BPF_RB_NO_WAKEUP (the consumer polls)
  copy+py  copy-nw and the Python frame walk (pystack.bpf.h)
User side, per event: the DWARF unwind of a copy with libdwfl (src/lib/unwind.c)
and with libunwind (tests/stacks/unwind_libunwind.c) on the same copies,
warm (files open) and the first unwind of a process (cold), and turning the
Python frames into names (warm cache).

Modes alternate within each repetition and medians are reported: a shared
machine's load moves single runs by tens of percent.
"""
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STK = os.path.join(ROOT, ".output", "stacks")
LIB = os.path.join(ROOT, ".output", "fakecuda", "libcuda.so.1")
PY = os.environ.get("BENCH_PYTHON", "/usr/bin/python3.11")
PYALLOC = os.path.join(ROOT, "tests", "stacks", "pyalloc.py")
REPS = int(os.environ.get("BENCH_REPS", "5"))
CALLS = int(os.environ.get("BENCH_CALLS", "20000"))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = {}
    for line in p.stdout.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if "frames" in o and "first_unwind_us" not in out:
            out["first_unwind_us"] = o["unwind_us"]
        for k in ("loop_ns_per_call", "bpf", "bench", "stats"):
            if k in o:
                out[k] = o[k]
    if p.returncode:
        raise SystemExit(f"{cmd}: {p.stderr}")
    return out


def loop_cmd(mode, python):
    if python:
        prog = [PY, PYALLOC, LIB, "loop", str(CALLS)]
    else:
        prog = [os.path.join(STK, "stackapp"), "loop", str(CALLS)]
    if mode == "none":
        return None, prog
    m = {"copy+py": "hit", "copy-nw": "copy"}.get(mode, mode)
    cmd = [os.path.join(STK, "stackprobe"), "--quiet", "--mode", m, "--lib", LIB,
           "--func", "cuMemAlloc_v2"]
    if mode in ("copy-nw", "copy+py"):
        cmd.append("--no-wakeup")
    if python:
        cmd.append("--python")
    return cmd + ["--"], prog


def loop_none(prog):
    """The workload without any probe: it waits for stdin after DONE."""
    p = subprocess.run(prog, input="\n" * 4, capture_output=True, text=True, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("READY"):
            continue
        if line.startswith("LOOP "):
            return float(line.split()[1])
    raise SystemExit(f"{prog}: no LOOP line: {p.stdout} {p.stderr}")


def bpf_costs(python):
    modes = ["none", "empty", "fp", "copy", "copy-nw"] + (["copy+py"] if python else [])
    call, run_ns = {m: [] for m in modes}, {m: [] for m in modes}
    for _ in range(REPS):
        for m in modes:
            probe, prog = loop_cmd(m, python)
            if probe is None:
                call[m].append(loop_none(prog))
                continue
            o = run(probe + prog)
            call[m].append(o["loop_ns_per_call"])
            run_ns[m].append(o["bpf"]["ns_per_run"])
    return modes, call, run_ns


def user_costs():
    rows = []
    cases = [("C chain, 8 frames", [os.path.join(STK, "stackapp"), "chain"], False),
             ("C recursion 30 deep", [os.path.join(STK, "stackapp"), "deep", "30"], False),
             ("Python 3.11 via ctypes", [PY, PYALLOC, LIB], True)]
    for name, prog, python in cases:
        samples = []
        for _ in range(REPS):
            cmd = [os.path.join(STK, "stackprobe"), "--bench", "2000", "--lib", LIB,
                   "--func", "cuMemAlloc_v2"] + (["--python"] if python else []) + ["--"] + prog
            samples.append(run(cmd))
        med = lambda f: statistics.median(f(s) for s in samples)
        rows.append((name, med(lambda s: s["bench"]["libdwfl_frames"]),
                     med(lambda s: s["first_unwind_us"]),
                     med(lambda s: s["bench"]["libdwfl_us"]),
                     med(lambda s: s["bench"]["libunwind_frames"]),
                     med(lambda s: s["bench"]["libunwind_us"]),
                     all(s["bench"]["same_frames"] == s["bench"]["events"] for s in samples),
                     med(lambda s: s["bench"]["py_frames"]),
                     med(lambda s: s["bench"]["py_format_us"])))
    return rows


def main():
    if os.geteuid() != 0:
        sys.exit("bench-stacks needs root (BPF)")
    load = open("/proc/loadavg").read().split()[:3]
    print(f"# Stack costs ({REPS} alternating repetitions, medians; {CALLS} calls a run;"
          f" load average {' '.join(load)} on {os.cpu_count()} CPUs)\n")
    for python in (False, True):
        modes, call, run_ns = bpf_costs(python)
        what = f"Python ({os.path.basename(PY)}, ctypes)" if python else "C (-O2 -fomit-frame-pointer)"
        print(f"## BPF side per allocation: {what}\n")
        print("| stack | BPF program ns/hit | workload ns/call | added over no stack (ns/call) |")
        print("|---|---|---|---|")
        base = statistics.median(call["empty"])
        for m in modes:
            rn = f"{statistics.median(run_ns[m]):.0f}" if run_ns[m] else "-"
            c = statistics.median(call[m])
            add = f"{c - base:+.0f}" if m not in ("none", "empty") else "-"
            print(f"| {m} | {rn} | {c:.0f} | {add} |")
        print()
    print("## User side per event (µs)\n")
    print("| workload | frames (libdwfl) | first unwind of the process | libdwfl warm | "
          "frames (libunwind) | libunwind warm | same pcs | Python frames | Python names warm |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in user_costs():
        print(f"| {r[0]} | {r[1]:.0f} | {r[2]:.0f} | {r[3]:.1f} | {r[4]:.0f} | {r[5]:.1f} | "
              f"{'yes' if r[6] else 'NO'} | {r[7]:.0f} | {r[8]:.2f} |")


if __name__ == "__main__":
    main()
