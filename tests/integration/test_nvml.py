# SPDX-License-Identifier: BSD-3-Clause
"""NVML (issue 33) end to end with the stand-in libnvidia-ml.so.1 (tests/fakenvml/): every
figure the script gives comes out of the daemon's /metrics and the CLI's reports as the
script says; the process list past the first buffer (NVML_ERROR_INSUFFICIENT_SIZE, then
grown); MIG marked unavailable, never 0; an XID event counted and logged with the
processes on its GPU; a missing library, missing functions and failing calls each one
line, counted, every other figure as before; --no-nvml."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import gp
from gp import app, check, eq, truth
from test_daemon import ENV, MEMLEAK, get, samples, start_daemon, stop, value

FAKENVML_DIR = os.path.join(gp.OUT, "fakenvml")
OLD_DIR = os.path.join(FAKENVML_DIR, "old")

GPU0 = dict(uuid="GPU-test-0", name="StandIn", util=75, memutil=40, memused=123456789, memtotal=150000000000, memreserved=640 << 20,
            power=685123, energy=987654321, temp=61, clocksm=1980, clockmem=2619, throttle=0x24, pcietx=1000,
            pcierx=2000, ecc="3,1,40,2", retired="5,1", remap="7,2,1,0", nvlink="123456,654321")


def nums(key, gpu=GPU0):
    return [int(x) for x in gpu[key].split(",")]
THROTTLES = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
             0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
             0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}


def script(lines):
    f = tempfile.NamedTemporaryFile("w", prefix="gp-nvml-", suffix=".script", delete=False)
    f.write("\n".join(lines) + "\n")
    f.close()
    return f.name


def gpu_line(i, **kv):
    return f"gpu {i} " + " ".join(f"{k}={v}" for k, v in kv.items())


def nvml_env(path, lib_dir=FAKENVML_DIR, log=None):
    e = {"LD_LIBRARY_PATH": f"{gp.FAKECUDA_DIR}:{lib_dir}", "FAKENVML_SCRIPT": path}
    if log:
        e["FAKENVML_LOG"] = log
    return e


def sleepers(n):
    """n processes that live while the test runs (comm "sleep"): NVML's processes."""
    return [subprocess.Popen(["sleep", "120"], start_new_session=True) for _ in range(n)]


def wait_value(port, name, want, timeout=10, **labels):
    deadline = time.time() + timeout
    got = None
    while time.time() < deadline:
        got = value(get(port)[1], name, **labels)
        if got is not None and abs(got - want) < 1e-6 * max(1, abs(want)):
            return
        time.sleep(0.2)
    raise gp.Failure(f"{name}{labels}: expected {want}, got {got}")


def nvml_lines(d):
    return [l for l in d.stderr().splitlines() if "nvml:" in l]


