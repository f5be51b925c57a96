/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/ldpath.h"
#include "lib/safeopen.h"

#define MAX_NEEDED 128    /* DT_NEEDED entries read per object */
#define MAX_DIRS 64       /* folders of one search list */
#define DYN_MAX 4096      /* dynamic entries read per object */

#if defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#else
#define MULTIARCH "x86_64-linux-gnu"
#endif

/* ld.so's trusted folders, for the chain only (libcuda there is the caller's to find) */
static const char *const default_dirs[] = {
	"/lib/" MULTIARCH, "/usr/lib/" MULTIARCH, "/lib64", "/usr/lib64", "/lib", "/usr/lib",
};

struct obj {
	char path[PATH_MAX];
	dev_t dev;
	ino_t ino;
};

struct dyn {
	char *rpath, *runpath;
	char *needed[MAX_NEEDED];
	int nr_needed;
};

struct walk {
	struct obj *objs;
	int n;
	char *exe_rpath;   /* the program's DT_RPATH (ld.so also searches it for its objects) */
	bool exe_runpath;  /* a DT_RUNPATH in the program turns that off */
	char *ld_library_path;
};

static void dyn_clear(struct dyn *d)
{
	free(d->rpath);
	free(d->runpath);
	for (int i = 0; i < d->nr_needed; i++)
		free(d->needed[i]);
	memset(d, 0, sizeof(*d));
}

/* A regular file, opened without blocking (a FIFO planted on the path cannot hang us). */
static int open_regular(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* The dynamic section's DT_NEEDED, DT_RPATH and DT_RUNPATH strings. */
static int read_dyn(int fd, struct dyn *d)
{
	char why[128];
	Elf *elf = safe_elf_begin(fd, why, sizeof(why));
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int r = -ENOEXEC;

	if (!elf)
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		n = data ? data->d_size / sh.sh_entsize : 0;
		r = 0;
		for (size_t i = 0; i < n && i < DYN_MAX; i++) {
			GElf_Dyn dy;
			const char *s;

			if (!gelf_getdyn(data, (int)i, &dy) || dy.d_tag == DT_NULL)
				break;
			if (dy.d_tag != DT_NEEDED && dy.d_tag != DT_RPATH && dy.d_tag != DT_RUNPATH)
				continue;
			s = elf_strptr(elf, sh.sh_link, (size_t)dy.d_un.d_val);
			if (!s)
				continue;
			if (dy.d_tag == DT_NEEDED && d->nr_needed < MAX_NEEDED)
				d->needed[d->nr_needed++] = strndup(s, PATH_MAX - 1);
			else if (dy.d_tag == DT_RPATH && !d->rpath)
				d->rpath = strndup(s, PATH_MAX - 1);
			else if (dy.d_tag == DT_RUNPATH && !d->runpath)
				d->runpath = strndup(s, PATH_MAX - 1);
		}
		break;
	}
	elf_end(elf);
	return r;
}

/*
 * Splits a search list into folders, $ORIGIN (and ${ORIGIN}) replaced by origin, the
 * object's folder. Entries with other substitutions ($LIB, $PLATFORM) or relative ones
 * are skipped: ld.so resolves those against things we do not model.
 */
static int split_dirs(const char *list, const char *origin, char dirs[][PATH_MAX], int n, int max)
{
	char *copy, *save = NULL;

	if (!list)
		return n;
	copy = strdup(list);
	for (char *e = copy ? strtok_r(copy, ":", &save) : NULL; e && n < max; e = strtok_r(NULL, ":", &save)) {
		const char *rest = NULL;

		if (!strncmp(e, "$ORIGIN", 7))
			rest = e + 7;
		else if (!strncmp(e, "${ORIGIN}", 9))
			rest = e + 9;
		if (rest && origin && !strchr(rest, '$') &&
		    snprintf(dirs[n], PATH_MAX, "%s%s", origin, rest) < PATH_MAX)
			n++;
		else if (!rest && e[0] == '/' && !strchr(e, '$') && snprintf(dirs[n], PATH_MAX, "%s", e) < PATH_MAX)
			n++;
	}
	free(copy);
	return n;
}

/* The folders ld.so searches for a name an object asks for (glibc's order): its DT_RPATH
 * and the program's, unless it has a DT_RUNPATH; LD_LIBRARY_PATH; its DT_RUNPATH. */
static int search_dirs(const struct walk *w, const struct dyn *d, const char *origin, bool is_exe,
		       char dirs[][PATH_MAX])
{
	int n = 0;

	if (!d->runpath) {
		n = split_dirs(d->rpath, origin, dirs, n, MAX_DIRS);
		if (!is_exe && !w->exe_runpath)
			n = split_dirs(w->exe_rpath, NULL, dirs, n, MAX_DIRS); /* $ORIGIN expanded */
	}
	n = split_dirs(w->ld_library_path, NULL, dirs, n, MAX_DIRS);
	return split_dirs(d->runpath, origin, dirs, n, MAX_DIRS);
}

