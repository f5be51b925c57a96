#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The layering of src/ (docs/design.md, "Layout"), checked from every `#include "..."`.

It fails, naming each include at fault, on
  (a) a cycle between files: a module (x.c, x.h and x_impl.h are one) that reaches itself again
      through includes (run.c includes allocsrc.h while allocsrc.c includes run.h);
  (b) a mode folder (src/modes/X) including from another mode folder;
  (c) a folder including from a folder that includes from it (core -> out and out -> core);
  (d) src/lib including from any other folder of src/ (lib is the bottom: no libbpf, no run;
      core, out, cli and the modes build on it);
  (e) the run's state (core/run_impl.h) included outside the runtime: only src/core, a
      mode's runtime files (not its *_report.c renderers) and the report assembly
      (out/report.c, out/hits.c) may; the front ends and the renderers go through core/run.h and a
      snapshot's env.
Includes are path-qualified ("lib/elfsym.h", "core/run.h", "modes/nccl/nccl.h": the
Makefile's -I list is -Isrc, the generated folder and bpf/); they resolve against src/, and a
bare name still resolves as before (the including file's folder, then src/lib, src/core,
src/out, src/cli, src/modes, src/modes/*) so that a stray one is checked too. Names found
nowhere in src/ (generated skeletons, bpf/ headers) are outside the layering.

ALLOWED lists includes against the rule that are tolerated for a while, each with what
removes it: they are left out of the graph, so the check passes and any new one fails.
It is empty; an entry that no longer matches an include fails too (remove it).

Usage: check_layers.py [--self-test] [SRC]. Prints "ok"/"not ok" lines and
"N passed, M failed" (tests/run.sh counts it).
"""
import collections
import os
import re
import shutil
import sys
import tempfile

# (including file, included file), paths relative to src/.
ALLOWED = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EXTS = (".c", ".h", ".def")


def search_dirs(src):
    dirs = ["lib", "core", "out", "cli", "modes"]
    modes = os.path.join(src, "modes")
    if os.path.isdir(modes):
        dirs += sorted("modes/" + d for d in os.listdir(modes) if os.path.isdir(os.path.join(modes, d)))
    return dirs + [""]


def sources(src):
    for d, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith(EXTS):
                yield os.path.relpath(os.path.join(d, f), src)


def resolve(src, dirs, including, name):
    for d in [""] + [os.path.dirname(including)] + dirs:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(os.path.join(src, p)):
            return p
    return None


def includes(src):
    """Every (file, included file) pair inside src, relative paths."""
    dirs = search_dirs(src)
    edges = []
    for f in sources(src):
        with open(os.path.join(src, f), errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            p = resolve(src, dirs, f, name)
            if p and p != f:
                edges.append((f, p))
    return edges


def module(path):
    """x.c, x.h and x_impl.h (x's private state) are one module."""
    base = os.path.splitext(path)[0]
    return base[:-len("_impl")] if base.endswith("_impl") else base


def folder(path):
    return os.path.dirname(path) or "."


def mode_of(path):
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "modes" else None


def cycles(edges):
    """Strongly connected modules of more than one, each with the includes inside it."""
    graph = collections.defaultdict(set)
    for a, b in edges:
        if module(a) != module(b):
            graph[module(a)].add(module(b))
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):  # Tarjan, iterative over successors
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(comp)

    for v in sorted(list(graph)):
        if v not in index:
            visit(v)
    return [(sorted(c), sorted((a, b) for a, b in edges if module(a) in c and module(b) in c and
                                module(a) != module(b))) for c in out]


RUN_PRIVATE = "core/run_impl.h"
REPORT_ASSEMBLY = ("out/report.c", "out/hits.c")


def runtime(path):
    """May include the run's state: core, a mode's runtime files, the report assembly."""
    return (folder(path) == "core" or path in REPORT_ASSEMBLY or
            (mode_of(path) is not None and not path.endswith("_report.c")))


def violations(edges):
    """Lines naming each include against the layering."""
    bad = []
    for comp, inside in cycles(edges):
        bad.append("include cycle between %s: %s" % (", ".join(comp), "; ".join("%s includes %s" % e for e in inside)))
    for a, b in edges:
        if mode_of(a) and mode_of(b) and mode_of(a) != mode_of(b):
            bad.append("mode %s includes from mode %s: %s includes %s" % (mode_of(a), mode_of(b), a, b))
    for a, b in edges:
        if folder(a) == "lib" and folder(b) != "lib":
            bad.append("lib includes from %s: %s includes %s" % (folder(b).split("/")[0], a, b))
    for a, b in edges:
        if b == RUN_PRIVATE and not runtime(a):
            bad.append("the run's state is private to the runtime: %s includes %s" % (a, b))
    pairs = collections.defaultdict(list)
    for a, b in edges:
        if folder(a) != folder(b):
            pairs[(folder(a), folder(b))].append((a, b))
    for (fa, fb), es in sorted(pairs.items()):
        if fa < fb and (fb, fa) in pairs:
            # the fewer includes first, each named: most likely the ones to remove
            few, many = sorted([es, pairs[(fb, fa)]], key=len)
            bad.append("folders %s and %s include from each other: %s; and the other way %d includes (%s%s)" %
                       (fa, fb, "; ".join("%s includes %s" % e for e in few), len(many),
                        "; ".join("%s includes %s" % e for e in many[:3]), ", ..." if len(many) > 3 else ""))
    return bad


def check(src, allowed):
    """(violations, stale allow-list entries) of the tree at src."""
    edges = includes(src)
    present = set(edges)
    kept = [e for e in edges if e not in allowed]
    return violations(kept), sorted(e for e in allowed if e not in present)


# ---- the self-test: tiny fake trees, each with a known verdict ----

def fake_tree(files):
    root = tempfile.mkdtemp(prefix="check_layers.")
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as fh:
            fh.write(text)
    return root


def inc(*names):
    return "".join('#include "%s"\n' % n for n in names) + "#include <stdio.h>\n"


SELF_TESTS = [
    # (name, files, allowed, expected words in the violations (empty: none), stale expected)
    ("clean tree passes", {
        "core/a.h": inc(), "core/a.c": inc("a.h", "b.h"), "core/b.h": inc(), "core/b.c": inc("b.h"),
        "out/w.c": inc("a.h", "w.h"), "out/w.h": inc("a.h"), "modes/m/m.c": inc("a.h", "w.h", "m.h"),
        "modes/m/m.h": inc(), "modes/modes.c": inc("m.h"),
    }, set(), [], []),
    ("a cycle through a .c and a .h fails", {
        "core/run.h": inc(), "core/run.c": inc("run.h", "allocsrc.h"),
        "core/allocsrc.h": inc(), "core/allocsrc.c": inc("allocsrc.h", "run.h"),
    }, set(), ["include cycle between core/allocsrc, core/run", "core/allocsrc.c includes core/run.h"], []),
    ("a cycle of headers fails", {
        "core/x.h": inc("y.h"), "core/y.h": inc("z.h"), "core/z.h": inc("x.h"),
    }, set(), ["include cycle between core/x, core/y, core/z"], []),
    ("a mode including another mode fails", {
        "modes/a/a.c": inc("b.h"), "modes/b/b.h": inc(),
    }, set(), ["mode a includes from mode b: modes/a/a.c includes modes/b/b.h"], []),
    ("a path-qualified include is resolved", {
        "modes/a/a.c": inc("modes/b/b.h"), "modes/b/b.h": inc(),
    }, set(), ["mode a includes from mode b"], []),
    ("folders including from each other fail", {
        "core/r.c": inc("j.h"), "out/j.h": inc(), "out/p.c": inc("u.h"), "core/u.h": inc(),
    }, set(), ["folders core and out include from each other", "core/r.c includes out/j.h"], []),
    ("an allowed include passes", {
        "core/r.c": inc("j.h"), "out/j.h": inc(), "out/p.c": inc("u.h"), "core/u.h": inc(),
    }, {("core/r.c", "out/j.h")}, [], []),
    ("an allow-list entry that matches nothing fails", {
        "core/a.c": inc(),
    }, {("core/a.c", "out/gone.h")}, [], [("core/a.c", "out/gone.h")]),
    ("lib including from core fails", {
        "lib/a.c": inc("a.h", "run.h"), "lib/a.h": inc(), "core/run.h": inc(), "core/run.c": inc("a.h"),
    }, set(), ["lib includes from core: lib/a.c includes core/run.h"], []),
    ("lib including from a mode fails", {
        "lib/a.c": inc("modes/m/m.h"), "modes/m/m.h": inc(),
    }, set(), ["lib includes from modes: lib/a.c includes modes/m/m.h"], []),
    ("core, out and modes including from lib pass", {
        "lib/a.h": inc(), "lib/a.c": inc("lib/a.h"), "core/r.c": inc("lib/a.h"), "out/w.c": inc("lib/a.h"),
        "modes/m/m.c": inc("lib/a.h"),
    }, set(), [], []),
    ("the run's state from a front end fails", {
        "core/run_impl.h": inc("core/run.h"), "core/run.h": inc(), "core/run.c": inc("core/run_impl.h"),
        "cli/main.c": inc("core/run_impl.h"),
    }, set(), ["the run's state is private to the runtime: cli/main.c includes core/run_impl.h"], []),
    ("the run's state from a renderer fails, from a mode's runtime passes", {
        "core/run_impl.h": inc("core/run.h"), "core/run.h": inc(),
        "modes/m/m_mode.c": inc("core/run_impl.h"), "modes/m/m_report.c": inc("core/run_impl.h"),
    }, set(), ["the run's state is private to the runtime: modes/m/m_report.c includes core/run_impl.h"], []),
    ("unresolved and system includes are outside", {
        "core/a.c": inc("a.skel.h", "gpuprobe.h"),
    }, set(), [], []),
]


def self_test():
    results = []
    for name, files, allowed, want, want_stale in SELF_TESTS:
        root = fake_tree(files)
        try:
            bad, stale = check(root, allowed)
        finally:
            shutil.rmtree(root)
        text = "\n".join(bad)
        ok = (bool(bad) == bool(want) and all(w in text for w in want) and stale == sorted(want_stale))
        if not ok:
            print("# got violations: %r; stale: %r" % (bad, stale))
        results.append((ok, "self-test: " + name))
    return results


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
    results = self_test() if "--self-test" in argv or not args else []
    if "--self-test" not in argv or args:
        bad, stale = check(os.path.normpath(src), ALLOWED)
        for line in bad:
            print("# " + line)
        for a, b in stale:
            print("# allowed in tests/tools/check_layers.py but no longer included: %s includes %s "
                  "(remove the entry)" % (a, b))
        results.append((not bad, "src/ has no include against the layering (%d allowed today)" % len(ALLOWED)))
        results.append((not stale, "every allow-list entry still names an include"))
    for ok, name in results:
        print("%s - %s" % ("ok" if ok else "not ok", name))
    failed = sum(1 for ok, _ in results if not ok)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
