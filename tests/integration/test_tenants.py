# SPDX-License-Identifier: BSD-3-Clause
"""Tenant isolation (issue 30): an unprivileged user on the node cannot take another
user's share of what gpuprobe keeps for everyone. Each attack runs as nobody (uid 65534)
beside a victim of another user whose counts are known by construction; the victim's
numbers must be exact and the attacker's excess counted under a reason of its own."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import gp
from gp import FAKECUDA, FAKECUDA_DIR, GPUPROBE, app, check, eq, final, proc, truth

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def start_storm(threads, call="alloc", lib=None):
    """call_storm as nobody, its own set-up calls made: go(p) starts its `threads` threads
    inside `call` (alloc, copy, sync, launch), or each past one NCCL call (nccl, through
    lib); they stay until stdin closes."""
    argv = [*AS_NOBODY, app("call_storm"), "--threads", str(threads), "--call", call] + (["--lib", lib] if lib else [])
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    expect(p, "INIT", argv)
    return p


def expect(p, word, argv):
    line = p.stdout.readline()
    if not line.startswith(word):
        p.kill()
        raise gp.Failure(f"{' '.join(argv[-6:])}: {line!r} {p.stderr.read()[-800:]}")
    return int(line.split()[1])


def go(p):
    """A storm's threads into their calls: its PID once they all are."""
    p.stdin.write("go\n")
    p.stdin.flush()
    return expect(p, "READY", p.args)


def end_storm(p):
    p.stdin.close()
    err = p.stderr.read()
    p.wait(timeout=60)
    eq(p.returncode, 0, f"call_storm exit ({err[-800:]})")
    return truth(err)


# --max-pending 1024 (src/core/run.c, gp_run__set_shares_of): the first 256 places of a
# table go to any call; past them a process counts against 128, a user against 256. The
# storm: one nobody process with 1,000 threads in the call (the free places, then its
# process share), then two of 300 each (what is left of nobody's user share): 1,600 calls
# in flight, 512 stashed, 1,088 refused, the table never full.
TABLE = 1024
FREE, PROC_SHARE, USER_SHARE = TABLE // 4, TABLE // 8, TABLE // 4
STORMS = (1000, 300, 300)
REFUSED = sum(STORMS) - FREE - USER_SHARE


def storm_run(args, calls, victim, mode, env=None, lib=None, timeout=120):
    """gpuprobe node-wide (args, --json, --max-pending TABLE) while nobody's STORMS threads
    sit in each of calls in turn, one table after another, and the victim (argv, root) runs
    beside them: (the final report of mode, the victim's truth, the storms' truths by call,
    the storms' PIDs by call)."""
    gp.need_nobody_access()
    g = gp.Background([GPUPROBE, *args, "--json", "--libcuda", FAKECUDA, "--max-pending", str(TABLE)], env=env)
    storms = []
    try:
        g.wait_for("gpuprobe: tracing", where="stderr")
        # every storm's own calls first, on an empty table; then one storm after another
        for call in calls:
            for n in STORMS:
                storms.append((call, [start_storm(n, call, lib), 0]))
        for s in storms:
            s[1][1] = go(s[1][0])
        v = gp.run(victim, timeout=timeout, env=env)
        eq(v.returncode, 0, f"victim exit ({v.stderr[-800:]})")
        vt = truth(v.stderr)
        st, pids = {}, {}
        for call, (p, pid) in storms:
            st.setdefault(call, []).append(end_storm(p))
            pids.setdefault(call, []).append(pid)
        storms = []
        g.signal(signal.SIGINT)
        eq(g.wait(timeout=60), 0, f"gpuprobe exit ({g.stderr()[-1500:]})")
        return final(g.stdout(), mode), vt, st, pids
    finally:
        for _, (p, _) in storms:
            p.kill()
            p.wait()
        g.kill()


