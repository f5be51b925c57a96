/* SPDX-License-Identifier: BSD-3-Clause */
/* "These symbols in this file, for this PID" -> BPF links, all released together. */
#ifndef GP_ATTACH_H
#define GP_ATTACH_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

struct bpf_program;
struct attach_set;

struct attach_set *attach_set__new(void);
/* Detaches everything; safe on NULL. */
void attach_set__free(struct attach_set *s);
/* Attaches prog at the entry (or return) of func in the ELF file path, for pid (-1: every
 * process), with a BPF cookie. Returns 0 or -errno. */
int attach_set__uprobe(struct attach_set *s, struct bpf_program *prog, const char *path,
		       const char *func, pid_t pid, bool retprobe, __u64 cookie);
/* Keeps a link made elsewhere (tracepoints). */
int attach_set__add(struct attach_set *s, struct bpf_link *link);
int attach_set__count(const struct attach_set *s);

/* Mounts tracefs at /sys/kernel/tracing when it is not there (tracepoint attach needs
 * its event ids). Returns 0 or -errno. */
int attach__ensure_tracefs(void);

#endif
