/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run as "test_elfsym --write-mini-elf PATH" it only writes the hand-made
 * ELF file used below (handy as a fuzzing seed) and exits.
 */
#define _GNU_SOURCE
#include "lib/elfsym.h"
#include "unit.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
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

	if (!ASSERT_EQ(elfsym__check("/nonexistent/libcuda.so.1", err, sizeof(err)),
		  -ENOENT, "missing_file"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "No such file or directory", "missing_file_message"))
		goto cleanup;
	errno = 0;
	st = elf_symtab__load("/nonexistent/libcuda.so.1", err, sizeof(err));
	if (!ASSERT_TRUE(st == NULL, "missing_no_symtab"))
		goto cleanup;
	if (!ASSERT_EQ(errno, ENOENT, "missing_errno"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func("/nonexistent/x", "malloc"), -ENOENT, "has_func_missing_file"))
		goto cleanup;
	/* err is optional */
	if (!ASSERT_EQ(elfsym__check("/nonexistent/x", NULL, 0), -ENOENT, "err_optional"))
		goto cleanup;
cleanup:;
}

static void test_check_not_elf(void)
{
	char path[512], err[128] = "";
	static const char text[] = "this is a text file, not an ELF\n";

	tmp_path(path, sizeof(path), "text.so");
	if (!ASSERT_EQ(write_file(path, text, sizeof(text) - 1), 0, "write_text"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENOEXEC, "text_file_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "not an ELF file", "text_file_message"))
		goto cleanup;

	tmp_path(path, sizeof(path), "empty.so");
	if (!ASSERT_EQ(write_file(path, "", 0), 0, "write_empty"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENOEXEC, "empty_file_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "not an ELF file", "empty_file_message"))
		goto cleanup;

	if (!ASSERT_EQ(elfsym__check("/tmp", err, sizeof(err)), -EISDIR, "directory_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "Is a directory", "directory_message"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__check("/dev/null", err, sizeof(err)), -EINVAL, "device_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "not a regular file", "device_message"))
		goto cleanup;

	/* a tiny err buffer truncates, never overflows */
	if (!ASSERT_EQ(elfsym__check("/tmp", err, 4), -EISDIR, "tiny_err_buffer"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "Is ", "tiny_err_truncated"))
		goto cleanup;
cleanup:;
}

static void test_check_truncated(void)
{
	static const size_t cuts[] = { 64, 16, 40, 200, 4096 };
	char path[512], err[128];
	unsigned char *buf;
	size_t len, i;

	buf = read_file(LIBC, 4096, &len);
	if (!ASSERT_TRUE(buf, "read_mini"))
		goto cleanup;
	if (!ASSERT_EQ(len, 4096, "mini_size"))
		goto cleanup;
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
	if (!ASSERT_EQ(i, sizeof(cuts) / sizeof(cuts[0]), "every_cut_refused"))
		goto cleanup;

	/* the canonical case from the spec: exactly the ELF header */
	err[0] = '\0';
	if (!ASSERT_EQ(write_file(path, "\177ELF", 4), 0, "write_header_magic"))
		goto cleanup;
	if (!ASSERT_TRUE(elfsym__check(path, err, sizeof(err)) < 0, "header_magic_refused"))
		goto cleanup;
	buf = read_file(LIBC, 64, &len);
	if (!ASSERT_TRUE(buf, "read_mini"))
		goto cleanup;
	if (!ASSERT_EQ(write_file(path, buf, 64), 0, "write_header_only"))
		goto cleanup;
	free(buf);
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG, "header_only_refused"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "corrupt ELF: ", "contains corrupt ELF:"))
		goto cleanup;
cleanup:;
}

static void test_check_corrupt_shdrs(void)
{
	char path[512], err[128] = "";
	struct elf_symtab *st;
	unsigned char *buf;
	size_t len;

	buf = read_file(LIBC, SIZE_MAX, &len);
	if (!ASSERT_TRUE(buf, "read_mini"))
		goto cleanup;
	if (!ASSERT_TRUE(len > 64, "mini_has_body"))
		goto cleanup;
	/* e_shoff (8 bytes at 0x28) and e_shnum (2 bytes at 0x3c): garbage */
	memset(buf + 0x28, 0x41, 8);
	memset(buf + 0x3c, 0x7f, 2);
	tmp_path(path, sizeof(path), "corrupt.so");
	if (!ASSERT_EQ(write_file(path, buf, len), 0, "write_garbage_shdrs"))
		goto cleanup;
	free(buf);

	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG, "garbage_shdrs_refused"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "corrupt ELF: ", "contains corrupt ELF:"))
		goto cleanup;
	printf("#   %s\n", err);
	if (!ASSERT_EQ(elfsym__has_func(path, "malloc"), -EBADMSG, "has_func_garbage_shdrs"))
		goto cleanup;
	errno = 0;
	st = elf_symtab__load(path, err, sizeof(err));
	if (!ASSERT_TRUE(st == NULL, "garbage_shdrs_no_symtab"))
		goto cleanup;
	if (!ASSERT_EQ(errno, EBADMSG, "garbage_shdrs_errno"))
		goto cleanup;
cleanup:;
}

