/* SPDX-License-Identifier: BSD-3-Clause */
/* procpin: see procpin.h. */
#define _GNU_SOURCE
#include "lib/procpin.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lib/u64map.h"

struct kmap {
	unsigned long long start, end, offset, inode;
	unsigned int dev_major, dev_minor;
	char perms[5];
	bool deleted;
	char *path;
};

struct kfile {
	struct safeopen_id id;
	int fd;		/* -1: a free slot */
	unsigned int refs;
};

struct kproc {
	struct kmap *maps;
	size_t n;
	unsigned int *files;	/* slots in pp->files this process holds a reference on */
	unsigned int nfiles;
	unsigned int unkept, failed;	/* of the files mapped at the last take: not kept; of
					 * which not openable */
	uint64_t taken_ns, gone_ns;
	struct safeopen_id root;	/* its root directory's identity (root_known) */
	bool root_known;
};

struct procpin {
	char *proc_root;
	struct u64map *procs;	/* pid -> struct kproc */
	struct kfile *files;
	unsigned int pid_files, max_files, open;
	struct procpin_stats st;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What the rest of gpuprobe keeps open at most (BPF objects, links, the unwinder's 256
 * files, outputs), left to it out of RLIMIT_NOFILE. */
#define FDS_RESERVED 1024u

/*
 * The kept descriptors count against RLIMIT_NOFILE, whose soft limit is often 1024:
 * raised to what they and the rest of gpuprobe need, where the hard limit allows; the
 * descriptors kept in all are what is left after FDS_RESERVED (at least 64).
 */
static unsigned int room_for_fds(unsigned int want)
{
	struct rlimit rl;
	unsigned long long cur;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 64;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < FDS_RESERVED + want) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > FDS_RESERVED + want ? FDS_RESERVED + want :
													rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	cur = rl.rlim_cur == RLIM_INFINITY ? FDS_RESERVED + want : rl.rlim_cur;
	if (cur < FDS_RESERVED + 64)
		return 64;
	return cur - FDS_RESERVED < want ? (unsigned int)(cur - FDS_RESERVED) : want;
}

struct procpin *procpin__new(const char *proc_root)
{
	struct procpin *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	pp->proc_root = strdup(proc_root ? proc_root : "/proc");
	pp->procs = u64map__new();
	pp->files = calloc(PROCPIN_MAX_FILES, sizeof(*pp->files));
	if (!pp->proc_root || !pp->procs || !pp->files) {
		procpin__free(pp);
		return NULL;
	}
	for (unsigned int i = 0; i < PROCPIN_MAX_FILES; i++)
		pp->files[i].fd = -1;
	pp->pid_files = PROCPIN_PID_FILES;
	pp->max_files = room_for_fds(PROCPIN_MAX_FILES);
	return pp;
}

static void kproc_free_maps(struct kproc *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->maps[i].path);
	free(k->maps);
	k->maps = NULL;
	k->n = 0;
}

static void unref(struct procpin *pp, unsigned int slot)
{
	struct kfile *f = &pp->files[slot];

	if (f->fd < 0 || --f->refs)
		return;
	close(f->fd);
	f->fd = -1;
	pp->open--;
}

void procpin__release(struct procpin *pp, int pid)
{
	struct kproc *k = pp ? u64map__del(pp->procs, (uint64_t)pid) : NULL;

	if (!k)
		return;
	for (unsigned int i = 0; i < k->nfiles; i++)
		unref(pp, k->files[i]);
	free(k->files);
	kproc_free_maps(k);
	free(k);
}

void procpin__free(struct procpin *pp)
{
	uint64_t pid;
	void *v;

	if (!pp)
		return;
	while (pp->procs && u64map__size(pp->procs)) {
		size_t it = 0;

		if (!u64map__next(pp->procs, &it, &pid, &v))
			break;
		procpin__release(pp, (int)pid);
	}
	u64map__free(pp->procs);
	for (unsigned int i = 0; pp->files && i < PROCPIN_MAX_FILES; i++)
		if (pp->files[i].fd >= 0)
			close(pp->files[i].fd);
	free(pp->files);
	free(pp->proc_root);
	free(pp);
}

