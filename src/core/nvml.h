/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * NVML (the driver's management library, libnvidia-ml.so.1), loaded at run time and read by
 * a thread of its own, off the hot path: per GPU (utilization, memory, power, energy,
 * temperature, clocks, throttle reasons, PCIe throughput, MIG mode, XID errors) and per
 * process on a GPU (SM and memory utilization from NVML's samples since the last read,
 * weighted by time; the GPU memory the driver accounts to it).
 *
 * No build-time dependency: the few types and prototypes used are declared in nvml.c from
 * nvml.h's documented semantics. A missing library, a missing function or a failing call
 * is one log line (once), counted, and the rest goes on; gp_nvml__snapshot says what state
 * NVML is in, so every output can say why a figure is absent.
 */
#ifndef GP_NVML_H
#define GP_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gp_nvml;

/* Where NVML stands; its name is a metric label (gp_nvml_state_name). */
enum gp_nvml_state {
	GP_NVML_STARTING,    /* loaded, no sample read yet */
	GP_NVML_LOADED,      /* sampling */
	GP_NVML_NO_LIBRARY,  /* dlopen failed (no driver, a container without it) */
	GP_NVML_NO_SYMBOLS,  /* a function every read needs is missing (too old a driver) */
	GP_NVML_INIT_FAILED, /* nvmlInit_v2 or the device count failed */
	GP_NVML_NO_GPU,      /* NVML answered: no GPU */
	GP_NVML_STATIC,      /* a statically linked gpuprobe: static glibc cannot host the driver's library */
	GP_NVML_STATE__COUNT,
};

const char *gp_nvml_state_name(int state);

/* The functions read, each counted apart (gp_nvml_fn_name gives the NVML name). */
enum gp_nvml_fn {
	GP_NVML_FN_UUID,
	GP_NVML_FN_NAME,
	GP_NVML_FN_UTIL,
	GP_NVML_FN_MEMORY,
	GP_NVML_FN_PROCS,
	GP_NVML_FN_PROC_UTIL,
	GP_NVML_FN_POWER,
	GP_NVML_FN_ENERGY,
	GP_NVML_FN_TEMP,
	GP_NVML_FN_CLOCK,
	GP_NVML_FN_THROTTLE,
	GP_NVML_FN_PCIE,
	GP_NVML_FN_MIG,
	GP_NVML_FN_EVENTS,     /* nvmlEventSetCreate / nvmlDeviceRegisterEvents */
	GP_NVML_FN_EVENT_WAIT, /* nvmlEventSetWait_v2 */
	GP_NVML_FN_ECC,        /* nvmlDeviceGetTotalEccErrors */
	GP_NVML_FN_RETIRED,    /* nvmlDeviceGetRetiredPages */
	GP_NVML_FN_REMAPPED,   /* nvmlDeviceGetRemappedRows */
	GP_NVML_FN_FIELDS,     /* nvmlDeviceGetFieldValues: NVLink throughput */
	GP_NVML_FN_MIG_DEVICES, /* nvmlDeviceGetMaxMigDeviceCount, ...GetMigDeviceHandleByIndex, instance ids */
	GP_NVML_FN__COUNT,
};

const char *gp_nvml_fn_name(int fn);

/* What a GPU has (bit per figure): a figure without its bit was not given by NVML. */
enum gp_nvml_have {
	GP_NVH_UTIL = 1 << 0,
	GP_NVH_MEMORY = 1 << 1,
	GP_NVH_POWER = 1 << 2,
	GP_NVH_ENERGY = 1 << 3,
	GP_NVH_TEMP = 1 << 4,
	GP_NVH_CLOCK_SM = 1 << 5,
	GP_NVH_CLOCK_MEM = 1 << 6,
	GP_NVH_THROTTLE = 1 << 7,
	GP_NVH_PCIE_TX = 1 << 8,
	GP_NVH_PCIE_RX = 1 << 9,
	GP_NVH_MIG = 1 << 10,
	GP_NVH_PROCS = 1 << 11,     /* the process list answered */
	GP_NVH_PROC_UTIL = 1 << 12, /* per-process utilization answered (samples or none) */
	GP_NVH_EVENTS = 1 << 13,    /* XID events registered */
	GP_NVH_ECC = 1 << 14,       /* ECC error counts (NOT_SUPPORTED: ECC off or none on this GPU) */
	GP_NVH_RETIRED = 1 << 15,   /* retired pages (GPUs before Ampere) */
	GP_NVH_REMAPPED = 1 << 16,  /* remapped rows (Ampere and later) */
	GP_NVH_NVLINK = 1 << 17,    /* NVLink data counters, every link summed */
	GP_NVH_MIG_DEVICES = 1 << 18, /* MIG instances listed (in MIG mode) */
};

#define GP_NVML_MAX_MIG 8 /* MIG instances per GPU (7 at most on A100, H100, H200) */

/* One MIG device (a compute instance in a GPU instance) of a GPU in MIG mode. */
struct gp_nvml_mig {
	unsigned int gi, ci;        /* GPU and compute instance ids */
	char uuid[96];              /* MIG-... */
	bool have_mem;
	uint64_t mem_used, mem_total; /* the instance's memory (nvmlDeviceGetMemoryInfo on its handle) */
};

#define GP_NVML_MAX_XID_CODES 32 /* distinct XID codes counted per GPU; the rest "other" */

struct gp_nvml_gpu {
	unsigned int index;
	char uuid[96], name[96];
	unsigned int have;          /* enum gp_nvml_have */
	unsigned int util_gpu, util_mem; /* percent */
	uint64_t mem_used, mem_total;    /* bytes */
	double power_w;
	uint64_t energy_mj;         /* millijoules since the driver loaded */
	unsigned int temp_c;
	unsigned int clock_sm_mhz, clock_mem_mhz;
	uint64_t throttle;          /* nvmlClocksThrottleReason bits */
	uint64_t pcie_tx_kbs, pcie_rx_kbs; /* KB/s (NVML's 1024-byte units) */
	bool mig;                   /* MIG mode on */
	/* ECC errors: volatile (since the driver loaded) and aggregate (the GPU's lifetime),
	 * corrected (single-bit) and uncorrected (double-bit) */
	uint64_t ecc_vol_corr, ecc_vol_unc, ecc_agg_corr, ecc_agg_unc;
	uint64_t retired_sbe, retired_dbe; /* pages retired for single-bit (repeated) and double-bit errors */
	uint64_t remap_corr, remap_unc;    /* rows remapped for corrected and uncorrected errors */
	bool remap_pending, remap_failed;
	uint64_t nvlink_tx_bytes, nvlink_rx_bytes; /* NVLink data since the driver loaded, every link */
	struct gp_nvml_mig migs[GP_NVML_MAX_MIG];
	unsigned int nr_migs;
	/* why per-process utilization is not given here (MIG, not supported), or NULL */
	const char *proc_util_unavailable;
	uint64_t xid_total;
	struct { uint64_t code, count, last_ns; } xids[GP_NVML_MAX_XID_CODES]; /* last_ns: CLOCK_REALTIME */
	unsigned int nr_xids;
	uint64_t xid_other;         /* errors of codes past the table */
};

/* One process on one GPU. */
struct gp_nvml_proc {
	uint32_t pid;
	unsigned int gpu;           /* index into the snapshot's gpus */
	bool mem_known;             /* the driver gave its memory (not NVML_VALUE_NOT_AVAILABLE) */
	uint64_t mem_bytes;         /* GPU memory the driver accounts to it */
	bool util_known;            /* false: not given (MIG, not supported): never 0 */
	double sm_util, mem_util;   /* percent over the last interval, time-weighted */
	unsigned int samples;       /* NVML samples the figures come from (0: idle) */
	unsigned int gi, ci;        /* its MIG instance (the process list's ids), ~0U outside MIG */
};

/* One XID error, as the event arrived. */
struct gp_nvml_xid {
	uint64_t time_ns;           /* CLOCK_REALTIME */
	uint64_t mono_ns;           /* CLOCK_MONOTONIC (the --trace timeline's clock) */
	unsigned int gpu;
	uint64_t code;
	uint32_t pids[32];          /* the processes on that GPU then (the last list read) */
	unsigned int nr_pids;
	unsigned int more_pids;     /* those past pids[] */
};

#define GP_NVML_MAX_XID_EVENTS 64 /* the last ones kept for reports */

struct gp_nvml_snap {
	int state;                  /* enum gp_nvml_state */
	char why[256];              /* the state's reason ("" when loaded) */
	uint64_t rounds;            /* sampling rounds done */
	double sample_seconds;      /* time the rounds took, in all */
	double period_s;
	uint64_t fn_errors[GP_NVML_FN__COUNT]; /* failed calls (a missing function counts once) */
	bool fn_missing[GP_NVML_FN__COUNT];
	struct gp_nvml_gpu *gpus;
	unsigned int nr_gpus;
	struct gp_nvml_proc *procs;
	size_t nr_procs;
	struct gp_nvml_xid *xids;   /* the last GP_NVML_MAX_XID_EVENTS, oldest first */
	size_t nr_xids;
	uint64_t xid_seq;           /* XID events in all (xids holds the last ones) */
};

struct gp_nvml_opts {
	const char *lib;  /* the library's name for dlopen (NULL: "libnvidia-ml.so.1") */
	double period_s;  /* seconds between rounds */
	bool quiet;       /* a missing library is an info line, not a warning (a default, not asked for) */
};

/* Loads the library and starts the thread; never NULL but on out of memory: a library
 * that cannot be used gives an object whose snapshots say why. One log line says what
 * happened. */
struct gp_nvml *gp_nvml__start(const struct gp_nvml_opts *o);
/* A copy of what the thread read last (0 or -ENOMEM); free with gp_nvml__snap_free. */
int gp_nvml__snapshot(struct gp_nvml *n, struct gp_nvml_snap *s);
void gp_nvml__snap_free(struct gp_nvml_snap *s);
/* Waits up to timeout_s for the first round (tests, a CLI's first report). */
void gp_nvml__wait_round(struct gp_nvml *n, double timeout_s);
/* Stops the thread, shuts NVML down, unloads it. NULL is fine. */
void gp_nvml__free(struct gp_nvml *n);

/* The arithmetic of per-process utilization (pure, unit-tested): samples (timestamp in
 * microseconds, utilization in percent) since `since_us`, oldest first or not; each
 * sample weighs the time since the one before it of the same process (the first: since
 * since_us, at most period_us). Returns the weighted mean, or -1 for no samples. */
double gp_nvml__weighted(const uint64_t *ts_us, const unsigned int *util, size_t n, uint64_t since_us,
			 uint64_t period_us);

#endif
