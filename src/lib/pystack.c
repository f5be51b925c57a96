// SPDX-License-Identifier: BSD-3-Clause
/* pystack: see pystack.h. */
#define _GNU_SOURCE
#include "lib/pystack.h"
#include "lib/procmaps.h"
#include "lib/pyoffsets_gen.h"
#include "lib/safeopen.h"
#include "lib/errbuf.h"
#include "lib/u64map.h"

#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define PY_MAX_PIDS 64
#define PY_CODE_CACHE 4096	/* direct-mapped (pid, code) slots */
#define PY_STR_MAX 256		/* characters of a name or file kept */
#define PY_LINETABLE_MAX 65536
#define PY_RODATA_MAX (16u << 20)
#define PY_COPY_MAX 16384		/* code objects copied by BPF, kept until their process's exit */
#define PY_COPY_BYTES (32u << 20)	/* ... and the bytes of their line tables */

struct py_pid {
	int pid;
	bool used;
	unsigned int version_hex;
	struct py_offsets_gen off;	/* the generated row, 3.13+ overridden by _Py_DebugOffsets */
	unsigned long long last_use;
};

struct py_code {
	int pid;
	uint64_t code;
	int firstlineno;
	bool valid;
	char name[PY_STR_MAX];
	char file[PY_STR_MAX];
	unsigned char *linetable;
	size_t linetable_len;
};

/* A code object as BPF copied it at its first sight (struct gp_py_code): enough to name
 * its frames once the process is gone. */
struct py_copy {
	int pid;
	uint64_t code, start;
	int firstlineno;
	unsigned int version_hex, adaptive, flags;
	char name[PY_STR_MAX];
	char file[PY_STR_MAX];
	unsigned char *lt;
	size_t lt_len;		/* the table's bytes copied in all */
	uint32_t chunks;	/* bit k: chunk k arrived */
};

struct pystack {
	char *proc_root;
	struct py_pid pids[PY_MAX_PIDS];
	struct py_code *codes;
	size_t codes_valid;	/* slots of codes filled: none, no pass over them to forget a PID */
	unsigned long long tick;
	struct u64map *copies;	/* copy_key(pid, code) -> struct py_copy */
	size_t copy_bytes;
	struct pystack_copy_stats cst;
};

static int read_mem(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (!addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* ---- finding the interpreter ---- */

struct py_syms {
	uint64_t runtime, version;	/* symbol values (link-time) */
	char rodata_version[32];
	bool version_conflict;
	bool found;
};

static bool is_version_string(const char *s, size_t n)
{
	size_t i, dots = 0;

	if (n < 5 || n > 20 || s[0] != '3' || s[1] != '.')
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == '.')
			dots++;
		else if (!(s[i] >= '0' && s[i] <= '9') &&
			 !(dots == 2 && (s[i] == 'a' || s[i] == 'b' || s[i] == 'r' ||
					 s[i] == 'c' || s[i] == '+')))
			return false;
	}
	return dots == 2;
}

/* _PyRuntime and Py_Version among one symbol table's defined symbols. */
static void scan_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct py_syms *ps)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, n;

	if (!d)
		return;
	n = d->d_size / sizeof(Elf64_Sym);
	for (i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (!name)
			continue;
		if (!strcmp(name, "_PyRuntime"))
			ps->runtime = s.st_value;
		else if (!strcmp(name, "Py_Version"))
			ps->version = s.st_value;
	}
}

/*
 * PY_VERSION ("3.10.13") among .rodata's strings: the linker may have merged it into the
 * tail of a longer string ("/usr/lib/python-3.10.13"), so suffixes count too. Every
 * candidate must agree on 3.minor, or none is taken.
 */
static void scan_rodata(Elf_Scn *scn, struct py_syms *ps)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const char *p, *end;

	if (!d || !d->d_buf)
		return;
	p = d->d_buf;
	end = p + d->d_size;
	while (p < end) {
		size_t len = strnlen(p, (size_t)(end - p)), k = len;

		if (len == (size_t)(end - p))
			break;
		while (k > 0 && strchr("0123456789.abrc+", p[k - 1]))
			k--;
		/* the suffix must start at a '3' */
		while (k < len && p[k] != '3')
			k++;
		if (is_version_string(p + k, len - k) &&
		    len - k < sizeof(ps->rodata_version)) {
			if (!ps->rodata_version[0])
				memcpy(ps->rodata_version, p + k, len - k + 1);
			else if (strncmp(ps->rodata_version, p + k, 4))
				ps->version_conflict = true;
		}
		p += len + 1;
	}
}

/* Symbols from .dynsym/.symtab, and (3.10) the version string in .rodata: not scanned once
 * Py_Version (3.11+) is known, which the symbol tables give first in the usual section
 * order. Debian's python3.11 has 2 MB of .rodata: with its scan, finding the interpreter
 * took 25-49 ms here, and a command's interpreter, looked at when its exec record is read,
 * was then looked at after its first allocation now and then (python_unread); without it
 * the whole exec record is handled in 2.2-3.6 ms. */
static void elf_py_syms(Elf *elf, struct py_syms *ps)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *sname;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if ((sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB) &&
		    sh.sh_entsize)
			scan_symbols(elf, scn, &sh, ps);
		else if (sname && !strcmp(sname, ".rodata") &&
			 sh.sh_size <= PY_RODATA_MAX && !ps->version)
			scan_rodata(scn, ps);
	}
}

