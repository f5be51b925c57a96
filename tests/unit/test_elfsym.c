/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run as "test_elfsym --write-mini-elf PATH" it only writes the hand-made
 * ELF file used below (handy as a fuzzing seed) and exits.
 */
#define _GNU_SOURCE
#include "elfsym.h"
#include "unit.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* the build's own machine: elfsym accepts only that (an arm64 build runs in tests/vm) */
#if defined(__aarch64__)
#define LIBC "/lib/aarch64-linux-gnu/libc.so.6"
#define NATIVE_EM EM_AARCH64
#define FOREIGN_EM EM_X86_64
#define NATIVE_NAME "arm64"
#else
#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define NATIVE_EM EM_X86_64
#define FOREIGN_EM EM_AARCH64
#define NATIVE_NAME "x86-64"
#endif

static char tmp_root[256];	/* short: keeps snprintf sizes provable */

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void cleanup_tmp(void)
{
	if (tmp_root[0])
		nftw(tmp_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmp_root, name);
}

static int write_file(const char *path, const void *data, size_t len)
{
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (write(fd, data, len) != (ssize_t)len)
		err = -EIO;
cleanup:
	if (fd >= 0)
		close(fd);
	return err;
}

/* Reads up to max bytes of path into a malloc'ed buffer. */
static unsigned char *read_file(const char *path, size_t max, size_t *len)
{
	unsigned char *buf = NULL;
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto cleanup;
	if (fstat(fd, &st))
		goto cleanup;
	*len = (size_t)st.st_size < max ? (size_t)st.st_size : max;
	buf = malloc(*len ? *len : 1);
	if (!buf)
		goto cleanup;
	n = pread(fd, buf, *len, 0);
	if (n != (ssize_t)*len) {
		free(buf);
		buf = NULL;
	}
cleanup:
	if (fd >= 0)
		close(fd);
	return buf;
}

/* ---- a hand-made ET_DYN of the build's machine with known symbols ---- */

enum {
	MINI_TEXT_OFF = 0x200,
	MINI_TEXT_ADDR = 0x1200,
	MINI_TEXT_SIZE = 0x110,
	MINI_SIZE = 0x1000,
	/* section indices */
	SEC_TEXT = 1, SEC_DYNSYM, SEC_DYNSTR, SEC_SYMTAB, SEC_STRTAB,
	SEC_SHSTRTAB, SEC_NUM,
};

struct mini_sym {
	const char *name;
	unsigned long long value, size;
	int bind, type, shndx;
};

static const struct mini_sym mini_dynsyms[] = {
	{ "a", 0x1200, 0x10, STB_GLOBAL, STT_FUNC, SEC_TEXT },
	{ "b", 0x1220, 0, STB_GLOBAL, STT_FUNC, SEC_TEXT },
	{ "c", 0x1240, 8, STB_GLOBAL, STT_FUNC, SEC_TEXT },
	{ "d", 0x1280, 0, STB_WEAK, STT_FUNC, SEC_TEXT },
	{ "vfn@@VERS_1", 0x12c0, 4, STB_GLOBAL, STT_FUNC, SEC_TEXT },
	{ "undef_fn", 0, 0, STB_GLOBAL, STT_FUNC, SHN_UNDEF },
	{ "obj", 0x1100, 8, STB_GLOBAL, STT_OBJECT, SEC_TEXT },
	{ "ifn", 0x12e0, 8, STB_GLOBAL, STT_GNU_IFUNC, SEC_TEXT },
	{ "__a_alias", 0x1200, 0x10, STB_GLOBAL, STT_FUNC, SEC_TEXT },
};

static const struct mini_sym mini_syms[] = {
	{ "local_fn", 0x12d0, 8, STB_LOCAL, STT_FUNC, SEC_TEXT },
	{ "a", 0x1200, 0x10, STB_GLOBAL, STT_FUNC, SEC_TEXT },
	{ "outer", 0x12f0, 0x10, STB_LOCAL, STT_FUNC, SEC_TEXT },
	{ "inner", 0x12f4, 2, STB_LOCAL, STT_FUNC, SEC_TEXT },
	{ "tail", 0x1300, 0, STB_LOCAL, STT_FUNC, SEC_TEXT },
};

