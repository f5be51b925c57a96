# SPDX-License-Identifier: BSD-3-Clause
"""GPU check for issue 15: PyTorch tensors kept alive from known lines. The caching
allocator grows by a new segment (cuMemAlloc_v2, or cuMemCreate with expandable segments)
for each of three large tensors made at the line tagged "# @grow", called from "# @layer"
and "# @main"; the leak stack of each segment must name those lines.
Prints READY (a tracer can attach now: a process attached mid-run), waits for a line,
allocates, prints DONE and its own account as one JSON line on stderr (pid, the segments
the allocator holds: address, size, and whether they were made for the kept tensors),
then waits for stdin to close."""
import json
import os
import sys

import torch

kept = []


def grow(mib):
    kept.append(torch.empty(mib << 20, dtype=torch.uint8, device="cuda"))  # @grow


def layer_weights():
    for mib in (64, 128, 256):
        grow(mib)  # @layer


def main():
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # context and a first small segment before READY
    before = {s["address"] for s in torch.cuda.memory_snapshot()}
    print("READY", flush=True)
    sys.stdin.readline()
    layer_weights()  # @main
    torch.cuda.synchronize()
    segs = [{"address": hex(s["address"]), "size": s["total_size"], "new": s["address"] not in before}
            for s in torch.cuda.memory_snapshot()]
    print("DONE", flush=True)
    print(json.dumps({"pid": os.getpid(), "python": sys.version.split()[0], "torch": torch.__version__,
                      "expandable": "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
                      "tensors_mib": [64, 128, 256], "segments": segs}), file=sys.stderr, flush=True)
    sys.stdin.readline()


main()