struct find_ctx {
	struct pystack *ps;
	int pid;
	struct map_entry best;
	struct py_syms syms;
	uint64_t bias;
	int err;
	uint32_t pthread_size;	/* arm64: glibc's sizeof(struct pthread), 0 not found */
	bool libc_seen;		/* arm64: a libc is mapped (with or without it) */
};

/*
 * On arm64 CPython's thread_id (pthread_t) is not the thread pointer: glibc puts struct
 * pthread just below it (TLS variant I), so BPF needs its size, which libc exports for
 * libthread_db as _thread_db_sizeof_pthread (0x740 in Debian 12's arm64 libc; in
 * libpthread before glibc 2.34). The file is the process's: the value is believed only
 * within these bounds.
 */
#define PY_PTHREAD_SIZE_MIN 0x100u
#define PY_PTHREAD_SIZE_MAX 0x4000u

#if defined(__aarch64__)
static bool is_libc_name(const char *base)
{
	return !strncmp(base, "libc.so.", 8) || !strncmp(base, "libc-2.", 7) ||
	       !strncmp(base, "libpthread", 10);
}
#endif

/* _thread_db_sizeof_pthread (4 bytes in a PROGBITS section of the file), read at its file
 * offset; 0 when absent, malformed or out of bounds. */
uint32_t pystack__pthread_size(Elf *elf, int fd)
{
	Elf_Scn *scn = NULL, *dscn;
	GElf_Shdr sh, dsh;
	GElf_Ehdr eh;
	uint32_t v = 0;

	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_AARCH64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		n = d ? d->d_size / sizeof(Elf64_Sym) : 0;
		for (i = 0; i < n; i++) {
			GElf_Sym s;
			const char *name;
			uint64_t off;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    s.st_shndx >= SHN_LORESERVE || s.st_size != sizeof(v))
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name || strcmp(name, "_thread_db_sizeof_pthread"))
				continue;
			dscn = elf_getscn(elf, s.st_shndx);
			if (!dscn || !gelf_getshdr(dscn, &dsh) || dsh.sh_type != SHT_PROGBITS ||
			    dsh.sh_size < sizeof(v) || s.st_value < dsh.sh_addr ||
			    s.st_value - dsh.sh_addr > dsh.sh_size - sizeof(v))
				return 0;
			off = dsh.sh_offset + (s.st_value - dsh.sh_addr);
			if (off < dsh.sh_offset || off > (uint64_t)INT64_MAX - sizeof(v) ||
			    pread(fd, &v, sizeof(v), (off_t)off) != (ssize_t)sizeof(v))
				return 0;
			return v >= PY_PTHREAD_SIZE_MIN && v <= PY_PTHREAD_SIZE_MAX && !(v & 7) ? v : 0;
		}
	}
	return 0;
}

static uint64_t load_bias(Elf *elf, const struct map_entry *e)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t i, n;

	if (!gelf_getehdr(elf, &eh) || eh.e_type == ET_EXEC)
		return 0;
	if (elf_getphdrnum(elf, &n))
		return 0;
	for (i = 0; i < n; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_offset <= e->offset && e->offset < ph.p_offset + ph.p_filesz)
			return e->start - ((ph.p_vaddr - ph.p_offset + e->offset) &
					   ~0xfffull);
	return 0;
}

static int find_cb(const struct map_entry *e, void *arg)
{
	struct find_ctx *c = arg;
	struct safeopen_id id = { e->dev_major, e->dev_minor, e->inode };
	const char *base = strrchr(e->path, '/');
	struct py_syms s = { 0 };
	bool py, libc = false;
	Elf *elf = NULL;
	int fd;

	/* the first mapping of a python executable or libpython (and on arm64 of libc) */
	if (!base || e->offset != 0 || !e->inode)
		return 0;
	py = !c->syms.found &&
	     (!strncmp(base + 1, "python", 6) || !strncmp(base + 1, "libpython", 9));
#if defined(__aarch64__)
	libc = !c->pthread_size && is_libc_name(base + 1);
	c->libc_seen |= libc;
#endif
	if (!py && !libc)
		return 0;
	fd = safe_open_mapped(c->ps->proc_root, c->pid, e->path, &id, NULL, 0);
	if (fd < 0)
		fd = safe_open_map_file(c->ps->proc_root, c->pid, e->start, e->end,
					&id, NULL, 0);
	if (fd < 0)
		return 0;
	elf = safe_elf_begin(fd, NULL, 0);
	if (elf && elf_kind(elf) == ELF_K_ELF && py) {
		elf_py_syms(elf, &s);
		if (s.runtime) {
			s.found = true;
			c->syms = s;
			c->best = *e;
			c->bias = load_bias(elf, e);
		}
	}
#if defined(__aarch64__)
	if (elf && elf_kind(elf) == ELF_K_ELF && libc)
		c->pthread_size = pystack__pthread_size(elf, fd);
#endif
	if (elf)
		elf_end(elf);
	close(fd);
	return 0;
}

