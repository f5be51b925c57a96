# SPDX-License-Identifier: BSD-3-Clause
"""--bandwidth-util end to end: real gpuprobe, real BPF, the stand-in driver (whose copies
take bytes / FAKECUDA_BW seconds), exact copies and bytes per GPU and direction."""
import os
import re
import signal
import tempfile

import gp
from gp import FAKECUDA, app, check, eq, proc

APP = app("copy_app")
BASE = ["--bandwidth-util", "--json", "--libcuda", FAKECUDA]
BW = 2e9  # bytes/s of the stand-in's copies in these tests
ENV = {"FAKECUDA_BW": str(BW)}


def final(text):
    return gp.final(text, "bandwidth")


def by_key(p):
    return {("-" if t["gpu"] is None else str(t["gpu"])) + "/" + t["direction"]: t for t in p["transfers"]}


def check_transfers(p, t, extra_small=0):
    got = by_key(p)
    want = t["transfers"]
    eq(sorted(got), sorted(want), "(gpu, direction) pairs")
    for k, w in want.items():
        g = got[k]
        small = extra_small if k == "0/H2D" else 0
        eq(g["copies"], w["copies"] + small, f"{k} copies")
        eq(g["bytes"], w["bytes"] + 100 * small, f"{k} bytes")
        eq(g["pageable_copies"], w["pageable_copies"], f"{k} pageable copies")
        eq(g["async_synced_copies"], g["async_copies"], f"{k}: every async copy synchronized")
    return got


def run(extra=(), app_args=(), env=ENV):
    r = gp.gpuprobe(BASE + list(extra), cmd=[APP] + list(app_args), env=env)
    eq(r.returncode, 0, f"exit status ({r.stderr[-600:]})")
    t = gp.truth(r.stderr)
    rep = final(r.stdout)
    return rep, proc(rep, t["pid"]), t


def test_every_entry_point_exact_with_min_bytes():
    rep, p, t = run(["--min-bytes", "1000"])
    check_transfers(p, t)
    eq(rep["small_copies"], t["small_copies"], "small copies")
    eq(rep["small_bytes"], t["small_bytes"], "small bytes")
    eq(rep["zero_byte_copies"], t["zero_byte_copies"], "zero-byte copies")
    eq(rep["failed_copies"], t["failed_copies"], "failed copies")
    eq(rep["dropped_events"], 0, "dropped events")
    eq(p["unsynced_async_copies"], 0, "unsynchronized async copies")
    eq(p["comm"], "copy_app", "comm")


def test_small_copies_are_traffic_without_min_bytes():
    rep, p, t = run()
    check_transfers(p, t, extra_small=t["small_copies"])
    eq(rep["small_copies"], 0, "no --min-bytes: nothing is small")


def test_bandwidth_matches_the_stand_in():
    rep, p, t = run(["--min-bytes", "1000"], ["--size", str(8 << 20), "--n", "2"])
    for k, x in by_key(p).items():
        if x["sync_copies"] and x["sync_bytes"] >= (8 << 20):
            bps = x["bytes_per_second"]
            # sleeps are never shorter than asked: never above the stand-in's rate; a loaded
            # machine only makes them longer, hence the loose lower bound
            check(0.3 * BW < bps <= 1.02 * BW, f"{k}: {bps:.3g} B/s vs the stand-in's {BW:.3g}")
        if x["async_synced_copies"]:
            # the window from submission to sync covers at least the transfers themselves
            check(x["async_seconds_upper_bound"] >= 0.9 * x["async_bytes"] / BW,
                  f"{k}: async upper bound {x['async_seconds_upper_bound']} < transfer time")


def test_csv_rows_appended_with_one_header():
    path = os.path.join(tempfile.mkdtemp(prefix="gp-csv-"), "pcie.csv")
    for _ in range(2):
        rep, p, t = run(["--min-bytes", "1000", "--csv", path])
    rows = open(path).read().splitlines()
    eq(rows[0], "timestamp,gpu,h2d_bytes,d2h_bytes,d2d_bytes,h2d_bytes_per_s,d2h_bytes_per_s", "header")
    eq(sum(1 for r in rows if r.startswith("timestamp")), 1, "header written once")
    data = [r.split(",") for r in rows[1:]]
    eq(sorted(r[1] for r in data), ["0", "0", "1", "1"], "one row per GPU per report")
    row0 = [r for r in data if r[1] == "0"][-1]
    w = t["transfers"]
    eq(int(row0[2]), w["0/H2D"]["bytes"], "gpu 0 H2D bytes")
    eq(int(row0[3]), w["0/D2H"]["bytes"], "gpu 0 D2H bytes")
    eq(int(row0[4]), w["0/D2D"]["bytes"] + w["0/peer"]["bytes"], "gpu 0 D2D (and peer) bytes")


