/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVML loaded with dlopen and read by a thread of its own (nvml.h). The thread owns the
 * library and every call into it; readers take a copy of the last round under a mutex,
 * so a scrape or a report never waits for the driver.
 *
 * The library is found by the system loader's normal search for "libnvidia-ml.so.1" (the
 * driver's own library, as nvidia-smi and dcgm find it): a name no traced process chooses
 * (docs/security.md).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include "core/nvml.h"
#include "lib/util.h"

/* ---- the part of nvml.h used (its documented types and values) ---- */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT 10
#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define NVML_TEMPERATURE_GPU 0
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_PCIE_UTIL_TX_BYTES 0
#define NVML_PCIE_UTIL_RX_BYTES 1
#define NVML_DEVICE_MIG_ENABLE 1
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL

typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
/* v2 (nvml.h's NVML_STRUCT_VERSION(Memory, 2)): `used` without the memory the driver and
 * firmware reserve, as nvidia-smi shows it; v1's `used` counts the reserve too. */
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
#define NVML_MEMORY_V2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
typedef struct {
	unsigned int pid;
	unsigned long long timeStamp; /* CPU time, microseconds */
	unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t; /* nvmlProcessInfo_v2_t, what the _v3 call fills */
typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
/* nvmlDeviceGetFieldValues's */
typedef union {
	double dVal;
	int siVal;
	unsigned int uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	signed long long sllVal;
	unsigned short usVal;
} nvmlValue_t;
typedef struct {
	unsigned int fieldId;
	unsigned int scopeId;      /* NVLink counters: the link, UINT_MAX every link summed */
	long long timestamp, latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;   /* each field's own answer */
	nvmlValue_t value;
} nvmlFieldValue_t;
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 /* KiB */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0
#define NVML_AGGREGATE_ECC 1
#define NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0
#define NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR 1

/* Every function looked up: the first four are needed, the rest each bring a figure. */
#define NVML_FUNCS(X)                                                                             \
	X(nvmlInit_v2, nvmlReturn_t, (void), -1)                                                  \
	X(nvmlShutdown, nvmlReturn_t, (void), -1)                                                 \
	X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *), -1)                              \
	X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int, nvmlDevice_t *), -1)        \
	X(nvmlErrorString, const char *, (nvmlReturn_t), -2)                                      \
	X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int), GP_NVML_FN_UUID) \
	X(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int), GP_NVML_FN_NAME) \
	X(nvmlDeviceGetUtilizationRates, nvmlReturn_t, (nvmlDevice_t, nvmlUtilization_t *), GP_NVML_FN_UTIL) \
	X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_t *), GP_NVML_FN_MEMORY) \
	X(nvmlDeviceGetMemoryInfo_v2, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_v2_t *), -2)       \
	X(nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t, (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *), \
	  GP_NVML_FN_PROCS)                                                                       \
	X(nvmlDeviceGetProcessUtilization, nvmlReturn_t,                                          \
	  (nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *, unsigned long long), GP_NVML_FN_PROC_UTIL) \
	X(nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t, unsigned int *), GP_NVML_FN_POWER) \
	X(nvmlDeviceGetTotalEnergyConsumption, nvmlReturn_t, (nvmlDevice_t, unsigned long long *), GP_NVML_FN_ENERGY) \
	X(nvmlDeviceGetTemperature, nvmlReturn_t, (nvmlDevice_t, int, unsigned int *), GP_NVML_FN_TEMP) \
	X(nvmlDeviceGetClockInfo, nvmlReturn_t, (nvmlDevice_t, int, unsigned int *), GP_NVML_FN_CLOCK) \
	X(nvmlDeviceGetCurrentClocksThrottleReasons, nvmlReturn_t, (nvmlDevice_t, unsigned long long *), \
	  GP_NVML_FN_THROTTLE)                                                                    \
	X(nvmlDeviceGetPcieThroughput, nvmlReturn_t, (nvmlDevice_t, int, unsigned int *), GP_NVML_FN_PCIE) \
	X(nvmlDeviceGetMigMode, nvmlReturn_t, (nvmlDevice_t, unsigned int *, unsigned int *), GP_NVML_FN_MIG) \
	X(nvmlEventSetCreate, nvmlReturn_t, (nvmlEventSet_t *), GP_NVML_FN_EVENTS)                \
	X(nvmlDeviceRegisterEvents, nvmlReturn_t, (nvmlDevice_t, unsigned long long, nvmlEventSet_t), GP_NVML_FN_EVENTS) \
	X(nvmlEventSetWait_v2, nvmlReturn_t, (nvmlEventSet_t, nvmlEventData_t *, unsigned int), GP_NVML_FN_EVENT_WAIT) \
	X(nvmlEventSetFree, nvmlReturn_t, (nvmlEventSet_t), GP_NVML_FN_EVENTS)                  \
	X(nvmlDeviceGetTotalEccErrors, nvmlReturn_t, (nvmlDevice_t, int, int, unsigned long long *), GP_NVML_FN_ECC) \
	X(nvmlDeviceGetRetiredPages, nvmlReturn_t, (nvmlDevice_t, int, unsigned int *, unsigned long long *), \
	  GP_NVML_FN_RETIRED)                                                                     \
	X(nvmlDeviceGetRemappedRows, nvmlReturn_t,                                                \
	  (nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *, unsigned int *), GP_NVML_FN_REMAPPED) \
	X(nvmlDeviceGetFieldValues, nvmlReturn_t, (nvmlDevice_t, int, nvmlFieldValue_t *), GP_NVML_FN_FIELDS) \
	X(nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t, (nvmlDevice_t, unsigned int *), GP_NVML_FN_MIG_DEVICES) \
	X(nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t, (nvmlDevice_t, unsigned int, nvmlDevice_t *), \
	  GP_NVML_FN_MIG_DEVICES)                                                                 \
	X(nvmlDeviceGetGpuInstanceId, nvmlReturn_t, (nvmlDevice_t, unsigned int *), GP_NVML_FN_MIG_DEVICES) \
	X(nvmlDeviceGetComputeInstanceId, nvmlReturn_t, (nvmlDevice_t, unsigned int *), GP_NVML_FN_MIG_DEVICES)

