#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make sanitize's runner: the unit tests and the integration tests against the ASan +
# UBSan build in $1/build (default .output-san). The integration tests find everything
# under their root's .output, so they run from a shadow of this tree, $1/root: links to
# every entry here, and .output leading to that build. Sanitizer reports are written to
# $1/logs; the run fails on any of them, as on any failed test. Ends with "N passed, M
# failed" like tests/run.sh.
cd "$(dirname "$0")/.." || exit 1
san=${1:-.output-san}
here=$(pwd)
root=$san/root
logs=$here/$san/logs
rm -rf "$root" "$logs"
mkdir -p "$root" "$logs"
for e in * .[!.]*; do
	case $e in .output | .output-san | "$san" | .git) continue ;; esac
	ln -s "$here/$e" "$root/$e"
done
ln -s "$here/$san/build" "$root/.output"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
export LSAN_OPTIONS="log_path=$logs/lsan"
total_pass=0
total_fail=0

run_suite() {
	name=$1
	shift
	echo "=== $name"
	"$@" >"$logs/$name.log" 2>&1
	rc=$?
	cat "$logs/$name.log"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/$name.log" | tail -1)
	if [ -z "$line" ]; then
		echo "not ok - suite $name printed no summary (exit $rc)"
		total_fail=$((total_fail + 1))
		return
	fi
	p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - suite $name exited $rc"
		f=1
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
}

for t in "$root"/.output/unit/test_*; do
	[ -x "$t" ] && run_suite "unit-$(basename "$t")" "$t"
done
for t in "$root"/tests/integration/test_*.py; do
	n=$(basename "$t" .py)
	[ "$n" = test_package ] && continue
	run_suite "integration-$n" python3 "$t"
done
reports=$(ls "$logs" | grep -E '^(asan|ubsan|lsan)\.' || true)
if [ -n "$reports" ]; then
	for r in $reports; do
		echo "not ok - sanitizer report $san/logs/$r:"
		sed 's/^/#   /' "$logs/$r" | head -60
		total_fail=$((total_fail + 1))
	done
fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
