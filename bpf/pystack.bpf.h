/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pystack: the CPython frames of the calling thread at a probe hit, read in
 * BPF (bounded loops) from the interpreter's own state:
 *   _PyRuntime.interpreters.head -> threads.head -> ... the PyThreadState
 *   whose thread_id (the pthread_t: the thread's fsbase on x86-64, its thread
 *   pointer less sizeof(struct pthread) on arm64) is this thread's;
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
#include "cuda_mem.h" /* struct gp_pycode_event, gp_pylines_event */

#ifdef __bpf__

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);			/* tgid */
	__type(value, struct gp_py_proc);
} gp_py_procs SEC(".maps");

/*
 * 0, but not to the verifier (.bss): the counters of a bpf_loop callback's state start from
 * it. A verifier that checks a callback once, with the state of its first call (6.1),
 * otherwise takes the first iteration's constants for every iteration and drops the
 * branches only later ones take: on 6.1 the frame walk's bound (64) never stopped it
 * (nr 104 for 104 frames, the array written round), and a copy's chunks were never sent.
 */
__u32 gp_py_zero;

static __always_inline __u32 gp_py_opaque_zero(void)
{
	return *(volatile __u32 *)&gp_py_zero;
}

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

	c.found = gp_py_opaque_zero();
	c.bad = (int)gp_py_opaque_zero();

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
#elif defined(__TARGET_ARCH_arm64)
	/* TPIDR_EL0 points just above glibc's struct pthread (TLS variant I): pthread_t is
	 * the thread pointer less its size, which user space found (never 0 here) */
	c.want = BPF_CORE_READ(task, thread.uw.tp_value) - pp->tp_pthread_off;
#else
#error "the CPython thread match is built for x86 or arm64"
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

	c.n = gp_py_opaque_zero();

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
	c.bad = bad | (int)gp_py_opaque_zero();
	/* twice the frames: C-stack shim frames are walked but not kept */
	bpf_loop(GP_PY_MAX_FRAMES * 2, gp_py_frame_cb, &c, 0);
	if (c.frame && !c.bad && c.n >= GP_PY_MAX_FRAMES)
		out->truncated = 1;
	out->nr = c.n;
	out->status = c.bad ? GP_PY_READ_FAILED : GP_PY_OK;
}

/*
 * Code objects' first sight: what naming a frame needs (struct gp_py_code), copied into
 * the including object's ring buffer GP_PY_CODE_RB (its drops counted in GP_PY_CODE_DROP)
 * after the stack record that names them and before the record that completes it
 * (GP_PY_CODE_AFTER bytes, kept room for; user space names the frames at that one), while the process surely lives. A (process,
 * code object, co_firstlineno) is copied once: gp_py_seen remembers it (LRU: a process
 * that makes many code objects pushes out others' entries, which costs them a copy again,
 * never a name). The cost stays at the first sight: one look-up per frame otherwise.
 */
#ifdef GP_PY_CODE_RB

struct gp_py_seen_key {
	__u32 pid;
	__u32 img;
	__u64 code;
	__u64 start;	/* the process's start time: a reused PID is another process */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);	/* the loader sets 1 when Python frames are off */
	__type(key, struct gp_py_seen_key);
	__type(value, __s32);		/* co_firstlineno: another code object at the address */
} gp_py_seen SEC(".maps");

/* A compact str object's raw data: at most GP_PY_STR_CHARS characters and their width. */
static __always_inline int gp_py_copy_str(const struct gp_py_proc *pp, __u64 obj, __u8 *dst,
					  __u32 *len, __u32 *kind)
{
	__u32 state = 0, k;
	__u64 n = 0, data, bytes;

	*len = 0;
	*kind = 1;
	if (!obj || pp->unicode_length == GP_PY_NONE || pp->unicode_state == GP_PY_NONE ||
	    bpf_probe_read_user(&n, sizeof(n), (const void *)(obj + pp->unicode_length)) ||
	    bpf_probe_read_user(&state, sizeof(state), (const void *)(obj + pp->unicode_state)))
		return -1;
	k = (state >> (pp->unicode_kind_shift & 31)) & pp->unicode_kind_mask;
	if (!((state >> (pp->unicode_compact_shift & 31)) & pp->unicode_compact_mask) ||
	    (k != 1 && k != 2 && k != 4))
		return -1;	/* code objects' strings are compact */
	data = obj + (((state >> (pp->unicode_ascii_shift & 31)) & pp->unicode_ascii_mask) ?
			      pp->unicode_ascii_size : pp->unicode_compact_size);
	if (n > GP_PY_STR_CHARS)
		n = GP_PY_STR_CHARS;
	/* 64-bit, and one comparison right before the read: 6.1's verifier keeps no 64-bit
	 * bound from a 32-bit multiply's (R2 min value is negative) */
	bytes = n * k;
	asm volatile("" : "+r"(bytes));
	if (bytes > GP_PY_STR_BYTES || bpf_probe_read_user(dst, bytes, (const void *)data))
		return -1;
	*len = (__u32)n;
	*kind = k;
	return 0;
}

