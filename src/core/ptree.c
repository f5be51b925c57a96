/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/attach.h"
#include "core/events.h"
#include "core/objshare.h"
#include "procs.skel.h"
#include "core/ptree.h"
#include "lib/u64map.h"
#include "lib/util.h"

struct pt_entry {
	struct pt_proc p;
	uint64_t exit_ns; /* when its exit was handled (a reap's time cutoff: proctab.h) */
};

struct ptree {
	struct procs_bpf *skel;
	struct ptree_opts o;
	struct objshare share; /* o.share points here */
	struct u64map *procs; /* pid -> struct pt_entry (followed processes only) */
};

/* --cgroup PATH ("/kubepods.slice/...", as /proc/PID/cgroup shows it): its cgroup v2 id
 * (the inode of its directory) and depth, for bpf_get_current_ancestor_cgroup_id. */
static int set_cgroup(struct ptree *pt, const char *path, char *err, size_t len)
{
	static const char *const roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	char full[4200], procs[4300];
	struct stat st;
	__u32 level = 0;

	for (const char *c = path; *c; c++)
		if (*c != '/' && (c == path || c[-1] == '/'))
			level++;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(full, sizeof(full), "%s%s%s", roots[i], path[0] == '/' ? "" : "/", path);
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", full);
		if (stat(full, &st) == 0 && S_ISDIR(st.st_mode) && access(procs, F_OK) == 0) {
			pt->skel->rodata->cgroup_filter = st.st_ino;
			pt->skel->rodata->cgroup_level = level;
			return 0;
		}
	}
	snprintf(err, len, "--cgroup %s: no such cgroup v2 directory under /sys/fs/cgroup", path);
	return -ENOENT;
}

int ptree__open(struct ptree **out, const struct ptree_opts *o, char *err, size_t len)
{
	struct ptree *pt = calloc(1, sizeof(*pt));
	int r;

	*out = pt;
	if (!pt || !(pt->procs = u64map__new()) || !(pt->skel = procs_bpf__open())) {
		snprintf(err, len, "cannot open the process BPF object");
		return -ENOMEM;
	}
	pt->o = *o;
	pt->share = *o->share;
	pt->o.share = &pt->share;
	pt->skel->rodata->gp_filter = o->filter;
	pt->skel->rodata->follow_forks = o->follow_forks;
	if (o->comm) {
		snprintf((char *)pt->skel->rodata->comm_filter, GP_COMM_LEN, "%s", o->comm);
		pt->skel->rodata->by_comm = true;
	}
	if (o->cgroup && (r = set_cgroup(pt, o->cgroup, err, len)))
		return r;
	bpf_map__set_max_entries(pt->skel->maps.traced, pt->share.max_procs);
	r = bpf_map__reuse_fd(pt->skel->maps.events, pt->share.ring_fd);
	if (!r && pt->share.exits_fd >= 0) /* (its exit program writes none) */
		r = bpf_map__reuse_fd(pt->skel->maps.gp_exits, pt->share.exits_fd);
	if (!r)
		r = procs_bpf__load(pt->skel);
	if (r)
		attach__load_error(r, err, len);
	return r;
}

int ptree__traced_fd(const struct ptree *pt)
{
	return bpf_map__fd(pt->skel->maps.traced);
}

static struct pt_entry *entry(struct ptree *pt, uint32_t pid)
{
	struct pt_entry *e = u64map__get(pt->procs, pid);

	if (e && e->p.exited) { /* a new process with an old one's PID */
		free(u64map__del(pt->procs, pid));
		e = NULL;
	}
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e || u64map__put(pt->procs, pid, e)) {
			free(e);
			return NULL;
		}
		e->p.pid = pid;
	}
	return e;
}

