/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "elfsym.h"
#include "procmaps.h"
#include "target.h"

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

int libset__add(struct lib_set *s, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	for (int i = 0; i < s->n; i++)
		if (s->libs[i].dev == st.st_dev && s->libs[i].ino == st.st_ino)
			return 0;
	if (s->n >= GP_MAX_LIBS)
		return 0;
	snprintf(s->libs[s->n].path, sizeof(s->libs[s->n].path), "%s", path);
	s->libs[s->n].dev = st.st_dev;
	s->libs[s->n].ino = st.st_ino;
	s->n++;
	return 1;
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

static void add_running(struct lib_set *s)
{
	struct mapped_lib libs[4];
	struct dirent *d;
	DIR *dir = opendir("/proc");

	if (!dir)
		return;
	while ((d = readdir(dir))) {
		int pid = atoi(d->d_name), n;

		if (pid <= 0)
			continue;
		n = procmaps__find_libs("/proc", pid, "libcuda.so", libs, 4);
		for (int i = 0; i < n; i++)
			libset__add(s, libs[i].host_path);
	}
	closedir(dir);
}

int target__find_libcuda(struct lib_set *s)
{
	add_ld_library_path(s);
	add_ldconfig(s);
	for (size_t i = 0; i < sizeof(usual_dirs) / sizeof(usual_dirs[0]); i++)
		add_dir(s, usual_dirs[i]);
	add_running(s);
	return s->n;
}

int target__find_pid_libcuda(int pid, struct lib_set *s)
{
	struct mapped_lib libs[GP_MAX_LIBS];
	int n;

	n = procmaps__find_libs("/proc", pid, "libcuda.so", libs, GP_MAX_LIBS);
	if (n < 0)
		return n == -ENOENT ? -ESRCH : n;
	for (int i = 0; i < n; i++)
		libset__add(s, libs[i].host_path);
	return s->n;
}

int target__check_libcuda(const char *path, char *err, size_t len)
{
	char why[256];
	int r;

	r = elfsym__check(path, why, sizeof(why));
	if (r < 0) {
		snprintf(err, len, "%s: %s", path, why);
		return r;
	}
	r = elfsym__has_func(path, "cuMemAlloc_v2");
	if (r <= 0) {
		snprintf(err, len, "%s: not a CUDA driver library (it does not export cuMemAlloc_v2)",
			 path);
		return r < 0 ? r : -ENOEXEC;
	}
	return 0;
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
