/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The records and keys of bpf/cuda_launch.bpf.c (--cudatrace): launch counts, latency
 * histograms, kernel names, stubs, stream capture and graphs.
 */
#ifndef GP_CUDA_LAUNCH_H
#define GP_CUDA_LAUNCH_H

#include "gpuprobe.h"

/* What bpf/cuda_launch.bpf.c does with a launch-side entry point (GP_LAUNCH's prog in
 * bpf/gp_apis.def): the attach cookie carries it above the id (GP_API_COOKIE). */
enum gp_launch_prog {
	GP_LP_KERNEL,  /* cuLaunchKernel shape */
	GP_LP_COOP,    /* cuLaunchCooperativeKernel shape */
	GP_LP_EX,      /* cuLaunchKernelEx: config struct first */
	GP_LP_GRAPH,   /* cuGraphLaunch */
	GP_LP_SYNC,    /* stream/context/event synchronize */
	GP_LP_NAME,    /* handle creation with a name: always needs its return */
	GP_LP_ALIAS,   /* cuKernelGetFunction: always needs its return */
	GP_LP_UNLOAD,  /* cuModuleUnload/cuLibraryUnload: their handles go stale */
	GP_LP_INIT,    /* cuInit: a process new to the --max-overhead budget (budget.bpf.h) */
	GP_LP_CTX,     /* a context's creation: as GP_LP_INIT, and the process is ready to
			* launch once it returns */
};

/* How a --cudatrace stream-capture or graph entry point passes its arguments and what its
 * record says (GP_GRAPH's call in bpf/gp_apis.def; graph_enter/graph_leave read it from
 * the attach cookie). The _V2 calls take the _v2 kernel node parameters (with the CUkernel). */
enum gp_graph_call {
	GP_GC_INSTANTIATE,      /* (CUgraphExec *out, CUgraph, ...) */
	GP_GC_CLONE,            /* (CUgraph *out, CUgraph) */
	GP_GC_CREATE,           /* (CUgraph *out, flags) */
	GP_GC_BEGIN,            /* (stream, ...): a capture begins */
	GP_GC_BEGIN_TO_GRAPH,   /* (stream, CUgraph, ...): into an existing graph */
	GP_GC_END,              /* (stream, CUgraph *out) */
	GP_GC_ADD_NODE,         /* (CUgraphNode *out, CUgraph, deps, n, params *) */
	GP_GC_ADD_NODE_V2,
	GP_GC_NODE_SET,         /* (CUgraphNode, params *) */
	GP_GC_NODE_SET_V2,
	GP_GC_EXEC_NODE_SET,    /* (CUgraphExec, CUgraphNode, params *) */
	GP_GC_EXEC_NODE_SET_V2,
	GP_GC_EXEC_UPDATE,      /* (CUgraphExec, CUgraph, ...) */
	GP_GC_EXEC_DESTROY,     /* (CUgraphExec) */
	GP_GC_DESTROY,          /* (CUgraph) */
	GP_GC_DESTROY_NODE,     /* (CUgraphNode) */
	GP_GC_ADD_CHILD,        /* (CUgraphNode *out, CUgraph, deps, n, CUgraph child) */
	GP_GC_RECORD,           /* (event, stream, ...): a capture's fork point */
	GP_GC_WAIT,             /* (stream, event, ...): a stream joins the capture */
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

#endif /* GP_CUDA_LAUNCH_H */
