# SPDX-License-Identifier: BSD-3-Clause
"""Leak stacks that name the user's code (issue 15), end to end: gpuprobe --memleak with
real BPF on the stand-in driver, against tests/stacks/stackapp built -O2
-fomit-frame-pointer (and its variants: stripped with a separate debug file, a debug file
of another build, a corrupt .eh_frame) and tests/stacks/pyalloc.py through ctypes.

PYSTACK_PYTHONS: the CPython interpreters the Python checks run under (default Debian's
/usr/bin/python3.11; `make test-pystack-all` passes every one found)."""
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import gp
from gp import FAKECUDA, check, eq, final, proc

STK = os.path.join(gp.OUT, "stacks")
SRC = os.path.join(gp.ROOT, "tests", "stacks")
PYALLOC = os.path.join(SRC, "pyalloc.py")
BASE = ["--memleak", "--json", "--libcuda", FAKECUDA]
CHAIN = ["stackapp_leaf", "stackapp_middle", "stackapp_outer"]
# src/lib/unwind.h: the stack copy (--stacks dwarf) and the CPython frames read with it
# are built for x86-64 and arm64; elsewhere --stacks auto takes frame pointers.
COPY_BUILT = os.uname().machine in ("x86_64", "aarch64")


def need_stack_copy(what):
    """Skips (counted, with the reason) a test of what only a stack copy gives: frames
    through code without frame pointers, CFI and debug files, the CPython frames."""
    if not COPY_BUILT:
        raise gp.Skip(f"needs the stack copy ({what}): --stacks dwarf and the CPython frames read with it "
                      f"are built for x86-64 and arm64 only (src/lib/unwind.h, docs/stacks.md); this is {os.uname().machine}")


def source_line(path, pattern, after=None):
    """The line number of the first line matching pattern (after the line matching after)."""
    with open(path) as f:
        lines = f.read().splitlines()
    start = 0
    if after:
        start = next(i for i, l in enumerate(lines) if re.search(after, l))
    return next(i + 1 for i, l in enumerate(lines) if i >= start and re.search(pattern, l))


def func(frame):
    """"f+0x1a (lib) at f.c:1" -> "f"; a Python frame "f (file.py:1)" -> "f"."""
    return re.split(r"[+ ]", frame, 1)[0]


def in_order(names, want):
    """Index where want appears as consecutive entries of names, or -1."""
    for i in range(len(names) - len(want) + 1):
        if names[i:i + len(want)] == want:
            return i
    return -1


