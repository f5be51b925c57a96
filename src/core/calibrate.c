/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include "attach.h"
#include "calibrate.h"
#include "kernel_features.h"
#include "procmaps.h"
#include "util.h"

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
	".size gp_calibrate_target, .-gp_calibrate_target\n");
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
	".size gp_calibrate_target, .-gp_calibrate_target\n");
#else
#error "gp_calibrate_target: x86-64 or arm64"
#endif
int gp_calibrate_target(int x);

/* The fastest of a few rounds: noise on a shared machine only ever adds time. */
static uint64_t time_loop(int n)
{
	uint64_t best = UINT64_MAX;

	for (int r = 0; r < 5; r++) {
		volatile int sink = 0;
		uint64_t t0 = gp_mono_ns(), t;

		for (int i = 0; i < n; i++)
			sink = gp_calibrate_target(sink);
		t = gp_mono_ns() - t0;
		best = t < best ? t : best;
	}
	return best;
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

double calibrate__probe_cost(int n)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct find f;
	LIBBPF_OPTS(bpf_prog_load_opts, opts);
	uint64_t plain, probed;
	int prog, pfd, err;

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
	probed = time_loop(n);
	close(pfd);
	plain = time_loop(n);
	close(prog);
	return probed > plain ? (double)(probed - plain) / 1e9 / n : 0.0;
}
