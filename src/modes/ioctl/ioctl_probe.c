/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "attach.h"
#include "ioctl.h"
#include "ioctl_probe.h"
#include "nv_ioctl.skel.h"
#include "options.h"
#include "u64map.h"

/* The drivers' file_operations.unlocked_ioctl (kernel-open/nvidia/nv.c, nvidia-uvm/uvm.c) */
static const char *const kprobe_funcs[] = { "nvidia_unlocked_ioctl", "uvm_unlocked_ioctl_entry" };

struct ioctl_probe {
	const struct gp_opts *o;
	struct nv_ioctl_bpf *skel;
	struct ioctl_agg *agg;
	struct ioc_major majors[GP_IOCTL_MAX_MAJORS];
	int nr_majors;
	bool want_kprobe; /* try kprobes first */
	const char *why;  /* why the backend: printed with it */
	char why_buf[256]; /* a kprobe failure, kept for ioctl_probe__backend */
	const char *backend;
	bool loaded;
};

static bool kernel_has_kprobes(char *path, size_t len)
{
	const char *root = getenv("GPUPROBE_SYSFS"); /* tests point this at a fake /sys */

	snprintf(path, len, "%s/bus/event_source/devices/kprobe/type", root ? root : "/sys");
	return access(path, R_OK) == 0;
}

int ioctl_probe__open(struct ioctl_probe **out, const struct gp_opts *o, bool emit_events,
		      char *err, size_t len)
{
	struct ioctl_probe *ip = calloc(1, sizeof(*ip));
	const char *forced = o->ioctl_backend;
	char path[512];
	bool kprobes = kernel_has_kprobes(path, sizeof(path));
	FILE *f;
	int r;

	*out = NULL;
	if (!ip)
		return -ENOMEM;
	ip->o = o;
	if (forced && !strcmp(forced, "kprobe")) {
		if (!kprobes) {
			snprintf(err, len, "--ioctl-backend=kprobe: this kernel has no kprobes (%s missing); use --ioctl-backend=tracepoint",
				 path);
			r = -ENOTSUP;
			goto fail;
		}
		ip->want_kprobe = true;
		ip->why = "requested";
	} else if (forced) {
		ip->why = "requested";
	} else if (o->nr_ioctl_devs) {
		ip->why = "--ioctl-dev devices are seen only by the syscall tracepoints";
	} else if (!kprobes) {
		ip->why = "no kprobes";
	} else {
		ip->want_kprobe = true;
		ip->why = "probed";
	}

	f = fopen("/proc/devices", "r");
	if (f) {
		ip->nr_majors = ioctl__parse_devices(f, ip->majors, GP_IOCTL_MAX_MAJORS);
		fclose(f);
	}
	for (int i = 0; i < o->nr_ioctl_devs; i++)
		ip->nr_majors = ioctl__add_major(ip->majors, ip->nr_majors, GP_IOCTL_MAX_MAJORS,
						 o->ioctl_dev_major[i], IOC_KIND_ANY, o->ioctl_dev_name[i]);
	if (!ip->nr_majors && !o->quiet) /* the daemon logs it with a priority */
		fprintf(stderr, "gpuprobe: no nvidia character devices in /proc/devices: no ioctls will be seen\n");

	ip->agg = ioctl_agg__new(ip->majors, ip->nr_majors);
	ip->skel = nv_ioctl_bpf__open();
	if (!ip->agg || !ip->skel) {
		r = -ENOMEM;
		snprintf(err, len, "cannot open the ioctl BPF object");
		goto fail;
	}
	for (int i = 0; i < ip->nr_majors; i++)
		ip->skel->rodata->majors[i] = ip->majors[i].major;
	ip->skel->rodata->nr_majors = (__u32)ip->nr_majors;
	ip->skel->rodata->emit_events = emit_events;
	if (emit_events)
		bpf_map__set_max_entries(ip->skel->maps.ioctl_events, o->ringbuf_size);
	bpf_map__set_max_entries(ip->skel->maps.ioctl_start, o->max_pending);
	bpf_map__set_max_entries(ip->skel->maps.ioctl_comms, o->max_procs);
	*out = ip;
	return 0;
fail:
	ioctl_probe__free(ip);
	return r;
}

