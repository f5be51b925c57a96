/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What is traced: a command gpuprobe starts, a running PID, or the whole node; and which
 * libcuda files those map (de-duplicated by device+inode: uprobes bind to inodes).
 */
#ifndef GP_TARGET_H
#define GP_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define GP_MAX_LIBS 32
#define GP_PATH_MAX 4200

struct lib_entry {
	char path[GP_PATH_MAX]; /* openable from gpuprobe's mount namespace */
	dev_t dev;
	ino_t ino;
};

struct lib_set {
	int n;
	struct lib_entry libs[GP_MAX_LIBS];
};

/* Adds path unless a file with its device+inode is already there: 1 added, 0 duplicate,
 * -errno when it cannot be stat'ed. */
int libset__add(struct lib_set *s, const char *path);

/* Candidates for a process gpuprobe starts or for the whole node: LD_LIBRARY_PATH,
 * ldconfig's cache, the usual driver folders, and every libcuda mapped by a running
 * process (through /proc/PID/root, so containers count). Returns the count. */
int target__find_libcuda(struct lib_set *s);
/* The libcuda files pid maps; -ESRCH when there is no such process. */
int target__find_pid_libcuda(int pid, struct lib_set *s);

/* The driver files to probe: --libcuda's (instead of discovery), those pid maps (pid >
 * 0), or every one found on the node; each checked. 0 or -errno with one line in err. */
int target__resolve(const char *libcuda, int pid, bool verbose, struct lib_set *libs, char *err, size_t len);

/* Checks that path is an ELF CUDA driver library; writes one reason to err. */
int target__check_libcuda(const char *path, char *err, size_t len);

/* Forks argv stopped before exec: it runs only after target__release(). */
struct spawned {
	pid_t pid;
	int go_fd;  /* write end: closing it lets the child exec */
	int err_fd; /* read end: the child's exec errno, or EOF on success */
};
int target__spawn(char *const argv[], struct spawned *sp);
/* Lets the child exec; returns 0, or -errno when exec failed. */
int target__release(struct spawned *sp);
/* Kills and reaps a child that never ran (setup failed). */
void target__abort(struct spawned *sp);

#endif
