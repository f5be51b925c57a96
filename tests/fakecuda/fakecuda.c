/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakecuda.c - a stand-in CUDA driver (libcuda.so.1) for testing gpuprobe
 * on machines without a GPU.
 *
 * What matters for a tracer, and so what this file is careful about:
 *  - every API name is its own exported function with cuda.h's signature,
 *    and exported functions never call each other (only static helpers),
 *    so a uprobe on one symbol fires exactly once per call of that symbol;
 *  - return codes, handle values and argument validation behave like the
 *    real driver for the cases the tests exercise, so "failed calls must
 *    not count" can be tested;
 *  - device addresses are fake, never reused, and kept in a registry, so
 *    copies can be range-checked and leaks computed by construction;
 *  - copies and launches take simulated time (clock_nanosleep, never a busy
 *    loop) so latency histograms have known shapes.
 *
 *  - kernel handles carry their name where the real driver's do (see
 *    struct CUfunc_st), so gpuprobe can name handles made before it attached;
 *  - stream capture records launches into graphs instead of running them,
 *    and graph launches run each kernel node through the launch path;
 *  - several devices with unified addressing and peer copies whose
 *    completion time is known (and, like the real driver's, later than the
 *    call's return when FAKECUDA_D2D_ASYNC=1);
 *  - it counts what really ran per kernel name and per copy direction
 *    (fakecuda_ext.h), so workloads can check their own ground truth.
 *
 * Checked against driver 580: tests/gpu/standins_probe.c runs the edge cases
 * modelled here on a real driver and prints its codes beside the stand-in's
 * (tests/gpu/check_standins.sh on the GPU machine).  The H200 run (driver
 * 580.159.04) found 5 differences; the stand-in now returns driver 580's code
 * on every line of that run: 0 differences.  fakecuda_smoke runs the probe on
 * the stand-in; the probe's lines added since hold the stand-in's model until
 * the next GPU run.
 *
 * Environment (read once, by the first successful cuInit):
 *   FAKECUDA_DEVICES    number of devices (default 2, 0 = no device, at most 8)
 *   FAKECUDA_INIT_MS    milliseconds the first cuInit takes (default 0; a GPU
 *                       driver's takes 0.1 s or more: it loads and opens the devices)
 *   FAKECUDA_MEM_LIMIT  bytes per device (default 80 GiB; K/M/G/T suffix ok)
 *   FAKECUDA_BW         copy bandwidth in bytes/s (default 4e9): host<->device
 *                       and within one device
 *   FAKECUDA_PEER_GBPS  bandwidth of copies between two devices, GB/s (1e9
 *                       bytes/s); default 20 with FAKECUDA_D2D_ASYNC=1, else
 *                       FAKECUDA_BW
 *   FAKECUDA_D2D_ASYNC  1: synchronous copies from device to device memory
 *                       (cuMemcpyPeer, cuMemcpyDtoD, cuMemcpy between device
 *                       pointers, 3D peer) return at once and complete
 *                       bytes / rate later, as the real driver's do; 0
 *                       (default, what the older tests expect): they block
 *   FAKECUDA_KERNEL_NS  simulated duration of one launch (default 2000)
 *   FAKECUDA_TEARDOWN_MS  time the process spends in exit (default 100)
 *
 * Deliberate simplifications: device memory has no backing store (copies
 * move no data), CUDA arrays are not supported, memory stays allocated when
 * a context is destroyed, and a thread without a current context falls
 * back to device 0's primary context once cuInit has been called.  Graph
 * nodes run one after another on the launch stream; graphs hold kernel,
 * copy (from captured async copies) and no other nodes.  Copies between
 * two devices share one link per direction; other copies only their
 * stream.  Peer access
 * (cuCtxEnablePeerAccess) is bookkeeping: it does not change copy rates.
 */
#define _GNU_SOURCE
#include "fakecuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINL __attribute__((noinline))

/* Device d owns [DEV_BASE + d * DEV_SPAN, DEV_BASE + (d + 1) * DEV_SPAN). */
#define DEV_BASE 0x7e0000000000ull
#define DEV_SPAN 0x10000000000ull
#define DEV_ALIGN 256ull
/*
 * Unused gap after each allocation: a pointer one past the end of one
 * allocation must not be the start of the next, or off-by-one copies would
 * pass the range check.
 */
#define DEV_GUARD 256ull
/* FAKECUDA_DEVICES is capped here: GPU nodes have up to 8. */
#define MAX_DEVICES 8
#define CTX_STACK_DEPTH 64
#define HOST_ALIGN 4096
#define MAX_IMAGE_LEN (1u << 20)

/* ------------------------------------------------------------------------ */
/* A sorted array keyed by u64 with tombstones: the registry for everything. */

struct ent {
	uint64_t key;	/* address, handle value or object pointer */
	uint64_t size;	/* bytes covered by the entry (0 for objects) */
	uint64_t aux;	/* kind-specific: mapped handle, ... */
	void *obj;
	int kind;
	int dev;
	bool live;
	bool made;	/* MEM_GRAPH: a launch made the memory, no free since */
};

struct vec {
	struct ent *v;
	size_t len, cap, dead;
	/*
	 * Keys are never reused and entries never overlap, dead or alive
	 * (device address space, handles).  Lets a range lookup stop at the
	 * first entry below the address instead of walking back over dead
	 * ones.
	 */
	bool no_reuse;
};

/* Index of the last entry with key <= k, or -1. */
static long vec_floor(const struct vec *vc, uint64_t k)
{
	long lo = 0, hi = (long)vc->len - 1, ans = -1;

	while (lo <= hi) {
		long mid = lo + (hi - lo) / 2;

		if (vc->v[mid].key <= k) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

static struct ent *vec_find(struct vec *vc, uint64_t k)
{
	long i = vec_floor(vc, k);

	if (i < 0 || vc->v[i].key != k || !vc->v[i].live)
		return NULL;
	return &vc->v[i];
}

/* The live entry whose [key, key + size) holds addr, or NULL. */
static struct ent *vec_containing(struct vec *vc, uint64_t addr)
{
	long i = vec_floor(vc, addr);

	/*
	 * Live entries never overlap, so the nearest live entry at or below
	 * addr is the only candidate.
	 */
	for (; i >= 0; i--) {
		struct ent *e = &vc->v[i];

		if (e->live)
			return addr - e->key < e->size ? e : NULL;
		if (vc->no_reuse)
			return NULL;
	}
	return NULL;
}

/* Returned pointer is valid until the next insert or kill on this vec. */
static struct ent *vec_insert(struct vec *vc, uint64_t k)
{
	long i = vec_floor(vc, k);
	struct ent *e;

	if (i >= 0 && vc->v[i].key == k) {
		/* A dead entry with the same key (reused malloc address). */
		e = &vc->v[i];
		if (!e->live)
			vc->dead--;
	} else {
		if (vc->len == vc->cap) {
			size_t ncap = vc->cap ? vc->cap * 2 : 64;
			struct ent *nv = realloc(vc->v, ncap * sizeof(*nv));

			if (!nv)
				return NULL;
			vc->v = nv;
			vc->cap = ncap;
		}
		i++;
		memmove(&vc->v[i + 1], &vc->v[i],
			(vc->len - (size_t)i) * sizeof(*vc->v));
		vc->len++;
		e = &vc->v[i];
	}
	memset(e, 0, sizeof(*e));
	e->key = k;
	e->live = true;
	return e;
}

/* Invalidates all entry pointers into vc (may compact). */
static void vec_kill(struct vec *vc, struct ent *e)
{
	e->live = false;
	vc->dead++;
	/* Compact when half are tombstones: amortised O(1) per free. */
	if (vc->dead > 64 && vc->dead * 2 > vc->len) {
		size_t j = 0;

		for (size_t i = 0; i < vc->len; i++)
			if (vc->v[i].live)
				vc->v[j++] = vc->v[i];
		vc->len = j;
		vc->dead = 0;
	}
}

/* ------------------------------------------------------------------------ */
/* Driver objects. */

/* A set of graph nodes: capture dependencies, a node's dependencies. */
struct nodeset {
	struct CUgraphNode_st **v;
	size_t n, cap;
};

struct capture;

struct CUstream_st {
	unsigned int flags;
	struct CUctx_st *ctx;
	uint64_t busy_until;	/* CLOCK_MONOTONIC ns when queued work ends */
	struct capture *cap;	/* the capture this stream takes part in */
	struct nodeset tips;	/* what the next captured node depends on */
	CUgraphEdgeData *edges;	/* all-default edge data for GetCaptureInfo */
	size_t nedges;
};

#define MAX_PEERS 64

struct CUctx_st {
	CUdevice dev;
	bool primary;
	bool destroyed;
	int refcnt;
	struct CUstream_st null_stream;	/* the legacy default stream */
	struct CUctx_st *peers[MAX_PEERS];	/* cuCtxEnablePeerAccess */
	int npeers;
};

struct CUevent_st {
	unsigned int flags;
	bool recorded;
	uint64_t t;	/* completion time of the work before the record */
	uint64_t cap_id;	/* recorded on a capturing stream: that capture */
	struct nodeset tips;	/* ... and the capture dependencies it holds */
};

/* Per kernel name: what ran and what was only recorded (fakecuda_ext.h). */
struct kstat {
	char *name;
	uint64_t launched;	/* ran from a launch call */
	uint64_t captured;	/* recorded into a graph by stream capture */
	uint64_t graph;	/* ran as a kernel node of a graph launch */
};

/*
 * Kernel handles are laid out like the real driver's (measured on driver 580,
 * CUDA 13): a CUfunction and a CUkernel both point to a struct whose qword at
 * +8 is a const char * to the kernel's mangled name -- the very pointer
 * cuFuncGetName/cuKernelGetName return -- and whose first qword says what the
 * handle is: 0x0000000100000001 for a function, 0x2 for a kernel, whose +16
 * holds its CUlibrary.  gpuprobe names handles that were created before it
 * attached by learning (and checking) such a path at run time from handles
 * whose names it knows; mimicking the layout lets the tests exercise that
 * without a GPU.  Nothing else of the real structs is copied, and gpuprobe
 * must not rely on more than it can verify.
 */
#define FUNC_TAG 0x0000000100000001ull
#define KERN_TAG 0x2ull

struct CUfunc_st {
	uint64_t tag;	/* +0: FUNC_TAG */
	const char *name;	/* +8: as the real driver's */
	struct CUmod_st *mod;	/* a library's module for functions got from a CUkernel */
	struct CUkern_st *kern;	/* the CUkernel it was got from, or NULL */
	struct kstat *stat;
};

struct CUmod_st {
	size_t n;
	struct CUfunc_st *funcs;
	char *names;	/* one buffer holding all the names (NULL: the library's) */
	struct CUlib_st *lib;	/* the library this is the module of, or NULL */
};

struct CUkern_st {
	uint64_t tag;	/* +0: KERN_TAG */
	const char *name;	/* +8 */
	struct CUlib_st *lib;	/* +16: as the real driver's */
	struct CUfunc_st *func;	/* what cuKernelGetFunction returns: in lib->mod */
	struct kstat *stat;
};

/*
 * A library keeps one module holding a CUfunction per kernel: what
 * cuKernelGetFunction returns and cuFuncGetModule finds the module of.
 * Driver 580 returns CUDA_SUCCESS and a module from cuFuncGetModule on a
 * function got from a CUkernel (tests/gpu/check_standins.sh on the H200); the
 * real driver keeps one such module per context (cuLibraryGetModule), the
 * stand-in one per library.
 */
struct CUlib_st {
	size_t n;
	struct CUkern_st *kerns;
	char *names;
	struct CUmod_st *mod;
};

_Static_assert(offsetof(struct CUfunc_st, name) == 8, "name at +8");
_Static_assert(offsetof(struct CUkern_st, name) == 8, "name at +8");
_Static_assert(offsetof(struct CUkern_st, lib) == 16, "library at +16");

/* What a kernel launch or kernel node runs. */
struct kparams {
	void *fn;	/* CUfunction or CUkernel (CUDA 12+ takes either) */
	unsigned int grid[3], block[3], smem;
	uint64_t ns;	/* simulated duration */
};

/* What a copy node moves; src/dst are device ordinals, -1 for host memory. */
struct cparams {
	uint64_t bytes;
	int src, dst;
};

struct CUgraphNode_st {
	struct CUgraph_st *graph;
	CUgraphNodeType type;
	CUdeviceptr mem_dptr;	/* MEM_ALLOC / MEM_FREE nodes: the allocation */
	struct kparams k;
	struct cparams c;
	struct nodeset deps;
	size_t index;	/* position in graph->nodes */
	unsigned int mark;	/* scratch for graph walks */
};

/* Nodes in insertion order: dependencies always come first, so that order is topological. */
struct CUgraph_st {
	struct nodeset nodes;
	int capturing;	/* captures recording into this graph */
};

/* An instantiated node: a copy, keyed by the graph node it came from. */
struct xnode {
	CUdeviceptr mem_dptr;	/* MEM_ALLOC / MEM_FREE nodes */
	uint64_t key;	/* node of the instantiated graph */
	uint64_t key2;	/* node of the graph of the last cuGraphExecUpdate */
	CUgraphNodeType type;
	struct kparams k;
	struct cparams c;
	size_t *deps;	/* indices of earlier xnodes */
	size_t ndeps;
};

struct CUgraphExec_st {
	struct xnode *nodes;
	size_t n;
	uint64_t launches;
};

/* One stream-capture sequence, from cuStreamBeginCapture to cuStreamEndCapture. */
struct capture {
	uint64_t id;
	struct CUgraph_st *graph;
	bool own_graph;	/* made by BeginCapture (not ...ToGraph): freed on failure */
	bool invalid;
	CUstreamCaptureMode mode;
	pthread_t thread;
	struct CUstream_st *origin;
	struct CUstream_st **streams;	/* origin and the streams forked into it */
	size_t nstreams, cap;
};

enum obj_kind {
	OBJ_CTX = 1, OBJ_STREAM, OBJ_EVENT, OBJ_MODULE, OBJ_FUNC, OBJ_LIB,
	OBJ_KERNEL, OBJ_GRAPH, OBJ_GEXEC, OBJ_GNODE,
};

enum mem_kind {
	MEM_ALLOC = 1, MEM_PITCH, MEM_MANAGED, MEM_ASYNC, MEM_POOL,
	MEM_RESERVE,	/* VA reservation: no memory, not copyable by itself */
	MEM_HOST, MEM_HOSTREG, MEM_HANDLE, MEM_MAPPING,
	MEM_GRAPH,	/* a graph's allocation node: its address is fixed at the node */
};

struct devstate {
	uint64_t next;	/* bump pointer: addresses are never reused */
	uint64_t used;	/* outstanding bytes charged against mem_limit */
	struct vec mem;	/* allocations and VA reservations */
	struct vec maps;	/* cuMemMap'ed ranges (inside reservations) */
	struct CUctx_st *primary;
};

/* Copies per (source, destination): index 0 is host memory, d + 1 device d. */
struct copytally {
	uint64_t copies, bytes, graph_copies, graph_bytes;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * FAKECUDA_HOLD_FD=N and FAKECUDA_HOLD=NAME[,NAME...] (cuMemAlloc_v2, cuMemcpyHtoD_v2,
 * cuCtxSynchronize, cuLaunchKernel): each call so named first reads a byte from descriptor
 * N, outside the driver's lock, so a workload can keep thousands of threads inside a call,
 * as a real driver does while memory is contended or a GPU busy, until it closes the pipe's
 * other end (tests/apps/call_storm). Read once, at the first such call.
 */
static pthread_once_t hold_once = PTHREAD_ONCE_INIT;
static int hold_fd = -1;
static char hold_names[256];

static void hold_init(void)
{
	const char *fd = getenv("FAKECUDA_HOLD_FD"), *names = getenv("FAKECUDA_HOLD");

	if (fd && *fd && names && strlen(names) < sizeof(hold_names) - 2) {
		hold_fd = atoi(fd);
		snprintf(hold_names, sizeof(hold_names), ",%s,", names);
	}
}

static void hold_call(const char *name)
{
	char key[64], c;

	pthread_once(&hold_once, hold_init);
	if (hold_fd < 0)
		return;
	snprintf(key, sizeof(key), ",%s,", name);
	if (strstr(hold_names, key))
		while (read(hold_fd, &c, 1) < 0 && errno == EINTR)
			;
}

static struct {
	bool inited;
	bool forked;	/* this is a child forked after cuInit: CUDA is unusable */
	int ndev;
	uint64_t mem_limit;
	double bw;	/* host<->device and same-device copies, bytes/s */
	double peer_bw;	/* copies between two devices, bytes/s */
	bool d2d_async;	/* device-to-device copies return before completion */
	uint64_t kernel_ns;
	uint64_t next_handle;
	struct devstate *dev;
	struct vec objs;	/* live handles, for validation without deref */
	struct vec host;	/* cuMemAllocHost/cuMemHostAlloc blocks */
	struct vec hostreg;	/* cuMemHostRegister ranges */
	struct vec handles;	/* cuMemCreate handles */
	struct kstat **kstats;	/* one per kernel name ever loaded */
	size_t nkstats, capkstats;
	struct copytally copies[MAX_DEVICES + 1][MAX_DEVICES + 1];
	uint64_t link_busy[MAX_DEVICES][MAX_DEVICES];	/* peer link src->dst busy until */
	uint64_t graph_launches;
	struct capture **caps;	/* captures under way */
	size_t ncaps, capcaps;
	uint64_t next_capture_id;
} g;

static _Thread_local struct CUctx_st *t_stack[CTX_STACK_DEPTH];
static _Thread_local int t_depth;
/* This thread's per-thread default stream (_ptsz/_ptds, CU_STREAM_PER_THREAD). */
static _Thread_local struct CUstream_st t_pts;
/* cuThreadExchangeStreamCaptureMode: this thread's view of unsafe calls. */
static _Thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
/* fakecuda_set_next_kernel_ns: the duration of this thread's next launch. */
static _Thread_local uint64_t t_next_kernel_ns;

#define LOCK() pthread_mutex_lock(&g_lock)
#define UNLOCK() pthread_mutex_unlock(&g_lock)

/* ------------------------------------------------------------------------ */
/* Time. */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps (never spins) until CLOCK_MONOTONIC reaches t; call unlocked. */
static void sleep_until(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / 1000000000ull),
		.tv_nsec = (long)(t % 1000000000ull),
	};

	if (t <= now_ns())
		return;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Queues ns of work on st; returns when that work will be done. */
static uint64_t charge(struct CUstream_st *st, uint64_t ns)
{
	st->busy_until = max_u64(now_ns(), st->busy_until) + ns;
	return st->busy_until;
}

/* ------------------------------------------------------------------------ */
/* Configuration. */

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return def;
	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	case 't': case 'T': v <<= 40; break;
	default: break;
	}
	return v;
}

static double env_double(const char *name, double def)
{
	const char *s = getenv(name);
	char *end;
	double v;

	if (!s || !*s)
		return def;
	v = strtod(s, &end);
	return (end == s || !(v > 0)) ? def : v;
}

/* ------------------------------------------------------------------------ */
/* Objects and contexts (all called with g_lock held). */

static bool obj_ok(const void *p, int kind)
{
	struct ent *e;

	if (!p)
		return false;
	e = vec_find(&g.objs, (uint64_t)(uintptr_t)p);
	return e && e->kind == kind;
}

static int obj_kind(const void *p)
{
	struct ent *e = p ? vec_find(&g.objs, (uint64_t)(uintptr_t)p) : NULL;

	return e ? e->kind : 0;
}

static bool obj_add(void *p, int kind)
{
	struct ent *e = vec_insert(&g.objs, (uint64_t)(uintptr_t)p);

	if (!e)
		return false;
	e->kind = kind;
	e->obj = p;
	return true;
}

static void obj_del(const void *p)
{
	struct ent *e = vec_find(&g.objs, (uint64_t)(uintptr_t)p);

	if (e)
		vec_kill(&g.objs, e);
}

static struct CUctx_st *ctx_new(CUdevice dev, bool primary)
{
	struct CUctx_st *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->dev = dev;
	c->primary = primary;
	c->null_stream.ctx = c;
	if (!obj_add(c, OBJ_CTX)) {
		free(c);
		return NULL;
	}
	return c;
}

static struct CUctx_st *primary_of(CUdevice dev)
{
	struct devstate *d = &g.dev[dev];

	if (!d->primary)
		d->primary = ctx_new(dev, true);
	return d->primary;
}

static bool dev_ok(CUdevice dev)
{
	return dev >= 0 && dev < g.ndev;
}

/*
 * The context an API call works in.  Real CUDA fails with
 * CUDA_ERROR_INVALID_CONTEXT when a thread has none; tests are simpler if
 * any thread may call in once cuInit ran, so fall back to device 0.
 */
static CUresult cur_ctx(struct CUctx_st **out)
{
	struct CUctx_st *c;

	if (!g.inited)
		return CUDA_ERROR_NOT_INITIALIZED;
	c = t_depth ? t_stack[t_depth - 1] : NULL;
	if (!c)
		c = primary_of(0);
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Context structs are never freed, so a stale pointer is readable. */
	if (c->destroyed)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = c;
	return CUDA_SUCCESS;
}

static CUresult stream_of(struct CUctx_st *ctx, CUstream s, bool ptsz,
			  struct CUstream_st **out)
{
	if (s == NULL)
		*out = ptsz ? &t_pts : &ctx->null_stream;
	else if (s == CU_STREAM_LEGACY)
		*out = &ctx->null_stream;
	else if (s == CU_STREAM_PER_THREAD)
		*out = &t_pts;
	else if (obj_ok(s, OBJ_STREAM))
		*out = s;
	else
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

/* When all work queued in ctx (and this thread's default stream) ends. */
static uint64_t ctx_busy_until(struct CUctx_st *ctx)
{
	uint64_t t = max_u64(ctx->null_stream.busy_until, t_pts.busy_until);

	for (size_t i = 0; i < g.objs.len; i++) {
		struct ent *e = &g.objs.v[i];
		struct CUstream_st *st = e->obj;

		if (e->live && e->kind == OBJ_STREAM && st->ctx == ctx)
			t = max_u64(t, st->busy_until);
	}
	return t;
}

/* ------------------------------------------------------------------------ */
/* Kernel names and what ran under them (called with g_lock held). */

/* The counters of a kernel name, made on first use; NULL when out of memory. */
static struct kstat *kstat_of(const char *name)
{
	struct kstat *k;

	for (size_t i = 0; i < g.nkstats; i++)
		if (strcmp(g.kstats[i]->name, name) == 0)
			return g.kstats[i];
	if (g.nkstats == g.capkstats) {
		size_t ncap = g.capkstats ? 2 * g.capkstats : 64;
		struct kstat **nv = realloc(g.kstats, ncap * sizeof(*nv));

		if (!nv)
			return NULL;
		g.kstats = nv;
		g.capkstats = ncap;
	}
	k = calloc(1, sizeof(*k));
	if (!k || !(k->name = strdup(name))) {
		free(k);
		return NULL;
	}
	g.kstats[g.nkstats++] = k;
	return k;
}

/* The counters behind a launchable handle (CUfunction or CUkernel), or NULL. */
static struct kstat *handle_stat(void *fn)
{
	switch (obj_kind(fn)) {
	case OBJ_FUNC:
		return ((struct CUfunc_st *)fn)->stat;
	case OBJ_KERNEL:
		return ((struct CUkern_st *)fn)->stat;
	default:
		return NULL;
	}
}

static bool handle_ok(const void *fn)
{
	int kind = obj_kind(fn);

	return kind == OBJ_FUNC || kind == OBJ_KERNEL;
}

/* ------------------------------------------------------------------------ */
/* Node sets (called with g_lock held). */

static bool set_has(const struct nodeset *s, const struct CUgraphNode_st *n)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] == n)
			return true;
	return false;
}