static const struct py_offsets_gen *gen_row(unsigned int minor)
{
	size_t i;

	for (i = 0; i < sizeof(py_offsets_gen) / sizeof(py_offsets_gen[0]); i++)
		if (py_offsets_gen[i].minor == minor)
			return &py_offsets_gen[i];
	return NULL;
}

/* The offsets _Py_DebugOffsets publishes: where each lives in it, which one it sets. */
#define DBG(f) { #f, offsetof(struct py_offsets_gen, dbg_##f), offsetof(struct py_offsets_gen, f) }
static const struct {
	const char *name;
	size_t at, to;
} dbg_fields[] = {
	DBG(runtime_interpreters_head), DBG(interp_threads_head), DBG(tstate_next),
	DBG(tstate_thread_id), DBG(tstate_native_thread_id), DBG(tstate_frame),
	DBG(frame_previous), DBG(frame_code), DBG(frame_instr), DBG(frame_owner),
	DBG(code_filename), DBG(code_name), DBG(code_qualname), DBG(code_linetable),
	DBG(code_firstlineno), DBG(code_adaptive), DBG(unicode_length),
	DBG(unicode_ascii_size), DBG(bytes_sval),
};
#undef DBG

/* o's fields from the _Py_DebugOffsets copy in buf (o->dbg_size bytes): each one the
 * layout places inside it, and no larger than 64 KiB. */
static int take_debug_offsets(const unsigned char *buf, struct py_offsets_gen *o,
			      char *err, size_t errlen)
{
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(dbg_fields) / sizeof(dbg_fields[0]); i++) {
		int at = *(const int *)((const char *)o + dbg_fields[i].at);

		if (at <= 0 || (size_t)at + 8 > (size_t)o->dbg_size)
			continue;
		memcpy(&v, buf + at, 8);
		if (v > 65536) {
			gp_set_err(err, errlen, "_Py_DebugOffsets: %s = %llu", dbg_fields[i].name,
				   (unsigned long long)v);
			return -EBADMSG;
		}
		*(int *)((char *)o + dbg_fields[i].to) = (int)v;
	}
	return 0;
}

/* 3.13+: the offsets the interpreter publishes at the start of _PyRuntime. */
static int apply_debug_offsets(int pid, uint64_t runtime, struct py_offsets_gen *o,
			       unsigned int version_hex, char *err, size_t errlen)
{
	unsigned char buf[2048];
	uint64_t v;
	int ret;

	if (o->dbg_size <= 16 || (size_t)o->dbg_size > sizeof(buf)) {
		ret = -ENOTSUP;
		gp_set_err(err, errlen, "no _Py_DebugOffsets layout for 3.%u", o->minor);
		goto cleanup;
	}
	ret = read_mem(pid, runtime, buf, (size_t)o->dbg_size);
	if (ret) {
		gp_set_err(err, errlen, "reading _Py_DebugOffsets: %s", strerror(-ret));
		goto cleanup;
	}
	if (memcmp(buf, "xdebugpy", 8)) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "_PyRuntime does not start with _Py_DebugOffsets");
		goto cleanup;
	}
	memcpy(&v, buf + o->dbg_version, 8);
	if ((v >> 16) != (version_hex >> 16)) {
		ret = -EBADMSG;
		gp_set_err(err, errlen, "_Py_DebugOffsets says version %#llx, binary %#x",
			   (unsigned long long)v, version_hex);
		goto cleanup;
	}
	ret = take_debug_offsets(buf, o, err, errlen);
cleanup:
	return ret;
}

static struct py_pid *pid_slot(struct pystack *ps, int pid, bool create)
{
	struct py_pid *p, *victim = NULL;
	size_t i;

	for (i = 0; i < PY_MAX_PIDS; i++) {
		p = &ps->pids[i];
		if (p->used && p->pid == pid) {
			p->last_use = ++ps->tick;
			return p;
		}
		if (!victim || !p->used || (victim->used && p->last_use < victim->last_use))
			victim = p;
	}
	if (!create)
		return NULL;
	memset(victim, 0, sizeof(*victim));
	victim->pid = pid;
	victim->last_use = ++ps->tick;
	return victim;
}

static __u32 u32_or_none(int v)
{
	return v < 0 ? GP_PY_NONE : (__u32)v;
}

struct py_version {
	unsigned int hex, major, minor, micro;
};

/* The mapped CPython (an executable or libpython defining _PyRuntime) of pid. */
static int find_python(struct pystack *ps, int pid, struct find_ctx *c, char *err, size_t errlen)
{
	int ret = procmaps__foreach(ps->proc_root, pid, find_cb, c);

	if (ret) {
		gp_set_err(err, errlen, "pid %d: %s", pid, strerror(-ret));
		return ret;
	}
	if (!c->syms.found) {
		gp_set_err(err, errlen, "pid %d: no CPython (_PyRuntime) mapped", pid);
		return -ENOENT;
	}
#if defined(__aarch64__)
	/* a python just exec'd: the loader has not mapped its libc yet; looked at again */
	if (!c->pthread_size && !c->libc_seen) {
		gp_set_err(err, errlen, "pid %d: no libc mapped (yet)", pid);
		return -ENOENT;
	}
	if (!c->pthread_size) {
		gp_set_err(err, errlen, "pid %d: its libc does not give sizeof(struct pthread) "
			   "(_thread_db_sizeof_pthread, glibc's), which matching a thread to its "
			   "CPython thread state needs on arm64", pid);
		return -ENOTSUP;
	}
#endif
	return 0;
}

