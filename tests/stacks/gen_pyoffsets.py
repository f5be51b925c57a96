#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Generates src/lib/pyoffsets_gen.h: the CPython structure offsets the
Python-stack walk needs, one row per minor version, computed by compiling a
small C file with offsetof() against each version's OWN headers (Include/
and Include/internal, Py_BUILD_CORE), never typed in by hand.

    gen_pyoffsets.py OUT.h INCLUDE_DIR [INCLUDE_DIR...]

INCLUDE_DIR is an installed interpreter's include/pythonX.Y (pyenv, Debian's
libpythonX.Y-dev, or a configured CPython source tree's Include with its
pyconfig.h). Two directories of the same minor version must agree, or this
fails: the table is per minor version.
"""
import os
import re
import subprocess
import sys
import tempfile

PROBE = r'''
#define Py_BUILD_CORE 1
#include "Python.h"
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
#else
#include "frameobject.h"
#endif
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(name, val) printf("%s=%lld\n", name, (long long)(val))

/* bit position and width of a bitfield, found by setting it */
#define BITS(name, field, maxval)                                        \
	do {                                                             \
		PyASCIIObject o;                                         \
		unsigned int raw = 0, shift = 0;                         \
		memset(&o, 0, sizeof(o));                                \
		o.state.field = maxval;                                  \
		memcpy(&raw, (char *)&o + offsetof(PyASCIIObject, state), 4); \
		while (raw && !(raw & 1)) { raw >>= 1; shift++; }        \
		F(name "_shift", shift);                                 \
		F(name "_mask", raw);                                    \
	} while (0)

int main(void)
{
	F("version_hex", PY_VERSION_HEX);
	F("runtime_interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX >= 0x030B0000
	F("interp_threads_head", offsetof(PyInterpreterState, threads.head));
	F("tstate_native_thread_id", offsetof(PyThreadState, native_thread_id));
#else
	F("interp_threads_head", offsetof(PyInterpreterState, tstate_head));
	F("tstate_native_thread_id", -1);
#endif
	F("tstate_next", offsetof(PyThreadState, next));
	F("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030D0000
	F("tstate_cframe", -1);
	F("cframe_current_frame", -1);
	F("tstate_frame", offsetof(PyThreadState, current_frame));
	F("frame_previous", offsetof(_PyInterpreterFrame, previous));
	F("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	F("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
	F("frame_owner", offsetof(_PyInterpreterFrame, owner));
	F("owner_cstack", FRAME_OWNED_BY_CSTACK);
	F("frame_is_entry", -1);
#elif PY_VERSION_HEX >= 0x030B0000
	F("tstate_cframe", offsetof(PyThreadState, cframe));
	F("cframe_current_frame", offsetof(_PyCFrame, current_frame));
	F("tstate_frame", -1);
	F("frame_previous", offsetof(_PyInterpreterFrame, previous));
	F("frame_code", offsetof(_PyInterpreterFrame, f_code));
	F("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
	F("frame_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX >= 0x030C0000
	F("owner_cstack", FRAME_OWNED_BY_CSTACK);
	F("frame_is_entry", -1);
#else
	F("owner_cstack", -1);
	F("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
#else
	F("tstate_cframe", -1);
	F("cframe_current_frame", -1);
	F("tstate_frame", offsetof(PyThreadState, frame));
	F("frame_previous", offsetof(PyFrameObject, f_back));
	F("frame_code", offsetof(PyFrameObject, f_code));
	F("frame_instr", offsetof(PyFrameObject, f_lasti));
	F("frame_owner", -1);
	F("owner_cstack", -1);
	F("frame_is_entry", -1);
#endif
	F("code_filename", offsetof(PyCodeObject, co_filename));
	F("code_name", offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030B0000
	F("code_qualname", offsetof(PyCodeObject, co_qualname));
	F("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#else
	F("code_qualname", -1);
	F("code_adaptive", -1);
#endif
	F("code_linetable", offsetof(PyCodeObject, co_linetable));
	F("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
	F("unicode_state", offsetof(PyASCIIObject, state));
	F("unicode_length", offsetof(PyASCIIObject, length));
	F("unicode_ascii_size", sizeof(PyASCIIObject));
	F("unicode_compact_size", sizeof(PyCompactUnicodeObject));
	BITS("unicode_kind", kind, 7);
	BITS("unicode_compact", compact, 1);
	BITS("unicode_ascii", ascii, 1);
	F("bytes_size", offsetof(PyVarObject, ob_size));
	F("bytes_sval", offsetof(PyBytesObject, ob_sval));
#if PY_VERSION_HEX >= 0x030D0000
	F("dbg_size", sizeof(_Py_DebugOffsets));
	F("dbg_version", offsetof(_Py_DebugOffsets, version));
	F("dbg_runtime_interpreters_head", offsetof(_Py_DebugOffsets, runtime_state.interpreters_head));
	F("dbg_interp_threads_head", offsetof(_Py_DebugOffsets, interpreter_state.threads_head));
	F("dbg_tstate_next", offsetof(_Py_DebugOffsets, thread_state.next));
	F("dbg_tstate_thread_id", offsetof(_Py_DebugOffsets, thread_state.thread_id));
	F("dbg_tstate_native_thread_id", offsetof(_Py_DebugOffsets, thread_state.native_thread_id));
	F("dbg_tstate_frame", offsetof(_Py_DebugOffsets, thread_state.current_frame));
	F("dbg_frame_previous", offsetof(_Py_DebugOffsets, interpreter_frame.previous));
	F("dbg_frame_code", offsetof(_Py_DebugOffsets, interpreter_frame.executable));
	F("dbg_frame_instr", offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr));
	F("dbg_frame_owner", offsetof(_Py_DebugOffsets, interpreter_frame.owner));
	F("dbg_code_filename", offsetof(_Py_DebugOffsets, code_object.filename));
	F("dbg_code_name", offsetof(_Py_DebugOffsets, code_object.name));
	F("dbg_code_qualname", offsetof(_Py_DebugOffsets, code_object.qualname));
	F("dbg_code_linetable", offsetof(_Py_DebugOffsets, code_object.linetable));
	F("dbg_code_firstlineno", offsetof(_Py_DebugOffsets, code_object.firstlineno));
	F("dbg_code_adaptive", offsetof(_Py_DebugOffsets, code_object.co_code_adaptive));
	F("dbg_unicode_length", offsetof(_Py_DebugOffsets, unicode_object.length));
	F("dbg_unicode_ascii_size", offsetof(_Py_DebugOffsets, unicode_object.asciiobject_size));
	F("dbg_bytes_sval", offsetof(_Py_DebugOffsets, bytes_object.ob_sval));
#endif
	return 0;
}
'''

FIELDS = None


def probe(inc):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "probe.c")
        exe = os.path.join(d, "probe")
        with open(src, "w") as f:
            f.write(PROBE)
        subprocess.run(["gcc", "-O0", "-w", "-I" + inc, "-I" + os.path.join(inc, "internal"),
                        "-o", exe, src], check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    vals = {}
    for line in out.splitlines():
        k, v = line.split("=")
        vals[k] = int(v)
    return vals


def main():
    out, incs = sys.argv[1], sys.argv[2:]
    rows = {}
    for inc in incs:
        v = probe(inc)
        minor = (v["version_hex"] >> 16) & 0xFF
        key = (3, minor)
        ver = "%d.%d.%d" % (v["version_hex"] >> 24, minor, (v["version_hex"] >> 8) & 0xFF)
        if key in rows:
            a = {k: x for k, x in rows[key][0].items() if k != "version_hex"}
            b = {k: x for k, x in v.items() if k != "version_hex"}
            if a != b:
                diff = [k for k in a if a[k] != b.get(k)]
                sys.exit(f"{inc}: {ver} differs from {rows[key][1]} in {diff}")
            rows[key][1].append(ver)
            continue
        rows[key] = (v, [ver])
    names = [k for k in next(iter(rows.values()))[0] if k != "version_hex" and not k.startswith("dbg_")]
    dbg = sorted({k for r in rows.values() for k in r[0] if k.startswith("dbg_")},
                 key=lambda k: list(rows[max(rows)][0]).index(k))
    lines = ["/* SPDX-License-Identifier: BSD-3-Clause */",
             "/*",
             " * GENERATED by tests/stacks/gen_pyoffsets.py from each CPython version's own",
             " * headers (offsetof against Include/ and Include/internal). Do not edit.",
             " * -1: the field does not exist in that version.",
             " */",
             "#ifndef GPUPROBE_PYOFFSETS_GEN_H",
             "#define GPUPROBE_PYOFFSETS_GEN_H",
             "",
             "struct py_offsets_gen {",
             "\tunsigned int minor;\t/* 3.<minor> */",
             "\tconst char *from;\t/* the header versions this row was generated from */"]
    lines += [f"\tint {n};" for n in names]
    lines += ["\t/* 3.13+: where each offset lives inside _Py_DebugOffsets (0: absent) */"]
    lines += [f"\tint {n};" for n in dbg]
    lines += ["};", "", "static const struct py_offsets_gen py_offsets_gen[] = {"]
    for key in sorted(rows):
        v, vers = rows[key]
        lines.append(f"\t{{ .minor = {key[1]}, .from = \"{' '.join(vers)}\",")
        body = [f".{n} = {v[n]}" for n in names] + [f".{n} = {v.get(n, 0)}" for n in dbg]
        for i in range(0, len(body), 3):
            # three per line keeps the table readable
            lines.append("\t  " + ", ".join(body[i:i + 3]) + ",")
        lines.append("\t},")
    lines += ["};", "", "#endif /* GPUPROBE_PYOFFSETS_GEN_H */", ""]
    with open(out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