static bool set_add(struct nodeset *s, struct CUgraphNode_st *n)
{
	if (set_has(s, n))
		return true;
	if (s->n == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 4;
		struct CUgraphNode_st **nv = realloc(s->v, ncap * sizeof(*nv));

		if (!nv)
			return false;
		s->v = nv;
		s->cap = ncap;
	}
	s->v[s->n++] = n;
	return true;
}

static bool set_union(struct nodeset *dst, const struct nodeset *src)
{
	for (size_t i = 0; i < src->n; i++)
		if (!set_add(dst, src->v[i]))
			return false;
	return true;
}

static bool set_copy(struct nodeset *dst, const struct nodeset *src)
{
	dst->n = 0;
	return set_union(dst, src);
}

static void set_free(struct nodeset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------------------------ */
/* Graphs and stream capture (called with g_lock held). */

static void kparams_init(struct kparams *k, void *fn, unsigned int gx,
			 unsigned int gy, unsigned int gz, unsigned int bx,
			 unsigned int by, unsigned int bz, unsigned int smem)
{
	*k = (struct kparams){ .fn = fn, .grid = { gx, gy, gz },
			       .block = { bx, by, bz }, .smem = smem,
			       .ns = g.kernel_ns };
}

/* What cuLaunchKernel checks of a launch, for launches and kernel nodes alike. */
static CUresult kparams_check(const struct kparams *k, void **params,
			      void **extra)
{
	if (!handle_ok(k->fn))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!k->grid[0] || !k->grid[1] || !k->grid[2] || !k->block[0] ||
	    !k->block[1] || !k->block[2] ||
	    (uint64_t)k->block[0] * k->block[1] * k->block[2] > 1024 ||
	    (params && extra))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* A new node of gr depending on deps (nodes of gr); NULL when out of memory. */
static struct CUgraphNode_st *node_new(struct CUgraph_st *gr,
				       CUgraphNodeType type,
				       const struct nodeset *deps)
{
	struct CUgraphNode_st *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->graph = gr;
	n->type = type;
	n->index = gr->nodes.n;
	if ((deps && !set_copy(&n->deps, deps)) || !obj_add(n, OBJ_GNODE)) {
		set_free(&n->deps);
		free(n);
		return NULL;
	}
	if (!set_add(&gr->nodes, n)) {
		obj_del(n);
		set_free(&n->deps);
		free(n);
		return NULL;
	}
	return n;
}

static struct CUgraph_st *graph_new(void)
{
	struct CUgraph_st *gr = calloc(1, sizeof(*gr));

	if (gr && !obj_add(gr, OBJ_GRAPH)) {
		free(gr);
		gr = NULL;
	}
	return gr;
}

static void graph_free(struct CUgraph_st *gr)
{
	for (size_t i = 0; i < gr->nodes.n; i++) {
		struct CUgraphNode_st *n = gr->nodes.v[i];

		obj_del(n);
		set_free(&n->deps);
		free(n);
	}
	set_free(&gr->nodes);
	obj_del(gr);
	free(gr);
}

/* Checks that deps[0..n) are distinct nodes of gr and collects them. */
static CUresult deps_of(struct CUgraph_st *gr, const CUgraphNode *deps,
			size_t n, struct nodeset *out)
{
	if (n && !deps)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		if (!obj_ok(deps[i], OBJ_GNODE) || deps[i]->graph != gr ||
		    set_has(out, deps[i]))
			return CUDA_ERROR_INVALID_VALUE;
		if (!set_add(out, deps[i]))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

static struct capture *capture_by_id(uint64_t id)
{
	for (size_t i = 0; id && i < g.ncaps; i++)
		if (g.caps[i]->id == id)
			return g.caps[i];
	return NULL;
}

static bool capture_add_stream(struct capture *c, struct CUstream_st *st)
{
	if (c->nstreams == c->cap) {
		size_t ncap = c->cap ? 2 * c->cap : 4;
		struct CUstream_st **nv = realloc(c->streams, ncap * sizeof(*nv));

		if (!nv)
			return false;
		c->streams = nv;
		c->cap = ncap;
	}
	c->streams[c->nstreams++] = st;
	st->cap = c;
	return true;
}

/* Ends a capture: its streams stop capturing; the graph stays (or not). */
static void capture_end(struct capture *c, bool free_graph)
{
	for (size_t i = 0; i < c->nstreams; i++) {
		c->streams[i]->cap = NULL;
		c->streams[i]->tips.n = 0;
	}
	c->graph->capturing--;
	if (free_graph && c->own_graph)
		graph_free(c->graph);
	for (size_t i = 0; i < g.ncaps; i++) {
		if (g.caps[i] == c) {
			g.caps[i] = g.caps[--g.ncaps];
			break;
		}
	}
	free(c->streams);
	free(c);
}

/* A stream leaves its capture (cuStreamDestroy while capturing). */
static void capture_drop_stream(struct CUstream_st *st)
{
	struct capture *c = st->cap;

	if (c->origin == st) {
		capture_end(c, true);
		return;
	}
	c->invalid = true;
	for (size_t i = 0; i < c->nstreams; i++) {
		if (c->streams[i] == st) {
			c->streams[i] = c->streams[--c->nstreams];
			break;
		}
	}
	st->cap = NULL;
	st->tips.n = 0;
}

/*
 * Records a node on a capturing stream: it depends on the stream's current
 * dependencies and becomes them.  A capture that was invalidated records
 * nothing more, as CUDA's.
 */
static CUresult capture_node(struct CUstream_st *st, CUgraphNodeType type,
			     const struct kparams *k, const struct cparams *cp,
			     struct CUgraphNode_st **out)
{
	struct CUgraphNode_st *n;

	if (st->cap->invalid)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	n = node_new(st->cap->graph, type, &st->tips);
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (k)
		n->k = *k;
	if (cp)
		n->c = *cp;
	st->tips.n = 0;
	if (!set_add(&st->tips, n))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (out)
		*out = n;
	return CUDA_SUCCESS;
}

/*
 * CUDA's rule for "potentially unsafe" calls (allocations, synchronous
 * copies, context synchronization) during stream capture: a thread whose
 * capture mode (cuThreadExchangeStreamCaptureMode) is not relaxed may not make
 * them while a capture it began, not in relaxed mode, is under way; in global
 * mode, nor while another thread's global-mode capture is.  The call fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the capture is invalidated.  This
 * is why PyTorch exchanges the mode around such calls.
 */
static CUresult unsafe_call_check(void)
{
	pthread_t self = pthread_self();
	CUresult rc = CUDA_SUCCESS;

	if (t_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_SUCCESS;
	for (size_t i = 0; i < g.ncaps; i++) {
		struct capture *c = g.caps[i];
		bool mine = pthread_equal(c->thread, self);

		if ((mine && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
		    (!mine && t_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
		     c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
			c->invalid = true;
			rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	}
	return rc;
}

/*
 * Work on the legacy default stream waits for every blocking stream of its
 * context, so it cannot be ordered after a stream that is capturing (global or
 * thread-local mode): CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, capture invalidated.
 */
static CUresult legacy_use_check(struct CUctx_st *ctx, struct CUstream_st *st)
{
	CUresult rc = CUDA_SUCCESS;

	if (st != &ctx->null_stream)
		return CUDA_SUCCESS;
	for (size_t i = 0; i < g.ncaps; i++) {
		struct capture *c = g.caps[i];

		if (c->mode == CU_STREAM_CAPTURE_MODE_RELAXED)
			continue;
		for (size_t j = 0; j < c->nstreams; j++) {
			struct CUstream_st *o = c->streams[j];

			if (o->ctx == ctx && !(o->flags & CU_STREAM_NON_BLOCKING)) {
				c->invalid = true;
				rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
				break;
			}
		}
	}
	return rc;
}

/* Synchronizing a capturing stream is not allowed and ends its capture's validity. */
static CUresult sync_capture_check(struct CUstream_st *st)
{
	if (!st->cap)
		return CUDA_SUCCESS;
	st->cap->invalid = true;
	return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* An event recorded inside a capture still under way cannot be waited for by the host. */
static bool event_captured(const struct CUevent_st *ev)
{
	return ev->cap_id && capture_by_id(ev->cap_id);
}

/*
 * cuEventSynchronize and cuEventQuery of an event recorded in a capture under
 * way: CUDA_ERROR_CAPTURED_EVENT, and the capture is invalidated (CUDA's
 * programming guide: synchronizing or querying a captured event is invalid).
 * Once it is, driver 580 returns CUDA_ERROR_INVALID_VALUE here
 * (tests/gpu/check_standins.sh on the H200: cuEventQuery after
 * cuEventSynchronize of the same captured event), and the capture's
 * cuStreamEndCapture CUDA_ERROR_STREAM_CAPTURE_INVALIDATED although a fork
 * was unjoined.  That the cuEventSynchronize is what invalidated it is our
 * reading of that run: real drivers return CUDA_ERROR_STREAM_CAPTURE_UNJOINED
 * for an unjoined fork alone (NVIDIA/warp#1469) and CUDA_ERROR_CAPTURED_EVENT
 * for a query in a valid capture (pytorch/pytorch#193982);
 * standins_probe's probe_capture_events checks it on the next GPU run.
 */
static CUresult captured_event_check(const struct CUevent_st *ev)
{
	struct capture *c = capture_by_id(ev->cap_id);

	if (!c)
		return CUDA_SUCCESS;
	if (c->invalid)
		return CUDA_ERROR_INVALID_VALUE;
	c->invalid = true;
	return CUDA_ERROR_CAPTURED_EVENT;
}

/* ------------------------------------------------------------------------ */
/* The one path that runs work: launches, copies and graph nodes alike. */

static uint64_t take_kernel_ns(void)
{
	uint64_t ns = t_next_kernel_ns ? t_next_kernel_ns : g.kernel_ns;

	t_next_kernel_ns = 0;
	return ns;
}

static void kernel_run(struct CUstream_st *st, const struct kparams *k,
		       bool from_graph)
{
	struct kstat *ks = handle_stat(k->fn);

	charge(st, k->ns);
	if (ks) {
		if (from_graph)
			ks->graph++;
		else
			ks->launched++;
	}
}

/* Bandwidth of a copy: between two devices the peer rate, else FAKECUDA_BW. */
static uint64_t copy_ns_between(uint64_t bytes, int src, int dst)
{
	double bw = (src >= 0 && dst >= 0 && src != dst) ? g.peer_bw : g.bw;

	return (uint64_t)((double)bytes * 1e9 / bw);
}

static void copy_tally(const struct cparams *c, bool from_graph)
{
	struct copytally *t = &g.copies[c->src + 1][c->dst + 1];

	if (from_graph) {
		t->graph_copies++;
		t->graph_bytes += c->bytes;
	} else {
		t->copies++;
		t->bytes += c->bytes;
	}
}

/*
 * Queues a copy on st; returns when it will be done.  Copies between two
 * devices also wait for the link from src to dst: copies on several streams
 * share it, as they share NVLink or PCIe, instead of adding up to more than
 * its rate.
 */
static uint64_t copy_run(struct CUstream_st *st, const struct cparams *c,
			 bool from_graph)
{
	uint64_t ns = copy_ns_between(c->bytes, c->src, c->dst), *link;

	copy_tally(c, from_graph);
	if (c->src < 0 || c->dst < 0 || c->src == c->dst)
		return charge(st, ns);
	link = &g.link_busy[c->src][c->dst];
	st->busy_until = max_u64(max_u64(now_ns(), st->busy_until), *link) + ns;
	*link = st->busy_until;
	return st->busy_until;
}

/* ------------------------------------------------------------------------ */
/* Device memory (called with g_lock held). */

/* Device whose address window holds addr, or -1. */
static int dev_of_addr(uint64_t addr)
{
	uint64_t d;

	if (addr < DEV_BASE)
		return -1;
	d = (addr - DEV_BASE) / DEV_SPAN;
	return d < (uint64_t)g.ndev ? (int)d : -1;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* Fresh address range; 0 when the device window is used up. */
static uint64_t dev_va(int dev, uint64_t bytes, uint64_t align)
{
	struct devstate *d = &g.dev[dev];
	uint64_t end = DEV_BASE + (uint64_t)(dev + 1) * DEV_SPAN;
	uint64_t addr = round_up(d->next, align);

	if (bytes > DEV_SPAN || addr >= end || bytes > end - addr || round_up(bytes, DEV_ALIGN) + DEV_GUARD >
	    end - addr)
		return 0;
	d->next = addr + round_up(bytes, DEV_ALIGN) + DEV_GUARD;
	return addr;
}

enum range_res { RANGE_OK, RANGE_NONE, RANGE_OVERRUN };

/*
 * Is [addr, addr + n) inside one live allocation or one mapping?  *dev gets
 * the owning device.  RANGE_OVERRUN: addr is device memory but the range
 * runs past its end.
 */
static enum range_res dev_range(uint64_t addr, uint64_t n, int *dev)
{
	int d = dev_of_addr(addr);
	struct ent *e;

	if (d < 0)
		return RANGE_NONE;
	e = vec_containing(&g.dev[d].mem, addr);
	if (!e || e->kind == MEM_RESERVE)
		e = vec_containing(&g.dev[d].maps, addr);
	if (!e)
		return RANGE_NONE;
	*dev = d;
	return n <= e->size - (addr - e->key) ? RANGE_OK : RANGE_OVERRUN;
}

/*
 * Was addr ever handed out as device address space?  Such an address that
 * is no longer (or never was) inside a live allocation is a stale device
 * pointer, not a host pointer, for unified copies.
 */
static bool dev_window_used(uint64_t addr)
{
	int d = dev_of_addr(addr);

	return d >= 0 && addr >= DEV_BASE + (uint64_t)d * DEV_SPAN &&
	       addr < g.dev[d].next;
}

static CUresult mem_charge(int dev, uint64_t bytes)
{
	struct devstate *d = &g.dev[dev];

	if (bytes > g.mem_limit || d->used > g.mem_limit - bytes)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->used += bytes;
	return CUDA_SUCCESS;
}

/* Registers a new device allocation of bytes (already driver-sized). */
static CUresult dev_alloc_locked(struct CUctx_st *ctx, CUdeviceptr *dptr,
				 uint64_t bytes, int kind)
{
	int dev = ctx->dev;
	uint64_t addr;
	struct ent *e;
	CUresult rc;

	rc = mem_charge(dev, bytes);
	if (rc)
		return rc;
	addr = dev_va(dev, bytes, DEV_ALIGN);
	e = addr ? vec_insert(&g.dev[dev].mem, addr) : NULL;
	if (!e) {
		g.dev[dev].used -= bytes;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	e->size = bytes;
	e->kind = kind;
	e->dev = dev;
	e->aux = (uint64_t)(uintptr_t)ctx;	/* for CU_POINTER_ATTRIBUTE_CONTEXT */
	*dptr = addr;
	return CUDA_SUCCESS;
}

/* The entry of a graph allocation node's memory, or NULL. */
static struct ent *graph_mem(CUdeviceptr dptr)
{
	int d = dev_of_addr(dptr);
	struct ent *e = d >= 0 ? vec_find(&g.dev[d].mem, dptr) : NULL;

	return e && e->kind == MEM_GRAPH ? e : NULL;
}

static NOINL CUresult do_dev_alloc(CUdeviceptr *dptr, size_t bytes, int kind,
				   bool has_stream, CUstream s, bool ptsz)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!dptr || bytes == 0) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (has_stream)	/* stream-ordered allocations are not "unsafe" in a capture */
		rc = stream_of(ctx, s, ptsz, &st);
	else
		rc = unsafe_call_check();
	if (rc)
		goto out;
	rc = dev_alloc_locked(ctx, dptr, bytes, kind);
out:
	UNLOCK();
	return rc;
}

/* Frees a device allocation of any kind (real CUDA allows mixing). */
static NOINL CUresult do_dev_free(CUdeviceptr dptr, bool has_stream,
				  CUstream s, bool ptsz)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	struct ent *e;
	CUresult rc;
	int d;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (has_stream)
		rc = stream_of(ctx, s, ptsz, &st);
	else
		rc = unsafe_call_check();
	if (rc)
		goto out;
	if (dptr == 0)	/* like free(NULL) */
		goto out;
	d = dev_of_addr(dptr);
	e = d >= 0 ? vec_find(&g.dev[d].mem, dptr) : NULL;
	if (!e || e->kind == MEM_RESERVE || (e->kind == MEM_GRAPH && !e->made)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (e->kind == MEM_GRAPH) {	/* the graph's address stays: its next launch makes it again */
		e->made = false;
		goto out;
	}
	g.dev[d].used -= e->size;
	vec_kill(&g.dev[d].mem, e);
out:
	UNLOCK();
	return rc;
}

static NOINL CUresult do_host_alloc(void **pp, size_t bytes, unsigned int flags)
{
	struct CUctx_st *ctx;
	struct ent *e;
	void *p = NULL;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!pp || bytes == 0 ||
	    (flags & ~(unsigned int)(CU_MEMHOSTALLOC_PORTABLE |
				     CU_MEMHOSTALLOC_DEVICEMAP |
				     CU_MEMHOSTALLOC_WRITECOMBINED))) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = unsafe_call_check();
	if (rc)
		goto out;
	if (posix_memalign(&p, HOST_ALIGN, bytes)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	e = vec_insert(&g.host, (uint64_t)(uintptr_t)p);
	if (!e) {
		free(p);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	e->size = bytes;
	e->kind = MEM_HOST;
	e->obj = p;
	e->aux = (uint64_t)(uintptr_t)ctx;
	*pp = p;
out:
	UNLOCK();
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Copies. */

enum side_kind { SIDE_HOST, SIDE_DEV, SIDE_UNIFIED };
enum copy_mode { COPY_SYNC, COPY_SYNC_PTDS, COPY_ASYNC, COPY_ASYNC_PTSZ };

/*
 * One side of a copy: p is the host pointer or device address, extent the
 * bytes touched from p.  For SIDE_UNIFIED the address is device memory if
 * it lies in a live allocation, an error if it lies in device address space
 * handed out earlier, and a host pointer otherwise.
 */
static CUresult side_check(int kind, uint64_t p, uint64_t extent, int *dev)
{
	enum range_res r;

	*dev = -1;
	if (p == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (kind == SIDE_HOST)
		return CUDA_SUCCESS;
	r = dev_range(p, extent, dev);
	if (r == RANGE_OK)
		return CUDA_SUCCESS;
	*dev = -1;
	if (kind == SIDE_UNIFIED && r == RANGE_NONE && !dev_window_used(p))
		return CUDA_SUCCESS;
	return CUDA_ERROR_INVALID_VALUE;
}

/*
 * Common tail of every copy, entered locked after validation; unlocks.
 * Synchronous copies use the legacy (or per-thread) default stream and sleep
 * until the copy and the work queued before it are done -- except copies
 * between device memory when FAKECUDA_D2D_ASYNC=1, which return at once like
 * the real driver's (cudaMemcpyPeer, device-to-device cudaMemcpy): their end is
 * known only to a later synchronization.  An asynchronous copy on a capturing
 * stream becomes a copy node of the capture's graph and moves nothing.
 */
static CUresult copy_finish(struct CUctx_st *ctx, uint64_t bytes, int mode,
			    struct CUstream_st *st, int sdev, int ddev)
{
	struct cparams c = { .bytes = bytes, .src = sdev, .dst = ddev };
	bool sync = mode == COPY_SYNC || mode == COPY_SYNC_PTDS;
	uint64_t done;
	CUresult rc;

	if (sync)
		st = mode == COPY_SYNC ? &ctx->null_stream : &t_pts;
	rc = legacy_use_check(ctx, st);
	if (rc == CUDA_SUCCESS && st->cap)
		rc = sync ? sync_capture_check(st) :
			    capture_node(st, CU_GRAPH_NODE_TYPE_MEMCPY, NULL, &c, NULL);
	if (rc || st->cap) {
		UNLOCK();
		return rc;
	}
	done = copy_run(st, &c, false);
	UNLOCK();
	if (sync && !(g.d2d_async && sdev >= 0 && ddev >= 0))
		sleep_until(done);
	return CUDA_SUCCESS;
}

/* Locks and checks what every copy checks first. */
static CUresult copy_begin(int mode, CUstream s, struct CUctx_st **ctx,
			   struct CUstream_st **st)
{
	CUresult rc;

	LOCK();
	rc = cur_ctx(ctx);
	if (rc == CUDA_SUCCESS && (mode == COPY_ASYNC || mode == COPY_ASYNC_PTSZ))
		rc = stream_of(*ctx, s, mode == COPY_ASYNC_PTSZ, st);
	else if (rc == CUDA_SUCCESS)
		rc = unsafe_call_check();
	if (rc)
		UNLOCK();
	return rc;
}

static NOINL CUresult do_copy(int dkind, uint64_t dst, int skind, uint64_t src,
			      size_t n, int mode, CUstream s)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st = NULL;
	int ddev, sdev;
	CUresult rc;

	rc = copy_begin(mode, s, &ctx, &st);
	if (rc)
		return rc;
	if (n == 0) {
		UNLOCK();
		return CUDA_SUCCESS;
	}
	rc = side_check(dkind, dst, n, &ddev);
	if (rc == CUDA_SUCCESS)
		rc = side_check(skind, src, n, &sdev);
	if (rc) {
		UNLOCK();
		return rc;
	}
	return copy_finish(ctx, n, mode, st, sdev, ddev);
}

static NOINL CUresult do_copy_peer(CUdeviceptr dst, CUcontext dctx,
				   CUdeviceptr src, CUcontext sctx, size_t n,
				   int mode, CUstream s)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st = NULL;
	int ddev = -1, sdev = -1;
	CUresult rc;

	rc = copy_begin(mode, s, &ctx, &st);
	if (rc)
		return rc;
	if (!obj_ok(dctx, OBJ_CTX) || !obj_ok(sctx, OBJ_CTX)) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
	} else if (n != 0) {
		if (dev_range(dst, n, &ddev) != RANGE_OK || ddev != dctx->dev ||
		    dev_range(src, n, &sdev) != RANGE_OK || sdev != sctx->dev)
			rc = CUDA_ERROR_INVALID_VALUE;
	}
	if (rc || n == 0) {
		UNLOCK();
		return rc;
	}
	return copy_finish(ctx, n, mode, st, sdev, ddev);
}

/* One side of a 2D/3D copy, described the way the descriptors do. */
struct side3d {
	CUmemorytype type;
	const void *host;
	CUdeviceptr dev;
	CUarray array;
	size_t x, y, z, pitch, height;
	bool has_ctx;	/* a peer descriptor: ctx must own device memory */
	CUcontext ctx;
};

/* Checks one side; *dev gets its device ordinal, -1 for host memory. */
static CUresult side3d_check(const struct side3d *sd, size_t w, size_t h,
			     size_t depth, int *dev)
{
	uint64_t base, off, extent;
	int kind;
	CUresult rc;

	*dev = -1;
	switch (sd->type) {
	case CU_MEMORYTYPE_HOST:
		kind = SIDE_HOST;
		base = (uint64_t)(uintptr_t)sd->host;
		break;
	case CU_MEMORYTYPE_DEVICE:
		kind = SIDE_DEV;
		base = sd->dev;
		break;
	case CU_MEMORYTYPE_UNIFIED:
		kind = SIDE_UNIFIED;
		base = sd->dev;
		break;
	default:	/* CUDA arrays are not implemented */
		return CUDA_ERROR_INVALID_VALUE;
	}
	if ((h > 1 || depth > 1) && sd->pitch < sd->x + w)
		return CUDA_ERROR_INVALID_VALUE;
	if (depth > 1 && sd->height < sd->y + h)
		return CUDA_ERROR_INVALID_VALUE;
	off = ((uint64_t)sd->z * sd->height + sd->y) * sd->pitch + sd->x;
	extent = ((uint64_t)(depth - 1) * sd->height + (h - 1)) * sd->pitch + w;
	if (base == 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = side_check(kind, base + off, extent, dev);
	if (rc == CUDA_SUCCESS && sd->has_ctx && *dev >= 0 && sd->ctx) {
		if (!obj_ok(sd->ctx, OBJ_CTX))
			rc = CUDA_ERROR_INVALID_CONTEXT;
		else if (sd->ctx->dev != *dev)
			rc = CUDA_ERROR_INVALID_VALUE;
	}
	return rc;
}

static NOINL CUresult do_copy3d(const struct side3d *src,
				const struct side3d *dst, size_t w, size_t h,
				size_t depth, int mode, CUstream s)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st = NULL;
	int sdev, ddev;
	CUresult rc;

	rc = copy_begin(mode, s, &ctx, &st);
	if (rc)
		return rc;
	if (w == 0 || h == 0 || depth == 0) {
		UNLOCK();
		return CUDA_SUCCESS;
	}
	rc = side3d_check(src, w, h, depth, &sdev);
	if (rc == CUDA_SUCCESS)
		rc = side3d_check(dst, w, h, depth, &ddev);
	if (rc) {
		UNLOCK();
		return rc;
	}
	return copy_finish(ctx, (uint64_t)w * h * depth, mode, st, sdev, ddev);
}

static NOINL CUresult do_copy2d(const CUDA_MEMCPY2D *p, int mode, CUstream s)
{
	struct side3d src, dst;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	src = (struct side3d){ p->srcMemoryType, p->srcHost, p->srcDevice,
			       p->srcArray, p->srcXInBytes, p->srcY, 0,
			       p->srcPitch, p->Height, false, NULL };
	dst = (struct side3d){ p->dstMemoryType, p->dstHost, p->dstDevice,
			       p->dstArray, p->dstXInBytes, p->dstY, 0,
			       p->dstPitch, p->Height, false, NULL };
	return do_copy3d(&src, &dst, p->WidthInBytes, p->Height, 1, mode, s);
}

static NOINL CUresult do_copy3d_desc(const CUDA_MEMCPY3D *p, int mode,
				     CUstream s)
{
	struct side3d src, dst;

	if (!p || p->reserved0 || p->reserved1)
		return CUDA_ERROR_INVALID_VALUE;
	src = (struct side3d){ p->srcMemoryType, p->srcHost, p->srcDevice,
			       p->srcArray, p->srcXInBytes, p->srcY, p->srcZ,
			       p->srcPitch, p->srcHeight, false, NULL };
	dst = (struct side3d){ p->dstMemoryType, p->dstHost, p->dstDevice,
			       p->dstArray, p->dstXInBytes, p->dstY, p->dstZ,
			       p->dstPitch, p->dstHeight, false, NULL };
	return do_copy3d(&src, &dst, p->WidthInBytes, p->Height, p->Depth,
			 mode, s);
}

/* cuMemcpy3DPeer*: device sides may name their context, which must own the memory. */
static NOINL CUresult do_copy3d_peer(const CUDA_MEMCPY3D_PEER *p, int mode,
				     CUstream s)
{
	struct side3d src, dst;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	src = (struct side3d){ p->srcMemoryType, p->srcHost, p->srcDevice,
			       p->srcArray, p->srcXInBytes, p->srcY, p->srcZ,
			       p->srcPitch, p->srcHeight, true, p->srcContext };
	dst = (struct side3d){ p->dstMemoryType, p->dstHost, p->dstDevice,
			       p->dstArray, p->dstXInBytes, p->dstY, p->dstZ,
			       p->dstPitch, p->dstHeight, true, p->dstContext };
	return do_copy3d(&src, &dst, p->WidthInBytes, p->Height, p->Depth,
			 mode, s);
}

/* ------------------------------------------------------------------------ */
/* Modules and libraries: a fake image is a text list of kernel names, or PTX. */

/*
 * A PTX line's kernel: the NAME of ".entry NAME" (".visible .entry NAME(",
 * ".weak .entry NAME (" ...), cut in place; NULL when the line declares none.
 */
static char *ptx_entry(char *line)
{
	char *e = strstr(line, ".entry"), *name, *end;

	if (!e || (e > line && e[-1] != ' ' && e[-1] != '\t') ||
	    (e[6] != ' ' && e[6] != '\t'))
		return NULL;
	name = e + 6;
	while (*name == ' ' || *name == '\t')
		name++;
	end = name;
	while (*end && *end != '(' && *end != ' ' && *end != '\t' &&
	       *end != '{' && *end != '\r')
		end++;
	if (end == name)
		return NULL;
	*end = '\0';
	return name;
}

/*
 * Splits image into names (one per line; blank lines and '#' comments are
 * skipped), or, for a PTX text (it starts with "//" or ".version", as
 * compilers emit it), the names of its .entry lines: gpuprobe's self-learning
 * (src/modes/cudatrace/selflearn.c) hands the driver a tiny PTX image.
 * *buf receives the storage, *names n pointers into it.
 */
static CUresult parse_image(const void *image, char **buf, const char ***names,
			    size_t *n)
{
	size_t len, cnt = 0;
	char *b, *line, *save = NULL;
	const char **v;
	bool ptx;

	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	len = strnlen(image, MAX_IMAGE_LEN);
	if (len == MAX_IMAGE_LEN)
		return CUDA_ERROR_INVALID_IMAGE;
	b = strdup(image);
	/* At most one name per byte, +1 so an empty image still allocates. */
	v = calloc(len + 1, sizeof(*v));
	if (!b || !v) {
		free(b);
		free(v);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	{
		const char *t = b;

		while (*t == ' ' || *t == '\t' || *t == '\r' || *t == '\n')
			t++;
		ptx = !strncmp(t, "//", 2) || !strncmp(t, ".version", 8);
	}
	for (line = strtok_r(b, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *end;
		bool dup = false;

		while (*line == ' ' || *line == '\t' || *line == '\r')
			line++;
		if (ptx && !(line = ptx_entry(line)))
			continue;
		end = line + strlen(line);
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' ||
				      end[-1] == '\r'))
			*--end = '\0';
		if (!*line || *line == '#')
			continue;
		for (size_t i = 0; i < cnt && !dup; i++)
			dup = strcmp(v[i], line) == 0;
		if (!dup)
			v[cnt++] = line;
	}
	*buf = b;
	*names = v;
	*n = cnt;
	return CUDA_SUCCESS;
}

static NOINL CUresult do_launch(CUfunction f, unsigned int gx, unsigned int gy,
				unsigned int gz, unsigned int bx,
				unsigned int by, unsigned int bz,
				unsigned int smem, CUstream s, void **params,
				void **extra, bool ptsz)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	struct kparams k;
	struct kstat *ks;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	/* CUDA 12+ accepts a CUkernel wherever a CUfunction is expected. */
	kparams_init(&k, f, gx, gy, gz, bx, by, bz, smem);
	rc = kparams_check(&k, params, extra);
	if (rc)
		goto out;
	rc = stream_of(ctx, s, ptsz, &st);
	if (rc == CUDA_SUCCESS)
		rc = legacy_use_check(ctx, st);
	if (rc)
		goto out;
	k.ns = take_kernel_ns();
	if (st->cap) {
		/* Recorded into the capture's graph: it runs only when the graph does. */
		rc = capture_node(st, CU_GRAPH_NODE_TYPE_KERNEL, &k, NULL, NULL);
		ks = handle_stat(f);
		if (rc == CUDA_SUCCESS && ks)
			ks->captured++;
	} else {
		kernel_run(st, &k, false);
	}
out:
	UNLOCK();
	return rc;
}

static NOINL CUresult do_launch_ex(const CUlaunchConfig *c, CUfunction f,
				   void **params, void **extra, bool ptsz)
{
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->numAttrs && !c->attrs)
		return CUDA_ERROR_INVALID_VALUE;
	return do_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
			 c->blockDimY, c->blockDimZ, c->sharedMemBytes,
			 c->hStream, params, extra, ptsz);
}

/*
 * A graph launched onto a capturing stream is recorded as its nodes (CUDA
 * makes one child-graph node; flattening it keeps the same kernels and
 * order): roots depend on the stream's dependencies, the stream then
 * depends on the leaves.
 */
static CUresult graph_capture_into(struct CUstream_st *st,
				   struct CUgraphExec_st *ge)
{
	struct CUgraphNode_st **made;
	struct nodeset roots = { 0 }, deps = { 0 };
	bool *used;
	CUresult rc = CUDA_SUCCESS;

	if (st->cap->invalid)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	made = calloc(ge->n + 1, sizeof(*made));
	used = calloc(ge->n + 1, sizeof(*used));
	if (!made || !used || !set_copy(&roots, &st->tips)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < ge->n && rc == CUDA_SUCCESS; i++) {
		struct xnode *x = &ge->nodes[i];

		deps.n = 0;
		if (!x->ndeps && !set_copy(&deps, &roots))
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		for (size_t j = 0; j < x->ndeps && rc == CUDA_SUCCESS; j++) {
			used[x->deps[j]] = true;
			if (!set_add(&deps, made[x->deps[j]]))
				rc = CUDA_ERROR_OUT_OF_MEMORY;
		}
		if (rc == CUDA_SUCCESS) {
			made[i] = node_new(st->cap->graph, x->type, &deps);
			if (!made[i])
				rc = CUDA_ERROR_OUT_OF_MEMORY;
		}
		if (rc == CUDA_SUCCESS) {
			struct kstat *ks = handle_stat(x->k.fn);

			made[i]->k = x->k;
			made[i]->c = x->c;
			if (x->type == CU_GRAPH_NODE_TYPE_KERNEL && ks)
				ks->captured++;
		}
	}
	if (rc == CUDA_SUCCESS && ge->n) {
		st->tips.n = 0;
		for (size_t i = 0; i < ge->n; i++)
			if (!used[i] && !set_add(&st->tips, made[i]))
				rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
out:
	set_free(&roots);
	set_free(&deps);
	free(made);
	free(used);
	return rc;
}

/*
 * Runs every node of an executable graph, in its (topological) order, on
 * the stream: kernels through the same path as a direct launch, so the
 * stand-in's counters see each one; copies likewise.  The nodes run one after
 * another (branches are not overlapped), after one FAKECUDA_KERNEL_NS for the
 * graph launch itself.
 */
static NOINL CUresult do_graph_launch(CUgraphExec ge, CUstream s, bool ptsz)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!obj_ok(ge, OBJ_GEXEC)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	rc = stream_of(ctx, s, ptsz, &st);
	if (rc == CUDA_SUCCESS)
		rc = legacy_use_check(ctx, st);
	if (rc)
		goto out;
	if (st->cap) {
		rc = graph_capture_into(st, ge);
		goto out;
	}
	/* A node whose module was unloaded since: the whole launch fails. */
	for (size_t i = 0; i < ge->n; i++) {
		if (ge->nodes[i].type == CU_GRAPH_NODE_TYPE_KERNEL &&
		    !handle_ok(ge->nodes[i].k.fn)) {
			rc = CUDA_ERROR_INVALID_HANDLE;
			goto out;
		}
	}
	/* a graph whose allocation a former launch made and nobody freed cannot run again */
	for (size_t i = 0; i < ge->n; i++) {
		struct ent *me = ge->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC ?
				 graph_mem(ge->nodes[i].mem_dptr) : NULL;

		if (ge->nodes[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && (!me || me->made)) {
			rc = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	charge(st, g.kernel_ns);
	for (size_t i = 0; i < ge->n; i++) {
		struct xnode *x = &ge->nodes[i];
		struct ent *me;

		if (x->type == CU_GRAPH_NODE_TYPE_KERNEL)
			kernel_run(st, &x->k, true);
		else if (x->type == CU_GRAPH_NODE_TYPE_MEMCPY)
			copy_run(st, &x->c, true);
		else if ((x->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || x->type == CU_GRAPH_NODE_TYPE_MEM_FREE) &&
			 (me = graph_mem(x->mem_dptr)))
			me->made = x->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC;
	}
	ge->launches++;
	g.graph_launches++;
out:
	UNLOCK();
	return rc;
}

static NOINL CUresult do_stream_sync(CUstream s, bool ptsz, bool query)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	uint64_t until = 0;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc == CUDA_SUCCESS)
		rc = stream_of(ctx, s, ptsz, &st);
	if (rc == CUDA_SUCCESS)
		rc = sync_capture_check(st);
	if (rc == CUDA_SUCCESS)
		rc = legacy_use_check(ctx, st);
	if (rc == CUDA_SUCCESS)
		until = st->busy_until;
	UNLOCK();
	if (rc == CUDA_SUCCESS && query)
		return until > now_ns() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
	if (rc == CUDA_SUCCESS)
		sleep_until(until);
	return rc;
}

/*
 * On a capturing stream a record captures the stream's dependencies into
 * the event (cuStreamWaitEvent then forks or joins streams into the capture);
 * anywhere else it marks the time the stream's queued work ends.
 */
static NOINL CUresult do_event_record(CUevent ev, CUstream s, bool ptsz)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!obj_ok(ev, OBJ_EVENT)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	rc = stream_of(ctx, s, ptsz, &st);
	if (rc == CUDA_SUCCESS)
		rc = legacy_use_check(ctx, st);
	if (rc)
		goto out;
	if (st->cap) {
		if (st->cap->invalid) {
			rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		} else if (!set_copy(&ev->tips, &st->tips)) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			ev->cap_id = st->cap->id;
		}
		goto out;
	}
	ev->cap_id = 0;
	ev->t = max_u64(now_ns(), st->busy_until);
	ev->recorded = true;
out:
	UNLOCK();
	return rc;
}

static NOINL CUresult do_stream_wait_event(CUstream s, CUevent ev,
					   unsigned int flags, bool ptsz)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	struct capture *c;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!obj_ok(ev, OBJ_EVENT)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	rc = stream_of(ctx, s, ptsz, &st);
	if (rc == CUDA_SUCCESS)
		rc = legacy_use_check(ctx, st);
	if (rc)
		goto out;
	c = capture_by_id(ev->cap_id);
	if (c) {
		if (st->cap == c) {	/* join: depend on the other stream's work */
			if (!set_union(&st->tips, &ev->tips))
				rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else if (st->cap) {	/* two captures may not be merged */
			rc = CUDA_ERROR_STREAM_CAPTURE_MERGE;
		} else if (c->invalid) {
			rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		} else if (!capture_add_stream(c, st) ||
			   !set_copy(&st->tips, &ev->tips)) {	/* fork */
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		}
	} else if (st->cap) {
		/* Captured work may not depend on work outside the capture. */
		if (ev->recorded || ev->cap_id) {
			st->cap->invalid = true;
			rc = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
		}
	} else if (ev->recorded) {
		st->busy_until = max_u64(st->busy_until, ev->t);
	}
out:
	UNLOCK();
	return rc;
}

/* v2 only differs in the real driver's handling of edge cases we lack. */
static NOINL CUresult do_event_elapsed(float *ms, CUevent a, CUevent b,
				       bool v2)
{
	(void)v2;
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!ms) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!obj_ok(a, OBJ_EVENT) || !obj_ok(b, OBJ_EVENT)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else if (event_captured(a) || event_captured(b)) {
		rc = CUDA_ERROR_CAPTURED_EVENT;
	} else if (!a->recorded || !b->recorded ||
		   ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else if (now_ns() < max_u64(a->t, b->t)) {
		rc = CUDA_ERROR_NOT_READY;
	} else {
		*ms = (float)((double)((int64_t)(b->t - a->t)) / 1e6);
	}
	UNLOCK();
	return rc;
}

/*
 * A child forked after cuInit cannot use the parent's driver state (the real
 * driver fails every call there with CUDA_ERROR_NOT_INITIALIZED, which is why
 * launchers fork before touching CUDA); the stand-in does the same.  The lock
 * is made anew: another thread may have held it at the fork.
 */
static void fake_atfork_child(void)
{
	pthread_mutex_init(&g_lock, NULL);
	if (g.inited) {
		g.inited = false;
		g.forked = true;
	}
}

__attribute__((constructor)) static void fake_init(void)
{
	pthread_atfork(NULL, NULL, fake_atfork_child);
}

/*
 * The real driver tears its contexts down at process exit, which takes a while (tens of
 * milliseconds and more on a GPU). Emulate it, so a process on the stand-in does not
 * vanish microseconds after its last call: FAKECUDA_TEARDOWN_MS, default 100.
 */
__attribute__((destructor)) static void fake_teardown(void)
{
	uint64_t ms;
	struct timespec ts;

	if (!g.inited)
		return;
	ms = env_u64("FAKECUDA_TEARDOWN_MS", 100);
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ======================================================================== */
/* Exported API.  Each function only calls static helpers (see top).       */
/* ======================================================================== */

/*
 * CUDA loads the library CUDA_INJECTION64_PATH names at the first cuInit and calls its
 * InitializeInjection (how CUPTI-based tools get in): the stand-in does the same, so that
 * gpuprobe --gpu-time's libgpuprobe_cupti.so is tested as CUDA runs it.
 */
static void fakecuda_inject(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	void *h;
	int (*init)(void);

	if (!path || !*path)
		return;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "fakecuda: CUDA_INJECTION64_PATH: %s\n", dlerror());
		return;
	}
	*(void **)&init = dlsym(h, "InitializeInjection");
	if (init)
		init();
}

CUresult cuInit(unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	int ndev;

	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	if (g.forked) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (g.inited)
		goto out;
	{
		uint64_t ms = env_u64("FAKECUDA_INIT_MS", 0);
		struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

		while (ms && nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	ndev = (int)env_u64("FAKECUDA_DEVICES", 2);
	if (ndev <= 0) {
		rc = CUDA_ERROR_NO_DEVICE;
		goto out;
	}
	if (ndev > MAX_DEVICES)
		ndev = MAX_DEVICES;
	g.dev = calloc((size_t)ndev, sizeof(*g.dev));
	if (!g.dev) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (int d = 0; d < ndev; d++) {
		g.dev[d].next = DEV_BASE + (uint64_t)d * DEV_SPAN;
		g.dev[d].mem.no_reuse = true;
		g.dev[d].maps.no_reuse = false;	/* remapping reuses VAs */
	}
	g.ndev = ndev;
	g.mem_limit = env_u64("FAKECUDA_MEM_LIMIT", 80ull << 30);
	g.bw = env_double("FAKECUDA_BW", 4e9);
	g.d2d_async = env_u64("FAKECUDA_D2D_ASYNC", 0) != 0;
	/*
	 * 20 GB/s: a 64 MiB peer copy takes 3.4 ms, long enough to measure on a
	 * loaded VM.  In the old blocking mode copies between devices keep
	 * FAKECUDA_BW unless a peer rate is asked for.
	 */
	g.peer_bw = env_double("FAKECUDA_PEER_GBPS", (g.d2d_async ? 20.0 : g.bw / 1e9)) * 1e9;
	g.kernel_ns = env_u64("FAKECUDA_KERNEL_NS", 2000);
	g.next_handle = 0xcafe000000000000ull;
	g.handles.no_reuse = true;
	g.inited = true;
	UNLOCK();
	fakecuda_inject();	/* the first successful cuInit, as CUDA does */
	return rc;
out:
	UNLOCK();
	return rc;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = FAKECUDA_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!count)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		*count = g.ndev;
	UNLOCK();
	return rc;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!device)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!dev_ok(ordinal))
		rc = CUDA_ERROR_INVALID_DEVICE;
	else
		*device = ordinal;
	UNLOCK();
	return rc;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!name || len <= 0)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!dev_ok(dev))
		rc = CUDA_ERROR_INVALID_DEVICE;
	else
		snprintf(name, (size_t)len, "FakeCUDA Device %d", dev);
	UNLOCK();
	return rc;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!pctx) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!dev_ok(dev)) {
		rc = CUDA_ERROR_INVALID_DEVICE;
	} else if (!(c = primary_of(dev))) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		c->refcnt++;
		*pctx = c;
	}
	UNLOCK();
	return rc;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!dev_ok(dev))
		rc = CUDA_ERROR_INVALID_DEVICE;
	else if (!g.dev[dev].primary || g.dev[dev].primary->refcnt <= 0)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else	/* stays usable at 0: see "simplifications" at the top */
		g.dev[dev].primary->refcnt--;
	UNLOCK();
	return rc;
}

