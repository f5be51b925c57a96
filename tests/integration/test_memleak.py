# SPDX-License-Identifier: BSD-3-Clause
"""--memleak end to end: real gpuprobe, real BPF, the stand-in driver, exact numbers."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import gp
from gp import FAKECUDA, app, check, eq, final, proc, truth

APP = app("memleak_app")
COPY_BUILT = os.uname().machine in ("x86_64", "aarch64")  # --stacks dwarf is built for these
BASE = ["--memleak", "--json", "--show-allocs", "--libcuda", FAKECUDA]

# --api of memleak_app -> (allocating entry point, kind)
FAMILIES = {
    "alloc": ("cuMemAlloc_v2", "device"),
    "pitch": ("cuMemAllocPitch_v2", "device"),
    "managed": ("cuMemAllocManaged", "managed"),
    "async": ("cuMemAllocAsync", "device"),
    "async_ptsz": ("cuMemAllocAsync_ptsz", "device"),
    "pool": ("cuMemAllocFromPoolAsync", "device"),
    "host": ("cuMemAllocHost_v2", "host_pinned"),
    "hostalloc": ("cuMemHostAlloc", "host_pinned"),
    "vmm": ("cuMemCreate", "physical"),
}


def allocs_of(p):
    """Every outstanding allocation of a process (--show-allocs lists them under their stack)."""
    return [a for s in p["stacks"] for a in s["allocs"]]


def check_exact(p, t, api=None, kind=None):
    eq(p["outstanding_allocs"], t["leaks"], "outstanding_allocs")
    eq(p["outstanding_bytes"], t["leaked_bytes"], "outstanding_bytes")
    eq(p["allocs_total"], t["allocs"], "allocs_total")
    # the workload counts frees of pre-attach allocations apart; gpuprobe counts every
    # successful free and says which were untracked
    eq(p["frees_total"], t["frees"] + t["untracked_frees"], "frees_total")
    eq(p["untracked_frees"], t["untracked_frees"], "untracked_frees")
    # grouped by stack: the groups add up to the process's totals
    eq(sum(s["outstanding_allocs"] for s in p["stacks"]), t["leaks"], "allocations over the stacks")
    eq(sum(s["outstanding_bytes"] for s in p["stacks"]), t["leaked_bytes"], "bytes over the stacks")
    eq((p["stacks_allocs"], p["stacks_bytes"]), (t["leaks"], t["leaked_bytes"]), "stacks_allocs, stacks_bytes")
    eq(len(allocs_of(p)), t["leaks"], "allocs listed")
    eq(sum(a["size"] for a in allocs_of(p)), t["leaked_bytes"], "sum of listed sizes")
    for s in p["stacks"]:
        eq(len(s["allocs"]), s["outstanding_allocs"], "allocations listed under their stack")
        eq(sum(a["size"] for a in s["allocs"]), s["outstanding_bytes"], "their bytes")
        check(s["oldest_age_s"] == max(a["age_s"] for a in s["allocs"]), "oldest_age_s is the oldest's")
    eq([s["outstanding_bytes"] for s in p["stacks"]],
       sorted((s["outstanding_bytes"] for s in p["stacks"]), reverse=True), "biggest stack first")
    if api:
        eq(sorted({a["api"] for a in allocs_of(p)}), [api], "api of outstanding allocations")
        eq(sorted({x for s in p["stacks"] for x in s["apis"]}), [api], "apis of the stacks")
    if kind:
        eq(sorted({a["kind"] for a in allocs_of(p)}), [kind], "kind")
        eq(p["by_kind"][kind]["bytes"], t["leaked_bytes"], f"by_kind.{kind}.bytes")
    for a in allocs_of(p):
        check(a["address"].startswith("0x"), f"address {a['address']}")
        check(a["age_s"] >= 0, "age")


def check_stacks(p):
    for s in p["stacks"]:
        frames = s["frames"]
        check(frames, f"stack of {s['outstanding_allocs']} allocations has no frames")
        check(not s["partial"], f"partial stack {s['flags']}: {frames}")
        check(any(f.startswith("workload_alloc+0x") and "(memleak_app)" in f for f in frames),
              f"no workload_alloc frame in {frames}")
        check(any(f.startswith("main+0x") for f in frames), f"no main frame in {frames}")


def run_family(name, extra=()):
    api, kind = FAMILIES[name]
    r = gp.gpuprobe(BASE, cmd=[APP, "--api", name, "--allocs", "10", "--leaks", "3"] + list(extra))
    eq(r.returncode, 0, f"exit status (stderr: {r.stderr[-800:]})")
    t = truth(r.stderr)
    rep = final(r.stdout)
    p = proc(rep, t["pid"])
    check_exact(p, t, api, kind)
    check_stacks(p)
    eq(rep["dropped_events"], 0, "dropped_events")
    check(p["exited"], "the command exited: its process should be marked exited")
    return rep, p, t


def test_command_cuMemAlloc():
    rep, p, t = run_family("alloc")
    eq(t["leaks"], 3, "workload leaks")
    eq(p["comm"], "memleak_app", "comm")
    eq(rep["calls"]["cuMemAlloc_v2"], 10, "successful cuMemAlloc_v2 calls seen in BPF")
    eq(rep["calls"]["cuMemFree_v2"], 7, "successful cuMemFree_v2 calls seen in BPF")


def test_each_allocation_family():
    for name in FAMILIES:
        if name == "alloc":
            continue
        try:
            run_family(name)
        except gp.Failure as e:
            raise gp.Failure(f"--api {name}: {e}")


def test_vmm_mappings():
    rep, p, t = run_family("vmm")
    eq(p["mappings"]["maps"], 10, "cuMemMap calls")
    eq(p["mappings"]["unmaps"], 7, "cuMemUnmap calls")
    eq(p["mappings"]["mapped_bytes"], t["leaked_bytes"], "bytes still mapped")


def test_frees_on_other_threads():
    r = gp.gpuprobe(BASE, cmd=[APP, "--allocs", "40", "--leaks", "5", "--threads", "4"])
    eq(r.returncode, 0, "exit status")
    t = truth(r.stderr)
    check_exact(proc(final(r.stdout), t["pid"]), t, "cuMemAlloc_v2", "device")


def test_slow_reader_final_report_is_whole():
    """A reader behind its buffers when the command exits (GPUPROBE_TEST_RECORD_US: 20 ms a
    record, so ~200 records take 4 s): the final report comes after every record is read,
    exact against the workload's own count, and the exit report before it. A final read
    bounded at 2 s left 13 of 35 frees out of both reports, with no drop said."""
    r = gp.gpuprobe(BASE, cmd=[APP, "--allocs", "40", "--leaks", "5", "--threads", "2"],
                    env={"GPUPROBE_TEST_RECORD_US": "20000"}, timeout=120)
    eq(r.returncode, 0, f"exit status: {r.stderr[-800:]}")
    t = truth(r.stderr)
    check_exact(proc(final(r.stdout), t["pid"]), t, "cuMemAlloc_v2", "device")
    kinds = [x["report"] for x in gp.reports(r.stdout)]
    eq(kinds[-2:], ["exit", "final"], "the exit report before the final one")
    check("after the final report" not in r.stderr, f"no record read after the report: {r.stderr[-400:]}")


def test_failed_calls_not_counted():
    r = gp.gpuprobe(BASE, cmd=[APP, "--allocs", "6", "--leaks", "2", "--failed", "5"])
    eq(r.returncode, 0, "exit status")
    t = truth(r.stderr)
    eq(t["failed_calls"], 10, "workload failed calls")
    rep = final(r.stdout)
    check_exact(proc(rep, t["pid"]), t)
    eq(rep["calls"]["cuMemAlloc_v2"], 6, "only successful allocations counted")


def test_exit_status_and_exit_report():
    r = gp.gpuprobe(BASE, cmd=[APP, "--allocs", "3", "--leaks", "1", "--exit-code", "7"])
    eq(r.returncode, 7, "gpuprobe exits with the command's status")
    t = truth(r.stderr)
    exits = gp.reports(r.stdout, "exit")
    eq([e["processes"][0]["pid"] for e in exits], [t["pid"]], "exit reports")
    eq(exits[0]["processes"][0]["outstanding_allocs"], 1, "leaks in the exit report")


def test_command_not_found():
    r = gp.gpuprobe(BASE, cmd=["/nonexistent/cmd"])
    eq(r.returncode, 127, "exit status")
    check("cannot run /nonexistent/cmd" in r.stderr, r.stderr)
    gp.assert_nothing_attached()


def test_text_report():
    r = gp.gpuprobe(["--memleak", "--libcuda", FAKECUDA], cmd=[APP, "--allocs", "5", "--leaks", "2"])
    eq(r.returncode, 0, "exit status")
    t = truth(r.stderr)
    # human units first, the exact count beside them (docs/design.md, "Output conventions")
    check(re.search(r"^PID %d \(memleak_app\) exited: 2 outstanding allocations, \S+ [KMG]iB \(%s B\)$"
                    % (t["pid"], f"{t['leaked_bytes']:,}"), r.stdout, re.M), r.stdout)
    check(re.search(r"^    5 allocations, 3 frees; device ", r.stdout, re.M), r.stdout)
    check("workload_alloc+0x" in r.stdout, "stack in the text report")
    check("memleak final report: 1 process, 2 outstanding allocations" in r.stdout, r.stdout)
    check("Dropped events" not in r.stdout, "no drop line when nothing was dropped")
    r = gp.gpuprobe(["--memleak", "--libcuda", FAKECUDA], cmd=[APP, "--allocs", "2", "--leaks", "1"])
    check("1 outstanding allocation," in r.stdout and "in 1 allocation from" in r.stdout, f"the singular: {r.stdout}")


def test_no_stacks():
    for flag in (["--no-stacks"], ["--stacks", "none"]):
        r = gp.gpuprobe(BASE + flag, cmd=[APP, "--allocs", "4", "--leaks", "2"])
        t = truth(r.stderr)
        rep = final(r.stdout)
        p = proc(rep, t["pid"])
        check_exact(p, t)
        eq(rep["stack_mode"], "none", "stacks mode")
        eq([(s["frames"], s["outstanding_allocs"]) for s in p["stacks"]], [([], 2)],
           f"one group without frames with {flag}")


def test_grouped_by_stack():
    """The default report: one entry per stack (bytes, allocations, oldest age, API),
    no per-allocation list unless --show-allocs."""
    r = gp.gpuprobe(["--memleak", "--json", "--libcuda", FAKECUDA],
                    cmd=[APP, "--allocs", "12", "--leaks", "5", "--threads", "3"])
    eq(r.returncode, 0, f"exit status {r.stderr[-500:]}")
    t = truth(r.stderr)
    rep = final(r.stdout)
    p = proc(rep, t["pid"])
    eq(len(p["stacks"]), 1, "the leaks come from one call site: one stack")
    s = p["stacks"][0]
    eq((s["outstanding_allocs"], s["outstanding_bytes"]), (t["leaks"], t["leaked_bytes"]), "its totals")
    eq(s["apis"], ["cuMemAlloc_v2"], "its API")
    eq(s["kinds"], ["device"], "its kind")
    check("allocs" not in s and "allocs" not in p, "no per-allocation list without --show-allocs")
    check(0 < s["oldest_age_s"] < 30, f"oldest age {s['oldest_age_s']}")
    # where the stack copy is not built (src/lib/unwind.h): frame pointers, said once
    eq(rep["stack_mode"], "dwarf" if COPY_BUILT else "fp", f"auto's choice on {os.uname().machine}")
    check(COPY_BUILT or r.stderr.count("--stacks auto: frame pointers (DWARF unwinding") == 1,
          f"the line saying why auto took frame pointers: {r.stderr[-600:]}")
    check(not COPY_BUILT or "--stacks auto: frame pointers" not in r.stderr,
          f"no notice where the copy is built: {r.stderr[-600:]}")
    check_stacks(p)
    # the text report: the group, its frames, then nothing per allocation
    r = gp.gpuprobe(["--memleak", "--libcuda", FAKECUDA], cmd=[APP, "--allocs", "12", "--leaks", "5"])
    t = truth(r.stderr)
    check(f"({t['leaked_bytes']:,} B) in 5 allocations from cuMemAlloc_v2, oldest" in r.stdout, r.stdout)
    check(" by cuMemAlloc_v2, age " not in r.stdout, "allocations listed without --show-allocs")
    r = gp.gpuprobe(["--memleak", "--show-allocs", "--libcuda", FAKECUDA], cmd=[APP, "--allocs", "12", "--leaks", "5"])
    eq(r.stdout.count(" by cuMemAlloc_v2, age "), 5, "--show-allocs lists each allocation in text")


def test_stacks_dwarf_where_it_is_not_built():
    """Off x86-64 and arm64 --stacks dwarf is a usage error: one line naming why, exit 2, and
    the command never runs (its stderr would hold the workload's account)."""
    if COPY_BUILT:
        gp.skip(f"{os.uname().machine} builds --stacks dwarf (test_grouped_by_stack and test_leakstacks run it)")
    r = gp.gpuprobe(BASE + ["--stacks", "dwarf"], cmd=[APP, "--allocs", "2", "--leaks", "1"])
    eq(r.returncode, 2, f"exit status ({r.stderr[-600:]})")
    lines = r.stderr.strip().splitlines()
    eq(len(lines), 1, f"one line: {lines}")
    check("--stacks dwarf: DWARF unwinding of a stack copy is built for x86-64 and arm64 only" in lines[0], lines[0])
    eq(r.stdout, "", "no report")


def folded_lines(path):
    out = []
    with open(path) as f:
        for line in f:
            stack, value = line.rstrip("\n").rsplit(" ", 1)
            out.append((stack.split(";"), int(value)))
    return out


def test_folded_sums_to_outstanding():
    """--folded: outstanding bytes per stack, root-first, the process at the root; the
    values add up to the final report's outstanding_bytes; gpuprobe flame draws it."""
    d = tempfile.mkdtemp(prefix="gp-folded-")
    try:
        path = os.path.join(d, "leaks.folded")
        r = gp.gpuprobe(BASE + ["--folded", path], cmd=[APP, "--api", "all", "--allocs", "6", "--leaks", "2"])
        eq(r.returncode, 0, f"exit status {r.stderr[-500:]}")
        rep = final(r.stdout)
        lines = folded_lines(path)
        want = sum(p["outstanding_bytes"] for p in rep["processes"])
        eq(sum(v for _, v in lines), want, "folded bytes = outstanding_bytes")
        eq(len(lines), sum(len(p["stacks"]) for p in rep["processes"]), "one line per stack")
        t = truth(r.stderr)
        for frames, v in lines:
            eq(frames[0], f"memleak_app (PID {t['pid']})", "the process at the root")
            check(frames[-1].startswith("cu") and "(libcuda.so.1)" in frames[-1], f"leaf frame {frames[-1]}")
            check(any(f.startswith("workload_alloc+") for f in frames), f"workload_alloc in {frames}")
        eq(oct(os.stat(path).st_mode & 0o777), "0o600", "folded file mode")
        svg = os.path.join(d, "leaks.svg")
        with open(svg, "w") as f:
            g = subprocess.run([gp.GPUPROBE, "flame", path], stdout=f, stderr=subprocess.PIPE, text=True)
        eq(g.returncode, 0, f"gpuprobe flame: {g.stderr}")
        c = subprocess.run([sys.executable, os.path.join(gp.ROOT, "tests", "tools", "check_flame.py"), svg,
                            "--folded", path], capture_output=True, text=True)
        eq(c.returncode, 0, f"check_flame: {c.stdout}{c.stderr}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_folded_refuses_symlink():
    d = tempfile.mkdtemp(prefix="gp-folded-")
    try:
        target = os.path.join(d, "victim")
        open(target, "w").write("keep\n")
        link = os.path.join(d, "link")
        os.symlink(target, link)
        r = gp.gpuprobe(BASE + ["--folded", link], cmd=[APP, "--allocs", "1", "--leaks", "1"])
        check(r.returncode != 0, "a symlinked --folded path must be refused")
        check("--folded" in r.stderr, r.stderr)
        eq(open(target).read(), "keep\n", "the link's target is untouched")
        gp.assert_nothing_attached()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_older_than():
    """--older-than: the stacks keep only allocations outstanding for longer; the totals
    stay whole."""
    a = gp.start_app([APP, "--wait", "--hold", "--allocs", "3", "--leaks", "3"])
    b = gp.start_app([APP, "--wait", "--hold", "--allocs", "2", "--leaks", "2", "--size", "8192"])
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "--older-than", "1.2", "-p", f"{a.pid},{b.pid}"])
        a.signal(signal.SIGUSR1)
        a.wait_for("HELD")
        time.sleep(1.6)
        b.signal(signal.SIGUSR1)
        b.wait_for("HELD")
        time.sleep(0.2)
        g.signal(signal.SIGTERM)
        eq(g.wait(), 0, "gpuprobe exit")
        rep = final(g.stdout())
        eq(rep["older_than_s"], 1.2, "older_than_s")
        pa, pb = proc(rep, a.pid), proc(rep, b.pid)
        eq((pa["stacks_allocs"], pa["outstanding_allocs"]), (3, 3), "the older process's allocations shown")
        eq(pa["stacks_bytes"], pa["outstanding_bytes"], "its bytes")
        eq((pb["stacks_allocs"], pb["stacks_bytes"], pb["stacks"]), (0, 0, []), "the younger ones left out")
        eq(pb["outstanding_allocs"], 2, "but counted in the totals")
    finally:
        for x in (a, b):
            x.signal(signal.SIGUSR1)
            x.kill()


