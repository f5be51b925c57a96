/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/attach.h"
#include "lib/elfsym.h"
#include "core/events.h"
#include "lib/libslots.h"
#include "core/libwatch.h"
#include "libwatch.skel.h"
#include "core/objshare.h"
#include "lib/procmaps.h"
#include "lib/safeopen.h"
#include "lib/target.h"
#include "lib/u64map.h"
#include "lib/util.h"

#define KIND_LDSO GP_LIB__COUNT /* the dynamic linker: gets the hook, not a mode's probes */
#define SCANS_PER_SECOND 200    /* maps reads the hook and execs may cause, all processes */
#define DEFERRED_MAX 1024
#define RESCAN_NS 1000000000ULL /* followed processes' maps, for those the hook misses */
#define RESCAN_PER_TICK 64
#define SEEN_MAX 65536          /* mappings looked at already (dev, inode) */
#define CANDIDATES 32           /* files of interest in one process's maps */
#define SWEEP_NS 5000000000ULL  /* the maps of every process, while users' files hold slots */

struct libid {
	dev_t dev;
	ino_t ino;
	int kind;
};

struct libwatch {
	struct libwatch_ops ops;
	struct libwatch_opts o;  /* after libwatch__open; o.share points to share */
	struct objshare share;
	struct attach_set *links; /* o.links until the probes are gone (libwatch__detach) */
	struct libwatch_bpf *skel;
	bool multi;              /* uprobe_multi links (else perf-event uprobes) */
	unsigned int kinds;      /* enum gp_need: the kinds watched */
	struct libid *ids;
	size_t nr_ids, cap_ids;
	struct u64map *seen;     /* maps identities looked at: not reopened */
	uint32_t deferred[DEFERRED_MAX];
	size_t nr_deferred;
	uint64_t budget_start_ns;
	unsigned int budget_used;
	uint64_t next_rescan_ns;
	uint64_t next_sweep_ns;
	uint32_t rescan_cursor;  /* the last tgid rescanned (traced map order) */
	bool holding;            /* the scan's process is stopped until it is probed */
	bool cursor_valid;
	struct u64map *owners;   /* uid + 1 -> libcuda files of that owner probed (not root's) */
	struct libwatch_stats st;
};

static const char *const kind_name[] = { "libcuda", "libnccl", "dynamic linker" };

struct libwatch *libwatch__new(const struct libwatch_ops *ops)
{
	struct libwatch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->ops = *ops;
	w->seen = u64map__new();
	w->owners = u64map__new();
	if (!w->seen || !w->owners) {
		u64map__free(w->seen);
		u64map__free(w->owners);
		free(w);
		return NULL;
	}
	return w;
}

/* Processes the hook stopped whose record was never read (the run ended first): let go. */
static void continue_held(struct libwatch *w)
{
	uint32_t key, next;
	int fd = w->skel && w->skel->maps.held ? bpf_map__fd(w->skel->maps.held) : -1;
	int n = 0, saved = errno; /* the walk ends in ENOENT: a caller's errno stays its own */

	if (fd < 0)
		return;
	while (!bpf_map_get_next_key(fd, n ? &key : NULL, &next) && n < 1024) {
		kill((pid_t)next, SIGCONT);
		key = next;
		n++;
	}
	if (n)
		gp_log(GP_LOG_DEBUG, "continued %d processes held at a dlopen of libcuda when the run ended", n);
	errno = saved;
}

void libwatch__free(struct libwatch *w)
{
	if (!w)
		return;
	if (w->skel && w->skel->bss && w->kinds)
		gp_log(GP_LOG_DEBUG, "library watcher: %u linkers hooked, %llu hook calls (%llu while the link map changed, %llu lost), %llu scans (%llu put off), %llu rescans, %llu processes held for a new libcuda",
		       w->st.hooked, (unsigned long long)w->skel->bss->hook_hits,
		       (unsigned long long)w->skel->bss->hook_skipped, (unsigned long long)w->skel->bss->hook_lost,
		       w->st.scans, w->st.deferred, w->st.rescans, w->st.held);
	continue_held(w);
	if (w->st.refused)
		gp_log(GP_LOG_WARN, "%llu libcuda files loaded later were not probed: their owners held their share of library slots",
		       w->st.refused);
	libwatch_bpf__destroy(w->skel);
	u64map__free(w->seen);
	u64map__free_all(w->owners, free);
	free(w->ids);
	free(w);
}

