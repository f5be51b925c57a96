# SPDX-License-Identifier: BSD-3-Clause
"""--max-overhead end to end: real BPF, the stand-in driver, tests/apps/rate_app (a launch
rate that steps 200 -> 20000 -> 100000 -> 200 per second, 1 s each, an alloc+free every
100 launches). The low rate is one the budget counts whole: a launch with its latency probe
is priced at two cold hits (~2-3 us each here) and its programs, ~6 us, so a 1 % budget
aiming at 0.35 % counts every call up to ~600 launches/s. A phase outlasts the longest
period (1 s), so the rate moves at most once between two windows (src/lib/sampling.h). With a budget: the estimated overhead stays under it by gpuprobe's own
accounting and by the workload's own timing of its calls, the estimates' intervals hold the
true counts, allocations stay exact, the budget reacts within a second to a rise and within
two periods to a fall. Without one: every count exact. Bad input: one line, exit 2."""
import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import gp
from gp import FAKECUDA, app, check, eq, truth

RATE = app("rate_app")
PHASES = "200:1000,20000:1000,100000:1000,200:1000"
BASE = ["--libcuda", FAKECUDA, "--json"]
ENV = {"LD_LIBRARY_PATH": gp.FAKECUDA_DIR}
# a kernel without uprobe_multi links (< 6.6; on one, this changes nothing) ...
NO_MULTI = {"GPUPROBE_NO_UPROBE_MULTI": "1"}
# ... and without tracefs uprobe events either: it cannot sample
CANNOT = {"GPUPROBE_NO_UPROBE_MULTI": "1", "GPUPROBE_NO_UPROBE_EVENTS": "1"}


def retried(t):
    """A test of the estimates, run once more when it fails (the first failure printed as a
    diagnostic): its intervals are 95 % ones, so one run in 20 may miss by design, and on a
    shared 2-CPU machine a paced workload that lost the CPU catches up in bursts that a
    window may catch whole (then its rate there is no paced one)."""
    @functools.wraps(t)
    def run():
        try:
            return t()
        except (gp.Failure, PricedSkip) as e:
            print(f"#   {t.__name__}: first attempt failed, once more: {' '.join(str(e).split())[:400]}", flush=True)
            return t()
    return run


# Under QEMU's TCG (tests/vm/guest.sh: GP_NO_PRICE_MODEL says why) a counted call costs the
# program 2-15x the price the budget calibrates, minutes apart (test_budget_interval_coverage's
# in-situ figures; docs/validation.md, sessions 22-24): the windows' unprobed rates read low,
# and the estimates' upper ends and the budget's own share of the time are issue 29's,
# measured natively here and on the H200. There such a check that fails is a counted skip
# with what it found (priced), after every other check of the test has run; natively, a
# failure as any other.
NO_PRICE_MODEL = os.environ.get("GP_NO_PRICE_MODEL")
_unpriced = None


class PricedSkip(gp.Skip):
    """price_model's skip: a retried test (retried) runs once more, as after a failure."""


def priced(cond, msg):
    """A check that holds where a counted call costs the program about its calibrated price."""
    if cond:
        return
    if not NO_PRICE_MODEL:
        raise gp.Failure(msg)
    if _unpriced is None:
        gp.skip(f"{NO_PRICE_MODEL}: {msg}")
    _unpriced.append(msg)


def price_model(t):
    """A test whose priced() checks are gathered and, where any failed under GP_NO_PRICE_MODEL,
    skipped at its end with them (the other checks asserted)."""
    @functools.wraps(t)
    def run():
        global _unpriced
        _unpriced = []
        try:
            res = t()
            missed = _unpriced
        finally:
            _unpriced = None
        if missed:
            raise PricedSkip(f"{NO_PRICE_MODEL}: " + "; ".join(" ".join(m.split())[:300] for m in missed))
        return res
    return run


def final_proc(out, mode, pid):
    return gp.proc(gp.final(out, mode), pid)


def budget_record(out):
    rs = gp.reports(out, "final", "budget")
    eq(len(rs), 1, "final budget records")
    return rs[0]


def run_rate(args, budget=True, phases=PHASES, env=None):
    cmd = [RATE, "--time-calls", "--phases", phases]
    r = gp.gpuprobe(BASE + ["--cudatrace", "--memleak"] + args, cmd=cmd, timeout=60, env=env)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
    return r, truth(r.stderr)


def plain_rate(phases=PHASES):
    r = gp.run([RATE, "--time-calls", "--phases", phases], timeout=60)
    eq(r.returncode, 0, "rate_app exit")
    return truth(r.stderr)


def call_share(t, phase=None):
    """The share of the workload's time it spent inside its launch calls (its own timing)."""
    ps = t["phases"] if phase is None else [t["phases"][phase]]
    return sum(p["call_ns"] for p in ps) / sum(p["end_ns"] - p["start_ns"] for p in ps)


def allowance_s(b):
    """A process's exact allowance of probe time (call_cost_s x exact_allowance_calls): its
    first calls, all counted by design; the budget holds what is beyond it."""
    return b["exact_allowance_calls"] * b["call_cost_s"]


def allowance_pct(b, seconds):
    """allowance_s as a share (%) of a process's seconds."""
    return allowance_s(b) / seconds * 100 if seconds > 0 else 0


def check_over_agrees(b):
    """The budget's over_budget agrees with its own estimates: a process whose time in the
    probes (overhead_pct_estimate), beyond its exact allowance (call_cost_s x
    exact_allowance_calls of probe time, spent by design), passed the budget is over it, and
    the budget is over when one is (or when its planner says a process passes it even at the
    least window: over_budget_now)."""
    pct, allow = b["max_overhead_pct"], allowance_s(b)
    over = 0
    for p in b["processes"]:
        excess = p["probe_seconds_estimate"] - (allow if p["pid"] else 0) - pct / 100 * p["seconds"]
        if p["seconds"] > 0 and abs(excess) > 1e-9:  # (not at the edge, where rounding decides)
            eq(p["over_budget"], excess > 0, f"PID {p['pid']}: {p['overhead_pct_estimate']:.3f} % of its time in probes, "
                                             f"{excess:+.4f} s past the budget beyond its allowance: over")
        over += p["over_budget"]
    eq(b["over_budget_processes"], over, "processes over the budget")
    eq(b["over_budget"], bool(over) or b["over_budget_now"], "over_budget: a process over it, or the planner's flag")


# sampling.c's UNBOUNDED_BUSY: two windows in a row with more than this share of their time
# in probes have no upper end ("its calls cost less than a probe")
UNBOUNDED_BUSY = 0.5


def warm_call_cost(b):
    """A counted call's warm cost as the budget measured it on this kernel: its traps (two
    with a return probe: call_cost_s is that many cold hits and the programs) and programs."""
    progs = (b.get("program_ns") or 0) * 1e-9
    hits = round((b["call_cost_s"] - progs) / b["probe_hit_cost_s"])
    return hits * b["probe_hit_warm_cost_s"] + progs


def busy_in_probes(b, t):
    """Whether a window of the fastest phase, paced at its nominal rate, spends more than
    UNBOUNDED_BUSY of its time in probes at the warm cost measured here: 0.1 of it natively
    (about 1 us a call at 100,000/s), 0.8 on 6.1 in QEMU's TCG (8.2 us: traps emulated)."""
    rate = max(p["rate"] for p in t["phases"])
    return rate * warm_call_cost(b) >= UNBOUNDED_BUSY


# Where a probe hit is dear (6.1 under QEMU's TCG: 15-60 us), the least the budget can sample
# (a 2-ms window each 500-ms period, the hits while its probes go in and out, the probes it never
# samples) can cost a process more than the budget: the budget then says so (the process's
# floor_pct, over the budget) and holds it at that floor. A process over the budget with no
# such floor is a fault. Held: its share of time in the probes at most FLOOR_TOL x its floor
# (the floor is the mean of its least periods; its periods at the floor vary about it, by
# the strays a window's probes catch: 4.5-8.3 % for floors of 5.8-6.5 % natively with a hit
# priced at 30 us, GPUPROBE_TEST_PROBE_COST).
FLOOR_TOL = 1.5


def floor_limit(b, pid, pct):
    """The share (%) of its time in the probes a process may take under the budget: pct, or,
    where the budget said it cannot hold pct for it (over it, at a floor above it), FLOOR_TOL
    x its floor; and the floor (0: none said)."""
    ps = [p for p in b["processes"] if p["pid"] == pid]
    floor = (ps[0].get("floor_pct") or 0) if ps and ps[0]["over_budget"] else 0
    if floor <= pct:
        return pct, 0
    return FLOOR_TOL * floor, floor


def check_over_is_the_floor(b, pct):
    """Every process over the budget is one it said it cannot hold (its floor passes pct),
    and the budget counts it among those (floor_processes)."""
    over = [p for p in b["processes"] if p["over_budget"]]
    for p in over:
        check((p.get("floor_pct") or 0) > pct,
              f"PID {p['pid']} over the budget ({p['overhead_pct_estimate']:.3f} %) with no floor above it "
              f"(floor {p.get('floor_pct')}): {b}")
    eq(b["floor_processes"], len(over), "processes over the budget at a floor above it")
    # (over_budget_now, the planner's flag, says the least window would pass the budget one
    # period ahead: a process's own estimate over all its periods may still end under it)
    return over


def check_budget_run(r, t, pct=1.0, mechanism=None):
    pid = t["pid"]
    ct = final_proc(r.stdout, "cudatrace", pid)
    smp = ct.get("sampling")
    check(smp is not None, f"no sampling in a run that sampled: {ct}")
    check(0 < smp["fraction"] < 1, f"sampled fraction {smp['fraction']}")
    lo, hi = smp["intervals"]["launches"]
    check(lo <= t["launches"], f"true launches {t['launches']} under [{lo}, {hi}]")
    if not t["launches"] <= (hi if hi is not None else float("inf")):
        priced(False, f"true launches {t['launches']} outside [{lo}, {hi}]; budget: {gp.reports(r.stdout, mode='budget')}")
    # an upper end, unless an attach slower than a period left a part unseen (said: long_unseen)
    # or a probe hit here costs so much that the fastest phase spent most of its windows in
    # probes (sampling.c's UNBOUNDED_BUSY: its calls read as costing less than a probe)
    check(hi is not None or smp.get("long_unseen") or busy_in_probes(budget_record(r.stdout), t),
          f"a paced process's interval has an upper end (warm cost of a call {warm_call_cost(budget_record(r.stdout)) * 1e6:.2f} us)")
    check(lo <= ct["launches"] <= (hi if hi is not None else float("inf")),
          f"estimate {ct['launches']} outside its own interval")
    k = [x for x in ct["kernels"] if x["name"] == t["kernel"]]
    eq(len(k), 1, "the kernel by name")
    check(abs(k[0]["launches"] - ct["launches"]) <= 1, "the kernel's estimate is the process's")
    slo, shi = smp["intervals"]["sync_calls"]
    check(slo <= len(t["phases"]) <= (shi if shi is not None else float("inf")), f"true syncs {len(t['phases'])} outside [{slo}, {shi}]")
    eq(gp.final(r.stdout, "cudatrace")["dropped_events"], 0, "dropped events")
    # allocation and free probes are never sampled
    ml = final_proc(r.stdout, "memleak", pid)
    eq(ml["allocs_total"], t["allocs"], "allocations, exact")
    eq(ml["frees_total"], t["frees"], "frees, exact")
    # gpuprobe's own accounting: the budget's (its probes) and the overhead line (every
    # probe hit, allocations' too, at the price calibrated at the end)
    b = budget_record(r.stdout)
    eq(b["max_overhead_pct"], pct, "the budget")
    eq(b["mechanism"], mechanism or gp.budget_mechanism(), "how the probes are taken off on this kernel")
    check_over_agrees(b)
    # over the budget only where it said it cannot hold it (a probe hit dear: its floor)
    over = check_over_is_the_floor(b, pct)
    check(not b["over_budget"] or over or b["over_budget_now"], f"over budget with no process over it: {b}")
    bp = [p for p in b["processes"] if p["pid"] == pid]
    eq(len(bp), 1, "the budget's account of the process")
    lim, floor = floor_limit(b, pid, pct)
    if floor:
        print(f"#   the budget cannot hold {pct:g} % here (a probe hit {b['probe_hit_cost_s'] * 1e6:.1f} us, a counted call"
              f" {b['call_cost_s'] * 1e6:.1f} us): floor {floor:.2f} %, held at {bp[0]['overhead_pct_estimate']:.2f} %",
              flush=True)
        check(f"cannot be held for PID {pid}:" in r.stderr, f"the floor said: {r.stderr[-1500:]}")
    # the budget holds a process's time in probes beyond its exact allowance (its first calls,
    # every one counted by design: check_over_agrees; docs/metrics.md): on this 4-s process
    # 3.5 ms, 0.085 %. Held to pct alone, two clean clones failed a first try at 1.020 % and
    # 1.080 % (0.935 and 0.995 % beyond it; typically 0.33-0.57 % in all here)
    allow = allowance_pct(b, bp[0]["seconds"])
    priced(bp[0]["overhead_pct_estimate"] <= lim + allow,
           f"budget's estimate {bp[0]['overhead_pct_estimate']:.3f} % (its exact allowance {allow:.3f} %, floor {floor:.3f} %)")
    ov = gp.proc(gp.reports(r.stdout, mode="overhead")[0], pid)
    secs = (t["phases"][-1]["end_ns"] - t["phases"][0]["start_ns"]) / 1e9
    share, allow = ov["probe_seconds_estimate"] / secs * 100, allowance_pct(b, secs)
    priced(share <= lim + allow,
           f"overhead line: {ov['probe_seconds_estimate']:.4f} s in probes over {secs:.2f} s = {share:.2f} %"
           f" (its exact allowance {allow:.3f} %, floor {floor:.3f} %)")
    return b, share


# The budget plans for a rate at the end of the period whose window saw it: up to two
# periods after a step, and a period stretches to GP_MAX_PERIOD_S (1 s) where its links are
# slow to make (their strays would take over half of the aim: sampling.h). On this 2-CPU
# machine with a VM beside, the 100000/s phase's periods ran 916-936 ms, and with the last
# 200/s phase 1 s long the reaction failed 8 of 11 runs: the process exited before the budget
# went back to every call, or it went back after the first second. With it 2.5 s long: back
# 1.00-1.39 s into it (3 runs, 6 budget runs).
REACT_S = 2.0
REACT_PHASES = "200:1000,20000:1000,100000:1000,200:2500"