def test_final_ages_at_the_end_not_after_the_teardown():
    """The final report describes the moment the run was told to end: without uprobe_multi
    (kernels before 6.6, forced here) the probes take seconds to come out, one RCU grace
    period each, and the allocations still held must not age by that time (they did: 8.9 s
    for a 0.1 s old allocation on 6.18, 2.0 s on 6.1 in QEMU)."""
    a = gp.start_app([APP, "--wait", "--hold", "--allocs", "3", "--leaks", "3"])
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "-p", str(a.pid)], env={"GPUPROBE_NO_UPROBE_MULTI": "1"})
        t_usr1 = time.time()
        a.signal(signal.SIGUSR1)
        a.wait_for("HELD")
        t_held = time.time()
        time.sleep(0.3)
        t_term = time.time()
        g.signal(signal.SIGTERM)
        eq(g.wait(timeout=120), 0, "gpuprobe exit")
        teardown = time.time() - t_term
        p = proc(final(g.stdout()), a.pid)
        eq(p["outstanding_allocs"], 3, "allocations held")
        age = max(s["oldest_age_s"] for s in p["stacks"])
        # the allocations came between SIGUSR1 and HELD; the run ended at SIGTERM
        lo, hi = t_term - t_held, t_term - t_usr1
        print(f"#   oldest age {age:.2f} s, between {lo:.2f} and {hi:.2f} s; teardown {teardown:.1f} s")
        check(lo - 0.05 <= age <= hi + 0.5 * gp.TIME_SLACK,
              f"oldest age {age:.2f} s, expected {lo:.2f} to {hi:.2f} s (the teardown took {teardown:.1f} s)")
    finally:
        a.signal(signal.SIGUSR1)
        a.kill()