struct nvml_api {
#define X(name, ret, args, fn) ret(*name) args;
	NVML_FUNCS(X)
#undef X
};

static const char *const state_names[GP_NVML_STATE__COUNT] = {
	[GP_NVML_STARTING] = "starting", [GP_NVML_LOADED] = "loaded", [GP_NVML_NO_LIBRARY] = "no_library",
	[GP_NVML_NO_SYMBOLS] = "no_symbols", [GP_NVML_INIT_FAILED] = "init_failed", [GP_NVML_NO_GPU] = "no_gpu",
	[GP_NVML_STATIC] = "static_build",
};

static const char *const fn_names[GP_NVML_FN__COUNT] = {
	[GP_NVML_FN_UUID] = "nvmlDeviceGetUUID",
	[GP_NVML_FN_NAME] = "nvmlDeviceGetName",
	[GP_NVML_FN_UTIL] = "nvmlDeviceGetUtilizationRates",
	[GP_NVML_FN_MEMORY] = "nvmlDeviceGetMemoryInfo",
	[GP_NVML_FN_PROCS] = "nvmlDeviceGetComputeRunningProcesses_v3",
	[GP_NVML_FN_PROC_UTIL] = "nvmlDeviceGetProcessUtilization",
	[GP_NVML_FN_POWER] = "nvmlDeviceGetPowerUsage",
	[GP_NVML_FN_ENERGY] = "nvmlDeviceGetTotalEnergyConsumption",
	[GP_NVML_FN_TEMP] = "nvmlDeviceGetTemperature",
	[GP_NVML_FN_CLOCK] = "nvmlDeviceGetClockInfo",
	[GP_NVML_FN_THROTTLE] = "nvmlDeviceGetCurrentClocksThrottleReasons",
	[GP_NVML_FN_PCIE] = "nvmlDeviceGetPcieThroughput",
	[GP_NVML_FN_MIG] = "nvmlDeviceGetMigMode",
	[GP_NVML_FN_EVENTS] = "nvmlDeviceRegisterEvents",
	[GP_NVML_FN_EVENT_WAIT] = "nvmlEventSetWait_v2",
	[GP_NVML_FN_ECC] = "nvmlDeviceGetTotalEccErrors",
	[GP_NVML_FN_RETIRED] = "nvmlDeviceGetRetiredPages",
	[GP_NVML_FN_REMAPPED] = "nvmlDeviceGetRemappedRows",
	[GP_NVML_FN_FIELDS] = "nvmlDeviceGetFieldValues",
	[GP_NVML_FN_MIG_DEVICES] = "nvmlDeviceGetMigDeviceHandleByIndex",
};

const char *gp_nvml_state_name(int state)
{
	return state >= 0 && state < GP_NVML_STATE__COUNT ? state_names[state] : "unknown";
}

const char *gp_nvml_fn_name(int fn)
{
	return fn >= 0 && fn < GP_NVML_FN__COUNT ? fn_names[fn] : "unknown";
}

/* The thread's own per-GPU state, kept between rounds. */
struct dev {
	nvmlDevice_t h;
	nvmlProcessInfo_t *pbuf;          /* the process list's buffer, grown as NVML asks */
	unsigned int pcap;
	nvmlProcessUtilizationSample_t *ubuf;
	unsigned int ucap;
	unsigned long long last_seen_us;  /* the newest process sample read */
	uint64_t last_read_us;
};

/* The first process buffer: small, so the growth NVML asks for is the path every busy GPU
 * takes (a fixed 16-entry buffer failed on the H200). */
#define FIRST_PROCS 4
#define MAX_PROCS 65536
#define MAX_SAMPLES 262144

struct gp_nvml {
	struct gp_nvml_opts o;
	void *lib;
	struct nvml_api api;
	bool inited;
	struct dev *devs;
	unsigned int nr_devs;
	nvmlEventSet_t events;
	pthread_t thread;
	bool thread_started;
	bool logged[GP_NVML_FN__COUNT];  /* the thread's: a failure told once per function */

	pthread_mutex_t lock;             /* guards what follows */
	pthread_cond_t round_done;
	bool stop;
	struct gp_nvml_snap cur;          /* the last round, and the XID counts */
	struct gp_nvml_xid xids[GP_NVML_MAX_XID_EVENTS];
};

static uint64_t real_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

static const char *errstr(struct gp_nvml *n, nvmlReturn_t r, char *buf, size_t len)
{
	const char *s = n->api.nvmlErrorString ? n->api.nvmlErrorString(r) : NULL;

	snprintf(buf, len, "%s (NVML error %d)", s ? s : "unknown error", r);
	return buf;
}

/* A failed call: counted; its first failure logged. Thread only (cur.fn_errors under lock). */
static void failed(struct gp_nvml *n, int fn, unsigned int gpu, nvmlReturn_t r)
{
	char buf[128];

	pthread_mutex_lock(&n->lock);
	n->cur.fn_errors[fn]++;
	pthread_mutex_unlock(&n->lock);
	if (n->logged[fn])
		return;
	n->logged[fn] = true;
	gp_log(GP_LOG_WARN, "nvml: %s failed on GPU %u: %s; that figure is left out (further failures counted in gpuprobe_nvml_errors_total)",
	       fn_names[fn], gpu, errstr(n, r, buf, sizeof(buf)));
}

double gp_nvml__weighted(const uint64_t *ts_us, const unsigned int *util, size_t n, uint64_t since_us,
			 uint64_t period_us)
{
	double sum = 0, weight = 0, plain = 0;

	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint64_t prev = since_us, w;

		/* the newest sample of this process before this one */
		for (size_t j = 0; j < n; j++)
			if (ts_us[j] < ts_us[i] && ts_us[j] > prev)
				prev = ts_us[j];
		w = ts_us[i] > prev ? ts_us[i] - prev : 0;
		if (period_us && w > period_us)
			w = period_us;
		sum += (double)util[i] * (double)w;
		weight += (double)w;
		plain += util[i];
	}
	/* timestamps not after since_us (another clock): the samples' plain mean */
	return weight > 0 ? sum / weight : plain / (double)n;
}

