/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in libnvidia-ml.so.1 for the tests (no GPU here): the functions gpuprobe reads,
 * with nvml.h's signatures and protocols, answering what a script says.
 *
 * FAKENVML_SCRIPT names the script, read at nvmlInit_v2 and again whenever the file
 * changes (a test rewrites it to start a process or an error). One directive a line:
 *
 *   init_fail CODE                      nvmlInit_v2 returns CODE
 *   gpu I [uuid=S] [name=S] [util=PCT] [memutil=PCT] [memused=B] [memtotal=B] [memreserved=B] [power=MW]
 *         [energy=MJ] [temp=C] [clocksm=MHZ] [clockmem=MHZ] [throttle=BITS] [pcietx=KBS]
 *         [pcierx=KBS] [mig=0|1]        GPU I (0..7): I+1 GPUs at least
 *         [ecc=VC,VU,AC,AU]             ECC errors: volatile corrected, uncorrected,
 *                                       aggregate corrected, uncorrected
 *         [retired=SBE,DBE]             pages retired (nvmlDeviceGetRetiredPages)
 *         [remap=C,U,PENDING,FAILED]    rows remapped (nvmlDeviceGetRemappedRows)
 *         [nvlink=TXKIB,RXKIB]          NVLink data counters, every link (field values 138, 139)
 *                                       each of the four NOT_SUPPORTED where not given
 *   migdev GPU GI CI [uuid=S] [memused=B] [memtotal=B]
 *                                       a MIG device of GPU (in MIG mode: mig=1), at the
 *                                       next of its 7 slots (the others NOT_FOUND)
 *   proc GPU PID|comm=NAME [mem=B|na] [sm=PCT] [memutil=PCT] [gi=N ci=N]
 *                                       comm=NAME: every process of that name at each
 *                                       call (a command's workloads, PIDs unknown ahead)
 *                                       a compute process; sm= gives it a sample at each
 *                                       read (timestamp: now), none without
 *   fail FUNCTION CODE                  FUNCTION returns CODE
 *   xid GPU CODE AFTER_MS               an XID event AFTER_MS after nvmlInit_v2
 *
 * Counters a test reads back: FAKENVML_LOG, when set, is a file where each
 * nvmlDeviceGetComputeRunningProcesses_v3 answer of NVML_ERROR_INSUFFICIENT_SIZE appends
 * a line "insufficient GPU ASKED NEEDED".
 *
 * Built twice: the full library, and with -DFAKENVML_OLD one that lacks
 * nvmlDeviceGetProcessUtilization, nvmlDeviceGetTotalEnergyConsumption, the event
 * functions, nvmlDeviceGetRemappedRows and nvmlDeviceGetFieldValues (an old driver's:
 * missing symbols, not errors).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT 10

typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
	unsigned int pid;
	unsigned long long timeStamp;
	unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#define MAX_GPUS 8
#define MAX_PROCS 1024
#define MAX_FAILS 32
#define MAX_XIDS 16

struct fgpu {
	int idx;
	char uuid[96], name[96];
	unsigned int util, memutil, temp, clocksm, clockmem, pcietx, pcierx, power, mig;
	unsigned long long memused, memtotal, memreserved, energy, throttle;
	int has_ecc, has_retired, has_remap, has_nvlink;
	int parent, gi, ci;     /* a MIG device: its GPU and instance ids (parent -1: a GPU) */
	unsigned long long ecc[4], retired[2], remap[4], nvlink[2];
};
typedef struct fgpu *nvmlDevice_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
typedef struct fset { unsigned long long types[MAX_GPUS]; } *nvmlEventSet_t;

struct fproc {
	int gpu;
	char comm[16];          /* a template for every process of that name, or "" */
	unsigned int pid, gi, ci;
	unsigned long long mem; /* ~0: not available */
	int sm, memutil;        /* -1: no samples */
};

static struct {
	pthread_mutex_t lock;
	int init_fail;
	int ngpus;
	struct fgpu gpus[MAX_GPUS];
	struct fgpu migs[MAX_GPUS * 7];
	int nmigs;
	struct fproc procs[MAX_PROCS]; /* the processes now: the script's, names expanded */
	int nprocs;
	struct fproc tmpl[MAX_PROCS];  /* the script's */
	int ntmpl, has_comm;
	struct { char fn[96]; int code; } fails[MAX_FAILS];
	int nfails;
	struct { int gpu; unsigned long long code; long after_ms; int sent; } xids[MAX_XIDS];
	int nxids;
	struct timespec mtime;
	off_t size;
	int inited;
	struct timespec t0;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void parse_gpu(char *rest)
{
	char *save = NULL, *tok = strtok_r(rest, " \t\n", &save);
	int i = tok ? atoi(tok) : -1;
	struct fgpu *g;

	if (i < 0 || i >= MAX_GPUS)
		return;
	g = &S.gpus[i];
	if (i >= S.ngpus)
		S.ngpus = i + 1;
	while ((tok = strtok_r(NULL, " \t\n", &save))) {
		char *v = strchr(tok, '=');

		if (!v)
			continue;
		*v++ = 0;
#define U(k, f) else if (!strcmp(tok, k)) g->f = (unsigned int)strtoul(v, NULL, 0);
#define L(k, f) else if (!strcmp(tok, k)) g->f = strtoull(v, NULL, 0);
		if (!strcmp(tok, "ecc"))
			g->has_ecc = sscanf(v, "%llu,%llu,%llu,%llu", &g->ecc[0], &g->ecc[1], &g->ecc[2], &g->ecc[3]) == 4;
		else if (!strcmp(tok, "retired"))
			g->has_retired = sscanf(v, "%llu,%llu", &g->retired[0], &g->retired[1]) == 2;
		else if (!strcmp(tok, "remap"))
			g->has_remap = sscanf(v, "%llu,%llu,%llu,%llu", &g->remap[0], &g->remap[1], &g->remap[2], &g->remap[3]) == 4;
		else if (!strcmp(tok, "nvlink"))
			g->has_nvlink = sscanf(v, "%llu,%llu", &g->nvlink[0], &g->nvlink[1]) == 2;
		else if (!strcmp(tok, "uuid"))
			snprintf(g->uuid, sizeof(g->uuid), "%s", v);
		else if (!strcmp(tok, "name"))
			snprintf(g->name, sizeof(g->name), "%s", v);
		U("util", util) U("memutil", memutil) U("temp", temp) U("clocksm", clocksm) U("clockmem", clockmem)
		U("pcietx", pcietx) U("pcierx", pcierx) U("power", power) U("mig", mig)
		L("memused", memused) L("memtotal", memtotal) L("memreserved", memreserved) L("energy", energy) L("throttle", throttle)
#undef U
#undef L
	}
}

static void parse_migdev(char *rest)
{
	char *save = NULL, *g = strtok_r(rest, " \t\n", &save), *gi = strtok_r(NULL, " \t\n", &save);
	char *ci = strtok_r(NULL, " \t\n", &save), *tok;
	struct fgpu *m;

	if (!g || !gi || !ci || S.nmigs == MAX_GPUS * 7)
		return;
	m = &S.migs[S.nmigs];
	*m = (struct fgpu){ .parent = atoi(g), .gi = atoi(gi), .ci = atoi(ci) };
	snprintf(m->uuid, sizeof(m->uuid), "MIG-fake-%d-%d", S.nmigs, m->gi);
	while ((tok = strtok_r(NULL, " \t\n", &save))) {
		if (!strncmp(tok, "uuid=", 5))
			snprintf(m->uuid, sizeof(m->uuid), "%s", tok + 5);
		else if (!strncmp(tok, "memused=", 8))
			m->memused = strtoull(tok + 8, NULL, 0);
		else if (!strncmp(tok, "memtotal=", 9))
			m->memtotal = strtoull(tok + 9, NULL, 0);
	}
	S.nmigs++;
}

static void parse_proc(char *rest)
{
	char *save = NULL, *g = strtok_r(rest, " \t\n", &save), *pid = strtok_r(NULL, " \t\n", &save), *tok;
	struct fproc *p;

	if (!g || !pid || S.ntmpl == MAX_PROCS)
		return;
	p = &S.tmpl[S.ntmpl++];
	*p = (struct fproc){ .gpu = atoi(g), .pid = (unsigned int)strtoul(pid, NULL, 0), .sm = -1, .memutil = -1,
			     .gi = ~0U, .ci = ~0U };
	if (!strncmp(pid, "comm=", 5)) {
		snprintf(p->comm, sizeof(p->comm), "%s", pid + 5);
		p->pid = 0;
		S.has_comm = 1;
	}
	while ((tok = strtok_r(NULL, " \t\n", &save))) {
		if (!strncmp(tok, "gi=", 3))
			p->gi = (unsigned int)atoi(tok + 3);
		else if (!strncmp(tok, "ci=", 3))
			p->ci = (unsigned int)atoi(tok + 3);
		if (!strncmp(tok, "mem=", 4))
			p->mem = strcmp(tok + 4, "na") ? strtoull(tok + 4, NULL, 0) : ~0ULL;
		else if (!strncmp(tok, "sm=", 3))
			p->sm = atoi(tok + 3);
		else if (!strncmp(tok, "memutil=", 8))
			p->memutil = atoi(tok + 8);
	}
	if (p->sm >= 0 && p->memutil < 0)
		p->memutil = 0;
}

static void expand(void);

/* (Re)reads the script when it changed; under S.lock. */
static void load(void)
{
	const char *path = getenv("FAKENVML_SCRIPT");
	struct stat st;
	char line[1024];
	FILE *f;

	if (!path || stat(path, &st))
		return;
	if (st.st_mtim.tv_sec == S.mtime.tv_sec && st.st_mtim.tv_nsec == S.mtime.tv_nsec && st.st_size == S.size)
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	S.mtime = st.st_mtim, S.size = st.st_size;
	S.init_fail = 0, S.ngpus = 0, S.nprocs = 0, S.ntmpl = 0, S.has_comm = 0, S.nfails = 0, S.nmigs = 0;
	memset(S.gpus, 0, sizeof(S.gpus));
	{
		int sent[MAX_XIDS], n = S.nxids; /* events already sent stay sent */

		for (int i = 0; i < n; i++)
			sent[i] = S.xids[i].sent;
		S.nxids = 0;
		while (fgets(line, sizeof(line), f)) {
			char *rest = line + strcspn(line, " \t");

			if (!strncmp(line, "gpu ", 4))
				parse_gpu(rest);
			else if (!strncmp(line, "migdev ", 7))
				parse_migdev(rest);
			else if (!strncmp(line, "proc ", 5))
				parse_proc(rest);
			else if (!strncmp(line, "init_fail ", 10))
				S.init_fail = atoi(rest);
			else if (!strncmp(line, "fail ", 5) && S.nfails < MAX_FAILS &&
				 sscanf(rest, " %95s %d", S.fails[S.nfails].fn, &S.fails[S.nfails].code) == 2)
				S.nfails++;
			else if (!strncmp(line, "xid ", 4) && S.nxids < MAX_XIDS &&
				 sscanf(rest, " %d %llu %ld", &S.xids[S.nxids].gpu, &S.xids[S.nxids].code,
					&S.xids[S.nxids].after_ms) == 3) {
				S.xids[S.nxids].sent = S.nxids < n ? sent[S.nxids] : 0;
				S.nxids++;
			}
		}
	}
	fclose(f);
	expand();
	for (int i = 0; i < S.ngpus; i++) {
		S.gpus[i].idx = i;
		S.gpus[i].parent = -1;
		if (!S.gpus[i].uuid[0])
			snprintf(S.gpus[i].uuid, sizeof(S.gpus[i].uuid), "GPU-fake-%d", i);
		if (!S.gpus[i].name[0])
			snprintf(S.gpus[i].name, sizeof(S.gpus[i].name), "Fake GPU");
	}
}

/* S.procs from the script's: a name matched against every process now (/proc/PID/comm). */
static void expand(void)
{
	S.nprocs = 0;
	for (int i = 0; i < S.ntmpl && S.nprocs < MAX_PROCS; i++) {
		DIR *dir;
		struct dirent *e;

		if (!S.tmpl[i].comm[0]) {
			S.procs[S.nprocs++] = S.tmpl[i];
			continue;
		}
		dir = opendir("/proc");
		while (dir && (e = readdir(dir)) && S.nprocs < MAX_PROCS) {
			char path[300], comm[32] = "";
			FILE *f;

			if (e->d_name[0] < '1' || e->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
			f = fopen(path, "re");
			if (!f)
				continue;
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
			if (strcmp(comm, S.tmpl[i].comm))
				continue;
			S.procs[S.nprocs] = S.tmpl[i];
			S.procs[S.nprocs++].pid = (unsigned int)strtoul(e->d_name, NULL, 10);
		}
		if (dir)
			closedir(dir);
	}
}

/* Enters a call: the script reloaded, the error it scripts for fn, or 0. */
static int enter(const char *fn)
{
	int code = 0;

	pthread_mutex_lock(&S.lock);
	load();
	if (S.has_comm && (!strcmp(fn, "nvmlDeviceGetComputeRunningProcesses_v3") ||
			   !strcmp(fn, "nvmlDeviceGetProcessUtilization")))
		expand();
	for (int i = 0; i < S.nfails; i++)
		if (!strcmp(S.fails[i].fn, fn))
			code = S.fails[i].code;
	if (!code && !S.inited && strcmp(fn, "nvmlInit_v2"))
		code = NVML_ERROR_UNINITIALIZED;
	if (code)
		pthread_mutex_unlock(&S.lock);
	return code;
}

#define ENTER()                              \
	do {                                 \
		int c_ = enter(__func__);    \
		if (c_)                      \
			return c_;           \
	} while (0)
#define LEAVE(r)                                 \
	do {                                     \
		pthread_mutex_unlock(&S.lock);   \
		return (r);                      \
	} while (0)

static int valid(nvmlDevice_t d)
{
	return d && d >= S.gpus && d < S.gpus + S.ngpus;
}

/* a GPU or a MIG device (the calls NVML answers on both) */
static int valid_any(nvmlDevice_t d)
{
	return valid(d) || (d && d >= S.migs && d < S.migs + S.nmigs);
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	ENTER();
	if (S.init_fail)
		LEAVE(S.init_fail);
	S.inited = 1;
	clock_gettime(CLOCK_MONOTONIC, &S.t0);
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	ENTER();
	S.inited = 0;
	LEAVE(NVML_SUCCESS);
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case 9: return "Driver Not Loaded";
	case 15: return "GPU is lost";
	default: return "Unknown Error";
	}
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	ENTER();
	*n = (unsigned int)S.ngpus;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
	ENTER();
	if (i >= (unsigned int)S.ngpus)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*d = &S.gpus[i];
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len)
{
	ENTER();
	if (!valid_any(d) || !len)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	snprintf(buf, len, "%s", d->uuid);
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int len)
{
	ENTER();
	if (!valid(d) || !len)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	snprintf(buf, len, "%s", d->name);
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	ENTER();
	if (!valid(d))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	u->gpu = d->util, u->memory = d->memutil;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	ENTER();
	if (!valid_any(d))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	/* v1, as the driver's: the reserve counted as used */
	m->total = d->memtotal, m->used = d->memused + d->memreserved;
	m->free = d->memtotal > m->used ? d->memtotal - m->used : 0;
	LEAVE(NVML_SUCCESS);
}

#ifndef FAKENVML_OLD
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
	ENTER();
	if (!valid_any(d))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	if (m->version != (unsigned int)(sizeof(*m) | (2u << 24)))
		LEAVE(25); /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
	m->total = d->memtotal, m->reserved = d->memreserved, m->used = d->memused;
	m->free = d->memtotal > d->memused + d->memreserved ? d->memtotal - d->memused - d->memreserved : 0;
	LEAVE(NVML_SUCCESS);
}
#endif

static void log_line(const char *fmt, int a, unsigned int b, unsigned int c)
{
	const char *path = getenv("FAKENVML_LOG");
	FILE *f = path ? fopen(path, "ae") : NULL;

	if (!f)
		return;
	fprintf(f, fmt, a, b, c);
	fclose(f);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *out)
{
	unsigned int n = 0, k = 0;

	ENTER();
	if (!valid(d) || !count)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	for (int i = 0; i < S.nprocs; i++)
		n += S.procs[i].gpu == d->idx;
	if (*count < n) {
		log_line("insufficient %d %u %u\n", d->idx, *count, n);
		*count = n;
		LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
	}
	if (n && !out)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	for (int i = 0; i < S.nprocs; i++)
		if (S.procs[i].gpu == d->idx)
			out[k++] = (nvmlProcessInfo_t){ S.procs[i].pid, S.procs[i].mem, S.procs[i].gi, S.procs[i].ci };
	*count = n;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
	ENTER();
	if (!valid(d))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*mw = d->power;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t)
{
	ENTER();
	if (!valid(d) || sensor != 0)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*t = d->temp;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
	ENTER();
	if (!valid(d) || (type != 1 && type != 2 && type != 0))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*mhz = type == 2 ? d->clockmem : d->clocksm;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *r)
{
	ENTER();
	if (!valid(d))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*r = d->throttle;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned int *v)
{
	ENTER();
	if (!valid(d) || (counter != 0 && counter != 1))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*v = counter ? d->pcierx : d->pcietx;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *cur, unsigned int *pend)
{
	ENTER();
	if (!valid(d))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*cur = *pend = d->mig;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *n)
{
	ENTER();
	if (!valid(d) || !n)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	if (!d->mig)
		LEAVE(NVML_ERROR_NOT_SUPPORTED);
	*n = 7;
	LEAVE(NVML_SUCCESS);
}

/* the MIG devices of d fill its first slots, in script order; the rest are NOT_FOUND */
EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int i, nvmlDevice_t *h)
{
	unsigned int k = 0;

	ENTER();
	if (!valid(d) || !h || i >= 7)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	for (int j = 0; j < S.nmigs; j++)
		if (S.migs[j].parent == d->idx && k++ == i) {
			*h = &S.migs[j];
			LEAVE(NVML_SUCCESS);
		}
	LEAVE(NVML_ERROR_NOT_FOUND);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id)
{
	ENTER();
	if (!valid_any(d) || valid(d) || !id) /* a MIG device's only */
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*id = (unsigned int)d->gi;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id)
{
	ENTER();
	if (!valid_any(d) || valid(d) || !id)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*id = (unsigned int)d->ci;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *v)
{
	ENTER();
	if (!valid(d) || type < 0 || type > 1 || counter < 0 || counter > 1 || !v)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	if (!d->has_ecc)
		LEAVE(NVML_ERROR_NOT_SUPPORTED);
	*v = d->ecc[counter * 2 + type];
	LEAVE(NVML_SUCCESS);
}

