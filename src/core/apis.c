/* SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include "apis.h"

/* Signatures from cuda.h; _ptsz variants exist only where cuda.h maps the per-thread
 * default stream onto them (__CUDA_API_PTSZ). */
const struct gp_api_info gp_mem_apis[] = {
	{ GP_API_cuMemAlloc_v2, "cuMemAlloc_v2", GP_SHAPE_ALLOC, GP_KIND_DEVICE, true },
	{ GP_API_cuMemAllocPitch_v2, "cuMemAllocPitch_v2", GP_SHAPE_PITCH, GP_KIND_DEVICE, false },
	{ GP_API_cuMemAllocManaged, "cuMemAllocManaged", GP_SHAPE_ALLOC, GP_KIND_MANAGED, false },
	{ GP_API_cuMemAllocAsync, "cuMemAllocAsync", GP_SHAPE_ALLOC, GP_KIND_DEVICE, false },
	{ GP_API_cuMemAllocAsync_ptsz, "cuMemAllocAsync_ptsz", GP_SHAPE_ALLOC, GP_KIND_DEVICE, false },
	{ GP_API_cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", GP_SHAPE_ALLOC, GP_KIND_DEVICE, false },
	{ GP_API_cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync_ptsz", GP_SHAPE_ALLOC, GP_KIND_DEVICE, false },
	{ GP_API_cuMemAllocHost_v2, "cuMemAllocHost_v2", GP_SHAPE_ALLOC, GP_KIND_HOST, false },
	{ GP_API_cuMemHostAlloc, "cuMemHostAlloc", GP_SHAPE_ALLOC, GP_KIND_HOST, false },
	{ GP_API_cuMemCreate, "cuMemCreate", GP_SHAPE_ALLOC, GP_KIND_PHYSICAL, false },
	{ GP_API_cuMemFree_v2, "cuMemFree_v2", GP_SHAPE_FREE, GP_KIND_DEVICE, true },
	{ GP_API_cuMemFreeAsync, "cuMemFreeAsync", GP_SHAPE_FREE, GP_KIND_DEVICE, false },
	{ GP_API_cuMemFreeAsync_ptsz, "cuMemFreeAsync_ptsz", GP_SHAPE_FREE, GP_KIND_DEVICE, false },
	{ GP_API_cuMemFreeHost, "cuMemFreeHost", GP_SHAPE_FREE, GP_KIND_HOST, false },
	{ GP_API_cuMemRelease, "cuMemRelease", GP_SHAPE_FREE, GP_KIND_PHYSICAL, false },
	{ GP_API_cuMemMap, "cuMemMap", GP_SHAPE_MAP, GP_KIND_PHYSICAL, false },
	{ GP_API_cuMemUnmap, "cuMemUnmap", GP_SHAPE_UNMAP, GP_KIND_PHYSICAL, false },
	/* a graph's memory nodes: the address is fixed when the node is made (its dptr
	 * out-field), and freed by a free node or any stream-ordered or plain free */
	{ GP_API_cuGraphAddMemAllocNode, "cuGraphAddMemAllocNode", GP_SHAPE_ALLOC, GP_KIND_GRAPH, false },
	{ GP_API_cuGraphAddMemFreeNode, "cuGraphAddMemFreeNode", GP_SHAPE_FREE, GP_KIND_GRAPH, false },
};
const int gp_mem_apis_cnt = sizeof(gp_mem_apis) / sizeof(gp_mem_apis[0]);

/* Launch-side entry points. cuLaunchKernelEx takes the function as its second argument
 * and its grid/block in the config struct (see GPU-MACHINE.md). */
const struct gp_launch_api_info gp_launch_apis[] = {
	{ GP_API_cuLaunchKernel, "cuLaunchKernel", GP_LP_KERNEL },
	{ GP_API_cuLaunchKernel_ptsz, "cuLaunchKernel_ptsz", GP_LP_KERNEL },
	{ GP_API_cuLaunchKernelEx, "cuLaunchKernelEx", GP_LP_EX },
	{ GP_API_cuLaunchKernelEx_ptsz, "cuLaunchKernelEx_ptsz", GP_LP_EX },
	{ GP_API_cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", GP_LP_COOP },
	{ GP_API_cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel_ptsz", GP_LP_COOP },
	{ GP_API_cuGraphLaunch, "cuGraphLaunch", GP_LP_GRAPH },
	{ GP_API_cuGraphLaunch_ptsz, "cuGraphLaunch_ptsz", GP_LP_GRAPH },
	{ GP_API_cuModuleGetFunction, "cuModuleGetFunction", GP_LP_NAME },
	{ GP_API_cuLibraryGetKernel, "cuLibraryGetKernel", GP_LP_NAME },
	{ GP_API_cuKernelGetFunction, "cuKernelGetFunction", GP_LP_ALIAS },
	{ GP_API_cuStreamSynchronize, "cuStreamSynchronize", GP_LP_SYNC },
	{ GP_API_cuStreamSynchronize_ptsz, "cuStreamSynchronize_ptsz", GP_LP_SYNC },
	{ GP_API_cuCtxSynchronize, "cuCtxSynchronize", GP_LP_SYNC },
	{ GP_API_cuEventSynchronize, "cuEventSynchronize", GP_LP_SYNC },
	{ GP_API_cuCtxSynchronize_v2, "cuCtxSynchronize_v2", GP_LP_SYNC }, /* CUDA 13 */
	{ GP_API_cuModuleUnload, "cuModuleUnload", GP_LP_UNLOAD },
	{ GP_API_cuLibraryUnload, "cuLibraryUnload", GP_LP_UNLOAD },
	{ GP_API_cuInit, "cuInit", GP_LP_INIT },
	/* a process's first context: no launch or synchronization can come before its return */
	{ GP_API_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", GP_LP_INIT },
	{ GP_API_cuCtxCreate_v2, "cuCtxCreate_v2", GP_LP_INIT },
	{ GP_API_cuCtxCreate_v3, "cuCtxCreate_v3", GP_LP_INIT },
	{ GP_API_cuCtxCreate_v4, "cuCtxCreate_v4", GP_LP_INIT },
};
const int gp_launch_apis_cnt = sizeof(gp_launch_apis) / sizeof(gp_launch_apis[0]);

/* Stream capture, its fork/join through events, graph building, instantiation, updates
 * and destruction: what it takes to know each CUgraphExec's kernel nodes. */
const struct gp_graph_api_info gp_graph_apis[] = {
	{ GP_API_cuStreamBeginCapture, "cuStreamBeginCapture", true },
	{ GP_API_cuStreamBeginCapture_ptsz, "cuStreamBeginCapture_ptsz", true },
	{ GP_API_cuStreamBeginCapture_v2, "cuStreamBeginCapture_v2", true },
	{ GP_API_cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture_v2_ptsz", true },
	{ GP_API_cuStreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", true },
	{ GP_API_cuStreamBeginCaptureToGraph_ptsz, "cuStreamBeginCaptureToGraph_ptsz", true },
	{ GP_API_cuStreamEndCapture, "cuStreamEndCapture", true },
	{ GP_API_cuStreamEndCapture_ptsz, "cuStreamEndCapture_ptsz", true },
	{ GP_API_cuEventRecord, "cuEventRecord", false },
	{ GP_API_cuEventRecord_ptsz, "cuEventRecord_ptsz", false },
	{ GP_API_cuEventRecordWithFlags, "cuEventRecordWithFlags", false },
	{ GP_API_cuEventRecordWithFlags_ptsz, "cuEventRecordWithFlags_ptsz", false },
	{ GP_API_cuStreamWaitEvent, "cuStreamWaitEvent", false },
	{ GP_API_cuStreamWaitEvent_ptsz, "cuStreamWaitEvent_ptsz", false },
	{ GP_API_cuGraphInstantiate, "cuGraphInstantiate", true },
	{ GP_API_cuGraphInstantiate_v2, "cuGraphInstantiate_v2", true },
	{ GP_API_cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", true },
	{ GP_API_cuGraphInstantiateWithParams, "cuGraphInstantiateWithParams", true },
	{ GP_API_cuGraphInstantiateWithParams_ptsz, "cuGraphInstantiateWithParams_ptsz", true },
	{ GP_API_cuGraphAddKernelNode, "cuGraphAddKernelNode", true },
	{ GP_API_cuGraphAddKernelNode_v2, "cuGraphAddKernelNode_v2", true },
	{ GP_API_cuGraphKernelNodeSetParams, "cuGraphKernelNodeSetParams", true },
	{ GP_API_cuGraphKernelNodeSetParams_v2, "cuGraphKernelNodeSetParams_v2", true },
	{ GP_API_cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams", true },
	{ GP_API_cuGraphExecKernelNodeSetParams_v2, "cuGraphExecKernelNodeSetParams_v2", true },
	{ GP_API_cuGraphExecUpdate, "cuGraphExecUpdate", true },
	{ GP_API_cuGraphExecUpdate_v2, "cuGraphExecUpdate_v2", true },
	{ GP_API_cuGraphExecDestroy, "cuGraphExecDestroy", false },
	{ GP_API_cuGraphDestroy, "cuGraphDestroy", false },
	{ GP_API_cuGraphClone, "cuGraphClone", true },
	{ GP_API_cuGraphDestroyNode, "cuGraphDestroyNode", false },
	{ GP_API_cuGraphAddChildGraphNode, "cuGraphAddChildGraphNode", false },
	{ GP_API_cuGraphCreate, "cuGraphCreate", true },
};
const int gp_graph_apis_cnt = sizeof(gp_graph_apis) / sizeof(gp_graph_apis[0]);

const struct gp_copy_api_info gp_copy_apis[] = {
	{ GP_API_cuMemcpy, "cuMemcpy" },
	{ GP_API_cuMemcpy_ptds, "cuMemcpy_ptds" },
	{ GP_API_cuMemcpyAsync, "cuMemcpyAsync" },
	{ GP_API_cuMemcpyAsync_ptsz, "cuMemcpyAsync_ptsz" },
	{ GP_API_cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2" },
	{ GP_API_cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD_v2_ptds" },
	{ GP_API_cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2" },
	{ GP_API_cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH_v2_ptds" },
	{ GP_API_cuMemcpyDtoD_v2, "cuMemcpyDtoD_v2" },
	{ GP_API_cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD_v2_ptds" },
	{ GP_API_cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2" },
	{ GP_API_cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync_v2_ptsz" },
	{ GP_API_cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2" },
	{ GP_API_cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync_v2_ptsz" },
	{ GP_API_cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync_v2" },
	{ GP_API_cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync_v2_ptsz" },
	{ GP_API_cuMemcpyPeer, "cuMemcpyPeer" },
	{ GP_API_cuMemcpyPeer_ptds, "cuMemcpyPeer_ptds" },
	{ GP_API_cuMemcpyPeerAsync, "cuMemcpyPeerAsync" },
	{ GP_API_cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync_ptsz" },
	{ GP_API_cuMemcpy2D_v2, "cuMemcpy2D_v2" },
	{ GP_API_cuMemcpy2D_v2_ptds, "cuMemcpy2D_v2_ptds" },
	{ GP_API_cuMemcpy2DUnaligned_v2, "cuMemcpy2DUnaligned_v2" },
	{ GP_API_cuMemcpy2DUnaligned_v2_ptds, "cuMemcpy2DUnaligned_v2_ptds" },
	{ GP_API_cuMemcpy2DAsync_v2, "cuMemcpy2DAsync_v2" },
	{ GP_API_cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync_v2_ptsz" },
	{ GP_API_cuMemcpy3D_v2, "cuMemcpy3D_v2" },
	{ GP_API_cuMemcpy3D_v2_ptds, "cuMemcpy3D_v2_ptds" },
	{ GP_API_cuMemcpy3DAsync_v2, "cuMemcpy3DAsync_v2" },
	{ GP_API_cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync_v2_ptsz" },
	{ GP_API_cuEventRecord, "cuEventRecord" },
	{ GP_API_cuEventRecord_ptsz, "cuEventRecord_ptsz" },
	{ GP_API_cuCtxSetCurrent, "cuCtxSetCurrent" },
	{ GP_API_cuCtxPushCurrent_v2, "cuCtxPushCurrent_v2" },
	{ GP_API_cuCtxPopCurrent_v2, "cuCtxPopCurrent_v2" },
	{ GP_API_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain" },
	{ GP_API_cuCtxCreate_v2, "cuCtxCreate_v2" },
	{ GP_API_cuCtxCreate_v3, "cuCtxCreate_v3" },
	{ GP_API_cuCtxCreate_v4, "cuCtxCreate_v4" },
	/* contexts made before a -p attach: the GPU of the calling thread's current one */
	{ GP_API_cuCtxGetDevice, "cuCtxGetDevice" },
	{ GP_API_cuCtxGetDevice_v2, "cuCtxGetDevice_v2" }, /* what CUDA 13's runtime calls */
	{ GP_API_cuMemHostRegister_v2, "cuMemHostRegister_v2" },
	{ GP_API_cuMemHostUnregister, "cuMemHostUnregister" },
	{ GP_API_cuMemcpy3DPeer, "cuMemcpy3DPeer" },
	{ GP_API_cuMemcpy3DPeer_ptds, "cuMemcpy3DPeer_ptds" },
	{ GP_API_cuMemcpy3DPeerAsync, "cuMemcpy3DPeerAsync" },
	{ GP_API_cuMemcpy3DPeerAsync_ptsz, "cuMemcpy3DPeerAsync_ptsz" },
};
const int gp_copy_apis_cnt = sizeof(gp_copy_apis) / sizeof(gp_copy_apis[0]);

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

const char *gp_api_name(unsigned int id)
{
	const struct gp_api_info *a = gp_api_info(id);

	if (a)
		return a->name;
	for (int i = 0; i < gp_launch_apis_cnt; i++)
		if ((unsigned int)gp_launch_apis[i].id == id)
			return gp_launch_apis[i].name;
	for (int i = 0; i < gp_copy_apis_cnt; i++)
		if ((unsigned int)gp_copy_apis[i].id == id)
			return gp_copy_apis[i].name;
	for (int i = 0; i < gp_graph_apis_cnt; i++)
		if ((unsigned int)gp_graph_apis[i].id == id)
			return gp_graph_apis[i].name;
	return "unknown";
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
