/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "procmaps.h"

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
	if (p && n == 0)
		p = NULL;
	if (p)
		*out = v;
	return p;
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
	if (p && n == 0)
		p = NULL;
	if (p)
		*out = v;
	return p;
}

static bool perms_valid(const char *p)
{
	return (p[0] == 'r' || p[0] == '-') &&
	       (p[1] == 'w' || p[1] == '-') &&
	       (p[2] == 'x' || p[2] == '-') &&
	       (p[3] == 'p' || p[3] == 's');
}

int procmaps__parse_line(const char *line, struct map_entry *out)
{
	unsigned long long start, end, offset, major, minor, inode;
	const char *p = line;
	const char *perms, *path, *path_end;
	size_t path_len;
	bool deleted = false;
	int err = 0;

	if (!line || !out) {
		err = -EINVAL;
		goto cleanup;
	}

	/* "start-end perms offset major:minor inode [path]" */
	p = parse_hex(p, &start, 16);
	if (!p || *p++ != '-')
		goto bad;
	p = parse_hex(p, &end, 16);
	if (!p || *p++ != ' ')
		goto bad;
	perms = p;
	if (!perms_valid(perms) || perms[4] != ' ')
		goto bad;
	p += 5;
	p = parse_hex(p, &offset, 16);
	if (!p || *p++ != ' ')
		goto bad;
	/* MAJOR is 12 bits and MINOR 20 bits in the kernel's dev_t. */
	p = parse_hex(p, &major, 3);
	if (!p || *p++ != ':')
		goto bad;
	p = parse_hex(p, &minor, 5);
	if (!p)
		goto bad;
	if (*p++ != ' ')
		goto bad;
	p = parse_dec(p, &inode);
	if (!p)
		goto bad;
	/* The kernel pads with spaces up to the path column. */
	if (*p != '\0' && *p != '\n' && *p != ' ')
		goto bad;
	while (*p == ' ')
		p++;
	path = p;
	path_end = strchr(path, '\n');
	if (path_end) {
		/* One line only: nothing may follow the newline. */
		if (path_end[1] != '\0')
			goto bad;
	} else {
		path_end = path + strlen(path);
	}
	path_len = (size_t)(path_end - path);
	/*
	 * Ambiguous for a file literally named "x (deleted)", but that is
	 * what the kernel prints and there is no other signal in the line.
	 */
	if (path_len > strlen(DELETED_SUFFIX) &&
	    memcmp(path_end - strlen(DELETED_SUFFIX), DELETED_SUFFIX,
		   strlen(DELETED_SUFFIX)) == 0) {
		deleted = true;
		path_len -= strlen(DELETED_SUFFIX);
	}
	/* A truncated path would name a different file: refuse it. */
	if (path_len >= sizeof(out->path))
		goto bad;
	if (start >= end)
		goto bad;

	out->start = start;
	out->end = end;
	out->offset = offset;
	out->dev_major = (unsigned int)major;
	out->dev_minor = (unsigned int)minor;
	out->inode = inode;
	memcpy(out->perms, perms, 4);
	out->perms[4] = '\0';
	memcpy(out->path, path, path_len);
	out->path[path_len] = '\0';
	out->deleted = deleted;
	goto cleanup;
bad:
	err = -EINVAL;
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
