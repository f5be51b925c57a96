# SPDX-License-Identifier: BSD-3-Clause
"""Kernel names after a mid-run attach (issue 13): handles made before `-p` attached are
named from the process's memory through a layout learned from handles gpuprobe saw named;
a handle of a kind no known handle taught stays unknown@0x..., and so do a forged handle and
a stale one (their launches fail in the driver). Never a wrong name. name_app's handles are
laid out as driver 580's (tests/fakecuda/fakecuda.c).

gpuprobe also teaches itself a build's layouts from kernels of its own (selflearn.h): the
tests of lessons taught by watched processes pass --no-self-learn, so that what they check
comes from those processes only."""
import json
import os
import re
import shutil
import signal
import tempfile
import time

import gp
from gp import FAKECUDA, app, check, eq, proc

APP = app("name_app")


def attach(extra=(), app_args=("--wait", "--forge")):
    a = gp.start_app([APP] + list(app_args))
    g = gp.start_gpuprobe(["--cudatrace", "--json", "--libcuda", FAKECUDA, "--no-self-learn", "-p", str(a.pid)] +
                          list(extra))
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
    r = gp.gpuprobe(["--cudatrace", "--json", "--libcuda", FAKECUDA, "--no-self-learn"], cmd=[APP, "--forge"])
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


def learn(state):
    """One run of a program that names its kernels while gpuprobe watches: the layouts of
    this libcuda build go to the state file."""
    r = gp.gpuprobe(["--cudatrace", "--json", "--libcuda", FAKECUDA, "--state-dir", state, "--no-self-learn"],
                    cmd=[APP])
    eq(r.returncode, 0, f"learning run ({r.stderr[-500:]})")
    return r


