# SPDX-License-Identifier: BSD-3-Clause
"""A PyTorch workload for --memleak on a real GPU. PyTorch's caching allocator keeps
its segments until exit, so what gpuprobe must report as outstanding at exit is exactly
the segments the allocator holds: the script prints them (address and size, from
torch.cuda.memory_snapshot()) as one JSON line on stderr."""
import json
import os
import sys

import torch


def main():
    dev = torch.device("cuda")
    keep = []
    for i in range(20):
        t = torch.randn(256 + 64 * i, 1024, device=dev)
        if i % 3 == 0:
            keep.append(t)  # the rest is freed to the cache, not to the driver
    a = torch.randn(2048, 2048, device=dev)
    b = torch.mm(a, a).tanh()
    torch.cuda.synchronize()
    segs = [{"address": hex(s["address"]), "size": s["total_size"],
             "segment_type": s["segment_type"]}
            for s in torch.cuda.memory_snapshot()]
    json.dump({"pid": os.getpid(), "api": "torch", "reserved": torch.cuda.memory_reserved(),
               "expandable": "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
               "segments": segs, "kept": len(keep), "checksum": float(b.sum())}, sys.stderr)
    sys.stderr.write("\n")


if __name__ == "__main__":
    main()
