# SPDX-License-Identifier: BSD-3-Clause
"""Which stream carries what (real BPF, the stand-in driver), as strace, ltrace and perf
trace users expect: with a command, the reports go to stderr and the command keeps its
stdout (`gpuprobe ... -- cmd > file` leaves file to the command); without one (-p), the
reports go to stdout, which a JSON parser reads alone; --trace - writes the trace alone to
stdout; -o FILE takes the reports; -o - puts them on stdout beside the command's output;
on a terminal the command keeps it; output files are never followed through a symlink,
are created 0600, and a write error is one line and a failing exit."""
import json
import os
import pty
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import threading

import gp
from gp import FAKECUDA, GPUPROBE, app, check, eq

TMP = tempfile.mkdtemp(prefix="gp-output-")
sys.path.insert(0, os.path.join(gp.ROOT, "tests", "tools"))
import check_chrome_trace  # noqa: E402

# A command that prints on stdout (a line that looks like a report among them) and on
# stderr around a workload with known leaks.
LEAKY = app("memleak_app")
SAYS = ["hello from the command", '{"mode":"memleak","report":"final","fake":true}', "bye"]


def chatty(extra=""):
    return ["sh", "-c", f"echo '{SAYS[0]}'; echo '{SAYS[1]}'; echo oops >&2; {LEAKY} --allocs 4 --leaks 2{extra}; "
            f"echo '{SAYS[2]}'"]


def path(name):
    return os.path.join(TMP, name)


def parse_lines(text, what):
    out = []
    for i, line in enumerate(text.splitlines()):
        try:
            out.append(json.loads(line))
        except ValueError:
            raise gp.Failure(f"{what}: line {i + 1} is not JSON: {line[:200]!r}")
    return out


def test_command_keeps_its_stdout():
    """gpuprobe --memleak --json -- cmd > file: file holds the command's stdout exactly; the
    reports are on stderr, each a whole JSON line among the command's own stderr lines."""
    r = gp.gpuprobe(["--memleak", "--json", "--libcuda", FAKECUDA], cmd=chatty(), streams="default")
    eq(r.returncode, 0, f"exit ({r.stderr[-500:]})")
    eq(r.stdout, "\n".join(SAYS) + "\n", "stdout: the command's own output, exactly")
    recs = [json.loads(l) for l in r.stderr.splitlines() if l.startswith('{"mode"')]
    eq(sorted({x["mode"] for x in recs}), ["memleak", "overhead"], "the reports, on stderr")
    t = gp.truth(r.stderr)
    p = gp.proc(gp.final(r.stderr), t["pid"])
    eq((p["outstanding_allocs"], p["outstanding_bytes"]), (t["leaks"], t["leaked_bytes"]), "the leaks")
    check("oops" in r.stderr, "the command's stderr stays its stderr")
    # text: the report on stderr too, after the command's lines
    r = gp.gpuprobe(["--memleak", "--libcuda", FAKECUDA], cmd=chatty(), streams="default")
    eq(r.returncode, 0, "exit (text)")
    eq(r.stdout, "\n".join(SAYS) + "\n", "stdout: the command's own output (text)")
    check(r.stderr.index("oops") < r.stderr.index("memleak final report"), r.stderr[-800:])


def test_without_a_command_stdout_holds_reports_only():
    """-p: no program output to share; stdout piped to a JSON parser reads reports only,
    line by line (as bcc's tools print theirs)."""
    a = gp.start_app([LEAKY, "--wait", "--allocs", "4", "--leaks", "2"], env={"LD_LIBRARY_PATH": gp.FAKECUDA_DIR})
    try:
        g = gp.start_gpuprobe(["--memleak", "--json", "-p", str(a.pid)])
        a.signal(__import__("signal").SIGUSR1)
        eq(a.wait(), 0, "workload")
        eq(g.wait(timeout=30), 0, f"gpuprobe ({g.stderr()[-400:]})")
    finally:
        a.kill()
    recs = parse_lines(g.stdout(), "stdout")
    check({"memleak", "overhead"} <= {x["mode"] for x in recs}, f"reports on stdout: {recs[:2]}")
    t = gp.truth(a.stderr())
    eq(gp.proc(gp.final(g.stdout()), a.pid)["outstanding_allocs"], t["leaks"], "the leaks")