def rounds_of(a, n):
    """The ground truth of each round name_app --rounds printed so far (wait for n)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        got = [json.loads(l) for l in a.stderr().splitlines() if l.startswith("{") and '"round"' in l]
        if len(got) >= n:
            return got
        check(a.p.poll() is None, f"name_app ended early: {a.stderr()[-500:]}")
        time.sleep(0.05)
    raise gp.Failure(f"name_app printed no round {n}")


def steady_attaches(state, attaches=3, extra=("--no-self-learn",), app_path=APP, lib=FAKECUDA, env=None,
                    gpuprobe=None):
    """name_app makes and names every handle, then waits (a job at steady state); gpuprobe
    (another build: `gpuprobe`) attaches -p `attaches` times, each while one round of launches
    runs: (report, truth, gpuprobe's stderr)."""
    a = gp.start_app([app_path, "--steady", "--rounds", str(attaches), "--forge"])
    out = []
    try:
        for r in range(1, attaches + 1):
            g = gp.start_gpuprobe(["--cudatrace", "--json", "--libcuda", lib, "--state-dir", state,
                                   "-p", str(a.pid)] + list(extra), env=env, gpuprobe=gpuprobe)
            try:
                a.signal(signal.SIGUSR1)
                t = rounds_of(a, r)[r - 1]
                g.signal(signal.SIGINT)
                eq(g.wait(), 0, f"gpuprobe exit, attach {r} ({g.stderr()[-500:]})")
            finally:
                g.kill()
            out.append((proc(gp.final(g.stdout(), "cudatrace"), a.pid), t, g.stderr()))
        eq(a.wait(), 0, "name_app exit")
    finally:
        a.kill()
    return out


def test_steady_state_named_from_the_state_file():
    """A layout learned once (another process, an earlier run) names every launch of a job
    at steady state, on every attach; forged and stale handles stay unknown."""
    state = gp.state_dir()
    learn(state)
    st = os.stat(os.path.join(state, "layouts"))
    eq(oct(st.st_mode & 0o777), "0o600", "state file mode")
    eq(oct(os.stat(state).st_mode & 0o777), "0o700", "state directory mode")
    for i, (p, t, err) in enumerate(steady_attaches(state), 1):
        rows = by_handle(p)
        for h in t["handles"]:
            check(h["name"] in rows, f"attach {i}: {h['name'][:50]!r} not named; rows {sorted(rows)[:20]}")
            eq(rows[h["name"]]["launches"], h["launches"], f"attach {i}: {h['name'][:40]} launches")
            eq(rows[h["name"]]["source"], "memory", f"attach {i}: {h['name'][:40]} name source")
        for bad in (t["forged"], t["stale"]):
            unk = f"unknown@{bad['handle']}"
            check(unk in rows, f"attach {i}: a handle the driver refused stays unknown: {bad}")
            eq(rows[unk]["launches"], bad["failed_launches"], f"attach {i}: {unk} launches")
        eq(p["launches"], t["launches"] + t["failed_launches"], f"attach {i}: launches")
        eq(p["unnamed_launches"], t["failed_launches"], f"attach {i}: unnamed (the refused handles only)")
        eq(p["unnamed_no_layout"], 0, f"attach {i}: unnamed for want of a layout")
        eq(p["comm"], "name_app", f"attach {i}: the process's name")


def test_steady_state_without_a_layout_says_why():
    """Nothing learned for this build yet (and --no-self-learn): every launch of a handle made before the attach
    is unknown, and the report counts them as such (not silent); nothing is saved."""
    state = gp.state_dir()
    ((p, t, err),) = steady_attaches(state, attaches=1)
    eq(p["unnamed_launches"], t["launches"] + t["failed_launches"], "unnamed launches")
    eq(p["unnamed_no_layout"], t["launches"], "unnamed for want of a layout (the verified handles)")
    eq(p["comm"], "name_app", "the process's name")
    eq(os.listdir(state), [], "nothing learned, nothing written")
    check("from a kernel of its own" not in err and "self-learned" not in err,
          f"--no-self-learn loads no driver: {err[-500:]!r}")


def test_text_report_names_process_and_why():
    state = gp.state_dir()
    a = gp.start_app([APP, "--steady", "--wait"])
    # -v: the overhead footer too, which names it (without -v, only when the probes cost)
    g = gp.start_gpuprobe(["--cudatrace", "--memleak", "--bandwidth-util", "--libcuda", FAKECUDA, "--state-dir", state,
                           "--no-self-learn", "-v", "-p", str(a.pid)])
    try:
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, "name_app exit")
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-500:]})")
    finally:
        a.kill()
        g.kill()
    t = gp.truth(a.stderr())
    out = g.stdout()
    check(f"PID {a.pid} (name_app)" in out, f"the header names the process: {out[:300]!r}")
    # every report names it, whatever modes ran (a process attached at steady state sends
    # no record that carries its name before the report)
    heads = re.findall(r"PID %d \(([^)]*)\)" % a.pid, out)
    check(len(heads) >= 3 and set(heads) == {"name_app"}, f"every header names the process: {heads}")
    check(f"{t['launches']:,} of the unnamed launches: no kernel-handle layout learned yet" in out,
          f"the reason is given: {out[:600]!r}")


