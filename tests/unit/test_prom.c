/* SPDX-License-Identifier: BSD-3-Clause */
/* src/prom.c: the exposition over hand-fed aggregators, compared line by line. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "apis.h"
#include "cudatrace.h"
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

int main(void)
{
	RUN_TEST(test_label_escaping);
	RUN_TEST(test_memleak_series);
	RUN_TEST(test_kernel_top_k_and_other);
	RUN_TEST(test_help_type_every_family);
	RUN_TEST(test_retention_removes_exited);
	RUN_TEST(test_reused_pid_one_series);
	return unit_done();
}