def test_trace_dash_chrome_alone_on_stdout():
    r = gp.gpuprobe(["--trace", "-", "--trace-format", "chrome", "--memleak", "-v", "--libcuda", FAKECUDA], cmd=chatty())
    eq(r.returncode, 0, f"exit ({r.stderr[-500:]})")
    found, seen = check_chrome_trace.validate(json.loads(r.stdout))  # one document, nothing after it
    eq(found, [], "stdout is a valid Chrome trace")
    check(seen["by_ph"].get("X", 0) > 10, f"calls in it: {seen}")
    for s in ("trace summary:", "memleak final report", "gpuprobe overhead", SAYS[0], SAYS[2]):
        check(s in r.stderr, f"{s!r} on stderr")


def test_trace_dash_jsonl_and_json_reports():
    r = gp.gpuprobe(["--trace", "-", "--json", "--memleak", "--libcuda", FAKECUDA], cmd=chatty())
    eq(r.returncode, 0, f"exit ({r.stderr[-500:]})")
    recs = parse_lines(r.stdout, "stdout")
    types = {x["type"] for x in recs}
    check({"process", "call", "summary"} <= types and "mode" not in recs[0], f"trace records only: {types}")
    eq(recs[-1]["type"], "summary", "the summary ends the trace")
    reports = [json.loads(l) for l in r.stderr.splitlines() if l.startswith('{"mode"')]
    eq([x["mode"] for x in reports if x.get("report") == "final" and not x.get("fake")], ["memleak", "trace"],
       "the JSON reports, on stderr")


def test_output_file_leaves_the_command_its_stdout():
    out = path("reports.jsonl")
    r = gp.gpuprobe(["--memleak", "--json", "-o", out, "--libcuda", FAKECUDA], cmd=chatty())
    eq(r.returncode, 0, f"exit ({r.stderr[-500:]})")
    eq(r.stdout, "\n".join(SAYS) + "\n", "stdout: the command's own output, exactly")
    eq(stat.S_IMODE(os.stat(out).st_mode), 0o600, "created 0600")
    recs = parse_lines(open(out).read(), out)
    eq([x["mode"] for x in recs if x.get("report") != "exit"], ["memleak", "overhead"], "reports in the file")
    text = path("reports.txt")
    r = gp.gpuprobe(["--memleak", "-v", "--output", text, "--libcuda", FAKECUDA], cmd=chatty())
    eq(r.returncode, 0, "exit (text)")
    body = open(text).read()
    check("memleak final report" in body and "gpuprobe overhead (estimate)" in body, body[-600:])
    check(SAYS[0] not in body, "nothing of the command in the file")


def test_output_dash_shares_stdout_as_asked():
    r = gp.gpuprobe(["--memleak", "--json", "-o", "-", "--libcuda", FAKECUDA], cmd=chatty())
    eq(r.returncode, 0, "exit")
    check(SAYS[0] in r.stdout and '"mode":"overhead"' in r.stdout, "both on stdout")