static int attach_kprobes(struct ioctl_probe *ip, struct attach_set *links, char *why, size_t len)
{
	struct bpf_link *l[2 * sizeof(kprobe_funcs) / sizeof(kprobe_funcs[0])] = {};
	int n = 0, r = 0;

	for (size_t i = 0; i < sizeof(kprobe_funcs) / sizeof(kprobe_funcs[0]); i++) {
		for (int ret = 0; ret < 2; ret++) {
			l[n] = bpf_program__attach_kprobe(ret ? ip->skel->progs.ioctl_kp_exit :
							  ip->skel->progs.ioctl_kp_enter, ret, kprobe_funcs[i]);
			if (!l[n]) {
				r = -errno;
				snprintf(why, len, "kprobe on %s failed: %s", kprobe_funcs[i], strerror(-r));
				goto undo;
			}
			n++;
		}
	}
	for (int i = 0; i < n; i++) {
		r = attach_set__add(links, l[i]);
		if (r) {
			for (int j = i; j < n; j++)
				bpf_link__destroy(l[j]);
			return r;
		}
	}
	return 0;
undo:
	for (int i = 0; i < n; i++)
		bpf_link__destroy(l[i]);
	return r;
}

int ioctl_probe__attach(struct ioctl_probe *ip, struct attach_set *links, int pid, char *err, size_t len)
{
	struct bpf_link *enter = NULL, *leave = NULL;
	char why[256];
	int r;

	ip->skel->rodata->target_tgid = pid > 0 ? (__u32)pid : 0;
	r = nv_ioctl_bpf__load(ip->skel);
	if (r) {
		snprintf(err, len, "cannot load the ioctl BPF programs: %s%s", strerror(-r),
			 r == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" :
				       " (run with -v for the verifier log)");
		return r;
	}
	ip->loaded = true;
	if (ip->want_kprobe) {
		r = attach_kprobes(ip, links, why, sizeof(why));
		if (!r) {
			ip->backend = "kprobe";
			if (!ip->o->quiet)
				fprintf(stderr, "gpuprobe: ioctl backend: kprobe (%s)\n", ip->why);
			return 0;
		}
		if (ip->o->ioctl_backend) { /* asked for by name: no fallback */
			snprintf(err, len, "--ioctl-backend=kprobe: %s", why);
			return r;
		}
		snprintf(ip->why_buf, sizeof(ip->why_buf), "%s", why);
		ip->why = ip->why_buf;
	}
	enter = bpf_program__attach(ip->skel->progs.ioctl_tp_enter);
	if (!enter) {
		r = -errno;
		snprintf(err, len, "cannot attach syscalls:sys_enter_ioctl: %s", strerror(-r));
		return r;
	}
	r = attach_set__add(links, enter);
	if (r) {
		bpf_link__destroy(enter);
		return r;
	}
	leave = bpf_program__attach(ip->skel->progs.ioctl_tp_exit);
	if (!leave) {
		r = -errno;
		snprintf(err, len, "cannot attach syscalls:sys_exit_ioctl: %s", strerror(-r));
		return r;
	}
	r = attach_set__add(links, leave);
	if (r) {
		bpf_link__destroy(leave);
		return r;
	}
	ip->backend = "tracepoint";
	if (!ip->o->quiet)
		fprintf(stderr, "gpuprobe: ioctl backend: tracepoint (%s)\n", ip->why);
	return 0;
}

int ioctl_probe__events_fd(const struct ioctl_probe *ip)
{
	return ip && ip->loaded ? bpf_map__fd(ip->skel->maps.ioctl_events) : -1;
}

static void fill_comm(struct ioctl_probe *ip, struct ioc_proc *p)
{
	char path[64], buf[GP_COMM_LEN] = "";
	FILE *f;

	if (!bpf_map_lookup_elem(bpf_map__fd(ip->skel->maps.ioctl_comms), &p->pid, buf)) {
		snprintf(p->comm, sizeof(p->comm), "%.15s", buf);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/comm", p->pid);
	f = fopen(path, "r");
	if (f && fgets(p->comm, sizeof(p->comm), f))
		p->comm[strcspn(p->comm, "\n")] = 0;
	else
		snprintf(p->comm, sizeof(p->comm), "?");
	if (f)
		fclose(f);
}

static void snapshot(struct ioctl_probe *ip)
{
	int fd = bpf_map__fd(ip->skel->maps.ioctl_stats);
	struct gp_ioctl_key k, next;
	struct gp_ioctl_stat st;
	struct ioc_proc *procs;
	void *prev = NULL;
	size_t n;

	ioctl_agg__begin(ip->agg);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &st))
			ioctl_agg__add(ip->agg, &next, &st);
		k = next;
		prev = &k;
	}
	ioctl_agg__end(ip->agg);
	n = ioctl_agg__procs(ip->agg, &procs);
	for (size_t i = 0; i < n; i++)
		fill_comm(ip, &procs[i]);
}

