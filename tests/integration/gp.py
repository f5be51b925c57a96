# SPDX-License-Identifier: BSD-3-Clause
"""Harness for the integration tests: runs the real gpuprobe binary, with real BPF,
against the workload programs on the stand-in driver, and checks exact numbers in its
--json output. Standard library only."""
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, ".output")
GPUPROBE = os.path.join(OUT, "gpuprobe")
FAKECUDA = os.path.join(OUT, "fakecuda", "libcuda.so.1")
FAKECUDA_DIR = os.path.dirname(FAKECUDA)


# Upper bounds on measured times are multiplied by this: an emulated CPU (tests/vm, TCG)
# runs everything, probes included, several times slower than the machine it models.
TIME_SLACK = float(os.environ.get("GP_TIME_SLACK", "1"))

# Every gpuprobe a test starts keeps what it learns (--state-dir, default /var/lib/gpuprobe)
# in a folder of its own unless the test names one: one test's learned driver layouts must
# not name another test's kernels, nor the machine's state file leak into the tests.
_STATE_DIRS = []


def state_dir():
    d = tempfile.mkdtemp(prefix="gp-state-")
    _STATE_DIRS.append(d)
    return d


def _with_state(env):
    e = dict(env or {})
    if "GPUPROBE_STATE_DIR" not in e:
        e["GPUPROBE_STATE_DIR"] = state_dir()
    return e


os.environ.setdefault("GPUPROBE_STATE_DIR", state_dir())


@__import__("atexit").register
def _drop_state_dirs():
    for d in _STATE_DIRS:
        __import__("shutil").rmtree(d, ignore_errors=True)


def app(name):
    return os.path.join(OUT, "apps", name)


class Failure(Exception):
    pass


class Skip(Exception):
    """A test that cannot run on this kernel or machine; the reason is printed and the
    skip counted, never silent."""


def need_nobody_access():
    """Skips a test whose nobody processes run the checkout's own binaries (the stand-in
    probed by its inode) when a folder above them is closed to others (a clone in
    `mktemp -d`'s 0700 folder): nobody could not even start them."""
    d = OUT
    while True:
        if not os.stat(d).st_mode & 0o001:
            raise Skip(f"{d} is not searchable by others (mode {oct(os.stat(d).st_mode & 0o777)}): "
                       "nobody cannot run this checkout's binaries")
        if d == "/":
            return
        d = os.path.dirname(d)


def skip(reason):
    raise Skip(reason)


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def eq(actual, expected, what):
    if actual != expected:
        raise Failure(f"{what}: expected {expected!r}, got {actual!r}")


def json_lines(text):
    """The JSON records of text. A last line without its newline may be one gpuprobe is still
    writing (a running process's output, read while it writes a long report: on 6.1 under
    QEMU's TCG a JSONDecodeError): left out when it does not parse."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        line = line.strip()
        if not (line.startswith("{") and '"mode"' in line):
            continue
        if i == len(lines) - 1 and not text.endswith("\n"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
            continue
        out.append(json.loads(line))
    return out


def reports(text, kind=None, mode="memleak"):
    return [r for r in json_lines(text)
            if r.get("mode") == mode and (kind is None or r.get("report") == kind)]


def final(text, mode="memleak"):
    rs = reports(text, "final", mode)
    check(len(rs) == 1, f"expected one final {mode} report, got {len(rs)}:\n{text[-2000:]}")
    return rs[0]


def proc(report, pid):
    for p in report["processes"]:
        if p["pid"] == pid:
            return p
    raise Failure(f"PID {pid} not in report: {[p['pid'] for p in report['processes']]}")


def truth(stderr):
    """The workload's own account of what it did (its last JSON line on stderr). A last line
    with no newline yet is not read: the workloads write it in pieces to an unbuffered
    stderr, and a running one's can be caught half written (Background.wait_truth)."""
    for line in reversed(stderr.split("\n")[:-1]):
        line = line.strip()
        if line.startswith("{") and '"api"' in line:
            return json.loads(line)
    raise Failure(f"workload printed no ground truth:\n{stderr[-2000:]}")


# A kernel without a feature every mode needs (5.10: attach cookies, 5.15): gpuprobe
# refuses it at start in one line naming the feature and the first release with it. A test
# whose gpuprobe is so refused cannot run there: it skips with that line as the reason,
# counted, once the refusal is the one line it must be (test_errors.py asserts it for every
# mode, top and the daemon). Anything else, a verifier log among it, stays a failure.
REFUSAL = re.compile(r"^(<[0-7]>)?gpuprobe: this kernel lacks .+ \(Linux [0-9.]+\+\): ")