def test_attach_to_running_pid():
    a = gp.start_app([APP, "--wait", "--pre", "2", "--allocs", "8", "--leaks", "3"])
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "--show-allocs", "-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
        eq(g.wait(), 0, "gpuprobe ends when its PID exits")
        t = truth(a.stderr())
        eq(t["untracked_frees"], 2, "workload frees of pre-attach allocations")
        p = proc(final(g.stdout()), a.pid)
        check_exact(p, t, "cuMemAlloc_v2")
        check_stacks(p)
        # the process ran before the attach: its report says so, with how long
        u = p["unseen_before_probes"]
        check(u is not None and u["after"] == "start" and u["gap_s"] is not None and u["gap_s"] > 0,
              f"calls before the attach not seen: {u}")
    finally:
        a.kill()


def test_interval_reports_while_running():
    a = gp.start_app([APP, "--wait", "--hold", "--allocs", "5", "--leaks", "4"])
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "--show-allocs", "-p", str(a.pid), "--interval", "0.3"])
        a.signal(signal.SIGUSR1)
        a.wait_for("HELD")
        deadline = time.time() + 10
        live = None
        while time.time() < deadline and live is None:
            for r in gp.reports(g.stdout(), "interval"):
                for p in r["processes"]:
                    if p["pid"] == a.pid and p["outstanding_allocs"] == 4:
                        live = p
            time.sleep(0.1)
        check(live is not None, "no interval report with the 4 live allocations")
        eq(live["exited"], False, "still running")
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
        eq(g.wait(), 0, "gpuprobe exit")
        t = truth(a.stderr())
        check_exact(proc(final(g.stdout()), a.pid), t)
    finally:
        a.kill()


