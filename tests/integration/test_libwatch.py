# SPDX-License-Identifier: BSD-3-Clause
"""Libraries loaded after gpuprobe started (src/core/libwatch.c), end to end with real BPF:
a libcuda a Python program loads with ctypes from a folder nobody named (the dynamic
linker's hook, then --memleak's exact counts); a libnccl bind-mounted in a private mount
namespace, found through the process's own root; a file named libnccl.so.2 that is not NCCL
refused with one warning; the hook's calls counted once per consistent link map."""
import os
import shutil
import signal
import tempfile
import time

import gp
from gp import FAKECUDA, OUT, app, check, eq

FAKENCCL = os.path.join(OUT, "fakenccl", "libnccl.so.2")
DLOPEN_APP = app("nccl_dlopen_app")

LATE_CUDA = r'''
import ctypes, os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
lib = ctypes.CDLL(sys.argv[1])
print("LOADED %d" % os.getpid(), flush=True)
signal.sigwait({signal.SIGUSR1})
ctx, p = ctypes.c_void_p(), ctypes.c_uint64()
assert lib.cuInit(0) == 0
assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert lib.cuCtxSetCurrent(ctx) == 0
for i in range(int(sys.argv[2])):
    assert lib.cuMemAlloc_v2(ctypes.byref(p), 4096 * (i + 1)) == 0
print('{"pid":%d,"api":"late_cuda","allocs":%s}' % (os.getpid(), sys.argv[2]), file=sys.stderr)
'''


def copy_to(name, src):
    d = tempfile.mkdtemp(prefix="gp-late-")
    shutil.copy(src, os.path.join(d, name))
    return d, os.path.join(d, name)


def wait_line(b, text, where="stdout", timeout=20):
    return b.wait_for(text, where=where, timeout=timeout)


def test_one_pid_probes_no_other_process():
    """-p PID: another process that starts and maps a libcuda file of its own meanwhile
    (its exec record reaches gpuprobe: the tracepoint is node-wide without a followed set)
    is not probed, not reported; the target's leaks are exact."""
    d = tempfile.mkdtemp(prefix="gp-other-")
    os.chmod(d, 0o755)
    for sub, src in (("apps", app("memleak_app")), ("fakecuda", FAKECUDA)):
        os.mkdir(os.path.join(d, sub))
        shutil.copy(src, os.path.join(d, sub))
    a = gp.start_app([app("memleak_app"), "--wait", "--allocs", "5", "--leaks", "2"])
    other = []
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "-p", str(a.pid)])
        for _ in range(3):  # while the target runs: another libcuda file, another process
            b = gp.start_app([os.path.join(d, "apps", "memleak_app"), "--wait", "--allocs", "3", "--leaks", "1"])
            other.append(b.pid)
            time.sleep(0.5)  # the exec record is read, the library mapped by now
            b.signal(signal.SIGUSR1)
            eq(b.wait(), 0, "the other process")
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, "the target")
        eq(g.wait(timeout=30), 0, f"gpuprobe ({g.stderr()[-500:]})")
    finally:
        a.kill()
        shutil.rmtree(d, ignore_errors=True)
    err = g.stderr()
    check(not any(f"of PID {p} " in err for p in other) and "probing libcuda" not in err,
          f"a process not asked for was probed:\n{err[-1500:]}")
    rep = gp.final(g.stdout())
    eq([p["pid"] for p in rep["processes"]], [a.pid], "the target alone in the report")
    t = gp.truth(a.stderr())
    eq(gp.proc(rep, a.pid)["outstanding_allocs"], t["leaks"], "the target's leaks")


def other_copy():
    """A folder (0755) with memleak_app and a copy of the stand-in libcuda beside it, found
    through its RUNPATH ($ORIGIN/../fakecuda): an unrelated process on another libcuda file."""
    d = tempfile.mkdtemp(prefix="gp-other-")
    os.chmod(d, 0o755)
    for sub, src in (("apps", app("memleak_app")), ("fakecuda", FAKECUDA)):
        os.mkdir(os.path.join(d, sub))
        shutil.copy(src, os.path.join(d, sub))
    return d


