/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ustack: the stack of an allocation as text, innermost first, from what the BPF side
 * took at its entry:
 *   - native frames: unwound from the stack copy with call-frame information
 *     (src/lib/unwind.c, libdwfl; --stacks dwarf), or the kernel's frame-pointer walk
 *     (--stacks fp); named by the ELF symbol tables (src/lib/symbolize.c), then by
 *     libdwfl (MiniDebugInfo, separate debug files), "func+0x1a (lib)", with
 *     " at file.c:42" where DWARF line information exists;
 *   - CPython frames, "function (file.py:42)" (src/lib/pystack.c), placed where the
 *     interpreter's _PyEval_EvalFrameDefault frames sit in the native stack: each run of
 *     the interpreter loop replaced by the Python frames it was running. When they cannot
 *     be matched (the interpreter's frames are not named), they follow the native frames
 *     (USTACK_PY_AFTER).
 * It also decides when a process is looked at for CPython (ustack__watch): the BPF walk
 * needs the interpreter's offsets in the gp_py_procs map before the allocation happens.
 *
 * Functions inlined into a frame's function are expanded into frames of their own, from
 * DWARF's inline records, as `addr2line -i` does: "name [inlined] (lib) at file.c:8",
 * each with its line, the real frame with the line of the call the innermost inlined one
 * came from.
 *
 * What naming needs once the process is gone (its maps, a descriptor on each executable
 * file it maps) is kept from its first stack on (src/lib/procpin.c), so a program that
 * exits right after its last allocation keeps its whole stacks; CPython code objects are
 * copied by BPF at their first sight in a process (struct gp_py_code, before the stack
 * record), so their frames are named whether or not the process still lives; frames of
 * a code object not copied are read from the process's memory while the record is
 * handled. Caches are bounded. Not thread-safe: one consumer thread.
 */
#ifndef GP_USTACK_H
#define GP_USTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuprobe.h"
#include "cuda_mem.h"

#define USTACK_MAX_FRAMES 192 /* 127 native + 64 Python + room */
#define USTACK_FRAME_MAX 512  /* bytes of one frame's text, NUL included */

enum ustack_flags {
	/* a partial stack: the copy ended before the stack did (innermost frames kept) */
	USTACK_TRUNCATED = 1u << 0,
	/* a frame could not be unwound (no CFI and no frame pointer, a corrupt .eh_frame,
	 * a debug file of another build): the stack is cut there */
	USTACK_STOPPED = 1u << 1,
	/* more native frames than kept (127; 32 for --stacks fp) */
	USTACK_TOO_DEEP = 1u << 2,
	/* the stack could not be read: the probed function alone */
	USTACK_NO_STACK = 1u << 3,
	/* more Python frames than the BPF walk keeps (64) */
	USTACK_PY_TRUNCATED = 1u << 4,
	/* the Python frames could not be placed: they follow the native frames */
	USTACK_PY_AFTER = 1u << 5,
	/* a CPython process whose frames could not be read at this allocation (its thread
	 * state was not found, its memory unreadable, or it was recognized after the call) */
	USTACK_PY_UNREAD = 1u << 6,
	/* no stack was taken for this allocation (stack record lost or not requested) */
	USTACK_LOST = 1u << 7,
	/* the process was gone before its frames could be named: raw addresses */
	USTACK_UNRESOLVED = 1u << 8,
	/* the process is gone and some of the files it mapped were not kept while it lived
	 * (the limits of procpin.h, or they could not be opened): set with UNRESOLVED or
	 * STOPPED, it says why */
	USTACK_UNKEPT = 1u << 9,
	/* a Python frame could not be named: its process was gone and its code object had
	 * not been copied (the copy was lost or refused: see the counts), "0x... (?)" */
	USTACK_PY_UNNAMED = 1u << 10,
	/* a Python frame named from its copy, but its line lies past the part of the line
	 * table copied (64 KiB), or a part of it was lost: "file.py:?" */
	USTACK_PY_NO_LINE = 1u << 11,
	/* --stacks fp: the kernel's frame-pointer walk met code without frame pointers and
	 * read no return address (0 or junk): the stack is cut there */
	USTACK_FP_END = 1u << 12,
};

/* A partial stack: its outermost frames are missing. */
#define USTACK_PARTIAL (USTACK_TRUNCATED | USTACK_STOPPED | USTACK_TOO_DEEP | USTACK_NO_STACK | \
			USTACK_LOST | USTACK_UNRESOLVED | USTACK_UNKEPT | USTACK_FP_END)

struct ustack_frames {
	unsigned int nr;
	unsigned int flags;    /* enum ustack_flags */
	unsigned int nr_py;    /* how many of the frames are Python frames */
	const char *frames[USTACK_MAX_FRAMES]; /* innermost first; valid until the next call */
};

struct ustack_stats {
	uint64_t stacks, native_frames, py_frames, unresolved;
	uint64_t inspected, python_procs; /* processes looked at for CPython; found */
	/* kept for after the exit (procpin.h): processes, files open now; files and
	 * processes a limit (or a failed open) left out */
	uint64_t kept_procs, kept_files, unkept_files, unkept_procs;
	/* Python frames not named (USTACK_PY_UNNAMED); code objects copied at their first
	 * sight, copies refused (limits) or malformed, frames named from a copy */
	uint64_t py_unnamed, py_copies, py_copies_refused, py_copies_malformed, py_named_from_copy;
};

