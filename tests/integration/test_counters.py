# SPDX-License-Identifier: BSD-3-Clause
"""Counter tracks and process events in --trace timelines (real BPF, the stand-in driver):
the changes of the running totals (launches, copy bytes) add up exactly to what the
final reports count, reaping between samples included; outstanding bytes follow a
workload that holds its leaks; fork, exec and exit of every process of a tree are
instant events; Chrome output passes the Trace Event Format checker and convert carries
every counter and instant over."""
import json
import os
import shutil
import signal
import sys
import tempfile
import time

import gp
from gp import FAKECUDA, GPUPROBE, app, check, eq

TMP = tempfile.mkdtemp(prefix="gp-counters-")
sys.path.insert(0, os.path.join(gp.ROOT, "tests", "tools"))
import check_chrome_trace  # noqa: E402


def path(name):
    return os.path.join(TMP, name)


def jsonl(p):
    return [json.loads(l) for l in open(p)]


def run_traced(out, modes, cmd, extra=()):
    r = gp.gpuprobe(["--trace", out, "--json", "--libcuda", FAKECUDA] + modes + list(extra), cmd=cmd)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-800:]})")
    return r


def sums(recs, name):
    """{pid: {series: sum of the values}} of the counter records of one track."""
    out = {}
    for x in recs:
        if x["type"] == "counter" and x["name"] == name:
            d = out.setdefault(x["pid"], {})
            for k, v in x["values"].items():
                d[k] = d.get(k, 0) + v
    return out


def test_launch_totals_add_up():
    out = path("launch.jsonl")
    r = run_traced(out, ["--cudatrace"], [app("launch_app"), "--n", "40"], ["--trace-counters", "0.02"])
    t = gp.truth(r.stderr)
    rep = gp.proc(gp.final(r.stdout, "cudatrace"), t["pid"])
    recs = jsonl(out)
    got = sums(recs, "launches")
    eq(got.get(t["pid"]), {"kernels": rep["launches"], "graphs": rep["graph_launches"]},
       "launches per interval, summed")
    eq(rep["launches"], sum(k["launches"] for k in t["kernels"].values()) + t["null_launches"],
       "the report's launches (the workload's, NULL handles included)")
    samples = [x for x in recs if x["type"] == "counter" and x["name"] == "launches"]
    check(all(a["ts_ns"] < b["ts_ns"] for a, b in zip(samples, samples[1:])), "samples in time order")
    summ = recs[-1]
    eq(summ["counter_events"], len([x for x in recs if x["type"] == "counter"]), "summary: counter events")
    eq(summ["counter_interval_s"], 0.02, "summary: the interval")
    check("kernel launches" not in {x["name"] for x in recs if x["type"] == "counter"},
          "per-kernel series stay out of the timeline")


def test_graph_launches_outlive_their_graphs():
    """graph_app destroys its graph execs (their launches leave the BPF table): the graphs
    series still adds up to its graph launches, as the report counts them."""
    out = path("graph.jsonl")
    r = run_traced(out, ["--cudatrace"], [app("graph_app"), "--launches", "200"], ["--trace-counters", "0.02"])
    t = gp.truth(r.stderr)
    rep = gp.proc(gp.final(r.stdout, "cudatrace"), t["pid"])
    eq(rep["graph_launches"], t["graph_launches"], "the report's graph launches (the workload's)")
    eq(sums(jsonl(out), "launches").get(t["pid"], {}).get("graphs"), t["graph_launches"],
       "graph launches per interval, summed")


def test_copy_totals_add_up_per_direction_and_gpu():
    out = path("copy.json")
    r = run_traced(out, ["--bandwidth-util"], [app("copy_app")],
                   ["--trace-format", "chrome", "--trace-counters", "0.02"])
    t = gp.truth(r.stderr)
    doc = json.load(open(out))
    found, seen = check_chrome_trace.validate(doc)
    eq(found, [], "valid Trace Event Format")
    got = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "C" and e["name"] == "copy bytes" and e["pid"] == t["pid"]:
            for k, v in e["args"].items():
                got[k] = got.get(k, 0) + v
    rep = gp.proc(gp.final(r.stdout, "bandwidth"), t["pid"])
    want = {x["direction"] if x["gpu"] is None else f"{x['direction']} gpu{x['gpu']}": x["bytes"]
            for x in rep["transfers"]}
    eq(got, want, "copy bytes per direction and GPU, summed over the samples")
    series = sorted(k.split("/")[1] if k.startswith("-/") else "%s gpu%s" % tuple(reversed(k.split("/")))
                    for k in t["transfers"])
    eq(sorted(want), series, "the workload's directions and GPUs")
    check(any(s.startswith(f"{t['pid']} copy bytes H2D gpu0") for s in seen["counter_tracks"]),
          f"counter tracks {seen['counter_tracks']}")


