/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lib/elfsym.h"
#include "lib/ldpath.h"
#include "lib/procmaps.h"
#include "lib/safeopen.h"
#include "lib/target.h"
#include "lib/u64map.h"
#include "lib/util.h"

#if defined(__aarch64__)
#define GP_MULTIARCH "aarch64-linux-gnu"
#define GP_LDCONFIG_ARCH "AArch64" /* ldconfig -p: "(libc6,AArch64)" */
#else
#define GP_MULTIARCH "x86_64-linux-gnu"
#define GP_LDCONFIG_ARCH "x86-64"
#endif

static const char *const usual_dirs[] = {
	"/usr/lib/" GP_MULTIARCH, "/usr/lib64", "/usr/lib", "/lib/" GP_MULTIARCH,
	"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/wsl/lib",
	"/usr/local/cuda/compat",
};

/* "/proc/self/fd/N" of fd: the kernel resolves it to the open file itself. */
static void fd_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* Is path "/proc/self/fd/N" (one of our descriptors, e.g. another set's entry)? */
static bool is_self_fd(const char *path)
{
	const char *p = path;

	if (strncmp(p, "/proc/self/fd/", 14))
		return false;
	p += 14;
	if (!*p)
		return false;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/*
 * Splits "/proc/PID/root/rest" (*rest = "/rest") or "/proc/PID/map_files/S-E": the
 * names procmaps__find_libs gives for files a process maps. 1 root, 2 map_files, 0
 * neither.
 */
static int proc_named(const char *path, int *pid, const char **rest, unsigned long long *start,
		      unsigned long long *end)
{
	const char *p = path;
	char *stop;
	long v;

	if (strncmp(p, "/proc/", 6) || p[6] < '1' || p[6] > '9')
		return 0;
	errno = 0;
	v = strtol(p + 6, &stop, 10);
	if (errno || v <= 0 || v > INT_MAX || *stop != '/')
		return 0;
	*pid = (int)v;
	p = stop;
	if (!strncmp(p, "/root/", 6)) {
		*rest = p + 5;
		return 1;
	}
	if (!strncmp(p, "/map_files/", 11)) {
		p += 11;
		errno = 0;
		*start = strtoull(p, &stop, 16);
		if (errno || stop == p || *stop != '-')
			return 0;
		p = stop + 1;
		*end = strtoull(p, &stop, 16);
		if (errno || stop == p || *stop)
			return 0;
		return 2;
	}
	return 0;
}

/* safeopen's message without the "path: " it starts with, when it does. */
static const char *reason_only(const char *why, const char *path)
{
	size_t n = strlen(path);

	return !strncmp(why, path, n) && why[n] == ':' && why[n + 1] == ' ' ? why + n + 2 : why;
}

/*
 * Opens a file for a set or a check: a name a process controls through safeopen, any
 * other path (gpuprobe's choice) without blocking and as a regular file only. Returns the
 * descriptor or -errno with the reason in err (without the path).
 */
static int open_lib(const char *path, char *err, size_t len)
{
	unsigned long long start = 0, end = 0;
	const char *rest = NULL;
	int fd = -1, pid = 0, r = -EINVAL, kind;
	char why[512] = "";
	struct stat st;

	kind = proc_named(path, &pid, &rest, &start, &end);
	if (kind == 1)
		r = safe_open_mapped("/proc", pid, rest, NULL, why, sizeof(why));
	else if (kind == 2)
		r = safe_open_map_file("/proc", pid, start, end, NULL, why, sizeof(why));
	if (kind) {
		if (r < 0)
			snprintf(err, len, "%s", reason_only(why, kind == 1 ? rest : path));
		return r;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, len, "%s", strerror(-r));
		return r;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		snprintf(err, len, "%s", S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
		close(fd);
		return r;
	}
	return fd;
}

/*
 * Takes fd (closed unless kept): 1 added, 0 duplicate or full, -errno. path NULL: the
 * front ends' by-path name is fd_path.
 */
static int add_fd(struct lib_set *s, int fd, const char *path, const char *name)
{
	struct lib_entry *e;
	struct stat st;
	int r = 0;

	if (fstat(fd, &st)) {
		r = -errno;
		goto cleanup;
	}
	for (int i = 0; i < s->n; i++)
		if (s->libs[i].dev == st.st_dev && s->libs[i].ino == st.st_ino)
			goto cleanup;
	if (s->n >= GP_MAX_LIBS) {
		s->refused[GP_SLOT_FULL]++;
		goto cleanup;
	}
	e = &s->libs[s->n++];
	e->fd = fd;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->owner = st.st_uid;
	e->trusted = st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
	fd_path(e->fd_path, sizeof(e->fd_path), fd);
	snprintf(e->path, sizeof(e->path), "%s", path ? path : e->fd_path);
	snprintf(e->name, sizeof(e->name), "%s", name);
	fd = -1;
	r = 1;
cleanup:
	if (fd >= 0)
		close(fd);
	return r;
}

int libset__add(struct lib_set *s, const char *path)
{
	unsigned long long start, end;
	char why[512], name[GP_PATH_MAX];
	const char *rest;
	int fd, pid;
	ssize_t n;

	fd = open_lib(path, why, sizeof(why));
	if (fd < 0)
		return fd;
	switch (proc_named(path, &pid, &rest, &start, &end)) {
	case 1: /* by name only where no link of theirs is on the way */
		return add_fd(s, fd, safe_path_is_plain("/proc", pid, rest, fd) ? path : NULL, path);
	case 2: /* map_files: the kernel's own link to the mapped file */
		return add_fd(s, fd, path, path);
	default:
		break;
	}
	if (!is_self_fd(path))
		return add_fd(s, fd, path, path);
	/* another descriptor of ours: keep our own, named as the kernel names it */
	n = readlink(path, name, sizeof(name) - 1);
	name[n > 0 ? n : 0] = '\0';
	return add_fd(s, fd, NULL, n > 0 ? name : path);
}

const char *libset__label(const struct lib_entry *e, char *buf, size_t len)
{
	if (strcmp(e->path, e->fd_path) || !strcmp(e->name, e->fd_path))
		return e->path;
	snprintf(buf, len, "%s (%s)", e->fd_path, e->name);
	return buf;
}

int libset__add_entry(struct lib_set *s, const struct lib_entry *e)
{
	int fd;

	fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	return add_fd(s, fd, strcmp(e->path, e->fd_path) ? e->path : NULL, e->name);
}

/* by_name: path may be the process's name of the file (see target.h), else fd_path. */
static int add_mapped(struct lib_set *s, const char *proc_root, int pid, const struct mapped_lib *m,
		      bool by_name, char *err, size_t len)
{
	struct safeopen_id id = { .dev_major = m->dev_major, .dev_minor = m->dev_minor, .ino = m->inode };
	char why[512] = "", name[GP_PATH_MAX];
	int fd, root_tried = 0;
	bool plain;

	if (!proc_root)
		proc_root = "/proc";
	snprintf(name, sizeof(name), "%s/%d/root%s%s", proc_root, pid, m->path,
		 m->deleted ? " (deleted)" : "");
	/*
	 * The mapping itself first: it is the mapped inode whatever its path leads to now
	 * (also deleted or overmounted files). Without CAP_SYS_ADMIN, the path resolved
	 * inside the process's root, where its links cannot lead out.
	 */
	fd = safe_open_map_file(proc_root, pid, m->start, m->end, &id, why, sizeof(why));
	if (fd < 0 && !m->deleted) {
		root_tried = 1;
		fd = safe_open_mapped(proc_root, pid, m->path, &id, why, sizeof(why));
	}
	if (fd < 0) {
		if (err && len)
			snprintf(err, len, "%s: %s", name,
				 root_tried ? reason_only(why, m->path) : why);
		return fd;
	}
	plain = by_name && !m->deleted && safe_path_is_plain(proc_root, pid, m->path, fd);
	return add_fd(s, fd, plain ? name : NULL, name);
}

int libset__add_mapped(struct lib_set *s, const char *proc_root, int pid, const struct mapped_lib *m,
		       char *err, size_t len)
{
	return add_mapped(s, proc_root, pid, m, true, err, len);
}

uint64_t libset__map_id(const struct mapped_lib *m)
{
	return ((uint64_t)m->dev_major << 52) ^ ((uint64_t)m->dev_minor << 40) ^ m->inode;
}

const char *libset__refusal_name(int reason)
{
	static const char *const names[GP_SLOT__COUNT] = { "owner_share", "users_share", "table_full" };

	return reason >= 0 && reason < GP_SLOT__COUNT ? names[reason] : "unknown";
}

void libset__remove(struct lib_set *s, int i)
{
	if (i < 0 || i >= s->n)
		return;
	if (s->libs[i].fd >= 0)
		close(s->libs[i].fd);
	if (i != s->n - 1)
		s->libs[i] = s->libs[s->n - 1];
	s->n--;
}

int libset__admit_last(struct lib_set *s)
{
	const struct lib_entry *e = s->n ? &s->libs[s->n - 1] : NULL;
	int owner = 0, users = 0, why = -1;

	if (!e || e->trusted)
		return -1;
	for (int i = 0; i < s->n - 1; i++) {
		if (s->libs[i].trusted)
			continue;
		users++;
		owner += s->libs[i].owner == e->owner;
	}
	if (owner >= GP_SLOTS_PER_OWNER)
		why = GP_SLOT_OWNER_SHARE;
	else if (users >= GP_SLOTS_USERS)
		why = GP_SLOT_USERS_SHARE;
	if (why >= 0) {
		s->refused[why]++;
		libset__remove(s, s->n - 1);
	}
	return why;
}

void libset__clear(struct lib_set *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		if (s->libs[i].fd >= 0)
			close(s->libs[i].fd);
	s->n = 0;
}

static void add_dir(struct lib_set *s, const char *dir)
{
	char path[GP_PATH_MAX];

	snprintf(path, sizeof(path), "%s/libcuda.so.1", dir);
	libset__add(s, path);
}

static void add_ld_library_path(struct lib_set *s)
{
	const char *env = getenv("LD_LIBRARY_PATH");
	char *copy, *save = NULL, *dir;

	if (!env || !*env)
		return;
	copy = strdup(env);
	if (!copy)
		return;
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
		if (*dir == '/')
			add_dir(s, dir);
	free(copy);
}

static void add_ldconfig(struct lib_set *s)
{
	char line[GP_PATH_MAX];
	FILE *f;

	/* ldconfig's cache is the authority the dynamic loader uses; libbpf never reads it */
	f = popen("ldconfig -p 2>/dev/null", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *arrow = strstr(line, "=> "), *nl;

		if (!strstr(line, "libcuda.so.1 ") || !arrow || !strstr(line, GP_LDCONFIG_ARCH))
			continue;
		arrow += 3;
		nl = strchr(arrow, '\n');
		if (nl)
			*nl = '\0';
		libset__add(s, arrow);
	}
	pclose(f);
}

/* Every libcuda a running process maps, each opened as libset__add_mapped opens it. */
static void add_running(struct lib_set *s, bool verbose)
{
	struct mapped_lib libs[4];
	char why[GP_PATH_MAX + 256];
	struct dirent *d;
	DIR *dir = opendir("/proc");
	struct u64map *refused = u64map__new(); /* counted once, not per process mapping it */

	if (!dir || !refused) {
		if (dir)
			closedir(dir);
		u64map__free(refused);
		return;
	}
	while ((d = readdir(dir))) {
		int pid = atoi(d->d_name), n;

		if (pid <= 0)
			continue;
		n = procmaps__find_libs("/proc", pid, "libcuda.so", libs, 4);
		for (int i = 0; i < n; i++) {
			uint64_t id = libset__map_id(&libs[i]);
			int r;

			if (u64map__get(refused, id))
				continue;
			/* any process, not the target: it may be gone before the probes go in, its
			 * name of the file with it; the descriptor stays */
			r = add_mapped(s, "/proc", pid, &libs[i], false, why, sizeof(why));
			if (r < 0 && verbose)
				gp_log(GP_LOG_INFO, "skipping %s", why);
			else if ((r == 1 && libset__admit_last(s) >= 0) || (r == 0 && s->n == GP_MAX_LIBS))
				u64map__put(refused, id, (void *)1); /* one user's copies: their share */
		}
	}
	closedir(dir);
	u64map__free(refused);
}

/* running: the files other processes map too (a node-wide run's targets are those processes) */
static int find_libcuda(struct lib_set *s, bool running, bool verbose)
{
	add_ld_library_path(s);
	add_ldconfig(s);
	for (size_t i = 0; i < sizeof(usual_dirs) / sizeof(usual_dirs[0]); i++)
		add_dir(s, usual_dirs[i]);
	if (running)
		add_running(s, verbose);
	return s->n;
}

int target__find_libcuda(struct lib_set *s)
{
	return find_libcuda(s, true, false);
}

static int find_pid_libcuda(int pid, struct lib_set *s, bool verbose, char *why, size_t len)
{
	struct mapped_lib *libs = calloc(GP_MAX_LIBS, sizeof(*libs));
	char reason[GP_PATH_MAX + 256];
	int n;

	if (!libs)
		return -ENOMEM;
	n = procmaps__find_libs("/proc", pid, "libcuda.so", libs, GP_MAX_LIBS);
	if (n < 0) {
		n = n == -ENOENT ? -ESRCH : n;
		goto cleanup;
	}
	for (int i = 0; i < n; i++) {
		if (libset__add_mapped(s, "/proc", pid, &libs[i], reason, sizeof(reason)) >= 0)
			continue;
		if (verbose)
			gp_log(GP_LOG_INFO, "skipping %s", reason);
		if (why && !*why)
			snprintf(why, len, "%s", reason);
	}
	n = s->n;
cleanup:
	free(libs);
	return n;
}

int target__find_pid_libcuda(int pid, struct lib_set *s)
{
	return find_pid_libcuda(pid, s, false, NULL, 0);
}

/* Checks the file open on fd; one reason in why. */
static int check_fd(int fd, char *why, size_t len)
{
	int r;

	r = elfsym__check_fd(fd, why, len);
	if (r < 0)
		return r;
	r = elfsym__has_func_fd(fd, "cuMemAlloc_v2");
	if (r <= 0) {
		snprintf(why, len, "not a CUDA driver library (it does not export cuMemAlloc_v2)");
		return r < 0 ? r : -ENOEXEC;
	}
	return 0;
}

int target__check_libcuda(const char *path, char *err, size_t len)
{
	char why[512] = "";
	int fd, r;

	fd = open_lib(path, why, sizeof(why));
	if (fd < 0) {
		snprintf(err, len, "%s: %s", path, why);
		return fd;
	}
	r = check_fd(fd, why, sizeof(why));
	if (r)
		snprintf(err, len, "%s: %s", path, why);
	close(fd);
	return r;
}

int target__check_lib(const struct lib_entry *e, char *err, size_t len)
{
	char why[512] = "";
	int r;

	r = check_fd(e->fd, why, sizeof(why));
	if (r)
		snprintf(err, len, "%s: %s", e->name, why);
	return r;
}

int target__spawn(char *const argv[], struct spawned *sp)
{
	int go[2] = { -1, -1 }, er[2] = { -1, -1 }, err = 0;
	pid_t pid;

	sp->pid = -1;
	sp->go_fd = sp->err_fd = -1;
	if (pipe2(go, O_CLOEXEC) || pipe2(er, O_CLOEXEC)) {
		err = -errno;
		goto cleanup;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto cleanup;
	}
	if (pid == 0) {
		char c;
		int e;

		/* wait until the probes are in, so the very first call is seen */
		close(go[1]);
		close(er[0]);
		/* EOF means gpuprobe died before attaching: never run untraced */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		e = errno;
		if (write(er[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	sp->pid = pid;
	sp->go_fd = go[1];
	sp->err_fd = er[0];
	go[1] = er[0] = -1;
cleanup:
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (er[i] >= 0)
			close(er[i]);
	}
	return err;
}

int target__release(struct spawned *sp)
{
	char c = 'g';
	int e = 0;
	ssize_t n;

	if (write(sp->go_fd, &c, 1) < 0)
		return -errno;
	close(sp->go_fd);
	sp->go_fd = -1;
	n = read(sp->err_fd, &e, sizeof(e));
	close(sp->err_fd);
	sp->err_fd = -1;
	return n == (ssize_t)sizeof(e) ? -e : 0;
}

void target__abort(struct spawned *sp)
{
	if (sp->pid > 0) {
		kill(sp->pid, SIGKILL);
		waitpid(sp->pid, NULL, 0);
		sp->pid = -1;
	}
	if (sp->go_fd >= 0)
		close(sp->go_fd);
	if (sp->err_fd >= 0)
		close(sp->err_fd);
	sp->go_fd = sp->err_fd = -1;
}

/* Whether /proc/PID/maps can be read here: another user's process needs ptrace access
 * (CAP_SYS_PTRACE), and an empty read is not an empty address space. */
static bool readable_maps(int pid)
{
	char path[64], c;
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != EACCES && errno != EPERM;
	ok = read(fd, &c, 1) >= 0 || (errno != EACCES && errno != EPERM);
	close(fd);
	return ok;
}

/* The first reason a candidate was refused, kept for the error line. */
static int check_each(const struct lib_set *found, struct lib_set *libs, bool verbose, char *why, size_t len)
{
	char reason[GP_PATH_MAX + 512] = "";

	for (int i = 0; i < found->n; i++) {
		if (target__check_lib(&found->libs[i], reason, sizeof(reason))) {
			if (verbose)
				gp_log(GP_LOG_INFO, "skipping %s", reason);
			if (!*why)
				snprintf(why, len, "%s", reason);
			continue;
		}
		libset__add_entry(libs, &found->libs[i]);
	}
	return libs->n;
}

/* --libcuda PATH: that one file, checked. found is scratch space. */
static int resolve_given(const char *libcuda, struct lib_set *found, struct lib_set *libs, char *err,
			 size_t len)
{
	char real[PATH_MAX], why[GP_PATH_MAX + 512] = "";
	int r;

	/* libbpf resolves a relative name through fixed folders: give it an absolute one
	 * (a descriptor handed down, /proc/self/fd/N, is one already) */
	if (is_self_fd(libcuda)) {
		snprintf(real, sizeof(real), "%s", libcuda);
	} else if (!realpath(libcuda, real)) {
		r = -errno;
		snprintf(err, len, "--libcuda %s: %s", libcuda, strerror(-r));
		return r;
	}
	r = libset__add(found, real);
	if (r < 0) {
		snprintf(err, len, "--libcuda %s: %s", libcuda, strerror(-r));
		return r;
	}
	if (!is_self_fd(libcuda))
		snprintf(found->libs[0].name, sizeof(found->libs[0].name), "%s", libcuda);
	r = target__check_lib(&found->libs[0], why, sizeof(why));
	if (r) {
		snprintf(err, len, "--libcuda %s", why);
		return r;
	}
	libset__add_entry(libs, &found->libs[0]);
	return 0;
}

/* -p PID: the libcuda files pid maps into found (0), or -errno with the line that says
 * why none (why: the first candidate refused). */
static int resolve_pid(int pid, struct lib_set *found, bool verbose, char *why, size_t wlen, char *err,
		       size_t len)
{
	int r = find_pid_libcuda(pid, found, verbose, why, wlen);

	if (r == 0 && !*why && !readable_maps(pid))
		r = -EACCES;
	if (r == -ESRCH)
		snprintf(err, len, "no process with PID %d", pid);
	else if (r == -EACCES || r == -EPERM)
		snprintf(err, len, "cannot read the mappings of PID %d: %s (another user's process: needs CAP_SYS_PTRACE, or root)",
			 pid, strerror(-r));
	else if (r < 0)
		snprintf(err, len, "cannot read the mappings of PID %d: %s", pid, strerror(-r));
	else if (r == 0 && *why)
		snprintf(err, len, "no usable libcuda found (%s)", why);
	else if (r == 0)
		snprintf(err, len, "PID %d does not map libcuda.so (not a CUDA process yet? use --libcuda PATH to probe a file anyway)",
			 pid);
	return r <= 0 ? (r ? r : -ENOENT) : 0;
}

static int resolve(const char *libcuda, int pid, bool running, bool verbose, struct lib_set *libs, char *err,
		   size_t len)
{
	char why[GP_PATH_MAX + 512] = "";
	struct lib_set *found;
	int r = 0;

	found = calloc(1, sizeof(*found));
	if (!found)
		return -ENOMEM;
	if (libcuda) {
		r = resolve_given(libcuda, found, libs, err, len);
		goto cleanup;
	}
	if (pid > 0) {
		r = resolve_pid(pid, found, verbose, why, sizeof(why), err, len);
	} else if (find_libcuda(found, running, verbose) == 0) {
		snprintf(err, len, "no libcuda.so.1 found (LD_LIBRARY_PATH, ldconfig, the usual driver folders%s): use --libcuda PATH",
			 running ? ", running processes" : "");
		r = -ENOENT;
	}
	if (!r && check_each(found, libs, verbose, why, sizeof(why)) == 0) {
		snprintf(err, len, "no usable libcuda found (%s)", why);
		r = -ENOENT;
	}
cleanup:
	libset__clear(found);
	free(found);
	return r;
}

int target__resolve(const char *libcuda, int pid, bool verbose, struct lib_set *libs, char *err, size_t len)
{
	return resolve(libcuda, pid, true, verbose, libs, err, len);
}

int target__resolve_installed(bool verbose, struct lib_set *libs, char *err, size_t len)
{
	return resolve(NULL, -1, false, verbose, libs, err, len);
}

struct cmd_found {
	struct lib_set *found;
};

static void cmd_candidate(void *ctx, const char *path)
{
	struct cmd_found *f = ctx;
	char real[PATH_MAX];

	/* named as the kernel names it in the process's maps, not as the RUNPATH spelt it */
	libset__add(f->found, realpath(path, real) ? real : path);
}

int target__resolve_command(char *const argv[], bool verbose, struct lib_set *libs)
{
	struct cmd_found f = { calloc(1, sizeof(struct lib_set)) };
	char why[GP_PATH_MAX + 512] = "";
	int before = libs->n, r;

	if (!f.found)
		return 0;
	r = ldpath__find(argv[0], "libcuda.so.1", cmd_candidate, &f);
	if (r < 0 && verbose)
		gp_log(GP_LOG_INFO, "%s: no dynamic section read (%s): its libraries are found as it loads them",
		       argv[0], strerror(-r));
	check_each(f.found, libs, verbose, why, sizeof(why));
	libset__clear(f.found);
	free(f.found);
	return libs->n - before;
}
