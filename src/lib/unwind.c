// SPDX-License-Identifier: BSD-3-Clause
/* unwind: see unwind.h. */
#define _GNU_SOURCE
#include "lib/unwind.h"
#include "lib/procmaps.h"
#include "lib/procpin.h"
#include "lib/safeopen.h"

#include <elfutils/libdwelf.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* The machine of the files this build unwinds (the copy's registers are its own). */
#if defined(__aarch64__)
#define UNWIND_MACHINE EM_AARCH64
#define UNWIND_MACHINE_NAME "arm64"
#else
#define UNWIND_MACHINE EM_X86_64
#define UNWIND_MACHINE_NAME "x86-64"
#endif

/* A debug file larger than this is not copied in (it would be mmapped). */
#define UNWIND_DEBUG_MAX (1ull << 30)
/* Addresses this far above the copy are taken for stack, not garbage. */
#define UNWIND_STACK_SPAN (8ull << 20)
/* Maps are re-read on a miss (dlopen), but not more often than this. */
#define UNWIND_MAPS_MIN_NS 200000000ull
#define UNWIND_MAX_MAPS 4096

/*
 * One mapped file, shared by every process that maps it from one root (the host's
 * processes, a container's): its separate debug file is looked up inside that root, and
 * a file mapped from two roots (a host library bind-mounted into containers, as the NVIDIA
 * container toolkit mounts libcuda) has a slot for each, so that what one root holds (a
 * debug file made to match the build-id, or none) never names another root's frames.
 */
struct ufile {
	struct safeopen_id id;
	struct safeopen_id root;	/* the root directory it was mapped from (0: not known) */
	bool used;
	bool failed;		/* not openable / not ELF: don't retry */
	int fd;
	Elf *elf;		/* ELF_C_READ (pread): a file cut short cannot SIGBUS us */
	int debug_state;	/* 0 not looked up, 1 found (debug_fd), -1 none */
	int debug_fd;		/* sealed memfd copy of the verified debug file */
	char *debug_name;	/* its name inside the process's root */
	unsigned long long last_use;
};

struct upid;

struct umap {
	unsigned long long start, end, offset;
	struct safeopen_id id;
	bool exec;
	struct upid *owner;
	char *path;
};

struct upid {
	struct unwinder *u;
	int pid;
	bool used;
	struct safeopen_id root;	/* its root directory's identity (0: not known) */
	Dwfl *dwfl;
	bool attached;
	struct umap *maps;
	size_t nmaps;
	unsigned long long maps_ns;
	unsigned long long last_use;
	/* the event being unwound */
	const struct gp_stack_copy *cur;
	bool beyond;		/* a read above the copy was wanted */
	bool read_failed;	/* any read outside the copy */
#if defined(__aarch64__)
	/* a walk resumed at a frame with CFI after frame-pointer ones (frame_cb): its pc and
	 * x19-x30, sp (DWARF 19-31), those known in rs_known (bit k: register 19 + k) */
	bool resume;
	Dwarf_Addr rs_pc;
	Dwarf_Word rs_regs[13];
	unsigned int rs_known;
#endif
};

/*
 * Inline chains (unwinder__inlines: the line of a pc and the functions inlined there) by
 * file (device, inode) and offset in it, for every process: a chain is the file's, whoever
 * maps it. Looking one up costs a process's first use of a file its debug file, read and
 * decompressed again in each new libdwfl session (a distribution's libc debug file:
 * ~10 ms); under hundreds of short processes a second that was the reader's whole time
 * (68 % in zlib), the ring buffer filled and a signal waited for the backlog.
 * Direct-mapped; misses (no line) are kept too.
 */
#define CHAIN_SLOTS 4096

struct chain_slot {
	struct safeopen_id id, root;	/* the ufile's */
	unsigned long long off;
	bool used;
	int n;			/* entries; 0: no line information there */
	int line[UNWIND_MAX_INLINE];
	char *text;		/* n pairs of strings, each NUL-ended: func, file */
};

struct unwinder {
	char *proc_root;
	const struct procpin *pin;	/* what exited processes kept (not owned), or NULL */
	struct upid pids[UNWIND_MAX_PIDS];
	struct ufile files[UNWIND_MAX_FILES];
	struct chain_slot chains[CHAIN_SLOTS];
	unsigned long long tick;
	struct unwind_stats stats;
	char last_err[320];	/* why the last file was refused */
};

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---- files ---- */

static void ufile_drop(struct ufile *f)
{
	if (!f->used)
		return;
	/* libdwfl holds references too: whoever ends the last one closes */
	if (f->elf) {
		if (elf_end(f->elf) == 0 && f->fd >= 0)
			close(f->fd);
	} else if (f->fd >= 0) {
		close(f->fd);
	}
	if (f->debug_fd >= 0)
		close(f->debug_fd);
	free(f->debug_name);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->debug_fd = -1;
}

static bool same_id(const struct safeopen_id *a, const struct safeopen_id *b)
{
	return a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->ino == b->ino;
}

static bool same_file(const struct safeopen_id *id, const struct safeopen_id *root,
		      const struct safeopen_id *id2, const struct safeopen_id *root2)
{
	return same_id(id, id2) && same_id(root, root2);
}

static void chain_drop(struct chain_slot *c)
{
	free(c->text);
	memset(c, 0, sizeof(*c));
}

/*
 * The cache slot of a file; evicts the least recently used one when full.
 * Live libdwfl sessions keep their own reference to an evicted file's Elf.
 */
static struct ufile *ufile_slot(struct unwinder *u, const struct umap *m)
{
	const struct safeopen_id *id = &m->id, *root = &m->owner->root;
	struct ufile *f, *victim = NULL;
	size_t i;

	for (i = 0; i < UNWIND_MAX_FILES; i++) {
		f = &u->files[i];
		if (f->used && same_file(&f->id, &f->root, id, root)) {
			f->last_use = ++u->tick;
			return f;
		}
		if (!victim || !f->used ||
		    (victim->used && f->last_use < victim->last_use))
			victim = f;
	}
	/* the chains of a file go with it: its open fd kept its inode from being reused */
	for (i = 0; victim->used && i < CHAIN_SLOTS; i++)
		if (u->chains[i].used && same_file(&u->chains[i].id, &u->chains[i].root, &victim->id, &victim->root))
			chain_drop(&u->chains[i]);
	ufile_drop(victim);
	victim->used = true;
	victim->id = *id;
	victim->root = *root;
	victim->fd = -1;
	victim->debug_fd = -1;
	victim->last_use = ++u->tick;
	return victim;
}