int libwatch__open(struct libwatch *w, const struct libwatch_opts *o, char *err, size_t len)
{
	const char *no_hold = getenv("GPUPROBE_NO_HOLD");
	int r;

	w->o = *o;
	w->share = *o->share;
	w->o.share = &w->share;
	w->links = o->links;
	w->skel = libwatch_bpf__open();
	if (!w->skel) {
		snprintf(err, len, "cannot open the library watcher's BPF object");
		return -ENOMEM;
	}
	w->multi = attach__has_uprobe_multi();
	/* a command gpuprobe started: held at a dlopen of a libcuda until it is probed */
	w->skel->rodata->hold_libcuda = o->hold_libcuda && !(no_hold && *no_hold);
	r = attach__prepare_prog(w->skel->progs.dl_brk, w->multi);
	if (!r)
		r = objshare__adopt(&w->share, w->skel->maps.traced, w->skel->maps.gp_ended,
				    w->skel->maps.gp_exits, (bool *)&w->skel->rodata->gp_filter);
	if (!r)
		r = bpf_map__reuse_fd(w->skel->maps.events, w->share.ring_fd);
	if (r) {
		snprintf(err, len, "cannot share the library watcher's maps: %s", strerror(-r));
		return r;
	}
	r = libwatch_bpf__load(w->skel);
	if (r)
		attach__load_error(r, err, len);
	return r;
}

void libwatch__detach(struct libwatch *w)
{
	if (w)
		w->links = NULL;
}

static bool have_id(const struct libwatch *w, int kind, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < w->nr_ids; i++)
		if (w->ids[i].kind == kind && w->ids[i].dev == dev && w->ids[i].ino == ino)
			return true;
	return false;
}

static int add_id(struct libwatch *w, int kind, dev_t dev, ino_t ino)
{
	if (have_id(w, kind, dev, ino))
		return 0;
	if (w->nr_ids == w->cap_ids) {
		size_t cap = w->cap_ids ? 2 * w->cap_ids : 16;
		struct libid *n = realloc(w->ids, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->ids = n;
		w->cap_ids = cap;
	}
	w->ids[w->nr_ids++] = (struct libid){ dev, ino, kind };
	return 1;
}

int libwatch__claim(struct libwatch *w, enum gp_lib kind, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	return add_id(w, (int)kind, st.st_dev, st.st_ino);
}

void libwatch__unclaim(struct libwatch *w, enum gp_lib kind, dev_t dev, ino_t ino)
{
	for (size_t i = 0; w && i < w->nr_ids; i++)
		if (w->ids[i].kind == (int)kind && w->ids[i].dev == dev && w->ids[i].ino == ino) {
			w->ids[i] = w->ids[--w->nr_ids];
			return;
		}
}

int libwatch__check(enum gp_lib kind, const char *path, char *err, size_t len)
{
	char why[256];
	int r;

	if (kind == GP_LIB_CUDA)
		return target__check_libcuda(path, err, len);
	r = elfsym__check(path, why, sizeof(why));
	if (r < 0) {
		snprintf(err, len, "%s: %s", path, why);
		return r;
	}
	if (elfsym__has_func(path, "ncclAllReduce") > 0 || elfsym__has_func(path, "pncclAllReduce") > 0)
		return 0;
	snprintf(err, len, "%s: not an NCCL library (it exports neither ncclAllReduce nor pncclAllReduce)", path);
	return -ENOEXEC;
}

void libwatch__stats(const struct libwatch *w, struct libwatch_stats *st)
{
	*st = w->st;
	if (w->skel && w->skel->bss)
		st->hook_reports = __atomic_load_n(&w->skel->bss->hook_hits, __ATOMIC_RELAXED);
}

/* ---- the dynamic linker's hook ---- */

/* st_value of the defined symbol name in fd's .dynsym; 0 when absent. */
static unsigned long long dynsym_value(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		n = d ? d->d_size / sizeof(Elf64_Sym) : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			const char *sn;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
				continue;
			sn = elf_strptr(elf, sh.sh_link, s.st_name);
			if (sn && !strcmp(sn, name))
				return s.st_value;
		}
	}
	return 0;
}