def test_daemon_scrape_every_figure():
    """GPU 0 with every figure and 10 processes (more than the first buffer of 4: the
    size protocol), GPU 1 in MIG mode, an XID on GPU 0 after 1.5 s."""
    procs = sleepers(11)
    log = tempfile.mktemp(prefix="gp-nvml-log-")
    on0, on1 = procs[:10], procs[10:]
    lines = [gpu_line(0, **GPU0), gpu_line(1, uuid="GPU-test-1", mig=1, util=5)]
    # process i: 1 MiB * (i + 1) on GPU 0, SM 10 + i %, memory 3 + i %
    lines += [f"proc 0 {p.pid} mem={(i + 1) << 20} sm={10 + i} memutil={3 + i}" for i, p in enumerate(on0)]
    lines += [f"proc 1 {p.pid} mem=4096 gi=2 ci=0" for p in on1]
    # GPU 1's MIG devices: two instances (slots 0, 1; the other five NOT_FOUND)
    migs = [dict(gi=1, ci=0, uuid="MIG-test-a", memused=1 << 20, memtotal=10 << 30),
            dict(gi=2, ci=0, uuid="MIG-test-b", memused=3 << 20, memtotal=20 << 30)]
    lines += [f"migdev 1 {m['gi']} {m['ci']} uuid={m['uuid']} memused={m['memused']} memtotal={m['memtotal']}" for m in migs]
    lines += ["xid 0 79 1500"]
    path = script(lines)
    d = None
    try:
        t_start = time.time()
        d = start_daemon(modes=("--memleak",), env=nvml_env(path, log=log))
        port = d.port
        g = dict(gpu="0", uuid="GPU-test-0")
        wait_value(port, "gpuprobe_nvml_state", 1, state="loaded")
        wait_value(port, "gpuprobe_gpu_xid_errors_total", 1, xid="79", **g)
        text = get(port)[1]
        info = [(l, v) for n, l, v in samples(text) if n == "gpuprobe_gpu_info" and l.get("gpu") == "0"]
        eq(info, [(dict(name="StandIn", mig="0", **g), 1)], "gpu_info of GPU 0")
        eq(value(text, "gpuprobe_gpu_info", gpu="1", uuid="GPU-test-1", mig="1"), 1, "gpu_info of GPU 1 (MIG)")
        eq(value(text, "gpuprobe_gpu_utilization_ratio", **g), GPU0["util"] / 100, "utilization")
        eq(value(text, "gpuprobe_gpu_memory_utilization_ratio", **g), GPU0["memutil"] / 100, "memory utilization")
        # nvmlDeviceGetMemoryInfo_v2's used, without the driver's reserve (as nvidia-smi; v1
        # counts it: 2,981 MiB against nvidia-smi's 2,367 on the H200)
        eq(value(text, "gpuprobe_gpu_memory_used_bytes", **g), GPU0["memused"], "memory used")
        eq(value(text, "gpuprobe_gpu_memory_total_bytes", **g), GPU0["memtotal"], "memory total")
        eq(value(text, "gpuprobe_gpu_power_watts", **g), GPU0["power"] / 1000, "power (mW -> W)")
        eq(value(text, "gpuprobe_gpu_energy_joules_total", **g), GPU0["energy"] / 1000, "energy (mJ -> J)")
        eq(value(text, "gpuprobe_gpu_temperature_celsius", **g), GPU0["temp"], "temperature")
        eq(value(text, "gpuprobe_gpu_clock_hertz", clock="sm", **g), GPU0["clocksm"] * 1e6, "SM clock")
        eq(value(text, "gpuprobe_gpu_clock_hertz", clock="memory", **g), GPU0["clockmem"] * 1e6, "memory clock")
        for bit, name in THROTTLES.items():
            eq(value(text, "gpuprobe_gpu_clocks_throttled", reason=name, **g), 1 if GPU0["throttle"] & bit else 0,
               f"throttle reason {name}")
        eq(value(text, "gpuprobe_gpu_pcie_throughput_bytes", direction="tx", **g), GPU0["pcietx"] * 1024,
           "PCIe tx (KB/s -> B/s)")
        eq(value(text, "gpuprobe_gpu_pcie_throughput_bytes", direction="rx", **g), GPU0["pcierx"] * 1024,
           "PCIe rx")
        # ECC, retired pages, remapped rows, NVLink as scripted on GPU 0; on GPU 1, where the
        # stand-in answers NOT_SUPPORTED, absent (never 0) and no error
        vc, vu, ac, au = nums("ecc")
        for t, vol, agg in (("corrected", vc, ac), ("uncorrected", vu, au)):
            eq(value(text, "gpuprobe_gpu_ecc_errors_total", type=t, **g), vol, f"ECC {t} (volatile)")
            eq(value(text, "gpuprobe_gpu_ecc_errors_lifetime", type=t, **g), agg, f"ECC {t} (aggregate)")
        sbe, dbe = nums("retired")
        eq(value(text, "gpuprobe_gpu_retired_pages", cause="multiple_single_bit", **g), sbe, "retired pages (SBE)")
        eq(value(text, "gpuprobe_gpu_retired_pages", cause="double_bit", **g), dbe, "retired pages (DBE)")
        rc, ru, rp, rf = nums("remap")
        eq(value(text, "gpuprobe_gpu_remapped_rows", type="corrected", **g), rc, "remapped rows (corrected)")
        eq(value(text, "gpuprobe_gpu_remapped_rows", type="uncorrected", **g), ru, "remapped rows (uncorrected)")
        eq((value(text, "gpuprobe_gpu_row_remap_pending", **g), value(text, "gpuprobe_gpu_row_remap_failed", **g)),
           (rp, rf), "remap pending, failed")
        tx, rx = nums("nvlink")
        eq(value(text, "gpuprobe_gpu_nvlink_bytes_total", direction="tx", **g), tx * 1024, "NVLink tx (KiB -> B)")
        eq(value(text, "gpuprobe_gpu_nvlink_bytes_total", direction="rx", **g), rx * 1024, "NVLink rx")
        for fam in ("gpuprobe_gpu_ecc_errors_total", "gpuprobe_gpu_retired_pages", "gpuprobe_gpu_remapped_rows",
                    "gpuprobe_gpu_nvlink_bytes_total"):
            eq(value(text, fam, gpu="1"), None, f"{fam}: none on GPU 1 (NOT_SUPPORTED)")
        # per process, joined with the daemon's process labels (pid, comm, cgroup)
        for i, p in enumerate(on0):
            own = dict(pid=str(p.pid), comm="sleep", **g)
            eq(value(text, "gpuprobe_process_gpu_memory_bytes", **own), (i + 1) << 20, f"driver memory of {p.pid}")
            got = value(text, "gpuprobe_process_gpu_sm_utilization_ratio", **own)
            check(got is not None and abs(got - (10 + i) / 100) < 1e-9, f"SM of {p.pid}: {got}")
            got = value(text, "gpuprobe_process_gpu_memory_utilization_ratio", **own)
            check(got is not None and abs(got - (3 + i) / 100) < 1e-9, f"memory utilization of {p.pid}: {got}")
            cg = [l for n, l, v in samples(text) if n == "gpuprobe_process_gpu_memory_bytes" and l.get("pid") == str(p.pid)]
            own_cg = open(f"/proc/{p.pid}/cgroup").read().splitlines()
            check(any(line.endswith(":" + cg[0].get("cgroup", "?")) for line in own_cg),
                  f"the process's cgroup label {cg[0].get('cgroup')!r} vs {own_cg}")
        # MIG: per-process utilization unavailable, said so; never a 0 sample
        eq(value(text, "gpuprobe_gpu_process_utilization_available", gpu="1"), 0, "GPU 1 (MIG) unavailable")
        eq(value(text, "gpuprobe_gpu_process_utilization_available", gpu="0"), 1, "GPU 0 available")
        reason = [l for n, l, v in samples(text)
                  if n == "gpuprobe_gpu_process_utilization_available" and l.get("gpu") == "1"][0].get("reason", "")
        check("MIG" in reason, f"the reason names MIG: {reason!r}")
        eq(value(text, "gpuprobe_process_gpu_sm_utilization_ratio", gpu="1"), None, "no SM sample on the MIG GPU")
        eq(value(text, "gpuprobe_process_gpu_memory_bytes", gpu="1", pid=str(on1[0].pid)), 4096,
           "driver memory on the MIG GPU")
        # per MIG instance: its memory; the process's instance
        for m in migs:
            k = dict(gpu="1", gi=str(m["gi"]), ci=str(m["ci"]), mig_uuid=m["uuid"])
            eq(value(text, "gpuprobe_gpu_mig_memory_used_bytes", **k), m["memused"], f"MIG {m['uuid']} used")
            eq(value(text, "gpuprobe_gpu_mig_memory_total_bytes", **k), m["memtotal"], f"MIG {m['uuid']} total")
        eq(len([l for n, l, v in samples(text) if n == "gpuprobe_gpu_mig_memory_used_bytes"]), len(migs),
           "the empty slots are not instances")
        eq(value(text, "gpuprobe_process_gpu_mig_instance", gpu="1", gi="2", ci="0", pid=str(on1[0].pid)), 1,
           "the process's MIG instance")
        eq(value(text, "gpuprobe_process_gpu_mig_instance", gpu="0"), None, "none outside MIG")
        # the size protocol: the stand-in said INSUFFICIENT_SIZE to a buffer of 4, then all 10 came
        ins = [l.split() for l in open(log).read().splitlines() if l.startswith("insufficient 0 ")]
        check(ins, "NVML_ERROR_INSUFFICIENT_SIZE answered at least once on GPU 0")
        eq(ins[0][2:], ["4", "10"], "first buffer 4, 10 needed")
        eq(value(text, "gpuprobe_nvml_errors_total", function="nvmlDeviceGetComputeRunningProcesses_v3"), 0,
           "growing the buffer is no error")
        eq(sum(v for n, l, v in samples(text) if n == "gpuprobe_nvml_errors_total"), 0, "no error at all")
        # the XID's time, on the GPU and on each process that was on it (with its labels)
        when = value(text, "gpuprobe_gpu_xid_last_timestamp_seconds", xid="79", **g)
        check(when is not None and t_start <= when <= time.time(), f"the XID's time {when} within the run")
        for p in on0:
            eq(value(text, "gpuprobe_process_gpu_xid_last_timestamp_seconds", xid="79", pid=str(p.pid), comm="sleep", **g),
               when, f"PID {p.pid} was on GPU 0 at the XID")
        eq(value(text, "gpuprobe_process_gpu_xid_last_timestamp_seconds", pid=str(on1[0].pid)), None,
           "the process on GPU 1 was not hit")
        # the XID's log line: GPU, code, the processes on it then
        xl = [l for l in nvml_lines(d) if "XID 79" in l]
        eq(len(xl), 1, f"one XID line: {nvml_lines(d)}")
        for p in on0:
            check(f" {p.pid}" in xl[0].split("processes on it:")[1], f"PID {p.pid} in {xl[0]!r}")
        check(value(text, "gpuprobe_nvml_reads_total") >= 1, "reads counted")
        # the dashboard's GPU row names only families served here
        dash = open(os.path.join(gp.ROOT, "examples", "grafana", "gpuprobe.json")).read()
        nv = sorted(f for f in set(re.findall(r"gpuprobe_[a-z_]+", dash))
                    if f.startswith(("gpuprobe_gpu_", "gpuprobe_process_gpu_", "gpuprobe_nvml_")))
        check(len(nv) >= 8, f"the dashboard's NVML families: {nv}")
        for fam in nv:
            check(f"# TYPE {fam} " in text, f"the dashboard names {fam}, which /metrics lacks with NVML")
        if shutil.which("promtool"):
            r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
            eq(r.returncode, 0, f"promtool check metrics: {r.stdout}{r.stderr}")
        stop(d)
        d = None
    finally:
        if d:
            d.kill()
        for p in procs:
            p.kill()
            p.wait()
        os.unlink(path)
        if os.path.exists(log):
            os.unlink(log)


