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
 * Environment (read once, by the first successful cuInit):
 *   FAKECUDA_DEVICES    number of devices (default 2, 0 = no device)
 *   FAKECUDA_MEM_LIMIT  bytes per device (default 80 GiB; K/M/G/T suffix ok)
 *   FAKECUDA_BW         copy bandwidth in bytes/s (default 4e9)
 *   FAKECUDA_KERNEL_NS  simulated duration of one launch (default 2000)
 *
 * Deliberate simplifications: device memory has no backing store (copies
 * move no data), CUDA arrays are not supported, memory stays allocated when
 * a context is destroyed, and a thread without a current context falls
 * back to device 0's primary context once cuInit has been called.
 */
#define _GNU_SOURCE
#include "fakecuda.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
#define MAX_DEVICES 64
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

struct CUstream_st {
	unsigned int flags;
	struct CUctx_st *ctx;
	uint64_t busy_until;	/* CLOCK_MONOTONIC ns when queued work ends */
};

struct CUctx_st {
	CUdevice dev;
	bool primary;
	bool destroyed;
	int refcnt;
	struct CUstream_st null_stream;	/* the legacy default stream */
};

struct CUevent_st {
	unsigned int flags;
	bool recorded;
	uint64_t t;	/* completion time of the work before the record */
};

struct CUfunc_st {
	struct CUmod_st *mod;	/* NULL for functions got from a CUkernel */
	struct CUkern_st *kern;
	const char *name;
};

struct CUmod_st {
	size_t n;
	struct CUfunc_st *funcs;
	char *names;	/* one buffer holding all the names */
};

struct CUkern_st {
	struct CUlib_st *lib;
	const char *name;
	struct CUfunc_st *func;	/* made by the first cuKernelGetFunction */
};

struct CUlib_st {
	size_t n;
	struct CUkern_st *kerns;
	char *names;
};

struct CUgraph_st {
	int unused;
};

struct CUgraphExec_st {
	struct CUgraph_st *graph;
};

enum obj_kind {
	OBJ_CTX = 1, OBJ_STREAM, OBJ_EVENT, OBJ_MODULE, OBJ_FUNC, OBJ_LIB,
	OBJ_KERNEL, OBJ_GRAPH, OBJ_GEXEC,
};

enum mem_kind {
	MEM_ALLOC = 1, MEM_PITCH, MEM_MANAGED, MEM_ASYNC, MEM_POOL,
	MEM_RESERVE,	/* VA reservation: no memory, not copyable by itself */
	MEM_HOST, MEM_HOSTREG, MEM_HANDLE, MEM_MAPPING,
};

struct devstate {
	uint64_t next;	/* bump pointer: addresses are never reused */
	uint64_t used;	/* outstanding bytes charged against mem_limit */
	struct vec mem;	/* allocations and VA reservations */
	struct vec maps;	/* cuMemMap'ed ranges (inside reservations) */
	struct CUctx_st *primary;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
	bool inited;
	int ndev;
	uint64_t mem_limit;
	double bw;
	uint64_t kernel_ns;
	uint64_t next_handle;
	struct devstate *dev;
	struct vec objs;	/* live handles, for validation without deref */
	struct vec host;	/* cuMemAllocHost/cuMemHostAlloc blocks */
	struct vec hostreg;	/* cuMemHostRegister ranges */
	struct vec handles;	/* cuMemCreate handles */
} g;

static _Thread_local struct CUctx_st *t_stack[CTX_STACK_DEPTH];
static _Thread_local int t_depth;
/* This thread's per-thread default stream (_ptsz/_ptds, CU_STREAM_PER_THREAD). */
static _Thread_local struct CUstream_st t_pts;

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