static void test_check_real_libc(void)
{
	char err[128] = "untouched";

	if (!ASSERT_EQ(elfsym__check(LIBC, err, sizeof(err)), 0, "libc_checks"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "untouched", "err_untouched"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(LIBC, "malloc"), 1, "libc_has_malloc"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(LIBC, "gnu_get_libc_version"), 1, "libc_has_version_fn"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(LIBC, "mallo"), 0, "no_prefix_match"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(LIBC, "cuLaunchKernel"), 0, "libc_lacks_cuda"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(LIBC, ""), -EINVAL, "empty_name_refused"))
		goto cleanup;
cleanup:;
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

	if (!ASSERT_EQ(elfsym__foreach_func(LIBC, collect_cb, &ctx), 0, "foreach_libc"))
		goto cleanup;
	if (!ASSERT_TRUE(ctx.count > 1000, "libc_functions"))
		goto cleanup;
	if (!ASSERT_TRUE(ctx.malloc_value != 0, "malloc_value"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__foreach_func(LIBC, stop_cb, &n), -77, "foreach_stops"))
		goto cleanup;
	if (!ASSERT_EQ(n, 3, "stopped_after_3"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__foreach_func(LIBC, NULL, NULL), -EINVAL, "null_callback_refused"))
		goto cleanup;
cleanup:;
}

static void test_symtab_libc(void)
{
	struct collect_ctx ctx = { 0 };
	unsigned long long off = 99;
	struct elf_symtab *st = NULL;
	char err[128] = "";
	const char *name;

	if (!ASSERT_EQ(elfsym__foreach_func(LIBC, collect_cb, &ctx), 0, "foreach_libc"))
		goto cleanup;
	st = elf_symtab__load(LIBC, err, sizeof(err));
	if (!ASSERT_TRUE(st, "libc_symtab"))
		goto cleanup;
	if (!ASSERT_TRUE(elf_symtab__count(st) > 1000, "libc_symtab_count"))
		goto cleanup;
	if (!ASSERT_TRUE(!elf_symtab__is_exec(st), "libc_not_exec"))
		goto cleanup;
	/* aliases (__libc_malloc) share the address: the public name wins */
	name = elf_symtab__lookup(st, ctx.malloc_value, &off);
	if (!ASSERT_STR_EQ(name, "malloc", "malloc_public_name"))
		goto cleanup;
	if (!ASSERT_EQ(off, 0, "malloc_offset_0"))
		goto cleanup;
	name = elf_symtab__lookup(st, ctx.malloc_value + 4, &off);
	if (!ASSERT_STR_EQ(name, "malloc", "malloc_inside_name"))
		goto cleanup;
	if (!ASSERT_EQ(off, 4, "malloc_offset_4"))
		goto cleanup;
	/* libc's first PT_LOAD maps offset 0 at vaddr 0 */
	if (!ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x10), 0x10, "first_load_identity"))
		goto cleanup;
	if (!ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 1ULL << 40), -1, "offset_past_segments"))
		goto cleanup;
	if (!ASSERT_TRUE(elf_symtab__lookup(st, 0, &off) == NULL, "no_symbol_at_0"))
		goto cleanup;
	if (!ASSERT_TRUE(elf_symtab__lookup(st, ~0ULL, &off) == NULL, "no_symbol_at_max"))
		goto cleanup;
