/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The library files a run probes, found at start and as they appear: a command such as
 * `torchrun train.py` loads libnccl from a wheel's folder (site-packages/nvidia/nccl/lib)
 * only when a worker imports torch, a folder nobody could name in advance. The watcher
 *   - resolves libnccl at start: --libnccl, else LD_LIBRARY_PATH, ldconfig's cache, the
 *     usual folders and the libraries the targets (or, node-wide, all processes) map;
 *   - puts a uprobe on the dynamic linker's debugger hook (_dl_debug_state, what gdb uses
 *     to see every dlopen: bpf/libwatch.bpf.c) in each linker file the followed processes
 *     map, and reads a process's /proc/PID/maps when its linker reports a consistent link
 *     map again (a library was loaded) or when it execs;
 *   - rescans the followed processes' maps every second, a bounded number a tick (static
 *     programs have no linker to hook);
 *   - opens each new file through safe_open_mapped (inside the process's root, the mapped
 *     device and inode; /proc/PID/map_files as the fallback), de-duplicated by device and
 *     inode (uprobes bind to inodes), and reports it by its /proc/self/fd path through
 *     the attach_lib callback (the run probes it for every mode that needs its kind).
 * Files the front end attaches itself (libcuda at start, the daemon's rescans) are claimed
 * through libwatch__claim too (gp_run__attach_lib), so nothing is probed twice. The watch
 * knows nothing of the run: it gets the descriptors it needs and reports upward through
 * struct libwatch_ops [retsnoop's mass_attacher__new(skel, ksyms, &opts)].
 */
#ifndef GP_LIBWATCH_H
#define GP_LIBWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "core/mode.h"

struct libwatch;
struct attach_set;
struct libslots;
struct objshare;

/* What the watch asks of its owner (ctx: the owner's, the run). */
struct libwatch_ops {
	void *ctx;
	/* probes one more library file of kind for every mode that needs it (the file was not
	 * claimed yet: the callee claims it, libwatch__claim); 0 or -errno with one reason in err */
	int (*attach_lib)(void *ctx, enum gp_lib kind, const char *path, char *err, size_t len);
	/* the probes of a file no process maps any more, attached under tag: removed, the claim
	 * forgotten (libwatch__unclaim); returns how many probes went */
	int (*detach_lib)(void *ctx, enum gp_lib kind, int tag, dev_t dev, ino_t ino);
	/* pid mapped a libcuda at mapped_ns (0: unknown) that was probed only at probed_ns */
	void (*unseen)(void *ctx, uint32_t pid, uint64_t mapped_ns, uint64_t probed_ns);
};

struct libwatch_opts {
	/* copied: `traced` (the followed processes, rescanned), gp_ended, the ring buffer
	 * its linker reports go to and its reader, filter (a followed set, else node-wide) */
	const struct objshare *share;
	struct attach_set *links; /* the hook's links, and where attach_lib's probes are counted */
	struct libslots *slots;   /* the libcuda files probed that a sweep may free */
	int target_pid;           /* the uprobes' own PID filter (one -p PID); -1: none */
	bool hold_libcuda;        /* a command gpuprobe started: held at a dlopen of libcuda */
	unsigned int needs;       /* enum gp_need of the enabled modes */
	const char *libcuda;      /* --libcuda: that file, no discovery of libcuda */
	const char *libnccl;      /* --libnccl */
	const int *pids;          /* -p PIDs (the first scans of a run that follows none) */
	int nr_pids;
};

/* No BPF yet: only the table of files claimed (ops copied). NULL when out of memory. */
struct libwatch *libwatch__new(const struct libwatch_ops *ops);
/* Loads the hook's BPF object (after the run's process tree and shared ring buffer exist,
 * before anything is attached); o is copied. 0 or -errno with one line in err. */
int libwatch__open(struct libwatch *w, const struct libwatch_opts *o, char *err, size_t len);
/* The probes are gone (o->links freed): linker reports still read attach nothing. */
void libwatch__detach(struct libwatch *w);
/* Claims the file at path for kind: 1 when it is new (the caller probes it), 0 when it was
 * claimed already, -errno when it cannot be stat'ed. */
int libwatch__claim(struct libwatch *w, enum gp_lib kind, const char *path);
/* Forgets a claim (the file's probes are gone): a later claim of it is new again. */
void libwatch__unclaim(struct libwatch *w, enum gp_lib kind, dev_t dev, ino_t ino);
/* The kinds (enum gp_need bits) the front end wants watched and not resolved itself:
 * their files now, then the hook and the rescans. 0 or -errno with one line in err (a
 * --libnccl that is not NCCL's). */
int libwatch__start(struct libwatch *w, unsigned int kinds, char *err, size_t len);
/* From the front end's loop (~every 100 ms): deferred scans and the periodic rescan. */
void libwatch__tick(struct libwatch *w);
/* Whether path is a library of kind (libcuda: exports cuMemAlloc_v2; libnccl: ncclAllReduce
 * or pncclAllReduce); 0 or -errno with one reason in err. */
int libwatch__check(enum gp_lib kind, const char *path, char *err, size_t len);
/* Files probed by the watcher per kind, scans made, scans put off (over budget). */
struct libwatch_stats {
	unsigned int hooked;   /* dynamic linker files with the hook */
	unsigned int files[GP_LIB__COUNT];
	unsigned long long hook_reports, scans, deferred, rescans;
	unsigned long long held; /* processes stopped at a dlopen of libcuda until probed */
	unsigned long long refused; /* libcuda files past their owner's share (fair_share) */
	unsigned long long slots_freed; /* libcuda files no process mapped any more: probes gone */
};
void libwatch__stats(const struct libwatch *w, struct libwatch_stats *st);
void libwatch__free(struct libwatch *w);

#endif
