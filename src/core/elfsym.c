/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Only libraries gpuprobe's own processes could map: its build's machine. */
#if defined(__aarch64__)
#define GP_NATIVE_MACHINE EM_AARCH64
#define GP_NATIVE_NAME "arm64"
#else
#define GP_NATIVE_MACHINE EM_X86_64
#define GP_NATIVE_NAME "x86-64"
#endif

/*
 * How many preceding symbols a lookup inspects when the closest one does not
 * cover the address: enough for a small function nested inside a larger one
 * (e.g. a FUNC alias for a label in the middle of a routine), while keeping
 * the lookup O(log n).
 */
#define LOOKUP_LOOKBACK 4

struct elf_file {
	int fd;
	Elf *elf;
	GElf_Ehdr ehdr;
	size_t shnum;
	unsigned long long size;
};

/* One usable symbol table section (.symtab or .dynsym). */
struct symtab_view {
	Elf_Data *data;
	size_t strndx;
	size_t count;
};

struct sym_ent {
	unsigned long long addr;
	/* exclusive end; for size-0 symbols first the section end, then fixed */
	unsigned long long end;
	size_t name;		/* offset into elf_symtab.names */
	unsigned int rank;	/* lower is preferred among aliases */
	bool sized;
};

struct seg {
	unsigned long long off, filesz, vaddr, memsz;
};

struct elf_symtab {
	struct sym_ent *syms;
	size_t nsyms, syms_cap;
	char *names;
	size_t names_len, names_cap;
	struct seg *segs;
	size_t nsegs;
	bool is_exec;
};

static void __attribute__((format(printf, 3, 4)))
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
}

static const char *libelf_msg(void)
{
	const char *m = elf_errmsg(-1);

	return m ? m : "unknown libelf error";
}

static void elf_file__close(struct elf_file *ef)
{
	if (ef->elf)
		elf_end(ef->elf);
	ef->elf = NULL;
	if (ef->fd >= 0)
		close(ef->fd);
	ef->fd = -1;
}

/* true if [off, off + n * entsize) lies inside a file of size bytes */
static bool table_in_file(unsigned long long off, unsigned long long n,
			  unsigned long long entsize, unsigned long long size)
{
	return off <= size && (entsize == 0 || (size - off) / entsize >= n);
}

/*
 * Opens path as an ELF file and sanity-checks the header tables. libelf
 * reads section headers lazily and trusts e_shnum/e_shoff when sizing its
 * allocations, so the bounds are checked here against the real file size
 * before anything else touches them.
 */
static int elf_file__open(struct elf_file *ef, const char *path,
			  char *err, size_t errlen)
{
	unsigned long long entsize, raw_shnum, raw_phnum;
	struct stat st;
	size_t phnum;
	int ret = 0;

	ef->fd = -1;
	ef->elf = NULL;
	if (!path) {
		ret = -EINVAL;
		set_err(err, errlen, "%s", strerror(EINVAL));
		goto cleanup;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		ret = -ENOSYS;
		set_err(err, errlen, "libelf: %s", libelf_msg());
		goto cleanup;
	}
	ef->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (ef->fd < 0) {
		ret = -errno;
		set_err(err, errlen, "%s", strerror(-ret));
		goto cleanup;
	}
	if (fstat(ef->fd, &st)) {
		ret = -errno;
		set_err(err, errlen, "%s", strerror(-ret));
		goto cleanup;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = -EISDIR;
		set_err(err, errlen, "%s", strerror(EISDIR));
		goto cleanup;
	}
	/* A FIFO or /dev/zero would block or read forever. */
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		set_err(err, errlen, "not a regular file");
		goto cleanup;
	}
	ef->size = (unsigned long long)st.st_size;
	/* pread-based, not mmap: a file truncated under us cannot SIGBUS */
	ef->elf = elf_begin(ef->fd, ELF_C_READ, NULL);
	if (!ef->elf) {
		ret = -EBADMSG;
		set_err(err, errlen, "corrupt ELF: %s", libelf_msg());
		goto cleanup;
	}
	if (elf_kind(ef->elf) != ELF_K_ELF) {
		ret = -ENOEXEC;
		set_err(err, errlen, "not an ELF file");
		goto cleanup;
	}
	if (!gelf_getehdr(ef->elf, &ef->ehdr) ||
	    elf_getshdrnum(ef->elf, &ef->shnum) ||
	    elf_getphdrnum(ef->elf, &phnum)) {
		ret = -EBADMSG;
		set_err(err, errlen, "corrupt ELF: %s", libelf_msg());
		goto cleanup;
	}
	/*
	 * libelf silently clamps the counts to what fits in the file, which
	 * would make a damaged header look like "no sections": compare the
	 * header's own counts (extended numbering lives in section 0) instead.
	 */
	raw_shnum = ef->ehdr.e_shnum;
	if (raw_shnum == 0 && ef->ehdr.e_shoff != 0)
		raw_shnum = ef->shnum ? ef->shnum : 1;
	raw_phnum = ef->ehdr.e_phnum == PN_XNUM ? phnum : ef->ehdr.e_phnum;
	if (raw_shnum) {
		entsize = gelf_fsize(ef->elf, ELF_T_SHDR, 1, EV_CURRENT);
		if (ef->ehdr.e_shentsize != entsize ||
		    !table_in_file(ef->ehdr.e_shoff, raw_shnum, entsize,
				   ef->size) ||
		    (ef->ehdr.e_shnum && ef->shnum != raw_shnum)) {
			ret = -EBADMSG;
			set_err(err, errlen,
				"corrupt ELF: section header table out of bounds");
			goto cleanup;
		}
	}
	if (raw_phnum) {
		entsize = gelf_fsize(ef->elf, ELF_T_PHDR, 1, EV_CURRENT);
		if (ef->ehdr.e_phentsize != entsize ||
		    !table_in_file(ef->ehdr.e_phoff, raw_phnum, entsize,
				   ef->size) ||
		    phnum != raw_phnum) {
			ret = -EBADMSG;
			set_err(err, errlen,
				"corrupt ELF: program header table out of bounds");
			goto cleanup;
		}
	}
