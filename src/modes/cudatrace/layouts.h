/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The state file of driver layouts learned by midname.c, kept across runs so that a `-p`
 * attach to a process at steady state (its kernels all named before the attach, no naming
 * call after it) names its launches from the first second. One line per (libcuda build,
 * tag, slot, uid): the build is the library file's GNU build id ("gnu-<hex>"), or, for a
 * file without one, its size and FNV-1a hash ("fnv-<size>-<hex>"); the uid is the real uid
 * of the processes whose handles taught it (midname.h says whose layouts a process may use).
 *
 *   # comment
 *   gpuprobe-layouts 1
 *   gnu-0123abcd... 0000000100000001 1 1000
 *
 * The file is root's own, but it is parsed as input: bounded (LAY_MAX_FILE bytes,
 * LAY_MAX entries, LAY_KEY_LEN per key), every field checked; a file that breaks any rule
 * is refused whole (one log line, nothing used). It lives in a directory gpuprobe owns
 * (default /var/lib/gpuprobe, --state-dir or GPUPROBE_STATE_DIR), made 0700, the file
 * 0600, both opened without following a symbolic link, accepted only when owned by
 * gpuprobe's user and not writable by group or others; written whole to a new file and
 * renamed over the old one.
 */
#ifndef GP_CT_LAYOUTS_H
#define GP_CT_LAYOUTS_H

#include <stddef.h>
#include <stdint.h>

#define LAY_KEY_LEN 144         /* "gnu-" + 64 bytes of build id in hex, and the NUL */
#define LAY_MAX 256             /* entries in the file */
#define LAY_MAX_FILE 65536      /* bytes of the file */
#define LAY_FILE "layouts"      /* its name in the state directory */
#define LAY_DEFAULT_DIR "/var/lib/gpuprobe"

struct lay_entry {
	char key[LAY_KEY_LEN];
	uint64_t tag;
	uint32_t slot, uid;
};

/* Parses a state file's text (len bytes, no NUL needed): 0 and *n entries, or -EINVAL
 * (-E2BIG: too many) with the line and reason in err. */
int layouts__parse(const char *buf, size_t len, struct lay_entry *out, size_t cap, size_t *n, char *err,
		   size_t errlen);
/* The text of n entries into buf: its length, or -ENOSPC. */
int layouts__format(const struct lay_entry *e, size_t n, char *buf, size_t len);
/* Reads dir/layouts: 0 with *n entries (0 when there is no file yet), or -errno with one
 * reason in err (a symbolic link, not a regular file, another owner, too large, corrupt). */
int layouts__load(const char *dir, struct lay_entry *out, size_t cap, size_t *n, char *err, size_t errlen);
/* Writes n entries as dir/layouts (dir made 0700 when missing); 0 or -errno with err. */
int layouts__save(const char *dir, const struct lay_entry *e, size_t n, char *err, size_t errlen);
/* The build key of the library file at path (see above); 0 or -errno. */
int layouts__build_key(const char *path, char *key, size_t len);
/* The state directory: dir when given, else $GPUPROBE_STATE_DIR, else LAY_DEFAULT_DIR. */
const char *layouts__dir(const char *dir);

#endif