def test_pending_share_storm():
    """docs/security.md: a process or user fills only its share of the in-flight table."""
    rep, vt, st, _ = storm_run(["--memleak"], ["alloc"], [app("memleak_app"), "--allocs", "50", "--leaks", "3"],
                               "memleak")
    vp = proc(rep, vt["pid"])
    eq((vp["allocs_total"], vp["frees_total"], vp["outstanding_allocs"], vp["outstanding_bytes"]),
       (vt["allocs"], vt["frees"] + vt["untracked_frees"], vt["leaks"], vt["leaked_bytes"]),
       "the victim's allocations, frees and leaks")
    eq(rep["drops"]["pending_table_full"], 0, "pending_table_full")
    eq(rep["drops"]["pending_share_full"], REFUSED, "pending_share_full")
    eq(rep["dropped_events"], REFUSED, "dropped_events")
    # the first storm alone took the free places and met its process share; the other two
    # what was left of the user's
    seen = [proc(rep, t["pid"])["allocs_total"] for t in st["alloc"]]
    eq(seen[0], FREE + PROC_SHARE, "the first storm's allocations seen")
    eq(seen[1] + seen[2], USER_SHARE - PROC_SHARE, "the other two storms' allocations seen")
    # (rep["calls"] counts every process on the node that maps the stand-in: not asserted)


def test_copy_share_storm():
    """docs/security.md: --bandwidth-util's in-flight table (copies, synchronizations)."""
    import test_bandwidth as tb
    rep, vt, st, _ = storm_run(["--bandwidth-util"], ["copy"], [tb.APP], "bandwidth", env=tb.ENV)
    tb.check_transfers(proc(rep, vt["pid"]), vt, extra_small=vt["small_copies"])
    eq(rep["drops"]["pending_table_full"], 0, "pending_table_full")
    eq(rep["drops"]["pending_share_full"], REFUSED, "pending_share_full")
    seen = [sum(t["copies"] for t in proc(rep, s["pid"])["transfers"]) for s in st["copy"]]
    eq(seen[0], FREE + PROC_SHARE, "the first storm's copies seen")
    eq(seen[1] + seen[2], USER_SHARE - PROC_SHARE, "the other two storms' copies seen")


def test_launch_share_storm():
    """docs/security.md: --cudatrace's in-flight table (launches and synchronizations timed,
    naming calls)."""
    import test_cudatrace as tc
    rep, vt, st, pids = storm_run(["--cudatrace"], ["launch"], [tc.APP], "cudatrace")
    vp = proc(rep, vt["pid"])
    tc.check_kernels(vp, vt)
    eq(vp["launch_latency"]["calls"], vp["launches"] + vp["graph_launches"], "the victim's launches all timed")
    eq(vp["sync"]["timed"], vt["syncs"], "the victim's syncs all timed")
    eq(rep["drops"]["pending_table_full"], 0, "pending_table_full")
    eq(rep["drops"]["pending_share_full"], REFUSED, "pending_share_full")
    # every storm launch is counted; only the ones with a place are timed
    timed = [proc(rep, pid)["launch_latency"]["timed"] for pid in pids["launch"]]
    eq([proc(rep, pid)["launches"] for pid in pids["launch"]], list(STORMS), "the storms' launches counted")
    eq(timed[0], FREE + PROC_SHARE, "the first storm's launches timed")
    eq(timed[1] + timed[2], USER_SHARE - PROC_SHARE, "the other two storms' launches timed")


def test_nccl_share_storm():
    """docs/security.md: --nccl's two tables: each thread's NCCL call stack (held from its
    first call to its end) and the libcuda calls in flight (synchronizations)."""
    import test_nccl as tn
    rep, vt, st, _ = storm_run(["--nccl", "--libnccl", tn.FAKENCCL], ["nccl", "sync"],
                               [tn.LAUNCHER, "2"], "nccl", lib=tn.FAKENCCL)
    eq(vt["exit_codes"], [0, 0], "every rank exited 0")
    for rk in vt["ranks"]:
        tn.check_rank(tn.by_pid(rep)[rk["pid"]], rk)
    eq(rep["drops"]["pending_table_full"], 0, "pending_table_full")
    # a thread refused a stack is refused again at its next call: ncclGroupStart, ncclGroupEnd
    eq(rep["drops"]["pending_share_full"], 2 * REFUSED + REFUSED, "pending_share_full")