static bool read_line(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

static int follow(struct ptree *pt, uint32_t pid, uint32_t ppid, uint32_t root)
{
	struct gp_traced t = { .root = root };
	struct pt_entry *e;

	if (bpf_map_update_elem(ptree__traced_fd(pt), &pid, &t, BPF_ANY))
		return -errno;
	e = entry(pt, pid);
	if (e) {
		char path[64];

		e->p.ppid = ppid;
		e->p.root = root;
		/* the name it runs under now (an exec record renames it) */
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		if (read_line(path, e->p.comm, sizeof(e->p.comm)))
			e->p.comm[strcspn(e->p.comm, "\n")] = '\0';
	}
	return 0;
}

/* The parent of pid from /proc/PID/stat ("pid (comm) S ppid ..."; comm may hold ')'). */
static int parent_of(const char *pid, uint32_t *ppid)
{
	char buf[512], *st;
	int r = gp_proc_stat((uint32_t)strtoul(pid, NULL, 10), buf, sizeof(buf), &st);

	if (r)
		return r;
	return sscanf(st, "%*c %u", ppid) == 1 ? 0 : -EINVAL;
}

/* Every process whose ancestry reaches root (followed as root's tree). */
static void follow_descendants(struct ptree *pt, uint32_t root)
{
	struct u64map *parents = u64map__new();
	struct dirent *d;
	DIR *dir = opendir("/proc");
	bool grew = true;

	if (!parents || !dir)
		goto out;
	while ((d = readdir(dir))) {
		uint32_t ppid;

		if (isdigit((unsigned char)d->d_name[0]) && !parent_of(d->d_name, &ppid))
			u64map__put(parents, strtoul(d->d_name, NULL, 10), (void *)(uintptr_t)(ppid + 1));
	}
	/* to a fixed point: a process is followed once its parent is (bounded by depth) */
	for (int round = 0; grew && round < 64; round++) {
		uint64_t pid;
		void *v;

		grew = false;
		for (size_t it = 0; u64map__next(parents, &it, &pid, &v);) {
			uint32_t ppid = (uint32_t)((uintptr_t)v - 1);
			struct pt_entry *pe = u64map__get(pt->procs, ppid), *e = u64map__get(pt->procs, pid);

			if (pe && pe->p.root == root && !e) {
				follow(pt, (uint32_t)pid, ppid, root);
				grew = true;
			}
		}
	}
out:
	if (dir)
		closedir(dir);
	u64map__free(parents);
}

int ptree__seed(struct ptree *pt, uint32_t pid, bool descendants, char *err, size_t len)
{
	int r = follow(pt, pid, 0, pid);

	if (r) {
		snprintf(err, len, "cannot follow PID %u: %s", pid, strerror(-r));
		return r;
	}
	if (descendants)
		follow_descendants(pt, pid);
	return 0;
}

static bool in_cgroup(const char *pid, const char *cg)
{
	char path[64], buf[4096], *l;
	size_t n;

	cg += cg[0] == '/';
	n = strlen(cg);
	snprintf(path, sizeof(path), "/proc/%s/cgroup", pid);
	if (!read_line(path, buf, sizeof(buf)))
		return false;
	l = strstr(buf, "0::");
	if (!l)
		return false;
	l += 3 + (l[3] == '/');
	l[strcspn(l, "\n")] = '\0';
	return n && !strncmp(l, cg, n) && (l[n] == '\0' || l[n] == '/' || cg[n - 1] == '/');
}

/* --comm and --cgroup: the processes that match already, at start */
static void seed_matches(struct ptree *pt)
{
	struct dirent *d;
	DIR *dir;

	if (!pt->o.comm && !pt->o.cgroup)
		return;
	dir = opendir("/proc");
	while (dir && (d = readdir(dir))) {
		char path[300], comm[64];
		bool match = false;

		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		if (pt->o.comm && read_line(path, comm, sizeof(comm))) {
			comm[strcspn(comm, "\n")] = '\0';
			match = !strcmp(comm, pt->o.comm);
		}
		if (pt->o.cgroup && in_cgroup(d->d_name, pt->o.cgroup))
			match = true;
		if (match)
			follow(pt, (uint32_t)strtoul(d->d_name, NULL, 10), 0, (uint32_t)strtoul(d->d_name, NULL, 10));
	}
	if (dir)
		closedir(dir);
}

static void on_proc(void *ctx, const struct gp_proc_event *e)
{
	struct ptree *pt = ctx;
	struct pt_entry *pe;

	if (!pt->o.filter)
		return; /* every process: the modes take the execs; no tree to keep */
	if (e->type == GP_EV_GONE) {
		pe = u64map__get(pt->procs, e->pid);
		if (pe) {
			pe->p.exited = true;
			pe->exit_ns = gp_mono_ns();
		}
		return;
	}
	pe = e->type == GP_EV_FORK ? entry(pt, e->pid) : u64map__get(pt->procs, e->pid);
	if (!pe && e->type == GP_EV_EXEC) /* --comm or --cgroup matched at its exec */
		pe = entry(pt, e->pid);
	if (!pe)
		return;
	pe->p.root = e->root;
	pe->p.img = e->img;
	if (e->type == GP_EV_FORK)
		pe->p.ppid = e->ppid;
	memcpy(pe->p.comm, e->comm, sizeof(pe->p.comm));
}

int ptree__start(struct ptree *pt, struct attach_set *links, char *err, size_t len)
{
	static const struct gp_on on[] = { GP_ON_PROCS(on_proc) };
	struct gp_handlers h = { .ctx = pt, GP_ONS(on) };
	struct bpf_program *progs[] = { pt->skel->progs.procs_fork, pt->skel->progs.procs_exec,
					pt->skel->progs.procs_exit };
	int r = 0;

	seed_matches(pt);
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]) && !r; i++)
		r = attach_set__auto(links, progs[i], err, len);
	if (!r)
		r = objshare__subscribe(&pt->share, &h);
	return r;
}

