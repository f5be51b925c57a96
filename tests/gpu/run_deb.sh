#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The Debian package on the GPU machine (issue 18): install the .deb built on the
# development machine (`make deb bundle` there; carry .output/deb/gpuprobe.deb and, for
# libraries the package's dependencies do not find here, .output/bundle/dyn/lib), run the
# installed daemon with its installed settings, three short PyTorch jobs and a CUDA C
# program of known launches (nvcc here) in cgroups of their own, scrape while they run,
# check the series, print figures, purge. Run from the repository's root as root:
#   bash tests/gpu/run_deb.sh
# Prints "== overall deb: PASS|FAIL" and exits non-zero on any failed check. Results in
# $OUT (or /tmp/gp-gpu): deb-metrics.txt and gpu-deb.tgz. For a dry run on a machine
# without a GPU: TORCH_CMD=.output/apps/launch_app CUDA_PROG=.output/apps/launch_app
# LD_LIBRARY_PATH=.output/fakecuda (the stand-in driver; launch_app prints the same
# account as launch_cuda.cu).
set -u
cd "$(dirname "$0")/../.."
DEB=${GPUPROBE_DEB:-$PWD/.output/deb/gpuprobe.deb}
LIBS=$PWD/.output/bundle/dyn/lib
RESULTS=${OUT:-/tmp/gp-gpu}
W=/tmp/gp-work
O=$W/out-deb
PORT=${GPUPROBE_PORT:-19465}
POLICY=/usr/sbin/policy-rc.d
mkdir -p "$O" "$RESULTS"
status=0
fail() { echo "FAIL: $*"; status=1; }
PY=python3; [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
TORCH_CMD=${TORCH_CMD:-$PY tests/gpu/launch_torch.py}
# one install at a time on a machine (tests/integration/test_package.py takes it too)
exec 9>/run/lock/gpuprobe-package-test.lock
flock 9
if dpkg-query -W -f='${Status}' gpuprobe 2>/dev/null | grep -q installed; then
	echo "FAIL: gpuprobe is installed here already: not touching it"
	exit 1
fi

echo "== host: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r), systemd as PID 1: $([ -d /run/systemd/system ] && echo yes || echo no)"
[ -f "$DEB" ] || { echo "FAIL: no $DEB (make deb on the development machine, carry it)"; exit 1; }
echo "== package: $(dpkg-deb -f "$DEB" Package Version Architecture | tr '\n' ' ')"
depends=$(dpkg-deb -f "$DEB" Depends)
echo "Depends: $depends"

# Which dependencies this machine lacks (each alternative checked with its version).
missing=""
IFS=',' read -ra deps <<<"$depends"
for dep in "${deps[@]}"; do
	ok=no
	IFS='|' read -ra alts <<<"$dep"
	for alt in "${alts[@]}"; do
		alt=$(echo "$alt" | xargs)
		pkg=${alt%% *}
		ver=$(dpkg-query -W -f='${Status} ${Version}\n' "$pkg" 2>/dev/null | awk '/ok installed/ {print $4}')
		[ -z "$ver" ] && ver=$(dpkg-query -W -f='${Status} ${Provides}\n' '*' 2>/dev/null | grep "ok installed" |
			grep -E "(^|, )$pkg( |,|$)" >/dev/null && echo provided)
		[ -z "$ver" ] && continue
		if [[ "$alt" == *"("* ]] && [ "$ver" != provided ]; then
			op=$(echo "$alt" | sed -E 's/.*\(([<>=]+) .*/\1/'); want=$(echo "$alt" | sed -E 's/.*\([<>=]+ ([^)]*)\).*/\1/')
			case $op in '>=') op=ge ;; '<=') op=le ;; '>>') op=gt ;; '<<') op=lt ;; '=') op=eq ;; esac
			dpkg --compare-versions "$ver" "$op" "$want" || continue
		fi
		ok=yes
		break
	done
	[ $ok = yes ] || missing="$missing [$(echo "$dep" | xargs)]"
done
echo "dependencies missing here:${missing:- none}"

# Install as on any Debian-like host, with no service started by the maintainer scripts.
made_policy=""
if [ ! -e $POLICY ]; then
	printf '#!/bin/sh\nexit 101\n' >$POLICY && chmod 755 $POLICY && made_policy=$POLICY
fi
dpkg -i "$DEB" >$O/dpkg.txt 2>&1
rc=$?
echo "== dpkg -i: exit $rc"; tail -5 $O/dpkg.txt
if [ $rc != 0 ]; then
	echo "dpkg -i failed (missing:${missing:- ?}): the files are unpacked, the package is not configured"
	dpkg-query -W -f='${Status}\n' gpuprobe
	if [ -n "$missing" ]; then
		# no package registry here: configure anyway (conffiles, the unit), the libraries
		# come from the carried folder below
		dpkg --force-depends --configure gpuprobe >>$O/dpkg.txt 2>&1 && echo "configured with --force-depends" ||
			fail "dpkg --configure"
	fi
fi
[ -x /usr/bin/gpuprobe ] || { echo "FAIL: /usr/bin/gpuprobe not installed"; [ -n "$made_policy" ] && rm -f $made_policy; exit 1; }
notfound=$(ldd /usr/bin/gpuprobe | awk '/not found/ {print $1}' | xargs)
echo "libraries not found here: ${notfound:-none}"
RUN=/usr/bin/gpuprobe
if [ -n "$notfound" ]; then
	if [ -d "$LIBS" ]; then
		echo "running with the carried libraries ($LIBS): carry these with the package: $notfound"
		export LD_LIBRARY_PATH=$LIBS
	else
		fail "carry .output/bundle/dyn/lib (make bundle) for: $notfound"
	fi