cleanup:
	if (ret)
		elf_file__close(ef);
	return ret;
}

/* Section contents must lie inside the file before libelf allocates them. */
static bool scn_in_file(const struct elf_file *ef, const GElf_Shdr *sh)
{
	return sh->sh_type == SHT_NOBITS ||
	       table_in_file(sh->sh_offset, sh->sh_size, 1, ef->size);
}

/* First section of the given type, *out NULL if none; error if unreadable. */
static int find_scn(struct elf_file *ef, Elf64_Word type, Elf_Scn **out,
		    char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int ret = 0;

	*out = NULL;
	while ((scn = elf_nextscn(ef->elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh)) {
			ret = -EBADMSG;
			set_err(err, errlen, "corrupt ELF: %s", libelf_msg());
			goto cleanup;
		}
		if (sh.sh_type == type) {
			*out = scn;
			break;
		}
	}
cleanup:
	return ret;
}

static int symtab_view__init(struct elf_file *ef, Elf_Scn *scn,
			     struct symtab_view *v, char *err, size_t errlen)
{
	GElf_Shdr sh, strsh;
	Elf_Scn *strscn;
	size_t entsize;
	int ret = 0;

	if (!gelf_getshdr(scn, &sh)) {
		ret = -EBADMSG;
		set_err(err, errlen, "corrupt ELF: %s", libelf_msg());
		goto cleanup;
	}
	if (!scn_in_file(ef, &sh)) {
		ret = -EBADMSG;
		set_err(err, errlen, "corrupt ELF: symbol table out of bounds");
		goto cleanup;
	}
	/* sh_link may point anywhere: it must name an in-file SHT_STRTAB. */
	v->strndx = sh.sh_link;
	strscn = v->strndx && v->strndx < ef->shnum ?
		 elf_getscn(ef->elf, v->strndx) : NULL;
	if (!strscn || !gelf_getshdr(strscn, &strsh) ||
	    strsh.sh_type != SHT_STRTAB || !scn_in_file(ef, &strsh)) {
		ret = -EBADMSG;
		set_err(err, errlen, "corrupt ELF: bad symbol string table");
		goto cleanup;
	}
	v->data = elf_getdata(scn, NULL);
	if (!v->data) {
		ret = -EBADMSG;
		set_err(err, errlen, "corrupt ELF: %s", libelf_msg());
		goto cleanup;
	}
	if (v->data->d_type != ELF_T_SYM ||
	    (v->data->d_size && !v->data->d_buf)) {
		ret = -EBADMSG;
		set_err(err, errlen, "corrupt ELF: bad symbol table data");
		goto cleanup;
	}
	entsize = gelf_fsize(ef->elf, ELF_T_SYM, 1, EV_CURRENT);
	v->count = entsize ? v->data->d_size / entsize : 0;
cleanup:
	return ret;
}

/* defined function (incl. IFUNC resolvers, which is what callers call) */
static bool sym_is_func(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) &&
	       sym->st_shndx != SHN_UNDEF;
}