void procpin__set_limits(struct procpin *pp, unsigned int pid_files, unsigned int max_files)
{
	if (!pp)
		return;
	if (pid_files)
		pp->pid_files = pid_files < PROCPIN_PID_FILES ? pid_files : PROCPIN_PID_FILES;
	if (max_files)
		pp->max_files = max_files < PROCPIN_MAX_FILES ? max_files : PROCPIN_MAX_FILES;
}

void procpin__limits(const struct procpin *pp, unsigned int *pid_files, unsigned int *max_files)
{
	*pid_files = pp ? pp->pid_files : 0;
	*max_files = pp ? pp->max_files : 0;
}

static bool same_id(const struct safeopen_id *a, const struct safeopen_id *b)
{
	return a->dev_major == b->dev_major && a->dev_minor == b->dev_minor && a->ino == b->ino;
}

/* The slot of a kept file, -1 if it is not kept. */
static int find_file(const struct procpin *pp, const struct safeopen_id *id)
{
	for (unsigned int i = 0; i < PROCPIN_MAX_FILES; i++)
		if (pp->files[i].fd >= 0 && same_id(&pp->files[i].id, id))
			return (int)i;
	return -1;
}

static bool holds(const struct kproc *k, unsigned int slot)
{
	for (unsigned int i = 0; i < k->nfiles; i++)
		if (k->files[i] == slot)
			return true;
	return false;
}

/* Keeps the file of mapping m for process k (a reference, or a new descriptor). */
static void keep_file(struct procpin *pp, int pid, struct kproc *k, const struct kmap *m)
{
	struct safeopen_id id = { .dev_major = m->dev_major, .dev_minor = m->dev_minor, .ino = m->inode };
	int slot = find_file(pp, &id), fd;

	if (slot >= 0 && holds(k, (unsigned int)slot))
		return;
	if (k->nfiles >= pp->pid_files || (slot < 0 && pp->open >= pp->max_files)) {
		k->unkept++;
		return;
	}
	if (slot < 0) {
		for (slot = 0; slot < PROCPIN_MAX_FILES && pp->files[slot].fd >= 0; slot++)
			;
		/* the mapping itself first (also a deleted file), then its path in the root */
		fd = safe_open_map_file(pp->proc_root, pid, m->start, m->end, &id, NULL, 0);
		if (fd < 0 && !m->deleted)
			fd = safe_open_mapped(pp->proc_root, pid, m->path, &id, NULL, 0);
		if (fd < 0 || slot >= PROCPIN_MAX_FILES) {
			if (fd >= 0)
				close(fd);
			k->unkept++;
			k->failed++;
			return;
		}
		pp->files[slot] = (struct kfile){ .id = id, .fd = fd };
		pp->open++;
		pp->st.files_open++;
	}
	pp->files[slot].refs++;
	k->files[k->nfiles++] = (unsigned int)slot;
	pp->st.files_kept++;
}

struct take_ctx {
	struct kmap *maps;
	size_t n, cap;
	int err;
};

static int add_map(const struct map_entry *e, void *arg)
{
	struct take_ctx *c = arg;
	struct kmap *grown;

	/* files only: frames are named from files, the rest prints as an address anyway */
	if (e->path[0] != '/' || !e->inode || c->n >= PROCPIN_MAX_MAPS)
		return 0;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		grown = realloc(c->maps, c->cap * sizeof(*grown));
		if (!grown) {
			c->err = -ENOMEM;
			return 1;
		}
		c->maps = grown;
	}
	c->maps[c->n] = (struct kmap){ .start = e->start, .end = e->end, .offset = e->offset, .inode = e->inode,
				       .dev_major = e->dev_major, .dev_minor = e->dev_minor, .deleted = e->deleted,
				       .path = strdup(e->path) };
	memcpy(c->maps[c->n].perms, e->perms, sizeof(e->perms));
	if (!c->maps[c->n].path) {
		c->err = -ENOMEM;
		return 1;
	}
	c->n++;
	return 0;
}

