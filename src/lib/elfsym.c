/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "lib/elfsym.h"
#include "lib/errbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
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

/* One pread asks for at most this much: a read never waits on one huge request. */
#define READ_CHUNK (1U << 20)

/*
 * One file being parsed. Everything here was read by us, bounded: the
 * headers are translated to their GElf (64-bit) form once, up front.
 */
struct elf_file {
	int fd;				/* borrowed: never closed here */
	int cls;			/* ELFCLASS32 or ELFCLASS64 */
	int enc;			/* ELFDATA2LSB */
	GElf_Ehdr ehdr;
	GElf_Shdr *shdrs;
	size_t shnum;
	GElf_Phdr *phdrs;
	size_t phnum;
	unsigned long long size;	/* st_size */
	unsigned long long data;	/* st_blocks * 512: what it really holds */
	unsigned long long budget;	/* what this parse may still read */
};

/* One symbol table and its string table, read and checked. */
struct symtab_view {
	void *syms;			/* Elf32_Sym or Elf64_Sym, translated */
	size_t count;
	char *strs;
	size_t strs_len;
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
	char *names;		/* the kept string tables, one after the other */
	size_t names_len;
	struct seg *segs;
	size_t nsegs;
	bool is_exec;
};

/* "2952 B", "140.0 KiB", "6.0 GiB": sizes in messages people read. */
static const char *fmt_size(unsigned long long n, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(buf, len, "%llu B", n);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

/* Reads exactly n bytes at off in bounded chunks; -EBADMSG if the file ends first. */
static int read_at(const struct elf_file *ef, unsigned long long off, void *buf,
		   size_t n)
{
	size_t done = 0, chunk;
	ssize_t r;
	int ret = 0;

	while (done < n) {
		chunk = n - done < READ_CHUNK ? n - done : READ_CHUNK;
		r = pread(ef->fd, (char *)buf + done, chunk, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			break;
		}
		if (r == 0) {	/* it shrank since fstat */
			ret = -EBADMSG;
			break;
		}
		done += (size_t)r;
	}
	return ret;
}

/*
 * Checks a claim of n bytes at off before anything is allocated or read:
 * inside the file, no larger than what the file really holds, under cap,
 * within what this parse may still read. Charges it to the budget.
 */
static int claim(struct elf_file *ef, const char *what, unsigned long long off,
		 unsigned long long n, unsigned long long cap, char *err,
		 size_t errlen)
{
	char a[32], b[32];
	int ret = 0;

	if (off > ef->size || n > ef->size - off) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "corrupt ELF: %s out of bounds", what);
	} else if (n > ef->data + ELFSYM_DATA_SLACK) {
		ret = -EFBIG;
		gp_set_err(err, errlen, "%s claims %s, larger than the file's data (%s)",
			what, fmt_size(n, a, sizeof(a)), fmt_size(ef->data, b, sizeof(b)));
	} else if (n > cap) {
		ret = -EFBIG;
		gp_set_err(err, errlen, "%s claims %s, larger than the cap (%s)", what,
			fmt_size(n, a, sizeof(a)), fmt_size(cap, b, sizeof(b)));
	} else if (n > ef->budget) {
		ret = -EFBIG;
		gp_set_err(err, errlen,
			"%s claims %s, more than is left of what one file may cost (%s)",
			what, fmt_size(n, a, sizeof(a)), fmt_size(ef->budget, b, sizeof(b)));
	} else {
		ef->budget -= n;
	}
	return ret;
}

/* claim() then read into a new buffer (n > 0); *out is the caller's to free. */
static int read_claimed(struct elf_file *ef, const char *what,
			unsigned long long off, unsigned long long n,
			unsigned long long cap, void **out, char *err,
			size_t errlen)
{
	void *buf = NULL;
	int ret;

	*out = NULL;
	ret = claim(ef, what, off, n, cap, err, errlen);
	if (ret)
		goto cleanup;
	buf = malloc(n ? (size_t)n : 1);
	if (!buf) {
		ret = -ENOMEM;
		gp_set_err(err, errlen, "%s", strerror(ENOMEM));
		goto cleanup;
	}
	ret = read_at(ef, off, buf, (size_t)n);
	if (ret) {
		gp_set_err(err, errlen, ret == -EBADMSG ? "corrupt ELF: %s cut short" :
			"%s: %s", what, strerror(-ret));
		goto cleanup;
	}
	*out = buf;
	buf = NULL;
cleanup:
	free(buf);
	return ret;
}