static void set_state(struct gp_nvml *n, int state, const char *why)
{
	pthread_mutex_lock(&n->lock);
	n->cur.state = state;
	snprintf(n->cur.why, sizeof(n->cur.why), "%s", why ? why : "");
	pthread_mutex_unlock(&n->lock);
}

/* dlopen and dlsym; the state says why not. */
static int load(struct gp_nvml *n)
{
	const char *name = n->o.lib ? n->o.lib : "libnvidia-ml.so.1";
	char why[256], missing[512] = "";
	size_t used = 0;
	const char *err;

	/* no dynamic loader mapped: static glibc's dlopen cannot host the driver's library (a
	 * libcuda loaded so died of SIGFPE on the H200: src/cli/check.c) */
	if (getauxval(AT_BASE) == 0) {
		set_state(n, GP_NVML_STATIC, "this gpuprobe is statically linked and cannot host the driver's library (the dynamically linked build can)");
		return -ENOEXEC;
	}
	n->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!n->lib) {
		err = dlerror();
		snprintf(why, sizeof(why), "cannot load %s: %s", name, err ? err : "not found");
		set_state(n, GP_NVML_NO_LIBRARY, why);
		return -ENOENT;
	}
#define X(fname, ret, args, fn)                                                                   \
	n->api.fname = (ret(*) args)dlsym(n->lib, #fname);                                        \
	if (!n->api.fname && (fn) == -1) {                                                        \
		snprintf(why, sizeof(why), "%s has no %s (a driver older than NVML 11's API?)", name, #fname); \
		set_state(n, GP_NVML_NO_SYMBOLS, why);                                             \
		return -ENOENT;                                                                   \
	}                                                                                         \
	if (!n->api.fname && (fn) >= 0) {                                                         \
		if (!n->cur.fn_missing[(fn) < 0 ? 0 : (fn)])                                      \
			n->cur.fn_errors[(fn) < 0 ? 0 : (fn)]++;                                  \
		n->cur.fn_missing[(fn) < 0 ? 0 : (fn)] = true;                                    \
		used += (size_t)snprintf(missing + used, used < sizeof(missing) ? sizeof(missing) - used : 0, \
					 "%s%s", used ? ", " : "", #fname);                        \
		if (used >= sizeof(missing))                                                      \
			used = sizeof(missing) - 1;                                               \
	}
	NVML_FUNCS(X)
#undef X
	if (missing[0])
		gp_log(GP_LOG_WARN, "nvml: %s lacks %s: those figures are left out (gpuprobe_nvml_functions_missing)",
		       name, missing);
	return 0;
}

/* nvmlInit_v2, the devices, their names and the XID registration. */
static int init(struct gp_nvml *n)
{
	char why[256], buf[128];
	unsigned int count = 0;
	nvmlReturn_t r = n->api.nvmlInit_v2();

	if (r != NVML_SUCCESS) {
		snprintf(why, sizeof(why), "nvmlInit_v2: %s", errstr(n, r, buf, sizeof(buf)));
		set_state(n, GP_NVML_INIT_FAILED, why);
		return -EIO;
	}
	n->inited = true;
	r = n->api.nvmlDeviceGetCount_v2(&count);
	if (r != NVML_SUCCESS) {
		snprintf(why, sizeof(why), "nvmlDeviceGetCount_v2: %s", errstr(n, r, buf, sizeof(buf)));
		set_state(n, GP_NVML_INIT_FAILED, why);
		return -EIO;
	}
	if (count > 1024)
		count = 1024;
	n->devs = calloc(count ? count : 1, sizeof(*n->devs));
	n->cur.gpus = calloc(count ? count : 1, sizeof(*n->cur.gpus));
	if (!n->devs || !n->cur.gpus)
		return -ENOMEM;
	for (unsigned int i = 0; i < count; i++) {
		struct gp_nvml_gpu *g = &n->cur.gpus[n->nr_devs];
		nvmlDevice_t h;

		r = n->api.nvmlDeviceGetHandleByIndex_v2(i, &h);
		if (r != NVML_SUCCESS) {
			gp_log(GP_LOG_WARN, "nvml: nvmlDeviceGetHandleByIndex_v2(%u): %s: that GPU is left out", i,
			       errstr(n, r, buf, sizeof(buf)));
			continue;
		}
		n->devs[n->nr_devs].h = h;
		/* 0: the first read takes what NVML buffered; later ones pass the newest sample's
		 * own stamp back, so whatever clock the driver stamps with, no sample is lost
		 * or read twice */
		n->devs[n->nr_devs].last_seen_us = 0;
		n->devs[n->nr_devs].last_read_us = real_us();
		g->index = i;
		if (!n->api.nvmlDeviceGetUUID || (r = n->api.nvmlDeviceGetUUID(h, g->uuid, sizeof(g->uuid)))) {
			if (n->api.nvmlDeviceGetUUID)
				failed(n, GP_NVML_FN_UUID, i, r);
			snprintf(g->uuid, sizeof(g->uuid), "unknown-%u", i);
		}
		g->uuid[sizeof(g->uuid) - 1] = 0;
		if (!n->api.nvmlDeviceGetName || (r = n->api.nvmlDeviceGetName(h, g->name, sizeof(g->name)))) {
			if (n->api.nvmlDeviceGetName)
				failed(n, GP_NVML_FN_NAME, i, r);
			snprintf(g->name, sizeof(g->name), "unknown");
		}
		g->name[sizeof(g->name) - 1] = 0;
		n->nr_devs++;
	}
	n->cur.nr_gpus = n->nr_devs;
	if (!n->nr_devs) {
		set_state(n, GP_NVML_NO_GPU, "NVML lists no GPU");
		return -ENODEV;
	}
	if (n->api.nvmlEventSetCreate && n->api.nvmlDeviceRegisterEvents && n->api.nvmlEventSetWait_v2) {
		r = n->api.nvmlEventSetCreate(&n->events);
		if (r != NVML_SUCCESS) {
			failed(n, GP_NVML_FN_EVENTS, 0, r);
			n->events = NULL;
		}
		for (unsigned int i = 0; n->events && i < n->nr_devs; i++) {
			r = n->api.nvmlDeviceRegisterEvents(n->devs[i].h, nvmlEventTypeXidCriticalError, n->events);
			if (r != NVML_SUCCESS)
				failed(n, GP_NVML_FN_EVENTS, n->cur.gpus[i].index, r);
			else
				n->cur.gpus[i].have |= GP_NVH_EVENTS;
		}
	}
	return 0;
}

/* A call's answer: true on success, else counted (and told once). */
static bool ok(struct gp_nvml *n, int fn, unsigned int gpu, nvmlReturn_t r)
{
	if (r == NVML_SUCCESS)
		return true;
	failed(n, fn, gpu, r);
	return false;
}

#define HAVE(fnptr) (n->api.fnptr != NULL)

/* A health call that did not answer: NOT_SUPPORTED (no ECC, no NVLink, the other
 * memory-repair scheme) is no failure, only no figure; anything else is counted. */
static void health_failed(struct gp_nvml *n, int fn, unsigned int gpu, nvmlReturn_t r)
{
	if (r != NVML_ERROR_NOT_SUPPORTED)
		failed(n, fn, gpu, r);
}

/* The four ECC counts; all or none. */
static void read_ecc(struct gp_nvml *n, struct dev *d, struct gp_nvml_gpu *g, unsigned int *have)
{
	static const int kind[4][2] = {
		{ NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC }, { NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC },
		{ NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC }, { NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC },
	};
	unsigned long long v[4];

	for (int i = 0; i < 4; i++) {
		nvmlReturn_t r = n->api.nvmlDeviceGetTotalEccErrors(d->h, kind[i][0], kind[i][1], &v[i]);

		if (r != NVML_SUCCESS) {
			health_failed(n, GP_NVML_FN_ECC, g->index, r);
			return;
		}
	}
	g->ecc_vol_corr = v[0], g->ecc_vol_unc = v[1], g->ecc_agg_corr = v[2], g->ecc_agg_unc = v[3];
	*have |= GP_NVH_ECC;
}

/* The number of pages retired for a cause: the size query (no buffer), as nvml.h allows. */
static int retired(struct gp_nvml *n, struct dev *d, unsigned int gpu, int cause, uint64_t *count)
{
	unsigned int c = 0;
	nvmlReturn_t r = n->api.nvmlDeviceGetRetiredPages(d->h, cause, &c, NULL);

	if (r != NVML_SUCCESS && r != NVML_ERROR_INSUFFICIENT_SIZE) {
		health_failed(n, GP_NVML_FN_RETIRED, gpu, r);
		return -1;
	}
	*count = c;
	return 0;
}

/* A MIG device's memory: v2 (used without the reserve), else v1. */
static bool mig_memory(struct gp_nvml *n, nvmlDevice_t h, unsigned int gpu, struct gp_nvml_mig *m)
{
	nvmlMemory_v2_t m2 = { .version = NVML_MEMORY_V2 };
	nvmlMemory_t m1;

	if (HAVE(nvmlDeviceGetMemoryInfo_v2)) {
		if (!ok(n, GP_NVML_FN_MEMORY, gpu, n->api.nvmlDeviceGetMemoryInfo_v2(h, &m2)))
			return false;
		m->mem_used = m2.used, m->mem_total = m2.total;
		return true;
	}
	if (!HAVE(nvmlDeviceGetMemoryInfo) || !ok(n, GP_NVML_FN_MEMORY, gpu, n->api.nvmlDeviceGetMemoryInfo(h, &m1)))
		return false;
	m->mem_used = m1.used, m->mem_total = m1.total;
	return true;
}

/* In MIG mode: each MIG device's instance ids, UUID and memory (a slot NVML leaves empty,
 * NOT_FOUND, is skipped). */
static void read_migs(struct gp_nvml *n, struct dev *d, struct gp_nvml_gpu *g, unsigned int *have)
{
	unsigned int max = 0;
	nvmlReturn_t r;

	g->nr_migs = 0;
	if (!g->mig || !HAVE(nvmlDeviceGetMaxMigDeviceCount) || !HAVE(nvmlDeviceGetMigDeviceHandleByIndex) ||
	    !HAVE(nvmlDeviceGetGpuInstanceId) || !HAVE(nvmlDeviceGetComputeInstanceId))
		return;
	r = n->api.nvmlDeviceGetMaxMigDeviceCount(d->h, &max);
	if (!ok(n, GP_NVML_FN_MIG_DEVICES, g->index, r))
		return;
	for (unsigned int i = 0; i < max && g->nr_migs < GP_NVML_MAX_MIG; i++) {
		struct gp_nvml_mig *m = &g->migs[g->nr_migs];
		nvmlDevice_t h;

		memset(m, 0, sizeof(*m));
		r = n->api.nvmlDeviceGetMigDeviceHandleByIndex(d->h, i, &h);
		if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT) /* an empty slot */
			continue;
		if (!ok(n, GP_NVML_FN_MIG_DEVICES, g->index, r) ||
		    !ok(n, GP_NVML_FN_MIG_DEVICES, g->index, n->api.nvmlDeviceGetGpuInstanceId(h, &m->gi)) ||
		    !ok(n, GP_NVML_FN_MIG_DEVICES, g->index, n->api.nvmlDeviceGetComputeInstanceId(h, &m->ci)))
			continue;
		if (!HAVE(nvmlDeviceGetUUID) || n->api.nvmlDeviceGetUUID(h, m->uuid, sizeof(m->uuid)))
			snprintf(m->uuid, sizeof(m->uuid), "unknown");
		m->uuid[sizeof(m->uuid) - 1] = 0;
		m->have_mem = mig_memory(n, h, g->index, m);
		g->nr_migs++;
	}
	*have |= GP_NVH_MIG_DEVICES;
}

/* Retired pages, remapped rows, NVLink counters: each where the GPU has them. */
static void read_health(struct gp_nvml *n, struct dev *d, struct gp_nvml_gpu *g, unsigned int *have)
{
	unsigned int corr, unc, pend, fail;

	if (HAVE(nvmlDeviceGetTotalEccErrors))
		read_ecc(n, d, g, have);
	if (HAVE(nvmlDeviceGetRetiredPages) &&
	    !retired(n, d, g->index, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &g->retired_sbe) &&
	    !retired(n, d, g->index, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &g->retired_dbe))
		*have |= GP_NVH_RETIRED;
	if (HAVE(nvmlDeviceGetRemappedRows)) {
		nvmlReturn_t r = n->api.nvmlDeviceGetRemappedRows(d->h, &corr, &unc, &pend, &fail);

		if (r == NVML_SUCCESS) {
			g->remap_corr = corr, g->remap_unc = unc, g->remap_pending = pend, g->remap_failed = fail;
			*have |= GP_NVH_REMAPPED;
		} else {
			health_failed(n, GP_NVML_FN_REMAPPED, g->index, r);
		}
	}
	if (HAVE(nvmlDeviceGetFieldValues)) {
		nvmlFieldValue_t f[2] = { { .fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = ~0U },
					  { .fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, .scopeId = ~0U } };
		nvmlReturn_t r = n->api.nvmlDeviceGetFieldValues(d->h, 2, f);

		if (r == NVML_SUCCESS)
			r = f[0].nvmlReturn != NVML_SUCCESS ? f[0].nvmlReturn : f[1].nvmlReturn;
		if (r == NVML_SUCCESS) {
			g->nvlink_tx_bytes = f[0].value.ullVal * 1024ULL, g->nvlink_rx_bytes = f[1].value.ullVal * 1024ULL;
			*have |= GP_NVH_NVLINK;
		} else {
			health_failed(n, GP_NVML_FN_FIELDS, g->index, r);
		}
	}
}

static void read_gpu(struct gp_nvml *n, struct dev *d, struct gp_nvml_gpu *g)
{
	nvmlUtilization_t u;
	nvmlMemory_t m;
	nvmlMemory_v2_t m2;
	unsigned int v, cur, pend;
	unsigned long long e;
	unsigned int have = g->have & GP_NVH_EVENTS;

	if (HAVE(nvmlDeviceGetUtilizationRates) && ok(n, GP_NVML_FN_UTIL, g->index, n->api.nvmlDeviceGetUtilizationRates(d->h, &u))) {
		g->util_gpu = u.gpu, g->util_mem = u.memory;
		have |= GP_NVH_UTIL;
	}
	m2.version = NVML_MEMORY_V2;
	if (HAVE(nvmlDeviceGetMemoryInfo_v2) &&
	    ok(n, GP_NVML_FN_MEMORY, g->index, n->api.nvmlDeviceGetMemoryInfo_v2(d->h, &m2))) {
		g->mem_used = m2.used, g->mem_total = m2.total;
		have |= GP_NVH_MEMORY;
	} else if (!HAVE(nvmlDeviceGetMemoryInfo_v2) && HAVE(nvmlDeviceGetMemoryInfo) &&
		   ok(n, GP_NVML_FN_MEMORY, g->index, n->api.nvmlDeviceGetMemoryInfo(d->h, &m))) {
		g->mem_used = m.used, g->mem_total = m.total; /* an old driver: the reserve counted as used */
		have |= GP_NVH_MEMORY;
	}
	if (HAVE(nvmlDeviceGetPowerUsage) && ok(n, GP_NVML_FN_POWER, g->index, n->api.nvmlDeviceGetPowerUsage(d->h, &v))) {
		g->power_w = v / 1000.0;
		have |= GP_NVH_POWER;
	}
	if (HAVE(nvmlDeviceGetTotalEnergyConsumption) &&
	    ok(n, GP_NVML_FN_ENERGY, g->index, n->api.nvmlDeviceGetTotalEnergyConsumption(d->h, &e))) {
		g->energy_mj = e;
		have |= GP_NVH_ENERGY;
	}
	if (HAVE(nvmlDeviceGetTemperature) &&
	    ok(n, GP_NVML_FN_TEMP, g->index, n->api.nvmlDeviceGetTemperature(d->h, NVML_TEMPERATURE_GPU, &v))) {
		g->temp_c = v;
		have |= GP_NVH_TEMP;
	}
	if (HAVE(nvmlDeviceGetClockInfo)) {
		if (ok(n, GP_NVML_FN_CLOCK, g->index, n->api.nvmlDeviceGetClockInfo(d->h, NVML_CLOCK_SM, &v)))
			g->clock_sm_mhz = v, have |= GP_NVH_CLOCK_SM;
		if (ok(n, GP_NVML_FN_CLOCK, g->index, n->api.nvmlDeviceGetClockInfo(d->h, NVML_CLOCK_MEM, &v)))
			g->clock_mem_mhz = v, have |= GP_NVH_CLOCK_MEM;
	}
	if (HAVE(nvmlDeviceGetCurrentClocksThrottleReasons) &&
	    ok(n, GP_NVML_FN_THROTTLE, g->index, n->api.nvmlDeviceGetCurrentClocksThrottleReasons(d->h, &e))) {
		g->throttle = e;
		have |= GP_NVH_THROTTLE;
	}
	if (HAVE(nvmlDeviceGetPcieThroughput)) {
		if (ok(n, GP_NVML_FN_PCIE, g->index, n->api.nvmlDeviceGetPcieThroughput(d->h, NVML_PCIE_UTIL_TX_BYTES, &v)))
			g->pcie_tx_kbs = v, have |= GP_NVH_PCIE_TX;
		if (ok(n, GP_NVML_FN_PCIE, g->index, n->api.nvmlDeviceGetPcieThroughput(d->h, NVML_PCIE_UTIL_RX_BYTES, &v)))
			g->pcie_rx_kbs = v, have |= GP_NVH_PCIE_RX;
	}
	g->mig = false;
	if (HAVE(nvmlDeviceGetMigMode)) {
		nvmlReturn_t r = n->api.nvmlDeviceGetMigMode(d->h, &cur, &pend);

		/* NOT_SUPPORTED: a GPU without MIG, which is no failure */
		if (r == NVML_SUCCESS)
			g->mig = cur == NVML_DEVICE_MIG_ENABLE, have |= GP_NVH_MIG;
		else if (r != NVML_ERROR_NOT_SUPPORTED)
			failed(n, GP_NVML_FN_MIG, g->index, r);
	}
	read_health(n, d, g, &have);
	read_migs(n, d, g, &have);
	g->have = have;
}

/* The process list, following NVML's size protocol: the count it asks for, grown. */
static int read_procs(struct gp_nvml *n, struct dev *d, unsigned int gpu, unsigned int *count)
{
	nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;

	for (int tries = 0; tries < 8 && r == NVML_ERROR_INSUFFICIENT_SIZE; tries++) {
		unsigned int c = d->pcap;

		if (!d->pbuf) {
			d->pbuf = calloc(FIRST_PROCS, sizeof(*d->pbuf));
			if (!d->pbuf)
				return -ENOMEM;
			d->pcap = c = FIRST_PROCS;
		}
		r = n->api.nvmlDeviceGetComputeRunningProcesses_v3(d->h, &c, d->pbuf);
		if (r == NVML_SUCCESS) {
			*count = c < d->pcap ? c : d->pcap;
			return 0;
		}
		if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
			/* room for what it asks and a few more that may start meanwhile */
			unsigned int want = c + c / 4 + 4;
			void *p;

			if (c <= d->pcap || want > MAX_PROCS)
				want = d->pcap * 2 > MAX_PROCS ? MAX_PROCS : d->pcap * 2;
			if (want <= d->pcap)
				break;
			p = realloc(d->pbuf, want * sizeof(*d->pbuf));
			if (!p)
				return -ENOMEM;
			d->pbuf = p, d->pcap = want;
		}
	}
	failed(n, GP_NVML_FN_PROCS, gpu, r);
	return -EIO;
}