def check_not_probed(err, d, pids):
    """-v's log names every file probed and every process it was found in: neither the
    other copy's folder nor the other processes may appear (issue 32)."""
    check(d not in err and not any(f"of PID {p} " in err for p in pids),
          f"a process not asked for was probed:\n{err[-2500:]}")


def test_command_probes_no_other_process():
    """-- cmd: an unrelated process mapping another copy of the stand-in libcuda, running
    before gpuprobe starts (found among the running processes before the fix) and another
    starting during the run, are neither probed, nor logged, nor reported; the command's
    leaks are exact."""
    d = other_copy()
    other = []
    try:
        before = gp.start_app([os.path.join(d, "apps", "memleak_app"), "--wait", "--allocs", "2", "--leaks", "1"])
        other.append(before.pid)
        cmd = ["sh", "-c", f"sleep 1.5; exec {app('memleak_app')} --allocs 5 --leaks 2"]
        g = gp.Background([gp.GPUPROBE, "--memleak", "--json", "-v", "-o", "-", "--"] + cmd,
                          env=gp._with_state(None))
        g.wait_for("gpuprobe: tracing", where="stderr")
        during = gp.Background([os.path.join(d, "apps", "memleak_app"), "--allocs", "3", "--leaks", "1"])
        other.append(during.pid)
        eq(during.wait(), 0, "the other process started during the run")
        eq(g.wait(timeout=30), 0, f"gpuprobe ({g.stderr()[-500:]})")
        before.signal(signal.SIGUSR1)
        eq(before.wait(), 0, "the other process started before the run")
    finally:
        for p in other:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(d, ignore_errors=True)
    err = g.stderr()
    check_not_probed(err, d, other)
    rep = gp.final(g.stdout())
    t = gp.truth(err)
    eq([p["pid"] for p in rep["processes"]], [t["pid"]], "the command alone in the report")
    eq(gp.proc(rep, t["pid"])["outstanding_allocs"], t["leaks"], "the command's leaks")


def test_tree_probes_no_other_process():
    """-p PARENT --tree: the parent's children (running, and forked later) are probed and
    exact; an unrelated process on another libcuda copy, running before and during the run,
    is not probed nor logged nor reported."""
    d = other_copy()
    other = []
    fa = gp.Background([app("fork_app"), "--wait-children", "--children", "2"])
    try:
        before = gp.start_app([os.path.join(d, "apps", "memleak_app"), "--wait", "--allocs", "2", "--leaks", "1"])
        other.append(before.pid)
        deadline = time.time() + 20
        while fa.stdout().count("READY") < 2 and time.time() < deadline:
            time.sleep(0.05)
        kids = [int(l.split()[1]) for l in fa.stdout().splitlines() if l.startswith("READY")]
        eq(len(kids), 2, "children waiting")
        g = gp.start_gpuprobe(["--memleak", "--json", "-v", "-p", str(fa.pid), "--tree"])
        during = gp.Background([os.path.join(d, "apps", "memleak_app"), "--allocs", "3", "--leaks", "1"])
        other.append(during.pid)
        eq(during.wait(), 0, "the other process started during the run")
        for k in kids:
            os.kill(k, signal.SIGUSR1)
        eq(fa.wait(), 0, "fork_app")
        eq(g.wait(timeout=30), 0, f"gpuprobe ({g.stderr()[-500:]})")
        before.signal(signal.SIGUSR1)
        eq(before.wait(), 0, "the other process started before the run")
    finally:
        fa.kill()
        for p in other:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(d, ignore_errors=True)
    check_not_probed(g.stderr(), d, other)
    rep = gp.final(g.stdout())
    tree = gp.truth(fa.stderr())
    got = {p["pid"] for p in rep["processes"]}
    check(not got & set(other), f"another process in the report: {got}")
    for t in tree["processes"]:
        if t["pid"] == fa.pid:
            continue  # its CUDA work came before the attach
        eq(gp.proc(rep, t["pid"])["outstanding_allocs"], t["leaks"], f"child {t['pid']}'s leaks")