/* Opens the ELF file of a mapping: by its path inside the root, else map_files. */
static int ufile_open(struct unwinder *u, struct ufile *f, int pid,
		      const struct umap *m)
{
	GElf_Ehdr eh;
	int fd = -1, ret = 0;

	if (f->elf)
		goto cleanup;
	if (f->failed) {
		ret = -ENOEXEC;
		goto cleanup;
	}
	fd = safe_open_mapped(u->proc_root, pid, m->path, &m->id, u->last_err,
			      sizeof(u->last_err));
	if (fd < 0) {
		char why[160];

		fd = safe_open_map_file(u->proc_root, pid, m->start, m->end,
					&m->id, why, sizeof(why));
		if (fd < 0) {
			size_t n = strnlen(u->last_err, sizeof(u->last_err));

			snprintf(u->last_err + n, sizeof(u->last_err) - n,
				 "; by map_files: %s", strerror(-fd));
		}
	}
	/* the process is gone: the descriptor kept while it lived (procpin) */
	if (fd < 0 && u->pin) {
		int kept = procpin__open(u->pin, &m->id);

		if (kept >= 0)
			fd = kept;
	}
	if (fd < 0) {
		ret = fd;	/* maybe transient (process gone): tried again later */
		u->stats.files_rejected++;
		goto cleanup;
	}
	f->elf = safe_elf_begin(fd, u->last_err, sizeof(u->last_err));
	if (!f->elf || !gelf_getehdr(f->elf, &eh) || eh.e_machine != UNWIND_MACHINE) {
		if (f->elf) {
			snprintf(u->last_err, sizeof(u->last_err), "%s: not %s", m->path,
				 UNWIND_MACHINE_NAME);
			elf_end(f->elf);
		}
		f->elf = NULL;
		f->failed = true;	/* the same file will not get better */
		u->stats.files_rejected++;
		ret = -ENOEXEC;
		goto cleanup;
	}
	f->fd = fd;
	fd = -1;
	u->stats.files_opened++;
cleanup:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* ---- separate debug files ---- */

static bool debug_matches(Elf *dbg, const void *bid, ssize_t bid_len,
			  int fd, GElf_Word crc, bool use_crc)
{
	const void *dbid = NULL;
	ssize_t dlen;
	unsigned char buf[65536];
	uLong c = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	if (bid_len > 0) {
		dlen = dwelf_elf_gnu_build_id(dbg, &dbid);
		return dlen == bid_len && memcmp(dbid, bid, (size_t)bid_len) == 0;
	}
	if (!use_crc)
		return false;
	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	return n == 0 && (GElf_Word)c == crc;
}

/*
 * A private, sealed copy: libdwfl mmaps debug files, and a hostile process
 * could truncate the original under that mapping (SIGBUS).
 */
static int sealed_copy(int fd, unsigned long long size)
{
	unsigned char buf[65536];
	unsigned long long done = 0;
	int mfd, ret = -1;
	ssize_t n;

	mfd = memfd_create("gpuprobe-debug", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		goto cleanup;
	while (done < size &&
	       (n = pread(fd, buf, sizeof(buf), (off_t)done)) > 0) {
		if (write(mfd, buf, (size_t)n) != n)
			goto cleanup;
		done += (unsigned long long)n;
	}
	if (done != size ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
				    F_SEAL_SEAL))
		goto cleanup;
	ret = mfd;
	mfd = -1;
cleanup:
	if (mfd >= 0)
		close(mfd);
	return ret;
}

/* Tries one candidate path inside the process's root. */
static int try_debug(struct unwinder *u, int pid, const char *path,
		     const struct ufile *main_file, const void *bid,
		     ssize_t bid_len, GElf_Word crc, bool use_crc)
{
	Elf *dbg = NULL;
	struct stat st;
	int fd, ret = -1;

	fd = safe_open_mapped(u->proc_root, pid, path, NULL, NULL, 0);
	if (fd < 0)
		goto cleanup;
	if (fstat(fd, &st) || (unsigned long long)st.st_size > UNWIND_DEBUG_MAX ||
	    (st.st_ino == main_file->id.ino))	/* a link back to itself */
		goto cleanup;
	dbg = safe_elf_begin(fd, NULL, 0);
	if (!dbg || elf_kind(dbg) != ELF_K_ELF)
		goto cleanup;
	if (!debug_matches(dbg, bid, bid_len, fd, crc, use_crc)) {
		u->stats.debug_rejected++;
		goto cleanup;
	}
	ret = sealed_copy(fd, (unsigned long long)st.st_size);
	if (ret >= 0)
		u->stats.debug_files++;
cleanup:
	if (dbg)
		elf_end(dbg);
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * Candidate i (0-3) for a debug file: the build-id path, then the .gnu_debuglink name
 * (a plain name, no folder) beside the file (in dir), in its .debug/ and under
 * /usr/lib/debug. The length written into cand, or -1 when candidate i does not exist.
 */
static int debug_candidate(int i, const unsigned char *bid, int bid_len, const char *dir,
			   const char *debuglink_file, char *cand, size_t len)
{
	if (i == 0 && bid_len > 1 && bid_len <= 64) {
		char hex[130];
		int k;

		for (k = 0; k < bid_len; k++)
			sprintf(hex + 2 * k, "%02x", bid[k]);
		return snprintf(cand, len, "/usr/lib/debug/.build-id/%.2s/%s.debug",
				hex, hex + 2);
	}
	if (i > 0 && debuglink_file && debuglink_file[0] &&
	    !strchr(debuglink_file, '/')) {
		const char *fmt = i == 1 ? "%s/%s" :
				  i == 2 ? "%s/.debug/%s" :
					   "/usr/lib/debug%s/%s";

		return snprintf(cand, len, fmt, strcmp(dir, "/") ? dir : "", debuglink_file);
	}
	return -1;
}

/*
 * Looks up f's separate debug file once: the candidates of debug_candidate, all inside
 * the root of process pid (path: the file as the process maps it). A candidate counts
 * only if its build-id (or, without one, the debuglink CRC) matches: a stale debug file
 * would give wrong CFI. Sets f->debug_state; "none" is cached only when pid's root was
 * still there after the candidates failed. A process that exited meanwhile (its root
 * gone, a zombie's too) says nothing of the file: another process mapping it may still
 * find its debug file, and must (the file is shared by every process that maps it).
 */
static void ufile_find_debug(struct unwinder *u, struct ufile *f, int pid, const char *path,
			     const unsigned char *bid, int bid_len, const char *debuglink_file,
			     GElf_Word debuglink_crc)
{
	char cand[PROCMAPS_PATH_MAX + 64], dir[PROCMAPS_PATH_MAX];
	int fd = -1, i, n;
	char *slash;

	if (f->debug_state || !f->root.ino)
		return;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir ? 1 : 0] = '\0';
	for (i = 0; i < 4 && fd < 0; i++) {
		n = debug_candidate(i, bid, bid_len, dir, debuglink_file, cand, sizeof(cand));
		if (n < 0 || (size_t)n >= sizeof(cand))
			continue;
		fd = try_debug(u, pid, cand, f, bid, bid_len > 0 ? bid_len : 0, debuglink_crc,
			       debuglink_file != NULL);
	}
	if (fd >= 0) {
		f->debug_state = 1;
		f->debug_fd = fd;
		f->debug_name = strdup(cand);
	} else if (!safe_proc_root_id(u->proc_root, pid, &(struct safeopen_id){ 0 })) {
		/* its root still there after the candidates failed: an exiting process or a
		 * zombie (kill(0) still finds it) has lost it, and says nothing of the file */
		f->debug_state = -1;
	}
}

/* libdwfl's find_debuginfo: ufile_find_debug's file, shared by every process. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const struct umap *m = *userdata;
	struct unwinder *u = m->owner->u;
	const unsigned char *bid = NULL;
	struct ufile *f;
	GElf_Addr bid_vaddr;
	int bid_len;

	(void)modname;
	(void)base;
	(void)file_name;
	f = ufile_slot(u, m);
	if (!f->debug_state) {
		bid_len = dwfl_module_build_id(mod, &bid, &bid_vaddr);
		ufile_find_debug(u, f, m->owner->pid, m->path, bid, bid_len, debuglink_file, debuglink_crc);
	}
	if (f->debug_state <= 0)
		return -1;
	if (debuginfo_file_name)
		*debuginfo_file_name = strdup(f->debug_name ? f->debug_name : m->path);
	return dup(f->debug_fd);
}

/* libdwfl's find_elf: the shared, already opened Elf of the file. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	const struct umap *m = *userdata;
	struct unwinder *u = m->owner->u;
	struct ufile *f;

	(void)mod;
	(void)modname;
	(void)base;
	*elfp = NULL;
	f = ufile_slot(u, m);
	if (ufile_open(u, f, m->owner->pid, m))
		return -1;
	/* a new reference to the same Elf (libelf counts them) */
	*elfp = elf_begin(f->fd, ELF_C_READ, f->elf);
	if (!*elfp)
		return -1;
	*file_name = strdup(m->path);
	return f->fd;	/* closed by whoever ends the last reference */
}