def test_sigterm_gives_final_report():
    a = gp.start_app([APP, "--wait", "--hold", "--allocs", "3", "--leaks", "3"])
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "--show-allocs", "-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        a.wait_for("HELD")
        time.sleep(0.3)
        g.signal(signal.SIGTERM)
        eq(g.wait(), 0, "gpuprobe exit on SIGTERM")
        p = proc(final(g.stdout()), a.pid)
        eq(p["outstanding_allocs"], 3, "outstanding at SIGTERM")
        eq(p["exited"], False, "process still alive")
        gp.assert_nothing_attached()
    finally:
        a.kill()


def test_private_mount_namespace():
    """The workload sees its libcuda at a path that does not exist in gpuprobe's view."""
    d = tempfile.mkdtemp(prefix="gp-ns-")
    try:
        script = (f"mount -t tmpfs tmpfs {d} && cp {FAKECUDA} {d}/libcuda.so.1 && "
                  f"LD_LIBRARY_PATH={d} exec {APP} --wait --allocs 6 --leaks 2")
        a = gp.start_app(["unshare", "-m", "--propagation", "private", "sh", "-c", script])
        check(not os.path.exists(os.path.join(d, "libcuda.so.1")),
              "the library must be invisible outside the namespace")
        # the shell exec'ed the workload: the READY line carries its PID
        pid = int(a.stdout().split("READY")[1].split()[0])
        maps = open(f"/proc/{pid}/maps").read()
        check(f"{d}/libcuda.so.1" in maps, "workload maps the namespace's copy")
        g = gp.start_gpuprobe(["--memleak", "--json", "--show-allocs", "-p", str(pid)])
        os.kill(pid, signal.SIGUSR1)
        eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
        eq(g.wait(), 0, "gpuprobe exit")
        check(f"on /proc/{pid}/root{d}/libcuda.so.1" in g.stderr(), g.stderr())
        t = truth(a.stderr())
        p = proc(final(g.stdout()), pid)
        check_exact(p, t, "cuMemAlloc_v2")
        check_stacks(p)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_system_wide_discovers_library_and_later_processes():
    # no --libcuda: discovery through LD_LIBRARY_PATH, as for a node's ldconfig paths
    env = {"LD_LIBRARY_PATH": gp.FAKECUDA_DIR}
    g = gp.start_gpuprobe(["--memleak", "--json", "--show-allocs", "--interval", "0.5"], env=env)
    try:
        runs = []
        for leaks in (1, 2):
            r = gp.run([APP, "--allocs", "4", "--leaks", str(leaks)])
            eq(r.returncode, 0, "workload")
            runs.append(truth(r.stderr))
        # x GP_TIME_SLACK: under QEMU's TCG a reader busy with a new process's first stacks
        # (its files kept, its unwind tables read) wrote no exit report in 10 s once on 6.1
        deadline = time.time() + 10 * gp.TIME_SLACK
        seen = {}
        while time.time() < deadline and len(seen) < 2:
            for rep in gp.reports(g.stdout(), "exit"):
                for p in rep["processes"]:
                    seen[p["pid"]] = p
            time.sleep(0.1)
        for t in runs:
            check(t["pid"] in seen, f"no exit report for PID {t['pid']} within {10 * gp.TIME_SLACK:g} s")
            check_exact(seen[t["pid"]], t, "cuMemAlloc_v2")
        # exited processes leave the tables once reported: later reports forget them. Two
        # interval reports after the exit reports (0.5 s apart), not a fixed 1.2 s: a reader
        # busy with its first stacks writes none meanwhile (6.1 under QEMU's TCG: none in
        # stdout 1.2 s after the exit reports, an IndexError)
        deadline = time.time() + 10 * gp.TIME_SLACK
        later = []
        while time.time() < deadline and len(later) < 2:
            time.sleep(0.2)
            out = g.stdout()
            rs = [r for r in gp.json_lines(out[:out.rfind("\n") + 1]) if r.get("mode") == "memleak"]
            ex = [i for i, r in enumerate(rs) if r.get("report") == "exit"]
            later = [r for r in rs[ex[-1] + 1:] if r.get("report") == "interval"] if ex else []
        check(len(later) >= 2, f"two interval reports after the exit reports within {10 * gp.TIME_SLACK:g} s: {len(later)}")
        last = later[-1]
        eq([p["pid"] for p in last["processes"] if p["pid"] in seen], [],
           "exited processes still reported")
    finally:
        g.signal(signal.SIGINT)
        eq(g.wait(), 0, "gpuprobe exit on SIGINT")
    final(g.stdout())


