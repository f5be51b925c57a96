# SPDX-License-Identifier: BSD-3-Clause
"""The docs against the tool (issue 32: docs that cannot drift). Every subcommand's --help
lists exactly the options it accepts: each listed option is tried (with a value of its
kind, then an option no one has, whose refusal proves the first was taken) and every
option another front end lists is refused; the example commands the helps print take only
their subcommand's options. The man page and the option table of
docs/modes.md name every option, and every --option the README and docs/ name exists. The
README starts with the two commands for a fresh machine, and its links lead to files. The
example outputs, captures and probe counts of the README and docs/ are what the tool prints
now (tests/tools/docgen.py --check, on the stand-in driver; `make docs` regenerates them),
and the gpuprobe top captures have the table's current header. The tracing line's probe
counts mean what the docs say (a libcuda file found later gets the first figure), and a
closed pipe ends with the exit status the docs give."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import gp
from gp import GPUPROBE, ROOT, check, eq

SUBCOMMANDS = [[], ["daemon"], ["top"], ["check"], ["convert"], ["flame"]]
SENTINEL = "--zz-no-such-option"
# options other programs have, named in the docs (Prometheus', bcc's, torchrun's, tools')
FOREIGN = {"--web.config.file", "--query-compute-apps", "--query-gpu", "--nproc_per_node", "--nproc-per-node", "--propagation", "--mount-proc",
           "--reuid", "--regid", "--clear-groups", "--inh-caps", "--ambient-caps", "--init-groups",
           "--user", "--privileged", "--net", "--pid", "--cap-add", "--rm", "--gpus", "--no-install-recommends",
           "--fork", "--data-urlencode", "--runtime", "--headless", "--screenshot", "--window-size",
           "--disable-gpu", "--no-sandbox", "--virtual-time-budget", "--force-device-scale-factor",
           "--standalone", "--nnodes", "--master-port", "--master-addr", "--rdzv-backend",
           "--config.file", "--storage.tsdb.path", "--web.listen-address", "--query", "--time",
           "--lint", "--dry-run", "--ignore-missing", "--enable-feature", "--no-pager", "--since",
           # the workloads' (tests/apps), the benchmarks' and scripts' (bench/run.py,
           # tests/gpu), docker's and the kubelet's
           "--stale", "--hold", "--threads", "--wait", "--only", "--canary", "--configs", "--gp", "--launch-bin",
           "--launch-cap", "--lead", "--out", "--profiler-cap", "--python", "--single-thread", "--torch-cap",
           "--torch-single-thread", "--torch-window", "--workloads", "--cgroup-root", "--security-opt",
           "--force-depends"}


def help_options(sub):
    """{"--name": (short or None, ARG or None)} of a subcommand's --help."""
    r = gp.run([GPUPROBE] + sub + ["--help"])
    eq(r.returncode, 0, f"{sub} --help exit status")
    opts = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^\s+(?:-(\w), )?--([a-z][a-z0-9-]*)(?:=(\S+))?(?:\s|$)", line)
        if m and not line.rstrip().endswith("options:"):  # " --memleak options:" heads a section
            opts["--" + m.group(2)] = (m.group(1), m.group(3))
    return opts


EMPTY = os.path.join(gp.state_dir(), "empty")  # a regular file (--config reads it at once)
open(EMPTY, "w").close()


def value_for(arg):
    """A value the option takes, by the name of its argument in --help."""
    if arg is None:
        return None
    if "|" in arg:
        return arg.split("|")[0]
    return {"SECONDS": "1", "N": "1", "PID[,PID...]": str(os.getpid()), "FILE": EMPTY, "PATH": "/dev/null",
            "BYTES": "4096", "PCT": "50", "ADDR:PORT": "127.0.0.1:1", "COLUMNS": "80", "DIR": "/tmp", "NAME": "x",
            "GLOB": "cu*", "MAJOR[:NAME]": "1", "TEXT": "t", "PIXELS": "800", "UNIT": "bytes", "S": "1"}.get(arg, "1")


def test_dashboard_names_documented_families():
    """Every family a Grafana query names is in docs/metrics.md (a histogram's by its
    _bucket, _sum or _count), and the dashboard is valid JSON with unique panel ids."""
    import json
    with open(os.path.join(ROOT, "examples", "grafana", "gpuprobe.json")) as f:
        dash = json.load(f)
    ids = [p["id"] for p in dash["panels"]]
    eq(len(ids), len(set(ids)), "panel ids unique")
    doc = doc_text("docs/metrics.md")
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    check(exprs, "queries")
    for fam in sorted({f for e in exprs for f in re.findall(r"gpuprobe_[a-z_]+", e)}):
        base = re.sub(r"_(bucket|sum|count)$", "", fam)
        check(f"`{fam}`" in doc or f"`{base}`" in doc, f"the dashboard names {fam}, not in docs/metrics.md")


