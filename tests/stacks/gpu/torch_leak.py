# SPDX-License-Identifier: BSD-3-Clause
"""GPU check for issue 15: PyTorch tensors kept alive from known lines. The
caching allocator grows by new segments (cuMemAlloc_v2) at the lines tagged
"# @..."; the Python frames of those allocations must name them.
Prints READY (the harness attaches: a process attached mid-run), waits for a
line, allocates, prints DONE, waits for stdin to close."""
import sys

import torch

kept = []


def grow(mib):
    kept.append(torch.empty(mib << 20, dtype=torch.uint8, device="cuda"))  # @grow


def layer_weights():
    for mib in (64, 128, 256):
        grow(mib)  # @layer_weights


def main():
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # context and first segment before READY
    print("READY", flush=True)
    sys.stdin.readline()
    layer_weights()  # @main
    torch.cuda.synchronize()
    print("DONE", flush=True)
    sys.stdin.readline()


main()
