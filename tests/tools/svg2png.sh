#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Renders an SVG (a gpuprobe flame graph) with headless Chromium from Debian (package
# "chromium"), scripts run, at the SVG's own size.
#   tests/tools/svg2png.sh IN.svg OUT.png [FRAGMENT]   a PNG screenshot
#   tests/tools/svg2png.sh --dom IN.svg [FRAGMENT]     the document after its script ran, on stdout
# FRAGMENT is appended to the file URL after '#': for a flame graph "x=START&d=DEPTH" zooms
# on a frame and "s=REGEX" searches (e.g. "s=cuMem"). A fresh profile every run, no network,
# no sandbox (root in a container has none to give); Chromium's own chatter goes to
# OUT.png.log (or is dropped with --dom).
set -eu

die() { echo "svg2png: $*" >&2; exit 1; }

dom=0
if [ "${1:-}" = "--dom" ]; then
	dom=1
	shift
	[ $# -ge 1 ] || die "usage: svg2png.sh --dom IN.svg [FRAGMENT]"
	in=$1 frag=${2:-}
else
	[ $# -ge 2 ] || die "usage: svg2png.sh IN.svg OUT.png [FRAGMENT]"
	in=$1 out=$2 frag=${3:-}
fi
[ -f "$in" ] || die "$in: no such file"
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || die "chromium is not installed (apt-get install chromium)"

# the window is the picture: take the SVG's width and height (pixels) from its root element
size=$(python3 - "$in" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
def px(v, d):
    try:
        return max(1, min(16384, int(float((v or "").replace("px", "")) + 0.999)))
    except ValueError:
        return d
print(f"{px(r.get('width'), 1200)},{px(r.get('height'), 800)}")
PY
) || die "$in: not an SVG document that parses"

abs=$(cd "$(dirname "$in")" && pwd)/$(basename "$in")
url="file://$abs${frag:+#$frag}"
profile=$(mktemp -d /tmp/svg2png-profile.XXXXXX)
trap 'rm -rf "$profile"' EXIT INT TERM

set -- --headless --no-sandbox --disable-gpu --disable-background-networking \
	--disable-component-update --disable-sync --no-first-run --no-default-browser-check \
	--disable-dev-shm-usage --hide-scrollbars --user-data-dir="$profile" --window-size="$size"
if [ "$dom" = 1 ]; then
	timeout 90 "$browser" "$@" --dump-dom "$url" 2>/dev/null
else
	out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
	rm -f "$out_abs"
	timeout 90 "$browser" "$@" --screenshot="$out_abs" "$url" >"$out_abs.log" 2>&1 ||
		die "chromium failed (exit $?), see $out_abs.log"
	[ -s "$out_abs" ] || die "chromium wrote no picture, see $out_abs.log"
	rm -f "$out_abs.log"
	echo "$out ($size px)"
fi
