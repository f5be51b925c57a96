/* SPDX-License-Identifier: BSD-3-Clause */
/* --ioctl's pure C parts: /proc/devices, names of nodes and commands, grouping. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include "modes/ioctl/ioctl.h"
#include "unit.h"

static const char proc_devices[] =
	"Character devices:\n"
	"  1 mem\n"
	"195 nvidia-frontend\n"
	"195 nvidia\n"
	"195 nvidiactl\n"
	"238 nvidia-uvm\n"
	"239 nvidia-nvswitch\n"
	"240 nvidia-nvlink\n"
	"241 nvidia-caps\n"
	"\n"
	"Block devices:\n"
	"242 nvidia\n";

static int parse(struct ioc_major *m, int max)
{
	FILE *f = fmemopen((void *)proc_devices, sizeof(proc_devices) - 1, "r");
	int n = ioctl__parse_devices(f, m, max);

	fclose(f);
	return n;
}

static void test_parse_proc_devices(void)
{
	struct ioc_major m[GP_IOCTL_MAX_MAJORS];
	int n = parse(m, GP_IOCTL_MAX_MAJORS);

	if (!ASSERT_EQ(n, 5, "majors_found"))
		goto cleanup; /* 195 once; mem and the block device are not nvidia's chars */
	if (!ASSERT_EQ(m[0].major, 195, "nvidia_major"))
		goto cleanup;
	if (!ASSERT_EQ(m[0].kind, IOC_KIND_NV, "nvidia_kind"))
		goto cleanup;
	if (!ASSERT_EQ(m[1].major, 238, "uvm_major"))
		goto cleanup;
	if (!ASSERT_EQ(m[1].kind, IOC_KIND_UVM, "uvm_kind"))
		goto cleanup;
	if (!ASSERT_STR_EQ(m[4].name, "nvidia-caps", "caps_name"))
		goto cleanup;
	if (!ASSERT_EQ(ioctl__add_major(m, n, GP_IOCTL_MAX_MAJORS, 195, IOC_KIND_ANY, "x"), 5, "add_known_major"))
		goto cleanup;
	if (!ASSERT_EQ(ioctl__add_major(m, n, GP_IOCTL_MAX_MAJORS, 1, IOC_KIND_ANY, "mem"), 6, "add_new_major"))
		goto cleanup;
	if (!ASSERT_EQ(parse(m, 2), 2, "parse_capped"))
		goto cleanup;
cleanup:;
}

static void test_node_names(void)
{
	struct ioc_major nv = { 195, IOC_KIND_NV, "nvidia" }, uvm = { 238, IOC_KIND_UVM, "nvidia-uvm" };
	struct ioc_major mem = { 1, IOC_KIND_ANY, "mem" };
	char b[64];

	ioctl__node_name(&nv, 255, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/nvidiactl", "nvidiactl_node"))
		goto cleanup;
	ioctl__node_name(&nv, 3, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/nvidia3", "gpu_node"))
		goto cleanup;
	ioctl__node_name(&uvm, 0, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/nvidia-uvm", "uvm_node"))
		goto cleanup;
	ioctl__node_name(&uvm, 1, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/nvidia-uvm-tools", "uvm_tools_node"))
		goto cleanup;
	ioctl__node_name(&mem, 3, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/char/1:3", "other_char_node"))
		goto cleanup;
cleanup:;
}

static void test_command_names(void)
{
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_NV, 0xc020462a), "NV_ESC_RM_CONTROL", "rm_control_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_NV, 0xc030462b), "NV_ESC_RM_ALLOC", "rm_alloc_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_NV, 0xc00446c8), "NV_ESC_CARD_INFO", "card_info_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_NV, 0xc00446d4), "NV_ESC_ATTACH_GPUS_TO_FD", "attach_gpus_name"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__cmd_name(IOC_KIND_NV, 0x25) == NULL, "nv_unknown_nr"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_UVM, 0x30000001), "UVM_INITIALIZE", "uvm_initialize_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_UVM, 33), "UVM_MAP_EXTERNAL_ALLOCATION", "uvm_map_external_name"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__cmd_name(IOC_KIND_UVM, 0xc020462a) == NULL, "uvm_rejects_nv_request"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_ANY, 0x25), "UVM_REGISTER_GPU", "any_kind_uvm_name"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__cmd_name(IOC_KIND_OTHER, 0x25) == NULL, "other_kind_unnamed"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__cmd_name(IOC_KIND_ANY, 0x12345678) == NULL, "any_kind_unknown"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__ctrl_name(0x20800110), "NV2080_CTRL_CMD_GPU_GET_NAME_STRING", "ctrl_2080_name"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__ctrl_name(0x201), "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS", "ctrl_0000_name"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__ctrl_name(0x2080beef) == NULL, "ctrl_unknown"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__is_rm_control(0xc020462a), "is_rm_control"))
		goto cleanup;
	if (!ASSERT_TRUE(!ioctl__is_rm_control(0xc030462b), "not_rm_control"))
		goto cleanup;