static size_t put_str(unsigned char *img, size_t *pos, const char *s)
{
	size_t at = *pos, len = strlen(s) + 1;

	memcpy(img + at, s, len);
	*pos += len;
	return at;
}

/* Writes n + 1 symbols at *pos, their names at *strpos (table at strbase). */
static size_t put_syms(unsigned char *img, size_t *pos, size_t *strpos,
		       size_t strbase, const struct mini_sym *syms, size_t n)
{
	Elf64_Sym *out = (Elf64_Sym *)(img + *pos);
	size_t i, start = *pos;

	memset(out, 0, sizeof(*out));	/* index 0: null symbol */
	for (i = 0; i < n; i++) {
		Elf64_Sym *s = &out[i + 1];

		s->st_name = (Elf64_Word)(put_str(img, strpos, syms[i].name) -
					  strbase);
		s->st_value = syms[i].value;
		s->st_size = syms[i].size;
		s->st_info = ELF64_ST_INFO(syms[i].bind, syms[i].type);
		s->st_shndx = (Elf64_Half)syms[i].shndx;
	}
	*pos += (n + 1) * sizeof(Elf64_Sym);
	return start;
}

/* Fills img (MINI_SIZE bytes); the layout is described by the section table. */
static void build_mini_elf(unsigned char *img)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
	Elf64_Shdr *sh;
	size_t pos, dynstr, strtab, shstr, dynsym, symtab, shoff;
	size_t dynstr_end, strtab_end, names[SEC_NUM];
	size_t ndyn = sizeof(mini_dynsyms) / sizeof(mini_dynsyms[0]);
	size_t nsym = sizeof(mini_syms) / sizeof(mini_syms[0]);

	memset(img, 0, MINI_SIZE);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = NATIVE_EM;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 2;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = SEC_NUM;
	eh->e_shstrndx = SEC_SHSTRTAB;

	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R,
		.p_offset = 0, .p_vaddr = 0, .p_paddr = 0,
		.p_filesz = MINI_TEXT_OFF, .p_memsz = MINI_TEXT_OFF,
		.p_align = 0x1000 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
		.p_offset = MINI_TEXT_OFF, .p_vaddr = MINI_TEXT_ADDR,
		.p_paddr = MINI_TEXT_ADDR, .p_filesz = MINI_TEXT_SIZE,
		.p_memsz = MINI_TEXT_SIZE, .p_align = 0x1000 };
	memset(img + MINI_TEXT_OFF, 0xcc, MINI_TEXT_SIZE);

	/* string tables first (0x900..), symbol tables at 0x400.. */
	dynstr = 0x900;
	pos = dynstr;
	put_str(img, &pos, "");
	dynsym = 0x400;
	{
		size_t p = dynsym;

		put_syms(img, &p, &pos, dynstr, mini_dynsyms, ndyn);
		symtab = (p + 7) & ~(size_t)7;
	}
	dynstr_end = pos;
	strtab = pos;
	put_str(img, &pos, "");
	{
		size_t p = symtab;

		put_syms(img, &p, &pos, strtab, mini_syms, nsym);
	}
	strtab_end = pos;
	shstr = pos;
	put_str(img, &pos, "");
	names[SEC_TEXT] = put_str(img, &pos, ".text") - shstr;
	names[SEC_DYNSYM] = put_str(img, &pos, ".dynsym") - shstr;
	names[SEC_DYNSTR] = put_str(img, &pos, ".dynstr") - shstr;
	names[SEC_SYMTAB] = put_str(img, &pos, ".symtab") - shstr;
	names[SEC_STRTAB] = put_str(img, &pos, ".strtab") - shstr;
	names[SEC_SHSTRTAB] = put_str(img, &pos, ".shstrtab") - shstr;
	shoff = (pos + 7) & ~(size_t)7;
	eh->e_shoff = shoff;

	sh = (Elf64_Shdr *)(img + shoff);
	sh[SEC_TEXT] = (Elf64_Shdr){ .sh_name = (Elf64_Word)names[SEC_TEXT],
		.sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
		.sh_addr = MINI_TEXT_ADDR, .sh_offset = MINI_TEXT_OFF,
		.sh_size = MINI_TEXT_SIZE, .sh_addralign = 16 };
	sh[SEC_DYNSYM] = (Elf64_Shdr){ .sh_name = (Elf64_Word)names[SEC_DYNSYM],
		.sh_type = SHT_DYNSYM, .sh_flags = SHF_ALLOC,
		.sh_offset = dynsym, .sh_size = (ndyn + 1) * sizeof(Elf64_Sym),
		.sh_link = SEC_DYNSTR, .sh_info = 1, .sh_addralign = 8,
		.sh_entsize = sizeof(Elf64_Sym) };
	sh[SEC_DYNSTR] = (Elf64_Shdr){ .sh_name = (Elf64_Word)names[SEC_DYNSTR],
		.sh_type = SHT_STRTAB, .sh_flags = SHF_ALLOC,
		.sh_offset = dynstr, .sh_size = dynstr_end - dynstr,
		.sh_addralign = 1 };
	sh[SEC_SYMTAB] = (Elf64_Shdr){ .sh_name = (Elf64_Word)names[SEC_SYMTAB],
		.sh_type = SHT_SYMTAB, .sh_offset = symtab,
		.sh_size = (nsym + 1) * sizeof(Elf64_Sym),
		.sh_link = SEC_STRTAB, .sh_info = 1, .sh_addralign = 8,
		.sh_entsize = sizeof(Elf64_Sym) };
	sh[SEC_STRTAB] = (Elf64_Shdr){ .sh_name = (Elf64_Word)names[SEC_STRTAB],
		.sh_type = SHT_STRTAB, .sh_offset = strtab,
		.sh_size = strtab_end - strtab, .sh_addralign = 1 };
	sh[SEC_SHSTRTAB] = (Elf64_Shdr){
		.sh_name = (Elf64_Word)names[SEC_SHSTRTAB],
		.sh_type = SHT_STRTAB, .sh_offset = shstr,
		.sh_size = pos - shstr, .sh_addralign = 1 };
}