static NOINL CUresult do_ctx_create(CUcontext *pctx, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;
	struct CUctx_st *c;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!pctx) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!dev_ok(dev)) {
		rc = CUDA_ERROR_INVALID_DEVICE;
	} else if (t_depth == CTX_STACK_DEPTH || !(c = ctx_new(dev, false))) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		c->refcnt = 1;
		t_stack[t_depth++] = c;	/* a new context is made current */
		*pctx = c;
	}
	UNLOCK();
	return rc;
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
			unsigned int flags, CUdevice dev)
{
	(void)ctxCreateParams;	/* affinity / CIG: nothing to emulate */
	(void)flags;
	return do_ctx_create(pctx, dev);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	(void)flags;
	return do_ctx_create(pctx, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!obj_ok(ctx, OBJ_CTX) || ctx->primary) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		/* Kept allocated: other threads may still hold it current. */
		ctx->destroyed = true;
		obj_del(ctx);
		if (t_depth && t_stack[t_depth - 1] == ctx)
			t_depth--;
	}
	UNLOCK();
	return rc;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!ctx)	/* NULL pops, per the documentation */
		t_depth = t_depth ? t_depth - 1 : 0;
	else if (!obj_ok(ctx, OBJ_CTX))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (t_depth)
		t_stack[t_depth - 1] = ctx;
	else
		t_stack[t_depth++] = ctx;
	UNLOCK();
	return rc;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!pctx)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		*pctx = t_depth ? t_stack[t_depth - 1] : NULL;
	UNLOCK();
	return rc;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!obj_ok(ctx, OBJ_CTX))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (t_depth == CTX_STACK_DEPTH)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	else
		t_stack[t_depth++] = ctx;
	UNLOCK();
	return rc;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!t_depth) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		t_depth--;
		if (pctx)
			*pctx = t_stack[t_depth];
	}
	UNLOCK();
	return rc;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	struct CUctx_st *ctx;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc == CUDA_SUCCESS && !device)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		*device = ctx->dev;
	UNLOCK();
	return rc;
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	CUresult rc;

	if (!ctx)
		return cuCtxGetDevice(device);
	LOCK();
	rc = device ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		*device = ctx->dev;
	UNLOCK();
	return rc;
}

