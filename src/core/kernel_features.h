/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * (Not "features.h": src/core is on the include path, and glibc's own <features.h> must
 * stay reachable.)
 *
 * What the running kernel offers gpuprobe, probed rather than inferred from its version:
 * the BPF program, map and link types and helpers gpuprobe uses, BTF, and the uprobe
 * behaviours that decide what a probe costs and what its stacks show. One row per
 * feature: present, missing or unknown (could not be probed here), and what gpuprobe does
 * without it: a fallback, or the one line naming the kernel feature and the first
 * release that has it.
 *
 *   struct features *f = features__probe(FEATURES_LIVE);
 *   if (features__check_required(f, err, sizeof(err))) -> one error line, exit
 *   features__print(f, stdout);        // gpuprobe check's matrix
 *   features__free(f);
 */
#ifndef GP_KERNEL_FEATURES_H
#define GP_KERNEL_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum gp_feature {
	GP_FEAT_BTF_VMLINUX,
	GP_FEAT_BTF_MODULES,
	GP_FEAT_PROG_KPROBE,
	GP_FEAT_PROG_TRACEPOINT,
	GP_FEAT_MAP_HASH,
	GP_FEAT_MAP_ARRAY,
	GP_FEAT_MAP_PERCPU_ARRAY,
	GP_FEAT_MAP_RINGBUF,
	GP_FEAT_MAP_MMAPABLE,
	GP_FEAT_HELPER_MAP_OPS,
	GP_FEAT_HELPER_KTIME,
	GP_FEAT_HELPER_PID_TGID,
	GP_FEAT_HELPER_COMM,
	GP_FEAT_HELPER_TASK,
	GP_FEAT_HELPER_STACK,
	GP_FEAT_HELPER_READ_USER,
	GP_FEAT_HELPER_READ_USER_STR,
	GP_FEAT_HELPER_READ_KERNEL,
	GP_FEAT_HELPER_RINGBUF,
	GP_FEAT_HELPER_COOKIE,
	GP_FEAT_HELPER_LOOP,
	GP_FEAT_UPROBE_PMU,
	GP_FEAT_KPROBE_PMU,
	GP_FEAT_LINK_PERF_EVENT,
	GP_FEAT_LINK_UPROBE_MULTI,
	GP_FEAT_EXIT_GROUP_DEAD,
	GP_FEAT_URETPROBE_SYSCALL,
	GP_FEAT_CALLER_AT_ENTRY,    /* live */
	GP_FEAT_ENTRY_PUSH_EMULATED, /* live: the frame-pointer prologue needs no single step */
	GP_FEAT_URETPROBE_SECCOMP,  /* live: a uretprobe in a process under seccomp is harmless */
	GP_FEAT__COUNT,
};

enum gp_feat_state {
	GP_FEAT_MISSING = 0,
	GP_FEAT_PRESENT = 1,
	GP_FEAT_UNKNOWN = 2, /* not probed (no privilege, not asked for) or the probe failed */
	GP_FEAT_NOT_HERE = 3, /* does not exist on this architecture */
};

/* What a missing feature costs. */
enum gp_feat_need {
	GP_NEED_REQUIRED, /* gpuprobe cannot trace without it */
	GP_NEED_FALLBACK, /* gpuprobe works another way, slower or with less detail */
	GP_NEED_MODE,     /* one mode or option needs it */
	GP_NEED_INFO,     /* gpuprobe does not need it; shown for the support matrix */
};

struct gp_feature_row {
	const char *name;    /* "uprobe_multi link" */
	const char *kind;    /* prog, map, helper, link, btf, pmu, uprobe, syscall */
	const char *since;   /* first mainline release that has it */
	const char *arch;    /* NULL, or the only architecture that has it */
	enum gp_feat_need need;
	const char *without; /* what gpuprobe does without it, or why it cannot run */
	enum gp_feat_state state;
	char detail[160];    /* what the probe saw */
};

#define FEATURES_LIVE 1U /* also the experiments that fork a child and attach perf-event
			  * uprobes to it (caller at entry, prologue emulation, seccomp) */

struct features;

/* Probes everything (never fails: rows it could not probe are UNKNOWN). NULL only when
 * out of memory. */
struct features *features__probe(unsigned flags);
void features__free(struct features *f);
const struct gp_feature_row *features__row(const struct features *f, enum gp_feature id);
bool features__has(const struct features *f, enum gp_feature id);
/* The first required feature that is missing: -ENOTSUP with one line in err naming it, its
 * kernel option or version and what was seen; 0 when every required feature is there. */
int features__check_required(const struct features *f, char *err, size_t len);
/* At start, for every mode and the daemon: the features every mode needs, probed without
 * the live experiments (a few ms). 0, or -ENOTSUP with one line in err naming the first
 * one missing and the first release with it (5.10 has no attach cookies: 5.15), never a
 * verifier log; -ENOMEM. */
int features__check_kernel(char *err, size_t len);
/* The matrix, one line per feature ("feature  yes|no|unknown|n/a  since  arch  what was
 * seen, or what gpuprobe does without it"), then the seccomp warning where it applies. */