def test_help_lists_exactly_what_is_accepted():
    helps = {" ".join(sub) or "gpuprobe": help_options(sub) for sub in SUBCOMMANDS}
    every = set().union(*helps.values())
    for sub in SUBCOMMANDS:
        name = " ".join(sub) or "gpuprobe"
        opts = helps[name]
        check("--help" in opts and "--version" in opts, f"{name}: -h and -V listed")
        for opt, (short, arg) in sorted(opts.items()):
            if opt in ("--help", "--version"):
                continue
            val = value_for(arg)
            for form in ([opt] + ([val] if val is not None else []),) + ((["-" + short] + ([val] if val else []),) if short else ()):
                r = gp.run([GPUPROBE] + sub + form + [SENTINEL], timeout=20)
                line = (r.stderr.splitlines() or [""])[0]
                check(r.returncode == 2 and SENTINEL in line,
                      f"{name} {' '.join(form)}: listed in --help but not taken: {r.stderr.strip()[:300]!r}")
        for opt in sorted(every - set(opts)):
            r = gp.run([GPUPROBE] + sub + [opt, "1", SENTINEL], timeout=20)
            line = (r.stderr.splitlines() or [""])[0]
            check(r.returncode == 2 and SENTINEL not in line and opt in line,
                  f"{name} {opt}: not in its --help, but taken: {r.stderr.strip()[:300]!r}")


def source_options():
    """Every option the source defines: the entries of the struct gp_option tables (the
    parser's only source of options) and the modes' flags."""
    names = set()
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            if f.endswith(".c"):
                text = open(os.path.join(d, f)).read()
                names |= {"--" + n for n in re.findall(r'^\s*\{ "([a-z][a-z0-9-]+)", (?:\'\w\'|0), ', text, re.M)}
                names |= {"--" + n for n in re.findall(r'^\s*\.flag = "([a-z][a-z0-9-]+)",', text, re.M)}
    return names


def test_every_option_in_the_source_is_in_a_help():
    """An option a table defines and no --help lists (a section --help did not print) would
    be accepted unseen."""
    every = set().union(*(help_options(sub) for sub in SUBCOMMANDS))
    src = source_options()
    check(len(src) > 40, f"the option tables were read ({len(src)} options)")
    eq(sorted(src - every), [], "options of the source that no --help lists")


def doc_text(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def man_options():
    text = doc_text("docs/gpuprobe.8").replace("\\-", "-")
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]", text)), text


def test_man_page_names_every_option():
    named, text = man_options()
    for sub in SUBCOMMANDS:
        name = " ".join(sub) or "gpuprobe"
        missing = sorted(set(help_options(sub)) - named)
        eq(missing, [], f"{name}'s options the man page does not name")
    synopsis = text[text.index(".SH SYNOPSIS"):text.index(".SH DESCRIPTION")]
    for sub in SUBCOMMANDS[1:]:
        check(f"gpuprobe {sub[0]}" in synopsis, f"the man page's SYNOPSIS shows gpuprobe {sub[0]}")


def test_option_table_of_modes_md():
    rows = "\n".join(l for l in doc_text("docs/modes.md").splitlines() if l.startswith("| `-"))
    missing = [o for o in help_options([]) if not re.search(re.escape(o) + r"\b", rows)]
    eq(missing, [], "gpuprobe --help's options missing in docs/modes.md's option table")


OPT = re.compile(r"(?<![\w/.-])--[a-z][a-z0-9-]*[a-z0-9](?![\w.*-])")


def gpuprobe_options(text):
    """The options a markdown text gives gpuprobe: in a code span or a code block's line
    that runs gpuprobe, those before its command (" -- "); a code span that is an option."""
    spans = re.findall(r"`([^`\n]+)`", text)
    spans += [l for b in re.findall(r"```[^\n]*\n(.*?)```", text, re.S) for l in b.splitlines()]
    found = set()
    for sp in spans:
        if re.search(r"\bgpuprobe\b", sp):
            found |= set(OPT.findall(sp[re.search(r"\bgpuprobe\b", sp).start():].split(" -- ")[0]))
        elif OPT.match(sp.strip()):
            found.add(OPT.match(sp.strip()).group(0))
    return found


