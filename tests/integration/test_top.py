# SPDX-License-Identifier: BSD-3-Clause
"""gpuprobe top in a real terminal: tmux (a private server) runs it at 80x24 against
stand-in workloads; the screen is captured (capture-pane) and checked for the figures
the workloads make by construction (outstanding bytes held, launches per kernel, bytes
copied per GPU and direction, a paced launch rate), keys are sent (send-keys: sort,
select, quit), the window is resized; --batch frames, and the refusals."""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time

import gp
from gp import FAKECUDA, GPUPROBE, app, check, eq

TMP = tempfile.mkdtemp(prefix="gp-top-")
SOCK = f"gp-top-test-{os.getpid()}"


def tmux(*args, check_rc=True):
    r = subprocess.run(["tmux", "-L", SOCK] + list(args), capture_output=True, text=True, timeout=20)
    if r.returncode and "need UTF-8 locale" in r.stderr:
        # tmux (3.3) starts only where en_US.UTF-8 or C.UTF-8 exists (-u does not help); the
        # arm64 VM's userland has C.UTF-8 from libc-bin (tests/vm/rootfs.sh)
        gp.skip(f"tmux cannot start in this userland: {r.stderr.strip()}")
    if check_rc and r.returncode:
        raise gp.Failure(f"tmux {args[0]}: {r.stderr.strip()}")
    return r.stdout


class Screen:
    """gpuprobe top in a detached tmux session of its own; its exit status lands in a file."""

    def __init__(self, args, cmd, width=80, height=24):
        self.status = os.path.join(TMP, f"status-{time.monotonic_ns()}")
        line = " ".join(shlex.quote(a) for a in [GPUPROBE, "top", "--libcuda", FAKECUDA] + args + ["--"] + cmd)
        self.name = f"top{time.monotonic_ns()}"
        tmux("new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height),
             f"{line} 2>{self.status}.err; echo $? > {self.status}")

    def text(self):
        return tmux("capture-pane", "-p", "-t", self.name, check_rc=False)

    def wait_for(self, pattern, timeout=20):
        # GP_TIME_SLACK: on an emulated CPU top's attach alone can outlast 30 s (arm64 under
        # QEMU's TCG on 6.1, a perf-event uprobe at a time: the screen still empty at 30 s)
        deadline = time.time() + timeout * gp.TIME_SLACK
        while time.time() < deadline:
            s = self.text()
            if re.search(pattern, s, re.M):
                return s
            time.sleep(0.2)
        raise gp.Failure(f"no {pattern!r} on the screen:\n{self.text()}\nstderr: {self.stderr()}")

    def keys(self, *keys):
        tmux("send-keys", "-t", self.name, *keys)

    def stderr(self):
        try:
            return open(self.status + ".err").read()
        except OSError:
            return ""

    def exit_status(self, timeout=20):
        deadline = time.time() + timeout * gp.TIME_SLACK
        while time.time() < deadline:
            if os.path.exists(self.status) and open(self.status).read().strip():
                return int(open(self.status).read())
            time.sleep(0.1)
        raise gp.Failure(f"gpuprobe top did not end:\n{self.text()}")

    def close(self):
        tmux("kill-session", "-t", self.name, check_rc=False)


def row(screen, comm):
    """The table row of the process named comm: its cells, split on spaces (PID, S, COMM,
    LAUNCH/s, MEMORY...)."""
    for line in screen.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0].isdigit() and len(f[1]) == 1 and f[2] == comm:
            return f
    raise gp.Failure(f"no row for {comm}:\n{screen}")


def no_row(screen, comm):
    return not any(len(f) >= 4 and f[0].isdigit() and f[2] == comm for f in map(str.split, screen.splitlines()))


def mib(n):
    """num__bytes for a whole number of MiB below 1000 MiB: what the screen prints."""
    v = n / 1048576
    return f"{v:.2f} MiB" if v < 9.995 else f"{v:.1f} MiB" if v < 99.95 else f"{v:.0f} MiB"


