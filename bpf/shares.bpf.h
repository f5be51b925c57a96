/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fair shares of an in-flight table (issue 30): the entry->return table is one map that
 * every process on the node fills, so one process with 11,000 threads blocked in a call
 * took every slot and every other user's calls went unseen. Each call in flight holds one
 * place of its process's share and one of its user's (the kernel's uid, so a user
 * namespace's root is still its owner); a call over either share is not stashed, and is
 * counted as a drop of its own reason, so that one tenant's storm costs only its own
 * calls. Include after common.bpf.h; the loader sets the shares between open and load
 * (0: no limit).
 *
 * Counters are signed: a race between a process's exit deleting its counter and one of its
 * threads still in flight can only leave a counter low (more room, never less).
 */
#ifndef GP_SHARES_BPF_H
#define GP_SHARES_BPF_H

const volatile __u32 gp_share_proc = 0; /* in-flight calls one process may hold */
const volatile __u32 gp_share_user = 0; /* in-flight calls one user's processes may hold */

#define GP_SHARE_PROC (1ULL << 32)
#define GP_SHARE_USER (2ULL << 32)
#define GP_TOOK_PROC 1U
#define GP_TOOK_USER 2U

/* Calls in flight by process (GP_SHARE_PROC | tgid) and by user (GP_SHARE_USER | uid). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* --max-procs + users, set by the loader */
	__type(key, __u64);
	__type(value, __s64);
} gp_shares SEC(".maps");

/* One more in flight on key's counter, unless it holds limit already: 1 taken, 0 over the
 * share, -1 no counter (the table of counters full: nothing taken, nothing refused). */
static __always_inline int gp_share_take1(__u64 key, __u32 limit)
{
	__s64 zero = 0, *n = gp_lookup_or_init(&gp_shares, &key, &zero);

	if (!n)
		return -1;
	if (__sync_fetch_and_add(n, 1) >= (__s64)limit) {
		__sync_fetch_and_add(n, -1);
		return 0;
	}
	return 1;
}

static __always_inline void gp_share_put1(__u64 key)
{
	__s64 *n = bpf_map_lookup_elem(&gp_shares, &key);

	if (n)
		__sync_fetch_and_add(n, -1);
}

/* Takes a place for a call of tgid by uid. Returns the places taken (GP_TOOK_*, to give
 * back with gp_share_put), or -1 when the process or the user holds its share: the call
 * is not to be stashed. */
static __always_inline int gp_share_take(__u32 tgid, __u32 uid)
{
	int took = 0, r;

	if (gp_share_proc) {
		r = gp_share_take1(GP_SHARE_PROC | tgid, gp_share_proc);
		if (!r)
			return -1;
		if (r > 0)
			took |= GP_TOOK_PROC;
	}
	if (gp_share_user) {
		r = gp_share_take1(GP_SHARE_USER | uid, gp_share_user);
		if (!r) {
			if (took & GP_TOOK_PROC)
				gp_share_put1(GP_SHARE_PROC | tgid);
			return -1;
		}
		if (r > 0)
			took |= GP_TOOK_USER;
	}
	return took;
}

static __always_inline void gp_share_put(__u32 tgid, __u32 uid, __u32 took)
{
	if (took & GP_TOOK_PROC)
		gp_share_put1(GP_SHARE_PROC | tgid);
	if (took & GP_TOOK_USER)
		gp_share_put1(GP_SHARE_USER | uid);
}

/* The process is gone: its counter goes (its user's stays, as small as the users). */
static __always_inline void gp_share_forget(__u32 tgid)
{
	__u64 key = GP_SHARE_PROC | tgid;

	bpf_map_delete_elem(&gp_shares, &key);
}

#endif /* GP_SHARES_BPF_H */
