#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make vmtest [ARCH=arm64]: boots a Debian kernel package in QEMU and runs gpuprobe's suites
# inside it against binaries built here (tests/vm/README.md says how and what it costs).
#
#   tests/vm/vmtest.sh x86|arm64
#
# Environment: VM_KERNEL (a linux-image package name; default: the newest -unsigned kernel
# of this Debian release), VM_ACCEL (tcg, the default, or kvm), VM_TCG_THREAD (single, the
# default, or multi), VM_CPUS (2), VM_MEM (MiB, 2048), VM_TIMEOUT (seconds, 14400),
# VM_SUITES (suite names for tests/run.sh; default all), VM_CMD (a command to run instead
# of the suites, to look into one failure), VM_KCMDLINE (kernel options instead of
# "loglevel=5 softlockup_all_cpu_backtrace=1").
# VM_RESULTS (a folder for out/ and console.log instead of .output/vm/<arch>/).
# The kernel, the initramfs and (arm64) the root file system are cached under
# .output/vm/<arch>/; nothing is installed on this machine but the QEMU, busybox and cross
# packages that `make vmtest-deps` lists.
set -eu
arch=${1:-x86}
cd "$(dirname "$0")/../.."
proj=$(pwd)
work=$proj/.output/vm/$arch
mkdir -p "$work"

case $arch in
x86)
	debarch=amd64 qemu=qemu-system-x86_64 console=ttyS0 build=.output
	machine="-M pc -cpu max" # (kvm: -cpu host, below)
	;;
arm64)
	debarch=arm64 qemu=qemu-system-aarch64 console=ttyAMA0 build=.output/arm64
	# pauth-impdef: QEMU's own pointer-authentication hash, many times faster under TCG
	# than the architected one; Debian's kernel and userland run the same either way.
	machine="-M virt -cpu max,pauth-impdef=on"
	;;
*)
	echo "vmtest: unknown ARCH $arch (x86 or arm64)" >&2
	exit 2
	;;
esac
accel=${VM_ACCEL:-tcg}
if [ "$accel" = kvm ]; then
	[ "$arch" = x86 ] || { echo "vmtest: VM_ACCEL=kvm needs a guest of this machine's architecture" >&2; exit 2; }
	machine="-M pc -cpu host,-arch-capabilities"
fi

for f in gpuprobe fakecuda/libcuda.so.1 apps/memleak_app unit/test_features; do
	if [ ! -e "$build/$f" ]; then
		echo "vmtest: $build/$f is missing (the vmtest target builds it first)" >&2
		exit 2
	fi
done