def to_bytes(cells):
    """["4.00", "MiB"] -> 4194304; a "-" cell (no memory tracked) -> -1."""
    if cells[0] == "-":
        return -1
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
    return float(cells[0]) * units[cells[1]]


def descendants_named(root, comm):
    """Processes named comm under root (ours only: other runs share the machine)."""
    procs = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            st = open(f"/proc/{d}/stat").read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        procs[int(d)] = (st[st.index("(") + 1:st.rindex(")")], int(rest[1]))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for pid, (name, ppid) in procs.items():
            if ppid == p:
                todo.append(pid)
                if name == comm:
                    out.append(pid)
    return out


def truth_of(log, api):
    for line in reversed(open(log).read().splitlines()):
        if line.startswith("{") and f'"api":"{api}"' in line:
            return json.loads(line)
    raise gp.Failure(f"no {api} truth in {log}")


def test_figures_keys_and_the_end():
    log = os.path.join(TMP, "cmd.log")
    script = (f"{app('memleak_app')} --hold --allocs 6 --leaks 4 --size 1048576 & "
              f"{app('copy_app')}; {app('launch_app')} --n 40; {app('rate_app')} --phases 1000:4000; wait")
    s = Screen(["--command-log", log, "--keep", "600"], ["sh", "-c", script])
    try:
        screen = s.wait_for(r"^\s*\d+ [A-Z?] rate_app\s+[1-9]", timeout=30)
        lines = screen.splitlines()
        eq(len(lines), 24, "24 lines")
        check(all(len(l) <= 80 for l in lines), "80 columns")
        # the title whole: what is traced ends it, not cut at the screen's edge
        check(re.fullmatch(r"gpuprobe top  \d\d:\d\d:\d\d  \d+ processes  PID \d+ and its descendants", lines[0]),
              lines[0])
        check("q quit" in lines[-1], lines[-1])
        # a paced rate: 1000 launches/s, or what the emulated CPU let rate_app make (its own
        # account, below): the frames' rates while it runs, the whole second's among them
        rates, deadline = [], time.time() + 30 * gp.TIME_SLACK
        while time.time() < deadline:
            r = row(screen, "rate_app")
            check(re.fullmatch(r"\d+|\d+(\.\d+)?k", r[3]), f"rate_app's launches/s {r[3]}")
            if r[1] == "X":
                break
            rates.append(float(r[3][:-1]) * 1000 if r[3].endswith("k") else float(r[3]))
            screen = s.wait_for(r"^\s*\d+ [A-Z?] rate_app\s+\d")
            time.sleep(0.3)
        # the held leaks (checked against the workload's account once it has ended)
        held_mem = " ".join(row(screen, "memleak_app")[4:6])
        # sort by memory: the next column after LAUNCH/s
        s.keys(">")
        screen = s.wait_for(r"sort: MEMORY")
        # biggest first: exited processes keep what they held at their exit (copy_app's
        # pinned and device buffers), so the order is the figures', whoever holds them
        mem = [to_bytes(l.split()[4:6]) for l in screen.splitlines() if re.match(r"^\s*\d+ \S \S+\s+\S+\s+\d", l)]
        check(mem and mem == sorted(mem, reverse=True), f"the biggest memory first: {mem}\n{screen}")
        # memleak_app's detail: the selection is the first row of the first frame, whichever
        # process that was (under QEMU's TCG, where the attach is slow, copy_app), so it is
        # selected here: to the top, then down to its row
        names = [l.split()[2] for l in screen.splitlines() if re.match(r"^\s*\d+ [A-Z?] \S", l)]
        s.keys(*(["Up"] * len(names) + ["Down"] * names.index("memleak_app")))
        screen = s.wait_for(rf"^PID \d+ memleak_app: 0 launches, {re.escape(held_mem)} outstanding")
        # end the held workload: every process ends, the final figures stay
        held = descendants_named(int(tmux("display", "-p", "-t", s.name, "#{pane_pid}")), "memleak_app")
        eq(len(held), 1, "our memleak_app")
        os.kill(held[0], 10)  # SIGUSR1
        screen = s.wait_for(r"ENDED", timeout=30)
        check("ended: final figures" in screen.splitlines()[-1], screen)
        eq(held_mem, mib(truth_of(log, "alloc")["leaked_bytes"]), "memleak_app's outstanding bytes, held")
        # a frame that caught a whole second of it (frames over part of its run show less):
        # 90-110 % of the paced 1000/s or of the rate rate_app made, its own account (an
        # emulated CPU paces unevenly: on arm64 under QEMU's TCG frames of 1000, 542 and 713
        # for an average of 838, or of 1100 and 1020 for 995)
        made = truth_of(log, "rate")["phases"][0]["achieved_rate"]
        check(any(0.9 * t <= r <= 1.1 * t for r in rates for t in (1000, made)),
              f"rate_app's launches/s {rates}, its own {made:.0f}")
        # its final figures stay once it has exited: what it held at its exit
        eq(" ".join(row(screen, "memleak_app")[4:6]), held_mem, "memleak_app's memory, kept after its exit")
        eq(row(screen, "memleak_app")[1], "X", "marked exited")
        # sort by name (copy_app, launch_app, memleak_app, rate_app), select launch_app
        s.keys("<", "<")
        screen = s.wait_for(r"sort: COMM")
        s.keys("Up", "Up", "Up", "Down")
        lt = truth_of(log, "launch")
        # kernel launches as --cudatrace counts them (failed ones too), graph launches apart
        total = sum(k["launches"] for k in lt["kernels"].values()) + lt["null_launches"]
        # the whole detail, not a screen caught while curses redraws it line by line
        rows = "".join(rf"\n  {re.escape(kern)}\s+0\s+{k['launches']}"
                       for kern, k in sorted(lt["kernels"].items(), key=lambda kv: -kv[1]["launches"])[:4])
        screen = s.wait_for(rf"^PID \d+ launch_app \(exited\): {total} launches, {lt['graph_launches']} graph launches,"
                            rf"[^\n]*(\n    [^\n]*)?\n  KERNEL.*{rows}$")
        s.keys("Up")
        screen = s.wait_for(r"^PID \d+ copy_app \(exited\).*\n  COPIES .*bytes copied\n  gpu0 .*\n  gpu1 .*\n  host ")
        t = truth_of(log, "copy")
        cells = {l.split()[0]: l.split()[1:] for l in screen.splitlines() if re.match(r"^  (gpu\d|host) ", l)}
        check("bytes copied" in screen, screen)
        # the stand-in's copies: small ones count too (the workload's own line leaves them out)
        h2d0 = t["transfers"]["0/H2D"]["bytes"] + t["small_bytes"]
        eq(" ".join(cells["gpu0"][0:2]), mib(h2d0), "H2D gpu0 bytes")
        eq(" ".join(cells["gpu1"][0:2]), mib(t["transfers"]["1/H2D"]["bytes"]), "H2D gpu1 bytes")
        eq(" ".join(cells["host"][-2:]), mib(t["transfers"]["-/H2H"]["bytes"]), "H2H bytes")
        s.keys("q")
        eq(s.exit_status(), 0, f"exit status ({s.stderr()})")
        gp.assert_nothing_attached()
    finally:
        s.close()