def refusal(returncode, stderr):
    """The refusal line when gpuprobe ended refusing this kernel, else None."""
    lines = [l for l in (stderr or "").splitlines() if l.strip()]
    if returncode not in (0, None) and lines and REFUSAL.match(lines[-1]):
        # the daemon says what it calibrated before it checks the kernel
        if all(l.startswith("<6>") for l in lines[:-1]):
            return lines[-1]
    return None


_CHECK = []


def _check_lines():
    """gpuprobe check's lines on this machine (once), GPUPROBE_NO_UPROBE_MULTI aside."""
    if not _CHECK:
        e = {k: v for k, v in os.environ.items() if k != "GPUPROBE_NO_UPROBE_MULTI"}
        r = subprocess.run([GPUPROBE, "check"], capture_output=True, text=True, timeout=60, env=e)
        _CHECK.append(r.stdout.splitlines())
    return _CHECK[0]


def kernel_refusal():
    """What gpuprobe refuses this kernel with ("this kernel lacks ..."), from gpuprobe
    check's "kernel features" line, or None where it runs."""
    line = next((l for l in _check_lines() if l.startswith("fail kernel features: this kernel lacks ")), None)
    return line.split(": ", 1)[1] if line else None


def has_uprobe_multi():
    """Whether the kernel has uprobe_multi links (6.6), as gpuprobe check says."""
    return any(l.startswith("ok uprobe_multi:") for l in _check_lines())


def _is_gpuprobe(argv):
    return any(isinstance(a, str) and (a == GPUPROBE or a.endswith("/gpuprobe")) for a in argv)


def _skip_if_refused(argv, returncode, stderr):
    line = refusal(returncode, stderr)
    if line and _is_gpuprobe(argv):
        raise Skip(f"gpuprobe refuses this kernel: {line}")


def detaching():
    """PIDs of gpuprobe-detach processes: what a gpuprobe under --max-overhead leaves, at its
    end, to remove its tracefs uprobe events (src/core/uevent.h; ~0.1 s an event); root's
    (real uid 0), as gpuprobe itself takes them."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                st = f.read()
        except OSError:
            continue
        uid = re.search(r"\nUid:\t(\d+)", st)
        if st.startswith("Name:\tgpuprobe-detach\n") and uid and uid.group(1) == "0":
            out.append(int(pid))
    return out


def wait_detached(timeout=30):
    """Until no gpuprobe-detach runs (the PIDs still running at the timeout): every gpuprobe
    a test starts begins after the last one's events are gone, as when its end waited for
    them (the kernel serializes their removal with the next one's making)."""
    deadline = time.time() + timeout * TIME_SLACK
    left = detaching()
    while left and time.time() < deadline:
        time.sleep(0.05)
        left = detaching()
    return left


def run(args, timeout=60, env=None, **kw):
    """The timeout is a safety net, not an assertion: on an emulated CPU (GP_TIME_SLACK) it
    is that many times as long (test_budget's four-phase run under a budget took over 60 s
    on arm64 under QEMU's TCG, where a counted call cost 173 us)."""
    if _is_gpuprobe(args):
        wait_detached()
    e = dict(os.environ)
    if env:
        e.update(env)
    if timeout is not None:
        timeout *= TIME_SLACK
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=e, **kw)
    _skip_if_refused(args, r.returncode, r.stderr)
    return r


def reports_on_stdout(args, cmd):
    """With a command, gpuprobe writes its reports to stderr, as strace does (README, "Where
    the output goes"); the tests read them from stdout apart from the workload's own account
    on stderr, so they ask for that with -o - (test_output.py tests the default streams)."""
    if not cmd or "-o" in args or "--output" in args or any(a.startswith("--output=") for a in args):
        return list(args)
    if any(a == "--trace" and i + 1 < len(args) and args[i + 1] == "-" for i, a in enumerate(args)):
        return list(args)
    return ["-o", "-"] + list(args)


def gpuprobe(args, cmd=None, timeout=60, env=None, streams="tests"):
    """streams="tests": reports on stdout (reports_on_stdout); "default": as a user gets them."""
    argv = [GPUPROBE] + (reports_on_stdout(args, cmd) if streams == "tests" else list(args))
    if cmd:
        argv += ["--"] + cmd
    return run(argv, timeout=timeout, env=_with_state(env))


def capture_file():
    """A temporary file for a child's stdout or stderr, read while the child runs: opened
    O_APPEND, so the child's writes go to its end whatever our reads do to the offset the
    two share (without it a seek(0) between the child's writes put its next line at the
    start, over its first one)."""
    f = tempfile.TemporaryFile(mode="w+")
    fcntl.fcntl(f.fileno(), fcntl.F_SETFL, fcntl.fcntl(f.fileno(), fcntl.F_GETFL) | os.O_APPEND)
    return f