const struct pt_proc *ptree__get(const struct ptree *pt, uint32_t pid)
{
	struct pt_entry *e = pt ? u64map__get(pt->procs, pid) : NULL;

	return e ? &e->p : NULL;
}

size_t ptree__pids(const struct ptree *pt, uint32_t *out, size_t cap)
{
	size_t n = 0;
	uint64_t pid;
	void *v;

	for (size_t it = 0; pt && n < cap && u64map__next(pt->procs, &it, &pid, &v);)
		if (!((struct pt_entry *)v)->p.exited)
			out[n++] = (uint32_t)pid;
	return n;
}

size_t ptree__live(struct ptree *pt)
{
	size_t n = 0;
	uint64_t pid;
	void *v;

	for (size_t it = 0; pt && u64map__next(pt->procs, &it, &pid, &v);) {
		struct pt_entry *e = v;

		if (e->p.exited)
			continue;
		if (kill((pid_t)pid, 0) && errno == ESRCH) {
			e->p.exited = true;
			e->exit_ns = gp_mono_ns();
			continue;
		}
		n++;
	}
	return n;
}

void ptree__drops(const struct ptree *pt, uint64_t *lost_records, uint64_t *table_full)
{
	*lost_records = pt ? __atomic_load_n(&pt->skel->bss->pdrops[0], __ATOMIC_RELAXED) : 0;
	*table_full = pt ? __atomic_load_n(&pt->skel->bss->pdrops[1], __ATOMIC_RELAXED) : 0;
}

void ptree__reap(struct ptree *pt, uint64_t cutoff_ns)
{
	uint64_t doomed[256], pid;
	size_t n = 0;
	void *v;

	for (size_t it = 0; n < 256 && u64map__next(pt->procs, &it, &pid, &v);)
		if (((struct pt_entry *)v)->p.exited && ((struct pt_entry *)v)->exit_ns < cutoff_ns)
			doomed[n++] = pid;
	for (size_t i = 0; i < n; i++)
		free(u64map__del(pt->procs, doomed[i]));
}

void ptree__free(struct ptree *pt)
{
	if (!pt)
		return;
	procs_bpf__destroy(pt->skel);
	u64map__free_all(pt->procs, NULL);
	free(pt);
}
