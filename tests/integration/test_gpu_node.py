# SPDX-License-Identifier: BSD-3-Clause
"""The node checks of issue 20 (tests/gpu/check_node.py, run on the GPU machines) tried
here, where there is no GPU: the stand-in's real --bandwidth-util and --nccl reports give
the fields gpuprobe writes besides the figures (links, libraries, drops); the figures are
those a gpuprobe that saw exactly what nccl_node.py's plan (`nccl_node.py --plan N`) and
peer_matrix's construction say would write, for 2, 4 and 8 GPUs and each way PyTorch may
reach NCCL. The checker must pass them, name the reading that explains them, and fail
when one call, one byte, one matrix cell or one bound is off."""
import copy
import json
import os
import subprocess
import sys
import tempfile

import gp
from gp import check, eq

GPU = os.path.join(gp.ROOT, "tests", "gpu")
FAKENCCL = os.path.join(gp.OUT, "fakenccl", "libnccl.so.2")
MI = 1 << 20


def template(mode, args, cmd):
    r = gp.gpuprobe([f"--{mode}", "--json", "--libcuda", gp.FAKECUDA] + args, cmd, timeout=120)
    eq(r.returncode, 0, f"gpuprobe --{mode} on the stand-in")
    return gp.final(r.stdout, "nccl" if mode == "nccl" else "bandwidth")


def plan(n):
    out = subprocess.run([sys.executable, os.path.join(GPU, "nccl_node.py"), "--plan", str(n)],
                         capture_output=True, text=True, check=True).stdout
    ranks = [json.loads(x) for x in out.splitlines()]
    for rk in ranks:  # the script's own timing: 10 ms a call of host window
        for b in rk["batches"]:
            b["host_ms"] = 10.0 * b["calls"]
            b["ms"] = 9.0 * b["calls"]
            b["busbw"] = b["size"] / 9e-3 * b["busbw_factor"]
            b["busbw_host"] = b["size"] / 10e-3 * b["busbw_factor"]
    return ranks


def bucket(size):
    lo = 1 << (size.bit_length() - 1)
    return [lo, 2 * lo - 1]


def comm_of(rk, b, p2p):
    """(name, comm_id, nranks, rank in it, made_by) of the communicator a batch runs on."""
    r, n = rk["rank"], rk["nranks"]
    if b["group"].startswith("tp"):
        p = int(b["group"][2:])
        return b["group"], f"0x2{p:015x}", 2, r % 2, "ncclCommSplit"
    if b["group"] == "ring" and p2p == "pair":
        lo, hi = min(r, b["peer"]), max(r, b["peer"])
        return f"pair{lo}:{hi}", f"0x3{lo:07x}{hi:08x}", 2, 0 if r == lo else 1, "ncclCommInitRankConfig"
    return "world", "0x1000000000000001", n, r, "ncclCommInitRankConfig"


def model(rk, a2a, p2p):
    """The comms gpuprobe would report for one rank: the plan's calls, as NCCL is called."""
    comms = {}
    for b in rk["batches"]:
        name, cid, nr, me, made = comm_of(rk, b, p2p)
        cm = comms.setdefault(name, {"comm_id": cid, "handle": "0x1", "nranks": nr, "rank": me,
                                     "device": rk["device"], "shape_from": "init", "made_by": made,
                                     "parent_id": "0x1000000000000001" if made == "ncclCommSplit" else None,
                                     "destroyed": True, "collectives": [], "p2p": [], "completion": [],
                                     "unattributed_bytes": 0})
        host = b["host_ms"] / 1e3 * 0.9  # gpuprobe's window lies inside the script's
        if b["op"] == "AlltoAll" and a2a == "send_recv":
            for q in range(rk["nranks"]):
                for d in ("send", "recv"):
                    cm["p2p"].append({"peer": q, "direction": d, "calls": b["calls"], "bytes": b["bytes"], "api_seconds": 1e-5})
            continue
        if b["group"] == "ring":
            peer = b["peer"] if p2p == "world" else 1 - me
            cm["p2p"].append({"peer": peer, "direction": b["direction"], "calls": b["calls"], "bytes": b["bytes"],
                              "api_seconds": 1e-5})
        else:
            cm["collectives"].append({"op": b["op"], "call": "nccl" + b["op"], "dtype": b["dtype"], "calls": b["calls"],
                                      "bytes": b["bytes"], "api_seconds": 1e-5})
        size = b["size"] * b["calls"]
        cm["completion"].append({"op": b["op"], "call": "nccl" + b["op"], "size_bucket": bucket(b["size"]),
                                 "calls": b["calls"], "size_bytes": size, "seconds_upper_bound": host,
                                 "algbw_bytes_per_second_lower_bound": size / host,
                                 "busbw_bytes_per_second_lower_bound": size / host * b["busbw_factor"],
                                 "completed_by": "context"})
    return comms