def test_duration():
    a = gp.start_app([APP, "--wait", "--hold", "--allocs", "2", "--leaks", "2"])
    try:
        t0 = time.time()
        r = gp.gpuprobe(["--memleak", "--json", "--show-allocs", "-p", str(a.pid), "--duration", "1"])
        eq(r.returncode, 0, "exit status")
        check(0.9 < time.time() - t0 < 8 * gp.TIME_SLACK, "--duration 1 took %.1fs" % (time.time() - t0))
        final(r.stdout)
    finally:
        a.kill()


def test_ring_buffer_overflow_is_counted():
    # a 4 KiB ring buffer and a consumer that starts late: most events cannot fit
    r = gp.gpuprobe(BASE + ["--ringbuf-size", "4096"],
                    cmd=[app("memleak_burst"), "--allocs", "500", "--threads", "2"],
                    env={"GPUPROBE_TEST_STALL_MS": "1500"})
    eq(r.returncode, 0, f"exit status {r.stderr[-500:]}")
    rep = final(r.stdout)
    t = truth(r.stderr)
    ringbuf = rep["drops"]["ringbuf_full"]
    check(ringbuf > 0, "expected ring buffer drops")
    calls = rep["calls"]["cuMemAlloc_v2"] + rep["calls"]["cuMemFree_v2"]
    eq(calls, 2000, "successful calls counted in BPF")
    p = proc(rep, t["pid"])
    # every record is either delivered or counted as dropped: nothing vanishes (the
    # process's exit record goes through the same buffer)
    exit_seen = any(e["processes"][0]["pid"] == t["pid"] for e in gp.reports(r.stdout, "exit"))
    eq(p["allocs_total"] + p["frees_total"] + ringbuf, calls + (0 if exit_seen else 1),
       "delivered + dropped")
    check(rep["dropped_events"] >= ringbuf, "dropped_events includes ring buffer drops")


