/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reports by job: when a run follows process trees (a command, -p --tree, --comm,
 * --cgroup), a mode sums what each process of a tree did under the tree's root — the
 * launcher a job was started as — so one line says what the whole job launched, leaked or
 * copied. Processes are added one image at a time (an exec'd image adds to its tree too).
 */
#ifndef GP_TREES_H
#define GP_TREES_H

#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

struct gp_snap_env;
struct gp_unseen;
struct gp_trees;

#define GP_TREE_VALUES 3

/* From a snapshot's env; NULL when the run follows no tree (every process is its own job then). */
struct gp_trees *gp_trees__new(const struct gp_snap_env *env);
/* One process image's values (names given to the renderers, in this order). */
void gp_trees__add(struct gp_trees *t, uint32_t pid, const uint64_t v[GP_TREE_VALUES]);
/* Writes a job's values after its head, each as ", 1,200 launches" (src/out/text.h). */
typedef void (*gp_tree_values_fn)(FILE *f, const uint64_t v[GP_TREE_VALUES]);
/* "job PID 12 (torchrun): 3 process images, 1,200 launches, ..." for each tree of two images
 * or more, the values written by values(). */
void gp_trees__text(const struct gp_trees *t, FILE *f, gp_tree_values_fn values);
/* "jobs": [{"root": 12, "comm": "torchrun", "processes": 3, key[i]: value i, ...}] */
void gp_trees__json(const struct gp_trees *t, json_object *o, const char *const key[GP_TREE_VALUES]);
/* {"unseen_before_probes": .., "ppid": .., "root": ..} of one process, added to its object
 * (ppid and root when the tree knows it). */
void gp_trees__json_proc(const struct gp_snap_env *env, json_object *po, uint32_t pid);
/* {"after": "mapping"|"start", "gap_s": seconds or null}; NULL (JSON null) for no note. */
json_object *gp_unseen__json(const struct gp_unseen *u);
void gp_trees__free(struct gp_trees *t);

#endif
