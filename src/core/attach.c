/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/attach.h"
#include "lib/elfsym.h"
#include "lib/util.h"

/* Not in older uapi headers (Linux 6.6). */
#define GP_BPF_TRACE_UPROBE_MULTI 48
#define GP_BPF_F_UPROBE_MULTI_RETURN 1U

struct attach_set {
	struct bpf_link **links; /* libbpf links (perf-event uprobes, tracepoints) */
	int *ltags;              /* each link's tag (attach_set__tag) */
	int n, cap;
	int *fds; /* uprobe_multi link fds */
	int *ftags, *fprobes;    /* each fd's tag and its probes */
	int nfd, capfd;
	int probes;
	int tag;                 /* what links added now are tagged with; 0: never detached alone */
};

struct attach_set *attach_set__new(void)
{
	return calloc(1, sizeof(struct attach_set));
}

#define DETACH_THREADS 16

struct detach_slice {
	struct attach_set *s;
	int first, step;
};

static void *detach_thread(void *arg)
{
	struct detach_slice *sl = arg;
	int total = sl->s->n + sl->s->nfd;

	for (int i = sl->first; i < total; i += sl->step) {
		if (i < sl->s->n)
			bpf_link__destroy(sl->s->links[i]);
		else
			close(sl->s->fds[i - sl->s->n]);
	}
	return NULL;
}

/* A uprobe_multi link's release waits for one RCU grace period; several links released
 * from several threads wait for theirs together. */
void attach_set__free(struct attach_set *s)
{
	pthread_t tids[DETACH_THREADS];
	struct detach_slice sl[DETACH_THREADS];
	bool started[DETACH_THREADS] = {};
	int total, nt;

	if (!s)
		return;
	total = s->n + s->nfd;
	nt = total < DETACH_THREADS ? total : DETACH_THREADS;
	for (int t = 0; t < nt; t++) {
		sl[t].s = s;
		sl[t].first = t;
		sl[t].step = nt;
		started[t] = pthread_create(&tids[t], NULL, detach_thread, &sl[t]) == 0;
		if (!started[t])
			detach_thread(&sl[t]);
	}
	for (int t = 0; t < nt; t++)
		if (started[t])
			pthread_join(tids[t], NULL);
	free(s->links);
	free(s->ltags);
	free(s->fds);
	free(s->ftags);
	free(s->fprobes);
	free(s);
}

int attach_set__tag(struct attach_set *s, int tag)
{
	int old = s->tag;

	s->tag = tag;
	return old;
}

int attach_set__detach_tag(struct attach_set *s, int tag)
{
	int gone = 0, k = 0;

	if (!tag)
		return 0;
	for (int i = 0; i < s->n; i++) {
		if (s->ltags[i] != tag) {
			s->ltags[k] = s->ltags[i];
			s->links[k++] = s->links[i];
			continue;
		}
		bpf_link__destroy(s->links[i]);
		gone++;
	}
	s->n = k;
	k = 0;
	for (int i = 0; i < s->nfd; i++) {
		if (s->ftags[i] != tag) {
			s->ftags[k] = s->ftags[i];
			s->fprobes[k] = s->fprobes[i];
			s->fds[k++] = s->fds[i];
			continue;
		}
		close(s->fds[i]);
		gone += s->fprobes[i];
	}
	s->nfd = k;
	s->probes -= gone;
	return gone;
}

int attach_set__add(struct attach_set *s, struct bpf_link *link)
{
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 64;
		struct bpf_link **n = realloc(s->links, cap * sizeof(*n));
		int *t;

		if (!n)
			return -ENOMEM;
		s->links = n;
		t = realloc(s->ltags, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		s->ltags = t;
		s->cap = cap;
	}
	s->ltags[s->n] = s->tag;
	s->links[s->n++] = link;
	s->probes++;
	return 0;
}

void attach__load_error(int r, char *err, size_t len)
{
	snprintf(err, len, "cannot load the BPF programs: %s%s", strerror(-r),
		 r == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" :
			       " (run with -v for the verifier log)");
}

int attach_set__auto(struct attach_set *s, struct bpf_program *prog, char *err, size_t len)
{
	struct bpf_link *l = bpf_program__attach(prog);
	int r;

	if (!l) {
		r = -errno;
		snprintf(err, len, "cannot attach %s: %s", bpf_program__section_name(prog), strerror(-r));
		return r;
	}
	r = attach_set__add(s, l);
	if (r)
		bpf_link__destroy(l);
	return r;
}