def check_reaction(b, t):
    """Sampling within a second of the 100000/s phase's start, every call seen again within
    two of the budget's longest periods of the last phase's (REACT_S); nothing sampled in
    the first phase (200/s)."""
    ph = t["phases"]
    ch = b["changes"]
    # at 200/s every call is counted where the price allows it: 200 calls a second within
    # what the budget aims at (natively ~6 us a call: 0.12 % of 0.35 %); on 6.1 under QEMU's
    # TCG a counted call is priced ~95 us, 1.9 % a second at 200/s, and the budget samples it
    # once its exact allowance is spent (the first phase's 200 calls are within it)
    # near the aim either way is right: the budget measures the rate in short windows (at
    # 200/s a 50-ms window holds ~10 calls, +-60 % at 95 %), so every call is asserted only
    # where the price puts 200/s under half the aim (a clean clone's make test, a counted
    # call 17.3 us: 200/s at 0.346 % of the 0.35 % aim, asserted, and it failed 2 of 2)
    whole = ph[3]["rate"] * b["call_cost_s"] < 0.5 * b["target_pct"] / 100
    early = [c for c in ch if c["t_ns"] < ph[1]["start_ns"]]
    eq(early, [], "changes while the rate was 200/s")
    down = [c for c in ch if ph[2]["start_ns"] <= c["t_ns"] <= ph[2]["start_ns"] + 1e9 and c["fraction"] < 0.5]
    # or sampled already at its least share when it began (the 20000/s phase can take the
    # least window already: its allocation probes, priced, and its strays on a loaded machine)
    before = [c for c in ch if c["t_ns"] < ph[2]["start_ns"]]
    check(down or (before and before[-1]["fraction"] <= 0.0041), f"no sampling within 1 s of the 100000/s phase: {ch}")
    up = [c for c in ch if ph[3]["start_ns"] <= c["t_ns"] <= ph[3]["start_ns"] + REACT_S * 1e9 and c["fraction"] == 1]
    if whole:
        check(up, f"not back to every call within {REACT_S:g} s of the last phase: {ch}")
        print(f"#   back to every call {(up[0]['t_ns'] - ph[3]['start_ns']) / 1e9:.2f} s into the last phase", flush=True)
    else:
        print(f"#   200/s at {b['call_cost_s'] * 1e6:.1f} us a counted call is {ph[3]['rate'] * b['call_cost_s'] * 100:.2f} %"
              f" of a second, not under half the {b['target_pct']:.2f} % aimed at: not asserted counted whole", flush=True)
    # the first window at 100000/s was planned for 20000/s: it ends once it took twice its
    # period's allowance (the target's share of the period), which its share of the period at
    # the step, at the rate the process achieved there, passes unless the step was less than
    # about twofold on a loaded machine (a window planned on a 20000/s that the probes slowed,
    # a 100000/s the process fell short of; strays, hits while the links go, shrink the share).
    # (The step to 20000/s used to end one too: the every-call check caught it 10 ms in, on a
    # rate half 200/s; the process now spends its exact allowance first, about 0.1 s at
    # 20000/s, so the first window is planned on 20000/s alone.)
    # "At the step" is the first window still open when the step came: a window opens at its
    # change and lasts its share of the period, the time to the next change (a window that
    # closed just before the step, as one in three did here, saw none of it, and the next is
    # planned from the strays its links caught at 100000/s). Its hits at the rate of each part.
    takes, f3 = 0.0, None
    s2, r1, r2 = ph[2]["start_ns"], ph[1]["achieved_rate"], ph[2]["achieved_rate"]
    for c, nxt in zip(ch, ch[1:]):
        end = c["t_ns"] + c["fraction"] * (nxt["t_ns"] - c["t_ns"])
        if end <= s2 or c["t_ns"] >= ph[3]["start_ns"]:
            continue
        after = (end - max(c["t_ns"], s2)) / (end - c["t_ns"])
        rate = r2 * after + r1 * (1 - after)
        takes, f3 = c["fraction"] * rate * b["call_cost_s"] / (b["target_pct"] / 100), c["fraction"]
        break
    check(b["windows_cut"] >= 1 or takes < 2.5,
          f"no window ended early by the step to 100000/s: {b['windows']} windows; the window at the step "
          f"would take {takes:.1f} times its period's allowance (share {f3}): {ch}")
    if whole:
        eq(b["fraction"], 1.0, "every call seen at the end")
    else:  # still sampling the 200/s phase when the process ended: the final report comes first
        check(0 < b["fraction"] <= 1, f"fraction at the end {b['fraction']}")


def test_bad_input():
    for v in ("0", "-1", "-0.5", "101", "100.5", "abc", "", "1e999", "nan", "inf", "5%"):
        r = gp.gpuprobe(["--cudatrace", "--max-overhead", v], cmd=["true"])
        eq(r.returncode, 2, f"exit status for --max-overhead {v!r}")
        gp.one_error_line(r, "--max-overhead")
        r = gp.run([gp.GPUPROBE, "daemon", "--cudatrace", f"--max-overhead={v}"])
        eq(r.returncode, 2, f"daemon exit status for --max-overhead {v!r}")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        eq(len(lines), 1, f"daemon stderr lines ({r.stderr!r})")
        check("--max-overhead" in lines[0], lines[0])
    # the daemon's --config file goes through the same parser, and names its line
    with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
        f.write("cudatrace\nmax-overhead 0\n")
        f.flush()
        r = gp.run([gp.GPUPROBE, "daemon", "--config", f.name])
        eq(r.returncode, 2, "daemon exit status for max-overhead 0 in --config")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        eq(len(lines), 1, f"daemon stderr lines ({r.stderr!r})")
        check(f"{f.name}:2" in lines[0] and "--max-overhead" in lines[0], lines[0])
    # top reads its counters from the BPF tables as they are: sampled, they would pass for
    # exact counts
    r = gp.run([gp.GPUPROBE, "top", "--batch", "--max-overhead", "1"])
    eq(r.returncode, 2, "top exit status with --max-overhead")
    gp.one_error_line(r, "--max-overhead: top shows every call")
    # --trace probes every call, which no budget bounds
    r = gp.gpuprobe(["--cudatrace", "--trace", "/dev/null", "--max-overhead", "1"], cmd=["true"])
    eq(r.returncode, 2, "exit status with --trace")
    gp.one_error_line(r, "--max-overhead with --trace")
    gp.assert_nothing_attached()


def test_cannot_sample_refused():
    """Where the kernel cannot sample (no uprobe_multi links and no tracefs uprobe events,
    forced here), --max-overhead is refused: one line naming both, and the first release
    with uprobe_multi."""
    r = gp.gpuprobe(["--cudatrace", "--max-overhead", "1", "--libcuda", FAKECUDA], cmd=["true"], env=CANNOT)
    eq(r.returncode, 1, "exit status")
    gp.one_error_line(r, "--max-overhead cannot sample on this kernel")
    check("no uprobe_multi links (Linux 6.6 or later)" in r.stderr and "no tracefs uprobe events" in r.stderr,
          r.stderr)
    gp.assert_nothing_attached()


@retried
@price_model
def test_budget_without_uprobe_multi():
    """Kernels before 6.6 have no uprobe_multi links (forced here; on such a kernel this is
    what every budget test runs): the budget arms tracefs uprobe events for each window
    instead. Its estimates hold the truth and the allocations stay exact as with links,
    what it estimates it cost stays under the budget, and its events go with it."""
    before = set(gp.uprobe_events())
    r, t = run_rate(["--max-overhead", "1"], env=NO_MULTI)
    b, share = check_budget_run(r, t, mechanism="uprobe_events")
    check(b["windows"] >= 2, f"windows {b['windows']}")
    # its events are removed apart, by gpuprobe-detach (test_budget_events_removed_apart);
    # another gpuprobe running meanwhile (a second checkout's tests) has events of its own
    eq(gp.wait_detached(), [], "gpuprobe-detach still running")
    left = [(p, n) for p, n in set(gp.uprobe_events()) - before if not os.path.exists(f"/proc/{p}")]
    eq(sorted(left), [], "uprobe events left after gpuprobe exited")
    gp.assert_nothing_attached()


def test_budget_waits_for_another_gpuprobes_removal():
    """A gpuprobe under a budget that starts while another one's events are being removed
    (root's gpuprobe-detach) waits for that first: each removal holds the kernel's
    event_mutex through a grace period, and its own windows would close late behind them
    with their breakpoints in (on the H200 a budget of 1 % then read 2.65 %, its windows'
    hits 4x). A real removal may end before a second gpuprobe gets to its events (on 6.1
    under QEMU it did), so root's process named so here never ends: gpuprobe waits its 15 s
    at most, says so, and runs."""
    if gp.budget_mechanism() != "uprobe_events":
        gp.skip("no tracefs uprobe events here")
    py = "/usr/bin/python3"
    if not os.access(py, os.X_OK):
        gp.skip(f"no {py}")
    gp.wait_detached()
    held = subprocess.Popen([py, "-c", IMPOSTOR], stdout=subprocess.PIPE, text=True, cwd="/")
    try:
        eq(held.stdout.readline().strip(), "READY", "root's gpuprobe-detach's start")
        # the harness's own wait (gp.wait_detached) left out: it would wait for this one too
        env = dict(os.environ, **gp._with_state(None), **ENV)
        cmd = [RATE, "--time-calls", "--phases", "5000:300"]
        r = subprocess.run([gp.GPUPROBE] + BASE + ["--cudatrace", "--max-overhead", "1", "-v", "--"] + cmd,
                           capture_output=True, text=True, timeout=120 * gp.TIME_SLACK, env=env)
        eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
        m = re.search(r"uprobe events: waited ([0-9.]+) s for another gpuprobe's to be removed \(some still are\)\n",
                      r.stderr)
        check(m and float(m.group(1)) >= 14.9, f"no wait of 15 s for root's gpuprobe-detach: {r.stderr[-1500:]}")
        check("window closed" in r.stderr, f"no window after the wait: {r.stderr[-1500:]}")
    finally:
        held.kill()
        held.wait()
    gp.assert_nothing_attached()


IMPOSTOR = """
import ctypes, sys, time
libc = ctypes.CDLL(None)
libc.prctl(15, b"gpuprobe-detach", 0, 0, 0)  # PR_SET_NAME
libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: its /proc files are root's
print("READY", flush=True)
time.sleep(120)
"""


def _nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def test_budget_does_not_wait_for_a_users_detach():
    """A user's process named gpuprobe-detach, made undumpable so that its /proc files are
    root's, does not make a gpuprobe under a budget wait: only root's (its real uid) in
    gpuprobe's PID namespace are waited for."""
    if gp.budget_mechanism() != "uprobe_events":
        gp.skip("no tracefs uprobe events here")
    py = "/usr/bin/python3"  # the system's: a user's own interpreter may be closed to nobody
    if not os.access(py, os.X_OK):
        gp.skip(f"no {py} for nobody to run")
    gp.wait_detached()
    imp = subprocess.Popen([py, "-c", IMPOSTOR], stdout=subprocess.PIPE, text=True, preexec_fn=_nobody, cwd="/")
    try:
        eq(imp.stdout.readline().strip(), "READY", "the impostor's start")
        with open(f"/proc/{imp.pid}/comm") as f:
            eq(f.read().strip(), "gpuprobe-detach", "the impostor's name")
        eq(os.stat(f"/proc/{imp.pid}/comm").st_uid, 0, "the owner of its /proc files")
        r, t = run_rate(["--max-overhead", "1", "-v"], phases="5000:300")
        check("window closed" in r.stderr, f"no window: {r.stderr[-1500:]}")
        check("waited" not in r.stderr, f"it waited for the impostor: {r.stderr[-1500:]}")
    finally:
        imp.kill()
        imp.wait()


def test_budget_events_removed_apart():
    """A gpuprobe under a budget ends without waiting for its tracefs uprobe events to go (a
    grace period each, serially in the kernel: ~5.5 s for 48 on the H200's 6.18): a process
    of their own, gpuprobe-detach, removes them, out of gpuprobe's process group, so that
    what ends gpuprobe's group (a terminal's second Ctrl-C, a test's or a supervisor's
    killpg) does not leave them half removed. The traced process keeps no breakpoint of
    them meanwhile: every one is disarmed and held only by gpuprobe's own PID."""
    if gp.budget_mechanism() != "uprobe_events":
        gp.skip("no tracefs uprobe events here")
    a = gp.start_app([RATE, "--wait", "--phases", "20000:100000"], env=ENV)
    try:
        g = gp.start_gpuprobe(BASE + ["--cudatrace", "--memleak", "--max-overhead", "1", "-v", "-p", str(a.pid),
                                      "--duration", "1"])
        mine = [n for p, n in gp.uprobe_events() if p == g.pid]
        check(mine, f"no uprobe events of gpuprobe {g.pid} while it runs")
        a.signal(signal.SIGUSR1)  # its launches begin: windows arm and disarm the events
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-1500:]})")
        check("window closed" in g.stderr(), f"no window: {g.stderr()[-1500:]}")
        check(f"uprobe events: {len(mine)} handed to gpuprobe-detach" in g.stderr(),
              f"no hand-over of its {len(mine)} events: {g.stderr()[-1500:]}")
        # what ends gpuprobe's process group now does not reach the teardown
        try:
            os.killpg(g.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        eq(gp.wait_detached(), [], "gpuprobe-detach still running")
        eq([n for p, n in gp.uprobe_events() if p == g.pid], [], "its events, after gpuprobe-detach ended")
        gp.assert_nothing_attached()
        # the app was not traced after the end: it runs on, unharmed
        check(a.p.poll() is None, "the traced app ended")
    finally:
        a.kill()


def test_uprobe_events_of_a_killed_gpuprobe_removed():
    """A gpuprobe killed with SIGKILL cannot remove its uprobe events (names only: its perf
    events, and with them the breakpoints and programs, went with it); the next gpuprobe
    that makes some removes them."""
    a = gp.start_app([RATE, "--wait", "--phases", "1000:200"], env=ENV)
    g = None
    try:
        g = gp.start_gpuprobe(BASE + ["--cudatrace", "--max-overhead", "1", "-p", str(a.pid)], env=NO_MULTI)
        mine = [n for p, n in gp.uprobe_events() if p == g.pid]
        check(mine, f"no uprobe events of gpuprobe {g.pid} while it runs: {gp.uprobe_events()}")
        g.kill()
        left = [n for p, n in gp.uprobe_events() if p == g.pid]
        eq(sorted(left), sorted(mine), "the events of the killed gpuprobe, until another comes")
    finally:
        a.kill()
        if g:
            g.kill()
    r = gp.gpuprobe(BASE + ["--cudatrace", "--max-overhead", "1"], cmd=[RATE, "--phases", "1000:50"],
                    env=dict(NO_MULTI, **ENV))
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-800:]})")
    eq([n for p, n in gp.uprobe_events() if p == g.pid], [], "the killed gpuprobe's events removed")
    gp.assert_nothing_attached()