def test_libcuda_loaded_by_python_later():
    d, lib = copy_to("libcuda.so.1", FAKECUDA)
    script = os.path.join(d, "late.py")
    with open(script, "w") as f:
        f.write(LATE_CUDA)
    # the build's stand-in found at start through gpuprobe's LD_LIBRARY_PATH (with none
    # found, the CLI stops: unless some other process maps one then); the copy is another file
    g = gp.Background([gp.GPUPROBE, "--memleak", "--json", "-o", "-", "--",
                       "python3", script, lib, "6"], env={"LD_LIBRARY_PATH": gp.FAKECUDA_DIR})
    try:
        out = wait_line(g, "LOADED")
        pid = int(out.split("LOADED")[1].split()[0])
        err = wait_line(g, f"libcuda {lib} of PID {pid}", where="stderr")
        check("after the linker reported it" in err, f"by the linker's hook: {err[-600:]}")
        os.kill(pid, signal.SIGUSR1)
        eq(g.wait(60), 0, f"exit ({g.stderr()[-600:]})")
        rep = gp.final(g.stdout(), "memleak")
        p = gp.proc(rep, pid)
        eq(p["outstanding_allocs"], 6, "every allocation after the probes went in")
        eq(p["outstanding_bytes"], sum(4096 * (i + 1) for i in range(6)), "their bytes")
    finally:
        g.kill()
        shutil.rmtree(d, ignore_errors=True)


def rpath_copy():
    """memleak_app and the stand-in copied to a fresh folder pair: the app's RUNPATH
    ($ORIGIN/../fakecuda) is the only way to its driver, a file no other process maps and
    no default folder, LD_LIBRARY_PATH or ldconfig names."""
    d = tempfile.mkdtemp(prefix="gp-rpath-")
    os.makedirs(os.path.join(d, "apps"))
    os.makedirs(os.path.join(d, "fakecuda"))
    shutil.copy(app("memleak_app"), os.path.join(d, "apps", "memleak_app"))
    shutil.copy(FAKECUDA, os.path.join(d, "fakecuda", "libcuda.so.1"))
    return d, os.path.join(d, "apps", "memleak_app")


def test_libcuda_only_through_the_programs_rpath():
    """The command's loader finds libcuda only through the program's RUNPATH: it is found
    the same way before the command runs (src/lib/ldpath.c), so every call is seen
    (before: the linker's report probed it after the first calls, or after all of them)."""
    d, exe = rpath_copy()
    try:
        r = gp.gpuprobe(["--memleak", "--json", "-v"], cmd=[exe, "--allocs", "10", "--leaks", "3"],
                        timeout=60, env={"LD_LIBRARY_PATH": ""})
        eq(r.returncode, 0, f"exit ({r.stderr[-800:]})")
        check("found through the program's own library folders" in r.stderr, r.stderr[-800:])
        t = gp.truth(r.stderr)
        rep = gp.final(r.stdout, "memleak")
        p = gp.proc(rep, t["pid"])
        eq(p["outstanding_allocs"], t["leaks"], "every leak")
        eq(p["outstanding_bytes"], t["leaked_bytes"], "their bytes")
        eq(p["untracked_frees"], 0, "no free of an unseen allocation")
        eq(p.get("unseen_before_probes"), None, "no gap to report")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_libcuda_through_a_librarys_runpath():
    """The program's RUNPATH names its library's folder, and only that library's RUNPATH
    names the driver's (as a wheel's libtorch_cuda.so does): the chain is followed before
    the command runs, so every allocation is seen from the first."""
    d = tempfile.mkdtemp(prefix="gp-chain-")
    try:
        for sub in ("bin", "lib", "drv"):
            os.makedirs(os.path.join(d, sub))
        shutil.copy(os.path.join(OUT, "chain", "bin", "chain_app"), os.path.join(d, "bin"))
        shutil.copy(os.path.join(OUT, "chain", "lib", "libchain.so"), os.path.join(d, "lib"))
        shutil.copy(FAKECUDA, os.path.join(d, "drv", "libcuda.so.1"))
        r = gp.gpuprobe(["--memleak", "--json", "-v"], cmd=[os.path.join(d, "bin", "chain_app"), "7"],
                        timeout=60, env={"LD_LIBRARY_PATH": ""})
        eq(r.returncode, 0, f"exit ({r.stderr[-800:]})")
        check("1 libcuda file found through the program's own library folders" in r.stderr, r.stderr[-800:])
        t = gp.truth(r.stderr)
        p = gp.proc(gp.final(r.stdout, "memleak"), t["pid"])
        eq(p["outstanding_allocs"], t["leaks"], "every allocation")
        eq(p["outstanding_bytes"], t["leaked_bytes"], "their bytes")
        eq(p["unseen_before_probes"], None, "no gap")
    finally:
        shutil.rmtree(d, ignore_errors=True)