/*
 * File bytes -> structures of type t (ELF_T_EHDR, _SHDR, _PHDR, _SYM) in
 * place, as libelf translates them for the file's class and byte order;
 * a trailing partial record is dropped. Returns the record count.
 */
static size_t xlate(const struct elf_file *ef, Elf_Type t, void *buf, size_t len)
{
	Elf_Data d = { .d_type = t, .d_version = EV_CURRENT, .d_buf = buf };
	Elf_Data *ok;
	size_t rec;

	rec = ef->cls == ELFCLASS32 ? elf32_fsize(t, 1, EV_CURRENT) :
				      elf64_fsize(t, 1, EV_CURRENT);
	if (!rec)
		return 0;
	d.d_size = len / rec * rec;
	ok = ef->cls == ELFCLASS32 ? elf32_xlatetom(&d, &d, (unsigned int)ef->enc) :
				     elf64_xlatetom(&d, &d, (unsigned int)ef->enc);
	return ok ? len / rec : 0;
}

static void widen_shdr(const struct elf_file *ef, const void *raw, size_t i,
		       GElf_Shdr *out)
{
	if (ef->cls == ELFCLASS64) {
		memcpy(out, (const Elf64_Shdr *)raw + i, sizeof(*out));
	} else {
		const Elf32_Shdr *s = (const Elf32_Shdr *)raw + i;

		*out = (GElf_Shdr){
			.sh_name = s->sh_name, .sh_type = s->sh_type,
			.sh_flags = s->sh_flags, .sh_addr = s->sh_addr,
			.sh_offset = s->sh_offset, .sh_size = s->sh_size,
			.sh_link = s->sh_link, .sh_info = s->sh_info,
			.sh_addralign = s->sh_addralign, .sh_entsize = s->sh_entsize,
		};
	}
}

static void widen_phdr(const struct elf_file *ef, const void *raw, size_t i,
		       GElf_Phdr *out)
{
	if (ef->cls == ELFCLASS64) {
		memcpy(out, (const Elf64_Phdr *)raw + i, sizeof(*out));
	} else {
		const Elf32_Phdr *p = (const Elf32_Phdr *)raw + i;

		*out = (GElf_Phdr){
			.p_type = p->p_type, .p_flags = p->p_flags,
			.p_offset = p->p_offset, .p_vaddr = p->p_vaddr,
			.p_paddr = p->p_paddr, .p_filesz = p->p_filesz,
			.p_memsz = p->p_memsz, .p_align = p->p_align,
		};
	}
}

static void get_sym(const struct elf_file *ef, const struct symtab_view *v,
		    size_t i, GElf_Sym *out)
{
	if (ef->cls == ELFCLASS64) {
		memcpy(out, (const Elf64_Sym *)v->syms + i, sizeof(*out));
	} else {
		const Elf32_Sym *s = (const Elf32_Sym *)v->syms + i;

		*out = (GElf_Sym){
			.st_name = s->st_name, .st_info = s->st_info,
			.st_other = s->st_other, .st_shndx = s->st_shndx,
			.st_value = s->st_value, .st_size = s->st_size,
		};
	}
}

static void elf_file__close(struct elf_file *ef)
{
	free(ef->shdrs);
	free(ef->phdrs);
	ef->shdrs = NULL;
	ef->phdrs = NULL;
	ef->shnum = ef->phnum = 0;
}

/*
 * The identification bytes of the header in raw (r bytes read): an ELF file of either
 * class, little-endian. Sets cls and enc.
 */