def test_without_budget_every_count_exact():
    for extra in ([], ["--max-overhead", "100"]):
        r, t = run_rate(extra)
        ct = final_proc(r.stdout, "cudatrace", t["pid"])
        eq(ct["launches"], t["launches"], f"launches {extra}")
        eq(ct["sync"]["calls"], len(t["phases"]), "syncs")
        check("sampling" not in ct, "no sampling object when every call is seen")
        eq(gp.reports(r.stdout, mode="budget"), [], "no budget record")
        ml = final_proc(r.stdout, "memleak", t["pid"])
        eq(ml["allocs_total"], t["allocs"], "allocations")


@retried
@price_model
def test_budget_keeps_the_overhead_under_it():
    """Twice with a budget (latency probes on: two hits a launch), beside plain runs and one
    without a budget, alternated: the machine is shared and its speed drifts."""
    plain, budget, shares, lim = [], [], [], 1.0
    for i in range(2):
        plain.append(plain_rate(REACT_PHASES))
        r, t = run_rate(["--max-overhead", "1"], phases=REACT_PHASES)
        b, share = check_budget_run(r, t)
        check_reaction(b, t)
        budget.append(t)
        shares.append(share)
        lim = max(lim, floor_limit(b, t["pid"], 1.0)[0])
    r, exact = run_rate([], phases=REACT_PHASES)
    # the workload's own timing: its time inside launch calls, over the run and in the
    # 100000/s phase, against the plain runs' (their spread is this machine's noise)
    base = min(call_share(t) for t in plain)
    noise = abs(call_share(plain[0]) - call_share(plain[1]))
    added = min(call_share(t) for t in budget) - base
    base3 = min(call_share(t, 2) for t in plain)
    added3 = min(call_share(t, 2) for t in budget) - base3
    exact3 = call_share(exact, 2) - base3
    print(f"#   gpuprobe's estimate: {shares[0]:.2f} %, {shares[1]:.2f} % of the run in probes; the workload's own"
          f" timing: {added * 100:+.2f} % of its time added in launch calls over the run"
          f" (plain runs differ by {noise * 100:.2f} %), {added3 * 100:+.2f} % in the 100000/s phase,"
          f" {exact3 * 100:+.2f} % there without a budget")
    # 1 %, or where the budget said it cannot hold 1 % here, its floor (FLOOR_TOL x)
    check(added <= lim / 100 + noise, f"the workload's launches took {added * 100:.2f} % more of its time (limit {lim:.2f} %)")
    check(exact3 > 0.05, f"without a budget the 100000/s phase should cost it more: {exact3 * 100:.2f} %")
    check(added3 < exact3 / 3, f"the budget kept {added3 * 100:.2f} % of {exact3 * 100:.2f} % in the 100000/s phase")


@retried
@price_model
def test_budget_bursts_stay_sampled_between_windows():
    """A process that launches in bursts (25,000 launches at up to 500,000/s, then 200 ms
    asleep, 16 times) whose windows fall between its bursts: the budget keeps sampling it
    while it runs. It used to see every call again after each window that saw none, and such
    a period met the next burst at full cost until the rate check ended it (two or three
    times a run here; on the H200 the 50:200-ms bursts spent 0.90 % of their time in probes
    under a 1 % budget, 0.66 % once it stopped). Its count stays inside its interval. It is
    held at the budget's share of the time it works (-v: "works N % of its time in bursts"),
    its windows back to back in a thread asleep most of each period."""
    cmd = [RATE, "--phases", "500000:50,5:200", "--repeat", "16", "--spin", "1000", "--alloc-every", "0"]
    r = gp.gpuprobe(BASE + ["--cudatrace", "--max-overhead", "1", "-v"], cmd=cmd, timeout=120 * gp.TIME_SLACK)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
    t = truth(r.stderr)
    ch = budget_record(r.stdout)["changes"]
    first = next((c for c in ch if c["fraction"] < 1), None)
    check(first is not None, f"the bursts were sampled: {ch}")
    # until the last sleep (the process's exit may end the sampling: nothing left to sample)
    end = t["phases"][1]["end_ns"] - 300_000_000
    back = [c for c in ch if first["t_ns"] < c["t_ns"] < end and c["fraction"] == 1]
    eq(back, [], f"periods with every call seen between the bursts (changes: {ch})")
    p = final_proc(r.stdout, "cudatrace", t["pid"])
    lo, hi = p["sampling"]["intervals"]["launches"]
    n = t["launches"]
    check(lo <= n, f"{n} launches under [{lo}, {hi}]")
    priced(hi is None or n <= hi, f"{n} launches outside [{lo}, {hi}]")
    works = re.findall(r"PID %d works (\d+) %% of its time in bursts" % t["pid"], r.stderr)
    # its share of time working: its life less its 16 sleeps of 200 ms (under QEMU's TCG the
    # bursts themselves take most of it: no bursts there)
    life = t["phases"][1]["end_ns"] - t["phases"][0]["start_ns"]
    if life > 0 and 1 - 16 * 0.2e9 / life < 0.4:
        check(works, f"held at its time worked ({1 - 16 * 0.2e9 / life:.2f} of its life): no \"works N % of its "
              "time in bursts\" line in -v (" + " ".join(l for l in r.stderr.splitlines() if "budget: period" in l)[-1500:]
              + ")")
    print(f"#   {n} launches in bursts: estimate {p['launches']} ({p['launches'] / n:.2f}x), [{lo}, {hi}],"
          f" {len(ch)} changes of the sampled share, none back to every call; works {'/'.join(works)} %", flush=True)


@retried
def test_budget_samples_naming_calls():
    """Launches that each ask for their function first (cuKernelGetFunction, as cuBLAS
    does): under a budget the naming calls are sampled with the launches, priced and not
    counted, and the kernel keeps its name. Before, they stayed attached, and cost the
    workload (its own timing) about half of what every call cost it."""
    cmd = [RATE, "--time-calls", "--get-function", "--alloc-every", "0", "--phases", "100000:1500"]
    plain = gp.run(cmd, timeout=60)
    eq(plain.returncode, 0, "rate_app exit")
    base = call_share(truth(plain.stderr))
    runs = {}
    for name, extra in (("exact", []), ("budget", ["--max-overhead", "1"])):
        r = gp.gpuprobe(BASE + ["--cudatrace"] + extra, cmd=cmd, timeout=60)
        eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-800:]})")
        runs[name] = (r, truth(r.stderr))
    r, t = runs["budget"]
    ct = final_proc(r.stdout, "cudatrace", t["pid"])
    check(0 < ct["sampling"]["fraction"] < 1, f"sampled: {ct.get('sampling')}")
    k = [x for x in ct["kernels"] if x["name"] == t["kernel"]]
    eq(len(k), 1, "the kernel by name")
    eq(ct["unnamed_launches"], 0, "unnamed launches")
    # priced: every counted launch brought a naming call, priced as much as the launch
    b = budget_record(r.stdout)
    bp = [p for p in b["processes"] if p["pid"] == t["pid"]][0]
    check(bp["probe_seconds_estimate"] >= 1.3 * bp["hits"] * b["call_cost_s"],
          f"probe seconds {bp['probe_seconds_estimate']} for {bp['hits']} hits at {b['call_cost_s']}")
    exact = call_share(runs["exact"][1]) - base
    added = call_share(t) - base
    # where a hit is dear (6.1 under QEMU's TCG: 15-60 us) the budget says it cannot hold 1 %
    # and at what floor: there the workload's own timing is held to that (FLOOR_TOL x), not to
    # a third of every call seen (there: +26.97 % every call seen, +33.62 % sampled: arming
    # and disarming the probes each window costs the process more than the hits it spares)
    lim, floor = floor_limit(b, t["pid"], 1.0)
    print(f"#   naming and launch calls: {exact * 100:+.2f} % of the workload's time added with every call seen,"
          f" {added * 100:+.2f} % under --max-overhead 1" + (f" (the budget's floor here: {floor:.2f} %)" if floor else ""))
    check(exact > 0.05, f"every call seen should cost it more: {exact * 100:.2f} %")
    if floor:
        check(added <= lim / 100, f"the budget kept {added * 100:.2f} % of {exact * 100:.2f} %, past {FLOOR_TOL} x its floor {floor:.2f} %")
    else:
        check(added < exact / 3, f"the budget kept {added * 100:.2f} % of {exact * 100:.2f} %")


@retried
def test_budget_no_latency_and_text():
    r = gp.gpuprobe(["--libcuda", FAKECUDA, "--cudatrace", "--no-latency", "--max-overhead", "2"],
                    cmd=[RATE, "--phases", "1000:300,200000:1000,1000:300"], timeout=60)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-800:]})")
    t = truth(r.stderr)
    m = re.search(r"PID %d \(rate_app\)[^\n]*: ~([\d,]+) launches" % t["pid"], r.stdout)
    check(m, f"no estimated launch line:\n{r.stdout[-2000:]}")
    # an interval with no upper end (windows more than half in probes: on 6.1 in QEMU a
    # probed call cost 3-4 times an unprobed one) says "at least" and why
    m = re.search(r"sampled \(--max-overhead\): ([0-9.]+)% of its launch and sync calls seen; its counts are "
                  r"estimates \(95%: launches (?:([\d,]+)-([\d,]+)|at least ([\d,]+))[^\n]*", r.stdout)
    check(m, f"no sampling line:\n{r.stdout[-2000:]}")
    if m.group(4):
        lo, hi = int(m.group(4).replace(",", "")), float("inf")
        check(m.group(0).endswith("how many it made unseen has no upper bound"), f"an unbounded interval says why: {m.group(0)}")
    else:
        lo, hi = (int(x.replace(",", "")) for x in m.groups()[1:3])
    check(lo <= t["launches"] <= hi, f"true launches {t['launches']} outside {m.groups()}")
    how = {"uprobe_multi": "uprobe_multi links", "uprobe_events": "tracefs uprobe events"}[gp.budget_mechanism()]
    check(re.search(r"gpuprobe budget \(--max-overhead 2%%, %s\)" % how, r.stdout), f"no budget line ({how})")


@retried
@price_model
def test_budget_with_pid():
    """-p: the links carry the PID filter each time they are made again."""
    a = gp.start_app([RATE, "--wait", "--phases", "100000:1500,1000:500"], env=ENV)
    try:
        g = gp.start_gpuprobe(BASE + ["--cudatrace", "--max-overhead", "1", "-p", str(a.pid)])
        a.signal(signal.SIGUSR1)
        eq(a.wait(), 0, f"workload exit ({a.stderr()[-300:]!r})")
        eq(g.wait(), 0, "gpuprobe exit")
        t = truth(a.stderr())
        ct = final_proc(g.stdout(), "cudatrace", a.pid)
        lo, hi = ct["sampling"]["intervals"]["launches"]
        check(lo <= t["launches"], f"true launches {t['launches']} under [{lo}, {hi}]")
        priced(t["launches"] <= (hi if hi is not None else float("inf")),
               f"true launches {t['launches']} outside [{lo}, {hi}]")
        # an upper end, unless the product says there is none and why: an unseen part longer
        # than a period (long_unseen), or windows most of whose time went to the probes (a hit
        # dear: 8.4 us here in one run of the whole suite, where the 100000/s phase probed
        # cannot keep its pace); then, as issue 29 asks, the estimate within a factor of 2
        # (within DEAR_BOUND where a counted call costs more than the loop's launch: a paced
        # loop, as in test_budget_interval_coverage; arm64 under QEMU's TCG, a call priced
        # 135 us, read it at 0.24x)
        smp = ct["sampling"]
        if hi is None and not smp.get("long_unseen"):
            bound = DEAR_BOUND if dear(budget_record(g.stdout()), t) else 2
            check(smp.get("unbounded"), f"no upper end and not said unbounded: {smp}")
            priced(t["launches"] / bound <= ct["launches"] <= bound * t["launches"],
                   f"no upper end: the estimate {ct['launches']} within {bound}x of the {t['launches']} launches: {smp}")
    finally:
        a.kill()
    gp.assert_nothing_attached()


