# SPDX-License-Identifier: BSD-3-Clause
"""Checks gpuprobe --nccl's hang and straggler figures on the GPU machine against the
programs' own accounts (issue 34 item 3; tests/gpu/run_hang.sh).

  check_hang.py held   HANG_CUDA_STDERR S1 S2 S3 DT
      hang_cuda's held collective: in the daemon's scrapes S1 and S2 (DT seconds apart,
      while it is held) its rank has a call in flight and its seconds since a completion
      grow by about DT; in S3 (after the flag was set) nothing in flight.
  check_hang.py straggler JOB_STDERR NCCL_JSONL
      hang_torch.py straggler: the world communicator's newest matched collective names the
      slow rank as the one last in, its skew within 20 ms of the program's own (the entry
      times it took right before each call), and the slow rank last into every timed one.
  check_hang.py hang   JOB_STDERR S1 S2 S3 DT
      hang_torch.py hang: in S1 and S2 (during the stall) the stalled rank is the one waited
      for, the wait growing by about DT, the other ranks with calls in flight and their
      seconds since a completion growing; in S3 (after) nobody waited for, nothing in flight,
      the stalled rank last into the stalled collective with its lag the program's own.
Exits non-zero when a check fails."""
import json
import re
import sys


def truths(path, api):
    out = []
    for line in open(path, errors="replace"):
        line = line.strip()
        if line.startswith("{") and f'"api": "{api}"' in line.replace('"api":"', '"api": "'):
            out.append(json.loads(line))
    return out


def samples(path, name):
    """[(labels dict, value)] of family name in a /metrics text."""
    out = []
    for line in open(path):
        m = re.match(rf"^{name}\{{(.*)\}} (\S+)$", line.strip())
        if m:
            out.append((dict(re.findall(r'(\w+)="([^"]*)"', m.group(1))), float(m.group(2))))
    return out


def of(path, name, **want):
    return [v for l, v in samples(path, name) if all(l.get(k) == str(x) for k, x in want.items())]


OK = True


def verdict(ok, what):
    global OK
    print(f"  {'ok' if ok else 'WRONG'} {what}")
    OK = OK and bool(ok)


def check_held(err, s1, s2, s3, dt):
    t = truths(err, "hang_cuda")
    if not t:
        sys.exit("FAIL: no hang_cuda account")
    pid = t[-1]["pid"]
    f1 = of(s1, "gpuprobe_nccl_inflight_collectives", pid=pid)
    f2 = of(s2, "gpuprobe_nccl_inflight_collectives", pid=pid)
    a = of(s1, "gpuprobe_nccl_since_completion_seconds", pid=pid)
    b = of(s2, "gpuprobe_nccl_since_completion_seconds", pid=pid)
    f3 = of(s3, "gpuprobe_nccl_inflight_collectives", pid=pid)
    print(f"hang_cuda PID {pid}: in flight {f1} then {f2}, seconds since a completion {a} then {b} "
          f"({dt} s apart), after the release in flight {f3}; the program polled {t[-1]['polls']} times")
    verdict(f1 and f2 and f1[0] >= 1 and f2[0] >= 1, "the held collective in flight in both scrapes")
    verdict(a and b and abs((b[0] - a[0]) - dt) < 0.5, "its seconds since a completion grow with the clock")
    verdict(f3 == [0.0], "nothing in flight once released")


def world_straggle(rep, world):
    st = [s for s in rep["stragglers"] if s["nranks"] == world]
    return max(st, key=lambda s: s["matched"]) if st else None


def final(path):
    reps = [json.loads(l) for l in open(path) if l.startswith("{") and '"mode":"nccl"' in l]
    fin = [r for r in reps if r.get("report") == "final"]
    if not fin:
        sys.exit(f"FAIL: no final nccl report in {path}")
    return fin[-1]


