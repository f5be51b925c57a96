#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gpuprobe daemon on the real GPU (run from the repo root with the device tool, `make
# bundle` carried): the daemon starts first (every mode, --per-process-series so each
# program's series can be told apart by pid), then CUDA C programs built here
# with nvcc (memleak, launch, copy) and a PyTorch script run; /metrics is scraped while
# their series are retained and compared with each program's ground truth
# (check_daemon.py); --ioctl's series of the CUDA C programs are printed with the share
# decoded (no exact expectation). Under 3 minutes.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-daemon
PORT=${GPUPROBE_PORT:-19464}
mkdir -p "$O" "$W" "$RESULTS"
status=0
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
nvcc -g -Xcompiler -fno-omit-frame-pointer -o $W/memleak_static tests/gpu/memleak_cuda.cu || exit 1
nvcc -g -Xcompiler -fno-omit-frame-pointer -o $W/launch_static tests/gpu/launch_cuda.cu || exit 1
nvcc -O2 -std=c++17 -o $W/copy_static tests/gpu/copy_cuda.cu || exit 1

scrape() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$PORT$1', timeout=10).read().decode())"; }

echo "== gpuprobe check"
$GP check | tee $O/check.txt
echo "exit ${PIPESTATUS[0]}"

echo "== gpuprobe daemon --memleak --cudatrace --bandwidth-util --ioctl --per-process-series --listen 127.0.0.1:$PORT"
$GP daemon --memleak --cudatrace --bandwidth-util --ioctl --per-process-series --listen 127.0.0.1:$PORT --retention 600 --rescan-interval 1 2>$O/daemon.err &
gp=$!
for i in $(seq 100); do grep -q "listening on" $O/daemon.err && break; sleep 0.1; done
cat $O/daemon.err
[ "$(scrape /healthz)" = ok ] || { echo "FAIL: /healthz"; status=1; }

for prog in memleak launch copy; do
	echo "== $prog: ${prog}_static (started after the daemon)"
	$W/${prog}_static 2>$O/$prog.err >/dev/null
	echo "exit $?"
done
echo "== torch: $PY tests/gpu/launch_torch.py"
timeout 120 $PY tests/gpu/launch_torch.py 2>$O/torch.err >/dev/null
echo "exit $?"
sleep 2 # one housekeeping round; the exit records are in
scrape /metrics >/dev/null # a series is first served at zero (docs/metrics.md)
scrape /metrics >$O/metrics.txt
echo "scraped $(wc -l <$O/metrics.txt) lines"
command -v promtool >/dev/null && { promtool check metrics <$O/metrics.txt && echo "promtool: ok" || status=1; }
python3 tests/gpu/check_daemon.py memleak $O/memleak.err $O/metrics.txt || status=1
python3 tests/gpu/check_daemon.py launch $O/launch.err $O/metrics.txt || status=1
python3 tests/gpu/check_daemon.py torch $O/torch.err $O/metrics.txt || status=1
python3 tests/gpu/check_daemon.py bandwidth $O/copy.err $O/metrics.txt || status=1
for prog in memleak launch; do
	echo "== ioctl series of ${prog}_static"
	python3 tests/gpu/check_daemon.py ioctl $O/$prog.err $O/metrics.txt || status=1
done
grep -E '^gpuprobe_(events_dropped_total|libcuda_files|probes_attached|probe_hit_cost|cuda_memcpy_small|tracked_processes|series|build_info)' $O/metrics.txt

kill -TERM $gp
wait $gp
rc=$?
echo "daemon exit $rc after SIGTERM"; [ $rc = 0 ] || status=1
tail -3 $O/daemon.err
cp $O/metrics.txt "$RESULTS/daemon-metrics.txt" 2>/dev/null
tar czf "$RESULTS/gpu-daemon.tgz" -C "$W" out-daemon
echo "== overall daemon: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