/* _r_debug - _dl_debug_state in the linker's image: the BPF side reads r_state there. */
static long long r_debug_delta(int fd)
{
	char why[128];
	Elf *elf = safe_elf_begin(fd, why, sizeof(why));
	unsigned long long brk, rd;

	if (!elf)
		return 0;
	brk = dynsym_value(elf, "_dl_debug_state");
	rd = dynsym_value(elf, "_r_debug");
	elf_end(elf);
	return brk && rd ? (long long)(rd - brk) : 0;
}

/* The hook on one dynamic linker file (path: /proc/self/fd/N of fd). */
static int hook_ldso(struct libwatch *w, int fd, const char *path, const char *shown)
{
	static const char *const name[] = { "_dl_debug_state" };
	long long off;
	__u64 cookie;
	char err[512];
	int r;

	/* tests: the rescans alone, as where no linker can be hooked (static programs) */
	if (getenv("GPUPROBE_TEST_NO_DLHOOK"))
		return -ENOENT;
	r = attach__resolve(path, name, 1, &off, err, sizeof(err));
	if (r <= 0) {
		gp_log(GP_LOG_DEBUG, "%s: no _dl_debug_state: no hook (rescans only)", shown);
		return r < 0 ? r : -ENOENT;
	}
	cookie = (__u64)r_debug_delta(fd);
	r = attach_set__uprobes(w->links, w->skel->progs.dl_brk, path, &off, &cookie, 1, w->o.target_pid,
				false, w->multi);
	if (r) {
		gp_log(GP_LOG_WARN, "cannot hook the dynamic linker %s: %s (rescans only)", shown, strerror(-r));
		return r;
	}
	w->st.hooked++;
	gp_log(GP_LOG_DEBUG, "hooked the dynamic linker %s (r_debug %s)", shown, cookie ? "read" : "not found");
	return 0;
}

/* ---- files found in a process's maps ---- */

struct cand {
	int kind;
	struct map_entry m;
};

struct scan_ctx {
	struct libwatch *w;
	struct cand c[CANDIDATES];
	int n;
};

static int kind_of(const struct libwatch *w, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if ((w->kinds & GP_NEED_LIBNCCL) && !strncmp(base, "libnccl.so", 10))
		return GP_LIB_NCCL;
	if ((w->kinds & GP_NEED_LIBCUDA) && !strncmp(base, "libcuda.so", 10))
		return GP_LIB_CUDA;
	if (!strncmp(base, "ld-linux", 8) || !strncmp(base, "ld-musl", 7))
		return KIND_LDSO;
	return -1;
}

static uint64_t seen_key(int kind, const struct map_entry *m)
{
	return ((uint64_t)m->dev_major << 52) ^ ((uint64_t)m->dev_minor << 40) ^ m->inode ^ ((uint64_t)kind << 62);
}

static int collect(const struct map_entry *m, void *ctx)
{
	struct scan_ctx *s = ctx;
	int kind;

	if (!m->inode || m->path[0] != '/' || s->n == CANDIDATES)
		return 0;
	kind = kind_of(s->w, m->path);
	if (kind < 0 || u64map__get(s->w->seen, seen_key(kind, m)))
		return 0;
	for (int i = 0; i < s->n; i++) /* a file maps several segments */
		if (s->c[i].kind == kind && s->c[i].m.inode == m->inode && s->c[i].m.dev_major == m->dev_major &&
		    s->c[i].m.dev_minor == m->dev_minor)
			return 0;
	s->c[s->n++] = (struct cand){ kind, *m };
	return 0;
}

/* The mapped file itself: inside the process's root with the mapped identity, else through
 * map_files (a deleted file, an overlay's lower layer). */
static int open_mapped(uint32_t pid, const struct map_entry *m)
{
	struct safeopen_id id = { m->dev_major, m->dev_minor, m->inode };
	char why[256];
	int fd = safe_open_mapped(NULL, (int)pid, m->path, &id, why, sizeof(why));

	if (fd < 0)
		fd = safe_open_map_file(NULL, (int)pid, m->start, m->end, &id, why, sizeof(why));
	if (fd < 0)
		gp_log(GP_LOG_DEBUG, "PID %u: cannot open %s: %s", pid, m->path, why);
	return fd;
}