def memleak_counts(d):
    """A memleak workload counted as before (the modes do not depend on NVML)."""
    held = gp.Background([MEMLEAK, "--allocs", "10", "--leaks", "3", "--hold"], env=ENV)
    try:
        held.wait_for("HELD")
        t = truth(held.stderr())
        wait_value(d.port, "gpuprobe_cuda_alloc_calls_total", 10, pid=t["pid"])
        wait_value(d.port, "gpuprobe_cuda_outstanding_bytes", t["leaked_bytes"], pid=t["pid"], kind="device")
    finally:
        held.kill()


def test_daemon_without_library():
    """No libnvidia-ml.so.1 (this machine's case): one line, state no_library, every mode as before."""
    d = start_daemon(modes=("--memleak",))
    try:
        wait_value(d.port, "gpuprobe_nvml_state", 1, state="no_library")
        memleak_counts(d)
        text = get(d.port)[1]
        eq([n for n, l, v in samples(text) if n.startswith(("gpuprobe_gpu_", "gpuprobe_process_gpu_"))], [],
           "no GPU family without NVML")
        lines = nvml_lines(d)
        eq(len(lines), 1, f"one NVML line: {lines}")
        check(lines[0].startswith("<6>") and "no_library" in lines[0] and "libnvidia-ml.so.1" in lines[0],
              f"an info line naming the library: {lines[0]!r}")
        stop(d)
    finally:
        d.kill()


