/* SPDX-License-Identifier: BSD-3-Clause */
#include <dirent.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include "lib/libslots.h"
#include "lib/procmaps.h"

/* Files one process maps that a rescan looks at: enough that every file still mapped is
 * seen (and so keeps its slot). */
#define RESCAN_LIBS_PER_PROC 64

struct libslots {
	struct libslot *v;
	size_t n, cap;
	uint64_t sweeps; /* sweeps ended; the one under way is sweeps + 1 */
	uint64_t freed;
	int next_tag;
	struct mapped_lib *maps; /* RESCAN_LIBS_PER_PROC, for rescans */
};

struct libslots *libslots__new(void)
{
	struct libslots *s = calloc(1, sizeof(*s));

	if (s && !(s->maps = calloc(RESCAN_LIBS_PER_PROC, sizeof(*s->maps)))) {
		free(s);
		s = NULL;
	}
	return s;
}

void libslots__free(struct libslots *s)
{
	if (!s)
		return;
	free(s->v);
	free(s->maps);
	free(s);
}

struct libslot *libslots__find(struct libslots *s, dev_t dev, ino_t ino)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->v[i].dev == dev && s->v[i].ino == ino)
			return &s->v[i];
	return NULL;
}

struct libslot *libslots__add(struct libslots *s, dev_t dev, ino_t ino, uid_t owner, bool trusted, bool pinned,
			      bool probes)
{
	struct libslot *e = libslots__find(s, dev, ino);

	if (e)
		return e;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct libslot *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	e = &s->v[s->n++];
	*e = (struct libslot){ .dev = dev, .ino = ino, .owner = owner, .trusted = trusted, .pinned = pinned,
			       .tag = probes ? ++s->next_tag : 0, .seen = s->sweeps + 1 };
	return e;
}

void libslots__remove(struct libslots *s, dev_t dev, ino_t ino)
{
	struct libslot *e = libslots__find(s, dev, ino);

	if (e)
		*e = s->v[--s->n];
}

size_t libslots__count(const struct libslots *s)
{
	return s ? s->n : 0;
}

size_t libslots__freeable(const struct libslots *s)
{
	size_t n = 0;

	for (size_t i = 0; s && i < s->n; i++)
		n += !s->v[i].pinned && !s->v[i].trusted;
	return n;
}

uint64_t libslots__freed(const struct libslots *s)
{
	return s ? s->freed : 0;
}

bool libslots__mapped(struct libslots *s, dev_t dev, ino_t ino)
{
	struct libslot *e = libslots__find(s, dev, ino);

	if (e)
		e->seen = s->sweeps + 1;
	return e != NULL;
}

int libslots__rescan(struct libslots *s, const char *proc_root, int skip_pid, const char *prefix,
		     void (*found)(void *ctx, int pid, const struct mapped_lib *m), void *ctx)
{
	DIR *dir = opendir(proc_root);
	struct dirent *de;
	int nproc = 0;

	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		int pid = atoi(de->d_name), n;

		if (pid <= 0 || pid == skip_pid)
			continue;
		nproc++;
		n = procmaps__find_libs(proc_root, pid, prefix, s->maps, RESCAN_LIBS_PER_PROC);
		for (int i = 0; i < n; i++) {
			libslots__mapped(s, makedev(s->maps[i].dev_major, s->maps[i].dev_minor), (ino_t)s->maps[i].inode);
			if (found)
				found(ctx, pid, &s->maps[i]);
		}
	}
	closedir(dir);
	return nproc;
}

int libslots__sweep(struct libslots *s, bool full, void (*drop)(void *ctx, const struct libslot *e), void *ctx)
{
	int freed = 0;

	s->sweeps++;
	for (size_t i = s->n; i-- > 0;) {
		struct libslot *e = &s->v[i];

		if (e->pinned || e->seen + 1 >= s->sweeps || (e->trusted && !full))
			continue;
		if (drop)
			drop(ctx, e);
		s->v[i] = s->v[--s->n];
		freed++;
	}
	s->freed += (uint64_t)freed;
	return freed;
}