/* Process samples since the last read; *nr 0 with 0 returned: none (NOT_FOUND); -ENOTSUP:
 * NVML gives none on this GPU. */
static int read_samples(struct gp_nvml *n, struct dev *d, unsigned int gpu, unsigned int *nr)
{
	nvmlReturn_t r;
	unsigned int c = 0;

	*nr = 0;
	r = n->api.nvmlDeviceGetProcessUtilization(d->h, NULL, &c, d->last_seen_us);
	if (r == NVML_ERROR_NOT_FOUND || (r == NVML_SUCCESS && !c))
		return 0;
	if (r == NVML_ERROR_NOT_SUPPORTED)
		return -ENOTSUP;
	if (r != NVML_ERROR_INSUFFICIENT_SIZE && r != NVML_SUCCESS) {
		failed(n, GP_NVML_FN_PROC_UTIL, gpu, r);
		return -EIO;
	}
	if (c > MAX_SAMPLES)
		c = MAX_SAMPLES;
	if (c > d->ucap) {
		void *p = realloc(d->ubuf, (size_t)c * sizeof(*d->ubuf));

		if (!p)
			return -ENOMEM;
		d->ubuf = p, d->ucap = c;
	}
	c = d->ucap;
	r = n->api.nvmlDeviceGetProcessUtilization(d->h, d->ubuf, &c, d->last_seen_us);
	if (r == NVML_ERROR_NOT_FOUND)
		return 0;
	if (r != NVML_SUCCESS) {
		failed(n, GP_NVML_FN_PROC_UTIL, gpu, r);
		return -EIO;
	}
	*nr = c < d->ucap ? c : d->ucap;
	return 0;
}