def test_daemon_no_nvml():
    path = script([gpu_line(0, **GPU0)])
    d = start_daemon(modes=("--memleak",), extra=("--no-nvml",), env=nvml_env(path))
    try:
        wait_value(d.port, "gpuprobe_nvml_state", 1, state="off")
        eq(nvml_lines(d), [], "--no-nvml: no NVML line")
        memleak_counts(d)
        stop(d)
    finally:
        d.kill()
        os.unlink(path)


def test_old_library_missing_functions():
    """An old driver's library: no process utilization, energy or events. One line lists
    them; their figures are absent (never 0), the rest is there."""
    procs = sleepers(1)
    path = script([gpu_line(0, **GPU0), f"proc 0 {procs[0].pid} mem=8192 sm=50", "xid 0 13 100"])
    d = start_daemon(modes=("--memleak",), env=nvml_env(path, lib_dir=OLD_DIR))
    try:
        wait_value(d.port, "gpuprobe_nvml_state", 1, state="loaded")
        wait_value(d.port, "gpuprobe_process_gpu_memory_bytes", 8192, pid=str(procs[0].pid))
        text = get(d.port)[1]
        for fn in ("nvmlDeviceGetProcessUtilization", "nvmlDeviceGetTotalEnergyConsumption",
                   "nvmlDeviceRegisterEvents", "nvmlEventSetWait_v2", "nvmlDeviceGetRemappedRows",
                   "nvmlDeviceGetFieldValues"):
            eq(value(text, "gpuprobe_nvml_functions_missing", function=fn), 1, f"{fn} missing")
        eq(value(text, "gpuprobe_nvml_functions_missing", function="nvmlDeviceGetTotalEccErrors"), None, "ECC's there")
        eq(value(text, "gpuprobe_gpu_ecc_errors_total", gpu="0", type="corrected"), nums("ecc")[0], "ECC still read")
        eq((value(text, "gpuprobe_gpu_remapped_rows"), value(text, "gpuprobe_gpu_nvlink_bytes_total")), (None, None),
           "no remapped rows, no NVLink without their functions (never 0)")
        eq(value(text, "gpuprobe_gpu_energy_joules_total"), None, "no energy sample")
        eq(value(text, "gpuprobe_process_gpu_sm_utilization_ratio"), None, "no SM sample")
        eq(value(text, "gpuprobe_gpu_process_utilization_available", gpu="0"), 0, "utilization unavailable")
        eq(value(text, "gpuprobe_gpu_xid_errors_total"), None, "no XID without events")
        eq(value(text, "gpuprobe_gpu_power_watts", gpu="0"), GPU0["power"] / 1000, "power still there")
        eq(value(text, "gpuprobe_gpu_memory_used_bytes", gpu="0"), GPU0["memused"] + GPU0["memreserved"],
           "no nvmlDeviceGetMemoryInfo_v2: v1's used, the reserve in it")
        missing = [l for l in nvml_lines(d) if "lacks" in l]
        eq(len(missing), 1, f"one line for the missing functions: {nvml_lines(d)}")
        for fn in ("nvmlDeviceGetProcessUtilization", "nvmlDeviceGetTotalEnergyConsumption", "nvmlEventSetCreate"):
            check(fn in missing[0], f"{fn} in {missing[0]!r}")
        stop(d)
    finally:
        d.kill()
        for p in procs:
            p.kill()
            p.wait()
        os.unlink(path)


