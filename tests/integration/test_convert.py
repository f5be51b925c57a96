# SPDX-License-Identifier: BSD-3-Clause
"""gpuprobe convert --chrome on real traces (real BPF, the stand-in driver) cut short at
random byte offsets, as a killed run leaves them: every time a complete document that is
valid Trace Event Format JSON, every complete record carried over (counter samples and
process events among them), the dropped lines counted exactly and reported on stderr in
one line."""
import json
import os
import random
import re
import shutil
import sys
import tempfile

import gp
from gp import FAKECUDA, app, check, eq

TMP = tempfile.mkdtemp(prefix="gp-convert-")
TOOLS = os.path.join(gp.ROOT, "tests", "tools")
sys.path.insert(0, TOOLS)
import check_chrome_trace  # noqa: E402  (tests/tools: the Trace Event Format checker)
CUTS = int(os.environ.get("GP_CONVERT_CUTS", "150"))


def path(name):
    return os.path.join(TMP, name)


def chrome_check(text):
    """tests/tools/check_chrome_trace.py's checks on text: its summary, or a Failure."""
    found, seen = check_chrome_trace.validate(json.loads(text))
    check(not found, f"not a valid Chrome trace: {found}")
    return seen


def real_trace(name, app_argv, extra=()):
    out = path(name)
    r = gp.gpuprobe(["--trace", out, "--libcuda", FAKECUDA] + list(extra), cmd=app_argv)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-600:]})")
    return open(out, "rb").read()


def with_counters(data, every=7):
    """The trace with counter samples between its records, as the writer writes them
    (tests/unit/test_trace.c checks the writer's own lines)."""
    lines = data.split(b"\n")
    out, k = [], 0
    for i, l in enumerate(lines):
        out.append(l)
        if l and i % every == 3 and b'"summary"' not in l:
            k += 1
            c = {"type": "counter", "ts_ns": 1000 * k, "pid": 4242, "name": "outstanding bytes",
                 "values": {"gpu0": 1048576 * k, "gpu1": k / 8}}
            out.append(json.dumps(c, separators=(",", ":")).encode())
    return b"\n".join(out)


def expect(prefix):
    """What convert must make of prefix: the records it holds, and the lines to drop."""
    lines = prefix.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    recs = [json.loads(l) for l in complete if l]
    dropped = 0
    if tail:
        try:
            recs.append(json.loads(tail))
        except ValueError:
            dropped = 1
    n_lines = len(complete) + (1 if tail else 0)
    return recs, dropped, n_lines


def convert(data, name="cut.jsonl"):
    p = path(name)
    with open(p, "wb") as f:
        f.write(data)
    return gp.run([gp.GPUPROBE, "convert", "--chrome", p])