/* Its version: Py_Version in memory (3.11+), else the one string in .rodata (3.10). */
static int python_version(int pid, const struct find_ctx *c, struct py_version *ver,
			  char *err, size_t errlen)
{
	uint64_t v;
	int ret;

	if (c->syms.version) {
		ret = read_mem(pid, c->bias + c->syms.version, &v, sizeof(v));
		if (ret) {
			gp_set_err(err, errlen, "reading Py_Version: %s", strerror(-ret));
			return ret;
		}
		ver->hex = (unsigned int)v;
		ver->major = ver->hex >> 24;
		ver->minor = (ver->hex >> 16) & 0xff;
		ver->micro = (ver->hex >> 8) & 0xff;
	} else if (c->syms.version_conflict) {
		gp_set_err(err, errlen, "pid %d: conflicting version strings in the binary", pid);
		return -EBADMSG;
	} else if (c->syms.rodata_version[0]) {
		if (sscanf(c->syms.rodata_version, "%u.%u.%u", &ver->major, &ver->minor,
			   &ver->micro) != 3) {
			gp_set_err(err, errlen, "unreadable version string");
			return -EBADMSG;
		}
		ver->hex = ver->major << 24 | ver->minor << 16 | ver->micro << 8;
	}
	return 0;
}

/* The offsets of that version: the generated row, 3.13+ corrected by the interpreter. */
static int python_offsets(int pid, const struct find_ctx *c, const struct py_version *ver,
			  struct py_offsets_gen *o, char *err, size_t errlen)
{
	const struct py_offsets_gen *row = ver->major == 3 ? gen_row(ver->minor) : NULL;

	if (!row) {
		gp_set_err(err, errlen, "CPython %u.%u.%u: no offsets (3.10-3.13 known)",
			   ver->major, ver->minor, ver->micro);
		return -ENOTSUP;
	}
	*o = *row;
	if (ver->minor < 13)
		return 0;
	return apply_debug_offsets(pid, c->bias + c->syms.runtime, o, ver->hex, err, errlen);
}

/* What the BPF side reads with: the offsets, and how much of a frame holds them all. */
static int fill_proc(struct gp_py_proc *out, const struct find_ctx *c, const struct py_offsets_gen *o,
		     const struct py_version *ver, char *err, size_t errlen)
{
	int offs[5] = { o->frame_previous, o->frame_code, o->frame_instr, o->frame_owner,
			o->frame_is_entry };

	memset(out, 0, sizeof(*out));
	out->runtime_addr = c->bias + c->syms.runtime;
	out->version_hex = ver->hex;
	out->runtime_interpreters_head = u32_or_none(o->runtime_interpreters_head);
	out->interp_threads_head = u32_or_none(o->interp_threads_head);
	out->tstate_next = u32_or_none(o->tstate_next);
	out->tstate_native_thread_id = u32_or_none(o->tstate_native_thread_id);
	out->tstate_thread_id = u32_or_none(o->tstate_thread_id);
	out->tstate_cframe = u32_or_none(o->tstate_cframe);
	out->cframe_current_frame = u32_or_none(o->cframe_current_frame);
	out->tstate_frame = u32_or_none(o->tstate_frame);
	out->frame_previous = u32_or_none(o->frame_previous);
	out->frame_code = u32_or_none(o->frame_code);
	out->frame_instr = u32_or_none(o->frame_instr);
	out->frame_owner = u32_or_none(o->frame_owner);
	out->owner_cstack = u32_or_none(o->owner_cstack);
	out->code_firstlineno = u32_or_none(o->code_firstlineno);
	out->instr_is_int = ver->minor < 11;
	out->frame_is_entry = u32_or_none(o->frame_is_entry);
	out->code_name = u32_or_none(o->code_qualname >= 0 ? o->code_qualname : o->code_name);
	out->code_filename = u32_or_none(o->code_filename);
	out->code_linetable = u32_or_none(o->code_linetable);
	out->code_adaptive = u32_or_none(o->code_adaptive);
	out->unicode_length = u32_or_none(o->unicode_length);
	out->unicode_state = u32_or_none(o->unicode_state);
	out->unicode_ascii_size = u32_or_none(o->unicode_ascii_size);
	out->unicode_compact_size = u32_or_none(o->unicode_compact_size);
	out->unicode_kind_shift = u32_or_none(o->unicode_kind_shift);
	out->unicode_kind_mask = u32_or_none(o->unicode_kind_mask);
	out->unicode_compact_shift = u32_or_none(o->unicode_compact_shift);
	out->unicode_compact_mask = u32_or_none(o->unicode_compact_mask);
	out->unicode_ascii_shift = u32_or_none(o->unicode_ascii_shift);
	out->unicode_ascii_mask = u32_or_none(o->unicode_ascii_mask);
	out->bytes_size = u32_or_none(o->bytes_size);
	out->bytes_sval = u32_or_none(o->bytes_sval);
	/* a field the copy needs that this version lacks: no copies, names read live */
	out->copy_codes = out->code_name != GP_PY_NONE && out->code_filename != GP_PY_NONE &&
			  out->unicode_length != GP_PY_NONE && out->unicode_state != GP_PY_NONE &&
			  out->unicode_ascii_size != GP_PY_NONE && out->unicode_compact_size != GP_PY_NONE &&
			  out->unicode_kind_mask != GP_PY_NONE && out->unicode_compact_mask != GP_PY_NONE &&
			  out->unicode_ascii_mask != GP_PY_NONE;
	out->tp_pthread_off = c->pthread_size;
	out->frame_read = 0;
	for (unsigned int k = 0; k < 5; k++)
		if (offs[k] >= 0 && (unsigned int)offs[k] + 8 > out->frame_read)
			out->frame_read = (unsigned int)offs[k] + 8;
	if (out->frame_read > GP_PY_FRAME_READ) {
		gp_set_err(err, errlen, "frame fields beyond %d bytes", GP_PY_FRAME_READ);
		return -ENOTSUP;
	}
	return 0;
}