def test_failing_calls_counted_once_told():
    """A failing call: counted each read, told once, its figure absent. NOT_SUPPORTED from a
    health call (ECC off, no row remapper, no NVLink) is no failure: no figure, no count."""
    path = script([gpu_line(0, **GPU0), "fail nvmlDeviceGetPowerUsage 3", "fail nvmlDeviceGetTemperature 15",
                   "fail nvmlDeviceGetTotalEccErrors 15", "fail nvmlDeviceGetRemappedRows 3"])
    d = start_daemon(modes=("--memleak",), extra=("--nvml-interval", "0.2"), env=nvml_env(path))
    try:
        wait_value(d.port, "gpuprobe_nvml_state", 1, state="loaded")
        deadline = time.time() + 10
        while time.time() < deadline:
            text = get(d.port)[1]
            if (value(text, "gpuprobe_nvml_errors_total", function="nvmlDeviceGetPowerUsage") or 0) >= 3:
                break
            time.sleep(0.2)
        reads = value(text, "gpuprobe_nvml_reads_total")
        power = value(text, "gpuprobe_nvml_errors_total", function="nvmlDeviceGetPowerUsage")
        check(power >= 3 and abs(power - reads) <= 1, f"one failure a read: {power} failures, {reads} reads")
        check(value(text, "gpuprobe_nvml_errors_total", function="nvmlDeviceGetTemperature") >= 3, "temperature failures")
        eq(value(text, "gpuprobe_gpu_power_watts"), None, "no power sample")
        eq(value(text, "gpuprobe_gpu_temperature_celsius"), None, "no temperature sample")
        eq(value(text, "gpuprobe_gpu_utilization_ratio", gpu="0"), GPU0["util"] / 100, "the rest is there")
        check(value(text, "gpuprobe_nvml_errors_total", function="nvmlDeviceGetTotalEccErrors") >= 3, "ECC failures")
        eq(value(text, "gpuprobe_nvml_errors_total", function="nvmlDeviceGetRemappedRows"), 0, "NOT_SUPPORTED: no error")
        eq((value(text, "gpuprobe_gpu_ecc_errors_total"), value(text, "gpuprobe_gpu_remapped_rows")), (None, None),
           "no ECC, no remapped rows (never 0)")
        eq(value(text, "gpuprobe_gpu_nvlink_bytes_total", direction="tx"), nums("nvlink")[0] * 1024, "NVLink still read")
        lines = nvml_lines(d)
        pw = [l for l in lines if "nvmlDeviceGetPowerUsage failed" in l]
        tp = [l for l in lines if "nvmlDeviceGetTemperature failed" in l]
        eq((len(pw), len(tp)), (1, 1), f"each failure told once: {lines}")
        check("Not Supported" in pw[0] and "GPU is lost" in tp[0], f"NVML's errors named: {pw + tp}")
        stop(d)
    finally:
        d.kill()
        os.unlink(path)


def test_init_failure():
    path = script([gpu_line(0, **GPU0), "init_fail 9"])
    d = start_daemon(modes=("--memleak",), env=nvml_env(path))
    try:
        wait_value(d.port, "gpuprobe_nvml_state", 1, state="init_failed")
        lines = nvml_lines(d)
        eq(len(lines), 1, f"one line: {lines}")
        check(lines[0].startswith("<4>") and "nvmlInit_v2" in lines[0] and "Driver Not Loaded" in lines[0], lines[0])
        memleak_counts(d)
        stop(d)
    finally:
        d.kill()
        os.unlink(path)


