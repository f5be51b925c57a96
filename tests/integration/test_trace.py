# SPDX-License-Identifier: BSD-3-Clause
"""--trace end to end: every exported cu* function of the stand-in, one record per call,
JSON Lines and Chrome trace files checked against the format, drops counted exactly."""
import json
import os
import signal
import tempfile

import gp
from gp import FAKECUDA, app, check, eq, proc

TMP = tempfile.mkdtemp(prefix="gp-trace-")
BW = 2e9


def path(name):
    return os.path.join(TMP, name)


def read_jsonl(p):
    recs = [json.loads(l) for l in open(p)]  # every line must parse
    check(recs and recs[-1]["type"] == "summary", "the last line is the summary")
    for r in recs:
        check(r["type"] in ("process", "call", "ioctl", "counter", "instant", "summary"),
              f"record type {r['type']}")
        if r["type"] == "call":
            for k in ("ts_ns", "pid", "tid", "fn", "dur_ns", "ret", "args"):
                check(k in r, f"call record without {k}: {r}")
        if r["type"] == "instant":
            for k in ("ts_ns", "pid", "tid", "name", "args"):
                check(k in r, f"instant record without {k}: {r}")
    return recs


def calls_of(recs, pid):
    out = {}
    for r in recs:
        if r["type"] == "call" and r["pid"] == pid:
            out[r["fn"]] = out.get(r["fn"], 0) + 1
    return out


def trace_run(out, app_argv, extra=(), env=None):
    r = gp.gpuprobe(["--trace", out, "--json", "--libcuda", FAKECUDA] + list(extra), cmd=app_argv, env=env)
    eq(r.returncode, 0, f"exit status ({r.stderr[-600:]})")
    summary = [json.loads(l) for l in r.stdout.splitlines() if l.startswith('{"mode":"trace"')]
    eq(len(summary), 1, "one summary on stdout")
    return r, summary[0]


def test_launch_counts_per_function():
    out = path("launch.jsonl")
    r, s = trace_run(out, [app("launch_app"), "--n", "20"])
    t = gp.truth(r.stderr)
    recs = read_jsonl(out)
    c = calls_of(recs, t["pid"])
    n = 20
    want = {"cuLaunchKernel": n + 2 * n + n + 3, "cuLaunchKernel_ptsz": n // 2, "cuLaunchKernelEx": n,
            "cuLaunchKernelEx_ptsz": n, "cuLaunchCooperativeKernel": n // 4,
            "cuLaunchCooperativeKernel_ptsz": n // 4, "cuGraphLaunch": n // 10,
            "cuGraphLaunch_ptsz": n // 10, "cuStreamSynchronize": 5, "cuStreamSynchronize_ptsz": 1,
            "cuCtxSynchronize": 2, "cuCtxSynchronize_v2": 1, "cuEventSynchronize": 3,
            "cuModuleGetFunction": 3, "cuLibraryGetKernel": 2, "cuKernelGetFunction": 1}
    for fn, k in want.items():
        eq(c.get(fn), k, f"calls of {fn}")
    p = proc(s, t["pid"])
    eq(p["launches"], sum(v["launches"] for v in t["kernels"].values()) + 3, "summary launches")
    eq(p["graph_launches"], t["graph_launches"], "summary graph launches")
    eq(p["sync"]["calls"], t["syncs"], "summary sync calls")
    errs = {f["name"]: f["errors"] for f in p["functions"]}
    eq(errs["cuLaunchKernel"], 3, "failed launches (NULL handle)")
    eq(s["dropped_events"], 0, "dropped")
    eq(recs[-1]["events_written"], s["events_written"], "summary in the file")
    # decoded launches: kernel names, grid and block (blockDimZ from the stack)
    k1 = [x for x in recs if x["type"] == "call" and x["args"].get("kernel") == "k1(float*, int)"]
    eq(len(k1), 2 * n, "k1 launches named in the timeline")
    eq((k1[0]["args"]["grid"], k1[0]["args"]["block"]), ([128, 1, 1], [128, 1, 1]), "k1 shape")
    ex = [x for x in recs if x["type"] == "call" and x["fn"] == "cuLaunchKernelEx"]
    eq((ex[0]["args"]["grid"], ex[0]["args"]["block"], ex[0]["args"].get("kernel")),
       ([2, 2, 2], [32, 4, 1], "lib_kernel_a"), "cuLaunchKernelEx decoded from its config")
    check(p["launch_gaps"] and p["launch_gaps"][0]["gap_s"] > 0, "launch gaps reported")


