# SPDX-License-Identifier: BSD-3-Clause
"""Checks gpuprobe's view of a multi-GPU node (any GPU count) against the programs' own
accounts (issue 20). Like check_nccl.py, for peer_matrix and nccl_node.py:

  check_node.py peer  PEER_STDERR BANDWIDTH_JSONL
      the GPU x GPU matrices of copies and bytes exact (every cell, the diagonal 0), every
      pair completed by the sync kinds the program used, each pair's bandwidth lower bound
      <= the link limit the report gives, >= the program's host-window figure and <= its
      CUDA-event figure (+5 %), nothing suspect.
  check_node.py nccl  JOB_STDERR NCCL_JSONL [BANDWIDTH_JSONL]
      per rank and communicator (world, tensor-parallel pair, send/recv pair) the calls and
      bytes per op and dtype and per peer and direction exact, nothing else; one comm_id per
      communicator on all its ranks, rank and device right, the splits' parent the world;
      the p2p matrices exact; every busbw lower bound <= the link limit (the peer link of
      BANDWIDTH_JSONL's report, else NVLink4 x18) and >= the script's host-window figure.
  check_node.py daemon JOB_STDERR SCRAPE_DIR
      the daemon's /metrics scrapes (SCRAPE_DIR/NNNN.prom, one a second): series count, the
      daemon's CPU seconds and RSS (its process_* metrics), and the last scrape's
      gpuprobe_nccl_* counters per communicator and rank exact against the job's account
      (with pid labels, each rank's process too).
How all_to_all_single and new_group reach NCCL: tests/gpu/nccl_node.py's docstring. Where
PyTorch's build decides (AlltoAll native or grouped send/recv; single send/recv on the world
communicator or on one made for the pair), every combination is tried and the one that
explains every count exactly is named; none: FAIL. Exits non-zero when a check fails."""
import glob
import json
import os
import re
import sys

# the NCCL check's readers (beside this file, on sys.path as the script's folder)
from check_nccl import NVLINK4_X18, final, truths, verdict  # noqa: E402


def show(title, m):
    print(f"  {title} (rows: from, columns: to)")
    print("        " + "".join(f"{c:>16d}" for c in range(len(m))))
    for r, row in enumerate(m):
        print(f"  {r:4d}  " + "".join(f"{v:>16d}" for v in row))


# ---- peer_matrix ----

def peer_want(t):
    n = t["gpus"]
    copies, nbytes = [[0] * n for _ in range(n)], [[0] * n for _ in range(n)]
    per = {}
    for b in t["batches"]:
        s, d = b["src"], b["dst"]
        copies[s][d] += b["copies"]
        nbytes[s][d] += int(b["bytes"])
        w = per.setdefault((s, d), {"by": {"stream": 0, "context": 0, "event": 0}, "ev_s": 0.0, "host_s": 0.0, "bytes": 0})
        w["by"][{"device": "context"}.get(b["sync"], b["sync"])] += b["copies"]
        w["ev_s"] += b["event_ms"] / 1e3
        w["host_s"] += b["host_ms"] / 1e3
        w["bytes"] += int(b["bytes"])
    return copies, nbytes, per


def check_pair(k, g, w):
    ok = verdict(g["completed_by"] == w["by"], f"{k}: completed by {g['completed_by']} vs {w['by']}")
    bound, limit = g["bytes_per_second_lower_bound"], g["limit_bytes_per_second"]
    ev, host = w["bytes"] / w["ev_s"], w["bytes"] / w["host_s"]
    ok &= verdict(g["suspect"] is None and bound is not None and limit and bound <= limit,
                  f"{k}: gpuprobe >= {(bound or 0) / 1e9:.1f} GB/s, limit {(limit or 0) / 1e9:.0f} GB/s, not suspect "
                  f"({g['suspect']}); API time {g['api_seconds'] * 1e3:.2f} ms for a window <= "
                  f"{g['seconds_upper_bound'] * 1e3:.2f} ms")
    b = bound or 0
    ok &= verdict(0.999 * host <= b <= 1.05 * ev,
                  f"{k}: host window {host / 1e9:.1f} <= gpuprobe {b / 1e9:.1f} <= CUDA events {ev / 1e9:.1f} GB/s "
                  f"(ratio to events {b / ev:.3f})")
    return ok