cleanup:
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
	if (!ASSERT_TRUE(path, "mini_written"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), 0, "mini_checks"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "a"), 1, "has_a"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "b"), 1, "has_b"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "vfn"), 1, "has_versioned_bare"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "vfn@@VERS_1"), 1, "has_versioned_full"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "vf"), 0, "no_prefix_match"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "ifn"), 1, "has_ifunc"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "undef_fn"), 0, "no_undefined"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "obj"), 0, "no_object"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "local_fn"), 0, "no_local_in_dynsym"))
		goto cleanup;	/* .symtab only */
	if (!ASSERT_EQ(elfsym__foreach_func(path, collect_cb, &ctx), 0, "foreach_mini"))
		goto cleanup;
	if (!ASSERT_EQ(ctx.count, 7, "mini_functions"))
		goto cleanup;
cleanup:;
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
	struct elf_symtab *st = NULL;
	char err[128] = "";
	const char *path;
	int bad = 0;

	build_mini_elf(img);
	path = mini_file(img, "mini.so");
	if (!ASSERT_TRUE(path, "mini_written"))
		goto cleanup;
	st = elf_symtab__load(path, err, sizeof(err));
	if (!ASSERT_TRUE(st, "mini_symtab"))
		goto cleanup;
	/* a b c d vfn local_fn ifn outer inner tail; aliases/dups merged */
	if (!ASSERT_EQ(elf_symtab__count(st), 10, "mini_symtab_count"))
		goto cleanup;
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
	if (!ASSERT_EQ(bad, 0, "every_symbol_expected"))
		goto cleanup;
	if (!ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x10), 0x10, "offset_before_text"))
		goto cleanup;
	if (!ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x210), 0x1210, "offset_in_text"))
		goto cleanup;
	if (!ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x310), -1, "offset_past_segments"))
		goto cleanup;
	if (!ASSERT_TRUE(!elf_symtab__is_exec(st), "mini_not_exec"))
		goto cleanup;
	elf_symtab__free(st);

	/* ET_EXEC is reported as such */
	((Elf64_Ehdr *)img)->e_type = ET_EXEC;
	path = mini_file(img, "mini-exec");
	if (!ASSERT_TRUE(path, "exec_written"))
		goto cleanup;
	st = elf_symtab__load(path, err, sizeof(err));
	if (!ASSERT_TRUE(st, "exec_symtab"))
		goto cleanup;
	if (!ASSERT_TRUE(elf_symtab__is_exec(st), "exec_flag"))
		goto cleanup;