static bool is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* Adds the object at path unless read already (same device and inode) or the walk is full. */
static void enqueue(struct walk *w, const char *path)
{
	char real[PATH_MAX];
	struct stat st;

	if (w->n >= LDPATH_MAX_OBJECTS || !realpath(path, real) || stat(real, &st) || !S_ISREG(st.st_mode))
		return;
	for (int i = 0; i < w->n; i++)
		if (w->objs[i].dev == st.st_dev && w->objs[i].ino == st.st_ino)
			return;
	snprintf(w->objs[w->n].path, sizeof(w->objs[w->n].path), "%s", real);
	w->objs[w->n].dev = st.st_dev;
	w->objs[w->n].ino = st.st_ino;
	w->n++;
}

/* execvp's search: a name without a slash through PATH (its default when unset). */
static int find_program(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *copy, *save = NULL;
	int r = -ENOENT;

	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return is_file(out) ? 0 : -ENOENT;
	}
	copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
		if ((size_t)snprintf(out, len, "%s/%s", *d ? d : ".", cmd) >= len)
			continue;
		if (is_file(out) && !access(out, X_OK)) {
			r = 0;
			break;
		}
	}
	free(copy);
	return r;
}

int ldpath__find(const char *cmd, const char *name, void (*cb)(void *ctx, const char *path), void *ctx)
{
	struct walk w = { 0 };
	char (*dirs)[PATH_MAX] = calloc(MAX_DIRS, PATH_MAX), exe[PATH_MAX], cand[PATH_MAX], origin[PATH_MAX];
	const char *llp = getenv("LD_LIBRARY_PATH");
	int r;

	w.objs = calloc(LDPATH_MAX_OBJECTS, sizeof(*w.objs));
	w.ld_library_path = llp && *llp ? strdup(llp) : NULL;
	if (!dirs || !w.objs) {
		r = -ENOMEM;
		goto cleanup;
	}
	r = find_program(cmd, exe, sizeof(exe));
	if (r)
		goto cleanup;
	enqueue(&w, exe);
	if (!w.n) {
		r = -ENOENT;
		goto cleanup;
	}
	for (int i = 0; i < w.n; i++) {
		struct dyn d = { 0 };
		struct stat st;
		int fd = open_regular(w.objs[i].path, &st), nd;
		char *slash;

		if (fd < 0)
			continue;
		r = read_dyn(fd, &d);
		close(fd);
		if (r) {
			dyn_clear(&d);
			if (i == 0) /* a script, or a static program: nothing the loader searches */
				goto cleanup;
			continue;
		}
		snprintf(origin, sizeof(origin), "%s", w.objs[i].path);
		slash = strrchr(origin, '/');
		if (slash)
			*(slash == origin ? slash + 1 : slash) = '\0';
		if (i == 0) {
			w.exe_runpath = d.runpath != NULL;
			w.exe_rpath = d.rpath ? strdup(d.rpath) : NULL;
			/* the program's own $ORIGIN, fixed now for the objects that inherit its RPATH */
			if (w.exe_rpath && strstr(w.exe_rpath, "ORIGIN")) {
				char (*one)[PATH_MAX] = calloc(MAX_DIRS, PATH_MAX);
				int k = one ? split_dirs(w.exe_rpath, origin, one, 0, MAX_DIRS) : 0;
				size_t off = 0, cap = (size_t)k * PATH_MAX + 1;
				char *joined = k ? calloc(1, cap) : NULL;

				for (int j = 0; joined && j < k; j++)
					off += (size_t)snprintf(joined + off, cap - off, "%s%s", j ? ":" : "", one[j]);
				free(w.exe_rpath);
				w.exe_rpath = joined;
				free(one);
			}
		}
		nd = search_dirs(&w, &d, origin, i == 0, dirs);
		for (int j = 0; j < nd; j++)
			if (snprintf(cand, sizeof(cand), "%s/%s", dirs[j], name) < (int)sizeof(cand) && is_file(cand))
				cb(ctx, cand);
		for (int k = 0; k < d.nr_needed; k++) {
			const char *nm = d.needed[k];
			bool found = false;

			if (!nm)
				continue;
			if (strchr(nm, '/')) {
				enqueue(&w, nm);
				continue;
			}
			for (int j = 0; j < nd && !found; j++)
				if (snprintf(cand, sizeof(cand), "%s/%s", dirs[j], nm) < (int)sizeof(cand) && is_file(cand)) {
					enqueue(&w, cand);
					found = true;
				}
			for (size_t j = 0; !found && j < sizeof(default_dirs) / sizeof(default_dirs[0]); j++)
				if (snprintf(cand, sizeof(cand), "%s/%s", default_dirs[j], nm) < (int)sizeof(cand) &&
				    is_file(cand)) {
					enqueue(&w, cand);
					found = true;
				}
		}
		dyn_clear(&d);
	}
	r = w.n;
cleanup:
	free(w.exe_rpath);
	free(w.ld_library_path);
	free(w.objs);
	free(dirs);
	return r;
}
