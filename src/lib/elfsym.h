/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elfsym: the few ELF questions gpuprobe asks.
 *
 * Every function treats the file as hostile (truncated, sparse, bogus sizes
 * and offsets, sh_link pointing anywhere): bad input yields an error, never a
 * crash, and never costs more than the file really holds. gpuprobe reads
 * every byte itself, with pread in bounded chunks (no mmap, so a file that
 * shrinks underneath cannot raise SIGBUS), after checking each claim; libelf
 * only translates the byte layouts (elf32/64_xlatetom), so it never reads a
 * claimed table it was not given.
 *
 * A header or table is read only when it lies inside the file, is under its
 * cap below, and is no larger than the data the file really holds: st_blocks
 * * 512, so a sparse hole counts as nothing (an 8 GiB sparse file of 140 KiB
 * cannot claim a 6 GiB .dynsym); everything one parse reads together stays
 * under ELFSYM_FILE_MAX and that same data size. A refusal names the table
 * and both sizes, e.g. ".dynsym claims 6.0 GiB, larger than the file's data
 * (140.0 KiB)".
 *
 * The fd-taking functions are for files a traced process names (opened
 * through safeopen); they pread only and leave the descriptor open. The path
 * versions are for files gpuprobe itself chose (--libcuda, ldconfig's cache,
 * "/proc/self/fd/N" of a descriptor safeopen checked): they open with
 * O_NONBLOCK | O_NOCTTY, accept only a regular file and call the fd version.
 */
#ifndef GPUPROBE_ELFSYM_H
#define GPUPROBE_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>

/* Caps, in bytes (see above); a file over one of them is refused with -EFBIG. */
#define ELFSYM_HDRS_MAX (4ULL << 20)	 /* section or program header table: 65536 headers */
#define ELFSYM_SYMTAB_MAX (64ULL << 20)	 /* .symtab or .dynsym: 2.8 million symbols */
#define ELFSYM_STRTAB_MAX (128ULL << 20) /* the string table of one of them */
#define ELFSYM_FILE_MAX (256ULL << 20)	 /* all a parse of one file reads */
/*
 * Tolerance over st_blocks * 512: file systems that keep a tiny file inside
 * its inode report no blocks for it. A sparse file gains at most this much.
 */
#define ELFSYM_DATA_SLACK (64ULL << 10)

/*
 * Validates that path is a readable ELF executable or shared object of the build's
 * machine (x86-64, or arm64 for an arm64 build)
 * with a dynamic symbol table. On failure writes ONE human-readable reason to
 * err (e.g. "No such file or directory", "not an ELF file",
 * "corrupt ELF: <detail>", "no dynamic symbol table") and returns
 * -errno from open/fstat, -ENOEXEC (not ELF, wrong class/machine/type),
 * -EBADMSG (corrupt), -EFBIG (a table over a cap or over the file's data)
 * or -ENODATA (no .dynsym). Returns 0 when usable.
 */
int elfsym__check(const char *path, char *err, size_t errlen);
int elfsym__check_fd(int fd, char *err, size_t errlen);

/*
 * 1 if .dynsym defines function name (FUNC or GNU IFUNC, not undefined),
 * 0 if not (also when there is no .dynsym), or -errno as elfsym__check.
 * A versioned symbol "name@VER" / "name@@VER" matches "name".
 */
int elfsym__has_func(const char *path, const char *name);
int elfsym__has_func_fd(int fd, const char *name);

/*
 * Calls cb for every defined FUNC/IFUNC symbol in .dynsym. A non-zero
 * return from cb stops the walk and is returned. Returns 0 (also when there
 * is no .dynsym) or -errno as elfsym__check.
 */
int elfsym__foreach_func(const char *path,
			 int (*cb)(const char *name, unsigned long long value,
				   unsigned long long size, void *ctx),
			 void *ctx);
int elfsym__foreach_func_fd(int fd,
			    int (*cb)(const char *name, unsigned long long value,
				      unsigned long long size, void *ctx),
			    void *ctx);

/*
 * Function symbols of one file, from its first .symtab and first .dynsym,
 * de-duplicated (one name per address), sorted by address. Names point into
 * the string tables it keeps (a name is never copied per symbol, so symbols
 * sharing one long name cost nothing more). Also keeps the PT_LOAD
 * segments to map file offsets to virtual addresses.
 */
struct elf_symtab;

/*
 * Returns NULL on failure with errno set (as the negated codes of
 * elfsym__check) and a reason in err. A file with no symbols at all loads
 * fine and simply never resolves.
 */
struct elf_symtab *elf_symtab__load(const char *path, char *err, size_t errlen);
struct elf_symtab *elf_symtab__load_fd(int fd, char *err, size_t errlen);
void elf_symtab__free(struct elf_symtab *st);

/* Heap bytes st holds (for the symbolizer's cache budget); 0 for NULL. */
size_t elf_symtab__bytes(const struct elf_symtab *st);

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