def check_peer(err, out):
    t = truths(err, "peer_matrix")
    if not t:
        sys.exit("FAIL: no peer_matrix account")
    t = t[-1]
    n = t["gpus"]
    rep = final(out, "bandwidth")
    p = [x for x in rep["processes"] if x["pid"] == t["pid"]]
    if not p:
        sys.exit(f"FAIL: peer_matrix (PID {t['pid']}) not in the report")
    p = p[0]
    lk = rep["links"]
    print(f"{n} GPUs, peer access {t['peer_access']}; links: host {lk['host']['name']} "
          f"{(lk['host']['bytes_per_second'] or 0) / 1e9:.1f} GB/s; peer {lk['peer']['name']} "
          f"{(lk['peer']['bytes_per_second'] or 0) / 1e9:.1f} GB/s")
    copies, nbytes, per = peer_want(t)
    gc, gb = [[0] * n for _ in range(n)], [[0] * n for _ in range(n)]
    ok = True
    for x in p["pairs"]:
        s, d = x["src_gpu"], x["dst_gpu"]
        if not (0 <= s < n and 0 <= d < n):
            ok = verdict(False, f"pair {s}->{d} outside the {n} GPUs")
            continue
        gc[s][d] += x["copies"]
        gb[s][d] += x["bytes"]
    show("copies, gpuprobe", gc)
    show("bytes, gpuprobe", gb)
    ok &= verdict(gc == copies, f"copies matrix, {n}x{n} cells, = the program's")
    ok &= verdict(gb == nbytes, f"bytes matrix, {n}x{n} cells, = the program's")
    cells = [v for r in nbytes for v in r if v]
    print(f"  (the program's {len(cells)} cells are {'all distinct' if len(set(cells)) == len(cells) else 'NOT distinct'})")
    pairs = {(x["src_gpu"], x["dst_gpu"]): x for x in p["pairs"]}
    for k, w in sorted(per.items()):
        g = pairs.get(k)
        ok &= check_pair(f"{k[0]}->{k[1]}", g, w) if g else verdict(False, f"{k}: no pair in the report")
    for x in p["transfers"]:
        ok &= verdict(x["suspect"] is None, f"gpu {x['gpu']} {x['direction']}: not suspect ({x['suspect']})")
    print(f"dropped={rep['dropped_events']} unsynced={p['unsynced_async_copies']}")
    return ok


# ---- what each rank's communicators must hold ----

def key_p2p(peer, d):
    return f"p2p {peer} {d}"


def add(content, k, calls, nbytes):
    c = content.setdefault(k, [0, 0])
    c[0] += calls
    c[1] += nbytes


def expected(rk, a2a, p2p):
    """{name: (rank in that communicator, {entry: [calls, bytes]})} for one rank under one
    hypothesis: a2a 'ncclAlltoAll' or 'send_recv'; p2p 'world' or 'pair'."""
    n, r = rk["nranks"], rk["rank"]
    out = {"world": (r, {})}
    for b in rk["batches"]:
        g, op = b["group"], b["op"]
        if op == "AlltoAll" and a2a == "send_recv":
            per = b["bytes"]
            for q in range(n):  # every rank, itself included
                add(out["world"][1], key_p2p(q, "send"), b["calls"], per)
                add(out["world"][1], key_p2p(q, "recv"), b["calls"], per)
        elif g == "ring" and p2p == "world":
            add(out["world"][1], key_p2p(b["peer"], b["direction"]), b["calls"], b["bytes"])
        elif g == "ring":
            lo, hi = min(r, b["peer"]), max(r, b["peer"])
            me = 0 if r == lo else 1
            name = f"pair{lo}:{hi}"
            out.setdefault(name, (me, {}))
            add(out[name][1], key_p2p(1 - me, b["direction"]), b["calls"], b["bytes"])
        elif g.startswith("tp"):
            out.setdefault(g, (r % 2, {}))
            add(out[g][1], f"{op} {b['dtype']}", b["calls"], b["bytes"])
        else:
            add(out["world"][1], f"{op} {b['dtype']}", b["calls"], b["bytes"])
    return out