int pystack__inspect(struct pystack *ps, int pid, struct gp_py_proc *out,
		     char *version, size_t vlen, char *err, size_t errlen)
{
	struct find_ctx c = { .ps = ps, .pid = pid };
	struct py_version ver = { 0 };
	struct py_offsets_gen o;
	struct py_pid *p;
	int ret;

	if (!ps || !out || pid <= 0) {
		ret = -EINVAL;
		gp_set_err(err, errlen, "bad arguments");
		goto cleanup;
	}
	ret = find_python(ps, pid, &c, err, errlen);
	if (!ret)
		ret = python_version(pid, &c, &ver, err, errlen);
	if (!ret)
		ret = python_offsets(pid, &c, &ver, &o, err, errlen);
	if (!ret)
		ret = fill_proc(out, &c, &o, &ver, err, errlen);
	if (ret)
		goto cleanup;
	p = pid_slot(ps, pid, true);
	p->used = true;
	p->version_hex = ver.hex;
	p->off = o;
	if (version)
		snprintf(version, vlen, "%u.%u.%u", ver.major, ver.minor, ver.micro);
cleanup:
	return ret;
}

/* ---- code objects ---- */

/* One code point as UTF-8 into u (4 bytes); its length. Past U+10FFFF: '?'. */
static size_t utf8_put(uint32_t cp, char *u)
{
	if (cp < 0x80) {
		u[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp < 0x110000) {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		return 4;
	}
	u[0] = '?';
	return 1;
}

/* Character i of a compact string's data of kind 1, 2 or 4 bytes per character. */
static uint32_t code_point(const unsigned char *raw, unsigned int kind, size_t i)
{
	if (kind == 1)
		return raw[i];
	if (kind == 2)
		return (uint32_t)(raw[2 * i] | raw[2 * i + 1] << 8);
	return (uint32_t)(raw[4 * i] | raw[4 * i + 1] << 8 | raw[4 * i + 2] << 16 |
			  (uint32_t)raw[4 * i + 3] << 24);
}

/* A str object's length (capped at PY_STR_MAX - 1), kind and data address, from its
 * header; only compact strings (those of code objects). */
static int str_layout(int pid, const struct py_offsets_gen *o, uint64_t obj,
		      uint64_t *n, unsigned int *kind, uint64_t *data)
{
	unsigned char hdr[128];
	unsigned int state = 0, compact, ascii;
	int ret;

	if ((size_t)o->unicode_compact_size > sizeof(hdr))
		return -EINVAL;
	ret = read_mem(pid, obj, hdr, (size_t)o->unicode_ascii_size);
	if (ret)
		return ret;
	*n = 0;
	memcpy(n, hdr + o->unicode_length, 8);
	memcpy(&state, hdr + o->unicode_state, 4);
	*kind = (state >> o->unicode_kind_shift) & (unsigned)o->unicode_kind_mask;
	compact = (state >> o->unicode_compact_shift) & (unsigned)o->unicode_compact_mask;
	ascii = (state >> o->unicode_ascii_shift) & (unsigned)o->unicode_ascii_mask;
	if (!compact || (*kind != 1 && *kind != 2 && *kind != 4))
		return -EBADMSG;	/* code objects' strings are compact */
	if (*n > PY_STR_MAX - 1)
		*n = PY_STR_MAX - 1;
	*data = obj + (uint64_t)(ascii ? o->unicode_ascii_size : o->unicode_compact_size);
	return 0;
}

/* A str object as UTF-8, at most PY_STR_MAX - 1 bytes. */
static int read_str(int pid, const struct py_offsets_gen *o, uint64_t obj,
		    char *buf, size_t len)
{
	unsigned char raw[PY_STR_MAX * 4];
	unsigned int kind;
	uint64_t n, data;
	size_t i, w = 0;
	int ret;

	buf[0] = 0;
	ret = str_layout(pid, o, obj, &n, &kind, &data);
	if (!ret)
		ret = read_mem(pid, data, raw, (size_t)n * kind);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		char u[4];
		size_t k = utf8_put(code_point(raw, kind, i), u);

		if (w + k >= len)
			break;
		memcpy(buf + w, u, k);
		w += k;
	}
	buf[w] = 0;
	return 0;
}

