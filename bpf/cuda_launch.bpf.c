/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Launch probes for --cudatrace. Launches are counted in the kernel, entry-only, keyed
 * by process, handle and grid x block shape: a launch-heavy program pays one uprobe hit
 * per launch and nothing crosses the ring buffer. Kernel names come from the calls that
 * create handles (rare), read at their return. Latency histograms need return probes;
 * the loader leaves those out with --no-latency.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "cuda_launch.h"
#include "common.bpf.h"
#include "gp_arch.bpf.h"
#include "budget.bpf.h"
#include "shares.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool measure_latency = true;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* a handle's first sight carries its object (4.5 KiB) */
} names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536); /* --max-launch-keys */
	__type(key, struct gp_launch_key);
	__type(value, __u64);
} launches SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct gp_hist_key);
	__type(value, struct gp_hist);
} hists SEC(".maps");

struct handle_key {
	__u32 pid;
	__u32 img; /* gp_image(): a handle value means nothing in another image */
	__u64 handle;
};

struct known_val {
	__u64 owner; /* CUmodule or CUlibrary */
	__u32 gen;
	__u32 _pad;
};

/* Handles whose name user space has been told, with the naming's generation. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct handle_key);
	__type(value, struct known_val);
} known SEC(".maps");

/* Modules and libraries unloaded: their handles are stale (launches unnamed). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct handle_key);
	__type(value, __u8);
} unloaded SEC(".maps");

__u32 next_gen;

/* Bumped by every change of `known` or `unloaded` a launch could see (a naming, an alias,
 * an unload): a cached naming (below) is valid while this has not moved. */
__u64 names_seq = 1; /* 0 never matches: a cache entry starts zeroed */

/* A thread's launch state, in its own storage (no other program writes it while this one
 * runs: a task runs on one CPU at a time). Whether its process is followed: that holds for
 * the life of an image once the run has started (a fork is followed before the child runs,
 * an exec makes a new image), so the hash look-up of gp_traced_self() is done once per
 * thread and image; before that, user space may still add running processes (--comm and
 * --cgroup match them after the probes are attached), so a "not followed" is kept only
 * when the look-up was made after that (followed_settled). And the namings its launches
 * looked up last: a launch loop launches the same few handles over and over, and a hit
 * saves the two hash look-ups of handle_gen(); direct-mapped by handle. */
#define GEN_CACHE 16
#define GEN_NAMED (1U << 31)
struct gen_cached {
	__u64 handle;
	__u64 seq;  /* names_seq when looked up */
	__u32 img;
	__u32 gen;  /* the naming generation; bit 31: named */
};

struct hot {
	__u32 img;     /* the image `traced` was looked up for */
	__u32 traced;  /* 0: to look up, 1: not followed, 2: followed */
	struct gen_cached e[GEN_CACHE];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct hot);
} hot_store SEC(".maps");

/* Set by user space when the run starts (src/modes/cudatrace/cudatrace_mode.c, after the
 * processes running at start were matched): from then on the followed set grows only by
 * forks and execs, so a "not followed" looked up since holds for the thread's image. */
__u32 followed_settled;

/* Unnamed handles whose launch stack was already sent once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct handle_key);
	__type(value, __u8);
} sampled SEC(".maps");

struct call {
	struct gp_held held; /* its place in the table (shares.bpf.h) */
	__u64 ts_ns;
	__u32 api;
	union {
		__u32 hist;  /* enum gp_hist_kind: a launch or synchronization */
		__u32 gcall; /* enum gp_graph_call: a graph or capture call */
	};
	__u64 out_ptr;
	__u64 arg;   /* name pointer, the CUkernel, a stream, a graph or a node */
	__u64 owner; /* module or library, or the CUgraphExec */
	__u64 handle; /* a launch's handle when unnamed (0: named); a graph node's kernel */
	__u32 dims[6]; /* a graph node's grid and block */
};

/* Streams capturing a CUDA graph, (pid, image, stream) -> capture id; a stream joins a
 * capture by waiting on an event recorded in one (cuEventRecord + cuStreamWaitEvent, the
 * fork/join of multi-stream capture). An entry outlives its capture; the capture's entry
 * in `captures` says whether it is still on. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct handle_key);
	__type(value, __u64);
} capturing SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct handle_key);
	__type(value, __u64);
} cap_events SEC(".maps");

/* Captures in progress: (pid, image, capture id) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct handle_key);
	__type(value, __u8);
} captures SEC(".maps");

/* The version of each CUgraphExec: graph launches are counted under it (gp_launch_key.gen),
 * so user space expands each version's count with the nodes it had. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct handle_key);
	__type(value, __u32);
} exec_ver SEC(".maps");

/* Unnamed handles a launch of which succeeded: the driver knew them (a name read from the
 * process's memory for a handle is trusted only then, see src/modes/cudatrace/midname.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct handle_key);
	__type(value, __u8);
} verified SEC(".maps");

__u64 next_capture;
__u32 next_version;
/* Captures alive node-wide: while 0, a launch does not look its stream up. */
__s64 live_captures;

/* In-flight calls by thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240); /* --max-pending */
	__type(key, __u64);
	__type(value, struct call);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gp_stub_event);
} stub_scratch SEC(".maps");

/*
 * The slots the usable layouts name for a kind of handle (its object's first qword, the
 * tag) and a principal (midname.h: a uid, or CT_UID_NS_ROOT), bit s for slot s: user space
 * keeps it (src/modes/cudatrace/cudatrace_mode.c). A handle's first sight copies the
 * strings of those slots, of every slot when none is named; a naming call of a kind no
 * usable layout covers for its process copies what learning one needs.
 */
struct kname_hint_key {
	__u64 tag;
	__u32 uid;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 512); /* midname's layouts are 256 at most */
	__type(key, struct kname_hint_key);
	__type(value, __u32);
} kname_hints SEC(".maps");