@retried
@price_model
def test_daemon_default_budget_metrics():
    """The daemon's default budget on /metrics: while a process is sampled, its series get
    gpuprobe_sampled_processes and the estimate gauges (seen, estimate, 95 % interval), its
    launch counter adds its estimate (inside the interval) and the seen family the calls
    seen; gauges are of running processes, so the workload lingers after printing its
    truth, and its estimates go when it exits (the counters stay)."""
    import test_daemon as td
    d = td.start_daemon(extra=["--libcuda", FAKECUDA], modes=("--cudatrace",), budget=True)
    try:
        m = td.get(d.port)[1]
        eq(td.value(m, "gpuprobe_budget_max_overhead_ratio"), 0.01, "the daemon's default budget")
        # in force on either kind of kernel: links (6.6 or later), or uprobe events
        eq(td.value(m, "gpuprobe_budget_in_force", mechanism=gp.budget_mechanism()), 1,
           f"gpuprobe_budget_in_force with mechanism {gp.budget_mechanism()}")
        # 100000/s: with latency probes a window is a third probes, so the interval has an
        # upper end (faster, the stand-in's launches would cost less than the probes)
        w = gp.Background([RATE, "--phases", "100000:2000,1000:200", "--linger", "5000"], env=ENV)
        deadline = time.time() + 10
        sampled = None
        while time.time() < deadline and sampled is None and w.p.poll() is None:
            time.sleep(0.3)
            sampled = td.value(td.get(d.port)[1], "gpuprobe_sampled_processes", pid=w.pid)
        eq(sampled, 1, "gpuprobe_sampled_processes while sampled")
        t = w.wait_truth(timeout=20)
        # the last unseen part is extrapolated from its window until the next window says
        # how the rate went on: read once every call is seen again (within a second), and
        # a period (100 ms) later
        deadline = time.time() + 3
        while time.time() < deadline and td.value(td.get(d.port)[1], "gpuprobe_budget_attached_ratio") != 1:
            time.sleep(0.1)
        time.sleep(0.3)
        check(w.p.poll() is None, "the workload still lingers")
        m = td.get(d.port)[1]
        eq(td.value(m, "gpuprobe_budget_attached_ratio"), 1, "every call seen once the launches stopped")
        est = {b: td.value(m, "gpuprobe_cuda_launches_estimate", pid=w.pid, bound=b)
               for b in ("seen", "estimate", "low", "high")}
        # no high gauge only where an attach slower than a period left a part unseen: then
        # the unbounded family says by how much the interval's high counter may fall short
        unb = td.value(m, "gpuprobe_cuda_launches_unbounded_total", pid=w.pid) or 0
        check(None not in (est["seen"], est["estimate"], est["low"]) and (est["high"] is not None or unb > 0),
              f"estimate gauges of a lingering sampled process: {est} (unbounded {unb})")
        high = est["high"] if est["high"] is not None else float("inf")
        check(est["low"] <= t["launches"], f"true launches {t['launches']} under {est}")
        priced(t["launches"] <= high, f"true launches {t['launches']} outside {est}")
        check(0 < est["seen"] / est["estimate"] < 1, f"the share seen: {est}")
        counter = td.value(m, "gpuprobe_cuda_kernel_launches_total", pid=w.pid)
        iv = [td.value(m, "gpuprobe_cuda_launches_interval_total", pid=w.pid, bound=x) for x in ("low", "high")]
        if unb:
            iv[1] = float("inf")
        check(iv[0] <= counter <= iv[1] and iv[0] <= t["launches"],
              f"the counter {counter} and the truth {t['launches']} inside the interval's counters {iv} (gauges {est})")
        # the upper end as the gauges' (priced: under QEMU's TCG the windows' rates read low,
        # 6.1 x86-64: 47,211 and 53,026 of 200,200 in [13,468, 144,416] and [7,713, 152,198])
        priced(t["launches"] <= iv[1], f"the truth {t['launches']} over the interval's counters {iv} (gauges {est})")
        eq(td.value(m, "gpuprobe_cuda_launches_seen_total", pid=w.pid), est["seen"], "the calls seen")
        check(est["seen"] < t["launches"], f"calls seen {est['seen']} of {t['launches']}")
        eq(w.wait(), 0, "workload exit")
        deadline = time.time() + 10
        while time.time() < deadline and td.value(td.get(d.port)[1], "gpuprobe_sampled_processes", pid=w.pid):
            time.sleep(0.3)
        m = td.get(d.port)[1]
        eq(td.value(m, "gpuprobe_sampled_processes", pid=w.pid), None, "no sampled process after its exit")
        eq(td.value(m, "gpuprobe_cuda_launches_estimate", pid=w.pid), None, "no estimates after its exit")
        eq(td.value(m, "gpuprobe_cuda_kernel_launches_total", pid=w.pid), counter, "the counter stays")
        eq(td.value(m, "gpuprobe_cuda_launches_seen_total", pid=w.pid), est["seen"], "the calls seen stay")
        td.stop(d)
    finally:
        d.kill()
    d = td.start_daemon(extra=["--libcuda", FAKECUDA, "--max-overhead", "100"], modes=("--cudatrace",), budget=True)
    try:
        eq(td.value(td.get(d.port)[1], "gpuprobe_budget_max_overhead_ratio"), None, "no budget at 100 %")
        td.stop(d)
    finally:
        d.kill()


def test_daemon_cannot_sample_says_so():
    """The daemon's default budget where the kernel cannot sample (no uprobe_multi links,
    no tracefs uprobe events: forced): one line at start says so, /metrics has the budget
    asked for, not in force, with the reason, and every call is counted, exactly."""
    import test_daemon as td
    d = td.start_daemon(extra=["--libcuda", FAKECUDA], modes=("--cudatrace",), budget=True, per_process=False,
                        env=CANNOT)
    try:
        lines = [l for l in d.stderr().splitlines() if "cannot sample" in l]
        eq(len(lines), 1, f"one line at start: {d.stderr()[-1500:]}")
        check("uprobe_multi links (Linux 6.6 or later)" in lines[0] and "every call is counted at full cost" in lines[0],
              lines[0])
        m = td.get(d.port)[1]
        eq(td.value(m, "gpuprobe_budget_max_overhead_ratio"), 0.01, "the budget asked for")
        eq(td.value(m, "gpuprobe_budget_in_force", mechanism="none", reason="uprobe_events_off"), 0, "in force")
        eq(td.value(m, "gpuprobe_budget_attached_ratio"), None, "no sampling families")
        base = launch_sums(td, d.port)
        # far past what a 1 % budget would count whole (test_budget_keeps_the_overhead_under_it)
        r = gp.run([RATE, "--phases", "100000:1000", "--alloc-every", "0"], env=ENV)
        eq(r.returncode, 0, "rate_app exit")
        want = truth(r.stderr)["launches"]
        end = settled_sums(td, d.port)
        got = {k: end[k] - base[k] for k in end}
        eq((got["counter"], got["seen"]), (want, want), f"every launch counted ({got})")
        eq(got["periods"], 0, "sampled periods")
        td.stop(d)
        eq(len([l for l in d.stderr().splitlines() if "cannot sample" in l]), 1, "said once")
    finally:
        d.kill()


LAUNCH_FAMS = {"counter": ("gpuprobe_cuda_kernel_launches_total", {}),
               "seen": ("gpuprobe_cuda_launches_seen_total", {}),
               "low": ("gpuprobe_cuda_launches_interval_total", {"bound": "low"}),
               "high": ("gpuprobe_cuda_launches_interval_total", {"bound": "high"}),
               "unbounded": ("gpuprobe_cuda_launches_unbounded_total", {})}


def launch_sums(td, port):
    """The node-wide sums a dashboard takes of the launch families (comm rate_app), and the
    budget's sampled periods."""
    m = td.get(port)[1]
    v = {k: td.value(m, f, comm="rate_app", **l) or 0 for k, (f, l) in LAUNCH_FAMS.items()}
    v["periods"] = td.value(m, "gpuprobe_budget_sampled_periods_total") or 0
    return v


def settled_sums(td, port, timeout=15):
    """The sums once two scrapes a second apart agree (an exited process's estimate is
    finished at the budget's next boundary, within a second)."""
    deadline = time.time() + timeout
    prev = launch_sums(td, port)
    while time.time() < deadline:
        time.sleep(1)
        now = launch_sums(td, port)
        if now == prev:
            return now
        prev = now
    raise gp.Failure(f"the launch families did not settle: {prev}")


@retried
@price_model
def test_daemon_default_budget_counter_is_the_estimate():
    """The daemon at its default budget, the default series (comm, cgroup): a process whose
    launches are sampled adds its estimate to gpuprobe_cuda_kernel_launches_total, which
    never goes down across scrapes (sampled or not, running or exited), and ends inside the
    interval's counters, which hold the process's own count; the seen family holds the
    calls seen (fewer). It used to add only the calls seen: 6,451 of rate_app's 301,100."""
    import test_daemon as td
    d = td.start_daemon(extra=["--libcuda", FAKECUDA], modes=("--cudatrace",), budget=True, per_process=False)
    try:
        base = launch_sums(td, d.port)
        w = gp.Background([RATE, "--phases", "200:500,100000:3000,2000:500"], env=ENV)
        seq = [base]
        while w.p.poll() is None:
            time.sleep(0.3)
            seq.append(launch_sums(td, d.port))
        eq(w.wait(), 0, "workload exit")
        t = truth(w.stderr())
        seq.append(settled_sums(td, d.port))
        for a, b in zip(seq, seq[1:]):
            for k in LAUNCH_FAMS:
                check(b[k] >= a[k], f"{k} went down between scrapes: {a[k]} -> {b[k]} ({seq})")
        end = {k: seq[-1][k] - base[k] for k in seq[-1]}
        check(end["periods"] > 0, f"the workload was sampled: {end}")
        check(end["seen"] < t["launches"], f"calls seen {end['seen']} of {t['launches']}")
        check(end["low"] <= t["launches"], f"the workload's {t['launches']} launches under the interval's counters {end}")
        priced(t["launches"] <= end["high"] + end["unbounded"],
               f"the workload's {t['launches']} launches outside the interval's counters {end}")
        check(end["low"] <= end["counter"] <= end["high"], f"the counter outside the interval: {end}")
        check(end["counter"] > end["seen"], f"the counter adds the estimate, not the calls seen: {end}")
        td.stop(d)
    finally:
        d.kill()


def test_daemon_default_budget_short_jobs_exact():
    """The daemon at its default budget: short jobs run back to back, each calling fast
    (20,000 launches a second, far past the budget's rate) but making fewer calls than its
    exact allowance, are counted exactly, none sampled. Four 703-launch runs used to add
    703 or 1,406 of their 2,812 launches: the first one's rate took the probes off for the
    next 500-ms period, and the next runs went unseen whole."""
    import test_daemon as td
    tmp = tempfile.mkdtemp(prefix="gp-budget-jobs-")
    # -v: the budget's accounts (budget: acct ...), kept when the test fails, for
    # bench/budget_replay.c (under QEMU's TCG a run read 140 of its 840 launches unbounded)
    d = td.start_daemon(extra=["--libcuda", FAKECUDA, "-v"], modes=("--cudatrace",), budget=True, per_process=False)
    try:
        # The allowance at start prices a call's traps alone; the programs' run time is added
        # once the kernel has timed 400 runs of them (budget.c's measure_progs). On 6.1 in
        # QEMU that raised the price by a third: jobs sized from the first allowance (270
        # calls: 160 launches) passed the priced one, and the budget sampled them (3 periods,
        # counter 1126 of 960). So a paced job under another name (150/s: every call seen)
        # makes 450 runs first, and the jobs are sized from the allowance once it moved.
        first = td.value(td.get(d.port)[1], "gpuprobe_budget_exact_allowance_calls")
        r = gp.run([heavy_app(tmp), "--phases", "150:3000", "--alloc-every", "0"], env=ENV, timeout=60)
        eq(r.returncode, 0, f"the pricing job's exit ({r.stderr[-300:]})")
        allowance, deadline = first, time.time() + 15
        while allowance == first and time.time() < deadline:
            time.sleep(0.5)
            allowance = td.value(td.get(d.port)[1], "gpuprobe_budget_exact_allowance_calls")
        if allowance == first:  # the programs not timed (budget.c warned): the traps' price is the price
            print(f"#   the exact allowance ({first} calls) did not move once the programs ran 450 times", flush=True)
        # ~700 launches a job, fewer when a call is priced so high here that they would come
        # near the allowance (a later measure of the programs moves the price a little): on
        # 6.1 in QEMU, where a probe hit costs several times what it does natively, the
        # priced allowance was about 200 calls
        ms = min(35, int(allowance * 0.6 / 20))
        check(ms >= 5, f"exact allowance {allowance} calls: too few for a short job's 100")
        base = launch_sums(td, d.port)
        m0 = td.get(d.port)[1]
        want = 0
        for _ in range(6):
            r = gp.run([RATE, "--phases", f"20000:{ms}", "--alloc-every", "0"], env=ENV)
            eq(r.returncode, 0, "rate_app exit")
            want += truth(r.stderr)["launches"]
        end = settled_sums(td, d.port)
        got = {k: end[k] - base[k] for k in end}
        m1 = td.get(d.port)[1]
        # what the budget did meanwhile, for a run that fails: processes armed for themselves
        # (the budget sampling when a job began) and the sampled share now
        for f in ("gpuprobe_budget_exact_processes_total", "gpuprobe_budget_windows_cut_total"):
            got[f[len("gpuprobe_budget_"):]] = (td.value(m1, f) or 0) - (td.value(m0, f) or 0)
        got["attached_ratio"] = td.value(m1, "gpuprobe_budget_attached_ratio")
        try:
            eq(got["counter"], want, f"launches of six short jobs ({got})")
            eq((got["seen"], got["low"], got["high"], got["unbounded"]), (want, want, want, 0),
               f"every call seen: the interval is the count ({got})")
            eq(got["periods"], 0, "sampled periods")
        except gp.Failure as e:
            log = gp.keep_log("short_jobs_exact-daemon.log",
                              "\n".join(l for l in d.stderr().splitlines() if "budget" in l))
            raise gp.Failure(f"{e} (the daemon's budget log: {log})")
        td.stop(d)
    finally:
        d.kill()
        shutil.rmtree(tmp, ignore_errors=True)


