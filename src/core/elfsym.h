/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elfsym: the few ELF questions gpuprobe asks, answered with libelf.
 *
 * Every function treats the file as hostile (truncated, bogus sizes and
 * offsets, sh_link pointing anywhere): bad input yields an error, never a
 * crash. Files are read with pread (ELF_C_READ), not mmap, so a file that
 * shrinks underneath us cannot raise SIGBUS.
 */
#ifndef GPUPROBE_ELFSYM_H
#define GPUPROBE_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Validates that path is a readable ELF executable or shared object of the build's
 * machine (x86-64, or arm64 for an arm64 build)
 * with a dynamic symbol table. On failure writes ONE human-readable reason to
 * err (e.g. "No such file or directory", "not an ELF file",
 * "corrupt ELF: <detail>", "no dynamic symbol table") and returns
 * -errno from open/fstat, -ENOEXEC (not ELF, wrong class/machine/type),
 * -EBADMSG (corrupt) or -ENODATA (no .dynsym). Returns 0 when usable.
 */
int elfsym__check(const char *path, char *err, size_t errlen);

/*
 * 1 if .dynsym defines function name (FUNC or GNU IFUNC, not undefined),
 * 0 if not (also when there is no .dynsym), or -errno as elfsym__check.
 * A versioned symbol "name@VER" / "name@@VER" matches "name".
 */
int elfsym__has_func(const char *path, const char *name);

/*
 * Calls cb for every defined FUNC/IFUNC symbol in .dynsym. A non-zero
 * return from cb stops the walk and is returned. Returns 0 (also when there
 * is no .dynsym) or -errno as elfsym__check.
 */
int elfsym__foreach_func(const char *path,
			 int (*cb)(const char *name, unsigned long long value,
				   unsigned long long size, void *ctx),
			 void *ctx);

/*
 * Function symbols of one file, from .symtab and .dynsym, de-duplicated
 * (one name per address), sorted by address. Also keeps the PT_LOAD
 * segments to map file offsets to virtual addresses.
 */
struct elf_symtab;

/*
 * Returns NULL on failure with errno set (as the negated codes of
 * elfsym__check) and a reason in err. A file with no symbols at all loads
 * fine and simply never resolves.
 */
struct elf_symtab *elf_symtab__load(const char *path, char *err, size_t errlen);
void elf_symtab__free(struct elf_symtab *st);

/* File offset -> virtual address through the PT_LOAD segments; -1 if none. */
long long elf_symtab__offset_to_vaddr(const struct elf_symtab *st,
				      unsigned long long off);

/* Virtual address -> file offset (what a uprobe is placed at); -1 if no segment. */
long long elf_symtab__vaddr_to_offset(const struct elf_symtab *st,
				      unsigned long long vaddr);

/*
 * O(log n). Returns the name of the symbol covering vaddr and the offset
 * into it, or NULL. A sized symbol covers [value, value + size); a size-0
 * symbol covers up to the next symbol (or the end of its section).
 * The name lives as long as st.
 */
const char *elf_symtab__lookup(const struct elf_symtab *st,
			       unsigned long long vaddr,
			       unsigned long long *off);

/* true for ET_EXEC (non-PIE): runtime addresses are link-time addresses. */
bool elf_symtab__is_exec(const struct elf_symtab *st);

/* Number of symbols kept (after de-duplication); mostly for tests. */
size_t elf_symtab__count(const struct elf_symtab *st);

#endif /* GPUPROBE_ELFSYM_H */
