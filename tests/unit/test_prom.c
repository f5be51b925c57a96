/* SPDX-License-Identifier: BSD-3-Clause */
/* src/prom.c: the exposition over hand-fed aggregators, compared line by line. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apis.h"
#include "bandwidth.h"
#include "cudatrace.h"
#include "ioctl.h"
#include "memleak.h"
#include "prom.h"
#include "unit.h"

static const char *cg(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == 10 ? "/a\\b\"c\nd" : "/system.slice/x.service";
}

static char *render(struct memleak *ml, struct cudatrace *ct, unsigned int top)
{
	struct prom_drop drops[] = { { "memleak", "ringbuf_full", 7 } };
	struct prom_input in = {
		.ml = ml, .ct = ct, .container = cg, .drops = drops, .nr_drops = 1,
		.max_kernel_series = top, .probe_cost = 2e-6, .libs = 1, .probes = 70,
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (prom__render(f, &in)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static char *render_bw(struct bandwidth *bw, uint64_t small)
{
	struct prom_drop drops[] = { { "bandwidth", "ringbuf_full", 2 } };
	struct prom_input in = {
		.bw = bw, .small_copies = small, .container = cg, .drops = drops, .nr_drops = 1,
		.max_kernel_series = 20, .probe_cost = 1e-6,
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (prom__render(f, &in)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static void bw_copy(struct bandwidth *bw, uint32_t pid, uint32_t api, uint64_t dst, uint32_t dst_type,
		    uint64_t src, uint32_t src_type, uint64_t bytes, uint64_t dur_ns, uint64_t stream)
{
	struct gp_copy_event e = { .type = GP_EV_COPY, .api = api, .pid = pid, .tid = pid, .ts_ns = 100,
				   .dur_ns = dur_ns, .dst = dst, .src = src, .bytes = bytes,
				   .stream = stream, .dst_type = dst_type, .src_type = src_type,
				   .async = stream != 0, .comm = "copier" };

	bandwidth__on_copy(bw, &e);
}

static void bw_aux(struct bandwidth *bw, uint32_t pid, uint32_t api, uint64_t ts, uint64_t handle, uint64_t aux)
{
	struct gp_aux_event e = { .type = GP_EV_AUX, .api = api, .pid = pid, .tid = pid, .ts_ns = ts,
				  .handle = handle, .aux = aux };

	bandwidth__on_aux(bw, &e);
}

/* pid 30 on GPU 1: a pageable sync H2D copy of 4096 bytes taking 1 ms, an async D2H
 * copy of 8192 bytes synchronized 2 ms after its submission, a host-to-host copy. */
static struct bandwidth *three_copies(void)
{
	struct bandwidth *bw = bandwidth__new();
	struct gp_alloc_event a = { .type = GP_EV_ALLOC, .api = GP_API_cuMemAlloc_v2, .pid = 30,
				    .tid = 30, .ts_ns = 1, .addr = 0x10000, .size = 0x10000, .comm = "copier" };

	if (!bw)
		return NULL;
	bw_aux(bw, 30, GP_API_cuDevicePrimaryCtxRetain, 1, 0xc1, 1);
	bw_aux(bw, 30, GP_API_cuCtxSetCurrent, 1, 0xc1, 0);
	bandwidth__on_alloc(bw, &a);
	bw_copy(bw, 30, GP_API_cuMemcpyHtoD_v2, 0x10000, GP_MEMTYPE_DEVICE, 0x900000, GP_MEMTYPE_HOST,
		4096, 1000000, 0);
	bw_copy(bw, 30, GP_API_cuMemcpyDtoHAsync_v2, 0x900000, GP_MEMTYPE_HOST, 0x10000, GP_MEMTYPE_DEVICE,
		8192, 5000, 0x5);
	bw_aux(bw, 30, GP_API_cuStreamSynchronize, 100 + 2000000, 0x5, 0);
	bw_copy(bw, 30, GP_API_cuMemcpy, 0x900000, GP_MEMTYPE_UNIFIED, 0xa00000, GP_MEMTYPE_UNIFIED,
		100, 10, 0);
	bw_aux(bw, 31, GP_API_cuCtxSetCurrent, 1, 0xc2, 0); /* no copies: no series */
	return bw;
}