@price_model
def test_budget_library_loaded_later():
    """A libcuda the command loads after the start is probed through a descriptor that
    libwatch closes once attached (/proc/self/fd/N): the budget keeps its own, so every
    window attaches to that file again (it used to find N closed, "cannot attach the
    sampled probes ... again", and saw none of the process's later calls: 8810 launches
    estimated of 150800)."""
    d = tempfile.mkdtemp(prefix="gp-blate-")
    os.chmod(d, 0o755)
    try:
        shutil.copy(FAKECUDA, d)
        lib = os.path.join(d, "libcuda.so.1")
        # gpuprobe finds the build's stand-in at start (its LD_LIBRARY_PATH: the CLI needs
        # one); the copy the command loads later is another file
        r = gp.gpuprobe(["--cudatrace", "--max-overhead", "1", "--json", "-o", "-"],
                        cmd=["sh", "-c", f'sleep 0.5; LD_LIBRARY_PATH="{d}" exec "$0" --phases 1000:300,100000:2500,1000:500',
                             RATE], timeout=60, env={"LD_LIBRARY_PATH": gp.FAKECUDA_DIR})
        eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
        t = truth(r.stderr)
        check(f"probing libcuda {lib} of PID {t['pid']}" in r.stderr, f"probed after the start: {r.stderr[-1500:]}")
        check("cannot attach the sampled probes" not in r.stderr, r.stderr[-1500:])
        b = budget_record(r.stdout)
        # 500-ms periods in the 2.5-s phase (0.83-s ones where the budget says it cannot hold
        # 1 %: a loaded machine's price, src/core/budget.c's OVER_PERIOD_S): each window after
        # the first attaches again
        # (at least one window after the first: the attach again is what this tests; how many
        # fit depends on the period, longer where the budget is at a floor, and the floor's
        # gauge is read once the process is gone)
        check(b["windows"] >= 2, f"windows {b['windows']}")
        ct = final_proc(r.stdout, "cudatrace", t["pid"])
        smp = ct.get("sampling") or {}
        lo, hi = smp.get("intervals", {}).get("launches", (ct["launches"], ct["launches"]))
        check(lo <= t["launches"], f"{t['launches']} launches under [{lo}, {hi}]")
        priced(t["launches"] <= (hi if hi is not None else float("inf")),
               f"{t['launches']} launches inside [{lo}, {hi}]")
        # the 2x where a counted call costs less than the 10-us gaps of the 100,000/s phase
        # (5.1 us on earlier 2-CPU machines; 17-24 us on 2026-11-29's, whose estimate read
        # 0.44-0.49x, unbounded and said so: issue 29, open)
        if b["call_cost_s"] < 1e-5:
            check(t["launches"] / 2 <= ct["launches"] <= t["launches"] * 2,
                  f"estimate {ct['launches']} of {t['launches']} launches ({ct.get('sampling')})")
        else:
            print(f"#   (2x not asserted: a counted call {b['call_cost_s'] * 1e6:.1f} us, past the 10-us gaps; estimate"
                  f" {ct['launches']} of {t['launches']}, [{lo}, {hi}])", flush=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_budget_prices_the_probes_it_never_samples():
    """Allocation, free and copy probes are never sampled, so the budget prices them (two
    cold traps a call) and leaves the sampled probes what is left: 4000 launches/s with an
    allocation and a free after each is 8000 priced calls/s, more than the 0.35 % the
    budget aims at by themselves, so it says so (over budget) and samples the launches at
    its least share; its estimate of the process's time in probes holds the priced calls.
    Copies under --bandwidth-util are priced the same way. On an emulated CPU (GP_TIME_SLACK:
    6.1 under QEMU's TCG) the rate is that many times lower: 8000 allocation records a second
    outran memleak's reader there (1,654 dropped, counted as ringbuf_full, so the allocations
    were not exact), and at a hit priced 15-60 us 2000 priced calls a second pass the budget's
    aim 30 times over all the same."""
    rate = int(4000 / gp.TIME_SLACK)
    r = gp.gpuprobe(BASE + ["--cudatrace", "--memleak", "--max-overhead", "1", "-i", "0.5"],
                    cmd=[RATE, "--phases", f"{rate}:1500", "--alloc-every", "1"], timeout=60)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
    t = truth(r.stderr)
    b = budget_record(r.stdout)
    bp = [p for p in b["processes"] if p["pid"] == t["pid"]]
    eq(len(bp), 1, "the budget's account of the process")
    priced = (t["allocs"] + t["frees"]) * 2 * b["probe_hit_cost_s"]
    check(bp[0]["probe_seconds_estimate"] >= 0.95 * priced,
          f"the budget's {bp[0]['probe_seconds_estimate']:.4f} s in probes holds less than the"
          f" {t['allocs'] + t['frees']} allocation calls' {priced:.4f} s")
    check(2 * rate * 2 * b["probe_hit_cost_s"] > b["target_pct"] / 100,
          f"{2 * rate} priced calls a second at {b['probe_hit_cost_s'] * 1e6:.2f} us a hit pass the aim alone")
    # the budget cannot hold 1 % for it (the priced probes alone pass it): said, its floor
    # above the budget and holding them
    floor = bp[0].get("floor_pct") or 0
    check(floor > 1 and f"cannot be held for PID {t['pid']}:" in r.stderr,
          f"floor {floor} %: not said ({r.stderr[-1000:]})")
    check(floor / 100 * bp[0]["seconds"] >= 0.9 * priced,
          f"the floor {floor:.2f} % of {bp[0]['seconds']:.2f} s holds less than the priced calls' {priced:.4f} s")
    # said while the process runs (the interval reports): once it ended, its period closes and
    # nothing passes the budget any more, as the final report's "now" says
    eq(any(x["over_budget"] for x in gp.reports(r.stdout, mode="budget")), True,
       "over budget by the allocation probes alone")
    # "fraction" is the share now (back to 1 once the process ended): the least it took
    least = min([c["fraction"] for c in b["changes"]] + [b["fraction"]])
    check(least <= 0.01, f"launches sampled at the least share: {least} ({b['changes']})")
    ml = final_proc(r.stdout, "memleak", t["pid"])
    drops = gp.final(r.stdout, "memleak").get("drops")
    eq(ml["allocs_total"], t["allocs"], f"allocations, exact (memleak's drops: {drops})")
    eq(ml["frees_total"], t["frees"], f"frees, exact (memleak's drops: {drops})")

    r = gp.gpuprobe(BASE + ["--bandwidth-util", "--max-overhead", "1"], cmd=[app("copy_app"), "--n", "100"],
                    timeout=60)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
    t = truth(r.stderr)
    copies = sum(v["copies"] for v in t["transfers"].values())
    check(copies >= 500, f"copy_app's copies: {copies}")
    b = budget_record(r.stdout)
    bp = [p for p in b["processes"] if p["pid"] == t["pid"]]
    eq(len(bp), 1, "the budget's account of the copying process")
    check(bp[0]["probe_seconds_estimate"] >= 0.95 * copies * 2 * b["probe_hit_cost_s"],
          f"the budget's {bp[0]['probe_seconds_estimate']:.4f} s in probes holds less than {copies} copies")


@retried
def test_budget_floor_said_and_held():
    """A probe hit priced as on 6.1 under QEMU's TCG (30 us: GPUPROBE_TEST_PROBE_COST), where
    the least the budget can sample costs rate_app's process more than 1 %: the budget says
    once, for that process, that 1 % cannot be held and at what floor (stderr, the JSON
    record's floor_pct and floor_processes, the text report), holds it there (its own
    estimate within FLOOR_TOL of the floor, beyond its exact allowance), and its estimates
    still hold the true count (bounded or said not to be). Natively, with the calibrated
    price, the same run has no floor over the budget (test_budget_keeps_the_overhead_under_it)."""
    cost = 30e-6
    r, t = run_rate(["--max-overhead", "1"], env={"GPUPROBE_TEST_PROBE_COST": str(cost)})
    pid = t["pid"]
    said = [l for l in r.stderr.splitlines() if "cannot be held for PID" in l]
    eq(len(said), 1, f"the floor said once: {said}")
    check(f"1 % cannot be held for PID {pid}: a probe hit costs 30.0 us" in said[0], said[0])
    b = budget_record(r.stdout)
    eq(b["probe_hit_cost_s"], cost, "the hit's price")
    bp = [p for p in b["processes"] if p["pid"] == pid][0]
    floor = bp.get("floor_pct") or 0
    check(floor > 1, f"floor {floor} % (the process: {bp})")
    eq(b["floor_processes"], 1, "processes at a floor over the budget")
    eq(b["floor_pct"], floor, "the highest floor")
    check_over_is_the_floor(b, 1.0)
    allow = allowance_s(b)
    held = (bp["probe_seconds_estimate"] - allow) / bp["seconds"] * 100
    print(f"#   floor {floor:.2f} %, held at {held:.2f} % beyond the exact allowance"
          f" ({bp['overhead_pct_estimate']:.2f} % in all)", flush=True)
    check(held <= FLOOR_TOL * floor, f"held at {held:.2f} %, past {FLOOR_TOL} x its floor {floor:.2f} %")
    ct = final_proc(r.stdout, "cudatrace", pid)
    lo, hi = ct["sampling"]["intervals"]["launches"]
    check(lo <= t["launches"] <= (hi if hi is not None else float("inf")), f"true launches {t['launches']} outside [{lo}, {hi}]")
    ml = final_proc(r.stdout, "memleak", pid)
    eq(ml["allocs_total"], t["allocs"], "allocations, exact")
    # the text report says it too (with the allocations' priced probes: at the longer periods
    # the planner takes at a floor, the launches' alone over 2 s came within the budget once)
    r2 = gp.gpuprobe(["--libcuda", FAKECUDA, "--cudatrace", "--memleak", "--max-overhead", "1"],
                     cmd=[RATE, "--phases", "100000:2000"], timeout=60,
                     env={"GPUPROBE_TEST_PROBE_COST": str(cost)})
    eq(r2.returncode, 0, f"gpuprobe exit ({r2.stderr[-800:]})")
    check(re.search(r"cannot be held here: for 1 process the least the budget can sample passes 1%", r2.stdout + r2.stderr),
          f"no floor line in the text report:\n{(r2.stdout + r2.stderr)[-2000:]}")


def warm_price():
    """The warm price of a probe hit the budget took (calibrated at its start)."""
    r = gp.gpuprobe(BASE + ["--cudatrace", "--max-overhead", "1"], cmd=["true"], timeout=60)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-800:]})")
    return budget_record(r.stdout)["probe_hit_warm_cost_s"]


def test_budget_price_not_the_time_others_took():
    """The warm price of a hit is the trap's and its program's time, not the time other
    processes took the CPU from the calibration: gpuprobe on one CPU, alone there and then
    beside two busy loops on it, prices a hit within 2x (once the five timed rounds of 1000
    probed calls were on the wall clock, each lost the CPU to the loops and a hit was priced
    at 32.5 us against 10.4 us alone, the cold price pulled up with it; the budget then held
    three times too much, and every window read as all in probes)."""
    cpus = os.sched_getaffinity(0)
    hogs = []
    try:
        os.sched_setaffinity(0, {min(cpus)})  # gpuprobe and the loops inherit it
        alone = min(warm_price() for _ in range(2))
        hogs = [gp.Background(["sh", "-c", "while :; do :; done"]) for _ in range(2)]
        shared = warm_price()
    finally:
        for h in hogs:
            h.kill()
        os.sched_setaffinity(0, cpus)
    print(f"#   a warm hit: {alone * 1e6:.2f} us alone on a CPU, {shared * 1e6:.2f} us beside two busy loops", flush=True)
    check(shared <= 2 * alone, f"a hit priced {shared * 1e6:.2f} us beside two busy loops, {alone * 1e6:.2f} us alone")


def test_daemon_budget_floor_metrics():
    """The daemon at its default budget with a probe hit priced as on 6.1 under QEMU's TCG
    (--probe-cost 30 us): a process whose least sampled share passes 1 % (rate_app at
    100,000/s with an allocation and a free every 100 launches, priced and never sampled)
    is counted in gpuprobe_budget_floor_processes while it runs or until it is folded, with
    its floor in gpuprobe_budget_floor_ratio, and the daemon says so once for its PID."""
    import test_daemon as td
    d = td.start_daemon(extra=["--libcuda", FAKECUDA, "--probe-cost", "30e-6"], modes=("--cudatrace", "--memleak"),
                        budget=True, per_process=False)
    try:
        _, text = td.get(d.port)
        eq(td.value(text, "gpuprobe_budget_floor_processes"), 0, "processes at a floor before any")
        a = gp.Background([RATE, "--phases", "100000:4000"], env=ENV)
        seen, deadline = (0, 0), time.time() + 30
        while time.time() < deadline:
            time.sleep(0.5)
            _, text = td.get(d.port)
            n, ratio = td.value(text, "gpuprobe_budget_floor_processes"), td.value(text, "gpuprobe_budget_floor_ratio")
            if n:
                seen = (n, ratio)
                break
            if a.p.poll() is not None:  # once more after its end: ended and not yet folded
                deadline = min(deadline, time.time() + 1)
        a.wait(timeout=60)
        check(seen[0] == 1 and seen[1] > 0.01, f"floor processes, ratio {seen} (the daemon: {d.stderr()[-1500:]})")
        said = [l for l in d.stderr().splitlines() if f"cannot be held for PID {a.pid}:" in l]
        eq(len(said), 1, f"the floor said once for PID {a.pid}: {said}")
        td.stop(d)
    finally:
        d.kill()


def bw_async(out, pid):
    """A process's --bandwidth-util account of its asynchronous copies: (copies, bytes, timed
    copies, untimed copies, untimed bytes, unsynced copies, dropped events)."""
    fin = gp.final(out, "bandwidth")
    p = gp.proc(fin, pid)
    ts = p["transfers"]
    return (sum(x["copies"] for x in ts), sum(x["bytes"] for x in ts), sum(x["async_synced_copies"] for x in ts),
            p["untimed_async_copies"], p["untimed_async_bytes"], p["unsynced_async_copies"], fin["dropped_events"])


