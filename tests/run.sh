#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs every suite (unit, stand-in self-test, integration with real BPF) and ends with
# one line "N passed, M failed, K skipped" summing them all (CI matches its leading
# "N passed, M failed"). Exit status non-zero on any failure; a skip is not one, but each
# says why ("ok - name # SKIP reason"). Arguments: run only the suites whose names contain
# one of them (tests/run.sh memleak errors).
cd "$(dirname "$0")/.." || exit 1
out=.output
total_pass=0
total_fail=0
total_skip=0
log=$out/test-logs
mkdir -p "$log"

wanted() {
	for w in $only; do
		case $1 in *"$w"*) return 0 ;; esac
	done
	return 1
}
only="$*"

# GP_SKIP_SUITES="name=reason;name=reason": suites that cannot run here (tests/vm skips
# the stand-in's timing self-test under emulation), each said and counted as one skip.
skip_reason() {
	echo "${GP_SKIP_SUITES:-}" | tr ';' '\n' | sed -n "s/^$1=//p" | head -1
}

# Each suite prints lines and ends with "N passed, M failed" (", K skipped" optional).
run_suite() {
	name=$1
	shift
	[ -z "$only" ] || wanted "$name" || return 0
	why=$(skip_reason "$name")
	if [ -n "$why" ]; then
		echo "=== $name"
		echo "ok - suite $name # SKIP $why"
		total_skip=$((total_skip + 1))
		return
	fi
	echo "=== $name"
	"$@" >"$log/$name.log" 2>&1
	rc=$?
	cat "$log/$name.log"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log/$name.log" | tail -1)
	if [ -z "$line" ]; then
		echo "not ok - suite $name printed no summary (exit $rc)"
		total_fail=$((total_fail + 1))
		return
	fi
	p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
	k=$(echo "$line" | sed -nE 's/.*, ([0-9]+) skipped.*/\1/p')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - suite $name exited $rc"
		f=1
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	total_skip=$((total_skip + ${k:-0}))
}

# make check-layers: the includes of src/ against the layering (and the checker's self-test)
run_suite check-layers tests/tools/check_layers.py
for t in $out/unit/test_*; do
	[ -x "$t" ] && run_suite "unit-$(basename "$t")" "$t"
done
run_suite fakecuda-smoke $out/apps/fakecuda_smoke
for t in tests/integration/test_*.py; do
	run_suite "integration-$(basename "$t" .py)" python3 "$t"
done

# The BPF load gate (tests/vm/gate.sh): every program, in every configuration the options
# can produce, loaded on Debian 12's 6.1 kernel in QEMU; one test per configuration.
run_suite bpf-gate tests/vm/gate.sh x86

echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
