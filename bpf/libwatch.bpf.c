/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Libraries loaded after gpuprobe started (src/core/libwatch.c): a uprobe on the dynamic
 * linker's debugger hook, _dl_debug_state (the r_brk of struct r_debug that gdb breaks on
 * to see every dlopen and dlclose). The linker calls it before and after changing its list
 * of loaded objects; r_debug.r_state says which (RT_ADD, RT_DELETE, then RT_CONSISTENT), so
 * only the call with the list consistent again — the new library mapped — is reported:
 * user space then reads that process's maps. The attach cookie is the distance from
 * _dl_debug_state to _r_debug in the linker's image (0: unknown, every call reported).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gpuprobe.h"
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 12); /* replaced by the run's shared ring buffer */
} events SEC(".maps");

#define R_STATE_OFF 24 /* struct r_debug { int r_version; link_map *r_map; ElfW(Addr) r_brk; r_state; ... } */
#define R_MAP_OFF 8
#define L_NAME_OFF 8   /* struct link_map { ElfW(Addr) l_addr; char *l_name; ElfW(Dyn) *l_ld; l_next; l_prev; } */
#define L_NEXT_OFF 24
#define MAP_WALK 512   /* objects walked to the link map's end */
#define NAME_BUF 512
#define GP_SIGSTOP 19

/* Set by the loader: stop a followed process whose new objects include a libcuda until user
 * space has probed it (a command gpuprobe started: nothing it calls is missed). */
const volatile bool hold_libcuda = false;

__u64 hook_hits, hook_skipped, hook_lost, hook_held;

/* The processes stopped and not continued yet: user space continues those left at its end
 * (an error path that never reads their records). A process that finds it full runs on. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} held SEC(".maps");

#define NEW_FIRST 8
#define NEW_LAST 8
#define NEW_SLOTS (NEW_FIRST + NEW_LAST)

/* Off the stack, and out of the verifier's sight: written in a loop, slots on the stack
 * would keep every iteration's two paths apart. */
struct scratch {
	__u64 names[NEW_SLOTS];
	char buf[NAME_BUF + 16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} namebuf SEC(".maps");

/* Whether the path at user address name ends in "/libcuda.so.1" or "/libcuda.so". A
 * global function: the verifier checks it once, not once for each of its callers' states. */
__noinline int is_libcuda(__u64 name)
{
	static const char want[] = "/libcuda.so.1";
	__u32 zero = 0;
	struct scratch *sc = bpf_map_lookup_elem(&namebuf, &zero);
	char *buf;
	long n;
	__u32 at;

	if (!sc || !name)
		return 0;
	buf = sc->buf;
	n = bpf_probe_read_user_str(buf, NAME_BUF, (void *)name);
	if (n < 12 || n > NAME_BUF) /* with its NUL; a longer path is cut: not read */
		return 0;
	/* "/libcuda.so.1": 13 characters before the NUL; "/libcuda.so": 11 */
	if (n >= 14) {
		at = (__u32)(n - 14) & (NAME_BUF - 1);
		bool match = true;

		for (int k = 0; k < 13; k++)
			if (buf[at + k] != want[k])
				match = false;
		if (match)
			return 1;
	}
	at = (__u32)(n - 12) & (NAME_BUF - 1);
	for (int k = 0; k < 11; k++)
		if (buf[at + k] != want[k])
			return 0;
	return 1;
}

/* Objects in each image's link map at its last consistent report: a dlopen appends what it
 * loaded, so the objects from that index on are the new ones (a dlclose's own consistent
 * report lowers it again). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);   /* tgid << 32 | image */
	__type(value, __u32);
} objects SEC(".maps");

/* Walks the base namespace's link map (r_debug at rd): is one of the objects added since
 * the last consistent report a libcuda? The first NEW_FIRST new ones and the last
 * NEW_LAST are looked at (a dlopen's own object comes first, its dependencies after; a
 * program's start maps its DT_NEEDED list, which the front end resolved beforehand for the
 * command itself). The count is kept for the next report. */
static __always_inline bool new_libcuda(__u64 rd, __u64 key)
{
	__u32 *seen = bpf_map_lookup_elem(&objects, &key), prev = seen ? *seen : 0, n = 0, zero = 0;
	struct scratch *sc = bpf_map_lookup_elem(&namebuf, &zero);
	__u64 lm = 0;

	if (!sc || bpf_probe_read_user(&lm, sizeof(lm), (void *)(rd + R_MAP_OFF)))
		return false;
	for (int j = 0; j < NEW_SLOTS; j++)
		sc->names[j] = 0;
	for (int i = 0; i < MAP_WALK && lm; i++) {
		/* the difference is tested, not prev: a test on prev would narrow its range in
		 * each iteration and keep the verifier from merging them */
		__s32 k = (__s32)(n - prev);

		if (k >= 0) {
			__u32 slot = k < NEW_FIRST ? (__u32)k : NEW_FIRST + ((__u32)k & (NEW_LAST - 1));

			bpf_probe_read_user(&sc->names[slot & (NEW_SLOTS - 1)], sizeof(__u64), (void *)(lm + L_NAME_OFF));
		}
		n++;
		if (bpf_probe_read_user(&lm, sizeof(lm), (void *)(lm + L_NEXT_OFF)))
			break;
	}
	bpf_map_update_elem(&objects, &key, &n, BPF_ANY);
	for (int j = 0; j < NEW_SLOTS; j++)
		if (sc->names[j] && is_libcuda(sc->names[j]))
			return true;
	return false;
}

SEC("uprobe")
int dl_brk(struct pt_regs *ctx)
{
	__s64 delta = (__s64)bpf_get_attach_cookie(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	struct gp_dlopen_event *e;
	__s32 state = -1;

	if (!gp_traced_self())
		return 0;
	__sync_fetch_and_add(&hook_hits, 1);
	/* at a uprobe's handler the instruction pointer is the probed address */
	if (delta && bpf_probe_read_user(&state, sizeof(state), (void *)(PT_REGS_IP(ctx) + delta + R_STATE_OFF)))
		state = -1;
	if (state > 0) { /* RT_ADD or RT_DELETE: the consistent call follows */
		__sync_fetch_and_add(&hook_skipped, 1);
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&hook_lost, 1);
		return 0;
	}
	e->type = GP_EV_DLOPEN;
	e->pid = id >> 32;
	e->ts_ns = bpf_ktime_get_ns();
	e->img = gp_image();
	e->state = state;
	e->held = 0;
	e->_pad = 0;
	/* stopped only with the record reserved: user space reads it and sends SIGCONT */
	if (hold_libcuda && state == 0 && new_libcuda(PT_REGS_IP(ctx) + delta, (id >> 32) << 32 | e->img)) {
		__u32 pid = id >> 32;
		__u8 one = 1;

		if (!bpf_map_update_elem(&held, &pid, &one, BPF_ANY)) {
			if (!bpf_send_signal(GP_SIGSTOP)) {
				e->held = 1;
				__sync_fetch_and_add(&hook_held, 1);
			} else {
				bpf_map_delete_elem(&held, &pid);
			}
		}
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}
