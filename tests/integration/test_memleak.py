# SPDX-License-Identifier: BSD-3-Clause
"""--memleak end to end: real gpuprobe, real BPF, the stand-in driver, exact numbers."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import gp
from gp import FAKECUDA, app, check, eq, final, proc, truth

APP = app("memleak_app")
BASE = ["--memleak", "--json", "--libcuda", FAKECUDA]

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


def check_exact(p, t, api=None, kind=None):
    eq(p["outstanding_allocs"], t["leaks"], "outstanding_allocs")
    eq(p["outstanding_bytes"], t["leaked_bytes"], "outstanding_bytes")
    eq(p["allocs_total"], t["allocs"], "allocs_total")
    # the workload counts frees of pre-attach allocations apart; gpuprobe counts every
    # successful free and says which were untracked
    eq(p["frees_total"], t["frees"] + t["untracked_frees"], "frees_total")
    eq(p["untracked_frees"], t["untracked_frees"], "untracked_frees")
    eq(len(p["allocs"]), t["leaks"], "allocs listed")
    eq(sum(a["size"] for a in p["allocs"]), t["leaked_bytes"], "sum of listed sizes")
    if api:
        eq(sorted({a["api"] for a in p["allocs"]}), [api], "api of outstanding allocations")
    if kind:
        eq(sorted({a["kind"] for a in p["allocs"]}), [kind], "kind")
        eq(p["by_kind"][kind]["bytes"], t["leaked_bytes"], f"by_kind.{kind}.bytes")
    for a in p["allocs"]:
        check(a["address"].startswith("0x"), f"address {a['address']}")
        check(a["age_s"] >= 0, "age")


def check_stacks(p):
    for a in p["allocs"]:
        frames = a["stack"]
        check(frames, f"allocation {a['address']} has no stack")
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
    check(f"PID {t['pid']} (memleak_app) exited: 2 outstanding allocations, {t['leaked_bytes']} bytes"
          in r.stdout, r.stdout)
    check("workload_alloc+0x" in r.stdout, "stack in the text report")
    check("memleak final report" in r.stdout, r.stdout)
    check("Dropped events: 0" in r.stdout, r.stdout)


def test_no_stacks():
    r = gp.gpuprobe(BASE + ["--no-stacks"], cmd=[APP, "--allocs", "4", "--leaks", "2"])
    t = truth(r.stderr)
    p = proc(final(r.stdout), t["pid"])
    check_exact(p, t)
    eq([a["stack"] for a in p["allocs"]], [[], []], "stacks with --no-stacks")


def test_attach_to_running_pid():
    a = gp.start_app([APP, "--wait", "--pre", "2", "--allocs", "8", "--leaks", "3"])
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, "workload exit")
        eq(g.wait(), 0, "gpuprobe ends when its PID exits")
        t = truth(a.stderr())
        eq(t["untracked_frees"], 2, "workload frees of pre-attach allocations")
        p = proc(final(g.stdout()), a.pid)
        check_exact(p, t, "cuMemAlloc_v2")
        check_stacks(p)
    finally:
        a.kill()


def test_interval_reports_while_running():
    a = gp.start_app([APP, "--wait", "--hold", "--allocs", "5", "--leaks", "4"])
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "-p", str(a.pid), "--interval", "0.3"])
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
        eq(a.wait(), 0, "workload exit")
        eq(g.wait(), 0, "gpuprobe exit")
        t = truth(a.stderr())
        check_exact(proc(final(g.stdout()), a.pid), t)
    finally:
        a.kill()


def test_sigterm_gives_final_report():
    a = gp.start_app([APP, "--wait", "--hold", "--allocs", "3", "--leaks", "3"])
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "-p", str(a.pid)])
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
        g = gp.start_gpuprobe(["--memleak", "--json", "-p", str(pid)])
        os.kill(pid, signal.SIGUSR1)
        eq(a.wait(), 0, "workload exit")
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
    g = gp.start_gpuprobe(["--memleak", "--json", "--interval", "0.5"], env=env)
    try:
        runs = []
        for leaks in (1, 2):
            r = gp.run([APP, "--allocs", "4", "--leaks", str(leaks)])
            eq(r.returncode, 0, "workload")
            runs.append(truth(r.stderr))
        deadline = time.time() + 10
        seen = {}
        while time.time() < deadline and len(seen) < 2:
            for rep in gp.reports(g.stdout(), "exit"):
                for p in rep["processes"]:
                    seen[p["pid"]] = p
            time.sleep(0.1)
        for t in runs:
            check(t["pid"] in seen, f"no exit report for PID {t['pid']}")
            check_exact(seen[t["pid"]], t, "cuMemAlloc_v2")
        # exited processes leave the tables once reported: later reports forget them
        time.sleep(1.2)
        last = gp.reports(g.stdout(), "interval")[-1]
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
        r = gp.gpuprobe(["--memleak", "--json", "-p", str(a.pid), "--duration", "1"])
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
        eq(len(p["allocs"]), 2, f"{api}: outstanding allocations")
        for a in p["allocs"]:
            s = a["stack"]
            check(len(s) >= 3, f"{api}: stack too short: {s}")
            check(s[0].startswith(fn + "+0x0 "), f"{api}: frame 0 should be {fn}: {s}")
            check(s[1].startswith(caller + "+0x"), f"{api}: frame 1 should be the caller {caller}: {s}")
            check(s[2].startswith("workload_alloc+0x"), f"{api}: frame 2 should be its caller: {s}")


def test_perf_event_uprobe_fallback():
    """Kernels before 6.6 have no uprobe_multi links: one perf-event uprobe per function."""
    r = gp.gpuprobe(BASE, cmd=[APP, "--api", "async", "--allocs", "5", "--leaks", "2"],
                    env={"GPUPROBE_NO_UPROBE_MULTI": "1"})
    eq(r.returncode, 0, "exit status")
    t = truth(r.stderr)
    check_exact(proc(final(r.stdout), t["pid"]), t, "cuMemAllocAsync", "device")
    gp.assert_nothing_attached()


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