cleanup:
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
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENOEXEC, "a foreign machine's ELF"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "not an " NATIVE_NAME " ELF file", "its error"))
		goto cleanup;
	build_mini_elf(img);
	((Elf64_Ehdr *)img)->e_type = ET_REL;
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENOEXEC, "relocatable_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "not an executable or shared object", "relocatable_message"))
		goto cleanup;

	/* no .dynsym: check fails, has_func says no, .symtab still loads */
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSYM)->sh_type = SHT_PROGBITS;
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -ENODATA, "no_dynsym_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "no dynamic symbol table", "no_dynsym_message"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "a"), 0, "no_dynsym_no_func"))
		goto cleanup;
	st = elf_symtab__load(path, err, sizeof(err));
	if (!ASSERT_TRUE(st, "no_dynsym_symtab_loads"))
		goto cleanup;
	if (!ASSERT_EQ(elf_symtab__count(st), 5, "no_dynsym_symtab_count"))
		goto cleanup;
	elf_symtab__free(st);

	/* sh_link out of range, or to a non-string-table */
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSYM)->sh_link = 999;
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG, "link_out_of_range_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "corrupt ELF: bad symbol string table", "link_out_of_range_message"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "a"), -EBADMSG, "link_out_of_range_has_func"))
		goto cleanup;
	if (!ASSERT_TRUE(elf_symtab__load(path, err, sizeof(err)) == NULL, "link_out_of_range_no_symtab"))
		goto cleanup;
	mini_shdr(img, SEC_DYNSYM)->sh_link = SEC_TEXT;
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG, "link_to_text_refused"))
		goto cleanup;
	mini_shdr(img, SEC_DYNSYM)->sh_link = SEC_DYNSYM;
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG, "link_to_self_refused"))
		goto cleanup;

	/* bogus sizes and offsets */
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSYM)->sh_size = 0x7fffffffffffULL;
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG, "huge_dynsym_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "corrupt ELF: symbol table out of bounds", "huge_dynsym_message"))
		goto cleanup;
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSTR)->sh_offset = ~0ULL - 4;
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG, "far_dynstr_refused"))
		goto cleanup;
	build_mini_elf(img);
	mini_shdr(img, SEC_STRTAB)->sh_size = 1ULL << 40;
	path = mini_file(img, "h.so");
	if (!ASSERT_TRUE(elf_symtab__load(path, err, sizeof(err)) == NULL, "huge_strtab_no_symtab"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "corrupt ELF: ", "contains corrupt ELF:"))
		goto cleanup;
	build_mini_elf(img);
	((Elf64_Ehdr *)img)->e_phnum = 0x7fff;
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG, "many_phdrs_refused"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "corrupt ELF: program header table out of bounds", "many_phdrs_message"))
		goto cleanup;

	/* string offsets out of range: those symbols are skipped */
	build_mini_elf(img);
	((Elf64_Sym *)(img + mini_shdr(img, SEC_DYNSYM)->sh_offset))[1]
		.st_name = 0x7fffffff;
	((Elf64_Sym *)(img + mini_shdr(img, SEC_SYMTAB)->sh_offset))[2]
		.st_name = 0x7fffffff;
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), 0, "bad_name_offsets_check"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "a"), 0, "bad_name_skipped"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func(path, "b"), 1, "good_name_kept"))
		goto cleanup;
	st = elf_symtab__load(path, err, sizeof(err));
	if (!ASSERT_TRUE(st, "bad_name_offsets_symtab"))
		goto cleanup;
	if (!ASSERT_STR_EQ(elf_symtab__lookup(st, 0x1204, NULL), "__a_alias", "alias_kept"))
		goto cleanup;
	elf_symtab__free(st);

	/* string table without a terminating NUL */
	build_mini_elf(img);
	{
		Elf64_Shdr *s = mini_shdr(img, SEC_DYNSTR);

		memset(img + s->sh_offset, 'x', s->sh_size);
	}
	path = mini_file(img, "h.so");
	if (!ASSERT_EQ(elfsym__has_func(path, "a"), 0, "unterminated_strtab_no_func"))
		goto cleanup;
	st = elf_symtab__load(path, err, sizeof(err));
	if (!ASSERT_TRUE(st, "unterminated_strtab_symtab"))
		goto cleanup;
	elf_symtab__free(st);

	/* overlapping wrap-around symbol and segment */
	build_mini_elf(img);
	((Elf64_Sym *)(img + mini_shdr(img, SEC_DYNSYM)->sh_offset))[1]
		.st_size = ~0ULL;
	((Elf64_Phdr *)(img + 64))[1].p_filesz = ~0ULL;
	path = mini_file(img, "h.so");
	st = elf_symtab__load(path, err, sizeof(err));
	if (!ASSERT_TRUE(st, "wrapping_symtab"))
		goto cleanup;
	/* the wrapping .dynsym "a" is dropped; the .symtab one remains */
	if (!ASSERT_STR_EQ(elf_symtab__lookup(st, 0x1204, NULL), "a", "wrapping_symbol_dropped"))
		goto cleanup;
	if (!ASSERT_EQ(elf_symtab__offset_to_vaddr(st, 0x210), -1, "wrapping_segment_dropped"))
		goto cleanup;
	elf_symtab__free(st);

	/* NULL-safety of the accessors */
	if (!ASSERT_TRUE(elf_symtab__lookup(NULL, 0, NULL) == NULL, "null_lookup"))
		goto cleanup;
	if (!ASSERT_EQ(elf_symtab__offset_to_vaddr(NULL, 0), -1, "null_offset_to_vaddr"))
		goto cleanup;
	if (!ASSERT_TRUE(!elf_symtab__is_exec(NULL), "null_is_exec"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__check(NULL, err, sizeof(err)), -EINVAL, "null_path_refused"))
		goto cleanup;
cleanup:;
}

/* ---- hostile sizes: sparse files, caps, the per-file budget ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes img as name, then makes the file size bytes long (a sparse tail). */
static const char *sparse_file(const unsigned char *img, const char *name,
			       unsigned long long size)
{
	const char *path = mini_file(img, name);

	if (path && truncate(path, (off_t)size))
		path = NULL;
	return path;
}