static uint64_t copy_ns(uint64_t bytes)
{
	return (uint64_t)((double)bytes * 1e9 / g.bw);
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
	*dptr = addr;
	return CUDA_SUCCESS;
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
	if (has_stream) {
		rc = stream_of(ctx, s, ptsz, &st);
		if (rc)
			goto out;
	}
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
	if (has_stream) {
		rc = stream_of(ctx, s, ptsz, &st);
		if (rc)
			goto out;
	}
	if (dptr == 0)	/* like free(NULL) */
		goto out;
	d = dev_of_addr(dptr);
	e = d >= 0 ? vec_find(&g.dev[d].mem, dptr) : NULL;
	if (!e || e->kind == MEM_RESERVE) {
		rc = CUDA_ERROR_INVALID_VALUE;
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
 * Common tail of every copy: validation is done by the caller (under the
 * lock); this charges the time and, for synchronous copies, drops the lock
 * and sleeps until the copy (and the work queued before it) is done.
 */
static CUresult copy_finish(struct CUctx_st *ctx, uint64_t bytes, int mode,
			    struct CUstream_st *st)
{
	uint64_t done;

	if (mode == COPY_SYNC || mode == COPY_SYNC_PTDS)
		st = mode == COPY_SYNC ? &ctx->null_stream : &t_pts;
	done = charge(st, copy_ns(bytes));
	UNLOCK();
	if (mode == COPY_SYNC || mode == COPY_SYNC_PTDS)
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
	return copy_finish(ctx, n, mode, st);
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
	return copy_finish(ctx, n, mode, st);
}

/* One side of a 2D/3D copy, described the way the descriptors do. */
struct side3d {
	CUmemorytype type;
	const void *host;
	CUdeviceptr dev;
	CUarray array;
	size_t x, y, z, pitch, height;
};

static CUresult side3d_check(const struct side3d *sd, size_t w, size_t h,
			     size_t depth)
{
	uint64_t base, off, extent;
	int kind, dev;

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
	return side_check(kind, base + off, extent, &dev);
}

static NOINL CUresult do_copy3d(const struct side3d *src,
				const struct side3d *dst, size_t w, size_t h,
				size_t depth, int mode, CUstream s)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st = NULL;
	CUresult rc;

	rc = copy_begin(mode, s, &ctx, &st);
	if (rc)
		return rc;
	if (w == 0 || h == 0 || depth == 0) {
		UNLOCK();
		return CUDA_SUCCESS;
	}
	rc = side3d_check(src, w, h, depth);
	if (rc == CUDA_SUCCESS)
		rc = side3d_check(dst, w, h, depth);
	if (rc) {
		UNLOCK();
		return rc;
	}
	return copy_finish(ctx, (uint64_t)w * h * depth, mode, st);
}

static NOINL CUresult do_copy2d(const CUDA_MEMCPY2D *p, int mode, CUstream s)
{
	struct side3d src, dst;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	src = (struct side3d){ p->srcMemoryType, p->srcHost, p->srcDevice,
			       p->srcArray, p->srcXInBytes, p->srcY, 0,
			       p->srcPitch, p->Height };
	dst = (struct side3d){ p->dstMemoryType, p->dstHost, p->dstDevice,
			       p->dstArray, p->dstXInBytes, p->dstY, 0,
			       p->dstPitch, p->Height };
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
			       p->srcPitch, p->srcHeight };
	dst = (struct side3d){ p->dstMemoryType, p->dstHost, p->dstDevice,
			       p->dstArray, p->dstXInBytes, p->dstY, p->dstZ,
			       p->dstPitch, p->dstHeight };
	return do_copy3d(&src, &dst, p->WidthInBytes, p->Height, p->Depth,
			 mode, s);
}

/* ------------------------------------------------------------------------ */
/* Modules and libraries: a fake image is a text list of kernel names. */

/*
 * Splits image into names (one per line; blank lines and '#' comments are
 * skipped).  *buf receives the storage, *names n pointers into it.
 */
