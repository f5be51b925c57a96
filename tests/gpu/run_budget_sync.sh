#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# --bandwidth-util's synchronizations sampled under --max-overhead on the real GPU (device
# tool, `make bundle` carried): tests/gpu/sync_torch.py traced whole, then under a 1 % budget
# with --cudatrace; tests/gpu/check_budget_sync.py compares them.
set -u
cd "$(dirname "$0")/../.."
GP=$PWD/.output/bundle/gpuprobe
PY=python3
[ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
O=${OUT:-/tmp/gp-gpu}/budget-sync
STEPS=${STEPS:-3000}
mkdir -p "$O"
$GP -o $O/whole.jsonl --bandwidth-util --json -- $PY tests/gpu/sync_torch.py $STEPS >$O/whole.err 2>&1
echo "whole run: exit $?"
$GP -o $O/budget.jsonl --bandwidth-util --cudatrace --max-overhead 1 --json -- $PY tests/gpu/sync_torch.py $STEPS \
	>$O/budget.err 2>&1
echo "budget run: exit $?"
python3 tests/gpu/check_budget_sync.py $O/whole.err $O/whole.jsonl $O/budget.err $O/budget.jsonl