def test_copies_allocations_and_durations():
    out = path("copy.jsonl")
    r, s = trace_run(out, [app("copy_app")], env={"FAKECUDA_BW": str(BW)})
    t = gp.truth(r.stderr)
    recs = read_jsonl(out)
    p = proc(s, t["pid"])
    eq(p["allocations"]["calls"], 4, "allocations (3 device, 1 pinned host)")
    total_bytes = sum(v["bytes"] for v in t["transfers"].values())
    total_copies = sum(v["copies"] for v in t["transfers"].values())
    # the 2D and 3D copies' sizes live in descriptors --trace does not read; the small and
    # zero-byte copies are copies; the two failed ones are not counted
    got_bytes = sum(v["bytes"] for v in p["copies"].values())
    got_copies = sum(v["copies"] for v in p["copies"].values())
    eq(p["copies_undecoded"], 2, "2D/3D copies")
    eq(got_bytes, total_bytes - 1024 * 64 - 512 * 8 * 2 + t["small_bytes"], "copied bytes")
    eq(got_copies, total_copies - 2 + t["small_copies"] + t["zero_byte_copies"], "copies")
    eq(p["copies"]["H2H"]["copies"], t["transfers"]["-/H2H"]["copies"], "host to host")
    # synchronous copies take bytes / FAKECUDA_BW in the stand-in
    big = [x for x in recs if x["type"] == "call" and x["fn"] == "cuMemcpyHtoD_v2"
           and x["args"].get("bytes", 0) >= 1 << 20]
    check(big, "large HtoD copies in the timeline")
    for x in big:
        want = x["args"]["bytes"] / BW * 1e9
        check(0.95 * want <= x["dur_ns"] <= 3 * want * gp.TIME_SLACK, f"copy of {x['args']['bytes']} took {x['dur_ns']} ns")
    allocs = [x for x in recs if x["type"] == "call" and x["fn"] == "cuMemAlloc_v2"]
    check(len(allocs) == 3 and all(x["args"]["address"][:4] in ("0x7e", "0x7f") and x["args"]["size"] > 0
              for x in allocs),
          "allocations decoded")


def test_ctx_get_device_is_no_copy():
    # cuCtxGetDevice and _v2 are --bandwidth-util's calls but no copies: none is counted
    # among the copies --trace could not decode
    for v2 in ([], ["--v2"]):
        fn = "cuCtxGetDevice_v2" if v2 else "cuCtxGetDevice"
        out = path(fn + ".jsonl")
        r, s = trace_run(out, [app("ctxdev_app"), "--asks", "7", "--n", "3"] + v2)
        t = gp.truth(r.stderr)
        c = calls_of(read_jsonl(out), t["pid"])
        eq(c.get(fn), 7, f"{fn}_calls")
        p = proc(s, t["pid"])
        eq(p["copies_undecoded"], 0, f"{fn}_undecoded")
        eq(sum(v["copies"] for v in p["copies"].values()), t["copies"], f"{fn}_copies")
        eq(sum(v["bytes"] for v in p["copies"].values()), t["bytes"], f"{fn}_bytes")


def test_chrome_format_and_convert():
    jl, ch = path("c.jsonl"), path("c.json")
    trace_run(jl, [app("launch_app"), "--n", "20"])
    r, s = trace_run(ch, [app("launch_app"), "--n", "20"], extra=["--trace-format", "chrome"])
    for f in (ch,):
        doc = json.load(open(f))
        evs = doc["traceEvents"]
        xs = [e for e in evs if e["ph"] == "X"]
        meta = [e for e in evs if e["ph"] == "M"]
        check(xs and meta, "complete and metadata events")
        for e in xs:
            for k in ("name", "ph", "ts", "dur", "pid", "tid", "args"):
                check(k in e, f"X event without {k}")
            check(e["dur"] >= 0 and isinstance(e["ts"], (int, float)), "numbers")
        check(any(m["name"] == "process_name" for m in meta), "process track named")
        eq(len(xs), s["events_written"], "X events = calls written")
        eq(doc["otherData"]["dropped_events"], 0, "drops in the file")
    conv = gp.run([gp.GPUPROBE, "convert", "--chrome", jl])
    eq(conv.returncode, 0, f"convert exit ({conv.stderr})")
    doc = json.loads(conv.stdout)
    calls = sum(1 for r in read_jsonl(jl) if r["type"] == "call")
    eq(sum(1 for e in doc["traceEvents"] if e["ph"] == "X"), calls, "converted events")
    bad = gp.run([gp.GPUPROBE, "convert", "--chrome", "/nonexistent.jsonl"])
    gp.one_error_line(bad, "No such file or directory")