EAGER_CUDA = r'''
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1])
ctx, p = ctypes.c_void_p(), ctypes.c_uint64()
assert lib.cuInit(0) == 0
assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert lib.cuCtxSetCurrent(ctx) == 0
for i in range(int(sys.argv[2])):
    assert lib.cuMemAlloc_v2(ctypes.byref(p), 4096 * (i + 1)) == 0
# one write: gpuprobe's -v lines share this stderr
sys.stderr.write('{"pid":%d,"api":"eager_cuda","allocs":%s}\n' % (os.getpid(), sys.argv[2]))
'''


def eager_run(env):
    d, lib = copy_to("libcuda.so.1", FAKECUDA)
    script = os.path.join(d, "eager.py")
    with open(script, "w") as f:
        f.write(EAGER_CUDA)
    try:
        e = {"LD_LIBRARY_PATH": gp.FAKECUDA_DIR}
        e.update(env)
        r = gp.gpuprobe(["--memleak", "--json", "-v"], cmd=["python3", script, lib, "5"], timeout=60, env=e)
        eq(r.returncode, 0, f"exit ({r.stderr[-800:]})")
        t = gp.truth(r.stderr)
        return r, gp.proc(gp.final(r.stdout, "memleak"), t["pid"]) if any(
            x["pid"] == t["pid"] for x in gp.final(r.stdout, "memleak")["processes"]) else None, t
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_dlopen_of_libcuda_holds_the_command():
    """A process gpuprobe started dlopens a libcuda nobody named and calls it at once: the
    linker's hook stops it (SIGSTOP) until the copy is probed, then lets it go (SIGCONT),
    so every allocation is seen and no gap is reported."""
    r, p, t = eager_run({})
    check(p is not None, f"the process is reported: {r.stdout[-600:]}")
    eq(p["outstanding_allocs"], 5, "every allocation, the first included")
    eq(p["outstanding_bytes"], sum(4096 * (i + 1) for i in range(5)), "their bytes")
    eq(p["unseen_before_probes"], None, "no gap: the process waited for the probes")
    check("1 processes held for a new libcuda" in r.stderr, r.stderr[-800:])


def test_dlopen_without_the_hold_says_what_was_not_seen():
    """The same without the hold (GPUPROBE_NO_HOLD, as for -p and node-wide runs): the
    process ran on while the copy was probed; its report says that calls before the probes
    were not seen, with the time between the mapping and the probes."""
    r, p, t = eager_run({"GPUPROBE_NO_HOLD": "1"})
    if p is None:  # every call before the probes: the run says it saw none
        check("no CUDA call seen" in r.stderr or "calls before the probes not seen" in r.stderr, r.stderr[-800:])
        return
    u = p["unseen_before_probes"]
    check(u is not None and u["after"] == "mapping" and u["gap_s"] is not None and u["gap_s"] >= 0,
          f"the gap is reported: {u}")
    check(p["outstanding_allocs"] <= 5, "never more than were made")
    check(f"PID {t['pid']}: calls before the probes not seen" in r.stderr, r.stderr[-800:])