static Elf64_Shdr *mini_shdr(unsigned char *img, int idx)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;

	return (Elf64_Shdr *)(img + eh->e_shoff) + idx;
}

/* Writes a (possibly mutated) mini ELF to tmp and returns its path. */
static const char *mini_file(const unsigned char *img, const char *name)
{
	static char path[512];

	tmp_path(path, sizeof(path), name);
	return write_file(path, img, MINI_SIZE) ? NULL : path;
}

/* ---- tests ---- */

static void test_check_missing(void)
{
	char err[128] = "";
	struct elf_symtab *st;

	ASSERT_EQ(elfsym__check("/nonexistent/libcuda.so.1", err, sizeof(err)),
		  -ENOENT);
	ASSERT_STR_EQ(err, "No such file or directory");
	errno = 0;
	st = elf_symtab__load("/nonexistent/libcuda.so.1", err, sizeof(err));
	ASSERT_TRUE(st == NULL);
	ASSERT_EQ(errno, ENOENT);
	ASSERT_EQ(elfsym__has_func("/nonexistent/x", "malloc"), -ENOENT);
	/* err is optional */
	ASSERT_EQ(elfsym__check("/nonexistent/x", NULL, 0), -ENOENT);
}

static void test_check_not_elf(void)
{
	char path[512], err[128] = "";
	static const char text[] = "this is a text file, not an ELF\n";

	tmp_path(path, sizeof(path), "text.so");
	ASSERT_EQ(write_file(path, text, sizeof(text) - 1), 0);
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENOEXEC);
	ASSERT_STR_EQ(err, "not an ELF file");

	tmp_path(path, sizeof(path), "empty.so");
	ASSERT_EQ(write_file(path, "", 0), 0);
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENOEXEC);
	ASSERT_STR_EQ(err, "not an ELF file");

	ASSERT_EQ(elfsym__check("/tmp", err, sizeof(err)), -EISDIR);
	ASSERT_STR_EQ(err, "Is a directory");
	ASSERT_EQ(elfsym__check("/dev/null", err, sizeof(err)), -EINVAL);
	ASSERT_STR_EQ(err, "not a regular file");

	/* a tiny err buffer truncates, never overflows */
	ASSERT_EQ(elfsym__check("/tmp", err, 4), -EISDIR);
	ASSERT_STR_EQ(err, "Is ");
}