/* Chunk k of a line table (data at lt, lt_len bytes in all) into dst. */
static __always_inline int gp_py_copy_chunk(__u8 *dst, __u64 lt, __u32 lt_len, __u32 k)
{
	__u64 off = (__u64)k * GP_PY_LT_CHUNK, n;

	if (off >= lt_len)
		return 0;
	n = lt_len - off;
	asm volatile("" : "+r"(n));
	if (n > GP_PY_LT_CHUNK)
		n = GP_PY_LT_CHUNK;
	return bpf_probe_read_user(dst, n, (const void *)(lt + off)) ? -1 : (int)n;
}

/*
 * The copies of one stack's new code objects, one record an iteration of a single bpf_loop
 * (the verifier checks its body once, however many code objects and chunks): frame i's code
 * record (k == 0), then its line table's chunks 1 .. chunks.
 */
struct gp_py_cctx {
	const struct gp_py_proc *pp;
	const struct gp_py_stack *st;
	struct gp_py_seen_key key;
	__u64 lt;	/* the current code object's line-table data */
	__u32 lt_len;	/* its bytes copied in all */
	__u32 chunks;	/* its chunks after the first */
	__u32 img;
	__u32 i;	/* the frame whose code object is copied */
	__u32 k;	/* the next chunk of it; 0: its code record */
	__s32 first;	/* its co_firstlineno */
};

/*
 * Whether the ring has room for a code record and still for the record that completes
 * the call (GP_PY_CODE_AFTER bytes, defined by the includer): a full ring loses the copy,
 * never the allocation record that needs it more.
 */
static __always_inline bool gp_py_room(void)
{
	__u64 size = bpf_ringbuf_query(&GP_PY_CODE_RB, BPF_RB_RING_SIZE);
	__u64 used = bpf_ringbuf_query(&GP_PY_CODE_RB, BPF_RB_AVAIL_DATA);

	return used < size && size - used >= sizeof(struct gp_pycode_event) + GP_PY_CODE_AFTER + 64;
}