CUresult cuCtxSynchronize(void)
{
	struct CUctx_st *ctx;
	uint64_t until = 0;
	CUresult rc;

	hold_call("cuCtxSynchronize");
	LOCK();
	rc = cur_ctx(&ctx);
	if (rc == CUDA_SUCCESS)
		rc = unsafe_call_check();
	if (rc == CUDA_SUCCESS)
		until = ctx_busy_until(ctx);
	UNLOCK();
	if (rc == CUDA_SUCCESS)
		sleep_until(until);
	return rc;
}

/* CUDA 13: synchronize a given context (NULL: the current one), as cudaDeviceSynchronize
 * does there. */
CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	struct CUctx_st *c = (struct CUctx_st *)ctx;
	uint64_t until = 0;
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!c)
		rc = cur_ctx(&c);
	else if (!obj_ok(c, OBJ_CTX))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	if (rc == CUDA_SUCCESS)
		rc = unsafe_call_check();
	if (rc == CUDA_SUCCESS)
		until = ctx_busy_until(c);
	UNLOCK();
	if (rc == CUDA_SUCCESS)
		sleep_until(until);
	return rc;
}

/* Every pair of distinct devices can reach each other (as over NVLink); a device not itself. */
CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!canAccessPeer)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!dev_ok(dev) || !dev_ok(peerDev))
		rc = CUDA_ERROR_INVALID_DEVICE;
	else
		*canAccessPeer = dev != peerDev;
	UNLOCK();
	return rc;
}

/*
 * Bookkeeping only: copies between devices take the peer rate whether or not
 * access was enabled (the real driver stages through the host without it).
 */
CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	struct CUctx_st *ctx;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (Flags) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!obj_ok(peerContext, OBJ_CTX)) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
	} else if (peerContext->dev == ctx->dev) {
		rc = CUDA_ERROR_INVALID_DEVICE;
	} else {
		for (int i = 0; i < ctx->npeers; i++)
			if (ctx->peers[i] == peerContext)
				rc = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
		if (rc == CUDA_SUCCESS && ctx->npeers == MAX_PEERS)
			rc = CUDA_ERROR_TOO_MANY_PEERS;
		if (rc == CUDA_SUCCESS)
			ctx->peers[ctx->npeers++] = peerContext;
	}
out:
	UNLOCK();
	return rc;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
	struct CUctx_st *ctx;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!obj_ok(peerContext, OBJ_CTX)) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	rc = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
	for (int i = 0; i < ctx->npeers; i++) {
		if (ctx->peers[i] == peerContext) {
			ctx->peers[i] = ctx->peers[--ctx->npeers];
			rc = CUDA_SUCCESS;
			break;
		}
	}
out:
	UNLOCK();
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Error strings. */

static const struct {
	CUresult code;
	const char *name;
	const char *desc;
} err_tab[] = {
#define E(c, d) { c, #c, d }
	E(CUDA_SUCCESS, "no error"),
	E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
	E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
	E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
	E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
	E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
	E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
	E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
	E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
	E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
	E(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
	E(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
	E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
	E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
	E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
	E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
	E(CUDA_ERROR_ILLEGAL_STATE, "the operation is not permitted in the current state"),
	E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
	E(CUDA_ERROR_NOT_READY, "device not ready"),
	E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
	E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
	E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
	E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context active"),
	E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
	E(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
	E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
	E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
	E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
	E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
	E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
	E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
	E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
	E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"),
	E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"),
	E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
	E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"),
	E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"),
	E(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"),
	E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"),
	E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"),
	E(CUDA_ERROR_UNKNOWN, "unknown error"),
#undef E
};

static NOINL CUresult do_err_str(CUresult error, const char **pStr, bool name)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(err_tab) / sizeof(err_tab[0]); i++) {
		if (err_tab[i].code == error) {
			*pStr = name ? err_tab[i].name : err_tab[i].desc;
			return CUDA_SUCCESS;
		}
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	return do_err_str(error, pStr, false);
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	return do_err_str(error, pStr, true);
}

/* ------------------------------------------------------------------------ */
/* Memory. */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	hold_call("cuMemAlloc_v2");
	return do_dev_alloc(dptr, bytesize, MEM_ALLOC, false, NULL, false);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
			    size_t WidthInBytes, size_t Height,
			    unsigned int ElementSizeBytes)
{
	struct CUctx_st *ctx;
	uint64_t pitch;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!dptr || !pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 &&
	     ElementSizeBytes != 16)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = unsafe_call_check();
	if (rc)
		goto out;
	/* Rows padded to 512 bytes; the allocation is pitch * Height. */
	pitch = round_up(WidthInBytes, 512);
	if (pitch < WidthInBytes || Height > UINT64_MAX / pitch) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	rc = dev_alloc_locked(ctx, dptr, pitch * Height, MEM_PITCH);
	if (rc == CUDA_SUCCESS)
		*pPitch = pitch;
out:
	UNLOCK();
	return rc;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
			   unsigned int flags)
{
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	return do_dev_alloc(dptr, bytesize, MEM_MANAGED, false, NULL, false);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return do_dev_alloc(dptr, bytesize, MEM_ASYNC, true, hStream, false);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
			      CUstream hStream)
{
	return do_dev_alloc(dptr, bytesize, MEM_ASYNC, true, hStream, true);
}

/* Only the device's default pool exists (NULL); no pool can be created. */
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
				 CUmemoryPool pool, CUstream hStream)
{
	if (pool)
		return CUDA_ERROR_INVALID_VALUE;
	return do_dev_alloc(dptr, bytesize, MEM_POOL, true, hStream, false);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				      CUmemoryPool pool, CUstream hStream)
{
	if (pool)
		return CUDA_ERROR_INVALID_VALUE;
	return do_dev_alloc(dptr, bytesize, MEM_POOL, true, hStream, true);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	return do_dev_free(dptr, false, NULL, false);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return do_dev_free(dptr, true, hStream, false);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return do_dev_free(dptr, true, hStream, true);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return do_host_alloc(pp, bytesize, 0);
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	return do_host_alloc(pp, bytesize, Flags);
}

CUresult cuMemFreeHost(void *p)
{
	struct CUctx_st *ctx;
	struct ent *e;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc == CUDA_SUCCESS)
		rc = unsafe_call_check();
	if (rc || !p)	/* NULL: nothing to do, like free(NULL) */
		goto out;
	/* Looked up before free(): a bogus pointer must not reach free(). */
	e = vec_find(&g.host, (uint64_t)(uintptr_t)p);
	if (!e) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	vec_kill(&g.host, e);
	free(p);
out:
	UNLOCK();
	return rc;
}

/* Does [p, p + n) overlap a live entry? */
static bool overlaps(struct vec *vc, uint64_t p, uint64_t n)
{
	/*
	 * Live entries are disjoint, so only the nearest live one starting at
	 * or below the last byte can overlap.
	 */
	for (long i = vec_floor(vc, p + n - 1); i >= 0; i--) {
		if (vc->v[i].live)
			return vc->v[i].key + vc->v[i].size > p;
	}
	return false;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	struct CUctx_st *ctx;
	uint64_t a = (uint64_t)(uintptr_t)p;
	struct ent *e;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!p || !bytesize || a + bytesize < a || (Flags & ~0xfu)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (overlaps(&g.hostreg, a, bytesize) || overlaps(&g.host, a, bytesize)) {
		rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
		goto out;
	}
	e = vec_insert(&g.hostreg, a);
	if (!e) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	e->size = bytesize;
	e->kind = MEM_HOSTREG;
out:
	UNLOCK();
	return rc;
}

CUresult cuMemHostUnregister(void *p)
{
	struct CUctx_st *ctx;
	struct ent *e;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	e = p ? vec_find(&g.hostreg, (uint64_t)(uintptr_t)p) : NULL;
	if (!e) {
		rc = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
		goto out;
	}
	vec_kill(&g.hostreg, e);
out:
	UNLOCK();
	return rc;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct CUctx_st *ctx;
	struct ent *e;
	CUresult rc;
	int dev;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!handle || !size || !prop || flags ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	dev = prop->location.id;
	if (!dev_ok(dev)) {
		rc = CUDA_ERROR_INVALID_DEVICE;
		goto out;
	}
	rc = mem_charge(dev, size);
	if (rc)
		goto out;
	e = vec_insert(&g.handles, ++g.next_handle);
	if (!e) {
		g.dev[dev].used -= size;
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	e->size = size;
	e->kind = MEM_HANDLE;
	e->dev = dev;
	*handle = e->key;
out:
	UNLOCK();
	return rc;
}

/*
 * Physical memory is uncharged at once even if still mapped (the real
 * driver defers that to the last cuMemUnmap); existing mappings stay usable.
 */
CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct CUctx_st *ctx;
	struct ent *e;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	e = vec_find(&g.handles, handle);
	if (!e) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	g.dev[e->dev].used -= e->size;
	vec_kill(&g.handles, e);
out:
	UNLOCK();
	return rc;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
			     CUdeviceptr addr, unsigned long long flags)
{
	struct CUctx_st *ctx;
	uint64_t va;
	struct ent *e;
	CUresult rc;

	(void)addr;	/* only a hint: the real driver may ignore it too */
	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!ptr || !size || flags || (alignment & (alignment - 1))) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	va = dev_va(ctx->dev, size, alignment > DEV_ALIGN ? alignment : DEV_ALIGN);
	e = va ? vec_insert(&g.dev[ctx->dev].mem, va) : NULL;
	if (!e) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	e->size = size;
	e->kind = MEM_RESERVE;
	e->dev = ctx->dev;
	*ptr = va;
out:
	UNLOCK();
	return rc;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct CUctx_st *ctx;
	struct ent *e;
	struct vec *maps;
	CUresult rc;
	int d;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	d = dev_of_addr(ptr);
	e = d >= 0 ? vec_find(&g.dev[d].mem, ptr) : NULL;
	if (!e || e->kind != MEM_RESERVE || e->size != size) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	vec_kill(&g.dev[d].mem, e);
	/* Drop mappings left inside, so the range is really gone. */
	maps = &g.dev[d].maps;
	for (size_t i = 0; i < maps->len; i++) {
		struct ent *m = &maps->v[i];

		if (m->live && m->key >= ptr && m->key - ptr < size) {
			vec_kill(maps, m);
			i = (size_t)-1;	/* kill may compact: rescan */
		}
	}
out:
	UNLOCK();
	return rc;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
		  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct CUctx_st *ctx;
	struct ent *h, *r, *m;
	CUresult rc;
	int d;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	d = dev_of_addr(ptr);
	h = vec_find(&g.handles, handle);
	r = d >= 0 ? vec_containing(&g.dev[d].mem, ptr) : NULL;
	if (flags || !size || !h || offset > h->size ||
	    size > h->size - offset || !r || r->kind != MEM_RESERVE ||
	    size > r->size - (ptr - r->key) ||
	    overlaps(&g.dev[d].maps, ptr, size)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	m = vec_insert(&g.dev[d].maps, ptr);
	if (!m) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	m->size = size;
	m->aux = handle;
	m->kind = MEM_MAPPING;
	m->dev = d;
out:
	UNLOCK();
	return rc;
}

/* Unmaps every mapping inside [ptr, ptr + size); ptr must start one. */
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct CUctx_st *ctx;
	struct vec *maps;
	struct ent *m;
	CUresult rc;
	int d;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	d = dev_of_addr(ptr);
	m = d >= 0 ? vec_find(&g.dev[d].maps, ptr) : NULL;
	if (!m || !size || m->size > size) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	maps = &g.dev[d].maps;
	for (size_t i = 0; i < maps->len; i++) {
		m = &maps->v[i];
		if (m->live && m->key >= ptr && m->key - ptr < size &&
		    m->size <= size - (m->key - ptr)) {
			vec_kill(maps, m);
			i = (size_t)-1;	/* kill may compact: rescan */
		}
	}
out:
	UNLOCK();
	return rc;
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	struct CUctx_st *ctx;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc == CUDA_SUCCESS && (!free || !total))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS) {
		*free = g.mem_limit - g.dev[ctx->dev].used;
		*total = g.mem_limit;
	}
	UNLOCK();
	return rc;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
				 CUdeviceptr dptr)
{
	struct CUctx_st *ctx;
	struct ent *e = NULL;
	CUresult rc;
	int d;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	d = dev_of_addr(dptr);
	if (d >= 0) {
		e = vec_containing(&g.dev[d].maps, dptr);
		if (!e)
			e = vec_containing(&g.dev[d].mem, dptr);
	}
	if (!e) {
		rc = CUDA_ERROR_NOT_FOUND;
		goto out;
	}
	if (pbase)
		*pbase = e->key;
	if (psize)
		*psize = e->size;
out:
	UNLOCK();
	return rc;
}

/*
 * Unified addressing: every device allocation's address says its device
 * (DEV_BASE + d * DEV_SPAN), and so does the driver when asked.  Answers the
 * attributes of fakecuda.h's CUpointer_attribute; the others (which the real
 * driver knows) are CUDA_ERROR_INVALID_VALUE here.
 */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
			       CUdeviceptr ptr)
{
	struct CUctx_st *ctx;
	struct ent *e = NULL;
	bool host = false;
	CUresult rc;
	int d;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!data) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	d = dev_of_addr(ptr);
	if (d >= 0) {
		e = vec_containing(&g.dev[d].maps, ptr);
		if (!e) {
			e = vec_containing(&g.dev[d].mem, ptr);
			if (e && e->kind == MEM_RESERVE)
				e = NULL;
		}
	} else {
		e = vec_containing(&g.host, ptr);
		if (!e)
			e = vec_containing(&g.hostreg, ptr);
		host = e != NULL;
	}
	if (!e) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_CONTEXT: {
		struct CUctx_st *owner = e->kind == MEM_MAPPING || e->kind == MEM_HOSTREG ?
			NULL : (struct CUctx_st *)(uintptr_t)e->aux;

		if (!owner)
			owner = host ? ctx : primary_of(d);
		*(CUcontext *)data = owner;
		break;
	}
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:	/* one address space */
		*(CUdeviceptr *)data = ptr;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (!host)
			rc = CUDA_ERROR_INVALID_VALUE;
		else
			*(void **)data = (void *)(uintptr_t)ptr;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = host ? ctx->dev : d;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = e->key;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = e->size;
		break;
	default:
		rc = CUDA_ERROR_INVALID_VALUE;
		break;
	}
out:
	UNLOCK();
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Copies. */

#define U(p) ((uint64_t)(uintptr_t)(p))

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return do_copy(SIDE_UNIFIED, dst, SIDE_UNIFIED, src, ByteCount,
		       COPY_SYNC, NULL);
}

CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return do_copy(SIDE_UNIFIED, dst, SIDE_UNIFIED, src, ByteCount,
		       COPY_SYNC_PTDS, NULL);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
		       CUstream hStream)
{
	return do_copy(SIDE_UNIFIED, dst, SIDE_UNIFIED, src, ByteCount,
		       COPY_ASYNC, hStream);
}

CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
			    CUstream hStream)
{
	return do_copy(SIDE_UNIFIED, dst, SIDE_UNIFIED, src, ByteCount,
		       COPY_ASYNC_PTSZ, hStream);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost,
			 size_t ByteCount)
{
	hold_call("cuMemcpyHtoD_v2");
	return do_copy(SIDE_DEV, dstDevice, SIDE_HOST, U(srcHost), ByteCount,
		       COPY_SYNC, NULL);
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost,
			      size_t ByteCount)
{
	return do_copy(SIDE_DEV, dstDevice, SIDE_HOST, U(srcHost), ByteCount,
		       COPY_SYNC_PTDS, NULL);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice,
			 size_t ByteCount)
{
	return do_copy(SIDE_HOST, U(dstHost), SIDE_DEV, srcDevice, ByteCount,
		       COPY_SYNC, NULL);
}

CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice,
			      size_t ByteCount)
{
	return do_copy(SIDE_HOST, U(dstHost), SIDE_DEV, srcDevice, ByteCount,
		       COPY_SYNC_PTDS, NULL);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
			 size_t ByteCount)
{
	return do_copy(SIDE_DEV, dstDevice, SIDE_DEV, srcDevice, ByteCount,
		       COPY_SYNC, NULL);
}

CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
			      size_t ByteCount)
{
	return do_copy(SIDE_DEV, dstDevice, SIDE_DEV, srcDevice, ByteCount,
		       COPY_SYNC_PTDS, NULL);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
			      size_t ByteCount, CUstream hStream)
{
	return do_copy(SIDE_DEV, dstDevice, SIDE_HOST, U(srcHost), ByteCount,
		       COPY_ASYNC, hStream);
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
				   size_t ByteCount, CUstream hStream)
{
	return do_copy(SIDE_DEV, dstDevice, SIDE_HOST, U(srcHost), ByteCount,
		       COPY_ASYNC_PTSZ, hStream);
}

CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice,
			      size_t ByteCount, CUstream hStream)
{
	return do_copy(SIDE_HOST, U(dstHost), SIDE_DEV, srcDevice, ByteCount,
		       COPY_ASYNC, hStream);
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice,
				   size_t ByteCount, CUstream hStream)
{
	return do_copy(SIDE_HOST, U(dstHost), SIDE_DEV, srcDevice, ByteCount,
		       COPY_ASYNC_PTSZ, hStream);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
			      size_t ByteCount, CUstream hStream)
{
	return do_copy(SIDE_DEV, dstDevice, SIDE_DEV, srcDevice, ByteCount,
		       COPY_ASYNC, hStream);
}

CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice,
				   CUdeviceptr srcDevice, size_t ByteCount,
				   CUstream hStream)
{
	return do_copy(SIDE_DEV, dstDevice, SIDE_DEV, srcDevice, ByteCount,
		       COPY_ASYNC_PTSZ, hStream);
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
		      CUdeviceptr srcDevice, CUcontext srcContext,
		      size_t ByteCount)
{
	return do_copy_peer(dstDevice, dstContext, srcDevice, srcContext,
			    ByteCount, COPY_SYNC, NULL);
}

CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
			   CUdeviceptr srcDevice, CUcontext srcContext,
			   size_t ByteCount)
{
	return do_copy_peer(dstDevice, dstContext, srcDevice, srcContext,
			    ByteCount, COPY_SYNC_PTDS, NULL);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
			   CUdeviceptr srcDevice, CUcontext srcContext,
			   size_t ByteCount, CUstream hStream)
{
	return do_copy_peer(dstDevice, dstContext, srcDevice, srcContext,
			    ByteCount, COPY_ASYNC, hStream);
}

CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
				CUdeviceptr srcDevice, CUcontext srcContext,
				size_t ByteCount, CUstream hStream)
{
	return do_copy_peer(dstDevice, dstContext, srcDevice, srcContext,
			    ByteCount, COPY_ASYNC_PTSZ, hStream);
}

CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy)
{
	return do_copy3d_peer(pCopy, COPY_SYNC, NULL);
}

CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy)
{
	return do_copy3d_peer(pCopy, COPY_SYNC_PTDS, NULL);
}

CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
	return do_copy3d_peer(pCopy, COPY_ASYNC, hStream);
}

CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy,
				  CUstream hStream)
{
	return do_copy3d_peer(pCopy, COPY_ASYNC_PTSZ, hStream);
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
	return do_copy2d(pCopy, COPY_SYNC, NULL);
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	return do_copy2d(pCopy, COPY_ASYNC, hStream);
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
	return do_copy3d_desc(pCopy, COPY_SYNC, NULL);
}

CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
	return do_copy3d_desc(pCopy, COPY_ASYNC, hStream);
}

