#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The userland of the arm64 test VM: Debian 12 packages for ARCH, unpacked (mmdebstrap's
# extract variant: dependencies resolved by apt, nothing configured, so no emulator is
# needed to build it), then given what the maintainer scripts would have: merged /usr,
# the user database, a host table. Cached: rebuilt only when the package list changes.
#
#   tests/vm/rootfs.sh DIR ARCH
set -eu
dir=$1
arch=$2
# What the suites run: the interpreter, the tools the tests call (bpftool, unshare,
# setpriv, mount, pkill, ip, promtool, prometheus, systemd-analyze, make for `make
# install`; openssl, htpasswd and mkpasswd for test_webconfig's certificates and bcrypt
# hashes, curl, PyYAML, tmux: the Makefile's DEB_PKGS for the tests), ncurses-base for
# the terminfo entries tmux needs (an installed Debian has it: required), libc-bin for the
# C.UTF-8 locale (tmux starts only with a UTF-8 one) and ldd, binutils for objcopy
# (test_midname's second build of the stand-in), nm and addr2line (the stack tests check
# frames against them) and as and ld (test_tenants' hostile library; a compiler would
# cost far more), busybox for the initramfs, and gpuprobe's
# libraries: the runtime column of tests/vm/libs.list, the list the Makefile's cross build
# takes its -dev packages from.
libs=$(sed 's/#.*//' "$(dirname "$0")/libs.list" | awk 'NF { for (i = 2; i <= NF; i++) if ($i != "-") print $i }')
[ -n "$libs" ] || { echo "vmtest: $(dirname "$0")/libs.list names no runtime package" >&2; exit 2; }
pkgs="base-files base-passwd dash bash coreutils findutils grep sed gawk util-linux mount procps
iproute2 kmod python3 bpftool prometheus systemd make busybox-static openssl apache2-utils whois
curl python3-yaml tmux ncurses-base libc-bin binutils $libs"
want="$arch $(echo $pkgs)"
if [ -f "$dir/.gp-rootfs" ] && [ "$(cat "$dir/.gp-rootfs")" = "$want" ]; then
	exit 0
fi
command -v mmdebstrap >/dev/null || { echo "vmtest: mmdebstrap is missing (make vmtest-deps)" >&2; exit 2; }
echo "vmtest: unpacking a Debian 12 $arch userland into $dir"
rm -rf "$dir"
mmdebstrap --quiet --mode=root --variant=extract --architectures="$arch" \
	--include="$(echo $pkgs | tr ' ' ,)" bookworm "$dir" \
	"deb http://deb.debian.org/debian bookworm main" \
	"deb http://deb.debian.org/debian-security bookworm-security main"
# merged /usr, as an installed Debian 12 has it (the VM mounts only usr and etc)
for d in bin sbin lib; do
	if [ -d "$dir/$d" ] && [ ! -L "$dir/$d" ]; then
		mkdir -p "$dir/usr/$d"
		cp -a "$dir/$d/." "$dir/usr/$d/"
		rm -rf "${dir:?}/$d"
		ln -s "usr/$d" "$dir/$d"
	fi
done
# base-passwd's postinst: the user and group databases (tests run things as nobody)
cp "$dir/usr/share/base-passwd/passwd.master" "$dir/etc/passwd"
cp "$dir/usr/share/base-passwd/group.master" "$dir/etc/group"
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$dir/etc/hosts"
: >"$dir/etc/machine-id"
echo "$want" >"$dir/.gp-rootfs"
