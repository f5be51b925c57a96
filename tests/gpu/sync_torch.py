# SPDX-License-Identifier: BSD-3-Clause
"""A PyTorch training loop that copies its input to the GPU every step (pinned memory,
non_blocking: an asynchronous host-to-device copy) and synchronizes, as a data-loading
loop does: for --bandwidth-util under --max-overhead, whose synchronization probes are
sampled. usage: sync_torch.py [STEPS]; prints its steps and its copy's bytes as one JSON
line on stderr."""
import json
import os
import sys

import torch


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    dev = torch.device("cuda")
    host = torch.randn(256, 512).pin_memory()
    model = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(4)]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(steps):
        x = host.to(dev, non_blocking=True)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
    sys.stderr.write(json.dumps({"pid": os.getpid(), "api": "torch-sync", "steps": steps,
                                 "copy_bytes": host.numel() * host.element_size()}) + "\n")


if __name__ == "__main__":
    main()
