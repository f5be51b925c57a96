# SPDX-License-Identifier: BSD-3-Clause
"""The real driver loaded late from a folder nobody named (a copy of libcuda.so.1, by path,
through ctypes) and called at once: cuInit, the primary context, N cuMemAlloc_v2 never
freed. usage: late_libcuda.py COPY_OF_LIBCUDA N. Truth on stderr."""
import ctypes
import os
import sys

lib = ctypes.CDLL(sys.argv[1])
n = int(sys.argv[2])
ctx, dev, p = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_uint64()
assert lib.cuInit(0) == 0
assert lib.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert lib.cuCtxSetCurrent(ctx) == 0
for i in range(n):
    assert lib.cuMemAlloc_v2(ctypes.byref(p), 4096 * (i + 1)) == 0
sys.stderr.write('{"pid":%d,"api":"late_cuda","allocs":%d}\n' % (os.getpid(), n))  # one write: gpuprobe -v shares it
