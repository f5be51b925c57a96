#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Copies an ELF file with its .eh_frame overwritten by seeded random bytes
(same size and place), for the bad-input stack test: an unwinder must stop,
not crash or follow garbage."""
import random
import struct
import sys


def section(data, want):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def hdr(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    stroff = hdr(shstrndx)[4]
    for i in range(shnum):
        h = hdr(i)
        end = data.index(b"\0", stroff + h[0])
        if data[stroff + h[0]:end].decode() == want:
            return h[4], h[5]
    raise SystemExit(f"{want} not found")


def main():
    src, dst = sys.argv[1], sys.argv[2]
    data = bytearray(open(src, "rb").read())
    off, size = section(data, ".eh_frame")
    rng = random.Random(15)
    data[off:off + size] = bytes(rng.randrange(256) for _ in range(size))
    with open(dst, "wb") as f:
        f.write(data)
    import os
    os.chmod(dst, 0o755)


if __name__ == "__main__":
    main()
