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
#include "gp_arch.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool measure_latency = true;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
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
	__u32 _pad;
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

/* Unnamed handles whose launch stack was already sent once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct handle_key);
	__type(value, __u8);
} sampled SEC(".maps");

struct call {
	__u64 ts_ns;
	__u32 api;
	__u32 hist; /* enum gp_hist_kind */
	__u64 out_ptr;
	__u64 arg;   /* name pointer, or the CUkernel */
	__u64 owner; /* module or library */
};

/* In-flight calls by thread. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
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

__u64 ldrops[GP_LDROP__COUNT];

static __always_inline void count_drop(int what)
{
	__sync_fetch_and_add(&ldrops[what], 1);
}

static __always_inline void remember_proc(__u32 tgid)
{
	__u8 one = 1;

	if (bpf_map_lookup_elem(&procs, &tgid))
		return;
	if (bpf_map_update_elem(&procs, &tgid, &one, BPF_NOEXIST) == -7 /* -E2BIG */)
		count_drop(GP_LDROP_PROCS);
}

/* Once per unnamed handle: its launch stack, so user space can name it by the host stub. */
static __always_inline void sample_unnamed(void *ctx, __u32 tgid, __u64 handle)
{
	struct handle_key hk = { .pid = tgid, .handle = handle };
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
	__builtin_memcpy(e->stack, s->stack, sizeof(e->stack));
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void start_timer(__u64 id, __u32 api, __u32 hist)
{
	struct call c = { .ts_ns = bpf_ktime_get_ns(), .api = api, .hist = hist };

	if (bpf_map_update_elem(&calls, &id, &c, BPF_ANY))
		count_drop(GP_LDROP_PENDING);
}

static __always_inline struct gp_hist *hist_of(__u32 tgid, __u32 kind)
{
	struct gp_hist_key k = { .pid = tgid, .kind = kind };
	struct gp_hist *h = bpf_map_lookup_elem(&hists, &k);
	static const struct gp_hist zero;

	if (h)
		return h;
	bpf_map_update_elem(&hists, &k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&hists, &k);
}

static __always_inline int count_launch(void *ctx, __u32 kind, __u64 handle, __u32 gx,
					__u32 gy, __u32 gz, __u32 bx, __u32 by, __u32 bz)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct gp_launch_key k = {
		.pid = tgid, .kind = kind, .handle = handle,
		.grid = { gx, gy, gz }, .block = { bx, by, bz },
	};
	struct handle_key hk = { .pid = tgid, .handle = handle };
	struct known_val *kv = NULL;
	__u64 one = 1, *v;
	struct gp_hist *h;

	if (kind != GP_LAUNCH_GRAPH) {
		kv = bpf_map_lookup_elem(&known, &hk);
		if (kv) {
			struct handle_key ok = { .pid = tgid, .handle = kv->owner };

			k.gen = bpf_map_lookup_elem(&unloaded, &ok) ? 0 : kv->gen;
		}
	}

	v = bpf_map_lookup_elem(&launches, &k);
	if (v) {
		__sync_fetch_and_add(v, 1);
	} else if (bpf_map_update_elem(&launches, &k, &one, BPF_NOEXIST)) {
		/* lost a race to create the key, or the table is full */
		v = bpf_map_lookup_elem(&launches, &k);
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			count_drop(GP_LDROP_KEYS);
	}
	remember_proc(tgid);
	if (kind != GP_LAUNCH_GRAPH && !kv)
		sample_unnamed(ctx, tgid, handle);
	if (measure_latency) {
		h = hist_of(tgid, GP_HIST_LAUNCH);
		if (h)
			__sync_fetch_and_add(&h->count, 1);
		start_timer(id, (__u32)bpf_get_attach_cookie(ctx), GP_HIST_LAUNCH);
	}
	return 0;
}

/* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra) */
static __always_inline int launch_kernel(struct pt_regs *ctx)
{
	return count_launch(ctx, GP_LAUNCH_KERNEL, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx),
			    PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx),
			    gp_arg(ctx, 5), gp_arg(ctx, 6));
}

/* cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, stream, params) */
static __always_inline int launch_coop(struct pt_regs *ctx)
{
	return count_launch(ctx, GP_LAUNCH_COOPERATIVE, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx),
			    PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx),
			    gp_arg(ctx, 5), gp_arg(ctx, 6));
}

/* cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, params, extra) */
static __always_inline int launch_ex(struct pt_regs *ctx)
{
	void *config = (void *)PT_REGS_PARM1(ctx);
	__u64 f = PT_REGS_PARM2(ctx);
	__u32 dims[6] = {};

	/* CUlaunchConfig starts with gridDimX..Z, blockDimX..Z as unsigned ints */
	bpf_probe_read_user(dims, sizeof(dims), config);
	return count_launch(ctx, GP_LAUNCH_EX, f, dims[0], dims[1], dims[2], dims[3], dims[4],
			    dims[5]);
}

/* cuGraphLaunch(CUgraphExec, CUstream) */
static __always_inline int launch_graph(struct pt_regs *ctx)
{
	__u64 graph = PT_REGS_PARM1(ctx);

	return count_launch(ctx, GP_LAUNCH_GRAPH, graph, 0, 0, 0, 0, 0, 0);
}

/* cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize */
static __always_inline int sync_enter(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct gp_hist *h = hist_of(id >> 32, GP_HIST_SYNC);

	remember_proc(id >> 32);
	if (h)
		__sync_fetch_and_add(&h->count, 1);
	if (measure_latency)
		start_timer(id, (__u32)bpf_get_attach_cookie(ctx), GP_HIST_SYNC);
	return 0;
}

static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 r = 0;

	/* bounded: the verifier sees at most 64 iterations */
	for (int i = 0; i < 64 && v > 1; i++) {
		v >>= 1;
		r++;
	}
	return r >= GP_HIST_SLOTS ? GP_HIST_SLOTS - 1 : r;
}

/* Return of a timed launch or sync: one histogram sample in microseconds. */
static __always_inline int timed_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct call *c = bpf_map_lookup_elem(&calls, &id);
	struct gp_hist *h;
	__u64 d, old;
	__u32 slot;

	if (!c) {
		count_drop(GP_LDROP_NORETURN);
		return 0;
	}
	d = bpf_ktime_get_ns() - c->ts_ns;
	h = hist_of(id >> 32, c->hist);
	bpf_map_delete_elem(&calls, &id);
	if (!h)
		return 0;
	slot = log2_slot(d / 1000);
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

	if (bpf_map_update_elem(&calls, &id, &c, BPF_ANY))
		count_drop(GP_LDROP_PENDING);
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

	if (bpf_map_update_elem(&calls, &id, &c, BPF_ANY))
		count_drop(GP_LDROP_PENDING);
	return 0;
}

/* cuModuleUnload(CUmodule) and cuLibraryUnload(CUlibrary) */
static __always_inline int unload_enter(struct pt_regs *ctx)
{
	__u64 owner = PT_REGS_PARM1(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	struct call c = { .api = (__u32)bpf_get_attach_cookie(ctx), .owner = owner };

	if (bpf_map_update_elem(&calls, &id, &c, BPF_ANY))
		count_drop(GP_LDROP_PENDING);
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
		ok._pad = 0;
		ok.handle = c->owner;
		bpf_map_update_elem(&unloaded, &ok, &one, BPF_ANY);
	}
	bpf_map_delete_elem(&calls, &id);
	return 0;
}

static __always_inline int name_leave(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), handle = 0;
	__u32 tgid = id >> 32, rc = (__u32)PT_REGS_RC(ctx);
	struct call *c = bpf_map_lookup_elem(&calls, &id);
	struct handle_key hk = { .pid = tgid }, ok = { .pid = tgid };
	struct known_val kv = {}, *kp;
	struct gp_name_event *e;

	if (!c) {
		count_drop(GP_LDROP_NORETURN);
		return 0;
	}
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
	gp_leader_comm(e->comm);
	if (bpf_probe_read_user_str(e->name, sizeof(e->name), (void *)c->arg) < 0)
		e->name[0] = '\0';
	bpf_ringbuf_submit(e, 0);
	/* a module handle value may be reused after an unload: this one is alive */
	ok.handle = c->owner;
	bpf_map_delete_elem(&unloaded, &ok);
	bpf_map_update_elem(&known, &hk, &kv, BPF_ANY);
	bpf_map_delete_elem(&sampled, &hk);
out:
	bpf_map_delete_elem(&calls, &id);
	return 0;
}

/* One entry and one return program for every launch-side entry point, dispatching on the
 * attach cookie: one uprobe_multi link each per library. */
SEC("uprobe")
int launch_enter(struct pt_regs *ctx)
{
	switch ((__u32)bpf_get_attach_cookie(ctx)) {
	case GP_API_cuLaunchKernel:
	case GP_API_cuLaunchKernel_ptsz:
		return launch_kernel(ctx);
	case GP_API_cuLaunchKernelEx:
	case GP_API_cuLaunchKernelEx_ptsz:
		return launch_ex(ctx);
	case GP_API_cuLaunchCooperativeKernel:
	case GP_API_cuLaunchCooperativeKernel_ptsz:
		return launch_coop(ctx);
	case GP_API_cuGraphLaunch:
	case GP_API_cuGraphLaunch_ptsz:
		return launch_graph(ctx);
	case GP_API_cuModuleGetFunction:
	case GP_API_cuLibraryGetKernel:
		return name_enter(ctx);
	case GP_API_cuKernelGetFunction:
		return alias_enter(ctx);
	case GP_API_cuModuleUnload:
	case GP_API_cuLibraryUnload:
		return unload_enter(ctx);
	default:
		return sync_enter(ctx);
	}
}

SEC("uretprobe")
int launch_leave(struct pt_regs *ctx)
{
	switch ((__u32)bpf_get_attach_cookie(ctx)) {
	case GP_API_cuModuleGetFunction:
	case GP_API_cuLibraryGetKernel:
	case GP_API_cuKernelGetFunction:
		return name_leave(ctx);
	case GP_API_cuModuleUnload:
	case GP_API_cuLibraryUnload:
		return unload_leave(ctx);
	default:
		return timed_leave(ctx);
	}
}

SEC("tp/sched/sched_process_exit")
int launch_proc_exit(struct trace_event_raw_sched_process_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	/* A thread that dies inside a call never returns: forget its in-flight record. */
	bpf_map_delete_elem(&calls, &id);
	if (!gp_report_exit(ctx, id, &procs, &names))
		count_drop(GP_LDROP_RINGBUF);
	return 0;
}
