# SPDX-License-Identifier: BSD-3-Clause
"""A torch.distributed job over ALL the node's GPUs with NCCL calls known by construction,
for --nccl on 2, 4 or 8 GPUs (issue 20). Every count is derived from the world size:
  python3 -m torch.distributed.run --nproc_per_node $(nvidia-smi -L | wc -l) THIS
(tests/gpu/run_node.sh runs it, NVLink multicast off). `THIS --plan N` prints, without torch
or a GPU, the account each of N ranks will print (the checker's self-test uses it).

Each batch is closed by torch.cuda.synchronize() and timed twice: CUDA events around it and
the host's time.perf_counter() from just before its first call to the return of that
synchronize (a window that holds gpuprobe's, which runs from the first NCCL call to the
synchronize). n = the world size, r = this rank, in order:
  world  AllReduce      float32   16 Mi elements x 20
  world  AllGather      float16    4 Mi a rank  x 10   (all_gather_into_tensor)
  world  ReduceScatter  float32    2 Mi a rank  x 10   (reduce_scatter_tensor, n x 2 Mi in)
  world  AlltoAll       bfloat16   1 Mi a peer  x 10   (all_to_all_single, n x 1 Mi in)
  ring   send to (r+1)%n, recv from (r-1)%n: float32, (sender+1) Mi elements x 8 each way;
         even ranks send first, odd ranks receive first (no cycle of blocked sends)
  tp     new_group pairs (0,1), (2,3), ...: AllReduce float16 (8 + 2p) Mi elements x 15 on
         pair p (a rank left over when n is odd is in none)

What gpuprobe sees (read from PyTorch's and NCCL's sources; `account` says it per rank):
- all_to_all_single with equal splits is torch.cuda.nccl's all2all_single_equal_split:
  built against NCCL >= 2.28 (the cu13 wheels: PyTorch pull request 164265) it is ONE
  ncclAlltoAll(sendbuff, recvbuff, count = numel / n, ...) per call, which NCCL 2.28
  enqueues itself (no ncclSend/ncclRecv inside); built against an older NCCL it is
  ncclCommCount, then ncclGroupStart, ncclSend AND ncclRecv of count to EVERY rank,
  itself included, ncclGroupEnd. Which one: whether torch's libraries import the symbol
  `ncclAlltoAll` (checked below, in the account as "alltoall").
- init_process_group(device_id=...) makes the world communicator eagerly
  (ncclCommInitRankConfig). new_group(ranks) then splits it at once, on EVERY rank of the
  world: ncclCommSplit(world, color, key, ...) for each new_group call, a rank outside the
  group passing NCCL_SPLIT_NOCOLOR (PyTorch's perform_nocolor_split: the split is
  collective over the parent). So each rank makes n // 2 splits and gets one pair
  communicator (nranks 2, rank r % 2) whose comm_id gpuprobe derives from the world's.
- a single dist.send/dist.recv (not batch_isend_irecv) uses a communicator keyed by the
  pair of ranks ("lo:hi"), made lazily at its first call by ncclCommInitRankConfig with a
  unique id exchanged through the store (lower rank is rank 0): gpuprobe's peer is then 0
  or 1, not the global rank. PyTorch pull request 129147 (use the world communicator when
  it was made eagerly) did not hold for single send/recv ("blocked by some backward
  compatible requirement", issue 152220, 2025; torchft PR 242 still sees a communicator
  per peer): whether this PyTorch has changed that is read from the report; the checker
  accepts both and says which it saw.
- all_to_all_single and new_group's splits from distributed_c10d.py (split_from set when
  the world communicator has a bound device; perform_nocolor_split for non-members).
Nothing else: no barrier (it would be an AllReduce), destroy_process_group at the end."""
import json
import os
import sys
import time

MI = 1 << 20
SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "uint8": 1}
HOST_MS = []