/* gpuprobe's pid namespace: uid 0 in another is a container's root, a principal of its own */
const volatile __u32 own_pidns = 0;
/* bpf_find_vma (5.17): without it (5.15) the call is left out, dead code to the verifier,
 * and user space takes the build from the process (file_ino 0) */
const volatile bool have_find_vma = true;
#define CT_UID_NS_ROOT 0xfffffffeU
#define KOBJ_ALL_SLOTS 0xfeU /* slots 1 .. GP_KOBJ_SLOTS - 1 */

__u64 ldrops[GP_LDROP__COUNT];

#define count_drop(what) gp_count_drop(ldrops, what)

/* Stashes c as thread id's call in flight, if its process and user have room in the table
 * (shares.bpf.h); a stale entry of the thread is replaced. */
static __always_inline void stash(__u64 id, struct call *c)
{
	if (gp_share_hold(0, id >> 32, &c->held)) {
		count_drop(GP_LDROP_SHARE);
		return;
	}
	if (gp_inflight_put(&calls, 0, id, c))
		count_drop(GP_LDROP_PENDING);
}

/* Thread id's call in flight goes, if it has one (a stray's return must not find it). */
static __always_inline void unstash(__u64 id)
{
	gp_inflight_del(&calls, 0, id);
}

static __always_inline void remember_proc(__u32 tgid)
{
	if (!gp_remember_proc(&procs, tgid))
		count_drop(GP_LDROP_PROCS);
}

/* The inode number of the calling task's pid namespace (task_active_pid_ns()). */
static __always_inline __u32 own_pidns_of(struct task_struct *t)
{
	struct pid *pid = BPF_CORE_READ(t, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);
	struct pid_namespace *ns = NULL;
	struct upid *up;

	up = (struct upid *)((char *)pid + bpf_core_field_offset(struct pid, numbers) +
			     (level & 31) * bpf_core_type_size(struct upid));
	if (bpf_core_read(&ns, sizeof(ns), &up->ns) || !ns)
		return 0;
	return BPF_CORE_READ(ns, ns.inum);
}

/* The slots the usable layouts of a kind (tag) name for a caller of uid in pid namespace
 * pidns: its principal's own and root's (midname.h); 0 when none does. */
static __always_inline __u32 kobj_mask(__u64 tag, __u32 uid, __u32 pidns)
{
	struct kname_hint_key k = { .tag = tag };
	__u32 *m, mask = 0;

	k.uid = uid == 0 && pidns != own_pidns ? CT_UID_NS_ROOT : uid;
	m = bpf_map_lookup_elem(&kname_hints, &k);
	if (m)
		mask = *m;
	if (k.uid) {
		k.uid = 0; /* root's lessons serve every user */
		m = bpf_map_lookup_elem(&kname_hints, &k);
		if (m)
			mask |= *m;
	}
	return mask & KOBJ_ALL_SLOTS;
}

struct kobj_file_ctx {
	__u64 ino;
	__u32 dev;
};

static long kobj_file_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct kobj_file_ctx *f = data;
	struct file *file = BPF_CORE_READ(vma, vm_file);

	(void)task;
	if (file) {
		f->ino = BPF_CORE_READ(file, f_inode, i_ino);
		f->dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
	}
	return 0;
}

/* Which file is mapped at ip in the current process (the kernel's answer, not the
 * process's memory): the libcuda a launch probe fired in, when a process maps two. */
static __always_inline void kobj_file(struct gp_kobj_copy *c, __u64 ip)
{
	struct kobj_file_ctx f = { 0 };

	if (have_find_vma && ip)
		bpf_find_vma(bpf_get_current_task_btf(), ip, kobj_file_cb, &f, 0);
	c->file_ino = f.ino;
	c->file_dev = f.dev;
}

/* The caller and the handle's object into c; the slots its kind's usable layouts name
 * for the caller, 0 when none does or the object is unreadable. */
static __always_inline __u32 kobj_head(struct gp_kobj_copy *c, __u64 handle)
{
	c->file_ino = 0;
	c->file_dev = 0;
	c->uid = (__u32)bpf_get_current_uid_gid();
	c->pidns = own_pidns_of(bpf_get_current_task_btf());
	c->hinted = 0;
	c->obj_ok = !bpf_probe_read_user(c->obj, sizeof(c->obj), (const void *)handle);
	return c->obj_ok ? kobj_mask(c->obj[0], c->uid, c->pidns) : 0;
}

/* The strings of the slots in mask whose qword is a user pointer, one after another. */
static __always_inline void kobj_strings(struct gp_kobj_copy *c, __u32 mask)
{
	__u32 off = 0;
	long n;

	for (int s = 0; s < GP_KOBJ_SLOTS; s++) {
		c->str_off[s] = 0;
		c->str_len[s] = 0;
	}
	for (int s = 1; s < GP_KOBJ_SLOTS; s++) {
		__u64 p = c->obj[s];

		if (!(mask & (1U << s)) || p < 0x10000 || p >= (1ULL << GP_USER_ADDR_BITS))
			continue;
		if (off >= GP_KOBJ_STR)
			break;
		/* one comparison, then the mask: the read ends inside names[] (6.1's verifier) */
		off &= GP_KOBJ_STR - 1;
		n = bpf_probe_read_user_str(&c->names[off], GP_KOBJ_STR, (const void *)p);
		if (n <= 0)
			continue;
		c->str_off[s] = (__u16)off;
		c->str_len[s] = (__u16)n;
		off += (__u32)n;
	}
}

/* A handle's first sight: its object, and the strings its kind's layouts name (all the
 * candidates while none is learned). */
static __always_inline void kobj_copy(struct gp_kobj_copy *c, __u64 handle)
{
	__u32 mask = kobj_head(c, handle);

	c->hinted = mask != 0;
	kobj_strings(c, c->obj_ok ? (mask ? mask : KOBJ_ALL_SLOTS) : 0);
}

/* Once per unnamed handle: its launch stack, so user space can name it by the host stub,
 * and its object as it is now (kobj_copy), so that a name read from it survives the exit. */
