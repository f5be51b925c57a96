/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What a uprobe on a function's first instruction sees, per architecture (the build's
 * -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64): the integer arguments, the return
 * address, and a user stack that names the direct caller. Included after vmlinux.h and
 * libbpf's bpf_tracing.h; nothing here touches the records of gpuprobe.h.
 */
#ifndef GP_ARCH_BPF_H
#define GP_ARCH_BPF_H

#if defined(__TARGET_ARCH_x86)
/* SysV x86-64: rdi, rsi, rdx, rcx, r8, r9; the 7th and later on the stack above the
 * return address the call pushed. */
#define GP_REG_ARGS 6
#define GP_STACK_ARGS_AT 8
/* an argument larger than 16 bytes passed by value (ncclUniqueId) is copied onto the stack
 * and takes no register */
#define GP_BIG_BYVAL_BY_REF 0
static __always_inline __u64 gp_reg_arg(struct pt_regs *ctx, int n)
{
	switch (n) {
	case 0: return ctx->di;
	case 1: return ctx->si;
	case 2: return ctx->dx;
	case 3: return ctx->cx;
	case 4: return ctx->r8;
	default: return ctx->r9;
	}
}

static __always_inline __u64 gp_entry_return_addr(struct pt_regs *ctx)
{
	__u64 ra = 0;

	bpf_probe_read_user(&ra, sizeof(ra), (void *)ctx->sp);
	return ra;
}
#elif defined(__TARGET_ARCH_arm64)
/* AAPCS64: x0-x7; the 9th and later at sp, 8 bytes each; the return address in x30 (no
 * frame record holds it before the callee's prologue). */
#define GP_REG_ARGS 8
#define GP_STACK_ARGS_AT 0
/* a composite larger than 16 bytes passed by value goes as a pointer to the caller's copy,
 * in the next argument register */
#define GP_BIG_BYVAL_BY_REF 1
static __always_inline __u64 gp_reg_arg(struct pt_regs *ctx, int n)
{
	return ((const struct user_pt_regs *)ctx)->regs[n & 7];
}

static __always_inline __u64 gp_entry_return_addr(struct pt_regs *ctx)
{
	return ((const struct user_pt_regs *)ctx)->regs[30];
}
#else
#error "gpuprobe's BPF is built for x86 or arm64 (-D__TARGET_ARCH_x86 or _arm64)"
#endif

/* The n-th integer argument (from 0) at a function's first instruction; n a constant.
 * A stack argument that cannot be read comes back 0. */
static __always_inline __u64 gp_arg(struct pt_regs *ctx, int n)
{
	__u64 v = 0;

	if (n < GP_REG_ARGS)
		return gp_reg_arg(ctx, n);
	bpf_probe_read_user(&v, sizeof(v),
			    (void *)(PT_REGS_SP(ctx) + GP_STACK_ARGS_AT + 8 * (n - GP_REG_ARGS)));
	return v;
}

/*
 * Integer arguments first .. first+n-1 (constants, n at most 4) into v: the registers'
 * as gp_arg reads them, the stack's in ONE user-memory read (a launch's hot path: x86-64
 * puts cuLaunchKernel's blockDimZ, sharedMemBytes and hStream there, three reads with
 * gp_arg). Stack arguments that cannot be read come back 0.
 */
static __always_inline void gp_args(struct pt_regs *ctx, int first, int n, __u64 *v)
{
	int s = first > GP_REG_ARGS ? first : GP_REG_ARGS; /* the first on the stack */

#pragma unroll
	for (int i = 0; i < 4; i++)
		if (i < n && first + i < GP_REG_ARGS)
			v[i] = gp_reg_arg(ctx, first + i);
	if (first + n <= s)
		return;
	if (bpf_probe_read_user(&v[s - first], 8 * (first + n - s),
				(void *)(PT_REGS_SP(ctx) + GP_STACK_ARGS_AT + 8 * (s - GP_REG_ARGS))))
#pragma unroll
		for (int i = 0; i < 4; i++)
			if (i < n && first + i >= s)
				v[i] = 0;
}

#ifdef GP_MAX_STACK
/*
 * bpf_get_stack(BPF_F_USER_STACK) at a function's first instruction, in frames, with the
 * direct caller in frame 1. The kernel walks frame records from the frame pointer, which
 * at entry is still the caller's: the caller's own return address is in no record yet
 * (on the stack top on x86-64, in x30 on arm64), so it is missing. x86-64 kernels from
 * 6.11 add it when the first instruction is push %rbp or endbr64; older kernels, other
 * first instructions and arm64 do not, and there this puts it in (the outermost frame
 * falls off a full stack). Returns the number of frames, or bpf_get_stack's -errno.
 */
static __always_inline long gp_entry_user_stack(struct pt_regs *ctx, __u64 *stack)
{
	long n = bpf_get_stack(ctx, stack, GP_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);
	__u64 ra;

	if (n < (long)sizeof(__u64))
		return n < 0 ? n : 0;
	n /= sizeof(__u64);
	ra = gp_entry_return_addr(ctx);
	if (!ra || (n > 1 && stack[1] == ra))
		return n;
#pragma unroll
	for (int i = GP_MAX_STACK - 1; i > 1; i--)
		if (i <= n)
			stack[i] = stack[i - 1];
	stack[1] = ra;
	return n < GP_MAX_STACK ? n + 1 : n;
}
#endif

#endif /* GP_ARCH_BPF_H */