void features__print(const struct features *f, FILE *out);
/* gpuprobe check in one call: probes (live), prints the matrix and, when a required feature
 * is missing, an "error: ..." line; returns 0 or -ENOTSUP (-ENOMEM). */
int features__print_matrix(FILE *out);

/* Whether a user stack taken by BPF at the first instruction of fn (in this program's
 * text, probed in a forked child) names fn's caller in frame 1: 1 yes, 0 no, -errno.
 * x86-64 kernels with "perf,x86: avoid missing caller address in stack traces captured
 * in uprobe" (6.11; also in 6.1.y and 6.6.y stable) do when fn begins with push %rbp or
 * endbr64, and only then. */
int features__caller_at_entry(int (*fn)(int));

/* A perf-event uprobe (ret: a return probe) on path at file offset off, in process pid
 * only, created disabled; an fd to close, or -errno. */
int features__uprobe_event(const char *path, unsigned long long off, int pid, bool ret);

/* Kernel release "6.12.13-amd64" -> 6, 12, 13; -EINVAL when it does not start so. */
struct gp_kver {
	int major, minor, patch;
};
int features__parse_release(const char *release, struct gp_kver *v);

/*
 * x86-64 kernels 6.11 to 6.13 send a returning uretprobe through the uretprobe system
 * call, which a seccomp filter that does not allow it (Docker's default profile) answers
 * with an error: the traced process then crashes. The fix ("seccomp: passthrough
 * uretprobe systemcall without filtering") is in 6.14, 6.13.3 and 6.12.14; 6.11 had
 * reached its end of life. True for a release in the affected range on x86_64.
 * Distribution kernels may carry the fix: the live probe (GP_FEAT_URETPROBE_SECCOMP) says.
 */
bool features__uretprobe_seccomp_hazard(const struct gp_kver *v, const char *machine);
/* Container runtimes found under root ("/", or a test's tree): their sockets in /run and
 * /var/run, and processes named like them in root/proc. Names go to buf, comma-separated;
 * returns how many. */
int features__container_runtimes(const char *root, char *buf, size_t len);
/*
 * The warning for the hazard above, or 0 with buf empty when there is none: a kernel in
 * the range (or a live probe that saw a process die) and a container runtime here.
 * root is normally "/". f may be NULL (version check only).
 */
int features__seccomp_warning(const struct features *f, const char *release, const char *machine,
			      const char *root, char *buf, size_t len);

/* The first instruction of a probed function, as the kernel's uprobe code sees it. */
enum gp_insn_class {
	GP_INSN_PUSH,   /* x86-64 push %reg (the frame-pointer prologue's push %rbp) */
	GP_INSN_STP_FP, /* arm64 stp x29, x30, [sp, #-n]! (the frame-record prologue) */
	GP_INSN_ENDBR,  /* x86-64 endbr64; arm64 bti */
	GP_INSN_PAC,    /* arm64 paciasp / pacibsp */
	GP_INSN_NOP,
	GP_INSN_BRANCH, /* jmp, call, jcc; b, bl, b.cond, cbz, tbz, adr(p), br, blr, ret */
	GP_INSN_MOV,    /* register to register move (mov %rsp,%rbp; mov x29, sp) */
	GP_INSN_SUB_SP, /* stack allocation: sub $n,%rsp; sub sp, sp, #n */
	GP_INSN_OTHER,
	GP_INSN__COUNT,
};
const char *features__insn_class_name(enum gp_insn_class c);
/* Decodes code[0..len) for the ELF machine (EM_X86_64 or EM_AARCH64). */
enum gp_insn_class features__classify_insn(unsigned machine, const unsigned char *code, size_t len);

struct gp_entry_counts {
	int total;
	int emulated;   /* the kernel emulates the instruction at the trap */
	int stepped;    /* single-stepped out of line: ~10x dearer per hit */
	int unreadable; /* offset outside the file, or not code of a known machine */
	int by_class[GP_INSN__COUNT];
};
/* Bit per enum gp_insn_class the running kernel emulates: measured by FEATURES_LIVE where
 * it could be, else what every kernel gpuprobe supports does (push on x86-64: not in 4.14,
 * nop and relative branches; branches on arm64). */
unsigned features__emulated_mask(const struct features *f);
/*
 * Classifies the first instruction at each of offsets[0..n) (file offsets, as uprobes
 * take; negative ones are skipped) of the ELF file path, which may be hostile: it is
 * opened without following a final symlink or blocking, must be a regular file, and only
 * 16 bytes within its size are read per offset. 0, or -errno with a reason in err.
 */
int features__classify_entries(const char *path, const long long *offsets, int n,
			       unsigned emulated_mask, struct gp_entry_counts *out, char *err,
			       size_t len);

/* The first mainline release with BPF helper name ("bpf_find_vma" -> "5.17"), for the
 * helpers gpuprobe's programs call; NULL for others. */
const char *features__helper_since(const char *name);
/* A helper's name from its number (the build's uapi bpf.h), NULL when unknown. */
const char *features__helper_name(int id);

#endif /* GP_KERNEL_FEATURES_H */