static __always_inline void sample_unnamed(void *ctx, __u32 tgid, __u64 handle)
{
	struct handle_key hk = { .pid = tgid, .img = gp_image(), .handle = handle };
	struct gp_stub_event *e, *s;
	__u32 zero = 0;
	__u8 one = 1;
	long n;

	if (!handle || bpf_map_lookup_elem(&sampled, &hk))
		return;
	if (bpf_map_update_elem(&sampled, &hk, &one, BPF_NOEXIST))
		return;
	s = bpf_map_lookup_elem(&stub_scratch, &zero);
	if (!s)
		return;
	n = gp_entry_user_stack(ctx, s->stack);
	s->nr_stack = n > 0 ? (__u32)n : 0;
	e = bpf_ringbuf_reserve(&names, sizeof(*e), 0);
	if (!e) {
		count_drop(GP_LDROP_RINGBUF);
		bpf_map_delete_elem(&sampled, &hk); /* try again at the next launch */
		return;
	}
	e->type = GP_EV_STUB;
	e->pid = tgid;
	e->handle = handle;
	e->nr_stack = s->nr_stack;
	e->img = hk.img;
	__builtin_memcpy(e->stack, s->stack, sizeof(e->stack));
	kobj_copy(&e->copy, handle);
	kobj_file(&e->copy, PT_REGS_IP((struct pt_regs *)ctx));
	bpf_ringbuf_submit(e, gp_quiet_flags(&names));
}

static __always_inline void start_timer(__u64 id, __u32 api, __u32 hist, __u64 unnamed)
{
	struct call c = { .ts_ns = bpf_ktime_get_ns(), .api = api, .hist = hist, .handle = unnamed };

	stash(id, &c);
}

/* A process's histogram of a kind, made at its first call of that kind (the process is
 * remembered then, for its exit record). */
static __always_inline struct gp_hist *hist_of(__u32 tgid, __u32 kind)
{
	struct gp_hist_key k = { .pid = tgid, .kind = kind, .img = gp_image() };
	static const struct gp_hist zero;
	struct gp_hist *h = bpf_map_lookup_elem(&hists, &k);

	if (h)
		return h;
	remember_proc(tgid);
	bpf_map_update_elem(&hists, &k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&hists, &k);
}

/* The naming generation of a handle (0: never named, or its module was unloaded); *named
 * says whether user space knows the handle at all. */
static __always_inline __u32 handle_gen(__u32 tgid, __u32 img, __u64 handle, bool *named)
{
	struct handle_key hk = { .pid = tgid, .img = img, .handle = handle };
	struct known_val *kv = bpf_map_lookup_elem(&known, &hk);
	struct handle_key ok = { .pid = tgid, .img = img };

	*named = kv != NULL;
	if (!kv)
		return 0;
	ok.handle = kv->owner;
	return bpf_map_lookup_elem(&unloaded, &ok) ? 0 : kv->gen;
}