def test_attach_to_running_pid():
    a = gp.start_app([APP, "--wait"], env=ENV)
    try:
        g = gp.start_gpuprobe(["--bandwidth-util", "--json", "--min-bytes", "1000", "-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
        eq(g.wait(), 0, "gpuprobe exit")
        t = gp.truth(a.stderr())
        p = proc(final(g.stdout()), a.pid)
        # the contexts were made before gpuprobe attached: no device is known for them, so
        # the GPU is reported unknown (null) rather than guessed, and a unified copy between
        # two unknown GPUs is device-to-device; the cuMemcpyPeer* calls stay peer copies
        got = by_key(p)
        check(all(k.startswith("-/") for k in got), f"GPU must be unknown: {sorted(got)}")
        want = {}
        for k, w in t["transfers"].items():
            d = k.split("/")[1]
            x = want.setdefault(d, [0, 0])
            x[0] += w["copies"]
            x[1] += w["bytes"]
        n, size = 4, t["size"]
        want["D2D"][0] += n
        want["D2D"][1] += n * size
        want["peer"][0] -= n
        want["peer"][1] -= n * size
        eq({k.split("/")[1]: [v["copies"], v["bytes"]] for k, v in got.items()}, want,
           "copies and bytes per direction")
    finally:
        a.kill()


def test_gpu_of_a_context_made_before_the_attach():
    """The context was made before the -p attach; the process then asks cuCtxGetDevice (as
    PyTorch does thousands of times a second) and copies: the copies are named with that
    GPU (before: unknown, '-'), and without the ask they would stay unknown. Asked the
    CUDA 13 way too (cuCtxGetDevice_v2 with no context: what PyTorch called on the H200)."""
    for how in ([], ["--v2"]):
        one_context_before_the_attach(how)


def one_context_before_the_attach(how):
    a = gp.start_app([app("ctxdev_app"), "--wait", "--dev", "1", "--n", "5"] + how, env=ENV)
    try:
        g = gp.start_gpuprobe(["--bandwidth-util", "--json", "--min-bytes", "1000", "-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
        eq(g.wait(), 0, "gpuprobe exit")
        t = gp.truth(a.stderr())
        got = by_key(proc(final(g.stdout()), a.pid))
        eq(sorted(got), [f"{t['gpu']}/H2D"], f"the copies' GPU, from cuCtxGetDevice {how}")
        eq([got[f"{t['gpu']}/H2D"]["copies"], got[f"{t['gpu']}/H2D"]["bytes"]], [t["copies"], t["bytes"]],
           "copies and bytes")
    finally:
        a.kill()


def test_all_modes_together():
    r = gp.gpuprobe(["--memleak", "--cudatrace", "--bandwidth-util", "--json", "--min-bytes", "1000",
                     "--libcuda", FAKECUDA], cmd=[APP], env=ENV)
    eq(r.returncode, 0, "exit status")
    t = gp.truth(r.stderr)
    check_transfers(proc(final(r.stdout), t["pid"]), t)
    m = proc(gp.final(r.stdout, "memleak"), t["pid"])
    eq(m["outstanding_allocs"], 4, "memleak: 3 device buffers and the pinned host buffer")


def test_text_report():
    """The text report's process line says the copies and bytes that JSON counts (the
    workload copies the same every run), the exact byte count beside the IEC figure; rates
    are SI bytes per second; no drop line when nothing was dropped."""
    r = gp.gpuprobe(["--bandwidth-util", "--json", "--libcuda", FAKECUDA], cmd=[APP, "--n", "1"], env=ENV)
    t = gp.truth(r.stderr)
    p = proc(final(r.stdout), t["pid"])
    copies, nbytes = sum(x["copies"] for x in p["transfers"]), sum(x["bytes"] for x in p["transfers"])
    r = gp.gpuprobe(["--bandwidth-util", "--libcuda", FAKECUDA], cmd=[APP, "--n", "1"], env=ENV)
    eq(r.returncode, 0, "exit status")
    check("bandwidth final report" in r.stdout, r.stdout)
    check(re.search(r"^PID \d+ \(copy_app\) exited: %s copies, \S+ [KMG]iB \(%s B\)$" % (f"{copies:,}", f"{nbytes:,}"),
                    r.stdout, re.M), f"{copies} copies, {nbytes} bytes in\n{r.stdout[:600]}")
    check(re.search(r"\d [MG]B/s", r.stdout) and "MiB/s" not in r.stdout, "rates in SI bytes per second")
    check("Dropped events" not in r.stdout, "no drop line when none was dropped")


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