static int check_ident(struct elf_file *ef, const unsigned char *raw, size_t r,
		       char *err, size_t errlen)
{
	if (r < SELFMAG || memcmp(raw, ELFMAG, SELFMAG)) {
		gp_set_err(err, errlen, "not an ELF file");
		return -ENOEXEC;
	}
	if (r < EI_NIDENT || (raw[EI_CLASS] != ELFCLASS32 &&
			      raw[EI_CLASS] != ELFCLASS64)) {
		gp_set_err(err, errlen, "corrupt ELF: bad identification");
		return -EBADMSG;
	}
	/* gpuprobe runs on little-endian hosts only; the processes it traces, too */
	if (raw[EI_DATA] != ELFDATA2LSB) {
		gp_set_err(err, errlen, "not a little-endian ELF file");
		return -ENOEXEC;
	}
	ef->cls = raw[EI_CLASS];
	ef->enc = raw[EI_DATA];
	return 0;
}

/* ehdr from a translated header of the file's class. */
static void widen_ehdr(struct elf_file *ef, const unsigned char *raw)
{
	const Elf32_Ehdr *e = (const Elf32_Ehdr *)raw;

	if (ef->cls == ELFCLASS64) {
		memcpy(&ef->ehdr, raw, sizeof(ef->ehdr));
		return;
	}
	memcpy(ef->ehdr.e_ident, e->e_ident, EI_NIDENT);
	ef->ehdr.e_type = e->e_type;
	ef->ehdr.e_machine = e->e_machine;
	ef->ehdr.e_version = e->e_version;
	ef->ehdr.e_entry = e->e_entry;
	ef->ehdr.e_phoff = e->e_phoff;
	ef->ehdr.e_shoff = e->e_shoff;
	ef->ehdr.e_flags = e->e_flags;
	ef->ehdr.e_ehsize = e->e_ehsize;
	ef->ehdr.e_phentsize = e->e_phentsize;
	ef->ehdr.e_phnum = e->e_phnum;
	ef->ehdr.e_shentsize = e->e_shentsize;
	ef->ehdr.e_shnum = e->e_shnum;
	ef->ehdr.e_shstrndx = e->e_shstrndx;
}

/* Extended numbering: the real counts are in section 0, read within the file. */
static int read_ext_counts(struct elf_file *ef, unsigned long long *shnum,
			   unsigned long long *phnum, char *err, size_t errlen)
{
	unsigned char sec0[sizeof(Elf64_Shdr)] __attribute__((aligned(8)));
	size_t shsize = ef->cls == ELFCLASS32 ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr);
	GElf_Shdr s0;

	if (ef->ehdr.e_shentsize != shsize || ef->ehdr.e_shoff > ef->size ||
	    shsize > ef->size - ef->ehdr.e_shoff ||
	    read_at(ef, ef->ehdr.e_shoff, sec0, shsize) ||
	    xlate(ef, ELF_T_SHDR, sec0, shsize) != 1) {
		gp_set_err(err, errlen, "corrupt ELF: section header table out of bounds");
		return -EBADMSG;
	}
	widen_shdr(ef, sec0, 0, &s0);
	if (ef->ehdr.e_shnum == 0)
		*shnum = s0.sh_size;
	if (ef->ehdr.e_phnum == PN_XNUM && ef->ehdr.e_phoff)
		*phnum = s0.sh_info;
	return 0;
}

/*
 * The ELF header and, when the counts do not fit in it (extended numbering),
 * section 0, which holds them. Fills ehdr, cls, enc and the real counts.
 */
