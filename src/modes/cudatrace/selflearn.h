/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe teaches itself the kernel-handle layouts of a libcuda build (midname.h) from
 * kernels of its own, so that a `-p` attach to a job at steady state names its launches on
 * the first attach even when no watched process ever named a kernel of that kind.
 *
 * A short-lived child (fork; the driver's threads and memory never stay in gpuprobe) loads
 * the very libcuda file gpuprobe probes, makes a CUkernel (cuLibraryLoadData of a tiny PTX
 * image + cuLibraryGetKernel, no context needed) and, in device 0's primary context, a
 * CUfunction (cuModuleLoadData + cuModuleGetFunction) and cuKernelGetFunction's one; it
 * knows their names, learns (tag, slot) from its own memory with midname's own logic, and
 * writes the lessons to a pipe. The parent reads at most SL_MAX_OUT bytes, parses them
 * strictly (a lesson is a 64-bit tag and a slot of 1 to MN_SLOTS - 1; anything else voids
 * the whole answer) and kills the child after timeout_ms.
 *
 * Only a file no user could have planted is loaded: a regular file owned by root and not
 * writable by group or others, every directory on its real path (in gpuprobe's own mount
 * namespace: never a path under /proc, such as a container's /proc/PID/root) owned by root
 * and not writable by group or others. Static glibc cannot host the driver: a statically
 * linked gpuprobe (`make bundle`) carries the child as a dynamically linked program of its
 * own (src/static/selflearn_helper.c), written to a memory file and started from it in the
 * child with the host's dynamic loader and C library.
 */
#ifndef GP_CT_SELFLEARN_H
#define GP_CT_SELFLEARN_H

#include <stddef.h>
#include <stdint.h>

#define SL_MAX_LESSONS 8       /* (tag, slot) pairs taken from one child */
#define SL_MAX_OUT 1024        /* bytes of its answer read */
#define SL_TIMEOUT_MS 10000    /* a cold cuInit of a node with many GPUs takes seconds */

struct sl_lesson {
	uint64_t tag;
	uint32_t slot;
};

/* Whether lib may be loaded into a child of gpuprobe: 0 (its real path in real), or
 * -EPERM/-errno with the reason in why. */
int selflearn__safe(const char *lib, char *real, size_t rlen, char *why, size_t len);
/* Parses a child's answer (len bytes): 0 with *n lessons and, in why, the steps that
 * failed (empty when none); -EINVAL when it breaks the format (no lesson kept). */
int selflearn__parse(const char *buf, size_t len, struct sl_lesson *out, size_t cap, size_t *n, char *why,
		     size_t wlen);
/* The child's part: loads real (a path selflearn__safe passed), learns from kernels of its
 * own and writes its answer to fd. Run in a fork of a dynamically linked gpuprobe, or, for a
 * statically linked one, in its learning program (src/static/selflearn_helper.c). */
void selflearn__child(const char *real, int fd);
/* Learns lib's layouts in a child: 0 with *n lessons (why says what failed, if some
 * step did), or -errno with why; *ms the time it took. */
int selflearn__run(const char *lib, unsigned int timeout_ms, struct sl_lesson *out, size_t cap, size_t *n,
		   unsigned int *ms, char *why, size_t len);

#endif
