/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The boundary between the BPF programs and the loader: what every BPF object shares (the
 * record types, the traced set, the budget's hits, process records, the driver entry
 * points). Each object's own records are in its header beside it (cuda_mem.h,
 * cuda_launch.h, cuda_copy.h, api_trace.h, nccl_calls.h, nv_ioctl.h). Shared by both
 * sides, so only fixed-width fields: no pointers, no `long`. Every record starts with its
 * type.
 */
#ifndef GPUPROBE_H
#define GPUPROBE_H

#ifndef __VMLINUX_H__ /* user space; BPF gets the types from vmlinux.h */
#include <linux/types.h>
#endif
#include "stacks.h"

#define GP_MAX_STACK 32
#define GP_COMM_LEN 16

/* Where a user address space ends, to tell a pointer from other data: x86-64's user half
 * (4-level paging) below 2^47; arm64's 48-bit VA (Debian's kernels) below 2^48, where PIE
 * programs load at 0xaaaa... and mmap hands out 0xffff... (BPF: __TARGET_ARCH_arm64). */
#if defined(__TARGET_ARCH_arm64) || defined(__aarch64__)
#define GP_USER_ADDR_BITS 48
#else
#define GP_USER_ADDR_BITS 47
#endif

enum gp_event_type {
	GP_EV_ALLOC = 1, /* a successful allocation: address, size, stack */
	GP_EV_FREE = 2,  /* a successful free of an address or handle */
	GP_EV_MAP = 3,   /* cuMemMap: a physical handle mapped at an address */
	GP_EV_UNMAP = 4, /* cuMemUnmap */
	GP_EV_EXIT = 5,  /* a traced process exited (its last thread) */
	GP_EV_NAME = 6,  /* a kernel handle was created with a name */
	GP_EV_STUB = 8,  /* a launch of a handle never named: its stack, once */
	GP_EV_COPY = 9,  /* a successful copy of at least --min-bytes */
	GP_EV_AUX = 10,  /* what --bandwidth-util needs besides copies: contexts, syncs,
			  * event records, host registrations */
	GP_EV_IOCTL = 11, /* one nvidia ioctl (only with --trace: --ioctl aggregates in BPF) */
	GP_EV_CALL = 12,  /* one driver call, entry to return (--trace) */
	GP_EV_FORK = 13,  /* a traced process started another (struct gp_proc_event) */
	GP_EV_EXEC = 14,  /* a process replaced its image: its handles, allocations, names are gone */
	GP_EV_GONE = 15,  /* a traced process exited: it leaves the traced set */
	GP_EV_GRAPH = 16, /* --cudatrace: stream capture and CUDA graph calls (struct gp_graph_event) */
	GP_EV_CALL_STR = 17, /* --trace: a name argument, before its call's record */
	GP_EV_NCCL = 18,  /* one NCCL call, entry to return (struct gp_nccl_event, --nccl) */
	GP_EV_NCCL_CUDA = 19, /* a driver call --nccl needs (contexts, syncs, event records):
			       * struct gp_aux_event's layout with this type */
	GP_EV_DLOPEN = 20, /* the dynamic linker's debugger hook ran: a library set changed */
	GP_EV_STACK = 21, /* --memleak --stacks dwarf: the registers, a copy of the user stack and
			   * the Python frames at an allocation's entry (struct gp_stack_event) */
	GP_EV_PYCODE = 22, /* a code object's first sight in a process: its names and line table
			    * (struct gp_pycode_event), after the stack record that names it and
			    * before that call's allocation record */
	GP_EV_PYLINES = 23, /* a further chunk of that line table (struct gp_pylines_event) */
	GP_EV_NAMECOPY = 24, /* --cudatrace: a named handle's object, to learn its kind's layout
			      * from (struct gp_namecopy_event) */
	GP_EV_PIN = 25,  /* --memleak with stacks: a process's first allocation call, on a ring
			  * of its own that the reader takes before the others (struct
			  * gp_pin_event) */
};