struct procs {
	struct gp_nvml_proc *v;
	size_t n, cap;
};

static struct gp_nvml_proc *proc_add(struct procs *ps, uint32_t pid, unsigned int gpu)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].pid == pid && ps->v[i].gpu == gpu)
			return &ps->v[i];
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 16;
		void *p = realloc(ps->v, cap * sizeof(*ps->v));

		if (!p)
			return NULL;
		ps->v = p, ps->cap = cap;
	}
	ps->v[ps->n] = (struct gp_nvml_proc){ .pid = pid, .gpu = gpu, .gi = ~0U, .ci = ~0U };
	return &ps->v[ps->n++];
}

/* One GPU's processes and their utilization over the interval since the last read. */
static void read_gpu_procs(struct gp_nvml *n, struct dev *d, unsigned int gi, struct gp_nvml_gpu *g,
			   struct procs *ps)
{
	unsigned int np = 0, ns = 0;
	int rs = -ENOTSUP;
	size_t first = ps->n;
	uint64_t now = real_us(), period = (uint64_t)(n->o.period_s * 2e6);

	g->proc_util_unavailable = NULL;
	if (HAVE(nvmlDeviceGetComputeRunningProcesses_v3) && !read_procs(n, d, g->index, &np)) {
		g->have |= GP_NVH_PROCS;
		for (unsigned int i = 0; i < np; i++) {
			struct gp_nvml_proc *p = proc_add(ps, d->pbuf[i].pid, gi);

			if (!p)
				break;
			p->mem_known = d->pbuf[i].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE;
			p->gi = d->pbuf[i].gpuInstanceId, p->ci = d->pbuf[i].computeInstanceId;
			p->mem_bytes += p->mem_known ? d->pbuf[i].usedGpuMemory : 0;
		}
	}
	if (g->mig)
		g->proc_util_unavailable = "MIG mode: NVML gives no per-process utilization";
	else if (!HAVE(nvmlDeviceGetProcessUtilization))
		g->proc_util_unavailable = "the library has no nvmlDeviceGetProcessUtilization";
	else if ((rs = read_samples(n, d, g->index, &ns)) == -ENOTSUP)
		g->proc_util_unavailable = "not supported on this GPU";
	else if (rs)
		g->proc_util_unavailable = "nvmlDeviceGetProcessUtilization failed";
	if (g->proc_util_unavailable)
		return;
	g->have |= GP_NVH_PROC_UTIL;
	/* a process with samples but not in the compute list (a graphics one): listed too */
	for (unsigned int i = 0; i < ns; i++)
		if (d->ubuf[i].pid)
			proc_add(ps, d->ubuf[i].pid, gi);
	{
		/* each process's samples gathered in turn: every one of them counts */
		uint64_t *ts = calloc(ns ? ns : 1, sizeof(*ts));
		unsigned int *sm = calloc(ns ? ns : 1, sizeof(*sm)), *mu = calloc(ns ? ns : 1, sizeof(*mu));

		for (size_t k = first; ts && sm && mu && k < ps->n; k++) {
			struct gp_nvml_proc *p = &ps->v[k];
			size_t m = 0;

			for (unsigned int i = 0; i < ns; i++)
				if (d->ubuf[i].pid == p->pid && d->ubuf[i].timeStamp > d->last_seen_us) {
					ts[m] = d->ubuf[i].timeStamp;
					sm[m] = d->ubuf[i].smUtil > 100 ? 100 : d->ubuf[i].smUtil;
					mu[m] = d->ubuf[i].memUtil > 100 ? 100 : d->ubuf[i].memUtil;
					m++;
				}
			p->util_known = true;
			p->samples = (unsigned int)m;
			/* no sample since the last read: NVML saw it idle over the interval */
			p->sm_util = m ? gp_nvml__weighted(ts, sm, m, d->last_seen_us, period) : 0;
			p->mem_util = m ? gp_nvml__weighted(ts, mu, m, d->last_seen_us, period) : 0;
		}
		free(ts);
		free(sm);
		free(mu);
	}
	for (unsigned int i = 0; i < ns; i++)
		if (d->ubuf[i].timeStamp > d->last_seen_us)
			d->last_seen_us = d->ubuf[i].timeStamp;
	d->last_read_us = now;
}