def test_terminal_keeps_the_command_output():
    """On a terminal, the command prints there; the report goes to stderr (as strace's)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([GPUPROBE, "--memleak", "--libcuda", FAKECUDA, "--"] + chatty(), stdout=slave,
                         stderr=subprocess.PIPE, text=True)
    os.close(slave)
    buf = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's last writer closed it
                break
            if not chunk:
                break
            buf += chunk
        err = p.communicate(timeout=30)[1]
    finally:
        os.close(master)
        if p.poll() is None:
            p.kill()
    text = buf.decode(errors="replace")
    eq(p.returncode, 0, f"exit ({err[-500:]!r})")
    check(SAYS[0] in text and "memleak final report" not in text, f"the command's output on the terminal: {text[-500:]}")
    check(SAYS[0] not in err and "memleak final report" in err, f"the report on stderr: {err[-500:]}")


def test_output_file_refused_through_a_symlink():
    target = path("victim")
    with open(target, "w") as f:
        f.write("keep me\n")
    link = path("link.jsonl")
    os.symlink(target, link)
    r = gp.gpuprobe(["--memleak", "--json", "-o", link, "--libcuda", FAKECUDA], cmd=["sh", "-c", "echo ran"])
    gp.one_error_line(r, f"-o {link}: Too many levels of symbolic links")
    eq(r.stdout, "", "the command never ran")
    eq(open(target).read(), "keep me\n", "the link's target untouched")
    gp.assert_nothing_attached()


def test_output_to_a_fifo():
    fifo = path("reports.fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()), daemon=True)
    reader.start()
    try:
        r = gp.gpuprobe(["--memleak", "--json", "-o", fifo, "--libcuda", FAKECUDA], cmd=chatty())
    finally:
        # a gpuprobe that never opened the FIFO (a kernel it refuses: the test skips) left the
        # reader in open(): a writer that comes and goes lets it go (on 5.10 the suite hung)
        if reader.is_alive():
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        reader.join(30)
    eq(r.returncode, 0, "exit")
    check(got and '"mode":"memleak"' in got[0], "reports through the FIFO")


def test_write_error_fails():
    r = gp.gpuprobe(["--memleak", "-o", "/dev/full", "--libcuda", FAKECUDA], cmd=[LEAKY])
    eq(r.returncode, 1, "exit status when reports were lost")
    lines = [l for l in r.stderr.splitlines() if l.startswith("gpuprobe: ") and "tracing" not in l]
    eq(lines, ["gpuprobe: writing the reports to /dev/full: No space left on device"], "one line")


def test_overhead_line_only_with_modes_that_count_hits():
    """docs/json.md: the overhead line follows --memleak, --cudatrace and --bandwidth-util
    (the modes that count probe hits), never --trace or --ioctl alone."""
    runs = {"--memleak": True, "--cudatrace": True, "--bandwidth-util": True, "--trace": False, "--ioctl": False}
    for mode, want in runs.items():
        extra = [mode, path("t.jsonl")] if mode == "--trace" else [mode]
        r = gp.gpuprobe(extra + ["--json", "--libcuda", FAKECUDA], cmd=[app("copy_app")])
        eq(r.returncode, 0, f"{mode}: exit ({r.stderr[-300:]})")
        got = any(json.loads(l)["mode"] == "overhead" for l in r.stdout.splitlines())
        eq(got, want, f"{mode}: an overhead line")


def test_exceptions_only_unless_verbose():
    """Text reports show the drop line and the overhead footer when they say something (a
    counter not 0, probes that took 1 % of the traced time or more); -v shows them always;
    JSON always has both."""
    r = gp.gpuprobe(["--memleak", "--libcuda", FAKECUDA], cmd=[LEAKY, "--allocs", "4", "--leaks", "2"])
    eq(r.returncode, 0, "exit")
    check("memleak final report" in r.stdout, r.stdout[-400:])
    check("Dropped events" not in r.stdout and "gpuprobe overhead" not in r.stdout, f"quiet: {r.stdout[-600:]}")
    r = gp.gpuprobe(["--memleak", "-v", "--libcuda", FAKECUDA], cmd=[LEAKY, "--allocs", "4", "--leaks", "2"])
    check(re.search(r"^Dropped events: 0 \(ringbuf_full 0, ", r.stdout, re.M), f"every counter with -v: {r.stdout[-600:]}")
    check(re.search(r"^  PID \d+ \(memleak_app\): \d+ probe hits, ~\S+ \S+ in probes \(", r.stdout, re.M),
          f"the footer with -v: {r.stdout[-600:]}")
    r = gp.gpuprobe(["--memleak", "--json", "--libcuda", FAKECUDA], cmd=[LEAKY, "--allocs", "4", "--leaks", "2"])
    f = gp.final(r.stdout)
    check("drops" in f and f["dropped_events"] == 0, f"JSON drops: {f.get('drops')}")
    eq(len(gp.reports(r.stdout, mode="overhead")), 1, "the JSON overhead line")
    # a ring buffer too small for the stacks: the drop line names what was not 0, alone
    r = gp.gpuprobe(["--memleak", "--ringbuf-size", "4096", "--libcuda", FAKECUDA],
                    cmd=[LEAKY, "--allocs", "300", "--leaks", "200"])
    m = re.search(r"^Dropped events: ([\d,]+) \((.*)\)$", r.stdout, re.M)
    if m:
        check(all(not c.endswith(" 0") for c in m.group(2).split(", ")), f"only counters not 0: {m.group(0)}")


def plural(n, one, many):
    return f"{n:,} {one if n == 1 else many}"


def human_exact(n):
    """docs/design.md's bytes: the exact figure alone below 1 KiB, else IEC units first."""
    if n < 1024:
        return f"{n:,} B"
    for unit, k in (("KiB", 1), ("MiB", 2), ("GiB", 3)):
        v = n / 1024 ** k
        if v < 1024 or unit == "GiB":
            h = f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 100 else f"{v:.0f}"
            return f"{h} {unit} ({n:,} B)"