/* ------------------------------------------------------------------------ */
/* Modules and libraries. */

/* Drops a module's handles and frees it; NULL is fine (g_lock held). */
static void mod_free(struct CUmod_st *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->funcs && i < m->n; i++)
		obj_del(&m->funcs[i]);
	obj_del(m);
	free(m->funcs);
	free(m->names);
	free(m);
}

/*
 * A module with one function per name (names[] stay the caller's), the
 * module and its functions registered; NULL when out of memory (g_lock held).
 */
static struct CUmod_st *mod_new(const char **names, size_t n)
{
	struct CUmod_st *m = calloc(1, sizeof(*m));
	bool ok = m && (m->funcs = calloc(n + 1, sizeof(*m->funcs)));

	if (m)
		m->n = n;
	for (size_t i = 0; ok && i < n; i++) {
		m->funcs[i].tag = FUNC_TAG;
		m->funcs[i].mod = m;
		m->funcs[i].name = names[i];
		m->funcs[i].stat = kstat_of(names[i]);
		/* Each CUfunction is a distinct pointer into m->funcs. */
		ok = m->funcs[i].stat && obj_add(&m->funcs[i], OBJ_FUNC);
	}
	if (ok)
		ok = obj_add(m, OBJ_MODULE);
	if (!ok) {
		mod_free(m);
		m = NULL;
	}
	return m;
}

/* Drops a library's handles, its module's too, and frees it; NULL is fine. */
static void lib_free(struct CUlib_st *l)
{
	if (!l)
		return;
	for (size_t i = 0; l->kerns && i < l->n; i++)
		obj_del(&l->kerns[i]);
	mod_free(l->mod);
	obj_del(l);
	free(l->kerns);
	free(l->names);
	free(l);
}

/* A library with one kernel per name and its module; NULL when out of memory. */
static struct CUlib_st *lib_new(const char **names, size_t n)
{
	struct CUlib_st *l = calloc(1, sizeof(*l));
	bool ok = l && (l->kerns = calloc(n + 1, sizeof(*l->kerns))) &&
		  (l->mod = mod_new(names, n));

	if (l)
		l->n = n;
	for (size_t i = 0; ok && i < n; i++) {
		struct CUkern_st *k = &l->kerns[i];

		k->tag = KERN_TAG;
		k->lib = l;
		k->name = names[i];
		k->func = &l->mod->funcs[i];
		k->func->kern = k;
		k->stat = k->func->stat;
		ok = obj_add(k, OBJ_KERNEL);
	}
	if (ok) {
		l->mod->lib = l;
		ok = obj_add(l, OBJ_LIB);
	}
	if (!ok) {
		lib_free(l);
		l = NULL;
	}
	return l;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	struct CUctx_st *ctx;
	struct CUmod_st *m;
	const char **names = NULL;
	char *buf = NULL;
	size_t n = 0;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!module) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = parse_image(image, &buf, &names, &n);
	if (rc)
		goto out;
	m = mod_new(names, n);
	free(names);
	if (!m) {
		free(buf);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	m->names = buf;
	*module = m;
out:
	UNLOCK();
	return rc;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	CUresult rc = CUDA_ERROR_NOT_FOUND;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!hfunc || !name) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!obj_ok(hmod, OBJ_MODULE)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		for (size_t i = 0; i < hmod->n; i++) {
			if (strcmp(hmod->funcs[i].name, name) == 0) {
				*hfunc = &hmod->funcs[i];
				rc = CUDA_SUCCESS;
				break;
			}
		}
	}
	UNLOCK();
	return rc;
}

CUresult cuModuleUnload(CUmodule hmod)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!obj_ok(hmod, OBJ_MODULE))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (hmod->lib)	/* cuda.h: a library's module is not the caller's to unload */
		rc = CUDA_ERROR_NOT_PERMITTED;
	else
		mod_free(hmod);
	UNLOCK();
	return rc;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
			   CUjit_option *jitOptions, void **jitOptionsValues,
			   unsigned int numJitOptions,
			   CUlibraryOption *libraryOptions,
			   void **libraryOptionValues,
			   unsigned int numLibraryOptions)
{
	struct CUlib_st *l;
	const char **names = NULL;
	char *buf = NULL;
	size_t n = 0;
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (!library || (numJitOptions && (!jitOptions || !jitOptionsValues)) ||
	    (numLibraryOptions && (!libraryOptions || !libraryOptionValues))) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = parse_image(code, &buf, &names, &n);
	if (rc)
		goto out;
	l = lib_new(names, n);
	free(names);
	if (!l) {
		free(buf);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	l->names = buf;
	*library = l;
out:
	UNLOCK();
	return rc;
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
			    const char *name)
{
	CUresult rc = CUDA_ERROR_NOT_FOUND;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!pKernel || !name) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!obj_ok(library, OBJ_LIB)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		for (size_t i = 0; i < library->n; i++) {
			if (strcmp(library->kerns[i].name, name) == 0) {
				*pKernel = &library->kerns[i];
				rc = CUDA_SUCCESS;
				break;
			}
		}
	}
	UNLOCK();
	return rc;
}

/* The kernel's function in its library's module: the same handle every time. */
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct CUctx_st *ctx;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc == CUDA_SUCCESS && !pFunc)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (rc == CUDA_SUCCESS && !obj_ok(kernel, OBJ_KERNEL))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (rc == CUDA_SUCCESS)
		*pFunc = kernel->func;
	UNLOCK();
	return rc;
}

CUresult cuLibraryUnload(CUlibrary library)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!obj_ok(library, OBJ_LIB))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		lib_free(library);
	UNLOCK();
	return rc;
}

CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	CUresult rc = CUDA_SUCCESS;
	int kind;

	LOCK();
	kind = obj_kind(hfunc);
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!name)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (kind == OBJ_FUNC)
		*name = hfunc->name;
	else if (kind == OBJ_KERNEL)	/* CUkernel passed as CUfunction */
		*name = ((struct CUkern_st *)(void *)hfunc)->name;
	else
		rc = CUDA_ERROR_INVALID_HANDLE;
	UNLOCK();
	return rc;
}

CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!hmod || !obj_ok(hfunc, OBJ_FUNC))
		rc = CUDA_ERROR_INVALID_VALUE;
	else	/* a CUkernel's function: driver 580 returns CUDA_SUCCESS and its
		 * library's module here (tests/gpu/check_standins.sh on the H200) */
		*hmod = hfunc->mod;
	UNLOCK();
	return rc;
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!name)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!obj_ok(hfunc, OBJ_KERNEL))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		*name = hfunc->name;
	UNLOCK();
	return rc;
}

CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!pLib)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!obj_ok(kernel, OBJ_KERNEL))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		*pLib = kernel->lib;
	UNLOCK();
	return rc;
}

CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!count)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!obj_ok(lib, OBJ_LIB))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = (unsigned int)lib->n;
	UNLOCK();
	return rc;
}

/*
 * At most numKernels handles, in the image's order.  numKernels 0: driver 580
 * returns CUDA_SUCCESS here (tests/gpu/check_standins.sh on the H200), and the
 * stand-in writes nothing.
 */
CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
				   CUlibrary lib)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!kernels) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!obj_ok(lib, OBJ_LIB)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		for (size_t i = 0; i < lib->n && i < numKernels; i++)
			kernels[i] = &lib->kerns[i];
	}
	UNLOCK();
	return rc;
}

CUresult cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!count)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!obj_ok(mod, OBJ_MODULE))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = (unsigned int)mod->n;
	UNLOCK();
	return rc;
}

/*
 * The same handles cuModuleGetFunction returns, at most numFunctions of them.
 * numFunctions 0: driver 580 returns CUDA_SUCCESS here
 * (tests/gpu/check_standins.sh on the H200), and the stand-in writes nothing.
 */
CUresult cuModuleEnumerateFunctions(CUfunction *functions,
				    unsigned int numFunctions, CUmodule mod)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!functions) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!obj_ok(mod, OBJ_MODULE)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		for (size_t i = 0; i < mod->n && i < numFunctions; i++)
			functions[i] = &mod->funcs[i];
	}
	UNLOCK();
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Launches. */

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
			unsigned int gridDimY, unsigned int gridDimZ,
			unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes,
			CUstream hStream, void **kernelParams, void **extra)
{
	hold_call("cuLaunchKernel");
	return do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
			 blockDimZ, sharedMemBytes, hStream, kernelParams, extra,
			 false);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
			     unsigned int gridDimY, unsigned int gridDimZ,
			     unsigned int blockDimX, unsigned int blockDimY,
			     unsigned int blockDimZ,
			     unsigned int sharedMemBytes, CUstream hStream,
			     void **kernelParams, void **extra)
{
	return do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
			 blockDimZ, sharedMemBytes, hStream, kernelParams, extra,
			 true);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
			  void **kernelParams, void **extra)
{
	return do_launch_ex(config, f, kernelParams, extra, false);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
			       void **kernelParams, void **extra)
{
	return do_launch_ex(config, f, kernelParams, extra, true);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
				   unsigned int gridDimY,
				   unsigned int gridDimZ,
				   unsigned int blockDimX,
				   unsigned int blockDimY,
				   unsigned int blockDimZ,
				   unsigned int sharedMemBytes,
				   CUstream hStream, void **kernelParams)
{
	return do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
			 blockDimZ, sharedMemBytes, hStream, kernelParams, NULL,
			 false);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
					unsigned int gridDimY,
					unsigned int gridDimZ,
					unsigned int blockDimX,
					unsigned int blockDimY,
					unsigned int blockDimZ,
					unsigned int sharedMemBytes,
					CUstream hStream, void **kernelParams)
{
	return do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
			 blockDimZ, sharedMemBytes, hStream, kernelParams, NULL,
			 true);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return do_graph_launch(hGraphExec, hStream, false);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return do_graph_launch(hGraphExec, hStream, true);
}

/* ------------------------------------------------------------------------ */
/* Streams, events, graphs. */

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	struct CUctx_st *ctx;
	struct CUstream_st *s;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!phStream || (Flags & ~(unsigned int)CU_STREAM_NON_BLOCKING)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !obj_add(s, OBJ_STREAM)) {
		free(s);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	s->flags = Flags;
	s->ctx = ctx;
	*phStream = s;
out:
	UNLOCK();
	return rc;
}

/*
 * Pending work is simply forgotten, as the real one returns at once too.  A
 * stream destroyed while capturing invalidates its capture (ends it, if it
 * began it).
 */
CUresult cuStreamDestroy_v2(CUstream hStream)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!obj_ok(hStream, OBJ_STREAM)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		if (hStream->cap)
			capture_drop_stream(hStream);
		obj_del(hStream);
		set_free(&hStream->tips);
		free(hStream->edges);
		free(hStream);
	}
	UNLOCK();
	return rc;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	return do_stream_sync(hStream, false, false);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	return do_stream_sync(hStream, true, false);
}

CUresult cuStreamQuery(CUstream hStream)
{
	return do_stream_sync(hStream, false, true);
}

CUresult cuStreamQuery_ptsz(CUstream hStream)
{
	return do_stream_sync(hStream, true, true);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	return do_stream_wait_event(hStream, hEvent, Flags, false);
}

CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
				unsigned int Flags)
{
	return do_stream_wait_event(hStream, hEvent, Flags, true);
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct CUctx_st *ctx;
	struct CUevent_st *e;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!phEvent || (Flags & ~0x7u)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !obj_add(e, OBJ_EVENT)) {
		free(e);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	e->flags = Flags;
	*phEvent = e;
out:
	UNLOCK();
	return rc;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	return do_event_record(hEvent, hStream, false);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	return do_event_record(hEvent, hStream, true);
}

/* CU_EVENT_RECORD_EXTERNAL (1) only changes a capture's node kind, which the stand-in
 * does not keep apart: the record is the same. */
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	return flags & ~1u ? CUDA_ERROR_INVALID_VALUE : do_event_record(hEvent, hStream, false);
}

CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	return flags & ~1u ? CUDA_ERROR_INVALID_VALUE : do_event_record(hEvent, hStream, true);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	CUresult rc = CUDA_SUCCESS;
	uint64_t until = 0;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!obj_ok(hEvent, OBJ_EVENT))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		rc = captured_event_check(hEvent);
	if (rc == CUDA_SUCCESS && hEvent->recorded)	/* never recorded: nothing to wait for */
		until = hEvent->t;
	UNLOCK();
	if (rc == CUDA_SUCCESS)
		sleep_until(until);
	return rc;
}

CUresult cuEventQuery(CUevent hEvent)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!obj_ok(hEvent, OBJ_EVENT))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		rc = captured_event_check(hEvent);
	if (rc == CUDA_SUCCESS && hEvent->recorded && hEvent->t > now_ns())
		rc = CUDA_ERROR_NOT_READY;
	UNLOCK();
	return rc;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return do_event_elapsed(pMilliseconds, hStart, hEnd, false);
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart,
			       CUevent hEnd)
{
	return do_event_elapsed(pMilliseconds, hStart, hEnd, true);
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!obj_ok(hEvent, OBJ_EVENT)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		obj_del(hEvent);
		set_free(&hEvent->tips);
		free(hEvent);
	}
	UNLOCK();
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Stream capture. */

static NOINL CUresult do_begin_capture(CUstream s, bool ptsz,
				       CUstreamCaptureMode mode,
				       struct CUgraph_st *into,
				       const CUgraphNode *deps, size_t ndeps)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	struct capture *c = NULL;
	struct nodeset tips = { 0 };
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = stream_of(ctx, s, ptsz, &st);
	if (rc)
		goto out;
	if (st == &ctx->null_stream) {	/* the legacy stream cannot be captured */
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
	if (st->cap) {
		rc = CUDA_ERROR_ILLEGAL_STATE;
		goto out;
	}
	if (into) {
		if (!obj_ok(into, OBJ_GRAPH)) {
			rc = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
		rc = deps_of(into, deps, ndeps, &tips);
		if (rc)
			goto out;
	}
	if (g.ncaps == g.capcaps) {
		size_t ncap = g.capcaps ? 2 * g.capcaps : 8;
		struct capture **nv = realloc(g.caps, ncap * sizeof(*nv));

		if (!nv) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		g.caps = nv;
		g.capcaps = ncap;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	c->graph = into ? into : graph_new();
	c->own_graph = !into;
	if (!c->graph || !capture_add_stream(c, st) || !set_copy(&st->tips, &tips)) {
		if (c->own_graph && c->graph)
			graph_free(c->graph);
		st->cap = NULL;
		free(c->streams);
		free(c);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	c->id = ++g.next_capture_id;
	c->mode = mode;
	c->thread = pthread_self();
	c->origin = st;
	c->graph->capturing++;
	g.caps[g.ncaps++] = c;
out:
	set_free(&tips);
	UNLOCK();
	return rc;
}

/*
 * Ends the capture that s began.  Every stream forked into it must have been
 * joined back: its last captured work must be among what s depends on now
 * (CUDA_ERROR_STREAM_CAPTURE_UNJOINED otherwise).  Failed or invalidated
 * captures return no graph.  An invalidated capture says so before anything
 * else: with a fork unjoined too, driver 580 returns
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED here (tests/gpu/check_standins.sh on
 * the H200), and every stream forked into it stops capturing.
 */
static NOINL CUresult do_end_capture(CUstream s, bool ptsz, CUgraph *out)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	struct capture *c;
	struct CUgraphNode_st **stack = NULL;
	struct CUgraph_st *gr;
	size_t sp = 0;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!out) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = stream_of(ctx, s, ptsz, &st);
	if (rc)
		goto out;
	c = st->cap;
	if (!c) {
		rc = CUDA_ERROR_ILLEGAL_STATE;
		goto out;
	}
	if (c->origin != st) {
		/* driver 580 invalidates the capture here: the origin's EndCapture then returns
		 * 901 (tests/gpu/check_standins.sh on the H200) */
		c->invalid = true;
		rc = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
		goto out;
	}
	if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
	    !pthread_equal(c->thread, pthread_self())) {
		rc = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
		goto out;
	}
	gr = c->graph;
	*out = NULL;
	if (c->invalid) {
		capture_end(c, true);
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		goto out;
	}
	/* Mark everything the origin depends on, then look for unjoined work. */
	stack = calloc(gr->nodes.n + 1, sizeof(*stack));
	if (!stack) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < gr->nodes.n; i++)
		gr->nodes.v[i]->mark = 0;
	for (size_t i = 0; i < st->tips.n; i++) {
		st->tips.v[i]->mark = 1;
		stack[sp++] = st->tips.v[i];
	}
	while (sp) {
		struct CUgraphNode_st *n = stack[--sp];

		for (size_t i = 0; i < n->deps.n; i++) {
			if (!n->deps.v[i]->mark) {
				n->deps.v[i]->mark = 1;
				stack[sp++] = n->deps.v[i];
			}
		}
	}
	for (size_t i = 0; i < c->nstreams && rc == CUDA_SUCCESS; i++)
		for (size_t j = 0; j < c->streams[i]->tips.n; j++)
			if (!c->streams[i]->tips.v[j]->mark)
				rc = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
	capture_end(c, rc != CUDA_SUCCESS);
	if (rc == CUDA_SUCCESS)
		*out = gr;
out:
	free(stack);
	UNLOCK();
	return rc;
}

static NOINL CUresult do_is_capturing(CUstream s, bool ptsz,
				      CUstreamCaptureStatus *status)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc == CUDA_SUCCESS && !status)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = stream_of(ctx, s, ptsz, &st);
	if (rc == CUDA_SUCCESS)
		*status = !st->cap ? CU_STREAM_CAPTURE_STATUS_NONE :
			  st->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED :
					     CU_STREAM_CAPTURE_STATUS_ACTIVE;
	UNLOCK();
	return rc;
}

