# SPDX-License-Identifier: BSD-3-Clause
"""--gpu-time on one GPU (issue 34, item 2): a deterministic PyTorch loop whose kernels,
copies and memsets gpuprobe times exactly, with its own accounts beside:
  3 warm-up + N bf16 4096x4096 matmuls, timed as a batch with CUDA events;
  3 warm-up + N 256 MiB pinned H2D copies, then N D2H, each batch timed with CUDA events;
  N 64 MiB memsets (zero_).
It prints one JSON line on stderr: the batches' event times, the loop's wall time (the
in-process cost, against a run without gpuprobe) and, with --profile FILE, writes
torch.profiler's kernels (name -> launches, GPU us) of the same loop to FILE: the
independent truth of kernel durations (a second run: CUPTI has one activity client per
process, so the profiler and --gpu-time cannot share one)."""
import json
import os
import sys
import time

import torch

N = 50


def work():
    dev = torch.device("cuda")
    torch.manual_seed(0)
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    h = torch.empty(256 << 20, dtype=torch.uint8).pin_memory()
    d = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    z = torch.empty(64 << 20, dtype=torch.uint8, device=dev)
    for _ in range(3):
        a @ a
        d.copy_(h, non_blocking=True)
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(5)]
    t0 = time.perf_counter()
    ev[0].record()
    for _ in range(N):
        a @ a
    ev[1].record()
    for _ in range(N):
        d.copy_(h, non_blocking=True)
    ev[2].record()
    for _ in range(N):
        h.copy_(d, non_blocking=True)
    ev[3].record()
    for _ in range(N):
        z.zero_()
    ev[4].record()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    return {"n": N, "warmup": 3, "gemm_ms": ev[0].elapsed_time(ev[1]), "h2d_ms": ev[1].elapsed_time(ev[2]),
            "d2h_ms": ev[2].elapsed_time(ev[3]), "memset_ms": ev[3].elapsed_time(ev[4]),
            "copy_bytes": N * h.numel(), "memset_bytes": N * z.numel(), "wall_s": wall}


def main():
    prof_file = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--profile" else None
    if prof_file:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            t = work()
        kernels = {}
        for e in p.events():
            if str(e.device_type).endswith("CUDA") and e.name and not e.name.startswith("Memcpy") \
                    and not e.name.startswith("Memset"):
                k = kernels.setdefault(e.name, [0, 0.0])
                k[0] += 1
                k[1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        with open(prof_file, "w") as f:
            json.dump({"profiler": kernels}, f)
    else:
        t = work()
    t.update({"pid": os.getpid(), "api": "torch_gputime", "torch": torch.__version__,
              "card": torch.cuda.get_device_name(0)})
    print(json.dumps(t), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
