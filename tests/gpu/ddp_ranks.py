# SPDX-License-Identifier: BSD-3-Clause
"""One rank of a 2-rank torch.distributed job for gpuprobe's process trees (issue 13):
run under `python3 -m torch.distributed.run --nproc_per_node 2`, so the ranks are the
launcher's children. Each rank does known work through librank_work.so (RANK_WORK_LIB:
kernels and leaked cudaMalloc buffers, counts by construction), NCCL all_reduce and
broadcast, and a few torch ops; it prints its account (pid, rank, the known work, the
caching allocator's segments at exit) as one JSON line on stderr."""
import ctypes
import json
import os
import sys

import torch
import torch.distributed as dist


def main():
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    dev = torch.device("cuda", rank)
    x = torch.ones(1 << 20, device=dev) * (rank + 1)
    for _ in range(10):
        dist.all_reduce(x)
    dist.broadcast(x, src=0)
    y = torch.tanh(x[:1024].reshape(32, 32) @ x[:1024].reshape(32, 32))
    lib = ctypes.CDLL(os.environ["RANK_WORK_LIB"])
    buf = ctypes.create_string_buffer(8192)
    if lib.rank_work(rank, buf, len(buf)) != 0:
        sys.exit("rank_work failed")
    torch.cuda.synchronize()
    dist.barrier()
    segs = [{"address": hex(s["address"]), "size": s["total_size"]} for s in torch.cuda.memory_snapshot()]
    out = {"pid": os.getpid(), "api": "ddp_rank", "rank": rank, "work": json.loads(buf.value.decode()),
           "segments": segs, "checksum": float(y.sum())}
    dist.destroy_process_group()
    sys.stderr.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