/* Finds a valid .dynsym in an open file; -ENODATA when there is none. */
static int find_dynsym(struct elf_file *ef, struct symtab_view *v,
		       char *err, size_t errlen)
{
	Elf_Scn *scn;
	int ret;

	memset(v, 0, sizeof(*v));
	ret = find_scn(ef, SHT_DYNSYM, &scn, err, errlen);
	if (ret)
		goto cleanup;
	if (!scn) {
		ret = -ENODATA;
		set_err(err, errlen, "no dynamic symbol table");
		goto cleanup;
	}
	ret = symtab_view__init(ef, scn, v, err, errlen);
cleanup:
	return ret;
}

int elfsym__check(const char *path, char *err, size_t errlen)
{
	struct elf_file ef = { .fd = -1 };
	struct symtab_view v;
	int ret;

	ret = elf_file__open(&ef, path, err, errlen);
	if (ret)
		goto cleanup;
	if (ef.ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
	    ef.ehdr.e_machine != GP_NATIVE_MACHINE) {
		ret = -ENOEXEC;
		set_err(err, errlen, "not an " GP_NATIVE_NAME " ELF file");
		goto cleanup;
	}
	if (ef.ehdr.e_type != ET_EXEC && ef.ehdr.e_type != ET_DYN) {
		ret = -ENOEXEC;
		set_err(err, errlen, "not an executable or shared object");
		goto cleanup;
	}
	ret = find_dynsym(&ef, &v, err, errlen);
cleanup:
	elf_file__close(&ef);
	return ret;
}

/* "name" matches "name", "name@VER" and "name@@VER" */
static bool name_matches(const char *symname, const char *name, size_t len)
{
	return strncmp(symname, name, len) == 0 &&
	       (symname[len] == '\0' || symname[len] == '@');
}

int elfsym__foreach_func(const char *path,
			 int (*cb)(const char *name, unsigned long long value,
				   unsigned long long size, void *ctx),
			 void *ctx)
{
	struct elf_file ef = { .fd = -1 };
	struct symtab_view v;
	const char *name;
	GElf_Sym sym;
	size_t i;
	int ret;

	if (!cb) {
		ret = -EINVAL;
		goto cleanup;
	}
	ret = elf_file__open(&ef, path, NULL, 0);
	if (ret)
		goto cleanup;
	ret = find_dynsym(&ef, &v, NULL, 0);
	if (ret == -ENODATA)
		ret = 0;
	if (ret)
		goto cleanup;
	/* entry 0 is the reserved null symbol */
	for (i = 1; i < v.count && i <= INT_MAX; i++) {
		if (!gelf_getsym(v.data, (int)i, &sym) || !sym_is_func(&sym))
			continue;
		name = elf_strptr(ef.elf, v.strndx, sym.st_name);
		if (!name || !*name)
			continue;
		ret = cb(name, sym.st_value, sym.st_size, ctx);
		if (ret)
			goto cleanup;
	}
cleanup:
	elf_file__close(&ef);
	return ret;
}

struct has_func_ctx {
	const char *name;
	size_t len;
};

static int has_func_cb(const char *name, unsigned long long value,
		       unsigned long long size, void *data)
{
	struct has_func_ctx *ctx = data;

	(void)value;
	(void)size;
	return name_matches(name, ctx->name, ctx->len) ? 1 : 0;
}

int elfsym__has_func(const char *path, const char *name)
{
	struct has_func_ctx ctx = { .name = name };
	int ret;

	if (!name || !*name) {
		ret = -EINVAL;
		goto cleanup;
	}
	ctx.len = strlen(name);
	ret = elfsym__foreach_func(path, has_func_cb, &ctx);
cleanup:
	return ret;
}

/* ---- elf_symtab ---- */

void elf_symtab__free(struct elf_symtab *st)
{
	if (st) {
		free(st->syms);
		free(st->names);
		free(st->segs);
		free(st);
	}
}

bool elf_symtab__is_exec(const struct elf_symtab *st)
{
	return st && st->is_exec;
}

size_t elf_symtab__count(const struct elf_symtab *st)
{
	return st ? st->nsyms : 0;
}

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 64;
	void *nbuf;
	int ret = 0;

	if (need <= *cap)
		goto cleanup;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2) {
			ret = -ENOMEM;
			goto cleanup;
		}
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem) {
		ret = -ENOMEM;
		goto cleanup;
	}
	nbuf = realloc(*buf, ncap * elem);
	if (!nbuf) {
		ret = -ENOMEM;
		goto cleanup;
	}
	*buf = nbuf;
	*cap = ncap;
cleanup:
	return ret;
}

