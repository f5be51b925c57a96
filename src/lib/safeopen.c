// SPDX-License-Identifier: BSD-3-Clause
/* safeopen: see safeopen.h for why each step is there. */
#define _GNU_SOURCE
#include "lib/safeopen.h"
#include "lib/errbuf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define SAFEOPEN_PATH_MAX 4096

static int sys_openat2(int dirfd, const char *path, struct open_how *how)
{
	return (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

static bool same_id(const struct stat *st, const struct safeopen_id *id)
{
	return major(st->st_dev) == id->dev_major &&
	       minor(st->st_dev) == id->dev_minor &&
	       (unsigned long long)st->st_ino == id->ino;
}

/* Accepts only a regular file with the expected identity. */
static int check_stat(const struct stat *st, const struct safeopen_id *id,
		      const char *what, char *err, size_t errlen)
{
	if (!S_ISREG(st->st_mode)) {
		gp_set_err(err, errlen, "%s: not a regular file", what);
		return -EINVAL;
	}
	if (id && !same_id(st, id)) {
		gp_set_err(err, errlen,
			"%s: is %u:%u inode %llu, not the mapped %u:%u inode %llu",
			what, major(st->st_dev), minor(st->st_dev),
			(unsigned long long)st->st_ino, id->dev_major,
			id->dev_minor, id->ino);
		return -ESTALE;
	}
	return 0;
}

/*
 * Turns a checked O_PATH descriptor into a readable one on the same inode.
 * /proc/self/fd/N is our own descriptor's magic link: it leads to exactly
 * the inode checked, whatever happened to the path since.
 */
static int reopen_checked(int pathfd, const struct stat *want,
			  const char *what, char *err, size_t errlen)
{
	char self[64];
	struct stat st;
	int fd = -1, ret;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		gp_set_err(err, errlen, "%s: %s", what, strerror(-ret));
		goto cleanup;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		gp_set_err(err, errlen, "%s: %s", what, strerror(-ret));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode) || st.st_dev != want->st_dev ||
	    st.st_ino != want->st_ino) {
		ret = -ESTALE;
		gp_set_err(err, errlen, "%s: changed while being opened", what);
		goto cleanup;
	}
	ret = fd;
	fd = -1;
cleanup:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* "<proc_root>/<pid>/root" opened O_PATH: /proc/PID/root is followed on purpose, it is
 * the kernel's link, not theirs. A descriptor, or -errno with one reason in err. */
static int open_proc_root(const char *proc_root, int pid, char *err, size_t errlen)
{
	char root[SAFEOPEN_PATH_MAX];
	int fd, n;

	n = snprintf(root, sizeof(root), "%s/%d/root", proc_root, pid);
	if (n < 0 || (size_t)n >= sizeof(root)) {
		gp_set_err(err, errlen, "%s: proc root too long", proc_root);
		return -ENAMETOOLONG;
	}
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		gp_set_err(err, errlen, "%s: %s", root, strerror(-fd));
	}
	return fd;
}