def test_libnccl_in_a_private_mount_namespace():
    """The library lives at a path that exists only in the process's mount namespace: it is
    opened through /proc/PID/root (safe_open_mapped), as in a container."""
    d, lib = copy_to("libnccl.so.2", FAKENCCL)
    mnt = tempfile.mkdtemp(prefix="gp-mnt-")
    inner = os.path.join(mnt, "nvidia", "nccl", "lib")
    shell = (f"mkdir -p {inner} && mount --bind {d} {inner} && "
             f"exec {DLOPEN_APP} --lib {inner}/libnccl.so.2 --wait --hold --n 3")
    g = gp.Background([gp.GPUPROBE, "--nccl", "--json", "--libcuda", FAKECUDA, "--libnccl", FAKENCCL, "-o", "-", "--",
                       "unshare", "-m", "--propagation", "private", "sh", "-c", shell])
    try:
        ready = wait_line(g, "READY")
        time.sleep(0.3)
        os.kill(int(ready.split("READY")[1].split()[0]), signal.SIGUSR1)
        out = wait_line(g, "LOADED")
        pid = int(out.split("LOADED")[1].split()[0])
        wait_line(g, f"{inner}/libnccl.so.2 of PID {pid}", where="stderr")
        check(not os.path.exists(os.path.join(inner, "libnccl.so.2")), "not there in gpuprobe's namespace")
        os.kill(pid, signal.SIGUSR1)
        eq(g.wait(60), 0, f"exit ({g.stderr()[-600:]})")
        t = gp.truth(g.stderr())
        rep = gp.final(g.stdout(), "nccl")
        p = [x for x in rep["processes"] if x["pid"] == t["pid"]][0]
        eq([(c["op"], c["dtype"], c["calls"], c["bytes"]) for c in p["comms"][0]["collectives"]],
           [("AllReduce", "float32", 3, 3 * 4096 * 4)], "its calls")
    finally:
        g.kill()
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(mnt, ignore_errors=True)


def test_a_file_named_libnccl_that_is_not():
    """A library named libnccl.so.2 without NCCL's calls: one warning, nothing probed, the
    program runs on (its dlopen of it succeeds: it is a real library)."""
    d = tempfile.mkdtemp(prefix="gp-fake-")
    shutil.copy(FAKECUDA, os.path.join(d, "libnccl.so.2"))
    g = gp.Background([gp.GPUPROBE, "--nccl", "--json", "--libcuda", FAKECUDA, "--libnccl", FAKENCCL, "-o", "-", "--",
                       DLOPEN_APP, "--lib", os.path.join(d, "libnccl.so.2"), "--wait", "--hold"])
    try:
        ready = wait_line(g, "READY")
        time.sleep(0.3)
        os.kill(int(ready.split("READY")[1].split()[0]), signal.SIGUSR1)
        out = wait_line(g, "LOADED")
        pid = int(out.split("LOADED")[1].split()[0])
        err = wait_line(g, "not probing", where="stderr")
        check("not an NCCL library" in err, err[-400:])
        os.kill(pid, signal.SIGUSR1)
        g.wait(60)  # the app fails: the stand-in driver has no ncclGetUniqueId
        rep = gp.final(g.stdout(), "nccl")
        eq(len(rep["libraries"]), 1, f"only --libnccl's file probed: {rep['libraries']}")
    finally:
        g.kill()
        shutil.rmtree(d, ignore_errors=True)


def test_hook_reports_consistent_maps_only():
    """Each dlopen calls the hook twice (RT_ADD, RT_CONSISTENT): one report each (-v counts)."""
    d, lib = copy_to("libnccl.so.2", FAKENCCL)
    r = gp.gpuprobe(["-v", "--nccl", "--json", "--libcuda", FAKECUDA, "--libnccl", FAKENCCL],
                    cmd=[DLOPEN_APP, "--lib", lib, "--n", "2"], timeout=60)
    shutil.rmtree(d, ignore_errors=True)
    eq(r.returncode, 0, f"exit ({r.stderr[-600:]})")
    line = [l for l in r.stderr.splitlines() if "library watcher:" in l]
    eq(len(line), 1, "the watcher's account (-v)")
    calls = int(line[0].split(" hook calls")[0].split()[-1])
    skipped = int(line[0].split("(")[1].split()[0])
    check(calls >= 2 and skipped * 2 == calls, f"half the calls while the link map changed: {line[0]}")


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