static __always_inline struct hot *hot_self(void)
{
	return bpf_task_storage_get(&hot_store, bpf_get_current_task_btf(), NULL,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
}

/* gp_traced_self() for a launch or a sync, answered once per thread and image. */
static __always_inline bool hot_traced(struct hot *h, __u32 img)
{
	__u32 settled;

	if (gp_run_ended())
		return false;
	if (!gp_filter)
		return true;
	if (!h)
		return gp_traced_self() != NULL;
	if (h->img == img && h->traced)
		return h->traced == 2;
	/* read before the look-up: a "not followed" found once the set was settled holds; one
	 * found before may be stale by the next call (its process matched since) */
	settled = *(volatile __u32 *)&followed_settled;
	h->traced = gp_traced_self() ? 2 : settled ? 1 : 0;
	h->img = img;
	return h->traced == 2;
}

/* handle_gen() for a launch, through the thread's cache. The sequence is read before the
 * look-ups and every writer bumps it after its change, so an entry cached from a state
 * that changed since is never used. A thread is one process: no PID in the key. */
static __always_inline __u32 launch_gen(struct hot *h, __u32 tgid, __u32 img, __u64 handle, bool *named)
{
	__u64 seq = *(volatile __u64 *)&names_seq;
	struct gen_cached *c;
	__u32 gen;

	if (!h)
		return handle_gen(tgid, img, handle, named);
	c = &h->e[(handle >> 4 ^ handle >> 10) & (GEN_CACHE - 1)];
	if (c->seq == seq && c->handle == handle && c->img == img) {
		*named = c->gen & GEN_NAMED;
		return c->gen & ~GEN_NAMED;
	}
	gen = handle_gen(tgid, img, handle, named);
	c->handle = handle;
	c->seq = seq;
	c->img = img;
	c->gen = gen | (*named ? GEN_NAMED : 0);
	return gen;
}

/* A stream as the capture tables know it: the per-thread default stream (0 in a _ptsz
 * entry point: GP_COOKIE_PTSZ, or CU_STREAM_PER_THREAD) is one per thread. */
static __always_inline __u64 stream_key(__u64 stream, bool ptsz)
{
	if ((!stream && ptsz) || stream == 2 /* CU_STREAM_PER_THREAD */)
		return 2 | ((__u64)(__u32)bpf_get_current_pid_tgid() << 32);
	return stream;
}

/* The capture a stream is in, or 0. A stale entry (its capture ended) goes. */
static __always_inline __u64 capture_of(__u32 tgid, __u32 img, __u64 stream)
{
	struct handle_key sk = { .pid = tgid, .img = img, .handle = stream }, ck = sk;
	__u64 *cap = bpf_map_lookup_elem(&capturing, &sk);

	if (!cap)
		return 0;
	ck.handle = *cap;
	if (bpf_map_lookup_elem(&captures, &ck))
		return *cap;
	bpf_map_delete_elem(&capturing, &sk);
	return 0;
}

static __always_inline void emit_graph(__u32 op, __u64 a, __u64 b, __u64 handle, __u32 gen, __u32 version,
				       const __u32 *dims)
{
	struct gp_graph_event *e = bpf_ringbuf_reserve(&names, sizeof(*e), 0);

	if (!e) {
		count_drop(GP_LDROP_RINGBUF);
		return;
	}
	e->type = GP_EV_GRAPH;
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->img = gp_image();
	e->op = op;
	e->a = a;
	e->b = b;
	e->handle = handle;
	e->gen = gen;
	e->version = version;
	for (int i = 0; i < 3; i++) {
		e->grid[i] = dims ? dims[i] : 0;
		e->block[i] = dims ? dims[3 + i] : 0;
	}
	bpf_ringbuf_submit(e, gp_quiet_flags(&names));
}

struct launch {
	struct hot *hot; /* the thread's (NULL when its storage could not be made) */
	__u32 img;
	__u32 kind;
	__u64 handle, stream;
	__u32 dims[6]; /* grid x, y, z, block x, y, z */
};

/* A launch on a capturing stream runs nothing now: it becomes a node of the graph being
 * captured (counted as captured, by user space, from this record). */
static __always_inline bool captured(__u32 tgid, __u32 img, bool ptsz, const struct launch *l)
{
	__u64 cap;
	bool named;
	__u32 gen;

	if (!*(volatile __s64 *)&live_captures)
		return false;
	cap = capture_of(tgid, img, stream_key(l->stream, ptsz));
	if (!cap)
		return false;
	gen = handle_gen(tgid, img, l->handle, &named);
	emit_graph(GP_GOP_CAPTURED, cap, 0, l->handle, gen, 0, l->dims);
	return true;
}

static __always_inline __u32 exec_version(__u32 tgid, __u32 img, __u64 exec)
{
	struct handle_key ek = { .pid = tgid, .img = img, .handle = exec };
	__u32 *v = bpf_map_lookup_elem(&exec_ver, &ek);

	return v ? *v : 0;
}

/* One more launch under key k: a look-up, and an insert the first time (the process is
 * remembered then, for its exit record: its keys go only once it has exited). */
static __always_inline void bump_launch(const struct gp_launch_key *k)
{
	__u64 one = 1, *v = bpf_map_lookup_elem(&launches, k);

	if (v) {
		__sync_fetch_and_add(v, 1);
		return;
	}
	if (bpf_map_update_elem(&launches, k, &one, BPF_NOEXIST)) {
		/* lost a race to create the key, or the table is full */
		v = bpf_map_lookup_elem(&launches, k);
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			count_drop(GP_LDROP_KEYS);
	}
	remember_proc(k->pid);
}

static __always_inline int count_launch(void *ctx, const struct launch *l)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u32 tgid = id >> 32, img = l->img, api = GP_COOKIE_API(cookie);
	struct gp_launch_key k = {
		.pid = tgid, .kind = l->kind, .handle = l->handle, .img = img,
		.grid = { l->dims[0], l->dims[1], l->dims[2] },
		.block = { l->dims[3], l->dims[4], l->dims[5] },
	};
	bool named = true;
	struct gp_hist *h;

	if (!gp_sampled_hit(tgid)) {
		/* a stray: no entry left behind for its return to time */
		if (measure_latency)
			unstash(id);
		return 0;
	}
	if (l->kind == GP_LAUNCH_GRAPH)
		k.gen = exec_version(tgid, img, l->handle);
	else if (captured(tgid, img, GP_COOKIE_LAYOUT(cookie) & GP_COOKIE_PTSZ, l))
		goto timed; /* the call itself is timed like any launch call */
	else
		k.gen = launch_gen(l->hot, tgid, img, l->handle, &named);
	/* the stub first: user space reads the count from the table at any time, and holds an
	 * unnamed kernel's series back only while a record that may name it is unread
	 * (cudatrace.h, enum ct_await) */
	if (!named)
		sample_unnamed(ctx, tgid, l->handle);
	bump_launch(&k);
timed:
	if (measure_latency) {
		h = hist_of(tgid, GP_HIST_LAUNCH);
		if (h)
			__sync_fetch_and_add(&h->count, 1);
		start_timer(id, api, GP_HIST_LAUNCH, named ? 0 : l->handle);
	}
	return 0;
}

/* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra) and
 * cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params): the 7th
 * argument on (blockDimZ, shmem, stream) per the architecture's ABI (gp_arch.bpf.h), in
 * one user-memory read where they are on the stack (x86-64: all three) */
static __always_inline int launch_kernel(struct pt_regs *ctx, struct launch *l, __u32 kind)
{
	__u64 a[3]; /* blockDimZ, sharedMemBytes, hStream */

	gp_args(ctx, 6, 3, a);
	l->kind = kind;
	l->handle = gp_arg(ctx, 0);
	l->stream = a[2];
	l->dims[0] = gp_arg(ctx, 1);
	l->dims[1] = gp_arg(ctx, 2);
	l->dims[2] = gp_arg(ctx, 3);
	l->dims[3] = gp_arg(ctx, 4);
	l->dims[4] = gp_arg(ctx, 5);
	l->dims[5] = (__u32)a[0];
	return count_launch(ctx, l);
}

/* cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, params, extra) */
static __always_inline int launch_ex(struct pt_regs *ctx, struct launch *l)
{
	/* CUlaunchConfig: gridDimX..Z, blockDimX..Z, sharedMemBytes (unsigned ints), then
	 * hStream at offset 32 */
	struct {
		__u32 dims[6];
		__u32 shmem, pad;
		__u64 stream;
	} cfg = {};

	bpf_probe_read_user(&cfg, sizeof(cfg), (void *)PT_REGS_PARM1(ctx));
	l->kind = GP_LAUNCH_EX;
	l->handle = PT_REGS_PARM2(ctx);
	l->stream = cfg.stream;
	__builtin_memcpy(l->dims, cfg.dims, sizeof(l->dims));
	return count_launch(ctx, l);
}

/* cuGraphLaunch(CUgraphExec, CUstream) */
static __always_inline int launch_graph(struct pt_regs *ctx, struct launch *l)
{
	l->kind = GP_LAUNCH_GRAPH;
	l->handle = PT_REGS_PARM1(ctx);
	l->stream = PT_REGS_PARM2(ctx);
	return count_launch(ctx, l);
}

/* cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize */
static __always_inline int sync_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct gp_hist *h;

	if (!gp_sampled_hit(id >> 32)) {
		if (measure_latency)
			unstash(id);
		return 0;
	}
	h = hist_of(id >> 32, GP_HIST_SYNC);
	if (h)
		__sync_fetch_and_add(&h->count, 1);
	if (measure_latency)
		start_timer(id, (__u32)bpf_get_attach_cookie(ctx), GP_HIST_SYNC, 0);
	return 0;
}

/* Return of a timed launch or sync: one histogram sample in microseconds. */
static __always_inline int timed_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call *c;
	struct gp_hist *h;
	__u64 d, old;
	__u32 slot;

	if (!gp_window_open_of(id >> 32)) {
		/* the window closed while the call ran: its entry may be stale by the next */
		unstash(id);
		return 0;
	}
	c = bpf_map_lookup_elem(&calls, &id);
	if (!c) {
		/* under a budget, a call that entered outside the window returns without one */
		if (!gp_count_hits)
			count_drop(GP_LDROP_NORETURN);
		return 0;
	}
	d = bpf_ktime_get_ns() - c->ts_ns;
	h = hist_of(id >> 32, c->hist);
	if (c->handle && PT_REGS_RC(ctx) == 0) {
		/* an unnamed handle the driver accepted */
		struct handle_key vk = { .pid = id >> 32, .img = gp_image(), .handle = c->handle };
		__u8 one = 1;

		bpf_map_update_elem(&verified, &vk, &one, BPF_NOEXIST);
	}
	gp_inflight_done(&calls, 0, id, c);
	if (!h)
		return 0;
	slot = gp_log2_slot(d / 1000, GP_HIST_SLOTS);
	if (slot < GP_HIST_SLOTS)
		__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->timed, 1);
	__sync_fetch_and_add(&h->total_ns, d);
	/* lock-free max: retry while a larger value is not yet stored */
	for (int i = 0; i < 4; i++) {
		old = h->max_ns;
		if (d <= old || __sync_val_compare_and_swap(&h->max_ns, old, d) == old)
			break;
	}
	return 0;
}

/* cuModuleGetFunction(CUfunction *out, CUmodule mod, const char *name) and
 * cuLibraryGetKernel(CUkernel *out, CUlibrary lib, const char *name) */
static __always_inline int name_enter(struct pt_regs *ctx)
{
	void *out = (void *)PT_REGS_PARM1(ctx), *name = (void *)PT_REGS_PARM3(ctx);
	__u64 owner = PT_REGS_PARM2(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	struct call c = {
		.api = (__u32)bpf_get_attach_cookie(ctx),
		.out_ptr = (__u64)out, .arg = (__u64)name, .owner = owner,
	};

	stash(id, &c);
	return 0;
}

/* cuKernelGetFunction(CUfunction *out, CUkernel kernel) */
static __always_inline int alias_enter(struct pt_regs *ctx)
{
	void *out = (void *)PT_REGS_PARM1(ctx);
	__u64 kernel = PT_REGS_PARM2(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	struct call c = {
		.api = (__u32)bpf_get_attach_cookie(ctx), .out_ptr = (__u64)out, .arg = kernel,
	};

	stash(id, &c);
	return 0;
}

/* cuModuleUnload(CUmodule) and cuLibraryUnload(CUlibrary) */
static __always_inline int unload_enter(struct pt_regs *ctx)
{
	__u64 owner = PT_REGS_PARM1(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	struct call c = { .api = (__u32)bpf_get_attach_cookie(ctx), .owner = owner };

	stash(id, &c);
	return 0;
}

static __always_inline int unload_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call *c = bpf_map_lookup_elem(&calls, &id);
	struct handle_key ok;
	__u8 one = 1;

	if (!c) {
		count_drop(GP_LDROP_NORETURN);
		return 0;
	}
	if ((__u32)PT_REGS_RC(ctx) == 0) {
		ok.pid = id >> 32;
		ok.img = gp_image();
		ok.handle = c->owner;
		bpf_map_update_elem(&unloaded, &ok, &one, BPF_ANY);
		__sync_fetch_and_add(&names_seq, 1); /* after the change: cached namings go */
	}
	gp_inflight_done(&calls, 0, id, c);
	return 0;
}

static __always_inline int name_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), handle = 0;
	__u32 tgid = id >> 32, rc = (__u32)PT_REGS_RC(ctx);
	struct call *c = bpf_map_lookup_elem(&calls, &id);
	struct handle_key hk = { .pid = tgid, .img = gp_image() }, ok = { .pid = tgid, .img = hk.img };
	struct known_val kv = {}, *kp;
	struct gp_namecopy_event *nc = NULL;
	struct gp_name_event *e;
	__u64 tag = 0;
	__u32 uid;

	if (!c) {
		/* under a budget, a naming call that entered outside the window */
		if (!gp_count_hits)
			count_drop(GP_LDROP_NORETURN);
		return 0;
	}
	/* by id, not by the cookie: which handle a naming call makes (a CUkernel or a
	 * CUfunction) and whether an entry is a naming call's are what the calls do; how they
	 * pass their arguments is the cookie's (GP_LP_NAME, GP_LP_ALIAS) */
	if (c->api != GP_API_cuModuleGetFunction && c->api != GP_API_cuLibraryGetKernel &&
	    c->api != GP_API_cuKernelGetFunction)
		return 0; /* another call's entry: this one's was not kept */
	if (rc != 0 || bpf_probe_read_user(&handle, sizeof(handle), (void *)c->out_ptr) || !handle)
		goto out;
	remember_proc(tgid);
	hk.handle = handle;
	if (c->api == GP_API_cuKernelGetFunction) {
		/* the CUfunction inherits its CUkernel's naming; none if that predates us */
		ok.handle = c->arg;
		kp = bpf_map_lookup_elem(&known, &ok);
		if (kp) {
			kv = *kp;
			bpf_map_update_elem(&known, &hk, &kv, BPF_ANY);
			__sync_fetch_and_add(&names_seq, 1);
		}
		goto out;
	}
	kv.owner = c->owner;
	kv.gen = __sync_fetch_and_add(&next_gen, 1) + 1;
	e = bpf_ringbuf_reserve(&names, sizeof(*e), 0);
	if (!e) {
		count_drop(GP_LDROP_RINGBUF);
		goto out;
	}
	e->type = GP_EV_NAME;
	e->pid = tgid;
	e->kind = c->api == GP_API_cuLibraryGetKernel ? GP_NAME_KERNEL : GP_NAME_FUNCTION;
	e->gen = kv.gen;
	e->handle = handle;
	e->owner = c->owner;
	e->img = hk.img;
	e->copy_follows = 0;
	gp_leader_comm(e->comm);
	if (bpf_probe_read_user_str(e->name, sizeof(e->name), (void *)c->arg) < 0)
		e->name[0] = '\0';
	/* a kind no usable layout covers for this process: what learning one needs, copied
	 * now (the process may be gone before its record is read); reserved after the name's
	 * record, so read after it */
	uid = (__u32)bpf_get_current_uid_gid();
	/* the pid namespace tells only root from a container's root */
	if (!bpf_probe_read_user(&tag, sizeof(tag), (const void *)handle) &&
	    !kobj_mask(tag, uid, uid ? 0 : own_pidns_of(bpf_get_current_task_btf()))) {
		nc = bpf_ringbuf_reserve(&names, sizeof(*nc), 0);
		if (!nc)
			count_drop(GP_LDROP_RINGBUF); /* learned from memory instead, while it lives */
	}
	if (nc && (kobj_head(&nc->copy, handle) || !nc->copy.obj_ok)) {
		bpf_ringbuf_discard(nc, BPF_RB_NO_WAKEUP); /* changed since (a layout came) */
		nc = NULL;
	}
	if (nc) {
		nc->type = GP_EV_NAMECOPY;
		nc->pid = tgid;
		nc->img = hk.img;
		nc->gen = kv.gen;
		nc->handle = handle;
		kobj_strings(&nc->copy, KOBJ_ALL_SLOTS);
		e->copy_follows = 1;
	}
	bpf_ringbuf_submit(e, gp_quiet_flags(&names));
	if (nc)
		bpf_ringbuf_submit(nc, gp_quiet_flags(&names));
	/* a module handle value may be reused after an unload: this one is alive */
	ok.handle = c->owner;
	bpf_map_delete_elem(&unloaded, &ok);
	bpf_map_update_elem(&known, &hk, &kv, BPF_ANY);
	__sync_fetch_and_add(&names_seq, 1);
	bpf_map_delete_elem(&sampled, &hk);
out:
	gp_inflight_done(&calls, 0, id, c);
	return 0;
}

