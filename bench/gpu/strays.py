#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The budget's sampled periods in gpuprobe -v logs (bench/gpu/budget_cov.py --logs DIR):
per log, the mean strays a period (entry hits while the window is shut: the probes going in
and out, priced and never counted), the counted hits of its window, the window's and the
period's length. Usage: strays.py DIR [DIR...]"""
import re, sys, glob, os
for d in sys.argv[1:]:
    for f in sorted(glob.glob(os.path.join(d, "*.log"))):
        s = open(f).read()
        rows = [(float(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4)))
                for m in re.finditer(r"budget: period ([\d.]+) ms, window ([\d.]+) ms: PID \d+ took (\d+) hits .*?, (\d+) strays", s)]
        samp = [r for r in rows if r[1] < 0.9 * r[0]]
        if samp:
            n = len(samp)
            print(f"{d} {os.path.basename(f)}: {n} sampled periods, strays/period {sum(r[3] for r in samp)/n:.0f}, "
                  f"window hits {sum(r[2] for r in samp)/n:.0f}, window {sum(r[1] for r in samp)/n:.2f} ms, period {sum(r[0] for r in samp)/n:.0f} ms")
        else:
            print(f"{d} {os.path.basename(f)}: no sampled period ({len(rows)})")
