/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpuprobe check --bpf without a kernel: what it reads from a failed load's log (the
 * program, the verifier's verdict, the source line, a missing helper and its first
 * release), and its own tables (every const volatile setting of every BPF object built
 * here, every option of every mode and front end, known to the check).
 */
#define _GNU_SOURCE
#include "cli/bpfcheck.h"
#include "core/kernel_features.h"
#include "core/mode.h"
#include "unit.h"

#include <linux/bpf.h>
#include <stdlib.h>

/* The end of a real 6.1.0-56 log: mem_enter with the CPython frame read's size bounded by
 * a compound condition (tests/vm/README.md, the broken-bound experiment). */
static const char log_unbounded[] =
	"libbpf: prog 'mem_enter': insn #335 relocated, imm 219 points to subprog 'emit_stack' (now at 555 offset)\n"
	"libbpf: prog 'mem_enter': BPF program load failed: Permission denied\n"
	"libbpf: prog 'mem_enter': -- BEGIN PROG LOAD LOG --\n"
	"0: R1=ctx(off=0,imm=0) R10=fp0\n"
	"; int mem_enter(struct pt_regs *ctx)\n"
	"1045: (a6) if w1 < 0xffffff87 goto pc+4       ; frame2: R1_w=scalar(umin=4294967175) refs=15 cb\n"
	"; bpf_probe_read_user(c->buf, pp->frame_read, (const void *)frame)) {\n"
	"1048: (85) call bpf_probe_read_user#112\n"
	"R2 unbounded memory access, use 'var &= const' or 'if (var < const)'\n"
	"processed 817 insns (limit 1000000) max_states_per_insn 1 total_states 70 peak_states 70 mark_read 28\n"
	"-- END PROG LOAD LOG --\n"
	"libbpf: prog 'mem_enter': failed to load: -13\n"
	"libbpf: failed to load object 'cuda_mem_bpf'\n"
	"libbpf: failed to load BPF skeleton 'cuda_mem_bpf': -13\n";

static void test_verdict_unbounded(void)
{
	struct bpfcheck_verdict v;

	bpfcheck__verdict(log_unbounded, &v);
	if (!ASSERT_STR_EQ(v.prog, "mem_enter", "the program refused"))
		return;
	if (!ASSERT_STR_EQ(v.reason, "R2 unbounded memory access, use 'var &= const' or 'if (var < const)'",
			   "the verdict, not the statistics after it"))
		return;
	if (!ASSERT_STR_EQ(v.where, "bpf_probe_read_user(c->buf, pp->frame_read, (const void *)frame)) {",
			   "the source line of the refused instruction"))
		return;
	ASSERT_STR_EQ(v.feature, "", "no kernel feature is missing");
}

static void test_verdict_unknown_helper(void)
{
	static const char text[] =
		"libbpf: prog 'mem_enter': BPF program load failed: Invalid argument\n"
		"libbpf: prog 'mem_enter': -- BEGIN PROG LOAD LOG --\n"
		"; if (!bpf_find_vma(task, sp, gp_vma_end_cb, c, 0))\n"
		"57: (85) call bpf_find_vma#180\n"
		"unknown func bpf_find_vma#180\n"
		"processed 57 insns (limit 1000000) max_states_per_insn 0 total_states 3 peak_states 3 mark_read 1\n"
		"-- END PROG LOAD LOG --\n";
	struct bpfcheck_verdict v;

	bpfcheck__verdict(text, &v);
	if (!ASSERT_STR_EQ(v.prog, "mem_enter", "the program"))
		return;
	ASSERT_STR_EQ(v.feature, "helper bpf_find_vma, Linux 5.17 or later", "the helper and its first release");
}

/* A kernel older than the helper knows only its number. */
static void test_verdict_helper_by_number(void)
{
	char text[512];
	struct bpfcheck_verdict v;

	snprintf(text, sizeof(text),
		 "libbpf: prog 'launch_enter': BPF program load failed: Invalid argument\n"
		 "libbpf: prog 'launch_enter': -- BEGIN PROG LOAD LOG --\n"
		 "12: (85) call unknown#%d\n"
		 "invalid func unknown#%d\n"
		 "processed 12 insns (limit 1000000)\n"
		 "-- END PROG LOAD LOG --\n",
		 BPF_FUNC_get_attach_cookie, BPF_FUNC_get_attach_cookie);
	bpfcheck__verdict(text, &v);
	if (!ASSERT_STR_EQ(v.prog, "launch_enter", "the program"))
		return;
	ASSERT_STR_EQ(v.feature, "helper bpf_get_attach_cookie, Linux 5.15 or later", "named from its number");
}

static void test_verdict_core(void)
{
	static const char text[] =
		"libbpf: prog 'procs_exit': BPF program load failed: Invalid argument\n"
		"libbpf: prog 'procs_exit': -- BEGIN PROG LOAD LOG --\n"
		"; if (!ctx->group_dead)\n"
		"7: <invalid CO-RE relocation>\n"
		"failed to resolve CO-RE relocation <byte_off> [12] struct trace_event_raw_sched_process_exit.group_dead (0:4 @ offset 28)\n"
		"processed 8 insns (limit 1000000)\n"
		"-- END PROG LOAD LOG --\n";
	struct bpfcheck_verdict v;

	bpfcheck__verdict(text, &v);
	if (!ASSERT_STR_EQ(v.prog, "procs_exit", "the program"))
		return;
	ASSERT_STR_CONTAINS(v.reason, "failed to resolve CO-RE relocation", "the field this kernel lacks");
}

static void test_verdict_map(void)
{
	static const char text[] = "libbpf: map 'gp_shares': failed to create: Invalid argument(-22)\n"
				   "libbpf: failed to load object 'cuda_mem_bpf'\n";
	struct bpfcheck_verdict v;

	bpfcheck__verdict(text, &v);
	if (!ASSERT_STR_EQ(v.prog, "", "no program"))
		return;
	ASSERT_STR_EQ(v.reason, "map 'gp_shares': failed to create: Invalid argument(-22)", "the map");
}

static void test_helper_table(void)
{
	if (!ASSERT_STR_EQ(features__helper_since("bpf_loop"), "5.17", "bpf_loop"))
		return;
	if (!ASSERT_STR_EQ(features__helper_name(BPF_FUNC_find_vma), "bpf_find_vma", "a number to its name"))
		return;
	ASSERT_TRUE(features__helper_since("bpf_no_such_helper") == NULL, "not a helper gpuprobe calls");
}

/* The tables know every setting and option; each mode alone, all together and each
 * option's values make the configurations. */
static void test_tables(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int configs = 0, modes = 0, errors;

	if (!ASSERT_TRUE(f != NULL, "memstream"))
		return;
	errors = bpfcheck__tables(f, &configs);
	fclose(f);
	for (int i = 0; gp_modes[i]; i++)
		modes++;
	if (!ASSERT_EQ(errors, 0, "table errors") && text)
		for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
			printf("# %s\n", l);
	ASSERT_TRUE(configs > modes + 2, "more configurations than the modes alone and together");
	free(text);
}

int main(int argc, char **argv)
{
	unit_select(argc, argv);
	RUN_TEST(test_verdict_unbounded);
	RUN_TEST(test_verdict_unknown_helper);
	RUN_TEST(test_verdict_helper_by_number);
	RUN_TEST(test_verdict_core);
	RUN_TEST(test_verdict_map);
	RUN_TEST(test_helper_table);
	RUN_TEST(test_tables);
	return unit_done();
}
