#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""--gpu-time (issue 34, item 2): exact GPU durations from inside the processes.

The command gpuprobe starts inherits a datagram socket and the libraries it builds: the
stand-in driver loads CUDA_INJECTION64_PATH at cuInit and calls InitializeInjection, as
CUDA does, and libgpuprobe_cupti.so reads the stand-in CUPTI's scripted activity records
(the script is the truth: each kernel's and copy's GPU time); the stand-in NCCL loads
NCCL_PROFILER_PLUGIN and times each collective's kernel with the plugin's GPU timers (its
truth: the kernel time the stand-in scripts, printed by nccl_app). Hostile senders are
counted and harmless; processes started elsewhere send to --gpu-time-socket."""
import json
import os
import random
import shutil
import socket
import stat
import struct
import subprocess
import tempfile
import time

import gp
from gp import FAKECUDA, OUT, app, check, eq

FAKECUPTI = os.path.join(OUT, "fakecupti", "libcupti.so")
CUPTI_LIB = os.path.join(OUT, "libgpuprobe_cupti.so")
FAKENCCL = os.path.join(OUT, "fakenccl", "libnccl.so.2")
SIZES = {"float32": 4, "bfloat16": 2, "int32": 4, "uint8": 1, "float16": 2, "float64": 8, "int8": 1}
LAUNCHER = app("nccl_launcher.sh")
HOSTILE = os.path.join(gp.ROOT, "tests", "apps", "gputime_hostile.py")
BASE = ["--gpu-time", "--json", "--cupti", FAKECUPTI, "--libcuda", FAKECUDA]


def script():
    """A random script and what it must give: kernels, copies, memsets."""
    rnd = random.Random(os.getpid())
    kernels = []
    for name in ("_Z6matmulPfS_i", "_Z3addPfS_", "void softmax<float>(float*)"):
        kernels.append({"name": name, "n": rnd.randint(3, 40), "ns": rnd.randint(1000, 900000),
                        "grid": [rnd.randint(1, 64), rnd.randint(1, 4), 1], "block": [rnd.choice([32, 128, 256]), 1, 1]})
    # rates a link can carry (1-10 GB/s over PCIe, 20-300 GB/s between GPUs): a figure above
    # the link's limit is held back as suspect (test_figures_above_the_link_are_suspect)
    copies = [{"kind": 1, "name": "H2D", "n": rnd.randint(2, 20), "bytes": rnd.randint(1, 64) << 20, "gbps": rnd.randint(1, 10)},
              {"kind": 2, "name": "D2H", "n": rnd.randint(2, 20), "bytes": rnd.randint(1, 64) << 20, "gbps": rnd.randint(1, 10)},
              {"kind": 10, "name": "P2P", "n": rnd.randint(2, 20), "bytes": rnd.randint(1, 64) << 20, "gbps": rnd.randint(20, 300),
               "src": 0, "dst": 1}]
    for c in copies:
        c["ns"] = c["bytes"] // c["gbps"]
    memset = {"n": rnd.randint(1, 9), "bytes": 4096, "ns": 3000}
    other = rnd.randint(1, 9)
    items = [f"kernel,{k['name']},{k['n']},{k['ns']},{','.join(map(str, k['grid']))},{','.join(map(str, k['block']))}"
             for k in kernels]
    for c in copies:
        items.append(f"copy,{c['kind']},{c['n']},{c['bytes']},{c['ns']}" + (f",{c['src']},{c['dst']}" if "src" in c else ""))
    items.append(f"memset,{memset['n']},{memset['bytes']},{memset['ns']}")
    items.append(f"other,{other}")
    return ";".join(items), kernels, copies, memset, other


def run_cupti(extra=(), env=None, app_args=("--n", "20")):
    s, kernels, copies, memset, other = script()
    e = {"FAKECUPTI_SCRIPT": s, "FAKECUPTI_BATCH": "5", "FAKECUPTI_DROPPED": "3"}
    e.update(env or {})
    r = gp.gpuprobe(BASE + list(extra), cmd=[app("launch_app")] + list(app_args), env=e, timeout=60)
    eq(r.returncode, 0, f"exit status ({r.stderr[-1500:]})")
    return r, kernels, copies, memset, other


def test_cupti_kernels_copies_against_the_script():
    r, kernels, copies, memset, other = run_cupti()
    t = gp.truth(r.stderr)
    rep = gp.final(r.stdout, "gputime")
    p = gp.proc(rep, t["pid"])
    eq(len(p["kernels"]), len(kernels), "a row a kernel (one shape each)")
    for k in kernels:
        row = [x for x in p["kernels"] if x["name"] == k["name"]]
        eq(len(row), 1, f"{k['name']}: one row")
        eq(row[0]["launches"], k["n"], f"{k['name']}: launches")
        eq(row[0]["gpu_ns"], k["n"] * k["ns"], f"{k['name']}: GPU time, the script's")
        eq((row[0]["min_ns"], row[0]["max_ns"]), (k["ns"], k["ns"]), f"{k['name']}: min and max")
        eq(row[0]["grid"], k["grid"], f"{k['name']}: grid")
        eq(row[0]["block"], k["block"], f"{k['name']}: block")
    for c in copies:
        row = [x for x in p["copies"] if x["kind"] == c["name"]]
        eq(len(row), 1, f"{c['name']}: one row")
        eq((row[0]["copies"], row[0]["bytes"], row[0]["gpu_ns"]), (c["n"], c["n"] * c["bytes"], c["n"] * c["ns"]),
           f"{c['name']}: copies, bytes, GPU time")
        want = c["bytes"] / c["ns"]
        check(abs(row[0]["bandwidth_gbps"] - want) < want * 1e-9, f"{c['name']}: bandwidth {row[0]['bandwidth_gbps']} != {want}")
        if "src" in c:
            eq((row[0]["src_gpu"], row[0]["dst_gpu"]), (c["src"], c["dst"]), "the peer copy's GPU pair")
    eq((p["memsets"][0]["memsets"], p["memsets"][0]["gpu_ns"]), (memset["n"], memset["n"] * memset["ns"]), "memsets")
    n = sum(k["n"] for k in kernels) + sum(c["n"] for c in copies) + memset["n"] + other
    eq(p["cupti"]["records"], n, "every record CUPTI gave counted")
    eq(p["cupti"]["other_kinds"], other, "records of other kinds counted")
    eq(p["cupti"]["not_sent"], 0, "nothing lost on the way")
    eq(p["cupti"]["source_lost"], 3, "CUPTI's own dropped records reported")
    eq(rep["drops"]["gputime_source_lost"], 3, "and in the drops")
    eq(rep["drops"]["gputime_refused"], 0, "nothing refused")


def test_cpu_side_unchanged():
    """--cudatrace beside --gpu-time counts the launches as without it (the program's truth)."""
    r, kernels, _, _, _ = run_cupti(extra=["--cudatrace"])
    t = gp.truth(r.stderr)
    ct = gp.proc(gp.final(r.stdout, "cudatrace"), t["pid"])
    got = {k["name"]: k["launches"] for k in ct["kernels"]}
    for name, k in t["kernels"].items():
        eq(got.get(name), k["launches"], f"--cudatrace: {name}'s launches, the program's count")
    gt = gp.proc(gp.final(r.stdout, "gputime"), t["pid"])
    eq(sum(k["launches"] for k in gt["kernels"]), sum(k["n"] for k in kernels), "and --gpu-time its own")


def test_child_of_a_launcher_that_closes_descriptors():
    """torchrun's workers start through subprocess (close_fds): they reach gpuprobe through
    the command's abstract socket, credited to themselves."""
    s, kernels, _, _, _ = script()
    launcher = ("import subprocess, sys, os; "
                "fd = int(os.environ['GPUPROBE_GPUTIME_FD']); "
                "r = subprocess.run([sys.argv[1], '--n', '20'], close_fds=True); sys.exit(r.returncode)")
    r = gp.gpuprobe(BASE, cmd=["python3", "-c", launcher, app("launch_app")], env={"FAKECUPTI_SCRIPT": s}, timeout=60)
    eq(r.returncode, 0, f"exit status ({r.stderr[-1500:]})")
    t = gp.truth(r.stderr)
    p = gp.proc(gp.final(r.stdout, "gputime"), t["pid"])
    eq(sum(k["launches"] for k in p["kernels"]), sum(k["n"] for k in kernels), "the worker's kernels, credited to it")


def test_gpu_tracks_in_the_trace():
    """--trace's Chrome timeline gets a track per GPU and stream with each kernel, copy and
    memset at its GPU time, placed on gpuprobe's clock (after the process's cuInit)."""
    s, kernels, copies, memset, _ = script()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        r = gp.gpuprobe(BASE + ["--trace", path, "--trace-format", "chrome"], cmd=[app("launch_app"), "--n", "20"],
                        env={"FAKECUPTI_SCRIPT": s}, timeout=90)
        eq(r.returncode, 0, f"exit status ({r.stderr[-1500:]})")
        t = gp.truth(r.stderr)
        with open(path) as f:
            doc = json.load(f)
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    gpu = [e for e in ev if e.get("cat") == "gpu" and e.get("pid") == t["pid"]]
    for k in kernels:
        mine = [e for e in gpu if e["name"] == k["name"]]
        eq(len(mine), k["n"], f"{k['name']}: one event a launch")
        check(all(abs(e["dur"] * 1000 - k["ns"]) < 1.5 for e in mine), f"{k['name']}: each lasts the script's {k['ns']} ns")
    for c in copies:
        eq(len([e for e in gpu if e["name"] == f"{c['name']} copy"]), c["n"], f"{c['name']} copies on the track")
    eq(len([e for e in gpu if e["name"] == "memset"]), memset["n"], "memsets on the track")
    init = [e for e in ev if e.get("name") == "cuInit" and e.get("pid") == t["pid"]]
    check(init, "the process's cuInit on its CPU track")
    check(min(e["ts"] for e in gpu) >= init[0]["ts"], "GPU work placed after cuInit, on gpuprobe's clock")
    names = {e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("pid") == t["pid"]
             and e.get("name") == "thread_name"}
    check("GPU 0 stream 7" in names, f"a named track per GPU and stream ({names})")


def test_without_cupti_says_why():
    r = gp.gpuprobe(["--gpu-time", "--json", "--cupti", "/nonexistent/libcupti.so", "--libcuda", FAKECUDA],
                    cmd=[app("launch_app"), "--n", "20"], timeout=60)
    eq(r.returncode, 0, f"exit status ({r.stderr[-800:]})")
    check("no usable libcupti" in r.stderr, f"the library says why: {r.stderr[-800:]}")
    t = gp.truth(r.stderr)
    rep = gp.final(r.stdout, "gputime")
    check(all(p["pid"] != t["pid"] or not p["kernels"] for p in rep["processes"]), "no kernel invented")


def test_nccl_busbw_against_the_scripted_collective_time():
    bw = 25.0
    r = gp.gpuprobe(BASE, cmd=[LAUNCHER, "4", "--n", "3", "--subset", "basic"],
                    env={"FAKENCCL_BUSBW_GBPS": str(bw)}, timeout=120)
    eq(r.returncode, 0, f"exit status ({r.stderr[-1500:]})")
    t = gp.truth(r.stderr)
    rep = gp.final(r.stdout, "gputime")
    factor = {"AllReduce": lambda n: 2 * (n - 1) / n, "AllGather": lambda n: (n - 1) / n,
              "ReduceScatter": lambda n: (n - 1) / n, "Broadcast": lambda n: 1.0, "Reduce": lambda n: 1.0}
    sizes = {"float32": 4, "bfloat16": 2, "int32": 4, "uint8": 1, "float16": 2, "float64": 8, "int8": 1}
    hashes = {}
    for rk in t["ranks"]:
        p = gp.proc(rep, rk["pid"])
        eq(p["nccl_profiler"]["not_sent"], 0, f"rank {rk['rank']}: every record sent")
        for cm in rk["comms"]:
            for c in cm["collectives"]:
                if not c["calls"] or not c["count"]:
                    continue
                n = cm["nranks"]
                size = c["count"] * sizes[c["dtype"]] * (n if c["op"] in ("AllGather", "ReduceScatter") else 1)
                rows = [x for x in p["collectives"] if x["op"] == c["op"] and x["size"] == size and x["nranks"] == n
                        and x["rank"] == cm["rank"]]
                check(rows, f"rank {rk['rank']} {cm['label']} {c['op']} {c['dtype']}: a row ({p['collectives']})")
                x = rows[0]
                check(x["calls"] >= c["calls"], f"{c['op']} calls {x['calls']} >= {c['calls']}")
                eq(x["min_ns"], c["kernel_ns"], f"{c['op']} {size} B: the GPU time is the scripted kernel time")
                eq(x["gpu_timed_calls"], x["calls"], "every call timed by the GPU timers")
                want = size / c["kernel_ns"] * factor[c["op"]](n)
                check(abs(x["best_busbw_gbps"] - want) < want * 1e-9, f"{c['op']} busbw {x['best_busbw_gbps']} != {want}")
                hashes.setdefault(cm["label"] + str(sorted(cm["members"])), set()).add(x["comm_hash"])
    for k, v in hashes.items():
        eq(len(v), 1, f"{k}: one communicator hash on every rank")
    # the 1 MiB float32 AllReduce: the stand-in's bus bandwidth, less its fixed 5 us
    x = [x for x in gp.proc(rep, t["ranks"][0]["pid"])["collectives"] if x["op"] == "AllReduce" and x["size"] == 1 << 20
         and x["nranks"] == 4][0]
    bus = 2 * 3 / 4 * (1 << 20)
    want = bus / (5000 + bus / bw)
    check(abs(x["busbw_gbps"] - want) < 0.01, f"busbw {x['busbw_gbps']} ~ {want} (FAKENCCL_BUSBW_GBPS {bw})")


def test_figures_above_the_link_are_suspect():
    """An A100's NVLink (a fake sysfs: 300 GB/s each way) under collectives the stand-in NCCL
    runs in 5 us whatever their size, and scripted CUPTI copies: a 1 MiB AllReduce on 4
    ranks is 1.5 MiB / 5 us = 315 GB/s of bus bandwidth, above the link: null, the figure
    under "suspect" with the limit, "suspect" in the text; the smaller collectives and the
    copies within their links stay. The truth: the kernel times nccl_app prints, the script."""
    from test_peer import fake_sysfs
    root = fake_sysfs("0x20b0", "16.0 GT/s PCIe", "16")  # A100 SXM4 40GB: NVLink3 x12
    limit = 12 * 25e9
    try:
        env = {"GPUPROBE_TEST_SYSFS": root, "FAKENCCL_BUSBW_GBPS": "100000"}
        r = gp.gpuprobe(BASE, cmd=[LAUNCHER, "4", "--n", "3", "--subset", "basic"], env=env, timeout=120)
        eq(r.returncode, 0, f"exit status ({r.stderr[-1500:]})")
        t = gp.truth(r.stderr)
        rep = gp.final(r.stdout, "gputime")
        factor = {"AllReduce": lambda n: 2 * (n - 1) / n, "AllGather": lambda n: (n - 1) / n,
                  "ReduceScatter": lambda n: (n - 1) / n, "Broadcast": lambda n: 1.0, "Reduce": lambda n: 1.0}
        seen = {True: 0, False: 0}
        for rk in t["ranks"]:
            p = gp.proc(rep, rk["pid"])
            kns = {}  # (op, size, nranks) -> the kernel time nccl_app scripted
            for cm in rk["comms"]:
                n = cm["nranks"]
                for c in cm["collectives"]:
                    if c["calls"] and c["count"]:
                        size = c["count"] * SIZES[c["dtype"]] * (n if c["op"] in ("AllGather", "ReduceScatter") else 1)
                        kns[(c["op"], size, n)] = c["kernel_ns"]
            for x in p["collectives"]:
                if x["size"] is None or x["nranks"] == 1:
                    continue
                k = (x["op"], x["size"], x["nranks"])
                check(k in kns, f"{k}: a collective of nccl_app's")
                want = x["size"] / kns[k] * factor[x["op"]](x["nranks"]) * 1e9  # B/s
                over = want > limit
                seen[over] += 1
                if over:
                    eq(x["best_busbw_gbps"], None, f"{x['op']} {x['size']} B: best busbw {want / 1e9:.4g} GB/s over {limit}")
                    s_ = x["suspect"]
                    check(s_ and abs(s_["best_busbw_gbps"] - want / 1e9) < want * 1e-12, f"under suspect: {s_}")
                    eq(s_["limit_bytes_per_second"], limit, "with the limit")
                    check("NVLink3 x12" in s_["link"], s_["link"])
                else:
                    check(abs(x["best_busbw_gbps"] - want / 1e9) < want * 1e-12, f"{x['op']} {x['size']}: within")
                if x["suspect"] is None:
                    check(x["busbw_gbps"] * 1e9 <= limit and x["algbw_gbps"] is not None, f"{x}")
                elif "busbw_gbps" in x["suspect"]:
                    eq((x["busbw_gbps"], x["algbw_gbps"]), (None, None), "busbw and its algbw both held back")
        check(seen[True] and seen[False], f"rows above and within the limit: {seen}")
        text = gp.gpuprobe(BASE[:1] + BASE[2:], cmd=[LAUNCHER, "4", "--n", "3", "--subset", "basic"],
                           env=env, timeout=120).stdout
        lines = text.splitlines()
        why = [i for i, l in enumerate(lines) if "suspect, above the limit of NVLink3 x12" in l]
        check(why, f"the text names the link and its limit under a suspect row: {text[-3000:]}")
        for i in why:
            check("(300 GB/s): " in lines[i] and "best busbw " in lines[i], f"the limit and the figure: {lines[i]}")
            check("suspect" in lines[i - 1], f"under the row it explains: {lines[i - 1]}")
        check("Link limits (one direction" in text and "GPU-GPU NVLink3 x12" in text, "the limits line")
        # copies: a P2P copy of 64 MiB in 100 us (671 GB/s) over the 300 GB/s link; H2D within PCIe
        s = "copy,10,3,67108864,100000,0,1;copy,1,2,1048576,100000"
        r, = [gp.gpuprobe(BASE, cmd=[app("launch_app"), "--n", "20"], env={"GPUPROBE_TEST_SYSFS": root,
                                                                            "FAKECUPTI_SCRIPT": s}, timeout=60)]
        eq(r.returncode, 0, f"exit status ({r.stderr[-1500:]})")
        p = gp.proc(gp.final(r.stdout, "gputime"), gp.truth(r.stderr)["pid"])
        p2p = [x for x in p["copies"] if x["kind"] == "P2P"][0]
        h2d = [x for x in p["copies"] if x["kind"] == "H2D"][0]
        eq((p2p["bandwidth_gbps"], p2p["fastest_gbps"]), (None, None), "the P2P copies' GB/s held back")
        check(abs(p2p["suspect"]["bandwidth_gbps"] - 67108864 / 100000) < 1e-6, f"under suspect: {p2p['suspect']}")
        eq(p2p["suspect"]["limit_bytes_per_second"], limit, "the peer link's limit")
        eq(h2d["suspect"], None, "10.5 GB/s H2D within PCIe 4.0 x16")
        check(abs(h2d["bandwidth_gbps"] - 1048576 / 100000) < 1e-9, f"H2D {h2d['bandwidth_gbps']}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_nccl_without_channel_events_host_timed():
    """An NCCL whose kernel channels never report: each collective still comes, at the
    communicator's end at the latest, timed by the host and said to be."""
    r = gp.gpuprobe(BASE, cmd=[LAUNCHER, "2", "--n", "3", "--subset", "basic"],
                    env={"FAKENCCL_PROF_NO_KCH": "1"}, timeout=120)
    eq(r.returncode, 0, f"exit status ({r.stderr[-1500:]})")
    t = gp.truth(r.stderr)
    rep = gp.final(r.stdout, "gputime")
    for rk in t["ranks"]:
        p = gp.proc(rep, rk["pid"])
        want = sum(c["calls"] for cm in rk["comms"] for c in cm["collectives"] if c["count"])
        eq(sum(x["calls"] for x in p["collectives"]), want, f"rank {rk['rank']}: every collective")
        eq(sum(x["gpu_timed_calls"] for x in p["collectives"]), 0, "none said to be GPU-timed")


def test_hostile_sender_counted_and_harmless():
    r = gp.gpuprobe(["--gpu-time", "--json", "--libcuda", FAKECUDA], cmd=["python3", HOSTILE, "20000"], timeout=90)
    eq(r.returncode, 0, f"exit status ({r.stderr[-1500:]})")
    t = gp.truth(r.stderr)
    rep = gp.final(r.stdout, "gputime")
    eq(t["lie"], "refused", "the kernel refuses another PID's credentials to an unprivileged sender")
    check(not [p for p in rep["processes"] if p["pid"] == 1], "nothing credited to the PID claimed")
    child = gp.proc(rep, t["child_pid"])
    eq(sum(k["launches"] for k in child["kernels"]), t["child_sent"], "the child's records are its own")
    eq(rep["refused"]["oversized"], t["oversized"], "oversized datagrams counted")
    eq(rep["refused"]["malformed"], t["malformed"], "malformed datagrams counted")
    me = gp.proc(rep, t["pid"])
    got = sum(k["launches"] for k in me["kernels"])
    eq(got + rep["refused"]["flood"], t["flood_sent"], "every datagram the socket took: read, or counted as a flood")
    eq(rep["drops"]["gputime_refused"], t["oversized"] + t["malformed"], "in the drops too")


def test_one_user_cannot_hold_every_connection():
    """A nobody child holds 1,100 connections to the command's abstract socket (found in
    /proc/net/unix): it gets its user's share (128), the rest are refused and counted, and
    the parent, another user, still connects and every record it sends is read."""
    r = gp.gpuprobe(["--gpu-time", "--json", "--libcuda", FAKECUDA],
                    cmd=["python3", os.path.join(gp.ROOT, "tests", "apps", "gputime_hog.py"), "1100"], timeout=90)
    eq(r.returncode, 0, f"exit status ({r.stderr[-1500:]})")
    t = gp.truth(r.stderr)
    rep = gp.final(r.stdout, "gputime")
    eq(t["hog_connects"], 1100, "the nobody child's connections (the kernel's backlog took each)")
    eq(rep["refused"]["connections_refused"], 1100 - 128, "past the user's share: refused and counted")
    me = gp.proc(rep, t["pid"])
    eq(sum(k["launches"] for k in me["kernels"]), t["sent"], "the other user's records all read")


def test_records_of_a_process_not_followed_refused():
    """The command's abstract socket takes a connection from any local process (its name is
    in /proc/net/unix): this test, no descendant of the command, connects and sends good
    records; they are refused and counted (refused.not_followed), no row is its, and the
    command's own records, sent after, are all read."""
    d = tempfile.mkdtemp(prefix="gp-outsider-")
    g = None
    try:
        g = gp.start_gpuprobe(["--gpu-time", "--json", "-o", "-", "--libcuda", FAKECUDA, "--",
                               "python3", os.path.join(gp.ROOT, "tests", "apps", "gputime_outsider.py"), d])
        deadline = time.time() + 30
        while not os.path.exists(os.path.join(d, "sock")) and time.time() < deadline:
            time.sleep(0.02)
        with open(os.path.join(d, "sock")) as f:
            name = f.read()
        check(name.startswith("@gpuprobe-gputime-"), f"the command's abstract socket: {name}")
        c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        c.connect("\0" + name[1:])
        mine = 7
        for _ in range(mine):
            c.send(struct.pack("<IHH", 0x31545047, 1, 1) +
                   struct.pack("<HHI QQ I 3I 3I 3I", 3, 64, 0, 1000, 1999, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0))
        time.sleep(0.3)  # read (and refused) before the command sends
        c.close()
        open(os.path.join(d, "done"), "w").close()
        eq(g.wait(60), 0, "gpuprobe's exit status")
        t = gp.truth(g.stderr())
        rep = gp.final(g.stdout(), "gputime")
        eq(rep["refused"]["not_followed"], mine, "every datagram of the process not followed refused and counted")
        check(not [p for p in rep["processes"] if p["pid"] == os.getpid()], "no row credited to it")
        me = gp.proc(rep, t["pid"])
        eq(sum(k["launches"] for k in me["kernels"]), t["sent"], "the command's own records all read")
        eq(rep["drops"]["gputime_refused"], mine, "in the drops too")
    finally:
        if g:
            g.kill()
        shutil.rmtree(d, ignore_errors=True)


def test_socket_for_processes_started_elsewhere():
    d = tempfile.mkdtemp(prefix="gpuprobe-gt-", dir="/run")
    os.chmod(d, 0o755)
    sock = os.path.join(d, "gputime.sock")
    g = None
    try:
        g = gp.start_gpuprobe(["--gpu-time", "--gpu-time-socket", sock, "--json", "--libcuda", FAKECUDA,
                               "--duration", "6"])
        check(stat.S_ISSOCK(os.stat(sock).st_mode), "the socket is made")
        s, kernels, _, _, _ = script()
        env = dict(os.environ, GPUPROBE_GPUTIME_SOCK=sock, CUDA_INJECTION64_PATH=CUPTI_LIB,
                   GPUPROBE_CUPTI_LIB=FAKECUPTI, FAKECUPTI_SCRIPT=s)
        a = subprocess.run([app("launch_app"), "--n", "20"], env=env, capture_output=True, text=True, timeout=30)
        eq(a.returncode, 0, "the workload ran")
        t = gp.truth(a.stderr)
        g.wait(30)
        rep = gp.final(g.stdout(), "gputime")
        p = gp.proc(rep, t["pid"])
        eq(sum(k["launches"] for k in p["kernels"]), sum(k["n"] for k in kernels), f"its kernels, credited to it ({p})")
        check(not os.path.exists(sock), "the socket is removed at the end")
    finally:
        if g:
            g.kill()
        shutil.rmtree(d, ignore_errors=True)


def test_socket_folder_others_can_write_refused():
    d = tempfile.mkdtemp(prefix="gpuprobe-gt-", dir="/tmp")
    os.chmod(d, 0o777)
    try:
        r = gp.gpuprobe(["--gpu-time", "--gpu-time-socket", os.path.join(d, "s"), "--libcuda", FAKECUDA,
                         "--duration", "1"])
        gp.one_error_line(r, "must be root's and not writable by group or others")
        check(not os.path.exists(os.path.join(d, "s")), "nothing made there")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_cupti_offsets_match_the_header():
    """src/inject/cupti_decl.h's offsets against CUDA's cupti_activity.h, where it is here."""
    inc = "/usr/local/cuda/include"
    if not os.path.exists(os.path.join(inc, "cupti_activity.h")):
        gp.skip("no CUDA toolkit headers here (/usr/local/cuda/include/cupti_activity.h)")
    fields = {"CUPTI_KERNEL_START": ("CUpti_ActivityKernel10", "start"),
              "CUPTI_KERNEL_END": ("CUpti_ActivityKernel10", "end"),
              "CUPTI_KERNEL_DEVICE": ("CUpti_ActivityKernel10", "deviceId"),
              "CUPTI_KERNEL_STREAM": ("CUpti_ActivityKernel10", "streamId"),
              "CUPTI_KERNEL_GRID": ("CUpti_ActivityKernel10", "gridX"),
              "CUPTI_KERNEL_BLOCK": ("CUpti_ActivityKernel10", "blockX"),
              "CUPTI_KERNEL_CORR": ("CUpti_ActivityKernel10", "correlationId"),
              "CUPTI_KERNEL_NAME": ("CUpti_ActivityKernel10", "name"),
              "CUPTI_COPY_KIND": ("CUpti_ActivityMemcpy6", "copyKind"),
              "CUPTI_COPY_BYTES": ("CUpti_ActivityMemcpy6", "bytes"),
              "CUPTI_COPY_START": ("CUpti_ActivityMemcpy6", "start"),
              "CUPTI_COPY_END": ("CUpti_ActivityMemcpy6", "end"),
              "CUPTI_COPY_DEVICE": ("CUpti_ActivityMemcpy6", "deviceId"),
              "CUPTI_COPY_STREAM": ("CUpti_ActivityMemcpy6", "streamId"),
              "CUPTI_COPY_CORR": ("CUpti_ActivityMemcpy6", "correlationId"),
              "CUPTI_PTOP_SRC_DEVICE": ("CUpti_ActivityMemcpyPtoP4", "srcDeviceId"),
              "CUPTI_PTOP_DST_DEVICE": ("CUpti_ActivityMemcpyPtoP4", "dstDeviceId"),
              "CUPTI_PTOP_CORR": ("CUpti_ActivityMemcpyPtoP4", "correlationId"),
              "CUPTI_MEMSET_BYTES": ("CUpti_ActivityMemset4", "bytes"),
              "CUPTI_MEMSET_START": ("CUpti_ActivityMemset4", "start"),
              "CUPTI_MEMSET_END": ("CUpti_ActivityMemset4", "end"),
              "CUPTI_MEMSET_DEVICE": ("CUpti_ActivityMemset4", "deviceId"),
              "CUPTI_MEMSET_STREAM": ("CUpti_ActivityMemset4", "streamId"),
              "CUPTI_MEMSET_CORR": ("CUpti_ActivityMemset4", "correlationId"),
              "CUPTI_ACTIVITY_KIND_MEMCPY": None, "CUPTI_ACTIVITY_KIND_MEMSET": None,
              "CUPTI_ACTIVITY_KIND_KERNEL": None, "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL": None,
              "CUPTI_ACTIVITY_KIND_MEMCPY2": None}
    ours = {}
    for line in open(os.path.join(gp.ROOT, "src", "inject", "cupti_decl.h")):
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "#define" and parts[1] in fields:
            ours[parts[1]] = int(parts[2])
    eq(sorted(ours), sorted(fields), "every field's offset is declared")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "l.c")
        with open(src, "w") as f:
            f.write("#include <stdio.h>\n#include <stddef.h>\n#include <cupti_activity.h>\nint main(void){\n")
            for k, v in fields.items():
                expr = f"offsetof({v[0]}, {v[1]})" if v else k
                f.write(f'printf("{k} %ld\\n", (long)({expr}));\n')
            f.write("return 0;}\n")
        b = subprocess.run(["gcc", "-I", inc, "-o", os.path.join(d, "l"), src], capture_output=True, text=True)
        eq(b.returncode, 0, f"built against the header ({b.stderr[-800:]})")
        out = subprocess.run([os.path.join(d, "l")], capture_output=True, text=True).stdout
    theirs = {l.split()[0]: int(l.split()[1]) for l in out.splitlines()}
    for k in fields:
        eq(ours[k], theirs[k], f"{k}: ours and cupti_activity.h's")


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