static void feed_memleak(struct memleak *ml, uint32_t pid, const char *comm, int allocs, int frees)
{
	for (int i = 0; i < allocs; i++) {
		struct gp_alloc_event e = { .type = GP_EV_ALLOC, .api = GP_API_cuMemAlloc_v2, .pid = pid,
					    .tid = pid, .ts_ns = 1, .addr = 0x1000 + 0x100 * i, .size = 100 };

		snprintf(e.comm, sizeof(e.comm), "%s", comm);
		memleak__on_alloc(ml, &e);
	}
	for (int i = 0; i < frees; i++) {
		struct gp_free_event e = { .type = GP_EV_FREE, .api = GP_API_cuMemFree_v2, .pid = pid,
					   .ts_ns = 2, .addr = 0x1000 + 0x100 * i };

		snprintf(e.comm, sizeof(e.comm), "%s", comm);
		memleak__on_free(ml, &e);
	}
}

static void name_kernel(struct cudatrace *ct, uint32_t pid, uint32_t gen, uint64_t handle, const char *name)
{
	struct gp_name_event e = { .type = GP_EV_NAME, .pid = pid, .gen = gen, .handle = handle };

	snprintf(e.comm, sizeof(e.comm), "trainer");
	snprintf(e.name, sizeof(e.name), "%s", name);
	cudatrace__on_name(ct, &e);
}

static void launch(struct cudatrace *ct, uint32_t pid, uint32_t kind, uint32_t gen, uint64_t handle,
		   uint64_t count)
{
	struct gp_launch_key k = { .pid = pid, .kind = kind, .handle = handle, .gen = gen,
				   .grid = { 1, 1, 1 }, .block = { 32, 1, 1 } };

	cudatrace__add_launch(ct, &k, count);
}

static struct cudatrace *five_kernels(void)
{
	struct cudatrace *ct = cudatrace__new();
	struct gp_hist h = { .count = 4, .timed = 4, .total_ns = 2500000000ULL };
	static const char *const names[] = { "a", "b", "c", "d", "other" };

	if (!ct)
		return NULL;
	for (int i = 0; i < 5; i++)
		name_kernel(ct, 20, (uint32_t)i + 1, 0x100 + (uint64_t)i, names[i]);
	cudatrace__snapshot_begin(ct);
	for (int i = 0; i < 5; i++)
		launch(ct, 20, GP_LAUNCH_KERNEL, (uint32_t)i + 1, 0x100 + (uint64_t)i, 50 - 10 * (uint64_t)i);
	launch(ct, 20, GP_LAUNCH_GRAPH, 0, 0x999, 6);
	cudatrace__set_hist(ct, 20, GP_HIST_SYNC, &h);
	cudatrace__snapshot_end(ct, 10);
	return ct;
}

static void test_label_escaping(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ASSERT_TRUE(f != NULL);
	prom__label_value(f, "a\\b\"c\nd");
	fclose(f);
	ASSERT_STR_EQ(buf, "a\\\\b\\\"c\\nd");
	free(buf);
}

