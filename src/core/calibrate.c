/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include "core/attach.h"
#include "core/calibrate.h"
#include "core/kernel_features.h"
#include "lib/procmaps.h"
#include "lib/util.h"

/*
 * The probed function, in assembly so that its first instruction is what compiled driver
 * code starts with: on x86-64 push %rbp, which the kernel emulates at the trap. A C leaf
 * function started with `lea` here, which the kernel single-steps out of line instead:
 * that measured ~8 us per hit on the development machine against ~0.85 us for a
 * push-prologue function (docs/benchmarks.md's floor). On arm64 the frame-record prologue
 * stp x29, x30, [sp, #-16]!, which kernels single-step or emulate depending on their
 * version (src/core/kernel_features.c measures which).
 */
#if defined(__x86_64__)
__asm__(".text\n"
	".globl gp_calibrate_target\n"
	".type gp_calibrate_target, @function\n"
	"gp_calibrate_target:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tlea 1(%rdi), %eax\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size gp_calibrate_target, .-gp_calibrate_target\n"
	".globl gp_calibrate_twin\n"
	".type gp_calibrate_twin, @function\n"
	"gp_calibrate_twin:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tlea 1(%rdi), %eax\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size gp_calibrate_twin, .-gp_calibrate_twin\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl gp_calibrate_target\n"
	".type gp_calibrate_target, %function\n"
	".p2align 2\n"
	"gp_calibrate_target:\n"
	"\tstp x29, x30, [sp, #-16]!\n"
	"\tmov x29, sp\n"
	"\tadd w0, w0, #1\n"
	"\tldp x29, x30, [sp], #16\n"
	"\tret\n"
	".size gp_calibrate_target, .-gp_calibrate_target\n"
	".globl gp_calibrate_twin\n"
	".type gp_calibrate_twin, %function\n"
	".p2align 2\n"
	"gp_calibrate_twin:\n"
	"\tstp x29, x30, [sp, #-16]!\n"
	"\tmov x29, sp\n"
	"\tadd w0, w0, #1\n"
	"\tldp x29, x30, [sp], #16\n"
	"\tret\n"
	".size gp_calibrate_twin, .-gp_calibrate_twin\n");
#else
#error "gp_calibrate_target: x86-64 or arm64"
#endif
int gp_calibrate_target(int x);
int gp_calibrate_twin(int x); /* the same code, never probed: the call's own time */

/*
 * A hit costs a real program more than a loop that does nothing but hit: between two of
 * its calls a program runs through its own code and data, and the trap then runs with the
 * kernel's path out of the core's own caches. So each timed call follows a sweep over every
 * cache line of twice the L2 cache (the core's private caches hold none of the trap's path
 * after it; the shared L3 still may). Measured with an entry probe, the median of 200
 * calls: on the H200 VM (2 MiB L2) 0.67 us in a tight loop, 1.9-2.3 us after the sweep,
 * where the PyTorch loop of bench/gpu paid ~1.8 us a hit; on the development machine 0.73
 * and 1.7. On the H200, sweeps over one line in each page of 32 MiB (the TLB) gave 1.1 us,
 * and over every line of 16-256 MiB (no cache holds the path) 4-9 us
 * (bench/gpu/results-inproc-h200.md). What a hit costs the program's own code after it is
 * not in it.
 */
#define LINE 64UL

static size_t sweep_bytes(void)
{
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);

	if (l2 < (1L << 20))
		l2 = 1L << 20;
	if (l2 > (16L << 20))
		l2 = 16L << 20;
	return 2 * (size_t)l2;
}

static void sweep(volatile unsigned char *buf, size_t bytes, unsigned int round)
{
	size_t lines = bytes / LINE;

	/* a stride of 4099 lines (prime to the count), from a different line each round */
	for (size_t i = 0; i < lines; i++)
		buf[((i * 4099 + round) % lines) * LINE]++;
}

