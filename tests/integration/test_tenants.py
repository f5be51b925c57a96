# SPDX-License-Identifier: BSD-3-Clause
"""Tenant isolation (issue 30): an unprivileged user on the node cannot take another
user's share of what gpuprobe keeps for everyone. Each attack runs as nobody (uid 65534)
beside a victim of another user whose counts are known by construction; the victim's
numbers must be exact and the attacker's excess counted under a reason of its own."""
import os
import signal
import subprocess
import time

import gp
from gp import FAKECUDA, GPUPROBE, app, check, eq, final, proc, truth

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def start_storm(threads):
    """alloc_storm as nobody: `threads` threads inside cuMemAlloc_v2 until stdin closes."""
    p = subprocess.Popen([*AS_NOBODY, app("alloc_storm"), "--threads", str(threads)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    line = p.stdout.readline()
    if not line.startswith("READY"):
        p.kill()
        raise gp.Failure(f"alloc_storm --threads {threads}: {line!r} {p.stderr.read()[-800:]}")
    return p, int(line.split()[1])


def end_storm(p):
    p.stdin.close()
    err = p.stderr.read()
    p.wait(timeout=60)
    eq(p.returncode, 0, f"alloc_storm exit ({err[-800:]})")
    return truth(err)


# --max-pending 1024: a process holds at most 256 calls in flight, a user 512
# (src/core/allocsrc.c). The storm: one nobody process with 1,000 threads in
# cuMemAlloc_v2 (over its process share), then two of 300 each (over nobody's user share
# together): 1,600 calls in flight, 512 stashed, 1,088 refused, the table never full.
TABLE = 1024
PROC_SHARE, USER_SHARE = TABLE // 4, TABLE // 2
STORMS = (1000, 300, 300)


def test_pending_share_storm():
    """docs/security.md: a process or user fills only its share of the in-flight table."""
    g = gp.Background([GPUPROBE, "--memleak", "--json", "--libcuda", FAKECUDA,
                       "--max-pending", str(TABLE)])
    storms = []
    try:
        g.wait_for("gpuprobe: tracing", where="stderr")
        for n in STORMS:
            storms.append(start_storm(n))
        # the victim, root, while 1,600 calls of nobody's are in flight
        v = gp.run([app("memleak_app"), "--allocs", "50", "--leaks", "3"], timeout=60)
        eq(v.returncode, 0, f"victim exit ({v.stderr[-800:]})")
        vt = truth(v.stderr)
        st = [end_storm(p) for p, _ in storms]
        storms = []
        g.signal(signal.SIGINT)
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-1500:]})")
        rep = final(g.stdout())
        vp = proc(rep, vt["pid"])
        eq((vp["allocs_total"], vp["frees_total"], vp["outstanding_allocs"], vp["outstanding_bytes"]),
           (vt["allocs"], vt["frees"] + vt["untracked_frees"], vt["leaks"], vt["leaked_bytes"]),
           "the victim's allocations, frees and leaks")
        eq(rep["drops"]["pending_table_full"], 0, "pending_table_full")
        eq(rep["drops"]["pending_share_full"], sum(STORMS) - USER_SHARE, "pending_share_full")
        eq(rep["dropped_events"], sum(STORMS) - USER_SHARE, "dropped_events")
        # the first storm alone met its process share; the other two what was left of the user's
        seen = [proc(rep, t["pid"])["allocs_total"] for t in st]
        eq(seen[0], PROC_SHARE, "the first storm's allocations seen")
        eq(seen[1] + seen[2], USER_SHARE - PROC_SHARE, "the other two storms' allocations seen")
        eq(rep["calls"]["cuMemAlloc_v2"], vt["allocs"] + USER_SHARE, "cuMemAlloc_v2 calls seen")
    finally:
        for p, _ in storms:
            p.kill()
            p.wait()
        g.kill()


if __name__ == "__main__":
    gp.main([test_pending_share_storm])