static CUresult parse_image(const void *image, char **buf, const char ***names,
			    size_t *n)
{
	size_t len, cnt = 0;
	char *b, *line, *save = NULL;
	const char **v;

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
	for (line = strtok_r(b, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *end;
		bool dup = false;

		while (*line == ' ' || *line == '\t' || *line == '\r')
			line++;
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
				CUstream s, void **params, void **extra,
				bool ptsz)
{
	struct CUctx_st *ctx;
	struct CUstream_st *st;
	CUresult rc;
	int kind;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	/* CUDA 12+ accepts a CUkernel wherever a CUfunction is expected. */
	kind = obj_kind(f);
	if (kind != OBJ_FUNC && kind != OBJ_KERNEL) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	if (!gx || !gy || !gz || !bx || !by || !bz ||
	    (uint64_t)bx * by * bz > 1024 || (params && extra)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = stream_of(ctx, s, ptsz, &st);
	if (rc)
		goto out;
	charge(st, g.kernel_ns);
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
			 c->blockDimY, c->blockDimZ, c->hStream, params, extra,
			 ptsz);
}

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
	if (rc)
		goto out;
	/* Graphs here have no nodes; charge one launch for the whole graph. */
	charge(st, g.kernel_ns);
out:
	UNLOCK();
	return rc;
}

static NOINL CUresult do_stream_sync(CUstream s, bool ptsz)
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
		until = st->busy_until;
	UNLOCK();
	if (rc == CUDA_SUCCESS)
		sleep_until(until);
	return rc;
}

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
	if (rc)
		goto out;
	ev->t = max_u64(now_ns(), st->busy_until);
	ev->recorded = true;
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
	} else if (!obj_ok(a, OBJ_EVENT) || !obj_ok(b, OBJ_EVENT) ||
		   !a->recorded || !b->recorded ||
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

CUresult cuInit(unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	int ndev;

	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	if (g.inited)
		goto out;
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
	g.kernel_ns = env_u64("FAKECUDA_KERNEL_NS", 2000);
	g.next_handle = 0xcafe000000000000ull;
	g.handles.no_reuse = true;
	g.inited = true;
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

CUresult cuCtxSynchronize(void)
{
	struct CUctx_st *ctx;
	uint64_t until = 0;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
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
	if (!c)
		rc = cur_ctx(&c);
	if (rc == CUDA_SUCCESS)
		until = ctx_busy_until(c);
	UNLOCK();
	if (rc == CUDA_SUCCESS)
		sleep_until(until);
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
	E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context active"),
	E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
	E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
	E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
	E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
	E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
	E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
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

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
			   CUdeviceptr srcDevice, CUcontext srcContext,
			   size_t ByteCount, CUstream hStream)
{
	return do_copy_peer(dstDevice, dstContext, srcDevice, srcContext,
			    ByteCount, COPY_ASYNC, hStream);
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

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	struct CUctx_st *ctx;
	struct CUmod_st *m = NULL;
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
	m = calloc(1, sizeof(*m));
	if (m)
		m->funcs = calloc(n + 1, sizeof(*m->funcs));
	if (!m || !m->funcs || !obj_add(m, OBJ_MODULE)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto fail;
	}
	m->n = n;
	m->names = buf;
	for (size_t i = 0; i < n; i++) {
		m->funcs[i].mod = m;
		m->funcs[i].name = names[i];
		/* Each CUfunction is a distinct pointer into m->funcs. */
		if (!obj_add(&m->funcs[i], OBJ_FUNC)) {
			while (i--)
				obj_del(&m->funcs[i]);
			obj_del(m);
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto fail;
		}
	}
	free(names);
	*module = m;
	goto out;
fail:
	if (m)
		free(m->funcs);
	free(m);
	free(buf);
	free(names);
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
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!obj_ok(hmod, OBJ_MODULE)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		for (size_t i = 0; i < hmod->n; i++)
			obj_del(&hmod->funcs[i]);
		obj_del(hmod);
		free(hmod->funcs);
		free(hmod->names);
		free(hmod);
	}
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
	struct CUlib_st *l = NULL;
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
	l = calloc(1, sizeof(*l));
	if (l)
		l->kerns = calloc(n + 1, sizeof(*l->kerns));
	if (!l || !l->kerns || !obj_add(l, OBJ_LIB)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto fail;
	}
	l->n = n;
	l->names = buf;
	for (size_t i = 0; i < n; i++) {
		l->kerns[i].lib = l;
		l->kerns[i].name = names[i];
		if (!obj_add(&l->kerns[i], OBJ_KERNEL)) {
			while (i--)
				obj_del(&l->kerns[i]);
			obj_del(l);
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto fail;
		}
	}
	free(names);
	*library = l;
	goto out;
fail:
	if (l)
		free(l->kerns);
	free(l);
	free(buf);
	free(names);
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

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct CUctx_st *ctx;
	struct CUfunc_st *f;
	CUresult rc;

	LOCK();
	rc = cur_ctx(&ctx);
	if (rc)
		goto out;
	if (!pFunc) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!obj_ok(kernel, OBJ_KERNEL)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	if (!kernel->func) {
		f = calloc(1, sizeof(*f));
		if (!f || !obj_add(f, OBJ_FUNC)) {
			free(f);
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		f->kern = kernel;
		f->name = kernel->name;
		kernel->func = f;
	}
	*pFunc = kernel->func;
out:
	UNLOCK();
	return rc;
}

CUresult cuLibraryUnload(CUlibrary library)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!obj_ok(library, OBJ_LIB)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		for (size_t i = 0; i < library->n; i++) {
			struct CUkern_st *k = &library->kerns[i];

			obj_del(k);
			if (k->func) {
				obj_del(k->func);
				free(k->func);
			}
		}
		obj_del(library);
		free(library->kerns);
		free(library->names);
		free(library);
	}
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

/* ------------------------------------------------------------------------ */
/* Launches. */

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
			unsigned int gridDimY, unsigned int gridDimZ,
			unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes,
			CUstream hStream, void **kernelParams, void **extra)
{
	(void)sharedMemBytes;
	return do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
			 blockDimZ, hStream, kernelParams, extra, false);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
			     unsigned int gridDimY, unsigned int gridDimZ,
			     unsigned int blockDimX, unsigned int blockDimY,
			     unsigned int blockDimZ,
			     unsigned int sharedMemBytes, CUstream hStream,
			     void **kernelParams, void **extra)
{
	(void)sharedMemBytes;
	return do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
			 blockDimZ, hStream, kernelParams, extra, true);
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
	(void)sharedMemBytes;
	return do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
			 blockDimZ, hStream, kernelParams, NULL, false);
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
	(void)sharedMemBytes;
	return do_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
			 blockDimZ, hStream, kernelParams, NULL, true);
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

