/* SPDX-License-Identifier: BSD-3-Clause */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/mode.h"
#include "out/text.h"
#include "out/trees.h"
#include "lib/u64map.h"
#include "lib/unseen.h"

struct job {
	uint32_t root;
	char comm[GP_COMM_LEN]; /* the root's, "" unknown */
	uint32_t images;
	uint64_t v[GP_TREE_VALUES];
};

struct gp_trees {
	const struct gp_snap_env *env;
	struct u64map *jobs; /* root -> struct job */
	uint32_t *order;     /* roots, in the order first seen */
	size_t n, cap;
};

struct gp_trees *gp_trees__new(const struct gp_snap_env *env)
{
	struct gp_trees *t;

	if (!env || !env->trees || !env->lineage)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t && !(t->jobs = u64map__new())) {
		free(t);
		return NULL;
	}
	if (t)
		t->env = env;
	return t;
}

static struct job *job_of(struct gp_trees *t, uint32_t root, const char *comm)
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
	snprintf(j->comm, sizeof(j->comm), "%s", comm);
	t->order[t->n++] = root;
	return j;
}

void gp_trees__add(struct gp_trees *t, uint32_t pid, const uint64_t v[GP_TREE_VALUES])
{
	struct gp_lineage l = { 0 };
	struct job *j;

	if (!t)
		return;
	if (!t->env->lineage(t->env->run, pid, &l) || !l.root)
		l.root = pid;
	j = job_of(t, l.root, l.root_comm);
	if (!j)
		return;
	j->images++;
	for (int i = 0; i < GP_TREE_VALUES; i++)
		j->v[i] += v[i];
}

static const char *root_comm(const struct job *j)
{
	return j->comm[0] ? j->comm : "?";
}

void gp_trees__text(const struct gp_trees *t, FILE *f, gp_tree_values_fn values)
{
	for (size_t i = 0; t && i < t->n; i++) {
		const struct job *j = u64map__get(t->jobs, t->order[i]);

		if (j->images < 2)
			continue;
		fprintf(f, "job PID %u (%.*s): %s", j->root, GP_COMM_LEN, root_comm(j),
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
		json_object_object_add(jo, "comm", json_object_new_string(root_comm(j)));
		json_object_object_add(jo, "process_images", json_object_new_int64(j->images));
		for (int k = 0; k < GP_TREE_VALUES && key[k]; k++)
			json_object_object_add(jo, key[k], json_object_new_uint64(j->v[k]));
		json_object_array_add(arr, jo);
	}
	json_object_object_add(o, "jobs", arr);
}

json_object *gp_unseen__json(const struct gp_unseen *u)
{
	json_object *o;

	if (!u)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "after", json_object_new_string(u->started ? "start" : "mapping"));
	json_object_object_add(o, "gap_s", u->mapped_ns && u->probed_ns > u->mapped_ns ?
				json_object_new_double((double)(u->probed_ns - u->mapped_ns) / 1e9) : NULL);
	return o;
}

void gp_trees__json_proc(const struct gp_snap_env *env, json_object *po, uint32_t pid)
{
	struct gp_lineage l;

	if (!env)
		return;
	/* calls before its libcuda was probed, not seen: null when there were none */
	json_object_object_add(po, "unseen_before_probes", gp_unseen__json(gp_env_unseen(env, pid)));
	if (!env->trees || !env->lineage || !env->lineage(env->run, pid, &l))
		return;
	json_object_object_add(po, "ppid", json_object_new_int64(l.ppid));
	json_object_object_add(po, "root", json_object_new_int64(l.root ? l.root : pid));
}

void gp_trees__free(struct gp_trees *t)
{
	if (!t)
		return;
	u64map__free_all(t->jobs, NULL);
	free(t->order);
	free(t);
}
