# SPDX-License-Identifier: BSD-3-Clause
"""Checks gpuprobe --memleak --json on tests/gpu/leak_exit.cu (issue 29):
    python3 check_leak_exit.py REPORT.json BINARY leak_exit.cu
The one leak (4 MiB) must have a complete stack whose frames read, from the user's code
out, make_buffer [inlined] <- train_step [inlined] <- main on the lines tagged in the
source, and the same (function, file:line) chain `addr2line -i -f` (binutils, on the same
binary) gives for main's return address (from make_buffer out: the cudaMalloc<T> template
of cuda_runtime.h is inlined into make_buffer as well). Prints the frames, PASS/FAIL lines; exit 1 on a
failure."""
import json
import os
import re
import subprocess
import sys

rep_path, binary, src = sys.argv[1:4]
reps = [json.loads(l) for l in open(rep_path) if l.startswith("{")]
final = [r for r in reps if r.get("report", r.get("kind")) == "final" and r.get("mode", "memleak") == "memleak"][-1]
ok = True


def fail(msg):
    global ok
    ok = False
    print("FAIL", msg)


tags = {}
for n, line in enumerate(open(src), 1):
    m = re.search(r"// @(\w+)", line)
    if m:
        tags[m.group(1)] = n
stacks = [s for p in final["processes"] for s in p["stacks"]]
leak = [s for s in stacks if s["outstanding_bytes"] == 4 << 20]
if len(leak) != 1:
    fail(f"one 4 MiB leak: {[(s['outstanding_bytes'], s['frames'][:3]) for s in stacks]}")
    sys.exit(1)
s = leak[0]
print("\n".join("    " + f for f in s["frames"]))
print("flags", s["flags"], "partial", s["partial"])
# C++ names are demangled with their parameters: "make_buffer(unsigned long) [inlined]"
func = [re.split(r"[+ (]", f, 1)[0] for f in s["frames"]]
if s["partial"] or s["flags"]:
    fail(f"a complete stack: {s['flags']}")
if "make_buffer" not in func or "main" not in func:
    fail(f"make_buffer and main named: {func}")
    sys.exit(1)
i, j = func.index("make_buffer"), func.index("main")
chain = s["frames"][i:j + 1]
got = [(func[k], f.rsplit(" at ", 1)[-1]) for k, f in zip(range(i, j + 1), chain)]
name = os.path.basename(src)
want = [(n, f"{name}:{tags[n]}") for n in ("make_buffer", "train_step", "main")]
print("chain   ", got)
print("tags    ", want)
if got != want:
    fail("make_buffer <- train_step <- main on the tagged lines")
if not all("[inlined]" in f for f in chain[:-1]) or "[inlined]" in chain[-1]:
    fail(f"make_buffer and train_step marked inlined, main not: {chain}")
sym, off = re.match(r"main\+0x([0-9a-f]+) ", chain[-1]).group(0, 1)
nm = subprocess.run(["nm", binary], capture_output=True, text=True).stdout
base = next(int(l.split()[0], 16) for l in nm.splitlines() if l.split()[-1] == "main")
out = subprocess.run(["addr2line", "-i", "-f", "-C", "-e", binary, hex(base + int(off, 16) - 1)],
                     capture_output=True, text=True).stdout.splitlines()
a2l = [(out[k].split("(")[0], os.path.basename(out[k + 1].split(" (discriminator")[0])) for k in range(0, len(out) - 1, 2)]
print("addr2line", a2l)
# cudaMalloc's own template (cuda_runtime.h) is inlined too: the chain from make_buffer out
names = [n for n, _ in a2l]
if "make_buffer" not in names or a2l[names.index("make_buffer"):] != got:
    fail("the chain addr2line -i -f gives, from make_buffer out")
if not any(f.startswith("cuMemAlloc") for f in s["frames"][:i]):
    fail(f"the driver's entry point below make_buffer: {s['frames'][:i]}")
print("PASS" if ok else "FAIL", os.path.basename(binary))
sys.exit(0 if ok else 1)