fi
for f in /etc/gpuprobe/gpuprobe.conf /lib/systemd/system/gpuprobe.service /usr/share/man/man8/gpuprobe.8.gz; do
	if [ -e $f ]; then echo "installed: $f"; continue; fi
	# minimal images (Ubuntu's docker ones) tell dpkg to leave out documentation
	pat=$(grep -h '^path-exclude' /etc/dpkg/dpkg.cfg.d/* 2>/dev/null | awk '{print $1}' | sed 's/^path-exclude=//' |
		while read -r p; do [[ $f == $p ]] && echo "$p"; done | head -1)
	if [ -n "$pat" ]; then echo "not installed: $f (this host's dpkg excludes $pat)"; else fail "$f not installed"; fi
done
echo "$($RUN --version)"

echo "== gpuprobe check (installed binary)"
$RUN check | tee $O/check.txt
[ "${PIPESTATUS[0]}" = 0 ] || fail "gpuprobe check"

# cgroups of their own: the default series are per comm and cgroup
cg2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
TAG=gp-deb-$$
mkdir -p $cg2/$TAG-torch $cg2/$TAG-cuda || fail "cgroups under $cg2"
incg() { local g=$1; shift; sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg2/$g" "$@"; }

CUDA_PROG=${CUDA_PROG:-$W/launch_static}
[ "$CUDA_PROG" = $W/launch_static ] && { nvcc -g -o $W/launch_static tests/gpu/launch_cuda.cu || fail "nvcc launch_cuda.cu"; }

# --gpu-time from the installed binary: the libraries it gives the program are the package's
# (/usr/lib/gpuprobe; nothing beside /usr/bin/gpuprobe); its kernels by shape against the
# program's own account. CUPTI as tests/gpu/run_gputime.sh finds it.
for f in /usr/lib/gpuprobe/libgpuprobe_cupti.so /usr/lib/gpuprobe/libgpuprobe_ncclprof.so; do
	[ -f $f ] && echo "installed: $f" || fail "$f not installed"
done
CUPTI=${GPUPROBE_CUPTI:-}
if [ -z "$CUPTI" ]; then
	site=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
	CUPTI=$(ls "$site"/nvidia/cu13/lib/libcupti.so* "$site"/nvidia/cuda_cupti/lib/libcupti.so* \
		/usr/local/cuda/extras/CUPTI/lib64/libcupti.so* 2>/dev/null | head -1)
fi
echo "== --gpu-time (installed binary, CUPTI ${CUPTI:-none found}): $CUDA_PROG"
$RUN -o $O/gputime.jsonl --gpu-time --json ${CUPTI:+--cupti "$CUPTI"} -- $CUDA_PROG >$O/gputime.err 2>&1 ||
	fail "--gpu-time run"
python3 tests/gpu/check_deb.py gputime $O/gputime.jsonl $O/gputime.err || status=1

echo "== the installed daemon: $RUN daemon --config /etc/gpuprobe/gpuprobe.conf --listen 127.0.0.1:$PORT"
grep -v '^#' /etc/gpuprobe/gpuprobe.conf | grep .
$RUN daemon --config /etc/gpuprobe/gpuprobe.conf --listen 127.0.0.1:$PORT ${GPUPROBE_DAEMON_ARGS:-} 2>$O/daemon.err &
gp=$!
for i in $(seq 200); do grep -q "listening on" $O/daemon.err && break; sleep 0.1; done
cat $O/daemon.err
python3 tests/gpu/check_deb.py poll $PORT $O/scrapes.jsonl "/$TAG-torch" "/$TAG-cuda" &
poller=$!
for i in 1 2 3; do
	t0=$EPOCHREALTIME
	incg $TAG-torch timeout 120 $TORCH_CMD 2>$O/torch$i.err >/dev/null || fail "torch job $i"
	echo "torch job $i: $(python3 -c "print(f'{$EPOCHREALTIME - $t0:.2f}')") s"
	sleep 2
	python3 tests/gpu/check_deb.py scrape $PORT >$O/after-torch$i.txt
done
incg $TAG-cuda $CUDA_PROG 2>$O/launch.err >/dev/null || fail "$CUDA_PROG"
sleep 3
kill $poller; wait $poller 2>/dev/null
python3 tests/gpu/check_deb.py scrape $PORT >$O/metrics.txt
python3 tests/gpu/check_deb.py check $O "/$TAG-torch" "/$TAG-cuda" || status=1
kill -TERM $gp
wait $gp
rc=$?
echo "daemon exit $rc after SIGTERM"; [ $rc = 0 ] || fail "daemon exit status"
tail -2 $O/daemon.err

rmdir $cg2/$TAG-torch $cg2/$TAG-cuda 2>/dev/null
dpkg --purge gpuprobe >>$O/dpkg.txt 2>&1 && echo "purged" || fail "dpkg --purge"
[ -n "$made_policy" ] && rm -f "$made_policy"
left=$(ls /usr/bin/gpuprobe /etc/gpuprobe/gpuprobe.conf /lib/systemd/system/gpuprobe.service 2>/dev/null)
[ -z "$left" ] || fail "left after purge: $left"
cp $O/metrics.txt "$RESULTS/deb-metrics.txt" 2>/dev/null
tar czf "$RESULTS/gpu-deb.tgz" -C "$W" out-deb
echo "== overall deb: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