static bool trusted(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* A place of the owner's share free again: a file of its not probed after all, or its slot freed. */
static void give_back(struct libwatch *w, uid_t owner, bool is_trusted)
{
	uintptr_t *n = is_trusted ? NULL : u64map__get(w->owners, (uint64_t)owner + 1);

	if (n && *n)
		*n = (*n > GP_SLOTS_PER_OWNER ? GP_SLOTS_PER_OWNER : *n) - 1;
}

/*
 * A libcuda file root does not own (or that others may write) is probed only while its
 * owner has fewer than GP_SLOTS_PER_OWNER probed (one user's copies must not make
 * the run attach without end); what is refused is counted, the first refusal of an owner
 * logged. Root's files, and libnccl (users' environments carry their own), are not limited.
 */
static bool fair_share(struct libwatch *w, int kind, int fd, const char *shown)
{
	struct stat st;
	uintptr_t *n;

	if (kind != GP_LIB_CUDA || fstat(fd, &st) || trusted(&st))
		return true;
	n = u64map__get_new(w->owners, (uint64_t)st.st_uid + 1, sizeof(*n));
	if (!n)
		return true;
	if (*n < GP_SLOTS_PER_OWNER) {
		(*n)++;
		return true;
	}
	w->st.refused++;
	if (*n == GP_SLOTS_PER_OWNER) /* the first refusal of this owner */
		gp_log(GP_LOG_WARN, "not probing %s (owner uid %u) nor further libcuda files of that owner: it holds its share of %d library slots (counted)",
		       shown, (unsigned)st.st_uid, GP_SLOTS_PER_OWNER);
	*n = GP_SLOTS_PER_OWNER + 1;
	return false;
}

static void probe_file(struct libwatch *w, uint32_t pid, const struct cand *c, int fd, const char *path,
		       uint64_t since_ns)
{
	char err[1024], shown[PROCMAPS_PATH_MAX + 64], late[64] = "";
	int before = attach_set__count(w->links), r;
	struct libslot *slot = NULL;
	struct stat st;

	snprintf(shown, sizeof(shown), "%s of PID %u", c->m.path, pid);
	if (c->kind == KIND_LDSO) {
		hook_ldso(w, fd, path, shown);
		return;
	}
	if (libwatch__check((enum gp_lib)c->kind, path, err, sizeof(err))) {
		gp_log(GP_LOG_WARN, "not probing %s: %s", shown, strchr(err, ':') ? strchr(err, ':') + 2 : err);
		return;
	}
	if (!fair_share(w, c->kind, fd, shown))
		return;
	/* a libcuda file's probes under a tag of its own: they go, and its slot is freed, when
	 * no process maps it any more (libslots.h, sweep) */
	if (c->kind == GP_LIB_CUDA && !fstat(fd, &st) && !libslots__find(w->o.slots, st.st_dev, st.st_ino))
		slot = libslots__add(w->o.slots, st.st_dev, st.st_ino, st.st_uid, trusted(&st), false, true);
	attach_set__tag(w->links, slot ? slot->tag : 0);
	r = w->ops.attach_lib(w->ops.ctx, (enum gp_lib)c->kind, path, err, sizeof(err));
	attach_set__tag(w->links, 0);
	if (r || attach_set__count(w->links) == before) {
		/* not probed (or claimed already: probed under another path): no slot of its own */
		if (slot) {
			give_back(w, slot->owner, slot->trusted);
			libslots__remove(w->o.slots, st.st_dev, st.st_ino);
		}
		if (r)
			gp_log(GP_LOG_ERR, "%s: %s", shown, err);
		return;
	}
	w->st.files[c->kind]++;
	/* the process ran on between mapping it and now: its calls in between went unseen */
	if (c->kind == GP_LIB_CUDA && !w->holding)
		w->ops.unseen(w->ops.ctx, pid, since_ns, gp_mono_ns());
	if (since_ns)
		snprintf(late, sizeof(late), ", %.1f ms after the linker reported it", (gp_mono_ns() - since_ns) / 1e6);
	gp_log(GP_LOG_INFO, "probing %s %s (device %u:%u inode %llu): %d probes%s", kind_name[c->kind], shown,
	       c->m.dev_major, c->m.dev_minor, c->m.inode, attach_set__count(w->links) - before, late);
}

/* Reads pid's maps and probes the files of the kinds watched it maps and nobody probed. */
static void scan(struct libwatch *w, uint32_t pid, uint64_t since_ns)
{
	struct scan_ctx s = { .w = w };
	char path[64];

	/* the probes are gone (the run's end drains the ring buffers after gp_run__detach):
	 * a linker report still in them has nothing to attach to */
	if (!w->links)
		return;
	w->st.scans++;
	if (procmaps__foreach(NULL, (int)pid, collect, &s))
		return;
	for (int i = 0; i < s.n; i++) {
		int fd = open_mapped(pid, &s.c[i].m);
		struct stat st;

		if (fd < 0)
			continue; /* gone already: another process mapping it will be read */
		/* looked at: not reopened for every process that maps it */
		if (u64map__size(w->seen) < SEEN_MAX)
			u64map__put(w->seen, seen_key(s.c[i].kind, &s.c[i].m), (void *)1);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		/* a file probed already under another path or identity: nothing to read */
		if (!fstat(fd, &st) && !have_id(w, s.c[i].kind, st.st_dev, st.st_ino) &&
		    (s.c[i].kind != KIND_LDSO || add_id(w, KIND_LDSO, st.st_dev, st.st_ino) == 1))
			probe_file(w, pid, &s.c[i], fd, path, since_ns);
		close(fd);
	}
}

/* At most SCANS_PER_SECOND scans a second; the others wait for a tick. */
static bool budget(struct libwatch *w)
{
	uint64_t now = gp_mono_ns();

	if (now - w->budget_start_ns >= 1000000000ULL) {
		w->budget_start_ns = now;
		w->budget_used = 0;
	}
	return w->budget_used++ < SCANS_PER_SECOND;
}

static void defer(struct libwatch *w, uint32_t pid)
{
	for (size_t i = 0; i < w->nr_deferred; i++)
		if (w->deferred[i] == pid)
			return;
	if (w->nr_deferred < DEFERRED_MAX)
		w->deferred[w->nr_deferred++] = pid;
	w->st.deferred++;
}

static void scan_soon(struct libwatch *w, uint32_t pid, uint64_t since_ns)
{
	if (budget(w))
		scan(w, pid, since_ns);
	else
		defer(w, pid);
}

/* One -p PID alone is followed by the uprobes' own PID filter, not a followed set: the exec
 * records of every process on the node reach here (the tracepoint is not filtered then).
 * Those processes are not traced: their libraries are none of this run's business. */
static bool wanted(const struct libwatch *w, uint32_t pid)
{
	return w->o.target_pid <= 0 || pid == (uint32_t)w->o.target_pid;
}

static void on_dlopen(void *ctx, const struct gp_dlopen_event *e)
{
	struct libwatch *w = ctx;
	uint64_t t0 = gp_mono_ns();

	if (!wanted(w, e->pid) && !e->held)
		return;

	if (e->held) {
		/* stopped by the hook (SIGSTOP) with a new libcuda mapped: probed now, whatever the
		 * scan budget, then let go; a process already gone has nothing to continue */
		w->holding = true;
		scan(w, e->pid, e->ts_ns);
		w->holding = false;
		kill((pid_t)e->pid, SIGCONT);
		bpf_map_delete_elem(bpf_map__fd(w->skel->maps.held), &e->pid);
		w->st.held++;
		gp_log(GP_LOG_DEBUG, "PID %u: held %.2f ms while its new libcuda was probed", e->pid,
		       (gp_mono_ns() - e->ts_ns) / 1e6);
		return;
	}
	scan_soon(ctx, e->pid, e->ts_ns);
	gp_log(GP_LOG_DEBUG, "PID %u: linker report read %.2f ms after it, scanned in %.2f ms", e->pid,
	       (t0 - e->ts_ns) / 1e6, (gp_mono_ns() - t0) / 1e6);
}

/* A new image maps its own linker, perhaps from another root. */
static void on_proc(void *ctx, const struct gp_proc_event *e)
{
	if (e->type == GP_EV_EXEC && wanted(ctx, e->pid))
		scan_soon(ctx, e->pid, 0);
}

/* ---- at start ---- */

static const char *const usual_dirs[] = {
	"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/usr/local/lib",
	"/usr/local/nccl/lib", "/usr/local/cuda/lib64",
};

/* A file of our own namespace (--libnccl, a folder, ldconfig's cache): not a process's. */
static int probe_path(struct libwatch *w, enum gp_lib kind, const char *path, bool strict, char *err, size_t len)
{
	char real[PATH_MAX], why[512];
	int before = attach_set__count(w->links), r;

	if (libwatch__check(kind, path, why, sizeof(why))) {
		if (strict)
			snprintf(err, len, "--libnccl %s", why);
		else
			gp_log(GP_LOG_DEBUG, "skipping %s", why);
		return strict ? -ENOEXEC : 0;
	}
	if (!realpath(path, real)) {
		snprintf(err, len, "--libnccl %s: %s", path, strerror(errno));
		return strict ? -errno : 0;
	}
	r = w->ops.attach_lib(w->ops.ctx, kind, real, err, len);
	if (!r && attach_set__count(w->links) > before) {
		w->st.files[kind]++;
		gp_log(GP_LOG_INFO, "probing %s %s: %d probes", kind_name[kind], real,
		       attach_set__count(w->links) - before);
	}
	return strict || r != -ENOEXEC ? r : 0;
}

static void probe_dir(struct libwatch *w, const char *dir)
{
	char path[PATH_MAX], err[512];

	snprintf(path, sizeof(path), "%s/libnccl.so.2", dir);
	if (access(path, R_OK) == 0 && probe_path(w, GP_LIB_NCCL, path, false, err, sizeof(err)))
		gp_log(GP_LOG_WARN, "%s", err);
}

/* LD_LIBRARY_PATH (a command inherits it), ldconfig's cache, the usual folders. */
static void nccl_candidates(struct libwatch *w)
{
	const char *env = getenv("LD_LIBRARY_PATH");
	char *copy = env ? strdup(env) : NULL, *save = NULL, line[PATH_MAX + 128];
	FILE *f;

	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
		if (*d == '/')
			probe_dir(w, d);
	free(copy);
	f = popen("ldconfig -p 2>/dev/null", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *arrow = strstr(line, "=> "), *slash;

		if (!strstr(line, "libnccl.so.2 ") || !arrow || !strstr(line, "x86-64"))
			continue;
		arrow[3 + strcspn(arrow + 3, "\n")] = '\0';
		slash = strrchr(arrow + 3, '/');
		if (!slash || slash == arrow + 3)
			continue;
		*slash = '\0';
		probe_dir(w, arrow + 3);
	}
	if (f)
		pclose(f);
	for (size_t i = 0; i < sizeof(usual_dirs) / sizeof(usual_dirs[0]); i++)
		probe_dir(w, usual_dirs[i]);
}

/* Every process of the node (node-wide runs): their libraries and linkers. */
static void scan_all(struct libwatch *w)
{
	uint32_t self = (uint32_t)getpid();
	struct dirent *de;
	DIR *d = opendir("/proc");

	while (d && (de = readdir(d))) {
		uint32_t pid = (uint32_t)strtoul(de->d_name, NULL, 10);

		if (pid && pid != self)
			scan(w, pid, 0);
	}
	if (d)
		closedir(d);
}

/* The followed processes, up to max from the one after the cursor; false at the end. */
static bool scan_followed(struct libwatch *w, int max)
{
	int fd = w->share.traced_fd;
	uint32_t key, next;

	if (fd < 0)
		return false;
	key = w->rescan_cursor;
	for (int i = 0; i < max; i++) {
		if (bpf_map_get_next_key(fd, w->cursor_valid ? &key : NULL, &next)) {
			w->cursor_valid = false;
			return false;
		}
		scan(w, next, 0);
		w->st.rescans++;
		key = w->rescan_cursor = next;
		w->cursor_valid = true;
	}
	return true;
}

/* The hook on a linker file of our own namespace (gpuprobe's, the system's). */
static void hook_local(struct libwatch *w, const char *file)
{
	char path[64];
	struct stat st;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && add_id(w, KIND_LDSO, st.st_dev, st.st_ino) == 1)
		hook_ldso(w, fd, path, file);
	close(fd);
}

