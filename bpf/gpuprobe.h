/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The boundary between the BPF programs and the loader. Shared by both sides, so only
 * fixed-width fields: no pointers, no `long`. Every record starts with its type.
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
};

/* A gap between two counted hits longer than this, unless one thread took both in one
 * window without a context switch between them, is the process off a CPU or asleep: it adds
 * only this much to active_ns (src/core/sampling.c, the window's CPU time). */
#define GP_ACTIVE_GAP_NS 100000ULL

/*
 * Which window a piece of work that a synchronization completes was submitted in, and
 * which window a synchronization was seen in (struct gp_copy_event's and gp_aux_event's
 * `epoch`): under a budget the synchronization probes are sampled, so work is timed only
 * by a synchronization of its own window (src/core/cuctx.c).
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

/* How a memory entry point passes its arguments (GP_MEM's layout in bpf/gp_apis.def):
 * which of them bpf/cuda_mem.bpf.c's mem_enter reads. */
enum gp_mem_layout {
	GP_LAYOUT_ALLOC = 0, /* (T **out, size_t size, ...) */
	GP_LAYOUT_PITCH,     /* (CUdeviceptr *out, size_t *pitch, size_t w, size_t h, ...) */
	GP_LAYOUT_FREE,      /* (addr_or_handle, ...) */
	GP_LAYOUT_MAP,       /* (CUdeviceptr ptr, size_t size, size_t off, handle, flags) */
	GP_LAYOUT_UNMAP,     /* (CUdeviceptr ptr, size_t size) */
	GP_LAYOUT_GALLOC,    /* cuGraphAddMemAllocNode (CUgraphNode *, CUgraph, const
			      * CUgraphNode *, size_t, CUDA_MEM_ALLOC_NODE_PARAMS *): params->dptr
			      * out, params->bytesize in */
	GP_LAYOUT_GFREE,     /* cuGraphAddMemFreeNode (CUgraphNode *, CUgraph, const
			      * CUgraphNode *, size_t, CUdeviceptr) */
};

/* A memory probe's attach cookie: the entry point's id in the low 32 bits, its argument
 * layout above, so that mem_enter reads both with one helper call and no look-up. */
#define GP_MEM_COOKIE(api, layout) ((__u64)(layout) << 32 | (__u32)(api))
#define GP_COOKIE_API(cookie) ((__u32)(cookie))
#define GP_COOKIE_LAYOUT(cookie) ((__u32)((cookie) >> 32))

/* How --memleak takes the stack of an allocation (cuda_mem.bpf.c's stack_mode). */
enum gp_stack_mode {
	GP_STACKS_NONE = 0,
	GP_STACKS_FP = 1,   /* bpf_get_stack: the kernel's frame-pointer walk */
	GP_STACKS_COPY = 2, /* registers + stack copy (+ Python frames): a GP_EV_STACK record */
};

/* What an allocation holds; decides which free family releases it. */
enum gp_mem_kind {
	GP_KIND_DEVICE = 0,
	GP_KIND_MANAGED = 1,
	GP_KIND_HOST = 2,     /* pinned host memory */
	GP_KIND_PHYSICAL = 3, /* cuMemCreate handle (virtual memory management API) */
	GP_KIND_GRAPH = 4,    /* a CUDA graph's memory allocation node (cuGraphAddMemAllocNode) */
	GP_KIND__COUNT,
};

/* Counters in BPF .bss, indexed by this enum; the loader shows every one. */
enum gp_drop {
	GP_DROP_RINGBUF = 0,  /* bpf_ringbuf_reserve failed: event lost */
	GP_DROP_PENDING = 1,  /* the entry->return map was full: call not seen */
	GP_DROP_STACK = 2,    /* user stack could not be read (still counted) */
	GP_DROP_NORETURN = 3, /* a return probe fired without its entry record */
	GP_DROP_PROCS = 4,    /* the process table was full: its exit goes unseen */
	GP_DROP_SHARE = 5,    /* the caller's process or user held its share of the
			       * entry->return map: call not seen (shares.bpf.h) */
	GP_DROP_PYCODE = 6,   /* a code object's copy lost (ring full): sent again at its
			       * next sight; until then named only while the process lives */
	GP_DROP__COUNT,
};

