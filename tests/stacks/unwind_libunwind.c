// SPDX-License-Identifier: BSD-3-Clause
/*
 * The libunwind alternative to src/lib/unwind.c, kept for the comparison in
 * docs/stacks.md (stackprobe --bench): libunwind's remote interface
 * (unw_create_addr_space) with accessors over the same stack copy, CFI from
 * .eh_frame through .eh_frame_hdr's table (what perf's libunwind support
 * does). Files are opened through safeopen; the .eh_frame_hdr + .eh_frame
 * bytes of each file are read once and served from memory.
 * .debug_frame and separate debug files are not wired here (libunwind would
 * need dwarf_find_debug_frame and a file name it opens itself).
 */
#define _GNU_SOURCE
#include "unwind_libunwind.h"
#include "lib/procmaps.h"
#include "lib/safeopen.h"

#include <errno.h>
#include <gelf.h>
#include <libunwind.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

#define LU_MAX_MAPS 2048

struct lu_file {
	struct safeopen_id id;
	bool tried, ok;
	int fd;
	uint64_t hdr_vaddr, hdr_size;	/* .eh_frame_hdr (link-time) */
	uint64_t lo, hi;		/* [lo, hi): bytes kept in mem (link-time vaddrs) */
	unsigned char *mem;
	uint64_t first_vaddr;		/* p_vaddr - p_offset of the first PT_LOAD */
	bool is_exec;
};

struct lu_map {
	uint64_t start, end, offset;
	bool exec;
	struct lu_file *file;
	char *path;
};

struct lu_unwinder {
	unw_addr_space_t as;
	int pid;
	struct lu_map *maps;
	size_t nmaps;
	struct lu_file *files;
	size_t nfiles;
	const struct gp_stack_copy *cur;
};

static struct lu_map *map_of(struct lu_unwinder *u, uint64_t addr)
{
	size_t i;

	for (i = 0; i < u->nmaps; i++)
		if (addr >= u->maps[i].start && addr < u->maps[i].end)
			return &u->maps[i];
	return NULL;
}

static uint64_t bias_of(const struct lu_map *m)
{
	/* the load address of vaddr 0, from this mapping's offset */
	return m->file->is_exec ? 0 : m->start - m->offset - m->file->first_vaddr;
}

static bool file_load(struct lu_unwinder *u, struct lu_map *m)
{
	struct lu_file *f = m->file;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t shstr, i, n;
	uint64_t eh_lo = 0, eh_hi = 0;
	int fd;

	if (f->tried)
		return f->ok;
	f->tried = true;
	fd = safe_open_mapped(NULL, u->pid, m->path, &f->id, NULL, 0);
	if (fd < 0)
		return false;
	elf = safe_elf_begin(fd, NULL, 0);
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getshdrstrndx(elf, &shstr))
		goto out;
	f->is_exec = eh.e_type == ET_EXEC;
	if (!elf_getphdrnum(elf, &n))
		for (i = 0; i < n; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
				f->first_vaddr = ph.p_vaddr - ph.p_offset;
				break;
			}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstr, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".eh_frame_hdr")) {
			f->hdr_vaddr = sh.sh_addr;
			f->hdr_size = sh.sh_size;
		}
		if (!strcmp(name, ".eh_frame_hdr") || !strcmp(name, ".eh_frame")) {
			if (!eh_lo || sh.sh_addr < eh_lo)
				eh_lo = sh.sh_addr;
			if (sh.sh_addr + sh.sh_size > eh_hi)
				eh_hi = sh.sh_addr + sh.sh_size;
		}
	}
	if (!f->hdr_size || eh_hi - eh_lo > (64u << 20))
		goto out;
	f->lo = eh_lo;
	f->hi = eh_hi;
	f->mem = malloc(eh_hi - eh_lo);
	/* file offset = vaddr - (p_vaddr - p_offset) of the segment: the same
	 * for text and .eh_frame in the usual single-RX-segment layout */
	if (!f->mem || pread(fd, f->mem, eh_hi - eh_lo,
			     (off_t)(eh_lo - f->first_vaddr)) != (ssize_t)(eh_hi - eh_lo))
		goto out;
	f->ok = true;