def observed_json(p):
    out = []
    for cm in p["comms"]:
        content = {}
        for c in cm["collectives"]:
            add(content, f"{c['op']} {c['dtype']}", c["calls"], c["bytes"])
        for x in cm["p2p"]:
            add(content, key_p2p(x["peer"], x["direction"]), x["calls"], x["bytes"])
        out.append((cm, content))
    return out


def match(want, got):
    """Each wanted (name, (rank, content)) to one observed (obj, rank, content) with equal
    rank and content; every observed with counts used. Returns {name: obj} or None."""
    left, found = list(got), {}
    for name, (rank, content) in sorted(want.items()):
        hit = [i for i, (_, rk, c) in enumerate(left) if c == content and rk == rank]
        if not hit:
            return None
        found[name] = left.pop(hit[0])[0]
    return found if all(not c for _, _, c in left) else None


HYPOTHESES = [(a, p) for a in ("ncclAlltoAll", "send_recv") for p in ("pair", "world")]


def explain(ranks, observe):
    """The first hypothesis under which every rank's communicators match; observe(rk,
    want) gives the observed list for a rank. Returns (a2a, p2p, {rank: {name: obj}})."""
    for a2a, p2p in HYPOTHESES:
        found = {}
        for rk in ranks:
            m = match(expected(rk, a2a, p2p), observe(rk))
            if m is None:
                break
            found[rk["rank"]] = m
        else:
            return a2a, p2p, found
    return None, None, None


def diff(rk, got):
    """Shows what the expected contents (first hypothesis) and gpuprobe's differ in."""
    want = expected(rk, rk["alltoall"], "pair")
    print(f"  rank {rk['rank']}: no reading explains it; expected (AlltoAll {rk['alltoall']}, send/recv on pair "
          "communicators), then gpuprobe's:")
    for name, (r, c) in sorted(want.items()):
        print(f"    want {name} rank {r}: {json.dumps(c, sort_keys=True)}")
    for _, r, c in got:
        print(f"    got  rank {r}: {json.dumps(c, sort_keys=True)}")


# ---- the NCCL report ----

def same_ids(found, ranks, what):
    """One comm_id per communicator, on all its ranks; distinct communicators distinct."""
    ids = {}
    for r, m in found.items():
        for name, cm in m.items():
            ids.setdefault(name, set()).add(cm[what] if isinstance(cm, dict) else cm)
    ok = True
    for name, s in sorted(ids.items()):
        ok &= verdict(len(s) == 1 and None not in s, f"communicator {name}: one {what} on its ranks: {sorted(map(str, s))}")
    flat = [next(iter(s)) for s in ids.values() if len(s) == 1]
    ok &= verdict(len(flat) == len(set(flat)), f"{len(flat)} communicators, {len(set(flat))} distinct {what}s")
    return ok, {name: next(iter(s)) for name, s in ids.items() if len(s) == 1}


def check_shapes(rk, m, world_id):
    ok = True
    for name, cm in sorted(m.items()):
        want_n = rk["nranks"] if name == "world" else 2
        want_r = rk["rank"] if name == "world" else (rk["rank"] % 2 if name.startswith("tp") else None)
        ok &= verdict(cm["nranks"] == want_n and (want_r is None or cm["rank"] == want_r) and cm["device"] == rk["device"],
                      f"rank {rk['rank']} {name}: {cm['comm_id']} nranks {cm['nranks']} rank {cm['rank']} GPU "
                      f"{cm['device']} by {cm['made_by']} (shape from {cm['shape_from']})")
        if name.startswith("tp"):
            note = "as nccl_node.py says" if cm["made_by"] == "ncclCommSplit" else "NOT the split nccl_node.py says"
            print(f"    {name}: made by {cm['made_by']}, parent {cm.get('parent_id')} ({note})")
            if cm["made_by"] == "ncclCommSplit":
                ok &= verdict(cm.get("parent_id") == world_id, f"rank {rk['rank']} {name}: split from the world")
    return ok