struct gp_alloc_event {
	__u32 type; /* GP_EV_ALLOC */
	__u32 api;
	__u32 pid; /* tgid */
	__u32 tid;
	__u64 ts_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 addr;  /* device pointer, host pointer or physical handle */
	__u64 size;
	__s32 stack_err; /* <0: the stack could not be taken (bpf_get_stack's errno, or -ENOSPC:
			  * no room for the stack record) */
	__u32 nr_stack;  /* valid entries in stack[] (--stacks fp) */
	__u32 stack_rec; /* 1: a GP_EV_STACK record of this call (same tid and ts_ns) precedes */
	__u32 _pad;
	char comm[GP_COMM_LEN];
	__u64 stack[GP_MAX_STACK];
};

/* GP_EV_STACK: sent at the allocation's entry (the registers and stack of the caller are
 * those of the call), before the call's allocation record, on the same ring buffer; user
 * space joins the two by (tid, ts_ns). A call that fails sends no allocation record. */
struct gp_stack_event {
	__u32 type; /* GP_EV_STACK */
	__u32 pid;
	__u32 tid;
	__u32 _pad;
	__u64 ts_ns; /* the call's entry: its gp_alloc_event carries the same */
	struct gp_py_stack py;     /* status GP_PY_NOT_PYTHON when the process is not CPython */
	struct gp_stack_copy copy; /* user registers and the top of the user stack */
};

/* GP_EV_PYCODE and GP_EV_PYLINES: sent with the first stack record whose Python frames
 * reach a code object (bpf/pystack.bpf.h) */
struct gp_pycode_event {
	__u32 type; /* GP_EV_PYCODE */
	__u32 pid;
	__u32 img;
	__u32 _pad;
	struct gp_py_code c;
};

struct gp_pylines_event {
	__u32 type; /* GP_EV_PYLINES */
	__u32 pid;
	__u32 img;
	__u32 _pad;
	struct gp_py_lines l;
};

/* GP_EV_FREE, GP_EV_MAP and GP_EV_UNMAP */
struct gp_free_event {
	__u32 type;
	__u32 api;
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;
	__u64 addr;   /* freed address/handle; mapped address for MAP/UNMAP */
	__u64 size;   /* MAP/UNMAP: length */
	__u64 handle; /* MAP: the physical handle */
	char comm[GP_COMM_LEN];
};

struct gp_exit_event {
	__u32 type; /* GP_EV_EXIT */
	__u32 pid;
	__u64 ts_ns;
	__u32 img;  /* the image that exited (gp_image()) */
	__u32 _pad;
	char comm[GP_COMM_LEN];
};

/* --cudatrace: how a handle was launched (part of the in-kernel aggregation key) */
enum gp_launch_kind {
	GP_LAUNCH_KERNEL = 0,      /* cuLaunchKernel */
	GP_LAUNCH_EX = 1,          /* cuLaunchKernelEx */
	GP_LAUNCH_COOPERATIVE = 2, /* cuLaunchCooperativeKernel */
	GP_LAUNCH_GRAPH = 3,       /* cuGraphLaunch: handle is the CUgraphExec, gen its version */
};

/* --cudatrace's stream-capture and graph records (GP_EV_GRAPH), in program order on the
 * launch ring buffer; user space rebuilds each graph's kernel nodes from them. */
enum gp_graph_op {
	GP_GOP_CAPTURED = 0,      /* a launch on a capturing stream: a = capture; the kernel */
	GP_GOP_CAPTURE_END = 1,   /* a = capture, b = the CUgraph it made */
	GP_GOP_CAPTURE_FAILED = 2, /* a = capture: invalidated, its launches never run */
	GP_GOP_CAPTURE_TO = 3,    /* a = capture, b = the graph it adds to (BeginCaptureToGraph) */
	GP_GOP_INSTANTIATE = 4,   /* a = CUgraphExec, b = CUgraph, version */
	GP_GOP_ADD_NODE = 5,      /* a = CUgraph, b = CUgraphNode; the kernel */
	GP_GOP_NODE_SET = 6,      /* b = CUgraphNode; the kernel */
	GP_GOP_EXEC_NODE_SET = 7, /* a = CUgraphExec, b = CUgraphNode; the kernel; version */
	GP_GOP_EXEC_UPDATE = 8,   /* a = CUgraphExec, b = CUgraph; version */
	GP_GOP_EXEC_DESTROY = 9,  /* a = CUgraphExec */
	GP_GOP_GRAPH_DESTROY = 10, /* a = CUgraph */
	GP_GOP_CLONE = 11,        /* a = the new CUgraph, b = the original */
	GP_GOP_NODE_DESTROY = 12, /* b = CUgraphNode */
	GP_GOP_CHILD_GRAPH = 13,  /* a = CUgraph: a child-graph node (its kernels not followed) */
	GP_GOP_GRAPH_CREATE = 14, /* a = a new, empty CUgraph */
};

