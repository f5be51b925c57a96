# SPDX-License-Identifier: BSD-3-Clause
"""Bad input and missing features: one clear line on stderr, a non-zero exit, and no
BPF program left loaded."""
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile

import gp
from gp import FAKECUDA, GPUPROBE, app, check, eq, one_error_line

TMP = tempfile.mkdtemp(prefix="gp-errors-")


def tmpfile(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def expect_error(args, contains, env=None, usage=False):
    r = gp.gpuprobe(args, env=env)
    if usage:
        eq(r.returncode, 2, f"usage error exit status ({r.stderr!r})")
        first = r.stderr.splitlines()[0] if r.stderr else ""
        check(contains in first, f"{contains!r} not in {first!r}")
    else:
        one_error_line(r, contains)
    check(r.stdout == "", f"nothing on stdout, got {r.stdout[:200]!r}")
    gp.assert_nothing_attached()
    return r


def test_unknown_flag():
    expect_error(["--memleak", "--bogus"], "unrecognized option", usage=True)


def test_no_mode():
    expect_error(["-p", "1"], "choose a mode", usage=True)


def test_bad_numbers():
    expect_error(["--memleak", "-p", "abc"], "invalid PID", usage=True)
    expect_error(["--memleak", "--ringbuf-size", "5000"], "power of two", usage=True)
    expect_error(["--memleak", "--interval", "-1"], "invalid --interval", usage=True)


def test_help_and_version_everywhere():
    """One parser: -h, --help, -V, --version work for the tracer and every subcommand."""
    for sub in ([], ["daemon"], ["check"], ["convert"], ["flame"]):
        for flag in ("-h", "--help"):
            r = gp.gpuprobe(sub + [flag])
            eq(r.returncode, 0, f"{sub} {flag} exit status ({r.stderr!r})")
            check(r.stdout.startswith("Usage: gpuprobe"), f"{sub} {flag}: {r.stdout[:200]!r}")
            check("-h, --help" in r.stdout and "-V, --version" in r.stdout, f"{sub} {flag} lists -h and -V")
            eq(r.stderr, "", f"{sub} {flag} stderr")
        for flag in ("-V", "--version"):
            r = gp.gpuprobe(sub + [flag])
            eq(r.returncode, 0, f"{sub} {flag} exit status")
            check(r.stdout.startswith("gpuprobe "), f"{sub} {flag}: {r.stdout!r}")


def test_mode_option_without_its_mode():
    """A mode's option without the mode is one usage line, in both front ends."""
    cases = [
        (["--memleak", "--min-bytes", "5"], "--min-bytes needs --bandwidth-util"),
        (["--cudatrace", "--csv", "x.csv"], "--csv needs --bandwidth-util"),
        (["--memleak", "--no-latency"], "--no-latency needs --cudatrace"),
        (["--memleak", "--trace-format", "chrome"], "--trace-format needs --trace"),
        (["--cudatrace", "--top", "3"], "--top needs --memleak"),
    ]
    for args, want in cases:
        expect_error(args, want, usage=True)
    r = gp.run([GPUPROBE, "daemon", "--memleak", "--no-latency"])
    eq(r.returncode, 2, "daemon usage error")
    check(r.stderr.startswith("<3>gpuprobe: daemon: --no-latency needs --cudatrace"), r.stderr)
    # an option of the other front end is unknown here
    expect_error(["--memleak", "--listen", "127.0.0.1:1"], "unrecognized option '--listen'", usage=True)
    r = gp.run([GPUPROBE, "daemon", "--memleak", "--json"])
    check(r.returncode == 2 and "unrecognized option '--json'" in r.stderr, r.stderr)


def test_subcommand_usage_errors():
    r = gp.gpuprobe(["convert", "--chrome"])
    eq(r.returncode, 2, "convert without a file")
    one_error_line(r, "convert: missing arguments")
    r = gp.gpuprobe(["check", "extra"])
    eq(r.returncode, 2, "check with an argument")
    one_error_line(r, "check: unexpected argument extra")


def test_numbers_bounded():
    """Durations and intervals: finite, at most about a year; no double->integer overflow
    (UBSan reported -d 1e30), nan and inf refused, -d 2e10 refused rather than ending at once."""
    for opt in ("--duration", "--interval"):
        for bad in ("1e30", "inf", "-inf", "nan", "2e10", "-1", "", "1s", "0x", "1e400"):
            expect_error(["--memleak", opt, bad], f"invalid {opt}: {bad}", usage=True)
    for opt, bad in (("--max-pending", "99999999999999999999999"), ("--max-procs", "0"),
                     ("--top", "1e3"), ("--ringbuf-size", "18446744073709551616")):
        expect_error(["--memleak", opt, bad], bad, usage=True)
    r = gp.run([GPUPROBE, "daemon", "--memleak", "--retention", "nan"])
    check(r.returncode == 2 and "invalid --retention: nan" in r.stderr, r.stderr)
    # the largest accepted still runs, and ends on its own terms
    r = gp.gpuprobe(["--memleak", "--duration", "31536000", "--libcuda", FAKECUDA], cmd=["true"])
    eq(r.returncode, 0, f"a year's duration is accepted ({r.stderr!r})")


def test_pid_that_does_not_exist():
    # PIDs above pid_max cannot exist
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    expect_error(["--memleak", "-p", str(pid_max + 1)], f"no process with PID {pid_max + 1}")


def test_pid_without_libcuda():
    p = subprocess.Popen(["sleep", "30"])
    try:
        expect_error(["--memleak", "-p", str(p.pid)], f"PID {p.pid} does not map libcuda")
    finally:
        p.kill()
        p.wait()


def test_libcuda_missing():
    expect_error(["--memleak", "--libcuda", "/nonexistent/libcuda.so.1"], "No such file or directory")


def test_libcuda_not_elf():
    path = tmpfile("text.so", b"this is not an ELF file\n" * 10)
    expect_error(["--memleak", "--libcuda", path], "not an ELF file")


def test_libcuda_corrupt_elf():
    data = bytearray(open(FAKECUDA, "rb").read())
    # section header table pointed past the end of the file, count made absurd
    data[0x28:0x30] = (len(data) * 4).to_bytes(8, "little")
    data[0x3c:0x3e] = (0xfff0).to_bytes(2, "little")
    path = tmpfile("corrupt.so", bytes(data))
    expect_error(["--memleak", "--libcuda", path], "corrupt ELF")


def test_libcuda_truncated_elf():
    path = tmpfile("truncated.so", open(FAKECUDA, "rb").read()[:100])
    r = gp.gpuprobe(["--memleak", "--libcuda", path])
    one_error_line(r, path)
    gp.assert_nothing_attached()


def test_library_that_is_not_cuda():
    # this interpreter's own libc, whatever the architecture's library folder
    libc = next(line.split()[-1] for line in open("/proc/self/maps")
                if line.rstrip().endswith("/libc.so.6"))
    expect_error(["--memleak", "--libcuda", libc], "not a CUDA driver library")


def test_no_privilege():
    check(shutil.which("setpriv"), "setpriv (util-linux) is needed")
    r = gp.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "--inh-caps=-all", GPUPROBE, "--memleak", "--libcuda", FAKECUDA, "--",
                app("memleak_app")])
    one_error_line(r, "permission denied")
    gp.assert_nothing_attached()


