# SPDX-License-Identifier: BSD-3-Clause
"""Allocates through the stand-in driver (libcuda.so.1, via ctypes) from known
functions on known lines, for the Python-frames test. Lines tagged "# @name"
are what the walk must report; the test reads them from this file.

    python pyalloc.py LIBCUDA [thread | loop N | deep N | two | fork | exit | gate [chain | big]]

Prints READY (the harness then attaches), waits for a line, allocates,
prints DONE and waits for stdin to close; with exit, it prints nothing and waits for
nothing: it allocates once from warm_up, then 0.3 s later leaks through Model.build and
leaves right after that allocation
(os._exit: no interpreter teardown, the process is gone about a millisecond after its
last call). With gate, it allocates once from warm_up (a first
stack: the tracer knows the process), prints WARM <pid>, waits for a line, then leaks
through Model.build (gate chain: through twelve functions chain_a ... chain_l; gate big:
through big, whose line table takes several chunks) and leaves at once the same way."""
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


# twelve code objects on one stack (gate chain): more first sights than a small ring holds
def chain_a():
    return chain_b()  # @chain_a


def chain_b():
    return chain_c()  # @chain_b


def chain_c():
    return chain_d()  # @chain_c


def chain_d():
    return chain_e()  # @chain_d


def chain_e():
    return chain_f()  # @chain_e


def chain_f():
    return chain_g()  # @chain_f


def chain_g():
    return chain_h()  # @chain_g


def chain_h():
    return chain_i()  # @chain_h


def chain_i():
    return chain_j()  # @chain_i


def chain_j():
    return chain_k()  # @chain_j


def chain_k():
    return chain_l()  # @chain_k


def chain_l():
    return leak_buffer(32)  # @chain_l


# gate big: a function whose line table spans several 4 KiB chunks (BIG_STATEMENTS
# statements, made from a source of its own named pybig.py), leaking on its last line
BIG_STATEMENTS = 3000


def big_source():
    body = [f"    x{i} = n + {i}" for i in range(BIG_STATEMENTS)]
    return "\n".join(["def big(n):"] + body + ["    return leak_buffer(96)"]) + "\n"


def warm_up():
    leak_buffer(64)  # @warm_up


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
    if len(sys.argv) > 2 and sys.argv[2] == "gate":
        import os
        warm_up()
        print("WARM %d" % os.getpid(), flush=True)
        sys.stdin.readline()
        if len(sys.argv) > 3 and sys.argv[3] == "chain":
            chain_a()  # @main_chain
        elif len(sys.argv) > 3 and sys.argv[3] == "big":
            exec(compile(big_source(), "pybig.py", "exec"), globals())
            big(0)  # @main_big
        else:
            Model().build()  # @main_gate
        os._exit(0)
    if len(sys.argv) > 2 and sys.argv[2] == "exit":  # no READY: nothing to wait for
        import os
        import time
        warm_up()  # the tracer keeps the process's files from its first stack on
        time.sleep(0.3)
        Model().build()  # @main_exit
        os._exit(0)
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
