# SPDX-License-Identifier: BSD-3-Clause
"""Kubernetes attribution on real cgroups: cgroup v2 folders named as the kubelet names
them (systemd and cgroupfs drivers; containerd, CRI-O and Docker), stand-in workloads
moved into them, a kubelet-style log tree for names, and src/lib/k8s.c's answer for each
process (through .output/unit/test_k8s --pid). Also a reader inside a private cgroup
namespace (gpuprobe in a pod) and a delegated subtree posing as a pod. Every cgroup made
here is removed again. Standard library only."""
import errno
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

import gp
from gp import ROOT, app, check, eq

TEST_K8S = os.path.join(ROOT, ".output", "unit", "test_k8s")
ENV = {"LD_LIBRARY_PATH": gp.FAKECUDA_DIR}


def cgroup2_root():
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or .../unified on a
    hybrid host), with its root (not a sub-folder) mounted there."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            sep = parts.index("-")
            if parts[sep + 1] == "cgroup2" and parts[3] == "/":
                return parts[4]
    raise gp.Failure("no cgroup v2 hierarchy mounted (/proc/self/mountinfo)")


class Cgroups:
    """Makes cgroups under the v2 root, remembering which folders it created, and
    removes exactly those (deepest first) at the end."""

    def __init__(self):
        self.root = cgroup2_root()
        self.made = []

    def make(self, rel):
        path = self.root
        for comp in rel.strip("/").split("/"):
            path = os.path.join(path, comp)
            try:
                os.mkdir(path)
                self.made.append(path)
            except FileExistsError:
                pass
        return path

    def move(self, pid, rel):
        with open(os.path.join(self.root, rel.strip("/"), "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def cleanup(self):
        """A cgroup of a process just reaped may stay busy a moment: retry for 5 s."""
        left = []
        for path in reversed(self.made):
            deadline = time.time() + 5
            while True:
                try:
                    os.rmdir(path)
                    break
                except OSError as e:
                    if e.errno == errno.ENOENT:
                        break
                    if e.errno != errno.EBUSY or time.time() > deadline:
                        left.append(f"{path}: {e.strerror}")
                        break
                    time.sleep(0.05)
        self.made = []
        return left


def workload():
    """A stand-in CUDA process held at READY. Not "memleak_app --wait" on its command
    line: tests/integration/test_errors.py pkills that pattern node-wide, which killed
    these workloads when another checkout's tests ran beside this one."""
    return gp.start_app([app("memleak_app"), "--allocs", "4", "--wait"], env=ENV)


def cid():
    return uuid.uuid4().hex + uuid.uuid4().hex


def ask(pid, logs=None, prefix=()):
    argv = [*prefix, TEST_K8S, "--pid", str(pid)]
    if logs:
        argv += ["--pods", os.path.join(logs, "pods"), "--containers", os.path.join(logs, "containers")]
    r = gp.run(argv, timeout=20)
    check(r.returncode == 0, f"test_k8s --pid {pid}: {r.stderr}")
    return json.loads(r.stdout)


def kubelet_logs(logs, ns, pod, uid, container, container_id):
    """What the kubelet writes for a running container: its log folder and the
    /var/log/containers link."""
    d = os.path.join(logs, "pods", f"{ns}_{pod}_{uid}", container)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "0.log"), "w").close()
    os.makedirs(os.path.join(logs, "containers"), exist_ok=True)
    os.symlink(os.path.join(d, "0.log"),
               os.path.join(logs, "containers", f"{pod}_{ns}_{container}-{container_id}.log"))


def pod_cases():
    """(name, cgroup relative to the v2 root, expected answer) for five pods."""
    out = []
    for driver, runtime, qos in (("systemd", "containerd", "Burstable"),
                                 ("systemd", "cri-o", "Guaranteed"),
                                 ("systemd", "docker", "BestEffort"),
                                 ("cgroupfs", "", "Burstable"),
                                 ("cgroupfs", "cri-o", "Guaranteed")):
        uid, c = str(uuid.uuid4()), cid()
        q = {"Burstable": "burstable", "BestEffort": "besteffort", "Guaranteed": ""}[qos]
        if driver == "systemd":
            scope = {"containerd": "cri-containerd-", "cri-o": "crio-", "docker": "docker-"}[runtime] + c + ".scope"
            u = uid.replace("-", "_")
            if q:
                path = f"kubepods.slice/kubepods-{q}.slice/kubepods-{q}-pod{u}.slice/{scope}"
            else:
                path = f"kubepods.slice/kubepods-pod{u}.slice/{scope}"
        else:
            leaf = ("crio-" + c) if runtime == "cri-o" else c
            path = f"kubepods/{q + '/' if q else ''}pod{uid}/{leaf}"
        name = f"{driver}-{runtime or 'containerd-or-docker'}-{qos.lower()}"
        out.append((name, path, {"pod_uid": uid, "container_id": c, "runtime": runtime, "qos": qos,
                                 "unit": "", "namespace": "gpu-jobs", "pod": f"job-{len(out)}",
                                 "container": "cuda"}))
    return out


