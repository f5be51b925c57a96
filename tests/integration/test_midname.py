# SPDX-License-Identifier: BSD-3-Clause
"""Kernel names after a mid-run attach (issue 13): handles made before `-p` attached are
named from the process's memory through a layout learned from handles gpuprobe saw named;
a handle of a kind no known handle taught stays unknown@0x..., and so do a forged handle and
a stale one (their launches fail in the driver). Never a wrong name. name_app's handles are
laid out as driver 580's (tests/fakecuda/fakecuda.c)."""
import signal

import gp
from gp import FAKECUDA, app, check, eq, proc

APP = app("name_app")


def attach(extra=(), app_args=("--wait", "--forge")):
    a = gp.start_app([APP] + list(app_args))
    g = gp.start_gpuprobe(["--cudatrace", "--json", "--libcuda", FAKECUDA, "-p", str(a.pid)] + list(extra))
    try:
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, "name_app exit")
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-500:]})")
    finally:
        a.kill()
        g.kill()
    t = gp.truth(a.stderr())
    return proc(gp.final(g.stdout(), "cudatrace"), a.pid), t


def by_handle(p):
    """handle -> (name, source, launches): one kernel row per handle in name_app."""
    out = {}
    for k in p["kernels"]:
        out[k["name"]] = k
    return out


def test_names_read_from_memory():
    p, t = attach()
    rows = by_handle(p)
    learned_kind = {"function"}  # late_kern, a CUfunction, is the only handle seen made
    named = 0
    for h in t["handles"]:
        want = h["name"]
        if h["kind"] in learned_kind:
            check(want in rows, f"{want[:60]!r} not named; got {sorted(rows)[:20]}")
            eq(rows[want]["launches"], h["launches"], f"{want[:40]} launches")
            eq(rows[want]["source"], "driver" if h["seen_created"] else "memory", f"{want[:40]} name source")
            named += h["launches"]
        else:
            # a CUkernel: no handle of its kind was seen named, so its layout is not learned
            unk = f"unknown@{h['handle']}"
            check(unk in rows, f"{h['name']} ({h['kind']}) should stay {unk}; rows {sorted(rows)}")
            eq(rows[unk]["launches"], h["launches"], f"{unk} launches")
    longest = max(len(k["name"]) for k in p["kernels"])
    eq(longest, t["longest_name_chars"], "the longest name whole (over 255 characters)")
    for bad in (t["forged"], t["stale"]):
        unk = f"unknown@{bad['handle']}"
        check(unk in rows, f"a handle the driver refused stays unknown: {bad}")
        eq(rows[unk]["launches"], bad["failed_launches"], f"{unk} launches (they failed)")
    check("forged_name" not in rows, "the forged handle's name was not taken")
    eq(p["launches"], t["launches"] + t["failed_launches"], "launches in all")
    eq(p["unnamed_launches"], p["launches"] - named, "unnamed launches")


def test_no_latency_reads_no_memory():
    """--no-latency has no launch returns: nothing is verified, so nothing is read."""
    p, t = attach(extra=["--no-latency"])
    eq([k["name"] for k in p["kernels"] if k["source"] == "memory"], [], "names read from memory")
    eq({k["name"] for k in p["kernels"] if k["source"] == "driver"}, {"late_kern()"}, "driver names")


def test_command_mode_names_everything():
    r = gp.gpuprobe(["--cudatrace", "--json", "--libcuda", FAKECUDA], cmd=[APP, "--forge"])
    eq(r.returncode, 0, f"exit status ({r.stderr[-500:]})")
    t = gp.truth(r.stderr)
    p = proc(gp.final(r.stdout, "cudatrace"), t["pid"])
    rows = by_handle(p)
    for h in t["handles"]:
        # a handle only cuModuleEnumerateFunctions returned was named by no call: its name
        # comes from memory, learned from the others
        want = "memory" if h["via"] == "cuModuleEnumerateFunctions" else "driver"
        check(h["name"] in rows, f"{h['name'][:50]} named")
        eq(rows[h["name"]]["source"], want, f"{h['name'][:40]} name source")
        eq(rows[h["name"]]["launches"], h["launches"], f"{h['name'][:40]} launches")


if __name__ == "__main__":
    gp.main([test_names_read_from_memory, test_no_latency_reads_no_memory, test_command_mode_names_everything])
