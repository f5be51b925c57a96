#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# Checks fakenccl.h against the real nccl.h, when one is installed (it ships
# with the CUDA toolkit's NCCL, or under a PyTorch wheel's nvidia/nccl):
#   1. every prototype in fakenccl.h names a function nccl.h declares;
#   2. every prototype has nccl.h's exact type (both declarations in one
#      translation unit: the compiler rejects a mismatch);
#   3. every enum/#define constant has nccl.h's value, and ncclUniqueId and
#      ncclConfig_t have nccl.h's size, alignment and offsets.
# No nccl.h (or no cuda_runtime.h beside it, which nccl.h includes) means SKIP.
#
# Usage: check_signatures.sh [path/to/nccl.h]   (or NCCL_H=..., CUDA_INC=..., CC=...)
# Exit: 0 pass or skip, 1 mismatch.
set -eu
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
nccl_h=${1:-${NCCL_H:-}}
if [ -z "$nccl_h" ]; then
	for f in /usr/local/cuda/include/nccl.h /usr/include/nccl.h; do
		[ -f "$f" ] && { nccl_h=$f; break; }
	done
fi
cc=${CC:-cc}
cuda_inc=${CUDA_INC:-/usr/local/cuda/include}

if [ -z "$nccl_h" ] || [ ! -f "$nccl_h" ]; then
	echo "SKIP: no nccl.h found; fakenccl.h not checked against it"
	exit 0
fi
if [ ! -f "$cuda_inc/cuda_runtime.h" ]; then
	echo "SKIP: $cuda_inc/cuda_runtime.h (which nccl.h includes) not found"
	exit 0
fi
nccl_inc=$(dirname "$nccl_h")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

names=$(sed -n 's/^\(ncclResult_t \|const char \*\)\(p\{0,1\}nccl[A-Za-z0-9_]*\)(.*/\2/p' \
	"$here/fakenccl.h")
[ -n "$names" ] || { echo "FAIL: no prototypes found in fakenccl.h"; exit 1; }
fail=0
incs="-I$nccl_inc -I$cuda_inc -I$here"

{
	echo '#include <nccl.h>'
	echo '#define FAKENCCL_USE_NCCL_H_TYPES 1'
	echo '#include "fakenccl.h"'
} > "$tmp/proto.c"
if ! $cc -std=gnu11 -Wall -Werror -c $incs -o "$tmp/proto.o" "$tmp/proto.c" 2> "$tmp/err"; then
	echo "FAIL: prototypes differ from nccl.h:"
	grep -E 'error|note' "$tmp/err" | head -40
	fail=1
fi

{
	echo '#include <nccl.h>'
	echo 'void *fakenccl_names[] = {'
	for n in $names; do echo "	(void *)&$n,"; done
	echo '};'
} > "$tmp/exist.c"
if ! $cc -std=gnu11 -Wall -c $incs -o "$tmp/exist.o" "$tmp/exist.c" 2> "$tmp/err"; then
	echo "FAIL: names in fakenccl.h that nccl.h does not declare:"
	grep -o "'p\{0,1\}nccl[A-Za-z0-9_]*' undeclared" "$tmp/err" | sort -u
	fail=1
fi

{
	sed -n 's/^[[:space:]]*\(nccl[A-Z][A-Za-z0-9_]*\)[[:space:]]*=.*/E(\1)/p' "$here/fakenccl.h"
	sed -n 's/^[[:space:]]*\(nccl[A-Z][A-Za-z0-9_]*\) = [0-9]*, \(nccl[A-Z][A-Za-z0-9_]*\) = .*/E(\2)/p' \
		"$here/fakenccl.h"
	sed -n 's/^#define \(NCCL_[A-Z0-9_]*\)[[:space:]][^(]*$/E(\1)/p' "$here/fakenccl.h" |
		grep -v 'NCCL_COMM_NULL\|NCCL_CONFIG_UNDEF_PTR\|NCCL_CONFIG_INITIALIZER'
	cat <<'EOF'
E(NCCL_VERSION(2, 28, 9)) E(NCCL_VERSION(2, 8, 4))
Z(ncclUniqueId) Z(ncclResult_t) Z(ncclRedOp_t) Z(ncclDataType_t) Z(ncclComm_t)
Z(ncclScalarResidence_t) Z(cudaStream_t)
Z(ncclConfig_t) F(ncclConfig_t, size) F(ncclConfig_t, magic) F(ncclConfig_t, version)
F(ncclConfig_t, blocking) F(ncclConfig_t, cgaClusterSize) F(ncclConfig_t, minCTAs)
F(ncclConfig_t, maxCTAs) F(ncclConfig_t, netName) F(ncclConfig_t, splitShare)
F(ncclConfig_t, trafficClass) F(ncclConfig_t, commName) F(ncclConfig_t, collnetEnable)
F(ncclConfig_t, CTAPolicy) F(ncclConfig_t, shrinkShare) F(ncclConfig_t, nvlsCTAs)
F(ncclConfig_t, nChannelsPerNetPeer) F(ncclConfig_t, nvlinkCentricSched)
EOF
} > "$tmp/layout.inc"

cat > "$tmp/layout.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include HEADER
#define E(c) printf("%s = %lld\n", #c, (long long)(c));
#define Z(t) printf("sizeof(%s) = %zu align %zu\n", #t, sizeof(t), (size_t)_Alignof(t));
#define F(t, f) printf("%s.%s at %zu size %zu\n", #t, #f, offsetof(t, f), sizeof(((t *)0)->f));
int main(void)
{
	ncclConfig_t init = NCCL_CONFIG_INITIALIZER;

	printf("initializer: size %zu magic %x version %u blocking %d last %d\n", init.size,
	       init.magic, init.version, init.blocking, init.nvlinkCentricSched);
#include "layout.inc"
	return 0;
}
EOF
ok=1
for h in nccl fakenccl; do
	if ! $cc -std=gnu11 -Wall $incs -I"$tmp" -DHEADER="<$h.h>" -o "$tmp/layout_$h" \
		"$tmp/layout.c" 2> "$tmp/err"; then
		echo "FAIL: layout probe does not build against $h.h:"
		grep error "$tmp/err" | head -20
		ok=0
		fail=1
	fi
done
if [ $ok = 1 ]; then
	"$tmp/layout_nccl" > "$tmp/nccl.out"
	"$tmp/layout_fakenccl" > "$tmp/fakenccl.out"
	if ! diff -u "$tmp/nccl.out" "$tmp/fakenccl.out" > "$tmp/diff"; then
		echo "FAIL: constants or layouts differ (- nccl.h, + fakenccl.h):"
		grep '^[-+][^-+]' "$tmp/diff"
		fail=1
	fi
fi
nprotos=$(echo "$names" | wc -l)
nitems=$(wc -l < "$tmp/nccl.out" 2>/dev/null || echo 0)
if [ $fail = 0 ]; then
	echo "PASS: $nprotos prototypes and $nitems constants/layout items match $nccl_h"
fi
exit $fail
