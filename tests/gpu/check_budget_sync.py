# SPDX-License-Identifier: BSD-3-Clause
"""--bandwidth-util with its synchronizations sampled (--max-overhead) against the same
workload traced whole: tests/gpu/sync_torch.py run twice, once with every call seen
(every asynchronous copy timed) and once under a budget. Under the budget the copies and
bytes per direction must be exactly those of the whole run, every asynchronous copy timed,
untimed (its synchronization came outside the budget's windows) or still waiting, some
untimed, nothing dropped. usage: check_budget_sync.py WHOLE_STDERR WHOLE_STDOUT
BUDGET_STDERR BUDGET_STDOUT"""
import json
import sys


def account(err_path, out_path):
    t = None
    for line in reversed(open(err_path, errors="replace").read().splitlines()):
        if line.startswith("{") and '"torch-sync"' in line:
            t = json.loads(line)
            break
    if not t:
        sys.exit(f"FAIL: no workload account in {err_path}")
    reps = [json.loads(l) for l in open(out_path) if l.startswith('{"mode":"bandwidth"')]
    fin = [r for r in reps if r["report"] == "final"][0]
    p = [x for x in fin["processes"] if x["pid"] == t["pid"]][0]
    dirs = {}
    for x in p["transfers"]:
        d = dirs.setdefault(x["direction"], [0, 0])
        d[0] += x["copies"]
        d[1] += x["bytes"]
    a = {k: sum(x[k] for x in p["transfers"]) for k in ("async_copies", "async_bytes", "async_synced_copies")}
    a.update(untimed=p["untimed_async_copies"], untimed_bytes=p["untimed_async_bytes"],
             unsynced=p["unsynced_async_copies"], dropped=fin["dropped_events"])
    return t, dirs, a


def main():
    tw, dw, aw = account(sys.argv[1], sys.argv[2])
    tb, db, ab = account(sys.argv[3], sys.argv[4])
    ok = True

    def say(good, what):
        nonlocal ok
        ok &= bool(good)
        print(f"  {'ok' if good else 'WRONG'} {what}")

    print(f"whole run: {tw['steps']} steps, by direction {dw}, async {aw}")
    print(f"budget run: {tb['steps']} steps, by direction {db}, async {ab}")
    say(dw.get("H2D", [0])[0] >= tw["steps"], "whole run: an H2D copy a step at least")
    say(aw["untimed"] == 0 and aw["async_synced_copies"] + aw["unsynced"] == aw["async_copies"],
        "whole run: every asynchronous copy timed (or waiting at the end)")
    say(db == dw, "budget run: copies and bytes per direction exactly the whole run's")
    say(ab["async_synced_copies"] + ab["untimed"] + ab["unsynced"] == ab["async_copies"],
        "budget run: every asynchronous copy timed, untimed or waiting")
    say(ab["untimed"] > 0 and ab["async_synced_copies"] > 0, "budget run: some timed, some untimed")
    say(aw["dropped"] == 0 and ab["dropped"] == 0, "nothing dropped")
    print("== budget sync: " + ("PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
