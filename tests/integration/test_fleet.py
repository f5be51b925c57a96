# SPDX-License-Identifier: BSD-3-Clause
"""gpuprobe daemon on a fleet (issue 18), end to end with real BPF, the stand-in driver and
a real Prometheus server (Debian's prometheus package):

- short jobs: 30 stand-in processes of under a second each, in a cgroup of their own,
  while Prometheus scrapes every second: the sum of gpuprobe_cuda_kernel_launches_total
  rises by exactly the launches they made, sum(rate(...[1m])) is non-zero while they run,
  the number of series stays flat as more processes come and go; then every query of
  the Grafana dashboard returns data from that Prometheus;
- gauges of an exited process leave at its exit, its counts stay;
- a worker's own name, not its launcher's; --per-process-series and its bound;
- Kubernetes attribution in the series: real cgroups named as the kubelet names them
  (both drivers, three runtimes), a kubelet-style log tree, short processes;
- the endpoint: --web-config (TLS, basic auth; /healthz open) with curl and Prometheus,
  the warning for an exposed endpoint, --config through the option parser, --libcuda
  meaning "instead of discovery" in both front ends.

Every workload runs in a cgroup made for it: other gpuprobe runs on this machine trace
the same stand-in programs, and the default series are per comm and cgroup."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid

import gp
from gp import FAKECUDA, ROOT, app, check, eq, truth
from test_daemon import free_port, get, samples, stop, value
from test_k8s_cgroups import Cgroups, kubelet_logs, pod_cases

ENV = {"LD_LIBRARY_PATH": gp.FAKECUDA_DIR}
LAUNCH = app("launch_app")
MEMLEAK = app("memleak_app")
COPY = app("copy_app")
IOCTL = app("ioctl_app")
FORK = app("fork_app")
DASHBOARD = os.path.join(ROOT, "examples", "grafana", "gpuprobe.json")


def daemon(args, env=ENV, wait=True):
    # exact counts: without the daemon's default --max-overhead 1, which samples the
    # launches of a program as fast as launch_app (its counters then count the calls seen;
    # tests/integration/test_budget.py tests that)
    port = free_port()
    d = gp.Background([gp.GPUPROBE, "daemon", "--max-overhead", "100", "--listen", f"127.0.0.1:{port}", *args],
                      env=env)
    d.port = port
    if wait:
        try:
            d.wait_for("listening on", where="stderr")
        except Exception:
            d.kill()
            raise
    return d


def in_cgroup(cg, rel, argv, env=None):
    """argv run inside cgroup rel: a shell moves itself there, then execs it, so the
    process is in its cgroup from its first instruction (as runc does)."""
    path = os.path.join(cg.root, rel.strip("/"), "cgroup.procs")
    return ["sh", "-c", f'echo $$ > "{path}" && exec "$@"', "sh", *argv]


def launches(t):
    """Every launch call launch_app made (named kernels, NULL and stale handles)."""
    return sum(k["launches"] for k in t["kernels"].values()) + t["null_launches"] + t["stale_launches"]


def own(text, cgroup, name=None):
    """Samples of one cgroup (and family)."""
    return [(n, l, v) for n, l, v in samples(text)
            if l.get("cgroup") == cgroup and (name is None or n == name)]


def wait_value(port, name, want, timeout=10, **labels):
    # x GP_TIME_SLACK: 6.1 under QEMU's TCG read a fork_child's launches at 10 of 30 when
    # 10 s had passed (0209aec's whole suites)
    deadline = time.time() + timeout * gp.TIME_SLACK
    got, text = None, ""
    while time.time() < deadline:
        text = get(port)[1]
        got = value(text, name, **labels)
        if got == want:
            return
        time.sleep(0.2)
    # the series summed, for a sum that is off (which kernel or process holds the difference)
    lines = [l for l in text.splitlines() if l.startswith(name + "{") and
             all(f'{k}="{v}"' in l for k, v in labels.items())]
    raise gp.Failure(f"{name}{labels}: expected {want}, got {got}; its series: {lines[:20]}")


class Prometheus:
    """A real Prometheus server (Debian's) with a config of the test's."""

    def __init__(self, tmp, jobs):
        if not shutil.which("prometheus"):
            raise gp.Failure("prometheus not installed (make deps installs the Debian package)")
        self.port = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" + jobs)
        self.p = gp.Background(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                                f"--web.listen-address=127.0.0.1:{self.port}"])

    def query(self, q):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                body = json.load(resp)
        except (OSError, ValueError):
            return None
        return body["data"]["result"] if body.get("status") == "success" else None

    def scalar(self, q):
        res = self.query(q)
        return float(res[0]["value"][1]) if res and len(res) == 1 else None

    def wait(self, q, want, timeout=30):
        deadline = time.time() + timeout
        got = None
        while time.time() < deadline:
            got = self.scalar(q)
            if got == want:
                return got
            time.sleep(0.5)
        raise gp.Failure(f"Prometheus {q}: expected {want}, got {got}")

    def kill(self):
        self.p.kill()


def job(port):
    return f"  - job_name: gpuprobe\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n"


def run_jobs(cg, rel, n, gap, out, stop_at=None):
    """n launch_app runs in cgroup rel, one after another with gap seconds between:
    appends (truth, seconds it ran) to out."""
    for _ in range(n):
        t0 = time.time()
        r = gp.run(in_cgroup(cg, rel, [LAUNCH]), env=ENV)
        took = time.time() - t0
        if r.returncode != 0:
            out.append((None, r.stderr[-300:]))
            return
        out.append((truth(r.stderr), took))
        time.sleep(gap)


def grafana_queries():
    with open(DASHBOARD) as f:
        dash = json.load(f)
    for p in dash["panels"]:
        for t in p.get("targets", []):  # a row has none
            expr = (t["expr"].replace("$__rate_interval", "1m").replace("$cgroup", ".*")
                    .replace("$namespace", ".*"))
            yield p["title"], expr


def test_short_jobs_scraped_by_prometheus():
    """The done-when test of issue 18, and the dashboard's queries against the same
    Prometheus afterwards (every mode on, a workload for each)."""
    cg = Cgroups()
    rel = f"gp-fleet-{uuid.uuid4().hex[:8]}"
    cgroup = "/" + rel
    tmp = tempfile.mkdtemp(prefix="gp-fleet-prom-")
    d = prom = held = None
    try:
        cg.make(rel)
        # the stand-in NVML (tests/fakenvml) for the dashboard's GPU row: a GPU now, the held
        # workload and an XID once it runs
        nvml_script = os.path.join(tmp, "nvml.script")
        nvml_gpu = "gpu 0 util=60 memused=1048576 memtotal=80000000000 power=300000 temp=50 throttle=0x4"
        with open(nvml_script, "w") as f:
            f.write(nvml_gpu + "\n")
        nvml_env = dict(ENV, LD_LIBRARY_PATH=f"{gp.FAKECUDA_DIR}:{os.path.join(gp.OUT, 'fakenvml')}",
                        FAKENVML_SCRIPT=nvml_script)
        d = daemon(["--memleak", "--cudatrace", "--bandwidth-util", "--ioctl", "--ioctl-dev", "1:mem"], env=nvml_env)
        prom = Prometheus(tmp, job(d.port))
        prom.wait(f'up{{job="gpuprobe",instance="127.0.0.1:{d.port}"}}', 1.0)
        q_sum = f'sum(gpuprobe_cuda_kernel_launches_total{{cgroup="{cgroup}"}})'
        q_rate = f'sum(rate(gpuprobe_cuda_kernel_launches_total{{cgroup="{cgroup}"}}[1m]))'
        eq(prom.query(q_sum), [], "no series of the cgroup before its jobs")
        # 30 jobs over ~15 s, rate() asked of Prometheus while they run
        ran, rates = [], []
        first = threading.Thread(target=run_jobs, args=(cg, rel, 10, 0.4, ran))
        first.start()
        while first.is_alive():
            rates.append(prom.scalar(q_rate))
            time.sleep(1)
        first.join()
        check(all(t for t, _ in ran), f"a job failed: {ran}")
        wait_value(d.port, "gpuprobe_cuda_kernel_launches_total", sum(launches(t) for t, _ in ran),
                   cgroup=cgroup)
        series_10 = len(own(get(d.port)[1], cgroup))
        rest = threading.Thread(target=run_jobs, args=(cg, rel, 20, 0.4, ran))
        rest.start()
        while rest.is_alive():
            rates.append(prom.scalar(q_rate))
            time.sleep(1)
        rest.join()
        check(all(t for t, _ in ran), f"a job failed: {ran}")
        eq(len(ran), 30, "jobs")
        longest = max(took for _, took in ran)
        # (x GP_TIME_SLACK: arm64 under QEMU's TCG, 1.34 s)
        check(longest < 1.0 * gp.TIME_SLACK, f"every job under a second (longest {longest:.2f} s)")
        total = sum(launches(t) for t, _ in ran)
        wait_value(d.port, "gpuprobe_cuda_kernel_launches_total", total, cgroup=cgroup)
        series_30 = len(own(get(d.port)[1], cgroup))
        eq(series_30, series_10, "series of the cgroup after 10 jobs and after 30")
        got = prom.wait(q_sum, float(total))
        peak = max(r for r in rates if r is not None)
        check(peak > 0, f"sum(rate()) from Prometheus while the jobs ran: {rates}")
        inc = prom.scalar(f'sum(increase(gpuprobe_cuda_kernel_launches_total{{cgroup="{cgroup}"}}[5m]))')
        check(inc is not None and inc > 0.9 * total, f"increase() over the run {inc} of {total}")
        pids = {t["pid"] for t, _ in ran}
        text = get(d.port)[1]
        check(not any(f'pid="{p}"' in text for p in pids), "no pid labels by default")
        print(f"#   30 jobs (longest {longest:.2f} s), {total} launches: Prometheus sum {got:.0f}, "
              f"sum(rate[1m]) peak {peak:.1f}/s, increase[5m] {inc:.0f}; {series_30} series of the cgroup "
              f"after 10 jobs and after 30")

        # The dashboard: one workload per mode in the cgroup (memleak_app held running)
        held = gp.Background(in_cgroup(cg, rel, [MEMLEAK, "--allocs", "10", "--leaks", "3", "--hold"]), env=ENV)
        held.wait_for("HELD")
        with open(nvml_script + ".new", "w") as f:
            f.write(f"{nvml_gpu}\nproc 0 {held.pid} mem=8388608 sm=40 memutil=10\n")
        os.rename(nvml_script + ".new", nvml_script)
        wait_value(d.port, "gpuprobe_process_gpu_memory_bytes", 8388608, cgroup=cgroup)
        with open(nvml_script + ".new", "w") as f:  # due at once: the held process is on GPU 0
            f.write(f"{nvml_gpu}\nproc 0 {held.pid} mem=8388608 sm=40 memutil=10\nxid 0 79 0\n")
        os.rename(nvml_script + ".new", nvml_script)
        for argv, env in (([COPY], dict(ENV, FAKECUDA_BW="2e10")), ([IOCTL, "--n", "20"], ENV)):
            r = gp.run(in_cgroup(cg, rel, argv), env=env)
            eq(r.returncode, 0, f"{argv[0]}: {r.stderr[-300:]}")
        time.sleep(4)  # a few scrapes: rate() needs two samples
        empty = []
        for title, expr in grafana_queries():
            res = prom.query(expr)
            if not res:
                empty.append(f"{title}: {expr} -> {res}")
        eq(empty, [], "Grafana panels whose query returned no data")
        print(f"#   {len(list(grafana_queries()))} dashboard queries answered by Prometheus")
        held.signal(signal.SIGUSR1)
        eq(held.wait(), 0, "memleak_app exit")
        stop(d)
    finally:
        for x in (held, prom, d):
            if x:
                x.kill()
        cg.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


def test_exited_gauges_leave_counts_stay():
    cg = Cgroups()
    rel = f"gp-fleet-{uuid.uuid4().hex[:8]}"
    cgroup = "/" + rel
    d = held = None
    try:
        cg.make(rel)
        d = daemon(["--memleak"])
        held = gp.Background(in_cgroup(cg, rel, [MEMLEAK, "--allocs", "10", "--leaks", "3", "--hold"]), env=ENV)
        held.wait_for("HELD")
        t = truth(held.stderr())
        wait_value(d.port, "gpuprobe_cuda_outstanding_allocations", 3, cgroup=cgroup)
        wait_value(d.port, "gpuprobe_cuda_outstanding_bytes", t["leaked_bytes"], cgroup=cgroup, kind="device")
        held.signal(signal.SIGUSR1)
        eq(held.wait(), 0, "memleak_app exit")
        wait_value(d.port, "gpuprobe_cuda_outstanding_allocations", None, timeout=5, cgroup=cgroup)
        text = get(d.port)[1]
        eq(value(text, "gpuprobe_cuda_outstanding_bytes", cgroup=cgroup), None, "outstanding bytes after the exit")
        eq(value(text, "gpuprobe_cuda_alloc_calls_total", cgroup=cgroup), 10, "allocation calls after the exit")
        eq(value(text, "gpuprobe_cuda_free_calls_total", cgroup=cgroup), 7, "free calls after the exit")
        time.sleep(2.5)  # the exited record is forgotten a second after its exit
        eq(value(get(d.port)[1], "gpuprobe_cuda_alloc_calls_total", cgroup=cgroup), 10, "counts after the record went")
        stop(d)
    finally:
        for x in (held, d):
            if x:
                x.kill()
        cg.cleanup()


def by_comm(t, key="launches"):
    """A fork_tree truth's key summed per process name (fork_app, fork_child)."""
    out = {}
    for p in t["processes"]:
        out[p["comm"]] = out.get(p["comm"], 0) + p[key]
    return out


def probes_in(port):
    """One launch_app run, counted: the stand-in libcuda probed (found when a process maps
    it), before a test stops the daemon."""
    w = gp.run([LAUNCH], env=ENV)
    eq(w.returncode, 0, "launch_app")
    wait_value(port, "gpuprobe_cuda_launches_seen_total", launches(truth(w.stderr)), comm="launch_app")


def test_workers_own_comm():
    """fork_app's children rename themselves fork_child: their launches are theirs, not
    their launcher's. They are forked without an exec and live ~0.1 s: their cgroup is
    read at their first allocation record (--memleak)."""
    cg = Cgroups()
    rel = f"gp-fleet-{uuid.uuid4().hex[:8]}"
    cgroup = "/" + rel
    d = None
    try:
        cg.make(rel)
        d = daemon(["--memleak", "--cudatrace"])
        r = gp.run(in_cgroup(cg, rel, [FORK]), env=ENV)
        eq(r.returncode, 0, f"fork_app: {r.stderr[-300:]}")
        want = by_comm(truth(r.stderr))
        for comm, n in want.items():
            wait_value(d.port, "gpuprobe_cuda_kernel_launches_total", n, cgroup=cgroup, comm=comm)
        eq(sorted({l["comm"] for n, l, v in own(get(d.port)[1], cgroup, "gpuprobe_cuda_kernel_launches_total")}),
           sorted(want), "names")
        stop(d)
    finally:
        if d:
            d.kill()
        cg.cleanup()


def test_workers_gone_before_read_keep_their_cgroup():
    """A daemon behind its buffers (stopped while the job runs: SIGSTOP) reads a job's
    records after every one of its processes has exited and been reaped: /proc no longer
    has their cgroup. Each series is still under the job's cgroup, from the cgroup each
    process ended in (kept by the kernel side at its exit), and each lookup is counted.
    Before, fork_app and its workers counted under no cgroup (test_workers_own_comm's
    intermittent 10 of 30 was one worker read after its exit)."""
    cg = Cgroups()
    rel = f"gp-fleet-{uuid.uuid4().hex[:8]}"
    cgroup = "/" + rel
    d = None
    try:
        cg.make(rel)
        d = daemon(["--memleak", "--cudatrace"])
        probes_in(d.port)
        os.kill(d.pid, signal.SIGSTOP)
        try:
            r = gp.run(in_cgroup(cg, rel, [FORK]), env=ENV)
        finally:
            os.kill(d.pid, signal.SIGCONT)
        eq(r.returncode, 0, f"fork_app: {r.stderr[-300:]}")
        t = truth(r.stderr)
        want, allocs = by_comm(t), by_comm(t, "allocs")
        for comm, n in want.items():
            wait_value(d.port, "gpuprobe_cuda_kernel_launches_total", n, cgroup=cgroup, comm=comm)
            wait_value(d.port, "gpuprobe_cuda_alloc_calls_total", allocs[comm], cgroup=cgroup, comm=comm)
        text = get(d.port)[1]
        eq(value(text, "gpuprobe_cgroups_read_after_exit_total", result="found"), len(t["processes"]),
           "processes labelled from the cgroup they ended in")
        eq(value(text, "gpuprobe_cgroups_read_after_exit_total", result="not_found"), 0, "not found")
        stop(d)
    finally:
        if d:
            d.kill()
        cg.cleanup()


def memory_v1_root():
    """Where the cgroup v1 memory hierarchy's root is mounted (a hybrid host), or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            sep = parts.index("-")
            if parts[sep + 1] == "cgroup" and parts[3] == "/" and "memory" in parts[sep + 3].split(","):
                return parts[4]
    return None


def test_zombie_workers_not_labelled_root():
    """On a hybrid host (the kubelet's cgroups in the v1 memory hierarchy, v2 at "/"), an
    exited process its parent has not reaped yet reads "/" on every v1 line of
    /proc/PID/cgroup: workers the daemon read then were labelled cgroup="/" (seen on this
    machine). Now a zombie's "/" is no answer, and the cgroups it ended in (kept at its exit)
    give its labels: fork_app's workers under their job's memory cgroup, none under "/"."""
    mem = memory_v1_root()
    if not mem:
        gp.skip("no cgroup v1 memory hierarchy here (its lines are what an exited process loses)")
    rel = f"gp-fleet-v1-{uuid.uuid4().hex[:8]}"
    path = os.path.join(mem, rel)
    d = job = None
    os.mkdir(path)
    try:
        wrap = ["sh", "-c", f'echo $$ > "{path}/cgroup.procs" && exec "$@"', "sh"]
        r = gp.run(wrap + ["cat", "/proc/self/cgroup"])
        # the job's own lines: "0::PATH" is v2's (controllers "")
        lines = dict(l.split(":", 2)[1:] for l in r.stdout.splitlines() if l.count(":") >= 2)
        v2 = lines.get("", "/")
        if v2 != "/":
            gp.skip(f"the job's cgroup v2 is {v2}: its v2 line, which a zombie keeps, is the label")
        d = daemon(["--memleak", "--cudatrace"])
        probes_in(d.port)
        os.kill(d.pid, signal.SIGSTOP)
        try:
            job = gp.Background(wrap + [FORK, "--reap-after", "3000"], env=ENV)
            job.wait_for("EXITED")  # the workers are zombies for 3 s now
        finally:
            os.kill(d.pid, signal.SIGCONT)
        eq(job.wait(), 0, "fork_app")
        for comm, n in by_comm(truth(job.stderr())).items():
            wait_value(d.port, "gpuprobe_cuda_kernel_launches_total", n, cgroup="/" + rel, comm=comm)
        text = get(d.port)[1]
        eq(value(text, "gpuprobe_cuda_kernel_launches_total", cgroup="/", comm="fork_child") or 0, 0,
           "fork_child launches under cgroup \"/\"")
        stop(d)
    finally:
        for x in (job, d):
            if x:
                x.kill()
        for _ in range(50):
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.1)


def test_per_process_series_bounded():
    cg = Cgroups()
    rel = f"gp-fleet-{uuid.uuid4().hex[:8]}"
    cgroup = "/" + rel
    d = None
    try:
        cg.make(rel)
        d = daemon(["--cudatrace", "--per-process-series", "--max-process-series", "3"])
        ts = []
        for _ in range(8):
            r = gp.run(in_cgroup(cg, rel, [LAUNCH]), env=ENV)
            eq(r.returncode, 0, "launch_app")
            ts.append(truth(r.stderr))
        total = sum(launches(t) for t in ts)
        wait_value(d.port, "gpuprobe_cuda_kernel_launches_total", total, cgroup=cgroup)
        text = get(d.port)[1]
        pids = {l["pid"] for n, l, v in own(text, cgroup, "gpuprobe_cuda_kernel_launches_total")}
        mine = {str(t["pid"]) for t in ts}
        check(len(pids - {"other"}) <= 3, f"at most 3 processes with their own pid: {pids}")
        check(pids - {"other"} <= mine, f"pids of the jobs: {pids} vs {mine}")
        for t in ts:  # one with a series of its own has exactly its launches there
            if str(t["pid"]) in pids:
                eq(value(text, "gpuprobe_cuda_kernel_launches_total", cgroup=cgroup, pid=t["pid"]), launches(t),
                   f"launches of {t['pid']}")
        stop(d)
    finally:
        if d:
            d.kill()
        cg.cleanup()


def test_kubernetes_labels_on_series():
    """Pods of both kubelet cgroup drivers and three runtimes: the launches of a short
    process in each carry its pod's uid, container id, namespace, pod and container; with
    the log folders not readable, the uid and id only."""
    cg = Cgroups()
    logs = tempfile.mkdtemp(prefix="gp-fleet-logs-")
    d = None
    try:
        cases = pod_cases()
        for name, path, want in cases:
            kubelet_logs(logs, want["namespace"], want["pod"], want["pod_uid"], "cuda", want["container_id"])
            cg.make(path)
        d = daemon(["--cudatrace", "--kubelet-log-dir", logs])
        for name, path, want in cases:
            r = gp.run(in_cgroup(cg, path, [LAUNCH]), env=ENV)
            eq(r.returncode, 0, f"{name}: launch_app")
            n = launches(truth(r.stderr))
            wait_value(d.port, "gpuprobe_cuda_kernel_launches_total", n, cgroup="/" + path)
            labels = {k: v for n_, l, v_ in own(get(d.port)[1], "/" + path, "gpuprobe_cuda_kernel_launches_total")
                      for k, v in l.items()}
            for k in ("pod_uid", "container_id", "namespace", "pod", "container"):
                eq(labels.get(k), want[k], f"{name}: {k}")
        stop(d)
        d = daemon(["--cudatrace", "--kubelet-log-dir", "/nonexistent"])
        name, path, want = cases[0]
        r = gp.run(in_cgroup(cg, path, [LAUNCH]), env=ENV)
        eq(r.returncode, 0, "launch_app")
        wait_value(d.port, "gpuprobe_cuda_kernel_launches_total", launches(truth(r.stderr)), cgroup="/" + path)
        labels = {k: v for n_, l, v_ in own(get(d.port)[1], "/" + path, "gpuprobe_cuda_kernel_launches_total")
                  for k, v in l.items()}
        eq((labels.get("pod_uid"), labels.get("container_id"), labels.get("namespace"), labels.get("pod")),
           (want["pod_uid"], want["container_id"], None, None), "no log folders: uid and id only")
        stop(d)
    finally:
        if d:
            d.kill()
        cg.cleanup()
        shutil.rmtree(logs, ignore_errors=True)


def tls_files(tmp, user="prom", password="s3cret"):
    r = gp.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", os.path.join(tmp, "key.pem"), "-out", os.path.join(tmp, "cert.pem"), "-days", "2",
                "-subj", "/CN=gpuprobe", "-addext", "subjectAltName=DNS:gpuprobe"])
    check(r.returncode == 0, f"openssl: {r.stderr}")
    r = gp.run(["htpasswd", "-nbBC", "10", user, password])
    check(r.returncode == 0, f"htpasswd: {r.stderr}")
    hashed = r.stdout.strip().split(":", 1)[1]
    web = os.path.join(tmp, "web.yml")
    with open(web, "w") as f:
        f.write(f"tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                f"http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
                f"basic_auth_users:\n  {user}: '{hashed}'\n")
    return web


def curl(port, path, *extra, tmp):
    # each answer in files of its own: a curl that got none (arm64 under QEMU's TCG, its 10 s
    # passed while Prometheus scraped) left the last one's body, /healthz's "ok", to be read
    # as /metrics
    for f in ("body", "head"):
        if os.path.exists(os.path.join(tmp, f)):
            os.unlink(os.path.join(tmp, f))
    r = gp.run(["curl", "-s", "-o", os.path.join(tmp, "body"), "-D", os.path.join(tmp, "head"),
                "-w", "%{http_code}", "--max-time", str(10 * gp.TIME_SLACK), "--cacert", os.path.join(tmp, "cert.pem"),
                "--resolve", f"gpuprobe:{port}:127.0.0.1", f"https://gpuprobe:{port}{path}", *extra])
    check(os.path.exists(os.path.join(tmp, "head")), f"curl {path}: no answer (curl exit {r.returncode}, {r.stdout!r})")
    body = open(os.path.join(tmp, "body")).read() if os.path.exists(os.path.join(tmp, "body")) else ""
    with open(os.path.join(tmp, "head")) as h:
        return r.stdout, body, h.read()


def test_tls_basic_auth_curl_and_prometheus():
    tmp = tempfile.mkdtemp(prefix="gp-fleet-tls-")
    os.chmod(tmp, 0o755)
    d = prom = None
    try:
        web = tls_files(tmp)
        d = daemon(["--memleak", "--web-config", web])
        check("https, basic auth" in d.stderr(), d.stderr())
        code, body, head = curl(d.port, "/metrics", "-u", "prom:s3cret", tmp=tmp)
        eq(code, "200", "/metrics with the password")
        check("gpuprobe_build_info{" in body, "a real answer")
        check("x-content-type-options: nosniff" in head.lower(), f"configured header: {head}")
        code, body, head = curl(d.port, "/metrics", "-u", "prom:wrong", tmp=tmp)
        eq(code, "401", "/metrics with a wrong password")
        check('www-authenticate: basic realm="gpuprobe"' in head.lower(), head)
        eq(curl(d.port, "/metrics", tmp=tmp)[0], "401", "/metrics without credentials")
        code, body, _ = curl(d.port, "/healthz", tmp=tmp)
        eq((code, body), ("200", "ok\n"), "/healthz without credentials")
        r = gp.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
                    f"http://127.0.0.1:{d.port}/healthz"])
        check(r.stdout != "200", f"plain HTTP on the TLS port answered {r.stdout}")
        with open(os.path.join(tmp, "password"), "w") as f:
            f.write("s3cret")
        with open(os.path.join(tmp, "wrong"), "w") as f:
            f.write("nope")
        jobs = ""
        for name, pw in (("gpuprobe", "password"), ("wrongpass", "wrong")):
            jobs += (f"  - job_name: {name}\n    scheme: https\n"
                     f"    tls_config:\n      ca_file: {tmp}/cert.pem\n      server_name: gpuprobe\n"
                     f"    basic_auth:\n      username: prom\n      password_file: {tmp}/{pw}\n"
                     f"    static_configs:\n      - targets: ['127.0.0.1:{d.port}']\n")
        prom = Prometheus(tmp, jobs)
        prom.wait('gpuprobe_build_info{job="gpuprobe"}', 1.0)
        prom.wait('up{job="wrongpass"}', 0.0)
        got = value(get_tls(d.port, tmp), "gpuprobe_http_auth_failures_total")
        check(got and got >= 3, f"refusals counted: {got}")
        check("without --web-config" not in d.stderr(), "no warning on loopback")
        stop(d)
    finally:
        for x in (prom, d):
            if x:
                x.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def get_tls(port, tmp):
    return curl(port, "/metrics", "-u", "prom:s3cret", tmp=tmp)[1]


def test_exposed_endpoint_warns():
    tmp = tempfile.mkdtemp(prefix="gp-fleet-warn-")
    os.chmod(tmp, 0o755)
    try:
        port = free_port(host="0.0.0.0")
        d = gp.Background([gp.GPUPROBE, "daemon", "--memleak", "--listen", f"0.0.0.0:{port}"], env=ENV)
        d.wait_for("listening on", where="stderr")
        lines = [l for l in d.stderr().splitlines() if "not a loopback address" in l]
        eq(len(lines), 1, f"one warning: {d.stderr()}")
        check(lines[0].startswith("<4>gpuprobe: listening on 0.0.0.0:") and "without --web-config" in lines[0],
              lines[0])
        stop(d)
        web = tls_files(tmp)
        port = free_port(host="0.0.0.0")
        d = gp.Background([gp.GPUPROBE, "daemon", "--memleak", "--listen", f"0.0.0.0:{port}", "--web-config", web],
                          env=ENV)
        d.wait_for("listening on", where="stderr")
        # (other warnings are the kernel's to give: 6.1 has no uprobe_multi links)
        exposed = lambda: [l for l in d.stderr().splitlines() if "not a loopback address" in l]
        eq(exposed(), [], f"no warning with TLS and users: {d.stderr()}")
        stop(d)
        d = daemon(["--memleak"])
        eq(exposed(), [], f"no warning on loopback: {d.stderr()}")
        stop(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_config_file():
    tmp = tempfile.mkdtemp(prefix="gp-fleet-conf-")
    try:
        p1, p2 = free_port(), free_port()
        conf = os.path.join(tmp, "gpuprobe.conf")
        with open(conf, "w") as f:
            f.write(f"# gpuprobe daemon options\n\nmemleak\n--cudatrace   # a comment\nlisten = 127.0.0.1:{p1}\n"
                    f"retention '30'\nmax-kernel-series 5\n")
        d = gp.Background([gp.GPUPROBE, "daemon", "--config", conf], env=ENV)
        d.wait_for("listening on", where="stderr")
        text = get(p1)[1]
        check('modes="memleak,cudatrace"' in text, "modes from the file")
        stop(d)
        # the command line comes after the file
        d = gp.Background([gp.GPUPROBE, "daemon", "--config", conf, "--listen", f"127.0.0.1:{p2}"], env=ENV)
        d.wait_for("listening on", where="stderr")
        eq(get(p2)[0], 200, "--listen of the command line wins")
        stop(d)
        # the shipped file is valid
        d = gp.Background([gp.GPUPROBE, "daemon", "--config", os.path.join(ROOT, "examples", "config", "gpuprobe.conf"),
                           "--listen", f"127.0.0.1:{p2}"], env=ENV)
        d.wait_for("listening on", where="stderr")
        stop(d)
        for body, want in ((f"memleak\nlisten 127.0.0.1:{p1}\nbogus 1\n", f"{conf}:3: unrecognized option '--bogus=1'"),
                           ("memleak\nretention abc\n", f"{conf}:2: invalid --retention: abc"),
                           ("memleak=yes\n", f"{conf}:1: option --memleak takes no value"),
                           ("config /etc/x\n", "cannot be set in a config file")):
            with open(conf, "w") as f:
                f.write(body)
            r = gp.run([gp.GPUPROBE, "daemon", "--config", conf], env=ENV, timeout=20)
            eq(r.returncode, 2, f"{body!r}: exit status")
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            eq(len(lines), 1, f"{body!r}: one line: {r.stderr!r}")
            check(lines[0].startswith("<3>gpuprobe: daemon: ") and want in lines[0], f"{body!r}: {lines[0]!r}")
        # bounded, regular files only, never blocking on a FIFO
        with open(conf, "w") as f:
            f.write("# padding\n" * 8000)
        fifo = os.path.join(tmp, "fifo.conf")
        os.mkfifo(fifo)
        for path in (conf, fifo):
            r = gp.run([gp.GPUPROBE, "daemon", "--config", path], env=ENV, timeout=20)
            eq(r.returncode, 2, f"{path}: exit status")
            check("not a regular file of at most 65536 bytes" in r.stderr, f"{path}: {r.stderr!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    gp.assert_nothing_attached()


def test_libcuda_instead_of_discovery_both_front_ends():
    """--libcuda A: A alone is probed, in the CLI and in the daemon (no discovery, no
    rescans); a process on another copy of the driver is not traced."""
    cg = Cgroups()
    rel = f"gp-fleet-{uuid.uuid4().hex[:8]}"
    tmp = tempfile.mkdtemp(prefix="gp-fleet-lib-")
    os.chmod(tmp, 0o755)
    d = None
    try:
        cg.make(rel)
        for x in ("a", "b"):
            os.mkdir(os.path.join(tmp, x))
            shutil.copy(FAKECUDA, os.path.join(tmp, x, "libcuda.so.1"))
        lib_a, dir_b = os.path.join(tmp, "a", "libcuda.so.1"), os.path.join(tmp, "b")
        # the CLI: the command maps the build's copy
        r = gp.gpuprobe(["--memleak", "--json", "--libcuda", lib_a], cmd=[MEMLEAK, "--allocs", "4"], env=ENV)
        eq(r.returncode, 0, f"CLI: {r.stderr}")
        check(f"on {lib_a}" in r.stderr, r.stderr)
        eq(gp.final(r.stdout)["processes"], [], "CLI: a process on another copy is not traced")
        r = gp.gpuprobe(["--memleak", "--json", "--libcuda", FAKECUDA], cmd=[MEMLEAK, "--allocs", "4"], env=ENV)
        eq(gp.final(r.stdout)["processes"][0]["allocs_total"], 4, "CLI: the copy it maps")
        # the daemon: copy b appears later in a process; --libcuda a never rescans for it
        for extra, traced in ((["--libcuda", lib_a], False), ([], True)):
            d = daemon(["--memleak", "--rescan-interval", "0.3", *extra])
            env = dict(ENV, LD_LIBRARY_PATH=dir_b)
            a = gp.start_app(in_cgroup(cg, rel, [MEMLEAK, "--allocs", "4", "--wait"]), env=env)
            time.sleep(1.5)
            probed_b = f"{dir_b}/libcuda.so.1" in d.stderr()
            os.kill(int(a.stdout().split("READY")[1].split()[0]), signal.SIGUSR1)
            eq(a.wait(), 0, "workload")
            eq(probed_b, traced, f"daemon {extra}: copy b probed")
            if not traced:
                eq(value(get(d.port)[1], "gpuprobe_libcuda_files"), 1, "daemon --libcuda: one file")
            stop(d)
            d = None
    finally:
        if d:
            d.kill()
        cg.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    gp.main([
        test_short_jobs_scraped_by_prometheus,
        test_exited_gauges_leave_counts_stay,
        test_workers_own_comm,
        test_workers_gone_before_read_keep_their_cgroup,
        test_zombie_workers_not_labelled_root,
        test_per_process_series_bounded,
        test_kubernetes_labels_on_series,
        test_tls_basic_auth_curl_and_prometheus,
        test_exposed_endpoint_warns,
        test_config_file,
        test_libcuda_instead_of_discovery_both_front_ends,
    ])
