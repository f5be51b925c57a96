# SPDX-License-Identifier: BSD-3-Clause
"""A small PyTorch training loop for bench/gpu/run.sh: an 8-layer MLP (width 512, batch 256,
AdamW), steps of a few milliseconds, mostly launch-bound. Times every step (synchronized)
after a warm-up and prints
    result torch step_ms MEDIAN steps N p90_ms P90
--profile runs the same loop inside torch.profiler with CPU and CUDA activities (the peer);
the profiler's post-processing after the loop is timed apart and not part of the steps.
--mock: no torch, steps are 2 ms sleeps (to dry-run the bench script without a GPU)."""
import argparse
import statistics
import sys
import time


def make_step(mock):
    """One training step and the synchronize that ends it (also bench/gpu/torch_inproc.py's)."""
    if mock:
        return (lambda: time.sleep(0.002)), (lambda: None)
    import torch
    dev = torch.device("cuda")
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(512, 512), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(512, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(256, 512, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return step, torch.cuda.synchronize


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--mock", action="store_true")
    a = ap.parse_args()

    step, sync = make_step(a.mock)

    for _ in range(a.warmup):
        step()
    sync()
    times = []

    def loop():
        for _ in range(a.steps):
            t0 = time.perf_counter()
            step()
            sync()
            times.append((time.perf_counter() - t0) * 1e3)

    post = 0.0
    if a.profile and not a.mock:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            loop()
        t0 = time.perf_counter()
        try:
            n_events = len(prof.events())
        except Exception as e:  # the count is informative only
            sys.stderr.write("torch.profiler: cannot count events: %s\n" % e)
            n_events = -1
        post = time.perf_counter() - t0
        sys.stderr.write("torch.profiler: %d events, post-processing %.2f s\n" % (n_events, post))
    else:
        loop()
    times.sort()
    print("result torch step_ms %.4f steps %d p90_ms %.4f post_s %.3f" % (
        statistics.median(times), len(times), times[int(len(times) * 0.9)], post))


if __name__ == "__main__":
    main()