/* Runs every entry point on path; returns the seconds they took together. */
static double all_entry_points(const char *path, int *check, int *load_errno,
			       char *err, size_t errlen)
{
	struct collect_ctx ctx = { 0 };
	struct elf_symtab *st;
	double t0 = now_s();

	*check = elfsym__check(path, err, errlen);
	elfsym__has_func(path, "a");
	elfsym__foreach_func(path, collect_cb, &ctx);
	errno = 0;
	st = elf_symtab__load(path, NULL, 0);
	*load_errno = st ? 0 : errno;
	elf_symtab__free(st);
	return now_s() - t0;
}

static void test_sparse_claims(void)
{
	static unsigned char img[MINI_SIZE] __attribute__((aligned(16)));
	char err[256] = "";
	const char *path;
	int check, lerr;
	struct stat sb;
	double took;

	/* the audit's file: 8 GiB sparse, a .dynsym claiming 6 GiB */
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSYM)->sh_size = 6ULL << 30;
	path = sparse_file(img, "sparse-dynsym.so", 8ULL << 30);
	if (!ASSERT_TRUE(path, "sparse file written"))
		goto cleanup;
	if (!ASSERT_EQ(stat(path, &sb), 0, "stat sparse file"))
		goto cleanup;
	if (!ASSERT_TRUE((unsigned long long)sb.st_blocks * 512 < (1ULL << 20), "the file holds under 1 MiB of data"))
		goto cleanup;
	took = all_entry_points(path, &check, &lerr, err, sizeof(err));
	printf("#   %s (%.3f s)\n", err, took);
	if (!ASSERT_EQ(check, -EFBIG, "check of a sparse .dynsym claim"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, ".dynsym claims 6.0 GiB, larger than the file's data (", "message names table, claim and data"))
		goto cleanup;
	if (!ASSERT_EQ(lerr, EFBIG, "load of a sparse .dynsym claim"))
		goto cleanup;
	if (!ASSERT_TRUE(took < 1.0, "all entry points in under a second"))
		goto cleanup;

	/* a string table claiming 5 GiB */
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSTR)->sh_size = 5ULL << 30;
	path = sparse_file(img, "sparse-dynstr.so", 8ULL << 30);
	took = all_entry_points(path, &check, &lerr, err, sizeof(err));
	if (!ASSERT_EQ(check, -EFBIG, "check of a sparse .dynstr claim"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, ".dynstr claims 5.0 GiB, larger than the file's data", "message names .dynstr"))
		goto cleanup;
	if (!ASSERT_TRUE(took < 1.0, "all entry points in under a second"))
		goto cleanup;
	build_mini_elf(img);
	mini_shdr(img, SEC_STRTAB)->sh_size = 5ULL << 30;
	path = sparse_file(img, "sparse-strtab.so", 8ULL << 30);
	errno = 0;
	if (!ASSERT_TRUE(elf_symtab__load(path, err, sizeof(err)) == NULL, "load of a sparse .strtab claim fails"))
		goto cleanup;
	if (!ASSERT_EQ(errno, EFBIG, "errno of a sparse .strtab claim"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, ".strtab claims 5.0 GiB", "message names .strtab"))
		goto cleanup;

	/* extended numbering: section 0 claims 100 million section headers */
	build_mini_elf(img);
	((Elf64_Ehdr *)img)->e_shnum = 0;
	mini_shdr(img, 0)->sh_size = 100000000;
	path = sparse_file(img, "sparse-shnum.so", 8ULL << 30);
	took = all_entry_points(path, &check, &lerr, err, sizeof(err));
	printf("#   %s (%.3f s)\n", err, took);
	if (!ASSERT_EQ(check, -EFBIG, "check of 100 million section headers"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "section header table claims 6.0 GiB, larger than the file's data", "message names the section header table"))
		goto cleanup;
	if (!ASSERT_TRUE(took < 1.0, "all entry points in under a second"))
		goto cleanup;
	/* ... or so many that the count times the entry size would wrap */
	mini_shdr(img, 0)->sh_size = ~0ULL / 8;
	path = sparse_file(img, "sparse-shnum.so", 8ULL << 30);
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EBADMSG, "check of a wrapping section count"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "corrupt ELF: section header table out of bounds", "message of a wrapping section count"))
		goto cleanup;

	/* PN_XNUM: section 0's sh_info claims 100 million program headers */
	build_mini_elf(img);
	((Elf64_Ehdr *)img)->e_phnum = PN_XNUM;
	mini_shdr(img, 0)->sh_info = 100000000;
	path = sparse_file(img, "sparse-phnum.so", 8ULL << 30);
	took = all_entry_points(path, &check, &lerr, err, sizeof(err));
	if (!ASSERT_EQ(check, -EFBIG, "check of 100 million program headers"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "program header table claims 5.2 GiB, larger than the file's data", "message names the program header table"))
		goto cleanup;
	if (!ASSERT_TRUE(took < 1.0, "all entry points in under a second"))
		goto cleanup;
	/* within the file's real data, PN_XNUM is read through section 0 */
	mini_shdr(img, 0)->sh_info = 2;
	path = mini_file(img, "xnum.so");
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), 0, "check with PN_XNUM and 2 program headers"))
		goto cleanup;