static int add_fd(struct attach_set *s, int fd, int probes)
{
	if (s->nfd == s->capfd) {
		int cap = s->capfd ? s->capfd * 2 : 16;
		int *n = realloc(s->fds, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->fds = n;
		n = realloc(s->ftags, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->ftags = n;
		n = realloc(s->fprobes, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->fprobes = n;
		s->capfd = cap;
	}
	s->ftags[s->nfd] = s->tag;
	s->fprobes[s->nfd] = probes;
	s->fds[s->nfd++] = fd;
	s->probes += probes;
	return 0;
}

int attach_set__count(const struct attach_set *s)
{
	return s->probes;
}

void attach_set__note(struct attach_set *s, int probes)
{
	s->probes += probes;
}

/* BPF_LINK_CREATE's uprobe_multi layout (include/uapi/linux/bpf.h, Linux 6.6+). */
struct link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 um_flags;
	__u32 pid;
	__u32 _pad;
};

static int link_create_uprobe_multi(int prog_fd, const char *path, const __u64 *offsets,
				    const __u64 *cookies, __u32 cnt, __u32 flags, __u32 pid)
{
	struct link_create_uprobe_multi a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (__u32)prog_fd;
	a.attach_type = GP_BPF_TRACE_UPROBE_MULTI;
	a.path = (__u64)(unsigned long)path;
	a.offsets = (__u64)(unsigned long)offsets;
	a.cookies = (__u64)(unsigned long)cookies;
	a.cnt = cnt;
	a.um_flags = flags;
	a.pid = pid;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

bool attach__has_uprobe_multi(void)
{
	static int cached = -1;
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = GP_BPF_TRACE_UPROBE_MULTI);
	__u64 off = 0;
	const char *force = getenv("GPUPROBE_NO_UPROBE_MULTI");
	int prog, link;

	if (cached >= 0)
		return cached;
	if (force && *force && strcmp(force, "0")) {
		cached = 0;
		return false;
	}
	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &opts);
	if (prog < 0) {
		cached = 0;
		return false;
	}
	/* a directory is refused with EBADF only by kernels that know the link type */
	link = link_create_uprobe_multi(prog, "/", &off, NULL, 1, 0, 0);
	cached = link == -EBADF;
	if (link >= 0)
		close(link);
	close(prog);
	return cached;
}

int attach__uprobe_multi_one(int prog_fd, const char *path, unsigned long long offset, pid_t pid)
{
	__u64 off = offset, cookie = 0;

	return link_create_uprobe_multi(prog_fd, path, &off, &cookie, 1, 0, pid > 0 ? (__u32)pid : 0);
}

int attach__multi_fd(int prog_fd, const char *path, const __u64 *offsets, const __u64 *cookies, int cnt,
		     __u32 pid, bool retprobe)
{
	return link_create_uprobe_multi(prog_fd, path, offsets, cookies, (__u32)cnt,
					retprobe ? GP_BPF_F_UPROBE_MULTI_RETURN : 0, pid);
}

unsigned int attach__uprobe_multi_type(void)
{
	return GP_BPF_TRACE_UPROBE_MULTI;
}

int attach__prepare_prog(struct bpf_program *prog, bool multi)
{
	return multi ? bpf_program__set_expected_attach_type(prog, GP_BPF_TRACE_UPROBE_MULTI) : 0;
}

struct resolve_ctx {
	const char *const *names;
	int n;
	unsigned long long *vaddrs;
};

static int resolve_cb(const char *name, unsigned long long value, unsigned long long size,
		      void *ctx)
{
	struct resolve_ctx *r = ctx;

	(void)size;
	for (int i = 0; i < r->n; i++)
		if (!r->vaddrs[i] && !strcmp(name, r->names[i]))
			r->vaddrs[i] = value;
	return 0;
}

int attach__resolve(const char *path, const char *const *names, int n, long long *offsets,
		    char *err, size_t len)
{
	unsigned long long *vaddrs = calloc((size_t)(n ? n : 1), sizeof(*vaddrs));
	struct resolve_ctx rc = { .names = names, .n = n, .vaddrs = vaddrs };
	struct elf_symtab *st = NULL;
	int found = 0, r;

	if (!vaddrs)
		return -ENOMEM;
	/* one pass over the dynamic symbols for every name, instead of one per attach */
	r = elfsym__foreach_func(path, resolve_cb, &rc);
	if (r < 0) {
		snprintf(err, len, "%s: cannot read its symbols: %s", path, strerror(-r));
		goto cleanup;
	}
	st = elf_symtab__load(path, err, len);
	if (!st) {
		r = -errno;
		goto cleanup;
	}
	for (int i = 0; i < n; i++) {
		offsets[i] = vaddrs[i] ? elf_symtab__vaddr_to_offset(st, vaddrs[i]) : -1;
		if (offsets[i] >= 0)
			found++;
	}
	r = found;
cleanup:
	elf_symtab__free(st);
	free(vaddrs);
	return r;
}

/*
 * Without uprobe_multi every probe holds two descriptors (its perf event and its BPF link):
 * --trace's 152 functions, entry and return, are 608 on one library, and node-wide every
 * libcuda copy adds as many, past the soft RLIMIT_NOFILE of 1024 that shells and
 * services start with (seen: "Too many open files" on 6.1). The soft limit is raised to
 * the hard one, once, the first time they are attached so (gpuprobe polls and its HTTP
 * server uses epoll: no select() to outgrow).
 */
static void room_for_perf_probes(void)
{
	static bool raised;
	struct rlimit rl;

	if (raised || getrlimit(RLIMIT_NOFILE, &rl))
		return;
	raised = true;
	if (rl.rlim_cur != rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int attach_set__uprobes(struct attach_set *s, struct bpf_program *prog, const char *path,
			const long long *offsets, const __u64 *cookies, int n, pid_t pid,
			bool retprobe, bool multi)
{
	__u64 *offs = NULL, *cks = NULL;
	int cnt = 0, err = 0, fd;

	if (!multi) {
		room_for_perf_probes();
		for (int i = 0; i < n; i++) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = cookies[i]);
			struct bpf_link *link;

			if (offsets[i] < 0)
				continue;
			link = bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)offsets[i], &opts);
			if (!link)
				return -errno;
			err = attach_set__add(s, link);
			if (err) {
				bpf_link__destroy(link);
				return err;
			}
		}
		return 0;
	}
	offs = calloc((size_t)(n ? n : 1), sizeof(*offs));
	cks = calloc((size_t)(n ? n : 1), sizeof(*cks));
	if (!offs || !cks) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (int i = 0; i < n; i++) {
		if (offsets[i] < 0)
			continue;
		offs[cnt] = (__u64)offsets[i];
		cks[cnt++] = cookies[i];
	}
	if (!cnt)
		goto cleanup;
	fd = link_create_uprobe_multi(bpf_program__fd(prog), path, offs, cks, (__u32)cnt,
				      retprobe ? GP_BPF_F_UPROBE_MULTI_RETURN : 0,
				      pid > 0 ? (__u32)pid : 0);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	err = add_fd(s, fd, cnt);
	if (err)
		close(fd);
