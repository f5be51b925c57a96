/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Kernel feature probing (src/core/kernel_features.c): release parsing, the uretprobe
 * seccomp hazard range, container runtime detection in a fake root, first-instruction
 * classification of both architectures from bytes and from files (hostile ones too),
 * and the live probes on the kernel this runs on, checked against what that kernel's
 * version says it must have.
 *   test_features --matrix         prints the matrix for this kernel (tests/vm/guest.sh)
 *   test_features --classify LIB   first instructions of every driver function gpuprobe
 *                                  probes in LIB, and which this kernel single-steps
 *                                  (tests/gpu/run_features.sh, on the real driver)
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "lib/apis.h"
#include "core/attach.h"
#include "core/kernel_features.h"
#include "lib/procmaps.h"
#include "unit.h"

/* the live probes' functions (src/core/kernel_features.c), global symbols */
int gp_feat_push(int), gp_feat_endbr(int), gp_feat_nop(int), gp_feat_branch(int);
int gp_feat_mov(int), gp_feat_sub(int), gp_feat_other(int);

static void test_parse_release(void)
{
	struct gp_kver v;

	if (!ASSERT_EQ(features__parse_release("6.12.13-amd64", &v), 0, "parse_release_6_12_13_amd64"))
		goto cleanup;
	if (!ASSERT_EQ(v.major, 6, "major"))
		goto cleanup;
	if (!ASSERT_EQ(v.minor, 12, "minor"))
		goto cleanup;
	if (!ASSERT_EQ(v.patch, 13, "patch"))
		goto cleanup;
	if (!ASSERT_EQ(features__parse_release("6.1.0-56-cloud-amd64", &v), 0, "parse_release_6_1_0_56_cloud_amd64"))
		goto cleanup;
	if (!ASSERT_EQ(v.minor, 1, "minor"))
		goto cleanup;
	if (!ASSERT_EQ(v.patch, 0, "patch"))
		goto cleanup;
	if (!ASSERT_EQ(features__parse_release("5.15", &v), 0, "parse_release_5_15"))
		goto cleanup;
	if (!ASSERT_EQ(v.minor, 15, "minor"))
		goto cleanup;
	if (!ASSERT_EQ(v.patch, 0, "patch"))
		goto cleanup;
	if (!ASSERT_EQ(features__parse_release("6.11-rc1", &v), 0, "parse_release_6_11_rc1"))
		goto cleanup;
	if (!ASSERT_EQ(v.minor, 11, "minor"))
		goto cleanup;
	if (!ASSERT_EQ(features__parse_release("6.18.44-fc-v669", &v), 0, "parse_release_6_18_44_fc_v669"))
		goto cleanup;
	if (!ASSERT_EQ(v.patch, 44, "patch"))
		goto cleanup;
	if (!ASSERT_EQ(features__parse_release("linux", &v), -EINVAL, "parse_release_linux"))
		goto cleanup;
	if (!ASSERT_EQ(features__parse_release("", &v), -EINVAL, "parse_empty"))
		goto cleanup;
	if (!ASSERT_EQ(features__parse_release(NULL, &v), -EINVAL, "null_release"))
		goto cleanup;
	if (!ASSERT_EQ(features__parse_release("-6.1", &v), -EINVAL, "parse_release_minus_6_1"))
		goto cleanup;
cleanup:;
}

static bool hazard(const char *rel, const char *mach)
{
	struct gp_kver v;

	return features__parse_release(rel, &v) == 0 && features__uretprobe_seccomp_hazard(&v, mach);
}

static void test_seccomp_hazard_range(void)
{
	if (!ASSERT_TRUE(!hazard("6.10.14", "x86_64"), "no_hazard_6_10_14"))
		goto cleanup;
	if (!ASSERT_TRUE(hazard("6.11.0", "x86_64"), "hazard_6_11_0"))
		goto cleanup;
	if (!ASSERT_TRUE(hazard("6.11.11", "x86_64"), "hazard_6_11_11"))
		goto cleanup;
	if (!ASSERT_TRUE(hazard("6.12.0", "x86_64"), "hazard_6_12_0"))
		goto cleanup;
	if (!ASSERT_TRUE(hazard("6.12.13-amd64", "x86_64"), "hazard_6_12_13_amd64"))
		goto cleanup;
	if (!ASSERT_TRUE(!hazard("6.12.14", "x86_64"), "no_hazard_6_12_14"))
		goto cleanup;
	if (!ASSERT_TRUE(!hazard("6.12.57+deb13-amd64", "x86_64"), "no_hazard_6_12_57_deb13_amd64"))
		goto cleanup;
	if (!ASSERT_TRUE(hazard("6.13.2", "x86_64"), "hazard_6_13_2"))
		goto cleanup;
	if (!ASSERT_TRUE(!hazard("6.13.3", "x86_64"), "no_hazard_6_13_3"))
		goto cleanup;
	if (!ASSERT_TRUE(!hazard("6.14.0", "x86_64"), "no_hazard_6_14_0"))
		goto cleanup;
	if (!ASSERT_TRUE(!hazard("6.1.0-56-amd64", "x86_64"), "no_hazard_6_1_0_56_amd64"))
		goto cleanup;
	if (!ASSERT_TRUE(!hazard("6.12.5", "aarch64"), "no_hazard_6_12_5_aarch64"))
		goto cleanup; /* no uretprobe system call there */
	if (!ASSERT_TRUE(!hazard("7.0.0", "x86_64"), "no_hazard_7_0_0"))
		goto cleanup;
cleanup:;
}