cleanup:;
}

/* A file with real (allocated) data of size bytes, the mini image at its start. */
static const char *allocated_file(const unsigned char *img, const char *name,
				  unsigned long long size)
{
	const char *path = mini_file(img, name);
	int fd;

	if (!path)
		return NULL;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	/* allocated blocks count as data: the cap must hold on its own */
	if (posix_fallocate(fd, 0, (off_t)size))
		path = NULL;
	close(fd);
	return path;
}

static void test_caps(void)
{
	static unsigned char img[MINI_SIZE] __attribute__((aligned(16)));
	Elf64_Shdr *sh;
	char err[256] = "";
	const char *path;
	double t0;

	/* a 65 MiB .dynsym the file really holds: over the 64 MiB cap */
	build_mini_elf(img);
	mini_shdr(img, SEC_DYNSYM)->sh_size = 65ULL << 20;
	path = allocated_file(img, "cap.so", 70ULL << 20);
	if (!ASSERT_TRUE(path, "70 MiB allocated file"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), -EFBIG, "check of a 65 MiB .dynsym"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, ".dynsym claims 65.0 MiB, larger than the cap (64.0 MiB)", "message of the cap"))
		goto cleanup;
	unlink(path);

	/*
	 * Four tables under their caps whose sum is over the per-file budget
	 * (256 MiB) in a file of 300 MiB of data: .symtab 60 + .strtab 120 +
	 * .dynsym 60 MiB read, then .dynstr's 120 MiB is refused.
	 */
	build_mini_elf(img);
	sh = mini_shdr(img, SEC_SYMTAB);
	sh->sh_offset = 1ULL << 20;
	sh->sh_size = 60ULL << 20;
	sh = mini_shdr(img, SEC_STRTAB);
	sh->sh_offset = 62ULL << 20;
	sh->sh_size = 120ULL << 20;
	sh = mini_shdr(img, SEC_DYNSYM);
	sh->sh_offset = 1ULL << 20;
	sh->sh_size = 60ULL << 20;
	sh = mini_shdr(img, SEC_DYNSTR);
	sh->sh_offset = 62ULL << 20;
	sh->sh_size = 120ULL << 20;
	path = allocated_file(img, "budget.so", 300ULL << 20);
	if (!ASSERT_TRUE(path, "300 MiB allocated file"))
		goto cleanup;
	t0 = now_s();
	errno = 0;
	if (!ASSERT_TRUE(elf_symtab__load(path, err, sizeof(err)) == NULL, "load over the per-file budget fails"))
		goto cleanup;
	if (!ASSERT_EQ(errno, EFBIG, "errno over the per-file budget"))
		goto cleanup;
	printf("#   %s (%.3f s)\n", err, now_s() - t0);
	if (!ASSERT_STR_CONTAINS(err, ".dynstr claims 120.0 MiB, more than is left of what one file may cost (16.0 MiB)", "message of the budget"))
		goto cleanup;
	/* one table pair alone fits */
	if (!ASSERT_EQ(elfsym__check(path, err, sizeof(err)), 0, "check reads .dynsym and .dynstr only"))
		goto cleanup;
