#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make support-matrix-native: every suite on this machine's own kernel (tests/run.sh, as
# `make test` runs them), with the facts and the feature probe that a VM run saves, then a
# run record for docs/support-matrix.md (tests/vm/matrix.py). Arguments: suite names, as
# tests/run.sh takes them (a partial run is not recorded).
cd "$(dirname "$0")/../.." || exit 1
out=.output/native/out
rm -rf "$out" && mkdir -p "$out"
{
	echo "kernel: $(uname -r) $(uname -m)"
	echo "version: $(uname -v)"
	echo "cpus: $(nproc)"
	echo "btf: $(ls /sys/kernel/btf 2>/dev/null | wc -l) objects"
} >"$out/facts"
.output/unit/test_features --matrix >"$out/features.txt" 2>&1
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=no
[ -z "$(git status --porcelain --untracked-files=no -- . ':!docs/vmruns' ':!docs/support-matrix.md' 2>/dev/null)" ] || dirty=yes
t0=$(date +%s)
tests/run.sh "$@" >"$out/run.log" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
{
	echo "arch=$(uname -m)"
	echo "kernel=$(uname -r)"
	echo "cpus=$(nproc)"
	echo "seconds=$secs"
	echo "date=$(date -u +%Y-%m-%d)"
	echo "commit=$commit"
	echo "dirty=$dirty"
	echo "suites=$*"
	echo "rc=$rc"
} >"$out/result"
grep -E '^(not ok|ok .*# SKIP)' "$out/run.log"
tail -1 "$out/run.log"
echo "native: $(uname -r), ${secs}s"
[ $# -gt 0 ] || python3 tests/vm/matrix.py record "$out" --native
exit $rc
