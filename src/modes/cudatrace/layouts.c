/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "modes/cudatrace/layouts.h"
#include "modes/cudatrace/midname.h"
#include "lib/util.h"

#define LAY_MAGIC "gpuprobe-layouts 1"
#define LAY_MAX_LINE 256
#define LAY_HASH_CAP (1ULL << 30) /* a file without build id larger than this gets no key */

const char *layouts__dir(const char *dir)
{
	const char *e = getenv("GPUPROBE_STATE_DIR");

	if (dir && *dir)
		return dir;
	return e && *e ? e : LAY_DEFAULT_DIR;
}

static bool key_ok(const char *s, size_t n)
{
	if (!n || n >= LAY_KEY_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') || s[i] == '-'))
			return false;
	return true;
}

/* An unsigned number of base 10 or 16 made of the whole of [s, s + n), at most max. */
static bool number(const char *s, size_t n, int base, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!n || n > (base == 16 ? 16 : 10))
		return false;
	for (size_t i = 0; i < n; i++) {
		int d;

		if (s[i] >= '0' && s[i] <= '9')
			d = s[i] - '0';
		else if (base == 16 && s[i] >= 'a' && s[i] <= 'f')
			d = s[i] - 'a' + 10;
		else
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

/* The next space-separated field of a line: its start and length; the cursor moves past it. */
static size_t field(const char **p, const char *end, const char **start)
{
	const char *s = *p;

	while (s < end && *s == ' ')
		s++;
	*start = s;
	while (s < end && *s != ' ')
		s++;
	*p = s;
	return (size_t)(s - *start);
}

static int bad(char *err, size_t errlen, unsigned int line, const char *why, int e)
{
	snprintf(err, errlen, "line %u: %s", line, why);
	return e;
}

int layouts__parse(const char *buf, size_t len, struct lay_entry *out, size_t cap, size_t *n, char *err,
		   size_t errlen)
{
	const char *p = buf, *end = buf + len;
	bool magic = false;
	unsigned int line = 0;

	*n = 0;
	if (len > LAY_MAX_FILE)
		return bad(err, errlen, 0, "larger than 65536 bytes", -E2BIG);
	if (memchr(buf, '\0', len))
		return bad(err, errlen, 0, "a NUL byte", -EINVAL);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end, *f[5], *c = p;
		size_t fl[5];
		uint64_t tag, slot, uid;

		line++;
		if (le - p > LAY_MAX_LINE)
			return bad(err, errlen, line, "longer than 256 characters", -EINVAL);
		p = nl ? nl + 1 : end;
		if (c == le || *c == '#')
			continue;
		if (!magic) {
			if ((size_t)(le - c) != strlen(LAY_MAGIC) || memcmp(c, LAY_MAGIC, strlen(LAY_MAGIC)))
				return bad(err, errlen, line, "not \"" LAY_MAGIC "\"", -EINVAL);
			magic = true;
			continue;
		}
		for (int i = 0; i < 5; i++)
			fl[i] = field(&c, le, &f[i]);
		if (fl[4] || !key_ok(f[0], fl[0]) || !number(f[1], fl[1], 16, UINT64_MAX, &tag) ||
		    !number(f[2], fl[2], 10, MN_SLOTS - 1, &slot) || slot < 1 ||
		    !number(f[3], fl[3], 10, UINT32_MAX - 1, &uid))
			return bad(err, errlen, line, "not \"<build> <tag, hex> <slot 1-7> <uid>\"", -EINVAL);
		if (*n == cap)
			return bad(err, errlen, line, "more than 256 entries", -E2BIG);
		memcpy(out[*n].key, f[0], fl[0]);
		out[*n].key[fl[0]] = '\0';
		out[*n].tag = tag;
		out[*n].slot = (uint32_t)slot;
		out[*n].uid = (uint32_t)uid;
		(*n)++;
	}
	if (!magic && len)
		return bad(err, errlen, line, "no \"" LAY_MAGIC "\" line", -EINVAL);
	return 0;
}

int layouts__format(const struct lay_entry *e, size_t n, char *buf, size_t len)
{
	size_t at = 0;
	int w;

	w = snprintf(buf, len, "# kernel-handle layouts gpuprobe learned per libcuda build (gpuprobe(8), --state-dir)\n"
			       LAY_MAGIC "\n");
	if (w < 0 || (size_t)w >= len)
		return -ENOSPC;
	at = (size_t)w;
	for (size_t i = 0; i < n; i++) {
		w = snprintf(buf + at, len - at, "%s %016" PRIx64 " %u %u\n", e[i].key, e[i].tag, e[i].slot, e[i].uid);
		if (w < 0 || (size_t)w >= len - at)
			return -ENOSPC;
		at += (size_t)w;
	}
	return (int)at;
}

/* The state directory opened (made 0700 when missing): a directory of ours that no one
 * else may write, reached without following a link at its last step. */
static int open_dir(const char *dir, bool make, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (make && mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(err, errlen, "cannot make the state directory %s: %s", dir, strerror(errno));
		return -errno;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "state directory %s: %s", dir,
			 e == ELOOP || e == ENOTDIR ? "not a directory (or a symbolic link)" : strerror(e));
		return -e;
	}
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(err, errlen, "state directory %s: not owned by uid %u or writable by others",
			 dir, (unsigned int)geteuid());
		close(fd);
		return -EPERM;
	}
	return fd;
}