cleanup:
	if (path)
		unlink(path);
}

/*
 * 20000 function symbols sharing one 64 KiB name: copying the name per
 * symbol would keep 1.3 GB; it is kept once.
 */
static void test_shared_names(void)
{
	enum { NSYM = 20000, NAME_LEN = 64 << 10 };
	static unsigned char img[MINI_SIZE] __attribute__((aligned(16)));
	size_t strtab_off = MINI_SIZE, symtab_off, len;
	unsigned char *file = NULL;
	struct elf_symtab *st = NULL;
	char err[256] = "";
	const char *path;
	Elf64_Shdr *sh;
	Elf64_Sym *syms;
	int fd = -1;

	build_mini_elf(img);
	symtab_off = strtab_off + NAME_LEN + 8;
	len = symtab_off + (NSYM + 1) * sizeof(Elf64_Sym);
	file = calloc(1, len);
	if (!ASSERT_TRUE(file, "allocated the file image"))
		goto cleanup;
	sh = mini_shdr(img, SEC_STRTAB);
	sh->sh_offset = strtab_off;
	sh->sh_size = NAME_LEN + 2;
	sh = mini_shdr(img, SEC_SYMTAB);
	sh->sh_offset = symtab_off;
	sh->sh_size = (NSYM + 1) * sizeof(Elf64_Sym);
	memcpy(file, img, MINI_SIZE);
	memset(file + strtab_off + 1, 'f', NAME_LEN);	/* "\0fff...f\0" */
	syms = (Elf64_Sym *)(file + symtab_off);
	for (size_t i = 1; i <= NSYM; i++) {
		syms[i].st_name = 1;
		syms[i].st_value = 0x100000 + i * 16;
		syms[i].st_size = 16;
		syms[i].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		syms[i].st_shndx = SEC_TEXT;
	}
	path = mini_file(img, "shared-names.so");
	if (!ASSERT_TRUE(path, "image_written"))
		goto cleanup;
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (!ASSERT_TRUE(fd >= 0 && write(fd, file, len) == (ssize_t)len, "wrote the file"))
		goto cleanup;
	st = elf_symtab__load(path, err, sizeof(err));
	if (!ASSERT_TRUE(st, "loads"))
		goto cleanup;
	/* + a b c d vfn ifn of .dynsym (__a_alias shares a's address) */
	if (!ASSERT_EQ(elf_symtab__count(st), NSYM + 6, "every symbol kept"))
		goto cleanup;
	if (!ASSERT_TRUE(elf_symtab__bytes(st) < (4U << 20), "kept under 4 MiB"))
		goto cleanup;
	if (!ASSERT_EQ(strlen(elf_symtab__lookup(st, 0x100000 + 77 * 16 + 3, NULL)), NAME_LEN, "the shared name resolves"))
		goto cleanup;
cleanup:
	if (fd >= 0)
		close(fd);
	elf_symtab__free(st);
	free(file);
}

