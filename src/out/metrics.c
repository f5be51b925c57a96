/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <string.h>
#include "out/metrics.h"

#define P GP_M_PROCESS
#define PE (GP_M_PROCESS | GP_M_ESTIMATE)

const struct gp_metric gp_metrics[] = {
	/* --memleak */
	{ "gpuprobe_cuda_outstanding_bytes", GP_GAUGE, P, "kind", NULL, "--memleak",
	  "Bytes allocated through the CUDA driver and not freed yet, by memory kind, of the processes running now.",
	  "`kind` is `device`, `managed`, `host_pinned`, `physical` (`cuMemCreate` handles) or `graph` (CUDA graph allocation nodes). A process's bytes "
	  "leave the sum when it exits (the driver frees them)." },
	{ "gpuprobe_cuda_outstanding_allocations", GP_GAUGE, P, "kind", NULL, "--memleak",
	  "Allocations made through the CUDA driver and not freed yet, by memory kind, of the processes running now.",
	  NULL },
	{ "gpuprobe_cuda_alloc_calls_total", GP_COUNTER, P, "", NULL, "--memleak",
	  "Successful CUDA driver allocation calls.",
	  "`cuMemAlloc_v2`, pitch, managed, async, pool, host, `cuMemCreate`; counted since gpuprobe attached." },
	{ "gpuprobe_cuda_free_calls_total", GP_COUNTER, P, "", NULL, "--memleak",
	  "Successful CUDA driver frees of allocations gpuprobe saw being made.",
	  "Frees of allocations made before gpuprobe attached are not counted." },
	{ "gpuprobe_cuda_alloc_bytes_total", GP_COUNTER, P, "", NULL, "--memleak",
	  "Bytes allocated by the calls counted in gpuprobe_cuda_alloc_calls_total.", NULL },
	{ "gpuprobe_cuda_freed_bytes_total", GP_COUNTER, P, "", NULL, "--memleak",
	  "Bytes released by the calls counted in gpuprobe_cuda_free_calls_total.", NULL },
	/* --cudatrace */
	{ "gpuprobe_cuda_kernel_launches_total", GP_COUNTER, PE, "kernel", "kernel", "--cudatrace",
	  "Kernel launch calls by kernel name (cuLaunchKernel, cuLaunchKernelEx, cooperative; failed calls too): "
	  "counted, or estimated for a process --max-overhead samples (calls seen: gpuprobe_cuda_launches_seen_total; "
	  "95 % interval: gpuprobe_cuda_launches_interval_total).",
	  "`kernel` is the demangled name, `unknown` when gpuprobe never saw the handle named. The first "
	  "`--max-kernel-series` (default 20) kernel names of a series get their own; later ones are summed "
	  "under `kernel=\"other\"`. The choice never changes while the series lives, so no count moves "
	  "between series. Under `--max-overhead` (the daemon's default, 1 %) a process whose probes "
	  "the budget samples adds its **estimate**: each kernel's calls seen times the process's "
	  "estimated ÷ seen calls (estimated through its last unseen part with windows on both sides, "
	  "so a counter lags the `_estimate` gauges by up to a second and never runs ahead of the "
	  "calls), and never less than it added before (an estimate revised down "
	  "leaves the counter where it is until the estimate passes it again), so the counter never goes "
	  "down. Every other process adds its exact count. A process first makes, all seen, the calls of "
	  "its exact allowance (the share aimed at, 35 % of the budget, of 1 s of probe time: "
	  "gpuprobe_budget_exact_allowance_calls): a short job is never sampled. "
	  "`gpuprobe_cuda_launches_seen_total` holds the calls the probes saw and "
	  "`gpuprobe_cuda_launches_interval_total` the ends of the 95 % interval, so "
	  "`sum(increase(gpuprobe_cuda_kernel_launches_total[1h]))` over a node lies between the same "
	  "sums of `bound=\"low\"` and `bound=\"high\"`, and equals the `seen` sum when nothing was sampled." },
	{ "gpuprobe_cuda_kernel_captures_total", GP_COUNTER, P, "kernel", "kernel", "--cudatrace",
	  "Kernel launch calls made on a stream capturing a CUDA graph, by kernel name: they become graph "
	  "nodes and run nothing when called.",
	  "Not in gpuprobe_cuda_kernel_launches_total; their runs are counted in "
	  "gpuprobe_cuda_graph_kernel_executions_total. Capped like the launches (`--max-kernel-series`)." },
	{ "gpuprobe_cuda_graph_kernel_executions_total", GP_COUNTER, PE, "kernel", "kernel", "--cudatrace",
	  "Kernel runs as nodes of launched CUDA graphs (each graph launch runs each of its kernel nodes once), "
	  "by kernel name.",
	  "Counted when gpuprobe followed the graph's construction (capture or the graph API); a graph "
	  "made before gpuprobe attached is counted in gpuprobe_cuda_graph_launches_total only. Capped like "
	  "the launches. Estimated for a sampled process, as the launches." },
	{ "gpuprobe_cuda_graph_launches_total", GP_COUNTER, PE, "", NULL, "--cudatrace",
	  "CUDA graph launches (cuGraphLaunch); a graph's kernels are not launch calls.",
	  "Estimated for a process --max-overhead samples, as gpuprobe_cuda_kernel_launches_total." },
	{ "gpuprobe_cuda_sync_calls_total", GP_COUNTER, PE, "", NULL, "--cudatrace",
	  "Stream, context and event synchronize calls (counted at entry).",
	  "`cuStreamSynchronize`, `cuCtxSynchronize(_v2)`, `cuEventSynchronize`. Estimated for a process "
	  "--max-overhead samples, as gpuprobe_cuda_kernel_launches_total." },
	{ "gpuprobe_cuda_launches_seen_total", GP_COUNTER, P, "", NULL, "--cudatrace",
	  "Kernel launch calls the probes saw: every one of a process counted exactly, those of the sampled windows of a process --max-overhead samples.",
	  "Never an estimate. With no process sampled it equals the sum of "
	  "gpuprobe_cuda_kernel_launches_total over `kernel`; the difference is the estimated calls "
	  "the probes did not see." },
	{ "gpuprobe_cuda_launches_interval_total", GP_COUNTER, PE, "bound", NULL, "--cudatrace",
	  "The ends of the 95 % interval of gpuprobe_cuda_kernel_launches_total summed over kernels (bound=low, bound=high): a process counted exactly adds its count to both.",
	  "A sampled process adds the ends of its interval, each never less than it added before, "
	  "so `low <= sum by kernel of the launches <= high` holds for every series and every sum of "
	  "series (the ends of a sum's interval are the sums of its processes' ends: wider than a "
	  "95 % interval of the sum, never narrower). A process whose calls cost less than a probe, "
	  "or with an unseen part longer than a period (its probes slow to go in), has no upper end (sampling.h): it adds its estimate to `high` and to "
	  "gpuprobe_cuda_launches_unbounded_total, which says by how much `high` may fall short." },
	{ "gpuprobe_cuda_launches_unbounded_total", GP_COUNTER, PE, "", NULL, "--cudatrace",
	  "Estimated kernel launch calls of sampled processes whose interval has no upper end (their calls cost less than a probe, or an unseen part outlasted a period).",
	  "Zero when every sampled process's interval is bounded. Such a process adds only its "
	  "estimate to gpuprobe_cuda_launches_interval_total{bound=\"high\"}." },
	{ "gpuprobe_cuda_sync_duration_seconds", GP_HISTOGRAM, P, "", NULL, "--cudatrace",
	  "Seconds the host was blocked in each synchronize call whose return was seen.",
	  "None without latency (`--no-latency`). `_sum` is the time blocked in synchronization: "
	  "`rate(..._sum[1m])` is the share of a second spent waiting for the GPU." },
	{ "gpuprobe_cuda_launch_duration_seconds", GP_HISTOGRAM, P, "", NULL, "--cudatrace",
	  "Seconds each kernel launch call took on the host, entry to return.",
	  "The API call's cost, not the kernel's run time. None with `--no-latency`." },
	/* --cudatrace under --max-overhead (src/core/budget.h): gauges, since an estimate may go
	 * down; each sums over the series' running processes, so a series of several processes
	 * gets their seen and estimated calls added (the share seen is seen / estimate) */
	{ "gpuprobe_sampled_processes", GP_GAUGE, P, "", NULL, "--max-overhead",
	  "Running processes whose launch and synchronize calls --max-overhead samples now: their counters above add estimates, the *_estimate gauges hold them with the calls seen.",
	  "With `--cudatrace`; the daemon's default is `--max-overhead 1`. A process is sampled from the "
	  "first period its probes were attached for a window only, until it exits. Its "
	  "`gpuprobe_cuda_kernel_launches_total`, `gpuprobe_cuda_graph_launches_total`, "
	  "`gpuprobe_cuda_graph_kernel_executions_total` and `gpuprobe_cuda_sync_calls_total` add its "
	  "estimates (never going down); captures are never sampled. The latency histograms hold the "
	  "calls seen. No series while every call is seen." },
	{ "gpuprobe_cuda_launches_estimate", GP_GAUGE, P, "bound", NULL, "--max-overhead",
	  "Kernel launch calls of the sampled running processes: seen by the probes (bound=seen), estimated (bound=estimate), and the ends of a 95 % interval (bound=low, bound=high).",
	  "Summed over the series' sampled processes: `seen / estimate` is the share of their calls "
	  "seen, and `low`, `high` are the sums of each process's 95 % bounds. No `high` sample when "
	  "some process's interval has no upper end (its calls cost less than a probe, or an unseen "
	  "part outlasted a period)." },
	{ "gpuprobe_cuda_graph_launches_estimate", GP_GAUGE, P, "bound", NULL, "--max-overhead",
	  "cuGraphLaunch calls of the sampled running processes, as gpuprobe_cuda_launches_estimate.", NULL },
	{ "gpuprobe_cuda_sync_calls_estimate", GP_GAUGE, P, "bound", NULL, "--max-overhead",
	  "Synchronize calls of the sampled running processes, as gpuprobe_cuda_launches_estimate.", NULL },
	/* --bandwidth-util */
	{ "gpuprobe_cuda_memcpy_calls_total", GP_COUNTER, P, "gpu,direction", NULL, "--bandwidth-util",
	  "Successful CUDA driver copies (cuMemcpy*) of at least --min-bytes bytes, by GPU and direction.",
	  "Every `cuMemcpy*` entry point: sync, async, 2D, 3D, peer, `_ptds`/`_ptsz`. `gpu` is the device "
	  "side's ordinal (the source's for device-to-device and peer copies), `\"\"` when unknown. "
	  "`direction` is `H2D`, `D2H`, `D2D`, `peer` or `H2H`; for unified copies decided by the allocations "
	  "gpuprobe saw made, never guessed. Zero-byte and failed copies are not counted." },
	{ "gpuprobe_cuda_memcpy_bytes_total", GP_COUNTER, P, "gpu,direction", NULL, "--bandwidth-util",
	  "Bytes of the copies counted in gpuprobe_cuda_memcpy_calls_total.", NULL },
	{ "gpuprobe_cuda_memcpy_sync_seconds_total", GP_COUNTER, P, "gpu,direction", NULL, "--bandwidth-util",
	  "Seconds spent in synchronous copy calls, entry to return.",
	  "`D2D` and peer copies return before they are done and are timed as asynchronous." },
	{ "gpuprobe_cuda_memcpy_async_upper_bound_seconds_total", GP_COUNTER, P, "gpu,direction", NULL,
	  "--bandwidth-util",
	  "Upper bound of the seconds asynchronous copies took: from the first submission of a batch to the return of the synchronize covering it.",
	  "**An upper bound**: more than the transfer when the GPU was busy with other work; copies never "
	  "synchronized add nothing." },
	{ "gpuprobe_cuda_memcpy_pageable_bytes_total", GP_COUNTER, P, "gpu,direction", NULL, "--bandwidth-util",
	  "Bytes of the counted copies whose host side is pageable (not pinned) memory.",
	  "Staged by the driver, slower than pinned (`cuMemAllocHost`, `cuMemHostRegister`) memory." },
	{ "gpuprobe_cuda_memcpy_small_calls_total", GP_COUNTER, 0, "", NULL, "--bandwidth-util",
	  "Successful copies under --min-bytes bytes, every process together (counted in BPF, in no family above).",
	  NULL },
	{ "gpuprobe_cuda_copy_pair_copies_total", GP_COUNTER, P, "src_gpu,dst_gpu", NULL, "--bandwidth-util",
	  "Copies between device memory by (source GPU, destination GPU): peer copies, and copies within a GPU where src_gpu equals dst_gpu.",
	  "Every device-to-device entry point (`cuMemcpyPeer[Async]`, `cuMemcpy[Async]`/`cuMemcpyDtoD*` between "
	  "device pointers, 3D peer copies); a GPU gpuprobe cannot tell (contexts made before it attached) is `\"\"`." },
	{ "gpuprobe_cuda_copy_pair_bytes_total", GP_COUNTER, P, "src_gpu,dst_gpu", NULL, "--bandwidth-util",
	  "Bytes of the copies counted in gpuprobe_cuda_copy_pair_copies_total.", NULL },
	{ "gpuprobe_cuda_copy_pair_completed_bytes_total", GP_COUNTER, P, "src_gpu,dst_gpu", NULL, "--bandwidth-util",
	  "Bytes of those copies completed by a synchronization that covered them (stream, context or event).", NULL },
	{ "gpuprobe_cuda_copy_pair_upper_bound_seconds_total", GP_COUNTER, P, "src_gpu,dst_gpu", NULL, "--bandwidth-util",
	  "Upper bound of the seconds the completed copies took: from the first submission of a batch to the return of the synchronization covering it.",
	  "Never the calls' own time (they return before the copy is done). "
	  "`completed_bytes / upper_bound_seconds` is a lower bound of the pair's bandwidth." },
	{ "gpuprobe_cuda_memcpy_signal_bytes_total", GP_COUNTER, P, "gpu,direction,signal", NULL, "--bandwidth-util",
	  "Bytes of asynchronous copies (and copies between device memory) by the completion signal that completed them.",
	  "`signal`: `stream`, `context`, `event` (synchronizations), `stream_query`, `event_query` (a query that "
	  "returned CUDA_SUCCESS), `event_elapsed` (cuEventElapsedTime); a series appears once its signal completed a copy." },
	{ "gpuprobe_cuda_memcpy_signal_upper_bound_seconds_total", GP_COUNTER, P, "gpu,direction,signal", NULL,
	  "--bandwidth-util",
	  "Upper bound of the seconds those copies took: from the first submission of a batch to the return of the signal that completed it.",
	  "`signal_bytes / signal_upper_bound_seconds` is a lower bound of the bandwidth, labelled by what closed the windows." },
	{ "gpuprobe_cuda_memcpy_event_bytes_total", GP_COUNTER, P, "gpu,direction", NULL, "--bandwidth-util",
	  "Bytes of copies submitted on a stream between two events whose cuEventElapsedTime the program read.",
	  "A series appears with the first such pair of events." },
	{ "gpuprobe_cuda_memcpy_event_gpu_seconds_total", GP_COUNTER, P, "gpu,direction", NULL, "--bandwidth-util",
	  "The GPU's own seconds between those events (cuEventElapsedTime's result, rounded up to the ns).",
	  "`event_bytes / event_gpu_seconds` is the bandwidth from the GPU's clock (kernels between the events count too)." },
	{ "gpuprobe_cuda_polls_total", GP_COUNTER, 0, "", NULL, "--bandwidth-util",
	  "cuStreamQuery/cuEventQuery calls that returned CUDA_ERROR_NOT_READY, every process together.",
	  "Counted in BPF and never sent: a poll completes nothing." },
	{ "gpuprobe_link_speed_bytes", GP_GAUGE, 0, "link,name,read_here", NULL, "--bandwidth-util",
	  "Bytes per second a link can carry in one direction (as node_network_speed_bytes), the bound no reported bandwidth passes.",
	  "`link` is `host` (the GPUs' PCIe links from sysfs), `peer` (NVLink by PCI device id) or `local` "
	  "(GPU memory); a link whose limit is not known (no GPU in sysfs, a part not in the parts table) has no series." },
	/* --nccl */
	{ "gpuprobe_nccl_calls_total", GP_COUNTER, P, "comm_id,rank,op,call,dtype", NULL, "--nccl",
	  "Successful NCCL collective calls by communicator (comm_id, rank), op and dtype.",
	  "`comm_id` is the communicator's id, equal on every rank (from the ncclUniqueId, or the parent "
	  "of a split); `comm_id=\"other\"` sums the communicators past `--nccl-max-comm-series`." },
	{ "gpuprobe_nccl_bytes_total", GP_COUNTER, P, "comm_id,rank,op,call,dtype", NULL, "--nccl",
	  "Bytes of those calls: the count argument times the data type's size.", NULL },
	{ "gpuprobe_nccl_api_seconds_total", GP_COUNTER, P, "comm_id,rank,op,call,dtype", NULL, "--nccl",
	  "Seconds in those calls, entry to return (the host side: NCCL returns before the GPU is done).", NULL },
	{ "gpuprobe_nccl_p2p_bytes_total", GP_COUNTER, P, "comm_id,rank,peer,direction", NULL, "--nccl",
	  "Bytes of ncclSend/ncclRecv calls by communicator, rank, peer rank and direction.",
	  "`peer=\"other\"` sums the peers past the first 64." },
	{ "gpuprobe_nccl_p2p_calls_total", GP_COUNTER, P, "comm_id,rank,peer,direction", NULL, "--nccl",
	  "ncclSend/ncclRecv calls, labelled as gpuprobe_nccl_p2p_bytes_total.", NULL },
	{ "gpuprobe_nccl_completed_calls_total", GP_COUNTER, P, "comm_id,rank,op,call", NULL, "--nccl",
	  "Calls completed by a synchronization that covered their stream.", NULL },
	{ "gpuprobe_nccl_completion_upper_bound_seconds_total", GP_COUNTER, P, "comm_id,rank,op,call", NULL, "--nccl",
	  "Upper bound of the seconds those calls took: from the first submission of a batch to the return of the synchronization covering it.",
	  NULL },
	{ "gpuprobe_nccl_completed_size_bytes_total", GP_COUNTER, P, "comm_id,rank,op,call", NULL, "--nccl",
	  "nccl-tests' size of the completed calls: over the seconds above, a lower bound of the algorithm bandwidth.",
	  "AllGather, ReduceScatter, AlltoAll, Gather, Scatter: all ranks' data, as nccl-tests counts it." },
	{ "gpuprobe_nccl_bad_calls_total", GP_COUNTER, P, "reason", NULL, "--nccl",
	  "NCCL calls on a NULL or destroyed communicator, or with a data type NCCL does not have, by reason.", NULL },
	{ "gpuprobe_nccl_failed_calls_total", GP_COUNTER, P, "", NULL, "--nccl",
	  "NCCL calls that returned an error.", NULL },
	{ "gpuprobe_nccl_groups_total", GP_COUNTER, P, "", NULL, "--nccl",
	  "Outermost ncclGroupStart/ncclGroupEnd pairs.", NULL },
	{ "gpuprobe_nccl_inflight_collectives", GP_GAUGE, P, "comm_id,rank", NULL, "--nccl",
	  "NCCL calls with data (collectives, send, recv) a running process put on a stream that no completion signal has covered yet, by communicator and rank.",
	  "A completion signal is a synchronization, a `cuStreamQuery`/`cuEventQuery` that returned `CUDA_SUCCESS`, "
	  "a `cuEventElapsedTime` over the call (as for gpuprobe_nccl_completed_calls_total). A hang is this above 0 "
	  "while gpuprobe_nccl_since_completion_seconds keeps growing. `comm_id=\"other\"` sums the communicators "
	  "past `--nccl-max-comm-series`." },
	{ "gpuprobe_nccl_since_completion_seconds", GP_GAUGE, P, "comm_id,rank", NULL, "--nccl",
	  "Seconds since a completion signal last covered a call of this communicator and rank; while calls are in flight, since the later of that and the call that found none in flight.",
	  "Written for running processes that put a call on a stream. A number that keeps growing while "
	  "gpuprobe_nccl_inflight_collectives is above 0 is a hang (or a program that stopped asking); a rank "
	  "idle in its own code is not counted as waiting on the GPU once it calls again; "
	  "`comm_id=\"other\"` holds the largest of the communicators past the cap." },
	{ "gpuprobe_nccl_entered_collectives_total", GP_COUNTER, P, "comm_id,rank", NULL, "--nccl",
	  "Collectives this rank entered (successful calls, count 0 included): the order matched across the ranks.",
	  "The n-th collective of each rank of a communicator is the same collective (NCCL requires the order); "
	  "point-to-point calls are not counted." },
	{ "gpuprobe_nccl_last_to_enter_total", GP_COUNTER, P, "comm_id,rank", NULL, "--nccl",
	  "Collectives, matched across the ranks of a communicator traced on this node, that this rank entered last (the straggler).",
	  "Matched by their order (gpuprobe_nccl_entered_collectives_total); a communicator whose ranks are all "
	  "here is matched when its last rank enters, one with ranks on other nodes when its collective leaves "
	  "the ring of the last 64 (the ranks here only)." },
	{ "gpuprobe_nccl_straggler_lag_seconds_total", GP_COUNTER, P, "comm_id,rank", NULL, "--nccl",
	  "Seconds this rank entered those collectives after the first rank did (summed over the ones it was last into).",
	  "Over gpuprobe_nccl_last_to_enter_total: how late the rank is on average when it is the one waited for." },
	{ "gpuprobe_nccl_entry_skew_seconds", GP_HISTOGRAM, 0, "comm_id", NULL, "--nccl",
	  "Per matched collective: seconds from the first rank's entry to the last's, ranks on this node (entry times of the calls, one clock).",
	  "One series per communicator matched (at most 256 on the node, 16 made by one process: the rest counted "
	  "in gpuprobe_nccl_match_dropped_total)." },
	{ "gpuprobe_nccl_entry_skew_last_seconds", GP_GAUGE, 0, "comm_id", NULL, "--nccl",
	  "The newest matched collective's entry skew: seconds from its first rank's entry to its last's.", NULL },
	{ "gpuprobe_nccl_last_straggler_rank", GP_GAUGE, 0, "comm_id", NULL, "--nccl",
	  "The rank that entered the newest matched collective last.",
	  "A value, not a label, so that a straggler moving from rank to rank makes no new series; "
	  "gpuprobe_nccl_last_to_enter_total counts per rank." },
	{ "gpuprobe_nccl_waiting_for_rank_seconds", GP_GAUGE, 0, "comm_id,rank", NULL, "--nccl",
	  "Seconds since the first rank entered the oldest collective that this rank (traced on this node) has not entered yet.",
	  "Written only while one waits: a rank that never enters (a hang) or enters late (a straggler) is named "
	  "within one scrape; the first 8 such ranks of a communicator, the rest summed under `rank=\"other\"` "
	  "(the longest wait)." },
	{ "gpuprobe_nccl_match_dropped_total", GP_COUNTER, 0, "reason", NULL, "--nccl",
	  "Collectives, or ranks of communicators, not matched across the ranks, by reason.",
	  "`evicted`: left the ring of 64 recent collectives before every rank here entered it; `late`: a rank "
	  "entered after that; `duplicate`: two entries of one rank into one collective (two processes claim the "
	  "rank); `table_full`, `share`, `too_large`, `mismatch`: a rank of a communicator (one per process and "
	  "communicator) not matched: 256 communicators on the node, 16 made by one process, more than 64 ranks, "
	  "a rank with another size for the same comm_id." },
	/* --gpu-time */
	{ "gpuprobe_gputime_kernels_total", GP_COUNTER, P, "kernel", "kernel", "--gpu-time",
	  "Kernels that ran, by name, as CUPTI's activity records report them (exact GPU times on request).",
	  "`kernel` is the (mangled) name CUPTI gives; the first 20 names of a series get their own, later ones "
	  "are summed under `kernel=\"other\"`." },
	{ "gpuprobe_gputime_kernel_seconds_total", GP_COUNTER, P, "kernel", "kernel", "--gpu-time",
	  "GPU seconds of those kernels, from their start to their end on the GPU.", NULL },
	{ "gpuprobe_gputime_copy_bytes_total", GP_COUNTER, P, "direction,src_gpu,dst_gpu", NULL, "--gpu-time",
	  "Bytes of the copies CUPTI timed, by direction (H2D, D2H, D2D, P2P...) and GPUs.",
	  "A copy between host and GPU has its GPU on both ends; `rate(bytes) / rate(seconds)` is the achieved bandwidth." },
	{ "gpuprobe_gputime_copy_seconds_total", GP_COUNTER, P, "direction,src_gpu,dst_gpu", NULL, "--gpu-time",
	  "GPU seconds of those copies, from their start to their end on the GPU.", NULL },
	{ "gpuprobe_gputime_nccl_calls_total", GP_COUNTER, P, "comm_hash,rank,op,size", NULL, "--gpu-time",
	  "NCCL collectives timed by NCCL's profiler plugin, by communicator, rank, collective and size (nccl-tests' size).",
	  NULL },
	{ "gpuprobe_gputime_nccl_seconds_total", GP_COUNTER, P, "comm_hash,rank,op,size", NULL, "--gpu-time",
	  "Seconds of those collectives: the kernel channels' GPU timers where NCCL gives them, else the host's start and stop.",
	  NULL },
	{ "gpuprobe_gputime_nccl_bus_bytes_total", GP_COUNTER, P, "comm_hash,rank,op,size", NULL, "--gpu-time",
	  "Bus bytes of those collectives (size times nccl-tests' factor: AllReduce 2(n-1)/n, AllGather, ReduceScatter, AlltoAll (n-1)/n, others 1).",
	  "`rate(bus_bytes) / rate(seconds)` is the bus bandwidth as nccl-tests prints it." },
	/* --ioctl */
	{ "gpuprobe_nvidia_ioctl_calls_total", GP_COUNTER, P, "node,cmd,ctrl", "cmd,ctrl", "--ioctl",
	  "ioctls on nvidia device nodes by node, command (decoded name or hex) and RM control command (NV_ESC_RM_CONTROL only).",
	  "`node` is the device node (`/dev/nvidiactl`, `/dev/nvidia0`, `/dev/nvidia-uvm`, "
	  "`/dev/char/MAJOR:MINOR` for `--ioctl-dev` majors); `cmd` the request's decoded name "
	  "(`NV_ESC_RM_CONTROL`, `UVM_MAP_EXTERNAL_ALLOCATION`, ...) or its number in hex; `ctrl` the RM "
	  "control command of an `NV_ESC_RM_CONTROL`, else `\"\"`. The first `--max-ioctl-series` (default "
	  "20) (`cmd`, `ctrl`) pairs of a series get their own; later ones are summed under "
	  "`cmd=\"other\", ctrl=\"\"`. Kprobes on the drivers' ioctl entry points where the kernel has them, "
	  "else the ioctl syscall tracepoints filtered by the file's device major." },
	{ "gpuprobe_nvidia_ioctl_errors_total", GP_COUNTER, P, "node,cmd,ctrl", "cmd,ctrl", "--ioctl",
	  "Those ioctls that returned an error.", NULL },
	{ "gpuprobe_nvidia_ioctl_seconds_total", GP_COUNTER, P, "node,cmd,ctrl", "cmd,ctrl", "--ioctl",
	  "Seconds spent in those ioctls, entry to return.", NULL },
	/* NVML (src/core/nvml.h, src/out/nvml_report.c): the daemon's default where libnvidia-ml.so.1 loads */
	{ "gpuprobe_nvml_state", GP_GAUGE, 0, "state", NULL, "",
	  "1 for NVML's state: loaded, starting, off (--no-nvml), no_library, no_symbols, init_failed, no_gpu or static_build.",
	  "The daemon reads NVML unless `--no-nvml`; where the library is missing or fails, one log line says why and "
	  "every other family is as before. `static_build`: a statically linked gpuprobe (`make bundle`'s `gpuprobe`) "
	  "does not load the driver's library (static glibc cannot host it); the dynamically linked build does. Only `loaded` brings the `gpuprobe_gpu_*` and `gpuprobe_process_gpu_*` families." },
	{ "gpuprobe_nvml_reads_total", GP_COUNTER, 0, "", NULL, "--nvml",
	  "Rounds of NVML reads made by its thread (every --nvml-interval, default 1 s).", NULL },
	{ "gpuprobe_nvml_read_seconds_total", GP_COUNTER, 0, "", NULL, "--nvml",
	  "Seconds NVML's thread spent in those reads (off the probes' path): its cost.", NULL },
	{ "gpuprobe_nvml_errors_total", GP_COUNTER, 0, "function", NULL, "--nvml",
	  "NVML calls that failed, by function (a function the library lacks counts once); the figure it gives is left out.",
	  "The first failure of each function is logged with NVML's error. `NOT_SUPPORTED` from `nvmlDeviceGetMigMode` "
	  "(a GPU without MIG) is no failure." },
	{ "gpuprobe_nvml_functions_missing", GP_GAUGE, 0, "function", NULL, "--nvml",
	  "1 for each NVML function the loaded library lacks (an older driver): its figures are absent.", NULL },
	{ "gpuprobe_gpu_info", GP_GAUGE, 0, "gpu,uuid,name,mig", NULL, "--nvml",
	  "1 per GPU NVML lists: its index, UUID, name and whether MIG mode is on.",
	  "`gpu` is NVML's index (as `nvidia-smi`'s), `uuid` the GPU's UUID: every `gpuprobe_gpu_*` and "
	  "`gpuprobe_process_gpu_*` family carries both, for joins with dcgm-exporter's `gpu`/`UUID`." },
	{ "gpuprobe_gpu_utilization_ratio", GP_GAUGE, 0, "gpu,uuid", NULL, "--nvml",
	  "Share of the last sample period during which one or more kernels ran on the GPU (NVML's utilization.gpu, 0-1).", NULL },
	{ "gpuprobe_gpu_memory_utilization_ratio", GP_GAUGE, 0, "gpu,uuid", NULL, "--nvml",
	  "Share of the last sample period during which device memory was read or written (NVML's utilization.memory, 0-1).", NULL },
	{ "gpuprobe_gpu_memory_used_bytes", GP_GAUGE, 0, "gpu,uuid", NULL, "--nvml",
	  "Device memory in use, as nvidia-smi shows it (nvmlDeviceGetMemoryInfo_v2's used: allocations and contexts, not the driver's reserve; an old driver without _v2: v1's used, the reserve in it).", NULL },
	{ "gpuprobe_gpu_memory_total_bytes", GP_GAUGE, 0, "gpu,uuid", NULL, "--nvml",
	  "Device memory installed, as NVML reports it.", NULL },
	{ "gpuprobe_gpu_power_watts", GP_GAUGE, 0, "gpu,uuid", NULL, "--nvml",
	  "Power drawn by the GPU and its memory now (nvmlDeviceGetPowerUsage).", NULL },
	{ "gpuprobe_gpu_energy_joules_total", GP_COUNTER, 0, "gpu,uuid", NULL, "--nvml",
	  "Energy the GPU used since the driver was loaded (nvmlDeviceGetTotalEnergyConsumption).", NULL },
	{ "gpuprobe_gpu_temperature_celsius", GP_GAUGE, 0, "gpu,uuid", NULL, "--nvml",
	  "GPU die temperature.", NULL },
	{ "gpuprobe_gpu_clock_hertz", GP_GAUGE, 0, "gpu,uuid,clock", NULL, "--nvml",
	  "Current clock frequencies: clock=sm (streaming multiprocessors) and clock=memory.", NULL },
	{ "gpuprobe_gpu_clocks_throttled", GP_GAUGE, 0, "gpu,uuid,reason", NULL, "--nvml",
	  "1 for each reason that holds the clocks down now (nvmlDeviceGetCurrentClocksThrottleReasons), 0 for the others.",
	  "`reason`: `gpu_idle`, `applications_clocks_setting`, `sw_power_cap`, `hw_slowdown`, `sync_boost`, "
	  "`sw_thermal_slowdown`, `hw_thermal_slowdown`, `hw_power_brake_slowdown`, `display_clock_setting`." },
	{ "gpuprobe_gpu_pcie_throughput_bytes", GP_GAUGE, 0, "gpu,uuid,direction", NULL, "--nvml",
	  "PCIe throughput in bytes per second over NVML's last 20 ms window: direction=tx (from the GPU) and rx (to the GPU).",
	  "A rate, as dcgm-exporter's `DCGM_FI_PROF_PCIE_TX_BYTES`: NVML gives KB/s, written here times 1024." },
	{ "gpuprobe_gpu_ecc_errors_total", GP_COUNTER, 0, "gpu,uuid,type", NULL, "--nvml",
	  "ECC errors since the driver loaded (nvmlDeviceGetTotalEccErrors, volatile), `type` corrected or uncorrected. "
	  "Absent on a GPU without ECC (NOT_SUPPORTED is no error and no 0).", NULL },
	{ "gpuprobe_gpu_ecc_errors_lifetime", GP_GAUGE, 0, "gpu,uuid,type", NULL, "--nvml",
	  "ECC errors over the GPU's lifetime (nvmlDeviceGetTotalEccErrors, aggregate), `type` corrected or uncorrected.", NULL },
	{ "gpuprobe_gpu_retired_pages", GP_GAUGE, 0, "gpu,uuid,cause", NULL, "--nvml",
	  "Memory pages retired (nvmlDeviceGetRetiredPages), `cause` multiple_single_bit or double_bit. GPUs before Ampere; "
	  "later ones remap rows instead (absent there).", NULL },
	{ "gpuprobe_gpu_remapped_rows", GP_GAUGE, 0, "gpu,uuid,type", NULL, "--nvml",
	  "Memory rows remapped (nvmlDeviceGetRemappedRows), `type` corrected or uncorrected. Ampere and later.", NULL },
	{ "gpuprobe_gpu_row_remap_pending", GP_GAUGE, 0, "gpu,uuid", NULL, "--nvml",
	  "1 when a row remap waits for the GPU's reset.", NULL },
	{ "gpuprobe_gpu_row_remap_failed", GP_GAUGE, 0, "gpu,uuid", NULL, "--nvml",
	  "1 when a row remap failed (the GPU should be serviced).", NULL },
	{ "gpuprobe_gpu_nvlink_bytes_total", GP_COUNTER, 0, "gpu,uuid,direction", NULL, "--nvml",
	  "NVLink data (payload, no protocol overhead) since the driver loaded, every link summed "
	  "(nvmlDeviceGetFieldValues, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, scope UINT_MAX; KiB to bytes). "
	  "Absent on a GPU without NVLink.", NULL },
	{ "gpuprobe_gpu_mig_memory_used_bytes", GP_GAUGE, 0, "gpu,uuid,gi,ci,mig_uuid", NULL, "--nvml",
	  "In MIG mode, each MIG device's memory in use (nvmlDeviceGetMigDeviceHandleByIndex, then "
	  "nvmlDeviceGetMemoryInfo_v2 on its handle); `gi`, `ci` its GPU and compute instance.", NULL },
	{ "gpuprobe_gpu_mig_memory_total_bytes", GP_GAUGE, 0, "gpu,uuid,gi,ci,mig_uuid", NULL, "--nvml",
	  "In MIG mode, each MIG device's memory.", NULL },
	{ "gpuprobe_gpu_xid_errors_total", GP_COUNTER, 0, "gpu,uuid,xid", NULL, "--nvml",
	  "XID errors (critical errors NVML reports as events, nvmlEventTypeXidCriticalError) since the daemon started, by XID code.",
	  "Each one is also a log line with the GPU and the PIDs on it then. At most 32 codes per GPU; later ones "
	  "go under `xid=\"other\"`. No sample before the first error." },
	{ "gpuprobe_gpu_xid_last_timestamp_seconds", GP_GAUGE, 0, "gpu,uuid,xid", NULL, "--nvml",
	  "When the last XID error of that code arrived on the GPU (Unix time).", NULL },
	{ "gpuprobe_process_gpu_xid_last_timestamp_seconds", GP_GAUGE, P, "gpu,uuid,xid", NULL, "--nvml",
	  "When the last XID error of that code arrived on a GPU the process was on (NVML's process list of that GPU "
	  "at its last read), with the process's labels (pid, comm, cgroup, pod): which jobs an XID hit. From the last 64 "
	  "XID events kept; a process that has exited has none.", NULL },
	{ "gpuprobe_gpu_process_utilization_available", GP_GAUGE, 0, "gpu,uuid,reason", NULL, "--nvml",
	  "1 where NVML gives per-process utilization on the GPU; 0 with a reason where it does not (MIG mode, not supported).",
	  "Where it is 0, `gpuprobe_process_gpu_sm_utilization_ratio` and `..._memory_utilization_ratio` have no "
	  "sample for that GPU: never a 0 that was not measured." },
	{ "gpuprobe_process_gpu_sm_utilization_ratio", GP_GAUGE, P, "gpu,uuid", NULL, "--nvml",
	  "Share of the last NVML read's interval during which the processes' kernels ran on the GPU's SMs (NVML's per-process samples since the read before, weighted by time, 0-1), summed over the series' processes.",
	  "From `nvmlDeviceGetProcessUtilization`: each sample weighs the time since the process's sample before it. "
	  "A process the driver lists with no sample in the interval was idle: 0. The process labels are the "
	  "other families' (comm from `/proc/PID/comm`, cgroup and pod), so it joins with the launch and copy series." },
	{ "gpuprobe_process_gpu_memory_utilization_ratio", GP_GAUGE, P, "gpu,uuid", NULL, "--nvml",
	  "Share of the interval during which the processes read or wrote device memory (NVML's per-process memUtil), as the SM ratio.", NULL },
	{ "gpuprobe_process_gpu_mig_instance", GP_GAUGE, P, "gpu,uuid,gi,ci", NULL, "--nvml",
	  "1 for the MIG instance a process runs in (the process list's gpuInstanceId, computeInstanceId) on a GPU in MIG "
	  "mode; its utilization is not given there (gpuprobe_gpu_process_utilization_available is 0, never a 0 figure).", NULL },
	{ "gpuprobe_process_gpu_memory_bytes", GP_GAUGE, P, "gpu,uuid", NULL, "--nvml",
	  "GPU memory the driver accounts to the running processes (nvmlDeviceGetComputeRunningProcesses_v3's usedGpuMemory).",
	  "Beside `gpuprobe_cuda_outstanding_bytes{kind=\"device\"}`: the difference is what no allocation call gpuprobe saw "
	  "explains (the CUDA context, allocations made before gpuprobe attached)." },
	/* every mode: the run's own (src/core/run.c) */
	{ "gpuprobe_probe_hits_total", GP_COUNTER, P, "", NULL, "",
	  "Uprobe hits gpuprobe's probes took in the processes (entries and returns of the probed driver calls).",
	  "One definition with the CLI's overhead line: entry and return of each successful allocation, "
	  "free and mapping (whenever the allocation probes are loaded: `--memleak` or `--bandwidth-util`), "
	  "of each counted copy (`--bandwidth-util`), and each launch, graph launch and synchronize "
	  "(`--cudatrace`; two hits each with latency). ioctls are syscalls, not uprobe hits." },
	{ "gpuprobe_probe_seconds_total", GP_COUNTER, P, "", NULL, "",
	  "ESTIMATE of the seconds the processes spent in gpuprobe's probes: gpuprobe_probe_hits_total times gpuprobe_probe_hit_cost_seconds, not a measurement.",
	  "**An estimate**: `rate()` of it is the share of a CPU the probes cost the traced processes." },
	{ "gpuprobe_probe_hit_cost_seconds", GP_GAUGE, 0, "", NULL, "",
	  "Cost of one probe hit in seconds: calibrated at start-up on this node (a uprobe on a function of gpuprobe, timed with and without, each call after a 32 MiB memory sweep: a hit in a program that works between calls), or --probe-cost.",
	  NULL },
	{ "gpuprobe_events_dropped_total", GP_COUNTER, 0, "mode,reason", NULL, "",
	  "Events or calls gpuprobe could not account for, by mode and reason (see docs/metrics.md).",
	  "Non-zero means the numbers above are low; the reasons are listed below." },
	/* --max-overhead: the budget's own (src/out/budget_report.c) */
	{ "gpuprobe_budget_max_overhead_ratio", GP_GAUGE, 0, "", NULL, "--max-overhead",
	  "The budget: the share of a process's time gpuprobe's launch and synchronize probes may take (0.01 = 1 %).",
	  "The budget asked for, in force or not (gpuprobe_budget_in_force). Absent without a budget "
	  "(`--max-overhead 100`, or a CLI run without the option)." },
	{ "gpuprobe_budget_in_force", GP_GAUGE, 0, "mechanism,reason", NULL, "--max-overhead",
	  "1 when the budget samples the launch and synchronize probes, 0 when this kernel cannot and every call is counted at full cost; `mechanism` says how it takes the probes off.",
	  "`mechanism=\"uprobe_events\"`: tracefs uprobe events armed and disarmed per window (wherever "
	  "tracefs uprobe events can be used: they disarm in well under a millisecond, where a uprobe_multi "
	  "link takes 30-120 ms to close with its breakpoints still in, and they arm one process alone); "
	  "`\"uprobe_multi\"`: links made and closed per window (Linux 6.6 or later, where tracefs uprobe "
	  "events cannot be used); "
	  "`\"none\"` (value 0) with `reason`: `no_tracefs` (not mounted, and it cannot mount it), "
	  "`no_uprobe_events` (a kernel without CONFIG_UPROBE_EVENTS), `uprobe_events_permission` "
	  "(tracefs not readable or uprobe_events not writable: root, or CAP_DAC_OVERRIDE), "
	  "`uprobe_events_off` (GPUPROBE_NO_UPROBE_EVENTS). The daemon says the same in one line at "
	  "start; an explicit `--max-overhead` is refused there." },
	{ "gpuprobe_budget_attached_ratio", GP_GAUGE, 0, "", NULL, "--max-overhead",
	  "The share of time the sampled probes (launches, syncs) are attached now: 1 when every call is seen.", NULL },
	{ "gpuprobe_budget_over", GP_GAUGE, 0, "", NULL, "--max-overhead",
	  "1 when a process's time in the probes by the budget's own estimate, beyond its exact allowance, passed the budget (a process running, or ended and not yet folded into the totals), when a process passes it even with the sampled probes attached for the least share of time, or when the probes never sampled (allocations, copies: priced) pass it alone.",
	  NULL },
	{ "gpuprobe_budget_floor_processes", GP_GAUGE, 0, "", NULL, "--max-overhead",
	  "Processes (running, or ended and not yet folded into the totals) over the budget because it cannot be held for them: the least it can sample (a 2-ms window of each 500-ms sampled period, the probe hits while the probes go in and out, the probes never sampled) costs them more than the budget at the probe hit's price here. The budget holds them at that floor and says so once per process (a warning naming the PID, the hit's price and the floor).",
	  "Seen where a probe hit is dear: on 6.1 under QEMU's TCG a hit costs 15-60 us, and a 1 % budget "
	  "cannot be held; natively a hit costs 1-5 us and this is 0." },
	{ "gpuprobe_budget_floor_ratio", GP_GAUGE, 0, "", NULL, "--max-overhead",
	  "The highest floor of those processes (gpuprobe_budget_floor_processes): the share of its time in the probes the budget holds it at, above the budget; 0 when every process can be held under it.",
	  NULL },
	{ "gpuprobe_budget_sampled_periods_total", GP_COUNTER, 0, "", NULL, "--max-overhead",
	  "Periods (500 ms, up to 1 s) in which the sampled probes were attached for a window only.", NULL },
	{ "gpuprobe_budget_windows_cut_total", GP_COUNTER, 0, "", NULL, "--max-overhead",
	  "Windows ended before their planned share because a process had already taken twice the probe hits its budget allows for the whole period (its call rate at least doubled).",
	  NULL },
	{ "gpuprobe_processes_unseen_calls_total", GP_COUNTER, 0, "", NULL, "",
	  "Processes whose libcuda gpuprobe probed only after they had mapped it (found by the linker's hook, a rescan, or a -p attach): their CUDA calls before the probes were not seen.",
	  "The CLI's command is held until its libcuda is probed (its own library folders before it starts, a dlopen of a new libcuda at the linker's hook), so it adds none." },
	{ "gpuprobe_budget_exact_allowance_calls", GP_GAUGE, 0, "", NULL, "--max-overhead",
	  "The launch and synchronize calls a process makes, every one seen, before its rate may make the budget sample: the calls one window of the longest period can price (35 % of the budget over 1 s of probe time, at the price of a call), and never fewer than 256 (fewer cannot be estimated: a window needs 32 hits).",
	  "A job that makes fewer is counted exactly however fast it calls: while another process is "
	  "sampled (the shared probes off), a process new to the budget has its probes armed for it alone "
	  "from its first driver call (cuInit) until it has made these calls "
	  "(gpuprobe_budget_exact_processes_total; those that cannot be: gpuprobe_budget_unarmed_processes_total)." },
	{ "gpuprobe_budget_exact_processes_total", GP_COUNTER, 0, "", NULL, "--max-overhead",
	  "Processes new to the budget whose launch and synchronize probes were armed for them alone (every call counted) while the shared ones were off, until they made their exact allowance of calls.",
	  NULL },
	{ "gpuprobe_budget_unarmed_processes_total", GP_COUNTER, 0, "reason", NULL, "--max-overhead",
	  "Processes new to the budget that could not have their probes armed for them alone: their calls were sampled with the others' (a short one may go unseen whole).",
	  "`reason`: `cap` (32 armed at once, or 64 arms in a second), `user_cap` (their user holds 8 of "
	  "the 32), `error` (arming failed), `mechanism` (uprobe_multi links, where tracefs uprobe events "
	  "cannot be used: they cannot arm one process alone), `late` (armed only after its first context "
	  "was made, outside a window: its calls in between, if any, were unseen, and its counts are an "
	  "estimate; making a context on a GPU takes far longer than the arming)." },
	{ "gpuprobe_tracked_processes", GP_GAUGE, 0, "", NULL, "",
	  "Processes gpuprobe holds records of now (running, and exited ones not yet folded into their series).",
	  NULL },
	/* the daemon's own (src/cli/daemon.c) */
	{ "gpuprobe_build_info", GP_GAUGE, 0, "version,libbpf,modes", NULL, "",
	  "Always 1: the gpuprobe version, the libbpf it runs with and the modes enabled, as labels.", NULL },
	{ "gpuprobe_libcuda_files", GP_GAUGE, 0, "", NULL, "",
	  "Distinct libcuda files (device+inode) gpuprobe has probes on.", NULL },
	{ "gpuprobe_library_slots_used", GP_GAUGE, 0, "", NULL, "",
	  "libcuda files (device+inode, probed or not) holding one of the daemon's 32 library slots.",
	  "A file root does not own (or that others may write) holds a slot only while its owner holds fewer "
	  "than 4 and such files fewer than 16; it gives the slot and its probes back two rescans after "
	  "no process maps it. Root's files keep theirs unless every slot is taken (docs/security.md)." },
	{ "gpuprobe_library_slots_refused_total", GP_COUNTER, 0, "reason", NULL, "",
	  "libcuda files not probed because they were refused a library slot, by reason.",
	  "`owner_share`: the file's owner held 4 slots; `users_share`: files root does not own held 16; "
	  "`table_full`: all 32 were taken. Each file is counted once until a slot is freed; the first "
	  "refusal of each owner is logged." },
	{ "gpuprobe_library_slots_freed_total", GP_COUNTER, 0, "", NULL, "",
	  "Library slots given back, with their probes, because no process mapped their file any more.", NULL },
	{ "gpuprobe_probes_attached", GP_GAUGE, 0, "", NULL, "",
	  "Probes attached (one per function and direction; --ioctl adds its 2 tracepoints or 4 kprobes).", NULL },
	{ "gpuprobe_series", GP_GAUGE, 0, "", NULL, "",
	  "Series of the per-process families on this endpoint.",
	  "Bounded by the workload's shape (comm, cgroup, pod, kernel, GPU, direction), not by how many "
	  "processes came and went; with `--per-process-series`, by `--max-process-series` too; and by "
	  "`--max-label-sets` (gpuprobe_series_label_sets)." },
	{ "gpuprobe_series_label_sets", GP_GAUGE, 0, "", NULL, "",
	  "Process label sets (comm and the attribution labels: cgroup, pod...) with series of their own now.",
	  "At most `--max-label-sets` (default 500), at most `--max-label-sets-per-cgroup` (default 100) of one "
	  "cgroup; a set nothing counted into for `--retention` frees its place." },
	{ "gpuprobe_series_overflow_total", GP_COUNTER, 0, "reason", NULL, "",
	  "Processes summed under comm=\"other\" because the label sets' cap was reached (once a process).",
	  "`reason=\"cgroup\"`: the process's cgroup held its share (`--max-label-sets-per-cgroup`), so its series "
	  "are comm=\"other\" of that cgroup; `reason=\"total\"`: the whole cap (`--max-label-sets`) was reached, "
	  "so they are comm=\"other\" without attribution labels. No count is lost: the overflow series hold it. "
	  "The first hit of each is logged once." },
	{ "gpuprobe_cgroups_read_after_exit_total", GP_COUNTER, 0, "result", NULL, "",
	  "Processes gone before the daemon read their cgroup from /proc (a worker that lived less than the daemon's "
	  "delay behind its buffers, or exited and not reaped: its v1 lines read \"/\"), labelled from the cgroups "
	  "they ended in.",
	  "`result=\"found\"`: the cgroups the process ended in (v2's and its memory controller's), kept by the kernel "
	  "side at its exit, gave its labels; `result=\"not_found\"`: they could not (the cgroup was removed too, its "
	  "hierarchy is not mounted where the daemon runs, or the process's exit entry was evicted), so its series have "
	  "no cgroup or pod labels. Looked up once per process while the daemon keeps it." },
	{ "gpuprobe_scrapes_total", GP_COUNTER, 0, "", NULL, "",
	  "Requests for /metrics answered.", NULL },
	{ "gpuprobe_scrape_duration_seconds", GP_HISTOGRAM, 0, "", NULL, "",
	  "Seconds the daemon took to build each /metrics answer (snapshots of every mode, folding, writing).",
	  NULL },
	{ "gpuprobe_http_connections_closed_total", GP_COUNTER, 0, "", NULL, "",
	  "Connections the daemon closed because their request did not arrive in time, or to keep room for new clients.",
	  NULL },
	{ "gpuprobe_http_auth_failures_total", GP_COUNTER, 0, "", NULL, "--web-config",
	  "Requests refused with 401 (basic_auth_users of --web-config).", NULL },
	{ "gpuprobe_http_auth_busy_total", GP_COUNTER, 0, "", NULL, "--web-config",
	  "Requests answered 429 at once because two password checks (bcrypt) were already running or waiting.",
	  "A password accepted before is a constant-time compare and never waits; others are checked one at a "
	  "time by a thread of their own, so a flood of wrong passwords is refused here rather than slowing "
	  "/metrics, /healthz or the ring buffer's reader (docs/security.md)." },
	{ "gpuprobe_rescans_total", GP_COUNTER, 0, "", NULL, "",
	  "Rescans of /proc/*/maps for new libcuda files (--rescan-interval).", NULL },
	{ "gpuprobe_rescan_seconds_total", GP_COUNTER, 0, "", NULL, "",
	  "Seconds spent in those rescans.", NULL },
	{ "process_cpu_seconds_total", GP_COUNTER, 0, "", NULL, "",
	  "User and system CPU time the daemon spent, in seconds.",
	  "The name every Prometheus client library uses for a process's own CPU." },
	{ "process_resident_memory_bytes", GP_GAUGE, 0, "", NULL, "",
	  "The daemon's resident memory in bytes (its BPF maps are kernel memory, not counted here).", NULL },
	{ "process_open_fds", GP_GAUGE, 0, "", NULL, "", "File descriptors the daemon has open.", NULL },
	{ "process_start_time_seconds", GP_GAUGE, 0, "", NULL, "",
	  "When the daemon started, in seconds since the Unix epoch.", NULL },
	{ .name = NULL },
};

