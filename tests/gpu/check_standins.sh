#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# check_standins.sh [--no-probe] [LIBCUDA] [LIBNCCL]: on the GPU machine, how far are the
# stand-ins (tests/fakecuda, tests/fakenccl) from driver 580 and NCCL 2.28?
# Run from the repository root; needs cc, nm, and cuobjdump if there is one.
#   1. every function fakecuda.h declares must be exported by the real libcuda;
#   2. every call fakenccl.h declares: its symbols in the real libnccl.so.2
#      (pnccl* T and nccl* W at one address, as the stand-in has them);
#   3. NCCL's kernels in libnccl.so.2 (cuobjdump, else strings), compared
#      with the stand-in's list (nccl_kernels[] in fakenccl.c): the same set of
#      _Z<len>ncclDevKernel_...24ncclDevKernelArgsStorageILm4096EE;
#   4. tests/gpu/standins_probe.c, built against the real driver: the edge
#      cases the stand-in models from cuda.h's documentation, with the real
#      return codes next to the stand-in's (DIFFERS lines are the news).
# Output: one section per step; record it in docs/validation.md.
set -u
probe=1
if [ "${1:-}" = "--no-probe" ]; then	# steps 1-3 only: no GPU needed (a stub libcuda will do)
	probe=0
	shift
fi
cuda=${1:-$(ldconfig -p 2>/dev/null | sed -n 's/.*libcuda\.so\.1 .*=> //p' | head -n 1)}
nccl=${2:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2}
inc=${CUDA_INC:-/usr/local/cuda/include}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

echo "== 1. fakecuda.h functions missing from $cuda"
nm -D --defined-only "$cuda" | awk '{print $3}' | sort -u > "$tmp/cuda.syms"
sed -n 's/^CUresult \(cu[A-Za-z0-9_]*\)(.*/\1/p' "$root/tests/fakecuda/fakecuda.h" | sort -u > "$tmp/fake.syms"
comm -23 "$tmp/fake.syms" "$tmp/cuda.syms" > "$tmp/missing"
echo "$(wc -l < "$tmp/fake.syms") declared, $(wc -l < "$tmp/missing") missing:"
cat "$tmp/missing"
[ -s "$tmp/missing" ] && status=1

echo "== 2. fakenccl.h calls in $nccl (name, pnccl binding, nccl binding, same address)"
nm -D --defined-only "$nccl" > "$tmp/nccl.nm"
for n in $(sed -n 's/^\(ncclResult_t \|const char \*\)\(nccl[A-Za-z0-9_]*\)(.*/\2/p' \
	"$root/tests/fakenccl/fakenccl.h" | sort -u); do
	p=$(awk -v s="p$n" '$3 == s {print $1, $2}' "$tmp/nccl.nm")
	q=$(awk -v s="$n" '$3 == s {print $1, $2}' "$tmp/nccl.nm")
	pa=${p%% *}
	qa=${q%% *}
	if [ -n "$p" ] && [ "$pa" = "$qa" ] && [ "${p#* }" = T ] && [ "${q#* }" = W ]; then
		echo "$n p:T n:W same"
	else
		echo "$n p:${p#* } n:${q#* } DIFFERENT/MISSING"
		status=1
	fi
done

echo "== 3. NCCL kernel names in $nccl"
if command -v cuobjdump >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/cuobjdump ]; then
	od=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
	"$od" -symbols "$nccl" 2>/dev/null | grep -o '_Z[0-9]*ncclDevKernel_[A-Za-z0-9_]*' | sort -u > "$tmp/kernels"
fi
[ -s "$tmp/kernels" ] || strings -a "$nccl" | grep -o '_Z[0-9]*ncclDevKernel_[A-Za-z0-9_]*' | sort -u > "$tmp/kernels"
# The kernels themselves, not the host-side symbols that refer to them (...EERK24...).
grep -x '_Z[0-9]*ncclDevKernel_[A-Za-z0-9_]*24ncclDevKernelArgsStorageILm4096EE' "$tmp/kernels" |
	grep -v 'EERK24' > "$tmp/real.k"
grep -o '"ncclDevKernel_[A-Za-z0-9_]*"' "$root/tests/fakenccl/fakenccl.c" | tr -d '"' |
	while read -r b; do echo "_Z${#b}${b}24ncclDevKernelArgsStorageILm4096EE"; done |
	sort -u > "$tmp/fake.k"
echo "$(wc -l < "$tmp/real.k") kernels in the library, $(wc -l < "$tmp/fake.k") in the stand-in"
if diff "$tmp/real.k" "$tmp/fake.k" > "$tmp/kdiff"; then
	echo "the same set"
else
	echo "they differ (< library only, > stand-in only):"
	grep '^[<>]' "$tmp/kdiff"
	status=1
fi

if [ "$probe" = 0 ]; then
	exit $status
fi
echo "== 4. standins_probe against the real driver"
# Linked against the toolkit's stub (a driver folder may hold only libcuda.so.1); it runs
# on the driver chosen above, found by its SONAME.
if cc -I"$inc" -o "$tmp/probe" "$here/standins_probe.c" -L"$inc/../lib64/stubs" \
	-L"$inc/../lib/stubs" -L"$(dirname "$cuda")" -lcuda -ldl 2> "$tmp/cc.err"; then
	LD_LIBRARY_PATH="$(dirname "$cuda")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/probe" ||
		status=1
else
	echo "build failed:"
	cat "$tmp/cc.err"
	status=1
fi
exit $status