static void test_check_truncated(void)
{
	static const size_t cuts[] = { 64, 16, 40, 200, 4096 };
	char path[512], err[128];
	unsigned char *buf;
	size_t len, i;

	buf = read_file(LIBC, 4096, &len);
	ASSERT_TRUE(buf);
	ASSERT_EQ(len, 4096);
	tmp_path(path, sizeof(path), "trunc.so");
	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		if (write_file(path, buf, cuts[i]))
			break;
		err[0] = '\0';
		if (elfsym__check(path, err, sizeof(err)) >= 0 ||
		    !err[0] || elfsym__has_func(path, "malloc") >= 0 ||
		    elf_symtab__load(path, NULL, 0) != NULL) {
			printf("#   truncation to %zu bytes accepted (%s)\n",
			       cuts[i], err);
			break;
		}
		printf("#   %zu bytes: %s\n", cuts[i], err);
	}
	free(buf);
	ASSERT_EQ(i, sizeof(cuts) / sizeof(cuts[0]));

	/* the canonical case from the spec: exactly the ELF header */
	err[0] = '\0';
	ASSERT_EQ(write_file(path, "\177ELF", 4), 0);
	ASSERT_TRUE(elfsym__check(path, err, sizeof(err)) < 0);
	buf = read_file(LIBC, 64, &len);
	ASSERT_TRUE(buf);
	ASSERT_EQ(write_file(path, buf, 64), 0);
	free(buf);
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG);
	ASSERT_STR_CONTAINS(err, "corrupt ELF: ");
}

static void test_check_corrupt_shdrs(void)
{
	char path[512], err[128] = "";
	struct elf_symtab *st;
	unsigned char *buf;
	size_t len;

	buf = read_file(LIBC, SIZE_MAX, &len);
	ASSERT_TRUE(buf);
	ASSERT_TRUE(len > 64);
	/* e_shoff (8 bytes at 0x28) and e_shnum (2 bytes at 0x3c): garbage */
	memset(buf + 0x28, 0x41, 8);
	memset(buf + 0x3c, 0x7f, 2);
	tmp_path(path, sizeof(path), "corrupt.so");
	ASSERT_EQ(write_file(path, buf, len), 0);
	free(buf);

	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG);
	ASSERT_STR_CONTAINS(err, "corrupt ELF: ");
	printf("#   %s\n", err);
	ASSERT_EQ(elfsym__has_func(path, "malloc"), -EBADMSG);
	errno = 0;
	st = elf_symtab__load(path, err, sizeof(err));
	ASSERT_TRUE(st == NULL);
	ASSERT_EQ(errno, EBADMSG);
}

static void test_check_real_libc(void)
{
	char err[128] = "untouched";

	ASSERT_EQ(elfsym__check(LIBC, err, sizeof(err)), 0);
	ASSERT_STR_EQ(err, "untouched");
	ASSERT_EQ(elfsym__has_func(LIBC, "malloc"), 1);
	ASSERT_EQ(elfsym__has_func(LIBC, "gnu_get_libc_version"), 1);
	ASSERT_EQ(elfsym__has_func(LIBC, "mallo"), 0);
	ASSERT_EQ(elfsym__has_func(LIBC, "cuLaunchKernel"), 0);
	ASSERT_EQ(elfsym__has_func(LIBC, ""), -EINVAL);
}

struct collect_ctx {
	int count;
	unsigned long long malloc_value;
};

static int collect_cb(const char *name, unsigned long long value,
		      unsigned long long size, void *data)
{
	struct collect_ctx *ctx = data;

	(void)size;
	ctx->count++;
	if (strcmp(name, "malloc") == 0)
		ctx->malloc_value = value;
	return 0;
}

static int stop_cb(const char *name, unsigned long long value,
		   unsigned long long size, void *data)
{
	(void)name;
	(void)value;
	(void)size;
	return ++*(int *)data == 3 ? -77 : 0;
}

