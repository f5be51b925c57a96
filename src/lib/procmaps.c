/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "lib/procmaps.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DELETED_SUFFIX " (deleted)"

static int hex_digit(char c)
{
	int d = -1;

	if (c >= '0' && c <= '9')
		d = c - '0';
	else if (c >= 'a' && c <= 'f')
		d = c - 'a' + 10;
	else if (c >= 'A' && c <= 'F')
		d = c - 'A' + 10;
	return d;
}

/* The end of a number of n digits worth v (p NULL: refused); no digit is no number. */
static const char *num_end(const char *p, unsigned int n, unsigned long long v,
			   unsigned long long *out)
{
	if (p && n == 0)
		p = NULL;
	if (p)
		*out = v;
	return p;
}

/*
 * Strict hex parser: sscanf("%llx") would also accept signs, "0x" prefixes
 * and leading blanks, which the kernel never prints, and silently wraps on
 * overflow. Returns the position after the number or NULL.
 */
static const char *parse_hex(const char *p, unsigned long long *out,
			     unsigned int max_digits)
{
	unsigned long long v = 0;
	unsigned int n = 0;
	int d;

	while (p && (d = hex_digit(*p)) >= 0) {
		if (n == max_digits) {
			p = NULL;	/* too long: the kernel never pads further */
			break;
		}
		v = (v << 4) | (unsigned long long)d;
		p++;
		n++;
	}
	return num_end(p, n, v, out);
}

/* Decimal, refusing overflow (sscanf would wrap silently). */
static const char *parse_dec(const char *p, unsigned long long *out)
{
	unsigned long long v = 0, d;
	unsigned int n = 0;

	while (p && *p >= '0' && *p <= '9') {
		d = (unsigned long long)(*p - '0');
		if (v > (ULLONG_MAX - d) / 10) {
			p = NULL;
			break;
		}
		v = v * 10 + d;
		p++;
		n++;
	}
	return num_end(p, n, v, out);
}

static bool perms_valid(const char *p)
{
	return (p[0] == 'r' || p[0] == '-') &&
	       (p[1] == 'w' || p[1] == '-') &&
	       (p[2] == 'x' || p[2] == '-') &&
	       (p[3] == 'p' || p[3] == 's');
}

/* The fields before the path. */
struct head {
	unsigned long long start, end, offset, major, minor, inode;
	const char *perms;
};

/* "start-end perms offset major:minor inode": the position after the inode, or NULL. */
static const char *parse_head(const char *p, struct head *h)
{
	p = parse_hex(p, &h->start, 16);
	if (!p || *p++ != '-')
		return NULL;
	p = parse_hex(p, &h->end, 16);
	if (!p || *p++ != ' ')
		return NULL;
	h->perms = p;
	if (!perms_valid(h->perms) || h->perms[4] != ' ')
		return NULL;
	p += 5;
	p = parse_hex(p, &h->offset, 16);
	if (!p || *p++ != ' ')
		return NULL;
	/* MAJOR is 12 bits and MINOR 20 bits in the kernel's dev_t. */
	p = parse_hex(p, &h->major, 3);
	if (!p || *p++ != ':')
		return NULL;
	p = parse_hex(p, &h->minor, 5);
	if (!p || *p++ != ' ')
		return NULL;
	return parse_dec(p, &h->inode);
}

/*
 * The path column after the inode: its length (without " (deleted)") through len, or
 * -EINVAL when it is not one line or would not fit in max bytes with its NUL.
 */
static int parse_path(const char *p, const char **path, size_t *len, bool *deleted,
		      size_t max)
{
	const size_t sfx = strlen(DELETED_SUFFIX);
	const char *path_end;

	/* The kernel pads with spaces up to the path column. */
	if (*p != '\0' && *p != '\n' && *p != ' ')
		return -EINVAL;
	while (*p == ' ')
		p++;
	*path = p;
	path_end = strchr(p, '\n');
	if (path_end) {
		/* One line only: nothing may follow the newline. */
		if (path_end[1] != '\0')
			return -EINVAL;
	} else {
		path_end = p + strlen(p);
	}
	*len = (size_t)(path_end - p);
	/*
	 * Ambiguous for a file literally named "x (deleted)", but that is
	 * what the kernel prints and there is no other signal in the line.
	 */
	*deleted = *len > sfx && memcmp(path_end - sfx, DELETED_SUFFIX, sfx) == 0;
	if (*deleted)
		*len -= sfx;
	/* A truncated path would name a different file: refuse it. */
	return *len >= max ? -EINVAL : 0;
}

int procmaps__parse_line(const char *line, struct map_entry *out)
{
	struct head h;
	const char *p, *path;
	size_t path_len;
	bool deleted;
	int err = 0;

	if (!line || !out) {
		err = -EINVAL;
		goto cleanup;
	}
	p = parse_head(line, &h);
	if (!p || parse_path(p, &path, &path_len, &deleted, sizeof(out->path)) ||
	    h.start >= h.end) {
		err = -EINVAL;
		goto cleanup;
	}
	out->start = h.start;
	out->end = h.end;
	out->offset = h.offset;
	out->dev_major = (unsigned int)h.major;
	out->dev_minor = (unsigned int)h.minor;
	out->inode = h.inode;
	memcpy(out->perms, h.perms, 4);
	out->perms[4] = '\0';
	memcpy(out->path, path, path_len);
	out->path[path_len] = '\0';
	out->deleted = deleted;
cleanup:
	return err;
}

