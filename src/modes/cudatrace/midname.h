/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Kernel names for handles made before gpuprobe attached (-p on a running job), read from
 * the process's own memory. The driver keeps a handle's name where cuFuncGetName and
 * cuKernelGetName read it; where that is inside the handle's object is not assumed: it is
 * learned at run time from handles whose names gpuprobe knows for sure (made while it
 * watched, or named by their host stub), as (first qword of the object — its kind's tag —,
 * qword slot holding a pointer to the name). A layout is used only once MN_MIN_VOTES known
 * handles agree on it and none of its tag contradicts it; an unknown handle is named only
 * when its object carries the tag, the pointer leads to a plausible symbol name, and the
 * driver accepted one of its launches (the caller checks that: a forged or stale handle
 * stays unknown@0x...). All reads are bounded; nothing is read on the traced thread.
 */
#ifndef GP_CT_MIDNAME_H
#define GP_CT_MIDNAME_H

#include <stddef.h>
#include <stdint.h>

#define MN_MIN_VOTES 1     /* known handles that must agree on a layout (none may disagree) */
#define MN_SLOTS 8         /* qwords of a handle's object searched for the name pointer */
#define MN_MAX_NAME 4096   /* longest name read */
#define MN_MAX_NOTES 65536 /* handles waiting for a name */

/* Reads len bytes of pid's memory at addr into buf; returns the bytes read or -errno. */
typedef long (*mn_read_fn)(void *ctx, uint32_t pid, uint64_t addr, void *buf, size_t len);

struct midname;

struct midname_stats {
	uint64_t learned;   /* known handles whose object held their name */
	uint64_t unlearned; /* known handles whose object did not (no vote) */
	uint64_t resolved;  /* unknown handles named from memory */
	uint64_t rejected;  /* unknown handles read but not named (tag, pointer, name checks) */
};

struct midname *midname__new(mn_read_fn read, void *ctx);
void midname__free(struct midname *m);
/* handle of pid is known to be named `mangled` (exactly as the driver was given it). */
void midname__learn(struct midname *m, uint32_t pid, uint64_t handle, const char *mangled);
/* Whether some layout has enough votes to be used. */
int midname__ready(const struct midname *m);
/* The raw (mangled) name of an unknown handle read through a learned layout: 0 and buf
 * filled, -EAGAIN when nothing is learned (yet) for the handle's kind (its tag), -ENOENT
 * when the checks fail (pointer or name), -errno of a failed read. */
int midname__resolve(struct midname *m, uint32_t pid, uint64_t handle, char *buf, size_t len);
struct midname_stats midname__stats(const struct midname *m);

/* Handles to name later: pid's handle is read now if a layout allows, else as soon as one
 * is learned (the process is alive now; it may not be at the report). */
void midname__note(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle);
/* The name read for a noted handle (read now when not yet): 0 and buf filled, -EAGAIN
 * when no layout is learned yet, -ENOENT when there is none. */
int midname__name(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle, char *buf, size_t len);
/* pid's notes go (with img: that image's only), when its records are reaped. */
void midname__forget(struct midname *m, uint32_t pid, const uint32_t *img);

#endif