static const Dwfl_Callbacks dwfl_cbs = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
};

/* ---- the thread: registers and memory from the copy ---- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct upid *p = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return p->pid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

static bool pc_mapped(const struct upid *p, unsigned long long pc);

#if defined(__aarch64__)
/*
 * Pointer authentication: a function built with -mbranch-protection signs its return
 * address (paciasp) before saving it, putting a code in the bits above the virtual address
 * (48 bits: Debian's, and GP_USER_ADDR_BITS). libdwfl before 0.190 does not strip it, and
 * a signed return address lies in no mapping: the walk would stop at the first signed
 * frame. A word read from the copy with bits above 48 set whose low 48 bits fall in an
 * executable mapping is taken for a signed code pointer and stripped; anything else
 * (data, saved registers) is passed on as it is.
 */
#define UNWIND_VA_MASK ((1ull << 48) - 1)

static Dwarf_Word strip_pac(const struct upid *p, Dwarf_Word v)
{
	if ((v & ~UNWIND_VA_MASK) && pc_mapped(p, v & UNWIND_VA_MASK))
		return v & UNWIND_VA_MASK;
	return v;
}
#endif

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	struct upid *p = arg;
	const struct gp_stack_copy *c = p->cur;
	unsigned long long sp = c->regs.sp, end = sp + c->size;

	(void)dwfl;
	if (addr >= sp && addr <= end - sizeof(*result) && end >= sp + 8) {
		memcpy(result, c->data + (addr - sp), sizeof(*result));
#if defined(__aarch64__)
		*result = strip_pac(p, *result);
#endif
		return true;
	}
	p->read_failed = true;
	if (addr >= end && addr < end + UNWIND_STACK_SPAN)
		p->beyond = true;
	return false;
}

#if defined(__aarch64__)
static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct upid *p = arg;
	const struct gp_user_regs *r = &p->cur->regs;
	/* DWARF AArch64 numbering: 19-28 x19-x28, 29 x29 (fp), 30 x30 (lr), 31 sp; the pc
	 * has no number of its own here. At a function's first instruction x30 holds the
	 * return address, unsigned; a probe further in may see it signed. */
	Dwarf_Word x19_sp[13];

	if (p->resume) {
		dwfl_thread_state_register_pc(thread, p->rs_pc);
		for (unsigned int k = 0; k < 13; k++)
			if ((p->rs_known & (1u << k)) &&
			    !dwfl_thread_state_registers(thread, 19 + (int)k, 1, &p->rs_regs[k]))
				return false;
		return true;
	}
	memcpy(x19_sp, r->x19, sizeof(r->x19));
	x19_sp[10] = r->bp;
	x19_sp[11] = strip_pac(p, r->lr);
	x19_sp[12] = r->sp;
	dwfl_thread_state_register_pc(thread, r->ip);
	return dwfl_thread_state_registers(thread, 19, 13, x19_sp);
}
#else
static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct gp_user_regs *r = &((struct upid *)arg)->cur->regs;
	/* DWARF x86-64 numbering: 3 rbx, 6 rbp, 7 rsp, 12-15 r12-r15 */
	Dwarf_Word bx = r->bx, bp_sp[2] = { r->bp, r->sp };
	Dwarf_Word r12_15[4] = { r->r12, r->r13, r->r14, r->r15 };

	dwfl_thread_state_register_pc(thread, r->ip);
	return dwfl_thread_state_registers(thread, 3, 1, &bx) &&
	       dwfl_thread_state_registers(thread, 6, 2, bp_sp) &&
	       dwfl_thread_state_registers(thread, 12, 4, r12_15);
}
#endif