def test_cli_report_beside_outstanding_bytes():
    """gpuprobe -p PID --memleak --nvml: the process's NVML figures in the text and JSON
    reports, the driver's memory beside the outstanding bytes the workload says it holds."""
    for fmt in ("json", "text"):
        held = gp.Background([MEMLEAK, "--wait", "--allocs", "10", "--leaks", "3", "--hold"], env=ENV)
        path = None
        g = None
        try:
            held.wait_for("READY")
            drv = 64 << 20
            path = script([gpu_line(0, **GPU0), f"proc 0 {held.pid} mem={drv} sm=88 memutil=30", "proc 0 1 mem=5",
                           "xid 0 48 300"])
            args = ["-p", str(held.pid), "--memleak", "--nvml", "-d", "3"] + (["--json"] if fmt == "json" else [])
            g = gp.Background([gp.GPUPROBE] + args, env=gp._with_state(nvml_env(path)))
            g.wait_for("gpuprobe: tracing", where="stderr")
            held.signal(signal.SIGUSR1)
            held.wait_for("HELD")
            t = truth(held.stderr())
            eq(g.wait(timeout=30), 0, f"gpuprobe's exit ({g.stderr()[-500:]})")
            out = g.stdout()
            if fmt == "json":
                recs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
                nv = [r for r in recs if r.get("mode") == "nvml" and r.get("report") == "final"]
                eq(len(nv), 1, "one final nvml record")
                r = nv[0]
                eq(r["state"], "loaded", "state")
                eq(r["gpus"][0]["power_watts"], GPU0["power"] / 1000, "power")
                eq(r["gpus"][0]["memory_used_bytes"], GPU0["memused"], "GPU memory used")
                eq(r["gpus"][0]["xid_errors"], 1, "XID counted")
                g0 = r["gpus"][0]
                eq([g0[k] for k in ("ecc_corrected", "ecc_uncorrected", "ecc_corrected_lifetime", "ecc_uncorrected_lifetime")],
                   nums("ecc"), "ECC counts")
                eq([g0["nvlink_tx_bytes"], g0["nvlink_rx_bytes"]], [v * 1024 for v in nums("nvlink")], "NVLink")
                eq([g0["remapped_rows_corrected"], g0["remapped_rows_uncorrected"], g0["row_remap_pending"],
                    g0["row_remap_failed"]], [7, 2, True, False], "remapped rows")
                eq([g0["retired_pages_single_bit"], g0["retired_pages_double_bit"]], nums("retired"), "retired pages")
                eq(r["untraced_processes"], 1, "PID 1 is not traced: counted, not listed")
                eq(len(r["processes"]), 1, "the traced process")
                p = r["processes"][0]
                eq((p["pid"], p["comm"]), (held.pid, "memleak_app"), "pid and comm")
                eq(p["driver_memory_bytes"], drv, "driver memory")
                eq(p["outstanding_device_bytes"], t["leaked_bytes"], "gpuprobe's outstanding bytes")
                eq((p["sm_utilization_pct"], p["memory_utilization_pct"]), (88, 30), "utilization")
                eq([x["xid"] for x in r["xid_events"]], [48], "the XID event")
                check(held.pid in r["xid_events"][0]["pids"], "the traced process was on the GPU at the XID")
                eq(r["xid_events"][0]["traced"], [{"pid": held.pid, "comm": "memleak_app"}], "the traced one named")
            else:
                line = [l for l in out.splitlines() if l.startswith(f"  PID {held.pid} (memleak_app) on GPU 0:")]
                eq(len(line), 1, f"the process's NVML line in:\n{out}")
                check("SM 88 %, memory 30 %" in line[0], line[0])
                check("driver-accounted memory 64.0 MiB (67,108,864 B)" in line[0], line[0])
                check(f"outstanding device bytes 3.01 MiB ({t['leaked_bytes']:,} B)" in line[0], line[0])
                xl = [l for l in out.splitlines() if l.startswith("  XID 48 on GPU 0 at ")]
                eq(len(xl), 1, f"the XID line in:\n{out}")
                check(f" {held.pid} (memleak_app)" in xl[0] and xl[0].endswith(" 1"), f"its processes, the traced one named: {xl[0]}")
                check("1 process on the GPUs that this run does not trace" in out, out)
                check("ECC errors 3 corrected, 1 uncorrected (lifetime 40, 2)" in out, out)
                check("rows remapped 7 corrected, 2 uncorrected, a remap pending (reset the GPU)" in out, out)
                check("pages retired 5 (single-bit) 1 (double-bit)" in out, out)
        finally:
            if g:
                g.kill()
            held.kill()
            if path:
                os.unlink(path)


def test_cli_followed_process_without_calls_listed():
    """A -p target that made no call the modes watch since the attach is still traced: its
    NVML line is listed (found on the H200: a matmul loop attached with --memleak made no
    allocation after the attach and was counted among the untraced processes)."""
    held = gp.Background([MEMLEAK, "--wait", "--allocs", "10", "--leaks", "3", "--hold"], env=ENV)
    path = None
    g = None
    try:
        held.wait_for("READY")
        path = script([gpu_line(0, **GPU0), f"proc 0 {held.pid} mem={32 << 20} sm=55 memutil=10", "proc 0 1 mem=5"])
        g = gp.Background([gp.GPUPROBE, "-p", str(held.pid), "--memleak", "--nvml", "--json", "-d", "2"],
                          env=gp._with_state(nvml_env(path)))
        eq(g.wait(timeout=30), 0, f"gpuprobe's exit ({g.stderr()[-500:]})")
        recs = [json.loads(l) for l in g.stdout().splitlines() if l.startswith("{")]
        nv = [r for r in recs if r.get("mode") == "nvml" and r.get("report") == "final"]
        eq(len(nv), 1, "one final nvml record")
        eq(nv[0]["untraced_processes"], 1, "only PID 1 untraced")
        eq([(p["pid"], p["comm"]) for p in nv[0]["processes"]], [(held.pid, "memleak_app")], "the -p target listed")
        eq(nv[0]["processes"][0]["driver_memory_bytes"], 32 << 20, "its driver memory")
    finally:
        if g:
            g.kill()
        held.kill()
        if path:
            os.unlink(path)