void ioctl_probe__report(struct ioctl_probe *ip, const char *kind)
{
	struct ioc_report_ctx c = { .kind = kind, .backend = ip->backend ? ip->backend : "none" };
	struct ioc_proc *procs;
	size_t n;

	if (!ip->loaded)
		return;
	snapshot(ip);
	n = ioctl_agg__procs(ip->agg, &procs);
	for (int i = 0; i < GP_IDROP__COUNT; i++)
		c.idrops[i] = __atomic_load_n(&ip->skel->bss->idrops[i], __ATOMIC_RELAXED);
	if (ip->o->json)
		report__ioctl_json(stdout, procs, n, &c);
	else
		report__ioctl_text(stdout, procs, n, &c);
}

void ioctl_probe__free(struct ioctl_probe *ip)
{
	if (!ip)
		return;
	nv_ioctl_bpf__destroy(ip->skel);
	ioctl_agg__free(ip->agg);
	free(ip);
}

const char *ioctl_probe__name(const struct ioctl_probe *ip, uint32_t major, uint32_t cmd)
{
	for (int i = 0; i < ip->nr_majors; i++)
		if (ip->majors[i].major == major)
			return ioctl__cmd_name(ip->majors[i].kind, cmd);
	return NULL;
}

unsigned long long ioctl_probe__ringbuf_drops(const struct ioctl_probe *ip)
{
	return ip && ip->loaded ? __atomic_load_n(&ip->skel->bss->idrops[GP_IDROP_RINGBUF], __ATOMIC_RELAXED) : 0;
}

/* gpuprobe daemon (src/daemon.c) */
const char *ioctl_probe__backend(const struct ioctl_probe *ip, const char **why)
{
	if (why)
		*why = ip->why ? ip->why : "";
	return ip->backend ? ip->backend : "none";
}

int ioctl_probe__nr_majors(const struct ioctl_probe *ip)
{
	return ip->nr_majors;
}

size_t ioctl_probe__snapshot(struct ioctl_probe *ip, struct ioc_proc **procs)
{
	*procs = NULL;
	if (!ip->loaded)
		return 0;
	snapshot(ip);
	return ioctl_agg__procs(ip->agg, procs);
}

void ioctl_probe__drops(const struct ioctl_probe *ip, uint64_t *drops)
{
	for (int i = 0; i < GP_IDROP__COUNT; i++)
		drops[i] = ip->loaded ? __atomic_load_n(&ip->skel->bss->idrops[i], __ATOMIC_RELAXED) : 0;
}

/* Keys only, no values and no grouping: the daemon's once-a-second look for exits. */
int ioctl_probe__pids(struct ioctl_probe *ip, struct u64map *pids)
{
	struct gp_ioctl_key k, next;
	void *prev = NULL;
	int fd;

	if (!ip->loaded)
		return 0;
	fd = bpf_map__fd(ip->skel->maps.ioctl_stats);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!u64map__get(pids, next.pid) && u64map__put(pids, next.pid, (void *)1))
			return -ENOMEM;
		k = next;
		prev = &k;
	}
	return 0;
}

/* One pass over the counter table: keys are collected first, since deleting the key the
 * iteration stands on sends a hash map's get_next_key back to the start. */
int ioctl_probe__forget(struct ioctl_probe *ip, struct u64map *pids)
{
	int fd, cfd, n = 0, cap = 0;
	struct gp_ioctl_key k, next, *del = NULL;
	void *prev = NULL, *v;
	uint64_t pid;

	if (!ip->loaded)
		return 0;
	fd = bpf_map__fd(ip->skel->maps.ioctl_stats);
	cfd = bpf_map__fd(ip->skel->maps.ioctl_comms);
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (u64map__get(pids, next.pid)) {
			if (n == cap) {
				struct gp_ioctl_key *d = realloc(del, (size_t)(cap ? cap * 2 : 64) * sizeof(*d));

				if (!d)
					break;
				del = d;
				cap = cap ? cap * 2 : 64;
			}
			del[n++] = next;
		}
		k = next;
		prev = &k;
	}
	for (int i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &del[i]);
	free(del);
	for (size_t it = 0; u64map__next(pids, &it, &pid, &v);) {
		__u32 p = (__u32)pid;

		bpf_map_delete_elem(cfd, &p);
	}
	return n;
}