static char tmpdir[] = "/tmp/gp-features-XXXXXX";

static void put(const char *rel, const char *content)
{
	char path[512], dir[600];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	snprintf(dir, sizeof(dir), "mkdir -p \"$(dirname '%s')\"", path);
	if (system(dir) != 0)
		return;
	fp = fopen(path, "w");
	if (fp) {
		fputs(content, fp);
		fclose(fp);
	}
}

static void test_container_runtimes(void)
{
	char buf[128], warn[1024];

	if (!ASSERT_EQ(features__container_runtimes(tmpdir, buf, sizeof(buf)), 0, "runtimes_none"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "", "none_listed"))
		goto cleanup;
	/* no runtime: no warning even in the range */
	if (!ASSERT_EQ(features__seccomp_warning(NULL, "6.12.5", "x86_64", tmpdir, warn, sizeof(warn)), 0, "seccomp_6_12_5"))
		goto cleanup;
	put("run/docker.sock", "");
	put("proc/4242/comm", "containerd\n");
	put("proc/4243/comm", "bash\n");
	put("proc/self/comm", "dockerd\n"); /* not a PID: ignored */
	if (!ASSERT_EQ(features__container_runtimes(tmpdir, buf, sizeof(buf)), 2, "runtimes_two"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "docker, containerd", "two_listed"))
		goto cleanup;
	if (!ASSERT_EQ(features__container_runtimes(tmpdir, buf, 8), 2, "runtimes_cut"))
		goto cleanup; /* truncated, terminated */
	if (!ASSERT_EQ(strlen(buf), 7, "cut_len"))
		goto cleanup;
	if (!ASSERT_EQ(features__seccomp_warning(NULL, "6.12.5-amd64", "x86_64", tmpdir, warn, sizeof(warn)), 1, "seccomp_6_12_5_amd64"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(warn, "6.12.5-amd64 x86_64", "contains 6.12.5-amd64 x86_64"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(warn, "docker, containerd", "contains docker, containerd"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(warn, "6.12.14", "contains 6.12.14"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(warn, "seccomp=unconfined", "contains seccomp=unconfined"))
		goto cleanup;
	if (!ASSERT_EQ(features__seccomp_warning(NULL, "6.12.14", "x86_64", tmpdir, warn, sizeof(warn)), 0, "seccomp_6_12_14"))
		goto cleanup;
	if (!ASSERT_STR_EQ(warn, "", "no_warning"))
		goto cleanup;
	if (!ASSERT_EQ(features__seccomp_warning(NULL, "6.12.5", "aarch64", tmpdir, warn, sizeof(warn)), 0, "seccomp_aarch64"))
		goto cleanup;
	put("var/run/crio/crio.sock", "");
	put("proc/77/comm", "conmon\n");
	if (!ASSERT_EQ(features__container_runtimes(tmpdir, buf, sizeof(buf)), 4, "runtimes_four"))
		goto cleanup;
	if (!ASSERT_STR_EQ(buf, "docker, containerd, cri-o, podman", "four_listed"))
		goto cleanup;
cleanup:;
}

static enum gp_insn_class x86(const char *bytes, size_t n)
{
	return features__classify_insn(EM_X86_64, (const unsigned char *)bytes, n);
}

static enum gp_insn_class a64(uint32_t w)
{
	unsigned char b[4] = { w & 0xff, w >> 8 & 0xff, w >> 16 & 0xff, w >> 24 };

	return features__classify_insn(EM_AARCH64, b, 4);
}

static void test_classify_x86(void)
{
	if (!ASSERT_EQ(x86("\x55\x48\x89\xe5", 4), GP_INSN_PUSH, "x86(x55x48x89xe5, 4)"))
		goto cleanup;          /* push %rbp */
	if (!ASSERT_EQ(x86("\x41\x57", 2), GP_INSN_PUSH, "x86(x41x57, 2)"))
		goto cleanup;                  /* push %r15 */
	if (!ASSERT_EQ(x86("\x53", 1), GP_INSN_PUSH, "x86(x53, 1)"))
		goto cleanup;                      /* push %rbx */
	if (!ASSERT_EQ(x86("\xf3\x0f\x1e\xfa\x55", 5), GP_INSN_ENDBR, "x86(xf3x0fx1exfax55, 5)"))
		goto cleanup;     /* endbr64 */
	if (!ASSERT_EQ(x86("\x90", 1), GP_INSN_NOP, "x86(x90, 1)"))
		goto cleanup;
	if (!ASSERT_EQ(x86("\x0f\x1f\x44\x00\x00", 5), GP_INSN_NOP, "x86(x0fx1fx44x00x00, 5)"))
		goto cleanup;       /* nopl 0(%rax,%rax) */
	if (!ASSERT_EQ(x86("\x66\x0f\x1f\x44\x00\x00", 6), GP_INSN_NOP, "x86(x66x0fx1fx44x00x00, 6)"))
		goto cleanup;
	if (!ASSERT_EQ(x86("\x66\x90", 2), GP_INSN_NOP, "x86(x66x90, 2)"))
		goto cleanup;
	if (!ASSERT_EQ(x86("\xe9\x00\x00\x00\x00", 5), GP_INSN_BRANCH, "x86(xe9x00x00x00x00, 5)"))
		goto cleanup;    /* jmp rel32 */
	if (!ASSERT_EQ(x86("\xeb\x00", 2), GP_INSN_BRANCH, "x86(xebx00, 2)"))
		goto cleanup;
	if (!ASSERT_EQ(x86("\xe8\x00\x00\x00\x00", 5), GP_INSN_BRANCH, "x86(xe8x00x00x00x00, 5)"))
		goto cleanup;    /* call */
	if (!ASSERT_EQ(x86("\x74\x05", 2), GP_INSN_BRANCH, "x86(x74x05, 2)"))
		goto cleanup;                /* je */
	if (!ASSERT_EQ(x86("\x0f\x84\x00\x00\x00\x00", 6), GP_INSN_BRANCH, "x86(x0fx84x00x00x00x00, 6)"))
		goto cleanup;
	if (!ASSERT_EQ(x86("\x48\x89\xe5", 3), GP_INSN_MOV, "x86(x48x89xe5, 3)"))
		goto cleanup;               /* mov %rsp,%rbp */
	if (!ASSERT_EQ(x86("\x48\x89\xe8", 3), GP_INSN_MOV, "x86(x48x89xe8, 3)"))
		goto cleanup;               /* mov %rbp,%rax */
	if (!ASSERT_EQ(x86("\x48\x89\x45\xf8", 4), GP_INSN_OTHER, "x86(x48x89x45xf8, 4)"))
		goto cleanup;         /* mov %rax,-8(%rbp) */
	if (!ASSERT_EQ(x86("\x48\x83\xec\x08", 4), GP_INSN_SUB_SP, "x86(x48x83xecx08, 4)"))
		goto cleanup;        /* sub $8,%rsp */
	if (!ASSERT_EQ(x86("\x48\x81\xec\x00\x01\x00\x00", 7), GP_INSN_SUB_SP, "x86(x48x81xecx00x01x00x00, 7)"))
		goto cleanup;
	if (!ASSERT_EQ(x86("\x8d\x47\x01", 3), GP_INSN_OTHER, "x86(x8dx47x01, 3)"))
		goto cleanup;             /* lea 1(%rdi),%eax */
	if (!ASSERT_EQ(x86("\xc3", 1), GP_INSN_OTHER, "x86(xc3, 1)"))
		goto cleanup;                     /* ret: single-stepped */
	if (!ASSERT_EQ(x86("\xf3", 1), GP_INSN_OTHER, "x86(xf3, 1)"))
		goto cleanup;                     /* truncated endbr */
	if (!ASSERT_EQ(x86("", 0), GP_INSN_OTHER, "x86_empty"))
		goto cleanup;
	if (!ASSERT_STR_EQ(features__insn_class_name(GP_INSN_PUSH), "push", "insn_class_name_push"))
		goto cleanup;
	if (!ASSERT_STR_EQ(features__insn_class_name(GP_INSN__COUNT), "?", "insn_class_name_count"))
		goto cleanup;
cleanup:;
}

static void test_classify_arm64(void)
{
	if (!ASSERT_EQ(a64(0xa9bf7bfd), GP_INSN_STP_FP, "a64_a9bf7bfd"))
		goto cleanup; /* stp x29, x30, [sp, #-16]! */
	if (!ASSERT_EQ(a64(0xa9be7bfd), GP_INSN_STP_FP, "a64_a9be7bfd"))
		goto cleanup; /* stp x29, x30, [sp, #-32]! */
	if (!ASSERT_EQ(a64(0xa9017bfd), GP_INSN_OTHER, "a64_a9017bfd"))
		goto cleanup;  /* stp x29, x30, [sp, #16]: no writeback */
	if (!ASSERT_EQ(a64(0xd503233f), GP_INSN_PAC, "a64_d503233f"))
		goto cleanup;    /* paciasp */
	if (!ASSERT_EQ(a64(0xd503237f), GP_INSN_PAC, "a64_d503237f"))
		goto cleanup;    /* pacibsp */
	if (!ASSERT_EQ(a64(0xd503245f), GP_INSN_ENDBR, "a64_d503245f"))
		goto cleanup;  /* bti c */
	if (!ASSERT_EQ(a64(0xd503249f), GP_INSN_ENDBR, "a64_d503249f"))
		goto cleanup;  /* bti j */
	if (!ASSERT_EQ(a64(0xd50324df), GP_INSN_ENDBR, "a64_d50324df"))
		goto cleanup;  /* bti jc */
	if (!ASSERT_EQ(a64(0xd503201f), GP_INSN_NOP, "a64_d503201f"))
		goto cleanup;
	if (!ASSERT_EQ(a64(0x14000002), GP_INSN_BRANCH, "a64_14000002"))
		goto cleanup; /* b */
	if (!ASSERT_EQ(a64(0x94000010), GP_INSN_BRANCH, "a64_94000010"))
		goto cleanup; /* bl */
	if (!ASSERT_EQ(a64(0x54000040), GP_INSN_BRANCH, "a64_54000040"))
		goto cleanup; /* b.eq */
	if (!ASSERT_EQ(a64(0xb4000040), GP_INSN_BRANCH, "a64_b4000040"))
		goto cleanup; /* cbz x0 */
	if (!ASSERT_EQ(a64(0x37000040), GP_INSN_BRANCH, "a64_37000040"))
		goto cleanup; /* tbnz w0, #0 */
	if (!ASSERT_EQ(a64(0x90000000), GP_INSN_BRANCH, "a64_90000000"))
		goto cleanup; /* adrp x0 */
	if (!ASSERT_EQ(a64(0xd63f0020), GP_INSN_BRANCH, "a64_d63f0020"))
		goto cleanup; /* blr x1 */
	if (!ASSERT_EQ(a64(0xd65f03c0), GP_INSN_BRANCH, "a64_d65f03c0"))
		goto cleanup; /* ret */
	if (!ASSERT_EQ(a64(0x910003fd), GP_INSN_MOV, "a64_910003fd"))
		goto cleanup;    /* mov x29, sp */
	if (!ASSERT_EQ(a64(0xaa0103e0), GP_INSN_MOV, "a64_aa0103e0"))
		goto cleanup;    /* mov x0, x1 */
	if (!ASSERT_EQ(a64(0xd10043ff), GP_INSN_SUB_SP, "a64_d10043ff"))
		goto cleanup; /* sub sp, sp, #16 */
	if (!ASSERT_EQ(a64(0x11000400), GP_INSN_OTHER, "a64_11000400"))
		goto cleanup;  /* add w0, w0, #1 */
	if (!ASSERT_EQ(features__classify_insn(EM_AARCH64, (const unsigned char *)"\x1f\x20", 2), GP_INSN_OTHER, "a64_short"))
		goto cleanup;
	if (!ASSERT_EQ(features__classify_insn(EM_RISCV, (const unsigned char *)"\x55", 1), GP_INSN_OTHER, "riscv_other"))
		goto cleanup;
cleanup:;
}

/* A file that starts like a 64-bit little-endian ELF of machine m, then code at 64. */
static void write_elf(const char *path, unsigned m, const unsigned char *code, size_t n)
{
	unsigned char h[64] = { 0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, 1 };
	FILE *fp = fopen(path, "w");

	h[18] = m & 0xff;
	h[19] = m >> 8;
	if (!fp)
		return;
	fwrite(h, 1, sizeof(h), fp);
	fwrite(code, 1, n, fp);
	fclose(fp);
}

static void test_classify_files(void)
{
	static const unsigned char x86code[] = {
		0x55, 0x48, 0x89, 0xe5,       /* 64: push %rbp */
		0xf3, 0x0f, 0x1e, 0xfa,       /* 68: endbr64 */
		0x8d, 0x47, 0x01, 0xc3,       /* 72: lea; ret */
		0x90,                         /* 76: nop (the last byte) */
	};
	static const unsigned char a64code[] = { 0xfd, 0x7b, 0xbf, 0xa9, 0x3f, 0x23, 0x03, 0xd5 };
	long long offs[] = { 64, 68, 72, 76, 4096, -1 };
	long long aoffs[] = { 64, 68 };
	unsigned mask = 1U << GP_INSN_PUSH | 1U << GP_INSN_NOP;
	struct gp_entry_counts c;
	char path[512], link[512], err[256];

	snprintf(path, sizeof(path), "%s/x86.so", tmpdir);
	write_elf(path, EM_X86_64, x86code, sizeof(x86code));
	if (!ASSERT_EQ(features__classify_entries(path, offs, 6, mask, &c, err, sizeof(err)), 0, "classified"))
		goto cleanup;
	if (!ASSERT_EQ(c.total, 5, "total"))
		goto cleanup; /* -1 skipped */
	if (!ASSERT_EQ(c.unreadable, 1, "unreadable"))
		goto cleanup; /* beyond the end */
	if (!ASSERT_EQ(c.emulated, 2, "emulated"))
		goto cleanup;   /* push, nop */
	if (!ASSERT_EQ(c.stepped, 2, "stepped"))
		goto cleanup;    /* endbr64, lea */
	if (!ASSERT_EQ(c.by_class[GP_INSN_PUSH], 1, "by_class_push"))
		goto cleanup;
	if (!ASSERT_EQ(c.by_class[GP_INSN_ENDBR], 1, "by_class_endbr"))
		goto cleanup;
	if (!ASSERT_EQ(c.by_class[GP_INSN_OTHER], 1, "by_class_other"))
		goto cleanup;
	if (!ASSERT_EQ(c.by_class[GP_INSN_NOP], 1, "by_class_nop"))
		goto cleanup;

	snprintf(path, sizeof(path), "%s/arm64.so", tmpdir);
	write_elf(path, EM_AARCH64, a64code, sizeof(a64code));
	if (!ASSERT_EQ(features__classify_entries(path, aoffs, 2, 1U << GP_INSN_BRANCH, &c, err, sizeof(err)), 0, "a64_classified"))
		goto cleanup;
	if (!ASSERT_EQ(c.by_class[GP_INSN_STP_FP], 1, "by_class_stp_fp"))
		goto cleanup;
	if (!ASSERT_EQ(c.by_class[GP_INSN_PAC], 1, "by_class_pac"))
		goto cleanup;
	if (!ASSERT_EQ(c.stepped, 2, "stepped"))
		goto cleanup;

	/* hostile or wrong files: one error each, nothing read */
	snprintf(link, sizeof(link), "%s/link.so", tmpdir);
	if (!ASSERT_EQ(symlink(path, link), 0, "symlink"))
		goto cleanup;
	if (!ASSERT_EQ(features__classify_entries(link, aoffs, 2, 0, &c, err, sizeof(err)), -ELOOP, "symlink_refused"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "link.so", "contains link.so"))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	if (!ASSERT_EQ(mkfifo(path, 0600), 0, "mkfifo"))
		goto cleanup;
	if (!ASSERT_EQ(features__classify_entries(path, aoffs, 2, 0, &c, err, sizeof(err)), -EINVAL, "fifo_refused"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "not a regular file", "contains not a regular file"))
		goto cleanup;
	put("text.so", "#!/bin/sh\necho not an ELF file, but long enough to read a header from\n");
	snprintf(path, sizeof(path), "%s/text.so", tmpdir);
	if (!ASSERT_EQ(features__classify_entries(path, aoffs, 2, 0, &c, err, sizeof(err)), -ENOEXEC, "not_elf"))
		goto cleanup;
	if (!ASSERT_EQ(c.total, 0, "total"))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/missing.so", tmpdir);
	if (!ASSERT_EQ(features__classify_entries(path, aoffs, 2, 0, &c, err, sizeof(err)), -ENOENT, "missing"))
		goto cleanup;
	snprintf(path, sizeof(path), "%s/riscv.so", tmpdir);
	write_elf(path, EM_RISCV, a64code, sizeof(a64code));
	if (!ASSERT_EQ(features__classify_entries(path, aoffs, 2, 0, &c, err, sizeof(err)), 0, "riscv_classified"))
		goto cleanup;
	if (!ASSERT_EQ(c.unreadable, 2, "unreadable"))
		goto cleanup;
cleanup:;
}

struct where {
	uint64_t addr, off;
	char path[4096];
};

static int where_cb(const struct map_entry *e, void *ctx)
{
	struct where *w = ctx;

	if (w->addr >= e->start && w->addr < e->end && e->path[0] == '/') {
		w->off = w->addr - e->start + e->offset;
		snprintf(w->path, sizeof(w->path), "%s", e->path);
	}
	return 0;
}

/* The live probes' own functions, classified from this binary's file. */
static void test_classify_own_functions(void)
{
	int (*fns[])(int) = { gp_feat_push, gp_feat_endbr, gp_feat_nop, gp_feat_branch,
			      gp_feat_mov, gp_feat_sub, gp_feat_other };
#if defined(__x86_64__)
	enum gp_insn_class want[] = { GP_INSN_PUSH, GP_INSN_ENDBR, GP_INSN_NOP, GP_INSN_BRANCH,
				      GP_INSN_MOV, GP_INSN_SUB_SP, GP_INSN_OTHER };
#else
	enum gp_insn_class want[] = { GP_INSN_STP_FP, GP_INSN_ENDBR, GP_INSN_NOP, GP_INSN_BRANCH,
				      GP_INSN_MOV, GP_INSN_SUB_SP, GP_INSN_OTHER };
#endif
	char err[256];

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		struct where w = { .addr = (uint64_t)(uintptr_t)fns[i] };
		struct gp_entry_counts c;
		long long off;

		if (!ASSERT_EQ(procmaps__foreach("/proc", getpid(), where_cb, &w), 0, "own_maps"))
			goto cleanup;
		if (!ASSERT_TRUE(w.path[0] == '/', "abs_path"))
			goto cleanup;
		off = (long long)w.off;
		if (!ASSERT_EQ(features__classify_entries(w.path, &off, 1, 0, &c, err, sizeof(err)), 0, "own_code_classified"))
			goto cleanup;
		if (c.by_class[want[i]] != 1)
			printf("#   function %zu: expected class %s\n", i, features__insn_class_name(want[i]));
		if (!ASSERT_EQ(c.by_class[want[i]], 1, "class_counted"))
			goto cleanup;
		if (!ASSERT_EQ(fns[i](41), 42, "fn_runs"))
			goto cleanup; /* and they run */
	}
cleanup:;
}

static int kernel_at_least(int major, int minor)
{
	struct utsname u;
	struct gp_kver v;

	if (uname(&u) || features__parse_release(u.release, &v))
		return -1;
	return v.major > major || (v.major == major && v.minor >= minor);
}

/* The live probes on this kernel, against what its version must have. */
static void test_probe_this_kernel(void)
{
	struct features *f = features__probe(FEATURES_LIVE);
	const struct gp_feature_row *r;
	char err[512], *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int lines = 0, new611 = kernel_at_least(6, 11), new66 = kernel_at_least(6, 6), new515 = kernel_at_least(5, 15);

	if (!ASSERT_TRUE(f, "probed"))
		goto cleanup;
	for (int i = 0; i < GP_FEAT__COUNT; i++) {
		r = features__row(f, i);
		if (!ASSERT_TRUE(r && r->name && r->since && r->without, "row_complete"))
			goto cleanup;
		if (!ASSERT_TRUE(strcmp(r->detail, "not probed") != 0, "probed_detail"))
			goto cleanup;
	}
	if (!ASSERT_TRUE(features__row(f, GP_FEAT__COUNT) == NULL, "no_row_past_end"))
		goto cleanup;
	mem = open_memstream(&buf, &len);
	if (!ASSERT_TRUE(mem, "text_buffer"))
		goto cleanup;
	features__print(f, mem);
	fclose(mem);
	for (char *p = buf; p && *p; p++)
		lines += *p == '\n';
	free(buf);
	if (!ASSERT_TRUE(lines == GP_FEAT__COUNT + 2 || lines == GP_FEAT__COUNT + 3, "text_lines"))
		goto cleanup; /* + the seccomp warning */
	if (geteuid() != 0) {
		printf("# not root: live results not checked\n");
		features__free(f);
		return;
	}
	if (!new515) {
		/* an older kernel (Debian 11's 5.10) is refused, naming attach cookies and the
		 * first release with them; the rows below hold on the kernels gpuprobe runs on */
		if (!ASSERT_EQ(features__check_required(f, err, sizeof(err)), -ENOTSUP, "refused before 5.15"))
			goto cleanup;
		if (!ASSERT_STR_CONTAINS(err, "this kernel lacks bpf_get_attach_cookie (cookies) (Linux 5.15+)", "names cookies and 5.15"))
			goto cleanup;
		printf("# before 5.15: %s\n", err);
		goto cleanup;
	}
	/* every kernel gpuprobe supports (5.15+) has all it requires */
	if (!ASSERT_EQ(features__check_required(f, err, sizeof(err)), 0, "required_present"))
		goto cleanup;
	if (!ASSERT_STR_EQ(err, "", "no_err"))
		goto cleanup;
	if (!ASSERT_TRUE(features__has(f, GP_FEAT_MAP_RINGBUF), "has_map_ringbuf"))
		goto cleanup;
	if (!ASSERT_TRUE(features__has(f, GP_FEAT_HELPER_COOKIE), "has_helper_cookie"))
		goto cleanup;
	if (!ASSERT_TRUE(features__has(f, GP_FEAT_LINK_PERF_EVENT), "has_link_perf_event"))
		goto cleanup;
	if (!ASSERT_TRUE(features__has(f, GP_FEAT_HELPER_LOOP), "has_helper_loop"))
		goto cleanup; /* 5.17 */
	if (!ASSERT_EQ(features__has(f, GP_FEAT_LINK_UPROBE_MULTI), attach__has_uprobe_multi(), "has_link_uprobe_multi"))
		goto cleanup;
	if (!getenv("GPUPROBE_NO_UPROBE_MULTI"))
		if (!ASSERT_EQ(features__has(f, GP_FEAT_LINK_UPROBE_MULTI), new66, "has_link_uprobe_multi"))
			goto cleanup;
	r = features__row(f, GP_FEAT_CALLER_AT_ENTRY);
	/* a control: the kernel adds the caller only after push %rbp / endbr64, never after
	 * another first instruction, so a probe that saw it there would be lying */
	if (!ASSERT_EQ(features__caller_at_entry(gp_feat_mov), 0, "mov_no_caller"))
		goto cleanup;
	if (!ASSERT_EQ(features__caller_at_entry(gp_feat_push), r->state == GP_FEAT_PRESENT, "push_caller"))
		goto cleanup;
#if defined(__x86_64__)
	/* 6.11, and the 6.1.y / 6.6.y stable backports (Debian 12's 6.1.0-56 has it) */
	if (!ASSERT_TRUE(new611 ? r->state == GP_FEAT_PRESENT : (r->state == GP_FEAT_PRESENT || r->state == GP_FEAT_MISSING),
			 "caller at entry: present from 6.11 (and the stable backports), else known"))
		goto cleanup;
	if (!ASSERT_EQ(features__row(f, GP_FEAT_URETPROBE_SYSCALL)->state, new611 ? GP_FEAT_PRESENT : GP_FEAT_MISSING, "uretprobe_syscall"))
		goto cleanup;
	/* push emulated on every kernel gpuprobe supports; nop and jmp for ever */
	if (!ASSERT_EQ(features__row(f, GP_FEAT_ENTRY_PUSH_EMULATED)->state, GP_FEAT_PRESENT, "entry_push_emulated"))
		goto cleanup;
	if (!ASSERT_TRUE(features__emulated_mask(f) & 1U << GP_INSN_NOP, "nop_emulated"))
		goto cleanup;
	if (!ASSERT_TRUE(features__emulated_mask(f) & 1U << GP_INSN_BRANCH, "branch_emulated"))
		goto cleanup;
	if (!ASSERT_TRUE(!(features__emulated_mask(f) & 1U << GP_INSN_OTHER), "other_stepped"))
		goto cleanup; /* lea is stepped */
	{
		struct utsname u;
		struct gp_kver v;

		if (!ASSERT_EQ(uname(&u), 0, "uname"))
			goto cleanup;
		if (!ASSERT_EQ(features__parse_release(u.release, &v), 0, "parse_own_release"))
			goto cleanup;
		/* a kernel outside the range must survive; one inside may (distribution fix) */
		if (!ASSERT_TRUE(features__uretprobe_seccomp_hazard(&v, u.machine) ?
				 features__row(f, GP_FEAT_URETPROBE_SECCOMP)->state != GP_FEAT_UNKNOWN :
				 features__row(f, GP_FEAT_URETPROBE_SECCOMP)->state == GP_FEAT_PRESENT,
				 "a uretprobe under seccomp survives outside the hazard's kernels"))
			goto cleanup;
	}
#else
	(void)new611;
	if (!ASSERT_TRUE(r->state == GP_FEAT_PRESENT || r->state == GP_FEAT_MISSING, "state_known"))
		goto cleanup;
	if (!ASSERT_EQ(features__row(f, GP_FEAT_URETPROBE_SYSCALL)->state, GP_FEAT_NOT_HERE, "uretprobe_syscall_not_here"))
		goto cleanup;
	if (!ASSERT_EQ(features__row(f, GP_FEAT_URETPROBE_SECCOMP)->state, GP_FEAT_NOT_HERE, "uretprobe_seccomp_not_here"))
		goto cleanup;
	if (!ASSERT_TRUE(features__row(f, GP_FEAT_ENTRY_PUSH_EMULATED)->state != GP_FEAT_UNKNOWN, "entry_push_known"))
		goto cleanup;
	if (!ASSERT_TRUE(features__emulated_mask(f) & 1U << GP_INSN_BRANCH, "branch_emulated"))
		goto cleanup;
	if (!ASSERT_TRUE(!(features__emulated_mask(f) & 1U << GP_INSN_OTHER), "other_stepped"))
		goto cleanup; /* add is stepped */
#endif
cleanup:
	features__free(f);
}

static void test_required_message(void)
{
	struct features *f = features__probe(0);
	const struct gp_feature_row *r;
	char err[512];

	if (!ASSERT_TRUE(f, "made"))
		goto cleanup;
	/* without the live probes, their rows stay unknown and nothing is forked */
	if (!ASSERT_EQ(features__row(f, GP_FEAT_CALLER_AT_ENTRY)->state, GP_FEAT_UNKNOWN, "caller_unknown"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(features__row(f, GP_FEAT_CALLER_AT_ENTRY)->detail, "not probed", "contains not probed"))
		goto cleanup;
	/* the message for a missing required feature, forced on a copy of a row */
	r = features__row(f, GP_FEAT_MAP_RINGBUF);
	if (!ASSERT_TRUE(r->need == GP_NEED_REQUIRED, "required"))
		goto cleanup;
	((struct gp_feature_row *)r)->state = GP_FEAT_MISSING;
	if (!ASSERT_EQ(features__check_required(f, err, sizeof(err)), -ENOTSUP, "required_missing"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "ring buffer (Linux 5.8+)", "contains ring buffer (Linux 5.8+)"))
		goto cleanup;
	if (!ASSERT_STR_CONTAINS(err, "BPF_MAP_TYPE_RINGBUF", "contains BPF_MAP_TYPE_RINGBUF"))
		goto cleanup;
	features__free(f);
	features__free(NULL);
	if (!ASSERT_TRUE(!features__has(NULL, GP_FEAT_MAP_RINGBUF), "null_has_nothing"))
		goto cleanup;
cleanup:;
}

/* Every driver function a mode probes, once; their first instructions on this kernel. */
static int classify_lib(const char *path)
{
	const char *names[512];
	long long offs[512];
	int n = 0, found;
	struct features *f = features__probe(FEATURES_LIVE);
	unsigned mask = features__emulated_mask(f);
	struct gp_entry_counts c;
	char err[512];

	for (int i = 0; i < gp_mem_apis_cnt && n < 512; i++)
		names[n++] = gp_mem_apis[i].name;
	for (int i = 0; i < gp_launch_apis_cnt && n < 512; i++)
		names[n++] = gp_launch_apis[i].name;
	for (int i = 0; i < gp_copy_apis_cnt && n < 512; i++)
		names[n++] = gp_copy_apis[i].name;
	found = attach__resolve(path, names, n, offs, err, sizeof(err));
	if (found < 0 || features__classify_entries(path, offs, n, mask, &c, err, sizeof(err))) {
		printf("%s\n", err);
		features__free(f);
		return 1;
	}
	printf("%s: %d of %d probed functions found; %d begin with an instruction this kernel emulates, "
	       "%d with one it single-steps (~10x dearer per hit), %d unreadable\n",
	       path, found, n, c.emulated, c.stepped, c.unreadable);
	for (int k = 0; k < GP_INSN__COUNT; k++)
		if (c.by_class[k])
			printf("  %-10s %3d  %s\n", features__insn_class_name(k), c.by_class[k],
			       (mask >> k) & 1 ? "emulated" : "single-stepped");
	for (int i = 0; i < n; i++) {
		struct gp_entry_counts one;

		if (offs[i] < 0 || features__classify_entries(path, &offs[i], 1, mask, &one, err, sizeof(err)))
			continue;
		for (int k = 0; k < GP_INSN__COUNT; k++)
			if (one.by_class[k] && !((mask >> k) & 1))
				printf("  stepped: %s (%s)\n", names[i], features__insn_class_name(k));
	}
	features__free(f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--classify"))
		return classify_lib(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "--matrix"))
		return features__print_matrix(stdout) ? 1 : 0;
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN_TEST(test_parse_release);
	RUN_TEST(test_seccomp_hazard_range);
	RUN_TEST(test_container_runtimes);
	RUN_TEST(test_classify_x86);
	RUN_TEST(test_classify_arm64);
	RUN_TEST(test_classify_files);
	RUN_TEST(test_classify_own_functions);
	RUN_TEST(test_probe_this_kernel);
	RUN_TEST(test_required_message);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
	}
	return unit_done();
}
