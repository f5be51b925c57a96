/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unwind: a native stack from a copy of the user registers and the top of
 * the user stack (struct gp_stack_copy, bpf/stackcopy.bpf.h), with the
 * call-frame information of the mapped files, the way
 * `perf record --call-graph dwarf` does it.
 *
 * Built on elfutils' libdwfl (dwfl_attach_state with memory and register
 * callbacks over the copy; docs/stacks.md says why libdwfl over libunwind).
 * CFI comes from .eh_frame and .debug_frame, of the mapped file or of its
 * separate debug file (build-id path or .gnu_debuglink, verified); where a
 * frame has no CFI, libdwfl's x86-64 backend walks the frame pointer for
 * that frame. Every file is opened through safeopen (inside the process's
 * root, checked against the dev/inode in maps).
 *
 * Caches (all bounded): the mappings and the libdwfl session per pid
 * (UNWIND_MAX_PIDS, least recently used evicted), and the open ELF handles
 * per (dev, inode) (UNWIND_MAX_FILES), shared by every process that maps
 * the file, so a libcuda seen by a thousand processes is read once. CFI
 * lookups go through .eh_frame_hdr's binary-search table: nothing is
 * parsed up front. Not thread-safe.
 */
#ifndef GPUPROBE_UNWIND_H
#define GPUPROBE_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "stacks.h"

/*
 * The architectures whose user registers the stack copy carries (struct gp_user_regs,
 * bpf/stacks.h) and whose DWARF register numbering set_initial_registers feeds libdwfl:
 * x86-64 and arm64 (x19-x30 and sp; signed return addresses stripped). Built for another,
 * the unwinder refuses every file and gpuprobe refuses --stacks dwarf with
 * UNWIND_UNSUPPORTED_WHY; --stacks auto takes frame pointers there.
 */
#if defined(__x86_64__) || defined(__aarch64__)
#define UNWIND_SUPPORTED 1
#define UNWIND_UNSUPPORTED_WHY NULL
#else
#define UNWIND_SUPPORTED 0
#define UNWIND_UNSUPPORTED_WHY \
	"DWARF unwinding of a stack copy is built for x86-64 and arm64 only: on this architecture the copy lacks the registers it needs"
#endif

#define UNWIND_MAX_FRAMES 127
#define UNWIND_MAX_PIDS 64
#define UNWIND_MAX_FILES 256

enum unwind_flags {
	/* the copy ended before the stack did: the frames are the innermost ones */
	UNWIND_TRUNCATED = 1u << 0,
	/* stopped at a frame it could not unwind (no CFI and no usable frame
	 * pointer, or a return address outside any executable mapping) */
	UNWIND_STOPPED = 1u << 1,
	/* UNWIND_MAX_FRAMES reached */
	UNWIND_TOO_DEEP = 1u << 2,
	/* the BPF side could not read the stack (copy->err): pc only */
	UNWIND_NO_STACK = 1u << 3,
};

struct unwind_frames {
	/* pcs[0] is the probed pc; later entries are return addresses
	 * (callers), innermost first, as bpf_get_stack reports them */
	uint64_t pcs[UNWIND_MAX_FRAMES];
	unsigned int nr;
	unsigned int flags;		/* enum unwind_flags */
	unsigned int nr_fp;		/* frames found by the frame-pointer fallback */
	uint64_t stop_pc;		/* a return address in no executable mapping known
					 * (a library loaded since they were read?), or 0 */
};

struct unwinder;

/* proc_root NULL means "/proc"; tests may pass a fake tree. */
struct unwinder *unwinder__new(const char *proc_root);
void unwinder__free(struct unwinder *u);

/*
 * Unwinds the stack copied at a probe hit in process pid (its tgid: the
 * mappings are per process). Fills *out and returns 0 when at least the
 * probed pc is there (flags say how the walk ended), or -errno (-ESRCH:
 * no such process and nothing cached; -EINVAL: bad copy). A frame is only
 * reported when its pc lies in an executable mapping: a stack that cannot
 * be followed is cut and flagged, never continued with garbage.
 */
int unwinder__unwind(struct unwinder *u, int pid,
		     const struct gp_stack_copy *copy,
		     struct unwind_frames *out);

/*
 * The inline chain at pc (for a return address pass pc - 1), from DWARF's inline records
 * (DW_TAG_inlined_subroutine with DW_AT_call_file / DW_AT_call_line), as `addr2line -i`
 * gives it: locs[0] is the innermost function at pc, with the line of pc; each next one
 * is its caller, with the line of the call; the last is the real (not inlined) function,
 * whose name is left empty (the symbol table names it). At most max entries (the
 * innermost inlined ones and the real function when the chain is deeper). Returns how
 * many (1: nothing inlined, the line of pc), -ENOENT without line information, -ESRCH
 * when the process is gone and nothing is cached. Files whose DWARF sections together
 * exceed UNWIND_DWARF_MAX are not read. Kept by file (device, inode) and offset while the
 * file is open here: a process's first stack does not read its DWARF again.
 */
#define UNWIND_DWARF_MAX (256ull << 20)
#define UNWIND_MAX_INLINE 8
struct unwind_loc {
	char func[256];	/* the inlined function (its linkage name where DWARF has one) */
	char file[256];	/* base name */
	int line;
};
int unwinder__inlines(struct unwinder *u, int pid, uint64_t pc, struct unwind_loc *locs, int max);

/*
 * "func+0x1a" for pc from the symbols libdwfl finds: .symtab, .dynsym, the
 * MiniDebugInfo in .gnu_debugdata, or the verified separate debug file; for frames
 * the ELF symbol tables of the mapped file do not name. 0, or -ENOENT.
 */
int unwinder__symbol(struct unwinder *u, int pid, uint64_t pc, char *buf, size_t len);

/*
 * What exited processes kept (procpin.h, not owned; NULL for none): their maps and file
 * descriptors stand in for /proc when the process is gone.
 */
struct procpin;
void unwinder__set_pin(struct unwinder *u, const struct procpin *pin);

/*
 * While pid lives: reads its maps again, opens each file it maps executable (kept in the
 * shared file cache) and looks up the separate debug files of those without DWARF, inside
 * its root, so that its frames can be unwound and named after it is gone. 0 or -errno.
 */
int unwinder__prepare(struct unwinder *u, int pid);

/* Drops what is cached for an exited process (pids get reused). */
void unwinder__forget_pid(struct unwinder *u, int pid);

/* Counters for tests and the cost report. */
struct unwind_stats {
	unsigned long long unwinds, frames, maps_reads, files_opened,
		files_rejected, debug_files, debug_rejected;
};
void unwinder__stats(const struct unwinder *u, struct unwind_stats *st);

/* One line: why the last file was refused (not found, not the mapped inode, not ELF...). */
const char *unwinder__last_error(const struct unwinder *u);

#endif /* GPUPROBE_UNWIND_H */
