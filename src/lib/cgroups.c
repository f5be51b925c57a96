/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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
	/* the roots of the cgroup v2 hierarchy and of the v1 memory one (hybrid hosts: a
	 * process at "/" in v2 is labelled with its v1 memory path), where mounted; else -1 */
	struct hier {
		int fd;
		char at[256];
	} v2, mem;
	unsigned long by_id, unnamed; /* cgroups__from_id: paths found, and not */
};

/* Whether a mount's super options name the v1 memory controller. */
static bool has_memory(const char *opts)
{
	char buf[1024], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", opts);
	for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save))
		if (!strcmp(o, "memory"))
			return true;
	return false;
}

/* Where the roots of the cgroup v2 hierarchy (/sys/fs/cgroup; /sys/fs/cgroup/unified on a
 * hybrid host) and of the v1 memory one are mounted in this mount namespace, from
 * /proc/self/mountinfo. Mount points with escapes (\040) are not used. */
static void find_hierarchies(struct cgroups *c)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	c->v2.fd = c->mem.fd = -1;
	while (f && fgets(line, sizeof(line), f)) {
		char root[256], at[256], type[32], opts[1024], *sep = strstr(line, " - ");
		struct hier *h = NULL;

		if (!sep || sscanf(line, "%*s %*s %*s %255s %255s", root, at) != 2 ||
		    sscanf(sep + 3, "%31s %*s %1023s", type, opts) != 2 || strcmp(root, "/") || strchr(at, '\\'))
			continue;
		if (!strcmp(type, "cgroup2"))
			h = &c->v2;
		else if (!strcmp(type, "cgroup") && has_memory(opts))
			h = &c->mem;
		if (h && h->fd < 0 && !h->at[0])
			snprintf(h->at, sizeof(h->at), "%s", at);
	}
	if (f)
		fclose(f);
	if (c->v2.at[0])
		c->v2.fd = open(c->v2.at, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->mem.at[0])
		c->mem.fd = open(c->mem.at, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

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
	find_hierarchies(c);
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
	if (c->v2.fd >= 0)
		close(c->v2.fd);
	if (c->mem.fd >= 0)
		close(c->mem.fd);
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

/* Whether pid runs: not a zombie. An exited process not yet reaped keeps its cgroup v2 line,
 * but its v1 lines all read "/" (on this hybrid machine a worker read between its exit and
 * its reaping was labelled cgroup="/", its memory cgroup being /process_api/...): "/" read
 * from one is no answer, and the cgroup it ended in is taken (cgroups__from_id). */
static bool alive(uint32_t pid)
{
	char buf[256], *st;

	return !gp_proc_stat(pid, buf, sizeof(buf), &st) && st[0] != 'Z' && st[0] != 'X';
}

void cgroups__refresh(struct cgroups *c, uint32_t pid, const char *comm, uint64_t now_ns)
{
	char buf[K8S_MAX_PATH + 1];
	struct cg_entry *e = u64map__get(c->m, pid);

	if (e)
		e->read_ns = now_ns; /* tried: a gone process is not read again and again */
	if (k8s__read_cgroup((int)pid, buf, sizeof(buf)))
		return; /* gone (or unreadable): what was read before stays */
	if (!strcmp(buf, "/") && !alive(pid))
		return; /* an exited one's v1 lines read "/" (below) */
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

/* The path of the cgroup of hierarchy h whose id (its directory's inode, as
 * bpf_get_current_cgroup_id gives it) is id, relative to the hierarchy's root: the kernel's
 * file handle of a kernfs node is its id (FILEID_KERNFS), opened as systemd's
 * cg_path_from_cgroupid does. -errno: the hierarchy is not mounted here, or the cgroup is
 * gone. */
static int path_of_id(const struct hier *hi, uint64_t id, char *buf, size_t len)
{
	union {
		struct file_handle fh;
		char bytes[sizeof(struct file_handle) + sizeof(uint64_t)];
	} h = { .fh = { .handle_bytes = sizeof(uint64_t), .handle_type = 0xfe /* FILEID_KERNFS */ } };
	char link[32], path[PATH_MAX];
	size_t root = strlen(hi->at);
	ssize_t n;
	int fd;

	if (hi->fd < 0 || !id)
		return -ENOENT;
	memcpy(h.fh.f_handle, &id, sizeof(id));
	fd = open_by_handle_at(hi->fd, &h.fh, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	path[n] = '\0';
	if (strncmp(path, hi->at, root) || (path[root] && path[root] != '/'))
		return -ENOENT; /* not under the mount (another namespace's view) */
	if (strlen(path + root) + 2 > len)
		return -ENAMETOOLONG;
	snprintf(buf, len, "%s", path[root] ? path + root : "/");
	return 0;
}

const char *const *cgroups__from_id(struct cgroups *c, uint32_t pid, uint64_t v2, uint64_t memory,
				    uint64_t now_ns)
{
	static const char *const none[] = { NULL };
	char buf[K8S_MAX_PATH + 1];
	struct cg_entry *e;
	int r;

	e = entry(c, pid);
	if (!e)
		return none;
	/* as k8s__cgroup_of picks from /proc/PID/cgroup: v2's path, unless it is "/" and a
	 * v1 memory hierarchy holds the process elsewhere */
	r = path_of_id(&c->v2, v2, buf, sizeof(buf));
	if ((r || !strcmp(buf, "/")) && c->mem.fd >= 0) {
		char m[K8S_MAX_PATH + 1];

		if (!path_of_id(&c->mem, memory, m, sizeof(m)) && (r || strcmp(m, "/"))) {
			snprintf(buf, sizeof(buf), "%s", m);
			r = 0;
		}
	}
	if (r) {
		c->unnamed++; /* its entry, with no cgroup, stays: counted once */
	} else {
		parse(c, e, buf);
		c->by_id++;
	}
	e->read_ns = now_ns; /* (cgroups__prune finds it gone, and forgets it as the others) */
	return e->kv;
}

void cgroups__from_id_counts(const struct cgroups *c, unsigned long *found, unsigned long *not_found)
{
	*found = c->by_id;
	*not_found = c->unnamed;
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
