# SPDX-License-Identifier: BSD-3-Clause
"""docs/support-matrix.md's measured tables are generated from the run records in
docs/vmruns/ (tests/vm/matrix.py, `make support-matrix`): the page must say what the
records say, and every record must be a finished run with its counts (a full `make vmtest`,
or a load gate's, `<kernel>-<arch>-gate.json`, marked as such on the page)."""
import glob
import json
import os
import subprocess
import sys

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


if __name__ == "__main__":
    gp.main([test_page_matches_the_run_records, test_records_are_finished_runs])