static int read_ehdr(struct elf_file *ef, unsigned long long *shnum,
		     unsigned long long *phnum, char *err, size_t errlen)
{
	unsigned char raw[sizeof(Elf64_Ehdr)] __attribute__((aligned(8)));
	size_t ehsize;
	ssize_t r;
	int ret = 0;

	r = pread(ef->fd, raw, sizeof(raw), 0);
	if (r < 0) {
		ret = -errno;
		gp_set_err(err, errlen, "%s", strerror(-ret));
		goto cleanup;
	}
	ret = check_ident(ef, raw, (size_t)r, err, errlen);
	if (ret)
		goto cleanup;
	ehsize = ef->cls == ELFCLASS32 ? sizeof(Elf32_Ehdr) : sizeof(Elf64_Ehdr);
	if ((size_t)r < ehsize) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "corrupt ELF: truncated ELF header");
		goto cleanup;
	}
	if (xlate(ef, ELF_T_EHDR, raw, ehsize) != 1) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "corrupt ELF: %s", elf_errmsg(-1));
		goto cleanup;
	}
	widen_ehdr(ef, raw);
	/* no section header table, by the spec's definition */
	*shnum = ef->ehdr.e_shoff ? ef->ehdr.e_shnum : 0;
	*phnum = ef->ehdr.e_phoff ? ef->ehdr.e_phnum : 0;
	if (ef->ehdr.e_shoff && (!ef->ehdr.e_shnum || ef->ehdr.e_phnum == PN_XNUM))
		ret = read_ext_counts(ef, shnum, phnum, err, errlen);
cleanup:
	return ret;
}

/*
 * Reads a header table of num entries of ent bytes (type t) at off into
 * *out, widened to GElf form; what names it in messages.
 */
static int read_hdrs(struct elf_file *ef, const char *what, Elf_Type t,
		     unsigned long long off, unsigned long long num,
		     unsigned long long ent, void **out, char *err, size_t errlen)
{
	size_t wide = t == ELF_T_SHDR ? sizeof(GElf_Shdr) : sizeof(GElf_Phdr);
	void *raw = NULL, *hdrs = NULL;
	int ret = 0;

	*out = NULL;
	/* num comes from a 64-bit field with extended numbering: divide, never multiply */
	if (off > ef->size || num > (ef->size - off) / ent) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "corrupt ELF: %s out of bounds", what);
		goto cleanup;
	}
	ret = read_claimed(ef, what, off, num * ent, ELFSYM_HDRS_MAX, &raw, err, errlen);
	if (ret)
		goto cleanup;
	hdrs = calloc((size_t)num, wide);
	if (!hdrs) {
		ret = -ENOMEM;
		gp_set_err(err, errlen, "%s", strerror(ENOMEM));
		goto cleanup;
	}
	if (xlate(ef, t, raw, (size_t)(num * ent)) != num) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "corrupt ELF: %s", elf_errmsg(-1));
		goto cleanup;
	}
	for (size_t i = 0; i < num; i++) {
		if (t == ELF_T_SHDR)
			widen_shdr(ef, raw, i, (GElf_Shdr *)hdrs + i);
		else
			widen_phdr(ef, raw, i, (GElf_Phdr *)hdrs + i);
	}
	*out = hdrs;
	hdrs = NULL;
cleanup:
	free(raw);
	free(hdrs);
	return ret;
}

/* The section (or program) header table of num entries (0: none), checked and widened
 * into shdrs (phdrs). */
static int read_table(struct elf_file *ef, bool sections, unsigned long long num,
		      char *err, size_t errlen)
{
	bool c32 = ef->cls == ELFCLASS32;
	unsigned long long ent = sections ? (c32 ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr)) :
					    (c32 ? sizeof(Elf32_Phdr) : sizeof(Elf64_Phdr));
	const char *what = sections ? "section header table" : "program header table";
	void *hdrs;
	int ret;

	if (!num)
		return 0;
	if ((sections ? ef->ehdr.e_shentsize : ef->ehdr.e_phentsize) != ent) {
		gp_set_err(err, errlen, "corrupt ELF: %s out of bounds", what);
		return -EBADMSG;
	}
	ret = read_hdrs(ef, what, sections ? ELF_T_SHDR : ELF_T_PHDR,
			sections ? ef->ehdr.e_shoff : ef->ehdr.e_phoff, num, ent, &hdrs, err, errlen);
	if (ret)
		return ret;
	if (sections) {
		ef->shdrs = hdrs;
		ef->shnum = (size_t)num;
	} else {
		ef->phdrs = hdrs;
		ef->phnum = (size_t)num;
	}
	return 0;
}