/* Chunk k (>= 1) of the current code object's line table, as a record of its own. */
static __always_inline int gp_py_send_lines(const struct gp_py_cctx *c, const struct gp_py_frame *f)
{
	struct gp_pylines_event *e;
	int n;

	if (!gp_py_room())
		return -1;
	e = bpf_ringbuf_reserve(&GP_PY_CODE_RB, sizeof(*e), 0);
	if (!e)
		return -1;
	e->type = GP_EV_PYLINES;
	e->pid = c->key.pid;
	e->img = c->img;
	e->_pad = 0;
	e->l.code = f->code;
	e->l.firstlineno = f->firstlineno;
	e->l.off = (c->k & (GP_PY_LT_CHUNKS - 1)) * GP_PY_LT_CHUNK;
	e->l._pad = 0;
	n = gp_py_copy_chunk(e->l.lt, c->lt, c->lt_len, c->k & (GP_PY_LT_CHUNKS - 1));
	e->l.len = n < 0 ? 0 : (__u32)n;	/* 0: user space sees the hole, lines past it unknown */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/* The current code object's record (its names and the first chunk of its line table);
 * 0 when it went. */
static __always_inline int gp_py_send_code(struct gp_py_cctx *c, const struct gp_py_frame *f)
{
	const struct gp_py_proc *pp = c->pp;
	struct gp_pycode_event *e;
	__u64 name = 0, file = 0, lt = 0, lt_len = 0;
	int bad = 0, n;

	if (!gp_py_room())
		return -1;
	e = bpf_ringbuf_reserve(&GP_PY_CODE_RB, sizeof(*e), 0);
	if (!e)
		return -1;
	e->type = GP_EV_PYCODE;
	e->pid = c->key.pid;
	e->img = c->img;
	e->_pad = 0;
	e->c.code = f->code;
	e->c.start = c->key.start;
	e->c.firstlineno = f->firstlineno;
	e->c.flags = 0;
	e->c.version_hex = pp->version_hex;
	e->c.code_adaptive = pp->code_adaptive;
	name = gp_py_read_ptr(f->code, pp->code_name, &bad);
	if (gp_py_copy_str(pp, name, e->c.name, &e->c.name_len, &e->c.name_kind))
		e->c.flags |= GP_PY_CODE_NAME_BAD;
	bad = 0;
	file = gp_py_read_ptr(f->code, pp->code_filename, &bad);
	if (gp_py_copy_str(pp, file, e->c.file, &e->c.file_len, &e->c.file_kind))
		e->c.flags |= GP_PY_CODE_FILE_BAD;
	bad = 0;
	lt = gp_py_read_ptr(f->code, pp->code_linetable, &bad);
	if (!bad && pp->bytes_size != GP_PY_NONE)
		lt_len = gp_py_read_ptr(lt, pp->bytes_size, &bad);
	if (bad || pp->bytes_sval == GP_PY_NONE || (__s64)lt_len < 0) {
		e->c.flags |= GP_PY_CODE_LT_BAD;
		lt_len = 0;
	}
	if (lt_len > GP_PY_LT_MAX) {
		e->c.flags |= GP_PY_CODE_LT_CUT;
		lt_len = GP_PY_LT_MAX;
	}
	c->lt = lt + pp->bytes_sval;
	c->lt_len = (__u32)lt_len;
	c->chunks = lt_len ? ((__u32)lt_len - 1) / GP_PY_LT_CHUNK : 0;
	n = lt_len ? gp_py_copy_chunk(e->c.lt, c->lt, c->lt_len, 0) : 0;
	if (n < 0) {
		e->c.flags |= GP_PY_CODE_LT_BAD;
		c->lt_len = 0;
		c->chunks = 0;
	}
	e->c.lt_len = c->lt_len;
	e->c.lt_chunks = c->chunks;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/* Frame i's code object copied whole: it is not sent again for this process. */
static __always_inline void gp_py_next(struct gp_py_cctx *c, bool done)
{
	if (done)
		bpf_map_update_elem(&gp_py_seen, &c->key, &c->first, BPF_ANY);
	c->k = 0;
	c->i++;
}

static long gp_py_code_cb(__u32 it, void *arg)
{
	struct gp_py_cctx *c = arg;
	const struct gp_py_frame *f;
	__s32 *seen;

	(void)it;
	if (c->i >= c->st->nr || c->i >= GP_PY_MAX_FRAMES)
		return 1;
	f = &c->st->frames[c->i & (GP_PY_MAX_FRAMES - 1)];
	if (c->k) {	/* a chunk of its line table */
		if (gp_py_send_lines(c, f)) {
			gp_count_drop(GP_PY_CODE_DROP, GP_DROP_PYCODE);
			gp_py_next(c, false);	/* copied again at its next sight */
		} else if (c->k >= c->chunks) {
			gp_py_next(c, true);
		} else {
			c->k++;
		}
		return 0;
	}
	if (!f->code) {
		c->i++;
		return 0;
	}
	c->key.code = f->code;
	c->first = f->firstlineno;
	seen = bpf_map_lookup_elem(&gp_py_seen, &c->key);
	if (seen && *seen == c->first) {
		c->i++;
		return 0;
	}
	if (gp_py_send_code(c, f)) {
		gp_count_drop(GP_PY_CODE_DROP, GP_DROP_PYCODE);
		c->i++;
		return 0;
	}
	if (c->chunks)
		c->k = 1;
	else
		gp_py_next(c, true);
	return 0;
}

/* The code objects of st (the calling thread's frames) not copied yet for this process. */
static __always_inline void gp_py_copy_codes(const struct gp_py_stack *st)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct gp_py_cctx c = { .st = st };

	c.key.pid = bpf_get_current_pid_tgid() >> 32;
	if (st->status != GP_PY_OK || !st->nr)
		return;
	c.pp = bpf_map_lookup_elem(&gp_py_procs, &c.key.pid);
	if (!c.pp || !c.pp->copy_codes)
		return;
	c.img = gp_image();
	c.key.img = c.img;
	c.key.start = BPF_CORE_READ(task, group_leader, start_time);
	c.i = gp_py_opaque_zero();
	c.k = gp_py_opaque_zero();
	c.chunks = gp_py_opaque_zero();
	bpf_loop(GP_PY_MAX_FRAMES * GP_PY_LT_CHUNKS, gp_py_code_cb, &c, 0);
}

#endif /* GP_PY_CODE_RB */

#endif /* __bpf__ */

#endif /* GPUPROBE_PYSTACK_BPF_H */
