/* SPDX-License-Identifier: BSD-3-Clause */
/* --cudatrace's aggregator across exec: one record per process image (gp_image()), names
 * and counts kept apart, whichever of its records (exec, name, launch keys) comes first. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "modes/cudatrace/cudatrace.h"
#include "unit.h"

static void name_handle(struct cudatrace *ct, uint32_t pid, uint32_t img, uint32_t gen, uint64_t handle,
			const char *name)
{
	struct gp_name_event e = { .type = GP_EV_NAME, .pid = pid, .img = img, .gen = gen, .handle = handle };

	snprintf(e.comm, sizeof(e.comm), "img%u", img);
	snprintf(e.name, sizeof(e.name), "%s", name);
	cudatrace__on_name(ct, &e);
}

static void launch(struct cudatrace *ct, uint32_t pid, uint32_t img, uint32_t gen, uint64_t handle,
		   uint64_t count)
{
	struct gp_launch_key k = { .pid = pid, .img = img, .kind = GP_LAUNCH_KERNEL, .handle = handle,
				   .gen = gen, .grid = { 1, 1, 1 }, .block = { 1, 1, 1 } };

	cudatrace__add_launch(ct, &k, count);
}

static struct ct_proc *record(struct cudatrace *ct, uint32_t pid, bool exec)
{
	struct ct_proc **v;
	size_t n = cudatrace__procs(ct, &v);

	for (size_t i = 0; i < n; i++)
		if (v[i]->pid == pid && v[i]->exec == exec)
			return v[i];
	return NULL;
}

static size_t records(struct cudatrace *ct)
{
	struct ct_proc **v;

	return cudatrace__procs(ct, &v);
}

/* The exec record is read first: the old image's counts go to its ended record. */
static void test_exec_record_first(void)
{
	struct cudatrace *ct = cudatrace__new();
	struct gp_proc_event ex = { .type = GP_EV_EXEC, .pid = 50, .img = 2, .ts_ns = 100 };
	struct ct_proc *old, *cur;

	if (!ASSERT_TRUE(ct != NULL, "ct"))
		return;
	name_handle(ct, 50, 1, 1, 0x1000, "first_kern");
	if (!ASSERT_TRUE(cudatrace__on_exec(ct, &ex), "the exec ends image 1"))
		goto cleanup;
	/* the same handle value in the new image names another kernel */
	name_handle(ct, 50, 2, 2, 0x1000, "second_kern");
	cudatrace__snapshot_begin(ct);
	launch(ct, 50, 1, 1, 0x1000, 7);
	launch(ct, 50, 2, 2, 0x1000, 11);
	cudatrace__snapshot_end(ct, 200);
	old = record(ct, 50, true);
	cur = record(ct, 50, false);
	if (!ASSERT_TRUE(old && cur && records(ct) == 2, "two records of PID 50"))
		goto cleanup;
	if (!ASSERT_EQ(old->launches, 7, "image 1 launches") || !ASSERT_EQ(cur->launches, 11, "image 2 launches"))
		goto cleanup;
	if (!ASSERT_TRUE(old->nr_kernels == 1 && !strcmp(old->kernels[0].name, "first_kern"), "image 1's name"))
		goto cleanup;
	if (!ASSERT_TRUE(cur->nr_kernels == 1 && !strcmp(cur->kernels[0].name, "second_kern"), "image 2's name"))
		goto cleanup;
	ASSERT_TRUE(old->exited && !cur->exited, "image 1 ended, image 2 lives");
cleanup:
	cudatrace__free(ct);
}

/* The new image's keys are seen before its exec record: the live record ends then, and
 * the exec record, read later, changes nothing. */