/* nvml.h's protocol: *count 0 asks the number; a buffer too small is INSUFFICIENT_SIZE */
EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned int *count, unsigned long long *addr)
{
	unsigned int n;

	ENTER();
	if (!valid(d) || cause < 0 || cause > 1 || !count)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	if (!d->has_retired)
		LEAVE(NVML_ERROR_NOT_SUPPORTED);
	n = (unsigned int)d->retired[cause];
	if (*count < n) {
		*count = n;
		LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
	}
	for (unsigned int i = 0; addr && i < n; i++)
		addr[i] = 0x100000ULL * (i + 1);
	*count = n;
	LEAVE(NVML_SUCCESS);
}

#ifndef FAKENVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *c, unsigned int *u, unsigned int *pend,
					      unsigned int *fail)
{
	ENTER();
	if (!valid(d) || !c || !u || !pend || !fail)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	if (!d->has_remap)
		LEAVE(NVML_ERROR_NOT_SUPPORTED);
	*c = (unsigned int)d->remap[0], *u = (unsigned int)d->remap[1];
	*pend = (unsigned int)d->remap[2], *fail = (unsigned int)d->remap[3];
	LEAVE(NVML_SUCCESS);
}

typedef struct {
	unsigned int fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	union { double d; unsigned long long ull; } value;
} nvmlFieldValue_t;

