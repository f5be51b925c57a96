# SPDX-License-Identifier: BSD-3-Clause
"""Compares gpuprobe --bandwidth-util --json with copy_cuda's own account: exact copies
and bytes per direction, pageable copies, and gpuprobe's measured bandwidth against the
program's CUDA-event bandwidth. usage: check_bandwidth.py WORKLOAD_STDERR GPUPROBE_STDOUT"""
import json
import sys


def main():
    t = None
    for line in reversed(open(sys.argv[1], errors="replace").read().splitlines()):
        if line.startswith("{") and '"batches"' in line:
            t = json.loads(line)
            break
    if not t:
        sys.exit("FAIL: no workload account")
    reps = [json.loads(l) for l in open(sys.argv[2]) if l.startswith('{"mode":"bandwidth"')]
    fin = [r for r in reps if r["report"] == "final"][0]
    p = [x for x in fin["processes"] if x["pid"] == t["pid"]][0]
    want = {}
    for b in t["batches"]:
        w = want.setdefault(b["dir"], {"copies": 0, "bytes": 0, "pageable_copies": 0})
        w["copies"] += b["copies"]
        w["bytes"] += b["bytes"]
        w["pageable_copies"] += b["pageable_copies"]
    ok = True
    got = {}
    for x in p["transfers"]:
        print(f"gpu {x['gpu']} {x['direction']}: copies={x['copies']} bytes={x['bytes']} "
              f"sync={x['sync_copies']} ({x['sync_seconds']:.4f}s, "
              f"{(x['bytes_per_second'] or 0) / 1e9:.2f} GB/s; pinned "
              f"{(x['pinned_bytes_per_second'] or 0) / 1e9:.2f} GB/s, pageable "
              f"{(x['pageable_bytes_per_second'] or 0) / 1e9:.2f} GB/s) async={x['async_copies']} "
              f"(synced {x['async_synced_copies']}, <= {x['async_seconds_upper_bound']:.4f}s) "
              f"pageable={x['pageable_copies']}")
        g = got.setdefault(x["direction"], {"copies": 0, "bytes": 0, "pageable_copies": 0})
        for k in g:
            g[k] += x[k]
    for d, w in want.items():
        g = got.get(d, {})
        good = g == w
        ok &= good
        print(f"  {'ok' if good else 'WRONG'} {d}: gpuprobe {g} vs workload {w}")
    for extra in sorted(set(got) - set(want)):
        print(f"  other direction seen: {extra} {got[extra]} (the runtime's own copies?)")
    print("bandwidth, sync batches (gpuprobe: bytes / time in the copy call; workload: CUDA events):")
    for b in t["batches"]:
        ev = b["bytes"] / (b["event_ms"] / 1e3) / 1e9
        print(f"  {b['name']:20s} CUDA events {ev:7.2f} GB/s")
    # issue 34: the async batches sit between two events on their stream; gpuprobe reads
    # the program's cudaEventElapsedTime: its rate from events must be >= 0.8x the program's
    print("async batches, rate from CUDA events (gpuprobe reads the program's cudaEventElapsedTime):")
    for d in ("H2D", "D2H"):
        bs = [b for b in t["batches"] if b["name"].startswith("async") and b["dir"] == d]
        rows = [x for x in p["transfers"] if x["direction"] == d and x.get("async_signals")]
        if not bs or not rows:
            continue
        own = sum(b["bytes"] for b in bs) / (sum(b["event_ms"] for b in bs) / 1e3)
        e = rows[0]["async_signals"]["event_elapsed"]
        by = {k: v["bytes_per_second_lower_bound"] for k, v in rows[0]["async_signals"]["by_signal"].items()
              if v["bytes"]}
        r = e["bytes_per_second"] or 0
        good = e["bytes"] == sum(b["bytes"] for b in bs) and r >= 0.8 * own and rows[0]["suspect"] is None
        ok &= good
        print(f"  {'ok' if good else 'WRONG'} {d}: from events {r / 1e9:.2f} GB/s ({e['bytes']} B, {e['windows']} windows) "
              f"vs the program's {own / 1e9:.2f} GB/s (ratio {r / own:.3f}, >= 0.8 wanted); by signal (>=): "
              + ", ".join(f"{k} {(v or 0) / 1e9:.2f} GB/s" for k, v in by.items()))
    print(f"small={fin['small_copies']} zero={fin['zero_byte_copies']} failed={fin['failed_copies']} "
          f"dropped={fin['dropped_events']} unsynced={p['unsynced_async_copies']}")
    print("RESULT:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
