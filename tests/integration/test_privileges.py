# SPDX-License-Identifier: BSD-3-Clause
"""The non-root setup the README promises, as a real non-root user (uid 65534) holding
ambient capabilities: CAP_BPF + CAP_PERFMON (+ CAP_SYS_PTRACE) runs every uprobe mode with
exact numbers; `check` tells the truth about it; what such a user cannot do is refused with
one line naming the permission that is missing."""
import atexit
import os
import shutil
import subprocess
import tempfile

import gp
from gp import check, eq, final, one_error_line, proc, truth

CAPS = "+bpf,+perfmon,+sys_ptrace"


def stage():
    """What uid 65534 runs, copied into a folder of its own (0755), laid out as .output is
    (the apps find the stand-in through $ORIGIN/../fakecuda): the tree itself may sit under
    a folder only root can enter, such as a clean clone in `mktemp -d`'s."""
    d = tempfile.mkdtemp(prefix="gp-priv-")
    atexit.register(shutil.rmtree, d, True)
    os.chmod(d, 0o755)
    shutil.copytree(gp.FAKECUDA_DIR, os.path.join(d, "fakecuda"), symlinks=True)
    os.makedirs(os.path.join(d, "apps"))
    shutil.copy2(gp.app("memleak_app"), os.path.join(d, "apps"))
    shutil.copy2(gp.GPUPROBE, d)
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            q = os.path.join(root, n)
            if not os.path.islink(q):
                os.chmod(q, os.stat(q).st_mode | 0o055)
    return d


STAGE = stage()
GPUPROBE = os.path.join(STAGE, "gpuprobe")
FAKECUDA_DIR = os.path.join(STAGE, "fakecuda")
FAKECUDA = os.path.join(FAKECUDA_DIR, "libcuda.so.1")


def app(name):
    return os.path.join(STAGE, "apps", name)


def as_user(argv, caps=CAPS, env=None):
    check(shutil.which("setpriv"), "setpriv (util-linux) is needed")
    pre = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    if caps:
        pre += [f"--inh-caps={caps}", f"--ambient-caps={caps}"]
    else:
        pre += ["--inh-caps=-all"]
    # the user's own state folder (the harness's is root's, 0700: refused with a line)
    state = gp.state_dir()
    os.chown(state, 65534, 65534)
    env = dict(env or {})
    env.setdefault("GPUPROBE_STATE_DIR", state)
    return gp.run(pre + argv, env=env, timeout=120)


def test_capable_user_traces_exactly():
    r = as_user([GPUPROBE, "--memleak", "--cudatrace", "--json", "--libcuda", FAKECUDA, "-o", "-", "--",
                 app("memleak_app"), "--allocs", "10", "--leaks", "3"])
    if not gp.has_uprobe_multi():
        # the kernel's rule, as the README and gpuprobe check say
        one_error_line(r, "perf-event uprobes, which recent kernels allow only with CAP_SYS_ADMIN")
        gp.skip("no uprobe_multi links here (Linux 6.6): a user without CAP_SYS_ADMIN cannot attach "
                "perf-event uprobes (refused in one line, asserted)")
    eq(r.returncode, 0, f"exit status ({r.stderr[-600:]!r})")
    t = truth(r.stderr)
    p = proc(final(r.stdout), t["pid"])
    eq(p["outstanding_allocs"], t["leaks"], "outstanding allocations")
    eq(p["outstanding_bytes"], t["leaked_bytes"], "outstanding bytes")
    eq(p["allocs_total"], t["allocs"], "allocations")
    ov = [x for x in gp.json_lines(r.stdout) if x.get("mode") == "overhead"]
    eq(len(ov), 1, "one overhead line")
    check(ov[0]["probe_hit_cost_s"] is not None, "the probe cost is calibrated without root")
    own = [l for l in r.stderr.splitlines() if "gpuprobe: " in l]
    check(len(own) == 1 and "gpuprobe: tracing PID" in own[0], r.stderr)
    gp.assert_nothing_attached()


def test_check_tells_the_truth():
    r = as_user([GPUPROBE, "check"], env={"LD_LIBRARY_PATH": FAKECUDA_DIR})
    lines = r.stdout.splitlines()
    check(any(l == "ok privileges: CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE" for l in lines), r.stdout)
    check(any(l.startswith("ok uprobe_multi:" if gp.has_uprobe_multi() else "warn uprobe_multi:") for l in lines),
          r.stdout)
    # a kernel gpuprobe refuses (5.10) fails its "kernel features" line for every user
    refused = [f"fail kernel features: {gp.kernel_refusal()}"] if gp.kernel_refusal() else []
    if not gp.has_uprobe_multi():  # 6.1: perf-event uprobes, which need CAP_SYS_ADMIN
        refused += [l for l in lines if l.startswith("fail perf-event uprobes: ") and "CAP_SYS_ADMIN" in l][:1]
    eq([l for l in lines if l.startswith("fail ")], refused, f"fail lines as a capable user: {r.stdout}")
    eq(r.returncode, 1 if refused else 0, "check exit status")
    r = as_user([GPUPROBE, "check"], caps="+bpf,+perfmon")
    check(any(l.startswith("warn privileges:") and "CAP_SYS_PTRACE" in l for l in r.stdout.splitlines()), r.stdout)
    r = as_user([GPUPROBE, "check"], caps=None)
    check(any(l.startswith("fail privileges:") for l in r.stdout.splitlines()), r.stdout)
    eq(r.returncode, 1, "check without privileges fails")


def test_ioctl_names_the_tracefs_permission():
    """--ioctl's syscall tracepoints need tracefs, mounted 0700: the error says so."""
    if not os.path.isdir("/sys/kernel/tracing/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=False)
    mode = os.stat("/sys/kernel/tracing").st_mode & 0o777
    r = as_user([GPUPROBE, "--ioctl", "--ioctl-dev", "1:mem", "--", "true"])
    if mode & 0o005:
        eq(r.returncode, 0, f"tracefs readable by others (mode {mode:o}): --ioctl works")
        return
    one_error_line(r, "tracefs")
    check("CAP_DAC_READ_SEARCH" in r.stderr or "root" in r.stderr, r.stderr)
    gp.assert_nothing_attached()


def test_perf_event_fallback_names_sys_admin():
    """Without uprobe_multi links gpuprobe attaches perf-event uprobes, which this kernel
    allows only with CAP_SYS_ADMIN: the error says which permission."""
    r = as_user([GPUPROBE, "--memleak", "--libcuda", FAKECUDA, "--", "true"],
                env={"GPUPROBE_NO_UPROBE_MULTI": "1"})
    if r.returncode == 0:
        return  # an older kernel that still allows them with CAP_PERFMON
    one_error_line(r, "CAP_SYS_ADMIN")
    gp.assert_nothing_attached()


def test_no_capabilities_names_them():
    r = as_user([GPUPROBE, "--memleak", "--libcuda", FAKECUDA, "--", "true"], caps=None)
    one_error_line(r, "permission denied")
    check("CAP_BPF" in r.stderr and "CAP_PERFMON" in r.stderr, r.stderr)


if __name__ == "__main__":
    gp.main([test_capable_user_traces_exactly, test_check_tells_the_truth,
             test_ioctl_names_the_tracefs_permission, test_perf_event_fallback_names_sys_admin,
             test_no_capabilities_names_them])