/* A process gpuprobe follows (the tree of a command, -p --tree, --comm, --cgroup): the
 * value of the `traced` map shared by every BPF object, keyed by tgid. */
struct gp_traced {
	__u32 root; /* the tgid the tree starts at (the command, a -p PID, a --comm match) */
	__u32 _pad;
};

/*
 * --max-overhead: hits of the probes the budget may sample (launches, syncs), per process,
 * in the array `gp_hits` that the run creates (mmapped: read without a system call) and
 * every BPF object with such probes reuses (bpf/budget.bpf.h). Slot tgid % GP_HIT_SLOTS
 * belongs to the first process that hits it; slot GP_HIT_SLOTS sums the hits of processes
 * whose slot another one holds; slot GP_HIT_WINDOW says whether the window is open
 * (flags: the window's number, GP_EPOCH_FIRST on, while it is open; 0 while it is
 * closed). A hit outside the window (a probe whose link is being made or closed: its
 * breakpoints come and go some milliseconds after the budget says so) is a stray: it
 * costs the process, but is not counted, unless the process's slot has GP_SLOT_EXACT: its
 * probes are armed for it alone while it spends its exact allowance (src/core/budget.c),
 * and every call of it is counted. Slot GP_HIT_WINDOW's `hits` counts the slots taken:
 * the budget looks for new processes when it moves.
 */
#define GP_SLOT_EXACT 1
#define GP_SLOT_READY 2 /* set by BPF when the process's cuInit returned (since_ns: then) */
#define GP_SLOT_INIT 4  /* set by BPF when the process entered cuInit (no call before) */
#define GP_HIT_SLOTS 4096
#define GP_HIT_WINDOW (GP_HIT_SLOTS + 1)
struct gp_hit_slot {
	__u32 pid;   /* the tgid that holds the slot; 0: free */
	__u32 flags; /* GP_HIT_WINDOW: the window's number while it is open, else 0; a
		      * process's: GP_SLOT_EXACT (set and cleared by user space) */
	__u64 hits;  /* counted, in the window */
	__u64 stray; /* taken outside it */
	__u64 fixed; /* taken by probes the budget never samples (allocations, copies): priced */
	__u64 last_ns;   /* bpf_ktime_get_ns() of its last counted hit (any thread) */
	__u64 active_ns; /* the gaps between its counted hits, each up to GP_ACTIVE_GAP_NS: how
			  * long in the window it was calling (not waiting for a CPU, not asleep) */
	__u64 since_ns;  /* bpf_ktime_get_ns() when the process took the slot (its first hit),
			  * then when its cuInit returned (GP_SLOT_READY): no call comes before */
	/* The thread of the last counted hit, the window it was in and the thread's context
	 * switches and run-queue wait then: a gap between two counted hits of one thread in
	 * one window is known as it was spent (bpf/budget.bpf.h, gp_gap_active). */
	__u32 last_tid;
	__u32 last_epoch;
	__u64 last_nvcsw, last_nivcsw, last_delay;
	__u32 slept_epoch; /* the last window it slept in */
	__u32 _pad;
	__u64 slept_ns;    /* bpf_ktime_get_ns() of the hit after its first sleep there */
	__u64 gaps;     /* such gaps counted */
	__u64 gap_ns;   /* their length */
	__u64 sleep_ns; /* the length of those in which the thread slept (a voluntary switch: it
			 * waited for a time, a wake-up or the GPU, not for a CPU) */
	__u64 head;     /* counted hits before the first such sleep of their window */
	__u64 stray_calls; /* the strays of gp_sampled_hit: calls of the counted kinds made outside
			    * the window (that many happened at least; `stray` adds the naming
			    * calls' hits, which it prices) */
	__u64 first_ns;  /* bpf_ktime_get_ns() of its first counted hit since the budget cleared
			  * it (as it arms the process alone): where a late-armed job's seen part
			  * begins (src/core/budget.c, fresh_seen) */
};

