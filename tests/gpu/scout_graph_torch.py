# SPDX-License-Identifier: BSD-3-Clause
"""Fact-finding: which driver calls does PyTorch make to capture and replay a CUDA graph?
Captures a small step once, replays it REPLAYS times, and says so on stderr."""
import os
import sys

import torch

REPLAYS = 5


def main():
    dev = torch.device("cuda")
    x = torch.randn(256, 256, device=dev)
    w = torch.randn(256, 256, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # warm-up outside the graph, as PyTorch's docs ask
            y = torch.relu(x @ w) + 1.0
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = torch.relu(x @ w) + 1.0
    for _ in range(REPLAYS):
        g.replay()
    torch.cuda.synchronize()
    sys.stderr.write('{"pid":%d,"api":"torch-graph","replays":%d}\n' % (os.getpid(), REPLAYS))


if __name__ == "__main__":
    main()
