#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks a file against the Trace Event Format (the JSON that chrome://tracing and
Perfetto load; https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU),
standard library only.

  check_chrome_trace.py TRACE.json        ("-": stdin)

The JSON Object Format: an object with a "traceEvents" array, "displayTimeUnit" "ms" or "ns"
if present, "otherData" an object if present. Every event has a known "ph" and the fields
its phase needs, with the types the format gives them: "X" name/ts/dur/pid/tid, "M" a known
metadata name with its args, "C" name/ts/pid and args whose every value is a number, and so
on. Prints one JSON line (events by phase, counter tracks as "pid name series"); exit 1 with
one line per problem."""
import json
import math
import sys

PHASES = set("BEXiIbneSTpFstfPCNODMVvRc()")
META = {"process_name": "name", "process_labels": "labels", "process_sort_index": "sort_index",
        "thread_name": "name", "thread_sort_index": "sort_index", "process_uptime_seconds": None,
        "num_cpus": None, "trace_buffer_overflowed": None}
problems = []


def bad(i, msg):
    if len(problems) < 30:
        problems.append(f"event {i}: {msg}")


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_event(i, e, seen):
    if not isinstance(e, dict):
        bad(i, "not an object")
        return
    ph = e.get("ph")
    if not isinstance(ph, str) or ph not in PHASES:
        bad(i, f"unknown phase {ph!r}")
        return
    seen["by_ph"][ph] = seen["by_ph"].get(ph, 0) + 1
    if "args" in e and not isinstance(e["args"], dict):
        bad(i, "args is not an object")
    if "cat" in e and not isinstance(e["cat"], str):
        bad(i, "cat is not a string")
    if ph != "M" and "ts" in e and not is_num(e["ts"]):
        bad(i, f"ts {e['ts']!r} is not a finite number")
    for k in ("pid", "tid"):
        if k in e and not is_int(e[k]):
            bad(i, f"{k} {e[k]!r} is not an integer")
    need = {"X": ("name", "ts", "dur", "pid", "tid"), "B": ("name", "ts", "pid", "tid"),
            "E": ("ts", "pid", "tid"), "i": ("name", "ts", "pid"), "I": ("name", "ts", "pid"),
            "C": ("name", "ts", "pid", "args"), "M": ("name", "pid", "args")}.get(ph, ())
    for k in need:
        if k not in e:
            bad(i, f"{ph} event without {k}")
    if "name" in e and not isinstance(e["name"], str):
        bad(i, "name is not a string")
    if ph == "X" and "dur" in e and (not is_num(e["dur"]) or e["dur"] < 0):
        bad(i, f"dur {e['dur']!r} is not a number >= 0")
    if ph in ("i", "I") and e.get("s", "t") not in ("g", "p", "t"):
        bad(i, f"instant scope {e.get('s')!r}")
    if ph == "M":
        name = e.get("name")
        if name not in META:
            bad(i, f"unknown metadata {name!r}")
        elif META[name] and META[name] not in e.get("args", {}):
            bad(i, f"{name} without args.{META[name]}")
        elif name.endswith("_name") and not isinstance(e["args"]["name"], str):
            bad(i, f"{name}: args.name is not a string")
        if name and name.startswith("thread_") and "tid" not in e:
            bad(i, f"{name} without tid")
    if ph == "C":
        args = e.get("args")
        if isinstance(args, dict):
            if not args:
                bad(i, "counter without a series")
            for k, v in args.items():
                if not is_num(v):
                    bad(i, f"counter series {k!r} = {v!r} is not a number")
                seen["counters"].add(f"{e.get('pid')} {e.get('name')} {k}")
        if "id" in e and not isinstance(e["id"], (str, int)):
            bad(i, "counter id is neither a string nor an integer")


def validate(doc):
    """(problems, summary) for a parsed document; for use as a module too."""
    del problems[:]
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not the JSON Object Format (an object with a traceEvents array)"], {}
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        problems.append(f"displayTimeUnit {doc['displayTimeUnit']!r} is neither ms nor ns")
    if "otherData" in doc and not isinstance(doc["otherData"], dict):
        problems.append("otherData is not an object")
    seen = {"by_ph": {}, "counters": set()}
    for i, e in enumerate(doc["traceEvents"]):
        check_event(i, e, seen)
    return list(problems), {"events": len(doc["traceEvents"]), "by_ph": seen["by_ph"],
                            "counter_tracks": sorted(seen["counters"])}


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if argv[0] == "-" else open(argv[0], encoding="utf-8").read()
        doc = json.loads(text)
    except (OSError, ValueError) as e:
        print(f"check_chrome_trace: not JSON: {e}")
        return 1
    found, seen = validate(doc)
    for p in found:
        print(f"check_chrome_trace: {p}")
    if seen:
        print(json.dumps(seen))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
