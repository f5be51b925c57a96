/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * procmaps: reading /proc/PID/maps.
 *
 * The proc root is a parameter everywhere so tests can point the code at a
 * fake directory tree laid out like /proc (PID/maps, PID/root, ...).
 */
#ifndef GPUPROBE_PROCMAPS_H
#define GPUPROBE_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>

#define PROCMAPS_PATH_MAX 4096

struct map_entry {
	unsigned long long start, end, offset;
	unsigned long long inode;
	unsigned int dev_major, dev_minor;
	char perms[5];			/* "r-xp", NUL-terminated */
	char path[PROCMAPS_PATH_MAX];	/* "" for anonymous maps; " (deleted)" stripped */
	bool deleted;
};

/*
 * Parses one line of /proc/PID/maps (trailing '\n' optional).
 * Returns 0 or -EINVAL; *out is only written on success.
 * Paths may contain spaces; a " (deleted)" suffix sets ->deleted and is
 * removed from ->path. Pseudo paths like "[heap]" are kept verbatim.
 */
int procmaps__parse_line(const char *line, struct map_entry *out);

/*
 * Calls cb for each mapping of pid, read from "<proc_root>/<pid>/maps"
 * (proc_root NULL means "/proc"). Lines that do not parse are skipped so one
 * odd line cannot hide the rest of the address space.
 * A non-zero return from cb stops the walk and is returned as is.
 * Returns 0, -ENOENT if the process does not exist, other -errno.
 */
int procmaps__foreach(const char *proc_root, int pid,
		      int (*cb)(const struct map_entry *e, void *ctx), void *ctx);

/*
 * Where addr is mapped in pid from a file: the file's path (as maps prints it, into path
 * of len bytes) and the file offset. 0, -ENOENT when no file mapping holds it, or
 * procmaps__foreach's error. (gpuprobe's own text: the file a uprobe on it takes.)
 */
int procmaps__locate(const char *proc_root, int pid, unsigned long long addr, char *path, size_t len,
		     unsigned long long *off);

struct mapped_lib {
	char path[PROCMAPS_PATH_MAX];	/* as seen inside the process */
	/*
	 * "<proc_root>/<pid>/root<path>" (deleted: ".../map_files/START-END"):
	 * what the file is called from here, for people. Never open it by this
	 * name: the process controls every component of it (symlinks, FIFOs).
	 * Open the file with libset__add_mapped (target.h) or safe_open_*.
	 */
	char host_path[4200];
	unsigned long long inode;
	unsigned int dev_major, dev_minor;
	unsigned long long start, end;	/* its first mapping, for map_files */
	bool deleted;
};

/*
 * Finds the distinct files mapped by pid whose basename starts with prefix
 * (e.g. "libcuda.so"), de-duplicated by dev+inode (by path for inode 0).
 * Only names are read here, nothing is opened.
 * Fills at most max entries (max > 0) and returns how many, or -errno.
 */
int procmaps__find_libs(const char *proc_root, int pid, const char *prefix,
			struct mapped_lib *out, int max);

#endif /* GPUPROBE_PROCMAPS_H */
