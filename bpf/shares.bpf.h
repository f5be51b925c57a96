/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fair shares of the in-flight tables (issue 30): an entry->return table (or a per-thread
 * one, held while the thread lives) is one map that every process on the node fills, so
 * one process with 11,000 threads blocked in a call took every place and every other
 * user's calls went unseen. Every such table of every object takes its places here:
 *
 *  - while fewer than gp_share_free places of the table are taken, a call takes one
 *    without counting against any share (the common case: two atomic adds on a counter
 *    of this object, one at the entry, one when the entry goes);
 *  - past that, each place counts against its process's share (gp_share_proc) and its
 *    user's (gp_share_user: the kernel's uid, so a user namespace's root is still its
 *    owner); a call over either share is not stashed, and is counted as a drop of its own
 *    reason (pending_share_full), so that one tenant's storm costs only its own calls.
 *
 * One user holds at most gp_share_free + gp_share_user places, one process at most
 * gp_share_free + gp_share_proc: the loader sizes them so that what one tenant can take
 * leaves the others room (src/core/shares.h). The shares were first taken at every call,
 * two counters looked up at the entry and two at the return: make bench put --memleak
 * --no-stacks from 1.15x to 1.52x bpftrace's added cost per call.
 *
 * An entry's value starts with a struct gp_held (what it holds, given back when it goes):
 * put entries with gp_inflight_put, remove them with gp_inflight_done or gp_inflight_del,
 * and call gp_inflight_exit from the object's sched_process_exit program. Include after
 * common.bpf.h; the loader sets the rodata between open and load (0: no limit).
 *
 * Counters are signed: a race between a process's exit deleting its counter and one of its
 * threads still in flight can only leave a counter low (more room, never less).
 */
#ifndef GP_SHARES_BPF_H
#define GP_SHARES_BPF_H

#define GP_EEXIST 17 /* an insert with BPF_NOEXIST over an entry there */

const volatile __u32 gp_share_free = 0; /* places of a table taken before the shares count */
const volatile __u32 gp_share_proc = 0; /* past those, the places one process may hold */
const volatile __u32 gp_share_user = 0; /* and one user's processes */

#define GP_SHARE_TABLES 2 /* in-flight tables of one object (nccl.bpf.c has two) */
#define GP_SHARE_PROC (1ULL << 32)
#define GP_SHARE_USER (2ULL << 32)
#define GP_SHARE_TABLE(t) ((__u64)(t) << 40)
#define GP_TOOK_PROC 1U
#define GP_TOOK_USER 2U

/* What an in-flight entry holds: the first field of its value. */
struct gp_held {
	__u32 uid;  /* the caller's user at entry: whose share the place counts against */
	__u32 took; /* GP_TOOK_*: the shares it holds (0: a free place) */
};

/* Places taken in each table of this object (its entries, to within the calls between
 * their count and their insert). */
__s64 gp_inflight[GP_SHARE_TABLES];
/* A share was ever taken in this object: only then do exits look for counters to drop. */
__u32 gp_shares_used;

/* Places held past the free ones, by (table, process) and (table, user). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* --max-procs + users, set by the loader */
	__type(key, __u64);
	__type(value, __s64);
} gp_shares SEC(".maps");

/* One more place on key's counter, unless it holds limit already: 1 taken, 0 over the
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

/* Counts a place of table t for tgid and uid against their shares: the GP_TOOK_* taken,
 * or -1 when the process or the user holds its share. */
static __always_inline int gp_share_take(__u32 t, __u32 tgid, __u32 uid)
{
	int took = 0, r;

	gp_shares_used = 1;
	if (gp_share_proc) {
		r = gp_share_take1(GP_SHARE_TABLE(t) | GP_SHARE_PROC | tgid, gp_share_proc);
		if (!r)
			return -1;
		if (r > 0)
			took |= GP_TOOK_PROC;
	}
	if (gp_share_user) {
		r = gp_share_take1(GP_SHARE_TABLE(t) | GP_SHARE_USER | uid, gp_share_user);
		if (!r) {
			if (took & GP_TOOK_PROC)
				gp_share_put1(GP_SHARE_TABLE(t) | GP_SHARE_PROC | tgid);
			return -1;
		}
		if (r > 0)
			took |= GP_TOOK_USER;
	}
	return took;
}

