/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * symbolize: user-space addresses of traced processes -> "func+0x1a (lib)".
 *
 * Keeps two bounded caches: the sorted mappings of each pid and the symbol
 * tables of each mapped file, keyed by dev+inode so one libcuda.so seen by
 * many processes (or containers) is parsed once. Not thread-safe.
 *
 * A mapped file is opened through safeopen with the dev/inode maps gives:
 * the mapping itself (map_files) where permitted, else its path resolved
 * only inside the process's root; never a FIFO, a device, or a file the
 * process's links lead to outside its root.
 */
#ifndef GPUPROBE_SYMBOLIZE_H
#define GPUPROBE_SYMBOLIZE_H

#include <stddef.h>

struct symbolizer;

/* proc_root is "/proc" normally (NULL means that); tests pass a fake tree. */
struct symbolizer *symbolizer__new(const char *proc_root);
void symbolizer__free(struct symbolizer *s);

/*
 * Formats addr of process pid into buf:
 *   "func+0x1a (libname)"  symbol found (C++/Rust names demangled); returns 0
 *   "0x7f.. (libname)"     mapped file, no covering symbol;          returns 1
 *   "0x7f.."               no file-backed mapping covers addr;        returns 1
 * libname is the basename of the mapped path ("[vdso]" for pseudo maps).
 * On -errno (e.g. -ENOENT when the process is gone and was never cached) buf
 * still receives "0x7f.." so callers can print it unconditionally.
 */
int symbolizer__format(struct symbolizer *s, int pid, unsigned long long addr,
		       char *buf, size_t len);

/*
 * Whether addr lies in an executable mapping of pid (a file's text or anonymous code, as
 * JIT code): 1, 0 (data, the stack, nothing), or -errno when pid's maps cannot be read.
 * A frame-pointer walk that went through code without frame pointers reads "return
 * addresses" that are none: this tells them apart from a real frame.
 */
int symbolizer__in_code(struct symbolizer *s, int pid, unsigned long long addr);

/*
 * Bounds the bytes the cached symbol tables hold together (default 512 MiB;
 * each one is bounded by its file, see elfsym.h): the least recently used
 * go first, the one just loaded stays. files_bytes says what they hold now.
 */
void symbolizer__set_files_budget(struct symbolizer *s, unsigned long long bytes);
unsigned long long symbolizer__files_bytes(const struct symbolizer *s);

/*
 * What exited processes kept (procpin.h, not owned; NULL for none): their maps and file
 * descriptors stand in for /proc when the process is gone.
 */
struct procpin;
void symbolizer__set_pin(struct symbolizer *s, const struct procpin *pin);
/* The pin set (NULL: none): a mode may keep a process's state in it while it lives. */
struct procpin *symbolizer__pin(const struct symbolizer *s);

/* Drops the cached maps of an exited process (pids get reused). */
void symbolizer__forget_pid(struct symbolizer *s, int pid);

/* Writes the demangled form of name into buf, or name itself. */
void symbolize__demangle(const char *name, char *buf, size_t len);

#endif /* GPUPROBE_SYMBOLIZE_H */