static void test_foreach_libc(void)
{
	struct collect_ctx ctx = { 0 };
	int n = 0;

	ASSERT_EQ(elfsym__foreach_func(LIBC, collect_cb, &ctx), 0);
	ASSERT_TRUE(ctx.count > 1000);
	ASSERT_TRUE(ctx.malloc_value != 0);
	ASSERT_EQ(elfsym__foreach_func(LIBC, stop_cb, &n), -77);
	ASSERT_EQ(n, 3);
	ASSERT_EQ(elfsym__foreach_func(LIBC, NULL, NULL), -EINVAL);
}

static void test_symtab_libc(void)
{
	struct collect_ctx ctx = { 0 };
	unsigned long long off = 99;
	struct elf_symtab *st;
	char err[128] = "";
	const char *name;

	ASSERT_EQ(elfsym__foreach_func(LIBC, collect_cb, &ctx), 0);
	st = elf_symtab__load(LIBC, err, sizeof(err));
	ASSERT_TRUE(st);
	ASSERT_TRUE(elf_symtab__count(st) > 1000);
	ASSERT_TRUE(!elf_symtab__is_exec(st));
	/* aliases (__libc_malloc) share the address: the public name wins */
	name = elf_symtab__lookup(st, ctx.malloc_value, &off);
	ASSERT_STR_EQ(name, "malloc");
	ASSERT_EQ(off, 0);
	name = elf_symtab__lookup(st, ctx.malloc_value + 4, &off);
	ASSERT_STR_EQ(name, "malloc");
	ASSERT_EQ(off, 4);
	/* libc's first PT_LOAD maps offset 0 at vaddr 0 */
	ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x10), 0x10);
	ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 1ULL << 40), -1);
	ASSERT_TRUE(elf_symtab__lookup(st, 0, &off) == NULL);
	ASSERT_TRUE(elf_symtab__lookup(st, ~0ULL, &off) == NULL);
	elf_symtab__free(st);
	elf_symtab__free(NULL);
}

static void test_mini_check_and_funcs(void)
{
	static unsigned char img[MINI_SIZE] __attribute__((aligned(16)));
	struct collect_ctx ctx = { 0 };
	char err[128] = "";
	const char *path;

	build_mini_elf(img);
	path = mini_file(img, "mini.so");
	ASSERT_TRUE(path);
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), 0);
	ASSERT_EQ(elfsym__has_func(path, "a"), 1);
	ASSERT_EQ(elfsym__has_func(path, "b"), 1);
	ASSERT_EQ(elfsym__has_func(path, "vfn"), 1);
	ASSERT_EQ(elfsym__has_func(path, "vfn@@VERS_1"), 1);
	ASSERT_EQ(elfsym__has_func(path, "vf"), 0);
	ASSERT_EQ(elfsym__has_func(path, "ifn"), 1);
	ASSERT_EQ(elfsym__has_func(path, "undef_fn"), 0);
	ASSERT_EQ(elfsym__has_func(path, "obj"), 0);
	ASSERT_EQ(elfsym__has_func(path, "local_fn"), 0);	/* .symtab only */
	ASSERT_EQ(elfsym__foreach_func(path, collect_cb, &ctx), 0);
	ASSERT_EQ(ctx.count, 7);
}

static void expect_sym(const struct elf_symtab *st, unsigned long long addr,
		       const char *want, unsigned long long want_off, int *bad)
{
	unsigned long long off = 0;
	const char *name = elf_symtab__lookup(st, addr, &off);

	if (want ? !name || strcmp(name, want) || off != want_off : !!name) {
		printf("#   lookup(0x%llx) = %s+0x%llx, expected %s+0x%llx\n",
		       addr, name ? name : "NULL", off, want ? want : "NULL",
		       want_off);
		*bad = 1;
	}
}