def buckets(rk, name, op):
    """The script's batches of one op on the communicator called name."""
    def on(b):
        if b["group"] != "ring":
            return b["group"] == name
        if name.startswith("pair"):
            return str(b["peer"]) in name[4:].split(":")
        return name == "world"
    return [b for b in rk["batches"] if b["op"] == op and on(b)]


def check_bw(rk, m, a2a, limit):
    ok = True
    for name, cm in sorted(m.items()):
        for c in cm["completion"]:
            lo, hi = c["size_bucket"]
            if name == "world" and a2a == "send_recv" and c["op"] in ("Send", "Recv"):
                print(f"    {name} {c['op']} {lo}-{hi}: AlltoAll's sends and receives in it, not compared")
                continue
            bs = [b for b in buckets(rk, name, c["op"]) if lo <= b["size"] <= hi]
            if not bs:
                ok = verdict(False, f"rank {rk['rank']} {name} {c['op']} [{lo}, {hi}]: no batch of the script")
                continue
            calls = sum(b["calls"] for b in bs)
            host_s = sum(b["host_ms"] for b in bs) / 1e3
            host = sum(b["size"] * b["calls"] for b in bs) / host_s * bs[0]["busbw_factor"]
            ev = sum(b["busbw"] for b in bs) / len(bs)
            gp = c["busbw_bytes_per_second_lower_bound"] or 0
            ok &= verdict(c["calls"] == calls and 0.999 * host <= gp <= limit,
                          f"rank {rk['rank']} {name:9s} {c['op']:13s} {bs[0]['size'] >> 10:8d} KiB x {c['calls']:3d} "
                          f"(script {calls}): busbw gpuprobe >= {gp / 1e9:7.1f} GB/s, script host window "
                          f"{host / 1e9:7.1f}, CUDA events {ev / 1e9:7.1f} GB/s (by {c['completed_by']})")
    return ok


def check_matrices(rep, found, ranks, a2a, p2p):
    """The p2p_bytes matrix of each communicator that carries send/recv, cell by cell."""
    ok = True
    n = ranks[0]["nranks"]
    by_id = {m["comm_id"]: m for m in rep["communicators"]}
    want = {}
    for rk in ranks:
        for name, (rank, content) in expected(rk, a2a, p2p).items():
            cid = found[rk["rank"]][name]["comm_id"]
            size = n if name == "world" else 2
            w = want.setdefault(cid, (name, [[0] * size for _ in range(size)]))[1]
            for k, (calls, nbytes) in content.items():
                if k.startswith("p2p ") and k.endswith(" send"):
                    w[rank][int(k.split()[1])] += nbytes
    for cid, (name, w) in sorted(want.items(), key=lambda x: x[1][0]):
        g = by_id.get(cid)
        if not g:
            ok &= verdict(not any(map(any, w)), f"{name} {cid}: no matrix (nothing sent)")
            continue
        if any(map(any, w)) or any(map(any, g["p2p_bytes"])):
            show(f"{name} {cid} ncclSend bytes, gpuprobe", g["p2p_bytes"])
        ok &= verdict(g["p2p_bytes"] == w, f"{name} {cid}: p2p_bytes matrix {len(w)}x{len(w)} exact")
        print(f"    pids by rank {g['pids_by_rank']}")
    return ok


def peer_limit(path):
    if not path:
        return NVLINK4_X18, "NVLink4 x18 (no bandwidth report given)"
    lk = final(path, "bandwidth")["links"]["peer"]
    return lk["bytes_per_second"], f"{lk['name']} (the bandwidth report's peer link)"


