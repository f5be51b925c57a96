# SPDX-License-Identifier: BSD-3-Clause
"""Process trees (issue 13): a command's children, -p with several PIDs and --tree,
--comm, --cgroup, and exec starting a clean record. Real gpuprobe, real BPF, the stand-in
driver; every count is checked against the workloads' own truth lines."""
import os
import signal
import subprocess
import tempfile
import time

import gp
from gp import FAKECUDA, app, check, eq

BASE = ["--cudatrace", "--memleak", "--show-allocs", "--json", "--libcuda", FAKECUDA]


def images(report, pid):
    """Every record of pid in a report (one per process image), oldest image first."""
    return sorted([p for p in report["processes"] if p["pid"] == pid], key=lambda p: not p["exec"])


def one(report, pid):
    rs = images(report, pid)
    eq(len(rs), 1, f"records of PID {pid}")
    return rs[0]


def kernels(ct_proc):
    return {k["name"]: k["launches"] for k in ct_proc["kernels"]}


def leaked(ml_proc):
    return sorted(a["address"] for s in ml_proc["stacks"] for a in s["allocs"])


def check_fork_tree(ct, ml, tree, root=None, skip_parent=False):
    """Each process of a fork_app truth exact in both modes, under its tree's root."""
    for t in tree["processes"]:
        if skip_parent and t["pid"] == tree["pid"]:
            continue
        c, m = one(ct, t["pid"]), one(ml, t["pid"])
        eq(c["comm"], t["comm"], f"PID {t['pid']} comm")
        eq(kernels(c), {k: v["launches"] for k, v in t["kernels"].items()}, f"PID {t['pid']} kernels")
        eq(c["launches"], t["launches"], f"PID {t['pid']} launches")
        eq(m["outstanding_allocs"], t["leaks"], f"PID {t['pid']} leaks")
        eq(m["outstanding_bytes"], t["leaked_bytes"], f"PID {t['pid']} leaked bytes")
        eq(leaked(m), sorted(t["leaked_addresses"]), f"PID {t['pid']} leaked addresses")
        eq(m["allocs_total"], t["allocs"], f"PID {t['pid']} allocations")
        if root is not None:
            eq(c["root"], root, f"PID {t['pid']} tree root")
            eq(m["root"], root, f"PID {t['pid']} tree root (memleak)")


def check_exec(ct, ml, ex):
    """exec_app: one record per image, the first ended by its exec; nothing carried over."""
    pid = ex["pid"]
    cs, ms = images(ct, pid), images(ml, pid)
    eq(len(cs), 2, f"cudatrace records of exec'ing PID {pid}")
    eq(len(ms), 2, f"memleak records of exec'ing PID {pid}")
    for c, m, t in zip(cs, ms, ex["images"]):
        eq(kernels(c), {k: v["launches"] for k, v in t["kernels"].items()}, f"image {t['image']} kernels")
        eq(m["outstanding_allocs"], t["leaks"], f"image {t['image']} leaks")
        eq(leaked(m), sorted(t["leaked_addresses"]), f"image {t['image']} leaked addresses")
        eq(m["allocs_total"], t["allocs"], f"image {t['image']} allocations")
        eq(c["comm"], t["comm"], f"image {t['image']} comm")
    eq([c["exec"] for c in cs], [True, False], "the first image ended by exec")
    eq([m["exec"] for m in ms], [True, False], "the first image ended by exec (memleak)")


def test_launcher_script_children_fork_and_exec():
    """A shell starts fork_app (which forks two CUDA children) and exec_app (which execs
    another CUDA program): every process exact, the job's totals under the shell."""
    r = gp.gpuprobe(BASE, cmd=[app("tree_launcher.sh")])
    eq(r.returncode, 0, f"exit status ({r.stderr[-800:]})")
    t = gp.truth(r.stderr)
    eq(t["exit_codes"], [0, 0], "workloads' exit codes")
    ct, ml = gp.final(r.stdout, "cudatrace"), gp.final(r.stdout, "memleak")
    fork_tree, ex = t["workloads"]
    check_fork_tree(ct, ml, fork_tree, root=t["pid"])
    check_exec(ct, ml, ex)
    want_launches = sum(p["launches"] for p in fork_tree["processes"]) + \
        sum(i["launches"] for i in ex["images"])
    want_leaks = sum(p["leaks"] for p in fork_tree["processes"]) + sum(i["leaks"] for i in ex["images"])
    jobs = {j["root"]: j for j in ct["jobs"]}
    eq(list(jobs), [t["pid"]], "one job, rooted at the shell")
    eq(jobs[t["pid"]]["launches"], want_launches, "the job's launches")
    eq(jobs[t["pid"]]["process_images"], len(fork_tree["processes"]) + 2, "the job's process images")
    eq({j["root"]: j["outstanding_allocs"] for j in ml["jobs"]}, {t["pid"]: want_leaks}, "the job's leaks")
    # the exec'd image's exit report came as it happened, and said it was an exec
    exits = [x for x in gp.reports(r.stdout, "exit") for p in x["processes"] if p["pid"] == ex["pid"]]
    eq([p["exec"] for x in exits for p in x["processes"]], [True, False], "exit reports of the exec'ing PID")


