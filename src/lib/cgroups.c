/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/cgroups.h"
#include "lib/k8s.h"
#include "lib/u64map.h"
#include "lib/util.h"

/* A miss in the kubelet's folders rescans them at most this often. */
#define NAME_RESCAN_MS 1000

struct cg_entry {
	char *path;
	char comm[16];
	struct k8s_id id;
	const char *kv[15];
	uint64_t gone_ns; /* when the process was first seen gone; 0 while alive */
	uint64_t read_ns; /* when last read */
};

struct cgroups {
	struct u64map *m; /* pid -> struct cg_entry */
	struct k8s_names *names;
};

struct cgroups *cgroups__new(const char *log_dir)
{
	struct cgroups *c = calloc(1, sizeof(*c));
	char pods[4096], ctrs[4096];

	if (!c)
		return NULL;
	snprintf(pods, sizeof(pods), "%s/pods", log_dir ? log_dir : "/var/log");
	snprintf(ctrs, sizeof(ctrs), "%s/containers", log_dir ? log_dir : "/var/log");
	c->m = u64map__new();
	c->names = k8s_names__new(pods, ctrs, NAME_RESCAN_MS);
	if (!c->m || !c->names) {
		cgroups__free(c);
		return NULL;
	}
	return c;
}

static void free_entry(void *v)
{
	struct cg_entry *e = v;

	free(e->path);
	free(e);
}

void cgroups__free(struct cgroups *c)
{
	if (!c)
		return;
	u64map__free_all(c->m, free_entry);
	k8s_names__free(c->names);
	free(c);
}

static void set_labels(struct cg_entry *e)
{
	const char *kv[] = { "comm", e->comm, "cgroup", e->path, "namespace", e->id.ns, "pod", e->id.pod,
			     "container", e->id.container, "pod_uid", e->id.pod_uid,
			     "container_id", e->id.container_id, NULL };

	memcpy(e->kv, kv, sizeof(kv));
}

/* The path and what it tells; names looked up once per new path (and while missing). */
static void parse(struct cgroups *c, struct cg_entry *e, const char *path)
{
	bool same = e->path && !strcmp(e->path, path);
	char *dup;

	if (same && (!e->id.pod_uid[0] || e->id.pod[0]))
		return;
	if (!same) {
		dup = strdup(path);
		if (!dup)
			return;
		free(e->path);
		e->path = dup;
		if (k8s__parse_cgroup(path, &e->id))
			memset(&e->id, 0, sizeof(e->id)); /* not a path the kubelet or a runtime makes */
	}
	if (e->id.pod_uid[0])
		k8s_names__lookup(c->names, &e->id);
	set_labels(e);
}

static struct cg_entry *entry(struct cgroups *c, uint32_t pid)
{
	struct cg_entry *e = u64map__get(c->m, pid);

	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->path = strdup("")) || u64map__put(c->m, pid, e)) {
		if (e)
			free(e->path);
		free(e);
		return NULL;
	}
	set_labels(e);
	return e;
}

void cgroups__refresh(struct cgroups *c, uint32_t pid, const char *comm, uint64_t now_ns)
{
	char buf[K8S_MAX_PATH + 1];
	struct cg_entry *e = u64map__get(c->m, pid);

	if (e)
		e->read_ns = now_ns; /* tried: a gone process is not read again and again */
	if (k8s__read_cgroup((int)pid, buf, sizeof(buf)))
		return; /* gone (or unreadable): what was read before stays */
	e = entry(c, pid);
	if (!e)
		return;
	parse(c, e, buf);
	e->gone_ns = 0;
	e->read_ns = now_ns;
	if (comm && comm[0])
		snprintf(e->comm, sizeof(e->comm), "%s", comm);
	else if (!e->comm[0])
		(void)gp_proc_comm(pid, e->comm, sizeof(e->comm));
}

void cgroups__note(struct cgroups *c, uint32_t pid, uint64_t now_ns)
{
	if (!u64map__get(c->m, pid))
		cgroups__refresh(c, pid, NULL, now_ns);
}

static struct cg_entry *known(struct cgroups *c, uint32_t pid, uint64_t now_ns, uint64_t max_age_ns)
{
	struct cg_entry *e = u64map__get(c->m, pid);

	if (!e || (max_age_ns && !e->gone_ns && now_ns - e->read_ns > max_age_ns)) {
		cgroups__refresh(c, pid, NULL, now_ns);
		e = u64map__get(c->m, pid);
	}
	return e;
}

const char *cgroups__of(struct cgroups *c, uint32_t pid)
{
	struct cg_entry *e = known(c, pid, 0, 0);

	return e ? e->path : "";
}

const char *const *cgroups__labels(struct cgroups *c, uint32_t pid, uint64_t now_ns, uint64_t max_age_ns)
{
	static const char *const none[] = { NULL };
	struct cg_entry *e = known(c, pid, now_ns, max_age_ns);
	char comm[sizeof(e->comm)] = "";

	if (!e)
		return none;
	/* a forked child names itself after its fork (prctl, setproctitle): the name it has
	 * now, while it lives, not the one read at its fork */
	if (!e->gone_ns) {
		(void)gp_proc_comm(pid, comm, sizeof(comm));
		if (comm[0])
			memcpy(e->comm, comm, sizeof(comm));
	}
	return e->kv;
}

void cgroups__prune(struct cgroups *c, uint64_t now_ns, uint64_t keep_ns)
{
	uint64_t doomed[256], k;
	size_t n;
	void *v;

	do {
		n = 0;
		for (size_t it = 0; u64map__next(c->m, &it, &k, &v);) {
			struct cg_entry *e = v;

			if (!e->gone_ns && kill((pid_t)k, 0) && errno == ESRCH)
				e->gone_ns = now_ns;
			if (e->gone_ns && now_ns - e->gone_ns > keep_ns && n < 256)
				doomed[n++] = k;
		}
		for (size_t i = 0; i < n; i++)
			free_entry(u64map__del(c->m, doomed[i]));
	} while (n == 256);
}

unsigned long cgroups__name_scans(const struct cgroups *c)
{
	return k8s_names__scans(c->names);
}