def test_totals_add_up_across_reaps():
    """--interval reaps exited processes: a sample before and after each reap keeps the
    changes adding up."""
    out = path("reap.jsonl")
    la = app("launch_app")
    r = run_traced(out, ["--cudatrace"], ["sh", "-c", f"{la} --n 20; sleep 0.3; {la} --n 40; sleep 0.3"],
                   ["--interval", "0.1", "--trace-counters", "0.05"])
    truths = [json.loads(l) for l in r.stderr.splitlines() if l.startswith("{") and '"api":"launch"' in l]
    eq(len(truths), 2, "two workloads")
    got = sums(jsonl(out), "launches")
    for t in truths:
        want = sum(k["launches"] for k in t["kernels"].values()) + t["null_launches"]
        eq(got.get(t["pid"]), {"kernels": want, "graphs": t["graph_launches"]}, f"PID {t['pid']}")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def test_outstanding_bytes_follow_held_leaks():
    out = path("held.jsonl")
    g = gp.Background([GPUPROBE, "--trace", out, "--memleak", "--json", "--trace-counters", "0.05",
                       "--libcuda", FAKECUDA, "-o", "-", "--", app("memleak_app"), "--hold", "--allocs", "6",
                       "--leaks", "4", "--size", "1048576"])
    try:
        g.wait_for("HELD")  # the command keeps its stdout, which -o - shares with the reports
        time.sleep(0.4)
        kids = children(g.pid)
        eq(len(kids), 1, "the command")
        os.kill(kids[0], signal.SIGUSR1)
        eq(g.wait(), 0, "gpuprobe exit")
    finally:
        g.kill()
    t = gp.truth(g.stderr())
    mem = [x for x in jsonl(out) if x["type"] == "counter" and x["name"] == "outstanding bytes"
           and x["pid"] == t["pid"]]
    check(mem, "outstanding bytes samples")
    check({"device": t["leaked_bytes"]} in [x["values"] for x in mem],
          f"a sample holds the leaks ({t['leaked_bytes']} bytes): {[x['values'] for x in mem]}")
    eq(mem[-1]["values"], {"device": 0}, "after the exit, the curve drops to 0")
    held = [x for x in mem if x["values"] == {"device": t["leaked_bytes"]}]
    eq(len(held), 1, "an unchanged gauge is written once")


def test_process_events_of_a_tree():
    out = path("tree.json")
    r = run_traced(out, ["--memleak"], [app("tree_launcher.sh")], ["--trace-format", "chrome"])
    t = gp.truth(r.stderr)
    doc = json.load(open(out))
    found, _ = check_chrome_trace.validate(doc)
    eq(found, [], "valid Trace Event Format")
    ins = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    check(all(e["s"] == "p" and e["cat"] == "process" for e in ins), "process-scoped instants")
    by = {}
    for e in ins:
        by.setdefault(e["pid"], []).append(e)
    fork_tree, exe = t["workloads"]
    for p in fork_tree["processes"]:
        names = [e["name"] for e in by.get(p["pid"], [])]
        check("exit" in names, f"PID {p['pid']} ({p['comm']}): exit in {names}")
        if p["ppid"] != fork_tree["processes"][0]["pid"]:
            continue
        forks = [e for e in by[p["pid"]] if e["name"] == "fork"]
        eq([f["args"]["ppid"] for f in forks], [p["ppid"]], f"PID {p['pid']}: forked by its parent")
    ex = [e for e in by.get(exe["images"][0]["pid"], []) if e["name"] == "exec"]
    eq([e["args"]["comm"] for e in ex][-2:], ["exec_app", "exec_second"], "exec_app's two images")
    names = [e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"
             and e["pid"] == exe["images"][0]["pid"]]
    eq(names[-1], f"exec_second ({exe['images'][0]['pid']})", "the track takes the new image's name")
    for pid, evs in by.items():
        eq(sum(1 for e in evs if e["name"] == "exit"), 1 if any(e["name"] == "exit" for e in evs) else 0,
           f"PID {pid}: one exit")


def test_convert_carries_counters_and_instants():
    out = path("conv.jsonl")
    run_traced(out, ["--cudatrace", "--bandwidth-util"], [app("copy_app")], ["--trace-counters", "0.02"])
    recs = jsonl(out)
    r = gp.run([GPUPROBE, "convert", "--chrome", out])
    eq((r.returncode, r.stderr), (0, ""), "convert")
    doc = json.loads(r.stdout)
    found, _ = check_chrome_trace.validate(doc)
    eq(found, [], "valid Trace Event Format")
    cs = [x for x in recs if x["type"] == "counter"]
    check(cs, "counter records")
    eq([(e["name"], e["pid"], e["args"]) for e in doc["traceEvents"] if e["ph"] == "C"],
       [(x["name"], x["pid"], x["values"]) for x in cs], "counters carried over")
    eq(sum(1 for e in doc["traceEvents"] if e["ph"] == "i"), sum(1 for x in recs if x["type"] == "instant"),
       "instants carried over")


def test_no_counters():
    out = path("none.jsonl")
    run_traced(out, ["--cudatrace"], [app("launch_app"), "--n", "20"], ["--trace-counters", "0"])
    recs = jsonl(out)
    eq([x for x in recs if x["type"] == "counter"], [], "--trace-counters 0: no samples")
    eq(recs[-1]["counter_events"], 0, "summary")


if __name__ == "__main__":
    try:
        gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