def fake_sysfs(btf=True, uprobe=True):
    root = tempfile.mkdtemp(prefix="sysfs-", dir=TMP)
    if btf:
        os.makedirs(os.path.join(root, "kernel/btf"))
        open(os.path.join(root, "kernel/btf/vmlinux"), "w").close()
    if uprobe:
        os.makedirs(os.path.join(root, "bus/event_source/devices/uprobe"))
        open(os.path.join(root, "bus/event_source/devices/uprobe/type"), "w").close()
    return root


def test_kernel_without_btf():
    expect_error(["--memleak", "--libcuda", FAKECUDA], "no BTF",
                 env={"GPUPROBE_SYSFS": fake_sysfs(btf=False)})


def test_kernel_without_uprobes():
    expect_error(["--memleak", "--libcuda", FAKECUDA], "no uprobes",
                 env={"GPUPROBE_SYSFS": fake_sysfs(uprobe=False)})


def test_system_wide_without_any_libcuda():
    if any(os.path.exists(os.path.join(d, "libcuda.so.1"))
           for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                     "/usr/local/nvidia/lib64")):
        gp.skip("a real driver is installed here")
    # in a PID namespace of its own, no running process maps a libcuda (another test or
    # tool beside this one may have one mapped on the host)
    r = gp.run(["unshare", "-pf", "--mount-proc", GPUPROBE, "--memleak", "--duration", "5"],
               env={"LD_LIBRARY_PATH": ""})
    one_error_line(r, "no libcuda.so.1 found")
    gp.assert_nothing_attached()