def test_wide_window_and_resize():
    s = Screen([], [app("rate_app"), "--phases", "500:6000"], width=100, height=30)
    try:
        # (its kernel's name comes by a record, which may be read a frame after its launches)
        screen = s.wait_for(r"rate_app\s+\d.*rate_kernel\(\)")
        check("TOP KERNEL" in screen and "rate_kernel()" in row(screen, "rate_app")[-1], screen)
        eq(len(screen.splitlines()), 30, "30 lines")
        check(all(len(l) <= 100 for l in screen.splitlines()), "100 columns")
        tmux("resize-window", "-t", s.name, "-x", "80", "-y", "24")
        screen = s.wait_for(r"^(?!.*TOP KERNEL).*LAUNCH/s", timeout=10)
        check(all(len(l) <= 80 for l in screen.splitlines()), "redrawn for 80 columns")
        # narrower: columns drop (PROBE%, then GROWTH/s) rather than COMM being cut short
        tmux("resize-window", "-t", s.name, "-x", "64", "-y", "20")
        screen = s.wait_for(r"^\s+PID S COMM\s+LAUNCH/s\s+MEMORY\s+H2D/s\s+D2H/s$", timeout=10)
        check(all(len(l) <= 64 for l in screen.splitlines()), "redrawn for 64 columns")
        eq(row(screen, "rate_app")[2], "rate_app", "the whole name")
        s.keys("q")
        eq(s.exit_status(), 0, "quit before the command ended")
    finally:
        s.close()