cleanup:;
}

static void add(struct ioctl_agg *a, uint32_t pid, uint32_t minor, uint32_t cmd, uint32_t ctrl,
		uint64_t calls, uint64_t errors)
{
	struct gp_ioctl_key k = { .pid = pid, .major = 195, .minor = minor, .cmd = cmd, .ctrl_cmd = ctrl };
	struct gp_ioctl_stat st = { .calls = calls, .errors = errors, .total_ns = calls * 1000,
				    .max_ns = 2000 };

	if (!ASSERT_EQ(ioctl_agg__add(a, &k, &st), 0, "agg_add"))
		goto cleanup;
cleanup:;
}

static void test_grouping(void)
{
	struct ioc_major nv = { 195, IOC_KIND_NV, "nvidia" };
	struct ioctl_agg *a = ioctl_agg__new(&nv, 1);
	struct ioc_proc *p;
	size_t n;

	for (int round = 0; round < 2; round++) { /* a second snapshot replaces the first */
		ioctl_agg__begin(a);
		add(a, 20, 255, 0xc020462a, 0x20800110, 7, 1);
		add(a, 10, 0, 0xc030462b, 0, 3, 0);
		add(a, 20, 0, 0xc0104629, 0, 2, 0);
		add(a, 20, 255, 0xc020462a, 0x2080beef, 9, 0);
		add(a, 20, 255, 0x12345678, 0, 1, 1);
		if (!ASSERT_EQ(ioctl_agg__end(a), 0, "agg_end"))
			goto cleanup;
		n = ioctl_agg__procs(a, &p);
		if (!ASSERT_EQ(n, 2, "procs_listed"))
			goto cleanup;
		if (!ASSERT_EQ(p[0].pid, 10, "first_pid"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].pid, 20, "second_pid"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].calls, 19, "second_calls"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].errors, 2, "second_errors"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].decoded, 18, "second_decoded"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].nr_devs, 2, "second_nr_devs"))
			goto cleanup;
		if (!ASSERT_STR_EQ(p[1].devs[0].node, "/dev/nvidia0", "gpu_dev_node"))
			goto cleanup;
		if (!ASSERT_STR_EQ(p[1].devs[1].node, "/dev/nvidiactl", "ctl_dev_node"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].devs[1].nr_cmds, 3, "ctl_nr_cmds"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].devs[1].cmds[0].ctrl_cmd, 0x2080beef, "unknown_ctrl_cmd"))
			goto cleanup; /* by calls, descending */
		if (!ASSERT_TRUE(p[1].devs[1].cmds[0].ctrl_name == NULL, "unknown_ctrl_unnamed"))
			goto cleanup;
		if (!ASSERT_STR_EQ(p[1].devs[1].cmds[1].ctrl_name, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING", "known_ctrl_name"))
			goto cleanup;
		if (!ASSERT_TRUE(p[1].devs[1].cmds[2].name == NULL, "unknown_request_unnamed"))
			goto cleanup;
	}
	ioctl_agg__begin(a);
	if (!ASSERT_EQ(ioctl_agg__end(a), 0, "agg_end_empty"))
		goto cleanup;
	if (!ASSERT_EQ(ioctl_agg__procs(a, &p), 0, "agg_procs_empty"))
		goto cleanup;
cleanup:
	ioctl_agg__free(a);
	ioctl_agg__free(NULL);
}

int main(void)
{
	RUN_TEST(test_parse_proc_devices);
	RUN_TEST(test_node_names);
	RUN_TEST(test_command_names);
	RUN_TEST(test_grouping);
	return unit_done();
}
