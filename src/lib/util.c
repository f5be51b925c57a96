/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include "lib/util.h"

uint64_t gp_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

unsigned int gp_log2_slot(uint64_t v, unsigned int slots)
{
	unsigned int r = 0;

	while (v > 1 && r < slots - 1) {
		v >>= 1;
		r++;
	}
	return r;
}

uint64_t gp_fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ULL;
	return h;
}

bool gp_has_cap(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (cap < 0 || cap > 63 || syscall(SYS_capget, &h, d))
		return false;
	return d[cap >> 5].effective & (1U << (cap & 31));
}

int gp_check_privileges(char *err, size_t len)
{
	bool bpf = gp_has_cap(CAP_BPF), perfmon = gp_has_cap(CAP_PERFMON);

	if (geteuid() == 0 || gp_has_cap(CAP_SYS_ADMIN) || (bpf && perfmon))
		return 0;
	snprintf(err, len, "permission denied: run as root, or with CAP_BPF and CAP_PERFMON (+ CAP_SYS_PTRACE to read other users' processes); missing:%s%s",
		 bpf ? "" : " CAP_BPF", perfmon ? "" : " CAP_PERFMON");
	return -EPERM;
}

const char *gp_sysfs(void)
{
	const char *root = getenv("GPUPROBE_SYSFS");

	return root && *root ? root : "/sys";
}

int gp_check_kernel(bool uprobes, char *err, size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/kernel/btf/vmlinux", gp_sysfs());
	if (access(path, R_OK)) {
		snprintf(err, len, "this kernel has no BTF (%s missing): gpuprobe needs CONFIG_DEBUG_INFO_BTF=y", path);
		return -ENOTSUP;
	}
	snprintf(path, sizeof(path), "%s/bus/event_source/devices/uprobe/type", gp_sysfs());
	if (uprobes && access(path, R_OK)) {
		snprintf(err, len, "this kernel has no uprobes (%s missing): gpuprobe needs CONFIG_UPROBE_EVENTS=y", path);
		return -ENOTSUP;
	}
	return 0;
}

int gp_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (end == s || *end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int gp_parse_seconds(const char *s, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || isnan(v))
		return -EINVAL;
	if (errno == ERANGE || isinf(v) || v < 0 || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

uint64_t gp_seconds_to_ns(double s)
{
	/* callers hold s within GP_MAX_SECONDS: far from 2^64 ns */
	return s <= 0 ? 0 : (uint64_t)(s * 1e9);
}

static bool log_priorities, log_verbose;

void gp_log_setup(bool priorities, bool verbose)
{
	log_priorities = priorities;
	log_verbose = verbose;
}

size_t gp_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t k;

	if (s[0] < 0x80)
		return *cp = s[0], 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		k = 2, *cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		k = 3, *cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		k = 4, *cp = s[0] & 0x07;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	for (size_t i = 1; i < k; i++) {
		if (i >= n)
			return GP_SAFE_MORE;
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return 0;
		*cp = (*cp << 6) | (s[i] & 0x3f);
	}
	return k;
}

static bool cp_unsafe(uint32_t cp, bool lines)
{
	if (cp < 0x20)
		return !(lines && (cp == '\n' || cp == '\t'));
	return (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t gp_safe_char(const unsigned char *s, size_t n, bool lines, size_t *skip)
{
	uint32_t cp = 0;
	size_t k = n ? gp_utf8_decode(s, n, &cp) : 0;

	*skip = k && k != GP_SAFE_MORE ? k : 1;
	if (k == GP_SAFE_MORE)
		return k;
	return k && !cp_unsafe(cp, lines) ? k : 0;
}

size_t gp_sanitize(char *s, size_t n, bool lines)
{
	unsigned char *u = (unsigned char *)s;
	size_t i = 0, o = 0, skip, k;

	while (i < n) {
		k = gp_safe_char(u + i, n - i, lines, &skip);
		if (k && k != GP_SAFE_MORE) {
			memmove(u + o, u + i, k);
			o += k;
		} else {
			u[o++] = '?';
		}
		i += k && k != GP_SAFE_MORE ? k : skip;
	}
	if (o < n)
		u[o] = '\0';
	return o;
}

char *gp_sanitize_str(char *s)
{
	if (s)
		gp_sanitize(s, strlen(s), false);
	return s;
}

int gp_vfprintf_safe(FILE *f, const char *fmt, va_list ap)
{
	char buf[4096];
	int m = vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t n;

	if (m < 0)
		return -1;
	n = gp_sanitize(buf, (size_t)m < sizeof(buf) ? (size_t)m : sizeof(buf) - 1, true);
	return fwrite(buf, 1, n, f) == n ? (int)n : -1;
}

/* One line, written whole: threads (the budget's link closers) log at once. */
void gp_log(int level, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	int n, m;

	if (level >= GP_LOG_DEBUG && !log_verbose)
		return;
	n = log_priorities ? snprintf(line, sizeof(line), "<%d>gpuprobe: ", level) :
			     snprintf(line, sizeof(line), "gpuprobe: ");
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	m = m < (int)(sizeof(line) - (size_t)n - 1) ? m : (int)(sizeof(line) - (size_t)n - 2);
	/* the line may name what a traced process chose (its comm, library paths) */
	n += (int)gp_sanitize(line + n, (size_t)m, false);
	line[n++] = '\n';
	flockfile(stderr);
	fwrite(line, 1, (size_t)n, stderr);
	fflush(stderr);
	funlockfile(stderr);
}

/* /proc/PID/NAME's first len - 1 bytes into buf, NUL-terminated: 0, or -errno (-EIO: empty). */
static int read_proc(uint32_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	if (len < 2)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%u/%s", pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

int gp_proc_stat(uint32_t pid, char *buf, size_t len, char **rest)
{
	char *p;
	int r = read_proc(pid, "stat", buf, len);

	if (r)
		return r;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EINVAL;
	*rest = p + 2;
	return 0;
}

int gp_proc_status(uint32_t pid, char *buf, size_t len, uint32_t *uid)
{
	unsigned long v;
	char *u;
	int r = read_proc(pid, "status", buf, len);

	if (r)
		return r;
	u = strstr(buf, "\nUid:\t");
	if (!u || sscanf(u + 6, "%lu", &v) != 1 || v >= UINT32_MAX)
		return -EINVAL;
	*uid = (uint32_t)v;
	return 0;
}

int gp_proc_comm(uint32_t pid, char *buf, size_t len)
{
	char path[64], tmp[64];
	ssize_t r;
	int fd;

	if (!len)
		return -EINVAL;
	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	r = read(fd, tmp, sizeof(tmp) - 1);
	close(fd);
	if (r < 0)
		return -EIO;
	tmp[r] = '\0';
	tmp[strcspn(tmp, "\n")] = '\0';
	for (char *c = tmp; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			*c = '?';
	snprintf(buf, len, "%s", tmp);
	return 0;
}