def nccl_report(tmpl, ranks, a2a, p2p):
    rep = copy.deepcopy(tmpl)
    rep["processes"], mats = [], {}
    for rk in ranks:
        comms = model(rk, a2a, p2p)
        rep["processes"].append({"pid": rk["pid"], "comm": "python3", "exited": True, "exec": False,
                                 "calls": sum(c["calls"] for cm in comms.values() for c in cm["collectives"] + cm["p2p"]),
                                 "groups": 0, "failed_calls": 0,
                                 "bad_calls": {"null_comm": 0, "destroyed_comm": 0, "unknown_dtype": 0},
                                 "nested_calls": 0, "init_all_calls": 0, "unsynced_calls": 0,
                                 "comms": list(comms.values())})
        for cm in comms.values():
            m = mats.setdefault(cm["comm_id"], {"comm_id": cm["comm_id"], "nranks": cm["nranks"],
                                                "pids_by_rank": [None] * cm["nranks"],
                                                "p2p_bytes": [[0] * cm["nranks"] for _ in range(cm["nranks"])],
                                                "collective_bytes_inferred": [], "inference": "inferred"})
            m["pids_by_rank"][cm["rank"]] = rk["pid"]
            for x in cm["p2p"]:
                if x["direction"] == "send":
                    m["p2p_bytes"][cm["rank"]][x["peer"]] += x["bytes"]
    rep["communicators"] = list(mats.values())
    return rep


def metrics(ranks, a2a, p2p, per_pid):
    lines = ["gpuprobe_series 42", "process_cpu_seconds_total 1.5", "process_resident_memory_bytes 2.5e+07",
             'gpuprobe_events_dropped_total{mode="nccl",reason="ringbuf_full"} 0']
    for rk in ranks:
        pid = f',pid="{rk["pid"]}"' if per_pid else ""
        for cm in model(rk, a2a, p2p).values():
            base = f'comm="python3"{pid},comm_id="{cm["comm_id"]}",rank="{cm["rank"]}"'
            for c in cm["collectives"]:
                lb = f'{base},op="{c["op"]}",call="{c["call"]}",dtype="{c["dtype"]}"'
                lines += [f"gpuprobe_nccl_calls_total{{{lb}}} {c['calls']}", f"gpuprobe_nccl_bytes_total{{{lb}}} {c['bytes']}"]
            for x in cm["p2p"]:
                lb = f'{base},peer="{x["peer"]}",direction="{x["direction"]}"'
                lines += [f"gpuprobe_nccl_p2p_calls_total{{{lb}}} {x['calls']}",
                          f"gpuprobe_nccl_p2p_bytes_total{{{lb}}} {x['bytes']}"]
    return "\n".join(lines) + "\n"