static unsigned int sym_rank(const GElf_Sym *sym, const char *name)
{
	unsigned int bind_rank, underscores = 0;
	size_t len = strlen(name);

	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		bind_rank = 0;
		break;
	case STB_WEAK:
		bind_rank = 1;
		break;
	default:
		bind_rank = 2;
		break;
	}
	while (underscores < 3 && name[underscores] == '_')
		underscores++;
	if (len > 0xffff)
		len = 0xffff;
	/*
	 * Among aliases at one address prefer a sized symbol, then the public
	 * one ("malloc" over "__libc_malloc"), then the shortest name.
	 */
	return (sym->st_size ? 0u : 1u) << 20 | bind_rank << 18 |
	       underscores << 16 | (unsigned int)len;
}

/* End of the allocated section holding a size-0 symbol, ULLONG_MAX if unknown. */
static unsigned long long section_end(struct elf_file *ef, const GElf_Sym *sym)
{
	unsigned long long end = ULLONG_MAX;
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE ||
	    sym->st_shndx >= ef->shnum)
		goto cleanup;
	scn = elf_getscn(ef->elf, sym->st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
		goto cleanup;
	if (sym->st_value < sh.sh_addr || sym->st_value - sh.sh_addr >= sh.sh_size)
		goto cleanup;
	end = sh.sh_addr + sh.sh_size;	/* no overflow: st_value is inside */
cleanup:
	return end;
}

static int add_symbols(struct elf_symtab *st, struct elf_file *ef,
		       Elf_Scn *scn, char *err, size_t errlen)
{
	struct symtab_view v;
	struct sym_ent *e;
	const char *name;
	GElf_Sym sym;
	size_t i, len;
	int ret;

	ret = symtab_view__init(ef, scn, &v, err, errlen);
	if (ret)
		goto cleanup;
	for (i = 1; i < v.count && i <= INT_MAX; i++) {
		if (!gelf_getsym(v.data, (int)i, &sym) || !sym_is_func(&sym))
			continue;
		name = elf_strptr(ef->elf, v.strndx, sym.st_name);
		if (!name || !*name)
			continue;
		/* sized symbols must not wrap around the address space */
		if (sym.st_size && sym.st_value + sym.st_size < sym.st_value)
			continue;
		len = strlen(name) + 1;
		if (grow((void **)&st->syms, &st->syms_cap, st->nsyms + 1,
			 sizeof(*st->syms)) ||
		    len > SIZE_MAX - st->names_len ||
		    grow((void **)&st->names, &st->names_cap,
			 st->names_len + len, 1)) {
			ret = -ENOMEM;
			set_err(err, errlen, "%s", strerror(ENOMEM));
			goto cleanup;
		}
		e = &st->syms[st->nsyms++];
		e->addr = sym.st_value;
		e->sized = sym.st_size != 0;
		e->end = e->sized ? sym.st_value + sym.st_size :
				    section_end(ef, &sym);
		e->rank = sym_rank(&sym, name);
		e->name = st->names_len;
		memcpy(st->names + st->names_len, name, len);
		st->names_len += len;
	}
cleanup:
	return ret;
}

static int sym_cmp(const void *a, const void *b, void *names)
{
	const struct sym_ent *x = a, *y = b;
	int r;

	if (x->addr != y->addr)
		r = x->addr < y->addr ? -1 : 1;
	else if (x->rank != y->rank)
		r = x->rank < y->rank ? -1 : 1;
	else
		r = strcmp((const char *)names + x->name,
			   (const char *)names + y->name);
	return r;
}

static unsigned long long segment_end(const struct elf_symtab *st,
				      unsigned long long vaddr)
{
	unsigned long long end = ULLONG_MAX;
	size_t i;

	for (i = 0; i < st->nsegs; i++) {
		const struct seg *s = &st->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->memsz) {
			end = s->vaddr + s->memsz;
			break;
		}
	}
	return end;
}

/* Sorts, keeps one symbol per address and bounds the size-0 ones. */
static void finish_symbols(struct elf_symtab *st)
{
	unsigned long long next;
	size_t i, n = 0;

	if (st->nsyms)	/* qsort_r's base must not be NULL, even for 0 */
		qsort_r(st->syms, st->nsyms, sizeof(*st->syms), sym_cmp,
			st->names);
	for (i = 0; i < st->nsyms; i++) {
		if (n && st->syms[n - 1].addr == st->syms[i].addr)
			continue;	/* alias: the preferred one sorted first */
		st->syms[n++] = st->syms[i];
	}
	st->nsyms = n;
	for (i = 0; i < n; i++) {
		struct sym_ent *e = &st->syms[i];

		if (e->sized)
			continue;
		next = i + 1 < n ? st->syms[i + 1].addr : ULLONG_MAX;
		if (next < e->end)
			e->end = next;
		if (e->end == ULLONG_MAX)
			e->end = segment_end(st, e->addr);
		/* nothing bounds it: cover only its own address */
		if (e->end == ULLONG_MAX)
			e->end = e->addr + 1;
	}
}

