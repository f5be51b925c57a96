# SPDX-License-Identifier: BSD-3-Clause
"""A bench script's own section of docs/benchmarks.md, between its BEGIN and END markers:
rewritten in place (appended when the page lacks it), or read back to keep it unmeasured."""
import os


def replace(path, lines, begin, end):
    text = open(path).read() if os.path.exists(path) else ""
    new = "\n".join(lines)
    if begin in text and end in text:
        a, rest = text.split(begin, 1)
        text = a + new + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + new + "\n"
    with open(path, "w") as f:
        f.write(text)


def section(path, begin, end):
    if not os.path.exists(path):
        return None
    text = open(path).read()
    if begin not in text or end not in text:
        return None
    return [begin + text.split(begin, 1)[1].split(end, 1)[0] + end]