static void test_fd_variants(void)
{
	static unsigned char img[MINI_SIZE] __attribute__((aligned(16)));
	struct collect_ctx ctx = { 0 };
	struct elf_symtab *st = NULL;
	char err[128] = "";
	const char *path;
	int fd = -1, fifo = -1;
	char fifo_path[512];

	build_mini_elf(img);
	path = mini_file(img, "fd.so");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!ASSERT_TRUE(fd >= 0, "opened"))
		goto cleanup;
	/* pread only: the file offset is left where the caller had it */
	if (!ASSERT_EQ(lseek(fd, 123, SEEK_SET), 123, "lseek"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__check_fd(fd, err, sizeof(err)), 0, "elfsym__check_fd"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func_fd(fd, "vfn"), 1, "elfsym__has_func_fd(vfn)"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__has_func_fd(fd, "local_fn"), 0, "elfsym__has_func_fd(local_fn)"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__foreach_func_fd(fd, collect_cb, &ctx), 0, "elfsym__foreach_func_fd"))
		goto cleanup;
	if (!ASSERT_EQ(ctx.count, 7, "functions in .dynsym"))
		goto cleanup;
	st = elf_symtab__load_fd(fd, err, sizeof(err));
	if (!ASSERT_TRUE(st, "elf_symtab__load_fd"))
		goto cleanup;
	if (!ASSERT_EQ(elf_symtab__count(st), 10, "elf_symtab__count"))
		goto cleanup;
	if (!ASSERT_EQ(lseek(fd, 0, SEEK_CUR), 123, "file offset unchanged"))
		goto cleanup;
	if (!ASSERT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC, "descriptor still open"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__check_fd(-1, err, sizeof(err)), -EBADF, "elfsym__check_fd(-1)"))
		goto cleanup;
	if (!ASSERT_EQ(elfsym__foreach_func_fd(fd, NULL, NULL), -EINVAL, "elfsym__foreach_func_fd(cb NULL)"))
		goto cleanup;
	/* a FIFO (opened non-blocking here) is refused, never read */
	tmp_path(fifo_path, sizeof(fifo_path), "fifo.so");
	if (!ASSERT_EQ(mkfifo(fifo_path, 0600), 0, "mkfifo"))
		goto cleanup;
	fifo = open(fifo_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (!ASSERT_EQ(elfsym__check_fd(fifo, err, sizeof(err)), -EINVAL, "elfsym__check_fd(FIFO)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "not a regular file", "FIFO message"))
		goto cleanup;
	/* the path version opens a FIFO without blocking, then refuses it */
	if (!ASSERT_EQ(elfsym__check(fifo_path, err, sizeof(err)), -EINVAL, "elfsym__check(FIFO path)"))
		goto cleanup;
cleanup:
	if (fifo >= 0)
		close(fifo);
	if (fd >= 0)
		close(fd);
	elf_symtab__free(st);
}

/* xorshift: the same mutants on every run */
static unsigned long long rnd_state = 0x9E3779B97F4A7C15ULL;

static unsigned long long rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/*
 * 600 mutated files (the audit ran 524): bytes of the headers and tables of
 * the mini ELF set to edge values, half of them then made 8 GiB sparse.
 * Every entry point must return (a crash or a hang ends this test), each
 * file in well under a second.
 */
static void test_mutants(void)
{
	static const unsigned long long edges[] = {
		0, 1, 0x7f, 0x80, 0xff, 0xffff, 0xffffffff, 0x7fffffffffffffffULL,
		~0ULL, 1ULL << 32, 6ULL << 30, MINI_SIZE, MINI_SIZE - 1,
	};
	static unsigned char img[MINI_SIZE] __attribute__((aligned(16)));
	double took, worst = 0;
	int i, check, lerr, refused = 0;
	char err[256];
	const char *path;

	for (i = 0; i < 600; i++) {
		unsigned long long v = edges[rnd() % (sizeof(edges) / sizeof(edges[0]))];
		size_t at, width = (size_t)1 << (rnd() % 4), n = 1 + rnd() % 3;

		build_mini_elf(img);
		while (n--) {
			/* the ELF header, the symbol tables or the section headers */
			switch (rnd() % 3) {
			case 0:
				at = rnd() % 64;
				break;
			case 1:
				at = 0x400 + rnd() % 0x200;
				break;
			default:
				at = ((Elf64_Ehdr *)img)->e_shoff + rnd() % (SEC_NUM * sizeof(Elf64_Shdr));
				break;
			}
			at = at / width * width;
			if (at + width <= MINI_SIZE)
				memcpy(img + at, &v, width);
		}
		path = i % 2 ? sparse_file(img, "mutant.so", 8ULL << 30) : mini_file(img, "mutant.so");
		if (!path)
			break;
		took = all_entry_points(path, &check, &lerr, err, sizeof(err));
		if (took > worst)
			worst = took;
		refused += check < 0;
	}
	printf("#   %d mutants, %d refused by check, slowest %.3f s\n", i, refused, worst);
	if (!ASSERT_EQ(i, 600, "all mutants written and parsed"))
		goto cleanup;
	if (!ASSERT_TRUE(refused > 100, "many mutants refused"))
		goto cleanup;
	if (!ASSERT_TRUE(worst < 1.0, "each mutant in under a second"))
		goto cleanup;
cleanup:;
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
	RUN_TEST(test_sparse_claims);
	RUN_TEST(test_caps);
	RUN_TEST(test_shared_names);
	RUN_TEST(test_fd_variants);
	RUN_TEST(test_mutants);
	return unit_done();
}