def no_real_driver():
    if any(os.path.exists(os.path.join(d, "libcuda.so.1"))
           for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                     "/usr/local/nvidia/lib64", "/usr/lib", "/usr/local/cuda/lib64")):
        gp.skip("a real driver is installed here")


def test_trace_without_any_libcuda_says_so():
    """--trace -- cmd with no libcuda anywhere it looks (issue 32): the one error line gives
    the real reason, no libcuda found, not a --trace-filter error the user never asked for;
    and no other process's copy stands in for it (another test's stand-in may be mapped)."""
    no_real_driver()
    r = expect_error(["--trace", "/dev/null", "--", "true"], "--trace: no libcuda.so.1 found",
                     env={"LD_LIBRARY_PATH": ""})
    check("--trace-filter" not in r.stderr, f"a --trace-filter error: {r.stderr!r}")


def test_trace_filter_matching_nothing():
    """--trace-filter patterns that match no exported function: the patterns are the reason."""
    expect_error(["--trace", "/dev/null", "--trace-filter", "cuNoSuchFunction*", "--libcuda", FAKECUDA,
                  "--", "true"], "matches the --trace-filter patterns")


def test_nothing_left_after_command_is_killed():
    a = gp.Background([GPUPROBE, "--memleak", "--json", "--libcuda", FAKECUDA, "--",
                       app("memleak_app"), "--wait"])
    a.wait_for("READY")  # the command keeps its stdout
    check(gp.our_bpf_programs(), "programs loaded while tracing")
    # the workload is gpuprobe's child: note its PID now, it is orphaned below
    with open(f"/proc/{a.pid}/task/{a.pid}/children") as f:
        kids = [int(x) for x in f.read().split()]
    eq(len(kids), 1, f"children of gpuprobe {a.pid}")
    a.signal(signal.SIGKILL)
    a.wait()
    gp.assert_nothing_attached()
    # end the orphaned workload by its own PID (never by name: on a shared machine other
    # checkouts run the same workload)
    os.kill(kids[0], signal.SIGKILL)


def test_input_a_subcommand_cannot_read():
    """gpuprobe flame on a file that is no folded stacks, gpuprobe convert on one that is no
    --trace JSON Lines: one line, exit 1, nothing on stdout (an empty folded file is a run
    with nothing outstanding: an empty graph, exit 0)."""
    text = tmpfile("notes.txt", b"hello world\nthis is not a stack\n")
    expect_error(["flame", text], f"flame: {text}: not folded stacks (line 1:")
    r = gp.gpuprobe(["flame", tmpfile("empty.folded", b"")])
    eq(r.returncode, 0, f"an empty folded file ({r.stderr!r})")
    check(r.stdout.startswith("<?xml"), "an empty graph")
    r = gp.gpuprobe(["convert", "--chrome", text])
    check(r.returncode != 0 and r.stderr.startswith("gpuprobe: convert: "), f"convert on text: {r.stderr!r}")
    # -o FILE (after the input, as other tools take it): no file at all on an error; the
    # whole graph, 0600, on success
    svg = os.path.join(os.path.dirname(text), "out.svg")
    expect_error(["flame", text, "-o", svg], "not folded stacks")
    check(not os.path.exists(svg), "no file left by an input that is not folded stacks")
    good = tmpfile("good.folded", b"main;alloc 4096\nmain;other 1024\n")
    r = gp.gpuprobe(["flame", good, "-o", svg])
    eq(r.returncode, 0, f"flame -o ({r.stderr!r})")
    eq(r.stdout, "", "nothing on stdout with -o")
    with open(svg) as f:
        body = f.read()
    check(body.startswith("<?xml") and body.rstrip().endswith("</svg>") and "alloc" in body, "the whole graph")
    eq(stat.S_IMODE(os.stat(svg).st_mode), 0o600, "created 0600")


