#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks a gpuprobe flame graph SVG (standard library only; exit 1 and one line per problem).

  check_flame.py GRAPH.svg [--folded FILE]   the SVG parses as XML; frames nest (each inside a
      frame one level down), boxes are where their values put them, labels are the name, a shorter form or
      its start and "..". With --folded: every frame's value is the sum of the folded lines
      under its path, and every path wider than 0.1 px is drawn.
  check_flame.py --dom DOM.xml [--zoom S,D] [--search REGEX]   the document after the
      embedded script ran (tests/tools/svg2png.sh --dom): zoomed on frame (S, D) and
      searched, as the script should leave it.
  check_flame.py GRAPH.svg --png PICTURE.png   the picture is the SVG's size and shows large
      frames in their colours.
Prints one JSON line with what it saw."""
import json
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

NS = "{http://www.w3.org/2000/svg}"
problems = []


def bad(msg):
    if len(problems) < 20:
        problems.append(msg)


def frames_of(root):
    out = []
    for g in root.iter(NS + "g"):
        if "f" not in (g.get("class") or "").split():
            continue
        title = g.find(NS + "title").text or ""
        box = g.find(NS + "svg")
        rect = box.find(NS + "rect")
        text = box.find(NS + "text")
        out.append({
            "s": int(g.get("data-s")), "v": int(g.get("data-v")), "d": int(g.get("data-d")),
            "name": title.split("\n")[0], "title": title, "x": float(box.get("x")),
            "y": float(box.get("y")), "w": float(box.get("width")), "label": text.text or "",
            "fill": rect.get("fill"), "classes": (g.get("class") or "").split(),
            "hidden": "display: none" in (g.get("style") or "") or "display:none" in (g.get("style") or ""),
        })
    return out


def forms(name):
    """The name, then its shorter forms (without " at file:line", " (file)", "+0x.."), as
    src/out/flame.c labels a frame too narrow for its whole name."""
    out, t = [name], name
    i = t.rfind(" at ")
    t = t[:i] if i > 0 else t
    out.append(t)
    i = t.find(" (")
    t = t[:i] if i > 0 else t
    out.append(t)
    i = t.find("+0x")
    t = t[:i] if i > 0 else t
    out.append(t)
    return out


def label_ok(f):
    lab, name = f["label"], f["name"]
    return lab == "" or lab in forms(name) or (lab.endswith("..") and forms(name)[-1].startswith(lab[:-2]))


def check_layout(root, frames):
    xpad, drawable, total = float(root.get("data-xpad")), float(root.get("data-w")), int(root.get("data-total"))
    roots = [f for f in frames if f["d"] == 0]
    if len(roots) != 1 or roots[0]["name"] != "all" or roots[0]["v"] != total:
        bad(f"one root frame 'all' with the total {total}: {[(r['name'], r['v']) for r in roots]}")
    by_depth = {}
    for f in frames:
        by_depth.setdefault(f["d"], []).append(f)
    for d, fs in by_depth.items():
        fs.sort(key=lambda f: f["s"])
        for a, b in zip(fs, fs[1:]):
            if a["s"] + a["v"] > b["s"]:
                bad(f"frames overlap at depth {d}: {a['name']!r} and {b['name']!r}")
    scale = drawable / total if total else 0
    for f in frames:
        if f["d"] > 0:
            parents = [p for p in by_depth.get(f["d"] - 1, []) if p["s"] <= f["s"] and f["s"] + f["v"] <= p["s"] + p["v"]]
            if len(parents) != 1:
                bad(f"frame {f['name']!r} at depth {f['d']} is not inside one frame below it")
            else:
                f["parent"] = parents[0]
        if abs(f["x"] - (xpad + f["s"] * scale)) > 0.011 or abs(f["w"] - f["v"] * scale) > 0.011:
            bad(f"frame {f['name']!r}: box x={f['x']} w={f['w']}, values say x={xpad + f['s'] * scale:.2f} w={f['v'] * scale:.2f}")
        if f["w"] < 0.1 - 0.006:
            bad(f"frame {f['name']!r} is {f['w']} px wide: narrower than 0.1 px should be left out")
        if not label_ok(f):
            bad(f"frame {f['name']!r}: label {f['label']!r} is neither the name nor its start")
        pct = 100.0 * f["v"] / total if total else 0
        if not re.search(r"%.2f%%$" % pct, f["title"].replace("\n", " ")):
            bad(f"frame {f['name']!r}: tooltip {f['title']!r} lacks {pct:.2f}%")
    return total, scale


def path_of(f):
    p = []
    while f and f["d"] > 0:
        p.append(f["name"])
        f = f.get("parent")
    return tuple(reversed(p))


def check_folded(frames, folded, total, scale):
    want = {}
    grand = 0
    for line in open(folded, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line:
            continue
        stack, v = line.rsplit(" ", 1)
        v = int(v)
        grand += v
        fr = stack.split(";")
        for i in range(1, len(fr) + 1):
            want[tuple(fr[:i])] = want.get(tuple(fr[:i]), 0) + v
    if grand != total:
        bad(f"folded total {grand} != SVG total {total}")
    drawn = {}
    for f in frames:
        if f["d"] > 0:
            drawn[path_of(f)] = f["v"]
    for p, v in drawn.items():
        if want.get(p) != v:
            bad(f"path {';'.join(p)!r}: drawn {v}, folded says {want.get(p)}")
    missing = [p for p, v in want.items() if v * scale >= 0.1 and p not in drawn]
    if missing:
        bad(f"{len(missing)} paths wider than 0.1 px are not drawn, e.g. {';'.join(missing[0])!r}")
    return len(want)


def check_dom(root, frames, zoom, search):
    if root.get("data-ready") != "1":
        bad("the embedded script did not run to its end (no data-ready)")
    xpad, drawable = float(root.get("data-xpad")), float(root.get("data-w"))
    total = int(root.get("data-total"))
    seen = {}
    if zoom:
        s0, d0 = (int(x) for x in zoom.split(","))
        z = [f for f in frames if f["s"] == s0 and f["d"] == d0]
        if len(z) != 1:
            bad(f"no frame at s={s0} d={d0}")
            return seen
        z = z[0]
        k = drawable / z["v"]
        shown = hidden = anc = 0
        for f in frames:
            inside = f["d"] >= d0 and f["s"] >= s0 and f["s"] + f["v"] <= s0 + z["v"]
            above = f["d"] < d0 and f["s"] <= s0 and f["s"] + f["v"] >= s0 + z["v"]
            if inside:
                shown += 1
                if f["hidden"] or abs(f["x"] - (xpad + (f["s"] - s0) * k)) > 0.011 or abs(f["w"] - f["v"] * k) > 0.011:
                    bad(f"zoomed: {f['name']!r} at x={f['x']} w={f['w']} hidden={f['hidden']}")
            elif above:
                anc += 1
                if f["hidden"] or "anc" not in f["classes"] or abs(f["w"] - drawable) > 0.011:
                    bad(f"zoomed: ancestor {f['name']!r} should span the width, dimmed")
            else:
                hidden += 1
                if not f["hidden"]:
                    bad(f"zoomed: {f['name']!r} beside the zoomed frame is still shown")
            if not f["hidden"] and not label_ok(f):
                bad(f"zoomed: label {f['label']!r} of {f['name']!r}")
        seen.update(zoom_shown=shown, zoom_hidden=hidden, zoom_ancestors=anc)
    if search:
        rx = re.compile(search)
        for f in frames:
            if bool(rx.search(f["name"])) != ("m" in f["classes"]):
                bad(f"search {search!r}: {f['name']!r} highlighted={'m' in f['classes']}")
        hits = sorted(((f["s"], f["v"]) for f in frames if rx.search(f["name"])), key=lambda h: (h[0], -h[1]))
        s, end = 0, -1
        for a, v in hits:
            if a >= end:
                s, end = s + v, a + v
        m = root.find(f".//{NS}text[@id='fg-matched']")
        want = f"Matched: {100.0 * s / total:.2f}%"
        if m is None or m.text != want or m.get("data-sum") != str(s):
            bad(f"search {search!r}: shows {m.text if m is not None else None!r} (sum {m.get('data-sum') if m is not None else None}), want {want!r} (sum {s})")
        seen.update(matched=len(hits), matched_sum=s)
    return seen


def png_pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError(f"PNG kind depth={depth} colour={ctype} interlace={interlace} not handled")
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        cur = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = cur[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                cur[i] = (cur[i] + a) & 255
            elif f == 2:
                cur[i] = (cur[i] + b) & 255
            elif f == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(cur)
        prev = cur
    return w, h, bpp, rows


def check_png(root, frames, png):
    w, h, bpp, rows = png_pixels(png)
    want = (int(float(root.get("width")) + 0.999), int(float(root.get("height")) + 0.999))
    if (w, h) != want:
        bad(f"picture is {w}x{h}, the SVG {want[0]}x{want[1]}")
        return {}
    checked = 0
    for f in frames:
        if f["w"] < 40 or f["hidden"]:
            continue
        rgb = tuple(int(c) for c in re.findall(r"\d+", f["fill"]))
        px, py = int(f["x"] + f["w"] - 4), int(f["y"] + 2)  # right end, above the text
        got = tuple(rows[py][px * bpp:px * bpp + 3])
        if max(abs(a - b) for a, b in zip(rgb, got)) > 4:
            bad(f"picture at ({px},{py}) is {got}, frame {f['name']!r} is {rgb}")
        checked += 1
    if not checked:
        bad("no frame wide enough to check in the picture")
    return {"png": [w, h], "png_frames_checked": checked}


def main(argv):
    args = {"--folded": None, "--zoom": None, "--search": None, "--png": None}
    files, dom, i = [], False, 0
    while i < len(argv):
        a = argv[i]
        if a == "--dom":
            dom = True
        elif a in args:
            if i + 1 >= len(argv):
                print(f"check_flame: {a} needs a value\n{__doc__}", file=sys.stderr)
                return 2
            i += 1
            args[a] = argv[i]
        else:
            files.append(a)
        i += 1
    if len(files) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        root = ET.parse(files[0]).getroot()
    except (ET.ParseError, OSError) as e:
        print(f"check_flame: {files[0]}: not well-formed XML: {e}")
        return 1
    if root.tag != NS + "svg":
        print(f"check_flame: {files[0]}: the root is {root.tag}, not an SVG element")
        return 1
    frames = frames_of(root)
    seen = {"frames": len(frames), "max_depth": max((f["d"] for f in frames), default=-1)}
    if dom:
        seen.update(check_dom(root, frames, args["--zoom"], args["--search"]))
    else:
        total, scale = check_layout(root, frames)
        seen["total"] = total
        if args["--folded"]:
            seen["paths"] = check_folded(frames, args["--folded"], total, scale)
        if args["--png"]:
            seen.update(check_png(root, frames, args["--png"]))
    for p in problems:
        print(f"check_flame: {p}")
    print(json.dumps(seen))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