/* Launches and syncs: the hot path (see struct hot). */
static __always_inline int hot_enter(struct pt_regs *ctx, __u32 prog)
{
	struct launch l = { .hot = hot_self(), .img = gp_image() };

	if (!hot_traced(l.hot, l.img))
		return 0;
	switch (prog) {
	case GP_LP_KERNEL:
		return launch_kernel(ctx, &l, GP_LAUNCH_KERNEL);
	case GP_LP_EX:
		return launch_ex(ctx, &l);
	case GP_LP_COOP:
		return launch_kernel(ctx, &l, GP_LAUNCH_COOPERATIVE);
	case GP_LP_GRAPH:
		return launch_graph(ctx, &l);
	default:
		return sync_enter(ctx);
	}
}

/* Under a budget the naming calls are sampled with the launches (some libraries, cuBLAS
 * among them, make one for every launch: a PyTorch loop on the H200 made ~3600 a second):
 * one outside the window leaves no entry behind, so that its return does nothing. */
static __always_inline bool naming_seen(void)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (gp_sampled_extra(id >> 32))
		return true;
	unstash(id);
	return false;
}

/* One entry and one return program for every launch-side entry point, dispatching on the
 * attach cookie's prog (GP_LAUNCH's in bpf/gp_apis.def; the id below it): one uprobe_multi
 * link each per library (two with --max-overhead: the launches and syncs it may sample,
 * and the rest). */
static __always_inline int launch_enter_body(struct pt_regs *ctx)
{
	__u32 prog = GP_COOKIE_SHAPE(bpf_get_attach_cookie(ctx));

	switch (prog) {
	case GP_LP_NAME:
		return gp_traced_self() && naming_seen() ? name_enter(ctx) : 0;
	case GP_LP_ALIAS:
		return gp_traced_self() && naming_seen() ? alias_enter(ctx) : 0;
	case GP_LP_UNLOAD:
		return gp_traced_self() ? unload_enter(ctx) : 0;
	case GP_LP_INIT:
	case GP_LP_CTX:
		/* priced, never sampled: a process's first driver call takes its budget slot,
		 * and the budget arms its sampled probes for it alone (src/core/budget.c) */
		if (gp_traced_self())
			gp_init_begin(bpf_get_current_pid_tgid() >> 32);
		return 0;
	default:
		return hot_enter(ctx, prog);
	}
}

SEC("uprobe")
int launch_enter(struct pt_regs *ctx)
{
	return launch_enter_body(ctx);
}

/* The same program as a plain uprobe (not uprobe_multi): the budget's tracefs uprobe
 * events take it for the probes it samples (gp_run__prepare_sampled; not loaded otherwise). */
SEC("uprobe")
int launch_enter_ev(struct pt_regs *ctx)
{
	return launch_enter_body(ctx);
}

static __always_inline int launch_leave_body(struct pt_regs *ctx)
{
	if (!gp_traced_self())
		return 0;
	switch (GP_COOKIE_SHAPE(bpf_get_attach_cookie(ctx))) {
	case GP_LP_NAME:
	case GP_LP_ALIAS:
		return name_leave(ctx);
	case GP_LP_UNLOAD:
		return unload_leave(ctx);
	case GP_LP_INIT:
		return 0;
	case GP_LP_CTX:
		gp_init_done(bpf_get_current_pid_tgid() >> 32);
		return 0;
	default:
		return timed_leave(ctx);
	}
}