def test_daemon_comm_filter():
    """--comm NAME: the process series of the processes the daemon follows only; the GPU's
    figures whatever runs on it."""
    procs = sleepers(1)
    other = subprocess.Popen(["tail", "-f", "/dev/null"], start_new_session=True)
    path = script([gpu_line(0, **GPU0), f"proc 0 {procs[0].pid} mem=8192 sm=40", f"proc 0 {other.pid} mem=4096 sm=30"])
    d = start_daemon(modes=("--memleak",), extra=("--comm", "sleep"), env=nvml_env(path))
    try:
        wait_value(d.port, "gpuprobe_process_gpu_memory_bytes", 8192, pid=str(procs[0].pid))
        text = get(d.port)[1]
        eq(value(text, "gpuprobe_process_gpu_memory_bytes", pid=str(other.pid)), None, "tail is not followed")
        eq(value(text, "gpuprobe_gpu_utilization_ratio", gpu="0"), GPU0["util"] / 100, "the GPU's figures")
        stop(d)
    finally:
        d.kill()
        for p in procs + [other]:
            p.kill()
            p.wait()
        os.unlink(path)


def test_trace_xid_instant():
    """--trace with --nvml: an XID is an instant event on the track of each traced process
    that was on the GPU, at the time it arrived (between the calls before and after it)."""
    held = gp.Background([MEMLEAK, "--wait", "--allocs", "10", "--leaks", "3", "--hold"], env=ENV)
    path = trace = g = None
    try:
        held.wait_for("READY")
        path = script([gpu_line(0, util=50), f"proc 0 {held.pid} mem=4096 sm=20", "xid 0 31 3000"])
        trace = tempfile.mktemp(prefix="gp-nvml-trace-", suffix=".jsonl")
        g = gp.Background([gp.GPUPROBE, "-p", str(held.pid), "--trace", trace, "--nvml", "-d", "5"],
                          env=gp._with_state(nvml_env(path)))
        g.wait_for("gpuprobe: tracing", where="stderr")
        held.signal(signal.SIGUSR1)
        held.wait_for("HELD")
        eq(g.wait(timeout=30), 0, f"gpuprobe's exit ({g.stderr()[-500:]})")
        recs = [json.loads(l) for l in open(trace) if l.startswith("{")]
        x = [r for r in recs if r.get("type") == "instant" and r.get("name") == "XID"]
        eq(len(x), 1, f"one XID instant: {x}")
        eq((x[0]["pid"], x[0]["args"]["xid"], x[0]["args"]["gpu"]), (held.pid, 31, 0), "its process, code and GPU")
        calls = [r["ts_ns"] for r in recs if r.get("type") == "call" and r.get("pid") == held.pid]
        check(calls and x[0]["ts_ns"] > max(calls), "after the calls (made before the XID was due)")
    finally:
        if g:
            g.kill()
        held.kill()
        for f in (path, trace):
            if f and os.path.exists(f):
                os.unlink(f)


TOP_THROTTLE = {0x1: "idle", 0x2: "app_clocks", 0x4: "sw_power", 0x8: "hw_slowdown", 0x10: "sync_boost",
                0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "power_brake", 0x100: "display"}


def top_frames(pids, env, extra=(), n=4, signal_apps=()):
    """gpuprobe top --batch -p PIDS: its frames; the apps signalled once top is attached
    (their allocations make their rows)."""
    g = gp.Background([gp.GPUPROBE, "top", "--batch", "-n", str(n), "-i", "1", "--libcuda", gp.FAKECUDA,
                       "-p", ",".join(str(p) for p in pids)] + list(extra), env=gp._with_state(env))
    try:
        # the apps allocate once top's first frame is out (it attaches before it draws): a
        # fixed 1.5 s was shorter than an attach under emulation (6.12 VM: 0 processes)
        deadline = time.time() + 30
        while "gpuprobe top" not in g.stdout() and time.time() < deadline and g.p.poll() is None:
            time.sleep(0.1)
        for a in signal_apps:
            a.signal(signal.SIGUSR1)
            a.wait_for("HELD")
        eq(g.wait(timeout=40), 0, f"top's exit ({g.stderr()[-500:]})")
        return [f for f in g.stdout().split("\n\n") if f.strip()], g.stderr()
    finally:
        g.kill()