def test_bad_state_files_refused():
    """A corrupt state file: one line, ignored, written anew with what the run learns. A
    symbolic link, or a folder others may write: one line, neither read nor written."""
    state = gp.state_dir()
    path = os.path.join(state, "layouts")
    with open(path, "wb") as f:
        f.write(b"gpuprobe-layouts 1\ngnu-00 zz 1 0\n" + b"\0" * 100)
    r = learn(state)
    lines = [l for l in r.stderr.splitlines() if "layouts" in l and l.startswith("gpuprobe: ")]
    eq(len(lines), 1, f"one line for the corrupt file: {r.stderr[-800:]!r}")
    check("corrupt" in lines[0], f"says corrupt: {lines[0]!r}")
    with open(path) as f:
        text = f.read()
    check(text.count("\ngnu-") == 2 and "zz" not in text, f"written anew: {text!r}")
    # a link to a file of the attacker's choosing (planted as root here: only the name matters)
    state2 = gp.state_dir()
    decoy = os.path.join(state, "decoy")
    with open(decoy, "w") as f:
        f.write(text.replace(" 1 0\n", " 2 0\n"))  # a wrong slot, were it used
    os.symlink(decoy, os.path.join(state2, "layouts"))
    before = open(decoy).read()
    ((p, t, err),) = steady_attaches(state2, attaches=1)
    check("symbolic link" in err, f"the link is refused in one line: {err[-500:]!r}")
    eq(p["unnamed_no_layout"], t["launches"], "nothing read through the link")
    eq(open(decoy).read(), before, "the link's target untouched")
    check(os.path.islink(os.path.join(state2, "layouts")), "the link itself untouched")
    # a folder others may write
    state3 = gp.state_dir()
    os.chmod(state3, 0o777)
    r = learn(state3)
    check("writable by others" in r.stderr, f"the folder is refused: {r.stderr[-500:]!r}")
    eq(os.listdir(state3), [], "nothing written there")


def poison(state):
    """poison_app, as nobody, teaches gpuprobe a wrong layout (slot 3) from a forged handle
    and a fake host stub; returns once the lesson is in the state file."""
    top = tempfile.mkdtemp(prefix="gp-poison-")
    try:
        os.chmod(top, 0o755)
        for sub, src in (("apps", app("poison_app")), ("fakecuda", FAKECUDA)):
            os.mkdir(os.path.join(top, sub))
            shutil.copy(src, os.path.join(top, sub))
        lib = os.path.join(top, "fakecuda", os.path.basename(FAKECUDA))  # a copy: the same build
        g = gp.start_gpuprobe(["--cudatrace", "--libcuda", lib, "--state-dir", state, "-o", "-", "--",
                               "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               os.path.join(top, "apps", "poison_app")])
        try:
            g.wait_for("POISONED")  # the command's stdout, as it printed it
            pid = int(re.search(r"tracing PID (\d+)", g.stderr()).group(1))
            deadline = time.time() + 30
            while time.time() < deadline and not re.search(r" 0*100000001 3 65534$", _layouts(state), re.M):
                time.sleep(0.05)
            os.kill(pid, signal.SIGUSR1)
            eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-500:]})")
        finally:
            g.kill()
        t = gp.truth(g.stderr())
        eq(t["launch_rc"], 400, "the driver refused the forged handle (CUDA_ERROR_INVALID_HANDLE)")
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _layouts(state):
    try:
        with open(os.path.join(state, "layouts")) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def test_hostile_lesson_stays_its_users():
    """A nobody process teaches (and gpuprobe saves) a wrong layout: root's job at steady
    state does not use it (no layout for it yet: counted), and once root's processes
    taught the real one, every launch of the job has its right name."""
    state = gp.state_dir()
    poison(state)
    check(re.search(r" 0*100000001 3 65534$", _layouts(state), re.M), f"the lesson was saved: {_layouts(state)!r}")
    ((p, t, err),) = steady_attaches(state, attaches=1)
    eq([k["name"] for k in p["kernels"] if k["source"] == "memory"], [], "nothing named by another user's lesson")
    eq(p["unnamed_no_layout"], t["launches"], "the job's launches: no layout of its own yet")
    learn(state)
    ((p, t, err),) = steady_attaches(state, attaches=1)
    rows = by_handle(p)
    for h in t["handles"]:
        check(h["name"] in rows, f"{h['name'][:50]!r} named; rows {sorted(rows)[:20]}")
        eq(rows[h["name"]]["launches"], h["launches"], f"{h['name'][:40]} launches")
    eq(p["unnamed_launches"], t["failed_launches"], "unnamed: the refused handles only")
    check(re.search(r" 0*100000001 3 65534$", _layouts(state), re.M) and
          re.search(r" 0*100000001 1 0$", _layouts(state), re.M), f"both lessons kept, each its uid's: {_layouts(state)!r}")


