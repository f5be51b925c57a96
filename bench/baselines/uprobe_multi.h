/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One uprobe_multi link (BPF_LINK_CREATE, BPF_TRACE_UPROBE_MULTI, Linux 6.6+) for the bench
 * programs (bench/baselines/empty_uprobe.c, bench/gpu/linkchurn.c): Debian 12's libbpf and
 * uapi headers predate it, as in src/core/attach.c.
 */
#ifndef BENCH_UPROBE_MULTI_H
#define BENCH_UPROBE_MULTI_H

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>

#define UPROBE_MULTI 48 /* BPF_TRACE_UPROBE_MULTI */
#define UPROBE_MULTI_RETURN 1U

struct link_create_uprobe_multi {
	__u32 prog_fd, target_fd, attach_type, flags;
	__u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, um_flags, pid, _pad;
};

/* An entry (ret 0) or return link of prog on n file offsets (64-bit each) of path, for
 * process pid (0: all); its fd or -errno. */
static inline int bench_uprobe_multi(int prog, const char *path, const void *offs, int n, int ret, int pid)
{
	struct link_create_uprobe_multi a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (__u32)prog;
	a.attach_type = UPROBE_MULTI;
	a.path = (__u64)(unsigned long)path;
	a.offsets = (__u64)(unsigned long)offs;
	a.cnt = (__u32)n;
	a.um_flags = ret ? UPROBE_MULTI_RETURN : 0;
	a.pid = (__u32)pid;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

#endif