def test_allocation_table_limit_is_counted():
    r = gp.gpuprobe(BASE + ["--max-allocs", "4"], cmd=[APP, "--allocs", "10", "--leaks", "10"])
    rep = final(r.stdout)
    t = truth(r.stderr)
    p = proc(rep, t["pid"])
    eq(p["outstanding_allocs"], 4, "allocations kept")
    eq(rep["drops"]["allocation_table_full"], 6, "allocations beyond --max-allocs")
    eq(rep["dropped_events"], 6, "dropped_events")


def test_direct_caller_in_stacks():
    """Frame 1 is the driver function's direct caller. A stack taken at a function's first
    instruction lacks it wherever the kernel does not add it: arm64, x86-64 before 6.11
    (and its 6.1.y/6.6.y backports), and x86-64 functions that begin with anything but
    push %rbp or endbr64, as the stand-in's cuMemAllocManaged and cuMemAllocFromPoolAsync
    do (gcc's shrink-wrapping). The caller's return address is on the stack top or in the
    link register, in no frame record yet; gpuprobe's BPF puts it in (bpf/gp_arch.bpf.h)."""
    for api, fn, caller in (("alloc", "cuMemAlloc_v2", "alloc_alloc"),
                            ("managed", "cuMemAllocManaged", "managed_alloc"),
                            ("pool", "cuMemAllocFromPoolAsync", "pool_alloc")):
        r = gp.gpuprobe(BASE, cmd=[APP, "--api", api, "--allocs", "3", "--leaks", "2"])
        eq(r.returncode, 0, f"{api}: exit status (stderr: {r.stderr[-800:]})")
        t = truth(r.stderr)
        p = proc(final(r.stdout), t["pid"])
        eq(len(allocs_of(p)), 2, f"{api}: outstanding allocations")
        for g in p["stacks"]:
            s = g["frames"]
            check(len(s) >= 3, f"{api}: stack too short: {s}")
            check(s[0].startswith(fn + "+0x0 "), f"{api}: frame 0 should be {fn}: {s}")
            check(s[1].startswith(caller + "+0x"), f"{api}: frame 1 should be the caller {caller}: {s}")
            check(s[2].startswith("workload_alloc+0x"), f"{api}: frame 2 should be its caller: {s}")


