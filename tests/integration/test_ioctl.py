# SPDX-License-Identifier: BSD-3-Clause
"""--ioctl end to end: real gpuprobe, real BPF on the syscall tracepoints, nvidia request
numbers issued by tests/apps/ioctl_app on /dev/null (major 1, mapped with --ioctl-dev):
every call fails with ENOTTY, so errors == calls."""
import os
import re
import signal
import subprocess
import tempfile

import gp
from gp import app, check, eq, proc

APP = app("ioctl_app")
BASE = ["--ioctl", "--json", "--ioctl-dev", "1:mem"]


def assert_no_ioctl_programs():
    """gp.assert_nothing_attached, for --ioctl's programs only: other test runs on this
    node load the uprobe modes' programs at the same time."""
    eq([n for n in gp.our_bpf_programs() if n.startswith("ioctl_")], [], "ioctl programs loaded")


def final(text):
    return gp.final(text, "ioctl")


def commands(p):
    """{(cmd, ctrl_cmd): command} of a process's one device."""
    eq(len(p["devices"]), 1, "devices")
    return {(c["cmd"], c["ctrl_cmd"]): c for c in p["devices"][0]["commands"]}


def check_exact(p, t):
    got = commands(p)
    want = [c for c in t["commands"] if c["calls"]]
    eq(sorted(got), sorted((c["cmd"], c["ctrl_cmd"]) for c in want), "commands seen")
    for w in want:
        c = got[(w["cmd"], w["ctrl_cmd"])]
        what = f"{w['name'] or w['cmd']} {w['ctrl_cmd'] or ''}"
        eq(c["calls"], w["calls"], f"{what} calls")
        eq(c["errors"], w["errors"], f"{what} errors")
        eq(c["errors"], c["calls"], f"{what}: every ioctl on /dev/null fails")
        eq(c["name"], w["name"], f"{what} name")
        eq(c["ctrl_name"], w["ctrl_name"], f"{what} ctrl_name")
        eq(sum(b["count"] for b in c["hist_us"]), c["calls"], f"{what} histogram total")
        check(0 < c["max_s"] <= c["total_s"], f"{what}: 0 < max <= total")
    calls = sum(c["calls"] for c in want)
    eq(p["ioctls"], calls, "ioctls")
    eq(p["errors"], calls, "errors")
    eq(p["decoded_calls"], sum(c["calls"] for c in want if c["name"]), "decoded calls")
    d = p["devices"][0]
    eq((d["major"], d["minor"]), (t["major"], t["minor"]), "device numbers")
    eq(d["driver"], "mem", "driver name (--ioctl-dev 1:mem)")


def test_counts_names_errors():
    r = gp.gpuprobe(BASE, cmd=[APP, "--n", "20"])
    eq(r.returncode, 0, f"exit status ({r.stderr[-600:]})")
    t = gp.truth(r.stderr)
    rep = final(r.stdout)
    eq(rep["backend"], "tracepoint", "backend")
    eq([p["pid"] for p in rep["processes"]], [t["pid"]], "only the command is traced")
    p = proc(rep, t["pid"])
    check_exact(p, t)
    eq(p["comm"], "ioctl_app", "comm")
    eq(p["devices"][0]["node"], "/dev/char/1:3", "node of a non-nvidia major")
    got = commands(p)
    eq(got[("0xc020462a", "0x20800110")]["ctrl_name"], "NV2080_CTRL_CMD_GPU_GET_NAME_STRING", "ctrl name")
    eq(got[("0xc020462a", "0x2080beef")]["ctrl_name"], None, "unknown control: a number")
    eq(got[("0x12345678", None)]["name"], None, "unknown request: a number")
    eq(got[("0x25", None)]["name"], "UVM_REGISTER_GPU", "UVM request")
    eq(rep["dropped_events"], 0, "dropped events")
    eq(rep["drops"]["control_params_unreadable"], 0, "NVOS54 read")


def test_backend_line():
    r = gp.gpuprobe(BASE, cmd=[APP, "--n", "5"])
    lines = [l for l in r.stderr.splitlines() if l.startswith("gpuprobe: ioctl backend:")]
    eq(len(lines), 1, f"backend lines in {r.stderr!r}")
    check(lines[0].startswith("gpuprobe: ioctl backend: tracepoint ("), lines[0])
    if not os.path.exists("/sys/bus/event_source/devices/kprobe/type"):
        r = gp.gpuprobe(["--ioctl", "--json"], cmd=["true"])
        eq(r.returncode, 0, f"exit status ({r.stderr})")
        check("gpuprobe: ioctl backend: tracepoint (no kprobes)\n" in r.stderr, r.stderr)


def test_kprobe_backend_fails_over_when_attach_fails():
    # a kernel that says it has kprobes, where the nvidia functions cannot be probed
    root = tempfile.mkdtemp(prefix="gp-sysfs-")
    for d, f in (("kernel/btf", "vmlinux"), ("bus/event_source/devices/uprobe", "type"),
                 ("bus/event_source/devices/kprobe", "type")):
        os.makedirs(os.path.join(root, d))
        open(os.path.join(root, d, f), "w").close()
    r = gp.gpuprobe(["--ioctl", "--json"], cmd=["true"], env={"GPUPROBE_SYSFS": root})
    eq(r.returncode, 0, f"exit status ({r.stderr})")
    check(re.search(r"gpuprobe: ioctl backend: tracepoint \(kprobe on nvidia_unlocked_ioctl failed", r.stderr),
          r.stderr)
    eq(final(r.stdout)["backend"], "tracepoint", "backend")


