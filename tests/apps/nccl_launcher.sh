#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# nccl_launcher.sh N [nccl_app options]: an NCCL job as torchrun starts one --
# N ranks of nccl_app, each a child of this shell, sharing a unique id through
# a file in a temporary folder.  The ranks' stdout (READY lines with --wait)
# passes through; their other stderr lines too.  When all have exited it
# prints one JSON line on stderr, the job's ground truth:
#   {"pid":<this shell>,"api":"nccl_job","nranks":N,"exit_codes":[...],"ranks":[<rank 0's truth>,...]}
# and exits non-zero if any rank did.  Binaries are found beside this script;
# NCCL_LAUNCH_APP names another rank program there (hang_app), same options.
set -u
n=${1:-}
case "$n" in ''|*[!0-9]*) echo "usage: $0 N [nccl_app options]" >&2; exit 2 ;; esac
shift
[ "$n" -ge 1 ] && [ "$n" -le 64 ] || { echo "$0: N must be 1..64" >&2; exit 2; }
dir=$(cd "$(dirname "$0")" && pwd)
case "${NCCL_LAUNCH_APP:-nccl_app}" in nccl_app|hang_app) ;; *) echo "$0: NCCL_LAUNCH_APP: nccl_app or hang_app" >&2; exit 2 ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nccl-job.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

pids=""
r=0
while [ "$r" -lt "$n" ]; do
	"$dir/${NCCL_LAUNCH_APP:-nccl_app}" --rank "$r" --nranks "$n" --id-file "$tmp/id" "$@" 2>"$tmp/err.$r" &
	pids="$pids $!"
	r=$((r + 1))
done
codes=""
fail=0
r=0
for p in $pids; do
	wait "$p"
	c=$?
	[ "$c" -ne 0 ] && fail=1
	codes="$codes${codes:+,}$c"
	grep -v '^{' "$tmp/err.$r" >&2
	r=$((r + 1))
done
ranks=""
r=0
while [ "$r" -lt "$n" ]; do
	t=$(grep '"api"' "$tmp/err.$r" | tail -n 1)
	ranks="$ranks${ranks:+,}${t:-null}"
	r=$((r + 1))
done
printf '{"pid":%d,"api":"nccl_job","nranks":%d,"exit_codes":[%s],"ranks":[%s]}\n' \
	"$$" "$n" "$codes" "$ranks" >&2
exit "$fail"