struct gp_graph_event {
	__u32 type; /* GP_EV_GRAPH */
	__u32 pid;
	__u32 img;
	__u32 op;   /* enum gp_graph_op */
	__u64 a, b;
	__u64 handle;   /* the kernel: CUfunction or CUkernel */
	__u32 gen;      /* its naming (gp_name_event.gen), 0: none */
	__u32 version;  /* the CUgraphExec's version counted from now on (gp_launch_key.gen) */
	__u32 grid[3];
	__u32 block[3];
};

/* Launch counts live in a BPF hash under this key; nothing crosses the ring buffer
 * per launch. */
struct gp_launch_key {
	__u32 pid;
	__u32 kind;
	__u64 handle;
	__u32 grid[3];
	__u32 block[3];
	__u32 gen; /* the naming that was valid at launch (gp_name_event.gen); 0: none */
	__u32 img; /* the process image (gp_image(): each exec starts a new one) */
};

#define GP_HIST_SLOTS 32

/* A log2 histogram of durations in microseconds, with totals. */
struct gp_hist {
	__u64 count;    /* calls (counted at entry) */
	__u64 timed;    /* calls whose return was seen */
	__u64 total_ns;
	__u64 max_ns;
	__u64 slots[GP_HIST_SLOTS];
};

enum gp_hist_kind {
	GP_HIST_LAUNCH = 0, /* launch API latency, entry to return */
	GP_HIST_SYNC = 1,   /* time blocked in stream/context/event synchronize */
	GP_HIST__COUNT,
};

struct gp_hist_key {
	__u32 pid;
	__u32 kind; /* enum gp_hist_kind */
	__u32 img;  /* the process image (gp_image()) */
};

enum gp_name_kind {
	GP_NAME_FUNCTION = 0, /* CUfunction from cuModuleGetFunction */
	GP_NAME_KERNEL = 1,   /* CUkernel from cuLibraryGetKernel */
};

#define GP_NAME_LEN 1024 /* PyTorch's mangled template kernel names exceed 255 */

/* Each naming gets a generation, unique in the run: launches carry the generation valid
 * when they happened, so a handle value reused for another kernel, or launched after
 * its module was unloaded, is never misnamed. */
struct gp_name_event {
	__u32 type; /* GP_EV_NAME */
	__u32 pid;
	__u32 kind; /* enum gp_name_kind */
	__u32 gen;
	__u64 handle;
	__u64 owner; /* the CUmodule or CUlibrary */
	__u32 img;   /* the process image (gp_image()) */
	__u32 copy_follows; /* 1: a GP_EV_NAMECOPY record of this handle follows */
	char comm[GP_COMM_LEN];
	char name[GP_NAME_LEN];
};

/*
 * A kernel handle's object and the strings it points to, copied from the traced process
 * in BPF while it surely lives (src/modes/cudatrace/midname.h reads them as it would the
 * process's memory): its first GP_KOBJ_SLOTS qwords, and for each slot holding a user
 * pointer that the layouts learned so far name for the object's kind (kname_hints), or
 * for every such slot when none is, the NUL-terminated string there. Strings follow one
 * another in names[], each at most GP_KOBJ_STR bytes; one cut at that length is not taken.
 */
#define GP_KOBJ_SLOTS 8      /* midname.h MN_SLOTS */
#define GP_KOBJ_STR 2048     /* bytes of one string, its NUL included (a power of two) */
#define GP_KOBJ_AREA (2 * GP_KOBJ_STR)

struct gp_kobj_copy {
	__u32 uid;     /* the caller's real uid at the call */
	__u32 pidns;   /* the inode number of its pid namespace */
	__u32 obj_ok;  /* 1: obj[] was read */
	__u32 hinted;  /* 1: only the slots the learned layouts name were copied */
	__u32 file_dev; /* the file mapped at the launch probe's address (the libcuda called, */
	__u64 file_ino; /* of the two a process may map): its device (the kernel's dev_t:
			 * major << 20 | minor) and inode; 0: not known */
	__u16 str_off[GP_KOBJ_SLOTS]; /* slot s's string at names[str_off[s]] */
	__u16 str_len[GP_KOBJ_SLOTS]; /* its bytes with the NUL (0: not copied) */
	__u64 obj[GP_KOBJ_SLOTS];
	char names[GP_KOBJ_AREA];
};

struct gp_stub_event {
	__u32 type; /* GP_EV_STUB */
	__u32 pid;
	__u64 handle;
	__u32 nr_stack;
	__u32 img; /* the process image the handle belongs to */
	__u64 stack[GP_MAX_STACK];
	struct gp_kobj_copy copy; /* the handle's object at this first sight */
};