static int kmap_cmp(const void *a, const void *b)
{
	const struct kmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The mappings kept before that the new read (c, sorted) has nothing over join it: a
 * read of maps while the process exits (or changes its mappings) can miss some, and a
 * library unmapped since may still be in records of its time. Where the new read has a
 * mapping, it wins. Sorted again after.
 */
static int keep_old(struct kproc *k, struct take_ctx *c)
{
	size_t n_new = c->n, j = 0;

	for (size_t i = 0; i < k->n; i++) {
		const struct kmap *o = &k->maps[i];
		struct kmap *grown;

		/* the first new mapping that ends after o starts: o overlaps it, or none */
		while (j < n_new && c->maps[j].end <= o->start)
			j++;
		if ((j < n_new && c->maps[j].start < o->end) || c->n >= PROCPIN_MAX_MAPS)
			continue;
		if (c->n == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 64;
			grown = realloc(c->maps, c->cap * sizeof(*grown));
			if (!grown)
				return -ENOMEM;
			c->maps = grown;
		}
		c->maps[c->n] = *o;
		c->maps[c->n].path = strdup(o->path);
		if (!c->maps[c->n].path)
			return -ENOMEM;
		c->n++;
	}
	if (c->n > n_new)
		qsort(c->maps, c->n, sizeof(*c->maps), kmap_cmp);
	return 0;
}

/* Whether an executable mapping before maps[i] is of the same file. */
static bool seen_before(const struct kproc *k, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (k->maps[j].perms[2] == 'x' && k->maps[j].inode == k->maps[i].inode &&
		    k->maps[j].dev_major == k->maps[i].dev_major && k->maps[j].dev_minor == k->maps[i].dev_minor)
			return true;
	return false;
}

int procpin__take(struct procpin *pp, int pid, unsigned long long hint)
{
	struct take_ctx c = { 0 };
	unsigned int unkept, failed;
	struct kproc *k;
	int err;

	if (!pp || pid <= 0)
		return -EINVAL;
	pp->st.takes++;
	k = u64map__get(pp->procs, (uint64_t)pid);
	if (!k && u64map__size(pp->procs) >= PROCPIN_MAX_PIDS) {
		pp->st.procs_unkept++;
		return -ENOSPC;
	}
	err = procmaps__foreach(pp->proc_root, pid, add_map, &c);
	if (!err)
		err = c.err;
	/* no mappings: a zombie, its mm already gone */
	if (!err && !c.n)
		err = -ESRCH;
	if (err) {
		if (err == -ENOENT)
			err = -ESRCH;
		if (k && err == -ESRCH && !k->gone_ns)
			k->gone_ns = mono_ns();
		goto cleanup;
	}
	if (!k) {
		k = calloc(1, sizeof(*k));
		if (k && !(k->files = calloc(PROCPIN_PID_FILES, sizeof(*k->files)))) {
			free(k);
			k = NULL;
		}
		if (!k || u64map__put(pp->procs, (uint64_t)pid, k)) {
			if (k)
				free(k->files);
			free(k);
			err = -ENOMEM;
			goto cleanup;
		}
		pp->st.procs_kept++;
	}
	qsort(c.maps, c.n, sizeof(*c.maps), kmap_cmp);
	err = keep_old(k, &c);
	if (err)
		goto cleanup;
	kproc_free_maps(k);
	k->maps = c.maps;
	k->n = c.n;
	c.maps = NULL;
	c.n = 0;
	k->taken_ns = mono_ns();
	k->gone_ns = 0;
	/* read after its maps: a root read while it lives is the one they were mapped in */
	if (!safe_proc_root_id(pp->proc_root, pid, &k->root))
		k->root_known = true;
	/* what is not kept is counted again at each take: the files mapped now */
	unkept = k->unkept;
	failed = k->failed;
	k->unkept = k->failed = 0;
	/*
	 * A process may be exiting while its files are opened (hundreds take tens of
	 * milliseconds): the file of hint (the pc of the stack at hand) first, the program's
	 * own (the lowest mapping), then from the top of the address space down, where the
	 * libraries loaded at start-up sit, above those dlopen'ed later.
	 */
	for (size_t i = 0; i < k->n; i++)
		if (hint >= k->maps[i].start && hint < k->maps[i].end && k->maps[i].perms[2] == 'x')
			keep_file(pp, pid, k, &k->maps[i]);
	for (size_t r = 0; r < k->n; r++) {
		size_t i = r ? k->n - r : 0;

		if (k->maps[i].perms[2] == 'x' && !seen_before(k, i))
			keep_file(pp, pid, k, &k->maps[i]);
	}
	if (k->unkept - k->failed > unkept - failed)
		pp->st.files_unkept += (k->unkept - k->failed) - (unkept - failed);
	if (k->failed > failed)
		pp->st.files_failed += k->failed - failed;
cleanup:
	for (size_t i = 0; i < c.n; i++)
		free(c.maps[i].path);
	free(c.maps);
	return err;
}

uint64_t procpin__taken_ns(const struct procpin *pp, int pid)
{
	const struct kproc *k = pp ? u64map__get(pp->procs, (uint64_t)pid) : NULL;

	return k ? k->taken_ns : 0;
}

int procpin__root(const struct procpin *pp, int pid, struct safeopen_id *id)
{
	const struct kproc *k = pp ? u64map__get(pp->procs, (uint64_t)pid) : NULL;

	if (!k || !k->root_known)
		return -ENOENT;
	*id = k->root;
	return 0;
}

bool procpin__gone(const struct procpin *pp, int pid)
{
	const struct kproc *k = pp ? u64map__get(pp->procs, (uint64_t)pid) : NULL;

	return k && k->gone_ns;
}

/* Called for every pc of every stack: a binary search (maps lists mappings in address
 * order; procpin__take sorts what a fake tree may not). */
bool procpin__covers(const struct procpin *pp, int pid, unsigned long long addr)
{
	const struct kproc *k = pp ? u64map__get(pp->procs, (uint64_t)pid) : NULL;
	size_t lo = 0, hi = k ? k->n : 0, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (k->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && addr < k->maps[lo - 1].end && k->maps[lo - 1].perms[2] == 'x';
}

int procpin__foreach(const struct procpin *pp, int pid,
		     int (*cb)(const struct map_entry *e, void *ctx), void *ctx)
{
	const struct kproc *k = pp ? u64map__get(pp->procs, (uint64_t)pid) : NULL;
	struct map_entry *e;
	int r = 0;

	if (!k || !k->n)
		return -ENOENT;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < k->n && !r; i++) {
		const struct kmap *m = &k->maps[i];

		e->start = m->start;
		e->end = m->end;
		e->offset = m->offset;
		e->inode = m->inode;
		e->dev_major = m->dev_major;
		e->dev_minor = m->dev_minor;
		e->deleted = m->deleted;
		memcpy(e->perms, m->perms, sizeof(e->perms));
		snprintf(e->path, sizeof(e->path), "%s", m->path);
		r = cb(e, ctx);
	}
	free(e);
	return r;
}

int procpin__open(const struct procpin *pp, const struct safeopen_id *id)
{
	int slot = pp && id ? find_file(pp, id) : -1, fd;

	if (slot < 0)
		return -ENOENT;
	fd = fcntl(pp->files[slot].fd, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

unsigned int procpin__unkept(const struct procpin *pp, int pid)
{
	const struct kproc *k = pp ? u64map__get(pp->procs, (uint64_t)pid) : NULL;

	return k ? k->unkept : 0;
}

size_t procpin__dead(const struct procpin *pp, uint64_t now_ns, uint64_t age_ns, int *pids, size_t max)
{
	size_t n = 0;
	uint64_t pid;
	void *v;

	for (size_t it = 0; pp && n < max && u64map__next(pp->procs, &it, &pid, &v);) {
		const struct kproc *k = v;

		if ((k->gone_ns && now_ns - k->gone_ns >= age_ns) ||
		    (now_ns - k->taken_ns >= age_ns && kill((pid_t)pid, 0) && errno == ESRCH))
			pids[n++] = (int)pid;
	}
	return n;
}

void procpin__stats(const struct procpin *pp, struct procpin_stats *st)
{
	if (pp && st)
		*st = pp->st;
}
