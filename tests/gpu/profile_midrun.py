# SPDX-License-Identifier: BSD-3-Clause
"""The CUDA profiler's own kernel records (CUPTI, through torch.profiler) for STEPS steps of
midrun_torch.py's training loop, in a process of its own after the same warm-up: one JSON
line {"api":"profiler","steps":N,"kernels":{name: count}} on stdout, the independent
source that run_steady_names.sh compares gpuprobe's names and per-step launches with."""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(__file__))
from midrun_torch import Block  # noqa: E402


def main():
    steps = int(os.environ.get("STEPS", "20"))
    dev = torch.device("cuda")
    model = nn.Sequential(nn.Embedding(1000, 512), Block(), Block(), nn.LayerNorm(512), nn.Linear(512, 1000)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, 1000, (16, 128), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).float().view(-1, 1000), x.view(-1))
        loss.backward()
        opt.step()

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and not e.name.startswith(("Memcpy", "Memset")):
            kernels[e.name] = kernels.get(e.name, 0) + 1
    print(json.dumps({"api": "profiler", "steps": steps, "kernels": kernels}))


if __name__ == "__main__":
    main()
