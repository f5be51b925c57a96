/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The small things every layer needs once: the clock the BPF side stamps records with,
 * capability and kernel checks, and numbers parsed with bounds (no UB on 1e30, inf or
 * nan, no silent wrap-around).
 */
#ifndef GP_UTIL_H
#define GP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#define GP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns, so of every record's ts_ns. */
uint64_t gp_mono_ns(void);

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* Whether the effective set holds cap. */
bool gp_has_cap(int cap);
/* Enough privilege to load and attach (root, CAP_SYS_ADMIN, or CAP_BPF + CAP_PERFMON);
 * otherwise one line in err naming what is missing. */
int gp_check_privileges(char *err, size_t len);
/* BTF (always) and, when uprobes, uprobe events; otherwise one line in err naming the
 * kernel option. GPUPROBE_SYSFS points the checks at a fake /sys (tests). */
int gp_check_kernel(bool uprobes, char *err, size_t len);
/* The /sys root gpuprobe reads ("/sys", or $GPUPROBE_SYSFS in tests). */
const char *gp_sysfs(void);

/* Unsigned integer in [min, max], decimal or 0x hex; -EINVAL or -ERANGE. */
int gp_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Seconds: a finite number in [0, max] (nan, inf, negatives rejected); -EINVAL/-ERANGE. */
int gp_parse_seconds(const char *s, double max, double *out);
/* Seconds as nanoseconds, for a value that gp_parse_seconds accepted. */
uint64_t gp_seconds_to_ns(double s);

/* The log2 histogram slot of v: floor(log2(v)), 0 for 0 and 1, at most slots - 1. */
unsigned int gp_log2_slot(uint64_t v, unsigned int slots);

/* FNV-1a of n bytes at p, continuing from h (GP_FNV1A_INIT to start): the hash of the
 * tables and ids; keys that traced processes choose are compared, never trusted to it. */
#define GP_FNV1A_INIT 0xcbf29ce484222325ULL
uint64_t gp_fnv1a(const void *p, size_t n, uint64_t h);

/* Log lines on stderr: "gpuprobe: ...", with the syslog priority prefix journald reads
 * ("<3>gpuprobe: ...") once gp_log_setup(true, ...) is called (the daemon). Debug lines
 * only with verbose. */
enum { GP_LOG_ERR = 3, GP_LOG_WARN = 4, GP_LOG_INFO = 6, GP_LOG_DEBUG = 7 };
void gp_log_setup(bool priorities, bool verbose);
void gp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Text that a traced process names (its comm, kernel and symbol names, file paths), made
 * safe to print to a terminal or a log (docs/security.md, "Names on the terminal"): valid
 * UTF-8 stays as it is; a control character (C0, DEL, C1 U+0080-U+009F), a bidirectional
 * formatting character (U+200E/F, U+202A-E, U+2066-9) and every byte that is not part of
 * valid UTF-8 become one '?' each ('\n' and '\t' stay when lines). gp_safe_char: the
 * length of the character at s (n bytes left) to show as it is, 0 when s[0] starts one
 * to replace (a valid character's whole length is in *skip, else 1), GP_SAFE_MORE when
 * s ends inside a sequence that may still be valid. gp_sanitize: s (n bytes) in place;
 * its new length (never longer; when shorter, a NUL follows the text).
 */
#define GP_SAFE_MORE ((size_t)-1)
/* The UTF-8 sequence at s (n bytes there): its length (the code point in *cp), 0 if invalid,
 * GP_SAFE_MORE when n cuts a sequence that is valid so far. Overlong forms, surrogates and
 * code points past U+10FFFF are invalid. */
size_t gp_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
size_t gp_safe_char(const unsigned char *s, size_t n, bool lines, size_t *skip);
size_t gp_sanitize(char *s, size_t n, bool lines);
/* A NUL-terminated string in place; returns s. */
char *gp_sanitize_str(char *s);
/* vfprintf through gp_sanitize (lines kept; at most 4 KiB): libbpf's messages, which may
 * name a library path. The bytes written, or -1. */
int gp_vfprintf_safe(FILE *f, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* pid's name from /proc/PID/comm (the kernel's 15 characters; what is not printable
 * becomes '?'): 0, or -errno and buf "". */
int gp_proc_comm(uint32_t pid, char *buf, size_t len);

/* /proc/PID/stat read into buf: the fields after the name (which may hold spaces and
 * parentheses: they follow its last ')'), from the state on, as *rest; 0, or -errno
 * (-EINVAL: no ')'). */
int gp_proc_stat(uint32_t pid, char *buf, size_t len, char **rest);

/* /proc/PID/status read into buf (NUL-terminated; its Name line escaped by the kernel),
 * and the real uid, the first field of its Uid: line (a process cannot change it without
 * privilege); 0, or -errno (-EINVAL: no Uid: line). */
int gp_proc_status(uint32_t pid, char *buf, size_t len, uint32_t *uid);

/* The longest seconds any duration or interval may take: about a year. */
#define GP_MAX_SECONDS (366.0 * 24 * 3600)

#endif
