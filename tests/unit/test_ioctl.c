/* SPDX-License-Identifier: BSD-3-Clause */
/* --ioctl's pure C parts: /proc/devices, names of nodes and commands, grouping. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include "ioctl.h"
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

	if (!ASSERT_EQ(n, 5, "n"))
		goto cleanup; /* 195 once; mem and the block device are not nvidia's chars */
	if (!ASSERT_EQ(m[0].major, 195, "m[0].major"))
		goto cleanup;
	if (!ASSERT_EQ(m[0].kind, IOC_KIND_NV, "m[0].kind"))
		goto cleanup;
	if (!ASSERT_EQ(m[1].major, 238, "m[1].major"))
		goto cleanup;
	if (!ASSERT_EQ(m[1].kind, IOC_KIND_UVM, "m[1].kind"))
		goto cleanup;
	if (!ASSERT_STR_EQ(m[4].name, "nvidia-caps", "m[4].name"))
		goto cleanup;
	if (!ASSERT_EQ(ioctl__add_major(m, n, GP_IOCTL_MAX_MAJORS, 195, IOC_KIND_ANY, "x"), 5, "ioctl__add_major(m, n, GP_IOCTL_MAX_MAJORS, 195, IOC_KIND..."))
		goto cleanup;
	if (!ASSERT_EQ(ioctl__add_major(m, n, GP_IOCTL_MAX_MAJORS, 1, IOC_KIND_ANY, "mem"), 6, "ioctl__add_major(m, n, GP_IOCTL_MAX_MAJORS, 1, IOC_KIND_A..."))
		goto cleanup;
	if (!ASSERT_EQ(parse(m, 2), 2, "parse(m, 2)"))
		goto cleanup;
cleanup:;
}

static void test_node_names(void)
{
	struct ioc_major nv = { 195, IOC_KIND_NV, "nvidia" }, uvm = { 238, IOC_KIND_UVM, "nvidia-uvm" };
	struct ioc_major mem = { 1, IOC_KIND_ANY, "mem" };
	char b[64];

	ioctl__node_name(&nv, 255, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/nvidiactl", "b"))
		goto cleanup;
	ioctl__node_name(&nv, 3, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/nvidia3", "b"))
		goto cleanup;
	ioctl__node_name(&uvm, 0, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/nvidia-uvm", "b"))
		goto cleanup;
	ioctl__node_name(&uvm, 1, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/nvidia-uvm-tools", "b"))
		goto cleanup;
	ioctl__node_name(&mem, 3, b, sizeof(b));
	if (!ASSERT_STR_EQ(b, "/dev/char/1:3", "b"))
		goto cleanup;
cleanup:;
}

static void test_command_names(void)
{
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_NV, 0xc020462a), "NV_ESC_RM_CONTROL", "ioctl__cmd_name(IOC_KIND_NV, 0xc020462a)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_NV, 0xc030462b), "NV_ESC_RM_ALLOC", "ioctl__cmd_name(IOC_KIND_NV, 0xc030462b)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_NV, 0xc00446c8), "NV_ESC_CARD_INFO", "ioctl__cmd_name(IOC_KIND_NV, 0xc00446c8)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_NV, 0xc00446d4), "NV_ESC_ATTACH_GPUS_TO_FD", "ioctl__cmd_name(IOC_KIND_NV, 0xc00446d4)"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__cmd_name(IOC_KIND_NV, 0x25) == NULL, "ioctl__cmd_name(IOC_KIND_NV, 0x25) == NULL"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_UVM, 0x30000001), "UVM_INITIALIZE", "ioctl__cmd_name(IOC_KIND_UVM, 0x30000001)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_UVM, 33), "UVM_MAP_EXTERNAL_ALLOCATION", "ioctl__cmd_name(IOC_KIND_UVM, 33)"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__cmd_name(IOC_KIND_UVM, 0xc020462a) == NULL, "ioctl__cmd_name(IOC_KIND_UVM, 0xc020462a) == NULL"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__cmd_name(IOC_KIND_ANY, 0x25), "UVM_REGISTER_GPU", "ioctl__cmd_name(IOC_KIND_ANY, 0x25)"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__cmd_name(IOC_KIND_OTHER, 0x25) == NULL, "ioctl__cmd_name(IOC_KIND_OTHER, 0x25) == NULL"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__cmd_name(IOC_KIND_ANY, 0x12345678) == NULL, "ioctl__cmd_name(IOC_KIND_ANY, 0x12345678) == NULL"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__ctrl_name(0x20800110), "NV2080_CTRL_CMD_GPU_GET_NAME_STRING", "ioctl__ctrl_name(0x20800110)"))
		goto cleanup;
	if (!ASSERT_STR_EQ(ioctl__ctrl_name(0x201), "NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS", "ioctl__ctrl_name(0x201)"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__ctrl_name(0x2080beef) == NULL, "ioctl__ctrl_name(0x2080beef) == NULL"))
		goto cleanup;
	if (!ASSERT_TRUE(ioctl__is_rm_control(0xc020462a), "ioctl__is_rm_control(0xc020462a)"))
		goto cleanup;
	if (!ASSERT_TRUE(!ioctl__is_rm_control(0xc030462b), "!ioctl__is_rm_control(0xc030462b)"))
		goto cleanup;
