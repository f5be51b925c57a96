/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "lib/symbolize.h"

#include "lib/elfsym.h"
#include "lib/procmaps.h"
#include "lib/procpin.h"
#include "lib/safeopen.h"

#include <errno.h>
#include <libiberty/demangle.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Bounds on memory: a tracer may see many short-lived processes. */
#define CACHE_CAP 256
#define CACHE_BUCKETS 512	/* power of two, 2x CACHE_CAP: short chains */
/*
 * The symbol tables kept, all files together: each is bounded by what its
 * file really holds (elfsym.h), this bounds the sum when processes map many
 * large files (least recently used ones go first).
 */
#define FILES_MAX_BYTES (512ULL << 20)

/*
 * A miss re-reads the maps (dlopen'ed libraries appear after the first
 * read; cudart dlopens libcuda), but not more often than this, so a stream
 * of garbage frame addresses cannot turn into a /proc read per address.
 */
#define MAPS_REREAD_MIN_NS (100ULL * 1000 * 1000)

/*
 * Demangled output can grow much faster than the input; real CUDA template
 * names are a few KiB, so anything longer is printed mangled.
 */
#define DEMANGLE_MAX_IN 32768


/* ---- a tiny fixed-size hash map with LRU eviction ---- */

struct cache_slot {
	unsigned long long k1, k2;
	unsigned long long used;	/* tick of last use, for LRU */
	void *val;
	int next;			/* chain in bucket, -1 ends */
	bool live;
};

struct cache {
	struct cache_slot slot[CACHE_CAP];
	int bucket[CACHE_BUCKETS];
	unsigned long long tick;
	void (*free_val)(void *val);
	size_t (*size_val)(const void *val);	/* NULL: entries count nothing */
	unsigned long long bytes, max_bytes;	/* what the values hold, its bound */
};

static unsigned int cache_hash(unsigned long long k1, unsigned long long k2)
{
	uint64_t h = k1 * 0x9E3779B97F4A7C15ULL;

	h ^= (k2 + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
	h ^= h >> 29;
	return (unsigned int)(h & (CACHE_BUCKETS - 1));
}

static void cache_init(struct cache *c, void (*free_val)(void *val),
		       size_t (*size_val)(const void *val),
		       unsigned long long max_bytes)
{
	int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < CACHE_BUCKETS; i++)
		c->bucket[i] = -1;
	c->free_val = free_val;
	c->size_val = size_val;
	c->max_bytes = max_bytes;
}

static unsigned long long cache_val_size(const struct cache *c, const void *val)
{
	return c->size_val ? c->size_val(val) : 0;
}

static struct cache_slot *cache_find(struct cache *c, unsigned long long k1,
				     unsigned long long k2)
{
	struct cache_slot *found = NULL;
	int i;

	for (i = c->bucket[cache_hash(k1, k2)]; i >= 0; i = c->slot[i].next) {
		if (c->slot[i].k1 == k1 && c->slot[i].k2 == k2) {
			found = &c->slot[i];
			found->used = ++c->tick;
			break;
		}
	}
	return found;
}

static void cache_drop(struct cache *c, int idx)
{
	struct cache_slot *sl = &c->slot[idx];
	int *pp = &c->bucket[cache_hash(sl->k1, sl->k2)];

	while (*pp != idx)
		pp = &c->slot[*pp].next;
	*pp = sl->next;
	c->bytes -= cache_val_size(c, sl->val);
	c->free_val(sl->val);
	sl->val = NULL;
	sl->live = false;
}

/* Least recently used live slot other than keep, -1 if none. */
static int cache_lru(const struct cache *c, int keep)
{
	int i, victim = -1;

	for (i = 0; i < CACHE_CAP; i++)
		if (c->slot[i].live && i != keep &&
		    (victim < 0 || c->slot[i].used < c->slot[victim].used))
			victim = i;
	return victim;
}

/*
 * The victim search is linear in CACHE_CAP, but it only runs on insertion,
 * i.e. right after reading /proc or parsing an ELF file, which costs far more.
 */