def batch(args, cmd, log=None):
    """gpuprobe top --batch: its frames (each starts with its title line; an empty line
    ends it), and the workloads' own accounts from the command's log."""
    log = log or os.path.join(TMP, f"batch-{time.monotonic_ns()}.log")
    r = gp.run([GPUPROBE, "top", "--batch", "--libcuda", FAKECUDA, "--command-log", log] + args + ["--"] + cmd,
               timeout=120)
    eq(r.returncode, 0, f"exit ({r.stderr[-300:]})")
    frames = [f for f in r.stdout.split("\n\n") if f.strip()]
    check(frames and "ENDED" in frames[-1].splitlines()[0], f"the last frame is the end:\n{r.stdout[-800:]}")
    return r, frames, log


def detail_head(frame, comm):
    """The detail's first line of the process named comm, its wrapped parts joined."""
    m = re.search(rf"^(PID \d+ {comm}\b.*(?:\n    .*)*)", frame, re.M)
    check(m, f"no detail of {comm}:\n{frame}")
    return re.sub(r",\n    ", ", ", m.group(1))


def test_batch_frames():
    r, frames, _ = batch(["-i", "0.3"], [app("memleak_app"), "--allocs", "5", "--leaks", "2", "--size", "1048576"])
    # its final figures: the 2 MiB it held when it exited, in its detail and its row
    check(re.search(r"^PID \d+ memleak_app \(exited\): 0 launches, 2\.00 MiB held at exit,", frames[-1], re.M),
          frames[-1])
    eq(row(frames[-1], "memleak_app")[1:6], ["X", "memleak_app", "0", "2.00", "MiB"], "its row: exited, 2 MiB")
    # data only, like top -b: no key hints anywhere, every line within the default 80
    for hint in ("q quit", "sort:", "select", "reverse", "final figures"):
        check(hint not in r.stdout, f"--batch prints data only: {hint!r} in\n{r.stdout[-600:]}")
    check(all(len(l) <= 80 for l in r.stdout.splitlines()), "80 columns")
    # stable columns: each frame's header, and every row's cells right-aligned under it
    for f in frames:
        lines = f.splitlines()
        check(lines[0].startswith("gpuprobe top  ") and lines[1].startswith("probes: "), f)
        head = lines[2]
        eq(head.split(), ["PID", "S", "COMM", "LAUNCH/s", "MEMORY", "GROWTH/s", "H2D/s", "D2H/s", "PROBE%"],
           "the header")
        ends = [head.index(c) + len(c) for c in ("PID", "LAUNCH/s", "MEMORY", "GROWTH/s", "H2D/s", "D2H/s", "PROBE%")]
        for l in lines[3:]:
            if not re.match(r"^\s*\d+ [A-Z?] ", l):
                break
            check(all(l[e - 1] != " " and (e == len(l) or l[e] == " ") for e in ends),
                  f"a row's cells end where the header's do:\n{head}\n{l}")
    r = gp.run([GPUPROBE, "top", "--batch", "-n", "2", "-i", "0.2", "--width", "100", "--libcuda", FAKECUDA])
    eq(r.returncode, 0, "node-wide, two frames")
    eq(len([f for f in r.stdout.split("\n\n") if f.strip()]), 2, "two frames")
    check(all(len(l) <= 100 for l in r.stdout.splitlines()), "100 columns")


