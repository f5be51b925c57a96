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
 *
 * Layouts are kept per libcuda build and per uid (the real uid of the processes whose
 * handles taught them), so that they can be saved (layouts.h) and used in later runs for
 * processes that make no naming call while gpuprobe watches (a job at steady state). A
 * process can forge its own handles' objects, so what it teaches is trusted only where it
 * could do no harm beyond what its user can already do to its own processes: a process of
 * uid U uses a layout of its build taught by uid U or by root (uid 0 in gpuprobe's own pid
 * namespace: the caller maps a container's root to a uid of its own); a contradiction from
 * U (or from root) stops the slot for U (for all).
 * A hostile process can thus neither make another user's launches wrongly named nor
 * print a name of its choosing for them (names are read from the named process's own
 * memory), nor stop their naming (its contradictions count for its uid only).
 */
#ifndef GP_CT_MIDNAME_H
#define GP_CT_MIDNAME_H

#include <stddef.h>
#include <stdint.h>

#define MN_MIN_VOTES 1     /* known handles that must agree on a layout (none may disagree) */
#define MN_SLOTS 8         /* qwords of a handle's object searched for the name pointer */
#define MN_MAX_NAME 4096   /* longest name read */
#define MN_MAX_NOTES 65536 /* handles waiting for a name */
#define MN_LAYOUTS 256     /* (build, tag, slot, uid) entries kept (the state file's LAY_MAX) */
#define MN_PER_UID 8       /* ... of one uid and build (a driver has one per kind: a few) */
#define MN_COPY_BYTES (16u << 20) /* of handles' objects copied at their first sight, kept
				   * until their name is decided */

/* Reads len bytes of pid's memory at addr into buf; returns the bytes read or -errno. */
typedef long (*mn_read_fn)(void *ctx, uint32_t pid, uint64_t addr, void *buf, size_t len);

/* The libcuda build pid's handles come from (0: unknown, never saved) and its real uid;
 * 0 or -errno (then build 0, uid -1: nothing of another uid is trusted). */
typedef int (*mn_who_fn)(void *ctx, uint32_t pid, uint32_t *build, uint32_t *uid);

struct midname;

/* One layout, for saving and loading (layouts.h). */
struct mn_layout {
	uint32_t build, uid;
	uint64_t tag;
	unsigned int slot;
	int contradicted; /* seen broken in this run: to be dropped from the state file */
};

/*
 * A handle's object as BPF copied it when it was first seen, while its process surely
 * lived (struct gp_kobj_copy): its first MN_SLOTS qwords and, for some slots holding a user
 * pointer, the string there (NULL: not copied, or cut). Used as the process's memory would
 * be, so that a process that exits at once keeps its kernels' names. build and uid are the
 * process's at the call (the caller resolves them: uid UINT32_MAX trusts nothing).
 */
struct mn_copy {
	uint32_t build, uid;
	int obj_ok;
	uint64_t q[MN_SLOTS];
	const char *str[MN_SLOTS];
};

/* Which slots the usable layouts name for a kind of handle (tag) and a uid: what BPF copies
 * at a handle's first sight (bit s: slot s). */
struct mn_hint {
	uint64_t tag;
	uint32_t uid, mask;
};

struct midname_stats {
	uint64_t learned;   /* known handles whose object held their name */
	uint64_t unlearned; /* known handles whose object did not (no vote) */
	uint64_t resolved;  /* unknown handles named from memory */
	uint64_t rejected;  /* unknown handles read but not named (tag, pointer, name checks) */
	uint64_t seeded;    /* layouts loaded from the state file */
	uint64_t full;      /* layouts not kept: the table, or their uid's share of it, full */
	uint64_t learned_copy;   /* known handles learned from a copy (midname__learn_copy) */
	uint64_t copied;         /* unknown handles noted with a copy of their object */
	uint64_t from_copy;      /* ... named from it (of resolved) */
	uint64_t copies_dropped; /* copies not kept: MN_COPY_BYTES held already */
	uint64_t unread;         /* unknown handles whose name was neither copied nor readable:
				  * their process was gone */
};

struct midname *midname__new(mn_read_fn read, void *ctx);
void midname__free(struct midname *m);
/* Who a pid is (without it every process is build 0, uid 0: one run, one trust). */
void midname__set_who(struct midname *m, mn_who_fn who);
/* A layout learned in an earlier run (the state file). */
void midname__seed(struct midname *m, const struct mn_layout *l);
/* The layouts of known builds (build > 0) that are usable or were contradicted, into out
 * (up to cap); returns how many. */
size_t midname__export(const struct midname *m, struct mn_layout *out, size_t cap);
/* Whether a layout of a known build became usable or was contradicted since the last call. */
int midname__take_changed(struct midname *m);
/* handle of pid is known to be named `mangled` (exactly as the driver was given it). */
void midname__learn(struct midname *m, uint32_t pid, uint64_t handle, const char *mangled);
/* The same, from its object as BPF copied it at the naming call (the process may be gone). */
void midname__learn_copy(struct midname *m, uint32_t pid, const char *mangled, const struct mn_copy *c);
/* The hints of the usable layouts (any build) into out (up to cap); how many. Their
 * generation moves whenever they may have changed. */
size_t midname__hints(const struct midname *m, struct mn_hint *out, size_t cap);
uint64_t midname__hints_gen(const struct midname *m);
/* Whether some layout has enough votes to be used. */
int midname__ready(const struct midname *m);
/* The raw (mangled) name of an unknown handle read through a learned layout: 0 and buf
 * filled, -EAGAIN when nothing is learned (yet) for the handle's kind (its tag), -ENOENT
 * when the checks fail (pointer or name), -ESRCH when the handle's object cannot be read (the process may be gone). */
int midname__resolve(struct midname *m, uint32_t pid, uint64_t handle, char *buf, size_t len);
struct midname_stats midname__stats(const struct midname *m);

/* Handles to name later: pid's handle is read now if a layout allows, else as soon as one
 * is learned (the process is alive now; it may not be at the report). */
void midname__note(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle);
/* The same with the handle's object as BPF copied it at its first sight: named from the
 * copy (whenever a layout allows, the process gone or not); a string the copy lacks is
 * read live. */
void midname__note_copy(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle, const struct mn_copy *c);
/* The name read for a noted handle (read now when not yet): 0 and buf filled, -ENODATA
 * when no layout is learned yet for its build and kind, -ESRCH when its process was gone
 * before its name was read (and it was not copied), -ENOENT when there is none. */
int midname__name(struct midname *m, uint32_t pid, uint32_t img, uint64_t handle, char *buf, size_t len);
/* pid's notes go (with img: that image's only), when its records are reaped. */
void midname__forget(struct midname *m, uint32_t pid, const uint32_t *img);

#endif
