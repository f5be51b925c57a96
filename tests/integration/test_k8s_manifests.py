# SPDX-License-Identifier: BSD-3-Clause
"""examples/kubernetes without a cluster: the manifests parsed (python3-yaml) and checked
for what docs/kubernetes.md promises (hostPID, the three capabilities and no privileged
flag, read-only mounts, resources, /healthz probes, the web config from a Secret, the
Service and PodMonitor matching the pods); make-secret.sh's Secrets laid out as the
kubelet lays out a Secret volume (links on a read-only tmpfs), given to gpuprobe daemon
--web-config and scraped over TLS with basic auth by curl and by a real Prometheus with
the PodMonitor's settings; /healthz answers without a password (the kubelet's probes)."""
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

import gp
from gp import ROOT, check, eq

K8S = os.path.join(ROOT, "examples", "kubernetes")
DOC = os.path.join(ROOT, "docs", "kubernetes.md")
CAPS = {"BPF", "PERFMON", "SYS_PTRACE"}
MOUNTS = {"/sys/kernel/btf", "/var/log/pods", "/var/log/containers",
          "/usr/local/nvidia/lib64", "/etc/gpuprobe/web", "/var/lib/gpuprobe"}
WRITABLE = {"/var/lib/gpuprobe"}  # the learned driver layouts (--state-dir), the host's
TARGET_C = os.path.join(ROOT, "src", "lib", "target.c")


def load_all():
    docs = {}
    for name in sorted(os.listdir(K8S)):
        if name.endswith(".yaml"):
            with open(os.path.join(K8S, name)) as f:
                for d in yaml.safe_load_all(f):
                    check(d and "kind" in d, f"{name}: a document without kind")
                    docs[(d["kind"], d["metadata"]["name"] if "metadata" in d else name)] = (name, d)
    return docs


def one(docs, kind):
    found = [d for (k, _), (_, d) in docs.items() if k == kind]
    eq(len(found), 1, f"number of {kind} manifests")
    return found[0]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_kustomization_lists_every_manifest():
    docs = load_all()
    kust = one(docs, "Kustomization")
    files = {n for n in os.listdir(K8S) if n.endswith(".yaml") and n != "kustomization.yaml"}
    eq(set(kust["resources"]), files, "kustomization resources")
    for (kind, name), (fname, d) in docs.items():
        if kind not in ("Kustomization", "Namespace"):
            eq(d["metadata"].get("namespace"), "gpuprobe", f"{fname}: {kind} {name} namespace")