def test_trace_share_storm():
    """docs/security.md: --trace's table of call stacks, one per thread from its first call
    to its end."""
    out = tempfile.mkdtemp(prefix="gp-trace-storm-")
    try:
        rep, vt, st, pids = storm_run(["--trace", os.path.join(out, "t.jsonl")], ["alloc"],
                                      [app("launch_app"), "--n", "20"], "trace")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    vp = proc(rep, vt["pid"])
    eq(vp["launches"], sum(v["launches"] for v in vt["kernels"].values()) + 3, "the victim's launches")
    eq(vp["sync"]["calls"], vt["syncs"], "the victim's sync calls")
    eq(rep["drops"]["pending_table_full"], 0, "pending_table_full")
    # each storm's main thread made its calls first, on an empty table: it holds a free
    # place for its life, and the threads have three fewer
    held = [next((f["calls"] for f in proc(rep, pid)["functions"] if f["name"] == "cuMemAlloc_v2"), 0)
            for pid in pids["alloc"]]
    eq(held[0], FREE - 3 + PROC_SHARE, "the first storm's threads with a stack")
    eq(held[1] + held[2], USER_SHARE - PROC_SHARE, "the other two storms' threads with a stack")
    eq(rep["drops"]["pending_share_full"], REFUSED + 3, "pending_share_full")


# ---- a hostile library's symbol table ----

# Maps a file PROT_EXEC as a library does and waits: the file is in this process's maps.
MAPPER = r"""
import mmap, sys
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
print("READY", flush=True)
sys.stdin.read()
"""


class NobodyLib:
    """A library named libcuda.so.1 in a folder nobody owns, built from assembly, mapped by
    a nobody process until stop()."""

    def __init__(self, asm):
        self.top = tempfile.mkdtemp(prefix="gp-tenant-")
        os.chmod(self.top, 0o755)
        self.lib = os.path.join(self.top, "libcuda.so.1")
        src = os.path.join(self.top, "lib.s")
        with open(src, "w") as f:
            f.write(asm)
        # binutils' assembler and linker, not a compiler: the arm64 VM's userland has them
        # (objcopy's package) and no compiler
        if not (shutil.which("as") and shutil.which("ld")):
            shutil.rmtree(self.top, ignore_errors=True)
            gp.skip("no assembler and linker (binutils) in this userland to build the hostile library")
        r = gp.run(["as", "-o", src + ".o", src], timeout=120)
        eq(r.returncode, 0, f"as: {r.stderr[-800:]}")
        r = gp.run(["ld", "-shared", "-o", self.lib, src + ".o"], timeout=120)
        eq(r.returncode, 0, f"ld: {r.stderr[-800:]}")
        for p in (self.top, self.lib, src):
            os.chown(p, NOBODY, NOBODY)
        self.p = subprocess.Popen([*AS_NOBODY, "python3", "-c", MAPPER, self.lib], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        line = self.p.stdout.readline()
        if not line.startswith("READY"):
            self.stop()
            raise gp.Failure(f"mapper did not start: {line!r}")
        self.seen = f"/proc/{self.p.pid}/root{self.lib}"

    def stop(self):
        if self.p and self.p.poll() is None:
            self.p.kill()
        if self.p:
            self.p.wait()
            for s in (self.p.stdout, self.p.stdin, self.p.stderr):
                s.close()
        shutil.rmtree(self.top, ignore_errors=True)


def exports_asm(names):
    """Assembly of a shared library with one distinct function per name."""
    # "return 0" in the machine's own instructions (never called: only the table matters)
    body = ["  mov w0, #0", "  ret"] if os.uname().machine == "aarch64" else ["  xor %eax, %eax", "  ret"]
    out = [".text"]
    for n in names:
        out += [f".globl {n}", f".type {n}, %function", f"{n}:", *body, f".size {n}, .-{n}"]
    return "\n".join(out) + "\n"


HOSTILE_EXTRA = 5000  # with cuMemAlloc_v2 (so it passes for a driver): 5,001 cu* exports
LIB_NEW_MAX = 1024    # src/modes/trace/trace_mode.c


def test_hostile_symbol_table():
    """docs/security.md: a library's symbol table has a bounded cost; the driver is traced."""
    h = NobodyLib(exports_asm(["cuMemAlloc_v2"] + [f"cuEvil{i:05d}" for i in range(HOSTILE_EXTRA)]))
    out = os.path.join(h.top, "trace.jsonl")
    g = None
    try:
        g = gp.Background([GPUPROBE, "--trace", out, "--json"], env={"LD_LIBRARY_PATH": FAKECUDA_DIR})
        # without uprobe_multi links each function is a perf-event uprobe of its own, made
        # one by one (over 60 s for these on 6.1 in QEMU)
        g.wait_for("gpuprobe: tracing", where="stderr", timeout=60 if gp.has_uprobe_multi() else 600)
        v = gp.run([app("memleak_app"), "--allocs", "6", "--leaks", "1"], timeout=60)
        eq(v.returncode, 0, f"victim exit ({v.stderr[-800:]})")
        vt = truth(v.stderr)
        g.signal(signal.SIGINT)
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-1500:]})")
        err = g.stderr()
        skipped = HOSTILE_EXTRA - LIB_NEW_MAX
        named = [l for l in err.splitlines() if h.seen in l and "not traced" in l]
        eq(named, [f"gpuprobe: --trace: {h.seen}: {skipped} of its cu* functions not traced "
                   f"(a library root does not own adds at most {LIB_NEW_MAX})"], "the line naming the file")
        recs = [json.loads(l) for l in open(out)]
        calls = {}
        for r in recs:
            if r["type"] == "call" and r["pid"] == vt["pid"]:
                calls[r["fn"]] = calls.get(r["fn"], 0) + 1
        eq((calls.get("cuMemAlloc_v2"), calls.get("cuMemFree_v2")), (6, 5), "the victim's calls traced")
        s = [r for r in gp.json_lines(g.stdout()) if r.get("mode") == "trace"]
        eq(len(s), 1, "one trace summary")
        eq(s[0]["drops"]["functions_not_traced"], skipped, "functions_not_traced")
    finally:
        if g:
            g.kill()
        h.stop()