def check_straggler(err, out):
    ts = sorted(truths(err, "hang_torch"), key=lambda t: t["rank"])
    if not ts:
        sys.exit("FAIL: no hang_torch account")
    world, slow, n = ts[0]["world"], ts[0]["slow_rank"], len(ts[0]["entries"])
    skews = [(max(t["entries"][i] for t in ts) - min(t["entries"][i] for t in ts)) / 1e9 for i in range(n)]
    lasts = [max(ts, key=lambda t: t["entries"][i])["rank"] for i in range(n)]
    st = world_straggle(final(out), world)
    if not st:
        sys.exit("FAIL: no matched communicator of the world's size")
    mine = {r["rank"]: r for r in st["ranks"]}
    print(f"{world} ranks, rank {slow} {ts[0]['delay_s']} s late: the program's skews "
          f"{[round(s, 4) for s in skews]} s, last in {lasts}")
    print(f"gpuprobe: {st['matched']} matched, last skew {st['last_skew_seconds']:.4f} s (rank {st['last_straggler']}), "
          f"max {st['skew_seconds_max']:.4f} s; rank {slow} last into {mine[slow]['last_to_enter']}, lag "
          f"{mine[slow]['lag_seconds']:.3f} s in all; evicted {st['evicted']} late {st['late']}")
    verdict(st["last_straggler"] == lasts[-1] == slow, "the slow rank named as the last in")
    verdict(abs(st["last_skew_seconds"] - skews[-1]) < 0.02, "its lag within 20 ms of the program's own")
    verdict(mine[slow]["last_to_enter"] >= sum(1 for r in lasts if r == slow), "last into every timed collective")
    verdict(st["evicted"] == 0 and st["late"] == 0 and st["duplicate"] == 0, "nothing unmatched")


def check_hang(err, s1, s2, s3, dt):
    ts = sorted(truths(err, "hang_torch"), key=lambda t: t["rank"])
    if not ts:
        sys.exit("FAIL: no hang_torch account")
    slow, at = ts[0]["slow_rank"], ts[0]["stall_at"]
    w1 = of(s1, "gpuprobe_nccl_waiting_for_rank_seconds", rank=slow)
    w2 = of(s2, "gpuprobe_nccl_waiting_for_rank_seconds", rank=slow)
    print(f"rank {slow} stalled {ts[0]['stall_s']} s before collective {at}: waited for {w1} then {w2} ({dt} s apart)")
    verdict(w1 and w2 and abs((w2[0] - w1[0]) - dt) < 0.5, "the stalled rank named, its wait growing with the clock")
    for t in ts:
        if t["rank"] == slow:
            continue
        f1 = of(s1, "gpuprobe_nccl_inflight_collectives", pid=t["pid"])
        a = of(s1, "gpuprobe_nccl_since_completion_seconds", pid=t["pid"])
        b = of(s2, "gpuprobe_nccl_since_completion_seconds", pid=t["pid"])
        print(f"  rank {t['rank']} PID {t['pid']}: in flight {f1}, seconds since a completion {a} then {b}")
        verdict(f1 and max(f1) >= 1 and a and b and max(b) - max(a) > 0.8 * dt, f"rank {t['rank']} hung behind it")
    verdict(not of(s3, "gpuprobe_nccl_waiting_for_rank_seconds"), "after: nobody waited for")
    verdict(all(v == 0 for _, v in samples(s3, "gpuprobe_nccl_inflight_collectives")), "after: nothing in flight")
    skew = (max(t["entries"][at] for t in ts) - min(t["entries"][at] for t in ts)) / 1e9
    lag = of(s3, "gpuprobe_nccl_straggler_lag_seconds_total", rank=slow)
    print(f"  the stalled collective's skew by the program: {skew:.3f} s; rank {slow}'s lag in gpuprobe: {lag}")
    verdict(lag and lag[0] >= skew - 0.02, "its lag holds the stall")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "held":
        check_held(*sys.argv[2:6], float(sys.argv[6]))
    elif sys.argv[1] == "straggler":
        check_straggler(*sys.argv[2:4])
    elif sys.argv[1] == "hang":
        check_hang(*sys.argv[2:6], float(sys.argv[6]))
    else:
        sys.exit(__doc__)
    print("PASS" if OK else "FAIL")
    sys.exit(0 if OK else 1)


if __name__ == "__main__":
    main()
