#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# tree_launcher.sh [--wait] [fork_app options]: a launcher as users start jobs
# ("bash run.sh"): a shell that starts two CUDA workloads as its children --
# fork_app, whose children do CUDA work, and exec_app, which execs
# exec_second -- and waits for both.  The shell itself makes no CUDA call.
#
# --wait: the shell says "READY <pid>" and waits for SIGUSR1 before it
# starts anything (so a tracer attached with -p <pid> --tree sees every
# workload as a future descendant).  Other options go to fork_app.
# The workloads' stderr is collected; their non-JSON lines pass through and
# at the end one JSON line on stderr is the whole tree's ground truth:
#   {"pid":<shell>,"api":"tree","exit_codes":[f,e],"workloads":[<fork_app's>,<exec_app's>]}
# Exit status: non-zero if a workload failed.  Binaries are found beside it.
set -u
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tree.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

if [ "${1:-}" = "--wait" ]; then
	shift
	go=0
	trap 'go=1' USR1
	echo "READY $$"
	while [ "$go" = 0 ]; do
		sleep 0.05
	done
	trap - USR1
fi

"$dir/fork_app" "$@" 2>"$tmp/fork.err" &
p1=$!
"$dir/exec_app" 2>"$tmp/exec.err" &
p2=$!
wait "$p1"
c1=$?
wait "$p2"
c2=$?
grep -hv '^{' "$tmp/fork.err" "$tmp/exec.err" >&2
t1=$(grep '"api"' "$tmp/fork.err" | tail -n 1)
t2=$(grep '"api"' "$tmp/exec.err" | tail -n 1)
printf '{"pid":%d,"api":"tree","exit_codes":[%d,%d],"workloads":[%s,%s]}\n' \
	"$$" "$c1" "$c2" "${t1:-null}" "${t2:-null}" >&2
[ "$c1" -eq 0 ] && [ "$c2" -eq 0 ]
