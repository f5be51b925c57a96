#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Fact-finding on the GPU machine (device tool, `make bundle` carried): where kernel
# names live behind handles, which calls PyTorch makes around CUDA graphs, interpreter
# and library facts for the stack and NCCL work. Prints; writes raw files to $OUT.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
W=/tmp/scout; mkdir -p $W; R=${OUT:-/tmp}
PY=/opt/torch/.venv/bin/python3
LC=/usr/local/nvidia/lib64/libcuda.so.1
echo "== names behind handles"
nvcc -g -o $W/scout_names tests/gpu/scout_names.cu -lcuda && $W/scout_names
echo "== graph calls of PyTorch (--trace)"
$GP --trace $R/graph.jsonl -- $PY tests/gpu/scout_graph_torch.py 2>&1 | tail -3
python3 - $R/graph.jsonl <<'PY'
import json, sys, collections
c = collections.Counter()
for l in open(sys.argv[1]):
    try: r = json.loads(l)
    except Exception: continue
    if r.get("kind") == "call" or "name" in r: c[r.get("name") or r.get("fn")] += 1
for k, v in sorted(c.items()):
    if any(s in str(k) for s in ("Graph", "Capture", "Launch", "Library", "Kernel", "Module", "Func")): print(v, k)
PY
echo "== libcuda graph/capture/name exports"
nm -D --defined-only $LC | grep -E " (cuStream(Begin|End)Capture|cuStreamIsCapturing|cuStreamGetCaptureInfo|cuGraph(Instantiate|Launch|ExecDestroy|AddKernelNode|ExecUpdate|ExecKernelNodeSetParams|KernelNodeSetParams|Destroy|Create|GetNodes|Upload)|cuFuncGetName|cuKernelGetName)" | awk '{print $3}' | tr '\n' ' '; echo
for f in cuStreamBeginCapture_v2 cuStreamEndCapture cuGraphInstantiateWithFlags cuGraphLaunch cuGraphAddKernelNode_v2 cuMemcpyPeerAsync cuFuncGetName; do
  a=$(nm -D --defined-only $LC | awk -v f=$f '$3==f{print $1}'); [ -n "$a" ] && echo "$f: $(objdump -d --start-address=0x$a --stop-address=$((0x$a+8)) $LC | tail -2 | cut -f3 | tr '\n' ';')"
done
echo "== python"
$PY -c 'import sys; print(sys.version, sys.executable)'; readlink -f $($PY -c 'import sys; print(sys.executable)')
P=$(readlink -f /usr/bin/python3.12); nm -D --defined-only $P | grep -E " (Py_Version|_PyRuntime|_PyThreadState_GetCurrent|_Py_tss_tstate|PyThreadState_Get)$"; readelf -S $P | grep -E "PyRuntime|debuglink|symtab"
objdump -d $P --start-address=0x$(nm -D $P | awk '$3=="_PyThreadState_GetCurrent"{print $1}') --stop-address=$((0x$(nm -D $P | awk '$3=="_PyThreadState_GetCurrent"{print $1}')+24)) | tail -4
strings -n 6 $P | grep -m3 -E "^3\.12\.[0-9]+ \("
echo "== nccl"
for L in /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 /lib/x86_64-linux-gnu/libnccl.so.2; do
  echo "$L"; nm -D --defined-only $L | grep -E " p?nccl(AllReduce|Send|CommInitRank|CommInitRankConfig|CommSplit|GroupEnd|GetUniqueId)$"
done
$PY -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())'
nvidia-smi --query-gpu=name,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current --format=csv
ls /sys/bus/pci/devices/ | head -3; for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor)" = 0x10de ] && echo "$d $(cat $d/current_link_speed) x$(cat $d/current_link_width) max $(cat $d/max_link_speed) x$(cat $d/max_link_width) class $(cat $d/class)"; done
