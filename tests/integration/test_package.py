# SPDX-License-Identifier: BSD-3-Clause
"""The Debian package end to end: `make deb`, lintian (no errors; every warning listed in
examples/packaging/README.md), `dpkg -i` on this machine, the unit enabled the Debian way
(deb-systemd-helper) but not started where systemd is not PID 1, `gpuprobe check` and a
daemon scrape with exact counts from the installed binary, then `dpkg --purge` leaving
nothing behind. Also `make install` into a DESTDIR. Runs serialised across checkouts (a
lock file), and removes a package only if this test installed it."""
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid

import gp
from gp import ROOT, app, check, eq, truth
from test_fleet import in_cgroup
from test_k8s_cgroups import Cgroups

LOCK = "/run/lock/gpuprobe-package-test.lock"
MARK = "/var/lib/gpuprobe-package-test.installed"  # this test installed the package
POLICY = "/usr/sbin/policy-rc.d"
README = os.path.join(ROOT, "examples", "packaging", "README.md")
ENV = {"LD_LIBRARY_PATH": gp.FAKECUDA_DIR}
INJECT_LIBS = ["libgpuprobe_cupti.so", "libgpuprobe_ncclprof.so"]  # --gpu-time's, in PREFIX/lib/gpuprobe
INSTALLED = ["/usr/bin/gpuprobe", "/lib/systemd/system/gpuprobe.service", "/etc/gpuprobe/gpuprobe.conf",
             "/usr/share/man/man8/gpuprobe.8.gz", "/usr/share/doc/gpuprobe/copyright"] + \
    ["/usr/lib/gpuprobe/" + n for n in INJECT_LIBS]
FAKECUPTI = os.path.join(gp.OUT, "fakecupti", "libcupti.so")
WANTS = "/etc/systemd/system/multi-user.target.wants/gpuprobe.service"
DSH_STATE = "/var/lib/systemd/deb-systemd-helper-enabled/gpuprobe.service.dsh-also"


def installed_version():
    r = gp.run(["dpkg-query", "-W", "-f=${Status} ${Version}", "gpuprobe"])
    return r.stdout.split()[-1] if r.returncode == 0 and "ok installed" in r.stdout else None


