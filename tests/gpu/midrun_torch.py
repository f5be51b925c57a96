# SPDX-License-Identifier: BSD-3-Clause
"""A PyTorch training loop for names after a mid-run attach (issue 13): a small transformer
block (attention through scaled_dot_product_attention, LayerNorm, GELU MLP, AdamW, cross
entropy) trained until killed. After WARM seconds (default 30: every kernel handle is made
by then) it prints READY with its PID and keeps training, logging steps."""
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d=512, h=8):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


def main():
    warm = float(os.environ.get("WARM", "30"))
    dev = torch.device("cuda")
    model = nn.Sequential(nn.Embedding(1000, 512), Block(), Block(), nn.LayerNorm(512), nn.Linear(512, 1000)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, 1000, (16, 128), device=dev)
    t0, step, ready = time.time(), 0, False
    while True:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).float().view(-1, 1000), x.view(-1))
        loss.backward()
        opt.step()
        step += 1
        if step % 50 == 0:
            torch.cuda.synchronize()
        if not ready and time.time() - t0 >= warm:
            torch.cuda.synchronize()
            print(f"READY {os.getpid()} after {step} steps", flush=True)
            ready = True


if __name__ == "__main__":
    main()
