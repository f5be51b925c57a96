/* SPDX-License-Identifier: BSD-3-Clause */
/* The floor: BPF programs that do nothing, attached as a uprobe and a uretprobe. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int empty_enter(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int empty_leave(void *ctx)
{
	return 0;
}