def top_row(frame, pid):
    rows = [l.split() for l in frame.splitlines() if l.split()[:1] == [str(pid)]]
    eq(len(rows), 1, f"one row of PID {pid} in:\n{frame}")
    return rows[0]


def test_top_sm_column_and_gpu_lines():
    """gpuprobe top reads NVML by default: an SM% column (the stand-in's scripted sample;
    "-" on a MIG GPU, never 0, and the detail says why) and a line per GPU with its
    scripted figures; every line within 80 columns, COMM at least 10 wide."""
    apps = [gp.Background([MEMLEAK, "--wait", "--allocs", "10", "--leaks", "3", "--hold"], env=ENV) for _ in range(2)]
    path = None
    try:
        for a in apps:
            a.wait_for("READY")
        a, b = apps
        path = script([gpu_line(0, **GPU0), gpu_line(1, uuid="GPU-test-1", mig=1, util=5, memused=1 << 20,
                                                     memtotal=80 << 30, power=70000, temp=33),
                       f"proc 0 {a.pid} mem={64 << 20} sm=37 memutil=9", f"proc 1 {b.pid} mem=4096"])
        frames, err = top_frames([a.pid, b.pid], nvml_env(path), extra=["--sort", "sm", "--reverse"],
                                 signal_apps=apps)
        last = frames[-1]
        lines = last.splitlines()
        check(all(len(l) <= 80 for l in lines), f"80 columns:\n{last}")
        header = [l for l in lines if l.split()[:1] == ["PID"]][0]
        eq(header.split()[-1], "SM%", "the SM% column, last")
        check(header.index("COMM") + 10 <= header.index("LAUNCH/s"), f"COMM 10 wide at least: {header}")
        eq(top_row(last, a.pid)[-1], f"{37}%", "the scripted sample of process A")
        eq(top_row(last, b.pid)[-1], "-", "process B on the MIG GPU: no figure, never 0")
        g0 = [l for l in lines if l.startswith("GPU0 ")]
        g1 = [l for l in lines if l.startswith("GPU1 ")]
        eq((len(g0), len(g1)), (1, 1), f"a line per GPU:\n{last}")
        thr = ",".join(v for k, v in sorted(TOP_THROTTLE.items()) if GPU0["throttle"] & k)
        for want in (f"util {GPU0['util']}%", f"{GPU0['power'] / 1000:.0f} W", f"{GPU0['temp']} C", f"throttle {thr}"):
            check(want in g0[0], f"{want!r} in {g0[0]!r}")
        check(g1[0].startswith("GPU1 (MIG: no per-process SM%) util 5%"), g1[0])
        check(f"PID {b.pid} memleak_app" in last and "SM % not available on MIG (GPU 1)" in last.replace("\n    ", " "),
              f"the detail says why:\n{last}")
        check("SM 37 % (NVML)" in last.replace("\n    ", " "), f"A's detail:\n{last}")
        # --sort sm --reverse: B (no figure) above A (37 %); A started first, so the
        # order is not the ties' PID order
        rows = [l.split()[0] for l in lines if l.split()[:1] in ([str(a.pid)], [str(b.pid)])]
        eq(rows, [str(b.pid), str(a.pid)], "--sort sm --reverse: the least busy first")
    finally:
        for x in apps:
            x.kill()
        if path:
            os.unlink(path)


def test_top_without_library():
    """top without the driver's library: as before (no SM% column, no GPU line, no
    warning) unless --nvml asks for it, then one line says why and SM% is "-"."""
    held = gp.Background([MEMLEAK, "--wait", "--allocs", "10", "--leaks", "3", "--hold"], env=ENV)
    try:
        held.wait_for("READY")
        env = {"LD_LIBRARY_PATH": gp.FAKECUDA_DIR}
        frames, err = top_frames([held.pid], env, n=2)
        check("SM%" not in frames[-1] and "GPU0" not in frames[-1] and "NVML" not in frames[-1], frames[-1])
        check("warning" not in err.lower(), f"no warning by default: {err}")
        frames, err = top_frames([held.pid], env, extra=["--nvml"], n=3, signal_apps=[held])
        check("NVML not used (no_library): cannot load libnvidia-ml.so.1" in frames[-1], frames[-1])
        eq(top_row(frames[-1], held.pid)[-1], "-", "no figure: '-'")
    finally:
        held.kill()


if __name__ == "__main__":
    gp.main([
        test_daemon_scrape_every_figure,
        test_daemon_without_library,
        test_daemon_no_nvml,
        test_old_library_missing_functions,
        test_failing_calls_counted_once_told,
        test_init_failure,
        test_cli_report_beside_outstanding_bytes,
        test_cli_followed_process_without_calls_listed,
        test_trace_xid_instant,
        test_daemon_comm_filter,
        test_top_sm_column_and_gpu_lines,
        test_top_without_library,
    ])