SEC("uretprobe")
int launch_leave(struct pt_regs *ctx)
{
	return launch_leave_body(ctx);
}

/* The same program as a plain uretprobe (not uprobe_multi): the budget's tracefs uprobe
 * events take it for the probes it samples (gp_run__prepare_sampled; not loaded otherwise). */
SEC("uretprobe")
int launch_leave_ev(struct pt_regs *ctx)
{
	return launch_leave_body(ctx);
}

/*
 * Stream capture and CUDA graphs: rare calls, each followed in user space from its record
 * (src/modes/cudatrace/graphs.c). Entry stores what the return needs; the return checks
 * the call succeeded and reads what it made.
 */
static __always_inline void save_call(struct call *c)
{
	stash(bpf_get_current_pid_tgid(), c);
}

/* CUDA_KERNEL_NODE_PARAMS (v1 and v2 share the head): func, grid, block; v2 adds the
 * CUkernel at offset 56, used when func is NULL. */
static __always_inline void read_node_params(struct call *c, const void *params, bool v2)
{
	struct {
		__u64 func;
		__u32 dims[6];
		__u32 shmem, pad;
		__u64 kparams, extra, kern;
	} p = {};

	if (bpf_probe_read_user(&p, v2 ? sizeof(p) : sizeof(p) - sizeof(p.kern), params))
		return;
	c->handle = p.func ? p.func : (v2 ? p.kern : 0);
	__builtin_memcpy(c->dims, p.dims, sizeof(c->dims));
}

/* What the return needs, by how the call passes its arguments (the cookie's call). */
static __always_inline int graph_enter_call(struct pt_regs *ctx, __u32 api, __u32 call, bool ptsz)
{
	struct call c = { .api = api, .gcall = call };
	__u64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx);

	switch (call) {
	case GP_GC_BEGIN_TO_GRAPH:
		c.owner = a2; /* the graph captured into */
		/* fallthrough */
	case GP_GC_BEGIN:
		c.arg = stream_key(a1, ptsz);
		break;
	case GP_GC_END:
		c.arg = stream_key(a1, ptsz);
		c.out_ptr = a2;
		break;
	case GP_GC_ADD_NODE:
	case GP_GC_ADD_NODE_V2:
		/* (CUgraphNode *out, CUgraph, deps, n, params) */
		c.out_ptr = a1;
		c.arg = a2;
		read_node_params(&c, (void *)PT_REGS_PARM5(ctx), call == GP_GC_ADD_NODE_V2);
		break;
	case GP_GC_NODE_SET:
	case GP_GC_NODE_SET_V2:
		c.arg = a1;
		read_node_params(&c, (void *)a2, call == GP_GC_NODE_SET_V2);
		break;
	case GP_GC_EXEC_NODE_SET:
	case GP_GC_EXEC_NODE_SET_V2:
		c.owner = a1;
		c.arg = a2;
		read_node_params(&c, (void *)PT_REGS_PARM3(ctx), call == GP_GC_EXEC_NODE_SET_V2);
		break;
	case GP_GC_EXEC_UPDATE:
		c.owner = a1;
		c.arg = a2;
		break;
	default: /* instantiate (CUgraphExec *out, CUgraph), clone (CUgraph *out, CUgraph),
		  * create (CUgraph *out, flags) */
		c.out_ptr = a1;
		c.arg = a2;
		break;
	}
	save_call(&c);
	return 0;
}

/* cuEventRecord[WithFlags](event, stream): an event recorded in a capture marks a point
 * of it; cuStreamWaitEvent(stream, event) on such an event makes stream join the capture. */
static __always_inline int capture_fork_join(struct pt_regs *ctx, bool record, bool ptsz)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, img = gp_image();
	/* (event, stream) to record, (stream, event) to wait: read both registers first (a
	 * ctx offset chosen at run time is refused by the verifier) */
	__u64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx);
	__u64 stream = stream_key(record ? a2 : a1, ptsz);
	struct handle_key ek = { .pid = tgid, .img = img, .handle = record ? a1 : a2 };
	struct handle_key sk = { .pid = tgid, .img = img, .handle = stream }, ck = sk;
	__u64 cap, *ev;

	if (!*(volatile __s64 *)&live_captures)
		return 0;
	if (record) {
		cap = capture_of(tgid, img, stream);
		if (cap && bpf_map_update_elem(&cap_events, &ek, &cap, BPF_ANY))
			count_drop(GP_LDROP_GRAPH);
		else if (!cap)
			bpf_map_delete_elem(&cap_events, &ek);
		return 0;
	}
	ev = bpf_map_lookup_elem(&cap_events, &ek);
	if (!ev)
		return 0;
	ck.handle = *ev;
	if (bpf_map_lookup_elem(&captures, &ck) && bpf_map_update_elem(&capturing, &sk, ev, BPF_ANY))
		count_drop(GP_LDROP_GRAPH);
	return 0;
}

/* Every graph and capture entry point, dispatching on the cookie's call (GP_GRAPH's in
 * bpf/gp_apis.def; the id below it). */
SEC("uprobe")
int graph_enter(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 call = GP_COOKIE_SHAPE(cookie);
	bool ptsz = GP_COOKIE_LAYOUT(cookie) & GP_COOKIE_PTSZ;
	struct handle_key k = { .pid = bpf_get_current_pid_tgid() >> 32 };

	if (!gp_traced_self())
		return 0;
	k.img = gp_image();
	switch (call) {
	case GP_GC_RECORD:
	case GP_GC_WAIT:
		return capture_fork_join(ctx, call == GP_GC_RECORD, ptsz);
	case GP_GC_EXEC_DESTROY:
		k.handle = PT_REGS_PARM1(ctx);
		bpf_map_delete_elem(&exec_ver, &k);
		emit_graph(GP_GOP_EXEC_DESTROY, k.handle, 0, 0, 0, 0, NULL);
		return 0;
	case GP_GC_DESTROY:
		emit_graph(GP_GOP_GRAPH_DESTROY, PT_REGS_PARM1(ctx), 0, 0, 0, 0, NULL);
		return 0;
	case GP_GC_DESTROY_NODE:
		emit_graph(GP_GOP_NODE_DESTROY, 0, PT_REGS_PARM1(ctx), 0, 0, 0, NULL);
		return 0;
	case GP_GC_ADD_CHILD:
		emit_graph(GP_GOP_CHILD_GRAPH, PT_REGS_PARM2(ctx), 0, 0, 0, 0, NULL);
		return 0;
	default:
		return graph_enter_call(ctx, GP_COOKIE_API(cookie), call, ptsz);
	}
}