/* Pending work is simply forgotten, as the real one returns at once too. */
CUresult cuStreamDestroy_v2(CUstream hStream)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!obj_ok(hStream, OBJ_STREAM)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		obj_del(hStream);
		free(hStream);
	}
	UNLOCK();
	return rc;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	return do_stream_sync(hStream, false);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	return do_stream_sync(hStream, true);
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

CUresult cuEventSynchronize(CUevent hEvent)
{
	CUresult rc = CUDA_SUCCESS;
	uint64_t until = 0;

	LOCK();
	if (!g.inited)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!obj_ok(hEvent, OBJ_EVENT))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (hEvent->recorded)	/* never recorded: nothing to wait for */
		until = hEvent->t;
	UNLOCK();
	if (rc == CUDA_SUCCESS)
		sleep_until(until);
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
		free(hEvent);
	}
	UNLOCK();
	return rc;
}

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct CUgraph_st *gr;
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!phGraph || flags) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!(gr = calloc(1, sizeof(*gr))) || !obj_add(gr, OBJ_GRAPH)) {
		free(gr);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*phGraph = gr;
	}
	UNLOCK();
	return rc;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
				     unsigned long long flags)
{
	struct CUgraphExec_st *ge;
	CUresult rc = CUDA_SUCCESS;

	(void)flags;
	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!phGraphExec) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!obj_ok(hGraph, OBJ_GRAPH)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else if (!(ge = calloc(1, sizeof(*ge))) || !obj_add(ge, OBJ_GEXEC)) {
		free(ge);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		ge->graph = hGraph;
		*phGraphExec = ge;
	}
	UNLOCK();
	return rc;
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
		free(hGraphExec);
	}
	UNLOCK();
	return rc;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
	CUresult rc = CUDA_SUCCESS;

	LOCK();
	if (!g.inited) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
	} else if (!obj_ok(hGraph, OBJ_GRAPH)) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		/* Executable graphs are independent of their graph: keep them. */
		obj_del(hGraph);
		free(hGraph);
	}
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
} proc_tab[] = {
#define P(name, since) { #name, (fnptr)name, since }
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
	P(cuEventSynchronize, 2000),
	P(cuEventElapsedTime, 2000),
	P(cuEventElapsedTime_v2, 12080),
	P(cuEventDestroy_v2, 4000),
	P(cuGraphCreate, 10000),
	P(cuGraphInstantiateWithFlags, 11040),
	P(cuGraphExecDestroy, 10000),
	P(cuGraphDestroy, 10000),
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