def test_docs_name_only_real_options():
    every = set().union(*(help_options(sub) for sub in SUBCOMMANDS))
    bad = []
    for path in ["README.md"] + ["docs/" + f for f in sorted(os.listdir(os.path.join(ROOT, "docs"))) if f.endswith(".md")]:
        bad += [f"{path}: {o}" for o in sorted(gpuprobe_options(doc_text(path)) - every - FOREIGN)]
    # the man page: every option it sets in bold is gpuprobe's
    man = doc_text("docs/gpuprobe.8").replace("\\-", "-")
    for line in man.splitlines():
        if re.match(r"^\.(B|BR|BI|IR|RB|TP)\b", line):
            bad += [f"docs/gpuprobe.8: {o}" for o in OPT.findall(line) if o not in every and o not in FOREIGN]
    eq(sorted(set(bad)), [], "options named in the docs that no gpuprobe --help lists")


def test_help_examples_use_real_options():
    """Each example command a --help prints takes only options its subcommand's --help
    lists."""
    helps = {" ".join(sub): help_options(sub) for sub in SUBCOMMANDS}
    bad, seen = [], 0
    for sub in SUBCOMMANDS:
        for line in gp.run([GPUPROBE] + sub + ["--help"]).stdout.splitlines():
            m = re.match(r"^\s+gpuprobe((?: (?:daemon|check|convert|flame|top)(?= |$))?)(.*)$", line)
            if not m:
                continue
            seen += 1
            args = re.split(r" -- |\s#|\||>", m.group(2))[0]
            bad += [f"{line.strip()}: {o}" for o in OPT.findall(args) if o not in helps[m.group(1).strip()]]
    check(seen >= 15, f"the helps' examples were read ({seen})")
    eq(bad, [], "options in the helps' examples that their subcommand does not list")


def test_readme_starts_with_the_two_commands():
    """A fresh machine's two commands come first (.ci/run runs the second), before any
    other command."""
    text = doc_text("README.md")
    blocks = re.findall(r"```(?:sh)?\n(.*?)```", text, re.S)
    eq([b.strip() for b in blocks[:2]], ["make demo", "make test"], "the README's first two commands")
    ci = doc_text(".ci/run")
    check(re.search(r"^exec make test$", ci, re.M), ".ci/run runs the README's test command")


def test_links_lead_to_files():
    bad = []
    for path in ["README.md"] + ["docs/" + f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")]:
        base = os.path.dirname(os.path.join(ROOT, path))
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc_text(path)):
            if re.match(r"^[a-z]+://", target):
                continue
            if not os.path.exists(os.path.normpath(os.path.join(base, target))):
                bad.append(f"{path}: {target}")
    eq(bad, [], "links to files that do not exist")
    for page in ("docs/support-matrix.md", "docs/troubleshooting.md", "docs/json.md", "docs/security.md",
                 "docs/modes.md", "docs/daemon.md", "docs/deployment.md"):
        check(f"]({page})" in doc_text("README.md"), f"the README links {page}")


def test_generated_examples_match_the_tool():
    import platform
    if platform.machine() != "x86_64":
        # (the arm64 VM, 6.1: main+0x2a0 for +0x2a5, libc's frames without their lines,
        # __libc_start_call_main folded into __libc_start_main by its return address)
        gp.skip(f"docs/' examples are x86-64 captures: frame offsets and libc's frames differ on "
                f"{platform.machine()}; the examples are checked against the tool on x86-64 (CI)")
    if not os.path.exists("/usr/bin/python3.11"):
        gp.skip("the Python example runs Debian 12's /usr/bin/python3.11, absent here")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "tools", "docgen.py"), "--check"],
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"tests/tools/docgen.py --check:\n{r.stdout[-4000:]}{r.stderr[-2000:]}")