/* the NVLink data counters (138 TX, 139 RX, KiB), every link summed with scopeId UINT_MAX */
EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v)
{
	ENTER();
	if (!valid(d) || n < 0 || (n && !v))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	for (int i = 0; i < n; i++) {
		unsigned int id = v[i].fieldId;

		v[i].valueType = 3; /* unsigned long long */
		if ((id != 138 && id != 139) || v[i].scopeId != ~0U)
			v[i].nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
		else if (!d->has_nvlink)
			v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
		else
			v[i].nvmlReturn = NVML_SUCCESS, v[i].value.ull = d->nvlink[id - 138];
	}
	LEAVE(NVML_SUCCESS);
}
#endif

#ifndef FAKENVML_OLD
static unsigned long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

/* A sample per scripted process with sm=, stamped now (so newer than any last read). */
EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *u,
						    unsigned int *count, unsigned long long last_seen)
{
	unsigned int n = 0, k = 0;
	unsigned long long ts = now_us();

	ENTER();
	if (!valid(d) || !count)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	if (d->mig)
		LEAVE(NVML_ERROR_NOT_SUPPORTED);
	for (int i = 0; i < S.nprocs; i++)
		n += S.procs[i].gpu == d->idx && S.procs[i].sm >= 0;
	if (!n || ts <= last_seen)
		LEAVE(NVML_ERROR_NOT_FOUND);
	if (!u || *count < n) {
		*count = n;
		LEAVE(NVML_ERROR_INSUFFICIENT_SIZE);
	}
	for (int i = 0; i < S.nprocs; i++)
		if (S.procs[i].gpu == d->idx && S.procs[i].sm >= 0)
			u[k++] = (nvmlProcessUtilizationSample_t){ S.procs[i].pid, ts, (unsigned int)S.procs[i].sm,
								   (unsigned int)S.procs[i].memutil, 0, 0 };
	*count = n;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
	ENTER();
	if (!valid(d))
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	*mj = d->energy;
	LEAVE(NVML_SUCCESS);
}

