# SPDX-License-Identifier: BSD-3-Clause
"""Compares a /metrics scrape of gpuprobe daemon with a GPU workload's own account.
usage: check_daemon.py memleak|launch|torch|bandwidth|ioctl WORKLOAD_STDERR METRICS_FILE
(bandwidth: copy_cuda's per-batch account, summed per direction)
Prints what matched and exits non-zero on a mismatch. ioctl has no exact expectation
(the driver decides its ioctls): it prints the series and the share of calls decoded,
and fails only when the process has no ioctl series at all."""
import json
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def last_json(path):
    for line in reversed(open(path, errors="replace").read().splitlines()):
        if line.startswith("{") and '"pid"' in line:
            return json.loads(line)
    sys.exit(f"FAIL: no ground truth in {path}")


def samples(path, pid):
    out = []
    for line in open(path):
        m = SAMPLE.match(line.strip())
        if not m or line.startswith("#"):
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in LABEL.findall(m.group(3) or "")}
        if labels.get("pid") == str(pid):
            out.append((m.group(1), labels, float(m.group(4))))
    return out


def total(s, name, **want):
    return sum(v for n, l, v in s if n == name and all(l.get(k) == x for k, x in want.items()))


def main():
    mode, truth_path, metrics_path = sys.argv[1:4]
    t = last_json(truth_path)
    s = samples(metrics_path, t["pid"])
    if not s:
        sys.exit(f"FAIL: no series for PID {t['pid']}")
    ok = True
    comm = s[0][1].get("comm")
    print(f"pid {t['pid']} comm {comm} cgroup {s[0][1].get('cgroup')!r}: {len(s)} series")
    if mode == "ioctl":
        rows = sorted(((v, l) for n, l, v in s if n == "gpuprobe_nvidia_ioctl_calls_total"),
                      key=lambda x: -x[0])
        calls = sum(v for v, l in rows)
        decoded = sum(v for v, l in rows if not l["cmd"].startswith("0x") and l["cmd"] != "other")
        other = sum(v for v, l in rows if l["cmd"] == "other")
        ok &= calls > 0
        print(f"  ioctls {calls:g} in {len(rows)} series, errors "
              f"{total(s, 'gpuprobe_nvidia_ioctl_errors_total'):g}, seconds "
              f"{total(s, 'gpuprobe_nvidia_ioctl_seconds_total'):.6f}, decoded {decoded:g} "
              f"({100 * decoded / calls if calls else 0:.1f}%), under cmd=\"other\" {other:g}")
        for v, l in rows:
            lab = {k: l[k] for k in ("node", "cmd", "ctrl")}
            err = total(s, "gpuprobe_nvidia_ioctl_errors_total", **lab)
            sec = total(s, "gpuprobe_nvidia_ioctl_seconds_total", **lab)
            print(f"    {l['node']:<18} {l['cmd']:<34} {l['ctrl'] or '-':<48} {v:>8g} "
                  f"err {err:<5g} {sec * 1e3:9.3f} ms")
        print("PASS" if ok else "FAIL")
        sys.exit(0 if ok else 1)
    if mode == "memleak":
        # it exited: its outstanding memory left the gauges (the driver freed it)
        got = total(s, "gpuprobe_cuda_outstanding_allocations")
        ok &= got == 0
        print(f"  outstanding allocations {got:g} after its exit (want 0; it leaked {len(t['leaks'])})")
        print(f"  alloc calls {total(s, 'gpuprobe_cuda_alloc_calls_total'):g} (workload: {t['allocs']}), "
              f"free calls {total(s, 'gpuprobe_cuda_free_calls_total'):g} (workload: {t['frees']})")
        ok &= total(s, "gpuprobe_cuda_alloc_calls_total") >= t["allocs"]
    elif mode == "launch":
        for name, k in t["kernels"].items():
            # the workload counts launch calls: those on a capturing stream are captures
            got = total(s, "gpuprobe_cuda_kernel_launches_total", kernel=name)
            cap = total(s, "gpuprobe_cuda_kernel_captures_total", kernel=name)
            run = total(s, "gpuprobe_cuda_graph_kernel_executions_total", kernel=name)
            ok &= got + cap == k["launches"]
            print(f"  {'ok' if got + cap == k['launches'] else 'WRONG'} {name}: {got:g} launched + {cap:g} captured "
                  f"(want {k['launches']} calls); {run:g} runs in graphs")
        got = total(s, "gpuprobe_cuda_graph_launches_total")
        ok &= got == t["graph_launches"]
        print(f"  graph launches {got:g} (want {t['graph_launches']})")
        print(f"  sync calls {total(s, 'gpuprobe_cuda_sync_calls_total'):g} "
              f"(workload {t['stream_syncs']} stream + {t['device_syncs']} device; the runtime may add), "
              f"sync seconds {total(s, 'gpuprobe_cuda_sync_duration_seconds_sum'):.6f} "
              f"in {total(s, 'gpuprobe_cuda_sync_duration_seconds_count'):g} timed")
    elif mode == "bandwidth":
        want = {}
        for b in t["batches"]:
            w = want.setdefault(b["dir"], {"copies": 0, "bytes": 0, "pageable_bytes": 0})
            w["copies"] += b["copies"]
            w["bytes"] += b["bytes"]
            w["pageable_bytes"] += b["bytes"] if b["pageable_copies"] else 0
        dirs = sorted({l["direction"] for n, l, v in s if n == "gpuprobe_cuda_memcpy_calls_total"})
        for d in dirs:
            g = {"copies": total(s, "gpuprobe_cuda_memcpy_calls_total", direction=d),
                 "bytes": total(s, "gpuprobe_cuda_memcpy_bytes_total", direction=d),
                 "pageable_bytes": total(s, "gpuprobe_cuda_memcpy_pageable_bytes_total", direction=d)}
            sync = total(s, "gpuprobe_cuda_memcpy_sync_seconds_total", direction=d)
            bound = total(s, "gpuprobe_cuda_memcpy_async_upper_bound_seconds_total", direction=d)
            if d in want:
                good = g == want[d]
                ok &= good
                print(f"  {'ok' if good else 'WRONG'} {d}: {g} (want {want[d]}); sync {sync:.4f} s, "
                      f"async <= {bound:.4f} s")
            else:
                print(f"  other direction seen: {d} {g} (the runtime's own copies?)")
        for d in sorted(set(want) - set(dirs)):
            ok = False
            print(f"  WRONG {d}: no series (want {want[d]})")
        for l in open(metrics_path):
            if l.startswith("gpuprobe_cuda_memcpy_small_calls_total") or 'mode="bandwidth"' in l:
                print("  " + l.strip())
    else:
        launches = total(s, "gpuprobe_cuda_kernel_launches_total")
        unnamed = sum(v for n, l, v in s if n == "gpuprobe_cuda_kernel_launches_total"
                      and l.get("kernel", "") == "unknown")
        ok &= launches > 0
        print(f"  launches {launches:g}, unnamed {unnamed:g}, kernel series "
              f"{sum(1 for n, l, v in s if n == 'gpuprobe_cuda_kernel_launches_total')}")
        print(f"  alloc calls {total(s, 'gpuprobe_cuda_alloc_calls_total'):g}, outstanding bytes "
              f"{total(s, 'gpuprobe_cuda_outstanding_bytes'):g}")
    print(f"  probe hits {total(s, 'gpuprobe_probe_hits_total'):g}, "
          f"estimated seconds in probes {total(s, 'gpuprobe_probe_seconds_total'):.6f}")
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
