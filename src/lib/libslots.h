/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Library slots (docs/security.md): the driver files a run holds probes on, whose they are and
 * when a process was last seen mapping them. A sweep reads every process's maps
 * (libslots__rescan) and frees the slots of users' files (not root's) that no process
 * mapped in that sweep or the one before: their probes are detached (the caller's drop
 * function) and their owner's share is free again. Root's files keep their probes (a driver
 * that short jobs map now and then stays probed from their first call) unless the caller
 * says every slot is taken. The daemon keeps its libcuda files here, the CLI's library
 * watcher those loaded after the start: one rule for both.
 */
#ifndef GP_LIBSLOTS_H
#define GP_LIBSLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mapped_lib;

struct libslot {
	dev_t dev;
	ino_t ino;
	uid_t owner;
	bool trusted;  /* root's, and only root may write it (target.h, struct lib_entry) */
	bool pinned;   /* found by path at start (a driver folder): kept while unmapped */
	int tag;       /* its probes' tag (attach_set__tag); 0: no probes */
	uint64_t seen; /* the last sweep that found it mapped */
};

struct libslots;

struct libslots *libslots__new(void);
void libslots__free(struct libslots *s); /* NULL is fine */

/* A file taken into a slot now (seen in the sweep under way), with a new tag for its probes
 * when probes is set (slot->tag, to set on the links while they are attached): the slot, or
 * NULL (out of memory; a file there already: that one). */
struct libslot *libslots__add(struct libslots *s, dev_t dev, ino_t ino, uid_t owner, bool trusted, bool pinned,
			      bool probes);
struct libslot *libslots__find(struct libslots *s, dev_t dev, ino_t ino);
/* The slot of a file whose probes could not go in: free again (not counted as freed). */
void libslots__remove(struct libslots *s, dev_t dev, ino_t ino);
size_t libslots__count(const struct libslots *s);
/* Slots a sweep may free: users' files, unpinned. */
size_t libslots__freeable(const struct libslots *s);
/* Slots freed so far. */
uint64_t libslots__freed(const struct libslots *s);

/* Marks the file a process maps as seen in this sweep: true if it holds a slot. */
bool libslots__mapped(struct libslots *s, dev_t dev, ino_t ino);

/*
 * One sweep's reading of the maps: every process under proc_root but skip_pid, its mapped
 * files whose names start with prefix (procmaps__find_libs); each one marks its slot, and
 * found (NULL: none) is called for every mapping, a slot's or not (the daemon takes new
 * files from there). Returns the processes read.
 */
int libslots__rescan(struct libslots *s, const char *proc_root, int skip_pid, const char *prefix,
		     void (*found)(void *ctx, int pid, const struct mapped_lib *m), void *ctx);

/*
 * Ends a sweep: each slot that may go (unpinned; no process mapped it in this sweep or the
 * one before; a user's file, or any when full) is handed to drop (which detaches its
 * probes) and freed. drop may look at the slots but not change them. Returns the slots freed.
 */
int libslots__sweep(struct libslots *s, bool full, void (*drop)(void *ctx, const struct libslot *e), void *ctx);

#endif /* GP_LIBSLOTS_H */
