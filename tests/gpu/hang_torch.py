# SPDX-License-Identifier: BSD-3-Clause
"""A torch.distributed job with a straggler or a hang made on purpose, for gpuprobe --nccl's
hang and straggler figures (issue 34 item 3; tests/gpu/run_hang.sh). Run with
`python3 -m torch.distributed.run --nproc_per_node N THIS MODE` and NVLink multicast off.

  straggler [RANK [DELAY_S [CALLS]]]   (default 2, 0.2, 10): each rank runs CALLS all_reduce
      of float32 16 Mi elements (64 MiB); rank RANK sleeps DELAY_S before entering each;
  hang [RANK [AT [STALL_S [CALLS]]]]   (default 1, 3, 20, 6): rank RANK does not enter
      all_reduce number AT for STALL_S seconds (the others wait in theirs: a hang while it
      lasts), then enters it (printing "ENTERED AT" on stderr), and the job ends 3 s after its
      last collective (a scrape of the running job after the stall).

Every collective is waited for by polling Work.is_completed() every millisecond (a
cudaEventQuery on its end event, as PyTorch's watchdog polls). Each rank prints one JSON
line on stderr: its rank and the CLOCK_MONOTONIC time (ns, the clock gpuprobe's records
use) right before each all_reduce call, and when each was found complete."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "straggler"
    a = [float(x) for x in sys.argv[2:]]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    if mode == "straggler":
        slow, delay, calls = int(a[0]) if a else 2, a[1] if len(a) > 1 else 0.2, int(a[2]) if len(a) > 2 else 10
        stall_at, stall = -1, 0.0
    else:
        slow, stall_at, stall = int(a[0]) if a else 1, int(a[1]) if len(a) > 1 else 3, a[2] if len(a) > 2 else 20.0
        calls, delay = int(a[3]) if len(a) > 3 else 6, 0.0
    x = torch.ones(16 << 20, dtype=torch.float32, device=dev)
    dist.all_reduce(x)  # NCCL's communicator made lazily: before the timed calls
    torch.cuda.synchronize()
    dist.barrier()
    entries, done = [], []
    for i in range(calls):
        if rank == slow:
            time.sleep(delay + (stall if i == stall_at else 0.0))
            if i == stall_at:
                print(f"ENTERED {i}", file=sys.stderr, flush=True)
        entries.append(time.monotonic_ns())
        w = dist.all_reduce(x, async_op=True)
        while not w.is_completed():
            time.sleep(0.001)
        done.append(time.monotonic_ns())
    print(json.dumps({"api": "hang_torch", "mode": mode, "rank": rank, "world": world, "pid": os.getpid(),
                      "slow_rank": slow, "delay_s": delay, "stall_at": stall_at, "stall_s": stall,
                      "warmup_calls": 1, "entries": entries, "done": done}), file=sys.stderr, flush=True)
    if mode == "hang":
        time.sleep(3)  # a scrape of the running job after the stall
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