static struct fset the_set;

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	ENTER();
	memset(&the_set, 0, sizeof(the_set));
	*set = &the_set;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
	ENTER();
	if (!valid(d) || !set)
		LEAVE(NVML_ERROR_INVALID_ARGUMENT);
	set->types[d->idx] |= types;
	LEAVE(NVML_SUCCESS);
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	ENTER();
	(void)set;
	LEAVE(NVML_SUCCESS);
}

static long since_init_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec - S.t0.tv_sec) * 1000 + (ts.tv_nsec - S.t0.tv_nsec) / 1000000;
}

/* The first due XID not sent yet; else a sleep of the timeout (at most until one is due). */
EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms)
{
	long wait = timeout_ms;

	ENTER();
	for (int i = 0; i < S.nxids; i++) {
		long left = S.xids[i].after_ms - since_init_ms();

		if (S.xids[i].sent || S.xids[i].gpu < 0 || S.xids[i].gpu >= S.ngpus ||
		    !(set->types[S.xids[i].gpu] & 0x8ULL))
			continue;
		if (left <= 0) {
			S.xids[i].sent = 1;
			*data = (nvmlEventData_t){ &S.gpus[S.xids[i].gpu], 0x8ULL, S.xids[i].code, ~0U, ~0U };
			LEAVE(NVML_SUCCESS);
		}
		if (left < wait)
			wait = left;
	}
	pthread_mutex_unlock(&S.lock);
	usleep((useconds_t)wait * 1000);
	return NVML_ERROR_TIMEOUT;
}
#endif