def test_kubelet_cgroups_both_drivers():
    cg = Cgroups()
    logs = tempfile.mkdtemp(prefix="gp-k8s-logs-")
    apps = []
    try:
        cases = pod_cases()
        for name, path, want in cases:
            kubelet_logs(logs, want["namespace"], want["pod"], want["pod_uid"], "cuda", want["container_id"])
            cg.make(path)
            a = workload()
            apps.append(a)
            cg.move(a.pid, path)
            got = ask(a.pid, logs)
            eq(got["cgroup"], "/" + path, f"{name}: the process's cgroup")
            for k, v in want.items():
                eq(got[k], v, f"{name}: {k}")
        # Without the log folders (not mounted): ids and classes stay, names are empty.
        got = ask(apps[0].pid)
        eq((got["pod_uid"], got["namespace"], got["pod"]), (cases[0][2]["pod_uid"], "", ""),
           "no log folders: uid only")
        # The workloads run on, attributed, and finish normally.
        for a in apps:
            a.signal(signal.SIGUSR1)
            eq(a.wait(timeout=30), 0, "workload exit status")
    finally:
        for a in apps:
            a.kill()
        left = cg.cleanup()
        shutil.rmtree(logs, ignore_errors=True)
    eq(left, [], "cgroups left behind")


def test_systemd_unit_and_delegated_fake():
    cg = Cgroups()
    tag = uuid.uuid4().hex[:8]
    unit = f"gpuprobe-test-{tag}.service"
    fake = (f"system.slice/{unit}/kubepods.slice/kubepods-burstable.slice/"
            f"kubepods-burstable-pod{str(uuid.uuid4()).replace('-', '_')}.slice/cri-containerd-{cid()}.scope")
    apps = []
    try:
        cg.make(f"system.slice/{unit}")
        a = workload()
        apps.append(a)
        cg.move(a.pid, f"system.slice/{unit}")
        got = ask(a.pid)
        eq((got["unit"], got["pod_uid"], got["container_id"]), (unit, "", ""), "a plain service")
        # A subtree under a service (as systemd delegates to users and rootless
        # runtimes) named like a pod is not a pod: the service is what it is.
        cg.make(fake)
        b = workload()
        apps.append(b)
        cg.move(b.pid, fake)
        got = ask(b.pid)
        eq((got["unit"], got["pod_uid"], got["container_id"], got["qos"]), (unit, "", "", ""),
           "a pod-shaped cgroup under a service")
    finally:
        for a in apps:
            a.kill()
        left = cg.cleanup()
    eq(left, [], "cgroups left behind")


def test_reader_in_private_cgroup_namespace():
    """gpuprobe as a DaemonSet pod: its own container cgroup is its cgroup namespace's
    root, so other pods' paths begin with '..'."""
    if not shutil.which("unshare"):
        raise gp.Failure("unshare (util-linux) is missing")
    cg = Cgroups()
    me_uid, other_uid, same_uid = (str(uuid.uuid4()) for _ in range(3))
    me, other, same, sibling = cid(), cid(), cid(), cid()
    u = lambda x: x.replace("-", "_")
    mine = f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u(me_uid)}.slice/cri-containerd-{me}.scope"
    sib = f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u(me_uid)}.slice/cri-containerd-{sibling}.scope"
    theirs = f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{u(other_uid)}.slice/cri-containerd-{other}.scope"
    same_qos = f"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u(same_uid)}.slice/cri-containerd-{same}.scope"
    apps = []
    try:
        for p in (mine, sib, theirs, same_qos):
            cg.make(p)
        targets = {}
        for name, p in (("other QoS", theirs), ("same QoS", same_qos), ("own pod", sib)):
            a = workload()
            apps.append(a)
            cg.move(a.pid, p)
            targets[name] = a.pid
        # The reader moves itself into its container's cgroup, then enters a new cgroup
        # namespace rooted there (what containerd does for a pod's container).
        prefix = ["sh", "-c", f'echo $$ > "{cg.root}/{mine}/cgroup.procs" && exec unshare --cgroup "$@"', "sh"]
        got = ask(targets["other QoS"], prefix=prefix)
        check(got["cgroup"].startswith("/../../../kubepods-besteffort.slice/"),
              f"a relative path from inside the namespace: {got['cgroup']}")
        eq((got["pod_uid"], got["container_id"], got["runtime"], got["qos"]),
           (other_uid, other, "containerd", "BestEffort"), "another pod, another QoS class")
        got = ask(targets["same QoS"], prefix=prefix)
        check(got["cgroup"].startswith("/../../kubepods-burstable-pod"), f"relative: {got['cgroup']}")
        eq((got["pod_uid"], got["container_id"], got["qos"]), (same_uid, same, "Burstable"),
           "another pod of the same QoS class")
        got = ask(targets["own pod"], prefix=prefix)
        eq(got["cgroup"], f"/../cri-containerd-{sibling}.scope", "a sibling container's path")
        eq((got["pod_uid"], got["container_id"]), ("", sibling), "a sibling container: its id")
    finally:
        for a in apps:
            a.kill()
        left = cg.cleanup()
    eq(left, [], "cgroups left behind")


if __name__ == "__main__":
    gp.main([test_kubelet_cgroups_both_drivers, test_systemd_unit_and_delegated_fake,
             test_reader_in_private_cgroup_namespace])