def test_kprobe_backend_without_kprobes():
    if os.path.exists("/sys/bus/event_source/devices/kprobe/type"):
        gp.skip("this kernel has kprobes")
    r = gp.gpuprobe(["--ioctl", "--ioctl-backend=kprobe"], cmd=[APP])
    gp.one_error_line(r, "--ioctl-backend=kprobe: this kernel has no kprobes")
    eq(r.stdout, "", "nothing on stdout")
    assert_no_ioctl_programs()
    r = gp.gpuprobe(["--ioctl", "--ioctl-backend=bogus"], cmd=["true"])
    eq(r.returncode, 2, "usage error")


def test_command_children_followed():
    """A child of the command (another tgid) issues the same ioctls: counted as its own
    process (a command is traced with every process it starts)."""
    r = gp.gpuprobe(BASE, cmd=[APP, "--fork", "--n", "10"])
    t = gp.truth(r.stderr)
    rep = final(r.stdout)
    eq(sorted(p["pid"] for p in rep["processes"]), sorted([t["pid"], t["child_pid"]]), "processes")
    check_exact(proc(rep, t["pid"]), t)
    eq(proc(rep, t["child_pid"])["ioctls"], proc(rep, t["pid"])["ioctls"], "the child's ioctls")


def test_pid_filter():
    """-p PID alone: a child it forks (another tgid) is not counted."""
    a = gp.start_app([APP, "--wait", "--fork", "--n", "10"])
    g = gp.start_gpuprobe(BASE + ["-p", str(a.pid)])
    try:
        a.signal(signal.SIGUSR1)
        a.wait()
        eq(g.wait(), 0, "gpuprobe exit")
        t = gp.truth(a.stderr())
        rep = final(g.stdout())
        eq([p["pid"] for p in rep["processes"]], [t["pid"]], "processes")
    finally:
        a.kill()
        g.kill()


def test_system_wide_sees_every_process():
    g = gp.start_gpuprobe(BASE)
    try:
        a = gp.run([APP, "--fork", "--n", "10"])
        g.signal(signal.SIGINT)
        eq(g.wait(), 0, "gpuprobe exit")
        t = gp.truth(a.stderr)
        rep = final(g.stdout())
        check_exact(proc(rep, t["pid"]), t)
        c = proc(rep, t["child_pid"])
        eq(c["ioctls"], proc(rep, t["pid"])["ioctls"], "the child's ioctls, system-wide")
    finally:
        g.kill()


def test_attach_to_running_process():
    a = gp.start_app([APP, "--wait", "--n", "30"])
    try:
        g = gp.start_gpuprobe(BASE + ["-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
        eq(g.wait(), 0, "gpuprobe exit")
        t = gp.truth(a.stderr())
        rep = final(g.stdout())
        eq([p["pid"] for p in rep["processes"]], [a.pid], "processes")
        check_exact(proc(rep, a.pid), t)
    finally:
        a.kill()


def test_node_made_with_mknod():
    d = tempfile.mkdtemp(prefix="gp-ioctl-")
    node = os.path.join(d, "nvtest")
    subprocess.run(["mknod", node, "c", "1", "3"], check=True)
    r = gp.gpuprobe(BASE, cmd=[APP, "--dev", node, "--n", "7"])
    t = gp.truth(r.stderr)
    check_exact(proc(final(r.stdout), t["pid"]), t)
    os.unlink(node)
    os.rmdir(d)


def test_untraced_major_is_not_counted():
    r = gp.gpuprobe(["--ioctl", "--json", "--ioctl-dev", "4000"], cmd=[APP, "--n", "5"])
    eq(r.returncode, 0, "exit status")
    eq(final(r.stdout)["processes"], [], "ioctls on another major")


def test_text_report():
    r = gp.gpuprobe(["--ioctl", "--ioctl-dev", "1:mem"], cmd=[APP, "--n", "20"])
    eq(r.returncode, 0, "exit status")
    t = gp.truth(r.stderr)
    check("ioctl final report (backend tracepoint)" in r.stdout, r.stdout)
    calls = sum(c["calls"] for c in t["commands"])
    decoded = sum(c["calls"] for c in t["commands"] if c["name"])
    want = "PID %d (ioctl_app) exited: %d ioctls, %d errors, %.1f%% decoded" % (t["pid"], calls, calls,
                                                                         100.0 * decoded / calls)
    check(want in r.stdout, f"{want!r} in {r.stdout}")
    check(re.search(r"NV_ESC_RM_CONTROL \(0xc020462a\)\s+NV2080_CTRL_CMD_GPU_GET_NAME_STRING \(0x20800110\)\s+20\s+20\s",
                    r.stdout), r.stdout)
    check(re.search(r"\n    0x12345678\s+-\s+5\s+5\s", r.stdout), r.stdout)
    check("usecs" in r.stdout and "distribution" in r.stdout, "log2 histograms")
    check("Dropped events" not in r.stdout, "no drop line when nothing was dropped")
    r = gp.gpuprobe(["--ioctl", "-v", "--ioctl-dev", "1:mem"], cmd=[APP, "--n", "2"])
    check("Dropped events: 0 (" in r.stdout, "every drop counter with -v")


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