def test_counts_agree_with_cudatrace():
    """Launches as --cudatrace counts them, graph launches apart, kernels' runs (launched +
    inside graphs): against graph_app's and launch_app's own accounts, and --cudatrace's
    report of the same workload."""
    cmd = ["sh", "-c", f"{app('graph_app')} --k 5 --launches 200; {app('launch_app')} --n 40"]
    _, frames, log = batch(["-i", "0.5"], cmd)
    last = frames[-1]
    gt, lt = truth_of(log, "graph"), truth_of(log, "launch")
    ct = gp.gpuprobe(["--cudatrace", "--json", "--libcuda", FAKECUDA], cmd=[app("graph_app"), "--k", "5",
                                                                           "--launches", "200"])
    eq(ct.returncode, 0, f"--cudatrace ({ct.stderr[-300:]})")
    rep = gp.proc(gp.final(ct.stdout, "cudatrace"), gp.truth(ct.stderr)["pid"])
    launched = sum(k["launched"] for k in gt["kernels"].values())
    eq((rep["launches"], rep["graph_launches"]), (launched, gt["graph_launches"]), "--cudatrace against graph_app")
    eq(detail_head(last, "graph_app").split(": ")[1].split(", ")[:2],
       [f"{launched} launches", f"{gt['graph_launches']} graph launches"], "graph_app's launches in top")
    # each kernel's runs: launched + run inside graph launches, the report's LAUNCHES + GRAPH
    want = {n: k["launched"] + k["graph_executed"] for n, k in gt["kernels"].items()
            if k["launched"] + k["graph_executed"]}
    eq(kernel_runs(last, "graph_app"), want, f"graph_app's kernels' runs in top's last frame:\n{last}\n")
    eq({k["name"]: k["launches"] + k["graph_executed"] for k in rep["kernels"] if k["launches"] + k["graph_executed"]},
       want, "--cudatrace's runs")
    total = sum(k["launches"] for k in lt["kernels"].values()) + lt["null_launches"]
    eq(detail_head(last, "launch_app").split(": ")[1].split(", ")[:2],
       [f"{total} launches", f"{lt['graph_launches']} graph launches"], "launch_app's launches in top")


def kernel_runs(frame, comm):
    """{kernel: RUNS} of the detail of the process named comm (kernels with runs only)."""
    lines = frame.splitlines()
    at = next(i for i, l in enumerate(lines) if re.match(rf"PID \d+ {comm}\b", l))
    out = {}
    for l in lines[at + 1:]:
        if l.startswith("PID ") or l.startswith("  COPIES"):
            break
        m = re.match(r"^  (.+?)\s+(\S+)\s+(\d+)$", l)
        if m and m.group(1) != "KERNEL" and int(m.group(3)):
            out[m.group(1)] = int(m.group(3))
    return out


def test_keep_final_figures():
    """An exited process keeps its row and final figures for --keep seconds, then goes; the
    command's own process stays to the end."""
    cmd = ["sh", "-c", f"{app('memleak_app')} --allocs 5 --leaks 2 --size 1048576; sleep 4"]
    _, frames, _ = batch(["-i", "0.25", "--keep", "1"], cmd)
    kept = [f for f in frames if not no_row(f, "memleak_app") and row(f, "memleak_app")[1] == "X"]
    check(kept, "memleak_app listed once exited")
    eq(" ".join(row(kept[0], "memleak_app")[4:6]), "2.00 MiB", "what it held at its exit")
    check(no_row(frames[-1], "memleak_app"), f"gone after --keep 1:\n{frames[-1]}")
    _, frames, _ = batch(["-i", "0.25", "--keep", "600"], cmd)
    eq(" ".join(row(frames[-1], "memleak_app")[4:6]), "2.00 MiB", "still there with --keep 600")
    eq(row(frames[-1], "memleak_app")[1], "X", "exited")


