# SPDX-License-Identifier: BSD-3-Clause
"""A PyTorch workload for --cudatrace on a real GPU: a matmul/tanh loop and a small
training step (Linear/GELU/LayerNorm/AdamW). PyTorch's own launch count is not known
by construction; what is checked is the share of launches gpuprobe names."""
import os
import sys

import torch


def main():
    dev = torch.device("cuda")
    a = torch.randn(1024, 1024, device=dev)
    for _ in range(50):
        a = torch.tanh(a @ a) * 0.5
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(),
                                torch.nn.LayerNorm(1024), torch.nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(256, 512, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    for _ in range(20):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    sys.stderr.write('{"pid":%d,"api":"torch-launch","loss":%f}\n' % (os.getpid(), float(loss)))


if __name__ == "__main__":
    main()
