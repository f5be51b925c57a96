#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# pack.sh DIR TGZ: the device tool brings back at most 8 files of 16 MiB each: one archive
# of what DIR holds under 4 MiB a file (logs, reports, screens, SVGs), the larger files named.
cd "$1" || exit 1
find . -type f -size -4M | tar czf "$2" -T -
find . -type f -size +4M -printf 'left out (size): %p %s\n'