static void test_new_image_before_exec_record(void)
{
	struct cudatrace *ct = cudatrace__new();
	struct gp_proc_event ex = { .type = GP_EV_EXEC, .pid = 60, .img = 4, .ts_ns = 100 };

	if (!ASSERT_TRUE(ct != NULL, "ct"))
		return;
	cudatrace__snapshot_begin(ct);
	launch(ct, 60, 3, 0, 0x10, 5);
	launch(ct, 60, 4, 0, 0x20, 6);
	cudatrace__snapshot_end(ct, 50);
	if (!ASSERT_EQ(records(ct), 2, "one record per image"))
		goto cleanup;
	if (!ASSERT_TRUE(record(ct, 60, true) && record(ct, 60, true)->launches == 5, "image 3 ended by exec"))
		goto cleanup;
	if (!ASSERT_TRUE(record(ct, 60, false) && record(ct, 60, false)->launches == 6, "image 4 live"))
		goto cleanup;
	if (!ASSERT_FALSE(cudatrace__on_exec(ct, &ex), "the late exec record: nothing more to end"))
		goto cleanup;
	/* the next snapshot finds the same split */
	cudatrace__snapshot_begin(ct);
	launch(ct, 60, 3, 0, 0x10, 5);
	launch(ct, 60, 4, 0, 0x20, 9);
	cudatrace__snapshot_end(ct, 60);
	ASSERT_TRUE(records(ct) == 2 && record(ct, 60, false)->launches == 9, "image 4 counted on");
cleanup:
	cudatrace__free(ct);
}

static int forgot_pid, forgot_img_calls;
static uint32_t forgot_img;

static void forget(void *ctx, uint32_t pid, const uint32_t *img)
{
	(void)ctx;
	(void)pid;
	if (img) {
		forgot_img_calls++;
		forgot_img = *img;
	} else {
		forgot_pid++;
	}
}

/* A reaped image's BPF keys go by image (the PID lives on); its late keys count nowhere. */
static void test_reap_forgets_by_image(void)
{
	struct cudatrace *ct = cudatrace__new();
	struct gp_proc_event ex = { .type = GP_EV_EXEC, .pid = 70, .img = 2, .ts_ns = 100 };
	struct gp_exit_event gone = { .type = GP_EV_EXIT, .pid = 70, .img = 2, .ts_ns = 300 };

	if (!ASSERT_TRUE(ct != NULL, "ct"))
		return;
	cudatrace__snapshot_begin(ct);
	launch(ct, 70, 1, 0, 0x10, 3);
	cudatrace__snapshot_end(ct, 50);
	cudatrace__on_exec(ct, &ex);
	cudatrace__snapshot_begin(ct);
	launch(ct, 70, 1, 0, 0x10, 3);
	launch(ct, 70, 2, 0, 0x10, 4);
	cudatrace__snapshot_end(ct, 150);
	cudatrace__reap(ct, UINT64_MAX, 0, forget, NULL);
	if (!ASSERT_TRUE(forgot_img_calls == 1 && forgot_img == 1 && forgot_pid == 0, "image 1's keys only"))
		goto cleanup;
	cudatrace__snapshot_begin(ct);
	launch(ct, 70, 1, 0, 0x10, 3); /* not deleted yet: ignored */
	launch(ct, 70, 2, 0, 0x10, 4);
	cudatrace__snapshot_end(ct, 160);
	if (!ASSERT_TRUE(records(ct) == 1 && record(ct, 70, false)->launches == 4, "only image 2"))
		goto cleanup;
	cudatrace__on_exit(ct, &gone);
	cudatrace__reap(ct, UINT64_MAX, 0, forget, NULL);
	ASSERT_TRUE(forgot_pid == 1 && records(ct) == 0, "the exit: all of the PID's keys");
cleanup:
	cudatrace__free(ct);
}

/* An exit record of a process no snapshot has seen: its record is made, exited. */
static void test_exit_before_any_snapshot(void)
{
	struct cudatrace *ct = cudatrace__new();
	struct gp_exit_event gone = { .type = GP_EV_EXIT, .pid = 80, .img = 5, .ts_ns = 10, .comm = "short" };

	if (!ASSERT_TRUE(ct != NULL, "ct"))
		return;
	cudatrace__on_exit(ct, &gone);
	cudatrace__snapshot_begin(ct);
	launch(ct, 80, 5, 0, 0x10, 2);
	cudatrace__snapshot_end(ct, 20);
	ASSERT_TRUE(records(ct) == 1 && record(ct, 80, false) && record(ct, 80, false)->exited &&
		    record(ct, 80, false)->launches == 2, "its counts on its exited record");
	cudatrace__free(ct);
}

int main(void)
{
	RUN_TEST(test_exec_record_first);
	RUN_TEST(test_new_image_before_exec_record);
	RUN_TEST(test_reap_forgets_by_image);
	RUN_TEST(test_exit_before_any_snapshot);
	return unit_done();
}
