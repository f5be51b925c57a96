#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Files a traced process names, on the real GPU machine (device tool, `make bundle`
# carried): (1) the real libraries' symbol and string tables against elfsym's caps
# (src/lib/elfsym.h: 64 MiB per symbol table, 128 MiB per string table, 256 MiB per
# file, never more than the file's allocated data), so no real file is refused;
# (2) probes on the real driver through a descriptor (--libcuda /proc/self/fd/9), with
# uprobe_multi and with perf-event uprobes, exact counts from check_memleak.py;
# (3) PyTorch stacks still symbolized through the bounded parser (a named frame in
# libtorch_cuda.so). Prints a table and PASS/FAIL; raw files go to $OUT (or /tmp/gp-gpu).
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-files
O=$W/out
mkdir -p "$O" "$RESULTS"
status=0
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
LC=/usr/local/nvidia/lib64/libcuda.so.1

echo "== (1) table sizes against the caps"
TORCH=$($PY -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
files="$LC /usr/local/cuda/compat/libcuda.so.1"
[ -n "$TORCH" ] && files="$files $(ls $TORCH/lib/*.so* 2>/dev/null)"
[ -n "$TORCH" ] && files="$files $(find $(dirname $(dirname $TORCH))/nvidia -name '*.so*' 2>/dev/null)"
files="$files $(readlink -f $PY) /lib/x86_64-linux-gnu/libnccl.so.2"
python3 - $files <<'PY' | tee $O/tables.txt
import os, struct, sys
MiB = 1 << 20
print(f"{'file':44} {'.symtab':>10} {'.strtab':>10} {'.dynsym':>10} {'.dynstr':>10} {'read':>11} {'data':>11} verdict")
for f in sys.argv[1:]:
    try:
        b = open(f, "rb").read()
    except OSError:
        continue
    if b[:4] != b"\x7fELF" or b[4] != 2:
        continue
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3a)
    sh = [struct.unpack_from("<IIQQQQII", b, shoff + i * shentsize) for i in range(shnum)]
    size = {}
    for name_, typ, _, _, _, sz, link, _ in sh:
        if typ in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM: elfsym reads it and its string table
            k = ".symtab" if typ == 2 else ".dynsym"
            size[k] = sz
            size[".strtab" if typ == 2 else ".dynstr"] = sh[link][5]
    read = sum(size.values()) + shnum * shentsize
    data = os.stat(f).st_blocks * 512
    v = "ok"
    if max(size.get(".symtab", 0), size.get(".dynsym", 0)) > 64 * MiB: v = "OVER symbol-table cap"
    if max(size.get(".strtab", 0), size.get(".dynstr", 0)) > 128 * MiB: v = "OVER string-table cap"
    if read > 256 * MiB: v = "OVER per-file cap"
    if read > data + 65536: v = "OVER the file's data"
    print(f"{os.path.basename(f):44} " + " ".join(f"{size.get(k, 0):10d}" for k in (".symtab", ".strtab", ".dynsym", ".dynstr")) + f" {read:11d} {data:11d} {v}")
PY
grep -q OVER $O/tables.txt && status=1

echo "== (2) probes through a descriptor on the real driver"
nvcc -g -Xcompiler -fno-omit-frame-pointer -o $W/memleak_static tests/gpu/memleak_cuda.cu || exit 1
for multi in 0 1; do
	echo "-- GPUPROBE_NO_UPROBE_MULTI=$multi: --libcuda /proc/self/fd/9"
	GPUPROBE_NO_UPROBE_MULTI=$multi $GP -o $O/fd_$multi.jsonl --memleak --json --show-allocs --libcuda /proc/self/fd/9 -- $W/memleak_static \
		9<$LC >$O/fd_$multi.err 2>&1
	echo "exit $?"
	grep "gpuprobe: tracing" $O/fd_$multi.err
	grep -q "probes on /proc/self/fd/" $O/fd_$multi.err || { echo "FAIL: not attached through the descriptor"; status=1; }
	python3 tests/gpu/check_memleak.py cuda $O/fd_$multi.err $O/fd_$multi.jsonl || status=1
done

echo "== (3) PyTorch stacks through the bounded parser"
$GP -o $O/torch.jsonl --memleak --json -- $PY tests/gpu/memleak_torch.py >$O/torch.err 2>&1
echo "exit $?"
python3 - $O/torch.jsonl <<'PY' || status=1
import json, re, sys
frames = set()
for line in open(sys.argv[1]):
    if not line.startswith('{"mode":"memleak"'):
        continue
    for p in json.loads(line).get("processes", []):
        for s in p.get("stacks", []):
            frames.update(s.get("frames", []))
named = sorted(f for f in frames if re.match(r"^[^0].*\+0x[0-9a-f]+ \(libtorch_cuda\.so\)( at .*)?$", f))
print(f"{len(frames)} distinct frames, {len(named)} named in libtorch_cuda.so; e.g. {named[:2]}")
sys.exit(0 if named else "FAIL: no named libtorch_cuda.so frame")
PY
grep -E "claims|larger than" $O/*.err && { echo "FAIL: a real file was refused"; status=1; }
tar czf "$RESULTS/gpu-files.tgz" -C "$W" out
echo "== overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