static void test_memleak_series(void)
{
	struct memleak *ml = memleak__new(100, NULL, NULL);
	char *out;

	ASSERT_TRUE(ml != NULL);
	feed_memleak(ml, 10, "ap\"p", 3, 1);
	out = render(ml, NULL, 20);
	ASSERT_TRUE(out != NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{pid=\"10\",comm=\"ap\\\"p\",container=\"/a\\\\b\\\"c\\nd\"} 3\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_free_calls_total{pid=\"10\",comm=\"ap\\\"p\",container=\"/a\\\\b\\\"c\\nd\"} 1\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_outstanding_allocations{pid=\"10\",comm=\"ap\\\"p\",container=\"/a\\\\b\\\"c\\nd\",kind=\"device\"} 2\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_outstanding_bytes{pid=\"10\",comm=\"ap\\\"p\",container=\"/a\\\\b\\\"c\\nd\",kind=\"device\"} 200\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hits_total{pid=\"10\",comm=\"ap\\\"p\",container=\"/a\\\\b\\\"c\\nd\"} 4\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_probe_seconds_total{pid=\"10\",comm=\"ap\\\"p\",container=\"/a\\\\b\\\"c\\nd\"} 8e-06\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hit_cost_seconds 2e-06\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_events_dropped_total{mode=\"memleak\",reason=\"ringbuf_full\"} 7\n");
	ASSERT_TRUE(strstr(out, "gpuprobe_cuda_kernel_launches_total") == NULL); /* mode off */
	free(out);
	memleak__free(ml);
}

static void test_kernel_top_k_and_other(void)
{
	struct cudatrace *ct = five_kernels();
	char *out;

	ASSERT_TRUE(ct != NULL);
	out = render(NULL, ct, 2);
	ASSERT_TRUE(out != NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_kernel_launches_total{pid=\"20\",comm=\"trainer\",container=\"/system.slice/x.service\",kernel=\"a\"} 50\n");
	ASSERT_STR_CONTAINS(out, "kernel=\"b\"} 40\n");
	/* c (30) + d (20) + the kernel literally named "other" (10) */
	ASSERT_STR_CONTAINS(out, "kernel=\"other\"} 60\n");
	ASSERT_TRUE(strstr(out, "kernel=\"c\"") == NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_graph_launches_total{pid=\"20\",comm=\"trainer\",container=\"/system.slice/x.service\"} 6\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_calls_total{pid=\"20\",comm=\"trainer\",container=\"/system.slice/x.service\"} 4\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_sync_seconds_total{pid=\"20\",comm=\"trainer\",container=\"/system.slice/x.service\"} 2.500000000\n");
	/* 150 launches + 6 graph launches + 4 syncs */
	ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hits_total{pid=\"20\",comm=\"trainer\",container=\"/system.slice/x.service\"} 160\n");
	free(out);
	out = render(NULL, ct, 20);
	ASSERT_TRUE(out != NULL);
	ASSERT_STR_CONTAINS(out, "kernel=\"d\"} 20\n");
	ASSERT_STR_CONTAINS(out, "kernel=\"other\"} 10\n");
	free(out);
	cudatrace__free(ct);
}

/* Every sample's family has HELP and TYPE before it, every family once, samples of a
 * family together. */
static void test_help_type_every_family(void)
{
	struct memleak *ml = memleak__new(100, NULL, NULL);
	struct cudatrace *ct = five_kernels();
	char *out, *save = NULL, *line, last[128] = "", seen[4096] = " ";
	int families = 0;

	ASSERT_TRUE(ml && ct);
	feed_memleak(ml, 20, "trainer", 2, 0);
	out = render(ml, ct, 3);
	ASSERT_TRUE(out != NULL);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128], key[140];

		if (!strncmp(line, "# HELP ", 7)) {
			sscanf(line + 7, "%127s", name);
			snprintf(key, sizeof(key), " %s ", name);
			ASSERT_TRUE(strstr(seen, key) == NULL);
			strncat(seen, key + 1, sizeof(seen) - strlen(seen) - 1);
			snprintf(last, sizeof(last), "%s", name);
			families++;
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			sscanf(line + 7, "%127s", name);
			ASSERT_STR_EQ(name, last);
			continue;
		}
		sscanf(line, "%127[^{ ]", name);
		ASSERT_STR_EQ(name, last);
	}
	ASSERT_EQ(families, 17);
	free(out);
	memleak__free(ml);
	cudatrace__free(ct);
}

static void test_retention_removes_exited(void)
{
	struct memleak *ml = memleak__new(100, NULL, NULL);
	struct cudatrace *ct = five_kernels();
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = 20, .ts_ns = 1000, .comm = "trainer" };
	char *out;

	ASSERT_TRUE(ml && ct);
	feed_memleak(ml, 20, "trainer", 2, 0);
	memleak__on_exit(ml, &ex);
	cudatrace__on_exit(ct, &ex);
	memleak__reap_exited_before(ml, 1000);
	cudatrace__reap_exited_before(ct, 1000, NULL, NULL);
	out = render(ml, ct, 20);
	ASSERT_TRUE(out != NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_alloc_calls_total{pid=\"20\"");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_kernel_launches_total{pid=\"20\"");
	free(out);
	memleak__reap_exited_before(ml, 1001);
	cudatrace__reap_exited_before(ct, 1001, NULL, NULL);
	out = render(ml, ct, 20);
	ASSERT_TRUE(out != NULL);
	ASSERT_TRUE(strstr(out, "pid=\"20\"") == NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_tracked_processes 0\n");
	free(out);
	memleak__free(ml);
	cudatrace__free(ct);
}

/* A PID reused while the exited process's series are retained: one series, the live one. */
static void test_reused_pid_one_series(void)
{
	struct memleak *ml = memleak__new(100, NULL, NULL);
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = 10, .ts_ns = 5, .comm = "old" };
	char *out, *first;

	ASSERT_TRUE(ml != NULL);
	feed_memleak(ml, 10, "old", 1, 0);
	memleak__on_exit(ml, &ex);
	feed_memleak(ml, 10, "new", 2, 0);
	out = render(ml, NULL, 20);
	ASSERT_TRUE(out != NULL);
	first = strstr(out, "gpuprobe_cuda_alloc_calls_total{pid=\"10\"");
	ASSERT_TRUE(first != NULL);
	ASSERT_TRUE(strstr(first + 1, "gpuprobe_cuda_alloc_calls_total{pid=\"10\"") == NULL);
	ASSERT_STR_CONTAINS(first, "comm=\"new\"");
	free(out);
	memleak__free(ml);
}

static int count(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)); s++)
		n++;
	return n;
}

