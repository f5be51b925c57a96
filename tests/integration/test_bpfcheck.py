# SPDX-License-Identifier: BSD-3-Clause
"""gpuprobe check --bpf on this machine's kernel: every configuration loads (or is refused
by the front end for a kernel feature it names), the configurations cover each mode of
--help alone, and every program of every BPF object (as bpftool's skeletons list them) is
loaded by some configuration. On Debian 12's 6.1 the same check is the gate of
tests/vm/gate.sh."""
import glob
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import gp  # noqa: E402
from gp import check, eq  # noqa: E402

LINE = re.compile(r"^(ok|skip|fail) bpf( [a-z]+)?: ")


def skeleton_programs():
    """Each object's programs, from the skeletons bpftool generated (not from gpuprobe)."""
    progs = {}
    for h in glob.glob(os.path.join(gp.OUT, "*.skel.h")):
        text = open(h).read()
        block = re.search(r"struct \{\n((?:\t\tstruct bpf_program \*\w+;\n)+)\t\} progs;", text)
        if block:
            obj = os.path.basename(h)[: -len(".skel.h")]
            progs[obj] = re.findall(r"struct bpf_program \*(\w+);", block.group(1))
    return progs


def help_modes():
    r = gp.run([gp.GPUPROBE, "--help"])
    eq(r.returncode, 0, "gpuprobe --help")
    modes = r.stdout.split(" Modes:")[1].split("\n\n")[0]
    return re.findall(r"^\s+--([a-z-]+)(=FILE)?\s", modes, re.M)


_checked = {}


def check_bpf():
    """gpuprobe check --bpf, run once for the tests below: (its result, the logs it left)."""
    if not _checked:
        logs = tempfile.mkdtemp(prefix="gp-bpfcheck-")
        try:
            r = gp.run([gp.GPUPROBE, "check", "--bpf", "--libcuda", gp.FAKECUDA, "--log-dir", logs], timeout=600)
            _checked["r"], _checked["left"] = r, os.listdir(logs)
        finally:
            shutil.rmtree(logs, ignore_errors=True)
    return _checked["r"], _checked["left"]


def test_every_configuration_loads():
    r, left = check_bpf()
    lines = r.stdout.splitlines()
    fails = [l for l in lines if l.startswith("fail")]
    eq(fails, [], "failed configurations")
    eq(r.returncode, 0, f"exit status; stderr {r.stderr[-500:]!r}")
    eq(left, [], "logs left behind although nothing failed")
    for l in lines:
        check(LINE.match(l) or l.startswith("bpf: "), f"line format: {l!r}")
    configs = [l for l in lines if re.match(r"^(ok|skip|fail) bpf: ", l)]
    ok = [l for l in configs if l.startswith("ok")]
    skipped = [l for l in configs if l.startswith("skip")]
    for l in skipped:
        check(re.match(r"^skip bpf: gpuprobe [^:]+: \S", l), f"a skip says why: {l!r}")
    summary = [l for l in lines if re.match(r"^bpf: \d+ configurations", l)]
    eq(len(summary), 1, f"one summary line: {r.stdout}")
    m = re.match(r"^bpf: (\d+) configurations on Linux \S+ \S+: (\d+) loaded, (\d+) failed, (\d+) skipped",
                 summary[0])
    check(m, summary[0])
    eq([int(x) for x in m.groups()], [len(configs), len(ok), 0, len(skipped)], "the summary adds up the lines")
    for flag, arg in help_modes():
        want = f"ok bpf: gpuprobe --{flag}{' FILE' if arg else ''} -- COMMAND: "
        check(any(l.startswith(want) for l in lines), f"no configuration of --{flag} alone: {want!r}")
    check(any(l.startswith("ok bpf: gpuprobe daemon ") for l in lines), "no daemon configuration")


BESIDE_MULTI = " (loaded only beside uprobe_multi links, which this kernel lacks)"
REFUSED_ONLY = " (only refused configurations load them)"


def test_every_program_loaded_by_some_configuration():
    """Every program of every object loads in some configuration, or the coverage line names
    the ones that cannot here and why, and the reason is this kernel's: the budget's plain-uprobe
    copies of its sampled programs (*_ev) load only beside uprobe_multi links (Linux 6.6), the
    others only in configurations this kernel refused (the kprobe backend without kprobes).
    Either way the test is a skip with that reason: it is counted, not passed."""
    r, _ = check_bpf()
    lines = r.stdout.splitlines()
    progs = skeleton_programs()
    total = sum(len(p) for p in progs.values())
    if not total:
        gp.skip("no skeleton (.output/*.skel.h) here to count the programs against")
    cov = [l for l in lines if l.startswith(("ok bpf programs:", "skip bpf programs:", "fail bpf programs:"))]
    eq(len(cov), 1, f"one coverage line: {r.stdout}")
    if cov[0].startswith("ok"):
        check(f"each of the {total} programs of {len(progs)} objects" in cov[0], cov[0])
        return
    check(cov[0].startswith("skip"), cov[0])
    m = re.match(r"^skip bpf programs: (\d+) of (\d+) loaded; not here: (.*)$", cov[0])
    check(m, f"coverage line format: {cov[0]!r}")
    eq(int(m.group(2)), total, f"programs counted: {cov[0]}")
    rest = m.group(3)
    why = next((w for w in (BESIDE_MULTI, REFUSED_ONLY) if rest.endswith(w)), None)
    check(why, f"a coverage skip names its reason: {cov[0]!r}")
    names = re.findall(r"(\w+) \((\w+)\)", rest[: -len(why)])
    eq(int(m.group(1)) + len(names), total, f"loaded and not here add up: {cov[0]}")
    for prog, obj in names:
        check(prog in progs.get(obj, []), f"{prog} is a program of {obj}")
    if why == BESIDE_MULTI:
        check(not gp.kernel_has_uprobe_multi(), f"this kernel has uprobe_multi links: {cov[0]}")
        check(all(p.endswith("_ev") for p, _ in names), f"only the budget's *_ev copies are excused: {cov[0]}")
    else:
        refused = [l for l in lines if l.startswith("skip bpf: ")]
        check(refused, f"no configuration was refused here: {cov[0]}")
    gp.skip(f"{len(names)} of {total} programs not loaded here: {', '.join(p for p, _ in names)}{why}")


def test_options_go_with_bpf():
    r = gp.run([gp.GPUPROBE, "check", "--log-dir", "/tmp"])
    eq(r.returncode, 2, "exit status")
    gp.one_error_line(r, "--libcuda, --log-dir and -v go with --bpf")


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