/* A gap between two counted hits longer than this, unless one thread took both in one
 * window without a context switch between them, is the process off a CPU or asleep: it adds
 * only this much to active_ns (src/lib/sampling.c, the window's CPU time). */
#define GP_ACTIVE_GAP_NS 100000ULL

/*
 * Which window a piece of work that a synchronization completes was submitted in, and
 * which window a synchronization was seen in (struct gp_copy_event's and gp_aux_event's
 * `epoch`): under a budget the synchronization probes are sampled, so work is timed only
 * by a synchronization of its own window (src/lib/cuctx.c).
 */
#define GP_EPOCH_EXACT 0  /* no budget: every synchronization is seen */
#define GP_EPOCH_UNSEEN 1 /* the window was closed: the synchronization may go unseen */
#define GP_EPOCH_FIRST 2  /* the first window's number; numbers never wrap to 0 or 1 */

/* GP_EV_FORK, GP_EV_EXEC and GP_EV_GONE */
struct gp_proc_event {
	__u32 type;
	__u32 pid;
	__u32 ppid; /* FORK: the parent */
	__u32 root;
	__u32 img;  /* the image's generation (task->self_exec_id: one more at each exec) */
	__u32 _pad;
	__u64 ts_ns;
	char comm[GP_COMM_LEN]; /* EXEC: the new image's name */
};

/*
 * Which driver entry point made a call. Shared by every mode; ids come from the one list
 * of entry points (bpf/gp_apis.def), which also names them and says which modes probe
 * them; the loader passes the id to BPF as the attach cookie.
 */
enum gp_api {
	GP_API_NONE = 0,
#define GP_API(name) GP_API_##name,
#include "gp_apis.def"
	GP_API__COUNT,
};

/* An entry point's attach cookie where the program reads its arguments by layout (the
 * memory and copy programs): the id in the low 32 bits, the layout from bpf/gp_apis.def
 * above, so that the program reads both with one helper call and no look-up. */
#define GP_API_COOKIE(api, layout) ((__u64)(layout) << 32 | (__u32)(api))
#define GP_COOKIE_API(cookie) ((__u32)(cookie))
#define GP_COOKIE_LAYOUT(cookie) ((__u32)((cookie) >> 32))
/* In the layout half: a _ptsz entry point, whose stream 0 is the calling thread's default
 * stream (the launch and graph programs; the loader reads it from the name, gp_api_ptsz),
 * above the program's own layout (GP_COOKIE_SHAPE: bits 0-15). */
#define GP_COOKIE_PTSZ (1u << 16)
#define GP_COOKIE_SHAPE(cookie) (GP_COOKIE_LAYOUT(cookie) & 0xffff)

/* The cgroups a process ended in (bpf/common.bpf.h's gp_exits, by tgid): its cgroup v2
 * id, and its memory controller's cgroup's id (v1's on a hybrid host; 0: no controller). */
struct gp_exit_cgroups {
	__u64 v2;
	__u64 memory;
};

struct gp_exit_event {
	__u32 type; /* GP_EV_EXIT */
	__u32 pid;
	__u64 ts_ns;
	__u32 img;  /* the image that exited (gp_image()) */
	__u32 _pad;
	char comm[GP_COMM_LEN];
};

#define GP_HIST_SLOTS 32

#define GP_NAME_LEN 1024 /* PyTorch's mangled template kernel names exceed 255 */