out:
	if (elf)
		elf_end(elf);
	if (!f->ok) {
		free(f->mem);
		f->mem = NULL;
	}
	f->fd = fd;
	return f->ok;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	struct lu_unwinder *u = arg;
	struct lu_map *m = map_of(u, ip);
	unw_dyn_info_t di;
	uint64_t bias, hdr;
	unsigned char *h;

	if (!m || !m->exec || !file_load(u, m))
		return -UNW_ENOINFO;
	bias = bias_of(m);
	hdr = m->file->hdr_vaddr;
	h = m->file->mem + (hdr - m->file->lo);
	/* version 1, eh_frame_ptr sdata4 pcrel, fde_count udata4, table datarel sdata4 */
	if (h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	di.u.rti.segbase = bias + hdr;
	di.u.rti.table_data = bias + hdr + 12;
	di.u.rti.table_len = (*(uint32_t *)(h + 8)) * 8 / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as;
	(void)pi;
	(void)arg;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dil, void *arg)
{
	(void)as;
	(void)dil;
	(void)arg;
	return -UNW_ENOINFO;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp,
		      int write, void *arg)
{
	struct lu_unwinder *u = arg;
	const struct gp_stack_copy *c = u->cur;
	struct lu_map *m;
	uint64_t v;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (addr >= c->regs.sp && addr + 8 <= c->regs.sp + c->size) {
		memcpy(valp, c->data + (addr - c->regs.sp), 8);
		return 0;
	}
	m = map_of(u, addr);
	if (m && m->file && file_load(u, m)) {
		v = addr - bias_of(m);
		if (v >= m->file->lo && v + 8 <= m->file->hi) {
			memcpy(valp, m->file->mem + (v - m->file->lo), 8);
			return 0;
		}
	}
	return -UNW_EINVAL;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp,
		      int write, void *arg)
{
	const struct gp_user_regs *r = &((struct lu_unwinder *)arg)->cur->regs;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	switch (reg) {
#if defined(__aarch64__)
	case UNW_AARCH64_PC: *valp = r->ip; return 0;
	case UNW_AARCH64_SP: *valp = r->sp; return 0;
	case UNW_AARCH64_X29: *valp = r->bp; return 0;
	case UNW_AARCH64_X30: *valp = r->lr; return 0;
	case UNW_AARCH64_X19 ... UNW_AARCH64_X28: *valp = r->x19[reg - UNW_AARCH64_X19]; return 0;
#else
	case UNW_X86_64_RIP: *valp = r->ip; return 0;
	case UNW_X86_64_RSP: *valp = r->sp; return 0;
	case UNW_X86_64_RBP: *valp = r->bp; return 0;
	case UNW_X86_64_RBX: *valp = r->bx; return 0;
	case UNW_X86_64_R12: *valp = r->r12; return 0;
	case UNW_X86_64_R13: *valp = r->r13; return 0;
	case UNW_X86_64_R14: *valp = r->r14; return 0;
	case UNW_X86_64_R15: *valp = r->r15; return 0;
#endif
	default: return -UNW_EBADREG;
	}
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val,
			int write, void *arg)
{
	(void)as;
	(void)reg;
	(void)val;
	(void)write;
	(void)arg;
	return -UNW_EINVAL;
}

static int resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	(void)as;
	(void)cu;
	(void)arg;
	return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf,
			 size_t len, unw_word_t *off, void *arg)
{
	(void)as;
	(void)addr;
	(void)buf;
	(void)len;
	(void)off;
	(void)arg;
	return -UNW_EINVAL;
}

static unw_accessors_t accessors = {
	.find_proc_info = find_proc_info,
	.put_unwind_info = put_unwind_info,
	.get_dyn_info_list_addr = get_dyn_info_list_addr,
	.access_mem = access_mem,
	.access_reg = access_reg,
	.access_fpreg = access_fpreg,
	.resume = resume,
	.get_proc_name = get_proc_name,
};

static int add_map(const struct map_entry *e, void *arg)
{
	struct lu_unwinder *u = arg;
	struct lu_map *m;
	size_t i;

	if (e->path[0] != '/' || !e->inode || u->nmaps >= LU_MAX_MAPS)
		return 0;
	m = &u->maps[u->nmaps++];
	m->start = e->start;
	m->end = e->end;
	m->offset = e->offset;
	m->exec = e->perms[2] == 'x';
	m->path = strdup(e->path);
	for (i = 0; i < u->nfiles; i++)
		if (u->files[i].id.ino == e->inode &&
		    u->files[i].id.dev_major == e->dev_major &&
		    u->files[i].id.dev_minor == e->dev_minor)
			break;
	if (i == u->nfiles) {
		u->files[i].id = (struct safeopen_id){ e->dev_major, e->dev_minor, e->inode };
		u->files[i].fd = -1;
		u->nfiles++;
	}
	m->file = &u->files[i];
	return 0;
}

struct lu_unwinder *lu__new(int pid)
{
	struct lu_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	elf_version(EV_CURRENT);
	u->pid = pid;
	u->maps = calloc(LU_MAX_MAPS, sizeof(*u->maps));
	u->files = calloc(LU_MAX_MAPS, sizeof(*u->files));
	u->as = unw_create_addr_space(&accessors, 0);
	if (!u->maps || !u->files || !u->as ||
	    procmaps__foreach(NULL, pid, add_map, u)) {
		lu__free(u);
		return NULL;
	}
	unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	return u;
}

void lu__free(struct lu_unwinder *u)
{
	size_t i;

	if (!u)
		return;
	for (i = 0; u->maps && i < u->nmaps; i++)
		free(u->maps[i].path);
	for (i = 0; u->files && i < u->nfiles; i++) {
		free(u->files[i].mem);
		if (u->files[i].fd >= 0)
			close(u->files[i].fd);
	}
	if (u->as)
		unw_destroy_addr_space(u->as);
	free(u->maps);
	free(u->files);
	free(u);
}

int lu__unwind(struct lu_unwinder *u, const struct gp_stack_copy *copy,
	       struct unwind_frames *out)
{
	unw_cursor_t cursor;
	unw_word_t ip;
	int ret;

	memset(out, 0, sizeof(*out));
	u->cur = copy;
	ret = unw_init_remote(&cursor, u->as, u);
	if (ret)
		return ret;
	do {
		if (unw_get_reg(&cursor, UNW_REG_IP, &ip) || !ip)
			break;
		if (out->nr >= UNWIND_MAX_FRAMES) {
			out->flags |= UNWIND_TOO_DEEP;
			break;
		}
		out->pcs[out->nr++] = ip;
		ret = unw_step(&cursor);
	} while (ret > 0);
	if (ret < 0)
		out->flags |= UNWIND_STOPPED;
	return 0;
}
