/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pystack: the CPython frames of the calling thread at a probe hit, read in
 * BPF (bounded loops) from the interpreter's own state:
 *   _PyRuntime.interpreters.head -> threads.head -> ... the PyThreadState
 *   whose thread_id (the pthread_t, i.e. the thread's fsbase on x86-64) is
 *   this thread's;
 *   then its frame chain: 3.13 current_frame, 3.11/3.12 cframe->current_frame
 *   (_PyInterpreterFrame, ->previous), 3.10 frame (PyFrameObject, ->f_back).
 * Per frame only the code object's address, the instruction pointer (3.10:
 * f_lasti) and co_firstlineno are recorded: user space (src/core/pystack.c)
 * reads names, files and line tables from the process and caches them.
 *
 * Walking the thread list rather than reading the thread-local
 * _Py_tss_tstate needs no TLS offsets (static TLS in the executable, or a
 * dynamic TLS block in libpython: different per build), and works the same
 * for every version; the lists are short.
 *
 * Offsets come per process from user space in the gp_py_procs map (from
 * _Py_DebugOffsets on 3.13+, from the generated per-version table before).
 * The records (struct gp_py_proc, gp_py_stack) are in stacks.h.
 */
#ifndef GPUPROBE_PYSTACK_BPF_H
#define GPUPROBE_PYSTACK_BPF_H

#include "stacks.h"

#ifdef __bpf__

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);			/* tgid */
	__type(value, struct gp_py_proc);
} gp_py_procs SEC(".maps");

static __always_inline __u64 gp_py_read_ptr(__u64 addr, __u32 off, int *bad)
{
	__u64 v = 0;

	if (off == GP_PY_NONE || !addr ||
	    bpf_probe_read_user(&v, sizeof(v), (const void *)(addr + off)))
		*bad = 1;
	return v;
}

struct gp_py_tctx {
	const struct gp_py_proc *pp;
	__u64 ts, want, found;
	__u32 off;
	int bad;
};

static long gp_py_thread_cb(__u32 i, void *arg)
{
	struct gp_py_tctx *c = arg;
	__u64 have;

	(void)i;
	if (!c->ts || c->bad)
		return 1;
	have = gp_py_read_ptr(c->ts, c->off, &c->bad);
	if (!c->bad && have == c->want) {
		c->found = c->ts;
		return 1;
	}
	c->ts = gp_py_read_ptr(c->ts, c->pp->tstate_next, &c->bad);
	return 0;
}

/* The calling thread's PyThreadState, or 0. */
static __always_inline __u64 gp_py_find_tstate(const struct gp_py_proc *pp,
					       int *bad)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct gp_py_tctx c = { .pp = pp };
	__u64 interp;

	interp = gp_py_read_ptr(pp->runtime_addr, pp->runtime_interpreters_head, bad);
	c.ts = gp_py_read_ptr(interp, pp->interp_threads_head, bad);
	/*
	 * thread_id is the pthread_t, which on x86-64 (glibc and musl) is the
	 * thread pointer, i.e. fsbase: the same for every version, and unlike
	 * native_thread_id (a tid of the process's own PID namespace) it needs
	 * no namespace translation in a container.
	 */
	c.off = pp->tstate_thread_id;
#if defined(__TARGET_ARCH_x86)
	c.want = BPF_CORE_READ(task, thread.fsbase);
#else
	/* arm64's thread pointer (thread.uw.tp_value) is not glibc's pthread_t: no
	 * thread state is matched, no CPython frame read, until this learns arm64 */
	(void)task;
	c.want = 0;
#endif
	if (*bad)
		return 0;
	bpf_loop(GP_PY_MAX_THREADS, gp_py_thread_cb, &c, 0);
	*bad = c.bad;
	return c.found;
}

struct gp_py_fctx {
	const struct gp_py_proc *pp;
	struct gp_py_stack *out;
	__u64 frame;
	__u32 n;
	int bad;
	__u8 buf[GP_PY_FRAME_READ];
};

/* A field of the frame just read; the mask keeps the verifier's bound. */
static __always_inline __u64 gp_py_field(const struct gp_py_fctx *c, __u32 off,
					 __u32 size)
{
	__u64 v = 0;

	off &= GP_PY_FRAME_READ - 1;
	if (off > GP_PY_FRAME_READ - 8)
		return 0;
	if (size == 1)
		v = c->buf[off];
	else if (size == 4)
		v = *(const __u32 *)&c->buf[off];
	else
		v = *(const __u64 *)&c->buf[off];
	return v;
}