class Background:
    """A process in the background whose stdout and stderr are collected to files."""

    def __init__(self, argv, env=None):
        if _is_gpuprobe(argv):
            wait_detached()
        e = dict(os.environ)
        if env:
            e.update(env)
        self.out = capture_file()
        self.err = capture_file()
        # a group of its own: kill() ends what it started too (a traced command outlives a
        # gpuprobe killed with SIGKILL, and a failed test must not leave it running)
        self.p = subprocess.Popen(argv, stdout=self.out, stderr=self.err, text=True, env=e,
                                  start_new_session=True)
        self.pid = self.p.pid
        self.argv = argv

    def _read(self, f):
        f.flush()
        f.seek(0)
        return f.read()

    def stdout(self):
        return self._read(self.out)

    def stderr(self):
        return self._read(self.err)

    def wait_truth(self, timeout=20):
        """The truth of a workload that lingers after printing it, once its line is whole
        (on 6.1 in QEMU a test read it half written: JSONDecodeError)."""
        deadline = time.time() + timeout
        while True:
            try:
                return truth(self.stderr())
            except Failure:
                if time.time() >= deadline or self.p.poll() is not None:
                    return truth(self.stderr())
            time.sleep(0.02)

    def wait_for(self, text, where="stdout", timeout=20):
        """A safety net, as run()'s: GP_TIME_SLACK times as long on an emulated CPU (the
        daemon's start with its calibration took over 20 s on 6.12 under QEMU's TCG, a hit
        priced 12.7 us, beside a clean clone's make test)."""
        deadline = time.time() + timeout * TIME_SLACK
        while time.time() < deadline:
            s = self.stdout() if where == "stdout" else self.stderr()
            if text in s:
                return s
            if self.p.poll() is not None:
                s = self.stdout() if where == "stdout" else self.stderr()
                if text in s:
                    return s
                _skip_if_refused(self.argv, self.p.returncode, self.stderr())
                raise Failure(f"exited ({self.p.returncode}) before printing {text!r}: "
                              f"{self.stderr()[-1500:]}")
            time.sleep(0.02)
        raise Failure(f"timed out waiting for {text!r} on {where}: {self.stderr()[-1500:]}")

    def signal(self, sig):
        self.p.send_signal(sig)

    def wait(self, timeout=30):
        # a safety net, as run()'s: GP_TIME_SLACK times as long on an emulated CPU (test_daemon's
        # stop waited 15 s for the daemon after test_series_cap_nobody on 6.1 under TCG)
        return self.p.wait(timeout=timeout * TIME_SLACK if timeout is not None else None)

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def keep_log(name, text):
    """A failing test's evidence, kept as .output/test-logs/NAME (tests/run.sh's folder,
    which the VM harness copies out with the run's log)."""
    d = os.path.join(ROOT, ".output", "test-logs")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        f.write(text)
    return os.path.join(d, name)


def start_app(argv, env=None):
    """Starts a workload with --wait and returns it once it printed READY."""
    b = Background(argv, env=env)
    b.wait_for("READY")
    return b


def start_gpuprobe(args, env=None, gpuprobe=None):
    b = Background([gpuprobe or GPUPROBE] + args, env=_with_state(env))
    b.wait_for("gpuprobe: tracing", where="stderr")
    return b


OUR_PROGS = {"mem_enter", "launch_enter", "launch_leave", "mem_alloc_enter", "mem_pitch_enter", "mem_free_enter", "mem_map_enter",
             "launch_kernel", "launch_coop", "launch_ex", "launch_graph", "sync_enter",
             "timed_leave", "name_enter", "alias_enter", "name_leave", "unload_enter",
             "unload_leave", "launch_proc_exit", "copy_enter", "copy_leave", "copy_proc_exit",
             "trace_enter", "trace_leave", "trace_proc_exit",
             "mem_unmap_enter", "mem_leave", "mem_proc_exit",
             "ioctl_tp_enter", "ioctl_tp_exit", "ioctl_kp_enter", "ioctl_kp_exit", "gp_calibrate"}


def _held_prog_ids():
    """IDs of BPF programs some live process holds, directly or through a link fd."""
    held = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        d = f"/proc/{pid}/fdinfo"
        try:
            fds = os.listdir(d)
        except OSError:
            continue
        for fd in fds:
            try:
                with open(f"{d}/{fd}") as f:
                    for line in f:
                        if line.startswith("prog_id:"):
                            held.add(int(line.split()[1]))
            except OSError:
                pass
    return held