static const Dwfl_Thread_Callbacks thread_cbs = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- processes ---- */

static void upid_clear(struct upid *p)
{
	size_t i;

	if (p->dwfl)
		dwfl_end(p->dwfl);
	for (i = 0; i < p->nmaps; i++)
		free(p->maps[i].path);
	free(p->maps);
	memset(p, 0, sizeof(*p));
}

struct maps_ctx {
	struct upid *p;
	size_t cap;
	int err;
};

static int maps_add(const struct map_entry *e, void *arg)
{
	struct maps_ctx *c = arg;
	struct upid *p = c->p;
	struct umap *m, *grown;

	if (e->path[0] != '/' || !e->inode)
		return 0;
	if (p->nmaps >= UNWIND_MAX_MAPS)
		return 0;
	if (p->nmaps == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		grown = realloc(p->maps, c->cap * sizeof(*grown));
		if (!grown) {
			c->err = -ENOMEM;
			return 1;
		}
		p->maps = grown;
	}
	m = &p->maps[p->nmaps];
	memset(m, 0, sizeof(*m));
	m->path = strdup(e->path);
	if (!m->path) {
		c->err = -ENOMEM;
		return 1;
	}
	m->start = e->start;
	m->end = e->end;
	m->offset = e->offset;
	m->id.dev_major = e->dev_major;
	m->id.dev_minor = e->dev_minor;
	m->id.ino = e->inode;
	m->exec = e->perms[2] == 'x';
	m->owner = p;
	p->nmaps++;
	return 0;
}

/*
 * Reads the maps and reports one module per mapped file (first mapping to
 * last, as dwfl_linux_proc_report does), with our opener behind it.
 */
static int upid_load(struct unwinder *u, struct upid *p, int pid, bool live)
{
	struct maps_ctx c = { .p = p };
	void **ud;
	size_t i, j;
	int err;

	upid_clear(p);
	p->u = u;
	p->pid = pid;
	p->used = true;
	p->maps_ns = now_ns();
	u->stats.maps_reads++;
	/*
	 * A process whose maps are kept (procpin, read at its stacks): those, which also
	 * hold what a read while it exits would miss; else, and for a pc they do not cover
	 * (live: a library loaded since), /proc, and the kept ones if it is gone by then.
	 */
	err = !live && u->pin && procpin__taken_ns(u->pin, pid) ? -ESRCH :
								procmaps__foreach(u->proc_root, pid, maps_add, &c);
	/* its root read after its maps (a root still there is the one they were mapped in) */
	if (!err && !c.err && p->nmaps && safe_proc_root_id(u->proc_root, pid, &p->root))
		p->root = (struct safeopen_id){ 0 };
	if ((err == -ENOENT || err == -ESRCH || (!err && !c.err && !p->nmaps)) && u->pin) {
		upid_clear(p);
		p->u = u;
		p->pid = pid;
		p->used = true;
		p->maps_ns = now_ns();
		c = (struct maps_ctx){ .p = p };
		err = procpin__foreach(u->pin, pid, maps_add, &c);
		if (procpin__root(u->pin, pid, &p->root))
			p->root = (struct safeopen_id){ 0 };
	}
	if (!err)
		err = c.err;
	if (err)
		goto cleanup;
	p->dwfl = dwfl_begin(&dwfl_cbs);
	if (!p->dwfl) {
		err = -ENOMEM;
		goto cleanup;
	}
	dwfl_report_begin(p->dwfl);
	for (i = 0; i < p->nmaps; i = j) {
		Dwfl_Module *mod;

		for (j = i + 1; j < p->nmaps && same_id(&p->maps[j].id, &p->maps[i].id) &&
				p->maps[j].start == p->maps[j - 1].end; j++)
			;
		/* a module starts at the file's first page (offset 0) */
		if (p->maps[i].offset != 0)
			continue;
		mod = dwfl_report_module(p->dwfl, p->maps[i].path,
					 p->maps[i].start, p->maps[j - 1].end);
		if (!mod)
			continue;
		dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
		*ud = &p->maps[i];
	}
	if (dwfl_report_end(p->dwfl, NULL, NULL)) {
		err = -EIO;
		goto cleanup;
	}
cleanup:
	if (err)
		upid_clear(p);
	return err;
}

static struct upid *upid_get(struct unwinder *u, int pid)
{
	struct upid *p, *victim = NULL;
	size_t i;

	for (i = 0; i < UNWIND_MAX_PIDS; i++) {
		p = &u->pids[i];
		if (p->used && p->pid == pid) {
			p->last_use = ++u->tick;
			return p;
		}
		if (!victim || !p->used ||
		    (victim->used && p->last_use < victim->last_use))
			victim = p;
	}
	upid_clear(victim);
	if (upid_load(u, victim, pid, false))
		return NULL;
	victim->last_use = ++u->tick;
	return victim;
}

static bool pc_mapped(const struct upid *p, unsigned long long pc)
{
	size_t i;

	for (i = 0; i < p->nmaps; i++)
		if (p->maps[i].exec && pc >= p->maps[i].start && pc < p->maps[i].end)
			return true;
	return false;
}

struct walk {
	struct upid *p;
	struct unwind_frames *out;
	bool unmapped;
	/* the two frames before this one: pc and whether it was the probed one */
	Dwarf_Addr pc1, pc2;
	bool act1, act2;
#if defined(__aarch64__)
	Dwarf_Word sp1;		/* the frame before's sp (0: not known) */
	bool restart;		/* stopped to resume at the frame just taken (p->rs_*) */
	bool skip_first;	/* a resumed walk: its first frame was taken already */
	int restarts;
#endif
};

