# SPDX-License-Identifier: BSD-3-Clause
"""A PyTorch workload for gpuprobe top and --trace counters on a real GPU: for SECONDS
(default 12), training steps that copy a pinned batch to the GPU (H2D), a pageable one
every 4th step, run a small MLP, copy the loss and a slice of activations back (D2H), and
keep one activation buffer every 10 steps (outstanding memory that grows). It prints a
line per second on stdout (a workload that prints) and its own account as one JSON line
on stderr at the end."""
import json
import os
import sys
import time

import torch


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 12.0
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    pinned = torch.randn(512, 1024).pin_memory()
    pageable = torch.randn(512, 1024)
    kept, steps, h2d, d2h = [], 0, 0, 0
    end = time.monotonic() + seconds
    last = time.monotonic()
    while time.monotonic() < end:
        src = pageable if steps % 4 == 3 else pinned
        x = src.to(dev, non_blocking=True)
        h2d += x.numel() * x.element_size()
        opt.zero_grad()
        out = model(x)
        loss = out.square().mean()
        loss.backward()
        opt.step()
        back = out[:64].detach().cpu()
        d2h += back.numel() * back.element_size() + 4
        _ = float(loss)
        if steps % 10 == 0:
            kept.append(out.detach().clone())
        steps += 1
        if time.monotonic() - last >= 1:
            last = time.monotonic()
            print(f"step {steps} loss {float(loss):.4f}", flush=True)
    torch.cuda.synchronize()
    json.dump({"pid": os.getpid(), "api": "torch-top", "steps": steps, "kept_buffers": len(kept),
               "kept_bytes": sum(t.numel() * t.element_size() for t in kept),
               "h2d_bytes_at_least": h2d, "d2h_bytes_at_least": d2h,
               "reserved": torch.cuda.memory_reserved()}, sys.stderr)
    sys.stderr.write("\n")


if __name__ == "__main__":
    main()