def test_budget_armed_line_only_when_it_says_something():
    """The budget's line on processes armed alone appears when one was armed or could not
    be (its figures then not all 0), and always with -v."""
    armed = re.compile(r"^  ([\d,]+) process(?:es)? new to it counted exactly.*?(?:; ([\d,]+) could not be)?", re.M)
    r = gp.gpuprobe(["--cudatrace", "--max-overhead", "1", "--libcuda", FAKECUDA],
                    cmd=[app("rate_app"), "--phases", "2000:1"])
    eq(r.returncode, 0, f"exit ({r.stderr[-300:]})")
    check("gpuprobe budget (" in r.stdout, f"the budget's report: {r.stdout[-600:]}")
    m = armed.search(r.stdout)
    check(not m or m.group(1) != "0" or (m.group(2) or "0") != "0", f"an all-0 line without -v: {m and m.group(0)}")
    r = gp.gpuprobe(["--cudatrace", "--max-overhead", "1", "-v", "--libcuda", FAKECUDA],
                    cmd=[app("rate_app"), "--phases", "2000:1"])
    check(armed.search(r.stdout), f"the line with -v: {r.stdout[-600:]}")


def test_attach_gap_scaled():
    """-p: the line saying calls before the attach went unseen gives the gap as a scaled
    duration, three significant digits at most ("1.52 s", "1.4 s"), not "1.520 s"; the process was more than
    1.2 s old (the test waited that long before the attach)."""
    a = gp.start_app([LEAKY, "--wait", "--allocs", "2", "--leaks", "1"])
    try:
        time.sleep(1.2)  # the process is over a second old at the attach
        g = gp.start_gpuprobe(["--memleak", "-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, "workload")
        eq(g.wait(timeout=30), 0, f"gpuprobe ({g.stderr()[-300:]})")
    finally:
        a.kill()
    m = re.search(r"calls before the attach not seen \(attached (\S+) (\S+) after the process started\)", g.stdout())
    check(m, f"the unseen line: {g.stdout()[-600:]}")
    num, unit = m.group(1), m.group(2)
    # at most three significant digits, trailing zeros dropped ("1.52 s", "1.4 s", "12.3 s")
    check(unit == "s" and re.fullmatch(r"\d(\.\d\d?)?|\d\d(\.\d)?", num) and float(num) >= 1.2,
          f"a gap over a second, three significant digits at most: {m.group(0)}")


def test_bandwidth_lists_processes_that_copied():
    """--bandwidth-util's text lists the processes that copied; one that made no copy (a
    memleak_app: allocations only, by construction) is counted in the title and listed
    with -v; JSON lists every process."""
    cmd = ["sh", "-c", f"{LEAKY} --allocs 2 --leaks 1; {app('peer_app')} --n 2"]
    r = gp.gpuprobe(["--bandwidth-util", "--libcuda", FAKECUDA], cmd=cmd)
    eq(r.returncode, 0, f"exit ({r.stderr[-300:]})")
    check(re.search(r"bandwidth final report: 1 process \(and 1 process without a copy: -v lists it\)$", r.stdout, re.M),
          f"the title: {r.stdout[:400]}")
    check("(memleak_app)" not in r.stdout and "(peer_app) exited:" in r.stdout, f"the copier alone: {r.stdout[:600]}")
    r = gp.gpuprobe(["--bandwidth-util", "-v", "--libcuda", FAKECUDA], cmd=cmd)
    check(re.search(r"^PID \d+ \(memleak_app\) exited: 0 copies, 0 B$", r.stdout, re.M), f"-v: {r.stdout[:600]}")
    r = gp.gpuprobe(["--bandwidth-util", "--json", "--libcuda", FAKECUDA], cmd=cmd)
    eq(sorted(p["comm"] for p in gp.final(r.stdout, "bandwidth")["processes"]), ["memleak_app", "peer_app"],
       "JSON: every process")


def test_small_copies_line_only_with_min_bytes():
    """The copies not counted as traffic, in words with their counts from copy_app's own
    account: one line for zero-byte and failed copies, one for small ones with --min-bytes."""
    r = gp.gpuprobe(["--bandwidth-util", "--libcuda", FAKECUDA], cmd=[app("copy_app")])
    eq(r.returncode, 0, "exit")
    t = gp.truth(r.stderr)
    want = (f"Not counted: {plural(t['zero_byte_copies'], 'zero-byte copy', 'zero-byte copies')}, "
            f"{plural(t['failed_copies'], 'failed copy', 'failed copies')}")
    check("Small copies" not in r.stdout and want in r.stdout, f"{want!r} in {r.stdout[-400:]}")
    for size in (200, 4096):
        r = gp.gpuprobe(["--bandwidth-util", "--min-bytes", str(size), "--libcuda", FAKECUDA], cmd=[app("copy_app")])
        t = gp.truth(r.stderr)
        want = (f"Small copies (under {size:,} B, not counted above): "
                f"{plural(t['small_copies'], 'copy', 'copies')}, {human_exact(t['small_bytes'])}")
        check(want in r.stdout, f"{want!r} in {r.stdout[-400:]}")


def test_csv_rows_through_an_output_file():
    csv = path("bw.csv")
    rows = []
    for _ in range(3):  # appended: never truncated, the header once
        r = gp.gpuprobe(["--bandwidth-util", "--csv", csv, "-o", "/dev/null", "--libcuda", FAKECUDA],
                        cmd=[app("copy_app")])
        eq(r.returncode, 0, "exit")
    lines = open(csv).read().splitlines()
    eq(lines[0].split(",")[0], "timestamp", "the header")
    eq(sum(1 for l in lines if l.startswith("timestamp")), 1, "one header")
    rows = [l.split(",") for l in lines[1:]]
    eq(len(rows), 6, "a row per GPU per run (two GPUs, three runs)")
    check(all(re.fullmatch(r"\d{10}\.\d{3}", x[0]) for x in rows), f"millisecond timestamps: {rows}")
    check(any(not x[0].endswith(".000") for x in rows), f"fractions, not time()'s .000: {rows}")
    eq(stat.S_IMODE(os.stat(csv).st_mode), 0o600, "created 0600")
    link = path("bw-link.csv")
    os.symlink(csv, link)
    r = gp.gpuprobe(["--bandwidth-util", "--csv", link, "--libcuda", FAKECUDA], cmd=["true"])
    gp.one_error_line(r, f"--csv {link}: Too many levels of symbolic links")


def test_both_on_stdout_refused():
    r = gp.gpuprobe(["--trace", "-", "-o", "-", "--libcuda", FAKECUDA], cmd=["true"])
    eq(r.returncode, 2, "usage error")
    gp.one_error_line(r, "-o - and --trace - both want stdout")


if __name__ == "__main__":
    try:
        gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