#define BW_LABELS "{pid=\"30\",comm=\"copier\",container=\"/system.slice/x.service\""

static void test_bandwidth_series(void)
{
	struct bandwidth *bw = three_copies();
	char *out;

	ASSERT_TRUE(bw != NULL);
	out = render_bw(bw, 12);
	ASSERT_TRUE(out != NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_calls_total" BW_LABELS ",gpu=\"1\",direction=\"H2D\"} 1\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_bytes_total" BW_LABELS ",gpu=\"1\",direction=\"H2D\"} 4096\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_sync_seconds_total" BW_LABELS ",gpu=\"1\",direction=\"H2D\"} 0.001000000\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_pageable_bytes_total" BW_LABELS ",gpu=\"1\",direction=\"H2D\"} 4096\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_bytes_total" BW_LABELS ",gpu=\"1\",direction=\"D2H\"} 8192\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_sync_seconds_total" BW_LABELS ",gpu=\"1\",direction=\"D2H\"} 0.000000000\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_async_seconds_upper_bound_total" BW_LABELS ",gpu=\"1\",direction=\"D2H\"} 0.002000000\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_cuda_memcpy_calls_total" BW_LABELS ",gpu=\"\",direction=\"H2H\"} 1\n");
	ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_cuda_memcpy_small_total counter\ngpuprobe_cuda_memcpy_small_total 12\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hits_total" BW_LABELS "} 3\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_events_dropped_total{mode=\"bandwidth\",reason=\"ringbuf_full\"} 2\n");
	ASSERT_TRUE(strstr(out, "pid=\"31\"") == NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_tracked_processes 1\n");
	ASSERT_TRUE(strstr(out, "gpuprobe_cuda_alloc_calls_total") == NULL); /* --memleak off */
	free(out);
	bandwidth__free(bw);
}

