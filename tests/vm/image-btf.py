#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Copies the kernel BTF out of an uncompressed kernel image (arm64's Image, as Debian's
linux-image packages ship it), which has no ELF sections to find it by: the BTF blob is
the one whose header describes more than a megabyte of types. Then
`bpftool btf dump file OUT format c` gives a vmlinux.h for that kernel without booting it.

    tests/vm/image-btf.py /boot/vmlinuz-6.18.15+deb13-arm64 vmlinux.btf
"""
import struct
import sys

MAGIC = b"\x9f\xeb\x01\x00"  # 0xeb9f, version 1, flags 0, little-endian


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    img = open(sys.argv[1], "rb").read()
    if img[:2] == b"\x1f\x8b" or img[:4] == b"\x28\xb5\x2f\xfd":
        sys.exit(f"{sys.argv[1]}: compressed (gzip/zstd): decompress it first")
    at = img.find(MAGIC)
    while at >= 0:
        hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<IIIII", img, at + 4)
        total = hdr_len + max(type_off + type_len, str_off + str_len)
        if hdr_len == 24 and type_len > (1 << 20) and at + total <= len(img):
            with open(sys.argv[2], "wb") as f:
                f.write(img[at:at + total])
            print(f"{sys.argv[2]}: {total} bytes of BTF at offset {at}")
            return
        at = img.find(MAGIC, at + 1)
    sys.exit(f"{sys.argv[1]}: no kernel BTF found (CONFIG_DEBUG_INFO_BTF off?)")


if __name__ == "__main__":
    main()
