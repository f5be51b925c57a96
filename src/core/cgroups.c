/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cgroups.h"
#include "u64map.h"

struct cg_entry {
	char *path;
	uint64_t gone_ns; /* when the process was first seen gone; 0 while alive */
};

struct cgroups {
	struct u64map *m; /* pid -> struct cg_entry */
};

struct cgroups *cgroups__new(void)
{
	struct cgroups *c = calloc(1, sizeof(*c));

	if (c && !(c->m = u64map__new())) {
		free(c);
		return NULL;
	}
	return c;
}

void cgroups__free(struct cgroups *c)
{
	uint64_t k;
	void *v;

	if (!c)
		return;
	for (size_t it = 0; u64map__next(c->m, &it, &k, &v);) {
		free(((struct cg_entry *)v)->path);
		free(v);
	}
	u64map__free(c->m);
	free(c);
}

/* The cgroup path of pid (cgroup v2's "0::" line, else the first hierarchy's). */
static int read_cgroup(uint32_t pid, char *buf, size_t len)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		c = c ? strchr(c + 1, ':') : NULL;
		if (!c)
			continue;
		if (!found || !strncmp(line, "0::", 3)) {
			c[1 + strcspn(c + 1, "\n")] = '\0';
			snprintf(buf, len, "%s", c + 1);
			found = true;
			if (!strncmp(line, "0::", 3))
				break;
		}
	}
	fclose(f);
	return found ? 0 : -ENOENT;
}

const char *cgroups__of(struct cgroups *c, uint32_t pid)
{
	struct cg_entry *e = u64map__get(c->m, pid);
	char buf[4096];

	if (e)
		return e->path;
	if (read_cgroup(pid, buf, sizeof(buf)))
		return "";
	e = calloc(1, sizeof(*e));
	if (!e)
		return "";
	e->path = strdup(buf);
	if (!e->path || u64map__put(c->m, pid, e)) {
		free(e->path);
		free(e);
		return "";
	}
	return e->path;
}

void cgroups__prune(struct cgroups *c, uint64_t now_ns, uint64_t keep_ns)
{
	uint64_t doomed[64], k;
	size_t n = 0;
	void *v;

	for (size_t it = 0; u64map__next(c->m, &it, &k, &v);) {
		struct cg_entry *e = v;

		if (!e->gone_ns && kill((pid_t)k, 0) && errno == ESRCH)
			e->gone_ns = now_ns;
		if (e->gone_ns && now_ns - e->gone_ns > keep_ns && n < 64)
			doomed[n++] = k;
	}
	for (size_t i = 0; i < n; i++) {
		struct cg_entry *e = u64map__del(c->m, doomed[i]);

		free(e->path);
		free(e);
	}
}