/*
 * One frame per call (bpf_loop: the verifier checks the body once, however
 * many frames). Returns 1 to stop.
 */
static long gp_py_frame_cb(__u32 i, void *arg)
{
	struct gp_py_fctx *c = arg;
	const struct gp_py_proc *pp = c->pp;
	struct gp_py_frame *f;
	__u64 frame = c->frame;
	__u8 owner = 0;
	__s32 lasti = 0;
	__u32 n = pp->frame_read;

	(void)i;
	if (!frame || c->bad)
		return 1;
	if (n < 8) {
		c->bad = 1;
		return 1;
	}
	/* 6.1's verifier keeps no bound from a compound condition (R2 unbounded memory
	 * access): one comparison right before the read, the compiler kept from merging it */
	asm volatile("" : "+r"(n));
	/* the frame's fields in one read, not one per field */
	if (n > GP_PY_FRAME_READ || bpf_probe_read_user(c->buf, n, (const void *)frame)) {
		c->bad = 1;
		return 1;
	}
	c->frame = gp_py_field(c, pp->frame_previous, 8);
	if (pp->frame_owner != GP_PY_NONE) {
		owner = (__u8)gp_py_field(c, pp->frame_owner, 1);
		if (owner == pp->owner_cstack) {
			/* a shim frame (3.12+): no code of the user's, but the
			 * frame before it began a run of the interpreter loop */
			if (c->n > 0)
				c->out->frames[(c->n - 1) & (GP_PY_MAX_FRAMES - 1)].flags |=
					GP_PY_FRAME_ENTRY;
			return 0;
		}
	}
	if (c->n >= GP_PY_MAX_FRAMES) {
		c->out->truncated = 1;
		return 1;
	}
	f = &c->out->frames[c->n & (GP_PY_MAX_FRAMES - 1)];
	f->code = gp_py_field(c, pp->frame_code, 8);
	if (pp->instr_is_int) {
		lasti = (__s32)gp_py_field(c, pp->frame_instr, 4);
		f->instr = (__u64)(__s64)lasti;
	} else {
		f->instr = gp_py_field(c, pp->frame_instr, 8);
	}
	f->firstlineno = 0;
	bpf_probe_read_user(&f->firstlineno, 4,
			    (const void *)(f->code + pp->code_firstlineno));
	f->flags = 0;
	if (pp->instr_is_int)		/* 3.10: one C call per Python frame */
		f->flags = GP_PY_FRAME_ENTRY;
	else if (pp->frame_is_entry != GP_PY_NONE &&
		 gp_py_field(c, pp->frame_is_entry, 1))
		f->flags = GP_PY_FRAME_ENTRY;
	c->n++;
	return 0;
}

/* Fills *out with the calling thread's Python frames (tgid's entry in gp_py_procs). */
static __always_inline void gp_py_stack(struct gp_py_stack *out)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct gp_py_fctx c = { .out = out };
	const struct gp_py_proc *pp;
	__u64 ts, cf;
	int bad = 0;

	out->nr = 0;
	out->truncated = 0;
	out->pad = 0;
	pp = bpf_map_lookup_elem(&gp_py_procs, &tgid);
	if (!pp) {
		out->status = GP_PY_NOT_PYTHON;
		return;
	}
	ts = gp_py_find_tstate(pp, &bad);
	if (!ts) {
		out->status = bad ? GP_PY_READ_FAILED : GP_PY_NO_THREAD;
		return;
	}
	if (pp->tstate_cframe != GP_PY_NONE) {
		cf = gp_py_read_ptr(ts, pp->tstate_cframe, &bad);
		c.frame = gp_py_read_ptr(cf, pp->cframe_current_frame, &bad);
	} else {
		c.frame = gp_py_read_ptr(ts, pp->tstate_frame, &bad);
	}
	c.pp = pp;
	c.bad = bad;
	/* twice the frames: C-stack shim frames are walked but not kept */
	bpf_loop(GP_PY_MAX_FRAMES * 2, gp_py_frame_cb, &c, 0);
	if (c.frame && !c.bad && c.n >= GP_PY_MAX_FRAMES)
		out->truncated = 1;
	out->nr = c.n;
	out->status = c.bad ? GP_PY_READ_FAILED : GP_PY_OK;
}

#endif /* __bpf__ */

#endif /* GPUPROBE_PYSTACK_BPF_H */