def test_budget_samples_the_synchronizations():
    """--bandwidth-util's synchronization probes are sampled with the launches (a training
    loop's synchronize every step would otherwise be always attached): a copy and its
    synchronize after every 20th launch, 10/s in the first phase (every call seen) and
    1000/s in the second (sampled). Every copy is counted exactly, bytes too; those whose
    synchronization came in their own window are timed, the others untimed, none lost;
    nothing dropped. Without a budget every copy is timed."""
    phases = "200:1000,20000:1000"
    cmd = [RATE, "--phases", phases, "--copy-every", "20", "--alloc-every", "0"]
    r = gp.gpuprobe(BASE + ["--cudatrace", "--bandwidth-util", "--max-overhead", "1"], cmd=cmd, timeout=60)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
    t = truth(r.stderr)
    eq(t["copies"], 1010, "rate_app's copies")
    copies, nbytes, timed, untimed, ubytes, unsynced, dropped = bw_async(r.stdout, t["pid"])
    eq(copies, t["copies"], "copies, exact under a budget")
    eq(nbytes, t["copy_bytes"], "bytes, exact under a budget")
    eq(dropped, 0, "dropped events")
    eq(timed + untimed + unsynced, copies, "every asynchronous copy timed, untimed or waiting")
    check(timed >= t["phases"][0]["copies"], f"the first phase's copies (every call seen) timed: {timed}")
    check(untimed > 0, f"sampled synchronizations leave copies untimed: {untimed}")
    eq(ubytes, untimed * 65536, "untimed bytes")
    b = budget_record(r.stdout)
    check(b["fraction"] < 1 or any(c["fraction"] < 1 for c in b["changes"]), "the launches were sampled")
    r = gp.gpuprobe(["--libcuda", FAKECUDA, "--bandwidth-util", "--cudatrace", "--max-overhead", "1"], cmd=cmd,
                    timeout=60)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
    m = re.search(r"([\d,]+) asynchronous cop(?:y|ies) \(\S+ [KMG]iB \(([\d,]+) B\)\) counted, not timed", r.stdout)
    check(m and int(m.group(2).replace(",", "")) == int(m.group(1).replace(",", "")) * 65536,
          f"the text report's untimed copies and their exact bytes: {r.stdout[-1500:]}")

    r = gp.gpuprobe(BASE + ["--bandwidth-util"], cmd=cmd, timeout=60)
    eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
    t = truth(r.stderr)
    copies, nbytes, timed, untimed, ubytes, unsynced, dropped = bw_async(r.stdout, t["pid"])
    eq((copies, nbytes, timed, untimed, unsynced, dropped), (t["copies"], t["copy_bytes"], t["copies"], 0, 0, 0),
       "without a budget: every copy counted and timed")


def test_comm_process_running_at_start_counted():
    """--comm follows the processes that run already once the probes are in (the run's
    start): a launch in between must not leave its thread marked "not followed" for the
    rest of its image (the hot path caches gp_traced_self per thread, bpf/cuda_launch.bpf.c).
    Without that, 2 runs of 3 counted nothing here. The workload launches until it is
    killed after gpuprobe's run, however long the probes take to go in (one perf-event
    uprobe at a time without uprobe_multi links: 7 s on 6.1 in QEMU, where a 2.5 s workload
    had ended before they were in and the report was empty)."""
    for i in range(3):
        w = gp.Background([RATE, "--phases", "50000:300000"], env=ENV)
        try:
            time.sleep(0.5)
            r = gp.gpuprobe(["--libcuda", FAKECUDA, "--json", "--cudatrace", "--no-latency", "--comm", "rate_app",
                             "-d", "1"])
            eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-800:]})")
            eq(w.p.poll(), None, f"run {i}: the workload still running at gpuprobe's end ({w.stderr()[-300:]})")
            n = final_proc(r.stdout, "cudatrace", w.pid)["launches"]
            check(n > 10000, f"run {i}: {n} launches of a process launching 50000/s, followed for 1 s")
        finally:
            w.kill()




# issue 29's patterns (COVERAGE_PATTERNS below). Each is known to the count: rate_app makes
# exactly RATE x MS / 1000 launches a thread whatever it achieves. The stand-in's own 2-us paced loop (bound None) is run and
# printed, not asserted: a launch there costs ~0.2 us against a probe's ~4.7, so a loop that
# lost the CPU catches up 25 times faster than any window can see it call. On the 2-CPU
# development machine at a load under 2 it was estimated at 0.60-1.36x its count (interval
# held 5 of 5); under a load of 20-28 from other test runs, at 0.15x and 0.36x (issue 29:
# open).
# Where a counted call costs more than the workload's own launch (its CPU time a launch, probes
# and all, under the price the budget took: "dear"), a window's calls run several times slower
# than the unprobed ones, and the call-bound model rests on what a counted call costs this
# process, which its calibration gives only within a factor: on this 2-CPU machine the tight
# loop's windows paid 0.7-2.1x the calibrated price a call (8.7-24 us against 11-12.5 us warm,
# bench/budget_runs.py's acct lines), so its estimate read 0.22-0.49x here and 0.16-0.19x on
# CI's machine, where a hit cost 7.1 us against the loop's 3.5 us of CPU a launch. Neither the
# window nor the period can tell those apart: only a call seen without its probes could.
# A loop bound by its CPU is then asserted only for its interval, and run again with its host
# work three times the price (the regime of the GPU machines, a hit 0.5-0.8 us against a
# launch's 3-7 us), where its estimate is held within 2x (0.87-1.08x here). A paced loop's
# estimate is held by its pace: within DEAR_BOUND.
DEAR_BOUND = 5

# (rate_app arguments, what it is, the estimate's bound as a factor of the count, its bound
# where dear: DEAR_BOUND, or None for a loop bound by its CPU)
COVERAGE_PATTERNS = [
    ("--phases 500000:1000", "a loop paced every 2 us (the stand-in's row)", None, None),
    ("--phases 1000000:400 --spin 3000 --sync-every 1024", "a tight loop, 3 us of host work a launch, a sync every 1024",
     2, None),
    ("--phases 20000:1000 --threads 8 --spin 2000", "8 threads launching at once, 20000/s each, 2 us of host work a launch",
     2, DEAR_BOUND),
    ("--phases 20000:1000 --spin 2000", "a paced loop at 20000/s with 2 us of host work a launch", 2, DEAR_BOUND),
]
# The tight loop again, its host work a launch this many times the price of a counted call
# (at least 3 us), for about WORK_S seconds. x GP_TIME_SLACK on an emulated CPU, where a
# counted call costs the process 2-15x its price (design.md): under 6.1's and 6.12's TCG, at
# 3x the price (host work 59-136 us, 80-186 us of CPU a launch) the loop read 0.58-1.05x,
# its interval under the count in 5 of 12 runs.
WORK_PRICES = 3
WORK_S = 1.4


def cpu_a_launch(t):
    """The workload's CPU time a launch over its run, probes and all (us)."""
    return sum(p.get("cpu_ns", 0) for p in t["phases"]) / max(t["launches"], 1) / 1e3


def dear(b, t):
    """Whether a counted call, as the budget priced it (its final record b), costs more
    than the workload's own launch (its truth t): DEAR_BOUND says what then holds."""
    return b["call_cost_s"] * 1e6 > cpu_a_launch(t)


def work_scaled(price_s):
    """The tight loop's row with its host work WORK_PRICES x a counted call's price."""
    spin = max(3000, int(WORK_PRICES * gp.TIME_SLACK * price_s * 1e9))
    n = int(WORK_S / (spin * 1e-9))
    return (f"--phases 1000000:{max(1, n // 1000)} --spin {spin} --sync-every 1024",
            f"a tight loop, {spin / 1000:.0f} us of host work a launch ({WORK_PRICES * gp.TIME_SLACK:g}x a counted call's price), "
            "a sync every 1024", 2, 2)


@retried
@price_model
def test_budget_interval_coverage():
    """Repeated runs across patterns and budgets (1 % and 5 %): every estimate within 2x of
    rate_app's own count, bounded or not, where a counted call costs less than a launch's own
    CPU time (DEAR_BOUND says what is asserted where it costs more, and adds the work-scaled
    tight loop), and the 95 % intervals holding it in at least 80 % of the runs (16 asserted
    runs: a true 95 % coverage falls under that about once in 50). The stand-in's 2-us loop
    runs beside them, printed (COVERAGE_PATTERNS says why). Bursts are not in it: their
    simulated coverage is ~80 % (test_sampling prints it; issue 29, open)."""
    held, runs, lines = 0, 0, []
    for rep in range(2):
        for pct in (1, 5):
            price = None
            for row in COVERAGE_PATTERNS + [None]:
                args, what, bound, dear_bound = row if row else work_scaled(price)
                cmd = [RATE, "--alloc-every", "0"] + args.split()
                r = gp.gpuprobe(BASE + ["--cudatrace", "--max-overhead", str(pct)], cmd=cmd, timeout=60)
                eq(r.returncode, 0, f"gpuprobe exit ({r.stderr[-1500:]})")
                t = truth(r.stderr)
                ct = final_proc(r.stdout, "cudatrace", t["pid"])
                est = ct["launches"]
                smp = ct.get("sampling")
                lo, hi = smp["intervals"]["launches"] if smp else (est, est)
                ok = lo <= t["launches"] <= (hi if hi is not None else float("inf"))
                # what the call-bound model rests on, for a run that misses: the prices the
                # budget took (a hit warm and cold, a counted call) and the workload's own CPU
                # time a launch over the run, probes and all
                b = budget_record(r.stdout)
                price = max(price or 0, b["call_cost_s"])
                cpu = cpu_a_launch(t)
                lines.append(f"{what}, {pct} %: {t['launches']} launches, estimate {est} ({est / t['launches']:.2f}x),"
                             f" [{lo}, {hi}]{'' if ok else ' MISSED'}{' (not asserted)' if bound is None else ''}"
                             f" (a hit {b['probe_hit_warm_cost_s'] * 1e6:.1f} us warm, {b['probe_hit_cost_s'] * 1e6:.1f} us cold,"
                             f" a call {b['call_cost_s'] * 1e6:.1f} us; {cpu:.1f} us of CPU a launch)")
                print(f"#   {lines[-1]}", flush=True)
                if bound is None:
                    continue
                held += ok
                runs += 1
                if dear(b, t):
                    print(f"#   (dear: a counted call priced {b['call_cost_s'] * 1e6:.1f} us costs more than the launch's own"
                          f" {cpu:.1f} us of CPU; estimate {'within ' + str(dear_bound) + 'x' if dear_bound else 'not asserted'})",
                          flush=True)
                    bound = dear_bound
                if bound:
                    priced(1 / bound <= est / t["launches"] <= bound, f"estimate off by more than {bound}x: {lines[-1]}")
    priced(held >= 0.8 * runs, f"intervals held the count in {held} of {runs} runs")




# A GPU driver's cuInit takes 0.1 s or more (it loads and opens the devices); the stand-in's
# returns at once unless asked (tests/fakecuda: FAKECUDA_INIT_MS). x GP_TIME_SLACK: under
# QEMU's TCG a process's arming alone took 66-73 ms, and a 100-ms cuInit was passed by it now
# and then (6.12: three jobs armed late where two were instant)
INIT_MS = str(int(100 * gp.TIME_SLACK))


def heavy_app(tmp):
    """rate_app under another name (its own comm: the short jobs' series are theirs alone)."""
    path = os.path.join(tmp, "rate_heavy")
    shutil.copy(RATE, path)
    return path


# A short job calls at 20,000 launches a second (past any budget's rate); its calls are sized
# at this share of the exact allowance the budget publishes, read once a sampled process has
# had its programs priced (the price it calibrated under load can be dearer: the H200's
# run_daemon_budget.sh met an allowance of 662 calls under its fixed 703-launch jobs).
JOB_SHARE = 0.8


def job_ms(allowance):
    """A short job's length (ms at 20,000/s: 20 launches a ms) for an exact allowance of that
    many calls, at most the 30 ms the jobs were written for. Fails when the allowance cannot
    size a job of 200 calls: at a 1 % budget aimed at 0.35 % of a second that is a call priced
    over 14 us, three times the dearest calibration seen here or on the GPUs (4.7 us): a
    calibration gone wrong, not a slow machine. On an emulated CPU (GP_TIME_SLACK, 4 in
    tests/vm) the traps themselves are emulated: a hit there is priced GP_TIME_SLACK times as
    dear as the dearest native one can be (on 6.1 in QEMU's TCG a call cost 15-18 us and the
    allowance was 168-198 calls), so the floor is 200 calls over GP_TIME_SLACK."""
    floor = 200 / gp.TIME_SLACK
    ms = min(30, int((allowance or 0) * JOB_SHARE / 20))
    check(ms * 20 >= floor, f"exact allowance {allowance} calls: a short job of {JOB_SHARE:.0%} of it makes fewer than "
          f"{floor:.0f} calls (a call priced three times the dearest calibration seen, GP_TIME_SLACK {gp.TIME_SLACK:g})")
    return ms


def interval_allowance(g, out):
    """The exact allowance a running gpuprobe publishes (an interval report, SIGUSR1)."""
    g.p.send_signal(signal.SIGUSR1)
    deadline = time.time() + 10
    while time.time() < deadline:
        time.sleep(0.2)
        with open(out) as f:
            text = f.read()
        rs = gp.reports(text[:text.rfind("\n") + 1], "interval", "budget")  # whole lines only
        if rs:
            return rs[-1]["exact_allowance_calls"]
    raise gp.Failure("no interval report after SIGUSR1")


def short_jobs(n, ms, init_ms=INIT_MS, lead=""):
    """n short rate_app jobs back to back (20,000 launches a second for ms, after the phase
    `lead` when given), each's truth."""
    out = []
    for _ in range(n):
        r = gp.run([RATE, "--phases", f"{lead}20000:{ms}", "--alloc-every", "0"],
                   env=dict(ENV, FAKECUDA_INIT_MS=init_ms))
        eq(r.returncode, 0, f"rate_app exit ({r.stderr[-300:]})")
        out.append(truth(r.stderr))
        time.sleep(0.05)
    return out


LAST_LOG = [""]


def kept(name):
    """A test whose failure keeps short_jobs_beside_heavy's budget log (gp.keep_log)."""
    tries = [0]

    def wrap(t):
        @functools.wraps(t)
        def run():
            try:
                t()
            except gp.Failure as e:
                tries[0] += 1  # (each try's own file: retried runs it twice)
                raise gp.Failure(f"{e} (the budget's log: {gp.keep_log(f'{name}.{tries[0]}', LAST_LOG[0])})")
        return run
    return wrap


def window_opened(g):
    """A function that returns once g (gpuprobe -v) opens a window after it is called (its
    -v line "budget: window open at"): a job started then begins in that window."""
    fd = g.err.fileno()
    at = [0]

    def wait():
        at[0] = os.fstat(fd).st_size  # (a line half written now is taken as new: harmless)
        deadline = time.time() + 10 * gp.TIME_SLACK
        while time.time() < deadline:
            new = os.pread(fd, 1 << 20, at[0])  # only what came since: the log grows fast
            at[0] += new.rfind(b"\n") + 1
            if b"budget: window open at" in new[:new.rfind(b"\n") + 1]:
                return
            time.sleep(0.001)
        raise gp.Failure("no window opened in 10 s")
    return wait


