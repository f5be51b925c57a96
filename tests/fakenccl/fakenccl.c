/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fakenccl.c - a stand-in NCCL (libnccl.so.2) for testing gpuprobe's --nccl
 * without GPUs.
 *
 * What a tracer relies on, and so what this file is careful about:
 *  - NCCL's exported signatures (fakenccl.h, checked against nccl.h 2.28.9 by
 *    check_signatures.sh), each call exported twice as NCCL 2.28 does:
 *    pncclX is the function and ncclX a weak alias at the same address, so a
 *    uprobe on either fires for both (a tracer must pick one);
 *  - exported functions never call each other (static helpers only), so one
 *    call is one probe hit;
 *  - ncclUniqueId is a 128-byte struct passed by value: on x86-64 it is
 *    copied to the stack, so in ncclCommInitRank(comm, nranks, id, rank) the
 *    rank is the THIRD integer argument (%rdx), not the fourth -- checked with
 *    objdump on a caller built against this header;
 *  - ranks are separate processes that share a unique id: ncclCommInitRank
 *    blocks until all nranks have joined and ncclCommSplit until all have
 *    said their color, as NCCL's do.  They meet in a small POSIX shared-memory
 *    segment named after the id (/dev/shm/fakenccl-*, its name removed as
 *    soon as all ranks have mapped it), which carries only that bookkeeping:
 *    no data moves between ranks (the buffers have no contents anyway; the
 *    stand-in driver's memory has no backing store);
 *  - collectives "run" by launching, through the driver's cuLaunchKernel on
 *    the caller's stream, one of the 40 kernels NCCL 2.28.9 (CUDA 13 build)
 *    has, by their mangled names (nccl_kernels[], the list read from the real
 *    libnccl.so.2 with strings), e.g.
 *    _Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE.
 *    NCCL has a kernel only per (op, Sum, type, RING or TREE, LL): any other
 *    reduction, protocol or signed type runs in the kernel of the same op with
 *    Sum, the unsigned type and LL (see kernel_for) -- so a kernel's name says
 *    the op, the type up to sign, the algorithm, and nothing about the
 *    reduction or the protocol.  Point-to-point calls, AlltoAll, Gather and
 *    Scatter launch ncclDevKernel_SendRecv, p2p one per group and stream, at
 *    ncclGroupEnd.  The kernels come from one library loaded with
 *    cuLibraryLoadData, every handle taken with cuLibraryGetKernel at the
 *    first communicator's init (see lib_load);
 *  - calls are valid or invalid as NCCL's: a NULL or destroyed communicator,
 *    an unknown data type or reduction, a root or peer out of range, a NULL
 *    buffer with a non-zero count are ncclInvalidArgument; a count of 0 is
 *    ncclSuccess and launches nothing.
 *
 * Timing (the stand-in driver's FAKECUDA_KERNEL_NS is replaced per kernel
 * through fakecuda_set_next_kernel_ns): a kernel takes 5 us plus its bus
 * bytes at FAKENCCL_BUSBW_GBPS (default 10, GB/s), bus bytes as nccl-tests
 * defines them (AllReduce 2(n-1)/n x size; AllGather, ReduceScatter, AlltoAll
 * (n-1)/n x total; Broadcast, Reduce 1 x size; SendRecv the larger of what
 * the group sends and receives).  Algorithm always RING (NCCL's tuner may
 * pick TREE); the block size follows a protocol guess (LL up to 64 KiB a
 * rank), which no name shows.  FAKENCCL_TIMEOUT_MS (default 30000) bounds
 * the rank rendezvous.
 * FAKENCCL_LAUNCH_EX=1 launches with cuLaunchKernelEx instead.
 * A rank held (a hang, as a real rank waits in its kernel for a peer that has not
 * entered): FAKENCCL_HOLD_RANK=R, FAKENCCL_HOLD_AT=I (default 0), FAKENCCL_HOLD_MS=M
 * (default 3600000): rank R's I-th collective (counted per communicator, from 0) runs M
 * ms on its stream instead of its size's time, so queries say not ready until then.
 *
 * Deliberate simplifications: no device memory is allocated, communicators
 * are never freed (a destroyed one stays recognisable), non-blocking
 * communicators (config->blocking = 0) behave as blocking ones, and
 * collectives in one group are launched one kernel each (NCCL may fuse them).
 * Built with -DFAKENCCL_PARTIAL it lacks the point-to-point calls,
 * ncclAlltoAll, ncclGather, ncclScatter, ncclCommShrink and
 * ncclCommInitRankScalable: a libnccl with missing symbols, for tests.
 */
#define _GNU_SOURCE
#include "fakenccl.h"
#include "profhook.h"
#include "fakecuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
/* As NCCL's own NCCL_API: the p-name is the function, the plain name a weak alias of it. */
#define NCCL_API(ret, name, ...)                                                 \
	EXPORT ret name(__VA_ARGS__) __attribute__((weak, alias("p" #name)));  \
	EXPORT ret p##name(__VA_ARGS__)

#define MAX_RANKS 64
#define MAX_ROUNDS 32	/* splits and shrinks of one communicator */
#define MAX_REDOPS 16	/* live ncclRedOpCreatePreMulSum ops per communicator */
#define ID_MAGIC "FAKENCCL"
#define COMM_MAGIC 0x6e63636c636f6d6dull	/* "ncclcomm" */
#define BASE_NS 5000

/* ------------------------------------------------------------------------ */
/* The rendezvous segment shared by the ranks of one communicator. */

struct rv_round {
	int32_t color[MAX_RANKS];
	int32_t key[MAX_RANKS];
	uint32_t posted[MAX_RANKS];
};

struct rv {
	uint32_t nranks;	/* set by the first rank to arrive */
	uint32_t arrived[MAX_RANKS];
	uint32_t narrived;
	struct rv_round rounds[MAX_ROUNDS];
};

/*
 * The id, as ncclGetUniqueId makes it: "FAKENCCL", 16 random bytes (which
 * name the segment), a kind byte (0 made by ncclGetUniqueId, 1 by a split, 2 by
 * a shrink), zeros.  A tracer hashes all 128 bytes; that is all it may assume.
 */
struct id_layout {
	char magic[8];
	uint64_t rnd[2];
	uint8_t kind;
};

struct ncclComm {
	uint64_t magic;	/* COMM_MAGIC while usable */
	ncclUniqueId id;
	int nranks, rank, dev;
	CUcontext ctx;
	struct rv *rv;
	char shm_name[64];
	int rounds;	/* splits and shrinks so far: every rank makes them in one order */
	long colls;	/* collectives run so far (FAKENCCL_HOLD_AT) */
	bool finalized;
	bool redop_live[MAX_REDOPS];
	ncclDataType_t redop_type[MAX_REDOPS];
	struct prof_comm prof;	/* NCCL_PROFILER_PLUGIN's (profhook.c) */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm **g_comms;	/* every communicator ever made (never freed) */
static size_t g_ncomms, g_capcomms;

/*
 * Every kernel of NCCL 2.28.9 as built for CUDA 13, read from its
 * libnccl.so.2 (strings; tests/gpu/check_standins.sh compares the list with
 * the library on a machine).  One name a line, for that script.
 */
static const char *const nccl_kernels[] = {
	"ncclDevKernel_Generic",
	"ncclDevKernel_SendRecv",
	"ncclDevKernel_AllGather_RING_LL",
	"ncclDevKernel_Broadcast_RING_LL",
	"ncclDevKernel_AllReduce_Sum_u8_RING_LL",
	"ncclDevKernel_AllReduce_Sum_u8_TREE_LL",
	"ncclDevKernel_AllReduce_Sum_u32_RING_LL",
	"ncclDevKernel_AllReduce_Sum_u32_TREE_LL",
	"ncclDevKernel_AllReduce_Sum_u64_RING_LL",
	"ncclDevKernel_AllReduce_Sum_u64_TREE_LL",
	"ncclDevKernel_AllReduce_Sum_f16_RING_LL",
	"ncclDevKernel_AllReduce_Sum_f16_TREE_LL",
	"ncclDevKernel_AllReduce_Sum_f32_RING_LL",
	"ncclDevKernel_AllReduce_Sum_f32_TREE_LL",
	"ncclDevKernel_AllReduce_Sum_f64_RING_LL",
	"ncclDevKernel_AllReduce_Sum_f64_TREE_LL",
	"ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
	"ncclDevKernel_AllReduce_Sum_bf16_TREE_LL",
	"ncclDevKernel_AllReduce_Sum_f8e4m3_RING_LL",
	"ncclDevKernel_AllReduce_Sum_f8e4m3_TREE_LL",
	"ncclDevKernel_AllReduce_Sum_f8e5m2_RING_LL",
	"ncclDevKernel_AllReduce_Sum_f8e5m2_TREE_LL",
	"ncclDevKernel_Reduce_Sum_u8_RING_LL",
	"ncclDevKernel_Reduce_Sum_u32_RING_LL",
	"ncclDevKernel_Reduce_Sum_u64_RING_LL",
	"ncclDevKernel_Reduce_Sum_f16_RING_LL",
	"ncclDevKernel_Reduce_Sum_f32_RING_LL",
	"ncclDevKernel_Reduce_Sum_f64_RING_LL",
	"ncclDevKernel_Reduce_Sum_bf16_RING_LL",
	"ncclDevKernel_Reduce_Sum_f8e4m3_RING_LL",
	"ncclDevKernel_Reduce_Sum_f8e5m2_RING_LL",
	"ncclDevKernel_ReduceScatter_Sum_u8_RING_LL",
	"ncclDevKernel_ReduceScatter_Sum_u32_RING_LL",
	"ncclDevKernel_ReduceScatter_Sum_u64_RING_LL",
	"ncclDevKernel_ReduceScatter_Sum_f16_RING_LL",
	"ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
	"ncclDevKernel_ReduceScatter_Sum_f64_RING_LL",
	"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
	"ncclDevKernel_ReduceScatter_Sum_f8e4m3_RING_LL",
	"ncclDevKernel_ReduceScatter_Sum_f8e5m2_RING_LL",
};
#define NKERNELS ((int)(sizeof(nccl_kernels) / sizeof(nccl_kernels[0])))
#define K_GENERIC 0
#define K_SENDRECV 1

static const size_t ty_size[ncclNumTypes] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

static CUlibrary g_lib;
static CUkernel g_kern[NKERNELS];

static _Thread_local char t_last_error[256];

/* ------------------------------------------------------------------------ */
/* Errors and environment. */

static ncclResult_t fail(ncclResult_t rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static ncclResult_t fail(ncclResult_t rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t_last_error, sizeof(t_last_error), fmt, ap);
	va_end(ap);
	return rc;
}

static long env_long(const char *name, long def)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, 10);
	return (errno || *end || v < 0) ? def : v;
}

static double env_gbps(const char *name, double def)
{
	const char *s = getenv(name);
	char *end;
	double v;

	if (!s || !*s)
		return def;
	v = strtod(s, &end);
	return (end == s || *end || !(v > 0)) ? def : v;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Polls cond (an atomic read) every 100 us until true or the rendezvous timeout. */
#define WAIT_UNTIL(cond)                                                        \
	({                                                                      \
		uint64_t dl_ = now_ms() + (uint64_t)env_long("FAKENCCL_TIMEOUT_MS", 30000); \
		bool ok_ = true;                                                \
		while (!(cond)) {                                               \
			struct timespec ts_ = { 0, 100000 };                    \
			if (now_ms() > dl_) {                                   \
				ok_ = false;                                    \
				break;                                          \
			}                                                       \
			nanosleep(&ts_, NULL);                                  \
		}                                                               \
		ok_;                                                            \
	})

static uint32_t ld(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------------ */
/* Communicators. */

static bool id_ok(const ncclUniqueId *id)
{
	return memcmp(id->internal, ID_MAGIC, 8) == 0;
}

/* FNV-1a: a child's id from its parent's, the round and the color. */
static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void id_child(const ncclUniqueId *parent, int kind, int round, int64_t salt,
		     ncclUniqueId *out)
{
	struct id_layout l;
	int32_t r = round;

	memset(out, 0, sizeof(*out));
	memcpy(l.magic, ID_MAGIC, 8);
	l.rnd[0] = fnv(&salt, sizeof(salt), fnv(&r, sizeof(r), fnv(parent, sizeof(*parent),
								      0xcbf29ce484222325ull)));
	l.rnd[1] = fnv(&l.rnd[0], sizeof(l.rnd[0]), l.rnd[0] ^ 0x9e3779b97f4a7c15ull);
	l.kind = (uint8_t)kind;
	memcpy(out, &l, sizeof(l));
}

static bool comm_register(struct ncclComm *c)
{
	bool ok = true;

	pthread_mutex_lock(&g_lock);
	if (g_ncomms == g_capcomms) {
		size_t ncap = g_capcomms ? 2 * g_capcomms : 16;
		struct ncclComm **nv = realloc(g_comms, ncap * sizeof(*nv));

		if (nv) {
			g_comms = nv;
			g_capcomms = ncap;
		}
	}
	if (g_ncomms < g_capcomms)
		g_comms[g_ncomms++] = c;
	else
		ok = false;
	pthread_mutex_unlock(&g_lock);
	return ok;
}

/*
 * NCCL's CommCheck: NULL, or not a live communicator (destroyed ones stay
 * known here, never freed), is ncclInvalidArgument.  A pointer that this
 * library never made is not dereferenced.
 */
static ncclResult_t comm_check(const struct ncclComm *c, const char *what)
{
	bool known = false;

	if (!c)
		return fail(ncclInvalidArgument, "%s: comm argument is NULL", what);
	pthread_mutex_lock(&g_lock);
	for (size_t i = 0; i < g_ncomms && !known; i++)
		known = g_comms[i] == c;
	pthread_mutex_unlock(&g_lock);
	if (!known || c->magic != COMM_MAGIC)
		return fail(ncclInvalidArgument, "%s: invalid or destroyed communicator", what);
	return ncclSuccess;
}

static ncclResult_t config_check(const ncclConfig_t *cfg)
{
	if (!cfg)
		return ncclSuccess;
	if (cfg->magic != 0xcafebeef || cfg->size < offsetof(ncclConfig_t, netName) ||
	    cfg->version < 21400)
		return fail(ncclInvalidArgument,
			    "config not initialized with NCCL_CONFIG_INITIALIZER");
	return ncclSuccess;
}

static void rv_name(const ncclUniqueId *id, char *name, size_t cap)
{
	struct id_layout l;

	memcpy(&l, id, sizeof(l));
	snprintf(name, cap, "/fakenccl-%016llx%016llx", (unsigned long long)l.rnd[0],
		 (unsigned long long)l.rnd[1]);
}

/* Maps (creating it if needed) the rendezvous segment of an id. */
static ncclResult_t rv_open(const ncclUniqueId *id, struct rv **out, char *name, size_t cap)
{
	void *p;
	int fd;

	rv_name(id, name, cap);
	fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(ncclSystemError, "shm_open %s: %s", name, strerror(errno));
	/* Every rank sizes it the same: creation races are harmless, zeros are the start. */
	if (ftruncate(fd, sizeof(struct rv))) {
		close(fd);
		return fail(ncclSystemError, "ftruncate %s: %s", name, strerror(errno));
	}
	p = mmap(NULL, sizeof(struct rv), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return fail(ncclSystemError, "mmap %s: %s", name, strerror(errno));
	*out = p;
	return ncclSuccess;
}

/* The segment's name was removed once every rank had joined; the mapping goes with the comm. */
static void rv_leave(struct ncclComm *c)
{
	if (!c->rv)
		return;
	munmap(c->rv, sizeof(struct rv));
	c->rv = NULL;
}

/* The CUDA device the calling thread works on, as cudaGetDevice would say. */
static ncclResult_t current_device(int *dev)
{
	CUresult rc = cuInit(0);

	if (rc == CUDA_SUCCESS)
		rc = cuCtxGetDevice(dev);
	if (rc != CUDA_SUCCESS)
		return fail(ncclUnhandledCudaError, "Cuda failure %d", (int)rc);
	return ncclSuccess;
}

static ncclResult_t kernels_init(void);

/*
 * Makes a communicator and joins the rendezvous; with wait, blocks until all
 * nranks have joined (ncclCommInitRank's implicit synchronization).
 */
static ncclResult_t comm_init(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank,
			      int dev, bool wait)
{
	struct ncclComm *c;
	uint32_t want = 0;
	ncclResult_t rc;
	CUresult cr;
	int ndev = 0;

	if (!out)
		return fail(ncclInvalidArgument, "comm argument is NULL");
	if (nranks < 1 || nranks > MAX_RANKS)
		return fail(ncclInvalidArgument, "invalid nranks %d (1..%d here)", nranks,
			    MAX_RANKS);
	if (rank < 0 || rank >= nranks)
		return fail(ncclInvalidArgument, "invalid rank %d, nranks %d", rank, nranks);
	if (!id_ok(id))
		return fail(ncclInvalidArgument, "not a unique id from ncclGetUniqueId");
	cr = cuDeviceGetCount(&ndev);
	if (cr != CUDA_SUCCESS || dev < 0 || dev >= ndev)
		return fail(ncclInvalidArgument, "invalid CUDA device %d", dev);
	rc = kernels_init();
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return fail(ncclSystemError, "out of memory");
	c->id = *id;
	c->nranks = nranks;
	c->rank = rank;
	c->dev = dev;
	cr = cuDevicePrimaryCtxRetain(&c->ctx, dev);
	if (cr != CUDA_SUCCESS) {
		free(c);
		return fail(ncclUnhandledCudaError, "Cuda failure %d", (int)cr);
	}
	rc = rv_open(id, &c->rv, c->shm_name, sizeof(c->shm_name));
	if (rc) {
		free(c);
		return rc;
	}
	if (!__atomic_compare_exchange_n(&c->rv->nranks, &want, (uint32_t)nranks, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) &&
	    want != (uint32_t)nranks) {
		munmap(c->rv, sizeof(struct rv));
		free(c);
		return fail(ncclInvalidUsage, "nranks %d differs from another rank's %u", nranks,
			    want);
	}
	want = 0;
	if (!__atomic_compare_exchange_n(&c->rv->arrived[rank], &want, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		munmap(c->rv, sizeof(struct rv));
		free(c);
		return fail(ncclInvalidUsage, "rank %d joined twice", rank);
	}
	__atomic_add_fetch(&c->rv->narrived, 1, __ATOMIC_ACQ_REL);
	if (wait && !WAIT_UNTIL(ld(&c->rv->narrived) == (uint32_t)nranks)) {
		/* Leave no trace: the last one out of a failed rendezvous removes it. */
		__atomic_store_n(&c->rv->arrived[rank], 0, __ATOMIC_RELEASE);
		if (__atomic_sub_fetch(&c->rv->narrived, 1, __ATOMIC_ACQ_REL) == 0)
			shm_unlink(c->shm_name);
		munmap(c->rv, sizeof(struct rv));
		free(c);
		return fail(ncclSystemError, "timed out waiting for %d ranks", nranks);
	}
	/*
	 * Everyone has it mapped: the name can go now (ENOENT for all but the
	 * first), so a job that dies later leaves nothing in /dev/shm.
	 */
	if (wait)
		shm_unlink(c->shm_name);
	c->magic = COMM_MAGIC;
	/* the id's meaningful bytes (a child id's padding differs between ranks) */
	fakenccl_prof_init(&c->prof, id, offsetof(struct id_layout, kind) + 1, nranks, rank);
	if (!comm_register(c)) {
		munmap(c->rv, sizeof(struct rv));
		free(c);
		return fail(ncclSystemError, "out of memory");
	}
	*out = c;
	return ncclSuccess;
}

static ncclResult_t comm_end(ncclComm_t c, const char *what)
{
	ncclResult_t rc;

	if (!c)	/* as NCCL: nothing to do */
		return ncclSuccess;
	rc = comm_check(c, what);
	if (rc)
		return rc;
	c->magic = 0;
	fakenccl_prof_end(&c->prof);
	rv_leave(c);
	cuDevicePrimaryCtxRelease_v2(c->dev);
	return ncclSuccess;
}

/* ------------------------------------------------------------------------ */
/* Kernels. */

static int proto_of(uint64_t bytes)
{
	return bytes <= (64u << 10) ? 0 : bytes <= (1u << 20) ? 1 : 2;
}

/* The mangled name of kernel k: _Z<len><name>24ncclDevKernelArgsStorageILm4096EE. */
static void kernel_name(int k, char *buf, size_t cap)
{
	snprintf(buf, cap, "_Z%zu%s24ncclDevKernelArgsStorageILm4096EE", strlen(nccl_kernels[k]),
		 nccl_kernels[k]);
}

/*
 * The kernel NCCL runs a reducing collective in: the op's kernel for Sum on
 * the type (signed integers as unsigned: the same bits), RING, LL, whatever
 * the call's reduction and protocol; Generic where there is none.
 */
static int kernel_for(const char *op, ncclDataType_t t)
{
	/* NCCL's type spellings in kernel names, signed ones as their unsigned twins. */
	static const char *const canon[ncclNumTypes] = { "u8", "u8", "u32", "u32", "u64", "u64",
							 "f16", "f32", "f64", "bf16", "f8e4m3",
							 "f8e5m2" };
	char want[96];

	if (strcmp(op, "AllGather") == 0 || strcmp(op, "Broadcast") == 0)
		snprintf(want, sizeof(want), "ncclDevKernel_%s_RING_LL", op);
	else
		snprintf(want, sizeof(want), "ncclDevKernel_%s_Sum_%s_RING_LL", op, canon[t]);
	for (int k = 0; k < NKERNELS; k++)
		if (strcmp(nccl_kernels[k], want) == 0)
			return k;
	return K_GENERIC;
}

/*
 * Loads the kernel library and gets every kernel's handle, once per process,
 * at the first communicator: NCCL asks for its kernels' attributes while it
 * initializes, which loads them.  So, as with the real library, the handles
 * exist before a tracer that attaches mid-run.  Caller holds g_lock.
 */
static ncclResult_t lib_load(void)
{
	char *image, name[128];
	size_t cap = (size_t)NKERNELS * sizeof(name), len = 0;
	CUresult rc;

	if (g_lib)
		return ncclSuccess;
	image = malloc(cap);
	if (!image)
		return fail(ncclSystemError, "out of memory");
	for (int k = 0; k < NKERNELS; k++) {
		kernel_name(k, name, sizeof(name));
		len += (size_t)snprintf(image + len, cap - len, "%s\n", name);
	}
	rc = cuLibraryLoadData(&g_lib, image, NULL, NULL, 0, NULL, NULL, 0);
	free(image);
	for (int k = 0; k < NKERNELS && rc == CUDA_SUCCESS; k++) {
		kernel_name(k, name, sizeof(name));
		rc = cuLibraryGetKernel(&g_kern[k], g_lib, name);
	}
	if (rc != CUDA_SUCCESS)
		return fail(ncclUnhandledCudaError, "Cuda failure %d loading kernels", (int)rc);
	return ncclSuccess;
}

static ncclResult_t kernels_init(void)
{
	ncclResult_t rc;

	pthread_mutex_lock(&g_lock);
	rc = lib_load();
	pthread_mutex_unlock(&g_lock);
	return rc;
}

static ncclResult_t kernel_get(int k, CUkernel *out)
{
	ncclResult_t rc;

	pthread_mutex_lock(&g_lock);
	rc = lib_load();
	*out = g_kern[k];
	pthread_mutex_unlock(&g_lock);
	return rc;
}

/* Launches kernel k on the communicator's device, lasting ns. */
static ncclResult_t launch(struct ncclComm *c, int k, uint64_t bytes, uint64_t ns,
			   cudaStream_t stream)
{
	static void (*set_ns)(uint64_t);
	static bool looked;
	unsigned int block = proto_of(bytes) == 0 ? 512 : 640;
	CUkernel kern;
	CUresult cr;
	ncclResult_t rc;

	rc = kernel_get(k, &kern);
	if (rc)
		return rc;
	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		/* The stand-in driver's extension; absent on a real driver. */
		*(void **)&set_ns = dlsym(RTLD_DEFAULT, "fakecuda_set_next_kernel_ns");
		__atomic_store_n(&looked, true, __ATOMIC_RELEASE);
	}
	cr = cuCtxPushCurrent_v2(c->ctx);
	if (cr != CUDA_SUCCESS)
		return fail(ncclUnhandledCudaError, "Cuda failure %d", (int)cr);
	if (set_ns)
		set_ns(ns);
	if (env_long("FAKENCCL_LAUNCH_EX", 0)) {
		CUlaunchConfig cfg;

		memset(&cfg, 0, sizeof(cfg));
		cfg.gridDimX = c->nranks > 1 ? 2 : 1;
		cfg.gridDimY = cfg.gridDimZ = 1;
		cfg.blockDimX = block;
		cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.hStream = stream;
		cr = cuLaunchKernelEx(&cfg, (CUfunction)(void *)kern, NULL, NULL);
	} else {
		cr = cuLaunchKernel((CUfunction)(void *)kern, c->nranks > 1 ? 2 : 1, 1, 1, block,
				    1, 1, 0, stream, NULL, NULL);
	}
	if (set_ns)
		set_ns(0);
	cuCtxPopCurrent_v2(NULL);
	if (cr != CUDA_SUCCESS)
		return fail(ncclUnhandledCudaError, "Cuda failure %d launching a kernel", (int)cr);
	return ncclSuccess;
}

static uint64_t kernel_ns(uint64_t bus_bytes)
{
	double bw = env_gbps("FAKENCCL_BUSBW_GBPS", 10.0) * 1e9;

	return BASE_NS + (uint64_t)((double)bus_bytes * 1e9 / bw);
}

/* ------------------------------------------------------------------------ */
/* Collectives and point-to-point. */

enum op {
	OP_ALLREDUCE, OP_REDUCE, OP_REDUCESCATTER, OP_BROADCAST, OP_ALLGATHER, OP_ALLTOALL,
	OP_GATHER, OP_SCATTER, OP_SEND, OP_RECV,
};

static const char *const op_names[] = { "ncclAllReduce", "ncclReduce", "ncclReduceScatter",
					"ncclBroadcast", "ncclAllGather", "ncclAlltoAll",
					"ncclGather", "ncclScatter", "ncclSend", "ncclRecv" };

struct task {
	enum op op;
	struct ncclComm *comm;
	cudaStream_t stream;
	size_t count;
	ncclDataType_t type;
	ncclRedOp_t red;
	int root;	/* or peer */
};

/* This thread's group: depth, and the calls it defers until the outermost ncclGroupEnd. */
static _Thread_local int t_group_depth;
static _Thread_local struct task *t_tasks;
static _Thread_local size_t t_ntasks, t_captasks;

/* Bus bytes (nccl-tests) of one collective call on n ranks. */
static uint64_t bus_bytes(const struct task *t)
{
	uint64_t n = (uint64_t)t->comm->nranks, sz = (uint64_t)t->count * ty_size[t->type];

	switch (t->op) {
	case OP_ALLREDUCE:
		return 2 * (n - 1) * sz / n;
	case OP_ALLGATHER:
	case OP_REDUCESCATTER:
	case OP_ALLTOALL:
	case OP_GATHER:
	case OP_SCATTER:
		return (n - 1) * sz;	/* (n-1)/n of the total n x size */
	default:
		return sz;
	}
}

static ncclResult_t run_collective(const struct task *t)
{
	uint64_t bytes = (uint64_t)t->count * ty_size[t->type];
	int k;

	switch (t->op) {
	case OP_ALLREDUCE:
		k = kernel_for("AllReduce", t->type);
		break;
	case OP_REDUCE:
		k = kernel_for("Reduce", t->type);
		break;
	case OP_REDUCESCATTER:
		k = kernel_for("ReduceScatter", t->type);
		break;
	case OP_BROADCAST:
		k = kernel_for("Broadcast", t->type);
		break;
	case OP_ALLGATHER:
		k = kernel_for("AllGather", t->type);
		break;
	default:	/* AlltoAll, Gather, Scatter: NCCL runs them as grouped send/recv */
		k = K_SENDRECV;
		break;
	}
	{
		uint64_t ns = kernel_ns(bus_bytes(t));
		long n = t->comm->colls++;
		ncclResult_t rc;

		if (getenv("FAKENCCL_HOLD_RANK") && env_long("FAKENCCL_HOLD_RANK", -1) == t->comm->rank &&
		    env_long("FAKENCCL_HOLD_AT", 0) == n)
			ns = (uint64_t)env_long("FAKENCCL_HOLD_MS", 3600000) * 1000000ULL;
		rc = launch(t->comm, k, bytes, ns, t->stream);
		static const char *const ty_names[ncclNumTypes] = {
			"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
			"ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
			"ncclFloat8e5m2",
		};

		/* the profiler sees the call's function without "nccl" and its own count */
		if (rc == ncclSuccess)
			fakenccl_prof_coll(&t->comm->prof, t->comm->rank, op_names[t->op] + 4, t->count,
					   ty_names[t->type], kernel_ns(bus_bytes(t)));
		return rc;
	}
}

/* One SendRecv kernel per (communicator, stream) for the p2p calls of a group. */
static ncclResult_t run_p2p(struct task *tasks, size_t n)
{
	ncclResult_t rc = ncclSuccess, r;

	for (size_t i = 0; i < n; i++) {
		uint64_t sent = 0, recvd = 0;

		if (tasks[i].comm == NULL)	/* already launched with an earlier one */
			continue;
		for (size_t j = i; j < n; j++) {
			struct task *t = &tasks[j];

			if (t->comm != tasks[i].comm || t->stream != tasks[i].stream)
				continue;
			if (t->op == OP_SEND)
				sent += (uint64_t)t->count * ty_size[t->type];
			else
				recvd += (uint64_t)t->count * ty_size[t->type];
			if (j != i)
				t->comm = NULL;
		}
		r = launch(tasks[i].comm, K_SENDRECV, sent > recvd ? sent : recvd,
			   kernel_ns(sent > recvd ? sent : recvd), tasks[i].stream);
		if (rc == ncclSuccess)
			rc = r;
	}
	return rc;
}

static ncclResult_t group_flush(void)
{
	struct task *p2p = calloc(t_ntasks + 1, sizeof(*p2p));
	size_t np = 0;
	ncclResult_t rc = ncclSuccess, r;

	if (!p2p) {
		t_ntasks = 0;
		return fail(ncclSystemError, "out of memory");
	}
	for (size_t i = 0; i < t_ntasks; i++) {
		if (t_tasks[i].op == OP_SEND || t_tasks[i].op == OP_RECV) {
			p2p[np++] = t_tasks[i];
			continue;
		}
		r = run_collective(&t_tasks[i]);
		if (rc == ncclSuccess)
			rc = r;
	}
	r = run_p2p(p2p, np);
	if (rc == ncclSuccess)
		rc = r;
	free(p2p);
	t_ntasks = 0;
	return rc;
}

/*
 * What NCCL's argument checks refuse (ncclInvalidArgument); a count of 0
 * is a valid call that does nothing.  Inside a group the call is deferred.
 */
static ncclResult_t enqueue(enum op op, const void *sendbuff, const void *recvbuff,
			    size_t count, ncclDataType_t type, ncclRedOp_t red, int root,
			    struct ncclComm *comm, cudaStream_t stream)
{
	const char *what = op_names[op];
	bool rooted = op == OP_REDUCE || op == OP_BROADCAST || op == OP_GATHER ||
		      op == OP_SCATTER;
	bool is_root;
	struct task t;
	ncclResult_t rc;

	rc = comm_check(comm, what);
	if (rc)
		return rc;
	if (comm->finalized)
		return fail(ncclInvalidUsage, "%s: communicator was finalized", what);
	if ((int)type < 0 || (int)type >= ncclNumTypes)
		return fail(ncclInvalidArgument, "%s: invalid data type %d", what, (int)type);
	if (op == OP_ALLREDUCE || op == OP_REDUCE || op == OP_REDUCESCATTER) {
		int u = (int)red - ncclNumOps;

		if ((int)red < 0 || ((int)red >= ncclNumOps &&
				     (u >= MAX_REDOPS || !comm->redop_live[u] ||
				      comm->redop_type[u] != type)))
			return fail(ncclInvalidArgument, "%s: invalid reduction operation %d", what,
				    (int)red);
	}
	if ((rooted || op == OP_SEND || op == OP_RECV) && (root < 0 || root >= comm->nranks))
		return fail(ncclInvalidArgument, "%s: invalid %s %d, nranks %d", what,
			    rooted ? "root" : "peer", root, comm->nranks);
	if (count == 0)
		return ncclSuccess;
	is_root = rooted && root == comm->rank;
	if ((op != OP_RECV && !sendbuff &&
	     !((op == OP_BROADCAST || op == OP_SCATTER) && !is_root)) ||
	    (op != OP_SEND && !recvbuff &&
	     !((op == OP_REDUCE || op == OP_GATHER) && !is_root)))
		return fail(ncclInvalidArgument, "%s: buffer is NULL", what);
	t = (struct task){ op, comm, stream, count, type, red, root };
	if (t_group_depth == 0)
		return (op == OP_SEND || op == OP_RECV) ? run_p2p(&t, 1) : run_collective(&t);
	if (t_ntasks == t_captasks) {
		size_t ncap = t_captasks ? 2 * t_captasks : 16;
		struct task *nv = realloc(t_tasks, ncap * sizeof(*nv));

		if (!nv)
			return fail(ncclSystemError, "out of memory");
		t_tasks = nv;
		t_captasks = ncap;
	}
	t_tasks[t_ntasks++] = t;
	return ncclSuccess;
}

/* ------------------------------------------------------------------------ */
/* Split and shrink. */

/* Every rank posts (color, key) for this round; waits for all; the new comm's shape follows. */
static ncclResult_t split(struct ncclComm *c, int color, int key, ncclComm_t *out,
			  ncclConfig_t *cfg)
{
	struct rv_round *r;
	ncclUniqueId id;
	int round, n = 0, me = 0;
	ncclResult_t rc;

	rc = comm_check(c, "ncclCommSplit");
	if (rc)
		return rc;
	if (!out)
		return fail(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
	if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
		return fail(ncclInvalidArgument, "ncclCommSplit: invalid color %d", color);
	rc = config_check(cfg);
	if (rc)
		return rc;
	if (c->rounds >= MAX_ROUNDS)
		return fail(ncclInternalError, "more than %d splits of one communicator here",
			    MAX_ROUNDS);
	round = c->rounds++;
	r = &c->rv->rounds[round];
	r->color[c->rank] = color;
	r->key[c->rank] = key;
	__atomic_store_n(&r->posted[c->rank], 1, __ATOMIC_RELEASE);
	for (int i = 0; i < c->nranks; i++)
		if (!WAIT_UNTIL(ld(&r->posted[i])))
			return fail(ncclSystemError, "ncclCommSplit: timed out waiting for rank %d",
				    i);
	*out = NULL;
	if (color == NCCL_SPLIT_NOCOLOR)
		return ncclSuccess;
	/* New rank: order by key, then by old rank. */
	for (int i = 0; i < c->nranks; i++) {
		if (r->color[i] != color)
			continue;
		n++;
		if (r->key[i] < key || (r->key[i] == key && i < c->rank))
			me++;
	}
	id_child(&c->id, 1, round, color, &id);
	return comm_init(out, n, &id, me, c->dev, true);
}

#ifndef FAKENCCL_PARTIAL
/* Needs no exchange: every rank knows who is excluded. */
static ncclResult_t shrink(struct ncclComm *c, const int *excl, int nexcl, ncclComm_t *out,
			   ncclConfig_t *cfg, int flags)
{
	ncclUniqueId id;
	int64_t salt = 0;
	int n = 0, me = -1, round;
	ncclResult_t rc;

	rc = comm_check(c, "ncclCommShrink");
	if (rc)
		return rc;
	if (!out || nexcl < 0 || (nexcl && !excl) || (flags & ~NCCL_SHRINK_ABORT))
		return fail(ncclInvalidArgument, "ncclCommShrink: invalid arguments");
	rc = config_check(cfg);
	if (rc)
		return rc;
	for (int i = 0; i < nexcl; i++)
		if (excl[i] < 0 || excl[i] >= c->nranks)
			return fail(ncclInvalidArgument, "ncclCommShrink: invalid rank %d",
				    excl[i]);
	if (c->rounds >= MAX_ROUNDS)
		return fail(ncclInternalError, "more than %d splits of one communicator here",
			    MAX_ROUNDS);
	round = c->rounds++;
	for (int i = 0; i < c->nranks; i++) {
		bool gone = false;

		for (int j = 0; j < nexcl; j++)
			gone |= excl[j] == i;
		if (gone) {
			salt = salt * 131 + i + 1;
			continue;
		}
		if (i == c->rank)
			me = n;
		n++;
	}
	if (me < 0)
		return fail(ncclInvalidArgument, "ncclCommShrink: this rank is excluded");
	id_child(&c->id, 2, round, salt, &id);
	return comm_init(out, n, &id, me, c->dev, true);
}
#endif

/* ======================================================================== */
/* Exported API.                                                            */
/* ======================================================================== */

NCCL_API(ncclResult_t, ncclGetVersion, int *version)
{
	if (!version)
		return fail(ncclInvalidArgument, "version is NULL");
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId *uniqueId)
{
	struct id_layout l;

	if (!uniqueId)
		return fail(ncclInvalidArgument, "uniqueId is NULL");
	memset(uniqueId, 0, sizeof(*uniqueId));
	memcpy(l.magic, ID_MAGIC, 8);
	if (getrandom(l.rnd, sizeof(l.rnd), 0) != (ssize_t)sizeof(l.rnd))
		return fail(ncclSystemError, "getrandom: %s", strerror(errno));
	l.kind = 0;
	memcpy(uniqueId, &l, sizeof(l));
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t *comm, int nranks,
	 ncclUniqueId commId, int rank, ncclConfig_t *config)
{
	ncclResult_t rc = config_check(config);
	int dev = 0;

	if (rc == ncclSuccess)
		rc = current_device(&dev);
	if (rc == ncclSuccess)
		rc = comm_init(comm, nranks, &commId, rank, dev, true);
	return rc;
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t *comm, int nranks, ncclUniqueId commId,
	 int rank)
{
	int dev = 0;
	ncclResult_t rc = current_device(&dev);

	if (rc == ncclSuccess)
		rc = comm_init(comm, nranks, &commId, rank, dev, true);
	return rc;
}

/* One process, ndev ranks: nobody else to wait for. */
NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t *comm, int ndev, const int *devlist)
{
	ncclUniqueId id;
	struct id_layout l;
	ncclResult_t rc;
	int dummy;

	if (!comm || ndev < 1)
		return fail(ncclInvalidArgument, "ncclCommInitAll: invalid arguments");
	rc = current_device(&dummy);
	if (rc)
		return rc;
	memset(&id, 0, sizeof(id));
	memcpy(l.magic, ID_MAGIC, 8);
	if (getrandom(l.rnd, sizeof(l.rnd), 0) != (ssize_t)sizeof(l.rnd))
		return fail(ncclSystemError, "getrandom: %s", strerror(errno));
	l.kind = 0;
	memcpy(&id, &l, sizeof(l));
	for (int i = 0; i < ndev && rc == ncclSuccess; i++) {
		rc = comm_init(&comm[i], ndev, &id, i, devlist ? devlist[i] : i, false);
		if (rc)
			while (i--)
				comm_end(comm[i], "ncclCommInitAll");
	}
	{
		char name[64];

		rv_name(&id, name, sizeof(name));
		shm_unlink(name);	/* all ranks are here (or failed): mapped or gone */
	}
	return rc;
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm)
{
	ncclResult_t rc = comm_check(comm, "ncclCommFinalize");

	if (rc == ncclSuccess)
		comm->finalized = true;
	return rc;
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm)
{
	return comm_end(comm, "ncclCommDestroy");
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm)
{
	return comm_end(comm, "ncclCommAbort");
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
	 ncclConfig_t *config)
{
	return split(comm, color, key, newcomm, config);
}

#ifndef FAKENCCL_PARTIAL
NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int *excludeRanksList,
	 int excludeRanksCount, ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
	return shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
}

/* All ranks pass the same ids; the first names the communicator. */
NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t *newcomm, int nranks, int myrank,
	 int nId, ncclUniqueId *commIds, ncclConfig_t *config)
{
	ncclResult_t rc;
	int dev = 0;

	if (nId < 1 || !commIds)
		return fail(ncclInvalidArgument, "ncclCommInitRankScalable: no unique ids");
	rc = config_check(config);
	if (rc == ncclSuccess)
		rc = current_device(&dev);
	if (rc == ncclSuccess)
		rc = comm_init(newcomm, nranks, &commIds[0], myrank, dev, true);
	return rc;
}
#endif

NCCL_API(const char *, ncclGetErrorString, ncclResult_t result)
{
	switch (result) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

NCCL_API(const char *, ncclGetLastError, ncclComm_t comm)
{
	(void)comm;	/* NCCL keeps the last error per thread, too */
	return t_last_error;
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t *asyncError)
{
	ncclResult_t rc = comm_check(comm, "ncclCommGetAsyncError");

	if (rc == ncclSuccess && !asyncError)
		rc = fail(ncclInvalidArgument, "asyncError is NULL");
	if (rc == ncclSuccess)
		*asyncError = ncclSuccess;
	return rc;
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int *count)
{
	ncclResult_t rc = comm_check(comm, "ncclCommCount");

	if (rc == ncclSuccess && !count)
		rc = fail(ncclInvalidArgument, "count is NULL");
	if (rc == ncclSuccess)
		*count = comm->nranks;
	return rc;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int *device)
{
	ncclResult_t rc = comm_check(comm, "ncclCommCuDevice");

	if (rc == ncclSuccess && !device)
		rc = fail(ncclInvalidArgument, "device is NULL");
	if (rc == ncclSuccess)
		*device = comm->dev;
	return rc;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int *rank)
{
	ncclResult_t rc = comm_check(comm, "ncclCommUserRank");

	if (rc == ncclSuccess && !rank)
		rc = fail(ncclInvalidArgument, "rank is NULL");
	if (rc == ncclSuccess)
		*rank = comm->rank;
	return rc;
}

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t *op, void *scalar,
	 ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm)
{
	ncclResult_t rc = comm_check(comm, "ncclRedOpCreatePreMulSum");

	if (rc)
		return rc;
	if (!op || !scalar || (int)datatype < 0 || (int)datatype >= ncclNumTypes ||
	    (residence != ncclScalarDevice && residence != ncclScalarHostImmediate))
		return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid arguments");
	for (int i = 0; i < MAX_REDOPS; i++) {
		if (!comm->redop_live[i]) {
			comm->redop_live[i] = true;
			comm->redop_type[i] = datatype;
			*op = (ncclRedOp_t)(ncclNumOps + i);
			return ncclSuccess;
		}
	}
	return fail(ncclInternalError, "more than %d live reduction operations here",
		    MAX_REDOPS);
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm)
{
	ncclResult_t rc = comm_check(comm, "ncclRedOpDestroy");
	int u = (int)op - ncclNumOps;

	if (rc)
		return rc;
	if (u < 0 || u >= MAX_REDOPS || !comm->redop_live[u])
		return fail(ncclInvalidArgument, "ncclRedOpDestroy: invalid operation %d", (int)op);
	comm->redop_live[u] = false;
	return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclReduce, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

/* The deprecated in-place broadcast: one buffer for both sides. */
NCCL_API(ncclResult_t, ncclBcast, void *buff, size_t count, ncclDataType_t datatype, int root,
	 ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_BROADCAST, buff, buff, count, datatype, ncclSum, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm,
		       stream);
}

NCCL_API(ncclResult_t, ncclAllReduce, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void *sendbuff, void *recvbuff,
	 size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
	 cudaStream_t stream)
{
	return enqueue(OP_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm,
		       stream);
}

NCCL_API(ncclResult_t, ncclAllGather, const void *sendbuff, void *recvbuff, size_t sendcount,
	 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm,
		       stream);
}

#ifndef FAKENCCL_PARTIAL
NCCL_API(ncclResult_t, ncclAlltoAll, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm,
		       stream);
}

NCCL_API(ncclResult_t, ncclGather, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_GATHER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm,
		       stream);
}

NCCL_API(ncclResult_t, ncclScatter, const void *sendbuff, void *recvbuff, size_t count,
	 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum, root, comm,
		       stream);
}

NCCL_API(ncclResult_t, ncclSend, const void *sendbuff, size_t count, ncclDataType_t datatype,
	 int peer, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclRecv, void *recvbuff, size_t count, ncclDataType_t datatype,
	 int peer, ncclComm_t comm, cudaStream_t stream)
{
	return enqueue(OP_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, comm, stream);
}
#endif

NCCL_API(ncclResult_t, ncclGroupStart, void)
{
	t_group_depth++;
	return ncclSuccess;
}

/* The outermost end launches what the group deferred. */
NCCL_API(ncclResult_t, ncclGroupEnd, void)
{
	if (t_group_depth == 0)
		return fail(ncclInvalidUsage, "ncclGroupEnd: not in a group");
	if (--t_group_depth > 0)
		return ncclSuccess;
	return group_flush();
}
