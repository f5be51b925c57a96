#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The BPF load gate, a suite of tests/run.sh (and so of `make test` and CI): boots Debian
# 12's 6.1 kernel in QEMU (tests/vm/vmtest.sh, TCG: no KVM needed) and runs only
# `gpuprobe check --bpf` there, which loads and verifies every BPF program in every
# configuration the options can produce and attaches nothing. Each configuration is one
# test: "ok - KERNEL: COMMAND LINE", or "not ok - ..." with the program, why, and the host
# path of its verifier log. Ends with "N passed, M failed, K skipped".
#
#   tests/vm/gate.sh [x86|arm64]        VM_KERNEL=... picks another kernel (tests/vm/README.md)
#
# Results go to .output/vm/gate-<arch>/ (gate-<arch>-<package> for a VM_KERNEL), this
# output also to gate.txt there. VM_RECORD=1 saves the run in docs/vmruns/
# (<kernel>-<arch>-gate.json, tests/vm/matrix.py) and regenerates docs/support-matrix.md,
# marked as a load gate, not the suites; `make test` leaves it off (the docs stay as
# committed).
#
# A VM that cannot boot (no QEMU, no kernel package) fails the gate, saying why: it never
# passes unseen. GP_SKIP_SUITES="bpf-gate=REASON" (tests/run.sh) skips it, said and counted.
# Inside the test VM itself (its initramfs holds /vm.conf) there is no VM to boot: skipped.
arch=${1:-x86}
cd "$(dirname "$0")/../.." || exit 1
proj=$(pwd)
res=$proj/.output/vm/gate-$arch${VM_KERNEL:+-$VM_KERNEL}
name=bpf-gate

if [ -f /vm.conf ]; then
	echo "ok - $name # SKIP inside the test VM: the host's make test boots it"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi

fail() {
	echo "not ok - $name: $*"
	echo "0 passed, 1 failed"
	exit 1
}

case $arch in
x86) qemu=qemu-system-x86_64 build=.output ;;
arm64) qemu=qemu-system-aarch64 build=.output/arm64 ;;
*) fail "unknown architecture $arch (x86 or arm64)" ;;
esac
missing=
for c in $qemu cpio depmod modprobe apt-get dpkg-deb; do
	command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
[ -x /bin/busybox ] || missing="$missing busybox"
[ -z "$missing" ] || fail "cannot boot the VM:$missing missing (make gate-deps installs them)"
[ -x "$build/gpuprobe" ] || fail "$build/gpuprobe is missing (make all)"

# a clean machine (a CI container) may have no package lists: the kernel comes by apt-get
# download, and tests/vm/vmtest.sh picks it with apt-cache
debarch=$([ "$arch" = arm64 ] && echo arm64 || echo amd64)
if [ -z "${VM_KERNEL:-}" ] && ! ls "$proj"/.output/vm/"$arch"/kernel/*/.done >/dev/null 2>&1 &&
	! apt-cache show "linux-image-$debarch:$debarch" >/dev/null 2>&1; then
	apt-get update -qq >/dev/null 2>&1 || fail "apt-get update failed: the kernel package cannot be fetched"
fi
mkdir -p "$res"
: >"$res/gate.txt"
say() { # a line of this output, kept in gate.txt for the run record
	printf '%s\n' "$*"
	printf '%s\n' "$*" >>"$res/gate.txt"
}
t0=$(date +%s)
VM_RESULTS=$res VM_TIMEOUT=${VM_TIMEOUT:-900} \
	VM_CMD=".output/gpuprobe check --bpf --libcuda .output/fakecuda/libcuda.so.1 --log-dir /out/bpf-logs" \
	tests/vm/vmtest.sh "$arch" >"$res/vmtest.log" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
kernel=$(sed -n 's/^kernel: \([^ ]*\).*/\1/p' "$res/out/facts" 2>/dev/null)
run=$res/out/run.log
if ! grep -q '^bpf: [0-9]* configurations' "$run" 2>/dev/null; then
	say "not ok - $name: the load check did not finish in the VM (vmtest.sh exit $rc; $res/vmtest.log, $res/console.log):"
	tail -15 "$res/vmtest.log" | sed 's/^/#   /'
	say "0 passed, 1 failed"
	exit 1
fi

# the check's lines as tests; a log named in the VM (/out/...) is shown by its host path
pass=0 failed=0 skipped=0
while IFS= read -r line; do
	line=$(printf '%s\n' "$line" | sed "s|/out/bpf-logs|$res/out/bpf-logs|g")
	case $line in
	"ok bpf"*)
		say "ok - $kernel: ${line#ok bpf*: }"
		pass=$((pass + 1))
		;;
	"skip bpf programs: "*) # the coverage line: programs no configuration loaded here
		say "ok - $kernel: every program loaded by some configuration # SKIP ${line#skip bpf programs: }"
		skipped=$((skipped + 1))
		;;
	"skip bpf"*)
		rest=${line#skip bpf*: }
		say "ok - $kernel: ${rest%%: *} # SKIP ${rest#*: }"
		skipped=$((skipped + 1))
		;;
	"fail bpf"*)
		say "not ok - $kernel: ${line#fail bpf*: }"
		failed=$((failed + 1))
		;;
	"bpf: "*) say "# $line" ;;
	esac
done <"$run"
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
	say "not ok - $name: vmtest.sh exited $rc with no failed line ($res/vmtest.log)"
	failed=$((failed + 1))
fi
say "# $name: kernel $kernel ($arch), the VM and the check in ${secs}s"
say "$pass passed, $failed failed, $skipped skipped"
if [ "${VM_RECORD:-0}" = 1 ]; then
	python3 tests/vm/matrix.py record-gate "$res" && python3 tests/vm/matrix.py render
fi
[ "$failed" -eq 0 ]