def short_jobs_beside_heavy(prefix, env, slow, instant, lead="", heavy_ms=6000, pct=1, secs=9, runner=None):
    """Node-wide --cudatrace --max-overhead pct for secs (gpuprobe's environment env) while
    rate_heavy launches 100,000 a second for heavy_ms: slow short jobs (cuInit INIT_MS), then
    instant ones (short_jobs' lead phase first), back to back once it is sampled; or
    runner(g, ms)'s jobs (their truths). (gpuprobe's JSON output, the jobs' truths; its -v
    log's budget lines are in LAST_LOG, for a failing test to keep.)"""
    tmp = tempfile.mkdtemp(prefix=prefix)
    out = os.path.join(tmp, "out.json")
    g = gp.Background([gp.GPUPROBE, "--libcuda", FAKECUDA, "--json", "--cudatrace", "--max-overhead", str(pct),
                       "-v", "-d", str(secs), "-o", out], env=env)
    heavy = None
    try:
        g.wait_for("probes on", where="stderr")
        heavy = gp.Background([heavy_app(tmp), "--phases", f"100000:{heavy_ms}", "--alloc-every", "0"], env=ENV)
        time.sleep(1.5)  # sampled by now
        ms = job_ms(interval_allowance(g, out))
        jobs = runner(g, ms) if runner else short_jobs(slow, ms) + short_jobs(instant, ms, init_ms="0", lead=lead)
        eq(heavy.wait(), 0, "the sampled process's exit")
        eq(g.wait(), 0, f"gpuprobe exit ({g.stderr()[-800:]})")
        LAST_LOG[0] = "\n".join(l for l in g.stderr().splitlines() if "budget" in l) + "\n" + "\n".join(
            f"job {i}: {t}" for i, t in enumerate(jobs))
        with open(out) as f:
            return f.read(), jobs
    finally:
        for p in (heavy, g):
            if p:
                p.kill()


def unarmed(b):
    return sum(b["unarmed_processes"].values())


def job_read(fin, i, t):
    """Job i (truth t) in the final report fin: ("unseen", None, None) when it has no record;
    ("exact", ...) when every call was seen, its launches then its truth; else its estimate
    (its launches, its sampling), whose interval holds its launches."""
    p = [x for x in fin["processes"] if x["pid"] == t["pid"]]
    if not p:
        return "unseen", None, None
    smp = p[0].get("sampling")
    if smp is None:
        eq(p[0]["launches"], t["launches"], f"job {i}: launches exact, or an estimate")
        return "exact", p[0]["launches"], None
    lo, hi = smp["intervals"]["launches"]
    check(lo <= t["launches"] <= (hi if hi is not None else float("inf")),
          f"job {i}: its {t['launches']} launches outside [{lo}, {hi}] ({smp})")
    return f"{p[0]['launches']} in [{lo}, {hi}]", p[0]["launches"], smp


@retried
@kept("short_jobs_beside.log")
def test_short_jobs_beside_a_sampled_process_exact():
    """Node-wide --cudatrace --max-overhead 1: while a process launching 100,000 kernels a
    second is sampled (its probes off but for a few ms of each period, for every process),
    short jobs run back to back beside it are each counted exactly: a process new to the
    budget has its probes armed for it alone from its cuInit until it has made its exact
    allowance. They used to go unseen whole (no launches, no record, no counter). With the
    stand-in's instant cuInit (a GPU's takes 0.1 s or more) the arm may come after the
    first calls: such a job is counted late, and its count is an estimate whose interval
    holds it (or, armed after its last call, it has no record)."""
    text, jobs = short_jobs_beside_heavy("gp-budget-short-", ENV, 4, 2)
    fin = gp.final(text, "cudatrace")
    b = budget_record(text)
    check(b["sampled_periods"] > 0, f"the heavy process was sampled: {b['sampled_periods']} periods")
    eq(unarmed(b) - b["unarmed_processes"]["late"], 0,
       f"processes new to the budget that could not be armed: {b['unarmed_processes']}")
    check(b["unarmed_processes"]["late"] <= 2, f"only the instant-cuInit jobs armed late: {b['unarmed_processes']}")
    # the heavy process calls all along: held at the wall time's share, never as bursts
    check("in bursts" not in LAST_LOG[0], "a process calling all along taken as bursts: "
          + " ".join(l for l in LAST_LOG[0].splitlines() if "in bursts" in l)[:400])
    check(b["exact_processes"] >= len(jobs), f"processes armed alone {b['exact_processes']} of {len(jobs)} jobs")
    for i, t in enumerate(jobs):
        p = [x for x in fin["processes"] if x["pid"] == t["pid"]]
        if not p and i >= 4:
            # armed after it had made every call: nothing seen, and counted so
            check(b["unarmed_processes"]["late"] >= 1, f"job {i} unseen whole and not counted late: {b}")
            continue
        p = gp.proc(fin, t["pid"])
        if i < 4:
            eq(p["launches"], t["launches"], f"job {i} (cuInit {INIT_MS} ms): launches exact ({p.get('sampling')}; {b['unarmed_processes']}, attach {b['attach_ms_median']:.1f} ms)")
            check("sampling" not in p, f"job {i}: every call seen ({p.get('sampling')})")
            continue
        smp = p.get("sampling")
        if smp is None:
            eq(p["launches"], t["launches"], f"job {i} (instant cuInit): launches exact, or an estimate")
            continue
        lo, hi = smp["intervals"]["launches"]
        check(lo <= t["launches"] <= (hi if hi is not None else float("inf")),
              f"job {i} (instant cuInit): its {t['launches']} launches outside [{lo}, {hi}]")
    print(f"#   {len(jobs)} short jobs beside a sampled process: {b['exact_processes']} armed alone, "
          f"{b['sampled_periods']} sampled periods, mechanism {b['mechanism']}")


@retried
@kept("short_jobs_armed_slowly.log")
def test_short_jobs_armed_slowly():
    """The same short jobs while a process's own arming is slow (GPUPROBE_TEST_ARM_MS 150: its
    32 events in 150 ms, as 6.1 and 6.12 under QEMU's TCG took 66-73 ms): the jobs are armed
    late, or are gone while their probes go in. Each one's launches are exact, or an
    estimate whose interval holds them, within 2x (3x from fewer than 32 calls seen).
    Before, the instant-cuInit jobs read 3,633-61,748 of 200: a job gone mid-arm had its
    account begun at the next boundary, a period's unseen part before it and no exit
    (node-wide --cudatrace told the budget of no exit), and its few counted calls were
    extrapolated over a second it never lived; one armed late had its gap run to its last
    probe's arm and its rate taken to then. Retried (the first failure printed): on this
    2-CPU machine loaded by a VM and a test run, a job whose 2 calls were counted after its
    first event went in read about 25 of 200, in [2, 92]: it called little there (its CPU
    share is not known for a new process) and its gap ran at full speed (issue 29, open)."""
    text, jobs = short_jobs_beside_heavy("gp-budget-slowarm-", dict(ENV, GPUPROBE_TEST_ARM_MS="150"), 2, 4)
    fin = gp.final(text, "cudatrace")
    b = budget_record(text)
    check(b["sampled_periods"] > 0, f"the heavy process was sampled: {b['sampled_periods']} periods")
    check(b["unarmed_processes"]["late"] >= 1, f"some job armed late or gone while armed: {b['unarmed_processes']}")
    got = []
    for i, t in enumerate(jobs):
        # unseen: armed after its last call and no call of it in a window, counted late
        what, n, smp = job_read(fin, i, t)
        got.append(what)
        if smp is None:
            continue
        # within 2x, 3x where fewer than a window's least hits (32) were counted: 15 counted
        # calls read 401 of 200 once in three runs, its interval [15, 13113]
        k = 2 if smp["fraction"] * n >= 32 else 3
        check(t["launches"] / k <= n <= t["launches"] * k,
              f"job {i}: estimate {n} of {t['launches']} launches, not within {k}x ({smp})")
    # a job whose first event went in after its last call has no record, and is counted late
    # (gpuprobe_budget_unarmed_processes_total{why="late"}): on an emulated CPU (6.12 under
    # QEMU's TCG: 4 of 6, an arm of 66-73 ms itself there) as many as there are. How many of
    # the four jobs armed slowly go unseen is chance: whether a sampled window of the heavy
    # process covers one of their ~20 ms of calls. This check once also allowed at most one
    # natively; on this 2-CPU machine with nothing else running, 7232bfb and af38a6f each
    # failed that in 2 of 3 runs of two tries (3 or 4 of the 4 unseen, every one counted late).
    check(got.count("unseen") <= b["unarmed_processes"]["late"], f"jobs unseen whole and not counted late: {got}, {b}")
    print(f"#   6 jobs of {jobs[0]['launches']} launches, arming 150 ms: {got}; late {b['unarmed_processes']['late']}")


def quiet_start_jobs(prefix, n, pct):
    """n jobs beside a sampled process under --max-overhead pct, each armed late
    (GPUPROBE_TEST_ARM_MS 150: its probes go in over 150 ms after its instant cuInit) and
    starting to call only after they are all in: one launch at its start, none for longer
    than the arm, then 20,000 a second. A job whose probes were all in before its launches
    (-v: "armed for it alone ... ms after its first driver call") is exact, or an estimate
    within 2x; any job's interval holds its launches. On a loaded machine an arm can outlast
    the quiet start: such a job is only held to its interval. (The jobs' readings, how many
    were armed in time, the quiet time, the -v log.)"""
    # one launch at its start, then none for longer than the arm: the gap and the launches
    # fall in one ~500-ms period in most jobs natively
    quiet_ms = next(q for q in (250, 500, 1000, 2000) if q >= 250 * gp.TIME_SLACK or q == 2000)
    text, jobs = short_jobs_beside_heavy(prefix, dict(ENV, GPUPROBE_TEST_ARM_MS="150"), 0, n,
                                         lead=f"{max(1, 1000 // quiet_ms)}:{quiet_ms},",
                                         heavy_ms=int(max(5000, 1500 + n * (quiet_ms + 400))), pct=pct,
                                         secs=int(max(9, 4 + n * (quiet_ms + 400) / 1000)))
    armed = {int(m.group(1)): float(m.group(2)) for m in re.finditer(
        r"budget: PID (\d+) is new: \d+ probes armed for it alone in [\d.]+ ms, ([\d.]+) ms after its first driver call",
        LAST_LOG[0])}
    fin = gp.final(text, "cudatrace")
    got, in_time = [], 0
    for i, t in enumerate(jobs):
        quiet = armed.get(t["pid"], float("inf")) < 0.8 * quiet_ms
        in_time += quiet
        what, k, smp = job_read(fin, i, t)
        check(what != "unseen" or not quiet, f"job {i}: armed {armed.get(t['pid'])} ms after its cuInit, yet unseen")
        if smp is not None and quiet:
            check(t["launches"] / 2 <= k <= t["launches"] * 2,
                  f"job {i}, armed {armed[t['pid']]} ms after its cuInit: estimate {k} of "
                  f"{t['launches']} launches, not within 2x ({smp})")
        got.append(what + ("" if smp is None or quiet else " (armed late)"))
    check(in_time >= 1, f"no job armed within its quiet start ({armed}, {quiet_ms} ms): {got}")
    return got, in_time, quiet_ms, jobs


@kept("late_armed_quiet.log")
def test_late_armed_job_with_a_quiet_start():
    """Four such jobs (quiet_start_jobs) at a 1 % budget. Its gap (cuInit to its first
    counted call) was quiet, and is dark, taken as none, not extrapolated at the rate it then
    launched at. Under QEMU's TCG such a job (a slow start) read 1,213 of 200, every launch
    counted; before (d309916), 2,870 of 361 here."""
    got, in_time, quiet_ms, jobs = quiet_start_jobs("gp-budget-quiet-", 4, 1)
    print(f"#   4 jobs of {jobs[0]['launches']} launches after {quiet_ms} ms quiet, arming 150 ms "
          f"({in_time} armed in time): {got}")


def held_pairs(pairs, quiet_ms, after_ms):
    """A runner for short_jobs_beside_heavy: pairs of instant-cuInit jobs held before their
    first driver call (rate_app --hold), each pair let go as a window opens, the second
    after_ms later (each job: one launch, quiet_ms with none, then 20,000 a second)."""
    def run(g, ms):
        out = []
        opened = window_opened(g)
        for _ in range(pairs):
            ps = [gp.Background([RATE, "--hold", "--phases", f"{max(1, 1000 // quiet_ms)}:{quiet_ms},20000:{ms}",
                                 "--alloc-every", "0"], env=dict(ENV, FAKECUDA_INIT_MS="0")) for _ in range(2)]
            try:
                for p in ps:
                    p.wait_for("HOLD")
                opened()
                ps[0].signal(signal.SIGUSR1)
                time.sleep(after_ms / 1000)
                ps[1].signal(signal.SIGUSR1)
                for p in ps:
                    eq(p.p.wait(timeout=30 * gp.TIME_SLACK), 0, f"rate_app exit ({p.stderr()[-300:]})")
                    out.append(gp.truth(p.stderr()))
            finally:
                for p in ps:  # (a held job left behind would wait for its signal forever)
                    p.kill()
        return out
    return run