def test_container_root_is_not_the_nodes_root():
    """uid 0 in a pid namespace of its own (a container's root) teaches a principal of its
    own, not root's lessons that serve every user: a host job does not use them."""
    if not shutil.which("unshare"):
        raise gp.Skip("unshare (util-linux) is needed")
    state = gp.state_dir()
    r = gp.gpuprobe(["--cudatrace", "--json", "--libcuda", FAKECUDA, "--state-dir", state, "--no-self-learn"],
                    cmd=["unshare", "--pid", "--fork", APP])
    eq(r.returncode, 0, f"learning run in a pid namespace ({r.stderr[-500:]})")
    check(re.search(r" 0*100000001 1 4294967294$", _layouts(state), re.M) and
          not re.search(r" 0$", _layouts(state), re.M), f"kept as a container root's: {_layouts(state)!r}")
    ((p, t, err),) = steady_attaches(state, attaches=1)
    eq(p["unnamed_no_layout"], t["launches"], "the host job: no layout of its own or root's")


SELF = "from a kernel of its own"


def assert_all_named(p, t, what):
    rows = by_handle(p)
    for h in t["handles"]:
        check(h["name"] in rows, f"{what}: {h['name'][:50]!r} not named; rows {sorted(rows)[:20]}")
        eq(rows[h["name"]]["launches"], h["launches"], f"{what}: {h['name'][:40]} launches")
        eq(rows[h["name"]]["source"], "memory", f"{what}: {h['name'][:40]} name source")
    for bad in (t["forged"], t["stale"]):
        unk = f"unknown@{bad['handle']}"
        check(unk in rows, f"{what}: a handle the driver refused stays unknown: {bad}")
        eq(rows[unk]["launches"], bad["failed_launches"], f"{what}: {unk} launches")
    eq(p["launches"], t["launches"] + t["failed_launches"], f"{what}: launches")
    eq(p["unnamed_launches"], t["failed_launches"], f"{what}: unnamed (the refused handles only)")
    eq(p["unnamed_no_layout"], 0, f"{what}: unnamed for want of a layout")


def safe_base():
    """A folder gpuprobe's child may load a driver from: root's, and no folder on its path
    writable by group or others (the checkout may lie under /tmp, as a CI clone can)."""
    for d in ("/run", "/root", "/var/lib", "/opt", "/srv"):
        real, ok = os.path.realpath(d), os.path.isdir(d)
        p = real
        while ok:
            st = os.stat(p)
            ok = st.st_uid == 0 and not st.st_mode & 0o022
            if p == "/":
                break
            p = os.path.dirname(p)
        if ok:
            return real
    raise gp.Skip("no root-owned folder here that others cannot write")


def test_self_learned_on_first_attach():
    """An empty state: gpuprobe teaches itself the build's layouts (a CUkernel and a
    CUfunction of its own, in a child that loads the stand-in) before the attach, so the
    first -p attach to a job at steady state names every launch; the lessons are root's,
    for both kinds, in the state file; a second attach has nothing left to learn. The
    stand-in is copied to a safe folder first: the checkout's may be refused (/tmp)."""
    top, app_path, lib = copies(safe_base())
    try:
        self_learned_on_first_attach(app_path, lib)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def self_learned_on_first_attach(app_path, lib, gpuprobe=None):
    state = gp.state_dir()
    (p1, t1, err1), (p2, t2, err2) = steady_attaches(state, attaches=2, extra=(), app_path=app_path, lib=lib,
                                                     gpuprobe=gpuprobe)
    lines = [l for l in err1.splitlines() if SELF in l]
    eq(len(lines), 1, f"one line says what was learned: {err1[-800:]!r}")
    check(re.search(r"learned kernel-handle layouts for libcuda build gnu-[0-9a-f]+ from a kernel of its own "
                    r"\(\d+ ms\): tag 0x2 slot 1, tag 0x100000001 slot 1", lines[0]), f"what and what it cost: {lines[0]!r}")
    assert_all_named(p1, t1, "attach 1")
    assert_all_named(p2, t2, "attach 2")
    text = _layouts(state)
    check(re.search(r" 0*2 1 0$", text, re.M) and re.search(r" 0*100000001 1 0$", text, re.M),
          f"root's lessons for both kinds saved: {text!r}")
    eq(len([l for l in text.splitlines() if l.startswith("gnu-")]), 2, f"two lessons: {text!r}")
    check(SELF not in err2 and "self-learned" not in err2, f"learned once: {err2[-500:]!r}")