static int load_code(int pid, const struct py_offsets_gen *o, uint64_t code,
		     struct py_code *pc)
{
	unsigned char hdr[512];
	uint64_t name = 0, file = 0, tab = 0, tlen = 0;
	int first = 0, need = 0, ret;

	need = o->code_filename;
	if (o->code_name > need)
		need = o->code_name;
	if (o->code_qualname > need)
		need = o->code_qualname;
	if (o->code_linetable > need)
		need = o->code_linetable;
	if (o->code_firstlineno > need)
		need = o->code_firstlineno;
	need += 8;
	if (need > (int)sizeof(hdr))
		return -EINVAL;
	ret = read_mem(pid, code, hdr, (size_t)need);
	if (ret)
		return ret;
	memcpy(&file, hdr + o->code_filename, 8);
	memcpy(&name, hdr + (o->code_qualname >= 0 ? o->code_qualname : o->code_name), 8);
	memcpy(&tab, hdr + o->code_linetable, 8);
	memcpy(&first, hdr + o->code_firstlineno, 4);
	free(pc->linetable);
	memset(pc, 0, sizeof(*pc));
	pc->pid = pid;
	pc->code = code;
	pc->firstlineno = first;
	if (read_str(pid, o, name, pc->name, sizeof(pc->name)))
		snprintf(pc->name, sizeof(pc->name), "?");
	if (read_str(pid, o, file, pc->file, sizeof(pc->file)))
		snprintf(pc->file, sizeof(pc->file), "?");
	if (tab && !read_mem(pid, tab + (uint64_t)o->bytes_size, &tlen, 8) &&
	    tlen > 0 && tlen <= PY_LINETABLE_MAX) {
		pc->linetable = malloc(tlen);
		if (pc->linetable &&
		    !read_mem(pid, tab + (uint64_t)o->bytes_sval, pc->linetable, tlen))
			pc->linetable_len = tlen;
	}
	pc->valid = true;
	return 0;
}

/* 3.10 (PEP 626 co_linetable): (byte delta, signed line delta) pairs. */
int pystack__line_310(const unsigned char *tab, size_t n, int firstlineno,
		      long addr_bytes)
{
	long start = 0, end;
	int line = firstlineno;
	size_t i;

	if (addr_bytes < 0)
		return firstlineno;
	for (i = 0; i + 1 < n; i += 2) {
		int ld = (signed char)tab[i + 1];

		end = start + tab[i];
		if (ld != -128)
			line += ld;
		if (addr_bytes >= start && addr_bytes < end)
			return ld == -128 ? -1 : line;
		start = end;
	}
	return -1;
}

static unsigned int varint(const unsigned char *t, size_t n, size_t *i)
{
	unsigned int v, shift = 0;
	unsigned char b;

	if (*i >= n)
		return 0;
	b = t[(*i)++];
	v = b & 63;
	while ((b & 64) && *i < n && shift < 24) {
		b = t[(*i)++];
		shift += 6;
		v |= (unsigned int)(b & 63) << shift;
	}
	return v;
}