/* This thread's CPU time (ns): a hit's trap and program run on it, in the kernel. */
static uint64_t thread_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return gp_mono_ns();
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The fastest of a few rounds of n calls of the probed function: a hit in a tight loop,
 * everything warm (noise on a shared machine only ever adds time). On this thread's CPU
 * clock, not the wall's: the probed rounds (1000 hits, milliseconds) were descheduled in all
 * five on a loaded machine while the plain ones (microseconds) never were, and the time the
 * CPU went to others was priced as the hit's. At load 13 on 2 CPUs a hit read 12-33 us warm
 * where the probed processes' own CPU time said 3-4 us (the 8-thread loop: 10.9 us a probed
 * launch with its two hits, 3.3 us unprobed), and every sampled window read as all but all
 * in probes (estimates 0.3x, sampling.c's call-bound model capped). */
static uint64_t time_warm(int n)
{
	uint64_t best = UINT64_MAX;

	for (int r = 0; r < 5; r++) {
		volatile int sink = 0;
		uint64_t t0 = thread_ns(), t;

		for (int i = 0; i < n; i++)
			sink = gp_calibrate_target(sink);
		t = thread_ns() - t0;
		best = t < best ? t : best;
	}
	return best;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* *d: the median time of n calls of the probed function less that of n calls of its
 * twin (ns), each call after a sweep, the two taking turns. 0 or a negative errno. */
static int time_cold(int n, double *d)
{
	size_t bytes = sweep_bytes();
	volatile unsigned char *buf;
	uint64_t *t[2];
	volatile int sink = 0;
	int r = -ENOMEM;

	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return -errno;
	t[0] = calloc((size_t)n, sizeof(uint64_t));
	t[1] = calloc((size_t)n, sizeof(uint64_t));
	if (t[0] && t[1]) {
		sweep(buf, bytes, 0);
		for (int i = 0; i < n; i++)
			for (int k = 0; k < 2; k++) {
				int which = k ^ (i & 1);
				uint64_t t0;

				sweep(buf, bytes, (unsigned int)(2 * i + k + 1));
				t0 = gp_mono_ns();
				sink = which ? gp_calibrate_twin(sink) : gp_calibrate_target(sink);
				t[which][i] = gp_mono_ns() - t0;
			}
		qsort(t[0], (size_t)n, sizeof(uint64_t), cmp_u64);
		qsort(t[1], (size_t)n, sizeof(uint64_t), cmp_u64);
		*d = (double)t[0][n / 2] - (double)t[1][n / 2];
		r = 0;
	}
	free(t[0]);
	free(t[1]);
	munmap((void *)buf, bytes);
	return r;
}

struct find {
	unsigned long long off;
	char path[4096];
};

/* The probe the modes would use: a uprobe_multi link where the kernel has them (also the
 * one a non-root tracer with CAP_BPF and CAP_PERFMON may make: perf-event uprobes need
 * CAP_SYS_ADMIN on recent kernels, 6.18 here), else a perf-event uprobe;
 * on our own text, this process only. Returns an fd to close, or -errno. */
static int probe_self(int prog, const struct find *f)
{
	int pfd;

	if (attach__has_uprobe_multi())
		return attach__uprobe_multi_one(prog, f->path, f->off, getpid());
	pfd = features__uprobe_event(f->path, f->off, getpid(), false);
	if (pfd < 0)
		return pfd;
	if (ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog) || ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0)) {
		int r = -errno;

		close(pfd);
		return r;
	}
	return pfd;
}

int calibrate__probe_costs(int calls, struct gp_probe_cost *c)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct find f;
	LIBBPF_OPTS(bpf_prog_load_opts, opts);
	uint64_t probed, plain;
	double d = 0;
	int prog, pfd, err, n = calls > 0 ? calls : 1, tight = 5 * n;

	err = procmaps__locate("/proc", getpid(), (uintptr_t)&gp_calibrate_target, f.path, sizeof(f.path), &f.off);
	if (err < 0)
		return err;
	if (attach__has_uprobe_multi())
		opts.expected_attach_type = attach__uprobe_multi_type();
	prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "gp_calibrate", "GPL", insns, 2, &opts);
	if (prog < 0)
		return -errno;
	pfd = probe_self(prog, &f);
	if (pfd < 0) {
		close(prog);
		return pfd;
	}
	probed = time_warm(tight);
	err = time_cold(n, &d);
	close(pfd);
	close(prog);
	if (err)
		return err;
	plain = time_warm(tight);
	c->warm = probed > plain ? (double)(probed - plain) / 1e9 / tight : 0.0;
	c->cold = d > 0 ? d / 1e9 : 0.0;
	/* a cold hit never costs less than a warm one; a noisy sweep may say it does */
	if (c->cold < c->warm)
		c->cold = c->warm;
	return 0;
}

double calibrate__probe_cost(int calls)
{
	struct gp_probe_cost c;
	int r = calibrate__probe_costs(calls, &c);

	return r ? r : c.cold;
}