def static_build():
    """The statically linked gpuprobe (`make bundle`'s), built here: its path. A static
    link has no program interpreter (PT_INTERP) to load the driver with."""
    path = os.path.join(gp.OUT, "bundle", "gpuprobe")
    if shutil.which(os.environ.get("CC", "cc")):
        r = gp.run(["make", "--no-print-directory", "-s", os.path.relpath(path, gp.ROOT)], timeout=600, cwd=gp.ROOT)
        eq(r.returncode, 0, f"make the static gpuprobe: {r.stderr[-800:]}")
    elif not os.path.exists(path):  # the test VM's userland (tests/vm): no compiler
        gp.skip("no C compiler here to build the static gpuprobe (make bundle's), and none was built")
    r = gp.run(["readelf", "-lW", path])
    eq(r.returncode, 0, f"readelf -l {path}: {r.stderr[-300:]}")
    check(" INTERP " not in r.stdout, f"statically linked (no PT_INTERP): {r.stdout[-800:]}")
    return path


def test_self_learned_by_the_static_build():
    """The statically linked gpuprobe, whose static glibc cannot host the driver, learns
    through a program of its own (src/static/selflearn_helper.c, dynamically linked, kept in
    its image and started from a memory file): the first attach to a job at steady state
    names every launch, as the dynamically linked build's does. Before, it said "not
    self-learned: this gpuprobe is statically linked" and named none."""
    static = static_build()
    top, app_path, lib = copies(safe_base())
    try:
        self_learned_on_first_attach(app_path, lib, gpuprobe=static)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_static_builds_program_refused_says_why():
    """Where the host's dynamic loader cannot start the static build's learning program (a C
    library too old for it: here a libc.so.6 the loader cannot use, first on gpuprobe's
    LD_LIBRARY_PATH, which the static gpuprobe itself ignores), one line says so, nothing is
    learned or saved, and the attach goes on: the job's launches are counted unnamed for
    want of a layout."""
    static = static_build()
    top, app_path, lib = copies(safe_base())
    bad = tempfile.mkdtemp(prefix="gp-badlibc-")
    try:
        with open(os.path.join(bad, "libc.so.6"), "w") as f:
            f.write("not a C library\n")
        state = gp.state_dir()
        ((p, t, err),) = steady_attaches(state, attaches=1, extra=(), app_path=app_path, lib=lib,
                                         env={"LD_LIBRARY_PATH": bad}, gpuprobe=static)
    finally:
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(bad, ignore_errors=True)
    lines = [l for l in err.splitlines() if "self-learned" in l]
    eq(len(lines), 1, f"one line: {err[-800:]!r}")
    check("exit 127: this host's C library could not start the learning program" in lines[0],
          f"says why: {lines[0]!r}")
    check(SELF not in err, f"nothing learned: {err[-500:]!r}")
    eq(p["unnamed_no_layout"], t["launches"], "unnamed for want of a layout")
    eq(_layouts(state), "", "nothing saved")