static int load_segments(struct elf_symtab *st, struct elf_file *ef,
			 char *err, size_t errlen)
{
	size_t i, phnum, cap = 0;
	GElf_Phdr ph;
	int ret = 0;

	if (elf_getphdrnum(ef->elf, &phnum)) {
		ret = -EBADMSG;
		set_err(err, errlen, "corrupt ELF: %s", libelf_msg());
		goto cleanup;
	}
	for (i = 0; i < phnum && i <= INT_MAX; i++) {
		if (!gelf_getphdr(ef->elf, (int)i, &ph)) {
			ret = -EBADMSG;
			set_err(err, errlen, "corrupt ELF: %s", libelf_msg());
			goto cleanup;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		/* wrapping segments cannot be mapped; ignore them */
		if (ph.p_offset + ph.p_filesz < ph.p_offset ||
		    ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		if (grow((void **)&st->segs, &cap, st->nsegs + 1,
			 sizeof(*st->segs))) {
			ret = -ENOMEM;
			set_err(err, errlen, "%s", strerror(ENOMEM));
			goto cleanup;
		}
		st->segs[st->nsegs++] = (struct seg){
			.off = ph.p_offset, .filesz = ph.p_filesz,
			.vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
		};
	}
cleanup:
	return ret;
}

struct elf_symtab *elf_symtab__load(const char *path, char *err, size_t errlen)
{
	struct elf_file ef = { .fd = -1 };
	struct elf_symtab *st = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int ret;

	st = calloc(1, sizeof(*st));
	if (!st) {
		ret = -ENOMEM;
		set_err(err, errlen, "%s", strerror(ENOMEM));
		goto cleanup;
	}
	ret = elf_file__open(&ef, path, err, errlen);
	if (ret)
		goto cleanup;
	st->is_exec = ef.ehdr.e_type == ET_EXEC;
	ret = load_segments(st, &ef, err, errlen);
	if (ret)
		goto cleanup;
	while ((scn = elf_nextscn(ef.elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh)) {
			ret = -EBADMSG;
			set_err(err, errlen, "corrupt ELF: %s", libelf_msg());
			goto cleanup;
		}
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		ret = add_symbols(st, &ef, scn, err, errlen);
		if (ret)
			goto cleanup;
	}
	finish_symbols(st);
cleanup:
	elf_file__close(&ef);
	if (ret) {
		elf_symtab__free(st);
		st = NULL;
		errno = -ret;
	}
	return st;
}

long long elf_symtab__offset_to_vaddr(const struct elf_symtab *st,
				      unsigned long long off)
{
	long long vaddr = -1;
	unsigned long long v;
	size_t i;

	if (!st)
		goto cleanup;
	for (i = 0; i < st->nsegs; i++) {
		const struct seg *s = &st->segs[i];

		if (off < s->off || off - s->off >= s->filesz)
			continue;
		v = s->vaddr + (off - s->off);
		if (v <= (unsigned long long)LLONG_MAX)
			vaddr = (long long)v;
		break;
	}
cleanup:
	return vaddr;
}

long long elf_symtab__vaddr_to_offset(const struct elf_symtab *st,
				      unsigned long long vaddr)
{
	for (size_t i = 0; st && i < st->nsegs; i++) {
		const struct seg *s = &st->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz &&
		    s->off + (vaddr - s->vaddr) <= (unsigned long long)LLONG_MAX)
			return (long long)(s->off + (vaddr - s->vaddr));
	}
	return -1;
}

const char *elf_symtab__lookup(const struct elf_symtab *st,
			       unsigned long long vaddr,
			       unsigned long long *off)
{
	const char *name = NULL;
	size_t lo = 0, hi, mid, k;

	if (!st || !st->nsyms)
		goto cleanup;
	/* lo = number of symbols starting at or below vaddr */
	hi = st->nsyms;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (st->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0; k < LOOKUP_LOOKBACK && lo > 0; k++, lo--) {
		const struct sym_ent *e = &st->syms[lo - 1];

		if (vaddr < e->end) {
			name = st->names + e->name;
			if (off)
				*off = vaddr - e->addr;
			break;
		}
	}
cleanup:
	return name;
}