/* One round: every GPU's figures and processes, then published. */
static void round_once(struct gp_nvml *n)
{
	struct gp_nvml_gpu *gpus = calloc(n->nr_devs, sizeof(*gpus));
	struct procs ps = { 0 };
	uint64_t t0 = gp_mono_ns();

	if (!gpus)
		return;
	pthread_mutex_lock(&n->lock);
	memcpy(gpus, n->cur.gpus, n->nr_devs * sizeof(*gpus)); /* names, XID counts */
	pthread_mutex_unlock(&n->lock);
	for (unsigned int i = 0; i < n->nr_devs; i++) {
		read_gpu(n, &n->devs[i], &gpus[i]);
		read_gpu_procs(n, &n->devs[i], i, &gpus[i], &ps);
	}
	pthread_mutex_lock(&n->lock);
	for (unsigned int i = 0; i < n->nr_devs; i++) {
		/* XIDs counted meanwhile are the shared copy's */
		memcpy(gpus[i].xids, n->cur.gpus[i].xids, sizeof(gpus[i].xids));
		gpus[i].nr_xids = n->cur.gpus[i].nr_xids;
		gpus[i].xid_total = n->cur.gpus[i].xid_total;
		gpus[i].xid_other = n->cur.gpus[i].xid_other;
	}
	free(n->cur.gpus);
	n->cur.gpus = gpus;
	free(n->cur.procs);
	n->cur.procs = ps.v;
	n->cur.nr_procs = ps.n;
	n->cur.rounds++;
	n->cur.sample_seconds += (double)(gp_mono_ns() - t0) / 1e9;
	if (n->cur.state == GP_NVML_STARTING)
		n->cur.state = GP_NVML_LOADED;
	pthread_cond_broadcast(&n->round_done);
	pthread_mutex_unlock(&n->lock);
}

