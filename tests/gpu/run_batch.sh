#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Several tests/gpu scripts in one device-tool call: run_batch.sh NAME[:SECONDS] ...
# runs tests/gpu/NAME.sh (bash) or NAME.py (the venv's python) with its own time limit
# (default 120 s), its output to $OUT/NAME.log, and prints one line per script with its
# exit status and time, then the tail of each log. Exit status: the number of failures.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gp-gpu}
mkdir -p "$OUT"
export OUT
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
fails=0
summary=""
for arg in "$@"; do
	name=${arg%%:*}
	limit=120
	[ "$name" != "$arg" ] && limit=${arg#*:}
	t0=$SECONDS
	if [ -f "tests/gpu/$name.sh" ]; then
		timeout "$limit" bash "tests/gpu/$name.sh" >"$OUT/$name.log" 2>&1
	else
		timeout "$limit" $PY "tests/gpu/$name.py" >"$OUT/$name.log" 2>&1
	fi
	rc=$?
	t=$((SECONDS - t0))
	[ $rc -ne 0 ] && fails=$((fails + 1))
	summary="$summary
== $name: exit $rc in ${t%.*} s"
	echo "== $name: exit $rc in ${t%.*} s" >&2
done
for arg in "$@"; do
	name=${arg%%:*}
	echo "---- $name (last lines)"
	tail -n 12 "$OUT/$name.log"
done
echo "$summary"
exit $fails