/* fstat of fd: a regular file (a FIFO or /dev/zero would block or read forever). */
static int check_regular(int fd, struct stat *st, char *err, size_t errlen)
{
	if (fstat(fd, st)) {
		int ret = -errno;

		gp_set_err(err, errlen, "%s", strerror(-ret));
		return ret;
	}
	if (S_ISDIR(st->st_mode)) {
		gp_set_err(err, errlen, "%s", strerror(EISDIR));
		return -EISDIR;
	}
	if (!S_ISREG(st->st_mode)) {
		gp_set_err(err, errlen, "not a regular file");
		return -EINVAL;
	}
	return 0;
}

/*
 * Reads and checks the headers of the file open on fd. Nothing is read
 * before its size has been checked against the file's real data and caps.
 */
static int elf_file__open(struct elf_file *ef, int fd, char *err, size_t errlen)
{
	unsigned long long shnum = 0, phnum = 0;
	struct stat st;
	int ret = 0;

	*ef = (struct elf_file){ .fd = fd };
	if (fd < 0) {
		ret = -EBADF;
		gp_set_err(err, errlen, "%s", strerror(EBADF));
		goto cleanup;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		ret = -ENOSYS;
		gp_set_err(err, errlen, "libelf: %s", elf_errmsg(-1));
		goto cleanup;
	}
	ret = check_regular(fd, &st, err, errlen);
	if (ret)
		goto cleanup;
	ef->size = (unsigned long long)st.st_size;
	ef->data = (unsigned long long)st.st_blocks * 512;
	ef->budget = ef->data + ELFSYM_DATA_SLACK < ELFSYM_FILE_MAX ?
		     ef->data + ELFSYM_DATA_SLACK : ELFSYM_FILE_MAX;
	ret = read_ehdr(ef, &shnum, &phnum, err, errlen);
	if (!ret)
		ret = read_table(ef, true, shnum, err, errlen);
	if (!ret)
		ret = read_table(ef, false, phnum, err, errlen);
cleanup:
	if (ret)
		elf_file__close(ef);
	return ret;
}

static void symtab_view__free(struct symtab_view *v)
{
	free(v->syms);
	free(v->strs);
	memset(v, 0, sizeof(*v));
}

/* What the string table of a symbol table is called in messages. */
static const char *strtab_name(const GElf_Shdr *sh)
{
	return sh->sh_type == SHT_DYNSYM ? ".dynstr" : ".strtab";
}

static const char *symtab_name(const GElf_Shdr *sh)
{
	return sh->sh_type == SHT_DYNSYM ? ".dynsym" : ".symtab";
}

/* Reads symbol table idx and the string table its sh_link names, both checked. */
static int symtab_view__init(struct elf_file *ef, size_t idx,
			     struct symtab_view *v, char *err, size_t errlen)
{
	const GElf_Shdr *sh = &ef->shdrs[idx], *strsh;
	size_t rec = ef->cls == ELFCLASS32 ? sizeof(Elf32_Sym) : sizeof(Elf64_Sym);
	char what[64];
	int ret = 0;

	memset(v, 0, sizeof(*v));
	/* sh_link may point anywhere: it must name an in-file SHT_STRTAB. */
	if (!sh->sh_link || sh->sh_link >= ef->shnum ||
	    ef->shdrs[sh->sh_link].sh_type != SHT_STRTAB) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "corrupt ELF: bad symbol string table");
		goto cleanup;
	}
	strsh = &ef->shdrs[sh->sh_link];
	if (strsh->sh_offset > ef->size || strsh->sh_size > ef->size - strsh->sh_offset) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "corrupt ELF: bad symbol string table");
		goto cleanup;
	}
	if (sh->sh_offset > ef->size || sh->sh_size > ef->size - sh->sh_offset) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "corrupt ELF: symbol table out of bounds");
		goto cleanup;
	}
	snprintf(what, sizeof(what), "%s", symtab_name(sh));
	ret = read_claimed(ef, what, sh->sh_offset, sh->sh_size / rec * rec,
			   ELFSYM_SYMTAB_MAX, &v->syms, err, errlen);
	if (ret)
		goto cleanup;
	v->count = xlate(ef, ELF_T_SYM, v->syms, (size_t)(sh->sh_size / rec * rec));
	snprintf(what, sizeof(what), "%s", strtab_name(sh));
	ret = read_claimed(ef, what, strsh->sh_offset, strsh->sh_size,
			   ELFSYM_STRTAB_MAX, (void **)&v->strs, err, errlen);
	if (ret)
		goto cleanup;
	v->strs_len = (size_t)strsh->sh_size;