static void test_mini_symtab(void)
{
	static unsigned char img[MINI_SIZE] __attribute__((aligned(16)));
	struct elf_symtab *st;
	char err[128] = "";
	const char *path;
	int bad = 0;

	build_mini_elf(img);
	path = mini_file(img, "mini.so");
	ASSERT_TRUE(path);
	st = elf_symtab__load(path, err, sizeof(err));
	ASSERT_TRUE(st);
	/* a b c d vfn local_fn ifn outer inner tail; aliases/dups merged */
	ASSERT_EQ(elf_symtab__count(st), 10);
	expect_sym(st, 0x11ff, NULL, 0, &bad);
	expect_sym(st, 0x1200, "a", 0, &bad);
	expect_sym(st, 0x120f, "a", 0xf, &bad);
	expect_sym(st, 0x1210, NULL, 0, &bad);		/* gap after sized a */
	expect_sym(st, 0x1220, "b", 0, &bad);
	expect_sym(st, 0x1230, "b", 0x10, &bad);	/* size 0: up to c */
	expect_sym(st, 0x1240, "c", 0, &bad);
	expect_sym(st, 0x1248, NULL, 0, &bad);
	expect_sym(st, 0x1290, "d", 0x10, &bad);
	expect_sym(st, 0x12bf, "d", 0x3f, &bad);
	expect_sym(st, 0x12c2, "vfn@@VERS_1", 2, &bad);
	expect_sym(st, 0x12c8, NULL, 0, &bad);
	expect_sym(st, 0x12d4, "local_fn", 4, &bad);
	expect_sym(st, 0x12e1, "ifn", 1, &bad);
	expect_sym(st, 0x12f5, "inner", 1, &bad);
	expect_sym(st, 0x12f8, "outer", 8, &bad);	/* past nested inner */
	expect_sym(st, 0x130c, "tail", 0xc, &bad);	/* up to section end */
	expect_sym(st, 0x1310, NULL, 0, &bad);
	expect_sym(st, 0x1100, NULL, 0, &bad);		/* OBJECT ignored */
	ASSERT_EQ(bad, 0);
	ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x10), 0x10);
	ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x210), 0x1210);
	ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x310), -1);
	ASSERT_TRUE(!elf_symtab__is_exec(st));
	elf_symtab__free(st);

	/* ET_EXEC is reported as such */
	((Elf64_Ehdr *)img)->e_type = ET_EXEC;
	path = mini_file(img, "mini-exec");
	ASSERT_TRUE(path);
	st = elf_symtab__load(path, err, sizeof(err));
	ASSERT_TRUE(st);
	ASSERT_TRUE(elf_symtab__is_exec(st));
	elf_symtab__free(st);
}