/* GP_EV_NAMECOPY: after the GP_EV_NAME record of a handle whose kind no learned layout
 * covers yet (its gp_name_event.copy_follows set): what learning the layout needs, read
 * while the process surely lives. */
struct gp_namecopy_event {
	__u32 type; /* GP_EV_NAMECOPY */
	__u32 pid;
	__u32 img;
	__u32 gen;  /* the naming's generation (its GP_EV_NAME record's) */
	__u64 handle;
	struct gp_kobj_copy copy;
};

/* BPF .bss counters of cuda_launch.bpf.c */
enum gp_ldrop {
	GP_LDROP_RINGBUF = 0, /* name/alias/stub/exit records lost */
	GP_LDROP_KEYS = 1,    /* launch table full: launches not counted */
	GP_LDROP_PENDING = 2, /* entry->return table full */
	GP_LDROP_NORETURN = 3,
	GP_LDROP_PROCS = 4,
	GP_LDROP_GRAPH = 5,   /* capture/graph tables full: a capture or graph not followed */
	GP_LDROP_SHARE = 6,   /* the caller's process or user held its share of the entry->return table */
	GP_LDROP__COUNT,
};

/* --bandwidth-util. Memory types as cuda.h's CUmemorytype; GP_MEMTYPE_UNIFIED means "tell
 * from the pointer", which user space does with the allocations it tracks. */
enum gp_memtype {
	GP_MEMTYPE_HOST = 1,
	GP_MEMTYPE_DEVICE = 2,
	GP_MEMTYPE_ARRAY = 3,
	GP_MEMTYPE_UNIFIED = 4,
};

struct gp_copy_event {
	__u32 type; /* GP_EV_COPY */
	__u32 api;
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;  /* entry */
	__u64 dur_ns; /* entry to return: the copy itself for synchronous copies */
	__u64 dst, src;
	__u64 bytes;
	__u64 stream;
	__u64 dst_ctx, src_ctx; /* cuMemcpyPeer* */
	__u32 dst_type, src_type; /* enum gp_memtype */
	__u32 async;
	__u32 peer;
	__u32 epoch; /* GP_EPOCH_*, or the window's number at entry */
	__u32 _pad;
	char comm[GP_COMM_LEN];
};

/* Contexts, synchronizations, event records and host registrations, by api:
 * syncs: handle = stream, event or context, ts = return; cuEventRecord: handle = event,
 * aux = stream; cuCtxSetCurrent/PushCurrent: handle = context; PopCurrent: handle =
 * popped context; PrimaryCtxRetain/CtxCreate: handle = context, aux = device ordinal;
 * cuMemHostRegister_v2: handle = address, aux = bytes; cuMemHostUnregister: handle. */
struct gp_aux_event {
	__u32 type; /* GP_EV_AUX */
	__u32 api;
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;
	__u64 handle;
	__u64 aux;
	__u32 epoch; /* synchronizations: GP_EPOCH_*, or the window's number at entry */
	__u32 _pad;
};

enum gp_cdrop {
	GP_CDROP_RINGBUF = 0,
	GP_CDROP_PENDING = 1,
	GP_CDROP_NORETURN = 2,
	GP_CDROP_SHARE = 3,    /* the caller's process or user held its share of the table */
	GP_CDROP__COUNT,
};

/* --ioctl: one ioctl on an nvidia device node, sent only when --trace wants a timeline
 * (the aggregates live in BPF maps). */
struct gp_ioctl_event {
	__u32 type; /* GP_EV_IOCTL */
	__u32 pid;
	__u32 tid;
	__u32 cmd;      /* the ioctl request number */
	__u64 ts_ns;    /* entry */
	__u64 dur_ns;
	__s64 ret;
	__u32 major, minor;
	__u32 ctrl_cmd; /* NV_ESC_RM_CONTROL: the control command in its parameters, else 0 */
	__u32 _pad;
};

/* --trace: one call of any exported cu* function. */
#define GP_TRACE_STR 32 /* cuLaunchKernelEx's config (names come in a GP_EV_CALL_STR record) */
struct gp_call_event {
	__u32 type; /* GP_EV_CALL */
	__u32 fn;   /* index into the loader's list of traced functions (the cookie) */
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;  /* entry */
	__u64 dur_ns;
	__s64 ret;    /* CUresult */
	__u64 args[6];
	__u64 stack_args[2]; /* [rsp+8], [rsp+16] at entry: cuLaunchKernel's blockDimZ, shmem */
	__u64 out0;          /* at return: the 8 bytes at args[0] (out-parameters) */
	char str[GP_TRACE_STR]; /* cuLaunchKernelEx: its CUlaunchConfig's grid and block */
};