cleanup:
	free(offs);
	free(cks);
	return err;
}

int attach__ensure_tracefs(char *err, size_t len)
{
	struct stat st;

	if (stat("/sys/kernel/tracing/events", &st) == 0)
		return 0;
	if (errno == EACCES) {
		snprintf(err, len, "tracefs is mounted at /sys/kernel/tracing but this user cannot read it: the syscall tracepoints need root, or CAP_DAC_READ_SEARCH");
		return -EACCES;
	}
	if (stat("/sys/kernel/debug/tracing/events", &st) == 0)
		return 0;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL)) {
		int r = -errno;

		snprintf(err, len, "cannot mount tracefs at /sys/kernel/tracing: %s%s", strerror(-r),
			 r == -EPERM ? " (mounting needs CAP_SYS_ADMIN; or mount it first: mount -t tracefs nodev /sys/kernel/tracing)" : "");
		return r;
	}
	return 0;
}

bool attach__tracefs_mountable(char *err, size_t len)
{
	(void)err, (void)len;
	return geteuid() == 0 || gp_has_cap(CAP_SYS_ADMIN);
}

void attach_pair__prepare(struct attach_pair *p, struct bpf_program *enter, struct bpf_program *leave,
			  const char *what)
{
	p->enter = enter;
	p->leave = leave;
	p->what = what;
	p->multi = attach__has_uprobe_multi();
	attach__prepare_prog(enter, p->multi);
	attach__prepare_prog(leave, p->multi);
}

int attach_pair__attach(const struct attach_pair *p, struct attach_set *s, const char *lib,
			const long long *offsets, const long long *ret_offsets, const __u64 *cookies,
			int n, pid_t pid, char *err, size_t len)
{
	int r = attach_set__uprobes(s, p->enter, lib, offsets, cookies, n, pid, false, p->multi);

	if (!r)
		r = attach_set__uprobes(s, p->leave, lib, ret_offsets ? ret_offsets : offsets, cookies, n,
					pid, true, p->multi);
	if (r)
		snprintf(err, len, "cannot attach the %s probes to %s: %s%s", p->what, lib, strerror(-r),
			 (r == -EACCES || r == -EPERM) && !p->multi ?
			 " (without uprobe_multi links gpuprobe attaches perf-event uprobes, which recent kernels allow only with CAP_SYS_ADMIN: run as root)" :
			 r == -EMFILE && !p->multi ?
			 " (without uprobe_multi links each probe holds two descriptors: raise the hard RLIMIT_NOFILE, ulimit -Hn)" :
			 r == -EACCES || r == -EPERM ? " (needs CAP_BPF and CAP_PERFMON, or root)" : "");
	return r;
}

void attach__log_missing(const char *lib, const char *const *names, const long long *offsets, int n)
{
	for (int i = 0; i < n; i++)
		if (offsets[i] < 0)
			gp_log(GP_LOG_DEBUG, "%s: no %s, skipped", lib, names[i]);
}
