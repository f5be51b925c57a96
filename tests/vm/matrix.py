#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""docs/support-matrix.md's measured tables, from saved run records, never by hand.

  matrix.py record OUTDIR [--native]   one run's results (what tests/vm/guest.sh leaves in
                                       .output/vm/<arch>/out, or tests/vm/native.sh's) into
                                       docs/vmruns/<kernel>-<arch>.json
  matrix.py record-gate GATEDIR        a load gate's (tests/vm/gate.sh with VM_RECORD=1: its
                                       gate.txt and out/) into docs/vmruns/<kernel>-<arch>-gate.json
  matrix.py render                     regenerates the generated parts of
                                       docs/support-matrix.md from docs/vmruns/*.json
  matrix.py check                      exits 1 when the page differs from what render makes
  matrix.py summary RUNLOG             "N passed, M failed, K skipped" summing every command
                                       of a VM_CMD of several (tests/vm/vmtest.sh's summary)

A record is small (counts, times, the feature probe's rows, the names of the failed and
skipped tests with their reasons) and committed: .output is not. `make vmtest` records
every full run (no VM_SUITES, no VM_CMD); a kernel and architecture keep their latest run
and a line for each earlier one. A load gate (`gpuprobe check --bpf` alone, every
configuration of the options) is recorded apart and marked as such: its counts are
configurations, not the suites' tests. The page's prose stays as written; what lies between
`<!-- generated: NAME -->` and `<!-- end: NAME -->` is replaced."""
import glob
import json
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUNS = os.path.join(ROOT, "docs", "vmruns")
PAGE = os.path.join(ROOT, "docs", "support-matrix.md")
HISTORY = 10  # earlier runs kept per record
SKIPS_NAMED = 3  # tests named one by one for a reason they share on the same kernels
GATE = "load gate only"  # a gate record's suites: gpuprobe check --bpf, not the suites

# --- reading one run's files -------------------------------------------------------------


def read(path, default=""):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def keyvals(text):
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip()] = v.strip()
    return out


def parse_features(text):
    """test_features --matrix: a header naming the columns, then one row per feature."""
    lines = text.splitlines()
    head = next((i for i, l in enumerate(lines) if l.startswith("feature ")), None)
    if head is None:
        return {}
    h = lines[head]
    cols = [h.index("here"), h.index("since"), h.index("arch"), h.index("seen")]
    out = {}
    for l in lines[head + 1:]:
        if not l.strip():
            continue
        name = l[:cols[0]].strip()
        out[name] = {"here": l[cols[0]:cols[1]].strip(), "since": l[cols[1]:cols[2]].strip(),
                     "arch": l[cols[2]:cols[3]].strip(), "seen": l[cols[3]:].strip()}
    return out


def parse_runlog(text):
    """tests/run.sh's log: the summary, each failure and each skip with its suite."""
    suite, failures, skips, summary, note = "", [], [], None, ""
    for line in text.splitlines():
        if line.startswith("=== "):
            suite = line[4:].strip()
        elif line.startswith("#   "):
            note = line[4:].strip()  # a unit test's failed check, printed before its verdict
        elif re.match(r"^not ok \d+ - ", line):  # unit tests: "not ok N - name"
            failures.append({"suite": suite, "test": re.sub(r"^not ok \d+ - ", "", line).strip(),
                             "message": note[:300]})
        elif line.startswith("not ok - "):  # integration tests: "not ok - name: why"
            name, _, why = line[9:].partition(": ")
            failures.append({"suite": suite, "test": name.strip(), "message": why.strip()[:300]})
        elif re.match(r"^ok(?: \d+)? - ", line) and "# SKIP" in line:
            name, _, why = re.sub(r"^ok(?: \d+)? - ", "", line).partition("# SKIP")
            skips.append({"suite": suite, "test": re.sub(r"\s*\([0-9.]+s\)\s*$", "", name.strip()),
                          "reason": why.strip()[:300]})
        if re.match(r"^(not )?ok", line):
            note = ""
        m = re.match(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?", line)
        if m:
            summary = [int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)]
    return summary, failures, skips


def total_summary(text):
    """[passed, failed, skipped] of a log that may hold the output of several commands (a
    VM_CMD of "python3 a.py; python3 b.py"), or None when it has no summary line. Each
    command ends with its "N passed, M failed[, K skipped]" line and all of them count. But
    tests/run.sh prints each suite's log after a "=== NAME" line, the suite's own summary
    among it, and then its total: a summary line met after a "=== " line (and before any
    other summary) is a suite's, already in run.sh's total, so it is not counted again. A
    suite run.sh skipped or that printed no summary says so on one line, which ends it."""
    total, in_suite = None, False
    for line in text.splitlines():
        if line.startswith("=== "):
            in_suite = True
        elif re.match(r"^(not )?ok - suite \S+ (# SKIP|printed no summary)", line):
            in_suite = False
        m = re.match(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?", line)
        if m:
            if not in_suite:
                n = [int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)]
                total = [a + b for a, b in zip(total or [0, 0, 0], n)]
            in_suite = False
    return total


def parse_gate(text):
    """tests/vm/gate.sh's output: "ok - KERNEL: CONFIGURATION: N programs loaded",
    "not ok - KERNEL: CONFIGURATION: why", "ok - KERNEL: CONFIGURATION # SKIP why", and its
    summary. Each configuration is one test, named by its command line."""
    failures, skips, summary = [], [], None
    for line in text.splitlines():
        m = re.match(r"^(not ok|ok) - (.*)$", line)
        if m:
            rest = m.group(2)
            kernel, _, tail = rest.partition(": ")
            if kernel == "bpf-gate":  # the gate's own line: the VM or the check did not finish
                name, why = kernel, tail
            else:
                name, _, why = tail.partition(": ")
            if m.group(1) == "not ok":
                failures.append({"suite": "bpf-gate", "test": name.strip(), "message": why.strip()[:300]})
            elif "# SKIP" in tail:
                name, _, why = tail.partition("# SKIP")
                skips.append({"suite": "bpf-gate", "test": name.strip(), "reason": why.strip()[:300]})
        m = re.match(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?", line)
        if m:
            summary = [int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)]
    return summary, failures, skips


def record(outdir, native=False, gate=False):
    """gate: outdir is the gate's folder (gate.txt, and out/ from tests/vm/vmtest.sh)."""
    gdir, outdir = (outdir, os.path.join(outdir, "out")) if gate else (None, outdir)
    res = keyvals(read(os.path.join(outdir, "result")))
    facts = dict(l.split(": ", 1) for l in read(os.path.join(outdir, "facts")).splitlines() if ": " in l)
    if gate:
        summary, failures, skips = parse_gate(read(os.path.join(gdir, "gate.txt")))
    else:
        summary, failures, skips = parse_runlog(read(os.path.join(outdir, "run.log")))
    if not res or summary is None:
        what = "gate.txt's summary" if gate else "run.log's summary"
        sys.exit(f"matrix.py: {gdir or outdir} holds no finished run (result, {what})")
    kernel = res.get("kernel") or facts.get("kernel", "?").split()[0]
    arch = "arm64" if res.get("arch") in ("arm64", "aarch64") else "x86-64"
    ver = re.search(r"Debian (\S+)", facts.get("version", ""))
    rec = {
        "kernel": kernel,
        "version": ver.group(1) if ver else facts.get("version", ""),
        "arch": arch,
        "package": res.get("package", ""),
        "how": f"native, {res.get('cpus', '?')} CPUs" if native else f"QEMU {res.get('qemu', '?')} {res.get('accel', 'tcg').upper()}, "
                                       f"{res.get('cpus', '?')} vCPUs",
        "host": res.get("host", ""),
        "date": res.get("date", ""),
        "commit": res.get("commit", ""),
        "dirty": res.get("dirty") == "yes",
        "suites": GATE if gate else res.get("suites") or "all",
        "passed": summary[0], "failed": summary[1], "skipped": summary[2],
        "seconds": int(res.get("vm_seconds") or res.get("seconds") or 0),
        "host_dpkg_changed": res.get("host_dpkg") or None,
        "failures": failures,
        "skips": skips,
        "features": parse_features(read(os.path.join(outdir, "features.txt"))),
    }
    if gate:
        rec["kind"] = "gate"
    os.makedirs(RUNS, exist_ok=True)
    path = os.path.join(RUNS, f"{kernel}-{arch}{'-gate' if gate else ''}.json")
    old = json.loads(read(path, "{}") or "{}")
    hist = old.get("earlier", [])
    if old.get("date"):
        hist.insert(0, {k: old.get(k) for k in ("date", "commit", "dirty", "passed", "failed", "skipped",
                                                 "seconds")})
    rec["earlier"] = hist[:HISTORY]
    with open(path + ".tmp", "w") as f:
        json.dump(rec, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"matrix.py: recorded {os.path.relpath(path, ROOT)}: {summary[0]} passed, {summary[1]} failed, "
          f"{summary[2]} skipped, {rec['seconds']} s")


# --- the page ------------------------------------------------------------------------------


def records():
    out = []
    for p in sorted(glob.glob(os.path.join(RUNS, "*.json"))):
        with open(p) as f:
            r = json.load(f)
        r["_file"] = os.path.relpath(p, ROOT)
        out.append(r)

    def order(r):
        nums = [int(x) for x in re.findall(r"\d+", r["kernel"].split("-")[0])[:3]]
        return (nums, r["arch"], is_gate(r))
    return sorted(out, key=order)


def is_gate(r):
    return r.get("kind") == "gate"


def one_per_kernel(rs):
    """The kernel's facts (features, prologues) once per kernel and architecture: from its
    full run where there is one, else from its load gate (the VM probes them either way)."""
    full = {(r["kernel"], r["arch"]) for r in rs if not is_gate(r)}
    return [r for r in rs if not is_gate(r) or (r["kernel"], r["arch"]) not in full]


def kname(r):
    v = f" ({r['version']})" if r.get("version") and r["version"] not in r["kernel"] else ""
    return f"{r['kernel']}{v}"


def commit(r):
    return f"{r['commit']}{' + changes' if r.get('dirty') else ''}" if r.get("commit") else "?"


def feat(r, name):
    f = r.get("features", {}).get(name)
    if not f:
        return None
    a = f.get("arch", "all")
    if a not in ("all", "") and a.replace("_", "-") != r["arch"] and not (a == "aarch64" and r["arch"] == "arm64"):
        return "n/a"
    return f.get("here")


COLS = [("uprobe_multi", "uprobe_multi link"), ("uretprobe syscall", "uretprobe system call"),
        ("caller at entry", "caller at entry in user stacks"), ("ring buffer", "ring buffer"),
        ("bpf_loop", "bpf_loop"), ("module BTF", "module BTF"),
        ("cookies", "bpf_get_attach_cookie (cookies)"), ("group_dead", "sched_process_exit group_dead")]


def what_it_does(r):
    """What gpuprobe does with the features measured (the fallbacks of the table below)."""
    if feat(r, "bpf_get_attach_cookie (cookies)") == "no":
        return "refuses to start, one line naming attach cookies (5.15)"
    did = ["uprobe_multi links" if feat(r, "uprobe_multi link") == "yes" else "perf-event uprobes"]
    if feat(r, "caller at entry in user stacks") == "no":
        did.append("BPF adds the caller")
    if feat(r, "sched_process_exit group_dead") == "no":
        did.append("leader-exit rule")
    emu = emulated(r)
    if emu is not None and ("stp-fp" if r["arch"] == "arm64" else "push") not in emu:
        did.append("frame-record prologues single-stepped")
    return ", ".join(did)


def emulated(r):
    f = r.get("features", {}).get("frame prologue emulated at the trap")
    if not f or "emulated here:" not in f.get("seen", ""):
        return None
    return f["seen"].split("emulated here:", 1)[1].split()


def result(r):
    s = f"{r['passed']} passed, {r['failed']} failed, {r['skipped']} skipped"
    if is_gate(r):
        s = f"load checks: {s}"
    return s if not r["failed"] else f"**{s}**"


def suites(r):
    return "**load gate only** (`gpuprobe check --bpf`)" if is_gate(r) else r["suites"]


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def gen_features(rs):
    head = ["kernel", "arch", "measured"] + [c for c, _ in COLS] + ["prologue emulated", "what gpuprobe does"]
    rows = []
    for r in one_per_kernel(rs):
        emu = emulated(r)
        rows.append([kname(r), r["arch"], f"{r['how'].split(',')[0]}, {r['date']}{' (load gate)' if is_gate(r) else ''}"] +
                    [feat(r, n) or "?" for _, n in COLS] +
                    [", ".join(emu) if emu else "none" if emu == [] else "?", what_it_does(r)])
    return table(head, rows)


PROLOGUES = {"x86-64": ["push", "endbr/bti", "nop", "branch", "mov", "sub-sp"],
             "arm64": ["stp-fp", "endbr/bti", "pac", "nop", "branch", "mov", "sub-sp"]}
PROLOGUE_HEAD = [("push %rbp / stp x29,x30", {"push", "stp-fp"}), ("endbr64 / bti", {"endbr/bti"}),
                 ("paciasp", {"pac"}), ("nop", {"nop"}), ("jmp / b", {"branch"}), ("mov", {"mov"}),
                 ("sub sp", {"sub-sp"})]


def gen_prologues(rs):
    rows = []
    for r in one_per_kernel(rs):
        emu = emulated(r)
        if emu is None:
            continue
        tried = PROLOGUES[r["arch"]]
        row = [f"{r['arch']} {kname(r)}"]
        for _, kinds in PROLOGUE_HEAD:
            k = next((k for k in tried if k in kinds), None)
            row.append("—" if k is None else "emulated" if k in emu else
                       "**stepped**" if k in ("push", "stp-fp") else "stepped")
        rows.append(row)
    return table(["kernel"] + [h for h, _ in PROLOGUE_HEAD], rows)


def gen_runs(rs):
    rows = []
    for r in rs:
        times = [r["seconds"]] + [e["seconds"] for e in r.get("earlier", []) if e.get("commit") == r["commit"]]
        t = f"{min(times)}–{max(times)} s ({len(times)} runs)" if len(times) > 1 else f"{r['seconds']} s"
        earlier = "; ".join(f"{e['date']} {e['commit']}{'+' if e.get('dirty') else ''}: {e['passed']}/{e['failed']}/"
                            f"{e['skipped']}, {e['seconds']} s" for e in r.get("earlier", [])[:3])
        rows.append([kname(r), r["arch"], r["how"], r["date"], f"`{commit(r)}`", suites(r), result(r), t,
                     earlier or "—"])
    return table(["kernel", "arch", "how", "date", "commit", "suites", "result", "time", "earlier (p/f/s)"], rows)


def gen_outcomes(rs):
    """Failures and skips of the latest run of each kernel, grouped by test."""
    out = []
    fails = [(f, r) for r in rs for f in r.get("failures", [])]
    if fails:
        out.append("Failed in the latest runs:\n")
        for f, r in fails:
            gate = " (load gate)" if is_gate(r) else ""
            out.append(f"- `{f['test']}` ({f['suite']}) on {kname(r)} {r['arch']}{gate}: {f['message']}")
        out.append("")
    else:
        out.append("No test or load-gate configuration failed in the latest run of any kernel above.\n")
    by = {}
    for r in rs:
        for s in r.get("skips", []):
            where = by.setdefault((s["test"], s["reason"]), [])
            w = f"{r['kernel']} {r['arch']}{' (load gate)' if is_gate(r) else ''}"
            if w not in where:
                where.append(w)
    # many tests skipped for one reason on the same kernels (every test gpuprobe ran on a
    # kernel it refuses): one line with their number and the first names
    shared = {}
    for (test, why), where in by.items():
        shared.setdefault((why, tuple(where)), []).append(test)
    if by:
        out.append("Skipped, each with the reason the test printed (counted in the skips above):\n")
        lines = []
        for (why, where), tests in shared.items():
            tests.sort()
            if len(tests) > SKIPS_NAMED:
                names = ", ".join(f"`{t}`" for t in tests[:SKIPS_NAMED])
                lines.append((tests[0], f"- {len(tests)} tests ({names}, …) on {', '.join(where)}: {why}"))
            else:
                lines += [(t, f"- `{t}` on {', '.join(where)}: {why}") for t in tests]
        out += [l for _, l in sorted(lines)]
    return "\n".join(out)


def gen_dpkg(rs):
    warn = [r for r in rs if r.get("host_dpkg_changed")]
    return "\n".join(f"- {kname(r)} {r['arch']}: dpkg changed the host's packages during the run "
                     f"(last at {r['host_dpkg_changed']}); the guest's /usr is the host's" for r in warn)


GENERATORS = {"features": gen_features, "prologues": gen_prologues, "runs": gen_runs, "outcomes": gen_outcomes}


def render_text(text):
    rs = records()
    for name, gen in GENERATORS.items():
        pat = re.compile(rf"(<!-- generated: {name} [^>]*-->\n)(.*?)(<!-- end: {name} -->)", re.S)
        if not pat.search(text):
            sys.exit(f"matrix.py: {PAGE} has no '<!-- generated: {name} ... -->' ... '<!-- end: {name} -->'")
        body = gen(rs)
        if name == "runs" and gen_dpkg(rs):
            body += "\n\n" + gen_dpkg(rs)
        text = pat.sub(lambda m: m.group(1) + body + "\n" + m.group(3), text, count=1)
    return text


def main(argv):
    if len(argv) >= 2 and argv[0] == "record":
        record(argv[1], native="--native" in argv[2:])
    elif len(argv) == 2 and argv[0] == "record-gate":
        record(argv[1], gate=True)
    elif argv == ["render"]:
        old = read(PAGE)
        new = render_text(old)
        if new != old:
            with open(PAGE, "w") as f:
                f.write(new)
        print(f"matrix.py: {os.path.relpath(PAGE, ROOT)} from {len(records())} run records")
    elif len(argv) == 2 and argv[0] == "summary":
        total = total_summary(read(argv[1]))
        if total:
            print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    elif argv == ["check"]:
        if render_text(read(PAGE)) != read(PAGE):
            print("matrix.py: docs/support-matrix.md differs from its run records: make support-matrix",
                  file=sys.stderr)
            return 1
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