def test_kernel_without_a_needed_feature_refused_in_one_line():
    """A kernel without a feature every mode needs (Debian 11's 5.10: attach cookies, 5.15)
    is refused at start by every mode, the trace mode, top and the daemon, in one line
    naming the feature and the first release with it: never a verifier log, nothing
    attached. `gpuprobe check` says the same in its "kernel features" line."""
    r = subprocess.run([GPUPROBE, "check"], capture_output=True, text=True, timeout=60)
    feat = [l for l in r.stdout.splitlines() if " kernel features: " in l]
    eq(len(feat), 1, f"one kernel features line in gpuprobe check: {r.stdout}")
    if feat[0].startswith("ok "):
        gp.skip(f"this kernel has every feature gpuprobe needs ({feat[0]})")
    check(feat[0].startswith("fail kernel features: this kernel lacks "), feat[0])
    why = feat[0].split(": ", 1)[1]
    eq(r.returncode, 1, "gpuprobe check's exit status")
    # nothing else claims to work on a kernel where nothing starts (5.10 used to print "ok
    # overhead budget": the tracefs events it would sample with exist there)
    budget = [l for l in r.stdout.splitlines() if " overhead budget: " in l]
    eq(len(budget), 1, f"one overhead budget line: {r.stdout}")
    check(budget[0].startswith("warn overhead budget: none: gpuprobe does not start"), budget[0])
    trace = os.path.join(TMP, "refused.jsonl")
    runs = [[m, "--libcuda", FAKECUDA, "--", "/bin/true"] for m in
            ("--memleak", "--cudatrace", "--bandwidth-util", "--nccl")]
    runs += [["--ioctl", "--", "/bin/true"], ["--trace", trace, "--libcuda", FAKECUDA, "--", "/bin/true"],
             ["--memleak", "-p", "1"], ["top", "--batch", "-n", "1", "--libcuda", FAKECUDA],
             ["daemon", "--memleak", "--listen", "127.0.0.1:0", "--libcuda", FAKECUDA]]
    for args in runs:
        # subprocess itself: gp.run would skip on the very refusal this test asserts
        r = subprocess.run([GPUPROBE] + args, capture_output=True, text=True, timeout=60)
        line = gp.refusal(r.returncode, r.stderr)
        check(line is not None, f"{' '.join(args)}: exit {r.returncode}, not the one refusal line: {r.stderr[-1500:]!r}")
        check(line.endswith("gpuprobe: " + why), f"{' '.join(args)}: {line!r}, gpuprobe check says {why!r}")
        check("verifier" not in r.stderr and "libbpf" not in r.stderr, f"{' '.join(args)}: {r.stderr[-1500:]!r}")
        check(not os.path.exists(trace), f"{' '.join(args)}: the trace file made")
    # gpuprobe check --bpf (the load gate): the same line once, every configuration skipped,
    # no program's load tried (no verifier verdicts, no logs)
    r = subprocess.run([GPUPROBE, "check", "--bpf", "--libcuda", FAKECUDA], capture_output=True, text=True,
                       timeout=120)
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    eq(len(lines), 2, f"gpuprobe check --bpf: the refusal and the summary: {r.stdout[-1500:]!r}")
    eq(lines[0], "skip bpf: every configuration: every front end refuses this kernel at start: " + why,
       "gpuprobe check --bpf's line")
    check(re.match(r"^bpf: (\d+) configurations on Linux .*: 0 loaded, 0 failed, \1 skipped", lines[1]), lines[1])
    eq(r.returncode, 0, f"gpuprobe check --bpf's exit status ({r.stderr[-500:]!r})")
    print(f"#   {len(runs)} front ends and check --bpf refused: {why}")
    gp.assert_nothing_attached()


if __name__ == "__main__":
    try:
        gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
