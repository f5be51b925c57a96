#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# gpuprobe's overhead inside one process on the GPU machine (issue 16): bench/gpu/inproc.py
# (its header says how). Nothing is built on the GPU machine: on the build host run
#     make bundle && bench/gpu/inproc.sh --build
# (a static gpuprobe in .output/bundle, launch_inproc from cuda.h and the toolkit's stub into
# .output/bench/gpu, and bpftool with its libraries for bench/gpu/runcounts.sh), carry the
# tree with .output/bundle and .output/bench/gpu, then there:
#     bench/gpu/inproc.sh
# (about 5 minutes of GPU time), or issue 29's budget patterns (budget_rate.cu's, one workload
# each; inproc.py's header), about 8 minutes at 85 s a pattern:
#     bench/gpu/inproc.sh --workloads patterns --configs three_budget --lead 1.0 --pattern-cap 85
# Whether a pattern's slowdown is under P (the interval's upper end: inproc.md says so per
# pattern, and how many windows at its spread would show it): a window's mean wanders by 2-3 %
# on the H200 at any window length, so only more windows narrow it, ~12 s a round (7-9 s of it
# the last gpuprobe's uprobe events going, which the next one waits for: docs/design.md, "The
# budget's armed uprobe events"); one pattern a device call, 43-53 windows in 9 minutes:
#     bench/gpu/inproc.sh --workloads launch-tight --configs three_budget --lead 1.0 --pattern-cap 520 --min-pairs 200
# Writes $OUT (else /tmp/gp-inproc): inproc.md (the tables),
# inproc_raw.json, logs.tgz. Copy inproc.md to bench/gpu/results-inproc-<gpu>.md to keep it.
# GPU_INPROC_MOCK=1 bench/gpu/inproc.sh runs the plumbing here on the stand-in driver.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
BIN=$ROOT/.output/bench/gpu
die() {
	echo "bench/gpu/inproc: error: $*" >&2
	exit 1
}

if [ "${1:-}" = --build ]; then
	mkdir -p "$BIN" || die "cannot create $BIN"
	CUDA=${CUDA_HOME:-/usr/local/cuda}
	[ -f "$CUDA/include/cuda.h" ] || die "no $CUDA/include/cuda.h (set CUDA_HOME)"
	gcc -O2 -Wall -Wextra -Werror -I"$CUDA/include" -o "$BIN/launch_inproc" bench/gpu/launch_inproc.c \
		-L"$CUDA/lib64/stubs" -lcuda -lpthread || die "cannot build launch_inproc"
	echo "built $BIN/launch_inproc"
	# link churn alone, in gpuprobe's place (its header says how)
	gcc -O2 -Wall -Wextra -Werror -static -Isrc -o "$BIN/linkchurn" bench/gpu/linkchurn.c \
		src/lib/procmaps.c src/lib/safeopen.c -lbpf -lelf -lz -lzstd ||
		die "cannot build linkchurn"
	echo "built $BIN/linkchurn"
	# the machine's own slowdowns, beside the workload (inproc.py --canary)
	gcc -O2 -Wall -Wextra -Werror -static -o "$BIN/canary" bench/gpu/canary.c -lpthread || die "cannot build canary"
	echo "built $BIN/canary"
	# bpftool and the libraries it needs beyond libc, for bench/gpu/runcounts.sh there
	BT=$(command -v bpftool) || die "no bpftool here (apt-get install bpftool)"
	mkdir -p "$BIN/bpftool" && cp "$BT" "$BIN/bpftool/" || die "cannot copy $BT"
	for lib in $(ldd "$BT" | awk '$3 ~ /^\// && $1 !~ /^(libc\.so|ld-linux)/ {print $3}'); do
		cp -L "$lib" "$BIN/bpftool/" || die "cannot copy $lib"
	done
	echo "copied $BT and its libraries into $BIN/bpftool"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "needs root (BPF)"
[ -x "$BIN/launch_inproc" ] || die "no $BIN/launch_inproc: run bench/gpu/inproc.sh --build on the build host and carry .output/bench/gpu"
OUTDIR=${OUT:-/tmp/gp-inproc}
if [ "${GPU_INPROC_MOCK:-0}" = 1 ]; then
	# make bench's copy of the stand-in: a name node-wide tracers on this host do not look for
	[ -e "$ROOT/.output/bench/lib/libcuda.so.1" ] || die "mock runs need .output/bench (make bench, or python3 bench/run.py --only sampling)"
	export LD_LIBRARY_PATH=$ROOT/.output/bench/lib FAKECUDA_KERNEL_NS=0 FAKECUDA_TEARDOWN_MS=0
	exec python3 bench/gpu/inproc.py --mock --gp "$ROOT/.output/gpuprobe" --libcuda "$ROOT/.output/bench/fakecuda_bench.so.1" \
		--launch-bin "$BIN/launch_inproc" --out "$OUTDIR" "$@"
fi
GP=${GP:-$ROOT/.output/bundle/gpuprobe}
[ -x "$GP" ] || die "no gpuprobe at $GP: run 'make bundle' on the build host and carry .output/bundle"
PY=python3
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
PY=${GPU_BENCH_PYTHON:-$PY}
# PyTorch is looked for only where a workload needs it (torch and profiler, the default run's)
WL=launch,torch,profiler
for ((i = 1; i <= $#; i++)); do
	case ${!i} in
	--workloads) j=$((i + 1)) && WL=${!j:-} ;;
	--workloads=*) WL=${!i#*=} ;;
	esac
done
if [[ ,$WL, =~ ,(torch|profiler), ]]; then
	"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || die "$PY: no PyTorch with a GPU"
fi
CANARY=()
[ -x "$BIN/canary" ] && CANARY=(--canary "$BIN/canary")
exec python3 bench/gpu/inproc.py --gp "$GP" --launch-bin "$BIN/launch_inproc" --python "$PY" --out "$OUTDIR" "${CANARY[@]}" "$@"
