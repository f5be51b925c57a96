# SPDX-License-Identifier: BSD-3-Clause
"""A PyTorch process whose context exists before a -p attach: warms up, prints READY with
its PID, waits WAIT seconds (the attach), then copies host tensors to the GPU and computes
for STEPS steps. usage: ctxgpu_torch.py [WAIT] [STEPS]"""
import os
import sys
import time

import torch

wait = float(sys.argv[1]) if len(sys.argv) > 1 else 5
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
x = torch.randn(1 << 20)
w = torch.randn(1024, 1024, device="cuda")
(w @ w).sum().item()
print("READY %d" % os.getpid(), flush=True)
time.sleep(wait)
for i in range(steps):
    y = x.cuda()
    (w @ y.view(1024, 1024)).sum().item()
torch.cuda.synchronize()
sys.stderr.write('{"pid":%d,"api":"ctxgpu","steps":%d,"bytes_per_step":%d}\n' % (os.getpid(), steps, x.numel() * 4))