def our_bpf_programs(orphans_only=False):
    """Names of loaded BPF programs that belong to gpuprobe (truncated to 15 chars); with
    orphans_only, only those no live process holds (another gpuprobe running beside the
    tests holds its own)."""
    r = run(["bpftool", "prog", "show", "-j"])
    progs = json.loads(r.stdout or "[]")
    short = {n[:15] for n in OUR_PROGS}
    ours = [p for p in progs if p.get("name") in short]
    if orphans_only and ours:
        held = _held_prog_ids()
        ours = [p for p in ours if p["id"] not in held]
    return [p.get("name") for p in ours]


def assert_nothing_attached():
    # links and programs are released when the last fd closes; freeing is deferred (RCU)
    deadline = time.time() + 3
    left = our_bpf_programs(orphans_only=True)
    while left and time.time() < deadline:
        time.sleep(0.1)
        left = our_bpf_programs(orphans_only=True)
    eq(left, [], "gpuprobe BPF programs left loaded with no process holding them")


def kernel_has_uprobe_multi():
    """Whether gpuprobe should find uprobe_multi links: the kernel's own version (Linux 6.6,
    not gpuprobe's probe of it), unless GPUPROBE_NO_UPROBE_MULTI hides them."""
    f = os.environ.get("GPUPROBE_NO_UPROBE_MULTI", "")
    if f and f != "0":
        return False
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return (int(m.group(1)), int(m.group(2))) >= (6, 6)


def kernel_has_find_vma():
    """Whether the kernel has the bpf_find_vma helper (Linux 5.17): its own version, as
    kernel_has_uprobe_multi."""
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return (int(m.group(1)), int(m.group(2))) >= (5, 17)


def tracefs_uprobe_events():
    """Whether gpuprobe (root here) can make tracefs uprobe events: an uprobe_events file it
    may write, unless GPUPROBE_NO_UPROBE_EVENTS says not to."""
    f = os.environ.get("GPUPROBE_NO_UPROBE_EVENTS", "")
    if f and f != "0":
        return False
    return any(os.access(os.path.join(r, "uprobe_events"), os.W_OK)
               for r in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"))


def budget_mechanism():
    """How --max-overhead takes its probes off on this kernel: tracefs uprobe events armed and
    disarmed (src/core/uevent.h) wherever they can be made, else uprobe_multi links made and
    closed (Linux 6.6)."""
    if tracefs_uprobe_events():
        return "uprobe_events"
    return "uprobe_multi" if kernel_has_uprobe_multi() else "none"


def uprobe_events():
    """gpuprobe's tracefs uprobe events now: (gpuprobe's PID, group/event) pairs (their groups
    are gpuprobe_<pid>_<random>)."""
    out = []
    for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        try:
            with open(os.path.join(root, "uprobe_events")) as f:
                for line in f:
                    m = re.match(r"[pr]:(gpuprobe_(\d+)_[0-9a-f]+/\S+) ", line)
                    if m:
                        out.append((int(m.group(2)), m.group(1)))
            return out
        except OSError:
            continue
    return out


def one_error_line(r, contains):
    check(r.returncode != 0, f"expected a non-zero exit, got 0; stderr: {r.stderr!r}")
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    eq(len(lines), 1, f"stderr lines ({r.stderr!r})")
    check(lines[0].startswith("gpuprobe: "), f"error line should start with 'gpuprobe: ': {lines[0]!r}")
    check(contains in lines[0], f"{contains!r} not in {lines[0]!r}")


def main(tests):
    passed = failed = skipped = 0
    only = sys.argv[1:]
    for t in tests:
        name = t.__name__
        if only and not any(o in name for o in only):
            continue
        t0 = time.time()
        try:
            t()
            passed += 1
            print(f"ok - {name} ({time.time() - t0:.1f}s)", flush=True)
        except Skip as e:
            skipped += 1
            print(f"ok - {name} # SKIP {e}", flush=True)
        except Exception as e:  # every failure is reported, the run goes on
            detail = str(e) if isinstance(e, Failure) else traceback.format_exc()
            # a test that ran gpuprobe its own way (a pipe, a terminal, a benchmark's
            # helper) and met this kernel's refusal (the line test_errors.py asserts for
            # every front end): a skip with that reason, not a failure
            why = kernel_refusal() if "this kernel lacks " in detail else None
            if why and why in detail:
                skipped += 1
                print(f"ok - {name} # SKIP gpuprobe refuses this kernel: gpuprobe: {why}", flush=True)
                continue
            failed += 1
            print(f"not ok - {name}: {detail}", flush=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)