cleanup:
	if (ret)
		symtab_view__free(v);
	return ret;
}

/* The name at off, or NULL unless it is NUL-terminated inside the table. */
static const char *view_name(const struct symtab_view *v, size_t off)
{
	if (off >= v->strs_len || !memchr(v->strs + off, '\0', v->strs_len - off))
		return NULL;
	return v->strs + off;
}

/* defined function (incl. IFUNC resolvers, which is what callers call) */
static bool sym_is_func(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) &&
	       sym->st_shndx != SHN_UNDEF;
}

/* Index of the first section of type, or 0 (section 0 is never one). */
static size_t find_scn(const struct elf_file *ef, Elf64_Word type)
{
	for (size_t i = 1; i < ef->shnum; i++)
		if (ef->shdrs[i].sh_type == type)
			return i;
	return 0;
}

/* Finds and reads a valid .dynsym; -ENODATA when there is none. */
static int find_dynsym(struct elf_file *ef, struct symtab_view *v,
		       char *err, size_t errlen)
{
	size_t idx = find_scn(ef, SHT_DYNSYM);
	int ret;

	memset(v, 0, sizeof(*v));
	if (!idx) {
		ret = -ENODATA;
		gp_set_err(err, errlen, "no dynamic symbol table");
		goto cleanup;
	}
	ret = symtab_view__init(ef, idx, v, err, errlen);
cleanup:
	return ret;
}

/* Opens a file gpuprobe chose: no blocking open, no terminal, regular files only. */
static int open_chosen(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd = -1, ret;

	if (!path) {
		ret = -EINVAL;
		gp_set_err(err, errlen, "%s", strerror(EINVAL));
		goto cleanup;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		gp_set_err(err, errlen, "%s", strerror(-ret));
		goto cleanup;
	}
	ret = check_regular(fd, &st, err, errlen);
	if (ret)
		goto cleanup;
	ret = fd;
	fd = -1;
cleanup:
	if (fd >= 0)
		close(fd);
	return ret;
}

int elfsym__check_fd(int fd, char *err, size_t errlen)
{
	struct elf_file ef = { .fd = -1 };
	struct symtab_view v = { 0 };
	int ret;

	ret = elf_file__open(&ef, fd, err, errlen);
	if (ret)
		goto cleanup;
	if (ef.cls != ELFCLASS64 || ef.ehdr.e_machine != GP_NATIVE_MACHINE) {
		ret = -ENOEXEC;
		gp_set_err(err, errlen, "not an " GP_NATIVE_NAME " ELF file");
		goto cleanup;
	}
	if (ef.ehdr.e_type != ET_EXEC && ef.ehdr.e_type != ET_DYN) {
		ret = -ENOEXEC;
		gp_set_err(err, errlen, "not an executable or shared object");
		goto cleanup;
	}
	ret = find_dynsym(&ef, &v, err, errlen);
cleanup:
	symtab_view__free(&v);
	elf_file__close(&ef);
	return ret;
}

int elfsym__check(const char *path, char *err, size_t errlen)
{
	int fd = open_chosen(path, err, errlen), ret;

	if (fd < 0)
		return fd;
	ret = elfsym__check_fd(fd, err, errlen);
	close(fd);
	return ret;
}

/* "name" matches "name", "name@VER" and "name@@VER" */
static bool name_matches(const char *symname, const char *name, size_t len)
{
	return strncmp(symname, name, len) == 0 &&
	       (symname[len] == '\0' || symname[len] == '@');
}