def test_a_command_that_makes_no_cuda_call_says_so():
    """A run whose probes never fired ends with one line that says so and why, rather than
    a silent "0 processes"; the command's exit status stays gpuprobe's."""
    r = gp.gpuprobe(BASE, cmd=["true"])
    eq(r.returncode, 0, f"exit status (stderr: {r.stderr[-600:]})")
    check("gpuprobe: no CUDA call seen: 1 libcuda file probed, none called" in r.stderr, r.stderr[-600:])
    r = gp.gpuprobe(["--memleak", "--json"], cmd=["sh", "-c", "exit 3"], env={"LD_LIBRARY_PATH": ""})
    eq(r.returncode, 3, f"the command's exit status (stderr: {r.stderr[-600:]})")
    check("gpuprobe: no CUDA call seen:" in r.stderr, r.stderr[-600:])
    eq(final(r.stdout)["processes"], [], "no process in the report")
    # text: the empty report says why, under it
    r = gp.gpuprobe(["--memleak", "--libcuda", FAKECUDA], cmd=["true"])
    check(re.search(r"memleak final report: 0 processes, 0 outstanding allocations, 0 B\n"
                    r"  nothing to report: no CUDA call seen: 1 libcuda file probed, none called", r.stdout), r.stdout)
    # a program that calls the driver, but none of the functions the mode probes (memleak_app
    # allocates: no launch, no synchronization): the hint names the mode, not "no call at all"
    r = gp.gpuprobe(["--cudatrace", "--libcuda", FAKECUDA], cmd=[APP, "--allocs", "2", "--leaks", "1"])
    eq(r.returncode, 0, f"exit status (stderr: {r.stderr[-600:]})")
    check("none called (the processes made none of the calls cudatrace follows, or no CUDA call at all" in r.stdout,
          r.stdout[-600:])