def pairs(n):
    """Tensor-parallel pairs (0,1), (2,3), ...; with n odd the last rank is in none."""
    return [(2 * p, 2 * p + 1) for p in range(n // 2)]


def plan(n, rank, alltoall="ncclAlltoAll"):
    """The batches rank runs, each as NCCL is called: group, op, dtype, count (the count
    argument), calls, peer (p2p), nccl-tests size (bytes) and bus bandwidth factor."""
    out = []

    def add(group, op, dtype, count, calls, size, factor, peer=None, direction=None):
        out.append({"group": group, "op": op, "dtype": dtype, "count": count, "calls": calls, "peer": peer,
                    "direction": direction, "bytes": calls * count * SIZES[dtype], "size": size, "busbw_factor": factor})

    add("world", "AllReduce", "float32", 16 * MI, 20, 16 * MI * 4, 2 * (n - 1) / n)
    add("world", "AllGather", "float16", 4 * MI, 10, n * 4 * MI * 2, (n - 1) / n)
    add("world", "ReduceScatter", "float32", 2 * MI, 10, n * 2 * MI * 4, (n - 1) / n)
    add("world", "AlltoAll", "bfloat16", MI, 10, n * MI * 2, (n - 1) / n)
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    send = ("Send", nxt, "send", (rank + 1) * MI)
    recv = ("Recv", prv, "recv", (prv + 1) * MI)
    for op, peer, d, count in ((send, recv) if rank % 2 == 0 else (recv, send)):
        add("ring", op, "float32", count, 8, count * 4, 1.0, peer, d)
    for p, (a, b) in enumerate(pairs(n)):
        if rank in (a, b):
            add(f"tp{p}", "AllReduce", "float16", (8 + 2 * p) * MI, 15, (8 + 2 * p) * MI * 2, 1.0)
    return out


def alltoall_path():
    """ncclAlltoAll when torch's libraries import it (built against NCCL >= 2.28)."""
    import mmap
    import torch
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    for name in sorted(os.listdir(lib)):
        if not (name.startswith("libtorch") and ".so" in name):
            continue
        with open(os.path.join(lib, name), "rb") as f:
            try:
                m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:
                continue
            with m:
                if m.find(b"\0ncclAlltoAll\0") >= 0:
                    return "ncclAlltoAll"
    return "send_recv"


def timed(torch, fn, calls):
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


def run_batch(torch, dist, b, dev, groups):
    """One batch of the plan; its tensors made before the timing starts."""
    dt = getattr(torch, b["dtype"])
    n, c, op, g = dist.get_world_size(), b["count"], b["op"], groups.get(b["group"])
    if op == "AllReduce":
        x = torch.ones(c, dtype=dt, device=dev)
        return timed(torch, lambda: dist.all_reduce(x, group=g), b["calls"])
    if op == "AllGather":
        x, y = torch.ones(c, dtype=dt, device=dev), torch.empty(n * c, dtype=dt, device=dev)
        return timed(torch, lambda: dist.all_gather_into_tensor(y, x), b["calls"])
    if op == "ReduceScatter":
        x, y = torch.ones(n * c, dtype=dt, device=dev), torch.empty(c, dtype=dt, device=dev)
        return timed(torch, lambda: dist.reduce_scatter_tensor(y, x), b["calls"])
    if op == "AlltoAll":
        x, y = torch.ones(n * c, dtype=dt, device=dev), torch.empty(n * c, dtype=dt, device=dev)
        return timed(torch, lambda: dist.all_to_all_single(y, x), b["calls"])
    x = torch.ones(c, dtype=dt, device=dev)
    if op == "Send":
        return timed(torch, lambda: dist.send(x, b["peer"]), b["calls"])
    return timed(torch, lambda: dist.recv(x, b["peer"]), b["calls"])


def main():
    import torch
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    groups = {}
    for p, members in enumerate(pairs(world)):  # every rank calls new_group for every pair
        g = dist.new_group(list(members))
        if rank in members:
            groups[f"tp{p}"] = g
    path = alltoall_path()
    batches = plan(world, rank)
    for b in batches:
        b["ms"] = run_batch(torch, dist, b, dev, groups)
        b["host_ms"] = HOST_MS[-1]
        per_call = b["size"] / (b["ms"] / 1e3 / b["calls"])
        b["algbw"], b["busbw"] = per_call, per_call * b["busbw_factor"]
        b["busbw_host"] = b["size"] / (b["host_ms"] / 1e3 / b["calls"]) * b["busbw_factor"]
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(json.dumps({"pid": os.getpid(), "api": "torch_nccl_node", "rank": rank, "nranks": world,
                      "device": dev.index, "gpus": torch.cuda.device_count(), "alltoall": path,
                      "pairs": pairs(world), "batches": batches, "torch": torch.__version__,
                      "nccl": ".".join(map(str, torch.cuda.nccl.version()))}), file=sys.stderr, flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--plan":
        n = int(sys.argv[2])
        for r in range(n):
            print(json.dumps({"pid": 1000 + r, "api": "torch_nccl_node", "rank": r, "nranks": n, "device": r,
                              "gpus": n, "alltoall": "ncclAlltoAll", "pairs": pairs(n), "batches": plan(n, r)}))
    else:
        main()
