# SPDX-License-Identifier: BSD-3-Clause
"""docs/support-matrix.md's measured tables are generated from the run records in
docs/vmruns/ (tests/vm/matrix.py, `make support-matrix`): the page must say what the
records say, and every record must be a finished run with its counts (a full `make vmtest`,
or a load gate's, `<kernel>-<arch>-gate.json`, marked as such on the page)."""
import glob
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

import gp
from gp import ROOT, check, eq

MATRIX = os.path.join(ROOT, "tests", "vm", "matrix.py")


def test_page_matches_the_run_records():
    r = gp.run([sys.executable, MATRIX, "check"], cwd=ROOT)
    eq(r.returncode, 0, f"matrix.py check: {r.stderr.strip()}")


def test_records_are_finished_runs():
    files = glob.glob(os.path.join(ROOT, "docs", "vmruns", "*.json"))
    if not files:
        gp.skip("no run record in docs/vmruns yet: a full `make vmtest` (or `make support-matrix-native`) saves one")
    for p in files:
        with open(p) as f:
            rec = json.load(f)
        name = os.path.basename(p)
        gate = rec.get("kind") == "gate"  # a load gate's record: configurations, not the suites
        eq(name, f"{rec['kernel']}-{rec['arch']}{'-gate' if gate else ''}.json", "record file name")
        for k in ("date", "commit", "how", "features"):
            check(rec.get(k), f"{name}: no {k}")
        # a gate where gpuprobe refuses the kernel (5.10) skips every configuration
        ran = rec["passed"] + rec["skipped"] if gate else rec["passed"]
        check(ran > 0 and rec["seconds"] > 0, f"{name}: counts {rec['passed']} passed, {rec['seconds']} s")
        eq(len(rec["failures"]), rec["failed"], f"{name}: failures named")
        eq(len(rec["skips"]), rec["skipped"], f"{name}: skips named with their reasons")


def matrix_module():
    spec = importlib.util.spec_from_file_location("matrix", MATRIX)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gate_runs_marked_on_the_page():
    """A load gate's record is a row of "What was run where" that says so, never read as
    the suites: each gate record's row names its commit and "load gate only"."""
    files = glob.glob(os.path.join(ROOT, "docs", "vmruns", "*-gate.json"))
    if not files:
        gp.skip("no load gate recorded in docs/vmruns (VM_RECORD=1 tests/vm/gate.sh)")
    with open(os.path.join(ROOT, "docs", "support-matrix.md")) as f:
        page = f.read()
    runs = page.split("<!-- generated: runs", 1)[1].split("<!-- end: runs -->", 1)[0]
    for p in files:
        with open(p) as f:
            rec = json.load(f)
        rows = [l for l in runs.splitlines() if l.startswith(f"| {rec['kernel']} ") and f"`{rec['commit']}" in l
                and f"| {rec['arch']} |" in l]
        check(any("load gate only" in l and f"{rec['passed']} passed, {rec['failed']} failed" in l for l in rows),
              f"{os.path.basename(p)}: no row marked as a load gate: {rows}")
        check(not any("load gate only" not in l for l in rows), f"{os.path.basename(p)}: read as the suites: {rows}")


def test_gate_output_parsed():
    """matrix.py record-gate reads tests/vm/gate.sh's lines: each configuration one test named
    by its command line, the coverage line, the gate's own failure, and the summary."""
    text = "\n".join([
        "ok - 6.1.0-56-amd64: gpuprobe --memleak -- COMMAND: 7 programs loaded (1.7 s)",
        "not ok - 6.1.0-56-amd64: gpuprobe --memleak --stacks fp -- COMMAND: program mem_enter (cuda_mem.bpf.c) "
        "refused by the verifier at `x`: R2 unbounded memory access (log: /tmp/01.log)",
        "ok - 5.10.0-46-amd64: every configuration # SKIP every front end refuses this kernel at start: lacks cookies",
        "ok - 6.1.0-56-arm64: every program loaded by some configuration # SKIP 28 of 32 loaded; not here: a (b)",
        "not ok - bpf-gate: vmtest.sh exited 1 with no failed line (x)",
        "# bpf: 34 configurations on Linux 6.1.0-56-amd64 x86_64: 1 loaded, 1 failed, 0 skipped (2.0 s)",
        "1 passed, 2 failed, 2 skipped",
    ])
    summary, failures, skips = matrix_module().parse_gate(text)
    eq(summary, [1, 2, 2], "summary")
    eq([f["test"] for f in failures], ["gpuprobe --memleak --stacks fp -- COMMAND", "bpf-gate"], "failed tests")
    check(failures[0]["message"].startswith("program mem_enter (cuda_mem.bpf.c) refused"), failures[0]["message"])
    eq([s["test"] for s in skips], ["every configuration", "every program loaded by some configuration"],
       "skipped tests")
    eq(skips[0]["reason"], "every front end refuses this kernel at start: lacks cookies", "skip reason")


def test_several_commands_summed():
    """A VM_CMD of several commands: vmtest.sh's summary counts every command's line (it took
    only the last: a first command's failure read as passed), and tests/run.sh's suites once,
    through its total."""
    m = matrix_module()
    text = "\n".join([
        "ok - test_a (1.0s)", "not ok - test_b: expected 1, got 2", "1 passed, 1 failed, 0 skipped",
        "ok - test_c # SKIP no tmux", "0 passed, 0 failed, 1 skipped",
        "=== unit-test_x", "ok 1 - x", "4 passed, 0 failed",
        "=== integration-test_y", "ok - y", "2 passed, 1 failed, 3 skipped",
        "=== fakecuda-smoke", "ok - suite fakecuda-smoke # SKIP timing",
        "6 passed, 1 failed, 4 skipped",
        "3 passed, 0 failed",
    ])
    eq(m.total_summary(text), [10, 2, 5], "three commands, the second tests/run.sh")
    eq(m.total_summary("=== a\nnot ok - suite a printed no summary (exit 1)\n0 passed, 1 failed, 0 skipped"),
       [0, 1, 0], "run.sh's total after a suite with no summary")
    eq(m.total_summary("no summary"), None, "none")
    fd, path = tempfile.mkstemp(prefix="gp-runlog-")
    os.close(fd)
    with open(path, "w") as f:
        f.write(text + "\n")
    try:
        r = gp.run([sys.executable, MATRIX, "summary", path], cwd=ROOT)
        eq(r.stdout.strip(), "10 passed, 2 failed, 5 skipped", f"matrix.py summary ({r.stderr.strip()})")
    finally:
        os.unlink(path)


if __name__ == "__main__":
    gp.main([test_page_matches_the_run_records, test_records_are_finished_runs, test_gate_runs_marked_on_the_page,
             test_gate_output_parsed, test_several_commands_summed])