cleanup:;
}

static void add(struct ioctl_agg *a, uint32_t pid, uint32_t minor, uint32_t cmd, uint32_t ctrl,
		uint64_t calls, uint64_t errors)
{
	struct gp_ioctl_key k = { .pid = pid, .major = 195, .minor = minor, .cmd = cmd, .ctrl_cmd = ctrl };
	struct gp_ioctl_stat st = { .calls = calls, .errors = errors, .total_ns = calls * 1000,
				    .max_ns = 2000 };

	if (!ASSERT_EQ(ioctl_agg__add(a, &k, &st), 0, "ioctl_agg__add(a, &k, &st)"))
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
		if (!ASSERT_EQ(ioctl_agg__end(a), 0, "ioctl_agg__end(a)"))
			goto cleanup;
		n = ioctl_agg__procs(a, &p);
		if (!ASSERT_EQ(n, 2, "n"))
			goto cleanup;
		if (!ASSERT_EQ(p[0].pid, 10, "p[0].pid"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].pid, 20, "p[1].pid"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].calls, 19, "p[1].calls"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].errors, 2, "p[1].errors"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].decoded, 18, "p[1].decoded"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].nr_devs, 2, "p[1].nr_devs"))
			goto cleanup;
		if (!ASSERT_STR_EQ(p[1].devs[0].node, "/dev/nvidia0", "p[1].devs[0].node"))
			goto cleanup;
		if (!ASSERT_STR_EQ(p[1].devs[1].node, "/dev/nvidiactl", "p[1].devs[1].node"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].devs[1].nr_cmds, 3, "p[1].devs[1].nr_cmds"))
			goto cleanup;
		if (!ASSERT_EQ(p[1].devs[1].cmds[0].ctrl_cmd, 0x2080beef, "p[1].devs[1].cmds[0].ctrl_cmd"))
			goto cleanup; /* by calls, descending */
		if (!ASSERT_TRUE(p[1].devs[1].cmds[0].ctrl_name == NULL, "p[1].devs[1].cmds[0].ctrl_name == NULL"))
			goto cleanup;
		if (!ASSERT_STR_EQ(p[1].devs[1].cmds[1].ctrl_name, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING", "p[1].devs[1].cmds[1].ctrl_name"))
			goto cleanup;
		if (!ASSERT_TRUE(p[1].devs[1].cmds[2].name == NULL, "p[1].devs[1].cmds[2].name == NULL"))
			goto cleanup;
	}
	ioctl_agg__begin(a);
	if (!ASSERT_EQ(ioctl_agg__end(a), 0, "ioctl_agg__end(a)"))
		goto cleanup;
	if (!ASSERT_EQ(ioctl_agg__procs(a, &p), 0, "ioctl_agg__procs(a, &p)"))
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