def test_text_report_groups_by_job():
    r = gp.gpuprobe(["--cudatrace", "--libcuda", FAKECUDA], cmd=[app("tree_launcher.sh")])
    eq(r.returncode, 0, f"exit status ({r.stderr[-800:]})")
    t = gp.truth(r.stderr)
    total = sum(p["launches"] for p in t["workloads"][0]["processes"]) + \
        sum(i["launches"] for i in t["workloads"][1]["images"])
    line = [l for l in r.stdout.splitlines() if l.startswith(f"job PID {t['pid']} ")]
    eq(len(line), 1, f"job lines in\n{r.stdout[-1500:]}")
    check(f", {total} launches," in line[0], f"job total {total} not in {line[0]!r}")
    check(" before its exec:" in r.stdout, "the exec'd image is marked in the text report")


def test_exec_starts_clean_record():
    """exec_app alone: the second image reuses the first's addresses and handles' values;
    none of the first image's leaks or names is carried over."""
    r = gp.gpuprobe(BASE, cmd=[app("exec_app")])
    eq(r.returncode, 0, f"exit status ({r.stderr[-800:]})")
    ex = gp.truth(r.stderr)
    check_exec(gp.final(r.stdout, "cudatrace"), gp.final(r.stdout, "memleak"), ex)


def test_pid_list_with_tree_follows_new_children():
    """-p A,B --tree on two running workloads: fork_app's children, forked after the
    attach, are followed; launch_app is counted as well."""
    fa = gp.start_app([app("fork_app"), "--wait"])
    la = gp.start_app([app("launch_app"), "--wait"])
    g = gp.start_gpuprobe(BASE + ["-p", f"{fa.pid},{la.pid}", "--tree"])
    try:
        fa.signal(signal.SIGUSR1)
        la.signal(signal.SIGUSR1)
        eq(fa.wait(), 0, "fork_app exit")
        eq(la.wait(), 0, "launch_app exit")
        eq(g.wait(), 0, f"gpuprobe ends when its targets and their trees have ({g.stderr()[-600:]})")
    finally:
        for b in (fa, la, g):
            b.kill()
    check(f"PIDs {fa.pid},{la.pid} and their descendants" in g.stderr(), f"announce: {g.stderr()[:300]}")
    ct, ml = gp.final(g.stdout(), "cudatrace"), gp.final(g.stdout(), "memleak")
    tree = gp.truth(fa.stderr())
    check_fork_tree(ct, ml, tree, root=fa.pid)
    lt = gp.truth(la.stderr())
    lp = one(ct, la.pid)
    eq(lp["root"], la.pid, "launch_app is its own root")
    eq(sum(k["launches"] for k in lt["kernels"].values()) + lt["null_launches"], lp["launches"],
       "launch_app launches after the attach")
    eq({j["root"] for j in ct["jobs"]}, {fa.pid, la.pid}, "one job per -p root")


def test_repeated_p_without_tree_skips_children():
    """-p A -p B (repeatable): both PIDs traced, but without --tree not their children."""
    fa = gp.start_app([app("fork_app"), "--wait"])
    la = gp.start_app([app("launch_app"), "--wait"])
    g = gp.start_gpuprobe(BASE + ["-p", str(fa.pid), "-p", str(la.pid)])
    try:
        fa.signal(signal.SIGUSR1)
        la.signal(signal.SIGUSR1)
        fa.wait()
        la.wait()
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-600:]})")
    finally:
        for b in (fa, la, g):
            b.kill()
    ct = gp.final(g.stdout(), "cudatrace")
    tree = gp.truth(fa.stderr())
    eq(sorted({p["pid"] for p in ct["processes"]}), sorted([fa.pid, la.pid]), "only the two PIDs")
    parent = [p for p in tree["processes"] if p["pid"] == fa.pid][0]
    eq(one(ct, fa.pid)["launches"], parent["launches"], "fork_app's own launches")


def test_tree_seeds_running_descendants():
    """-p PARENT --tree where the children already run (each waiting before its CUDA
    work): they are found through /proc and counted exactly."""
    fa = gp.Background([app("fork_app"), "--wait-children", "--children", "3"])
    try:
        deadline = time.time() + 20
        while fa.stdout().count("READY") < 3 and time.time() < deadline:
            time.sleep(0.05)
        kids = [int(l.split()[1]) for l in fa.stdout().splitlines() if l.startswith("READY")]
        eq(len(kids), 3, "children waiting")
        g = gp.start_gpuprobe(BASE + ["-p", str(fa.pid), "--tree"])
        for k in kids:
            os.kill(k, signal.SIGUSR1)
        eq(fa.wait(), 0, "fork_app exit")
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-600:]})")
    finally:
        fa.kill()
    ct, ml = gp.final(g.stdout(), "cudatrace"), gp.final(g.stdout(), "memleak")
    # the parent did its CUDA work before the attach: only the children are compared
    check_fork_tree(ct, ml, gp.truth(fa.stderr()), root=fa.pid, skip_parent=True)