def dpkg(args, timeout=120):
    """dpkg, waiting for its lock if an apt run holds it."""
    deadline = time.time() + timeout
    while True:
        r = gp.run(["dpkg"] + args, timeout=timeout, env={"DEBIAN_FRONTEND": "noninteractive"})
        if r.returncode == 0 or "lock" not in r.stderr or time.time() > deadline:
            return r
        time.sleep(2)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def metric_sum(text, name, **labels):
    total, found = 0.0, False
    for line in text.splitlines():
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$', line)
        if not m or m.group(1) != name:
            continue
        got = dict(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
            found = True
    return total if found else None


def exe(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def get_metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def gputime_from(binary):
    """--gpu-time run by an installed binary with nothing beside it: the libraries it gives
    the command are the installed ones (the tree's .output is not on its way), so the
    stand-in CUPTI's scripted kernels and the stand-in NCCL's collectives reach it only if
    it found them in PREFIX/lib/gpuprobe. The scripts are the truth."""
    kernels = {"_Z6matmulPfS_i": (7, 41000), "_Z3addPfS_": (13, 2500)}
    s = ";".join(f"kernel,{k},{n},{ns},4,1,1,128,1,1" for k, (n, ns) in kernels.items())
    base = ["--gpu-time", "--json", "--cupti", FAKECUPTI, "--libcuda", gp.FAKECUDA]

    def run(cmd, env=None):
        return gp.run([binary] + gp.reports_on_stdout(base, cmd) + ["--"] + cmd, env=gp._with_state(env), timeout=120)

    r = run([app("launch_app"), "--n", "20"], env={"FAKECUPTI_SCRIPT": s})
    eq(r.returncode, 0, f"{binary} --gpu-time: {r.stderr[-1500:]}")
    check("not found" not in r.stderr, f"the libraries found: {r.stderr[-800:]}")
    t = truth(r.stderr)
    p = gp.proc(gp.final(r.stdout, "gputime"), t["pid"])
    got = {k["name"]: (k["launches"], k["gpu_ns"]) for k in p["kernels"]}
    eq(got, {k: (n, n * ns) for k, (n, ns) in kernels.items()}, "the installed CUPTI library's records")
    r = run([app("nccl_launcher.sh"), "2", "--n", "2", "--subset", "basic"])
    eq(r.returncode, 0, f"{binary} --gpu-time over NCCL: {r.stderr[-1500:]}")
    t = truth(r.stderr)
    rep = gp.final(r.stdout, "gputime")
    for rk in t["ranks"]:
        want = sum(c["calls"] for cm in rk["comms"] for c in cm["collectives"] if c["count"])
        got = sum(x["calls"] for x in gp.proc(rep, rk["pid"])["collectives"])
        eq(got, want, f"rank {rk['rank']}: every collective, from the installed profiler plugin")


def test_make_install_destdir():
    dest = tempfile.mkdtemp(prefix="gp-install-")
    try:
        r = gp.run(["make", "--no-print-directory", "install", f"DESTDIR={dest}", "PREFIX=/opt/gp"],
                   timeout=300, cwd=ROOT)
        check(r.returncode == 0, f"make install: {r.stdout[-800:]} {r.stderr[-800:]}")
        for path, mode in (("opt/gp/bin/gpuprobe", 0o755), ("opt/gp/share/man/man8/gpuprobe.8", 0o644),
                           ("opt/gp/lib/systemd/system/gpuprobe.service", 0o644),
                           ("etc/gpuprobe/gpuprobe.conf", 0o644)) + \
                tuple(("opt/gp/lib/gpuprobe/" + n, 0o644) for n in INJECT_LIBS):
            st = os.stat(os.path.join(dest, path))
            eq(st.st_mode & 0o7777, mode, f"{path} mode")
        with open(os.path.join(dest, "opt/gp/lib/systemd/system/gpuprobe.service")) as f:
            unit = f.read()
        check("\nExecStart=/opt/gp/bin/gpuprobe daemon --config /etc/gpuprobe/gpuprobe.conf\n" in unit,
              "the unit starts the installed binary")
        gputime_from(os.path.join(dest, "opt/gp/bin/gpuprobe"))
        # an admin's settings survive a second install
        with open(os.path.join(dest, "etc/gpuprobe/gpuprobe.conf"), "a") as f:
            f.write("# mine\n")
        r = gp.run(["make", "--no-print-directory", "install", f"DESTDIR={dest}", "PREFIX=/opt/gp"],
                   timeout=300, cwd=ROOT)
        eq(r.returncode, 0, "second make install")
        with open(os.path.join(dest, "etc/gpuprobe/gpuprobe.conf")) as f:
            check(f.read().endswith("# mine\n"), "/etc/gpuprobe/gpuprobe.conf kept")
        r = gp.run(["make", "--no-print-directory", "uninstall", f"DESTDIR={dest}", "PREFIX=/opt/gp"],
                   timeout=60, cwd=ROOT)
        eq(r.returncode, 0, "make uninstall")
        check(not os.path.exists(os.path.join(dest, "opt/gp/bin/gpuprobe")), "binary removed")
        check(not os.path.exists(os.path.join(dest, "opt/gp/lib/gpuprobe")), "the libraries and their folder removed")
        check(os.path.exists(os.path.join(dest, "etc/gpuprobe/gpuprobe.conf")), "settings kept by uninstall")
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def lintian_tags(deb):
    r = gp.run(["lintian", "--tag-display-limit", "0", deb], timeout=600)
    tags = re.findall(r"^([EW]): gpuprobe[^:]*: (\S+)", r.stdout, re.M)
    return r, tags


def test_deb_install_check_scrape_purge():
    if not os.path.exists("/var/lib/dpkg/status") or not os.access("/usr/bin", os.W_OK):
        # tests/vm's guest: the host's /usr and /etc over read-only 9p, no /var/lib/dpkg
        gp.skip("no package can be installed here: no dpkg database or a read-only /usr")
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _deb_cycle()


def _deb_cycle():
    made_policy = daemon = None
    cg, rel = Cgroups(), f"gp-package-{uuid.uuid4().hex[:8]}"  # its workload's own series
    if installed_version():
        if not os.path.exists(MARK):
            raise gp.Failure(f"gpuprobe {installed_version()} is installed here, not by this test: "
                             "not touching it (dpkg --purge gpuprobe to run this test)")
        dpkg(["--purge", "gpuprobe"])  # left by an interrupted run of this test
    r = gp.run(["make", "--no-print-directory", "deb"], timeout=600, cwd=ROOT)
    check(r.returncode == 0, f"make deb: {r.stdout[-1500:]} {r.stderr[-1500:]}")
    deb = os.path.join(ROOT, ".output", "deb", "gpuprobe.deb")
    check(os.path.exists(deb), "the .deb")
    version = gp.run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
    binver = gp.run([gp.GPUPROBE, "--version"]).stdout.strip()
    eq(f"gpuprobe {version}", binver, "package version is the project's")

    lr, tags = lintian_tags(deb)
    errors = [t for s, t in tags if s == "E"]
    eq(errors, [], f"lintian errors ({lr.stdout[-1500:]})")
    with open(README) as f:
        documented = f.read()
    for s, t in tags:
        check(f"`{t}`" in documented, f"lintian warning {t} is not listed in examples/packaging/README.md")
    print(f"# lintian: {len(tags)} warnings, no errors", flush=True)

    systemd_pid1 = os.path.isdir("/run/systemd/system")
    if systemd_pid1 and not os.path.exists(POLICY):
        # where systemd runs, postinst would start the daemon: forbid it for this test
        with open(POLICY, "w") as f:
            f.write("#!/bin/sh\n# gpuprobe test_package.py: no service starts\nexit 101\n")
        os.chmod(POLICY, 0o755)
        made_policy = POLICY
    try:
        open(MARK, "w").close()
        r = dpkg(["-i", deb])
        check(r.returncode == 0, f"dpkg -i: {r.stdout} {r.stderr}")
        eq(installed_version(), version, "installed version")
        for path in INSTALLED:
            check(os.path.exists(path), f"{path} installed")
        eq(os.stat("/usr/bin/gpuprobe").st_mode & 0o7777, 0o755, "binary mode")
        with open("/lib/systemd/system/gpuprobe.service") as f:
            check("\nExecStart=/usr/bin/gpuprobe daemon --config /etc/gpuprobe/gpuprobe.conf\n" in f.read(),
                  "the unit starts /usr/bin/gpuprobe")
        conff = gp.run(["dpkg-query", "-W", "-f=${Conffiles}", "gpuprobe"]).stdout
        check("/etc/gpuprobe/gpuprobe.conf" in conff, f"/etc/gpuprobe/gpuprobe.conf is a conffile: {conff!r}")
        # enabled the Debian way, whether or not systemd runs
        eq(os.readlink(WANTS), "/lib/systemd/system/gpuprobe.service", "multi-user.target.wants link")
        check(os.path.exists(DSH_STATE), "deb-systemd-helper remembers the enablement")
        if shutil.which("systemd-analyze"):
            r = gp.run(["systemd-analyze", "verify", "/lib/systemd/system/gpuprobe.service"], timeout=60)
            eq(r.returncode, 0, f"systemd-analyze verify: {r.stderr}")
        if not systemd_pid1:
            # nothing started it: no installed gpuprobe runs
            running = [p for p in os.listdir("/proc") if p.isdigit() and exe(p) == "/usr/bin/gpuprobe"]
            eq(running, [], "no daemon started without systemd")

        for n in INJECT_LIBS:
            eq(os.stat("/usr/lib/gpuprobe/" + n).st_mode & 0o7777, 0o644, f"{n} mode")
        gputime_from("/usr/bin/gpuprobe")

        r = gp.run(["/usr/bin/gpuprobe", "check"], timeout=60)
        eq(r.returncode, 0, f"gpuprobe check: {r.stdout}{r.stderr}")
        for item in ("ok kernel BTF", "ok uprobes", "ok privileges"):
            check(item in r.stdout, f"gpuprobe check says {item!r}: {r.stdout}")

        # the installed daemon with the installed settings (the stand-in driver and a
        # free port given on the command line, which comes after the file)
        port = free_port()
        daemon = gp.Background(["/usr/bin/gpuprobe", "daemon", "--config", "/etc/gpuprobe/gpuprobe.conf",
                                "--libcuda", gp.FAKECUDA, "--listen", f"127.0.0.1:{port}"])
        daemon.wait_for("listening on", where="stderr")
        cg.make(rel)
        w = gp.run(in_cgroup(cg, rel, [app("memleak_app"), "--allocs", "10", "--leaks", "3"]), env=ENV)
        eq(w.returncode, 0, "workload")
        t = truth(w.stderr)
        deadline, got = time.time() + 10, None
        while time.time() < deadline:
            got = metric_sum(get_metrics(port), "gpuprobe_cuda_alloc_calls_total", cgroup="/" + rel)
            if got == t["allocs"]:
                break
            time.sleep(0.2)
        eq(got, t["allocs"], "allocations counted by the installed daemon")
        daemon.signal(signal.SIGTERM)
        eq(daemon.wait(timeout=30), 0, "installed daemon exit status on SIGTERM")
        daemon = None
    finally:
        if daemon:
            daemon.kill()
        r = dpkg(["--purge", "gpuprobe"])
        if os.path.exists(MARK):
            os.unlink(MARK)
        if made_policy:
            os.unlink(made_policy)
        cg.cleanup()
    eq(r.returncode, 0, f"dpkg --purge: {r.stdout} {r.stderr}")
    eq(installed_version(), None, "purged")
    left = [p for p in INSTALLED + [WANTS, DSH_STATE] if os.path.lexists(p)]
    eq(left, [], "files left after purge")
    gp.assert_nothing_attached()


if __name__ == "__main__":
    gp.main([test_make_install_destdir, test_deb_install_check_scrape_purge])
