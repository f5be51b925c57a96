# SPDX-License-Identifier: BSD-3-Clause
"""Peer copies under --bandwidth-util, end to end: real gpuprobe, real BPF, the stand-in
driver in its early-return mode (peer_app: copies between device memory return before they
complete, like the real driver's). Exact copies and bytes per (source GPU, destination GPU)
pair, every copy completed by the synchronization kind the program used, a bandwidth that is
a lower bound of the stand-in's rate (never the API time), and figures above a link's limit
flagged as suspect (a fake sysfs tree with a slow PCIe link)."""
import os
import shutil
import re
import signal
import tempfile

import gp
from gp import FAKECUDA, app, check, eq, proc

APP = app("peer_app")
BASE = ["--bandwidth-util", "--json", "--libcuda", FAKECUDA]
# small sizes keep the run short: 8 + 4 timed copies of 8 MiB 0->1, 4 + 4 of 4 MiB 1->0
ARGS = ["--n", "8", "--size", str(8 << 20), "--n-back", "4", "--size-back", str(4 << 20)]
SYNC_KIND = {"cuCtxSynchronize": "context", "cuStreamSynchronize": "stream", "cuEventSynchronize": "event"}


def run(extra=(), args=ARGS, env=None):
    r = gp.gpuprobe(BASE + list(extra), cmd=[APP] + list(args), env=env, timeout=120)
    eq(r.returncode, 0, f"exit status ({r.stderr[-800:]})")
    t = gp.truth(r.stderr)
    rep = gp.final(r.stdout, "bandwidth")
    return rep, proc(rep, t["pid"]), t


def pairs_of(p):
    return {f"{x['src_gpu']}->{x['dst_gpu']}": x for x in p["pairs"]}


def expected_kinds(t, pair):
    """Copies per synchronization kind, from the program's own groups and its timed copies."""
    want = {"stream": 0, "context": 0, "event": 0, "stream_query": 0, "event_query": 0, "event_elapsed": 0}
    for g in t["groups"]:
        if g["pair"] == pair:
            want[SYNC_KIND[g["sync"]]] += g["copies"]
    want["event"] += t["pairs"][pair]["event_timing"]["copies"]
    return want


def test_pairs_exact_with_their_sync_kinds():
    rep, p, t = run()
    got = pairs_of(p)
    want_pairs = sorted(list(t["pairs"]) + ["0->0"])
    eq(sorted(got), want_pairs, "(source, destination) pairs: both peer directions and GPU 0's own")
    for k, w in t["pairs"].items():
        g = got[k]
        eq([g["copies"], g["bytes"]], [w["copies"], w["bytes"]], f"{k} copies, bytes")
        eq(g["completed_copies"], w["copies"], f"{k}: every copy completed by a synchronization")
        eq(g["completed_by"], expected_kinds(t, k), f"{k}: completed by stream / context / event")
    local = t["not_peer"]["0->0"]
    eq([got["0->0"]["copies"], got["0->0"]["bytes"]], [local["copies"], local["bytes"]], "0->0 (within GPU 0)")
    eq(got["0->0"]["completed_by"], {"stream": 0, "context": local["copies"], "event": 0, "stream_query": 0,
                                     "event_query": 0, "event_elapsed": 0}, "0->0 completed by")
    eq(p["unsynced_async_copies"], 0, "nothing left pending")
    eq(rep["dropped_events"], 0, "dropped events")


def test_peer_bandwidth_is_a_bound_never_the_call_time():
    rep, p, t = run()
    peer_bps = t["peer_bytes_per_s"]
    for k, w in t["pairs"].items():
        g = pairs_of(p)[k]
        bound = g["bytes_per_second_lower_bound"]
        check(bound is not None, f"{k}: a bandwidth from the covering syncs")
        # the stand-in sleeps bytes / rate at least: a true lower bound is never above it, and
        # a loaded machine only stretches the windows (an emulated CPU, GP_TIME_SLACK, that
        # many times more: 6.12 under QEMU's TCG read 0.115x); the upper end is the assertion
        check(0.2 / gp.TIME_SLACK * peer_bps < bound <= 1.02 * peer_bps,
              f"{k}: {bound:.4g} B/s vs the stand-in's {peer_bps:.4g}")
        ev = w["event_timing"]["bytes_per_s"]
        check(bound <= 1.05 * ev, f"{k}: bound {bound:.4g} above the program's CUDA-event figure {ev:.4g}")
        # the calls returned early: their time is far below the window and never a rate
        check(g["api_seconds"] < g["seconds_upper_bound"], f"{k}: API time {g['api_seconds']} vs window")
        eq(g["suspect"], None, f"{k}: within the link's limit")
    for x in p["transfers"]:
        if x["direction"] in ("peer", "D2D"):
            eq(x["sync_copies"], 0, f"{x['gpu']}/{x['direction']}: no copy timed by its call")
            eq(x["bytes_per_second"], None, f"{x['gpu']}/{x['direction']}: no call-time rate")