/* gpuprobe's own linker, which a command started here maps too; a static gpuprobe has none:
 * then the system's (x86-64's PT_INTERP). */
static void hook_self(struct libwatch *w)
{
	struct scan_ctx s = { .w = w };

	if (!procmaps__foreach(NULL, getpid(), collect, &s))
		for (int i = 0; i < s.n; i++)
			if (s.c[i].kind == KIND_LDSO)
				hook_local(w, s.c[i].m.path);
	hook_local(w, "/lib64/ld-linux-x86-64.so.2");
}

static void seed(struct libwatch *w)
{
	const struct libwatch_opts *o = &w->o;

	if (w->share.filter)
		while (scan_followed(w, RESCAN_PER_TICK))
			;
	else if (o->nr_pids)
		for (int i = 0; i < o->nr_pids; i++)
			scan(w, (uint32_t)o->pids[i], 0);
	else
		scan_all(w);
	w->next_rescan_ns = gp_mono_ns() + RESCAN_NS;
}

int libwatch__start(struct libwatch *w, unsigned int kinds, char *err, size_t len)
{
	const struct libwatch_opts *o = &w->o;
	static const struct gp_on on[] = { GP_ON(GP_EV_DLOPEN, on_dlopen), GP_ON_PROCS(on_proc) };
	struct gp_handlers h = { .ctx = w, GP_ONS(on) };
	int r = 0;

	if (!w->skel)
		return 0; /* not opened: no mode needs a library */
	w->kinds = kinds & o->needs & (GP_NEED_LIBCUDA | GP_NEED_LIBNCCL);
	if (o->libcuda)
		w->kinds &= ~GP_NEED_LIBCUDA; /* --libcuda: that file instead of discovery */
	if (!w->kinds)
		return 0;
	if ((w->kinds & GP_NEED_LIBNCCL) && o->libnccl) {
		/* that file at start; one a followed process loads later is probed too */
		r = probe_path(w, GP_LIB_NCCL, o->libnccl, true, err, len);
		if (r)
			return r;
	} else if ((w->kinds & GP_NEED_LIBNCCL) && !o->nr_pids) {
		nccl_candidates(w);
	}
	hook_self(w);
	seed(w);
	r = objshare__subscribe(&w->share, &h);
	if (r) {
		snprintf(err, len, "cannot read the ring buffer: %s", strerror(-r));
		return r;
	}
	if ((w->kinds & GP_NEED_LIBNCCL) && !w->st.files[GP_LIB_NCCL] && !o->libnccl)
		gp_log(GP_LOG_WARN, "no libnccl.so found yet: probing each one a traced process loads (or name one with --libnccl PATH)");
	return 0;
}

