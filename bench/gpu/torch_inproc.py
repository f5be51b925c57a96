# SPDX-License-Identifier: BSD-3-Clause
"""The PyTorch training loop of torch_step.py (8-layer MLP, width 512, batch 256, AdamW:
steps of a couple of milliseconds, ~35 launches each), run until told to stop, for
bench/gpu/inproc.py. Every step (synchronized) is appended to LOG as "step T D"
(CLOCK_MONOTONIC ns, start and duration). The peer, torch.profiler with CPU and CUDA
activities, is switched in the process: SIGUSR1 starts it before the next step, SIGUSR2
stops it after the current one; LOG gets "prof_on T", "prof_off T" (the last profiled
step's end) and "prof_done T" (after its post-processing, which no step overlaps).
--mock: no torch, 2 ms sleeps (a dry run of the harness without a GPU).
How the loop runs (bench/gpu/noise.py compares their step-time noise): --single-thread runs
backward on the calling thread (torch.autograd.set_multithreading_enabled(False): no hand-off
to the device thread and back, the same launches); --cpus 2,3 pins the process
(sched_setaffinity, every thread it makes after); --gc-freeze moves everything built before
the loop out of Python's collector (gc.freeze()).

    torch_inproc.py LOG [--seconds 600] [--mock] [--single-thread] [--cpus LIST] [--gc-freeze]
"""
import argparse
import gc
import os
import signal
import sys
import time

from torch_step import make_step  # beside this file (the script's folder is on sys.path)

want = {"prof": False}


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--mock", action="store_true")
    ap.add_argument("--single-thread", action="store_true", help="backward on this thread")
    ap.add_argument("--cpus", help="pin the process to these CPUs (comma-separated)")
    ap.add_argument("--gc-freeze", action="store_true", help="gc.freeze() before the loop")
    a = ap.parse_args()

    if a.cpus:
        try:
            os.sched_setaffinity(0, {int(c) for c in a.cpus.split(",")})
        except (ValueError, OSError) as e:
            raise SystemExit("torch_inproc: --cpus %r: %s" % (a.cpus, e))
    step, sync = make_step(a.mock)  # the model of bench/gpu/torch_step.py
    if a.single_thread and not a.mock:
        import torch
        torch.autograd.set_multithreading_enabled(False)

    signal.signal(signal.SIGUSR1, lambda *_: want.__setitem__("prof", True))
    signal.signal(signal.SIGUSR2, lambda *_: want.__setitem__("prof", False))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    for _ in range(a.warmup):
        step()
    sync()
    if a.gc_freeze:
        gc.collect()
        gc.freeze()
    prof = None
    end = now_ns() + int(a.seconds * 1e9)
    with open(a.log, "w", buffering=1 << 16) as log:
        print("READY %d" % os.getpid(), flush=True)
        try:
            while now_ns() < end:
                if want["prof"] and prof is None:
                    if a.mock:
                        prof = "mock"
                    else:
                        from torch.profiler import ProfilerActivity, profile
                        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
                        prof.__enter__()
                    log.write("prof_on %d\n" % now_ns())
                elif not want["prof"] and prof is not None:
                    log.write("prof_off %d\n" % now_ns())
                    if prof != "mock":
                        prof.__exit__(None, None, None)
                    prof = None
                    log.write("prof_done %d\n" % now_ns())
                    log.flush()
                t0 = now_ns()
                step()
                sync()
                log.write("step %d %d\n" % (t0, now_ns() - t0))
        except SystemExit:
            pass
        log.flush()


if __name__ == "__main__":
    main()