# ---- library slots ----

# Maps every file named on its command line PROT_EXEC and waits.
MAP_MANY = r"""
import mmap, sys
maps = []
for p in sys.argv[1:]:
    f = open(p, "rb")
    maps.append(mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC))
print("READY", flush=True)
sys.stdin.read()
"""

COPIES, MAPPERS = 40, 10  # the audit's: 10 nobody processes, 40 copies of a libcuda
PER_OWNER = 4             # src/lib/target.h GP_SLOTS_PER_OWNER


def test_library_slots_fair_and_freed():
    """docs/security.md: one user's copies of libcuda take at most their share of the
    daemon's library slots; a driver that comes later is probed; slots are freed."""
    import test_daemon as td
    top = tempfile.mkdtemp(prefix="gp-slots-")
    os.chmod(top, 0o755)
    mine = os.path.join(top, "nobody")
    os.mkdir(mine)
    copies = []
    for i in range(COPIES):
        d = os.path.join(mine, f"c{i:02d}")
        os.mkdir(d)
        copies.append(os.path.join(d, "libcuda.so.1"))
        shutil.copyfile(FAKECUDA, copies[-1])
        os.chmod(copies[-1], 0o755)
        os.chown(copies[-1], NOBODY, NOBODY)
    # the driver that comes later: root's, in a folder of root's
    real = os.path.join(top, "driver")
    os.mkdir(real)
    shutil.copyfile(FAKECUDA, os.path.join(real, "libcuda.so.1"))
    os.chmod(os.path.join(real, "libcuda.so.1"), 0o755)
    mappers, d, victim = [], None, None
    try:
        per = COPIES // MAPPERS
        for k in range(MAPPERS):
            p = subprocess.Popen([*AS_NOBODY, "python3", "-c", MAP_MANY, *copies[k * per:(k + 1) * per]],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 start_new_session=True)
            mappers.append(p)
            eq(p.stdout.readline().strip(), "READY", f"mapper {k}")
        d = td.start_daemon(extra=["-v", "--rescan-interval", "0.3"], modes=("--memleak",))
        port = int(d.p.args[d.p.args.index("--listen") + 1].rsplit(":", 1)[1])

        def rescans_after(n):
            deadline = time.time() + 20
            while d.stderr().count("rescan:") < n:
                check(time.time() < deadline, f"no rescan {n}: {d.stderr()[-800:]}")
                time.sleep(0.1)

        rescans_after(d.stderr().count("rescan:") + 2)
        ours = [l for l in d.stderr().splitlines() if mine in l and "probing" in l and "not probing" not in l]
        eq(len(ours), PER_OWNER, f"nobody's copies probed: {ours}")
        told = [l for l in d.stderr().splitlines() if "not probing" in l and "(owner uid 65534)" in l]
        eq(len(told), 1, "one line for nobody's refused copies")
        text = td.get(port)[1]
        check(td.value(text, "gpuprobe_library_slots_refused_total", reason="owner_share") >= COPIES - PER_OWNER,
              "refusals counted")
        # the driver that appears later is probed, and its process's calls are exact
        victim = gp.Background([app("memleak_app"), "--wait", "--allocs", "20", "--leaks", "2"],
                               env={"LD_LIBRARY_PATH": real})
        victim.wait_for("READY")
        deadline = time.time() + 20
        while not [l for l in d.stderr().splitlines() if real in l and "probing" in l]:
            check(time.time() < deadline, f"the later driver not probed: {d.stderr()[-1500:]}")
            time.sleep(0.1)
        with open(f"/proc/{victim.pid}/maps") as f:
            check(os.path.join(real, "libcuda.so.1") in f.read(), "the victim maps the later driver")
        victim.signal(signal.SIGUSR1)
        eq(victim.wait(), 0, f"victim exit {victim.stderr()[-800:]}")
        vt = truth(victim.stderr())
        # the series appear at the next fold; then two scrapes in a row agree
        td.wait_metric(port, "gpuprobe_cuda_alloc_calls_total", vt["allocs"], timeout=20, pid=vt["pid"])
        text = td.settled(port, pid=vt["pid"])
        eq(td.value(text, "gpuprobe_cuda_alloc_calls_total", pid=vt["pid"]), vt["allocs"], "victim's allocations")
        eq(td.value(text, "gpuprobe_cuda_free_calls_total", pid=vt["pid"]), vt["frees"], "victim's frees")
        # nobody's processes end: their files' slots and probes are given back
        probes = td.value(text, "gpuprobe_probes_attached")
        for p in mappers:
            p.kill()
            p.wait()
        mappers = []
        rescans_after(d.stderr().count("rescan:") + 3)
        freed = [l for l in d.stderr().splitlines() if mine in l and "no process maps" in l]
        eq(len(freed), PER_OWNER, f"nobody's slots freed: {freed}")
        text = td.get(port)[1]
        check(td.value(text, "gpuprobe_library_slots_freed_total") >= PER_OWNER, "slots freed counted")
        check(td.value(text, "gpuprobe_probes_attached") < probes, "probes detached")
        check(f"{real}/libcuda.so.1" not in "".join(freed), "root's driver keeps its slot")
        td.stop(d)
        d = None
    finally:
        for p in mappers:
            p.kill()
            p.wait()
        if victim:
            victim.kill()
        if d:
            d.kill()
        shutil.rmtree(top, ignore_errors=True)