/*
 * Takes a place of table t for the calling thread, into *h: 0, or -1 when its process or
 * user holds its share (the caller counts the drop and stashes nothing). Give it back with
 * gp_share_release, or through gp_inflight_put / _done / _del, which do.
 */
static __always_inline int gp_share_hold(__u32 t, __u32 tgid, struct gp_held *h)
{
	__s64 *n = &gp_inflight[t & (GP_SHARE_TABLES - 1)];
	int took;

	h->uid = 0;
	h->took = 0;
	if (__sync_fetch_and_add(n, 1) < (__s64)gp_share_free || (!gp_share_proc && !gp_share_user))
		return 0;
	h->uid = (__u32)bpf_get_current_uid_gid();
	took = gp_share_take(t, tgid, h->uid);
	if (took < 0) {
		__sync_fetch_and_add(n, -1);
		return -1;
	}
	h->took = (__u32)took;
	return 0;
}

static __always_inline void gp_share_release(__u32 t, __u32 tgid, const struct gp_held *h)
{
	__sync_fetch_and_add(&gp_inflight[t & (GP_SHARE_TABLES - 1)], -1);
	if (h->took & GP_TOOK_PROC)
		gp_share_put1(GP_SHARE_TABLE(t) | GP_SHARE_PROC | tgid);
	if (h->took & GP_TOOK_USER)
		gp_share_put1(GP_SHARE_TABLE(t) | GP_SHARE_USER | h->uid);
}

/*
 * Inserts v (a value starting with the struct gp_held of a place gp_share_hold took) as
 * thread id's entry of table t (map m). A stale entry of the thread (a return never seen)
 * is replaced and keeps its places; the new ones go back. Returns the insert's result: on
 * a failure (-E2BIG: the map full) the place went back.
 */
static __always_inline long gp_inflight_put(void *m, __u32 t, __u64 id, void *v)
{
	struct gp_held *h = v, *old, fresh;
	long r = bpf_map_update_elem(m, &id, v, BPF_NOEXIST);

	if (r == -GP_EEXIST) {
		old = bpf_map_lookup_elem(m, &id);
		fresh = *h;
		if (old) {
			*h = *old;
			gp_share_release(t, id >> 32, &fresh);
		}
		r = bpf_map_update_elem(m, &id, v, BPF_ANY);
		if (r && !old)
			gp_share_release(t, id >> 32, &fresh);
		return r;
	}
	if (r)
		gp_share_release(t, id >> 32, h);
	return r;
}

/* Removes thread id's entry e (looked up in m) and gives its places back. */
static __always_inline void gp_inflight_done(void *m, __u32 t, __u64 id, const void *e)
{
	struct gp_held h = *(const struct gp_held *)e;

	if (!bpf_map_delete_elem(m, &id))
		gp_share_release(t, id >> 32, &h);
}

/* Removes thread id's entry of m, if it has one, and gives its places back. */
static __always_inline void gp_inflight_del(void *m, __u32 t, __u64 id)
{
	void *e = bpf_map_lookup_elem(m, &id);

	if (e)
		gp_inflight_done(m, t, id, e);
}

/* From a sched_process_exit program: the exiting thread's entry of table t (map m) goes
 * with its places; the process's counters when it is the last thread. */
static __always_inline void gp_inflight_exit(void *m, __u32 t)
{
	__u64 id = bpf_get_current_pid_tgid(), key = GP_SHARE_TABLE(t) | GP_SHARE_PROC | (id >> 32);

	gp_inflight_del(m, t, id);
	if (gp_shares_used && gp_process_dead())
		bpf_map_delete_elem(&gp_shares, &key);
}

#endif /* GP_SHARES_BPF_H */