/* The name argument of cuModuleGetFunction/cuLibraryGetKernel (--trace), whole (PyTorch's
 * mangled template names run past 255 bytes): sent just before the call's own record by
 * the same thread, so the reader joins them by thread. */
struct gp_call_str_event {
	__u32 type; /* GP_EV_CALL_STR */
	__u32 pid;
	__u32 tid;
	__u32 _pad;
	char str[GP_NAME_LEN];
};

/* --nccl: which NCCL entry point made a call (the attach cookie); the loader maps an id to
 * its exported name (src/modes/nccl/nccl.c). */
enum gp_nccl_fn {
	GP_NCCL_NONE = 0,
	GP_NCCL_CommInitRank,
	GP_NCCL_CommInitRankConfig,
	GP_NCCL_CommInitRankScalable,
	GP_NCCL_CommInitAll,
	GP_NCCL_CommSplit,
	GP_NCCL_CommShrink,
	GP_NCCL_CommFinalize,
	GP_NCCL_CommDestroy,
	GP_NCCL_CommAbort,
	GP_NCCL_CommCount,
	GP_NCCL_CommCuDevice,
	GP_NCCL_CommUserRank,
	GP_NCCL_AllReduce,
	GP_NCCL_Broadcast,
	GP_NCCL_Bcast,
	GP_NCCL_Reduce,
	GP_NCCL_AllGather,
	GP_NCCL_ReduceScatter,
	GP_NCCL_AlltoAll,
	GP_NCCL_Gather,
	GP_NCCL_Scatter,
	GP_NCCL_Send,
	GP_NCCL_Recv,
	GP_NCCL_GroupStart,
	GP_NCCL_GroupEnd,
	GP_NCCL__COUNT,
};

#define GP_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */

/*
 * One NCCL call, entry to return, decoded by entry point in BPF (x86-64 ABI: the 128-byte
 * ncclUniqueId of ncclCommInitRank* is passed by value on the stack, so `rank` is the third
 * integer argument; the seventh and eighth arguments are on the stack).
 */
struct gp_nccl_event {
	__u32 type; /* GP_EV_NCCL */
	__u32 fn;   /* enum gp_nccl_fn */
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;  /* entry */
	__u64 dur_ns; /* entry to return: the API time */
	__u64 ret;    /* ncclResult_t */
	__u64 comm;   /* the communicator argument (the parent for a split or shrink) */
	__u64 newcomm; /* init, split, shrink: the communicator made (*newcomm at return) */
	__u64 count;  /* elements; shrink: excluded ranks */
	__u64 stream;
	__s32 dtype;  /* ncclDataType_t, -1 where the call has none */
	__s32 redop;  /* ncclRedOp_t, -1 where none */
	__s32 peer;   /* send/recv: the peer; rooted collectives: the root; -1 */
	__s32 nranks; /* init: nranks (ncclCommInitAll: ndev) */
	__s32 rank;   /* init: rank */
	__s32 color, key; /* split */
	__s32 out;    /* ncclCommCount/CuDevice/UserRank: *out at return */
	__u32 depth;  /* NCCL calls of this thread in flight around it: 0 for a call of the
		       * program, >0 for one NCCL made itself (counted once, as the outer) */
	__u32 img;    /* the process image (gp_image()) */
	__u32 id_len; /* bytes of id[] read (0: none or unreadable) */
	__u32 _pad;
	char comm_name[GP_COMM_LEN];
	/* init: the ncclUniqueId; shrink: the excluded ranks (int32 each) */
	__u8 id[GP_NCCL_ID_BYTES];
};

/* BPF .bss counters of nccl.bpf.c */
enum gp_ndrop {
	GP_NDROP_RINGBUF = 0,  /* call records lost */
	GP_NDROP_PENDING = 1,  /* entry->return table full: a call not seen */
	GP_NDROP_NORETURN = 2, /* a return without its entry (in flight at attach) */
	GP_NDROP_TOO_DEEP = 3, /* NCCL calls nested deeper than the per-thread stack */
	GP_NDROP_PROCS = 4,    /* the NCCL process table was full: its syncs go unseen */
	GP_NDROP_SHARE = 5,    /* the caller's process or user held its share of a table */
	GP_NDROP__COUNT,
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

#endif /* GPUPROBE_H */
