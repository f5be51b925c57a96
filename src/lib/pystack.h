/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pystack: the user-space half of the Python frames (bpf/pystack.bpf.h).
 *
 * pystack__inspect() finds CPython in a process (the executable or a
 * libpython mapping exporting _PyRuntime), reads its version from the
 * binary (Py_Version on 3.11+, the version string in .rodata on 3.10) and
 * fills the struct gp_py_proc the BPF walk needs: offsets from the
 * interpreter's own _Py_DebugOffsets on 3.13+, from the table generated
 * from CPython's headers (pyoffsets_gen.h) on 3.10-3.12.
 *
 * pystack__format() turns a recorded frame (code object address,
 * instruction pointer) into "function (file:line)", reading the code
 * object, its strings and its line table from the process with
 * process_vm_readv (every read bounded), cached per (pid, code address)
 * and checked against the co_firstlineno the BPF side saw.
 *
 * Files are opened through safeopen (the process's root); process memory
 * is hostile input: every length is capped. Not thread-safe.
 */
#ifndef GPUPROBE_PYSTACK_H
#define GPUPROBE_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "stacks.h"

struct pystack;

struct pystack *pystack__new(const char *proc_root);
void pystack__free(struct pystack *ps);

/*
 * 0 and *out filled when pid runs CPython 3.10-3.13; -ENOENT when it is not
 * Python (no _PyRuntime), -ENOTSUP for another version, -errno otherwise;
 * one reason in err. The version string ("3.12.1") goes to version.
 */
int pystack__inspect(struct pystack *ps, int pid, struct gp_py_proc *out,
		     char *version, size_t vlen, char *err, size_t errlen);

/*
 * "qualname (file:line)" for frame f of pid (3.10: co_name). Returns 0,
 * PYSTACK_NO_LINE when it is named from a copy but its line lies past the part of the
 * line table copied ("file:?"), or -errno with "0x<code> (?)" in buf when the code
 * object cannot be read.
 */
#define PYSTACK_NO_LINE 1
int pystack__format(struct pystack *ps, int pid, const struct gp_py_frame *f,
		    char *buf, size_t len);

/* Drops the cached state of an exited process (not its copies: records naming its
 * frames may still come). */
void pystack__forget_pid(struct pystack *ps, int pid);

/*
 * Code objects BPF copied at their first sight in a process (struct gp_py_code, and the
 * chunks of its line table): pystack__format names pid's frames of such a code object
 * from the copy, whether or not the process still lives. Every length of a record is
 * checked (it is the traced process's memory); at most 16384 copies and 32 MiB of line
 * tables are kept, beyond that frames are read live (counted: refused). 0, or -errno.
 */
int pystack__add_code(struct pystack *ps, int pid, const struct gp_py_code *c);
int pystack__add_lines(struct pystack *ps, int pid, const struct gp_py_lines *l);
/* pid's copies go: at its exit record, after which none of its records comes. */
void pystack__forget_copies(struct pystack *ps, int pid);

struct pystack_copy_stats {
	unsigned long long copies;	/* code records taken */
	unsigned long long refused;	/* not kept: the limits above (or a key clash) */
	unsigned long long malformed;	/* records whose lengths did not hold */
	unsigned long long named;	/* frames named from a copy */
	unsigned long long lines_cut;	/* ... whose line lay past what was copied */
	unsigned long long kept, kept_bytes; /* copies held now, and their line-table bytes */
};
void pystack__copy_stats(const struct pystack *ps, struct pystack_copy_stats *st);

/* Exposed for unit tests: glibc's sizeof(struct pthread) from an arm64 libc (its
 * _thread_db_sizeof_pthread), 0 when absent, malformed or out of bounds (0x100-0x4000,
 * 8-aligned). elf is fd's. */
typedef struct Elf Elf;
uint32_t pystack__pthread_size(Elf *elf, int fd);

/* Exposed for unit tests: line of a code-unit/byte offset from a line table. */
int pystack__line_310(const unsigned char *tab, size_t n, int firstlineno,
		      long addr_bytes);
int pystack__line_311(const unsigned char *tab, size_t n, int firstlineno,
		      long addr_units);

#endif /* GPUPROBE_PYSTACK_H */