/* Exited: kept until the retention cutoff; two exited processes of one PID show once. */
static void test_bandwidth_exit_and_retention(void)
{
	struct bandwidth *bw = three_copies();
	struct gp_exit_event ex = { .type = GP_EV_EXIT, .pid = 30, .ts_ns = 1000, .comm = "copier" };
	char *out;
	int n;

	ASSERT_TRUE(bw != NULL);
	bandwidth__on_exit(bw, &ex);
	bw_copy(bw, 30, GP_API_cuMemcpyHtoD_v2, 0x10000, GP_MEMTYPE_DEVICE, 0x900000, GP_MEMTYPE_HOST,
		4096, 10, 0);
	ex.ts_ns = 2000;
	bandwidth__on_exit(bw, &ex);
	bandwidth__reap_exited_before(bw, 1000);
	out = render_bw(bw, 0);
	ASSERT_TRUE(out != NULL);
	/* one process's series, whichever of the two */
	n = count(out, "gpuprobe_cuda_memcpy_calls_total{pid=\"30\"");
	ASSERT_TRUE(n == 3 || n == 1);
	ASSERT_EQ(count(out, "gpuprobe_probe_hits_total{pid=\"30\""), 1);
	free(out);
	bandwidth__reap_exited_before(bw, 1500); /* the first went */
	out = render_bw(bw, 0);
	ASSERT_TRUE(out != NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_probe_hits_total" BW_LABELS "} 1\n");
	free(out);
	bandwidth__reap_exited_before(bw, 2001);
	out = render_bw(bw, 0);
	ASSERT_TRUE(out != NULL);
	ASSERT_TRUE(strstr(out, "pid=\"30\"") == NULL);
	ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_cuda_memcpy_calls_total counter\n");
	free(out);
	bandwidth__free(bw);
}