/* An XID event: counted on its GPU, kept with the processes on that GPU now, logged. */
static void on_xid(struct gp_nvml *n, const nvmlEventData_t *e)
{
	unsigned int gi = n->nr_devs;
	struct gp_nvml_xid x = { .time_ns = real_us() * 1000, .mono_ns = gp_mono_ns(), .code = e->eventData };
	char pids[400] = "";
	size_t used = 0;

	for (unsigned int i = 0; i < n->nr_devs; i++)
		if (n->devs[i].h == e->device)
			gi = i;
	if (gi == n->nr_devs || !(e->eventType & nvmlEventTypeXidCriticalError))
		return;
	pthread_mutex_lock(&n->lock);
	{
		struct gp_nvml_gpu *g = &n->cur.gpus[gi];
		unsigned int k;

		x.gpu = gi;
		g->xid_total++;
		for (k = 0; k < g->nr_xids && g->xids[k].code != x.code; k++)
			;
		if (k < g->nr_xids)
			g->xids[k].count++, g->xids[k].last_ns = x.time_ns;
		else if (k < GP_NVML_MAX_XID_CODES)
			g->xids[g->nr_xids++] = (typeof(g->xids[0])){ x.code, 1, x.time_ns };
		else
			g->xid_other++;
		for (size_t i = 0; i < n->cur.nr_procs; i++) {
			if (n->cur.procs[i].gpu != gi)
				continue;
			if (x.nr_pids < sizeof(x.pids) / sizeof(x.pids[0]))
				x.pids[x.nr_pids++] = n->cur.procs[i].pid;
			else
				x.more_pids++;
		}
		n->xids[n->cur.xid_seq % GP_NVML_MAX_XID_EVENTS] = x;
		n->cur.xid_seq++;
	}
	pthread_mutex_unlock(&n->lock);
	for (unsigned int i = 0; i < x.nr_pids && used < sizeof(pids); i++)
		used += (size_t)snprintf(pids + used, sizeof(pids) - used, " %u", x.pids[i]);
	if (x.more_pids && used < sizeof(pids))
		snprintf(pids + used, sizeof(pids) - used, " and %u more", x.more_pids);
	gp_log(GP_LOG_WARN, "nvml: XID %llu on GPU %u (%s); processes on it:%s", (unsigned long long)x.code,
	       n->cur.gpus[gi].index, n->cur.gpus[gi].uuid, x.nr_pids ? pids : " none seen");
}

static bool stopping(struct gp_nvml *n)
{
	bool s;

	pthread_mutex_lock(&n->lock);
	s = n->stop;
	pthread_mutex_unlock(&n->lock);
	return s;
}