int elfsym__foreach_func_fd(int fd,
			    int (*cb)(const char *name, unsigned long long value,
				      unsigned long long size, void *ctx),
			    void *ctx)
{
	struct elf_file ef = { .fd = -1 };
	struct symtab_view v = { 0 };
	const char *name;
	GElf_Sym sym;
	size_t i;
	int ret;

	if (!cb) {
		ret = -EINVAL;
		goto cleanup;
	}
	ret = elf_file__open(&ef, fd, NULL, 0);
	if (ret)
		goto cleanup;
	ret = find_dynsym(&ef, &v, NULL, 0);
	if (ret == -ENODATA)
		ret = 0;
	if (ret)
		goto cleanup;
	/* entry 0 is the reserved null symbol */
	for (i = 1; i < v.count; i++) {
		get_sym(&ef, &v, i, &sym);
		if (!sym_is_func(&sym))
			continue;
		name = view_name(&v, sym.st_name);
		if (!name || !*name)
			continue;
		ret = cb(name, sym.st_value, sym.st_size, ctx);
		if (ret)
			goto cleanup;
	}
cleanup:
	symtab_view__free(&v);
	elf_file__close(&ef);
	return ret;
}

int elfsym__foreach_func(const char *path,
			 int (*cb)(const char *name, unsigned long long value,
				   unsigned long long size, void *ctx),
			 void *ctx)
{
	int fd, ret;

	if (!cb)
		return -EINVAL;
	fd = open_chosen(path, NULL, 0);
	if (fd < 0)
		return fd;
	ret = elfsym__foreach_func_fd(fd, cb, ctx);
	close(fd);
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

int elfsym__has_func_fd(int fd, const char *name)
{
	struct has_func_ctx ctx = { .name = name };

	if (!name || !*name)
		return -EINVAL;
	ctx.len = strlen(name);
	return elfsym__foreach_func_fd(fd, has_func_cb, &ctx);
}

int elfsym__has_func(const char *path, const char *name)
{
	struct has_func_ctx ctx = { .name = name };

	if (!name || !*name)
		return -EINVAL;
	ctx.len = strlen(name);
	return elfsym__foreach_func(path, has_func_cb, &ctx);
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

size_t elf_symtab__bytes(const struct elf_symtab *st)
{
	return st ? sizeof(*st) + st->syms_cap * sizeof(*st->syms) + st->names_len +
		    st->nsegs * sizeof(*st->segs) : 0;
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
	size_t len = strnlen(name, 0xffff);

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
	/*
	 * Among aliases at one address prefer a sized symbol, then the public
	 * one ("malloc" over "__libc_malloc"), then the shortest name.
	 */
	return (sym->st_size ? 0u : 1u) << 20 | bind_rank << 18 |
	       underscores << 16 | (unsigned int)len;
}

/* End of the allocated section holding a size-0 symbol, ULLONG_MAX if unknown. */
static unsigned long long section_end(const struct elf_file *ef, const GElf_Sym *sym)
{
	const GElf_Shdr *sh;

	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE ||
	    sym->st_shndx >= ef->shnum)
		return ULLONG_MAX;
	sh = &ef->shdrs[sym->st_shndx];
	if (!(sh->sh_flags & SHF_ALLOC) || sym->st_value < sh->sh_addr ||
	    sym->st_value - sh->sh_addr >= sh->sh_size)
		return ULLONG_MAX;
	return sh->sh_addr + sh->sh_size;	/* no overflow: st_value is inside */
}

/*
 * Adds the function symbols of table idx. Its string table is appended to
 * st->names whole and the symbols point into it: a name is kept once however
 * many symbols use it.
 */
static int add_symbols(struct elf_symtab *st, struct elf_file *ef, size_t idx,
		       char *err, size_t errlen)
{
	struct symtab_view v = { 0 };
	struct sym_ent *e;
	const char *name;
	size_t i, base;
	GElf_Sym sym;
	char *names;
	int ret;

	ret = symtab_view__init(ef, idx, &v, err, errlen);
	if (ret)
		goto cleanup;
	base = st->names_len;
	for (i = 1; i < v.count; i++) {
		get_sym(ef, &v, i, &sym);
		if (!sym_is_func(&sym))
			continue;
		name = view_name(&v, sym.st_name);
		if (!name || !*name)
			continue;
		/* sized symbols must not wrap around the address space */
		if (sym.st_size && sym.st_value + sym.st_size < sym.st_value)
			continue;
		if (grow((void **)&st->syms, &st->syms_cap, st->nsyms + 1,
			 sizeof(*st->syms))) {
			ret = -ENOMEM;
			gp_set_err(err, errlen, "%s", strerror(ENOMEM));
			goto cleanup;
		}
		e = &st->syms[st->nsyms++];
		e->addr = sym.st_value;
		e->sized = sym.st_size != 0;
		e->end = e->sized ? sym.st_value + sym.st_size :
				    section_end(ef, &sym);
		e->rank = sym_rank(&sym, name);
		e->name = base + sym.st_name;
	}
	/* the names the symbols point at: kept whole */
	if (!st->names) {	/* the first table: kept as read */
		st->names = v.strs;
		v.strs = NULL;
	} else {
		names = realloc(st->names, base + v.strs_len + 1);
		if (!names) {
			ret = -ENOMEM;
			gp_set_err(err, errlen, "%s", strerror(ENOMEM));
			goto cleanup;
		}
		st->names = names;
		memcpy(st->names + base, v.strs, v.strs_len);
	}
	st->names_len = base + v.strs_len;
cleanup:
	symtab_view__free(&v);
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

static int load_segments(struct elf_symtab *st, const struct elf_file *ef,
			 char *err, size_t errlen)
{
	size_t i, cap = 0;
	int ret = 0;

	for (i = 0; i < ef->phnum; i++) {
		const GElf_Phdr *ph = &ef->phdrs[i];

		if (ph->p_type != PT_LOAD)
			continue;
		/* wrapping segments cannot be mapped; ignore them */
		if (ph->p_offset + ph->p_filesz < ph->p_offset ||
		    ph->p_vaddr + ph->p_memsz < ph->p_vaddr)
			continue;
		if (grow((void **)&st->segs, &cap, st->nsegs + 1,
			 sizeof(*st->segs))) {
			ret = -ENOMEM;
			gp_set_err(err, errlen, "%s", strerror(ENOMEM));
			goto cleanup;
		}
		st->segs[st->nsegs++] = (struct seg){
			.off = ph->p_offset, .filesz = ph->p_filesz,
			.vaddr = ph->p_vaddr, .memsz = ph->p_memsz,
		};
	}
cleanup:
	return ret;
}

struct elf_symtab *elf_symtab__load_fd(int fd, char *err, size_t errlen)
{
	struct elf_file ef = { .fd = -1 };
	struct elf_symtab *st = NULL;
	size_t idx;
	int ret;

	st = calloc(1, sizeof(*st));
	if (!st) {
		ret = -ENOMEM;
		gp_set_err(err, errlen, "%s", strerror(ENOMEM));
		goto cleanup;
	}
	ret = elf_file__open(&ef, fd, err, errlen);
	if (ret)
		goto cleanup;
	st->is_exec = ef.ehdr.e_type == ET_EXEC;
	ret = load_segments(st, &ef, err, errlen);
	if (ret)
		goto cleanup;
	/* one of each: a real file has at most one, a hostile one gains nothing from more */
	idx = find_scn(&ef, SHT_SYMTAB);
	if (idx)
		ret = add_symbols(st, &ef, idx, err, errlen);
	if (ret)
		goto cleanup;
	idx = find_scn(&ef, SHT_DYNSYM);
	if (idx)
		ret = add_symbols(st, &ef, idx, err, errlen);
	if (ret)
		goto cleanup;
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

struct elf_symtab *elf_symtab__load(const char *path, char *err, size_t errlen)
{
	struct elf_symtab *st = NULL;
	int fd = open_chosen(path, err, errlen), e;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	st = elf_symtab__load_fd(fd, err, errlen);
	e = errno;
	close(fd);
	errno = e;
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
