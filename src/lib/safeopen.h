/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * safeopen: opening a file that a traced process names, as root, without
 * letting that process steer the open.
 *
 * Everything a traced process names is hostile: the path in its
 * /proc/PID/maps may lead through symlinks out of its root (a container's
 * "/usr/lib/x.so -> /host/etc/shadow"), to a FIFO that blocks the reader, to
 * a device whose open has side effects, or to a file swapped in after the
 * mapping was made. Both functions here therefore:
 *   - resolve the path only inside the process's root (openat2 with
 *     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS on <proc_root>/PID/root), so
 *     "..", absolute symlinks and /proc magic links cannot leave it;
 *   - first open with O_PATH, which opens nothing (no FIFO wait, no device
 *     open routine), and accept only a regular file whose dev/inode are the
 *     ones maps gave;
 *   - only then reopen that very inode for reading (O_RDONLY | O_NONBLOCK |
 *     O_NOCTTY | O_CLOEXEC) through /proc/self/fd, and check it again.
 *
 * Return: a file descriptor (>= 0) the caller closes, or -errno with one
 * reason in err (may be NULL): -ELOOP (magic link or symlink loop), -ENOENT,
 * -EACCES, -EINVAL (not a regular file), -ESTALE (not the
 * mapped dev/inode), -ENAMETOOLONG.
 */
#ifndef GPUPROBE_SAFEOPEN_H
#define GPUPROBE_SAFEOPEN_H

#include <stddef.h>

/* Identity of a mapped file as /proc/PID/maps shows it ("08:01 1234"). */
struct safeopen_id {
	unsigned int dev_major, dev_minor;
	unsigned long long ino;
};

/*
 * Opens path (absolute, as seen inside process pid) below
 * "<proc_root>/<pid>/root" (proc_root NULL means "/proc"; tests pass a
 * fake tree). id NULL skips the dev/inode comparison (never do that for a
 * path out of maps: it is for files found by name, e.g. a debug file looked
 * up by build-id, whose contents the caller verifies instead).
 */
/*
 * The identity (device, inode) of the root directory of process pid ("<proc_root>/<pid>/root"):
 * processes in one container, or all on the host, share it. 0, or -errno (the process gone,
 * its root with it).
 */
int safe_proc_root_id(const char *proc_root, int pid, struct safeopen_id *id);

int safe_open_mapped(const char *proc_root, int pid, const char *path,
		     const struct safeopen_id *id, char *err, size_t errlen);

/*
 * Opens the mapping [start, end) of pid through
 * "<proc_root>/<pid>/map_files/START-END", which names the mapped inode
 * itself (also a deleted or overlay-hidden one) and needs CAP_SYS_ADMIN.
 * The same regular-file and dev/inode checks apply: the mapping may have
 * been replaced since maps was read.
 */
int safe_open_map_file(const char *proc_root, int pid,
		       unsigned long long start, unsigned long long end,
		       const struct safeopen_id *id, char *err, size_t errlen);

/*
 * libelf on a descriptor from the functions above, after checking the ELF
 * header's tables against the file's real size: libelf reads section
 * headers lazily and sizes its allocations from e_shnum/e_shoff, so a
 * hostile header could make it allocate or read far past the file.
 * ELF_C_READ (pread, no mmap): a file cut short later cannot raise SIGBUS.
 * Returns the Elf (elf_end it; the fd stays the caller's) or NULL with
 * errno (EBADMSG: corrupt, ENOEXEC: not a 64-bit ELF) and one reason in err.
 */
struct Elf;
struct Elf *safe_elf_begin(int fd, char *err, size_t errlen);

/*
 * Whether "<proc_root>/<pid>/root<path>", walked by the kernel from here as
 * any path is (libbpf attaches uprobes by path), reaches the file open on fd
 * without following a single symlink or leaving the root: path is resolved
 * with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS and must
 * lead to fd's device and inode. Such a walk takes the same steps from
 * gpuprobe as inside the process (an absolute link would resolve against
 * gpuprobe's root instead, a ".." above the process's root would leave it).
 * A path in /proc/PID/maps has no links (the kernel prints the file's own
 * name), so only a planted one fails. 1 yes, 0 no.
 */
int safe_path_is_plain(const char *proc_root, int pid, const char *path, int fd);

#endif /* GPUPROBE_SAFEOPEN_H */