def fake_sysfs(device, speed, width):
    root = tempfile.mkdtemp(prefix="gp-sysfs-")
    d = os.path.join(root, "bus", "pci", "devices", "0000:41:00.0")
    os.makedirs(d)
    for name, value in [("vendor", "0x10de"), ("class", "0x030200"), ("device", device),
                        ("current_link_speed", speed), ("current_link_width", width),
                        ("max_link_speed", speed), ("max_link_width", width)]:
        with open(os.path.join(d, name), "w") as f:
            f.write(value + "\n")
    # not a GPU: an NVSwitch (bridge class) and another vendor's device are ignored
    for bdf, vendor, cls in [("0000:05:00.0", "0x10de", "0x068000"), ("0000:06:00.0", "0x8086", "0x030000")]:
        e = os.path.join(root, "bus", "pci", "devices", bdf)
        os.makedirs(e)
        for name, value in [("vendor", vendor), ("class", cls), ("device", "0x1234"),
                            ("current_link_speed", "64.0 GT/s PCIe"), ("current_link_width", "16")]:
            with open(os.path.join(e, name), "w") as f:
                f.write(value + "\n")
    return root


def test_rates_above_the_link_are_suspect():
    # one GPU on a 2.5 GT/s x1 link: 250 MB/s; the stand-in's host copies run at 4 GB/s
    env = {"GPUPROBE_TEST_SYSFS": fake_sysfs("0x2335", "2.5 GT/s PCIe", "1")}
    rep, p, t = run(env=env)
    links = rep["links"]
    eq(links["gpus"], 1, "GPUs in the fake sysfs (not the NVSwitch, not the other vendor)")
    eq(links["host"]["name"], "PCIe 2.5 GT/s x1", "host link")
    eq(links["host"]["bytes_per_second"], 2.5e9 * 0.8 / 8, "8b/10b: 250 MB/s")
    eq(links["host"]["read_here"], True, "read from sysfs")
    check("NVLink4 x18" in links["peer"]["name"], f"peer link by device id: {links['peer']['name']}")
    eq(links["peer"]["bytes_per_second"], 450e9, "NVLink4 x18")
    h2d = [x for x in p["transfers"] if x["direction"] == "H2D"]
    eq(len(h2d), 1, "one H2D row")
    eq(h2d[0]["bytes_per_second"], None, "H2D: not printed as a measurement")
    s = h2d[0]["suspect"]
    check(s and s["bytes_per_second"] > s["limit_bytes_per_second"] == 250e6, f"H2D suspect: {s}")
    for k in t["pairs"]:
        eq(pairs_of(p)[k]["suspect"], None, f"{k}: 20 GB/s is within NVLink4")
    r = gp.gpuprobe(["--bandwidth-util", "--libcuda", FAKECUDA], cmd=[APP] + ARGS, env=env, timeout=120)
    eq(r.returncode, 0, "text run")
    check("suspect" in r.stdout and "PCIe 2.5 GT/s x1" in r.stdout, r.stdout[-3000:])