int safe_proc_root_id(const char *proc_root, int pid, struct safeopen_id *id)
{
	char root[SAFEOPEN_PATH_MAX];
	struct stat st;
	int n;

	if (pid <= 0 || !id)
		return -EINVAL;
	n = snprintf(root, sizeof(root), "%s/%d/root", proc_root ? proc_root : "/proc", pid);
	if (n < 0 || (size_t)n >= sizeof(root))
		return -ENAMETOOLONG;
	if (stat(root, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*id = (struct safeopen_id){ .dev_major = major(st.st_dev), .dev_minor = minor(st.st_dev),
				    .ino = (unsigned long long)st.st_ino };
	return 0;
}

/* An absolute path of a bounded length, for a real PID. */
static int check_path(const char *path, int pid, char *err, size_t errlen)
{
	if (!path || path[0] != '/' || pid <= 0) {
		gp_set_err(err, errlen, "%s: not an absolute path",
			   path ? path : "(null)");
		return -EINVAL;
	}
	if (strnlen(path, SAFEOPEN_PATH_MAX) >= SAFEOPEN_PATH_MAX) {
		gp_set_err(err, errlen, "path too long");
		return -ENAMETOOLONG;
	}
	return 0;
}

/* The last steps of both opens: the O_PATH descriptor must be a regular file with the
 * mapped identity; then the readable descriptor of that very inode (or -errno). */
static int accept_path_fd(int pathfd, const struct safeopen_id *id,
			  const char *what, char *err, size_t errlen)
{
	struct stat st;
	int ret;

	if (fstat(pathfd, &st)) {
		ret = -errno;
		gp_set_err(err, errlen, "%s: %s", what, strerror(-ret));
		return ret;
	}
	ret = check_stat(&st, id, what, err, errlen);
	return ret ? ret : reopen_checked(pathfd, &st, what, err, errlen);
}

int safe_open_mapped(const char *proc_root, int pid, const char *path,
		     const struct safeopen_id *id, char *err, size_t errlen)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int rootfd = -1, pathfd = -1, ret;

	ret = check_path(path, pid, err, errlen);
	if (ret)
		goto cleanup;
	rootfd = open_proc_root(proc_root ? proc_root : "/proc", pid, err, errlen);
	if (rootfd < 0) {
		ret = rootfd;
		goto cleanup;
	}
	pathfd = sys_openat2(rootfd, path, &how);
	if (pathfd < 0) {
		ret = -errno;
		if (ret == -ELOOP || ret == -EXDEV)
			gp_set_err(err, errlen,
				   "%s: symlink loop or magic link refused", path);
		else
			gp_set_err(err, errlen, "%s: %s", path, strerror(-ret));
		goto cleanup;
	}
	ret = accept_path_fd(pathfd, id, path, err, errlen);
cleanup:
	if (pathfd >= 0)
		close(pathfd);
	if (rootfd >= 0)
		close(rootfd);
	return ret;
}

int safe_open_map_file(const char *proc_root, int pid,
		       unsigned long long start, unsigned long long end,
		       const struct safeopen_id *id, char *err, size_t errlen)
{
	char path[SAFEOPEN_PATH_MAX];
	int pathfd = -1, ret, n;

	if (!proc_root)
		proc_root = "/proc";
	if (pid <= 0 || end <= start) {
		ret = -EINVAL;
		gp_set_err(err, errlen, "bad mapping %llx-%llx", start, end);
		goto cleanup;
	}
	n = snprintf(path, sizeof(path), "%s/%d/map_files/%llx-%llx",
		     proc_root, pid, start, end);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		ret = -ENAMETOOLONG;
		gp_set_err(err, errlen, "%s: proc root too long", proc_root);
		goto cleanup;
	}
	/* the map_files link is the kernel's own handle on the mapped file */
	pathfd = open(path, O_PATH | O_CLOEXEC);
	if (pathfd < 0) {
		ret = -errno;
		gp_set_err(err, errlen, "%s: %s%s", path, strerror(-ret),
			   ret == -EPERM ? " (map_files needs CAP_SYS_ADMIN)" : "");
		goto cleanup;
	}
	ret = accept_path_fd(pathfd, id, path, err, errlen);
cleanup:
	if (pathfd >= 0)
		close(pathfd);
	return ret;
}

Elf *safe_elf_begin(int fd, char *err, size_t errlen)
{
	unsigned long long size, shnum, end;
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	Elf *elf = NULL;
	struct stat st;
	int e = 0;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		e = EINVAL;
		gp_set_err(err, errlen, "not a regular file");
		goto cleanup;
	}
	size = (unsigned long long)st.st_size;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		e = ENOEXEC;
		gp_set_err(err, errlen, "not a 64-bit ELF file");
		goto cleanup;
	}
	shnum = eh.e_shnum;
	if (eh.e_shoff) {
		if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size) {
			e = EBADMSG;
			gp_set_err(err, errlen, "corrupt ELF: section header table");
			goto cleanup;
		}
		if (shnum == 0) {	/* extended numbering: the count is in section 0 */
			if (pread(fd, &sh0, sizeof(sh0), (off_t)eh.e_shoff) != (ssize_t)sizeof(sh0)) {
				e = EBADMSG;
				gp_set_err(err, errlen, "corrupt ELF: section 0");
				goto cleanup;
			}
			shnum = sh0.sh_size;
		}
		end = eh.e_shoff + shnum * sizeof(Elf64_Shdr);
		if (shnum > size / sizeof(Elf64_Shdr) || end > size) {
			e = EBADMSG;
			gp_set_err(err, errlen, "corrupt ELF: %llu section headers past the end", shnum);
			goto cleanup;
		}
	}
	if (eh.e_phoff) {
		end = eh.e_phoff + (unsigned long long)eh.e_phnum * sizeof(Elf64_Phdr);
		if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size || end > size) {
			e = EBADMSG;
			gp_set_err(err, errlen, "corrupt ELF: program header table");
			goto cleanup;
		}
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		e = EBADMSG;
		gp_set_err(err, errlen, "libelf: %s", elf_errmsg(-1));
		if (elf)
			elf_end(elf);
		elf = NULL;
	}
cleanup:
	if (!elf)
		errno = e ? e : EINVAL;
	return elf;
}

int safe_path_is_plain(const char *proc_root, int pid, const char *path, int fd)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	struct stat want, got;
	int rootfd = -1, pathfd = -1, plain = 0;

	if (!path || path[0] != '/' || !path[1] || pid <= 0 || fstat(fd, &want))
		goto cleanup;
	rootfd = open_proc_root(proc_root ? proc_root : "/proc", pid, NULL, 0);
	if (rootfd < 0)
		goto cleanup;
	/* beneath the root: relative to it, so no absolute path */
	pathfd = sys_openat2(rootfd, path + 1, &how);
	if (pathfd < 0 || fstat(pathfd, &got))
		goto cleanup;
	plain = S_ISREG(got.st_mode) && got.st_dev == want.st_dev &&
		got.st_ino == want.st_ino;
cleanup:
	if (pathfd >= 0)
		close(pathfd);
	if (rootfd >= 0)
		close(rootfd);
	return plain;
}
