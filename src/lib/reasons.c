/* SPDX-License-Identifier: BSD-3-Clause */
#include "lib/reasons.h"

static const struct {
	const char *name;
	bool loses;
} reasons[GP_R__COUNT] = {
	[GP_R_RINGBUF_FULL] = { "ringbuf_full", true },
	[GP_R_PENDING_TABLE_FULL] = { "pending_table_full", true },
	/* a return without its entry is a call whose entry was dropped (counted already) or
	 * one in flight when gpuprobe attached: shown, not added */
	[GP_R_RETURN_WITHOUT_ENTRY] = { "return_without_entry", false },
	[GP_R_STACK_UNREADABLE] = { "stack_unreadable", false },
	[GP_R_PROCESS_TABLE_FULL] = { "process_table_full", false },
	[GP_R_ALLOCATION_TABLE_FULL] = { "allocation_table_full", true },
	[GP_R_LAUNCH_TABLE_FULL] = { "launch_table_full", true },
	[GP_R_ALLOCATION_RECORDS_LOST] = { "allocation_records_lost", false },
	[GP_R_COUNTER_TABLE_FULL] = { "counter_table_full", true },
	[GP_R_PROCESS_NAME_TABLE_FULL] = { "process_name_table_full", false },
	[GP_R_CONTROL_PARAMS_UNREADABLE] = { "control_params_unreadable", false },
	[GP_R_NESTED_TOO_DEEP] = { "nested_too_deep", true },
	[GP_R_MALFORMED_RECORD] = { "malformed_records", true },
	[GP_R_PROCESS_RECORDS_LOST] = { "process_records_lost", false },
	/* every call of a child not followed is lost */
	[GP_R_FOLLOWED_TABLE_FULL] = { "followed_table_full", true },
	/* a graph launch still counts; only its kernels' executions may be missed */
	[GP_R_GRAPH_TABLE_FULL] = { "graph_table_full", false },
	/* every call on a communicator not kept is lost */
	[GP_R_NCCL_COMM_TABLE_FULL] = { "nccl_comm_table_full", true },
	/* the caller's process or user had its share of the in-flight table: that call is
	 * not seen, the other tenants' calls are */
	[GP_R_PENDING_SHARE_FULL] = { "pending_share_full", true },
	/* a CPython code object's copy lost (ring full): sent again at its next sight; a
	 * stack of it read after its process exited shows the frame unnamed (python_unnamed) */
	[GP_R_PYTHON_CODE_LOST] = { "python_code_lost", false },
	/* --gpu-time: each a record (or datagram) of exact GPU time not counted */
	[GP_R_GPUTIME_REFUSED] = { "gputime_refused", true },
	[GP_R_GPUTIME_FLOOD] = { "gputime_flood", true },
	[GP_R_GPUTIME_CAPS] = { "gputime_caps", true },
	[GP_R_GPUTIME_NOT_SENT] = { "gputime_not_sent", true },
	[GP_R_GPUTIME_SOURCE_LOST] = { "gputime_source_lost", true },
};

const char *gp_reason_name(int reason)
{
	return reason >= 0 && reason < GP_R__COUNT ? reasons[reason].name : "unknown";
}

bool gp_reason_loses(int reason)
{
	return reason >= 0 && reason < GP_R__COUNT && reasons[reason].loses;
}