#if defined(__aarch64__)
/* The call-frame information libdwfl finds for the frame at pc (a return address is
 * looked up at pc - 1, as libdwfl does), to free; NULL: none. */
static Dwarf_Frame *cfi_frame(Dwfl *dwfl, Dwarf_Addr pc, bool activation)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
	Dwarf_Addr bias, at = activation ? pc : pc - 1;
	Dwarf_Frame *fr = NULL;
	Dwarf_CFI *cfi;

	if (!mod)
		return NULL;
	if ((cfi = dwfl_module_eh_cfi(mod, &bias)) && !dwarf_cfi_addrframe(cfi, at - bias, &fr))
		return fr;
	if ((cfi = dwfl_module_dwarf_cfi(mod, &bias)) && !dwarf_cfi_addrframe(cfi, at - bias, &fr))
		return fr;
	return NULL;
}

static bool frame_has_cfi(Dwfl *dwfl, Dwarf_Addr pc, bool activation)
{
	Dwarf_Frame *fr = cfi_frame(dwfl, pc, activation);
	bool has = fr != NULL;

	free(fr);
	return has;
}

/*
 * libdwfl's arm64 frame-pointer fallback takes a frame's x30 for its return address.
 * A frame reached through CFI has in x30 the return address its callee saved, i.e. its own
 * pc: where such a frame has no CFI (a caller built without unwind tables) the fallback
 * repeats it once before the frame record's return address takes over. That repeat is
 * dropped: the same pc again, the frame before it without CFI, the one before that with.
 */
static bool fallback_repeat(const struct walk *w, Dwarf_Addr pc)
{
	return w->out->nr >= 2 && pc == w->pc1 && !w->act1 &&
	       !frame_has_cfi(w->p->dwfl, w->pc1, w->act1) &&
	       frame_has_cfi(w->p->dwfl, w->pc2, w->act2);
}

/* The instruction before return address ra, from the mapped file (4 bytes, bounded by its
 * section); false when it cannot be read. */
static bool insn_before(Dwfl *dwfl, Dwarf_Addr ra, uint32_t *insn)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, ra - 4);
	Dwarf_Addr at = ra - 4, bias;
	Elf_Data *d;
	Elf_Scn *scn;
	GElf_Shdr sh;
	Elf *elf;

	if (!mod || !(scn = dwfl_module_address_section(mod, &at, &bias)) ||
	    !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || at + 4 > sh.sh_size ||
	    !(elf = dwfl_module_getelf(mod, &bias)) ||
	    !(d = elf_getdata_rawchunk(elf, (int64_t)(sh.sh_offset + at), 4, ELF_T_BYTE)) ||
	    d->d_size != 4)
		return false;
	memcpy(insn, d->d_buf, 4);
	return true;
}

/*
 * A frame the fallback found (the frame before it had no CFI) is believed only if its
 * return address follows a call into that frame's function: code built without frame
 * pointers leaves x29 holding an ancestor's frame record, and the fallback would land
 * there, frames skipped, with nothing said. A direct call (bl) must target the function
 * the previous pc lies in (where no symbol names it: a target in its file, at or below
 * it); an indirect one (blr) cannot be checked and is believed; anything else is not a
 * return address.
 */
static bool fallback_believed(const struct walk *w, Dwarf_Addr pc)
{
	Dwfl *dwfl = w->p->dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr at, off, target, lo, hi;
	GElf_Sym sym;
	uint32_t insn;
	int64_t imm;

	if (w->out->nr < 1 || frame_has_cfi(dwfl, w->pc1, w->act1))
		return true;
	if (!insn_before(dwfl, pc, &insn))
		return false;
	if ((insn & 0xfffffc1fu) == 0xd63f0000u)	/* blr xN */
		return true;
	if ((insn & 0xfc000000u) != 0x94000000u)	/* not bl */
		return false;
	imm = (int64_t)((int32_t)((insn & 0x03ffffffu) << 6) >> 4);	/* imm26 * 4, signed */
	target = (Dwarf_Addr)((int64_t)(pc - 4) + imm);
	at = w->act1 ? w->pc1 : w->pc1 - 1;
	mod = dwfl_addrmodule(dwfl, at);
	if (mod && dwfl_module_addrinfo(mod, at, &off, &sym, NULL, NULL, NULL))
		return target == at - off;
	return mod && dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL) &&
	       target >= lo && target <= at;
}