static struct cache_slot *cache_insert(struct cache *c, unsigned long long k1,
				       unsigned long long k2, void *val)
{
	struct cache_slot *sl;
	unsigned int h;
	int i, victim = 0;

	for (i = 0; i < CACHE_CAP; i++) {
		if (!c->slot[i].live) {
			victim = i;
			break;
		}
		if (c->slot[i].used < c->slot[victim].used)
			victim = i;
	}
	if (c->slot[victim].live)
		cache_drop(c, victim);
	sl = &c->slot[victim];
	h = cache_hash(k1, k2);
	sl->k1 = k1;
	sl->k2 = k2;
	sl->val = val;
	sl->used = ++c->tick;
	sl->live = true;
	sl->next = c->bucket[h];
	c->bucket[h] = victim;
	c->bytes += cache_val_size(c, val);
	/* over the byte bound: the least recently used others go */
	while (c->max_bytes && c->bytes > c->max_bytes &&
	       (i = cache_lru(c, victim)) >= 0)
		cache_drop(c, i);
	return sl;
}

static void cache_remove(struct cache *c, unsigned long long k1,
			 unsigned long long k2)
{
	struct cache_slot *sl = cache_find(c, k1, k2);

	if (sl)
		cache_drop(c, (int)(sl - c->slot));
}

static void cache_fini(struct cache *c)
{
	int i;

	for (i = 0; i < CACHE_CAP; i++)
		if (c->slot[i].live)
			c->free_val(c->slot[i].val);
}

/* ---- per-pid mappings ---- */

struct pmap {
	unsigned long long start, end, offset, inode;
	unsigned int dev_major, dev_minor;
	bool deleted;
	bool code;	/* executable ('x' in its permissions) */
	char *path;	/* NULL for anonymous mappings */
};

struct pid_maps {
	struct pmap *maps;
	size_t n, cap;
	unsigned long long read_ns;
};

struct symbolizer {
	char *proc_root;
	const struct procpin *pin;	/* what exited processes kept (not owned), or NULL */
	struct cache pids;	/* key: pid, 0 -> struct pid_maps */
	struct cache files;	/* key: dev, inode -> struct elf_symtab or NULL */
};

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL +
	       (unsigned long long)ts.tv_nsec;
}

static void pid_maps__free(void *p)
{
	struct pid_maps *pm = p;
	size_t i;

	if (pm) {
		for (i = 0; i < pm->n; i++)
			free(pm->maps[i].path);
		free(pm->maps);
		free(pm);
	}
}

static void symtab_free(void *p)
{
	elf_symtab__free(p);
}

static size_t symtab_size(const void *p)
{
	return elf_symtab__bytes(p);
}

