#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# --nvml on the real GPU (issue 33), run from the repo root with `make bundle` carried: NVML is
# dlopen()ed, so the dynamically linked build (.output/bundle/dyn/run) is used — static glibc
# cannot host the driver's library. A CUDA C matmul loop and a PyTorch matmul loop run together
# on GPU 0 while the daemon is scraped once a second for 5 s, `nvidia-smi pmon -c 5 -s um` and
# `nvidia-smi --query-compute-apps` / `--query-gpu` taken at the same time; check_nvml.py
# compares them. `gpuprobe top --batch` (NVML by default: its SM% column and GPU line) runs over
# the same 5 s, and the daemon's NVML thread ("gpuprobe-nvml") is timed from its schedstat over
# them (CPU per read round). Then the CLI: -p PID --memleak --nvml --json on the matmul. Under
# 2 minutes.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/dyn/run
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$RESULTS/nvml
PORT=${GPUPROBE_PORT:-19465}
mkdir -p "$O" "$W"
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/card.txt
nvcc -O2 -gencode arch=compute_90,code=sm_90 -o $W/nvml_matmul tests/gpu/nvml_matmul.cu || exit 1
scrape() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$PORT$1', timeout=10).read().decode())"; }

$GP daemon --memleak --cudatrace --per-process-series --listen 127.0.0.1:$PORT 2>$O/daemon.err &
gp=$!
for i in $(seq 150); do grep -q "listening on" $O/daemon.err && break; sleep 0.1; done
cat $O/daemon.err

CUDA_VISIBLE_DEVICES=0 $W/nvml_matmul --seconds 40 2>$O/matmul.err >$O/matmul.out &
mm=$!
CUDA_VISIBLE_DEVICES=0 timeout 60 $PY -c '
import os, sys, time, torch
a = torch.randn(8192, 8192, device="cuda"); b = torch.randn(8192, 8192, device="cuda")
print("{\"pid\": %d}" % os.getpid(), file=sys.stderr, flush=True)
end = time.time() + 40
while time.time() < end:
    c = a @ b
    torch.cuda.synchronize()
    time.sleep(0.002)
' 2>$O/torch.err &
py=$!
sleep 12 # both at steady state, a few NVML reads in
nvidia-smi pmon -c 5 -s um > $O/pmon.txt 2>&1 &
pm=$!
$GP top --batch -n 6 -i 1 --width 160 > $O/top.txt 2>$O/top.err &
tp=$!
tid=$(for t in /proc/$gp/task/*; do [ "$(cat $t/comm)" = gpuprobe-nvml ] && basename $t; done)
echo "nvml thread $tid" > $O/nvml_thread.txt
cat /proc/$gp/task/$tid/schedstat >> $O/nvml_thread.txt
for i in 1 2 3 4 5; do
	scrape /metrics > $O/metrics.$i.txt
	nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits > $O/apps.$i.csv
	nvidia-smi -i 0 --query-gpu=utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.mem --format=csv,noheader,nounits > $O/gpu.$i.csv
	sleep 1
done
cat /proc/$gp/task/$tid/schedstat >> $O/nvml_thread.txt
wait $pm $tp
# the health figures gpuprobe reads (ECC, remapped rows / retired pages, NVLink) as nvidia-smi shows them
nvidia-smi -i 0 -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT > $O/health.txt 2>&1
nvidia-smi nvlink -i 0 -gt d > $O/nvlink.txt 2>&1
echo "== CLI: gpuprobe -p $mm --memleak --nvml --json -d 4"
$GP -p $mm --memleak --nvml --json -d 4 > $O/cli.jsonl 2>$O/cli.err
echo "exit $?"; cat $O/cli.err
wait $mm $py
kill -TERM $gp; wait $gp
echo "daemon exit $?"
grep nvml $O/daemon.err
python3 tests/gpu/check_nvml.py $O
