/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "attach.h"

struct attach_set {
	struct bpf_link **links;
	int n, cap;
};

struct attach_set *attach_set__new(void)
{
	return calloc(1, sizeof(struct attach_set));
}

void attach_set__free(struct attach_set *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	free(s);
}

int attach_set__add(struct attach_set *s, struct bpf_link *link)
{
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 64;
		struct bpf_link **n = realloc(s->links, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->links = n;
		s->cap = cap;
	}
	s->links[s->n++] = link;
	return 0;
}

int attach_set__uprobe(struct attach_set *s, struct bpf_program *prog, const char *path,
		       const char *func, pid_t pid, bool retprobe, __u64 cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = func, .retprobe = retprobe,
		    .bpf_cookie = cookie);
	struct bpf_link *link;
	int err;

	/* libbpf resolves func in the file's symbol tables itself; path must be absolute
	 * (it only searches a few fixed folders for bare names) */
	link = bpf_program__attach_uprobe_opts(prog, pid, path, 0, &opts);
	if (!link)
		return -errno;
	err = attach_set__add(s, link);
	if (err)
		bpf_link__destroy(link);
	return err;
}

int attach_set__count(const struct attach_set *s)
{
	return s->n;
}

int attach__ensure_tracefs(void)
{
	struct stat st;

	if (stat("/sys/kernel/tracing/events", &st) == 0)
		return 0;
	if (stat("/sys/kernel/debug/tracing/events", &st) == 0)
		return 0;
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		return -errno;
	return 0;
}