def copies(where, lib_owner=0, dir_mode=0o755):
    """name_app and the stand-in copied under `where` (apps/, fakecuda/: the app finds the
    copy through its RUNPATH), the copy owned by lib_owner, its folder of mode dir_mode."""
    top = tempfile.mkdtemp(prefix="gp-selflearn-", dir=where)
    os.chmod(top, 0o755)
    for sub, src in (("apps", APP), ("fakecuda", FAKECUDA)):
        os.mkdir(os.path.join(top, sub))
        shutil.copy(src, os.path.join(top, sub))
    lib = os.path.join(top, "fakecuda", os.path.basename(FAKECUDA))
    os.chown(lib, lib_owner, lib_owner)
    os.chmod(os.path.join(top, "fakecuda"), dir_mode)
    return top, os.path.join(top, "apps", os.path.basename(APP)), lib


def test_unsafe_libcuda_not_loaded():
    """A libcuda a user could have planted (a copy owned by nobody; one in a folder others
    may write) is never loaded into gpuprobe's child: one line says why, nothing is learned,
    and the job's launches are counted unnamed for want of a layout, as before."""
    for owner, mode, why in ((65534, 0o755, "not a regular file owned by root"),
                             (0, 0o777, "a directory not owned by root or writable by others")):
        top, app_path, lib = copies(gp.OUT, owner, mode)
        try:
            state = gp.state_dir()
            ((p, t, err),) = steady_attaches(state, attaches=1, extra=(), app_path=app_path, lib=lib)
            lines = [l for l in err.splitlines() if "self-learned" in l]
            eq(len(lines), 1, f"one line ({why}): {err[-800:]!r}")
            check(why in lines[0] and "not loaded" in lines[0], f"says why: {lines[0]!r}")
            check(SELF not in err, f"nothing learned: {err[-500:]!r}")
            eq(p["unnamed_no_layout"], t["launches"], f"{why}: unnamed for want of a layout")
            eq(_layouts(state), "", "nothing saved")
        finally:
            shutil.rmtree(top, ignore_errors=True)


def test_self_learn_without_a_gpu_says_why():
    """The driver finds no GPU in gpuprobe's child (FAKECUDA_DEVICES=0 in gpuprobe's
    environment only): one line says so, nothing is saved, the job's launches are counted
    unnamed for want of a layout."""
    state = gp.state_dir()
    env = dict(os.environ, FAKECUDA_DEVICES="0")
    top, app_path, lib = copies(safe_base())
    try:
        ((p, t, err),) = steady_attaches(state, attaches=1, extra=(), env=env, app_path=app_path, lib=lib)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    lines = [l for l in err.splitlines() if "self-learned" in l]
    eq(len(lines), 1, f"one line: {err[-800:]!r}")
    check("no GPU" in lines[0], f"says why: {lines[0]!r}")
    eq(p["unnamed_no_layout"], t["launches"], "unnamed for want of a layout")
    eq(_layouts(state), "", "nothing saved")


def gone(pid, timeout=30):
    """Waits until pid's memory is gone (exited: a zombie maps nothing)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/maps") as f:
                if not f.read():
                    return
        except OSError:
            return
        time.sleep(0.01)
    raise gp.Failure(f"PID {pid} did not exit")


def gated_command(app_args=("--wait", "--forge"), extra=()):
    """gpuprobe starts name_app --wait (every handle made, and those of a naming call named,
    before READY; all launched after it); at READY gpuprobe is stopped, the program launches
    and exits at once (FAKECUDA_TEARDOWN_MS=0), and gpuprobe is let go once its memory is
    gone: every record of its namings and launches is read after its exit.
    (process report, truth, gpuprobe's stderr)."""
    d = tempfile.mkdtemp(prefix="gp-gate-")
    out = os.path.join(d, "r.json")
    g = gp.Background([gp.GPUPROBE, "--cudatrace", "--json", "-o", out, "--libcuda", FAKECUDA, "--no-self-learn", "-v"] +
                      list(extra) + ["--", APP] + list(app_args),
                      env={"GPUPROBE_STATE_DIR": gp.state_dir(), "FAKECUDA_TEARDOWN_MS": "0"})
    try:
        pid = int(re.search(r"READY (\d+)", g.wait_for("READY")).group(1))
        os.kill(g.pid, signal.SIGSTOP)
        try:
            os.kill(pid, signal.SIGUSR1)
            gone(pid)
        finally:
            os.kill(g.pid, signal.SIGCONT)
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-500:]})")
        with open(out) as f:
            rep = gp.final(f.read(), "cudatrace")
    finally:
        g.kill()
        shutil.rmtree(d, ignore_errors=True)
    return proc(rep, pid), gp.truth(g.stderr()), g.stderr()