def test_top_captures_have_the_current_header():
    for w, h in ((80, 24), (100, 30)):
        cap = doc_text(f"docs/captures/top-{w}x{h}.txt").splitlines()
        eq(len(cap), h, f"top-{w}x{h}.txt: {h} lines")
        check(all(len(l) <= w for l in cap), f"top-{w}x{h}.txt: {w} columns")
        # as docgen.py makes them: with the stand-in NVML (its SM% column)
        script = tempfile.NamedTemporaryFile("w", suffix=".script", delete=False)
        script.write("gpu 0 util=1\n")
        script.close()
        env = {"LD_LIBRARY_PATH": os.path.join(gp.OUT, "fakenvml"), "FAKENVML_SCRIPT": script.name}
        r = gp.run([GPUPROBE, "top", "--batch", "-n", "1", "-i", "0.1", "--width", str(w), "--libcuda", gp.FAKECUDA],
                   env=env)
        os.unlink(script.name)
        eq(r.returncode, 0, f"top --batch ({r.stderr[-300:]})")
        head = [l for l in r.stdout.splitlines() if l.split()[:3] == ["PID", "S", "COMM"]]
        check(head and head[0] in cap, f"top-{w}x{h}.txt has the table's header {head[:1]}")


TRACING = re.compile(r"^gpuprobe: tracing .*?: (\d+) probes? on (.*?)(?: \((\d+) in all\))?(?:; Ctrl-C to end)?$", re.M)


def test_probe_counts_of_the_tracing_line():
    """The README's and the man page's reading of the "tracing" line: its first figure is
    the probes on the libcuda file, the one in parentheses all of them; a libcuda file found
    later gets as many as the first figure (its "probing libcuda" line). The later file is
    a private copy of the stand-in (an inode no other process maps, so that it is found
    late, not at the start)."""
    d = tempfile.mkdtemp(prefix="gp-docs-late-")
    try:
        late = os.path.join(d, "libcuda.so.1")
        shutil.copy(gp.FAKECUDA, late)
        load = ["python3", "-c", f"import ctypes, time; time.sleep(0.3); ctypes.CDLL({late!r})"]
        for mode in (["--memleak"], ["--cudatrace"], ["--cudatrace", "--no-latency"], ["--bandwidth-util"]):
            r = gp.run([GPUPROBE] + mode + ["--libcuda", gp.FAKECUDA, "--", "true"])
            m = TRACING.search(r.stderr)
            check(m and m.group(3), f"{mode}: a tracing line with both figures: {r.stderr[-500:]!r}")
            first, total = int(m.group(1)), int(m.group(3))
            check(0 < first < total, f"{mode}: {first} probes on libcuda, {total} in all")
            r = gp.run([GPUPROBE] + mode + ["--"] + load)
            m = re.search(r"^gpuprobe: probing libcuda " + re.escape(late) + r" of PID \d+ .*?: (\d+) probes", r.stderr, re.M)
            check(m, f"{mode}: the copy loaded later was probed: {r.stderr[-800:]!r}")
            eq(int(m.group(1)), first, f"{mode}: probes on a libcuda file found later")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_a_closed_pipe_ends_with_the_documented_status():
    """--help and the man page give the exit status after SIGPIPE (the reports' reader went
    away); node-wide runs whose stdout is a pipe closed before their first report end with
    it, and no error line, every time (it was 1, with a stale errno, in half the runs)."""
    status = int(re.search(r"(\d+) after SIGPIPE", gp.run([GPUPROBE, "--help"]).stdout).group(1))
    man = doc_text("docs/gpuprobe.8")
    check(re.search(rf"exit status is {status}\b", man), f"the man page gives {status} after SIGPIPE")
    check(re.search(rf"\b{status} when the reader of the reports went away", doc_text("docs/modes.md")),
          f"docs/modes.md gives {status} after SIGPIPE")
    for mode in ("--memleak", "--cudatrace", "--bandwidth-util"):
        for _ in range(3):
            rfd, wfd = os.pipe()
            os.close(rfd)  # gone before anything is written
            p = subprocess.Popen([GPUPROBE, mode, "--libcuda", gp.FAKECUDA, "-i", "0.1", "-d", "20"],
                                 stdout=wfd, stderr=subprocess.PIPE, text=True, start_new_session=True)
            os.close(wfd)
            try:
                # x GP_TIME_SLACK: arm64 under QEMU's TCG, probes without uprobe_multi, took
                # longer than 30 s to start and go
                _, err = p.communicate(timeout=30 * gp.TIME_SLACK)
            finally:
                if p.poll() is None:
                    os.killpg(p.pid, 9)
                    p.wait()
            eq(p.returncode, status, f"{mode}: exit status ({err[-400:]!r})")
            eq([l for l in err.splitlines() if "writing the reports" in l], [], f"{mode}: error lines")


if __name__ == "__main__":
    gp.main([v for k, v in sorted(globals().items()) if k.startswith("test_")])