def check_cut(data, cut):
    prefix = data[:cut]
    recs, dropped, n_lines = expect(prefix)
    r = convert(prefix)
    what = f"cut at {cut} of {len(data)}"
    doc = json.loads(r.stdout)  # always a complete document
    seen = chrome_check(r.stdout)
    calls = [x for x in recs if x["type"] in ("call", "ioctl")]
    counters = [x for x in recs if x["type"] == "counter"]
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    cs = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    eq(len(xs), len(calls), f"{what}: X events")
    eq(len(cs), len(counters), f"{what}: C events")
    for x, c in zip(xs, calls):
        check(x["name"] == c["fn"] and x["pid"] == c["pid"] and round(x["ts"] * 1000) == c["ts_ns"]
              and round(x["dur"] * 1000) == c["dur_ns"], f"{what}: {x} from {c}")
    for e, c in zip(cs, counters):
        check(e["name"] == c["name"] and e["pid"] == c["pid"] and e["args"] == c["values"]
              and round(e["ts"] * 1000) == c["ts_ns"], f"{what}: {e} from {c}")
    instants = [x for x in recs if x["type"] == "instant"]
    ins = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    eq(len(ins), len(instants), f"{what}: i events")
    for e, x in zip(ins, instants):
        check(e["name"] == x["name"] and e["pid"] == x["pid"] and e["s"] == "p" and e["args"] == x["args"]
              and round(e["ts"] * 1000) == x["ts_ns"], f"{what}: {e} from {x}")
    # one process_name per "process" record: an exec renames a track with a second one
    procs = [x for x in recs if x["type"] == "process"]
    eq(sum(1 for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"),
       len(procs), f"{what}: named processes")
    has_summary = any(x["type"] == "summary" for x in recs)
    eq("events_written" in doc["otherData"], has_summary, f"{what}: the summary in otherData")
    if dropped or not has_summary:
        c = doc["otherData"]["convert"]
        eq((c["dropped_lines"], c["truncated"], c["summary_missing"], c["lines"]),
           (dropped, dropped == 1, not has_summary, n_lines), f"{what}: otherData.convert")
    else:
        check("convert" not in doc["otherData"], f"{what}: otherData.convert on a whole trace")
    err = [l for l in r.stderr.splitlines() if l.strip()]
    if not recs and dropped:
        gp.one_error_line(r, "no complete record: the trace ends inside its first line")
    elif dropped:
        eq(r.returncode, 0, f"{what}: exit status")
        eq(len(err), 1, f"{what}: stderr lines {err}")
        m = re.search(r"dropped (\d+) of (\d+) lines \(first: line (\d+), the last cut short\); converted (\d+) records", err[0])
        check(m, f"{what}: stderr {err[0]!r}")
        eq(tuple(int(g) for g in m.groups()), (1, n_lines, n_lines, len(recs)), f"{what}: reported")
    else:
        eq((r.returncode, err), (0, []), f"{what}: exit status and stderr")
    return seen


def cut_offsets(data, n, seed):
    rnd = random.Random(seed)
    ends = [i + 1 for i, b in enumerate(data) if b == ord("\n")]
    offs = {0, 1, len(data), len(data) - 1}
    offs |= {e for e in rnd.sample(ends, min(10, len(ends)))}            # at a line's end
    offs |= {e - 1 for e in rnd.sample(ends, min(10, len(ends)))}        # just before its newline
    offs |= {e + 1 for e in rnd.sample(ends, min(10, len(ends)))}        # one byte into the next
    while len(offs) < n:
        offs.add(rnd.randrange(0, len(data) + 1))
    return sorted(o for o in offs if 0 <= o <= len(data))


def test_cut_calls_and_counters():
    data = with_counters(real_trace("launch.jsonl", [app("launch_app"), "--n", "20"]))
    check(data.count(b'"type":"call"') > 100, "a trace with many calls")
    check(data.count(b'"type":"instant"') >= 2, "a trace with its process's exec and exit")
    for cut in cut_offsets(data, CUTS, 17):
        check_cut(data, cut)
    seen = check_cut(data, len(data))
    eq(seen["counter_tracks"], ["4242 outstanding bytes gpu0", "4242 outstanding bytes gpu1"], "counter tracks")


def test_cut_ioctls():
    data = real_trace("ioctl.jsonl", [app("ioctl_app"), "--n", "10"], extra=["--ioctl", "--ioctl-dev", "1:mem"])
    check(data.count(b'"type":"ioctl"') > 20, "a trace with ioctl records")
    for cut in cut_offsets(data, CUTS // 2, 23):
        check_cut(data, cut)


def test_damage_inside_and_unknown_records():
    """Lines broken inside the file (a disk error, a second writer) are dropped one by one;
    the rest is converted."""
    data = real_trace("damaged.jsonl", [app("launch_app"), "--n", "20"])
    lines = data.split(b"\n")
    n_calls = sum(1 for l in lines if b'"type":"call"' in l)
    lines[5] = lines[5][: len(lines[5]) // 2]          # a half line inside
    lines[9] = b"\x00" * 40                              # zeros, as after a crash
    lines.insert(12, b'{"type":"a_future_kind","x":1}')  # a record this version does not know
    r = convert(b"\n".join(lines), "damaged-out.jsonl")
    eq(r.returncode, 0, f"exit ({r.stderr})")
    doc = json.loads(r.stdout)
    chrome_check(r.stdout)
    lost = sum(1 for i in (5, 9) if b'"type":"call"' in data.split(b"\n")[i])
    eq(sum(1 for e in doc["traceEvents"] if e["ph"] == "X"), n_calls - lost, "calls carried over")
    eq(doc["otherData"]["convert"]["dropped_lines"], 3, "dropped")
    check("events_written" in doc["otherData"], "the summary is kept")
    check(re.search(r"dropped 3 of \d+ lines \(first: line 6, 2 not a complete record, 1 of a record type "
                    r"this gpuprobe does not know\)", r.stderr), r.stderr)


def test_whole_trace_unchanged():
    """A whole trace converts without a word on stderr, the summary as otherData."""
    data = real_trace("whole.jsonl", [app("memleak_app"), "--allocs", "5", "--leaks", "2"])
    r = convert(data, "whole-out.jsonl")
    eq((r.returncode, r.stderr), (0, ""), "exit and stderr")
    doc = json.loads(r.stdout)
    summary = json.loads(data.rstrip(b"\n").split(b"\n")[-1])
    del summary["type"]
    eq(doc["otherData"], summary, "otherData is the summary")


def test_errors():
    bad = gp.run([gp.GPUPROBE, "convert", "--chrome", "/nonexistent.jsonl"])
    gp.one_error_line(bad, "No such file or directory")
    eq(bad.stdout, "", "nothing on stdout when the input cannot be opened")
    chrome = path("already.json")
    with open(chrome, "w") as f:
        f.write('{"traceEvents":[\n{"name":"x","ph":"X","ts":1,"dur":1,"pid":1,"tid":1}\n]}\n')
    r = gp.run([gp.GPUPROBE, "convert", "--chrome", chrome])
    gp.one_error_line(r, "not a gpuprobe JSON Lines trace (no record in 3 lines)")
    chrome_check(r.stdout)


if __name__ == "__main__":
    try:
        gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