/* Contexts, synchronizations, event records and host registrations, by api:
 * syncs: handle = stream, event or context, ts = return; cuEventRecord: handle = event,
 * aux = stream; cuCtxSetCurrent/PushCurrent: handle = context; PopCurrent: handle =
 * popped context; PrimaryCtxRetain/CtxCreate: handle = context, aux = device ordinal;
 * cuMemHostRegister_v2: handle = address, aux = bytes; cuMemHostUnregister: handle;
 * cuStreamQuery/cuEventQuery (CUDA_SUCCESS only): handle = stream or event;
 * cuStreamWaitEvent: handle = stream, aux = event; cuEventElapsedTime: handle = start,
 * aux = end, ms_bits = the float *pMilliseconds at return. */
struct gp_aux_event {
	__u32 type; /* GP_EV_AUX */
	__u32 api;
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;
	__u64 handle;
	__u64 aux;
	__u32 epoch; /* synchronizations: GP_EPOCH_*, or the window's number at entry */
	__u32 ms_bits; /* cuEventElapsedTime's float result, its bits; else 0 */
};

/* How a call that makes a struct gp_aux_event passes its handle and aux (--bandwidth-util's
 * and --nccl's programs, from the attach cookie; GP_AUX_LAYOUT in bpf/gp_apis.def). ARGn is
 * the n-th argument, OUT a CUcontext written through the first. */
enum gp_aux_layout {
	GP_AUX_ARG1 = 0,   /* handle = arg 1 (a stream, event or context): an entry point not listed */
	GP_AUX_ARG1_ARG2,  /* handle = arg 1, aux = arg 2 (an event record, a wait, a registration) */
	GP_AUX_ELAPSED,    /* (float *ms, start, end): handle = start, aux = end, ms_bits = *ms */
	GP_AUX_POP,        /* (CUcontext *): handle = the popped context, 0 without the pointer */
	GP_AUX_OUT_ARG2,   /* handle = *arg 1, aux = arg 2 (cuDevicePrimaryCtxRetain: the device) */
	GP_AUX_OUT_ARG3,   /* handle = *arg 1, aux = arg 3 (cuCtxCreate_v2) */
	GP_AUX_OUT_ARG4,   /* handle = *arg 1, aux = arg 4 (cuCtxCreate_v4) */
	GP_AUX_OUT_ARG5,   /* handle = *arg 1, aux = arg 5 (cuCtxCreate_v3) */
	GP_AUX_NONE,       /* handle = 0 (cuCtxSynchronize takes no argument) */
	GP_AUX_DEVICE,     /* (CUdevice *): handle = 0, aux = the device, sent when it changes */
	GP_AUX_DEVICE_CTX, /* (CUdevice *, CUcontext): handle = the context, aux = the device;
			    * without a context, as GP_AUX_DEVICE */
};

enum gp_cdrop {
	GP_CDROP_RINGBUF = 0,
	GP_CDROP_PENDING = 1,
	GP_CDROP_NORETURN = 2,
	GP_CDROP_SHARE = 3,    /* the caller's process or user held its share of the table */
	GP_CDROP__COUNT,
};

/* GP_EV_DLOPEN: the dynamic linker of a followed process called _dl_debug_state (r_brk)
 * with its link map consistent: a library may have been loaded or unloaded. */
struct gp_dlopen_event {
	__u32 type; /* GP_EV_DLOPEN */
	__u32 pid;
	__u64 ts_ns;
	__u32 img;
	__s32 state; /* r_debug.r_state (0 RT_CONSISTENT), -1: not read */
	__u32 held;  /* 1: a libcuda is the newest object and the process was stopped
		      * (SIGSTOP) until user space probes it and sends SIGCONT */
	__u32 _pad;
};

/* GP_EV_PIN: what naming a process's frames needs is to be kept now, while it surely lives
 * (src/core/ustack.c, pin): its first allocation call was just made. Its own small ring
 * (cuda_mem.bpf.c's `pins`), read first: a reader behind on the run's ring (a flood of
 * other processes' records) would otherwise reach the process's first stack after it was
 * gone, and name none of its frames. */
struct gp_pin_event {
	__u32 type; /* GP_EV_PIN */
	__u32 pid;
};

#endif /* GPUPROBE_H */
