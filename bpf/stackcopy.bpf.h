/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * stackcopy: the user registers and the top of the user stack at a uprobe,
 * copied for an unwind in user space from call-frame information (what
 * `perf record --call-graph dwarf` does), so stacks reach callers built
 * without frame pointers.
 *
 * The record (struct gp_stack_copy) is in stacks.h, shared with user space;
 * this header is the BPF helper only.
 */
#ifndef GPUPROBE_STACKCOPY_BPF_H
#define GPUPROBE_STACKCOPY_BPF_H

#include "stacks.h"

#ifdef __bpf__

/*
 * Settings (const volatile, set between __open and __load by whoever
 * includes this): how many bytes to copy, at most GP_STACK_COPY_MAX.
 */
const volatile __u32 gp_stack_bytes = GP_STACK_COPY_MAX;

struct gp_vma_end_ctx {
	__u64 end;
};

static long gp_vma_end_cb(struct task_struct *task, struct vm_area_struct *vma,
			  void *data)
{
	struct gp_vma_end_ctx *c = data;

	(void)task;
	c->end = BPF_CORE_READ(vma, vm_end);
	return 0;
}

/*
 * Copies the registers of ctx (a uprobe's pt_regs: the user registers) and
 * up to gp_stack_bytes of the stack from sp into *out. The copy stops at the
 * end of the stack's mapping (bpf_find_vma) so a shallow stack is copied
 * whole rather than failing the read at the top; a copy that reached the
 * end is marked GP_STACK_COPY_TO_END, so user space can tell "the stack
 * ends here" from "the copy was too short" (a partial stack). Returns 0 or
 * the negative errno also left in out->err.
 */
static __always_inline int gp_stack_copy(struct pt_regs *ctx,
					 struct gp_stack_copy *out)
{
	struct gp_vma_end_ctx vc = { 0 };
	struct task_struct *task;
	__u64 sp, n, avail, end;
	long ret = 0;
	int i;

	out->regs.ip = PT_REGS_IP(ctx);
	sp = PT_REGS_SP(ctx);
	out->regs.sp = sp;
	out->regs.bp = PT_REGS_FP(ctx);
#if defined(__TARGET_ARCH_x86)
	out->regs.bx = BPF_CORE_READ(ctx, bx);
	out->regs.r12 = BPF_CORE_READ(ctx, r12);
	out->regs.r13 = BPF_CORE_READ(ctx, r13);
	out->regs.r14 = BPF_CORE_READ(ctx, r14);
	out->regs.r15 = BPF_CORE_READ(ctx, r15);
#elif defined(__TARGET_ARCH_arm64)
	{
		/* a uprobe's ctx is the user's pt_regs (struct user_pt_regs first): direct
		 * loads at constant offsets, which every verifier takes */
		const struct user_pt_regs *ur = (const struct user_pt_regs *)ctx;

		out->regs.lr = ur->regs[30];
		out->regs.x19[0] = ur->regs[19];
		out->regs.x19[1] = ur->regs[20];
		out->regs.x19[2] = ur->regs[21];
		out->regs.x19[3] = ur->regs[22];
		out->regs.x19[4] = ur->regs[23];
		out->regs.x19[5] = ur->regs[24];
		out->regs.x19[6] = ur->regs[25];
		out->regs.x19[7] = ur->regs[26];
		out->regs.x19[8] = ur->regs[27];
		out->regs.x19[9] = ur->regs[28];
	}
#else
#error "the stack copy is built for x86 or arm64"
#endif
	out->size = 0;
	out->err = 0;
	out->flags = 0;
	n = gp_stack_bytes;
	if (n > GP_STACK_COPY_MAX)
		n = GP_STACK_COPY_MAX;
	out->wanted = (__u32)n;

	task = bpf_get_current_task_btf();
	ret = bpf_find_vma(task, sp, gp_vma_end_cb, &vc, 0);
	if (ret == 0 && vc.end > sp) {
		avail = vc.end - sp;
		if (avail <= n) {
			n = avail;
			out->flags |= GP_STACK_COPY_TO_END;
		}
	} else {
		out->flags |= GP_STACK_COPY_NO_VMA;
	}
	/*
	 * A read that meets a page not present fails whole, and stacks have
	 * such pages: the main thread's has a random, never written gap below
	 * its argument strings, and without the mapping's end (no
	 * bpf_find_vma) the read may cross the top. So on failure the copy is
	 * cut back to the previous page boundary, a bounded number of times:
	 * the largest readable prefix, which holds the innermost frames.
	 */
	for (i = 0; i < 6; i++) {
		if (n == 0 || n > GP_STACK_COPY_MAX)
			goto done;
		ret = bpf_probe_read_user(out->data, n, (const void *)sp);
		if (ret == 0)
			break;
		end = (sp + n - 1) & ~4095ull;
		if (end <= sp)
			break;
		n = end - sp;
		out->flags &= ~GP_STACK_COPY_TO_END;
		out->flags |= GP_STACK_COPY_CUT;
	}
	if (ret < 0) {
		out->err = (__s32)ret;
		goto done;
	}
	out->size = (__u32)n;
done:
	return out->err;
}

#endif /* __bpf__ */

#endif /* GPUPROBE_STACKCOPY_BPF_H */