/* Waits up to ms for an XID event (or sleeps, without an event set). */
static void wait_events(struct gp_nvml *n, unsigned int ms)
{
	nvmlEventData_t e;
	nvmlReturn_t r;

	if (n->events) {
		memset(&e, 0, sizeof(e));
		r = n->api.nvmlEventSetWait_v2(n->events, &e, ms);
		if (r == NVML_SUCCESS) {
			on_xid(n, &e);
			return;
		}
		if (r == NVML_ERROR_TIMEOUT)
			return;
		failed(n, GP_NVML_FN_EVENT_WAIT, 0, r);
	}
	nanosleep(&(struct timespec){ ms / 1000, (long)(ms % 1000) * 1000000L }, NULL);
}

static void *thread_main(void *arg)
{
	struct gp_nvml *n = arg;
	uint64_t period = gp_seconds_to_ns(n->o.period_s);

	while (!stopping(n)) {
		uint64_t deadline = gp_mono_ns() + period, now;

		round_once(n);
		/* in slices of 100 ms at most: a stop waits no longer */
		while (!stopping(n) && (now = gp_mono_ns()) < deadline) {
			uint64_t left = (deadline - now) / 1000000ULL;

			wait_events(n, left > 100 ? 100 : left ? (unsigned int)left : 1);
		}
	}
	return NULL;
}

struct gp_nvml *gp_nvml__start(const struct gp_nvml_opts *o)
{
	struct gp_nvml *n = calloc(1, sizeof(*n));
	sigset_t all, old;
	int r;

	if (!n)
		return NULL;
	n->o = *o;
	if (n->o.period_s <= 0)
		n->o.period_s = 1;
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->round_done, NULL);
	n->cur.period_s = n->o.period_s;
	n->cur.state = GP_NVML_STARTING;
	/* every signal blocked while the library starts and in the threads it or we start: a
	 * signal for gpuprobe goes to the front end's thread, never to NVML's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = load(n);
	if (!r)
		r = init(n);
	/* told before the thread starts: nothing here reads what it writes */
	if (!r)
		gp_log(GP_LOG_INFO, "nvml: %u GPU%s, read every %g s%s", n->nr_devs, n->nr_devs == 1 ? "" : "s",
		       n->o.period_s, n->events ? ", XID events registered" : "");
	if (!r && pthread_create(&n->thread, NULL, thread_main, n) == 0) {
		n->thread_started = true;
		/* its own name: its CPU time can be read apart (ps -L, /proc/PID/task; bench/nvml_cost.py) */
		pthread_setname_np(n->thread, "gpuprobe-nvml");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (n->thread_started)
		return n;
	if (!r)
		set_state(n, GP_NVML_INIT_FAILED, "cannot start its thread");
	/* one line; a node without the driver's library is no fault of the daemon's default */
	gp_log(n->o.quiet && (n->cur.state == GP_NVML_NO_LIBRARY || n->cur.state == GP_NVML_STATIC) ? GP_LOG_INFO : GP_LOG_WARN,
	       "nvml: not used (%s): %s; every other figure as before", gp_nvml_state_name(n->cur.state), n->cur.why);
	return n;
}

void gp_nvml__wait_round(struct gp_nvml *n, double timeout_s)
{
	struct timespec ts;

	if (!n)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)timeout_s;
	ts.tv_nsec += (long)((timeout_s - (double)(time_t)timeout_s) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_sec++, ts.tv_nsec -= 1000000000L;
	pthread_mutex_lock(&n->lock);
	while (n->thread_started && !n->cur.rounds)
		if (pthread_cond_timedwait(&n->round_done, &n->lock, &ts))
			break;
	pthread_mutex_unlock(&n->lock);
}

int gp_nvml__snapshot(struct gp_nvml *n, struct gp_nvml_snap *s)
{
	int r = 0;

	memset(s, 0, sizeof(*s));
	if (!n)
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	*s = n->cur;
	s->gpus = NULL, s->procs = NULL, s->xids = NULL;
	s->nr_xids = n->cur.xid_seq < GP_NVML_MAX_XID_EVENTS ? n->cur.xid_seq : GP_NVML_MAX_XID_EVENTS;
	if (s->nr_gpus && !(s->gpus = malloc(s->nr_gpus * sizeof(*s->gpus))))
		r = -ENOMEM;
	if (!r && s->nr_procs && !(s->procs = malloc(s->nr_procs * sizeof(*s->procs))))
		r = -ENOMEM;
	if (!r && s->nr_xids && !(s->xids = malloc(s->nr_xids * sizeof(*s->xids))))
		r = -ENOMEM;
	if (!r) {
		if (s->nr_gpus)
			memcpy(s->gpus, n->cur.gpus, s->nr_gpus * sizeof(*s->gpus));
		if (s->nr_procs)
			memcpy(s->procs, n->cur.procs, s->nr_procs * sizeof(*s->procs));
		for (size_t i = 0; i < s->nr_xids; i++) /* oldest first */
			s->xids[i] = n->xids[(n->cur.xid_seq - s->nr_xids + i) % GP_NVML_MAX_XID_EVENTS];
	}
	pthread_mutex_unlock(&n->lock);
	if (r)
		gp_nvml__snap_free(s);
	return r;
}

void gp_nvml__snap_free(struct gp_nvml_snap *s)
{
	if (!s)
		return;
	free(s->gpus);
	free(s->procs);
	free(s->xids);
	s->gpus = NULL, s->procs = NULL, s->xids = NULL;
	s->nr_gpus = 0, s->nr_procs = 0, s->nr_xids = 0;
}

void gp_nvml__free(struct gp_nvml *n)
{
	if (!n)
		return;
	if (n->thread_started) {
		pthread_mutex_lock(&n->lock);
		n->stop = true;
		pthread_mutex_unlock(&n->lock);
		pthread_join(n->thread, NULL);
	}
	if (n->events && n->api.nvmlEventSetFree)
		n->api.nvmlEventSetFree(n->events);
	if (n->inited)
		n->api.nvmlShutdown();
	for (unsigned int i = 0; n->devs && i < n->nr_devs; i++) {
		free(n->devs[i].pbuf);
		free(n->devs[i].ubuf);
	}
	free(n->devs);
	free(n->cur.gpus);
	free(n->cur.procs);
	if (n->lib)
		dlclose(n->lib);
	pthread_cond_destroy(&n->round_done);
	pthread_mutex_destroy(&n->lock);
	free(n);
}