/* The dependency array stays valid until the next call on the stream, as CUDA's. */
static NOINL CUresult do_capture_info(CUstream s, bool ptsz,
				      CUstreamCaptureStatus *status,
				      cuuint64_t *id, CUgraph *graph,
				      const CUgraphNode **deps,
				      const CUgraphEdgeData **edges,
				      size_t *ndeps)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc == CUDA_SUCCESS && !status)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = stream_of(ctx, s, ptsz, &st);
	if (rc)
		goto out;
	if (!st->cap) {
		*status = CU_STREAM_CAPTURE_STATUS_NONE;
		goto out;
	}
	*status = st->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED :
				     CU_STREAM_CAPTURE_STATUS_ACTIVE;
	if (id)
		*id = st->cap->id;
	if (graph)
		*graph = st->cap->graph;
	if (deps)
		*deps = st->tips.n ? (const CUgraphNode *)st->tips.v : NULL;
	if (ndeps)
		*ndeps = st->tips.n;
	if (edges) {
		if (st->tips.n > st->nedges) {
			CUgraphEdgeData *ne = calloc(st->tips.n, sizeof(*ne));

			if (!ne) {
				rc = CUDA_ERROR_OUT_OF_MEMORY;
				goto out;
			}
			free(st->edges);
			st->edges = ne;
			st->nedges = st->tips.n;
		}
		*edges = st->tips.n ? st->edges : NULL;
	}
out:
	UNLOCK();
	return rc;
}

CUresult cuStreamBeginCapture(CUstream hStream)
{
	return do_begin_capture(hStream, false, CU_STREAM_CAPTURE_MODE_GLOBAL,
				NULL, NULL, 0);
}

CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
	return do_begin_capture(hStream, true, CU_STREAM_CAPTURE_MODE_GLOBAL,
				NULL, NULL, 0);
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	return do_begin_capture(hStream, false, mode, NULL, NULL, 0);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
	return do_begin_capture(hStream, true, mode, NULL, NULL, 0);
}

/* Edge data is accepted and ignored: every edge is a full dependency here. */
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
				     const CUgraphNode *dependencies,
				     const CUgraphEdgeData *dependencyData,
				     size_t numDependencies,
				     CUstreamCaptureMode mode)
{
	(void)dependencyData;
	if (!hGraph)
		return CUDA_ERROR_INVALID_VALUE;
	return do_begin_capture(hStream, false, mode, hGraph, dependencies,
				numDependencies);
}

CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
					  const CUgraphNode *dependencies,
					  const CUgraphEdgeData *dependencyData,
					  size_t numDependencies,
					  CUstreamCaptureMode mode)
{
	(void)dependencyData;
	if (!hGraph)
		return CUDA_ERROR_INVALID_VALUE;
	return do_begin_capture(hStream, true, mode, hGraph, dependencies,
				numDependencies);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return do_end_capture(hStream, false, phGraph);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
	return do_end_capture(hStream, true, phGraph);
}

CUresult cuStreamIsCapturing(CUstream hStream,
			     CUstreamCaptureStatus *captureStatus)
{
	return do_is_capturing(hStream, false, captureStatus);
}

CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
				  CUstreamCaptureStatus *captureStatus)
{
	return do_is_capturing(hStream, true, captureStatus);
}

CUresult cuStreamGetCaptureInfo_v3(CUstream hStream,
				   CUstreamCaptureStatus *captureStatus_out,
				   cuuint64_t *id_out, CUgraph *graph_out,
				   const CUgraphNode **dependencies_out,
				   const CUgraphEdgeData **edgeData_out,
				   size_t *numDependencies_out)
{
	return do_capture_info(hStream, false, captureStatus_out, id_out,
			       graph_out, dependencies_out, edgeData_out,
			       numDependencies_out);
}

CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream,
					CUstreamCaptureStatus *captureStatus_out,
					cuuint64_t *id_out, CUgraph *graph_out,
					const CUgraphNode **dependencies_out,
					const CUgraphEdgeData **edgeData_out,
					size_t *numDependencies_out)
{
	return do_capture_info(hStream, true, captureStatus_out, id_out,
			       graph_out, dependencies_out, edgeData_out,
			       numDependencies_out);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode old;

	if (!mode || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	old = t_capture_mode;
	t_capture_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Graphs. */

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct CUgraph_st *gr;
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!phGraph || flags) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!(gr = graph_new())) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*phGraph = gr;
	}
	UNLOCK();
	return rc;
}

/*
 * A memory allocation node (CUDA 11.4): the driver fixes the allocation's address when
 * the node is made and hands it back in nodeParams->dptr; the memory is the graph's (the
 * real driver maps it at each launch and unmaps it at the free node, or when a stream
 * frees it with cuMemFreeAsync/cuMemFree after the launch). The stand-in keeps one device
 * allocation per node from the node on, freed by any of those (MEM_GRAPH).
 */
CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				const CUgraphNode *dependencies,
				size_t numDependencies,
				CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	struct nodeset set = { 0 };
	struct CUgraphNode_st *n;
	struct CUctx_st *ctx;
	struct ent *e;
	CUresult rc;
	uint64_t addr = 0, bytes;
	int dev;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!phGraphNode || !obj_ok(hGraph, OBJ_GRAPH) || !nodeParams || !nodeParams->bytesize ||
	    nodeParams->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    nodeParams->poolProps.handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
	    nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    !dev_ok(nodeParams->poolProps.location.id) ||
	    (nodeParams->accessDescCount && !nodeParams->accessDescs)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = deps_of(hGraph, dependencies, numDependencies, &set);
	if (rc)
		goto out;
	dev = nodeParams->poolProps.location.id;
	bytes = round_up(nodeParams->bytesize, DEV_ALIGN);
	rc = mem_charge(dev, bytes);
	if (rc)
		goto out;
	addr = dev_va(dev, bytes, DEV_ALIGN);
	e = addr ? vec_insert(&g.dev[dev].mem, addr) : NULL;
	n = e ? node_new(hGraph, CU_GRAPH_NODE_TYPE_MEM_ALLOC, &set) : NULL;
	if (!n) {
		if (e)
			vec_kill(&g.dev[dev].mem, e);
		g.dev[dev].used -= bytes;
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	e->size = bytes;
	e->kind = MEM_GRAPH;
	e->made = false;
	e->dev = dev;
	e->aux = (uint64_t)(uintptr_t)ctx;
	n->mem_dptr = addr;
	nodeParams->dptr = addr;
	*phGraphNode = n;
out:
	set_free(&set);
	UNLOCK();
	return rc;
}

/* A free node: of memory a graph allocated, once per graph (cuda.h). The memory is the
 * graph's again at its next launch, so the stand-in's allocation stays. */
CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
			       const CUgraphNode *dependencies,
			       size_t numDependencies, CUdeviceptr dptr)
{
	struct nodeset set = { 0 };
	struct CUgraphNode_st *n;
	struct CUctx_st *ctx;
	struct ent *e;
	CUresult rc;
	int d;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	d = dev_of_addr(dptr);
	e = d >= 0 ? vec_find(&g.dev[d].mem, dptr) : NULL;
	if (!phGraphNode || !obj_ok(hGraph, OBJ_GRAPH) || !e || e->kind != MEM_GRAPH) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (size_t i = 0; i < hGraph->nodes.n; i++) {
		struct CUgraphNode_st *o = hGraph->nodes.v[i];

		if (o->type == CU_GRAPH_NODE_TYPE_MEM_FREE && o->mem_dptr == dptr) {
			rc = CUDA_ERROR_INVALID_VALUE; /* freed twice in one graph */
			goto out;
		}
	}
	rc = deps_of(hGraph, dependencies, numDependencies, &set);
	if (rc)
		goto out;
	n = node_new(hGraph, CU_GRAPH_NODE_TYPE_MEM_FREE, &set);
	if (!n) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	n->mem_dptr = dptr;
	*phGraphNode = n;
out:
	set_free(&set);
	UNLOCK();
	return rc;
}

/* Kernel node parameters, v1 (no kern, no ctx) or v2, to what the stand-in keeps. */
static CUresult knode_params(const CUDA_KERNEL_NODE_PARAMS_v1 *p1,
			     const CUDA_KERNEL_NODE_PARAMS *p2,
			     struct kparams *k)
{
	void *fn;

	if (!p1 && !p2)
		return CUDA_ERROR_INVALID_VALUE;
	if (p1) {
		kparams_init(k, p1->func, p1->gridDimX, p1->gridDimY,
			     p1->gridDimZ, p1->blockDimX, p1->blockDimY,
			     p1->blockDimZ, p1->sharedMemBytes);
		return kparams_check(k, p1->kernelParams, p1->extra);
	}
	fn = p2->func ? (void *)p2->func : (void *)p2->kern;
	kparams_init(k, fn, p2->gridDimX, p2->gridDimY, p2->gridDimZ,
		     p2->blockDimX, p2->blockDimY, p2->blockDimZ,
		     p2->sharedMemBytes);
	return kparams_check(k, p2->kernelParams, p2->extra);
}

static NOINL CUresult do_add_kernel_node(CUgraphNode *out, CUgraph gr,
					 const CUgraphNode *deps, size_t ndeps,
					 const CUDA_KERNEL_NODE_PARAMS_v1 *p1,
					 const CUDA_KERNEL_NODE_PARAMS *p2)
{
	struct nodeset set = { 0 };
	struct CUgraphNode_st *n;
	struct kparams k;
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!out || !obj_ok(gr, OBJ_GRAPH))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = knode_params(p1, p2, &k);
	if (rc == CUDA_SUCCESS)
		rc = deps_of(gr, deps, ndeps, &set);
	if (rc == CUDA_SUCCESS) {
		n = node_new(gr, CU_GRAPH_NODE_TYPE_KERNEL, &set);
		if (!n) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			n->k = k;
			*out = n;
		}
	}
	set_free(&set);
	UNLOCK();
	return rc;
}

CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
			      const CUgraphNode *dependencies,
			      size_t numDependencies,
			      const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	return do_add_kernel_node(phGraphNode, hGraph, dependencies,
				  numDependencies, nodeParams, NULL);
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
				 const CUgraphNode *dependencies,
				 size_t numDependencies,
				 const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	return do_add_kernel_node(phGraphNode, hGraph, dependencies,
				  numDependencies, NULL, nodeParams);
}

static NOINL CUresult do_knode_get(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v1 *p1,
				   CUDA_KERNEL_NODE_PARAMS *p2)
{
	CUresult rc = CUDA_SUCCESS;
	struct kparams *k;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if ((!p1 && !p2) || !obj_ok(n, OBJ_GNODE) ||
		 n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc)
		goto out;
	k = &n->k;
	if (p1) {
		memset(p1, 0, sizeof(*p1));
		p1->func = k->fn;
		p1->gridDimX = k->grid[0];
		p1->gridDimY = k->grid[1];
		p1->gridDimZ = k->grid[2];
		p1->blockDimX = k->block[0];
		p1->blockDimY = k->block[1];
		p1->blockDimZ = k->block[2];
		p1->sharedMemBytes = k->smem;
	} else {
		memset(p2, 0, sizeof(*p2));
		if (obj_kind(k->fn) == OBJ_KERNEL)
			p2->kern = k->fn;
		else
			p2->func = k->fn;
		p2->gridDimX = k->grid[0];
		p2->gridDimY = k->grid[1];
		p2->gridDimZ = k->grid[2];
		p2->blockDimX = k->block[0];
		p2->blockDimY = k->block[1];
		p2->blockDimZ = k->block[2];
		p2->sharedMemBytes = k->smem;
	}
out:
	UNLOCK();
	return rc;
}

CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode,
				    CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	return do_knode_get(hNode, nodeParams, NULL);
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
				       CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	return do_knode_get(hNode, NULL, nodeParams);
}

static NOINL CUresult do_knode_set(CUgraphNode n,
				   const CUDA_KERNEL_NODE_PARAMS_v1 *p1,
				   const CUDA_KERNEL_NODE_PARAMS *p2)
{
	CUresult rc = CUDA_SUCCESS;
	struct kparams k;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!obj_ok(n, OBJ_GNODE) || n->type != CU_GRAPH_NODE_TYPE_KERNEL)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = knode_params(p1, p2, &k);
	if (rc == CUDA_SUCCESS)
		n->k = k;
	UNLOCK();
	return rc;
}

CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode,
				    const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	return do_knode_set(hNode, nodeParams, NULL);
}

CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
				       const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	return do_knode_set(hNode, NULL, nodeParams);
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!type || !obj_ok(hNode, OBJ_GNODE))
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		*type = hNode->type;
	UNLOCK();
	return rc;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!numNodes || !obj_ok(hGraph, OBJ_GRAPH)) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!nodes) {
		*numNodes = hGraph->nodes.n;
	} else {
		size_t want = *numNodes;

		for (size_t i = 0; i < want; i++)
			nodes[i] = i < hGraph->nodes.n ? hGraph->nodes.v[i] : NULL;
		if (want > hGraph->nodes.n)
			*numNodes = hGraph->nodes.n;
	}
	UNLOCK();
	return rc;
}

static void exec_free(struct CUgraphExec_st *ge)
{
	for (size_t i = 0; ge && i < ge->n; i++)
		free(ge->nodes[i].deps);
	if (ge)
		free(ge->nodes);
	free(ge);
}

/* Copies a graph's nodes, with their dependencies as indices, into a new executable graph. */
static NOINL CUresult do_instantiate(CUgraphExec *out, CUgraph gr,
				     unsigned long long flags, CUstream upload,
				     bool has_upload)
{
	struct CUgraphExec_st *ge = NULL;
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!out || (flags & ~0xfull)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!obj_ok(gr, OBJ_GRAPH)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	if (has_upload && (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) {
		rc = stream_of(ctx, upload, false, &st);
		if (rc)
			goto out;
	}
	ge = calloc(1, sizeof(*ge));
	if (ge)
		ge->nodes = calloc(gr->nodes.n + 1, sizeof(*ge->nodes));
	if (!ge || !ge->nodes) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < gr->nodes.n; i++) {
		struct CUgraphNode_st *n = gr->nodes.v[i];
		struct xnode *x = &ge->nodes[i];

		x->key = (uint64_t)(uintptr_t)n;
		x->mem_dptr = n->mem_dptr;
		x->type = n->type;
		x->k = n->k;
		x->c = n->c;
		x->deps = calloc(n->deps.n + 1, sizeof(*x->deps));
		if (!x->deps) {
			ge->n = i;
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		for (size_t j = 0; j < n->deps.n; j++)
			x->deps[j] = n->deps.v[j]->index;
		x->ndeps = n->deps.n;
	}
	ge->n = gr->nodes.n;
	if (!obj_add(ge, OBJ_GEXEC)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	*out = ge;
	ge = NULL;
out:
	exec_free(ge);
	UNLOCK();
	return rc;
}

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
			    CUgraphNode *phErrorNode, char *logBuffer,
			    size_t bufferSize)
{
	if (phErrorNode)
		*phErrorNode = NULL;
	if (logBuffer && bufferSize)
		logBuffer[0] = '\0';
	return do_instantiate(phGraphExec, hGraph, 0, NULL, false);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
			       CUgraphNode *phErrorNode, char *logBuffer,
			       size_t bufferSize)
{
	if (phErrorNode)
		*phErrorNode = NULL;
	if (logBuffer && bufferSize)
		logBuffer[0] = '\0';
	return do_instantiate(phGraphExec, hGraph, 0, NULL, false);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
				     unsigned long long flags)
{
	if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)	/* needs the params' stream */
		return CUDA_ERROR_INVALID_VALUE;
	return do_instantiate(phGraphExec, hGraph, flags, NULL, false);
}

static CUresult instantiate_params(CUgraphExec *out, CUgraph gr,
				   CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	CUresult rc;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	rc = do_instantiate(out, gr, p->flags, p->hUploadStream, true);
	p->hErrNode_out = NULL;
	p->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS :
					     CUDA_GRAPH_INSTANTIATE_ERROR;
	return rc;
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
				      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec,
					   CUgraph hGraph,
					   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return instantiate_params(phGraphExec, hGraph, instantiateParams);
}

/* hNode: a node of the graph the exec was made from (or last updated from). */
static NOINL CUresult do_exec_knode_set(CUgraphExec ge, CUgraphNode n,
					const CUDA_KERNEL_NODE_PARAMS_v1 *p1,
					const CUDA_KERNEL_NODE_PARAMS *p2)
{
	uint64_t key = (uint64_t)(uintptr_t)n;
	struct xnode *x = NULL;
	struct kparams k;
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (!obj_ok(ge, OBJ_GEXEC) || !n) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (size_t i = 0; i < ge->n && !x; i++)
		if (ge->nodes[i].key == key || ge->nodes[i].key2 == key)
			x = &ge->nodes[i];
	if (!x || x->type != CU_GRAPH_NODE_TYPE_KERNEL) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = knode_params(p1, p2, &k);
	if (rc == CUDA_SUCCESS)
		x->k = k;
out:
	UNLOCK();
	return rc;
}

CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec,
					CUgraphNode hNode,
					const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	return do_exec_knode_set(hGraphExec, hNode, nodeParams, NULL);
}

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec,
					   CUgraphNode hNode,
					   const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	return do_exec_knode_set(hGraphExec, hNode, NULL, nodeParams);
}

/*
 * Takes the parameters of gr's nodes into ge when gr has ge's topology:
 * the same number of nodes, of the same types, with the same dependencies.
 */