@retried
@kept("late_armed_in_a_window.log")
def test_late_armed_job_begun_in_a_window():
    """A job whose slot was taken in a window but that was armed only after it closed, then
    was quiet past its arm: its gap after the window is taken between the window's rate and
    the quiet part's none (-v: "... of a window, then ... quiet before its first counted
    call"), not at the rate it launched at afterwards. Pairs of instant-cuInit jobs (one
    launch, 250 ms quiet, then 20,000 a second) under GPUPROBE_TEST_ARM_MS 100 at a 10 %
    budget (windows of 15-27 ms here): the first let go as a window opens, so it is found in
    the window and armed as it closes, the window held open for that arm; the second let go
    60 ms later, inside that held window but after the budget looked (it does not look for
    new processes while it arms one), so it is armed after the close. Each job armed within
    its quiet start or taken so is exact or within 2x; every interval holds. Here the second
    jobs read 602 in [601, 606] of 601, 4 of 4 pairs in three runs; the old code 1,252 and
    1,274 (2.1x), and 2,619 in [381, 7,122] of 381 in CI, where one job in 30 began so by
    chance. Retried: a pair whose first job missed its window, or whose window outlasted the
    60 ms (both then found in it and armed as it closes: exact), has no second job begun in
    a window; all four missing (once in nine runs) is a failure."""
    quiet_ms = next(q for q in (250, 500, 1000, 2000) if q >= 250 * gp.TIME_SLACK or q == 2000)
    text, jobs = short_jobs_beside_heavy("gp-budget-quiet-window-", dict(ENV, GPUPROBE_TEST_ARM_MS="100"), 0, 0,
                                         heavy_ms=int(1500 + 4 * 2 * (quiet_ms + 700)), pct=10,
                                         secs=int(5 + 4 * 2 * (quiet_ms + 700) / 1000),
                                         runner=held_pairs(4, quiet_ms, 60))
    armed = {int(m.group(1)): float(m.group(2)) for m in re.finditer(
        r"budget: PID (\d+) is new: \d+ probes armed for it alone in [\d.]+ ms, ([\d.]+) ms after its first driver call",
        LAST_LOG[0])}
    fin = gp.final(text, "cudatrace")
    got = []
    for i, t in enumerate(jobs):
        quiet = armed.get(t["pid"], float("inf")) < 0.8 * quiet_ms
        what, k, smp = job_read(fin, i, t)
        split = re.search(rf"PID {t['pid']}: \d+ hits in [\d.]+ ms of a window, then", LAST_LOG[0])
        if smp is not None and (quiet or split):
            check(t["launches"] / 2 <= k <= t["launches"] * 2,
                  f"job {i}, armed {armed.get(t['pid'])} ms after its cuInit: estimate {k} of "
                  f"{t['launches']} launches, not within 2x ({smp})")
        got.append(what + (" (begun in a window)" if split else "") + ("" if smp is None or quiet else " (armed late)"))
    n = sum("begun in a window" in w for w in got)
    check(n >= 1, f"no second job of 4 pairs begun in a window and armed after it: {got}")
    print(f"#   4 pairs of jobs of {jobs[0]['launches']} launches after {quiet_ms} ms quiet, arming 100 ms, 10 %: "
          f"{n} begun in a window: {got}")


@kept("instant_jobs.log")
def test_instant_jobs_beside_a_sampled_process_intervals_hold():
    """Thirty instant-cuInit jobs of ~340 launches (17 ms at 20,000 a second), back to back
    beside a sampled process, node-wide --max-overhead 1. The stand-in's cuInit returns at
    once, and here a new process's first probe goes in 12-16 ms after its first call, so most
    are armed late or are gone first: each one with a record has an interval that holds its
    launches (no upper end where its seen part was too short to give its gap a rate), and
    one with none is counted late. Before, 1-2 jobs in 40 read an interval that missed it:
    38 of 340 as [38, 38] (its exit's trim took the gap before its seen part as a part after
    it), 77 in [22, 199] and 89 in [29, 220] (from 23 and 30 calls counted as it wound
    down)."""
    n = 30
    text, jobs = short_jobs_beside_heavy("gp-budget-instant-", ENV, 0, n, heavy_ms=1500 + n * 400,
                                         secs=int(5 + n * 0.4))
    fin = gp.final(text, "cudatrace")
    b = budget_record(text)
    check(b["sampled_periods"] > 0, f"the heavy process was sampled: {b['sampled_periods']} periods")
    got, missed = [], []
    for i, t in enumerate(jobs):
        try:
            what, k, smp = job_read(fin, i, t)
        except gp.Failure as e:
            missed.append(str(e))
            continue
        got.append(what if smp is None else "bounded" if smp["intervals"]["launches"][1] is not None else "no upper end")
    check(not missed, f"{len(missed)} of {n} jobs' intervals missed: {missed[:4]}")
    check(got.count("unseen") <= b["unarmed_processes"]["late"], f"jobs unseen whole and not counted late: {got}, {b}")
    print(f"#   {n} instant-cuInit jobs of {jobs[0]['launches']} launches: " +
          ", ".join(f"{got.count(w)} {w}" for w in ("exact", "bounded", "no upper end", "unseen")) +
          f"; late {b['unarmed_processes']['late']}")


@retried
def test_daemon_short_jobs_beside_a_sampled_process_exact():
    """The daemon at its default budget: the same short jobs beside a process it samples add
    their exact launches to gpuprobe_cuda_kernel_launches_total (comm rate_app: the sampled
    one runs under another name), every call seen, and the budget counts them as armed alone
    (gpuprobe_budget_exact_processes_total), none unarmed; or, under 6.1 in QEMU's TCG where
    windows are long (4 of 5 armed alone in two tries, the fifth not said), a job whose calls
    all fell in an open window is named so by -v and seen whole there."""
    import test_daemon as td
    tmp = tempfile.mkdtemp(prefix="gp-budget-short-")
    d = td.start_daemon(extra=["--libcuda", FAKECUDA, "-v"], modes=("--cudatrace",), budget=True, per_process=False)
    heavy = None
    try:
        m0 = td.get(d.port)[1]
        base = launch_sums(td, d.port)
        exact0 = td.value(m0, "gpuprobe_budget_exact_processes_total") or 0
        un0 = td.value(m0, "gpuprobe_budget_unarmed_processes_total") or 0
        heavy = gp.Background([heavy_app(tmp), "--phases", "100000:5000", "--alloc-every", "0"], env=ENV)
        time.sleep(1.5)  # sampled by now, its programs priced
        ms = job_ms(td.value(td.get(d.port)[1], "gpuprobe_budget_exact_allowance_calls"))
        jobs = short_jobs(5, ms)
        want = sum(t["launches"] for t in jobs)
        eq(heavy.wait(), 0, "the sampled process's exit")
        end = settled_sums(td, d.port)
        got = {k: end[k] - base[k] for k in end}
        m = td.get(d.port)[1]
        exact = (td.value(m, "gpuprobe_budget_exact_processes_total") or 0) - exact0
        un = (td.value(m, "gpuprobe_budget_unarmed_processes_total") or 0) - un0
        # a job whose calls all fell in an open window needs no arm of its own: -v names it
        # (its calls are then the window's, every one seen: checked below)
        err = d.stderr()
        in_window = sum(bool(re.search(rf"PID {t['pid']} is new, not armed for itself: (its allowance's calls "
                                       r"made in the window|it ended in the window)", err)) for t in jobs)
        try:
            check(got["periods"] > 0, f"the heavy process was sampled: {got}")
            eq(un, 0, "processes new to the budget that could not be armed")
            check(exact + in_window >= len(jobs),
                  f"processes armed alone {exact}, seen whole in a window {in_window}, of {len(jobs)} jobs")
            eq(got["counter"], want, f"launches of five short jobs beside a sampled process ({got})")
            eq((got["seen"], got["low"], got["high"], got["unbounded"]), (want, want, want, 0),
               f"every call seen: the interval is the count ({got})")
        except gp.Failure as e:
            log = gp.keep_log(f"daemon_short_jobs_beside.{int(time.time())}.log",
                              "\n".join(l for l in d.stderr().splitlines() if "budget" in l) + "\n" +
                              "\n".join(f"job {i}: {t}" for i, t in enumerate(jobs)))
            raise gp.Failure(f"{e} (the daemon's budget log: {log})")
        td.stop(d)
    finally:
        if heavy:
            heavy.kill()
        d.kill()


@retried
@price_model
def test_budget_uprobe_multi_fallback():
    """Where tracefs uprobe events cannot be used (forced here), the budget takes its probes
    off with uprobe_multi links (made and closed per window): its estimates hold the truth as
    with uprobe events. (A process new to it cannot be armed alone then: counted, reason
    mechanism, when it comes while another is sampled.)"""
    env = {"GPUPROBE_NO_UPROBE_EVENTS": "1"}
    if not gp.kernel_has_uprobe_multi():
        gp.skip("no uprobe_multi links on this kernel")
    r, t = run_rate(["--max-overhead", "1"], env=env)
    b, share = check_budget_run(r, t, mechanism="uprobe_multi")
    check(b["windows"] >= 2, f"windows {b['windows']}")
    check(b["detach_ms_median"] > 0, "closing the links timed")



def test_budget_slow_attach_has_no_false_upper_end():
    """An attach slower than the periods (GPUPROBE_TEST_ATTACH_MS: every attach of a window 3 s
    longer, its uprobe events armed one at a time, as an ASan build's took 6.3 s at load 20):
    the unseen part after rate_app's first window lasts until its exit, 3 s in which its rate
    moves twice, and no window brackets it. Its interval must hold rate_app's own count: with
    no upper end (said so), never a tight wrong one ([110,386-110,386] for 120,400 before).
    The probes already in catch its calls as strays while the others go in, timed by the
    budget's thread between them: a rate measured in the part, which keeps the estimate within
    2x of the count as the issue asks (0.84-1.09x in 12 runs here, 0.65-0.92x on the window's
    rate and the strays' floor before; src/lib/sampling.c, "spanned")."""
    env = dict(NO_MULTI, GPUPROBE_TEST_ATTACH_MS="3000")
    r, t = run_rate(["--max-overhead", "1"], env=env)
    b = budget_record(r.stdout)
    check(b["attach_ms_median"] >= 2500, f"the attach was not slowed: {b['attach_ms_median']} ms")
    ct = final_proc(r.stdout, "cudatrace", t["pid"])
    smp = ct.get("sampling")
    check(smp is not None, f"no sampling in a run that sampled: {ct}")
    lo, hi = smp["intervals"]["launches"]
    if not lo <= t["launches"] <= (hi if hi is not None else float("inf")):
        raise gp.Failure(f"true launches {t['launches']} outside [{lo}, {hi}]; budget: {b}")
    eq(hi, None, "an unseen part longer than a period: no upper end")
    eq(smp.get("unbounded"), True, "the sampling says it is unbounded")
    eq(smp.get("long_unseen"), True, "... and why: an unseen part longer than a period")
    check(lo <= ct["launches"], f"estimate {ct['launches']} under its interval's low end {lo}")
    print(f"#   attach {b['attach_ms_median']:.0f} ms: estimate {ct['launches'] / t['launches']:.2f}x the count, "
          f"[{lo / t['launches']:.2f}x, none]", flush=True)
    check(0.5 <= ct["launches"] / t["launches"] <= 2, f"estimate {ct['launches']} not within 2x of {t['launches']}")
    bp = [p for p in b["processes"] if p["pid"] == t["pid"]]
    eq(len(bp), 1, "the budget's account of the process")
    eq(bp[0]["interval"][1], None, "the budget's interval has no upper end either")
    eq(bp[0].get("long_unseen"), True, "the budget says why")
    # the probes already in while the others went caught its calls as strays, priced: the
    # budget's own estimate of its time in them passed the budget (7.8-15 % here), and its
    # report must say so (it said over_budget: false, its planner looking one period ahead)
    print(f"#   its time in probes {bp[0]['overhead_pct_estimate']:.2f} % (budget's estimate), "
          f"over_budget {b['over_budget']}", flush=True)
    check_over_agrees(b)
    gp.assert_nothing_attached()

def test_budget_slow_multi_attach_says_what_is_dark():
    """The slow attach with uprobe_multi links (no tracefs events; GPUPROBE_TEST_ATTACH_MS 3000:
    1.5 s before the entry link, 1.5 s before the return link), rate_app exiting while the
    return link goes in: its rate moved from 20,000/s to 100,000/s and back to 200/s in a part
    no probe saw, and the estimate there is the window's rate (0.26-0.27x here; unbounded, said
    so). What is missing is said too: the seconds no probe saw a call in (`dark_s`). The entry
    link's probes caught its last calls as strays until it exited; the budget's thread looks at
    them only after each link, and the exit came first, so that span was never timed and the
    whole ~3-s part was dark (2.99-3.05 s in five of six runs). Its exit now takes that last
    look: dark from the window to the entry link (the hook's 1.5 s and the rest of the period),
    not after."""
    if not gp.kernel_has_uprobe_multi():
        gp.skip("no uprobe_multi links on this kernel")
    env = {"GPUPROBE_NO_UPROBE_EVENTS": "1", "GPUPROBE_TEST_ATTACH_MS": "3000"}
    r, t = run_rate(["--max-overhead", "1"], env=env)
    b = budget_record(r.stdout)
    eq(b["mechanism"], "uprobe_multi", "the budget's mechanism")
    check(b["attach_ms_median"] >= 2500, f"the attach was not slowed: {b['attach_ms_median']} ms")
    ct = final_proc(r.stdout, "cudatrace", t["pid"])
    smp = ct.get("sampling")
    check(smp is not None, f"no sampling in a run that sampled: {ct}")
    lo, hi = smp["intervals"]["launches"]
    check(lo <= t["launches"], f"true launches {t['launches']} under the low end {lo}")
    eq(hi, None, "an unseen part longer than a period: no upper end")
    eq(smp.get("long_unseen"), True, "... and why: an unseen part longer than a period")
    dark = smp.get("dark_s")
    check(dark is not None, f"the seconds no probe saw a call in, said: {smp}")
    bp = [p for p in b["processes"] if p["pid"] == t["pid"]]
    eq(len(bp), 1, "the budget's account of the process")
    eq(bp[0].get("dark_s"), dark, "the budget says the same")
    m = re.search(r"PID %d \(rate_app\)[^\n]*" % t["pid"], r.stdout)
    print(f"#   attach {b['attach_ms_median']:.0f} ms: estimate {ct['launches'] / t['launches']:.2f}x the count, "
          f"[{lo / t['launches']:.2f}x, none], {dark:.2f} s seen by no probe", flush=True)
    # at least the hook's 1.5 s before the entry link; its strays after it timed to the exit
    check(dark >= 1.0, f"{dark:.2f} s seen by no probe: less than the 1.5 s before any probe went in")
    check(dark <= 2.4, f"{dark:.2f} s seen by no probe: the strays the entry link caught before the exit were not timed")
    check_over_agrees(b)
    gp.assert_nothing_attached()


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
