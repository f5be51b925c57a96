#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# How often each BPF program runs while gpuprobe is attached, and its mean run time: the
# kernel's BPF statistics (kernel.bpf_stats_enabled, on for the measure and set back after),
# read with bpftool twice, SECONDS apart, from the 2nd second of a gpuprobe run. Compare with
# what gpuprobe counts (the budget's hits and strays with -vv, the overhead line's probe
# hits): a program that runs more often than the modes count is a probe whose cost nothing
# prices. That is how the per-launch naming calls of cuBLAS were found on the H200
# (bench/gpu/results-inproc-h200.md, 2026-11-23).
#     bench/gpu/runcounts.sh [--seconds S] -- GPUPROBE [ARGS...]   (ARGS with -p PID and a --duration)
# On the GPU machine it uses the bpftool that `bench/gpu/inproc.sh --build` copies (with its
# libraries) into .output/bench/gpu/bpftool; elsewhere $BPFTOOL or the system's.
set -u
cd "$(dirname "$0")/../.." || exit 1
die() {
	echo "bench/gpu/runcounts: error: $*" >&2
	exit 1
}
SECS=1
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECS=${2:?}; shift 2 ;;
	--) shift; break ;;
	*) die "unknown option $1 (usage: runcounts.sh [--seconds S] -- GPUPROBE ARGS...)" ;;
	esac
done
[ $# -gt 0 ] || die "no gpuprobe command after --"
[ "$(id -u)" = 0 ] || die "needs root (BPF statistics)"
LOCAL=.output/bench/gpu/bpftool
if [ -z "${BPFTOOL:-}" ]; then
	if [ -x "$LOCAL/bpftool" ]; then
		BPFTOOL="env LD_LIBRARY_PATH=$PWD/$LOCAL $PWD/$LOCAL/bpftool"
	else
		BPFTOOL=$(command -v bpftool) || die "no bpftool (set BPFTOOL, or run bench/gpu/inproc.sh --build)"
	fi
fi
OUT=$(mktemp -d) || die "cannot make a temporary folder"
OLD=$(cat /proc/sys/kernel/bpf_stats_enabled) || die "no kernel.bpf_stats_enabled"
trap 'echo "$OLD" > /proc/sys/kernel/bpf_stats_enabled; rm -rf "$OUT"' EXIT
echo 1 > /proc/sys/kernel/bpf_stats_enabled || die "cannot enable BPF statistics"
"$@" > "$OUT/gp.out" 2> "$OUT/gp.err" &
GP=$!
sleep 2
$BPFTOOL prog show --json > "$OUT/a.json" || die "bpftool prog show failed"
T0=$(date +%s%N)
sleep "$SECS"
$BPFTOOL prog show --json > "$OUT/b.json" || die "bpftool prog show failed"
T1=$(date +%s%N)
wait "$GP"
RC=$?
python3 - "$OUT/a.json" "$OUT/b.json" "$T0" "$T1" <<'PY'
import json, sys
a = {p["id"]: p for p in json.load(open(sys.argv[1]))}
b = json.load(open(sys.argv[2]))
secs = (int(sys.argv[4]) - int(sys.argv[3])) / 1e9
rows = []
for p in b:
    q = a.get(p["id"])
    runs = p.get("run_cnt", 0) - (q.get("run_cnt", 0) if q else 0)
    if q and runs > 0:
        ns = p.get("run_time_ns", 0) - q.get("run_time_ns", 0)
        rows.append((runs / secs, p.get("name", "?"), p["id"], ns / runs))
print("%-20s %8s %12s %10s" % ("program", "id", "runs/s", "ns/run"))
for r, name, pid, ns in sorted(rows, reverse=True):
    print("%-20s %8d %12.0f %10.0f" % (name, pid, r, ns))
PY
[ "$RC" = 0 ] || { echo "bench/gpu/runcounts: gpuprobe exited $RC:" >&2; tail -3 "$OUT/gp.err" >&2; exit 1; }