def test_long_kernel_names_whole():
    """Kernel names past 255 bytes (name_app's 288-character one) whole and demangled in
    the launch records of both formats."""
    ch = path("names.json")
    r, s = trace_run(ch, [app("name_app"), "--n", "2"], extra=["--trace-format", "chrome"])
    t = gp.truth(r.stderr)
    longest = max((h for h in t["handles"]), key=lambda h: len(h["name"]))
    check(len(longest["name"]) > 255 and len(longest["mangled"]) > 255, "the workload's long name")
    evs = json.load(open(ch))["traceEvents"]
    made = [e for e in evs if e["ph"] == "X" and e["name"] == "cuModuleGetFunction" and
            e["args"].get("name") == longest["mangled"]]
    eq(len(made), 1, "the naming call carries the whole mangled name")
    launches = [e for e in evs if e["ph"] == "X" and e["args"].get("kernel") == longest["name"]]
    eq(len(launches), longest["launches"], "launches named with the whole demangled name")


def test_filter():
    out = path("f.jsonl")
    r, s = trace_run(out, [app("memleak_app"), "--allocs", "5", "--leaks", "2"],
                     extra=["--trace-filter", "cuMem*"])
    fns = {x["fn"] for x in read_jsonl(out) if x["type"] == "call"}
    check(fns and all(f.startswith("cuMem") for f in fns), f"only cuMem*: {sorted(fns)}")
    eq(calls_of(read_jsonl(out), gp.truth(r.stderr)["pid"]).get("cuMemAlloc_v2"), 5, "allocs")
    bad = gp.gpuprobe(["--trace", path("x.jsonl"), "--trace-filter", "nothing*", "--libcuda", FAKECUDA])
    gp.one_error_line(bad, "no exported cu* function matches")


def test_drops_are_counted_exactly():
    argv = [app("launch_app"), "--n", "200"]
    r, full = trace_run(path("d0.jsonl"), argv)
    total = full["events_written"]
    r, s = trace_run(path("d1.jsonl"), argv, extra=["--ringbuf-size", "4096"],
                     env={"GPUPROBE_TEST_STALL_MS": "1500"})
    drops = s["drops"]["ringbuf_full"]
    check(drops > 0, "a 4 KiB ring buffer and a late consumer must drop")
    eq(s["events_written"] + drops, total, "written + dropped = every call")
    eq(s["dropped_events"], drops, "dropped_events")
    eq(read_jsonl(path("d1.jsonl"))[-1]["drops"]["ringbuf_full"], drops, "drops in the file")


def test_attach_to_running_pid():
    a = gp.start_app([app("memleak_app"), "--wait", "--allocs", "6", "--leaks", "1"])
    try:
        out = path("p.jsonl")
        g = gp.start_gpuprobe(["--trace", out, "-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
        eq(g.wait(), 0, "gpuprobe exit")
        c = calls_of(read_jsonl(out), a.pid)
        eq(c.get("cuMemAlloc_v2"), 6, "allocations after attach")
        eq(c.get("cuMemFree_v2"), 5, "frees")
        check("trace summary" in g.stdout(), g.stdout())
    finally:
        a.kill()


def test_ioctls_interleave():
    """With --ioctl, each ioctl is a record of the timeline, decoded, on a track of its own."""
    n = 10
    for fmt, out in (("jsonl", path("i.jsonl")), ("chrome", path("i.json"))):
        r, s = trace_run(out, [app("ioctl_app"), "--n", str(n)],
                         extra=["--ioctl", "--ioctl-dev", "1:mem", "--trace-format", fmt])
        t = gp.truth(r.stderr)
        # RM_CONTROL n + 3, RM_ALLOC n/2, RM_FREE n/5, CARD_INFO 2, UVM 1 + 4, unknown 5
        want = n + 3 + n // 2 + n // 5 + 2 + 1 + 4 + 5
        p = proc(s, t["pid"])
        eq(p["ioctls"]["calls"], want, f"{fmt}: ioctls in the summary")
        eq(p["ioctls"]["errors"], want, f"{fmt}: every ioctl on /dev/null fails")
        if fmt == "jsonl":
            io = [x for x in read_jsonl(out) if x["type"] == "ioctl"]
            eq(len(io), want, "ioctl records")
            names = {x["fn"] for x in io}
            check({"NV_ESC_RM_CONTROL", "NV_ESC_RM_ALLOC", "UVM_INITIALIZE"} <= names, f"decoded: {names}")
            ctl = [x for x in io if x["fn"] == "NV_ESC_RM_CONTROL"]
            check(any(x["args"].get("ctrl_cmd") == "0x20800110" for x in ctl), "control command")
        else:
            doc = json.load(open(out))
            tracks = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"
                      and e["args"]["name"].startswith("ioctl")]
            check(tracks, "an ioctl track")
            eq(sum(1 for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") == "ioctl"), want,
               "ioctl events on the Chrome timeline")


def test_unwritable_file():
    r = gp.gpuprobe(["--trace", "/nonexistent/dir/t.jsonl", "--libcuda", FAKECUDA], cmd=["true"])
    gp.one_error_line(r, "/nonexistent/dir/t.jsonl")
    gp.assert_nothing_attached()


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
