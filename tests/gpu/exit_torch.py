# SPDX-License-Identifier: BSD-3-Clause
"""Issue 29 items 1-2 on the GPU: PyTorch programs that exit at once (os._exit right after
their last CUDA call: no interpreter or driver teardown).
  exit_torch.py launch   midrun_torch.py's training loop warmed up WARM seconds (every kernel
                         made and named), prints READY <pid>, waits for SIGUSR1 (a tracer
                         attaches meanwhile: it sees no naming call), runs STEPS steps,
                         synchronizes and exits at once; prints {"api":"exit_launch",...}
                         on stderr first: the steps and this PID.
  exit_torch.py leak     allocates a first small tensor, 0.3 s later leaks 256 MiB through
                         make_buffer <- train_step <- <module> (a new segment of the caching
                         allocator: one cudaMalloc) and exits at once; the frames gpuprobe
                         must give are the lines tagged "# @"."""
import os
import signal
import sys
import time

import torch


def make_buffer(n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")  # @make_buffer


def train_step():
    return make_buffer(256 << 20)  # @train_step


def launch():
    import torch.nn as nn
    import torch.nn.functional as F
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from midrun_torch import Block
    steps, warm = int(os.environ.get("STEPS", "5")), float(os.environ.get("WARM", "20"))
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

    t0 = time.time()
    while time.time() - t0 < warm:
        step()
    torch.cuda.synchronize()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    print(f"READY {os.getpid()}", flush=True)
    signal.sigwait({signal.SIGUSR1})
    print('{"api":"exit_launch","pid":%d,"steps":%d}' % (os.getpid(), steps), file=sys.stderr, flush=True)
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    os._exit(0)


def leak():
    # a first allocation (its own segment) 0.3 s before: the process's native files are kept
    # from its first stack on (that race is the native side's); make_buffer and train_step
    # are first reached by the leak itself
    warm = torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    time.sleep(0.3)
    keep = train_step()  # @module
    torch.cuda.synchronize()
    os._exit(0 if keep is not None and warm is not None else 1)


if __name__ == "__main__":
    {"launch": launch, "leak": leak}[sys.argv[1]]()  # @main