static NOINL CUresult do_exec_update(CUgraphExec ge, CUgraph gr,
				     CUgraphExecUpdateResult *result,
				     CUgraphNode *err_node)
{
	CUresult rc = CUDA_SUCCESS;

	*result = CU_GRAPH_EXEC_UPDATE_ERROR;
	*err_node = NULL;
	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (!obj_ok(ge, OBJ_GEXEC) || !obj_ok(gr, OBJ_GRAPH)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	if (gr->nodes.n != ge->n) {
		*result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		goto out;
	}
	for (size_t i = 0; i < ge->n; i++) {
		struct CUgraphNode_st *n = gr->nodes.v[i];
		struct xnode *x = &ge->nodes[i];

		if (n->type != x->type) {
			*result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
			*err_node = n;
			goto out;
		}
		if (n->deps.n != x->ndeps) {
			*result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
			*err_node = n;
			goto out;
		}
		for (size_t j = 0; j < x->ndeps; j++) {
			if (n->deps.v[j]->index != x->deps[j]) {
				*result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
				*err_node = n;
				goto out;
			}
		}
	}
	for (size_t i = 0; i < ge->n; i++) {
		ge->nodes[i].k = gr->nodes.v[i]->k;
		ge->nodes[i].c = gr->nodes.v[i]->c;
		ge->nodes[i].key2 = (uint64_t)(uintptr_t)gr->nodes.v[i];
	}
	*result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
	rc = CUDA_SUCCESS;
out:
	UNLOCK();
	return rc;
}

CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
			   CUgraphNode *hErrorNode_out,
			   CUgraphExecUpdateResult *updateResult_out)
{
	CUgraphExecUpdateResult res;
	CUgraphNode err;
	CUresult rc;

	if (!hErrorNode_out || !updateResult_out)
		return CUDA_ERROR_INVALID_VALUE;
	rc = do_exec_update(hGraphExec, hGraph, &res, &err);
	*hErrorNode_out = err;
	*updateResult_out = res;
	return rc;
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
			      CUgraphExecUpdateResultInfo *resultInfo)
{
	CUgraphExecUpdateResult res;
	CUgraphNode err;
	CUresult rc;

	if (!resultInfo)
		return CUDA_ERROR_INVALID_VALUE;
	rc = do_exec_update(hGraphExec, hGraph, &res, &err);
	resultInfo->result = res;
	resultInfo->errorNode = err;
	resultInfo->errorFromNode = NULL;
	return rc;
}

/* Nothing to move to a device that does not exist: checks the arguments. */
static NOINL CUresult do_graph_upload(CUgraphExec ge, CUstream s, bool ptsz)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc == CUDA_SUCCESS && !obj_ok(ge, OBJ_GEXEC))
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (rc == CUDA_SUCCESS)
		rc = stream_of(ctx, s, ptsz, &st);
	UNLOCK();
	return rc;
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return do_graph_upload(hGraphExec, hStream, false);
}

CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return do_graph_upload(hGraphExec, hStream, true);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!obj_ok(hGraphExec, OBJ_GEXEC)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		obj_del(hGraphExec);
		exec_free(hGraphExec);
	}
	UNLOCK();
	return rc;
}

/* Executable graphs are independent of their graph and outlive it. */
CUresult cuGraphDestroy(CUgraph hGraph)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!obj_ok(hGraph, OBJ_GRAPH))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (hGraph->capturing)	/* a capture still records into it */
		rc = CUDA_ERROR_ILLEGAL_STATE;
	else
		graph_free(hGraph);
	UNLOCK();
	return rc;
}

/* ------------------------------------------------------------------------ */
/* cuGetProcAddress: what runtimes (libcudart) use instead of dlsym. */

typedef void (*fnptr)(void);

static const struct proc {
	const char *sym;	/* exported name */
	fnptr fn;
	int since;	/* CUDA version that introduced this variant */
	const char *base;	/* API name when not the symbol's own (NULL) */
} proc_tab[] = {
#define P(name, since) { #name, (fnptr)name, since, NULL }
/* CUDA 12 made cuGraphInstantiate mean cuGraphInstantiateWithFlags. */
#define PA(name, since, base) { #name, (fnptr)name, since, base }
	P(cuInit, 2000),
	P(cuDriverGetVersion, 2020),
	P(cuDeviceGetCount, 2000),
	P(cuDeviceGet, 2000),
	P(cuDeviceGetName, 2000),
	P(cuDevicePrimaryCtxRetain, 7000),
	P(cuDevicePrimaryCtxRelease_v2, 11000),
	P(cuCtxCreate_v2, 3020),
	P(cuCtxCreate_v4, 12050),
	P(cuCtxDestroy_v2, 4000),
	P(cuCtxSetCurrent, 4000),
	P(cuCtxGetCurrent, 4000),
	P(cuCtxPushCurrent_v2, 4000),
	P(cuCtxPopCurrent_v2, 4000),
	P(cuCtxGetDevice, 2000),
	P(cuCtxGetDevice_v2, 13000),
	P(cuCtxSynchronize, 2000),
	P(cuCtxSynchronize_v2, 13000),
	P(cuGetErrorString, 6000),
	P(cuGetErrorName, 6000),
	P(cuGetProcAddress_v2, 12000),
	P(cuMemAlloc_v2, 3020),
	P(cuMemAllocPitch_v2, 3020),
	P(cuMemAllocManaged, 6000),
	P(cuMemAllocAsync, 11020),
	P(cuMemAllocAsync_ptsz, 11020),
	P(cuMemAllocFromPoolAsync, 11020),
	P(cuMemAllocFromPoolAsync_ptsz, 11020),
	P(cuMemFree_v2, 3020),
	P(cuMemFreeAsync, 11020),
	P(cuMemFreeAsync_ptsz, 11020),
	P(cuMemAllocHost_v2, 3020),
	P(cuMemHostAlloc, 2020),
	P(cuMemFreeHost, 2000),
	P(cuMemHostRegister_v2, 6050),
	P(cuMemHostUnregister, 4000),
	P(cuMemCreate, 10020),
	P(cuMemRelease, 10020),
	P(cuMemAddressReserve, 10020),
	P(cuMemAddressFree, 10020),
	P(cuMemMap, 10020),
	P(cuMemUnmap, 10020),
	P(cuMemGetInfo_v2, 3020),
	P(cuMemGetAddressRange_v2, 3020),
	P(cuMemcpy, 4000),
	P(cuMemcpy_ptds, 7000),
	P(cuMemcpyAsync, 4000),
	P(cuMemcpyAsync_ptsz, 7000),
	P(cuMemcpyHtoD_v2, 3020),
	P(cuMemcpyHtoD_v2_ptds, 7000),
	P(cuMemcpyDtoH_v2, 3020),
	P(cuMemcpyDtoH_v2_ptds, 7000),
	P(cuMemcpyDtoD_v2, 3020),
	P(cuMemcpyDtoD_v2_ptds, 7000),
	P(cuMemcpyHtoDAsync_v2, 3020),
	P(cuMemcpyHtoDAsync_v2_ptsz, 7000),
	P(cuMemcpyDtoHAsync_v2, 3020),
	P(cuMemcpyDtoHAsync_v2_ptsz, 7000),
	P(cuMemcpyDtoDAsync_v2, 3020),
	P(cuMemcpyDtoDAsync_v2_ptsz, 7000),
	P(cuMemcpyPeer, 4000),
	P(cuMemcpyPeerAsync, 4000),
	P(cuMemcpy2D_v2, 3020),
	P(cuMemcpy2DAsync_v2, 3020),
	P(cuMemcpy3D_v2, 3020),
	P(cuMemcpy3DAsync_v2, 3020),
	P(cuModuleLoadData, 2000),
	P(cuModuleGetFunction, 2000),
	P(cuModuleUnload, 2000),
	P(cuLibraryLoadData, 12000),
	P(cuLibraryGetKernel, 12000),
	P(cuKernelGetFunction, 12000),
	P(cuLibraryUnload, 12000),
	P(cuFuncGetName, 12030),
	P(cuLaunchKernel, 4000),
	P(cuLaunchKernel_ptsz, 7000),
	P(cuLaunchKernelEx, 11060),
	P(cuLaunchKernelEx_ptsz, 11060),
	P(cuLaunchCooperativeKernel, 9000),
	P(cuLaunchCooperativeKernel_ptsz, 9000),
	P(cuGraphLaunch, 10000),
	P(cuGraphLaunch_ptsz, 10000),
	P(cuStreamCreate, 2000),
	P(cuStreamDestroy_v2, 4000),
	P(cuStreamSynchronize, 2000),
	P(cuStreamSynchronize_ptsz, 7000),
	P(cuEventCreate, 2000),
	P(cuEventRecord, 2000),
	P(cuEventRecord_ptsz, 7000),
	P(cuEventRecordWithFlags, 11010),
	P(cuEventRecordWithFlags_ptsz, 11010),
	P(cuEventSynchronize, 2000),
	P(cuEventElapsedTime, 2000),
	P(cuEventElapsedTime_v2, 12080),
	P(cuEventDestroy_v2, 4000),
	P(cuGraphCreate, 10000),
	P(cuGraphInstantiateWithFlags, 11040),
	P(cuGraphExecDestroy, 10000),
	P(cuGraphDestroy, 10000),
	P(cuDeviceCanAccessPeer, 4000),
	P(cuCtxEnablePeerAccess, 4000),
	P(cuCtxDisablePeerAccess, 4000),
	P(cuPointerGetAttribute, 4000),
	P(cuMemcpyPeer_ptds, 7000),
	P(cuMemcpyPeerAsync_ptsz, 7000),
	P(cuMemcpy3DPeer, 4000),
	P(cuMemcpy3DPeer_ptds, 7000),
	P(cuMemcpy3DPeerAsync, 4000),
	P(cuMemcpy3DPeerAsync_ptsz, 7000),
	P(cuFuncGetModule, 11000),
	P(cuKernelGetName, 12030),
	P(cuKernelGetLibrary, 12050),
	P(cuLibraryGetKernelCount, 12040),
	P(cuLibraryEnumerateKernels, 12040),
	P(cuModuleGetFunctionCount, 12040),
	P(cuModuleEnumerateFunctions, 12040),
	P(cuStreamQuery, 2000),
	P(cuStreamQuery_ptsz, 7000),
	P(cuStreamWaitEvent, 3020),
	P(cuStreamWaitEvent_ptsz, 7000),
	P(cuEventQuery, 2000),
	P(cuStreamBeginCapture, 10000),
	P(cuStreamBeginCapture_ptsz, 10000),
	P(cuStreamBeginCapture_v2, 10010),
	P(cuStreamBeginCapture_v2_ptsz, 10010),
	P(cuStreamBeginCaptureToGraph, 12030),
	P(cuStreamBeginCaptureToGraph_ptsz, 12030),
	P(cuStreamEndCapture, 10000),
	P(cuStreamEndCapture_ptsz, 10000),
	P(cuStreamIsCapturing, 10000),
	P(cuStreamIsCapturing_ptsz, 10000),
	P(cuStreamGetCaptureInfo_v3, 12030),
	P(cuStreamGetCaptureInfo_v3_ptsz, 12030),
	P(cuThreadExchangeStreamCaptureMode, 10010),
	P(cuGraphAddKernelNode, 10000),
	P(cuGraphAddMemAllocNode, 11040),
	P(cuGraphAddMemFreeNode, 11040),
	P(cuGraphAddKernelNode_v2, 12000),
	P(cuGraphKernelNodeGetParams, 10000),
	P(cuGraphKernelNodeGetParams_v2, 12000),
	P(cuGraphKernelNodeSetParams, 10000),
	P(cuGraphKernelNodeSetParams_v2, 12000),
	P(cuGraphNodeGetType, 10000),
	P(cuGraphGetNodes, 10000),
	P(cuGraphInstantiate, 10000),
	P(cuGraphInstantiate_v2, 11000),
	PA(cuGraphInstantiateWithFlags, 12000, "cuGraphInstantiate"),
	P(cuGraphInstantiateWithParams, 12000),
	P(cuGraphInstantiateWithParams_ptsz, 12000),
	P(cuGraphExecKernelNodeSetParams, 10010),
	P(cuGraphExecKernelNodeSetParams_v2, 12000),
	P(cuGraphExecUpdate, 10020),
	P(cuGraphExecUpdate_v2, 12000),
	P(cuGraphUpload, 11010),
	P(cuGraphUpload_ptsz, 11010),
#undef PA
#undef P
};

/*
 * Base name of an exported symbol (cuMemcpyHtoD_v2_ptds -> cuMemcpyHtoD),
 * and whether it is a per-thread-default-stream variant.
 */
static void proc_base(const char *sym, char *base, size_t cap, bool *pt)
{
	size_t len = strlen(sym);

	*pt = false;
	if (len > 5 && (strcmp(sym + len - 5, "_ptds") == 0 ||
			strcmp(sym + len - 5, "_ptsz") == 0)) {
		len -= 5;
		*pt = true;
	}
	if (len > 3 && sym[len - 3] == '_' && sym[len - 2] == 'v' &&
	    sym[len - 1] >= '0' && sym[len - 1] <= '9')
		len -= 3;
	if (len >= cap)
		len = cap - 1;
	memcpy(base, sym, len);
	base[len] = '\0';
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	const struct proc *best = NULL;
	bool want_pt = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	bool known = false, exact, spt;
	int best_score = -1;
	char sbase[64];

	if (!symbol || !pfn || cudaVersion > FAKECUDA_DRIVER_VERSION ||
	    (flags & ~(cuuint64_t)3))
		return CUDA_ERROR_INVALID_VALUE;
	/*
	 * The real lookup takes a base name ("cuMemAlloc").  A versioned
	 * exported name ("cuMemAlloc_v2") is also accepted here, as an exact
	 * match, so tests can ask for one variant directly.
	 */
	proc_base(symbol, sbase, sizeof(sbase), &spt);
	exact = strcmp(sbase, symbol) != 0;
	for (size_t i = 0; i < sizeof(proc_tab) / sizeof(proc_tab[0]); i++) {
		const struct proc *p = &proc_tab[i];
		char base[64];
		bool pt;
		int score;

		if (exact) {
			if (strcmp(p->sym, symbol) == 0) {
				best = p;
				known = true;
				break;
			}
			continue;
		}
		proc_base(p->sym, base, sizeof(base), &pt);
		if (p->base)
			snprintf(base, sizeof(base), "%s", p->base);
		if (strcmp(base, symbol) != 0)
			continue;
		known = true;
		if (p->since > cudaVersion || (pt && !want_pt))
			continue;
		/* Newest ABI wins; a per-thread variant wins when asked for. */
		score = p->since + (pt ? 1000000 : 0);
		if (score > best_score) {
			best_score = score;
			best = p;
		}
	}
	*pfn = NULL;
	/* POSIX (dlsym) makes function and object pointers interconvertible;
	 * memcpy keeps even -Wpedantic quiet about it. */
	if (best)
		memcpy(pfn, &best->fn, sizeof(*pfn));
	if (symbolStatus)
		*symbolStatus = best ? CU_GET_PROC_ADDRESS_SUCCESS :
			known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
				CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	/* Like the real one: not found is CUDA_SUCCESS with *pfn == NULL. */
	return CUDA_SUCCESS;
}

/* ======================================================================== */
/* Stand-in extensions (fakecuda_ext.h): not CUDA, never probed.            */
/* ======================================================================== */

#include "fakecuda_ext.h"

int fakecuda_kernel_stats(const char *name, struct fakecuda_kernel_stats *out)
{
	int rc = -1;

	if (!name || !out)
		return -1;
	LOCK();
	for (size_t i = 0; i < g.nkstats; i++) {
		if (strcmp(g.kstats[i]->name, name) == 0) {
			out->launched = g.kstats[i]->launched;
			out->captured = g.kstats[i]->captured;
			out->graph_executed = g.kstats[i]->graph;
			rc = 0;
			break;
		}
	}
	UNLOCK();
	return rc;
}

int fakecuda_copy_stats(int src, int dst, struct fakecuda_copy_stats *out)
{
	struct copytally *t;

	if (!out || src < -1 || dst < -1 || src >= MAX_DEVICES || dst >= MAX_DEVICES)
		return -1;
	LOCK();
	t = &g.copies[src + 1][dst + 1];
	out->copies = t->copies;
	out->bytes = t->bytes;
	out->graph_copies = t->graph_copies;
	out->graph_bytes = t->graph_bytes;
	UNLOCK();
	return 0;
}

uint64_t fakecuda_graph_launches(void)
{
	uint64_t n;

	LOCK();
	n = g.graph_launches;
	UNLOCK();
	return n;
}

int fakecuda_config(struct fakecuda_config *out)
{
	int rc = -1;

	if (!out)
		return -1;
	LOCK();
	if (g.inited) {
		out->devices = g.ndev;
		out->bw = g.bw;
		out->peer_bw = g.peer_bw;
		out->d2d_async = g.d2d_async;
		out->kernel_ns = g.kernel_ns;
		rc = 0;
	}
	UNLOCK();
	return rc;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void fakecuda_stats_json(FILE *f)
{
	bool first = true;

	if (!f)
		return;
	LOCK();
	fprintf(f, "{\"graph_launches\":%llu,\"kernels\":{",
		(unsigned long long)g.graph_launches);
	for (size_t i = 0; i < g.nkstats; i++) {
		struct kstat *k = g.kstats[i];

		fputs(i ? "," : "", f);
		json_str(f, k->name);
		fprintf(f, ":{\"launched\":%llu,\"captured\":%llu,\"graph_executed\":%llu}",
			(unsigned long long)k->launched,
			(unsigned long long)k->captured,
			(unsigned long long)k->graph);
	}
	fputs("},\"copies\":{", f);
	for (int s = 0; s <= MAX_DEVICES; s++) {
		for (int d = 0; d <= MAX_DEVICES; d++) {
			struct copytally *t = &g.copies[s][d];

			if (!t->copies && !t->graph_copies)
				continue;
			fputs(first ? "" : ",", f);
			first = false;
			if (s)
				fprintf(f, "\"%d->", s - 1);
			else
				fputs("\"host->", f);
			if (d)
				fprintf(f, "%d\"", d - 1);
			else
				fputs("host\"", f);
			fprintf(f, ":{\"copies\":%llu,\"bytes\":%llu,\"graph_copies\":%llu,"
				   "\"graph_bytes\":%llu}",
				(unsigned long long)t->copies, (unsigned long long)t->bytes,
				(unsigned long long)t->graph_copies,
				(unsigned long long)t->graph_bytes);
		}
	}
	fputs("}}", f);
	UNLOCK();
}

void fakecuda_set_next_kernel_ns(uint64_t ns)
{
	t_next_kernel_ns = ns;
}
