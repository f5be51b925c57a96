# SPDX-License-Identifier: BSD-3-Clause
"""Allocates through the stand-in driver (libcuda.so.1, via ctypes) from known
functions on known lines, for the Python-frames test. Lines tagged "# @name"
are what the walk must report; the test reads them from this file.

    python pyalloc.py LIBCUDA [thread | loop N | deep N | two | fork]

Prints READY (the harness then attaches), waits for a line, allocates,
prints DONE and waits for stdin to close."""
import ctypes
import sys
import threading

cuda = ctypes.CDLL(sys.argv[1])


def init():
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0


def leak_buffer(nbytes):
    ptr = ctypes.c_ulonglong()
    rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes))  # @leak_buffer
    assert rc == 0
    return ptr.value


def make_layer(width):
    return leak_buffer(width * 4)  # @make_layer


def recurse(n):
    if n == 0:
        return leak_buffer(128)  # @recurse_base
    return recurse(n - 1) + 1  # @recurse


def worker_a(barrier):
    barrier.wait()
    for _ in range(5):
        leak_buffer(512)  # @worker_a


def worker_b(barrier):
    barrier.wait()
    for _ in range(5):
        leak_buffer(1024)  # @worker_b


def forked_child():
    leak_buffer(2048)  # @forked_child


class Model:
    def build(self):
        return [make_layer(w) for w in (256,)]  # @build


def main():
    if len(sys.argv) > 2 and sys.argv[2] == "fork":
        # a copy of the interpreter, no exec, forked before CUDA is touched (as CUDA
        # wants): the child does the rest, the parent waits
        import os
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)
            return
    init()
    print("READY", flush=True)
    sys.stdin.readline()
    if len(sys.argv) > 3 and sys.argv[2] == "loop":
        import time
        n = int(sys.argv[3])
        t0 = time.perf_counter_ns()
        for _ in range(n):
            leak_buffer(64)
        print("LOOP %.1f" % ((time.perf_counter_ns() - t0) / n), flush=True)
    elif len(sys.argv) > 2 and sys.argv[2] == "two":
        barrier = threading.Barrier(2)
        ts = [threading.Thread(target=w, args=(barrier,)) for w in (worker_a, worker_b)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    elif len(sys.argv) > 3 and sys.argv[2] == "deep":
        recurse(int(sys.argv[3]))
    elif len(sys.argv) > 2 and sys.argv[2] == "fork":
        forked_child()
    elif len(sys.argv) > 2 and sys.argv[2] == "thread":
        t = threading.Thread(target=Model().build)  # the thread's own stack
        t.start()
        t.join()
    else:
        Model().build()  # @main
    print("DONE", flush=True)
    sys.stdin.readline()


main()  # @module