def test_comm_filter_node_wide():
    """--comm fork_app: fork_app and its children (renamed fork_child) are traced; a
    launch_app run beside it is not."""
    g = gp.start_gpuprobe(BASE + ["--comm", "fork_app"])
    try:
        fa = gp.run([app("fork_app")])
        la = gp.run([app("launch_app")])
        eq(fa.returncode, 0, "fork_app exit")
        eq(la.returncode, 0, "launch_app exit")
        g.signal(signal.SIGINT)
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-600:]})")
    finally:
        g.kill()
    check("tracing processes named fork_app" in g.stderr(), f"announce: {g.stderr()[:300]}")
    tree = gp.truth(fa.stderr)
    ct, ml = gp.final(g.stdout(), "cudatrace"), gp.final(g.stdout(), "memleak")
    eq(sorted({p["pid"] for p in ct["processes"]}), sorted(p["pid"] for p in tree["processes"]),
       "only fork_app's tree")
    check_fork_tree(ct, ml, tree, root=tree["pid"])


def _cgroup_root():
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split()
                # unified (/sys/fs/cgroup) or hybrid (/sys/fs/cgroup/unified), as gpuprobe looks
                if " - cgroup2 " in line and parts[4] in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    return parts[4]
    except OSError:
        pass
    return None


def test_cgroup_filter():
    """--cgroup PATH: a workload started in that cgroup v2 directory is traced from its
    exec; one outside it is not."""
    root = _cgroup_root()
    if not root:
        print("# SKIP: no cgroup v2 hierarchy at /sys/fs/cgroup")
        return
    name = f"gpuprobe-test-{os.getpid()}"
    path = os.path.join(root, name)
    os.mkdir(path)
    try:
        g = gp.start_gpuprobe(BASE + ["--cgroup", "/" + name])
        try:
            inside = gp.run(["sh", "-c", f'echo $$ > {path}/cgroup.procs && exec "$0"', app("launch_app")])
            outside = gp.run([app("launch_app")])
            eq(inside.returncode, 0, f"workload in the cgroup ({inside.stderr[-300:]})")
            eq(outside.returncode, 0, "workload outside")
            g.signal(signal.SIGINT)
            eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-600:]})")
        finally:
            g.kill()
        t = gp.truth(inside.stderr)
        ct = gp.final(g.stdout(), "cudatrace")
        eq([p["pid"] for p in ct["processes"]], [t["pid"]], "only the workload in the cgroup")
        eq(ct["processes"][0]["launches"],
           sum(k["launches"] for k in t["kernels"].values()) + t["null_launches"], "its launches")
    finally:
        for _ in range(50):
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.1)


def test_dead_pid_in_list_warns_and_traces_the_others():
    """A PID list with a dead PID: a warning names it, the live ones are traced (a job's
    PIDs go stale while typed; tracing none would lose the run)."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    la = gp.start_app([app("launch_app"), "--wait"])
    g = gp.start_gpuprobe(BASE + ["-p", f"{dead.pid},{la.pid}"])
    try:
        la.signal(signal.SIGUSR1)
        la.wait()
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-600:]})")
    finally:
        la.kill()
        g.kill()
    check(f"no process with PID {dead.pid}: tracing the others" in g.stderr(), f"warning: {g.stderr()[:400]}")
    ct = gp.final(g.stdout(), "cudatrace")
    eq([p["pid"] for p in ct["processes"]], [la.pid], "the live PID traced")


def test_bad_target_input():
    dead = subprocess.Popen(["true"])
    dead.wait()
    cases = [
        (["-p", f"{dead.pid},{dead.pid}"], f"no process with PID {dead.pid}"),
        (["-p", "1", "--tree"], "--tree on PID 1"),
        (["--tree"], "--tree needs -p"),
        (["-p", str(os.getpid()), "--comm", "x"], "-p excludes --comm"),
        (["--cgroup", "/no/such/cgroup-gpuprobe"], "no such cgroup v2 directory"),
        (["-p", "12,"], "invalid PID"),
        (["-p", "1,x"], "invalid PID: x"),
    ]
    for args, msg in cases:
        r = gp.gpuprobe(BASE + args, timeout=30)
        gp.one_error_line(r, msg)
    r = gp.gpuprobe(BASE + ["--comm", "x"], cmd=["true"])
    gp.one_error_line(r, "a command excludes --comm")
    gp.assert_nothing_attached()


if __name__ == "__main__":
    gp.main([
        test_launcher_script_children_fork_and_exec,
        test_text_report_groups_by_job,
        test_exec_starts_clean_record,
        test_pid_list_with_tree_follows_new_children,
        test_repeated_p_without_tree_skips_children,
        test_tree_seeds_running_descendants,
        test_comm_filter_node_wide,
        test_cgroup_filter,
        test_dead_pid_in_list_warns_and_traces_the_others,
        test_bad_target_input,
    ])