def run_app(args, extra=(), timeout=60, base=BASE, seen=None):
    """gpuprobe --memleak on a command that allocates (pyalloc.py: once it printed READY
    and got a line), prints DONE and waits for stdin to close: closed 0.3 s after DONE, so
    the stack is read while the process runs, as with a program that goes on after its
    leak (0.3 s x GP_TIME_SLACK). Returns (stdout, stderr, final report).

    seen: a pattern of gpuprobe's -v lines that must have come before the line is sent
    (e.g. that the interpreter is recognized): a process gpuprobe does not start itself
    (unshare's child) is looked at when the reader gets to its exec record, and an
    allocation before that has its CPython frames flagged unread (python_unread), not
    read; what that test checks is the reading, not the reader's lag."""
    # -o -: the command's READY/DONE on gpuprobe's stdout with the reports (a pipe would
    # otherwise send the command's stdout to gpuprobe's stderr)
    if seen:
        extra = list(extra) + ["-v"]
    p = subprocess.Popen([gp.GPUPROBE] + base + list(extra) + ["-o", "-", "--"] + args, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, errs = [], []
    # stderr read beside stdout (a full pipe would stop gpuprobe)
    reader = threading.Thread(target=lambda: errs.extend(p.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.time() + timeout * gp.TIME_SLACK
        for line in p.stdout:
            out.append(line)
            if line.strip() == "READY":
                while seen and not any(re.search(seen, e) for e in list(errs)) and time.time() < deadline:
                    time.sleep(0.02)
                p.stdin.write("\n")
                p.stdin.flush()
            if line.strip() == "DONE" or time.time() > deadline:
                break
        # x GP_TIME_SLACK: the process must outlive the reader's look at its stack (6.12
        # under QEMU's TCG, the whole suites: a library dlopen'ed after the first stack was
        # not yet kept 0.3 s after DONE, and the leak through it had its first frame only);
        # a program that exits at once is `gated`'s
        time.sleep(0.3 * gp.TIME_SLACK)
        p.stdin.close()
        rest = p.stdout.read()
        p.wait(timeout=timeout * gp.TIME_SLACK)
        reader.join(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    stdout, err = "".join(out) + rest, "".join(errs)
    eq(p.returncode, 0, f"exit status: {err[-800:]}")
    if seen:
        check(any(re.search(seen, e) for e in errs), f"gpuprobe said {seen!r} before the allocation: {err[-800:]}")
    return stdout, err, final(stdout) if "--json" in base else None


def only_stack(rep, comm=None):
    """The one stack of the one process (with comm) in a report."""
    ps = [p for p in rep["processes"] if comm is None or p["comm"] == comm]
    eq(len(ps), 1, f"processes named {comm}")
    eq(len(ps[0]["stacks"]), 1, f"stacks of {ps[0]['comm']}")
    return ps[0]["stacks"][0]


def stackapp(name, *args, extra=()):
    _, _, rep = run_app([os.path.join(STK, name)] + list(args), extra=extra)
    return only_stack(rep)


def test_chain_without_frame_pointers():
    """-O2 -fomit-frame-pointer: the leaking function and its callers, in order, to main,
    with their lines."""
    need_stack_copy("frames through -fomit-frame-pointer code")
    s = stackapp("stackapp", "chain")
    names = [func(f) for f in s["frames"]]
    eq(names[0], "cuMemAlloc_v2", "the probed function first")
    eq(in_order(names, ["cuMemAlloc_v2"] + CHAIN + ["main"]), 0, f"leaf <- middle <- outer <- main in {names}")
    eq((s["partial"], s["flags"]), (False, []), "a complete stack")
    eq(names[-1], "_start", "ends at _start")
    src = os.path.join(SRC, "stackapp.c")
    want = [source_line(src, r"cuMemAlloc_v2\(&p, bytes\)"), source_line(src, r"stackapp_leaf\(bytes \+ 1\)"),
            source_line(src, r"stackapp_middle\(bytes \* 2\)")]
    got = [f.rsplit(" at ", 1)[-1] for f in s["frames"][1:4]]
    eq(got, [f"stackapp.c:{n}" for n in want], "file:line of each call")


def test_chain_on_another_thread():
    need_stack_copy("frames through -fomit-frame-pointer code")
    s = stackapp("stackapp", "thread")
    names = [func(f) for f in s["frames"]]
    eq(in_order(names, CHAIN + ["thread_main"]), 1, f"the chain then thread_main: {names}")
    check("truncated" not in s["flags"], s["flags"])


def test_frame_pointer_fallback_without_cfi():
    """No call-frame information for the program's functions (built without unwind
    tables or -g; only the C runtime's _start has an FDE) but frame pointers: the unwinder
    walks them frame by frame where CFI is missing, and CFI again in libc."""
    need_stack_copy("the unwinder's frame-pointer fallback")
    s = stackapp("stackapp-fp", "chain")
    names = [func(f) for f in s["frames"]]
    eq(in_order(names, ["cuMemAlloc_v2"] + CHAIN + ["main"]), 0, f"to main by frame pointers: {names}")
    eq((s["partial"], s["flags"], names[-1]), (False, [], "_start"), "complete, to _start")


def test_frame_pointer_mode():
    """--stacks fp: the kernel's walk; without frame pointers it names the caller (6.11+
    adds it at a function's entry) but cannot go on from there."""
    _, _, rep = run_app([os.path.join(STK, "stackapp"), "chain"], extra=["--stacks", "fp"])
    eq(rep["stack_mode"], "fp", "stacks mode")
    s = only_stack(rep)
    names = [func(f) for f in s["frames"]]
    eq(names[:2], ["cuMemAlloc_v2", "stackapp_leaf"], f"the probed function and its caller: {names}")
    check(in_order(names, CHAIN + ["main"]) < 0, f"fp walks through code without frame pointers: {names}")


def test_stripped_with_separate_debug_file():
    """No .symtab, no .eh_frame: CFI, names and lines come from the .gnu_debuglink file
    (its build-id checked)."""
    need_stack_copy("CFI from a separate debug file")
    s = stackapp("stackapp-nocfi", "chain")
    names = [func(f) for f in s["frames"]]
    eq(in_order(names, CHAIN + ["main"]), 1, f"leaf <- middle <- outer <- main: {s['frames']}")
    check(all("(stackapp-nocfi) at stackapp.c:" in f for f in s["frames"][1:5]), s["frames"][1:5])
    eq(s["partial"], False, "complete")


def check_stopped(s):
    """Partial, stopped. The frame-pointer fallback may also have read a garbage %rbp just
    above a copy that a missing page cut short (the main thread's stack has a random
    untouched gap), which adds "truncated": both are true."""
    check(s["partial"] and "stopped" in s["flags"] and set(s["flags"]) <= {"stopped", "truncated"},
          f"partial, stopped: {s['flags']}")


def test_debug_file_of_another_build():
    """The same binary beside a debug file of another build: rejected; the stack stops
    where the driver's CFI ends and says so."""
    need_stack_copy("a rejected debug file's stop")
    s = stackapp("bad/stackapp-nocfi", "chain")
    check_stopped(s)
    eq(len(s["frames"]), 2, f"the probed function and the leaf only: {s['frames']}")
    check(s["frames"][1].startswith("0x") and "(stackapp-nocfi)" in s["frames"][1],
          f"the leaf unnamed: the rejected file gave nothing: {s['frames']}")


def test_corrupt_eh_frame():
    need_stack_copy("a corrupt .eh_frame's stop")
    s = stackapp("stackapp-corrupt", "chain")
    check_stopped(s)
    eq([func(f) for f in s["frames"]], ["cuMemAlloc_v2", "stackapp_leaf"], "nothing invented")


def test_deep_recursion_is_partial():
    """Deeper than the copy: the innermost frames, every one right, marked partial — in
    the JSON, the text and the folded stacks."""
    need_stack_copy("a copy shorter than the stack")
    d = tempfile.mkdtemp(prefix="gp-stk-")
    try:
        folded = os.path.join(d, "deep.folded")
        _, _, rep = run_app([os.path.join(STK, "stackapp"), "deep", "200"], extra=["--folded", folded])
        s = only_stack(rep)
        names = [func(f) for f in s["frames"]]
        eq((s["partial"], s["flags"]), (True, ["truncated"]), "partial, truncated")
        eq(in_order(names, ["cuMemAlloc_v2"] + CHAIN + ["stackapp_recurse"]), 0, f"innermost frames: {names}")
        eq(set(names[4:]), {"stackapp_recurse"}, "nothing but recursion frames after them")
        check("main" not in names and len(names) > 20, f"{len(names)} frames")
        line = open(folded).read().split(";")
        eq(line[1], "[partial stack]", "the folded stack says partial under its process")
        _, _, rep4 = run_app([os.path.join(STK, "stackapp"), "deep", "200"], extra=["--stack-bytes", "4096"])
        s4 = only_stack(rep4)
        check(s4["flags"] == ["truncated"] and len(s4["frames"]) < len(s["frames"]),
              f"4 KiB: fewer frames ({len(s4['frames'])} vs {len(s['frames'])}), truncated")
        r = subprocess.run([gp.GPUPROBE, "--memleak", "--libcuda", FAKECUDA, "-o", "-", "--",
                            os.path.join(STK, "stackapp"), "deep", "200"], input="\n",
                           capture_output=True, text=True, timeout=60)
        check("[partial: the stack copy ended before the stack did (--stack-bytes)]" in r.stdout, r.stdout)
        check(r.stdout.count("stackapp_recurse+") == len(names) - 4, "the same frames in the text report")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_unreadable_stack():
    """Pages above the frame never touched (BPF cannot fault them in): the readable part,
    marked partial; no copy at all: the probed function alone, marked."""
    need_stack_copy("an unreadable copy")
    s = stackapp("stackapp", "gap")
    names = [func(f) for f in s["frames"]]
    eq(in_order(names, CHAIN + ["gap_frame"]), 1, f"frames up to gap_frame: {names}")
    eq((s["partial"], s["flags"]), (True, ["truncated"]), "partial")
    s = stackapp("stackapp", "chain", extra=["--stack-bytes", "0"])
    eq([func(f) for f in s["frames"]], ["cuMemAlloc_v2"], "the probed function alone")
    eq((s["partial"], s["flags"]), (True, ["no_stack"]), "marked no_stack")


def libdir(ldd):
    """The folder of the C library in ldd's output."""
    return next(os.path.dirname(x) for x in ldd.split() if x.startswith("/") and os.path.basename(x) == "libc.so.6")


def make_root(bind=()):
    """A container-like root: stackapp at /app, its libraries at their own paths (libcuda
    hard-linked, so the probes on the host's inode fire; the libraries named in bind are
    the host's files bind-mounted there, as a container runtime mounts host libraries:
    the same inode, whatever the file systems; unmount_root undoes them)."""
    root = tempfile.mkdtemp(prefix="gp-root-")
    app = os.path.join(STK, "stackapp")
    os.makedirs(os.path.join(root, "app"))
    shutil.copy2(app, os.path.join(root, "app", "stackapp"))
    out = subprocess.run(["ldd", app], capture_output=True, text=True).stdout
    for line in out.splitlines():
        path = next((x for x in line.split() if x.startswith("/")), None)
        if not path:
            continue
        dst = root + path
        if path.startswith(os.path.dirname(app) + "/"):
            # found through $ORIGIN, which the loader cannot expand in a root without
            # /proc: beside the root's libc, where container runtimes put libcuda
            dst = root + os.path.join(libdir(out), os.path.basename(path))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        real = os.path.realpath(path)
        if os.path.basename(path) in bind:
            open(dst, "w").close()
            r = subprocess.run(["mount", "--bind", real, dst], capture_output=True, text=True)
            if r.returncode:
                unmount_root(root)
                raise gp.Skip(f"no bind mount here ({r.stderr.strip()})")
        elif real == os.path.realpath(FAKECUDA):
            os.link(real, dst)
        else:
            shutil.copy2(real, dst)
    return root


def unmount_root(root):
    """The bind mounts under root gone, and root with them."""
    with open("/proc/self/mounts") as f:
        points = [l.split()[1] for l in f if l.split()[1].startswith(root + "/")]
    for m in reversed(points):
        subprocess.run(["umount", "-l", m], capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def test_program_only_inside_its_root():
    """The program and its libraries exist only in the process's root (a container's):
    read through /proc/PID/root."""
    need_stack_copy("frames through -fomit-frame-pointer code")
    root = make_root()
    try:
        check(not os.path.exists("/app/stackapp"), "/app/stackapp must not exist on the host")
        _, _, rep = run_app(["chroot", root, "/app/stackapp", "chain"])
        s = only_stack(rep, "stackapp")
        names = [func(f) for f in s["frames"]]
        eq(in_order(names, ["cuMemAlloc_v2"] + CHAIN + ["main"]), 0, f"to main: {s['frames']}")
        check(" at stackapp.c:" in s["frames"][1], s["frames"][1])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_debug_file_of_another_root():
    """The host's libc mapped from a container's root too (bind-mounted: the same inode, as
    the NVIDIA container toolkit mounts libcuda into every GPU pod), and that root holds no
    debug files: a process there is looked at first, while
    it lives, then a host process leaks. The host process's libc frames are named with
    their lines from the host's debug file: a root's files (a debug file made to match the
    build-id, or none) name only that root's frames. Before, the first root looked in
    decided for every process: the host's libc frames had no lines, and
    __libc_start_call_main no name."""
    need_stack_copy("frames through -fomit-frame-pointer code")
    app = os.path.join(STK, "stackapp")
    _, _, rep = run_app([app, "chain"])
    alone = only_stack(rep)["frames"]
    libc = [f for f in alone if "(libc.so.6)" in f]
    if not libc or not all(" at " in f for f in libc):
        raise gp.Skip(f"the host's libc frames have no lines alone (no libc debug file here): {libc}")
    root = make_root(bind=("libc.so.6",))
    try:
        # the container's process lives 1 s after its leak (its stdin a sleep's), its DONE
        # not on gpuprobe's stdout: run_app's line goes to the host process
        script = f'sleep 1 | chroot "{root}" /app/stackapp chain > /dev/null; exec "{app}" chain'
        _, err, rep = run_app(["sh", "-c", script], extra=["-v"])
        ps = {p["pid"]: p for p in rep["processes"] if p["comm"] == "stackapp"}
        eq(len(ps), 2, f"the container's process and the host's: {sorted(ps)}")
        # the host's is the shell gpuprobe started (its exec), the container's its child
        started = re.search(r"tracing PID (\d+)", err)
        check(started and int(started.group(1)) in ps, f"the started PID among {sorted(ps)}: {err[-400:]}")
        host = ps[int(started.group(1))]
        frames = host["stacks"][0]["frames"]
        eq(unnamed_as_file([f for f in frames if "(libc.so.6)" in f]), unnamed_as_file(libc),
           f"the host process's libc frames, after the container's ({[p['stacks'][0]['frames'] for p in ps.values()]})")
    finally:
        unmount_root(root)


# ---- programs that exit at once; inlined allocators (issue 29) ----

LEAKEXIT = os.path.join(STK, "leakexit")
LEAKSRC = os.path.join(SRC, "leakexit.c")
LEAKHELP = os.path.realpath(os.path.join(STK, "libleakhelp.so"))


def tag(path, name):
    return source_line(path, rf"@{name}\b")


def addr2line_chain(binary, frame):
    """What `addr2line -i -f` (binutils: a source independent of gpuprobe's libdw) says of
    the call a return-address frame "main+0x219 (leakexit) ..." made: [(function,
    "file.c:LINE")], innermost first."""
    sym, off = re.match(r"([\w.]+)\+0x([0-9a-f]+) ", frame).groups()
    nm = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    base = next(int(l.split()[0], 16) for l in nm.splitlines() if l.split()[-1] == sym and l.split()[1] in "Tt")
    out = subprocess.run(["addr2line", "-i", "-f", "-e", binary, hex(base + int(off, 16) - 1)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [(out[i], os.path.basename(out[i + 1].split(" (discriminator")[0])) for i in range(0, len(out) - 1, 2)]


def unnamed_as_file(frames):
    """Frames of two processes compared: an unnamed one ("0xffff8cdb7744 (libc.so.6)", a
    libc without symbols for its static functions: the arm64 VM's) by its file, its address
    being the process's own (ASLR)."""
    return [re.sub(r"^0x[0-9a-f]+ \(", "0x? (", f) for f in frames]


def leak_frames(s):
    """From the leak's help_alloc frame out to main (the inline chain between)."""
    names = [func(f) for f in s["frames"]]
    return s["frames"][names.index("help_alloc"):names.index("main") + 1]


def check_leak_stack(s, what):
    """help_alloc (libleakhelp.so) <- make_buffer <- train_step (both inlined) <- main, on
    the lines leakexit.c's tags name and as addr2line -i gives them."""
    fr = leak_frames(s)
    names = [func(f) for f in fr]
    eq(names, ["help_alloc", "make_buffer", "train_step", "main"], f"{what}: the inline chain expanded: {s['frames']}")
    eq([("[inlined]" in f) for f in fr], [False, True, True, False], f"{what}: inlined frames marked: {fr}")
    eq(fr[0].rsplit(" at ", 1)[-1], f"leakhelp.c:{tag(os.path.join(SRC, 'leakhelp.c'), 'help_alloc')}",
       f"{what}: help_alloc's line")
    got = [(func(f), f.rsplit(" at ", 1)[-1]) for f in fr[1:]]
    eq(got, [(n, f"leakexit.c:{tag(LEAKSRC, n)}") for n in ("make_buffer", "train_step", "main")],
       f"{what}: each frame's line (the tags)")
    eq(got, addr2line_chain(LEAKEXIT, fr[-1]), f"{what}: as addr2line -i -f gives it")
    eq(s["frames"][0].split("+")[0], "cuMemAlloc_v2", f"{what}: the probed function first")
    eq((s["partial"], s["flags"], func(s["frames"][-1])), (False, [], "_start"), f"{what}: complete, to _start")


def test_inlined_allocator_matches_addr2line():
    """-O2 -g, make_buffer inlined into train_step inlined into main: one frame each, with
    the line of each call, as addr2line -i; in the JSON, the text and the folded stacks."""
    need_stack_copy("frames through -fomit-frame-pointer code")
    d = tempfile.mkdtemp(prefix="gp-inl-")
    try:
        folded = os.path.join(d, "leak.folded")
        _, _, rep = run_app([LEAKEXIT, "linger", "0"], extra=["--folded", folded])
        s = only_stack(rep)
        check_leak_stack(s, "lingering")
        line = open(folded).read().strip()
        check(";".join(reversed(leak_frames(s))) in line, f"the folded stack has the inlined frames: {line}")
        r = subprocess.run([gp.GPUPROBE, "--memleak", "--libcuda", FAKECUDA, "-o", "-", "--", LEAKEXIT, "linger", "0"],
                           input="\n", capture_output=True, text=True, timeout=60)
        for f in leak_frames(s):
            check(f"        {f}\n" in r.stdout, f"the text report has {f!r}: {r.stdout}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_exit_at_once_keeps_whole_stacks():
    """A program that exits about 1 ms after its last allocation: the same frames, names
    and lines as the same program lingering. Then the reader is stopped (SIGSTOP) once
    the process's first stack is handled, and let go only after the process is gone:
    every record of its leak is read after its exit, through files its first stack never
    went through (libleakhelp.so), from what was kept while it lived."""
    need_stack_copy("frames through -fomit-frame-pointer code")
    _, _, rep = run_app([LEAKEXIT, "linger", "0"])
    linger = only_stack(rep)["frames"]
    # the stand-in's emulated exit teardown off: gone 1 ms after its last allocation
    r = gp.gpuprobe(BASE + ["-o", "-"], [LEAKEXIT, "exit"], env={"FAKECUDA_TEARDOWN_MS": "0"})
    eq(r.returncode, 0, r.stderr[-800:])
    s = only_stack(final(r.stdout))
    eq(unnamed_as_file(s["frames"]), unnamed_as_file(linger), "exit 1 ms after the last allocation: the lingering process's frames")
    check_leak_stack(s, "exit at once")
    # stopped once what its first stack keeps is all kept, libc's separate debug file read
    # (the -v line that ends it), not at the first kept descriptor: on 6.1 in QEMU the
    # debug file took seconds after libleakhelp.so's descriptor, the reader was stopped in
    # between, and libc's frames read after the exit had no names or lines
    s, _ = gated([LEAKEXIT, "gate"], extra=["-v"], wait_err=r"PID \d+: maps and \d+ more files kept")
    eq(unnamed_as_file(s["frames"]), unnamed_as_file(linger), "records read after the exit: the lingering process's frames")
    check_leak_stack(s, "read after the exit")


def test_exit_at_once_behind_a_flood():
    """A reader far behind the run's ring (GPUPROBE_TEST_RECORD_US: each record read takes
    2 ms; another process's flood of allocations, ~900 records, ahead of the program's)
    reached the issue's program (a warm-up allocation, 300 ms of compute, three
    allocations, two frees, exit 1 ms after the last allocation) only after it was gone,
    and named none of its frames (one raw address). Its first allocation call now sends a
    record on a ring of its own that the reader takes before the others (GP_EV_PIN), and
    what naming its frames needs is kept while it lives: the leak's stack is the lingering
    program's, read seconds after the exit."""
    need_stack_copy("frames through -fomit-frame-pointer code")
    _, _, rep = run_app([LEAKEXIT, "linger", "0"])
    linger = only_stack(rep)["frames"]
    burst = gp.app("memleak_burst")
    cmd = ["sh", "-c", f'"{burst}" --allocs 300 && exec "{LEAKEXIT}" exit 300']
    t0 = time.time()
    r = gp.gpuprobe(BASE + ["-o", "-"], cmd, timeout=120 * gp.TIME_SLACK,
                    env={"FAKECUDA_TEARDOWN_MS": "0", "GPUPROBE_TEST_RECORD_US": "2000"})
    eq(r.returncode, 0, r.stderr[-800:])
    rep = final(r.stdout)
    s = only_stack(rep, "leakexit")
    print(f"#   read {time.time() - t0:.1f} s; the leak: {[func(f) for f in s['frames']]}", flush=True)
    eq(unnamed_as_file(s["frames"]), unnamed_as_file(linger), "behind a flood, exit at once: the lingering process's frames")
    check_leak_stack(s, "behind a flood")


def test_library_loaded_after_the_first_stack():
    """A library dlopen'ed after the process's first stack (what was kept then lacks it):
    the leak through it is followed and named while the process lives, and what is kept
    grows by it."""
    need_stack_copy("frames through -fomit-frame-pointer code")
    late = os.path.realpath(os.path.join(STK, "libleaklate.so"))
    _, err, rep = run_app([LEAKEXIT, "late", late], extra=["-v"])
    s = only_stack(rep)
    names = [func(f) for f in s["frames"]]
    eq(names[:3], ["cuMemAlloc_v2", "late_alloc", "main"], f"through the late library: {s['frames']}")
    eq(s["frames"][1].rsplit(" at ", 1)[-1], f"leakhelp.c:{tag(os.path.join(SRC, 'leakhelp.c'), 'help_alloc')}",
       "its line")
    eq((s["partial"], s["flags"]), (False, []), "complete")
    check(re.search(r"maps and \d+ more files kept", err), f"kept again: {err[-800:]}")


def gated(argv, kept=LEAKHELP, timeout=60, wait_err=None, extra=(), whole=False, settle=0):
    """gpuprobe on leakexit gate|many (or pyalloc.py gate): once the program made its first
    allocation (WARM) and gpuprobe holds a descriptor on kept (or printed a line matching
    wait_err: what it keeps is then all opened), gpuprobe is stopped, the program goes on
    and exits, and gpuprobe is let go once the process's memory is gone. (stack, (stderr,
    maps)); whole: (final report, (stderr, maps)). settle: seconds gpuprobe reads on before
    it is stopped."""
    p = subprocess.Popen([gp.GPUPROBE] + BASE + list(extra) + ["-o", "-", "--"] + argv, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, FAKECUDA_TEARDOWN_MS="0"))
    try:
        line = p.stdout.readline()
        if not line:  # gpuprobe's stdout closed: it ended, refused this kernel perhaps
            gp._skip_if_refused([gp.GPUPROBE], p.wait(timeout=30), p.stderr.read())
        check(line.startswith("WARM "), f"WARM: {line!r}")
        app = int(line.split()[1])
        maps = open(f"/proc/{app}/maps").read()
        deadline = time.time() + timeout
        early = ""
        # the descriptor itself (a buffered readline would hide a second line from select)
        while wait_err and not re.search(wait_err, early) and time.time() < deadline:
            if select.select([p.stderr.fileno()], [], [], max(0.0, deadline - time.time()))[0]:
                early += os.read(p.stderr.fileno(), 65536).decode(errors="replace")
        while time.time() < deadline:
            fds = []
            for fd in os.listdir(f"/proc/{p.pid}/fd"):
                try:
                    fds.append(os.readlink(f"/proc/{p.pid}/fd/{fd}"))
                except OSError:
                    pass
            if kept in fds:
                break
            time.sleep(0.01)
        else:
            raise gp.Failure(f"gpuprobe kept no descriptor on {kept}; {early[-600:]}")
        time.sleep(settle)  # the first call's later records read too
        os.kill(p.pid, signal.SIGSTOP)
        try:
            p.stdin.write("\n")
            p.stdin.close()
            p.stdin = None
            # gone: a zombie has no mappings (gpuprobe, its parent, cannot reap it now)
            while time.time() < deadline:
                try:
                    if not open(f"/proc/{app}/maps").read():
                        break
                except OSError:
                    break
                time.sleep(0.01)
            else:
                raise gp.Failure("the program did not exit")
        finally:
            os.kill(p.pid, signal.SIGCONT)
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    eq(p.returncode, 0, f"exit status: {err[-800:]}")
    rep = final(line + out)
    return rep if whole else only_stack(rep), (early + err, maps)


def test_kept_files_limit():
    """More executable files mapped than a process may keep (256): the rest is counted and
    said, with the process's PID, in a warning line; the count is the process's own maps'."""
    d = tempfile.mkdtemp(prefix="gp-many-")
    try:
        n = 300
        for i in range(n):  # the build's (the arm64 VM has no compiler)
            shutil.copy(os.path.join(STK, "libone.so"), os.path.join(d, f"lib{i}.so"))
        s, (err, maps) = gated([LEAKEXIT, "many", str(n), d], kept=os.path.join(d, "lib0.so"),
                               wait_err=r"files it maps executable not kept")
        files = {(l.split()[3], l.split()[4]) for l in maps.splitlines()
                 if len(l.split()) >= 6 and l.split()[1][2] == "x" and l.split()[5].startswith("/")}
        check(len(files) > n, f"{len(files)} executable files mapped")
        m = re.search(r"PID (\d+): (\d+) of the files it maps executable not kept \(at most 256 a process", err)
        check(m, f"a warning line: {err[-1500:]}")
        eq(int(m.group(2)), len(files) - 256, "files not kept: those over 256")
        check(s["frames"][0].startswith("cuMemAlloc_v2"), f"the stack still starts at the probe: {s['frames']}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- CPython ----

def tags():
    """{"leak_buffer": 27, ...} from the "# @name" tags of pyalloc.py."""
    out = {}
    with open(PYALLOC) as f:
        for n, line in enumerate(f, 1):
            if "# @" in line and not line.lstrip().startswith(('"', "functions")):
                out[line.rsplit("# @", 1)[1].strip()] = n
    return out


def py_frames(s):
    """The Python frames of a stack, file names cut to their base name."""
    return [re.sub(r"\((/[^:]*/)?([^/:]+\.py):", r"(\2:", f) for f in s["frames"] if ".py:" in f]


def check_interleaved(s, what):
    """Python frames where the interpreter ran them: after the ctypes call, before the
    interpreter's start-up frames; none left as "after"."""
    fr = s["frames"]
    first = next(i for i, f in enumerate(fr) if ".py:" in f)
    last = max(i for i, f in enumerate(fr) if ".py:" in f)
    check(any("_ctypes" in f or "ffi_call" in f for f in fr[:first]), f"{what}: ctypes below the Python frames: {fr}")
    check("python_after" not in s["flags"], f"{what}: Python frames not placed: {s['flags']}")
    check(not any(f.startswith("_PyEval_EvalFrameDefault") for f in fr[first:last]),
          f"{what}: an interpreter frame left among its Python frames: {fr}")


def python_checks(py):
    t, f = tags(), "pyalloc.py"
    want = [f"leak_buffer ({f}:{t['leak_buffer']})", f"make_layer ({f}:{t['make_layer']})"]
    ver = subprocess.run([py, "-c", "import platform; print(platform.python_version())"],
                         capture_output=True, text=True).stdout.strip()
    what = f"{os.path.basename(py)} {ver}"
    # a command: the interpreter is recognized at its exec
    _, _, rep = run_app([py, PYALLOC, FAKECUDA])
    s = only_stack(rep)
    pf = [x for x in py_frames(s) if "listcomp" not in x]
    eq(pf[:2], want, f"{what}: leak_buffer <- make_layer on their lines")
    build = [x for x in pf[2:] if x.startswith(("Model.build ", "build "))]
    check(len(build) == 1 and build[0].endswith(f"({f}:{t['build']})"), f"{what}: Model.build: {pf}")
    eq(pf[-2:], [f"main ({f}:{t['main']})", f"<module> ({f}:{t['module']})"], f"{what}: main, <module>")
    check_interleaved(s, what)
    eq(s["partial"], False, f"{what}: complete")
    # a thread of its own: its frames, not the main thread's
    _, _, rep = run_app([py, PYALLOC, FAKECUDA, "thread"])
    pf = py_frames(only_stack(rep))
    check(pf[:2] == want and any("Thread.run" in x or x.startswith("run ") for x in pf) and
          not any(x.startswith("main ") for x in pf), f"{what}: the thread's frames: {pf}")
    # two threads allocating at once: two stacks, five allocations each
    _, _, rep = run_app([py, PYALLOC, FAKECUDA, "two"])
    p = rep["processes"][0]
    got = sorted((s["outstanding_allocs"], [x for x in py_frames(s) if x.startswith("worker")]) for s in p["stacks"])
    eq(got, [(5, [f"worker_a ({f}:{t['worker_a']})"]), (5, [f"worker_b ({f}:{t['worker_b']})"])],
       f"{what}: each thread's allocations under its own stack")
    # more frames than the walk keeps: the innermost 64, marked
    _, _, rep = run_app([py, PYALLOC, FAKECUDA, "deep", "100"])
    s = only_stack(rep)
    pf = py_frames(s)
    check(len(pf) == 64 and "python_truncated" in s["flags"] and pf[0].startswith("leak_buffer ") and
          pf[1] == f"recurse ({f}:{t['recurse_base']})", f"{what}: deep: {s['flags']} {pf[:3]} ({len(pf)})")
    # a fork without exec: the child has its parent's interpreter (the parent allocates nothing)
    _, _, rep = run_app([py, PYALLOC, FAKECUDA, "fork"])
    eq(len(rep["processes"]), 1, f"{what}: only the child allocated")
    pf = py_frames(only_stack(rep))
    eq(pf[:2], [want[0], f"forked_child ({f}:{t['forked_child']})"], f"{what}: the forked child's frames")
    # its own PID namespace (a container's): found through the thread pointer, not the tid
    _, _, rep = run_app(["unshare", "--pid", "--fork", py, PYALLOC, FAKECUDA, "thread"],
                        seen=r"PID \d+: CPython [0-9.]+: Python frames on")
    s = only_stack(rep, os.path.basename(os.path.realpath(py))[:15])
    eq((py_frames(s)[:2], s["flags"]), (want, []), f"{what}: in a PID namespace")
    python_attach_mid_run(py, what, want)


def python_attach_mid_run(py, what, want):
    """-p on a running interpreter: looked at when tracing starts."""
    p = subprocess.Popen([py, PYALLOC, FAKECUDA], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    g = None
    try:
        eq(p.stdout.readline().strip(), "READY", f"{what}: READY")
        g = gp.start_gpuprobe(BASE + ["-p", str(p.pid)])
        p.stdin.write("\n")
        p.stdin.flush()
        eq(p.stdout.readline().strip(), "DONE", f"{what}: DONE")
        p.stdin.close()
        p.wait(timeout=30)
        eq(g.wait(), 0, f"{what}: gpuprobe ends with its PID")
        s = only_stack(final(g.stdout()))
        pf = py_frames(s)
        eq(pf[:2], want, f"{what}: -p: leak_buffer <- make_layer")
        check_interleaved(s, f"{what} -p")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if g:
            g.kill()


def test_python_frames():
    need_stack_copy("the CPython frames")
    for py in os.environ.get("PYSTACK_PYTHONS", "/usr/bin/python3.11").split():
        if not os.path.exists(py):
            raise gp.Failure(f"{py}: no such interpreter")
        python_checks(py)


PY = "/usr/bin/python3.11"


def gate_stack(rep):
    """The stack of pyalloc.py gate's (or exit's) leak through Model.build or chain_a (its
    other one is warm_up's, 64 bytes)."""
    p = rep["processes"][0]
    ss = [s for s in p["stacks"] if s["outstanding_bytes"] != 64]
    eq(len(ss), 1, f"one stack besides warm_up's: {[s['frames'] for s in p['stacks']]}")
    return ss[0]


def want_gate(t, main_tag):
    f = "pyalloc.py"
    return [f"leak_buffer ({f}:{t['leak_buffer']})", f"make_layer ({f}:{t['make_layer']})",
            f"Model.build ({f}:{t['build']})", f"main ({f}:{t[main_tag]})", f"<module> ({f}:{t['module']})"]


def test_python_exit_at_once_keeps_its_frames():
    """A Python program that leaks and leaves at once (os._exit right after its last
    allocation, the stand-in's exit teardown off; a first allocation 0.3 s before, so that
    its native files are kept: tested in test_exit_at_once_keeps_whole_stacks), the code
    objects of its leak reached for the first time by it: its CPython frames named, on the lines
    its source's tags say, as a program that lingers (issue 29). Then the reader is stopped
    once the process's first stack is handled and let go only after the process is gone:
    the code objects it reached only after that (make_layer, Model.build) are named from the
    copies BPF made at their first sight, not from the process's memory (gone)."""
    need_stack_copy("the CPython frames")
    t = tags()
    r = gp.gpuprobe(BASE + ["-o", "-"], [PY, PYALLOC, FAKECUDA, "exit"], env={"FAKECUDA_TEARDOWN_MS": "0"})
    eq(r.returncode, 0, r.stderr[-800:])
    s = gate_stack(final(r.stdout))
    pf = [x for x in py_frames(s) if "listcomp" not in x]
    eq(pf, want_gate(t, "main_exit"), "exit at once: the Python frames on their lines")
    eq((s["partial"], s["flags"]), (False, []), "exit at once: complete, nothing flagged")
    check_interleaved(s, "exit at once")
    rep, (err, _) = gated([PY, PYALLOC, FAKECUDA, "gate"], kept=os.path.realpath(PY), extra=["-v"], whole=True,
                          settle=0.3)
    s = gate_stack(rep)
    pf = [x for x in py_frames(s) if "listcomp" not in x]
    eq(pf, want_gate(t, "main_gate"), "read after the exit: the Python frames on their lines")
    eq((s["partial"], s["flags"]), (False, []), "read after the exit: complete, nothing flagged")
    check_interleaved(s, "read after the exit")
    m = re.search(r"Python code objects: (\d+) copied at their first sight, (\d+) not kept, (\d+) malformed; "
                  r"(\d+) frames named from a copy, (\d+) not named", err)
    check(m, f"the copies' line: {err[-800:]}")
    named = sum(len(py_frames(x)) for x in rep["processes"][0]["stacks"])
    eq((int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5))), (0, 0, named, 0),
       "every Python frame named from a copy, none refused or unnamed")
    eq(rep["drops"]["python_code_lost"], 0, "no copy lost")


def test_python_copies_lost_are_counted():
    """A ring too small for every copy (64 KiB: a stack record and seven copies) and a leak
    that reaches twelve code objects first seen at once (chain_a ... chain_l): the copies it
    cannot hold are lost before the stack record is (counted: python_code_lost); the stack,
    read after the process's exit, names the frames whose copies came, on their lines, and
    flags the others (python_unnamed, "0x... (?)"), never a wrong name."""
    need_stack_copy("the CPython frames")
    t = tags()
    rep, _ = gated([PY, PYALLOC, FAKECUDA, "gate", "chain"], kept=os.path.realpath(PY),
                   extra=["--ringbuf-size", "65536"], whole=True, settle=0.3)
    s = gate_stack(rep)
    pf = py_frames(s)
    unnamed = [x for x in s["frames"] if re.fullmatch(r"0x[0-9a-f]+ \(\?\)", x)]
    check(len(unnamed) >= 1 and "python_unnamed" in s["flags"], f"frames not copied are flagged: {s['flags']} {s['frames']}")
    check(rep["drops"]["python_code_lost"] >= len(unnamed), f"lost copies counted: {rep['drops']} {len(unnamed)}")
    want = [f"leak_buffer (pyalloc.py:{t['leak_buffer']})"] + \
        [f"chain_{c} (pyalloc.py:{t['chain_' + c]})" for c in reversed("abcdefghijkl")] + \
        [f"main (pyalloc.py:{t['main_chain']})", f"<module> (pyalloc.py:{t['module']})"]
    eq(len(pf) + len(unnamed), len(want), f"every Python frame, named or not: {s['frames']}")
    check(pf == [w for w in want if w in pf], f"the frames named are right and in order: {pf}")
    check(len(pf) >= 4, f"the copies that fitted name their frames: {pf}")


def test_python_line_table_in_chunks():
    """A function whose line table spans several 4 KiB chunks (3000 statements, pybig.py),
    first reached by a leak read after the process's exit: its line, past the first chunk,
    comes from the chunks copied at its first sight (the generated source says which)."""
    need_stack_copy("the CPython frames")
    t = tags()
    rep, (err, _) = gated([PY, PYALLOC, FAKECUDA, "gate", "big"], kept=os.path.realpath(PY), extra=["-v"],
                          whole=True, settle=0.3)
    s = gate_stack(rep)
    pf = py_frames(s)
    eq(pf[:2], [f"leak_buffer (pyalloc.py:{t['leak_buffer']})", "big (pybig.py:3002)"],
       "the leak's line in the big function (def on line 1, 3000 statements, then the call)")
    eq(pf[2], f"main (pyalloc.py:{t['main_big']})", "its caller")
    eq((s["partial"], s["flags"]), (False, []), "complete, nothing flagged")
    check(re.search(r"Python code objects: \d+ copied at their first sight, 0 not kept, 0 malformed", err),
          f"nothing refused: {err[-500:]}")


def test_python_in_its_own_mount_namespace():
    """The interpreter at a path only its mount namespace has (a container's): looked
    at through /proc/PID/root."""
    need_stack_copy("the CPython frames")
    d = tempfile.mkdtemp(prefix="gp-pyns-")
    try:
        script = (f"mount -t tmpfs tmpfs {d} && cp /usr/bin/python3.11 {d}/python3.11 && "
                  f"exec {d}/python3.11 {PYALLOC} {FAKECUDA}")
        _, _, rep = run_app(["unshare", "-m", "--propagation", "private", "sh", "-c", script])
        check(not os.path.exists(os.path.join(d, "python3.11")), "the interpreter is invisible outside")
        s = only_stack(rep, "python3.11")
        t = tags()
        eq(py_frames(s)[:2], [f"leak_buffer (pyalloc.py:{t['leak_buffer']})", f"make_layer (pyalloc.py:{t['make_layer']})"],
           "Python frames of an interpreter only the namespace has")
        check_interleaved(s, "mount namespace")
    finally:
        shutil.rmtree(d, ignore_errors=True)


INTERNAL = re.compile(r"\((libffi\.so[^)]*|_ctypes[^)]*|libpython[^)]*|python[0-9.]*)\)")


def test_python_text_folds_interpreter_frames():
    """The text report folds the libffi, ctypes and interpreter frames between the driver
    call and the user's Python lines into one line (docs/design.md, "Output conventions");
    -v shows each of them, and JSON keeps them all."""
    need_stack_copy("the CPython frames")
    py = "/usr/bin/python3.11"
    _, _, rep = run_app([py, PYALLOC, FAKECUDA])
    frames = only_stack(rep)["frames"]
    first_py = next(i for i, f in enumerate(frames) if ".py:" in f)
    inner = frames[1:first_py]
    check(len(inner) >= 2 and all(INTERNAL.search(f) for f in inner), f"FFI frames under the Python ones: {frames}")
    text, _, _ = run_app([py, PYALLOC, FAKECUDA], base=["--memleak", "--libcuda", FAKECUDA])
    lines = [l.strip() for l in text.splitlines()]
    at = next(i for i, l in enumerate(lines) if l.startswith("cuMemAlloc_v2+0x0 "))
    check(re.fullmatch(r"\[%d interpreter and FFI frames \(.*\); -v shows them\]" % len(inner), lines[at + 1]),
          f"one line for the {len(inner)} frames: {lines[at:at + 4]}")
    check(lines[at + 2].startswith("leak_buffer (") and ".py:" in lines[at + 2], f"then the user's line: {lines[at + 2]}")
    text, _, _ = run_app([py, PYALLOC, FAKECUDA], base=["--memleak", "-v", "--libcuda", FAKECUDA])
    # libffi's frames by name where its symbols are (ffi_call), by file where not (the arm64 VM)
    check("interpreter and FFI frames" not in text and ("ffi_call" in text or "(libffi.so" in text),
          f"-v shows every frame:\n{text[-1500:]}")


def test_python_frames_off():
    _, _, rep = run_app(["/usr/bin/python3.11", PYALLOC, FAKECUDA], extra=["--no-python-frames"])
    s = only_stack(rep)
    eq(py_frames(s), [], "no Python frames with --no-python-frames")
    check(any(f.startswith("_PyEval_EvalFrameDefault") for f in s["frames"]), "the interpreter's frames stay")


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