/* A register's CFI rule "saved at CFA + off" (false for any other rule). */
static bool saved_at(Dwarf_Frame *fr, int regno, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	if (dwarf_frame_register(fr, regno, mem, &ops, &n) || !ops || n < 1 || n > 2 ||
	    ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (n == 1) {
		*off = 0;
		return true;
	}
	if (ops[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)ops[1].number;
	return true;
}

/*
 * libdwfl's arm64 frame-pointer fallback gives the caller of a frame without CFI the sp
 * x29 + 16: right where the callee's frame record is at the top of its frame (clang's
 * layout), not where it is at the bottom (gcc's stp x29, x30, [sp, #-N]!: the caller's sp
 * is x29 + N). Where the caller has CFI again (libc's __libc_start_call_main below a main
 * built without unwind tables: CFA sp + 272) a wrong sp sends that CFI to garbage, and the
 * walk stopped there. The caller's own CFI says where it saved x29 and x30; a frame record
 * ({x29, x30} at CFA + off, CFA + off + 8) is what its x29 points at (AAPCS64's frame
 * chain), so its CFA is x29 - off and its sp at pc the CFA less the rule's offset. Looked
 * up at pc - 1 (a return address). *sp; false where pc has no CFI or its rules are other:
 * a CFA from x29 needs no sp, and anything else is left to libdwfl.
 */
static bool sp_from_record(Dwfl *dwfl, Dwarf_Addr pc, Dwarf_Word x29, Dwarf_Word *sp)
{
	Dwarf_Frame *fr = cfi_frame(dwfl, pc, false);
	Dwarf_Op *cfa;
	size_t n;
	int64_t off29, off30;
	bool ok = false;

	if (!fr)
		return false;
	if (!dwarf_frame_cfa(fr, &cfa, &n) && n == 1 && cfa[0].atom == DW_OP_bregx && cfa[0].number == 31 &&
	    saved_at(fr, 29, &off29) && saved_at(fr, 30, &off30) && off30 == off29 + 8 && off29 < 0) {
		*sp = x29 - (Dwarf_Word)off29 - (Dwarf_Word)(int64_t)cfa[0].number2;
		ok = true;
	}
	free(fr);
	return ok;
}

/*
 * The frame just taken (pc, a return address) has CFI and the one before it had none:
 * libdwfl's fallback gave it its sp (sp_from_record says why that may be wrong). Where its
 * frame record says otherwise, and the sp it gives is one the frame can have (16-aligned,
 * inside the copy, not under the frame before's), the walk resumes there with it: its
 * x29, x30 and callee-saved registers as libdwfl has them. At most UNWIND_MAX_RESUMES a walk.
 */
#define UNWIND_MAX_RESUMES 8

static bool resume_here(struct walk *w, Dwfl_Frame *state, Dwarf_Addr pc)
{
	struct upid *p = w->p;
	const struct gp_stack_copy *c = p->cur;
	Dwarf_Word x29, sp, want;

	if (w->restarts >= UNWIND_MAX_RESUMES || w->out->nr < 1 ||
	    frame_has_cfi(p->dwfl, w->pc1, w->act1) ||
	    dwfl_frame_reg(state, 29, &x29) || dwfl_frame_reg(state, 31, &sp) ||
	    !sp_from_record(p->dwfl, pc, x29, &want) || want == sp || (want & 15) ||
	    want < c->regs.sp || want >= c->regs.sp + c->size || (w->sp1 && want < w->sp1))
		return false;
	p->rs_pc = pc;
	p->rs_known = 0;
	for (unsigned int k = 0; k < 12; k++)
		if (!dwfl_frame_reg(state, 19 + k, &p->rs_regs[k]))
			p->rs_known |= 1u << k;
	p->rs_regs[12] = want;
	p->rs_known |= 1u << 12;
	w->restarts++;
	return true;
}
#endif

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
#if defined(__aarch64__)
	if (w->skip_first) {	/* a resumed walk's first frame: taken before it resumed */
		w->skip_first = false;
		return DWARF_CB_OK;
	}
#endif
	/* a return address outside any executable mapping is garbage */
	if (pc == 0 || !pc_mapped(w->p, pc)) {
		w->unmapped = pc != 0;
		w->out->stop_pc = pc;
		return DWARF_CB_ABORT;
	}
#if defined(__aarch64__)
	if (fallback_repeat(w, pc))
		return DWARF_CB_OK;
	if (!fallback_believed(w, pc)) {
		w->out->flags |= UNWIND_STOPPED;	/* cut there: a frame that led nowhere */
		return DWARF_CB_ABORT;
	}
#endif
	if (w->out->nr >= UNWIND_MAX_FRAMES) {
		w->out->flags |= UNWIND_TOO_DEEP;
		return DWARF_CB_ABORT;
	}
#if defined(__aarch64__)
	if (!activation && resume_here(w, state, pc))
		w->restart = true;
#endif
	w->out->pcs[w->out->nr++] = pc;
#if defined(__aarch64__)
	w->pc2 = w->pc1;
	w->act2 = w->act1;
	w->pc1 = pc;
	w->act1 = activation;
	if (w->restart) {
		w->sp1 = w->p->rs_regs[12];
		return DWARF_CB_ABORT;
	}
	if (dwfl_frame_reg(state, 31, &w->sp1))
		w->sp1 = 0;
#endif
	return DWARF_CB_OK;
}

static int walk_once(struct upid *p, const struct gp_stack_copy *copy,
		     struct unwind_frames *out, bool *unmapped)
{
	struct walk w = { .p = p, .out = out };
	int ret;

	memset(out, 0, sizeof(*out));
	p->cur = copy;
	p->beyond = false;
	p->read_failed = false;
	if (!p->attached) {
		if (!dwfl_attach_state(p->dwfl, NULL, p->pid, &thread_cbs, p))
			return -ENOEXEC;
		p->attached = true;
	}
	/*
	 * libdwfl ends a walk "normally" also when it cannot read a return
	 * address (it takes the pc as undefined): only our reads tell a clean
	 * end (CFI marks the outermost frame) from a copy too short or a
	 * frame that led nowhere.
	 */
	ret = dwfl_getthread_frames(p->dwfl, p->pid, frame_cb, &w);
#if defined(__aarch64__)
	while (w.restart && !(out->flags & UNWIND_TOO_DEEP)) {	/* resume_here */
		w.restart = false;
		w.skip_first = true;
		p->resume = true;
		ret = dwfl_getthread_frames(p->dwfl, p->pid, frame_cb, &w);
		p->resume = false;
	}
#endif
	*unmapped = w.unmapped;
	if (out->flags & UNWIND_TOO_DEEP)
		return 0;
	if (p->beyond && !(copy->flags & GP_STACK_COPY_TO_END))
		out->flags |= UNWIND_TRUNCATED;
	else if (ret != 0 || p->read_failed)
		out->flags |= UNWIND_STOPPED;
	return 0;
}

int unwinder__unwind(struct unwinder *u, int pid,
		     const struct gp_stack_copy *copy,
		     struct unwind_frames *out)
{
	struct upid *p;
	bool unmapped = false;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (!u || !copy || copy->size > GP_STACK_COPY_MAX || pid <= 0) {
		err = -EINVAL;
		goto cleanup;
	}
	u->stats.unwinds++;
	if (copy->err || copy->size == 0) {
		out->pcs[0] = copy->regs.ip;
		out->nr = 1;
		out->flags = UNWIND_NO_STACK;
		goto cleanup;
	}
	p = upid_get(u, pid);
	if (!p || !p->dwfl) {
		err = -ESRCH;
		goto cleanup;
	}
	/* a pc we have no mapping for: a library loaded since the maps were read */
	if (!pc_mapped(p, copy->regs.ip) &&
	    now_ns() - p->maps_ns >= UNWIND_MAPS_MIN_NS) {
		if (upid_load(u, p, pid, true)) {
			err = -ESRCH;
			goto cleanup;
		}
	}
	err = walk_once(p, copy, out, &unmapped);
	if (!err && unmapped && now_ns() - p->maps_ns >= UNWIND_MAPS_MIN_NS &&
	    !upid_load(u, p, pid, true))
		err = walk_once(p, copy, out, &unmapped);
	if (err)
		goto cleanup;
	if (unmapped)
		out->flags |= UNWIND_STOPPED;
	if (out->nr == 0) {
		/* not even the pc is in a mapping we know: report it raw */
		out->pcs[0] = copy->regs.ip;
		out->nr = 1;
		out->flags |= UNWIND_STOPPED;
	}
	u->stats.frames += out->nr;
cleanup:
	return err;
}

/* The session of pid, with maps that cover pc where a re-read can make them. */
static struct upid *upid_for_pc(struct unwinder *u, int pid, uint64_t pc)
{
	struct upid *p = upid_get(u, pid);

	if (p && p->dwfl && !pc_mapped(p, pc) && now_ns() - p->maps_ns >= UNWIND_MAPS_MIN_NS &&
	    upid_load(u, p, pid, true))
		return NULL;
	return p && p->dwfl ? p : NULL;
}

/* Whether the DWARF of mod's file is small enough to read (hostile files may claim
 * sections of any size; ELF_C_READ reads them whole). */
static bool dwarf_size_ok(Dwfl_Module *mod)
{
	unsigned long long total = 0;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	GElf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strncmp(name, ".debug_", 7))
			total += sh.sh_size;
	}
	return total <= UNWIND_DWARF_MAX;
}