def checker(*args):
    r = subprocess.run([sys.executable, os.path.join(GPU, "check_node.py")] + list(args),
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def dumps(report):
    """One JSON line as gpuprobe writes it (no spaces: the checkers look for '"mode":"nccl"')."""
    return json.dumps(report, separators=(",", ":")) + "\n"


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def accounts(ranks, alltoall):
    out = []
    for rk in ranks:
        rk = dict(rk, alltoall=alltoall)
        out.append(json.dumps(rk))
    return "\n".join(out) + "\n"


def test_nccl_node_plan_counts_follow_the_gpu_count():
    for n in (2, 3, 4, 8):
        ranks = plan(n)
        eq(len(ranks), n, f"{n} rank accounts")
        tp = [b for rk in ranks for b in rk["batches"] if b["group"].startswith("tp")]
        eq(len(tp), 2 * (n // 2), f"{n} GPUs: a tensor-parallel AllReduce batch per member of {n // 2} pairs")
        sends = {(rk["rank"], b["peer"]): b["bytes"] for rk in ranks for b in rk["batches"] if b["op"] == "Send"}
        recvs = {(b["peer"], rk["rank"]): b["bytes"] for rk in ranks for b in rk["batches"] if b["op"] == "Recv"}
        eq(sends, recvs, f"{n} GPUs: every ring send has its receive, same bytes")
        eq(sorted(sends), sorted((r, (r + 1) % n) for r in range(n)), f"{n} GPUs: ring neighbours")


def test_check_nccl_passes_each_reading_and_names_it():
    tmpl = template("nccl", ["--libnccl", FAKENCCL], [gp.app("nccl_launcher.sh"), "2", "--n", "1", "--subset", "basic"])
    with tempfile.TemporaryDirectory() as d:
        for n, a2a, p2p in ((2, "ncclAlltoAll", "pair"), (4, "ncclAlltoAll", "world"), (4, "send_recv", "pair"),
                            (8, "send_recv", "world"), (8, "ncclAlltoAll", "pair")):
            ranks = plan(n)
            err = write(d, "job.err", accounts(ranks, a2a))
            rep = write(d, "nccl.jsonl", dumps(nccl_report(tmpl, ranks, a2a, p2p)))
            rc, out = checker("nccl", err, rep)
            eq(rc, 0, f"{n} GPUs, AlltoAll {a2a}, send/recv on {p2p}: PASS\n{out[-3000:]}")
            check(f"AlltoAll as {a2a}" in out and ("a communicator per pair" if p2p == "pair" else "the world") in out,
                  f"the reading named ({n}, {a2a}, {p2p})")


def test_check_nccl_fails_one_call_one_byte_one_cell_one_bound():
    tmpl = template("nccl", ["--libnccl", FAKENCCL], [gp.app("nccl_launcher.sh"), "2", "--n", "1", "--subset", "basic"])
    ranks = plan(4)
    good = nccl_report(tmpl, ranks, "ncclAlltoAll", "pair")

    def bad_call(r):
        r["processes"][1]["comms"][0]["collectives"][0]["calls"] += 1

    def bad_byte(r):
        r["processes"][2]["comms"][1]["p2p"][0]["bytes"] += 1

    def bad_cell(r):
        r["communicators"][1]["p2p_bytes"][0][1] += 4

    def bad_bound(r):
        r["processes"][0]["comms"][0]["completion"][0]["busbw_bytes_per_second_lower_bound"] = 1e9

    def bad_extra(r):
        r["processes"][3]["comms"].append(dict(r["processes"][3]["comms"][0], comm_id="0x9"))

    with tempfile.TemporaryDirectory() as d:
        err = write(d, "job.err", accounts(ranks, "ncclAlltoAll"))
        for f in (bad_call, bad_byte, bad_cell, bad_bound, bad_extra):
            r = copy.deepcopy(good)
            f(r)
            rc, out = checker("nccl", err, write(d, "nccl.jsonl", dumps(r)))
            eq(rc, 1, f"{f.__name__}: FAIL\n{out[-1500:]}")
            check("WRONG" in out, f"failed by a check, not a missing report\n{out[-1500:]}")


def test_check_daemon_scrapes():
    ranks = plan(4)
    with tempfile.TemporaryDirectory() as d:
        err = write(d, "job.err", accounts(ranks, "ncclAlltoAll"))
        for per_pid in (False, True):
            s = os.path.join(d, f"scrapes{int(per_pid)}")
            os.mkdir(s)
            write(s, "0001.prom", "gpuprobe_series 3\nprocess_cpu_seconds_total 1\nprocess_resident_memory_bytes 2e7\n")
            write(s, "0002.prom", metrics(ranks, "ncclAlltoAll", "pair", per_pid))
            rc, out = checker("daemon", err, s)
            eq(rc, 0, f"daemon, pid labels {per_pid}: PASS\n{out[-2000:]}")
            check("2 scrapes" in out and "max 42" in out and "RSS max 25.0 MB" in out, f"figures printed\n{out}")
            wrong = metrics(ranks, "ncclAlltoAll", "pair", per_pid).replace(" 20\n", " 21\n", 1)
            write(s, "0002.prom", wrong)
            rc, out = checker("daemon", err, s)
            eq(rc, 1, f"one counter off by one: FAIL\n{out[-1500:]}")
            check("WRONG" in out, f"failed by a check, not a missing report\n{out[-1500:]}")
        s = os.path.join(d, "swapped")
        os.mkdir(s)
        swapped = metrics(ranks, "ncclAlltoAll", "pair", True)
        swapped = swapped.replace(f'pid="{ranks[0]["pid"]}"', 'pid="X"').replace(
            f'pid="{ranks[1]["pid"]}"', f'pid="{ranks[0]["pid"]}"').replace('pid="X"', f'pid="{ranks[1]["pid"]}"')
        write(s, "0001.prom", swapped)
        rc, out = checker("daemon", err, s)
        eq(rc, 1, f"two ranks' pids swapped: FAIL\n{out[-1500:]}")
        check("WRONG" in out, f"failed by a check, not a missing report\n{out[-1500:]}")


def peer_truth(n):
    batches, k = [], 0
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            size = (64 + 16 * k) * MI
            for name, call, sync, c, sz in (("warmup", "cudaMemcpyPeer", "device", 1, MI),
                                            ("peer_sync", "cudaMemcpyPeer", "device", 4 + k, size),
                                            ("peer_async", "cudaMemcpyPeerAsync", "stream", 4 + k, size),
                                            ("memcpy_async", "cudaMemcpyAsync", "event", 4 + k, size)):
                nb = c * sz
                batches.append({"name": name, "call": call, "sync": sync, "src": i, "dst": j, "copies": c, "size": sz,
                                "bytes": nb, "event_ms": nb / 380e9 * 1e3, "event_bytes_per_s": 380e9,
                                "host_ms": nb / 360e9 * 1e3, "host_bytes_per_s": 360e9})
            k += 1
    return {"pid": 4242, "api": "peer_matrix", "gpus": n, "peer_access": True, "batches": batches}


def peer_report(tmpl, t):
    rep = copy.deepcopy(tmpl)
    pairs = {}
    for b in t["batches"]:
        p = pairs.setdefault((b["src"], b["dst"]), {"src_gpu": b["src"], "dst_gpu": b["dst"], "copies": 0, "bytes": 0,
                                                    "completed_by": {"stream": 0, "context": 0, "event": 0}, "s": 0.0})
        p["copies"] += b["copies"]
        p["bytes"] += b["bytes"]
        p["completed_by"][{"device": "context"}.get(b["sync"], b["sync"])] += b["copies"]
        p["s"] += b["bytes"] / 370e9
    for p in pairs.values():
        s = p.pop("s")
        p.update({"api_seconds": 1e-4, "completed_copies": p["copies"], "completed_bytes": p["bytes"],
                  "seconds_upper_bound": s, "bytes_per_second_lower_bound": p["bytes"] / s,
                  "limit_bytes_per_second": 450e9, "suspect": None})
    rep["processes"] = [{"pid": t["pid"], "comm": "peer_matrix", "exited": True, "exec": False, "transfers": [],
                         "pairs": list(pairs.values()), "unsynced_async_copies": 0}]
    return rep


def test_check_peer_matrix():
    tmpl = template("bandwidth-util", [], [gp.app("peer_app")])
    with tempfile.TemporaryDirectory() as d:
        for n in (2, 8):
            t = peer_truth(n)
            err = write(d, "peer.err", json.dumps(t) + "\n")
            rc, out = checker("peer", err, write(d, "bw.jsonl", dumps(peer_report(tmpl, t))))
            eq(rc, 0, f"{n} GPUs: PASS\n{out[-2000:]}")
            check(f"{n}x{n} cells, = the program's" in out and "all distinct" in out, f"{n}x{n} matrix checked")
        t = peer_truth(4)
        err = write(d, "peer.err", json.dumps(t) + "\n")
        for what in ("bytes", "copies", "bound", "diagonal"):
            r = peer_report(tmpl, t)
            p = r["processes"][0]["pairs"]
            if what == "bytes":
                p[5]["bytes"] += 1
            elif what == "copies":
                p[7]["copies"] -= 1
            elif what == "bound":
                p[3]["bytes_per_second_lower_bound"] = 500e9
            else:
                p.append(dict(p[0], src_gpu=2, dst_gpu=2))
            rc, out = checker("peer", err, write(d, "bw.jsonl", dumps(r)))
            eq(rc, 1, f"{what} off: FAIL\n{out[-1500:]}")
            check("WRONG" in out, f"failed by a check, not a missing report\n{out[-1500:]}")


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