# dlopen()s every file named (the dynamic linker's hook reports it to a node-wide run)
DLOPEN_MANY = r"""
import ctypes, sys
libs = [ctypes.CDLL(p) for p in sys.argv[1:]]
print("READY", flush=True)
sys.stdin.read()
"""


def test_cli_later_copies_take_their_share():
    """docs/security.md: a node-wide run probes at most a user's share of the libcuda
    copies that user loads after the start; the rest are counted and said."""
    top = tempfile.mkdtemp(prefix="gp-later-")
    os.chmod(top, 0o755)
    copies = []
    for i in range(10):
        d = os.path.join(top, f"c{i}")
        os.mkdir(d)
        copies.append(os.path.join(d, "libcuda.so.1"))
        shutil.copyfile(FAKECUDA, copies[-1])
        os.chmod(copies[-1], 0o755)
        os.chown(copies[-1], NOBODY, NOBODY)
    g = p = None
    try:
        g = gp.Background([GPUPROBE, "--memleak", "-d", "30"], env={"LD_LIBRARY_PATH": FAKECUDA_DIR})
        g.wait_for("gpuprobe: tracing", where="stderr", timeout=60)
        p = subprocess.Popen([*AS_NOBODY, "python3", "-c", DLOPEN_MANY, *copies], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
        eq(p.stdout.readline().strip(), "READY", "loader")
        deadline = time.time() + 20
        while len([l for l in g.stderr().splitlines() if top in l]) < PER_OWNER + 1:
            check(time.time() < deadline, f"copies not looked at: {g.stderr()[-1500:]}")
            time.sleep(0.1)
        time.sleep(1)  # every copy reported by now; none more probed
        g.signal(signal.SIGINT)
        try:
            rc = g.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise gp.Failure(f"no exit 30 s after SIGINT: {g.stderr()[-2500:]}")
        eq(rc, 0, f"gpuprobe exit ({g.stderr()[-1500:]})")
        err = g.stderr().splitlines()
        probed = [l for l in err if top in l and "probing libcuda" in l and "not probing" not in l]
        eq(len(probed), PER_OWNER, f"nobody's copies probed: {probed}")
        told = [l for l in err if top in l and "not probing" in l and "(owner uid 65534)" in l]
        eq(len(told), 1, f"one line for the refused copies: {told}")
        end = [l for l in err if "libcuda files loaded later were not probed" in l]
        check(end and int(end[0].split("gpuprobe: ")[1].split()[0]) >= len(copies) - PER_OWNER,
              f"the count at the end: {end}")
    finally:
        if p:
            p.kill()
            p.wait()
        if g:
            g.kill()
        shutil.rmtree(top, ignore_errors=True)


def test_cli_slots_freed_when_unmapped():
    """docs/security.md: a node-wide run frees the slots of a user's libcuda files once no
    process maps them (the daemon's rule, src/lib/libslots.c): their probes go, and that
    user's later copies are probed. Before: the slots were held for the whole run, and a
    user's fifth file ever was refused."""
    top = tempfile.mkdtemp(prefix="gp-freed-")
    os.chmod(top, 0o755)
    copies = []
    for i in range(2 * PER_OWNER):
        d = os.path.join(top, f"c{i}")
        os.mkdir(d)
        copies.append(os.path.join(d, "libcuda.so.1"))
        shutil.copyfile(FAKECUDA, copies[-1])
        os.chmod(copies[-1], 0o755)
        os.chown(copies[-1], NOBODY, NOBODY)
    g = p = None

    def lines(what):
        return [l for l in g.stderr().splitlines() if what in l]

    def wait_lines(what, n, timeout):
        deadline = time.time() + timeout
        while len(lines(what)) < n:
            check(time.time() < deadline, f"{n} lines {what!r} awaited: {g.stderr()[-2500:]}")
            time.sleep(0.2)

    def load(paths):
        q = subprocess.Popen([*AS_NOBODY, "python3", "-c", DLOPEN_MANY, *paths], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
        eq(q.stdout.readline().strip(), "READY", "loader")
        return q

    try:
        g = gp.Background([GPUPROBE, "--memleak", "-d", "90"], env={"LD_LIBRARY_PATH": FAKECUDA_DIR})
        g.wait_for("gpuprobe: tracing", where="stderr", timeout=60)
        p = load(copies[:PER_OWNER])
        wait_lines(top, PER_OWNER, 20)
        p.stdin.close()
        p.wait(timeout=30)
        p = None
        # two sweeps (5 s apart) without a process mapping them
        wait_lines("its library slot freed", PER_OWNER, 30)
        freed = [l for l in lines("its library slot freed") if "(owner uid 65534)" in l]
        eq(len(freed), PER_OWNER, f"nobody's slots freed: {freed}")
        check(all(int(l.split(": ")[-1].split()[0]) > 0 for l in freed), f"probes detached: {freed}")
        p = load(copies[PER_OWNER:])
        wait_lines(top, 2 * PER_OWNER, 20)
        time.sleep(1)
        probed = [l for l in lines(top) if "probing libcuda" in l and "not probing" not in l]
        eq(len(probed), 2 * PER_OWNER, f"nobody's copies probed, the later ones too: {probed}")
        eq([l for l in lines("not probing") if "(owner uid 65534)" in l], [], "no copy refused")
        g.signal(signal.SIGINT)
        eq(g.wait(timeout=30), 0, f"gpuprobe exit ({g.stderr()[-1500:]})")
    finally:
        if p:
            p.kill()
            p.wait()
        if g:
            g.kill()
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    gp.main([test_pending_share_storm, test_copy_share_storm, test_launch_share_storm, test_nccl_share_storm,
             test_trace_share_storm, test_hostile_symbol_table, test_library_slots_fair_and_freed,
              test_cli_later_copies_take_their_share, test_cli_slots_freed_when_unmapped])
