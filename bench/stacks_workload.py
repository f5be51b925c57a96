# SPDX-License-Identifier: BSD-3-Clause
"""What a stack costs per allocation from Python (bench/run.py's "stacks" section): the
stand-in driver's cuMemAlloc_v2(4096) + cuMemFree_v2 through ctypes, from a chain of three
Python functions, each pair timed on its own and paced like bench/stacks_workload.c.

    python stacks_workload.py LIBCUDA [-n N] [-r ROUNDS] [-w WARMUP] [-R RATE] [-H SECONDS]

Prints "round R ns_per_call X" per round and "result stacks ns_per_call MEDIAN ...", then
holds -H seconds."""
import argparse
import ctypes
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("-w", type=int, default=200)
    ap.add_argument("-R", type=float, default=5000)
    ap.add_argument("-H", type=float, default=0)
    a = ap.parse_args()
    cuda = ctypes.CDLL(a.lib)
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    alloc, free = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2
    free.argtypes = [ctypes.c_ulonglong]
    ptr, size = ctypes.c_ulonglong(), ctypes.c_size_t(4096)
    clock = time.perf_counter_ns

    def leaf():
        t0 = clock()
        if alloc(ctypes.byref(ptr), size) or free(ptr.value):
            sys.exit("stacks_workload.py: a call failed")
        return clock() - t0

    def middle():
        return leaf()

    def outer():
        return middle()

    def one_round(n):
        v, start = [], clock()
        for i in range(n):
            wait = start + i * 1e9 / a.R - clock() if a.R > 0 else 0
            if wait > 0:  # asleep, not spinning: the tracer's reader needs a CPU too
                time.sleep(wait / 1e9)
            v.append(outer())
        return statistics.median(v)

    if a.w:
        one_round(a.w)
    meds, t0 = [], time.monotonic()
    for r in range(a.r):
        meds.append(one_round(a.n))
        print("round %d ns_per_call %.1f" % (r, meds[-1]))
    print("result stacks ns_per_call %.1f calls %d seconds %.3f" %
          (statistics.median(meds), a.n * a.r, time.monotonic() - t0), flush=True)
    if a.H > 0:
        time.sleep(a.H)


main()
