# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch CUDA graphs for --cudatrace (issue 13): a small MLP's forward and backward
captured with torch.cuda.graph (after the warm-up on a side stream PyTorch asks for), then
replayed REPLAYS times. Its account: the replays and the warm-up iterations, as JSON on
stderr. Every kernel captured must be reported executed REPLAYS times per captured launch."""
import json
import os
import sys

import torch


def main():
    replays = int(os.environ.get("REPLAYS", "40"))
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)).to(dev)
    x = torch.randn(64, 256, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x).square().mean().backward()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        loss = model(x).square().mean()
        loss.backward()
    for _ in range(replays):
        g.replay()
    torch.cuda.synchronize()
    json.dump({"pid": os.getpid(), "api": "torch_graph", "replays": replays, "warmup": 3,
               "loss": float(loss)}, sys.stderr)
    sys.stderr.write("\n")


if __name__ == "__main__":
    main()