/* The module of pc in pid's session (NULL: none there); -ESRCH when pid has none. */
static int module_at(struct unwinder *u, int pid, uint64_t pc, Dwfl_Module **mod)
{
	struct upid *p = upid_for_pc(u, pid, pc);

	*mod = p ? dwfl_addrmodule(p->dwfl, pc) : NULL;
	return p ? 0 : -ESRCH;
}

/* The mapping of pc in p's maps (sorted by address, as /proc/PID/maps lists them). */
static const struct umap *map_of(const struct upid *p, unsigned long long pc)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pc < p->maps[mid].start)
			hi = mid;
		else if (pc >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

static bool ufile_held(const struct unwinder *u, const struct umap *m)
{
	for (size_t i = 0; i < UNWIND_MAX_FILES; i++)
		if (u->files[i].used && u->files[i].elf &&
		    same_file(&u->files[i].id, &u->files[i].root, &m->id, &m->owner->root))
			return true;
	return false;
}

static struct chain_slot *chain_slot(struct unwinder *u, const struct umap *m, unsigned long long off)
{
	uint64_t h = (off ^ ((uint64_t)m->id.ino << 20) ^ ((uint64_t)m->id.dev_minor << 52) ^
		      ((uint64_t)m->id.dev_major << 44) ^ (m->owner->root.ino << 8)) * 0x9E3779B97F4A7C15ull;

	return &u->chains[(h >> 40) % CHAIN_SLOTS];
}

static void base_name(char *dst, size_t len, const char *src)
{
	const char *base = strrchr(src, '/');

	snprintf(dst, len, "%s", base && base[1] ? base + 1 : src);
}

/* An inlined function's name: its linkage name where it has one (C++), else its name,
 * both looked for through DW_AT_abstract_origin. */
static void inline_name(Dwarf_Die *die, char *buf, size_t len)
{
	Dwarf_Attribute a;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));

	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	snprintf(buf, len, "%s", name ? name : "??");
}

/* The inline chain at pc in mod, read from its DWARF: unwinder__inlines's answer. */
static int chain_read(Dwfl_Module *mod, uint64_t pc, struct unwind_loc *locs, int max)
{
	Dwarf_Die *cu, *scopes = NULL;
	Dwarf_Files *files = NULL;
	Dwarf_Addr bias;
	Dwfl_Line *ln;
	const char *src;
	size_t nfiles = 0;
	int n = 0, ns, i, k, lineno = 0, err = -ENOENT;

	if (!mod || !dwarf_size_ok(mod))
		goto cleanup;
	ln = dwfl_module_getsrc(mod, pc);
	src = ln ? dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (!src || !src[0] || lineno <= 0)
		goto cleanup;
	memset(&locs[0], 0, sizeof(locs[0]));
	base_name(locs[0].file, sizeof(locs[0].file), src);
	locs[0].line = lineno;
	n = 1;
	cu = dwfl_module_addrdie(mod, pc, &bias);
	ns = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : -1;
	/*
	 * dwarf_getscopes goes on from an inlined instance into its abstract definition's
	 * scopes; the instance's own nesting (the callers it was inlined into) comes from
	 * the innermost scope's place in the tree, as eu-addr2line -i does.
	 */
	if (ns > 0) {
		Dwarf_Die inner = scopes[0];

		free(scopes);
		scopes = NULL;
		ns = dwarf_getscopes_die(&inner, &scopes);
	}
	if (ns > 0 && dwarf_getsrcfiles(cu, &files, &nfiles))
		files = NULL;
	/* innermost first, out to the function they were inlined into */
	for (i = 0; i < ns && dwarf_tag(&scopes[i]) != DW_TAG_subprogram; i++) {
		Dwarf_Attribute a;
		Dwarf_Word call_line = 0, call_file = 0;
		const char *cf;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		/* deeper than max: the middle ones go, the last slot is the real function's */
		if (n < max) {
			inline_name(&scopes[i], locs[n - 1].func, sizeof(locs[n - 1].func));
			k = n++;
		} else {
			k = max - 1;
		}
		dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &call_line);
		dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &call_file);
		cf = files && call_file < nfiles ? dwarf_filesrc(files, call_file, NULL, NULL) : NULL;
		memset(&locs[k], 0, sizeof(locs[k]));
		base_name(locs[k].file, sizeof(locs[k].file), cf && cf[0] ? cf : "??");
		locs[k].line = (int)call_line;
	}
	err = 0;
