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
#include "util.h"

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
	n += m < (int)(sizeof(line) - (size_t)n - 1) ? m : (int)(sizeof(line) - (size_t)n - 2);
	line[n++] = '\n';
	flockfile(stderr);
	fwrite(line, 1, (size_t)n, stderr);
	fflush(stderr);
	funlockfile(stderr);
}

int gp_proc_stat(uint32_t pid, char *buf, size_t len, char **rest)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EINVAL;
	*rest = p + 2;
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
