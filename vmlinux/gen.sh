#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Regenerates vmlinux/x86/vmlinux.h from the running kernel's BTF. CO-RE relocates
# field offsets at load time, so one committed header serves every BTF kernel.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
btf=${1:-/sys/kernel/btf/vmlinux}
bpftool btf dump file "$btf" format c > "$here/x86/vmlinux.h.tmp"
mv "$here/x86/vmlinux.h.tmp" "$here/x86/vmlinux.h"