def check_nccl(err, out, bw=None):
    ranks = sorted(truths(err, "torch_nccl_node"), key=lambda r: r["rank"])
    if not ranks or len(ranks) != ranks[0]["nranks"]:
        sys.exit(f"FAIL: {len(ranks)} rank accounts for {ranks[0]['nranks'] if ranks else '?'} ranks")
    rep = final(out, "nccl")
    procs = {p["pid"]: p for p in rep["processes"]}
    limit, lname = peer_limit(bw)
    print(f"{len(ranks)} ranks on {ranks[0]['gpus']} GPUs, torch {ranks[0].get('torch')} NCCL {ranks[0].get('nccl')}; "
          f"the script says AlltoAll reaches NCCL as {ranks[0]['alltoall']}; link limit {limit / 1e9:.0f} GB/s {lname}")
    missing = [rk["rank"] for rk in ranks if rk["pid"] not in procs]
    if missing:
        print(f"  WRONG ranks {missing} not in the report")
        return False

    def observe(rk):
        return [(cm, cm["rank"], c) for cm, c in observed_json(procs[rk["pid"]])]

    a2a, p2p, found = explain(ranks, observe)
    if not found:
        for rk in ranks:
            diff(rk, observe(rk))
        return verdict(False, "every rank's communicators explained exactly")
    ok = verdict(True, f"every call and byte of every rank and communicator exact: AlltoAll as {a2a}, single "
                       f"send/recv on {'the world communicator' if p2p == 'world' else 'a communicator per pair'}")
    ok &= verdict(a2a == ranks[0]["alltoall"], f"AlltoAll as the script found in torch's imports ({ranks[0]['alltoall']})")
    same, ids = same_ids(found, ranks, "comm_id")
    ok &= same
    for rk in ranks:
        p = procs[rk["pid"]]
        print(f"rank {rk['rank']} PID {rk['pid']}: {len(p['comms'])} communicators, {p['calls']} calls, groups "
              f"{p['groups']}, failed {p['failed_calls']}, nested {p['nested_calls']}, unsynced {p['unsynced_calls']}")
        ok &= check_shapes(rk, found[rk["rank"]], ids.get("world"))
        ok &= check_bw(rk, found[rk["rank"]], a2a, limit)
    ok &= check_matrices(rep, found, ranks, a2a, p2p)
    for lib in rep["libraries"]:
        print(f"libnccl {lib['path']}: {lib['probed_calls']} calls probed, missing {lib['missing_calls']}")
    ok &= verdict(rep["dropped_events"] == 0, f"dropped {rep['dropped_events']} {rep['drops']}")
    return ok


# ---- the daemon's scrapes ----

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(path):
    out = []
    for line in open(path, errors="replace"):
        m = SAMPLE.match(line)
        if m and not line.startswith("#"):
            out.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def one(samples, name):
    v = [x for n, _, x in samples if n == name]
    return v[0] if v else None


def observed_metrics(samples, per_pid):
    """{(comm_id, rank, pid): content} from the gpuprobe_nccl_* counters."""
    out = {}
    for name, lb, v in samples:
        if not name.startswith("gpuprobe_nccl_") or "comm_id" not in lb:
            continue
        k = (lb["comm_id"], int(lb["rank"]) if lb.get("rank", "").isdigit() else lb.get("rank"),
             lb.get("pid") if per_pid else None)
        c = out.setdefault(k, {})
        what = {"gpuprobe_nccl_calls_total": (0, "col"), "gpuprobe_nccl_bytes_total": (1, "col"),
                "gpuprobe_nccl_p2p_calls_total": (0, "p2p"), "gpuprobe_nccl_p2p_bytes_total": (1, "p2p")}.get(name)
        if not what or not v:
            continue
        ek = f"{lb['op']} {lb['dtype']}" if what[1] == "col" else key_p2p(lb["peer"], lb["direction"])
        c.setdefault(ek, [0, 0])[what[0]] += int(v)
    return out