static int pid_maps_add(const struct map_entry *e, void *ctx)
{
	struct pid_maps *pm = ctx;
	struct pmap *m, *nmaps;
	size_t ncap;
	int err = 0;

	if (pm->n == pm->cap) {
		ncap = pm->cap ? pm->cap * 2 : 64;
		nmaps = realloc(pm->maps, ncap * sizeof(*nmaps));
		if (!nmaps) {
			err = -ENOMEM;
			goto cleanup;
		}
		pm->maps = nmaps;
		pm->cap = ncap;
	}
	m = &pm->maps[pm->n];
	m->path = NULL;
	if (e->path[0]) {
		m->path = strdup(e->path);
		if (!m->path) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	m->start = e->start;
	m->end = e->end;
	m->offset = e->offset;
	m->inode = e->inode;
	m->dev_major = e->dev_major;
	m->dev_minor = e->dev_minor;
	m->deleted = e->deleted;
	m->code = e->perms[2] == 'x';
	pm->n++;
cleanup:
	return err;
}

static int pmap_cmp(const void *a, const void *b)
{
	const struct pmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int read_pid_maps(struct symbolizer *s, int pid, struct pid_maps **out, bool live)
{
	struct pid_maps *pm;
	int err;

	*out = NULL;
	pm = calloc(1, sizeof(*pm));
	if (!pm) {
		err = -ENOMEM;
		goto cleanup;
	}
	pm->read_ns = now_ns();
	/* maps kept (procpin) win, but for a miss (live: a library loaded since): a read
	 * while the process exits can miss some */
	err = !live && s->pin && procpin__taken_ns(s->pin, pid) ? -ESRCH :
								 procmaps__foreach(s->proc_root, pid, pid_maps_add, pm);
	/* gone (or a zombie): the maps kept while it lived (procpin) */
	if ((err == -ENOENT || err == -ESRCH || (!err && !pm->n)) && s->pin &&
	    procpin__taken_ns(s->pin, pid)) {
		for (size_t i = 0; i < pm->n; i++)
			free(pm->maps[i].path);
		pm->n = 0;
		err = procpin__foreach(s->pin, pid, pid_maps_add, pm);
	}
	if (err)
		goto cleanup;
	/*
	 * Every live process has mappings; none means a zombie (its mm is gone
	 * before the exit is even reported) or a kernel thread. Caching that
	 * would replace good maps with nothing just when leaks get reported.
	 */
	if (!pm->n) {
		err = -ESRCH;
		goto cleanup;
	}
	/* the kernel already sorts, but a fake root need not */
	qsort(pm->maps, pm->n, sizeof(*pm->maps), pmap_cmp);
	*out = pm;
	pm = NULL;
cleanup:
	pid_maps__free(pm);
	return err;
}

static const struct pmap *find_pmap(const struct pid_maps *pm,
				    unsigned long long addr)
{
	const struct pmap *found = NULL;
	size_t lo = 0, hi = pm->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (pm->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && addr < pm->maps[lo - 1].end)
		found = &pm->maps[lo - 1];
	return found;
}

/* ---- symbol tables ---- */

/*
 * Opens the mapped file of m: the mapping itself (map_files, which names the
 * mapped inode, also a deleted one, but needs CAP_SYS_ADMIN), else its path
 * resolved only inside the process's root. Both through safeopen: never
 * blocking, regular files only, and only the dev/inode that maps gave.
 */
static int open_mapped(const struct symbolizer *s, int pid, const struct pmap *m)
{
	struct safeopen_id id = {
		.dev_major = m->dev_major, .dev_minor = m->dev_minor, .ino = m->inode,
	};
	int fd;

	fd = safe_open_map_file(s->proc_root, pid, m->start, m->end, &id, NULL, 0);
	if (fd < 0 && !m->deleted)
		fd = safe_open_mapped(s->proc_root, pid, m->path, &id, NULL, 0);
	/* the process is gone: the descriptor kept while it lived */
	if (fd < 0 && s->pin) {
		int kept = procpin__open(s->pin, &id);

		if (kept >= 0)
			fd = kept;
	}
	return fd;
}

static const struct elf_symtab *get_symtab(struct symbolizer *s, int pid,
					   const struct pmap *m)
{
	struct elf_symtab *st = NULL;
	unsigned long long k1, k2;
	struct cache_slot *sl;
	char err[256];
	int fd = -1;

	/* pseudo maps ([vdso], [anon:x]) and inode-less files have no key */
	if (!m->path || m->path[0] != '/' || !m->inode)
		goto cleanup;
	k1 = (unsigned long long)m->dev_major << 32 | m->dev_minor;
	k2 = m->inode;
	sl = cache_find(&s->files, k1, k2);
	if (sl) {
		st = sl->val;
		goto cleanup;
	}
	/* not opened (process gone, EACCES, the path swapped): maybe next time */
	fd = open_mapped(s, pid, m);
	if (fd < 0)
		goto cleanup;
	st = elf_symtab__load_fd(fd, err, sizeof(err));
	/*
	 * Remember files that are not usable ELF (NULL entry) so they are not
	 * parsed again: that is a property of the inode, which is the key.
	 */
	if (st || errno == ENOEXEC || errno == EBADMSG || errno == EINVAL ||
	    errno == EFBIG)
		cache_insert(&s->files, k1, k2, st);
cleanup:
	if (fd >= 0)
		close(fd);
	return st;
}

/* ---- public API ---- */

struct symbolizer *symbolizer__new(const char *proc_root)
{
	struct symbolizer *s;

	s = calloc(1, sizeof(*s));
	if (!s)
		goto cleanup;
	s->proc_root = strdup(proc_root ? proc_root : "/proc");
	if (!s->proc_root) {
		free(s);
		s = NULL;
		goto cleanup;
	}
	cache_init(&s->pids, pid_maps__free, NULL, 0);
	cache_init(&s->files, symtab_free, symtab_size, FILES_MAX_BYTES);
cleanup:
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	if (s) {
		cache_fini(&s->pids);
		cache_fini(&s->files);
		free(s->proc_root);
		free(s);
	}
}

void symbolizer__set_files_budget(struct symbolizer *s, unsigned long long bytes)
{
	int i;

	if (!s)
		return;
	s->files.max_bytes = bytes;
	while (s->files.bytes > bytes && (i = cache_lru(&s->files, -1)) >= 0)
		cache_drop(&s->files, i);
}

unsigned long long symbolizer__files_bytes(const struct symbolizer *s)
{
	return s ? s->files.bytes : 0;
}

void symbolizer__set_pin(struct symbolizer *s, const struct procpin *pin)
{
	if (s)
		s->pin = pin;
}

struct procpin *symbolizer__pin(const struct symbolizer *s)
{
	return s ? (struct procpin *)s->pin : NULL;
}

void symbolizer__forget_pid(struct symbolizer *s, int pid)
{
	if (s)
		cache_remove(&s->pids, (unsigned long long)pid, 0);
}

/* malloc'ed demangled name or NULL when name is not mangled */
static char *demangle_alloc(const char *name)
{
	char *d = NULL;

	/* every scheme libiberty knows starts with '_' (_Z, _R, _D, _GLOBAL_) */
	if (name[0] != '_' || strnlen(name, DEMANGLE_MAX_IN) == DEMANGLE_MAX_IN)
		goto cleanup;
	d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
cleanup:
	return d;
}

void symbolize__demangle(const char *name, char *buf, size_t len)
{
	char *d = NULL;

	if (!buf || !len)
		goto cleanup;
	if (!name) {
		buf[0] = '\0';
		goto cleanup;
	}
	d = demangle_alloc(name);
	snprintf(buf, len, "%s", d ? d : name);
cleanup:
	free(d);
}

/*
 * The mapping of addr in pid (*m NULL: none), from the cached maps; they are read again
 * when addr is in none of them, at most every MAPS_REREAD_MIN_NS (the old ones are kept
 * when the process is gone by now). 0 or -errno when pid's maps cannot be read at all.
 */
static int pmap_of(struct symbolizer *s, int pid, unsigned long long addr,
		   const struct pmap **m)
{
	struct cache_slot *sl = cache_find(&s->pids, (unsigned long long)pid, 0);
	struct pid_maps *pm, *fresh;
	bool pinned;
	int err;

	if (sl) {
		pm = sl->val;
	} else {
		err = read_pid_maps(s, pid, &pm, false);
		if (err)
			return err;
		sl = cache_insert(&s->pids, (unsigned long long)pid, 0, pm);
	}
	*m = find_pmap(pm, addr);
	/*
	 * A miss: the kept maps (procpin) when they cover addr (taken again since these were
	 * read), at once; else /proc, at most every MAPS_REREAD_MIN_NS.
	 */
	pinned = !*m && s->pin && procpin__covers(s->pin, pid, addr);
	if (!*m && (pinned || now_ns() - pm->read_ns >= MAPS_REREAD_MIN_NS)) {
		if (read_pid_maps(s, pid, &fresh, !pinned) == 0) {
			pid_maps__free(pm);
			pm = fresh;
			sl->val = pm;
		} else {
			pm->read_ns = now_ns();
		}
		*m = find_pmap(pm, addr);
	}
	return 0;
}

/* The symbol covering addr in file-backed mapping m, its offset in *off; or NULL. */
static const char *symbol_of(struct symbolizer *s, int pid, const struct pmap *m,
			     unsigned long long addr, unsigned long long *off)
{
	const struct elf_symtab *st = get_symtab(s, pid, m);
	long long vaddr;

	if (!st)
		return NULL;
	if (elf_symtab__is_exec(st))
		return elf_symtab__lookup(st, addr, off);
	/* map offset -> file offset -> link-time address */
	vaddr = elf_symtab__offset_to_vaddr(st, addr - m->start + m->offset);
	return vaddr >= 0 ? elf_symtab__lookup(st, (unsigned long long)vaddr, off) : NULL;
}

int symbolizer__in_code(struct symbolizer *s, int pid, unsigned long long addr)
{
	const struct pmap *m = NULL;
	int err;

	if (!s || pid <= 0)
		return -EINVAL;
	err = pmap_of(s, pid, addr, &m);
	if (err)
		return err;
	return m && m->code;
}

int symbolizer__format(struct symbolizer *s, int pid, unsigned long long addr,
		       char *buf, size_t len)
{
	const struct pmap *m = NULL;
	unsigned long long off = 0;
	const char *name, *base;
	char *dem = NULL;
	int err = 0;

	if (!s || !buf || !len || pid <= 0) {
		err = -EINVAL;
		goto cleanup;
	}
	err = pmap_of(s, pid, addr, &m);
	if (err)
		goto cleanup;
	if (!m || !m->path) {
		snprintf(buf, len, "0x%llx", addr);
		err = 1;
		goto cleanup;
	}
	name = symbol_of(s, pid, m, addr, &off);
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	if (name) {
		dem = demangle_alloc(name);
		snprintf(buf, len, "%s+0x%llx (%s)", dem ? dem : name, off,
			 base);
	} else {
		snprintf(buf, len, "0x%llx (%s)", addr, base);
		err = 1;
	}
cleanup:
	/* callers print buf unconditionally: give them the bare address */
	if (err < 0 && buf && len)
		snprintf(buf, len, "0x%llx", addr);
	free(dem);
	return err;
}
