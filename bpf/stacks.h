/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The records of a stack taken at a probe, shared by BPF and user space: the
 * user registers and a copy of the top of the user stack (filled by
 * bpf/stackcopy.bpf.h, unwound by src/core/unwind.c), and the CPython frames
 * of the calling thread (filled by bpf/pystack.bpf.h, named by
 * src/core/pystack.c). Only fixed-size __u8/__u32/__u64 fields. Types only:
 * any BPF object or user file may include it (gpuprobe.h does).
 */
#ifndef GPUPROBE_STACKS_H
#define GPUPROBE_STACKS_H

#if !defined(__VMLINUX_H__) && !defined(__bpf__)
#include <linux/types.h>
#endif

/* The largest copy; a power of two, so the verifier can bound a masked size. */
#define GP_STACK_COPY_MAX 16384u

/*
 * The user registers at the probe: the pc, the stack and frame pointers, and the
 * callee-saved registers that CFI may say a caller's value is still in. Caller-saved
 * registers are dead at a call boundary and are not copied. Per architecture (BPF's
 * __TARGET_ARCH_*, user space's compiler): the BPF objects and the user program of one
 * build agree, and a record never crosses builds.
 */
#if defined(__TARGET_ARCH_arm64) || (!defined(__bpf__) && defined(__aarch64__))
/* AArch64: x29 the frame pointer, x30 the link register (at a function's first
 * instruction, the return address: no frame record holds it yet), x19-x28 callee-saved. */
struct gp_user_regs {
	__u64 ip;
	__u64 sp;
	__u64 bp;	/* x29 */
	__u64 lr;	/* x30 */
	__u64 x19[10];	/* x19-x28 */
};
#else
/* x86-64: rbx and r12-r15 callee-saved (rbp: bp). */
struct gp_user_regs {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u64 bx;
	__u64 r12;
	__u64 r13;
	__u64 r14;
	__u64 r15;
};
#endif

enum gp_stack_copy_flags {
	/* the copy reaches the end of the stack's mapping: nothing above it */
	GP_STACK_COPY_TO_END = 1u << 0,
	/* the end of the mapping was not found */
	GP_STACK_COPY_NO_VMA = 1u << 1,
	/* a page was not present: the copy is the readable prefix */
	GP_STACK_COPY_CUT = 1u << 2,
};

struct gp_stack_copy {
	struct gp_user_regs regs;
	__u32 size;	/* bytes of data[] valid, copied from regs.sp upwards */
	__s32 err;	/* <0: the read failed with this errno; size is then 0 */
	__u32 wanted;	/* bytes asked for (the stack_bytes setting) */
	__u32 flags;	/* enum gp_stack_copy_flags */
	__u8 data[GP_STACK_COPY_MAX];
};

#define GP_PY_MAX_FRAMES 64	/* a power of two: the index is masked */
#define GP_PY_MAX_THREADS 64	/* thread states looked at before giving up */
#define GP_PY_NONE 0xffffffffu	/* an offset that does not exist */
/* One read covers every field of a frame the walk needs (offsets < this). */
#define GP_PY_FRAME_READ 128

/* How to walk one process's interpreter: user space fills it per tgid. */
struct gp_py_proc {
	__u64 runtime_addr;		/* &_PyRuntime in the process */
	__u32 version_hex;		/* PY_VERSION_HEX, read from the binary */
	__u32 runtime_interpreters_head;
	__u32 interp_threads_head;
	__u32 tstate_next;
	__u32 tstate_native_thread_id;	/* GP_PY_NONE before 3.11; not used by the walk */
	__u32 tstate_thread_id;		/* pthread_t: matched against fsbase */
	__u32 tstate_cframe;		/* 3.11/3.12; else GP_PY_NONE */
	__u32 cframe_current_frame;
	__u32 tstate_frame;		/* 3.13 current_frame, 3.10 frame */
	__u32 frame_previous;
	__u32 frame_code;
	__u32 frame_instr;
	__u32 frame_owner;		/* GP_PY_NONE on 3.10 */
	__u32 owner_cstack;		/* frames owned by the C stack (shims): skipped */
	__u32 code_firstlineno;
	__u32 instr_is_int;		/* 3.10: f_lasti is an int, not a pointer */
	__u32 frame_read;		/* bytes of a frame holding those fields (<= 128):
					 * no more, a frame may end where memory does */
	__u32 frame_is_entry;		/* 3.11: _PyInterpreterFrame.is_entry; else GP_PY_NONE */
	/* what a code object's first sight copies (struct gp_py_code): its name (3.11+
	 * co_qualname, 3.10 co_name), file and line table, and how to read those objects */
	__u32 code_name;
	__u32 code_filename;
	__u32 code_linetable;
	__u32 code_adaptive;		/* GP_PY_NONE on 3.10; passed on for user space */
	__u32 unicode_length;
	__u32 unicode_state;
	__u32 unicode_ascii_size;
	__u32 unicode_compact_size;
	__u32 unicode_kind_shift, unicode_kind_mask;
	__u32 unicode_compact_shift, unicode_compact_mask;
	__u32 unicode_ascii_shift, unicode_ascii_mask;
	__u32 bytes_size;
	__u32 bytes_sval;
	__u32 copy_codes;		/* 1: copy code objects at their first sight */
	/* pthread_t = the thread pointer less this: 0 on x86-64 (fsbase is the pthread_t);
	 * on arm64 glibc's sizeof(struct pthread), which sits below the thread pointer
	 * (src/lib/pystack.c reads it from the process's libc) */
	__u32 tp_pthread_off;
};