def test_daemonset_promises():
    ds = one(load_all(), "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    eq(spec.get("hostPID"), True, "hostPID")
    check(not spec.get("hostNetwork"), "no hostNetwork")
    check(not spec.get("hostIPC"), "no hostIPC")
    eq(spec.get("automountServiceAccountToken"), False, "no service account token")
    eq(ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
       True, "selector matches the pod labels")
    eq(len(spec["containers"]), 1, "one container")
    c = spec["containers"][0]
    sc = c["securityContext"]
    check(sc.get("privileged") in (None, False), "not privileged")
    eq(sc.get("allowPrivilegeEscalation"), False, "allowPrivilegeEscalation")
    eq(sc.get("readOnlyRootFilesystem"), True, "read-only root file system")
    eq(sc["capabilities"]["drop"], ["ALL"], "drop ALL")
    eq(set(sc["capabilities"]["add"]), CAPS, "added capabilities")
    check("SYS_ADMIN" not in sc["capabilities"]["add"], "no CAP_SYS_ADMIN")
    # resources: both requests and limits, memory above what was measured (~93 MiB)
    for k in ("requests", "limits"):
        for r in ("cpu", "memory"):
            check(r in c["resources"].get(k, {}), f"resources.{k}.{r} set")
    mi = lambda s: int(re.match(r"(\d+)Mi$", s).group(1))
    check(mi(c["resources"]["requests"]["memory"]) >= 128, "memory request covers the BPF maps")
    check(mi(c["resources"]["limits"]["memory"]) >= mi(c["resources"]["requests"]["memory"]), "limit >= request")
    # the port the daemon listens on is the container port the probes and monitors name
    args = c["args"]
    eq(args[0], "daemon", "runs gpuprobe daemon")
    listen = args[args.index("--listen") + 1]
    port = [p for p in c["ports"] if p["name"] == "metrics"]
    eq(len(port), 1, "a port named metrics")
    eq(int(listen.rsplit(":", 1)[1]), port[0]["containerPort"], "--listen port is the container port")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        g = c[probe]["httpGet"]
        eq((g["path"], g["port"], g["scheme"]), ("/healthz", "metrics", "HTTPS"), f"{probe}")
    # mounts: read-only, each a volume; hostPath for the host's files
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    eq(set(mounts), MOUNTS, "mount paths")
    vols = {v["name"]: v for v in spec["volumes"]}
    for path, m in mounts.items():
        eq(m.get("readOnly"), None if path in WRITABLE else True, f"{path} mounted read-only (but the state)")
        check(m["name"] in vols, f"{path}: volume {m['name']} exists")
    for path in ("/sys/kernel/btf", "/var/log/pods", "/var/log/containers", "/var/lib/gpuprobe"):
        eq(vols[mounts[path]["name"]]["hostPath"]["path"], path, f"{path} is the host's")
    # the web config comes from the Secret, at the path --web-config names
    wc = args[args.index("--web-config") + 1]
    sec = vols[mounts["/etc/gpuprobe/web"]["name"]]["secret"]
    eq(sec["secretName"], "gpuprobe-web-config", "web config Secret")
    eq(os.path.dirname(wc), "/etc/gpuprobe/web", "--web-config inside the Secret's mount")
    eq(os.path.basename(wc), "web-config.yml", "--web-config file name")
    # the host's driver where discovery looks (no --libcuda: it would stop the rescans)
    check("--libcuda" not in args, "no --libcuda (instead of discovery, no rescans)")
    eq(vols[mounts["/usr/local/nvidia/lib64"]["name"]]["hostPath"]["path"], "/usr/lib/x86_64-linux-gnu",
       "the host's driver folder")
    with open(TARGET_C) as f:
        check('"/usr/local/nvidia/lib64"' in f.read(), "the driver mount is a folder discovery looks in")
    # /healthz open, /metrics behind basic auth: the probes send no credentials
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        check("httpHeaders" not in c[probe]["httpGet"], f"{probe} sends no credentials")


def test_service_and_podmonitor_match():
    docs = load_all()
    ds, svc, pm = one(docs, "DaemonSet"), one(docs, "Service"), one(docs, "PodMonitor")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    check(svc["spec"]["selector"].items() <= labels.items(), "Service selects the pods")
    check(pm["spec"]["selector"]["matchLabels"].items() <= labels.items(), "PodMonitor selects the pods")
    eq(svc["spec"]["ports"][0]["targetPort"], "metrics", "Service targets the metrics port")
    ep = pm["spec"]["podMetricsEndpoints"][0]
    eq((ep["port"], ep["path"], ep["scheme"]), ("metrics", "/metrics", "https"), "PodMonitor endpoint")
    eq(ep["tlsConfig"]["ca"]["secret"], {"name": "gpuprobe-web-config", "key": "tls.crt"}, "CA from the Secret")
    eq(ep["basicAuth"]["username"]["name"], "gpuprobe-scrape-auth", "basic auth Secret")


def test_docs_promise_what_the_manifests_do():
    with open(DOC) as f:
        doc = f.read()
    for cap in CAPS:
        check(f"CAP_{cap}" in doc, f"docs/kubernetes.md names CAP_{cap}")
    for path in MOUNTS - {"/etc/gpuprobe/web"}:
        check(path in doc, f"docs/kubernetes.md names the mount {path}")
    for word in ("hostPID", "privileged", "/healthz", "seccomp", "AppArmor", "PodMonitor", "make-secret.sh",
                 "pod_uid", "container_id", "--kubelet-log-dir", "without authentication"):
        check(word in doc, f"docs/kubernetes.md explains {word}")


def secret_volume(tmp, data):
    """The kubelet's layout of a Secret volume: files in a timestamped folder, a ..data
    link to it, one link per key, on a tmpfs of mode 1777 mounted read-only."""
    mnt = os.path.join(tmp, "secret")
    os.mkdir(mnt)
    r = gp.run(["mount", "-t", "tmpfs", "-o", "mode=1777,size=1m", "tmpfs", mnt])
    check(r.returncode == 0, f"mount tmpfs: {r.stderr}")
    ts = os.path.join(mnt, "..2026_11_22_21_00_00.000000001")
    os.mkdir(ts, 0o755)
    for k, v in data.items():
        with open(os.path.join(ts, k), "wb") as f:
            f.write(v)
        os.chmod(os.path.join(ts, k), 0o400)
    os.symlink(os.path.basename(ts), os.path.join(mnt, "..data"))
    for k in data:
        os.symlink(os.path.join("..data", k), os.path.join(mnt, k))
    r = gp.run(["mount", "-o", "remount,ro", mnt])
    check(r.returncode == 0, f"remount ro: {r.stderr}")
    return mnt


def test_secret_serves_tls_with_basic_auth():
    tmp = tempfile.mkdtemp(prefix="gp-k8s-secret-")
    os.chmod(tmp, 0o755)
    server = prom = mnt = None
    try:
        r = gp.run([os.path.join(K8S, "make-secret.sh")])
        check(r.returncode == 0, f"make-secret.sh: {r.stderr}")
        secrets = {d["metadata"]["name"]: d for d in yaml.safe_load_all(r.stdout)}
        eq(set(secrets), {"gpuprobe-web-config", "gpuprobe-scrape-auth"}, "Secrets written")
        data = {k: base64.b64decode(v) for k, v in secrets["gpuprobe-web-config"]["data"].items()}
        eq(set(data), {"web-config.yml", "tls.crt", "tls.key"}, "web config Secret keys")
        auth = secrets["gpuprobe-scrape-auth"]["stringData"]
        mnt = secret_volume(tmp, data)
        port = free_port()
        # the daemon itself, with the Secret's file, as the DaemonSet runs it
        server = gp.Background([gp.GPUPROBE, "daemon", "--memleak", "--listen", f"127.0.0.1:{port}",
                                "--web-config", os.path.join(mnt, "web-config.yml")],
                               env={"LD_LIBRARY_PATH": gp.FAKECUDA_DIR})
        server.wait_for("listening on", where="stderr")
        with open(os.path.join(tmp, "ca.crt"), "wb") as f:
            f.write(data["tls.crt"])
        curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                "--cacert", os.path.join(tmp, "ca.crt"), "--resolve", f"gpuprobe:{port}:127.0.0.1",
                f"https://gpuprobe:{port}/metrics"]
        eq(gp.run(curl + ["-u", f"{auth['username']}:{auth['password']}"]).stdout, "200", "right password")
        eq(gp.run(curl + ["-u", f"{auth['username']}:nope"]).stdout, "401", "wrong password")
        eq(gp.run(curl).stdout, "401", "no password")
        eq(gp.run(curl[:-1] + [f"https://gpuprobe:{port}/healthz"]).stdout, "200", "/healthz without a password")

        # A real Prometheus with the PodMonitor's TLS and basic-auth settings.
        if not shutil.which("prometheus"):
            raise gp.Failure("prometheus not installed (make deps installs the Debian package)")
        with open(os.path.join(tmp, "password"), "w") as f:
            f.write(auth["password"])
        pport = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gpuprobe\n"
                    "    scheme: https\n"
                    f"    tls_config:\n      ca_file: {tmp}/ca.crt\n      server_name: gpuprobe\n"
                    f"    basic_auth:\n      username: {auth['username']}\n      password_file: {tmp}/password\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
        prom = gp.Background(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                              f"--web.listen-address=127.0.0.1:{pport}"])
        got, deadline = None, time.time() + 30
        while time.time() < deadline:
            q = urllib.parse.urlencode({"query": 'gpuprobe_build_info{job="gpuprobe"}'})
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{pport}/api/v1/query?{q}", timeout=5) as resp:
                    res = json.load(resp)["data"]["result"]
                got = float(res[0]["value"][1]) if res else None
            except (OSError, KeyError, ValueError):
                got = None
            if got == 1:
                break
            time.sleep(0.5)
        eq(got, 1.0, "Prometheus scraped the daemon over TLS with basic auth")
        server.signal(signal.SIGTERM)
        eq(server.wait(timeout=30), 0, "daemon exit status")
    finally:
        if prom:
            prom.kill()
        if server:
            server.kill()
        if mnt:
            gp.run(["umount", mnt])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    gp.main([test_kustomization_lists_every_manifest, test_daemonset_promises,
             test_service_and_podmonitor_match, test_docs_promise_what_the_manifests_do,
             test_secret_serves_tls_with_basic_auth])