int gp_metric__find(const char *name)
{
	for (int i = 0; name && gp_metrics[i].name; i++)
		if (!strcmp(gp_metrics[i].name, name))
			return i;
	return -1;
}

const char *gp_metric__type_name(enum gp_metric_type t)
{
	return t == GP_COUNTER ? "counter" : t == GP_GAUGE ? "gauge" : "histogram";
}

/* "a,b" -> "`a`, `b`" */
static void code_list(FILE *f, const char *list)
{
	const char *s = list;

	while (*s) {
		size_t n = strcspn(s, ",");

		fprintf(f, "%s`%.*s`", s == list ? "" : ", ", (int)n, s);
		s += n + (s[n] == ',');
	}
}

void gp_metrics__doc(FILE *f)
{
	fputs("| name | type | labels | with | meaning |\n|---|---|---|---|---|\n", f);
	for (const struct gp_metric *m = gp_metrics; m->name; m++) {
		fprintf(f, "| `%s` | %s | ", m->name, gp_metric__type_name(m->type));
		if (m->flags & GP_M_PROCESS)
			fputs("process labels", f);
		if ((m->flags & GP_M_PROCESS) && m->labels[0])
			fputs(", ", f);
		code_list(f, m->labels);
		if (!(m->flags & GP_M_PROCESS) && !m->labels[0])
			fputs("—", f);
		if (m->with[0])
			fprintf(f, " | `%s` | %s", m->with, m->help);
		else
			fprintf(f, " | always | %s", m->help);
		if (m->doc)
			fprintf(f, " %s", m->doc);
		fputs(" |\n", f);
	}
}