static void test_mini_hostile(void)
{
	static unsigned char img[MINI_SIZE] __attribute__((aligned(16)));
	struct elf_symtab *st;
	char err[128] = "";
	const char *path;

	/* wrong machine / type */
	build_mini_elf(img);
	((Elf64_Ehdr *)img)->e_machine = FOREIGN_EM;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENOEXEC);
	ASSERT_STR_EQ(err, "not an " NATIVE_NAME " ELF file");
	build_mini_elf(img);
	((Elf64_Ehdr *)img)->e_type = ET_REL;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENOEXEC);
	ASSERT_STR_EQ(err, "not an executable or shared object");

	/* no .dynsym: check fails, has_func says no, .symtab still loads */
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSYM)->sh_type = SHT_PROGBITS;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENODATA);
	ASSERT_STR_EQ(err, "no dynamic symbol table");
	ASSERT_EQ(elfsym__has_func(path, "a"), 0);
	st = elf_symtab__load(path, err, sizeof(err));
	ASSERT_TRUE(st);
	ASSERT_EQ(elf_symtab__count(st), 5);
	elf_symtab__free(st);

	/* sh_link out of range, or to a non-string-table */
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSYM)->sh_link = 999;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG);
	ASSERT_STR_EQ(err, "corrupt ELF: bad symbol string table");
	ASSERT_EQ(elfsym__has_func(path, "a"), -EBADMSG);
	ASSERT_TRUE(elf_symtab__load(path, err, sizeof(err)) == NULL);
	mini_shdr(img, SEC_DYNSYM)->sh_link = SEC_TEXT;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG);
	mini_shdr(img, SEC_DYNSYM)->sh_link = SEC_DYNSYM;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG);

	/* bogus sizes and offsets */
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSYM)->sh_size = 0x7fffffffffffULL;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG);
	ASSERT_STR_EQ(err, "corrupt ELF: symbol table out of bounds");
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSTR)->sh_offset = ~0ULL - 4;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG);
	build_mini_elf(img);
	mini_shdr(img, SEC_STRTAB)->sh_size = 1ULL << 40;
	path = mini_file(img, "h.so");
	ASSERT_TRUE(elf_symtab__load(path, err, sizeof(err)) == NULL);
	ASSERT_STR_CONTAINS(err, "corrupt ELF: ");
	build_mini_elf(img);
	((Elf64_Ehdr *)img)->e_phnum = 0x7fff;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG);
	ASSERT_STR_EQ(err, "corrupt ELF: program header table out of bounds");

	/* string offsets out of range: those symbols are skipped */
	build_mini_elf(img);
	((Elf64_Sym *)(img + mini_shdr(img, SEC_DYNSYM)->sh_offset))[1]
		.st_name = 0x7fffffff;
	((Elf64_Sym *)(img + mini_shdr(img, SEC_SYMTAB)->sh_offset))[2]
		.st_name = 0x7fffffff;
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__check(path, err, sizeof(err)), 0);
	ASSERT_EQ(elfsym__has_func(path, "a"), 0);
	ASSERT_EQ(elfsym__has_func(path, "b"), 1);
	st = elf_symtab__load(path, err, sizeof(err));
	ASSERT_TRUE(st);
	ASSERT_STR_EQ(elf_symtab__lookup(st, 0x1204, NULL), "__a_alias");
	elf_symtab__free(st);

	/* string table without a terminating NUL */
	build_mini_elf(img);
	{
		Elf64_Shdr *s = mini_shdr(img, SEC_DYNSTR);

		memset(img + s->sh_offset, 'x', s->sh_size);
	}
	path = mini_file(img, "h.so");
	ASSERT_EQ(elfsym__has_func(path, "a"), 0);
	st = elf_symtab__load(path, err, sizeof(err));
	ASSERT_TRUE(st);
	elf_symtab__free(st);

	/* overlapping wrap-around symbol and segment */
	build_mini_elf(img);
	((Elf64_Sym *)(img + mini_shdr(img, SEC_DYNSYM)->sh_offset))[1]
		.st_size = ~0ULL;
	((Elf64_Phdr *)(img + 64))[1].p_filesz = ~0ULL;
	path = mini_file(img, "h.so");
	st = elf_symtab__load(path, err, sizeof(err));
	ASSERT_TRUE(st);
	/* the wrapping .dynsym "a" is dropped; the .symtab one remains */
	ASSERT_STR_EQ(elf_symtab__lookup(st, 0x1204, NULL), "a");
	ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x210), -1);
	elf_symtab__free(st);

	/* NULL-safety of the accessors */
	ASSERT_TRUE(elf_symtab__lookup(NULL, 0, NULL) == NULL);
	ASSERT_EQ(elf_symtab__offset_to_vaddr(NULL, 0), -1);
	ASSERT_TRUE(!elf_symtab__is_exec(NULL));
	ASSERT_EQ(elfsym__check(NULL, err, sizeof(err)), -EINVAL);
}

int main(int argc, char **argv)
{
	static unsigned char img[MINI_SIZE] __attribute__((aligned(16)));

	if (argc == 3 && strcmp(argv[1], "--write-mini-elf") == 0) {
		build_mini_elf(img);
		return write_file(argv[2], img, MINI_SIZE) ? 1 : 0;
	}
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/gpuprobe-elfsym-XXXXXX");
	if (!mkdtemp(tmp_root)) {
		perror("mkdtemp");
		return 2;
	}
	atexit(cleanup_tmp);

	RUN_TEST(test_check_missing);
	RUN_TEST(test_check_not_elf);
	RUN_TEST(test_check_truncated);
	RUN_TEST(test_check_corrupt_shdrs);
	RUN_TEST(test_check_real_libc);
	RUN_TEST(test_foreach_libc);
	RUN_TEST(test_symtab_libc);
	RUN_TEST(test_mini_check_and_funcs);
	RUN_TEST(test_mini_symtab);
	RUN_TEST(test_mini_hostile);
	return unit_done();
}