static int svarint(const unsigned char *t, size_t n, size_t *i)
{
	unsigned int u = varint(t, n, i);

	return (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
}

/* 3.11+ (PEP 657 location table): entries of (code, length) and deltas. */
int pystack__line_311(const unsigned char *tab, size_t n, int firstlineno,
		      long addr_units)
{
	long pos = 0;
	int line = firstlineno;
	size_t i = 0;

	if (addr_units < 0)
		return firstlineno;
	while (i < n) {
		unsigned char first = tab[i++];
		int code, len, ld = 0;
		bool none = false;

		if (!(first & 0x80))
			return -1;	/* not an entry start: corrupt */
		code = (first >> 3) & 15;
		len = (first & 7) + 1;
		if (code == 15) {
			none = true;
		} else if (code == 14) {
			ld = svarint(tab, n, &i);
			varint(tab, n, &i);
			varint(tab, n, &i);
			varint(tab, n, &i);
		} else if (code == 13) {
			ld = svarint(tab, n, &i);
		} else if (code >= 10) {
			ld = code - 10;
			i += 2;
		} else {
			i += 1;
		}
		if (!none)
			line += ld;
		if (addr_units >= pos && addr_units < pos + len)
			return none ? -1 : line;
		pos += len;
	}
	return -1;
}

/* ---- code objects copied by BPF at their first sight ---- */

static uint64_t copy_key(int pid, uint64_t code)
{
	/* code objects are 16-byte aligned user addresses (< 2^47): a clash is possible only
	 * for PIDs of 2^21 and more, and is then a miss (the entry says whose it is) */
	return (code >> 4) ^ ((uint64_t)(uint32_t)pid << 42);
}

static void copy_free(void *v)
{
	if (v)
		free(((struct py_copy *)v)->lt);
	free(v);
}

/* A str's raw data (len characters of kind bytes, checked by the caller) as UTF-8. */
static void decode_str(const unsigned char *raw, unsigned int kind, size_t n, char *buf, size_t len)
{
	size_t w = 0;

	for (size_t i = 0; i < n; i++) {
		char u[4];
		size_t k = utf8_put(code_point(raw, kind, i), u);

		if (w + k >= len)
			break;
		memcpy(buf + w, u, k);
		w += k;
	}
	buf[w] = 0;
}

static bool str_ok(uint32_t n, uint32_t kind)
{
	return n <= GP_PY_STR_CHARS && (kind == 1 || kind == 2 || kind == 4) && n * kind <= GP_PY_STR_BYTES;
}

static void drop_copy(struct pystack *ps, uint64_t key)
{
	struct py_copy *c = u64map__del(ps->copies, key);

	if (c)
		ps->copy_bytes -= c->lt_len;
	copy_free(c);
}

int pystack__add_code(struct pystack *ps, int pid, const struct gp_py_code *g)
{
	uint64_t key = copy_key(pid, g->code);
	uint32_t chunks = g->lt_len ? (g->lt_len - 1) / GP_PY_LT_CHUNK : 0;
	struct py_copy *c = u64map__get(ps->copies, key);
	int ret = 0;

	/* the record is the traced process's memory: every length checked */
	if (!g->code || !str_ok(g->name_len, g->name_kind) || !str_ok(g->file_len, g->file_kind) ||
	    g->lt_len > GP_PY_LT_MAX || g->lt_chunks != chunks) {
		ps->cst.malformed++;
		return -EINVAL;
	}
	if (c && (c->pid != pid || c->code != g->code)) {
		ps->cst.refused++;	/* another (pid, code) holds its key */
		return -EEXIST;
	}
	if (c)	/* a code object of the same address since (or sent again): the newest holds */
		drop_copy(ps, key);
	if (u64map__size(ps->copies) >= PY_COPY_MAX || ps->copy_bytes + g->lt_len > PY_COPY_BYTES) {
		ps->cst.refused++;
		return -ENOSPC;
	}
	c = calloc(1, sizeof(*c));
	if (!c || (g->lt_len && !(c->lt = malloc(g->lt_len))) || u64map__put(ps->copies, key, c)) {
		copy_free(c);
		return -ENOMEM;
	}
	c->pid = pid;
	c->code = g->code;
	c->start = g->start;
	c->firstlineno = g->firstlineno;
	c->version_hex = g->version_hex;
	c->adaptive = g->code_adaptive;
	c->flags = g->flags;
	if (g->flags & GP_PY_CODE_NAME_BAD)
		snprintf(c->name, sizeof(c->name), "?");
	else
		decode_str(g->name, g->name_kind, g->name_len, c->name, sizeof(c->name));
	if (g->flags & GP_PY_CODE_FILE_BAD)
		snprintf(c->file, sizeof(c->file), "?");
	else
		decode_str(g->file, g->file_kind, g->file_len, c->file, sizeof(c->file));
	c->lt_len = g->lt_len;
	ps->copy_bytes += c->lt_len;
	if (c->lt_len) {
		memcpy(c->lt, g->lt, c->lt_len < GP_PY_LT_CHUNK ? c->lt_len : GP_PY_LT_CHUNK);
		c->chunks = 1;
	}
	ps->cst.copies++;
	return ret;
}

int pystack__add_lines(struct pystack *ps, int pid, const struct gp_py_lines *l)
{
	struct py_copy *c = u64map__get(ps->copies, copy_key(pid, l->code));
	uint32_t k = l->off / GP_PY_LT_CHUNK;

	if (!c || c->pid != pid || c->code != l->code || c->firstlineno != l->firstlineno)
		return -ENOENT;	/* its code record was refused or lost */
	if (l->off % GP_PY_LT_CHUNK || k == 0 || k >= GP_PY_LT_CHUNKS || l->off >= c->lt_len ||
	    (l->len && l->len != (c->lt_len - l->off < GP_PY_LT_CHUNK ? c->lt_len - l->off : GP_PY_LT_CHUNK))) {
		ps->cst.malformed++;
		return -EINVAL;
	}
	if (!l->len)
		return 0;	/* BPF could not read it: a hole, lines past it unknown */
	memcpy(c->lt + l->off, l->lt, l->len);
	c->chunks |= 1u << k;
	return 0;
}

/* The bytes of the table that arrived without a hole from its start. */
static size_t copy_have(const struct py_copy *c)
{
	size_t have = 0;

	for (uint32_t k = 0; k < GP_PY_LT_CHUNKS && (c->chunks & (1u << k)); k++)
		have = (k + 1) * (size_t)GP_PY_LT_CHUNK;
	return have < c->lt_len ? have : c->lt_len;
}

/* The line of f in c; -1 when the table does not say (or not the part of it copied). */
static int copy_line(const struct py_copy *c, const struct gp_py_frame *f, bool *cut)
{
	size_t have = copy_have(c);
	int line;

	if (((c->version_hex >> 16) & 0xff) < 11)	/* 3.10: f_lasti in code units */
		line = pystack__line_310(c->lt, have, c->firstlineno, (long)f->instr * 2);
	else if (c->adaptive == GP_PY_NONE)
		line = -1;
	else
		line = pystack__line_311(c->lt, have, c->firstlineno,
					 (long)(f->instr - (f->code + (uint64_t)c->adaptive)) / 2);
	*cut = line <= 0 && (have < c->lt_len || (c->flags & (GP_PY_CODE_LT_CUT | GP_PY_CODE_LT_BAD)));
	return line;
}

/* f named from a copy: 0, PYSTACK_NO_LINE (named, its line not in what was copied), or
 * -ENOENT when there is no copy of its code object. */
static int format_copy(struct pystack *ps, int pid, const struct gp_py_frame *f, char *buf, size_t len)
{
	struct py_copy *c = u64map__get(ps->copies, copy_key(pid, f->code));
	bool cut = false;
	int line;

	if (!c || c->pid != pid || c->code != f->code || c->firstlineno != f->firstlineno)
		return -ENOENT;
	line = copy_line(c, f, &cut);
	ps->cst.named++;
	if (line > 0) {
		snprintf(buf, len, "%s (%s:%d)", c->name, c->file, line);
		return 0;
	}
	snprintf(buf, len, "%s (%s:?)", c->name, c->file);
	if (!cut)
		return 0;	/* the table itself does not cover it, as read live */
	ps->cst.lines_cut++;
	return PYSTACK_NO_LINE;
}

struct whose_copy {
	int pid;
};

static bool copy_of(void *ctx, uint64_t key, void *v)
{
	(void)key;
	return ((struct py_copy *)v)->pid == ((struct whose_copy *)ctx)->pid;
}

void pystack__forget_copies(struct pystack *ps, int pid)
{
	struct whose_copy w = { pid };
	uint64_t key;
	void *v;

	if (!ps)
		return;
	for (size_t it = 0; u64map__next(ps->copies, &it, &key, &v);)
		if (((struct py_copy *)v)->pid == pid)
			ps->copy_bytes -= ((struct py_copy *)v)->lt_len;
	u64map__delete_if(ps->copies, copy_of, &w, copy_free);
}

void pystack__copy_stats(const struct pystack *ps, struct pystack_copy_stats *st)
{
	*st = ps->cst;
	st->kept = u64map__size(ps->copies);
	st->kept_bytes = ps->copy_bytes;
}

int pystack__format(struct pystack *ps, int pid, const struct gp_py_frame *f,
		    char *buf, size_t len)
{
	struct py_pid *p;
	struct py_code *pc;
	size_t slot;
	long off;
	int ret = 0, line;

	snprintf(buf, len, "0x%llx (?)", (unsigned long long)f->code);
	/* a copy first: the process may be gone, and the copy is what the call saw */
	ret = f->code ? format_copy(ps, pid, f, buf, len) : -ENOENT;
	if (ret != -ENOENT)
		goto cleanup;
	ret = 0;
	p = pid_slot(ps, pid, false);
	if (!p || !p->used || !f->code) {
		ret = -ENOENT;
		goto cleanup;
	}
	slot = (size_t)((f->code >> 4) ^ (uint64_t)pid * 0x9e3779b97f4a7c15ull) % PY_CODE_CACHE;
	pc = &ps->codes[slot];
	/* a code address can be reused after its object dies: firstlineno tells */
	if (!pc->valid || pc->pid != pid || pc->code != f->code ||
	    pc->firstlineno != f->firstlineno) {
		bool was = pc->valid;

		ret = load_code(pid, &p->off, f->code, pc);
		if (ret)
			goto cleanup;
		ps->codes_valid += !was;
	}
	if (p->off.code_adaptive < 0) {		/* 3.10: f_lasti in code units */
		line = pystack__line_310(pc->linetable, pc->linetable_len,
					 pc->firstlineno, (long)f->instr * 2);
	} else {
		off = (long)(f->instr - (f->code + (uint64_t)p->off.code_adaptive));
		line = pystack__line_311(pc->linetable, pc->linetable_len,
					 pc->firstlineno, off / 2);
	}
	if (line > 0)
		snprintf(buf, len, "%s (%s:%d)", pc->name, pc->file, line);
	else	/* a table that does not cover the instruction (a code object freed since) */
		snprintf(buf, len, "%s (%s:?)", pc->name, pc->file);
cleanup:
	return ret;
}

struct pystack *pystack__new(const char *proc_root)
{
	struct pystack *ps;

	elf_version(EV_CURRENT);
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	ps->proc_root = strdup(proc_root ? proc_root : "/proc");
	ps->codes = calloc(PY_CODE_CACHE, sizeof(*ps->codes));
	ps->copies = u64map__new();
	if (!ps->proc_root || !ps->codes || !ps->copies) {
		pystack__free(ps);
		return NULL;
	}
	return ps;
}

void pystack__free(struct pystack *ps)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; ps->codes && i < PY_CODE_CACHE; i++)
		free(ps->codes[i].linetable);
	free(ps->codes);
	u64map__free_all(ps->copies, copy_free);
	free(ps->proc_root);
	free(ps);
}

void pystack__forget_pid(struct pystack *ps, int pid)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; i < PY_MAX_PIDS; i++)
		if (ps->pids[i].used && ps->pids[i].pid == pid)
			memset(&ps->pids[i], 0, sizeof(ps->pids[i]));
	/* (a pass over 4096 slots never filled faulted in their 2.2 MB of zeroed pages: 14 ms
	 * at a Python command's exec, before its interpreter could be looked at) */
	for (i = 0; ps->codes_valid && i < PY_CODE_CACHE; i++)
		if (ps->codes[i].valid && ps->codes[i].pid == pid) {
			free(ps->codes[i].linetable);
			memset(&ps->codes[i], 0, sizeof(ps->codes[i]));
			ps->codes_valid--;
		}
}