/* A slot the sweep frees: the file's probes go, its owner may have another probed, and a
 * process that maps it again gets it looked at again. */
static void drop_lib(void *ctx, const struct libslot *slot)
{
	struct libwatch *w = ctx;
	struct map_entry m = { .dev_major = major(slot->dev), .dev_minor = minor(slot->dev), .inode = slot->ino };
	int probes = w->ops.detach_lib(w->ops.ctx, GP_LIB_CUDA, slot->tag, slot->dev, slot->ino);

	give_back(w, slot->owner, slot->trusted);
	u64map__del(w->seen, seen_key(GP_LIB_CUDA, &m));
	gp_log(GP_LOG_INFO, "no process maps libcuda device %u:%u inode %lu (owner uid %u) any more: %d probes detached, its library slot freed",
	       major(slot->dev), minor(slot->dev), (unsigned long)slot->ino, (unsigned)slot->owner, probes);
}

/* The daemon's rule for the files loaded after the start (src/lib/libslots.h): every
 * SWEEP_NS, while a user's file holds a slot, every process's maps are read, and the
 * files that none mapped in that sweep or the one before lose their probes and slots. */
static void sweep(struct libwatch *w, uint64_t now)
{
	if (!(w->kinds & GP_NEED_LIBCUDA) || now < w->next_sweep_ns || !libslots__freeable(w->o.slots))
		return;
	w->next_sweep_ns = now + SWEEP_NS;
	libslots__rescan(w->o.slots, "/proc", getpid(), "libcuda.so", NULL, NULL);
	w->st.slots_freed += (uint64_t)libslots__sweep(w->o.slots, false, drop_lib, w);
}

void libwatch__tick(struct libwatch *w)
{
	uint64_t now = gp_mono_ns();
	size_t n = 0;

	if (!w || !w->kinds)
		return;
	sweep(w, now);
	while (n < w->nr_deferred && budget(w))
		scan(w, w->deferred[n++], 0);
	memmove(w->deferred, w->deferred + n, (w->nr_deferred - n) * sizeof(w->deferred[0]));
	w->nr_deferred -= n;
	/* followed processes only: node-wide, every process's linker reports (and the daemon
	 * rescans for libcuda on its own) */
	if (!w->share.filter || now < w->next_rescan_ns)
		return;
	if (!scan_followed(w, RESCAN_PER_TICK))
		w->next_rescan_ns = now + RESCAN_NS;
}