def test_unknown_part_limit_unknown():
    """A GPU whose PCI device id is not in the parts table: its NVLink is not in sysfs, so
    the GPU-GPU and memory limits are unknown (null, and the report says why), not the
    fastest NVLink known posing as this node's; its PCIe link is still read."""
    root = fake_sysfs("0x2b85", "32.0 GT/s PCIe", "16")
    try:
        rep, p, t = run(env={"GPUPROBE_TEST_SYSFS": root})
        links = rep["links"]
        eq(links["peer"]["bytes_per_second"], None, f"peer limit unknown: {links['peer']}")
        check(links["peer"]["name"].startswith("unknown: GPU 0x2b85 not in the parts table"), links["peer"]["name"])
        eq([links["peer"]["read_here"], links["local"]["bytes_per_second"]], [False, None], "memory limit unknown too")
        check(abs(links["host"]["bytes_per_second"] - 32e9 * 16 * 128 / 130 / 8) < 1, "PCIe 5.0 x16 read")
        for k in t["pairs"]:
            x = pairs_of(p)[k]
            eq([x["suspect"], x["limit_bytes_per_second"]], [None, None], f"{k}: nothing held against a guess")
            check(x["bytes_per_second_lower_bound"] > 0, f"{k}: its bound shown")
        r = gp.gpuprobe(["--bandwidth-util", "--libcuda", FAKECUDA], cmd=[APP] + ARGS,
                        env={"GPUPROBE_TEST_SYSFS": root}, timeout=120)
        eq(r.returncode, 0, "text run")
        check("GPU-GPU unknown: GPU 0x2b85 not in the parts table" in r.stdout, r.stdout[-2000:])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_text_matrix():
    r = gp.gpuprobe(["--bandwidth-util", "--libcuda", FAKECUDA], cmd=[APP] + ARGS, timeout=120)
    eq(r.returncode, 0, "exit status")
    t = gp.truth(r.stderr)
    out = r.stdout
    check("GPU x GPU" in out and "rate >=" in out and re.search(r"\d [MG]B/s", out), out[-3000:])
    rows = [re.split(r"\s{2,}", l.strip()) for l in out.splitlines() if l.startswith("    0 ") or l.startswith("    1 ")]
    # the bytes matrix first, in IEC units (JSON has the exact bytes, test_pairs_exact):
    # row 0 is GPU 0 -> (0, 1), row 1 is GPU 1 -> (0, 1)
    eq(rows[0], ["0", iec(t["not_peer"]["0->0"]["bytes"]), iec(t["pairs"]["0->1"]["bytes"])], "bytes row 0")
    eq(rows[1], ["1", iec(t["pairs"]["1->0"]["bytes"]), "-"], "bytes row 1")


def iec(n):
    """Bytes as the text reports print them (src/out/jsonnum.c, num__bytes)."""
    if n < 1024:
        return f"{n} B"
    units, x, u = ["KiB", "MiB", "GiB", "TiB"], n / 1024, 0
    while x >= 1023.5 and u + 1 < len(units):
        x, u = x / 1024, u + 1
    return f"{x:.0f} {units[u]}" if x >= 99.95 else f"{x:.1f} {units[u]}" if x >= 9.995 else f"{x:.2f} {units[u]}"


def test_four_gpus_ring():
    rep, p, t = run(args=ARGS + ["--devices", "4"], env={"FAKECUDA_DEVICES": "4"})
    got = pairs_of(p)
    for k, w in t["pairs"].items():
        eq([got[k]["copies"], got[k]["bytes"], got[k]["completed_copies"]],
           [w["copies"], w["bytes"], w["copies"]], f"{k}")
    eq(len([k for k in got if k.split("->")[0] != k.split("->")[1]]), 4, "peer pairs of a 4-GPU ring")


def test_attach_to_running_pid_gpus_unknown():
    a = gp.start_app([APP, "--wait"] + ARGS)
    try:
        g = gp.start_gpuprobe(["--bandwidth-util", "--json", "-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
        eq(g.wait(), 0, "gpuprobe exit")
        t = gp.truth(a.stderr())
        p = proc(gp.final(g.stdout(), "bandwidth"), a.pid)
        # contexts and allocations were made before the attach: GPUs unknown, never
        # guessed; every copy whose entry point says device memory is still counted, and
        # completed by its sync; unified ones (cuMemcpy*) cannot be told from host copies
        unified = sum(c["copies"] for w in t["pairs"].values() for n, c in w["by_call"].items()
                      if n.startswith("cuMemcpy") and n.split("_")[0] in ("cuMemcpy", "cuMemcpyAsync"))
        got = pairs_of(p)
        eq(sorted(got), ["None->None"], "one pair of unknown GPUs")
        total = sum(w["copies"] for w in t["pairs"].values()) + t["not_peer"]["0->0"]["copies"] - unified
        check(unified > 0, "the run has unified copies")
        eq(got["None->None"]["copies"], total, "copies between device memory")
        eq(got["None->None"]["completed_copies"], total, "all completed")
        h2h = [x for x in p["transfers"] if x["direction"] == "H2H"]
        eq(sum(x["copies"] for x in h2h), unified, "unified copies of untracked memory: H2H")
    finally:
        a.kill()


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
