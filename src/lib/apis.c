/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <string.h>
#include "lib/apis.h"

/* Each table in id order, from the one list (bpf/gp_apis.def: signatures and why each
 * entry point is there). */
const struct gp_api_info gp_mem_apis[] = {
#define GP_MEM(name, layout, kind, required) \
	{ GP_API_##name, #name, GP_LAYOUT_##layout, GP_KIND_##kind, required },
#include "gp_apis.def"
};
const int gp_mem_apis_cnt = sizeof(gp_mem_apis) / sizeof(gp_mem_apis[0]);

const struct gp_launch_api_info gp_launch_apis[] = {
#define GP_LAUNCH(name, prog) { GP_API_##name, #name, GP_LP_##prog },
#define GP_LAUNCH_COPY(name, prog) GP_LAUNCH(name, prog)
#include "gp_apis.def"
};
const int gp_launch_apis_cnt = sizeof(gp_launch_apis) / sizeof(gp_launch_apis[0]);

const struct gp_graph_api_info gp_graph_apis[] = {
#define GP_GRAPH(name, with_return, call) { GP_API_##name, #name, with_return, GP_GC_##call },
#define GP_GRAPH_COPY(name, with_return, call) GP_GRAPH(name, with_return, call)
#include "gp_apis.def"
};
const int gp_graph_apis_cnt = sizeof(gp_graph_apis) / sizeof(gp_graph_apis[0]);

const struct gp_copy_api_info gp_copy_apis[] = {
#define GP_COPY(name, layout) { GP_API_##name, #name, GP_CL_##layout },
#define GP_LAUNCH_COPY(name, prog) GP_COPY(name, NONE)
#define GP_GRAPH_COPY(name, with_return, call) GP_COPY(name, NONE)
#include "gp_apis.def"
};
const int gp_copy_apis_cnt = sizeof(gp_copy_apis) / sizeof(gp_copy_apis[0]);

static const unsigned char aux_layouts[GP_API__COUNT] = {
#define GP_AUX_LAYOUT(name, layout) [GP_API_##name] = GP_AUX_##layout,
#include "gp_apis.def"
};

enum gp_aux_layout gp_aux_layout_of(unsigned int id)
{
	return id < GP_API__COUNT ? (enum gp_aux_layout)aux_layouts[id] : GP_AUX_ARG1;
}

static const char *const api_names[GP_API__COUNT] = {
#define GP_API(name) [GP_API_##name] = #name,
#include "gp_apis.def"
};

uint64_t gp_mem_api_bit(unsigned int id)
{
	for (int i = 0; i < gp_mem_apis_cnt && i < 64; i++)
		if ((unsigned int)gp_mem_apis[i].id == id)
			return 1ull << i;
	return 0;
}

const struct gp_api_info *gp_api_info(unsigned int id)
{
	for (int i = 0; i < gp_mem_apis_cnt; i++)
		if ((unsigned int)gp_mem_apis[i].id == id)
			return &gp_mem_apis[i];
	return NULL;
}

bool gp_api_ptsz(unsigned int id)
{
	const char *n = gp_api_name(id);
	size_t len = strlen(n);

	return len > 5 && !strcmp(n + len - 5, "_ptsz");
}

const char *gp_api_name(unsigned int id)
{
	return id < GP_API__COUNT && api_names[id] ? api_names[id] : "unknown";
}

const char *gp_kind_name(unsigned int kind)
{
	static const char *const names[GP_KIND__COUNT] = {
		[GP_KIND_DEVICE] = "device",
		[GP_KIND_MANAGED] = "managed",
		[GP_KIND_HOST] = "host_pinned",
		[GP_KIND_PHYSICAL] = "physical",
		[GP_KIND_GRAPH] = "graph",
	};

	return kind < GP_KIND__COUNT ? names[kind] : "unknown";
}