# --- the kernel: a Debian package, downloaded and unpacked here, never installed --------
pkg=${VM_KERNEL:-}
if [ -z "$pkg" ]; then
	# the metapackage names the current ABI (linux-image-6.1.0-N-<flavour>); its
	# -unsigned twin is the same kernel without the Secure Boot signatures
	pkg=$(apt-cache depends "linux-image-$debarch:$debarch" 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { sub(/:.*/, "", $2); print $2; exit }')
	[ -n "$pkg" ] || { echo "vmtest: apt-cache knows no linux-image-$debarch (apt-get update; for arm64: dpkg --add-architecture arm64)" >&2; exit 2; }
	pkg=$pkg-unsigned
fi
# Packages this machine's apt does not know (a newer kernel: VM_KERNEL=linux-image-6.12...;
# an older one: Debian 11's 5.10, VM_KERNEL=linux-image-5.10.0-N-amd64-unsigned) come from
# Debian 13 and its backports, or Debian 11 and its security updates, through a private apt
# state under .output/vm/apt, leaving this machine's sources alone.
private_apt() {
	a=$proj/.output/vm/apt
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
	k=/usr/share/keyrings/debian-archive-keyring.gpg
	{
		echo "deb [signed-by=$k] http://deb.debian.org/debian trixie main"
		echo "deb [signed-by=$k] http://deb.debian.org/debian trixie-backports main"
		echo "deb [signed-by=$k] http://deb.debian.org/debian bookworm-backports main"
		echo "deb [signed-by=$k] http://deb.debian.org/debian bullseye main"
		echo "deb [signed-by=$k] http://deb.debian.org/debian-security bullseye-security main"
	} >"$a/sources.list.new"
	set -- -o "Dir::Etc::SourceList=$a/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" \
		-o APT::Architectures::=amd64 -o APT::Architectures::=arm64
	# the lists are fetched again after a day, or when the sources changed
	if ! cmp -s "$a/sources.list.new" "$a/sources.list" ||
		[ -z "$(find "$a/lists" -name '*Packages' -mtime -1 2>/dev/null | head -1)" ]; then
		mv "$a/sources.list.new" "$a/sources.list"
		apt-get "$@" update -qq >/dev/null
	fi
	apt-get "$@" download -q "$pkg:$debarch"
}
kdir=$work/kernel/$pkg
if [ ! -e "$kdir/.done" ]; then
	echo "vmtest: fetching $pkg ($debarch)"
	rm -rf "$kdir" && mkdir -p "$kdir"
	(cd "$kdir" && { apt-get download -q "$pkg:$debarch" 2>/dev/null || private_apt; } 2>&1 |
		grep -v '^W: Download is performed unsandboxed' || true)
	deb=$(ls "$kdir"/*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || { echo "vmtest: apt-get download $pkg:$debarch failed" >&2; exit 1; }
	dpkg-deb -x "$deb" "$kdir/root"
	rm -f "$deb"
	# Debian 13's packages ship /usr/lib/modules; depmod and modprobe -d look in lib/
	[ -e "$kdir/root/lib" ] || ln -s usr/lib "$kdir/root/lib"
	kver=$(ls "$kdir/root/lib/modules")
	depmod -b "$kdir/root" "$kver"
	touch "$kdir/.done"
fi
kver=$(ls "$kdir/root/lib/modules")
vmlinuz=$(ls "$kdir"/root/boot/vmlinuz-*)

# --- the root: this machine's /usr and /etc (x86) or a Debian arm64 tree ----------------
if [ "$arch" = arm64 ]; then
	rootfs=$work/rootfs
	sh tests/vm/rootfs.sh "$rootfs" arm64
	busybox=$rootfs/usr/bin/busybox
else
	rootfs=
	busybox=/bin/busybox
fi
if [ ! -x "$busybox" ] || readelf -l "$busybox" 2>/dev/null | grep -q 'program interpreter'; then
	echo "vmtest: $busybox is not a static busybox (busybox-static)" >&2
	exit 2
fi

# --- every library the built programs need is in the VM's userland ----------------------
# (a library added to the build but not to tests/vm/libs.list would otherwise fail each
# suite in the VM on its own; the build's own libraries, the stand-ins, are found there)
case $arch in
x86) triplet=x86_64-linux-gnu ;;
arm64) triplet=aarch64-linux-gnu ;;
esac
# (.output/gpu, bundle and bench/gpu hold what runs on the GPU machines, against their CUDA
# toolkit: never run in the VM, not copied there)
needed=$(find "$build" \( -path "$build/vm" -o -path "$build/arm64" -o -path "$build/test-logs" \
	-o -path "$build/deb" -o -path "$build/gpu" -o -path "$build/bundle" -o -path "$build/bench/gpu" \) -prune \
	-o -type f -perm -u+x -print -o -type f -name '*.so*' -print |
	while read -r f; do
		readelf -d "$f" 2>/dev/null | sed -n "s|.*(NEEDED).*\[\(.*\)\]|\1 $f|p"
	done | sort -u -k1,1)
where=$rootfs
[ -n "$where" ] || where="this machine's /usr"
echo "$needed" | while read -r lib f; do
	[ -n "$lib" ] || continue
	for d in "$rootfs/usr/lib/$triplet" "$rootfs/usr/lib" "$rootfs/lib/$triplet" "$rootfs/lib"; do
		[ -e "$d/$lib" ] && continue 2
	done
	[ -n "$(find "$build" -name "$lib" -print -quit)" ] && continue
	echo "vmtest: $f needs $lib, which the VM's userland ($where) lacks: add its Debian package to tests/vm/libs.list" >&2
	exit 2
done || exit 2

# --- the initramfs: busybox, the modules 9p needs, init and its settings ----------------
ird=$work/initramfs
rm -rf "$ird" && mkdir -p "$ird/modules"
cp "$busybox" "$ird/busybox"
cp tests/vm/init "$ird/init"
chmod 755 "$ird/init" "$ird/busybox"
: >"$ird/modules.order"
for m in virtio_pci 9pnet_virtio 9p virtio-rng; do
	modprobe -d "$kdir/root" -S "$kver" --show-depends "$m" | while read -r cmd path rest; do
		[ "$cmd" = insmod ] || continue # built in
		b=$(basename "$path")
		case $b in # newer Debian kernels compress modules; busybox insmod wants them plain
		*.ko.xz) b=${b%.xz} ;;
		*.ko.zst) b=${b%.zst} ;;
		esac
		grep -qx "$b" "$ird/modules.order" && continue
		case $path in
		*.xz) xz -dc "$path" >"$ird/modules/$b" ;;
		*.zst) zstd -qdc "$path" >"$ird/modules/$b" ;;
		*) cp "$path" "$ird/modules/$b" ;;
		esac
		echo "$b" >>"$ird/modules.order"
	done
done
# GP_COPY: what the guest copies into tmpfs. The checkout's tracked top-level entries (the
# suites read docs/, examples/, src/ and bench/, and `make install` needs the Makefile with
# the sources it was built from: copied with their times, the build is up to date there)
# and everything the build made (gpuprobe, the stand-in driver and NCCL, the workloads,
# the unit tests, the BPF objects and skeletons make checks), but not the VMs' own files.
top=$(git ls-files 2>/dev/null | cut -d/ -f1 | sort -u)
[ -n "$top" ] || top="Makefile README.md bench bpf docs examples src tests vmlinux"
copy=
for f in $top; do
	# hidden entries but .ci (test_docs reads .ci/run: CI runs the README's test command)
	case $f in .ci) ;; .*) continue ;; esac
	[ -e "$f" ] && copy="$copy $f:$f"
done
for f in $(ls -A "$build"); do
	case $f in vm | arm64 | test-logs | deb | gpu | bundle) continue ;; esac
	copy="$copy $build/$f:.output/$f"
done
cat >"$ird/vm.conf" <<EOF
GP_PROJ='$proj'
GP_COPY='$copy'
GP_SUITES='${VM_SUITES:-}'
GP_CMD='${VM_CMD:-}'
EOF
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"

# --- boot -----------------------------------------------------------------------------
# VM_RESULTS: where out/ and console.log go (tests/vm/gate.sh keeps its own)
res=${VM_RESULTS:-$work}
out=$res/out
rm -rf "$out" && mkdir -p "$out"
if [ "$arch" = arm64 ]; then
	usr=$rootfs/usr etc=$rootfs/etc
else
	usr=/usr etc=/etc
fi
share() { # path tag [ro]
	echo "-virtfs local,path=$1,mount_tag=$2,security_model=none,multidevs=remap${3:+,readonly=on}"
}
log=$res/console.log
# One host thread runs all vCPUs unless VM_TCG_THREAD=multi. With a thread per vCPU two
# runs out of eleven died in the kernel, each once: "Oops: int3" in __schedule on 6.12
# (the int3 of a jump label being patched: they flip as perf events come and go) and a
# soft lockup of two gpuprobe threads on 6.1. QEMU 7.2's multi-threaded TCG is suspected,
# not proven; one thread was as fast here (136 s against 143 s on 6.12) and has not failed.
accelopt=$accel
[ "$accel" = tcg ] && accelopt="tcg,thread=${VM_TCG_THREAD:-single}"
# what the run record says it measured (tests/vm/matrix.py): the commit the binaries were
# built from, "dirty" when tracked files differ from it (the generated page and the run
# records aside)
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=no
[ -z "$(git status --porcelain --untracked-files=no -- . ':!docs/vmruns' ':!docs/support-matrix.md' 2>/dev/null)" ] || dirty=yes
qemuver=$("$qemu" --version | sed -n 's/^QEMU emulator version \([0-9.]*\).*/\1/p')
echo "vmtest: booting $pkg ($kver) in $qemu ($accelopt, ${VM_CPUS:-2} CPUs); console: $log"
t0=$(date +%s)
rc=0
# the guest reads this machine's /usr as it is now: a package installed during the run can
# reach a running guest half-replaced (9p finds files by path), so a run that saw dpkg
# work says so next to its failures
# (arm64's userland is its own: nothing to watch; a mark that fails must not end the script
# under set -e)
dpkg_mark() { if [ "$arch" = x86 ]; then stat -c %Y /var/lib/dpkg/status 2>/dev/null || true; fi; }
dpkg0=$(dpkg_mark)
# shellcheck disable=SC2046 # word splitting of the option lists is wanted
timeout "${VM_TIMEOUT:-14400}" "$qemu" $machine -accel "$accelopt" -m "${VM_MEM:-2048}" \
	-smp "${VM_CPUS:-2}" -nographic -no-reboot -nic none \
	-kernel "$vmlinuz" -initrd "$work/initramfs.gz" \
	-append "console=$console rdinit=/init panic=-1 ${VM_KCMDLINE:-loglevel=5 softlockup_all_cpu_backtrace=1} mitigations=off" \
	$(share "$usr" usr ro) $(share "$etc" etc ro) $(share "$proj" proj ro) $(share "$out" out) \
	-device virtio-rng-pci </dev/null >"$log" 2>&1 || rc=$?
secs=$(($(date +%s) - t0))
echo "vmtest: the VM ran ${secs}s (exit $rc)"
host_dpkg=
if [ "$(dpkg_mark)" != "$dpkg0" ]; then
	host_dpkg=$(date -d "@$(dpkg_mark)" '+%H:%M:%S')
	echo "vmtest: warning: dpkg changed this machine's packages during the run (last at $host_dpkg): the guest's /usr is this machine's, so a failure after that time may be a file replaced under a running guest" >&2
fi

complaint='soft lockup\|hard LOCKUP\|Kernel panic\|BUG:\|Oops'
if grep -q "$complaint" "$log"; then
	echo "vmtest: the guest kernel complained (console: $log):" >&2
	grep -m5 "$complaint" "$log" >&2
fi
if [ -s "$out/init-error" ]; then
	cat "$out/init-error" >&2
	exit 1
fi
if [ ! -f "$out/rc" ]; then
	echo "vmtest: the suites did not finish (timeout or crash); the console's end:" >&2
	tail -30 "$log" >&2
	exit 1
fi
cat "$out/facts"
grep -E '^(not ok|ok .*# SKIP)' "$out/run.log" || true
# every command's summary counts (a VM_CMD of several commands prints one each; the suites,
# tests/run.sh, one total after their own)
summary=$(python3 tests/vm/matrix.py summary "$out/run.log")
echo "vmtest: $arch, kernel $kver, ${secs}s: $summary"
{
	echo "arch=$arch"
	echo "package=$pkg"
	echo "kernel=$kver"
	echo "accel=$accel"
	echo "cpus=${VM_CPUS:-2}"
	echo "vm_seconds=$secs"
	echo "summary=$summary"
	echo "date=$(date -u +%Y-%m-%d)"
	echo "commit=$commit"
	echo "dirty=$dirty"
	echo "qemu=$qemuver"
	echo "suites=${VM_SUITES:-}${VM_CMD:+command: $VM_CMD}"
	echo "host_dpkg=$host_dpkg"
	cat "$out/rc"
} >"$out/result"
# a full run's record for docs/support-matrix.md (make support-matrix renders the page)
if [ -z "${VM_SUITES:-}${VM_CMD:-}" ] && [ "${VM_RECORD:-1}" != 0 ]; then
	python3 tests/vm/matrix.py record "$out" && python3 tests/vm/matrix.py render || true
fi
# the guest's exit status is the last command's: an earlier command's failure fails too
case $summary in *" 0 failed"*) ;; [0-9]*) exit 1 ;; esac
grep -q '^rc=0$' "$out/rc"
