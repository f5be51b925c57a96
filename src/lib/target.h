/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What is traced: a command gpuprobe starts, a running PID, or the whole node; and which
 * libcuda files those map (de-duplicated by device+inode: uprobes bind to inodes).
 */
#ifndef GP_TARGET_H
#define GP_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GP_MAX_LIBS 32
#define GP_PATH_MAX 4200

struct mapped_lib;

/*
 * One driver file, opened and checked once: fd is a read-only descriptor of a regular
 * file (the set owns it), dev/ino are its fstat identity.
 *
 * fd_path, "/proc/self/fd/N" of fd, is what to open, parse or attach (libbpf and
 * uprobe_multi take a path): the kernel resolves it to the open file itself, whatever a
 * process does to the file's path afterwards. name is for people: the path as given, or
 * "/proc/PID/root<path in its maps>" for a file a process maps.
 *
 * path is for front ends that still open by path: for a file gpuprobe chose (--libcuda,
 * its LD_LIBRARY_PATH, ldconfig's cache, the usual driver folders) the path as given; for
 * a file a process names, its name when that name leads to fd's inode without a single
 * symlink (safe_path_is_plain: the kernel's walk from here then takes the same steps as
 * the check did) and the process is the one traced (-p), else fd_path (node-wide
 * discovery: any of those processes may exit before the probes go in, and its name of the
 * file with it). A link planted before the check is never followed; one swapped in
 * between the check and a by-path attach is, which only fd_path rules out.
 */
struct lib_entry {
	char path[GP_PATH_MAX];
	char name[GP_PATH_MAX];
	char fd_path[32];
	dev_t dev;
	ino_t ino;
	uid_t owner;  /* the file's owner (fstat) */
	bool trusted; /* root's, and only root may write it: the system's driver (libset__admit) */
	int fd;
};

/*
 * Library slots are shared by every user of the node (else one user's 40 copies of a
 * libcuda take all 32, and a driver that comes later is never probed). A file that root
 * does not own, or that others may write, takes a slot only while its owner holds fewer
 * than GP_SLOTS_PER_OWNER and all such files fewer than GP_SLOTS_USERS; root's files may
 * take any slot. What is refused is counted by reason.
 */
#define GP_SLOTS_PER_OWNER 4
#define GP_SLOTS_USERS (GP_MAX_LIBS / 2)

enum gp_slot_refusal {
	GP_SLOT_OWNER_SHARE, /* its owner holds GP_SLOTS_PER_OWNER slots */
	GP_SLOT_USERS_SHARE, /* files not root's hold GP_SLOTS_USERS slots */
	GP_SLOT_FULL,        /* every slot taken */
	GP_SLOT__COUNT,
};

struct lib_set {
	int n;
	uint64_t refused[GP_SLOT__COUNT]; /* files refused a slot, by reason */
	struct lib_entry libs[GP_MAX_LIBS];
};

/* "owner_share", "users_share", "table_full": the reason label of the daemon's metric. */
const char *libset__refusal_name(int reason);
/* Keeps the entry added last (index n - 1) if its owner may have one more slot, else
 * removes it and counts why: -1 kept, else the enum gp_slot_refusal. */
int libset__admit_last(struct lib_set *s);
/* A key for the file a mapping shows (device and inode as maps prints them). */
uint64_t libset__map_id(const struct mapped_lib *m);
/* Closes entry i's descriptor and gives its slot back (the last entry moves to i). */
void libset__remove(struct lib_set *s, int i);

/*
 * Adds a file gpuprobe chose: opened O_RDONLY | O_NONBLOCK | O_NOCTTY (a FIFO cannot
 * block it), a regular file only. 1 added, 0 a duplicate (same device+inode) or the set
 * full, -errno when it cannot be opened or is not a regular file.
 * "/proc/self/fd/N" (another set's fd_path) gets a descriptor of its own. A name a
 * process controls, "/proc/PID/root/..." or "/proc/PID/map_files/S-E" (procmaps'
 * host_path), is opened through safeopen: inside that process's root, never blocking,
 * regular files only; new code calls libset__add_mapped, which also checks the device
 * and inode that maps shows.
 */
int libset__add(struct lib_set *s, const char *path);

/*
 * Adds the file pid maps (an entry of procmaps__find_libs(proc_root, pid, ...)):
 * opened through the mapping itself (<proc_root>/PID/map_files, needs CAP_SYS_ADMIN),
 * else by its path resolved only inside the process's root (openat2 RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS, O_PATH first); accepted only as a regular file with the device
 * and inode that maps shows. 1 added, 0 duplicate or full, -errno with one line in err
 * ("/proc/123/root/usr/lib/libcuda.so.1: not a regular file").
 */
int libset__add_mapped(struct lib_set *s, const char *proc_root, int pid, const struct mapped_lib *m,
		       char *err, size_t len);

/* Adds a copy of an entry of another set (its own descriptor, same name): 1, 0 or -errno. */
int libset__add_entry(struct lib_set *s, const struct lib_entry *e);

/* How to name an entry to people: its path when that is a name gpuprobe may follow
 * (see struct lib_entry), else "/proc/self/fd/N (the process's name for it)", so a log
 * line never presents a name with a planted link in it as the file probed. */
const char *libset__label(const struct lib_entry *e, char *buf, size_t len);

/* Closes every descriptor; the set is empty after. NULL is fine. */
void libset__clear(struct lib_set *s);

/* Candidates for a process gpuprobe starts or for the whole node: LD_LIBRARY_PATH,
 * ldconfig's cache, the usual driver folders, and every libcuda mapped by a running
 * process (libset__add_mapped, so containers count). Returns the count. */
int target__find_libcuda(struct lib_set *s);
/* The libcuda files pid maps; -ESRCH when there is no such process. */
int target__find_pid_libcuda(int pid, struct lib_set *s);

/* The driver files to probe: --libcuda's (instead of discovery), those pid maps (pid >
 * 0), or every one found on the node; each checked. 0 or -errno with one line in err. */
int target__resolve(const char *libcuda, int pid, bool verbose, struct lib_set *libs, char *err, size_t len);
/* The files a command or a followed set would load from where the system keeps them
 * (LD_LIBRARY_PATH, ldconfig's cache, the usual driver folders), each checked; not the
 * copies other processes map: those are not traced, and probing them would log, count and
 * cost them. What a followed process maps or loads later, the library watcher
 * finds (src/core/libwatch.c). 0, or -ENOENT with one line in err when none. */
int target__resolve_installed(bool verbose, struct lib_set *libs, char *err, size_t len);
/* A command about to start: the libcuda files its loader will find through the program's
 * DT_RPATH/DT_RUNPATH, LD_LIBRARY_PATH and those of its DT_NEEDED chain (src/lib/ldpath.h),
 * checked and added to libs; files there already are not added twice. Returns how many it
 * added (0 when the program names no folder of its own, or is a script). */
int target__resolve_command(char *const argv[], bool verbose, struct lib_set *libs);

/* Checks that path is an ELF CUDA driver library; writes one reason to err, "path: why".
 * A path a process names (/proc/PID/root/...) is opened as libset__add opens it. */
int target__check_libcuda(const char *path, char *err, size_t len);
/* The same for an entry of a set, read through its descriptor; err is "name: why". */
int target__check_lib(const struct lib_entry *e, char *err, size_t len);

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