struct gp_py_frame {
	__u64 code;	/* PyCodeObject * */
	__u64 instr;	/* 3.11+: the instruction pointer; 3.10: f_lasti */
	__s32 firstlineno;	/* lets user space tell a reused code address */
	__u32 flags;		/* enum gp_py_frame_flags */
};

enum gp_py_frame_flags {
	/*
	 * The outermost frame of one run of the interpreter loop: the frame C
	 * code entered _PyEval_EvalFrameDefault with (3.12+: the next frame is a
	 * C-stack shim; 3.11: is_entry; 3.10: every frame). Frames from one such
	 * frame inwards to the previous one belong to one native
	 * _PyEval_EvalFrameDefault activation: user space places them there.
	 */
	GP_PY_FRAME_ENTRY = 1u << 0,
};

enum gp_py_status {
	GP_PY_OK = 0,
	GP_PY_NOT_PYTHON = 1,	/* no entry for this process */
	GP_PY_NO_THREAD = 2,	/* no thread state for this thread (not a Python thread) */
	GP_PY_READ_FAILED = 3,	/* interpreter memory unreadable (paged out, torn) */
};

/*
 * A code object's first sight in a process (bpf/pystack.bpf.h, gp_py_copy_codes): what
 * naming its frames needs, copied while the process surely lives, so that a program that
 * exits right after its last call keeps its Python frames. Strings are the raw data of
 * compact str objects (len characters of kind bytes each, at most GP_PY_STR_CHARS); the
 * line table is the bytes object's data, in chunks of GP_PY_LT_CHUNK bytes: the first
 * here, the others in struct gp_py_lines records that follow it. Copied from the traced
 * process: hostile input, every length checked by user space (src/core/pystack.c).
 */
#define GP_PY_STR_CHARS 255	/* characters of a name or a file name kept (user space's cap) */
#define GP_PY_STR_BYTES 1024	/* raw bytes: 255 characters of up to 4 bytes */
#define GP_PY_LT_CHUNK 4096	/* line-table bytes per record (a power of two) */
#define GP_PY_LT_CHUNKS 16	/* records a line table may take */
#define GP_PY_LT_MAX (GP_PY_LT_CHUNK * GP_PY_LT_CHUNKS)

enum gp_py_code_flags {
	GP_PY_CODE_NAME_BAD = 1u << 0,	/* the name could not be read (not a compact str) */
	GP_PY_CODE_FILE_BAD = 1u << 1,	/* the file name could not be read */
	GP_PY_CODE_LT_BAD = 1u << 2,	/* the line table could not be read */
	GP_PY_CODE_LT_CUT = 1u << 3,	/* longer than GP_PY_LT_MAX: its prefix only */
};

struct gp_py_code {
	__u64 code;		/* PyCodeObject * */
	__u64 start;		/* the process's start time (ns since boot): tells a reused PID */
	__s32 firstlineno;
	__u32 flags;		/* enum gp_py_code_flags */
	__u32 version_hex;	/* the interpreter's (3.10: the frame's instr is f_lasti) */
	__u32 code_adaptive;	/* 3.11+: where the instructions start in the code object */
	__u32 name_len, name_kind;
	__u32 file_len, file_kind;
	__u32 lt_len;		/* line-table bytes copied in all (<= GP_PY_LT_MAX) */
	__u32 lt_chunks;	/* struct gp_py_lines records that follow this one */
	__u8 name[GP_PY_STR_BYTES];
	__u8 file[GP_PY_STR_BYTES];
	__u8 lt[GP_PY_LT_CHUNK];	/* line-table bytes [0, min(lt_len, GP_PY_LT_CHUNK)) */
};

/* Chunk k (1 .. lt_chunks) of a code object's line table. */
struct gp_py_lines {
	__u64 code;
	__s32 firstlineno;
	__u32 off;		/* k * GP_PY_LT_CHUNK */
	__u32 len;		/* min(GP_PY_LT_CHUNK, lt_len - off) */
	__u32 _pad;
	__u8 lt[GP_PY_LT_CHUNK];
};

struct gp_py_stack {
	__u32 nr;		/* frames[0..nr), innermost first */
	__u32 status;		/* enum gp_py_status */
	__u32 truncated;	/* more frames than GP_PY_MAX_FRAMES */
	__u32 pad;
	struct gp_py_frame frames[GP_PY_MAX_FRAMES];
};

#endif /* GPUPROBE_STACKS_H */