def scrape_figures(files):
    rows = [(f, parse(f)) for f in files]
    series = [one(s, "gpuprobe_series") or 0 for _, s in rows]
    rss = [one(s, "process_resident_memory_bytes") or 0 for _, s in rows]
    cpu = [one(s, "process_cpu_seconds_total") or 0 for _, s in rows]
    print(f"  {len(rows)} scrapes; gpuprobe_series first {series[0]:.0f}, max {max(series):.0f}, last {series[-1]:.0f}; "
          f"{len(rows[-1][1])} samples in the last")
    print(f"  daemon CPU {cpu[0]:.2f} s at the first scrape, {cpu[-1]:.2f} s at the last "
          f"(+{cpu[-1] - cpu[0]:.2f} s over the scrapes); RSS max {max(rss) / 1e6:.1f} MB, last {rss[-1] / 1e6:.1f} MB")
    drops = [(lb, x) for n, lb, x in rows[-1][1] if n == "gpuprobe_events_dropped_total" and x]
    print(f"  events dropped (every mode): {[(lb.get('mode'), lb.get('reason'), x) for lb, x in drops] or 'none'}")
    return rows[-1][1], sum(x for lb, x in drops if lb.get("mode") in ("nccl", "all"))


def check_daemon(err, folder):
    ranks = sorted(truths(err, "torch_nccl_node"), key=lambda r: r["rank"])
    files = sorted(glob.glob(os.path.join(folder, "*.prom")))
    if not ranks or not files:
        sys.exit(f"FAIL: {len(ranks)} rank accounts, {len(files)} scrapes")
    last, dropped = scrape_figures(files)
    per_pid = any("pid" in lb for n, lb, _ in last if n.startswith("gpuprobe_nccl_"))
    obs = observed_metrics(last, per_pid)
    print(f"  {'with' if per_pid else 'without'} pid labels: {len(obs)} (communicator, rank) series groups")
    pid_of = {rk["rank"]: str(rk["pid"]) for rk in ranks}
    for a2a, p2p in HYPOTHESES:
        want = {}
        for rk in ranks:
            for name, (rank, content) in expected(rk, a2a, p2p).items():
                want[(rk["rank"], name)] = (rank, content)
        left, found = dict(obs), {}
        for (r, name), (rank, content) in sorted(want.items()):
            hit = [k for k, c in left.items() if c == content and k[1] == rank and (not per_pid or k[2] == pid_of[r])]
            if not hit:
                break
            found[(r, name)] = hit[0][0]
            del left[hit[0]]
        else:
            if all(not c for c in left.values()):
                break
    else:
        for k, c in sorted(obs.items(), key=str):
            print(f"    got {k}: {json.dumps(c, sort_keys=True)}")
        return verdict(False, "the daemon's NCCL counters explained exactly by the job's account")
    ok = verdict(True, f"the daemon's gpuprobe_nccl_* counters: every rank and communicator exact "
                       f"({len(found)} (rank, communicator) groups; AlltoAll as {a2a}, send/recv on {p2p})")
    byname = {}
    for (r, name), cid in found.items():
        byname.setdefault(name, set()).add(cid)
    ok &= verdict(all(len(s) == 1 for s in byname.values()) and len({next(iter(s)) for s in byname.values()}) == len(byname),
                  f"one comm_id per communicator on all its ranks ({len(byname)} communicators)")
    ok &= verdict(dropped == 0, f"no NCCL events dropped ({dropped:.0f})")
    return ok


def main():
    what, args = (sys.argv[1] if len(sys.argv) > 1 else ""), sys.argv[2:]
    if what == "peer" and len(args) == 2:
        ok = check_peer(*args)
    elif what == "nccl" and len(args) in (2, 3):
        ok = check_nccl(*args)
    elif what == "daemon" and len(args) == 2:
        ok = check_daemon(*args)
    else:
        sys.exit(__doc__)
    print("RESULT:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