struct symbolizer;
struct ustack;

/* sym: the run's symbolizer (shared, not owned); proc_root NULL means "/proc";
 * py_map_fd: the BPF gp_py_procs map (tgid -> struct gp_py_proc), -1 for no Python. */
struct ustack *ustack__new(struct symbolizer *sym, const char *proc_root, int py_map_fd);
void ustack__free(struct ustack *u);

/* A process seen for the first time, or with a new image (exec): it is looked at for
 * CPython now, and again at ustack__tick while its executable is a python* whose
 * libpython is not mapped yet (up to 5 s). */
void ustack__watch(struct ustack *u, uint32_t pid);
/* An exec at ts_ns: what was known of the old image goes; the new one is looked at when
 * the process is followed (a command's tree, -p --tree) or runs a python* executable. */
void ustack__exec(struct ustack *u, uint32_t pid, bool followed, uint64_t ts_ns);
/* A fork at ts_ns: the child has the parent's interpreter at the same addresses. */
void ustack__fork(struct ustack *u, uint32_t parent, uint32_t child, uint64_t ts_ns);
/* Whether the reader has records left to read (gp_events__more or gp_events__unread):
 * while it has, what dead processes kept stays (their stacks may still be unread). */
void ustack__reader_behind(struct ustack *u, bool behind);
/* Retries the processes still waiting for their libpython; returns how many still
 * wait (the caller ticks again within a few milliseconds while any does). */
size_t ustack__tick(struct ustack *u);
/* A process just made its first allocation call (GP_EV_PIN): what naming its frames needs
 * is kept now, while it surely lives, whatever records are still to read before its
 * first stack's. */
void ustack__pin(struct ustack *u, uint32_t pid);
/* Forgets a process that exited or exec'd at ts_ns (its BPF entry too, what was kept for
 * it). What was kept after ts_ns stays: a later image's, or a later process's of the PID
 * (ustack__pin's records are read before the run's ring, where these events come). */
void ustack__forget(struct ustack *u, uint32_t pid, uint64_t ts_ns);
/* A process gone whose records may still come (they come through another ring than
 * this news): forgotten, but what was kept to name its frames stays until its exit
 * record (ustack__forget) or a few seconds. */
void ustack__gone(struct ustack *u, uint32_t pid);

/* A code object's copy (GP_EV_PYCODE) and the further chunks of its line table
 * (GP_EV_PYLINES): they come between the stack record and the allocation record of the
 * call that reached them first, and name their frames even once the process is gone
 * (until ustack__forget). */
void ustack__py_code(struct ustack *u, const struct gp_pycode_event *e);
void ustack__py_lines(struct ustack *u, const struct gp_pylines_event *e);

/* The frames of a GP_EV_STACK record. 0, or -errno (the frames then say why). */
int ustack__from_copy(struct ustack *u, const struct gp_stack_event *e, struct ustack_frames *out);

/*
 * The same in two steps: the native stack is unwound when the stack record comes (its
 * process's files are kept then), and its Python frames are named and placed when the
 * call's allocation record comes (ustack__finish): the copies of the code objects the
 * call reached first follow its stack record in the ring (bpf/pystack.bpf.h), and precede
 * the allocation record.
 */
#define USTACK_PENDING_PCS 128 /* UNWIND_MAX_FRAMES + 1 */
struct ustack_pending {
	uint32_t pid;
	int err;
	unsigned int flags, nr, nr_py, py_status;
	uint64_t pcs[USTACK_PENDING_PCS];
	struct gp_py_frame py[GP_PY_MAX_FRAMES];
};
int ustack__unwind_copy(struct ustack *u, const struct gp_stack_event *e, struct ustack_pending *p);
int ustack__finish(struct ustack *u, const struct ustack_pending *p, struct ustack_frames *out);
/* The frames of a frame-pointer stack (bpf_get_stack's pcs, innermost first). */
int ustack__from_pcs(struct ustack *u, uint32_t pid, const __u64 *pcs, unsigned int n,
		     struct ustack_frames *out);

void ustack__stats(const struct ustack *u, struct ustack_stats *st);

/*
 * Where the Python frames go (exposed for unit tests). is_eval[i]: native frame i is an
 * interpreter-loop frame; py_entry[k]: Python frame k is the outermost of its loop run
 * (GP_PY_FRAME_ENTRY). Writes the merged order into order[] (cap entries): a value
 * >= 0 is a native frame's index, -1 - k Python frame k. Each interpreter-loop frame
 * takes the Python frames of its run, innermost run first; runs beyond the last such
 * frame follow the native frames when the native stack is partial. If the runs cannot
 * be matched (more runs than loop frames in a complete stack, or none named), the
 * Python frames follow the native ones and *flags gets USTACK_PY_AFTER. Returns the
 * count written.
 */
size_t ustack__interleave(const bool *is_eval, size_t nn, const bool *py_entry, size_t np,
			  bool native_partial, int *order, size_t cap, unsigned int *flags);

#endif