int procmaps__foreach(const char *proc_root, int pid,
		      int (*cb)(const struct map_entry *e, void *ctx), void *ctx)
{
	char path[PATH_MAX];
	struct map_entry *e = NULL;
	char *line = NULL;
	size_t cap = 0;
	FILE *f = NULL;
	int n, err = 0;

	if (!cb || pid <= 0) {
		err = -EINVAL;
		goto cleanup;
	}
	if (!proc_root)
		proc_root = "/proc";
	n = snprintf(path, sizeof(path), "%s/%d/maps", proc_root, pid);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		goto cleanup;
	}
	/* 4 KiB+ entry: keep it off the stack, callbacks may recurse deeply. */
	e = malloc(sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto cleanup;
	}
	errno = 0;
	while (getline(&line, &cap, f) != -1) {
		if (procmaps__parse_line(line, e))
			continue;
		err = cb(e, ctx);
		if (err)
			goto cleanup;
		errno = 0;
	}
	if (ferror(f)) {
		/* e.g. ESRCH when the process exits while we read its maps */
		err = errno ? -errno : -EIO;
		goto cleanup;
	}
cleanup:
	if (f)
		fclose(f);
	free(line);
	free(e);
	return err;
}

struct locate {
	unsigned long long addr, *off;
	char *path;
	size_t len;
	bool found;
};

static int locate_cb(const struct map_entry *e, void *ctx)
{
	struct locate *l = ctx;

	if (l->addr >= e->start && l->addr < e->end && e->path[0] == '/') {
		*l->off = l->addr - e->start + e->offset;
		snprintf(l->path, l->len, "%s", e->path);
		l->found = true;
	}
	return 0;
}

int procmaps__locate(const char *proc_root, int pid, unsigned long long addr, char *path, size_t len,
		     unsigned long long *off)
{
	struct locate l = { .addr = addr, .off = off, .path = path, .len = len };
	int r = procmaps__foreach(proc_root, pid, locate_cb, &l);

	if (r < 0)
		return r;
	return l.found ? 0 : -ENOENT;
}

struct find_libs_ctx {
	const char *proc_root;
	int pid;
	const char *prefix;
	size_t prefix_len;
	struct mapped_lib *out;
	int max;
	int n;
};

static int find_libs_cb(const struct map_entry *e, void *data)
{
	struct find_libs_ctx *ctx = data;
	struct mapped_lib *lib;
	const char *base;
	int i, n, err = 0;

	/* Only real files; pseudo paths such as "[vdso]" do not start with '/'. */
	if (e->path[0] != '/')
		goto cleanup;
	base = strrchr(e->path, '/') + 1;
	if (strncmp(base, ctx->prefix, ctx->prefix_len) != 0)
		goto cleanup;
	for (i = 0; i < ctx->n; i++) {
		const struct mapped_lib *o = &ctx->out[i];

		if (o->dev_major != e->dev_major || o->dev_minor != e->dev_minor)
			continue;
		/* inode 0 (some pseudo filesystems): the path is all we have */
		if (e->inode ? o->inode == e->inode :
			       (o->inode == 0 && strcmp(o->path, e->path) == 0))
			goto cleanup;
	}
	if (ctx->n >= ctx->max) {
		err = 1;	/* full: stop the walk */
		goto cleanup;
	}
	lib = &ctx->out[ctx->n];
	if (e->deleted)
		n = snprintf(lib->host_path, sizeof(lib->host_path),
			     "%s/%d/map_files/%llx-%llx", ctx->proc_root,
			     ctx->pid, e->start, e->end);
	else
		n = snprintf(lib->host_path, sizeof(lib->host_path),
			     "%s/%d/root%s", ctx->proc_root, ctx->pid, e->path);
	if (n < 0 || (size_t)n >= sizeof(lib->host_path)) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	/* parse_line guarantees the path fits */
	snprintf(lib->path, sizeof(lib->path), "%s", e->path);
	lib->inode = e->inode;
	lib->dev_major = e->dev_major;
	lib->dev_minor = e->dev_minor;
	lib->start = e->start;
	lib->end = e->end;
	lib->deleted = e->deleted;
	ctx->n++;
cleanup:
	return err;
}

int procmaps__find_libs(const char *proc_root, int pid, const char *prefix,
			struct mapped_lib *out, int max)
{
	struct find_libs_ctx ctx = {
		.proc_root = proc_root ? proc_root : "/proc",
		.pid = pid,
		.prefix = prefix,
		.out = out,
		.max = max,
	};
	int err;

	if (!prefix || !out || max <= 0) {
		err = -EINVAL;
		goto cleanup;
	}
	ctx.prefix_len = strlen(prefix);
	err = procmaps__foreach(ctx.proc_root, pid, find_libs_cb, &ctx);
	if (err == 1)
		err = 0;
	if (err == 0)
		err = ctx.n;
cleanup:
	return err;
}