static char *render_ioctl(const struct ioc_proc *procs, size_t n, unsigned int max)
{
	struct prom_drop drops[] = { { "ioctl", "counter_table_full", 2 } };
	struct prom_input in = {
		.ioctl = true, .ioc = procs, .nr_ioc = n, .max_ioctl_series = max,
		.container = cg, .drops = drops, .nr_drops = 1, .probe_cost = 2e-6,
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (prom__render(f, &in)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

#define CTL "gpuprobe_nvidia_ioctl_calls_total{pid=\"30\",comm=\"py\\\"t\",container=\"/system.slice/x.service\",node="

/* Top N (node, cmd, ctrl) label sets by calls; the rest summed per node under "other";
 * request numbers with one decoded name are one series. */
static void test_ioctl_series_cap_and_other(void)
{
	struct ioc_cmd ctl[] = {
		{ .cmd = 0xc020462a, .ctrl_cmd = 0x20800110, .name = "NV_ESC_RM_CONTROL",
		  .ctrl_name = "NV2080_CTRL_CMD_GPU_GET_NAME_STRING",
		  .st = { .calls = 50, .errors = 1, .total_ns = 1500000000ULL } },
		{ .cmd = 0xc030462b, .name = "NV_ESC_RM_ALLOC", .st = { .calls = 40, .total_ns = 1000 } },
		{ .cmd = 0xc020462b, .name = "NV_ESC_RM_ALLOC", .st = { .calls = 5, .total_ns = 500 } },
		{ .cmd = 0xc020462a, .ctrl_cmd = 0x2080beef, .name = "NV_ESC_RM_CONTROL",
		  .st = { .calls = 3, .errors = 3 } },
		{ .cmd = 0x12345678, .st = { .calls = 2 } },
	};
	struct ioc_cmd uvm[] = {
		{ .cmd = 0x30000001, .name = "UVM_INITIALIZE", .st = { .calls = 31 } },
		{ .cmd = 37, .name = "UVM_REGISTER_GPU", .st = { .calls = 1, .errors = 1 } },
	};
	struct ioc_dev devs[] = {
		{ .major = 195, .minor = 255, .node = "/dev/nvidiactl", .cmds = ctl, .nr_cmds = 5 },
		{ .major = 511, .minor = 0, .node = "/dev/nvidia-uvm", .cmds = uvm, .nr_cmds = 2 },
	};
	struct ioc_proc p = { .pid = 30, .comm = "py\"t", .devs = devs, .nr_devs = 2 };
	char *out = render_ioctl(&p, 1, 3);

	ASSERT_TRUE(out != NULL);
	ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"NV_ESC_RM_CONTROL\",ctrl=\"NV2080_CTRL_CMD_GPU_GET_NAME_STRING\"} 50\n");
	ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"NV_ESC_RM_ALLOC\",ctrl=\"\"} 45\n");
	ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidia-uvm\",cmd=\"UVM_INITIALIZE\",ctrl=\"\"} 31\n");
	ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"other\",ctrl=\"\"} 5\n");
	ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidia-uvm\",cmd=\"other\",ctrl=\"\"} 1\n");
	ASSERT_TRUE(strstr(out, "0x12345678") == NULL);
	ASSERT_TRUE(strstr(out, "UVM_REGISTER_GPU") == NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_nvidia_ioctl_errors_total{pid=\"30\",comm=\"py\\\"t\",container=\"/system.slice/x.service\",node=\"/dev/nvidiactl\",cmd=\"other\",ctrl=\"\"} 3\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_nvidia_ioctl_seconds_total{pid=\"30\",comm=\"py\\\"t\",container=\"/system.slice/x.service\",node=\"/dev/nvidiactl\",cmd=\"NV_ESC_RM_CONTROL\",ctrl=\"NV2080_CTRL_CMD_GPU_GET_NAME_STRING\"} 1.500000000\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_events_dropped_total{mode=\"ioctl\",reason=\"counter_table_full\"} 2\n");
	/* ioctls are not probe hits; the process is tracked all the same */
	ASSERT_TRUE(strstr(out, "gpuprobe_probe_hits_total{") == NULL);
	ASSERT_STR_CONTAINS(out, "gpuprobe_tracked_processes 1\n");
	free(out);

	out = render_ioctl(&p, 1, 20);
	ASSERT_TRUE(out != NULL);
	ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"NV_ESC_RM_CONTROL\",ctrl=\"0x2080beef\"} 3\n");
	ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidiactl\",cmd=\"0x12345678\",ctrl=\"\"} 2\n");
	ASSERT_STR_CONTAINS(out, CTL "\"/dev/nvidia-uvm\",cmd=\"UVM_REGISTER_GPU\",ctrl=\"\"} 1\n");
	ASSERT_TRUE(strstr(out, ",cmd=\"other\"") == NULL);
	free(out);

	out = render_ioctl(NULL, 0, 20); /* no process yet: the families still have HELP/TYPE */
	ASSERT_TRUE(out != NULL);
	ASSERT_STR_CONTAINS(out, "# HELP gpuprobe_nvidia_ioctl_calls_total ");
	ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_nvidia_ioctl_calls_total counter\n");
	ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_nvidia_ioctl_errors_total counter\n");
	ASSERT_STR_CONTAINS(out, "# TYPE gpuprobe_nvidia_ioctl_seconds_total counter\n");
	ASSERT_STR_CONTAINS(out, "gpuprobe_tracked_processes 0\n");
	free(out);
}

int main(void)
{
	RUN_TEST(test_label_escaping);
	RUN_TEST(test_memleak_series);
	RUN_TEST(test_kernel_top_k_and_other);
	RUN_TEST(test_help_type_every_family);
	RUN_TEST(test_retention_removes_exited);
	RUN_TEST(test_reused_pid_one_series);
	RUN_TEST(test_bandwidth_series);
	RUN_TEST(test_bandwidth_exit_and_retention);
	RUN_TEST(test_ioctl_series_cap_and_other);
	return unit_done();
}