def test_graph_memory_nodes():
    """Memory CUDA graphs allocate and free (tests/apps/graphmem_app.c: alloc + free nodes,
    an alloc node freed by the stream after each launch, one never freed, a captured
    cuMemAllocAsync/cuMemFreeAsync): the graph's allocation is tracked from its node, so
    no free is untracked, a free of memory a relaunch made again is counted as such, and
    the graph memory never freed is outstanding, kind "graph", with its stack."""
    r = gp.gpuprobe(BASE, cmd=[app("graphmem_app"), "--launches", "3"])
    eq(r.returncode, 0, f"exit status (stderr: {r.stderr[-800:]})")
    t = truth(r.stderr)
    rep = final(r.stdout)
    p = proc(rep, t["pid"])
    eq(p["untracked_frees"], 0, "no free of graph memory is untracked")
    eq(p["graph_relaunch_frees"], t["graph_relaunch_frees"], "frees of what a relaunch made again")
    eq(p["allocs_total"], t["allocs"], "allocation nodes and the captured allocation")
    eq(p["outstanding_allocs"], t["leaks"], "the graph memory never freed")
    eq(p["outstanding_bytes"], t["leaked_bytes"], "its bytes")
    eq(p["by_kind"]["graph"], {"bytes": t["leaked_bytes"], "allocs": t["leaks"]}, "of kind graph")
    eq(rep["calls"]["cuGraphAddMemAllocNode"], 3, "allocation nodes seen")
    eq(rep["calls"]["cuGraphAddMemFreeNode"], 1, "free nodes seen")
    st = p["stacks"][0]
    eq(st["apis"], ["cuGraphAddMemAllocNode"], "made by its node")
    eq(int(st["allocs"][0]["address"], 16), t["leaked_address"], "at the node's address")
    check(any(f.startswith("alloc_node+0x") and "(graphmem_app)" in f for f in st["frames"]), st["frames"])


def test_perf_event_uprobe_fallback():
    """Kernels before 6.6 have no uprobe_multi links: one perf-event uprobe per function."""
    r = gp.gpuprobe(BASE, cmd=[APP, "--api", "async", "--allocs", "5", "--leaks", "2"],
                    env={"GPUPROBE_NO_UPROBE_MULTI": "1"})
    eq(r.returncode, 0, "exit status")
    t = truth(r.stderr)
    check_exact(proc(final(r.stdout), t["pid"]), t, "cuMemAllocAsync", "device")
    gp.assert_nothing_attached()


def test_perf_event_uprobes_raise_the_descriptor_limit():
    """Without uprobe_multi every probe holds two descriptors: gpuprobe raises its soft
    RLIMIT_NOFILE to the hard limit (--trace's 525 probes on 6.1 failed with "Too many open
    files" under the usual 1024). Here the soft limit is 64, below memleak's 84."""
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 256:
        gp.skip(f"the hard RLIMIT_NOFILE here is {hard}: no room to raise into")
    r = gp.run([gp.GPUPROBE] + BASE + ["-o", "-", "--", APP, "--allocs", "5", "--leaks", "2"],
               env={"GPUPROBE_NO_UPROBE_MULTI": "1", "GPUPROBE_STATE_DIR": gp.state_dir()},
               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard)), timeout=120)
    eq(r.returncode, 0, f"exit status ({r.stderr[-800:]})")
    t = truth(r.stderr)
    check_exact(proc(final(r.stdout), t["pid"]), t)
    gp.assert_nothing_attached()


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