def test_exit_at_once_names_from_first_sight_copies():
    """A command that names its kernels, launches them and exits at once, its records all
    read after its exit (gated_command): the layout is learned from the copies BPF made at
    the naming calls, and the handles only cuModuleEnumerateFunctions returned are named
    from the copies made at their first launch, as when the program lingers (issue 29);
    a forged and a stale handle stay unknown. A kernel whose name is longer than a copy
    holds (3000 characters, --huge) is named while its process lives, and once it is gone is
    counted unnamed for that reason (unnamed_unread), never silently."""
    p, t, err = gated_command(("--wait", "--forge", "--huge"))
    rows = by_handle(p)
    huge = next(h for h in t["handles"] if h["name"].startswith("huge_kernel_"))
    for h in t["handles"]:
        if h is huge:
            continue
        want = "memory" if h["via"] == "cuModuleEnumerateFunctions" else "driver"
        check(h["name"] in rows, f"{h['name'][:50]!r} named; rows {sorted(rows)[:20]}")
        eq(rows[h["name"]]["source"], want, f"{h['name'][:40]} name source")
        eq(rows[h["name"]]["launches"], h["launches"], f"{h['name'][:40]} launches")
    unk = f"unknown@{huge['handle']}"
    check(unk in rows, f"the 3000-character name, not in the copy: {unk} unnamed; rows {sorted(rows)[:20]}")
    eq(rows[unk]["launches"], huge["launches"], "its launches")
    eq(p["unnamed_unread"], huge["launches"], "counted: gone before its name was read")
    for bad in (t["forged"], t["stale"]):
        u = f"unknown@{bad['handle']}"
        check(u in rows, f"a handle the driver refused stays unknown: {bad}")
        eq(rows[u]["launches"], bad["failed_launches"], f"{u} launches")
    check("forged_name" not in rows, "the forged handle's name was not taken")
    eq(p["unnamed_launches"], t["failed_launches"] + huge["launches"], "unnamed launches")
    eq(p["unnamed_no_layout"], 0, "unnamed for want of a layout")
    eq(p["comm"], "name_app", "the process's name")
    # the same program lingering (the stand-in's 100 ms exit): the long name read live (a
    # name read from memory is shown up to 1024 characters, as before)
    r = gp.gpuprobe(["--cudatrace", "--json", "--libcuda", FAKECUDA, "--no-self-learn"], cmd=[APP, "--huge"])
    eq(r.returncode, 0, f"exit status ({r.stderr[-500:]})")
    t = gp.truth(r.stderr)
    rows = by_handle(proc(gp.final(r.stdout, "cudatrace"), t["pid"]))
    huge = next(h for h in t["handles"] if h["name"].startswith("huge_kernel_"))["name"][:1024]
    check(huge in rows, f"lingering: the 3000-character name read live; rows {[n[:30] for n in rows]}")
    eq(rows[huge]["source"], "memory", "lingering: read from memory")


def steady_exit_unseen(app_args, gp_args):
    """name_app at steady state (every handle made and named) under a node-wide gpuprobe
    (--cudatrace --json and gp_args), which is stopped while the program launches every
    handle and exits at once: all its records are read after its exit. (app, gpuprobe),
    both ended."""
    a = gp.start_app([APP, "--steady", "--rounds", "1", "--forge"] + list(app_args), env={"FAKECUDA_TEARDOWN_MS": "0"})
    g = gp.start_gpuprobe(["--cudatrace", "--json"] + list(gp_args))
    try:
        os.kill(g.pid, signal.SIGSTOP)
        try:
            a.signal(signal.SIGUSR1)
            eq(a.wait(), 0, "name_app exit")  # reaped: gone
        finally:
            os.kill(g.pid, signal.SIGCONT)
        g.signal(signal.SIGINT)
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-500:]})")
    finally:
        a.kill()
        g.kill()
    return a, g


