/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "core/ptree.h"
#include "core/run.h"
#include "out/text.h"
#include "out/trees.h"
#include "lib/u64map.h"

struct job {
	uint32_t root;
	uint32_t images;
	uint64_t v[GP_TREE_VALUES];
};

struct gp_trees {
	const struct gp_run *run;
	struct u64map *jobs; /* root -> struct job */
	uint32_t *order;     /* roots, in the order first seen */
	size_t n, cap;
};

struct gp_trees *gp_trees__new(const struct gp_run *run)
{
	struct gp_trees *t;

	if (!run || !run->ptree || !run->filter)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t && !(t->jobs = u64map__new())) {
		free(t);
		return NULL;
	}
	if (t)
		t->run = run;
	return t;
}

static struct job *job_of(struct gp_trees *t, uint32_t root)
{
	struct job *j = u64map__get(t->jobs, root);

	if (j)
		return j;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		uint32_t *o = realloc(t->order, cap * sizeof(*o));

		if (!o)
			return NULL;
		t->order = o;
		t->cap = cap;
	}
	j = calloc(1, sizeof(*j));
	if (!j || u64map__put(t->jobs, root, j)) {
		free(j);
		return NULL;
	}
	j->root = root;
	t->order[t->n++] = root;
	return j;
}

void gp_trees__add(struct gp_trees *t, uint32_t pid, const uint64_t v[GP_TREE_VALUES])
{
	const struct pt_proc *p;
	struct job *j;

	if (!t)
		return;
	p = ptree__get(t->run->ptree, pid);
	j = job_of(t, p && p->root ? p->root : pid);
	if (!j)
		return;
	j->images++;
	for (int i = 0; i < GP_TREE_VALUES; i++)
		j->v[i] += v[i];
}

static const char *root_comm(const struct gp_trees *t, uint32_t root)
{
	const struct pt_proc *p = ptree__get(t->run->ptree, root);

	return p && p->comm[0] ? p->comm : "?";
}

void gp_trees__text(const struct gp_trees *t, FILE *f, gp_tree_values_fn values)
{
	for (size_t i = 0; t && i < t->n; i++) {
		const struct job *j = u64map__get(t->jobs, t->order[i]);

		if (j->images < 2)
			continue;
		fprintf(f, "job PID %u (%.*s): %s", j->root, GP_COMM_LEN, root_comm(t, j->root),
			gp_text__n(j->images, "process image", "process images").s);
		values(f, j->v);
		fputc('\n', f);
	}
}

void gp_trees__json(const struct gp_trees *t, json_object *o, const char *const key[GP_TREE_VALUES])
{
	json_object *arr;

	if (!t)
		return;
	arr = json_object_new_array();
	for (size_t i = 0; i < t->n; i++) {
		const struct job *j = u64map__get(t->jobs, t->order[i]);
		json_object *jo = json_object_new_object();

		json_object_object_add(jo, "root", json_object_new_int64(j->root));
		json_object_object_add(jo, "comm", json_object_new_string(root_comm(t, j->root)));
		json_object_object_add(jo, "process_images", json_object_new_int64(j->images));
		for (int k = 0; k < GP_TREE_VALUES && key[k]; k++)
			json_object_object_add(jo, key[k], json_object_new_uint64(j->v[k]));
		json_object_array_add(arr, jo);
	}
	json_object_object_add(o, "jobs", arr);
}

void gp_trees__json_proc(const struct gp_run *run, json_object *po, uint32_t pid)
{
	const struct pt_proc *p = run && run->filter ? ptree__get(run->ptree, pid) : NULL;

	/* calls before its libcuda was probed, not seen: null when there were none */
	if (run)
		json_object_object_add(po, "unseen_before_probes", gp_unseen__json(gp_run__unseen(run, pid)));
	if (!p)
		return;
	json_object_object_add(po, "ppid", json_object_new_int64(p->ppid));
	json_object_object_add(po, "root", json_object_new_int64(p->root ? p->root : pid));
}

void gp_trees__free(struct gp_trees *t)
{
	if (!t)
		return;
	u64map__free_all(t->jobs, NULL);
	free(t->order);
	free(t);
}
