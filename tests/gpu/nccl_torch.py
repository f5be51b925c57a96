# SPDX-License-Identifier: BSD-3-Clause
"""A torch.distributed job with NCCL calls known by construction, for --nccl on the 2-GPU
machine (issue 14). Run with `python3 -m torch.distributed.run --nproc_per_node 2 THIS`
(tests/gpu/run_nccl.sh does, with NVLink multicast off). Each rank runs, one batch at a time,
each batch closed by torch.cuda.synchronize() and timed with CUDA events around it:
  all_reduce      float32  16 Mi elements (64 MiB) x 20,  bfloat16 512 Ki (1 MiB) x 20
  broadcast       uint8    32 MiB from rank 0 x 10
  all_gather      float16  4 Mi elements (8 MiB) a rank x 10 (all_gather_into_tensor)
  send/recv       float32  4 Mi elements (16 MiB) rank 0 -> 1 x 10, then 1 -> 0 x 5
and prints its own account as one JSON line on stderr: the calls (op, dtype, count, calls,
bytes = count x element size, as NCCL is called), the point-to-point calls per peer and
direction, and per batch the algorithm and bus bandwidth as nccl-tests defines them
(algbw = size / time; busbw = algbw x 2(n-1)/n for AllReduce, (n-1)/n for AllGather with
size the gathered total, 1 for Broadcast and send/recv)."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist


HOST_MS = []


def timed(fn, calls):
    """CUDA events around the batch (GPU time, from before the first call is made), and the
    host's time from just before the first call to the return of the synchronize that ends
    the batch: a window that holds gpuprobe's (first NCCL call to that synchronize)."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    a.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    b.record()
    torch.cuda.synchronize()
    HOST_MS.append((time.perf_counter() - t0) * 1e3)
    return a.elapsed_time(b)


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    ops, p2p, timing = [], [], []
    n = world

    def account(op, t, calls, ms, size, factor):
        ops.append({"op": op, "dtype": str(t.dtype).replace("torch.", ""), "count": t.numel(), "calls": calls,
                    "bytes": calls * t.numel() * t.element_size()})
        algbw = size / (ms / 1e3 / calls)
        host = size / (HOST_MS[-1] / 1e3 / calls) * factor
        timing.append({"op": op, "dtype": ops[-1]["dtype"], "size": size, "calls": calls, "ms": ms,
                       "algbw": algbw, "busbw": algbw * factor, "host_ms": HOST_MS[-1], "busbw_host": host})

    x = torch.ones(16 << 20, dtype=torch.float32, device=dev)
    ms = timed(lambda: dist.all_reduce(x), 20)
    account("AllReduce", x, 20, ms, x.numel() * 4, 2 * (n - 1) / n)
    y = torch.ones(512 << 10, dtype=torch.bfloat16, device=dev)
    ms = timed(lambda: dist.all_reduce(y), 20)
    account("AllReduce", y, 20, ms, y.numel() * 2, 2 * (n - 1) / n)
    z = torch.zeros(32 << 20, dtype=torch.uint8, device=dev)
    ms = timed(lambda: dist.broadcast(z, src=0), 10)
    account("Broadcast", z, 10, ms, z.numel(), 1.0)
    part = torch.ones(4 << 20, dtype=torch.float16, device=dev)
    whole = torch.empty(n * part.numel(), dtype=torch.float16, device=dev)
    ms = timed(lambda: dist.all_gather_into_tensor(whole, part), 10)
    account("AllGather", part, 10, ms, whole.numel() * 2, (n - 1) / n)
    buf = torch.ones(4 << 20, dtype=torch.float32, device=dev)
    for src, dst, calls in ((0, 1, 10), (1, 0, 5)):
        if rank not in (src, dst):
            continue
        peer = dst if rank == src else src
        fn = (lambda: dist.send(buf, dst)) if rank == src else (lambda: dist.recv(buf, src))
        ms = timed(fn, calls)
        p2p.append({"peer": peer, "direction": "send" if rank == src else "recv", "calls": calls,
                    "bytes": calls * buf.numel() * 4})
        algbw = buf.numel() * 4 / (ms / 1e3 / calls)
        host = buf.numel() * 4 / (HOST_MS[-1] / 1e3 / calls)
        timing.append({"op": "Send" if rank == src else "Recv", "dtype": "float32", "size": buf.numel() * 4,
                       "calls": calls, "ms": ms, "algbw": algbw, "busbw": algbw, "host_ms": HOST_MS[-1],
                       "busbw_host": host})
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(json.dumps({"pid": os.getpid(), "api": "torch_nccl", "rank": rank, "nranks": world,
                      "device": dev.index, "ops": ops, "p2p": p2p, "timing": timing,
                      "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version()))}),
          file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
