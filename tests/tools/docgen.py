#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Docs that cannot drift: every example output, capture and probe count in README.md and
docs/ is made here, by running the tool on the stand-in driver, and checked against it
by tests/integration/test_docs.py (part of `make test`).

  docgen.py --write        run every example; rewrite docs/captures/*.txt and the blocks
                           of README.md and docs/*.md between <!-- gen:NAME --> and
                           <!-- /gen:NAME --> (`make docs`, as root, after `make all`)
  docgen.py --check [DIR]  run every example again and compare with what the docs hold,
                           after the figures that change from run to run (PIDs, clocks,
                           addresses, times, rates, temporary paths) are masked: counts,
                           bytes, names, probe counts and formats must be equal. Exit 1 and
                           a diff when they are not ("make docs" regenerates them).
  docgen.py --top          the gpuprobe top captures (tmux, 80x24 and 100x30) alone, and
                           the blocks of the docs made from them (`make docs` does both).

An example is a few shell lines run from the checkout's root with .output and
.output/apps first in PATH (`gpuprobe`, `memleak_app`...), stdout and stderr together as a
terminal shows them; the workloads' own JSON account on stderr is left out (the tests read
it; a reader does not need it). Standard library only.
"""
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, ".output")
CAPTURES = os.path.join(ROOT, "docs", "captures")
FAKECUDA = ".output/fakecuda/libcuda.so.1"
FAKENCCL = ".output/fakenccl/libnccl.so.2"
DOCS = ["README.md"] + sorted("docs/" + f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))


class Cmd:
    """One line of a transcript: what the reader sees after "$ ", and what runs (the same
    unless given: a stdin feed, for instance, that the reader's terminal would give)."""

    def __init__(self, shown, run=None, timeout=120):
        self.shown, self.run, self.timeout = shown, run or shown, timeout


class Example:
    """loose: its figures are estimates that differ from run to run (the budget's): the
    check compares its lines with every number masked."""

    def __init__(self, name, cmds, about, loose=False):
        self.name, self.cmds, self.about, self.loose = name, cmds, about, loose


PY = "/usr/bin/python3.11"
# the stand-in driver, named: a command's own folders and LD_LIBRARY_PATH would find it too,
# but the node's running processes may map other copies (other checkouts' tests)
LIB = f"--libcuda {FAKECUDA}"

EXAMPLES = [
    Example("memleak", [Cmd(f"gpuprobe --memleak {LIB} -- memleak_app --allocs 10 --leaks 3")],
            "a C workload that allocates 10 buffers and frees 7"),
    Example("memleak-python",
            [Cmd(f"gpuprobe --memleak {LIB} -- python3 tests/stacks/pyalloc.py {FAKECUDA}",
                 f"(sleep 1; echo; sleep 1.5) | gpuprobe --memleak {LIB} -- {PY} tests/stacks/pyalloc.py {FAKECUDA}")],
            "a Python program that calls the driver through ctypes (it waits for Enter after READY)"),
    Example("cudatrace", [Cmd(f"gpuprobe --cudatrace {LIB} -- launch_app --stale")],
            "launches through every entry point, 3 of a NULL handle, 5 after an unload"),
    Example("bandwidth", [Cmd(f"gpuprobe --bandwidth-util --min-bytes 4096 --csv pcie.csv {LIB} -- copy_app"),
                          Cmd("cat pcie.csv")],
            "copies through every copy entry point, two GPUs"),
    Example("nccl", [Cmd(f"gpuprobe --nccl {LIB} --libnccl {FAKENCCL} -- nccl_launcher.sh 2 --n 2")],
            "two ranks of the stand-in NCCL job"),
    Example("trace", [Cmd(f"gpuprobe --trace run.jsonl {LIB} -- launch_app"),
                      Cmd("grep -m1 '\"cuLaunchKernelEx\"' run.jsonl")],
            "every driver call of launch_app as a timeline"),
    Example("trace-counters",
            [Cmd(f"gpuprobe --memleak --cudatrace --bandwidth-util --trace c.jsonl --trace-counters 0.05 {LIB} "
                 "-o /dev/null -- sh -c 'memleak_app --hold --allocs 4 --leaks 3 & copy_app; launch_app --n 100; "
                 "kill -USR1 $!; wait'"),
             Cmd("""python3 -c 'import json, sys; s = {}
for r in map(json.loads, open("c.jsonl")):
    if r["type"] == "counter" and r["name"] != "outstanding bytes":
        for k, v in r["values"].items(): s[r["name"] + ": " + k] = s.get(r["name"] + ": " + k, 0) + v
print(json.dumps(s, sort_keys=True, indent=1))'"""),
             Cmd("""grep -o '"name":"\\(fork\\|exec\\|exit\\)"' c.jsonl | sort | uniq -c""")],
            "the counter tracks' samples summed per series, and the process events"),
    Example("ioctl", [Cmd("gpuprobe --ioctl --ioctl-dev 1:mem -- ioctl_app --n 3")],
            "nvidia ioctl numbers on /dev/null (the stand-in has no device node)"),
    Example("streams", [Cmd(f"gpuprobe --memleak {LIB} -- sh -c 'echo epoch 1 done; memleak_app --allocs 4 --leaks 2; "
                            "echo all done' > out.txt"),
                        Cmd("cat out.txt")],
            "a command that prints, its stdout to a file"),
    Example("empty", [Cmd(f"gpuprobe --memleak {LIB} -- true")], "a command that makes no CUDA call"),
    Example("peer", [Cmd(f"gpuprobe --bandwidth-util {LIB} -- peer_app --n 8 --size 8388608 --n-back 4 "
                         "--size-back 4194304")],
            "peer copies in the stand-in's early-return mode"),
    Example("overhead", [Cmd(f"gpuprobe --cudatrace --no-latency {LIB} -- rate_app --phases 50000:1000")],
            "50,000 launches a second for a second: the probes' share is worth the footer"),
    Example("flame", [Cmd(f"gpuprobe --memleak --folded leak.folded {LIB} -o /dev/null -- memleak_app --allocs 10 --leaks 3"),
                      Cmd("cut -d';' -f1-3 leak.folded"),
                      Cmd("sed 's/.* //' leak.folded"),
                      Cmd("gpuprobe flame leak.folded > leak.svg && grep -c '<g class=\"f\"' leak.svg")],
            "the leaks as folded stacks, then as an SVG flame graph (its frames counted)"),
    Example("budget", [Cmd(f"gpuprobe --cudatrace --max-overhead 1 {LIB} -- rate_app")],
            "61,000 launches at 1000, 20,000, 100,000 and 1000 a second, under a 1 % budget", loose=True),
]

# The probes each mode attaches, as the "tracing" line counts them (and --nccl's libnccl line).
PROBE_RUNS = [
    ("--memleak", f"gpuprobe --memleak {LIB} -- true"),
    ("--cudatrace", f"gpuprobe --cudatrace {LIB} -- true"),
    ("--cudatrace --no-latency", f"gpuprobe --cudatrace --no-latency {LIB} -- true"),
    ("--memleak --cudatrace", f"gpuprobe --memleak --cudatrace {LIB} -- true"),
    ("--bandwidth-util", f"gpuprobe --bandwidth-util {LIB} -- true"),
    ("--nccl", f"gpuprobe --nccl {LIB} --libnccl {FAKENCCL} -- true"),
    ("--trace FILE", f"gpuprobe --trace /dev/null {LIB} -- true"),
    ("--ioctl", "gpuprobe --ioctl -- true"),
]

# ---- running ----------------------------------------------------------------------------


def env_for(state):
    e = dict(os.environ)
    e["PATH"] = f"{OUT}:{OUT}/apps:" + e.get("PATH", "/usr/bin:/bin")
    e["GPUPROBE_STATE_DIR"] = state
    e["LC_ALL"] = "C"
    e.pop("LD_LIBRARY_PATH", None)
    return e


def run_line(cmd, cwd, env):
    r = subprocess.run(["bash", "-c", cmd.run], cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=cmd.timeout)
    return r.stdout


def tidy(text, cwd):
    """Paths relative to the checkout, the workloads' own accounts left out."""
    lines = []
    for line in text.replace(ROOT + "/", "").replace(cwd + "/", "").splitlines():
        if re.match(r'^\{"(pid|api)":', line):
            continue
        lines.append(line.rstrip())
    return "\n".join(lines)


def transcript(ex, work, env):
    parts = []
    for c in ex.cmds:
        out = tidy(run_line(c, work, env), work)
        parts.append("$ " + c.shown + ("\n" + out if out else ""))
    return "\n".join(parts) + "\n"


def probe_table(work, env):
    """The "tracing" line's two figures: the probes on the libcuda file, and in all (with
    libnccl's, from its own line, and the few that follow the processes)."""
    rows = ["| Mode | On each libcuda file | On libnccl | In all |", "|---|---|---|---|"]
    for mode, line in PROBE_RUNS:
        out = run_line(Cmd(line), work, env)
        m = re.search(r"^gpuprobe: tracing .*?: (\d+) probes? on (.*?)(?: \((\d+) in all\))?$", out, re.M)
        lib, total = (m.group(1), m.group(3) or m.group(1)) if m else ("?", "?")
        if m and "libcuda" not in m.group(2):
            lib = "none (syscall tracepoints)"
        nccl = re.search(r"^gpuprobe: probing libnccl \S+: (\d+) probes", out, re.M)
        rows.append(f"| `{mode}` | {lib} | {nccl.group(1) if nccl else '-'} | {total} |")
    return "\n".join(rows) + "\n"


def run_all():
    """{capture name: text} for every example, and the probe table. They run in a folder of
    their own (what they write stays there) that sees the checkout's tests/ and .output/."""
    work = tempfile.mkdtemp(prefix="gp-docgen-")
    state = tempfile.mkdtemp(prefix="gp-docgen-state-")
    for d in ("tests", ".output"):
        os.symlink(os.path.join(ROOT, d), os.path.join(work, d))
    try:
        env = env_for(state)
        got = {ex.name: transcript(ex, work, env) for ex in EXAMPLES}
        got["probes"] = probe_table(work, env)
        return got
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)

# ---- what the docs show of them -----------------------------------------------------------


HIST_ROW = re.compile(r"^\s+(\d+ -> \d+|\S+ [kMGTP]?B/s \.\. \S+ [kMGTP]?B/s)\s+: ")


def trim_hist(text):
    """Histograms: their header and a "..." line (the bars are in docs/captures/)."""
    out, skipping = [], False
    for line in text.splitlines():
        if HIST_ROW.match(line):
            if not skipping:
                out.append("       ...")
            skipping = True
            continue
        skipping = False
        out.append(line)
    return "\n".join(out) + "\n"


def head_rows(n):
    """The first n rows of --trace's function table, then "..."."""
    def f(text):
        out, rows = [], None
        for line in text.splitlines():
            if line.strip().startswith("FUNCTION "):
                rows = 0
            elif rows is not None and re.match(r"^  \S+\s+[\d,]+\s+[\d,]+\s+\S+ \S+$", line):
                rows += 1
                if rows == n + 1:
                    out.append("  ...")
                if rows > n:
                    continue
            else:
                rows = None
            out.append(line)
        return "\n".join(out) + "\n"
    return f


def nccl_short(text):
    """One rank's world communicator, each table's first rows, then the matrices."""
    out, pids, comms, skipping, rows = [], 0, 0, False, 0
    for line in text.splitlines():
        if line.startswith("PID "):
            pids, comms = pids + 1, 0
            if pids > 1:
                skipping = True
                out.append("... (rank 1 alike)")
                continue
        elif line.startswith(("Communicator ", "libnccl ")):
            skipping = False
        elif line.startswith("  comm "):
            comms += 1
            skipping = skipping or comms > 1
        if skipping:
            continue
        if re.match(r"^    (OP|PEER) ", line) or not line.startswith("    "):
            rows = 0
        elif line.startswith("    ") and not line.startswith("    completion"):
            rows += 1
            if rows == 4:
                out.append("    ...")
            if rows >= 4:
                continue
        out.append(line)
    return "\n".join(out) + "\n"


HIST_HEAD = re.compile(r"^\s+(usecs|rate)\s+: count\s+distribution$|synchronous copy bandwidth:$")


def no_hist(text):
    """Histograms left out altogether (docs/captures/ has them)."""
    return "\n".join(l for l in text.splitlines() if not (HIST_ROW.match(l) or HIST_HEAD.search(l))) + "\n"


def first_rows(header, n):
    """The first n rows under each line matching header (rows: lines indented deeper)."""
    def f(text):
        out, rows, depth = [], None, 0
        for line in text.splitlines():
            indent = len(line) - len(line.lstrip())
            if re.search(header, line):
                rows, depth = 0, indent
            elif rows is not None and indent >= depth and line.strip():
                rows += 1
                if rows == n + 1:
                    out.append(" " * depth + "...")
                if rows > n:
                    continue
            else:
                rows = None
            out.append(line)
        return "\n".join(out) + "\n"
    return f


def until(pattern):
    """The text up to the first line matching pattern."""
    def f(text):
        out = []
        for line in text.splitlines():
            if re.search(pattern, line):
                break
            out.append(line)
        return "\n".join(out) + "\n"
    return f


def cut(start, resume):
    """Lines from one matching start up to (not including) the next matching resume left out."""
    def f(text):
        out, skipping = [], False
        for line in text.splitlines():
            if re.search(start, line):
                skipping = True
            elif skipping and re.search(resume, line):
                skipping = False
            if not skipping:
                out.append(line)
        return "\n".join(out) + "\n"
    return f


def drop(pattern):
    return lambda text: "\n".join(l for l in text.splitlines() if not re.search(pattern, l)) + "\n"


def chain(*fs):
    def f(text):
        for g in fs:
            text = g(text)
        return text
    return f


# block name -> (capture, how much of it the block shows)
BLOCKS = {
    "memleak": ("memleak", lambda t: t),
    "memleak-python": ("memleak-python", lambda t: t),
    "cudatrace": ("cudatrace", trim_hist),
    "bandwidth": ("bandwidth", chain(trim_hist, drop(r"^Link limits"))),
    "nccl": ("nccl", nccl_short),
    "trace": ("trace", head_rows(5)),
    "ioctl": ("ioctl", trim_hist),
    "streams": ("streams", lambda t: t),
    "empty": ("empty", lambda t: t),
    "probes": ("probes", lambda t: t),
    "peer": ("peer", drop(r"^Link limits")),
    "overhead": ("overhead", lambda t: t),
    "budget": ("budget", lambda t: t),
    "flame": ("flame", lambda t: t),
    "trace-counters": ("trace-counters", lambda t: t),
    # the README's short ones
    "readme-memleak": ("memleak-python", lambda t: t),
    "readme-cudatrace": ("cudatrace", no_hist),
    "readme-bandwidth": ("bandwidth", chain(until(r"^\$ cat pcie.csv"), no_hist, drop(r"^Link limits"),
                                            cut(r"^  Copies between device memory", r"^\S"))),
    # one rank's calls and the measured matrix (modes.md has completion and the inferred one)
    "readme-nccl": ("nccl", chain(nccl_short, cut(r"^    completion ", r"^\S"),
                                  cut(r"^  collective bytes sent", r"^\S"))),
    "readme-trace": ("trace", head_rows(3)),
    "readme-ioctl": ("ioctl", chain(no_hist, first_rows(r"^    COMMAND ", 3))),
    # gpuprobe top's screens: from docs/captures/ as written (a live view: its figures move)
    "top-80x24": ("file:top-80x24", lambda t: t),
    "top-100x30": ("file:top-100x30", lambda t: t),
}
MARKDOWN_BLOCKS = {"probes"}
LOOSE = {ex.name for ex in EXAMPLES if ex.loose}  # written as they are (a table), not as a code block


def capture_file(name):
    with open(os.path.join(CAPTURES, name + ".txt")) as f:
        return f.read()


def block_text(name, got):
    cap, f = BLOCKS[name]
    text = f(capture_file(cap[5:]) if cap.startswith("file:") else got[cap])
    if name in MARKDOWN_BLOCKS:
        return text
    return "```\n" + text + "```\n"

# ---- comparing ----------------------------------------------------------------------------


MASKS = [
    (re.compile(r"\[\d\d:\d\d:\d\d\]"), "[HH:MM:SS]"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "HH:MM:SS"),
    (re.compile(r"0x[0-9a-f]{5,}"), "0xADDR"),
    (re.compile(r"\b(PIDs?|pid|tid|Process) [\d,]+"), r"\1 N"),
    (re.compile(r'"(pid|tid|ts_ns|dur_ns|time|ppid|root)":\d+'), r'"\1":N'),
    (re.compile(r"processes by rank:( \d+)+"), "processes by rank: N"),
    (re.compile(r"\b[\d,.]+ ?[kMGTP]?B/s\b"), "RATE"),
    (re.compile(r"\b[\d,.]+/s\b"), "N/s"),
    (re.compile(r"\b\d+m \d\ds\b"), "DUR"),
    (re.compile(r"\b[\d.]+ (ns|us|ms|s)\b"), "DUR"),
    (re.compile(r"\b\d+\.\d+%"), "P%"),
    (re.compile(r"\.(c|h|py):\d+\b"), r".\1:LINE"),
    (re.compile(r"/tmp/[\w./-]+"), "/tmp/X"),
    (re.compile(r"inode \d+"), "inode N"),
    # --nccl's stragglers: which rank of the example's two came last into each collective is
    # the two processes' timing (21 on one, or split 7/14 between them)
    (re.compile(r"; last rank into [\d,]+ collectives? matched \([^)]*\)"), ""),
    (re.compile(r"\(rank \d+ last in\)"), "(rank N last in)"),
    # --csv rows: the time and the rates move, the GPU and the bytes do not
    (re.compile(r"^\d{10}\.\d{3},(\d+),(\d+),(\d+),(\d+),[\d.]+,[\d.]+$"), r"TS,\1,\2,\3,\4,RATE,RATE"),
]


# Rows chosen by a timing: --trace's 25 functions of longest total time and its 5 longest
# launch gaps (which ones, not only their order, change from run to run).
UNSTABLE = re.compile(r"^  (cu\w+\s+[\d,]+\s+[\d,]+\s+\S+ \S+|\.\.\. [\d,]+ more functions?|launch gap .*)$"
                      # --nccl's stragglers: a row per rank that came last at least once
                      r"|^\s*rank \d+ \(PID \d+\): last into ")
# Lines of the kernel it runs on, not of the tool: the docs are made on one with
# uprobe_multi links (6.6+); on an older one (the VM suites on 6.1) --trace warns of the
# one-by-one attach.
KERNEL_LINES = re.compile(r"^gpuprobe: warning: no uprobe_multi links ")


# Kinds of line in a loose example that a sampled run prints only when a window caught such
# a call: the synchronize block (rate_app's four syncs, one a phase; on 6.1 in QEMU, where a
# call is priced so high that even the 1000/s phase was sampled, none was seen and the block
# was not printed); and the budget's line counting the processes over it by its own estimate,
# printed only when one was (an attach slow enough to catch many strays: a loaded machine).
# Their presence is left out of the comparison.
# The budget's floor, said only where a probe hit costs so much that P cannot be held (a
# loaded machine, an emulated CPU): its warning and its report line are left out as well.
LOOSE_OPTIONAL = {"synchronize: N calls, total", "over the budget: N", "cannot be held here:", "gpuprobe: budget: N %"}


# The overhead footer of a text report (src/cli/main.c, overhead_report) is printed without
# -v only when the probes cost some process at least OVERHEAD_SMALL (1 %) of the traced time:
# at the probe hit's price calibrated on the machine that runs it. The cudatrace example's
# 1,480 hits are under it natively (a hit about 1 us) and over it on 6.1 in QEMU's TCG (a
# hit 28 us). Where one side has the footer and the other not, the side that has it must
# show a process at 1 % or more (the tool's own rule); then its footer is left out.
FOOTER = re.compile(r"^gpuprobe overhead \(estimate\): ")
FOOTER_ROW = re.compile(r"^  PID \d+ \(.*\): [\d,]+ probe hits?, ~.* in probes(?: \((\d+\.\d+)% of the .* traced\))?$")
OVERHEAD_SMALL = 1.0


def footer(text):
    """(the text without its overhead footer, the largest share the footer shows, or None
    where there is no footer)"""
    out, share, inside = [], None, False
    for line in text.splitlines():
        if FOOTER.match(line):
            inside, share = True, share or 0.0
            continue
        m = FOOTER_ROW.match(line) if inside else None
        if m:
            share = max(share, float(m.group(1) or 0))
            continue
        inside = False
        out.append(line)
    return "\n".join(out) + "\n", share


def machine_footer(have, want):
    """have and want, the overhead footer left out of the one that alone has it where its
    share says why it was printed there (the machine's probe cost, not the tool)."""
    (h, hs), (w, ws) = footer(have), footer(want)
    if hs is not None and ws is None and hs >= OVERHEAD_SMALL:
        return h, want
    if ws is not None and hs is None and ws >= OVERHEAD_SMALL:
        return have, w
    return have, want


def normalize_loose(text):
    """Estimates: the lines' kinds only (their first words, numbers masked), as a set."""
    return sorted({" ".join(re.sub(r"\d[\d,.]*", "N", l).split()[:4]) for l in normalize(text)} - LOOSE_OPTIONAL)


def normalize(text):
    """The text with what changes from run to run masked, histogram rows and rows chosen
    by a timing left out, lines sorted (rows ordered by a timing may swap): what is left
    must be equal."""
    lines = []
    for line in text.splitlines():
        if HIST_ROW.match(line) or UNSTABLE.match(line) or KERNEL_LINES.match(line) or \
                line.strip() in ("...", "       ..."):
            continue
        for rx, sub in MASKS:
            line = rx.sub(sub, line)
        lines.append(re.sub(r"\s+", " ", line).strip())
    return sorted(l for l in lines if l)


# ---- the docs -----------------------------------------------------------------------------

MARK = re.compile(r"(<!-- gen:([\w-]+)[^>]*-->\n)(.*?)(<!-- /gen:\2 -->)", re.S)


def doc_blocks(path):
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    return text, [(m.group(2), m.group(3)) for m in MARK.finditer(text)]


def write_docs(got):
    os.makedirs(CAPTURES, exist_ok=True)
    for ex in EXAMPLES:
        with open(os.path.join(CAPTURES, ex.name + ".txt"), "w") as f:
            f.write(got[ex.name])
    for path in DOCS:
        text, blocks = doc_blocks(path)
        if not blocks:
            continue
        new = MARK.sub(lambda m: m.group(1) + block_text(m.group(2), got) + m.group(4), text)
        if new != text:
            with open(os.path.join(ROOT, path), "w") as f:
                f.write(new)
            print(f"wrote {path} ({len(blocks)} blocks)")


def write_file_blocks():
    """The blocks made from docs/captures/ files alone (top's screens), the others as they are."""
    for path in DOCS:
        text, blocks = doc_blocks(path)
        new = MARK.sub(lambda m: m.group(1) + block_text(m.group(2), {}) + m.group(4)
                       if BLOCKS.get(m.group(2), ("",))[0].startswith("file:") else m.group(0), text)
        if new != text:
            with open(os.path.join(ROOT, path), "w") as f:
                f.write(new)
            print(f"wrote {path}")


def check_docs(got):
    bad = []

    def compare(where, have, want, loose=False):
        have, want = machine_footer(have, want)
        a, b = (normalize_loose if loose else normalize)(have), (normalize_loose if loose else normalize)(want)
        if a != b:
            diff = "\n".join(difflib.unified_diff(a, b, "in the docs", "from the tool now", lineterm="", n=1))
            bad.append(f"{where}: differs from what the tool prints now:\n{diff}")

    for ex in EXAMPLES:
        p = os.path.join(CAPTURES, ex.name + ".txt")
        if not os.path.exists(p):
            bad.append(f"docs/captures/{ex.name}.txt: missing")
            continue
        compare(f"docs/captures/{ex.name}.txt", open(p).read(), got[ex.name], ex.loose)
    seen = set()
    for path in DOCS:
        _, blocks = doc_blocks(path)
        for name, have in blocks:
            if name not in BLOCKS:
                bad.append(f"{path}: unknown block gen:{name}")
                continue
            seen.add(name)
            if BLOCKS[name][0].startswith("file:") and have != block_text(name, got):
                bad.append(f"{path} (gen:{name}): not docs/captures/{BLOCKS[name][0][5:]}.txt as written")
            elif not BLOCKS[name][0].startswith("file:"):
                compare(f"{path} (gen:{name})", have, block_text(name, got), BLOCKS[name][0] in LOOSE)
    for name in sorted(set(BLOCKS) - seen):
        bad.append(f"block gen:{name} is in no document")
    return bad

# ---- gpuprobe top in a terminal -----------------------------------------------------------


TOP_SCRIPT = ("memleak_app --hold --allocs 6 --leaks 4 --size 1048576 & copy_app; launch_app --n 40; "
              "rate_app --phases 20000:30000; kill -USR1 $!; wait")


def tmux(sock, *args):
    return subprocess.run(["tmux", "-L", sock] + list(args), capture_output=True, text=True, timeout=20).stdout


def descendants(root):
    """The processes under root, by /proc's parent links (ours alone: we started root)."""
    parent = {}
    for d in os.listdir("/proc"):
        try:
            st = open(f"/proc/{d}/stat").read()
            parent[int(d)] = int(st[st.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def top_capture(width, height, select, want, env):
    """gpuprobe top at width x height running TOP_SCRIPT, the process named select selected
    (up and down), the screen once it shows want (a regular expression over it)."""
    sock = f"gp-docgen-{os.getpid()}-{width}"
    line = (f"cd {ROOT} && gpuprobe top --libcuda {FAKECUDA} --keep 600 --command-log /dev/null "
            f"-- sh -c '{TOP_SCRIPT}'")
    env = dict(env, TERM="xterm")
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-s", "top", "-x", str(width), "-y", str(height),
                    line], env=env, check=True, timeout=20)
    try:
        deadline = time.time() + 60
        screen = ""
        while time.time() < deadline:
            screen = tmux(sock, "capture-pane", "-p", "-t", "top")
            if re.search(r"rate_app\s+\d\d", screen):
                break
            time.sleep(0.2)
        rows = [l.split()[2] for l in screen.splitlines() if re.match(r"^\s*\d+ \S \S", l)]
        keys = ["Up"] * len(rows) + ["Down"] * (rows.index(select) if select in rows else 0)
        for k in keys:
            tmux(sock, "send-keys", "-t", "top", k)
            time.sleep(0.1)
        while time.time() < deadline:
            screen = tmux(sock, "capture-pane", "-p", "-t", "top")
            if re.search(want, screen, re.S | re.M):
                time.sleep(1.2)  # one more frame: every line drawn
                return tmux(sock, "capture-pane", "-p", "-t", "top").rstrip("\n").replace(ROOT + "/", "") + "\n"
            time.sleep(0.2)
        raise RuntimeError(f"top at {width}x{height}: no {want!r} on the screen:\n{screen}")
    finally:
        pane = tmux(sock, "display", "-p", "-t", "top", "#{pane_pid}").strip()
        tmux(sock, "send-keys", "-t", "top", "q")
        time.sleep(0.5)
        for pid in descendants(int(pane)) if pane.isdigit() else []:  # the workloads it started
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        tmux(sock, "kill-server")


# The stand-in NVML (tests/fakenvml) for the captures: a GPU, and the workloads by name (their
# PIDs are not known ahead): the SM% column and the GPU line as a GPU node shows them.
TOP_NVML = ("gpu 0 name=StandIn util=87 memutil=35 memused=2147483648 memtotal=85899345920 power=412000 temp=58 "
            "throttle=0x4\n"
            "proc 0 comm=memleak_app mem=71303168 sm=3 memutil=1\n"
            "proc 0 comm=copy_app mem=104857600 sm=12 memutil=40\n"
            "proc 0 comm=launch_app mem=67108864 sm=35 memutil=8\n"
            "proc 0 comm=rate_app mem=67108864 sm=71 memutil=20\n")


def nvml_env(env, state):
    """env with the stand-in NVML and its script (in state)."""
    path = os.path.join(state, "nvml.script")
    with open(path, "w") as f:
        f.write(TOP_NVML)
    return dict(env, LD_LIBRARY_PATH=os.path.join(OUT, "fakenvml"), FAKENVML_SCRIPT=path)


def write_top():
    state = tempfile.mkdtemp(prefix="gp-docgen-state-")
    try:
        env = nvml_env(env_for(state), state)
        os.makedirs(CAPTURES, exist_ok=True)
        # 80x24: launch_app (exited) selected, its kernels; 100x30: copy_app, its copies
        for (w, h, sel, want) in ((80, 24, "launch_app", r"^PID \d+ launch_app \(exited\).*\n  KERNEL"),
                                  (100, 30, "copy_app", r"^PID \d+ copy_app \(exited\).*\n  COPIES")):
            for attempt in range(3):  # the rows may reorder between reading them and the keys
                try:
                    text = top_capture(w, h, sel, want, env)
                    break
                except RuntimeError as e:
                    if attempt == 2:
                        raise
                    print(f"docgen.py: again: {str(e).splitlines()[0]}")
            with open(os.path.join(CAPTURES, f"top-{w}x{h}.txt"), "w") as f:
                f.write(text)
            print(f"wrote docs/captures/top-{w}x{h}.txt")
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main(argv):
    if os.geteuid() != 0:
        sys.exit("docgen.py: needs root (it loads BPF programs)")
    if not os.path.exists(os.path.join(OUT, "gpuprobe")):
        sys.exit("docgen.py: build first (make all)")
    if argv[:1] == ["--top"]:
        write_top()
        write_file_blocks()
        return 0
    if argv[:1] == ["--write"]:
        write_top()
        write_docs(run_all())
        return 0
    if argv[:1] == ["--check"]:
        bad = check_docs(run_all())
        for b in bad:
            print(b)
        if bad:
            print("docgen.py: the docs do not match the tool: run `make docs` (as root) and commit the result")
        return 1 if bad else 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