int layouts__load(const char *dir, struct lay_entry *out, size_t cap, size_t *n, char *err, size_t errlen)
{
	char *buf = NULL, why[160];
	int dfd = -1, fd = -1, err_ = 0;
	struct stat st;
	ssize_t r;

	*n = 0;
	dfd = open_dir(dir, false, err, errlen);
	if (dfd < 0) {
		err_ = dfd == -ENOENT ? 0 : dfd; /* no directory yet: nothing learned yet */
		goto cleanup;
	}
	fd = openat(dfd, LAY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err_ = errno == ENOENT ? 0 : -errno;
		snprintf(err, errlen, "%s/" LAY_FILE ": %s", dir,
			 errno == ELOOP ? "a symbolic link, refused" : strerror(errno));
		goto cleanup;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
	    st.st_size > LAY_MAX_FILE) {
		snprintf(err, errlen, "%s/" LAY_FILE ": not a regular file of uid %u, writable by others or over %d bytes: refused",
			 dir, (unsigned int)geteuid(), LAY_MAX_FILE);
		err_ = -EPERM;
		goto cleanup;
	}
	buf = malloc(LAY_MAX_FILE + 1);
	if (!buf) {
		err_ = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	/* read to the end whatever fstat said: bounded by the buffer, one more byte says "larger" */
	{
		size_t got = 0;

		while (got < LAY_MAX_FILE + 1 && (r = read(fd, buf + got, LAY_MAX_FILE + 1 - got)) > 0)
			got += (size_t)r;
		if (r < 0) {
			err_ = -errno;
			snprintf(err, errlen, "%s/" LAY_FILE ": %s", dir, strerror(errno));
			goto cleanup;
		}
		err_ = layouts__parse(buf, got, out, cap, n, why, sizeof(why));
		if (err_)
			snprintf(err, errlen, "%s/" LAY_FILE ": corrupt (%s): ignored", dir, why);
	}
cleanup:
	if (err_)
		*n = 0;
	free(buf);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return err_;
}

int layouts__save(const char *dir, const struct lay_entry *e, size_t n, char *err, size_t errlen)
{
	char tmp[64], *buf = malloc(LAY_MAX_FILE);
	int dfd = -1, fd = -1, err_ = 0, len;

	tmp[0] = '\0';
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	len = layouts__format(e, n, buf, LAY_MAX_FILE);
	if (len < 0) {
		err_ = len;
		snprintf(err, errlen, "layouts over %d bytes", LAY_MAX_FILE);
		goto cleanup;
	}
	dfd = open_dir(dir, true, err, errlen);
	if (dfd < 0) {
		err_ = dfd;
		goto cleanup;
	}
	snprintf(tmp, sizeof(tmp), "." LAY_FILE ".%d", (int)getpid());
	unlinkat(dfd, tmp, 0); /* ours, left by a run killed mid-write (the directory is ours) */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, buf, (size_t)len) != len || fsync(fd)) {
		err_ = -errno;
		snprintf(err, errlen, "%s/%s: %s", dir, tmp, strerror(errno));
		goto cleanup;
	}
	if (renameat(dfd, tmp, dfd, LAY_FILE)) {
		err_ = -errno;
		snprintf(err, errlen, "%s/" LAY_FILE ": %s", dir, strerror(errno));
		goto cleanup;
	}
	tmp[0] = '\0';
cleanup:
	if (fd >= 0)
		close(fd);
	if (tmp[0] && dfd >= 0)
		unlinkat(dfd, tmp, 0);
	if (dfd >= 0)
		close(dfd);
	free(buf);
	return err_;
}

static void hex(const unsigned char *b, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[b[i] >> 4];
		out[2 * i + 1] = d[b[i] & 15];
	}
	out[2 * n] = '\0';
}

/* NT_GNU_BUILD_ID in one note section's or segment's data. */
static bool note_id(Elf_Data *d, char *key, size_t len)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp((char *)d->d_buf + name_off, "GNU", 4) &&
		    nh.n_descsz >= 1 && nh.n_descsz <= 64 && len >= 4 + 2 * nh.n_descsz + 1) {
			memcpy(key, "gnu-", 4);
			hex((unsigned char *)d->d_buf + desc_off, nh.n_descsz, key + 4);
			return true;
		}
	}
	return false;
}

int layouts__build_key(const char *path, char *key, size_t len)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), err = -ENOENT;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	struct stat st;
	size_t nph = 0;

	key[0] = '\0';
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto cleanup;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE && note_id(elf_getdata(scn, NULL), key, len)) {
			err = 0;
			goto cleanup;
		}
	}
	/* no section headers (stripped of them): the note segments */
	for (size_t i = 0; elf && !elf_getphdrnum(elf, &nph) && i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE &&
		    note_id(elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR), key, len)) {
			err = 0;
			goto cleanup;
		}
	}
	/* no build id: the file's size and a hash of all its bytes */
	if ((uint64_t)st.st_size <= LAY_HASH_CAP) {
		static unsigned char chunk[1 << 16];
		uint64_t h = GP_FNV1A_INIT;
		off_t at = 0;
		ssize_t r;

		while ((r = pread(fd, chunk, sizeof(chunk), at)) > 0) {
			h = gp_fnv1a(chunk, (size_t)r, h);
			at += r;
		}
		if (r == 0 && at == st.st_size) {
			snprintf(key, len, "fnv-%llu-%016" PRIx64, (unsigned long long)st.st_size, h);
			err = 0;
		}
	}
cleanup:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}
