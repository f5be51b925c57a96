#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Issue 15 on the GPU machine: run from the bundle folder (make stacks-bundle),
# as root. Builds leak_app with nvcc (cudart static and shared, both without
# frame pointers), then takes stacks at the real libcuda's cuMemAlloc_v2 with
# the test probe (stack copy + DWARF unwind + Python frames) for:
#   1. leak_app (static cudart)   2. leak_app (shared cudart)
#   3. torch_leak.py under the PyTorch venv's python3.12, attached mid-run
# Prints each event's JSON line and a PASS/FAIL line per check; results go to
# $OUT (if set) as gpu-stacks.log.
d=$(cd "$(dirname "$0")" && pwd)
LIBCUDA=${LIBCUDA:-$(readlink -f /usr/local/nvidia/lib64/libcuda.so.1)}
PY=${PY:-/opt/torch/.venv/bin/python}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
log=${OUT:-/tmp}/gpu-stacks.log
export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
fail=0
{
	echo "# $(uname -r); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
	echo "# libcuda $LIBCUDA; python $($PY -c 'import sys,torch;print(sys.version.split()[0], torch.__version__)' 2>&1)"
	cd /tmp || exit 1
	$NVCC -O2 -g -Xcompiler -fomit-frame-pointer -o leak_static "$d/leak_app.cu" || exit 1
	$NVCC -O2 -g -Xcompiler -fomit-frame-pointer -cudart shared -o leak_shared "$d/leak_app.cu" || exit 1
	for app in leak_static leak_shared; do
		echo "## $app"
		"$d/stackprobe" --ready --lib "$LIBCUDA" --func cuMemAlloc_v2 -- ./$app > $app.json 2> $app.err
		cat $app.json $app.err
		if grep '"frames"' $app.json | grep -q 'stacks_leaf.*stacks_middle.*main'; then
			echo "PASS $app: stacks_leaf <- stacks_middle <- main"
		else
			echo "FAIL $app: the leaking functions are not in order"; fail=1
		fi
	done
	echo "## torch_leak.py"
	"$d/stackprobe" --python --lib "$LIBCUDA" --func cuMemAlloc_v2 -- $PY "$d/torch_leak.py" > torch.json 2> torch.err
	cat torch.json torch.err
	for tag in grow layer_weights main; do
		line=$(grep -n "# @$tag\$" "$d/torch_leak.py" | cut -d: -f1)
		if grep '"py"' torch.json | grep -q "torch_leak.py:$line)"; then
			echo "PASS torch: line $line (@$tag) in the Python frames"
		else
			echo "FAIL torch: line $line (@$tag) missing"; fail=1
		fi
	done
	echo "RESULT $([ $fail = 0 ] && echo PASS || echo FAIL)"
} 2>&1 | tee "$log"
grep -q "^RESULT PASS" "$log"
