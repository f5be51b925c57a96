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


def test_every_configuration_loads():
    logs = tempfile.mkdtemp(prefix="gp-bpfcheck-")
    try:
        r = gp.run([gp.GPUPROBE, "check", "--bpf", "--libcuda", gp.FAKECUDA, "--log-dir", logs], timeout=600)
        lines = r.stdout.splitlines()
        fails = [l for l in lines if l.startswith("fail")]
        eq(fails, [], "failed configurations")
        eq(r.returncode, 0, f"exit status; stderr {r.stderr[-500:]!r}")
        eq(os.listdir(logs), [], "logs left behind although nothing failed")
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
        progs = skeleton_programs()
        total = sum(len(p) for p in progs.values())
        if not total:  # tests/vm copies the binaries, not the build's headers
            gp.skip(f"the configurations load; no skeleton (.output/*.skel.h) here to count the programs against")
        cov = [l for l in lines if l.startswith(("ok bpf programs:", "skip bpf programs:"))]
        eq(len(cov), 1, f"one coverage line: {r.stdout}")
        if cov[0].startswith("ok"):
            check(f"each of the {total} programs of {len(progs)} objects" in cov[0], cov[0])
        else:
            # only the configurations this kernel refuses load the rest (the kprobe backend here)
            check(f" of {total} loaded" in cov[0] and skipped, cov[0])
            for name in re.findall(r"(\w+) \((\w+)\)", cov[0].split("not here: ")[1]):
                check(name[0] in progs.get(name[1], []), f"{name} is a program of that object")
    finally:
        shutil.rmtree(logs, ignore_errors=True)


def test_options_go_with_bpf():
    r = gp.run([gp.GPUPROBE, "check", "--log-dir", "/tmp"])
    eq(r.returncode, 2, "exit status")
    gp.one_error_line(r, "--libcuda, --log-dir and -v go with --bpf")


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