cleanup:
	free(scopes);
	return err ? err : n;
}

/* A chain into its cache slot (n == 0: none there); a slot that cannot hold it stays empty. */
static void chain_keep(struct chain_slot *c, const struct umap *m, unsigned long long off,
		       const struct unwind_loc *locs, int n)
{
	size_t len = 0, at = 0;
	char *t = NULL;

	for (int i = 0; i < n; i++)
		len += strlen(locs[i].func) + strlen(locs[i].file) + 2;
	if (n > 0 && !(t = malloc(len)))
		return;
	chain_drop(c);
	*c = (struct chain_slot){ .id = m->id, .root = m->owner->root, .off = off, .used = true, .n = n, .text = t };
	for (int i = 0; i < n; i++) {
		size_t a = strlen(locs[i].func) + 1, b = strlen(locs[i].file) + 1;

		memcpy(t + at, locs[i].func, a);
		memcpy(t + at + a, locs[i].file, b);
		at += a + b;
		c->line[i] = locs[i].line;
	}
}

/* A kept chain back into locs (the strings fit: they came from such fields). */
static int chain_get(const struct chain_slot *c, struct unwind_loc *locs)
{
	const char *t = c->text;

	for (int i = 0; i < c->n; i++) {
		snprintf(locs[i].func, sizeof(locs[i].func), "%s", t);
		t += strlen(t) + 1;
		snprintf(locs[i].file, sizeof(locs[i].file), "%s", t);
		t += strlen(t) + 1;
		locs[i].line = c->line[i];
	}
	return c->n ? c->n : -ENOENT;
}

int unwinder__inlines(struct unwinder *u, int pid, uint64_t pc, struct unwind_loc *locs, int max)
{
	struct chain_slot *c = NULL;
	unsigned long long off = 0;
	const struct umap *m;
	struct upid *p;
	int n;

	if (!u || pid <= 0 || !locs || max < 1)
		return -EINVAL;
	p = upid_for_pc(u, pid, pc);
	if (!p)
		return -ESRCH;
	m = map_of(p, pc);
	/* kept only while the file is open here (a ufile, which the read opens): its inode
	 * cannot be reused; the whole chain only (a shorter max cuts it in the middle) */
	if (m && m->id.ino && max == UNWIND_MAX_INLINE) {
		off = pc - m->start + m->offset;
		c = chain_slot(u, m, off);
		if (c->used && c->off == off && same_file(&c->id, &c->root, &m->id, &m->owner->root))
			return chain_get(c, locs);
	}
	n = chain_read(dwfl_addrmodule(p->dwfl, pc), pc, locs, max);
	if (c && ufile_held(u, m))
		chain_keep(c, m, off, locs, n > 0 ? n : 0);
	return n;
}

int unwinder__symbol(struct unwinder *u, int pid, uint64_t pc, char *buf, size_t len)
{
	Dwfl_Module *mod;
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name;
	int err = -ENOENT;

	if (!u || pid <= 0 || !buf || !len) {
		err = -EINVAL;
		goto cleanup;
	}
	if (module_at(u, pid, pc, &mod)) {
		err = -ESRCH;
		goto cleanup;
	}
	name = mod ? dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL) : NULL;
	if (!name || !name[0])
		goto cleanup;
	snprintf(buf, len, "%s+0x%llx", name, (unsigned long long)off);
	err = 0;
cleanup:
	return err;
}

void unwinder__set_pin(struct unwinder *u, const struct procpin *pin)
{
	if (u)
		u->pin = pin;
}

/* Whether elf has a section called name. */
static bool has_section(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		if (n && !strcmp(n, name))
			return true;
	}
	return false;
}

int unwinder__prepare(struct unwinder *u, int pid)
{
	struct upid *p;
	size_t i;
	int err = 0;

	if (!u || pid <= 0)
		return -EINVAL;
	unwinder__forget_pid(u, pid);
	p = upid_get(u, pid);
	if (!p || !p->dwfl) {
		err = -ESRCH;
		goto cleanup;
	}
	for (i = 0; i < p->nmaps; i++) {
		const struct umap *m = &p->maps[i];
		const unsigned char *bid = NULL;
		const char *link;
		struct ufile *f;
		GElf_Word crc = 0;
		int bid_len;

		if (!m->exec)
			continue;
		f = ufile_slot(u, m);
		if (ufile_open(u, f, pid, m) || f->debug_state || has_section(f->elf, ".debug_info"))
			continue;
		bid_len = dwelf_elf_gnu_build_id(f->elf, (const void **)&bid);
		link = dwelf_elf_gnu_debuglink(f->elf, &crc);
		ufile_find_debug(u, f, pid, m->path, bid, (int)bid_len, link, crc);
	}
cleanup:
	return err;
}

struct unwinder *unwinder__new(const char *proc_root)
{
	struct unwinder *u;
	size_t i;

	elf_version(EV_CURRENT);
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->proc_root = strdup(proc_root ? proc_root : "/proc");
	if (!u->proc_root) {
		free(u);
		return NULL;
	}
	for (i = 0; i < UNWIND_MAX_FILES; i++) {
		u->files[i].fd = -1;
		u->files[i].debug_fd = -1;
	}
	return u;
}

void unwinder__free(struct unwinder *u)
{
	size_t i;

	if (!u)
		return;
	for (i = 0; i < UNWIND_MAX_PIDS; i++)
		upid_clear(&u->pids[i]);
	for (i = 0; i < UNWIND_MAX_FILES; i++)
		ufile_drop(&u->files[i]);
	for (i = 0; i < CHAIN_SLOTS; i++)
		chain_drop(&u->chains[i]);
	free(u->proc_root);
	free(u);
}

void unwinder__forget_pid(struct unwinder *u, int pid)
{
	size_t i;

	if (!u)
		return;
	for (i = 0; i < UNWIND_MAX_PIDS; i++)
		if (u->pids[i].used && u->pids[i].pid == pid)
			upid_clear(&u->pids[i]);
}

const char *unwinder__last_error(const struct unwinder *u)
{
	return u ? u->last_err : "";
}

void unwinder__stats(const struct unwinder *u, struct unwind_stats *st)
{
	if (u && st)
		*st = u->stats;
}