def test_node_wide_exit_at_once_steady_state():
    """Node-wide (no -p, no command) with a layout in the state file, a job whose handles
    were all made and named before gpuprobe started launches every one and exits at once,
    while gpuprobe is stopped: every launch is named from the copies made at the first
    launch of each handle (no naming call, the process gone when its records are read);
    forged and stale handles stay unknown."""
    state = gp.state_dir()
    learn(state)
    a, g = steady_exit_unseen([], ["--libcuda", FAKECUDA, "--state-dir", state, "--no-self-learn"])
    p, t = proc(gp.final(g.stdout(), "cudatrace"), a.pid), gp.truth(a.stderr())
    assert_all_named(p, t, "node-wide, exit at once")
    eq((p["unnamed_unread"], p["comm"]), (0, "name_app"), "none unread; the process's name")


def test_node_wide_two_libcuda_builds_in_one_process():
    """A process that maps two libcuda files of different builds and calls one (a
    container's CUDA compat libcuda beside the driver's; here a copy of the stand-in without
    its build id, loaded and never called), node-wide by discovery, exit at once: its
    handles' copies are named through the layouts of the build it called, the one mapped
    at the launch probe's address. Before, the process's build was "two, unknown" and its
    launches unnamed for want of a layout (on the H200 node-wide: PyTorch beside
    /usr/local/cuda/compat, two cuDNN kernels, 20 of 710 launches)."""
    if not gp.kernel_has_find_vma():
        gp.skip("no bpf_find_vma here (Linux 5.17): a launch's libcuda file is the process's, "
                "and a process mapping two builds keeps its launches unnamed")
    state = gp.state_dir()
    learn(state)
    d = tempfile.mkdtemp(prefix="gp-compat-")
    try:
        os.chmod(d, 0o755)
        other = os.path.join(d, "libcuda.so.1")
        if not shutil.which("objcopy"):
            gp.skip("no objcopy (binutils) in this userland to make a second build of the stand-in")
        r = gp.run(["objcopy", "--remove-section=.note.gnu.build-id", FAKECUDA, other])
        eq(r.returncode, 0, f"objcopy: {r.stderr}")
        a, g = steady_exit_unseen(["--map-also", other], ["--state-dir", state, "--no-self-learn", "-v"])
        err = g.stderr()
        probed = re.search(r"tracing every CUDA process: \d+ probes on (.*?);", err)
        check(probed and other in probed.group(1) and "," in probed.group(1),
              f"both files probed: {probed.group(1) if probed else err[-800:]}")
        p, t = proc(gp.final(g.stdout(), "cudatrace"), a.pid), gp.truth(a.stderr())
        assert_all_named(p, t, "two builds mapped, exit at once")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    gp.main([test_names_read_from_memory, test_no_latency_reads_no_memory, test_command_mode_names_everything,
             test_steady_state_named_from_the_state_file, test_steady_state_without_a_layout_says_why,
             test_text_report_names_process_and_why, test_bad_state_files_refused,
             test_hostile_lesson_stays_its_users, test_container_root_is_not_the_nodes_root,
             test_self_learned_on_first_attach, test_unsafe_libcuda_not_loaded,
             test_self_learned_by_the_static_build, test_static_builds_program_refused_says_why,
             test_self_learn_without_a_gpu_says_why, test_exit_at_once_names_from_first_sight_copies,
             test_node_wide_exit_at_once_steady_state, test_node_wide_two_libcuda_builds_in_one_process])