def test_hostile_names():
    """A process names itself (its comm): control bytes in it never reach the terminal, and
    its row keeps the columns in place."""
    link = os.path.join(TMP, "a\x1b[2Jb\tc")
    os.symlink(app("memleak_app"), link)
    r, frames, _ = batch(["-i", "0.3"], [link, "--allocs", "2", "--leaks", "1", "--size", "1048576"])
    check("\x1b" not in r.stdout and "\t" not in r.stdout, f"no control byte on stdout: {r.stdout[-400:]!r}")
    eq(row(frames[-1], "a?[2Jb?c")[1:6], ["X", "a?[2Jb?c", "0", "1.00", "MiB"], "its row, in place")


def test_refusals():
    r = gp.run([GPUPROBE, "top", "--libcuda", FAKECUDA])  # stdout is a pipe here
    gp.one_error_line(r, "top: stdin and stdout must be a terminal (or use --batch)")
    gp.assert_nothing_attached()
    r = gp.run([GPUPROBE, "top", "--json"])
    eq(r.returncode, 2, "--json is a usage error")
    gp.one_error_line(r, "--json: top draws a view")
    r = gp.run([GPUPROBE, "top", "--command-log", "/tmp/x"])
    gp.one_error_line(r, "--command-log needs a command")
    r = gp.run([GPUPROBE, "top", "--help"])
    check(r.returncode == 0 and "KEYS:" in r.stdout and "--batch" in r.stdout, r.stdout[-500:])


def test_nccl_hang_named():
    """A 2-rank NCCL job (stand-in) whose rank 1 does not enter collective 1 for 3 s while
    rank 0's collective 1 stays on its stream: frames name rank 1's process as the one
    waited for and rank 0's as in flight with no completion, the seconds growing frame to
    frame; the lines go once it is released."""
    fakenccl = os.path.join(gp.OUT, "fakenccl", "libnccl.so.2")
    log = os.path.join(TMP, f"nccl-{time.monotonic_ns()}.log")
    r = gp.run([GPUPROBE, "top", "--batch", "-i", "0.5", "--nccl", "--libcuda", FAKECUDA, "--libnccl", fakenccl,
                "--command-log", log, "--", app("nccl_launcher.sh"), "2", "--n", "3", "--stall", "1:1:3000",
                "--linger", "1500"],
               env={"NCCL_LAUNCH_APP": "hang_app", "FAKENCCL_HOLD_RANK": "0", "FAKENCCL_HOLD_AT": "1",
                    "FAKENCCL_HOLD_MS": "3000"}, timeout=120)
    eq(r.returncode, 0, f"exit ({r.stderr[-300:]})")
    job = truth_of(log, "nccl_job")
    pid = {rk["ranks"][0]["rank"]: rk["pid"] for rk in job["ranks"]}
    frames = [f for f in r.stdout.split("\n\n") if f.strip()]
    waits, stalls = [], []
    for f in frames:
        m = re.search(r"^NCCL: waited ([\d.]+) s for PID (\d+) hang_app to enter", f, re.M)
        if m:
            eq(int(m.group(2)), pid[1], "the rank waited for is rank 1's process")
            waits.append(float(m.group(1)))
        m = re.search(r"^NCCL: (\d+) in flight, none done for ([\d.]+) s: PID (\d+)", f, re.M)
        if m:
            eq(int(m.group(3)), pid[0], "the rank in flight is rank 0's process")
            stalls.append(float(m.group(2)))
    check(len(waits) >= 2 and waits[-1] - waits[0] >= 0.9, f"the wait grows frame to frame: {waits}")
    check(len(stalls) >= 2 and stalls[-1] - stalls[0] >= 0.9, f"so does the stall: {stalls}")
    check(max(waits) < 3.6, f"no wait past the 3 s stall (+ a frame): {waits}")
    check("NCCL:" not in frames[-1], "released: no NCCL line at the end")


if __name__ == "__main__":
    try:
        gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
    finally:
        subprocess.run(["tmux", "-L", SOCK, "kill-server"], capture_output=True)
        shutil.rmtree(TMP, ignore_errors=True)