static __always_inline __u64 read_out(__u64 ptr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)ptr);
	return v;
}

/* A new version of a CUgraphExec: launches from now on count under it. */
static __always_inline __u32 new_version(__u32 tgid, __u32 img, __u64 exec)
{
	struct handle_key k = { .pid = tgid, .img = img, .handle = exec };
	__u32 v = __sync_fetch_and_add(&next_version, 1) + 1;

	if (bpf_map_update_elem(&exec_ver, &k, &v, BPF_ANY)) {
		count_drop(GP_LDROP_GRAPH);
		return 0;
	}
	return v;
}

static __always_inline void capture_begin(__u32 tgid, __u32 img, const struct call *c)
{
	struct handle_key sk = { .pid = tgid, .img = img, .handle = c->arg }, ck = sk;
	__u64 cap = __sync_fetch_and_add(&next_capture, 1) + 1;
	__u8 one = 1;

	ck.handle = cap;
	if (bpf_map_update_elem(&captures, &ck, &one, BPF_ANY) ||
	    bpf_map_update_elem(&capturing, &sk, &cap, BPF_ANY)) {
		bpf_map_delete_elem(&captures, &ck);
		count_drop(GP_LDROP_GRAPH);
		return;
	}
	__sync_fetch_and_add(&live_captures, 1);
	if (c->owner)
		emit_graph(GP_GOP_CAPTURE_TO, cap, c->owner, 0, 0, 0, NULL);
}

/* The capture ends whether or not the call succeeds (an invalidated capture fails). */
static __always_inline void capture_end(__u32 tgid, __u32 img, const struct call *c, bool ok)
{
	struct handle_key sk = { .pid = tgid, .img = img, .handle = c->arg }, ck = sk;
	__u64 *cap = bpf_map_lookup_elem(&capturing, &sk), id;

	if (!cap)
		return;
	id = *cap;
	ck.handle = id;
	bpf_map_delete_elem(&capturing, &sk);
	if (bpf_map_delete_elem(&captures, &ck))
		return; /* already ended */
	__sync_fetch_and_add(&live_captures, -1);
	if (ok)
		emit_graph(GP_GOP_CAPTURE_END, id, read_out(c->out_ptr), 0, 0, 0, NULL);
	else
		emit_graph(GP_GOP_CAPTURE_FAILED, id, 0, 0, 0, 0, NULL);
}

static __always_inline void node_made(__u32 tgid, __u32 img, __u32 op, __u64 a, __u64 b, const struct call *c,
				      __u32 version)
{
	bool named;
	__u32 gen = handle_gen(tgid, img, c->handle, &named);

	emit_graph(op, a, b, c->handle, gen, version, c->dims);
}

static __always_inline void graph_leave_call(const struct call *c, bool ok)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, img = gp_image();
	__u64 out;

	switch (c->gcall) {
	case GP_GC_BEGIN:
	case GP_GC_BEGIN_TO_GRAPH:
		if (ok)
			capture_begin(tgid, img, c);
		return;
	case GP_GC_END:
		capture_end(tgid, img, c, ok);
		return;
	}
	if (!ok)
		return;
	switch (c->gcall) {
	case GP_GC_ADD_NODE:
	case GP_GC_ADD_NODE_V2:
		node_made(tgid, img, GP_GOP_ADD_NODE, c->arg, read_out(c->out_ptr), c, 0);
		return;
	case GP_GC_NODE_SET:
	case GP_GC_NODE_SET_V2:
		node_made(tgid, img, GP_GOP_NODE_SET, 0, c->arg, c, 0);
		return;
	case GP_GC_EXEC_NODE_SET:
	case GP_GC_EXEC_NODE_SET_V2:
		node_made(tgid, img, GP_GOP_EXEC_NODE_SET, c->owner, c->arg, c, new_version(tgid, img, c->owner));
		return;
	case GP_GC_EXEC_UPDATE:
		emit_graph(GP_GOP_EXEC_UPDATE, c->owner, c->arg, 0, 0, new_version(tgid, img, c->owner), NULL);
		return;
	case GP_GC_CLONE:
		emit_graph(GP_GOP_CLONE, read_out(c->out_ptr), c->arg, 0, 0, 0, NULL);
		return;
	case GP_GC_CREATE:
		emit_graph(GP_GOP_GRAPH_CREATE, read_out(c->out_ptr), 0, 0, 0, 0, NULL);
		return;
	default: /* the instantiations */
		out = read_out(c->out_ptr);
		emit_graph(GP_GOP_INSTANTIATE, out, c->arg, 0, 0, new_version(tgid, img, out), NULL);
		return;
	}
}

SEC("uretprobe")
int graph_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call *c;

	if (!gp_traced_self())
		return 0;
	c = bpf_map_lookup_elem(&calls, &id);
	if (!c) {
		count_drop(GP_LDROP_NORETURN);
		return 0;
	}
	graph_leave_call(c, (__u32)PT_REGS_RC(ctx) == 0);
	gp_inflight_done(&calls, 0, id, c);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int launch_proc_exit(void *ctx)
{
	gp_inflight_exit(&calls, 0);
	if (!gp_on_exit(NULL, &procs, &names))
		count_drop(GP_LDROP_RINGBUF);
	return 0;
}
