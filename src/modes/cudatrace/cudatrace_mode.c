/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --cudatrace: bpf/cuda_launch.bpf.c counts launches in the kernel by (process, handle,
 * shape, naming); names arrive on its ring buffer as handles are created. A snapshot
 * reads the counts into the aggregator (cudatrace.c); cudatrace_report.c renders it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/apis.h"
#include "core/attach.h"
#include "cuda_launch.skel.h"
#include "modes/cudatrace/cudatrace.h"
#include "modes/cudatrace/cudatrace_mode.h"
#include "core/events.h"
#include "modes/cudatrace/layouts.h"
#include "core/maps.h"
#include "modes/cudatrace/midname.h"
#include "core/modeshare.h"
#include "lib/option.h"
#include "lib/procmaps.h"
#include "lib/procpin.h"
#include "core/options.h"
#include "core/run_impl.h"
#include "modes/cudatrace/selflearn.h"
#include "lib/symbolize.h"
#include "lib/u64map.h"
#include "lib/util.h"

struct ct_settings ct_settings = {
	.latency = true,
	.top_shapes = 3,
	.max_launch_keys = 65536,
	.max_kernel_series = 20,
	.self_learn = true,
};

static const struct gp_option options[] = {
	{ "no-latency", 0, NULL, "No return probes on launches and syncs (counts only, cheaper)",
	  GP_OPT_CLEAR, &ct_settings.latency, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{ "top-shapes", 0, "N", "Text: grid x block shapes listed per kernel (default 3, -1 all)",
	  GP_OPT_COUNT, &ct_settings.top_shapes, 0, 100000, .frontends = GP_FE_CLI, .group = GP_GRP_MODE },
	{ "max-launch-keys", 0, "N", "Distinct (process, kernel, shape) launch counters (default 65536)",
	  GP_OPT_U64, &ct_settings.max_launch_keys, 1, 1 << 24, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{ "max-kernel-series", 0, "N", "Kernel names with their own series per series of labels, first come; the rest are summed under kernel=\"other\" (default 20)",
	  GP_OPT_U64, &ct_settings.max_kernel_series, 0, 100000, .frontends = GP_FE_DAEMON, .group = GP_GRP_MODE },
	{ "state-dir", 0, "DIR", "Where kernel-handle layouts learned per libcuda build are kept, to name the launches of jobs at steady state (default $GPUPROBE_STATE_DIR or " LAY_DEFAULT_DIR ")",
	  GP_OPT_STRING, &ct_settings.state_dir, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{ "no-self-learn", 0, NULL, "Do not learn a libcuda build's kernel-handle layouts from a kernel of gpuprobe's own (a child that loads the driver, once per build with no layouts kept)",
	  GP_OPT_CLEAR, &ct_settings.self_learn, .frontends = GP_FE_ALL, .group = GP_GRP_MODE },
	{},
};

#define CT_BUILDS 16 /* distinct libcuda builds whose layouts are kept (more: learned per run only) */
#define CT_FILES 64

struct ct_mode {
	struct gp_run *run;
	struct cuda_launch_bpf *skel;
	struct cudatrace *ct;
	struct attach_pair probes, gprobes; /* launches, syncs, names; capture and graphs */
	struct attach_pair sprobes;         /* the budget's (gp_run__prepare_sampled) */
	struct midname *mn;                 /* names of handles made before the attach */
	struct u64map *learns;              /* uid -> known names offered to mn so far (+ 0) */
	/* libcuda builds probed (midname's build i + 1 is builds[i]) and their files */
	char builds[CT_BUILDS][LAY_KEY_LEN];
	unsigned int nr_builds;
	struct { dev_t dev; ino_t ino; uint32_t build; } files[CT_FILES];
	unsigned int nr_files;
	struct u64map *pid_build;           /* pid -> build + 1 (its libcuda's, from its maps) */
	/* builds gpuprobe tried to teach itself this run (once each), and what it learned */
	struct { char key[LAY_KEY_LEN]; struct sl_lesson l[SL_MAX_LESSONS]; size_t n; } taught[CT_BUILDS];
	unsigned int nr_taught;
	bool state_off, state_said;         /* the state file refused (not written); its line said */
	bool state_full;                    /* its LAY_MAX entries reached: said */
	bool said_no_layout[CT_BUILDS + 1]; /* per build: "unnamed for want of a layout" logged */
	/* a process's maps and files kept while it lives, so that a launch stack read after
	 * its exit is still named by its host stub (memleak's, when it runs; else its own) */
	struct procpin *own_pin;
	uint32_t own_pidns;                 /* gpuprobe's pid namespace (its inode number) */
	/* naming records whose handle's object follows in a GP_EV_NAMECOPY record: gen -> the
	 * name, learned from when the copy comes */
	struct u64map *awaiting;
	uint64_t hints_gen;                 /* midname's hints as last put in kname_hints */
	struct mn_hint hints[MN_LAYOUTS];
	size_t nr_hints;
	struct ct_snap snap;
	struct ct_sampled *sampled; /* snap.sampled */
	struct ct_sampled *counted; /* snap.counted */
	struct u64map *doomed;      /* PIDs a reap lets go, during it (forget_pid) */
};

/* Known names teach midname where the driver keeps them; enough of them tell it (each
 * costs a few reads of the process's memory). Per uid: one user's flood of namings (a
 * long-lived daemon sees them all) leaves the others their lessons. */
#define MAX_LEARNS 512

static void m_free(void *st)
{
	struct ct_mode *m = st;

	if (!m)
		return;
	cuda_launch_bpf__destroy(m->skel);
	if (m->own_pin && m->run)
		symbolizer__set_pin(m->run->sym, NULL);
	procpin__free(m->own_pin);
	midname__free(m->mn);
	u64map__free_all(m->awaiting, NULL);
	u64map__free(m->pid_build);
	u64map__free(m->learns);
	cudatrace__free(m->ct);
	free(m->snap.pids);
	free(m->snap.procs);
	free(m->sampled);
	free(m->counted);
	free(m);
}

/* process_vm_readv: bounded reads of a traced process's memory, never through a path it
 * names (it may have exited: an error, not a wait). */
static long read_mem(void *ctx, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t r;

	(void)ctx;
	r = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
	return r < 0 ? -errno : (long)r;
}

/* A container's root (uid 0 in another pid namespace than gpuprobe's): not the node's root,
 * whose lessons serve every user (midname.h); one principal of its own. */
#define CT_UID_NS_ROOT 0xfffffffeU

/* The real uid of pid (the first field of /proc/PID/status's Uid: line; the real one
 * cannot be changed by the process without privilege). Read at every use, never cached:
 * a process that drops root is judged as what it is now. */
static int uid_of(uint32_t pid, uint32_t *uid)
{
	char path[64], buf[4096];
	int r = gp_proc_status(pid, buf, sizeof(buf), uid);

	if (r)
		return r;
	if (!*uid) {
		struct stat mine, its;

		snprintf(path, sizeof(path), "/proc/%u/ns/pid", pid);
		if (stat("/proc/self/ns/pid", &mine) || stat(path, &its) || mine.st_ino != its.st_ino ||
		    mine.st_dev != its.st_dev)
			*uid = CT_UID_NS_ROOT;
	}
	return 0;
}

struct build_scan {
	const struct ct_mode *m;
	uint32_t build; /* 0: none yet; UINT32_MAX: two builds */
};

static int scan_map(const struct map_entry *e, void *ctx)
{
	struct build_scan *b = ctx;

	for (unsigned int i = 0; i < b->m->nr_files; i++)
		if (b->m->files[i].ino == e->inode && major(b->m->files[i].dev) == e->dev_major &&
		    minor(b->m->files[i].dev) == e->dev_minor && b->build != b->m->files[i].build)
			b->build = b->build ? UINT32_MAX : b->m->files[i].build;
	return 0;
}

/*
 * Which probed libcuda build pid's handles come from: one build probed, that one (only
 * probed files report); else the one its maps show (live, else kept while it lived:
 * procpin), 0 when none or two (or it is gone). A process may map two: a container's CUDA
 * compat libcuda beside the driver's; a handle's copy then names the file its launch
 * called (copy_of). Only a decided build is kept.
 */
static uint32_t build_of(struct ct_mode *m, uint32_t pid)
{
	uintptr_t b = m->pid_build ? (uintptr_t)u64map__get(m->pid_build, pid) : 0;
	struct procpin *pin = m->run ? symbolizer__pin(m->run->sym) : NULL;
	struct build_scan s = { m, 0 };

	if (m->nr_builds <= 1)
		return m->nr_builds;
	if (b)
		return (uint32_t)(b - 1);
	if (procmaps__foreach("/proc", (int)pid, scan_map, &s) &&
	    (!pin || procpin__foreach(pin, (int)pid, scan_map, &s)))
		return 0; /* gone: not kept as its build */
	if (s.build == UINT32_MAX)
		return 0; /* two: not kept, a copy may tell (copy_of) */
	if (s.build && m->pid_build)
		u64map__put(m->pid_build, pid, (void *)(uintptr_t)(s.build + 1));
	return s.build;
}

/* The probed build of the file (inode, kernel dev_t) a launch probe fired in; 0: none. */
static uint32_t build_of_file(const struct ct_mode *m, uint64_t ino, uint32_t kdev)
{
	for (unsigned int i = 0; i < m->nr_files; i++)
		if (m->files[i].ino == ino && major(m->files[i].dev) == kdev >> 20 &&
		    minor(m->files[i].dev) == (kdev & 0xfffff))
			return m->files[i].build;
	return 0;
}

/* midname's question: pid's build and its uid. */
static int who_is(void *ctx, uint32_t pid, uint32_t *build, uint32_t *uid)
{
	struct ct_mode *m = ctx;

	*build = build_of(m, pid);
	return uid_of(pid, uid);
}

/* A copy of a handle's object from a record (the BPF side's framing, the process's bytes:
 * each string is taken only when it lies inside names[] and ends with its NUL there). */
static void copy_of(struct ct_mode *m, uint32_t pid, const struct gp_kobj_copy *k, struct mn_copy *c)
{
	memset(c, 0, sizeof(*c));
	c->build = k->file_ino ? build_of_file(m, k->file_ino, k->file_dev) : 0;
	if (!c->build)
		c->build = build_of(m, pid);
	/* the uid at the call; root in another pid namespace is a container's (uid_of) */
	c->uid = k->uid == 0 && k->pidns != m->own_pidns ? CT_UID_NS_ROOT : k->uid;
	if (k->uid == UINT32_MAX)
		c->uid = UINT32_MAX;
	c->obj_ok = k->obj_ok == 1;
	memcpy(c->q, k->obj, sizeof(c->q));
	for (unsigned int s = 1; s < MN_SLOTS && s < GP_KOBJ_SLOTS; s++) {
		uint32_t off = k->str_off[s], len = k->str_len[s];

		if (len && len < GP_KOBJ_STR && off + len <= GP_KOBJ_AREA && k->names[off + len - 1] == '\0' &&
		    strlen(&k->names[off]) + 1 == len)
			c->str[s] = &k->names[off];
	}
}

/* What BPF copies at a handle's first sight follows midname's usable layouts (kname_hints,
 * bpf/cuda_launch.bpf.c): put there whenever they may have changed. */
static void push_hints(struct ct_mode *m)
{
	struct mn_hint now[MN_LAYOUTS];
	size_t n;
	int fd;

	if (!m->skel || midname__hints_gen(m->mn) == m->hints_gen)
		return;
	m->hints_gen = midname__hints_gen(m->mn);
	fd = bpf_map__fd(m->skel->maps.kname_hints);
	n = midname__hints(m->mn, now, MN_LAYOUTS);
	for (size_t i = 0; i < m->nr_hints; i++) {
		struct { uint64_t tag; uint32_t uid, pad; } k = { m->hints[i].tag, m->hints[i].uid, 0 };
		size_t j;

		for (j = 0; j < n && !(now[j].tag == k.tag && now[j].uid == k.uid); j++)
			;
		if (j == n)
			bpf_map_delete_elem(fd, &k);
	}
	for (size_t j = 0; j < n; j++) {
		struct { uint64_t tag; uint32_t uid, pad; } k = { now[j].tag, now[j].uid, 0 };

		bpf_map_update_elem(fd, &k, &now[j].mask, BPF_ANY);
	}
	memcpy(m->hints, now, n * sizeof(now[0]));
	m->nr_hints = n;
}

/* One line per run; stop: the directory or file is refused (a link, another owner), never
 * written (a corrupt file is written anew from what the run learns). */
static void state_error(struct ct_mode *m, const char *what, const char *why, bool stop)
{
	/* the default folder is root's: a capable user's run that named none has no state
	 * (its reports count the launches unnamed for want of a layout), not a warning */
	bool quiet = geteuid() && !ct_settings.state_dir && !getenv("GPUPROBE_STATE_DIR");

	if (!m->state_off && !m->state_said)
		gp_log(quiet ? GP_LOG_DEBUG : GP_LOG_WARN, "%s: %s", what, why);
	m->state_said = true;
	m->state_off |= stop;
}

/* The layouts of a build learned in earlier runs: into midname, as build idx. */
static void state_load(struct ct_mode *m, uint32_t idx)
{
	static struct lay_entry e[LAY_MAX];
	const char *dir = layouts__dir(ct_settings.state_dir);
	char err[512];
	size_t n = 0;

	int r = layouts__load(dir, e, LAY_MAX, &n, err, sizeof(err));

	if (r) {
		state_error(m, "learned kernel-handle layouts not loaded", err, r != -EINVAL && r != -E2BIG);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(e[i].key, m->builds[idx - 1]))
			midname__seed(m->mn, &(struct mn_layout){ .build = idx, .uid = e[i].uid, .tag = e[i].tag,
								  .slot = e[i].slot });
	gp_log(GP_LOG_DEBUG, "%s: %zu layouts of libcuda build %s loaded", dir, midname__stats(m->mn).seeded,
	       m->builds[idx - 1]);
}

/* What this run learned (or saw broken) into the state file, merged with what is there
 * (other runs write it too: the last one to write keeps what both knew of other builds). */
static void state_save(struct ct_mode *m)
{
	static struct lay_entry e[LAY_MAX];
	struct mn_layout mine[MN_LAYOUTS];
	const char *dir = layouts__dir(ct_settings.state_dir);
	size_t n = 0, k = midname__export(m->mn, mine, MN_LAYOUTS);
	char err[512];

	if (m->state_off)
		return;
	if (layouts__load(dir, e, LAY_MAX, &n, err, sizeof(err)))
		n = 0; /* corrupt: written anew from what this run knows */
	for (size_t i = 0; i < k; i++) {
		const char *key = m->builds[mine[i].build - 1];
		size_t j;

		for (j = 0; j < n; j++)
			if (!strcmp(e[j].key, key) && e[j].tag == mine[i].tag && e[j].slot == mine[i].slot &&
			    e[j].uid == mine[i].uid)
				break;
		if (mine[i].contradicted && j < n)
			e[j] = e[--n];
		else if (!mine[i].contradicted && j == n && n == LAY_MAX && !m->state_full) {
			m->state_full = true;
			gp_log(GP_LOG_WARN, "%s/" LAY_FILE ": full (%d layouts): layouts learned from uid %u and later ones are kept for this run only",
			       dir, LAY_MAX, mine[i].uid);
		} else if (!mine[i].contradicted && j == n && n < LAY_MAX) {
			snprintf(e[n].key, sizeof(e[n].key), "%s", key);
			e[n].tag = mine[i].tag;
			e[n].slot = mine[i].slot;
			e[n].uid = mine[i].uid;
			n++;
		}
	}
	if (layouts__save(dir, e, n, err, sizeof(err)))
		state_error(m, "learned kernel-handle layouts not saved", err, true);
}

/* What gpuprobe taught itself of build idx (self_teach): root's lessons (they serve every
 * user: midname.h), into midname and the state file. */
static void taught_seed(struct ct_mode *m, uint32_t idx)
{
	bool any = false;

	for (unsigned int i = 0; i < m->nr_taught; i++) {
		if (strcmp(m->taught[i].key, m->builds[idx - 1]))
			continue;
		for (size_t j = 0; j < m->taught[i].n; j++) {
			midname__seed(m->mn, &(struct mn_layout){ .build = idx, .uid = 0, .tag = m->taught[i].l[j].tag,
								  .slot = m->taught[i].l[j].slot });
			any = true;
		}
	}
	if (any)
		state_save(m);
}

/* Kinds of handle (tags) root's lessons of build key cover in the state file. */
static unsigned int root_tags(const char *key)
{
	static struct lay_entry e[LAY_MAX];
	char err[512];
	size_t n = 0;
	uint64_t tags[2];
	unsigned int k = 0;

	if (layouts__load(layouts__dir(ct_settings.state_dir), e, LAY_MAX, &n, err, sizeof(err)))
		return 0;
	for (size_t i = 0; i < n && k < 2; i++)
		if (!e[i].uid && !strcmp(e[i].key, key) && !(k == 1 && tags[0] == e[i].tag))
			tags[k++] = e[i].tag;
	return k;
}

/* Before lib is probed (the child's calls must not count as a traced process's): when
 * the state holds no root lessons for both kinds of handle (CUfunction, CUkernel) of its
 * build, learn them from kernels of gpuprobe's own (selflearn.h), once per build and run.
 * --no-latency names nothing from memory (no launch is verified), so it learns nothing; a
 * command started by gpuprobe is held until its libcuda is probed, so its naming calls are
 * all seen (and teach): no driver is loaded for it. */
static void self_teach(struct ct_mode *m, struct gp_run *run, const char *lib)
{
	char key[LAY_KEY_LEN], why[1024], what[256];
	struct sl_lesson l[SL_MAX_LESSONS];
	unsigned int ms = 0;
	size_t n = 0, at = 0;
	int r;

	if (!ct_settings.self_learn || !ct_settings.latency || run->o->cmd || m->nr_taught == CT_BUILDS ||
	    layouts__build_key(lib, key, sizeof(key)))
		return;
	for (unsigned int i = 0; i < m->nr_taught; i++)
		if (!strcmp(m->taught[i].key, key))
			return;
	snprintf(m->taught[m->nr_taught].key, LAY_KEY_LEN, "%s", key);
	m->taught[m->nr_taught++].n = 0;
	if (root_tags(key) >= 2)
		return; /* learned already (by gpuprobe itself, or from root's processes) */
	r = selflearn__run(lib, SL_TIMEOUT_MS, l, SL_MAX_LESSONS, &n, &ms, why, sizeof(why));
	if (r || !n) {
		gp_log(GP_LOG_INFO, "kernel-handle layouts of libcuda build %s not self-learned: %s (%u ms; --no-self-learn turns this off)",
		       key, r || why[0] ? why : "no layout found", ms);
		return;
	}
	what[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(what + at, sizeof(what) - at, "%stag 0x%" PRIx64 " slot %u", i ? ", " : "", l[i].tag,
				 l[i].slot);

		if (w > 0 && (size_t)w < sizeof(what) - at)
			at += (size_t)w;
	}
	memcpy(m->taught[m->nr_taught - 1].l, l, n * sizeof(l[0]));
	m->taught[m->nr_taught - 1].n = n;
	gp_log(GP_LOG_INFO, "learned kernel-handle layouts for libcuda build %s from a kernel of its own (%u ms): %s%s%s",
	       key, ms, what, why[0] ? "; not learned: " : "", why);
}

/* A probed libcuda file: its build's number for midname (made, and its layouts loaded,
 * when new); 0 when it has no key or the table of builds is full. */
static void add_build(struct ct_mode *m, const char *lib)
{
	char key[LAY_KEY_LEN];
	struct stat st;
	uint32_t idx = 0;

	if (stat(lib, &st) || m->nr_files == CT_FILES)
		return;
	if (layouts__build_key(lib, key, sizeof(key))) {
		gp_log(GP_LOG_WARN, "%s: no build key (unreadable): layouts learned for it are not kept", lib);
		return;
	}
	for (unsigned int i = 0; i < m->nr_builds && !idx; i++)
		if (!strcmp(m->builds[i], key))
			idx = i + 1;
	if (!idx && m->nr_builds < CT_BUILDS) {
		snprintf(m->builds[m->nr_builds], LAY_KEY_LEN, "%s", key);
		idx = ++m->nr_builds;
		state_load(m, idx);
		taught_seed(m, idx);
	}
	if (!idx) {
		gp_log(GP_LOG_WARN, "%s: more than %d libcuda builds: its layouts are learned for this run only", lib, CT_BUILDS);
		return;
	}
	m->files[m->nr_files].dev = st.st_dev;
	m->files[m->nr_files].ino = st.st_ino;
	m->files[m->nr_files++].build = idx;
	u64map__free(m->pid_build); /* a new build: processes' builds are asked again */
	m->pid_build = u64map__new();
}

static int m_open(struct gp_run *run, void **st, char *err, size_t len)
{
	struct ct_mode *m = calloc(1, sizeof(*m));
	int r;

	*st = m;
	if (!m || !(m->ct = cudatrace__new()) || !(m->mn = midname__new(read_mem, m)) ||
	    !(m->pid_build = u64map__new()) || !(m->learns = u64map__new()) ||
	    !(m->skel = cuda_launch_bpf__open())) {
		snprintf(err, len, "cannot open the launch BPF object");
		return -ENOMEM;
	}
	m->run = run;
	midname__set_who(m->mn, who_is);
	{
		struct stat ns;

		if (!stat("/proc/self/ns/pid", &ns))
			m->own_pidns = (uint32_t)ns.st_ino;
		m->skel->rodata->own_pidns = m->own_pidns;
	}
	m->awaiting = u64map__new();
	if (!m->awaiting) {
		snprintf(err, len, "out of memory");
		return -ENOMEM;
	}
	attach_pair__prepare(&m->probes, m->skel->progs.launch_enter, m->skel->progs.launch_leave, "launch");
	gp_run__prepare_sampled(run, &m->sprobes, &m->probes, m->skel->progs.launch_enter_ev,
				m->skel->progs.launch_leave_ev);
	attach_pair__prepare(&m->gprobes, m->skel->progs.graph_enter, m->skel->progs.graph_leave, "graph");
	m->skel->rodata->measure_latency = ct_settings.latency;
	/* 5.15 has no bpf_find_vma (5.17): which libcuda file a launch came from is then
	 * the process's (build_of), as for a record without it */
	m->skel->rodata->have_find_vma = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_find_vma, NULL) > 0;
	r = gp_run__adopt_hits(run, m->skel);
	if (r) {
		snprintf(err, len, "cannot share the budget's hit counters: %s", strerror(-r));
		return r;
	}
	bpf_map__set_max_entries(m->skel->maps.launches, (__u32)ct_settings.max_launch_keys);
	bpf_map__set_max_entries(m->skel->maps.calls, (__u32)run->o->max_pending);
	gp_run__set_shares(run, m->skel);
	bpf_map__set_max_entries(m->skel->maps.procs, (__u32)run->o->max_procs);
	/* its names come on a ring buffer of its own (read in m_start), not the shared one */
	return gp_share__load(run, m->skel, NULL, err, len);
}

/* Return probes: always where a handle or an unload must be read back; on launches and
 * syncs only to time them (--no-latency leaves them out). */
static bool needs_return(enum gp_launch_prog p)
{
	return p == GP_LP_NAME || p == GP_LP_ALIAS || p == GP_LP_UNLOAD || p == GP_LP_INIT || p == GP_LP_CTX ||
	       ct_settings.latency;
}

/* Stream capture and graph calls; a driver older than some of them (cuGraphExecUpdate_v2,
 * BeginCaptureToGraph) is probed for those it has. */
static int attach_graphs(struct ct_mode *m, struct gp_run *run, const char *lib, char *err, size_t len)
{
	const char *names[GP_API__COUNT] = { 0 };
	long long offsets[GP_API__COUNT], ret_offsets[GP_API__COUNT];
	__u64 cookies[GP_API__COUNT];
	int r, n = gp_graph_apis_cnt;

	for (int i = 0; i < n; i++) {
		names[i] = gp_graph_apis[i].name;
		cookies[i] = GP_API_COOKIE(gp_graph_apis[i].id, (__u32)gp_graph_apis[i].call |
					   (gp_api_ptsz(gp_graph_apis[i].id) ? GP_COOKIE_PTSZ : 0));
	}
	r = attach__resolve(lib, names, n, offsets, err, len);
	if (r < 0)
		return r;
	for (int i = 0; i < n; i++)
		ret_offsets[i] = gp_graph_apis[i].with_return ? offsets[i] : -1;
	attach__log_missing(lib, names, offsets, n);
	return attach_pair__attach(&m->gprobes, run->links, lib, offsets, ret_offsets, cookies, n,
				   run->target_pid, err, len);
}

/* Launches and syncs are the high-rate probes the budget may sample (--max-overhead), and
 * with them the naming and alias calls: cuBLAS asks for a kernel's function at every launch
 * (~3600 a second in the H200's PyTorch loop, entry and return probes each, which cost it
 * more than all its sampled launches). Their hits are priced, not counted (BPF
 * gp_sampled_extra). A name is learned once per handle: one missed is learned from a later
 * window's call, or read from the driver's memory (midname.c). Unload calls are never
 * sampled: a name kept past its module's unload would name another kernel. Nor is cuInit:
 * a process's first call, which tells the budget of a process new to it (budget.c). */
static bool sampleable(enum gp_launch_prog p)
{
	return p != GP_LP_UNLOAD && p != GP_LP_INIT && p != GP_LP_CTX;
}

static int m_attach(void *st, struct gp_run *run, enum gp_lib kind, const char *lib, char *err, size_t len)
{
	struct ct_mode *m = st;
	const char *names[GP_API__COUNT] = { 0 };
	long long offsets[GP_API__COUNT], ret_offsets[GP_API__COUNT], hot[GP_API__COUNT], hot_ret[GP_API__COUNT];
	__u64 cookies[GP_API__COUNT];
	int r, n = gp_launch_apis_cnt;
	(void)kind; /* libcuda only */

	self_teach(m, run, lib);
	for (int i = 0; i < n; i++) {
		names[i] = gp_launch_apis[i].name;
		cookies[i] = GP_API_COOKIE(gp_launch_apis[i].id, (__u32)gp_launch_apis[i].prog |
					   (gp_api_ptsz(gp_launch_apis[i].id) ? GP_COOKIE_PTSZ : 0));
	}
	r = attach__resolve(lib, names, n, offsets, err, len);
	if (r < 0)
		return r;
	attach__log_missing(lib, names, offsets, n);
	for (int i = 0; i < n; i++) {
		ret_offsets[i] = needs_return(gp_launch_apis[i].prog) ? offsets[i] : -1;
		if (offsets[i] < 0 && gp_launch_apis[i].id == GP_API_cuLaunchKernel) {
			snprintf(err, len, "%s: does not export cuLaunchKernel", lib);
			return -ENOENT;
		}
		/* cuInit tells only a budget of a new process (budget.c): not probed without one */
		if ((gp_launch_apis[i].prog == GP_LP_INIT || gp_launch_apis[i].prog == GP_LP_CTX) && !run->budget)
			offsets[i] = ret_offsets[i] = -1;
		/* two sets: the sampled ones, and the rest */
		hot[i] = sampleable(gp_launch_apis[i].prog) ? offsets[i] : -1;
		hot_ret[i] = sampleable(gp_launch_apis[i].prog) ? ret_offsets[i] : -1;
		if (hot[i] >= 0)
			offsets[i] = ret_offsets[i] = -1;
	}
	r = attach_pair__attach(&m->probes, run->links, lib, offsets, ret_offsets, cookies, n,
				run->target_pid, err, len);
	if (!r)
		r = gp_run__attach_sampled(run, &m->sprobes, lib, hot, hot_ret, cookies, n, run->target_pid,
					   (const volatile int64_t *)&m->skel->bss->live_captures, err, len);
	if (!r)
		r = attach_graphs(m, run, lib, err, len);
	if (!r)
		add_build(m, lib);
	push_hints(m);
	return r;
}

/* One more lesson of uid's (at most MAX_LEARNS each). */
static bool may_learn(struct ct_mode *m, uint32_t uid)
{
	uintptr_t n = (uintptr_t)u64map__get(m->learns, uid);

	return n < MAX_LEARNS && !u64map__put(m->learns, uid, (void *)(n + 1));
}

static void learned(struct ct_mode *m)
{
	if (midname__take_changed(m->mn))
		state_save(m);
	push_hints(m);
}

static void learn(struct ct_mode *m, uint32_t pid, uint64_t handle, const char *mangled)
{
	uint32_t uid;

	if (!mangled[0] || uid_of(pid, &uid) || !may_learn(m, uid))
		return;
	midname__learn(m->mn, pid, handle, mangled);
	learned(m);
}

#define MAX_AWAITING 4096 /* names whose handle's copy is yet to come */

static void h_name(void *ctx, const struct gp_name_event *e)
{
	struct ct_mode *m = ctx;
	char raw[GP_NAME_LEN + 1], *keep;

	cudatrace__on_name(m->ct, e);
	snprintf(raw, sizeof(raw), "%.*s", GP_NAME_LEN, e->name);
	/* a name cut at GP_NAME_LEN is not the driver's: no lesson */
	if (strnlen(e->name, GP_NAME_LEN) >= GP_NAME_LEN || !raw[0])
		return;
	/* its handle's object follows (no usable layout covered its kind): learned from that
	 * copy, which the process's exit does not take away */
	if (e->copy_follows && u64map__size(m->awaiting) < MAX_AWAITING && (keep = strdup(raw))) {
		free(u64map__del(m->awaiting, e->gen));
		if (!u64map__put(m->awaiting, e->gen, keep))
			return;
		free(keep);
	}
	learn(m, e->pid, e->handle, raw);
}

static void h_namecopy(void *ctx, const struct gp_namecopy_event *e)
{
	struct ct_mode *m = ctx;
	char *mangled = u64map__del(m->awaiting, e->gen);
	struct mn_copy c;

	if (!mangled)
		return; /* learned live instead */
	copy_of(m, e->pid, &e->copy, &c);
	if (c.uid != UINT32_MAX && may_learn(m, c.uid)) {
		midname__learn_copy(m->mn, e->pid, mangled, &c);
		learned(m);
	}
	free(mangled);
}

/* The snapshot's question for an unnamed handle (see cudatrace__set_resolve): a name read
 * from memory is used only after the driver has accepted a launch of the handle (BPF marks
 * that at the launch's return: a forged or stale handle never gets there). */
static int resolve_name(void *ctx, uint32_t pid, uint32_t img, uint64_t handle, char *buf, size_t len)
{
	struct ct_mode *m = ctx;
	struct { uint32_t pid, img; uint64_t handle; } k = { pid, img, handle };
	__u8 ok;

	if (!ct_settings.latency)
		return -ENOTSUP; /* --no-latency: no launch returns, nothing verified */
	uint32_t build = 0, uid;
	int r;

	if (bpf_map_lookup_elem(bpf_map__fd(m->skel->maps.verified), &k, &ok))
		return -EAGAIN;
	r = midname__name(m->mn, pid, img, handle, buf, len);
	/* said once per build and run (the reports count the launches per process) */
	if (r == -ENODATA && !who_is(m, pid, &build, &uid) && build <= CT_BUILDS && !m->said_no_layout[build]) {
		m->said_no_layout[build] = true;
		gp_log(GP_LOG_INFO, "PID %u: kernels made before the attach stay unnamed: no kernel-handle layout learned yet for libcuda build %s (gpuprobe's self-learning was off or refused, see above; one run of any CUDA program under gpuprobe with this driver teaches it; --state-dir %s)",
		       pid, build ? m->builds[build - 1] : "(unknown)", layouts__dir(ct_settings.state_dir));
	}
	return r;
}

static void h_graph(void *ctx, const struct gp_graph_event *e)
{
	cudatrace__on_graph(((struct ct_mode *)ctx)->ct, e);
}

/* A graph version launched for the last time: its count leaves the launch table. */
static uint64_t take_graph_count(void *ctx, uint32_t pid, uint32_t img, uint64_t exec, uint32_t version)
{
	struct ct_mode *m = ctx;
	struct gp_launch_key k = { .pid = pid, .kind = GP_LAUNCH_GRAPH, .handle = exec, .gen = version, .img = img };
	int fd = bpf_map__fd(m->skel->maps.launches);
	__u64 count = 0;

	if (bpf_map_lookup_elem(fd, &k, &count))
		return 0;
	bpf_map_delete_elem(fd, &k);
	return count;
}

/* A launch of a handle never named: name it after the host stub on its stack. */
static void h_stub(void *ctx, const struct gp_stub_event *e)
{
	struct ct_mode *m = ctx;
	char frames[GP_MAX_STACK][512], name[1024], mangled[1024];
	const char *ptrs[GP_MAX_STACK];
	uint32_t n = e->nr_stack > GP_MAX_STACK ? GP_MAX_STACK : e->nr_stack;
	struct procpin *pin = symbolizer__pin(m->run->sym);
	struct mn_copy c;

	cudatrace__on_stub(m->ct, e->pid, e->img, e->handle);
	/* its exit may be read first (another ring): keep what naming needs while it lives */
	if (pin && n && !procpin__taken_ns(pin, (int)e->pid))
		procpin__take(pin, (int)e->pid, e->stack[0]);
	for (uint32_t i = 0; i < n; i++) {
		symbolizer__format(m->run->sym, (int)e->pid, e->stack[i], frames[i], sizeof(frames[i]));
		ptrs[i] = frames[i];
	}
	cudatrace__stub_name2(ptrs, n, name, sizeof(name), mangled, sizeof(mangled));
	copy_of(m, e->pid, &e->copy, &c);
	if (name[0]) {
		cudatrace__on_host_name(m->ct, e->pid, e->img, e->handle, name);
		/* a lesson from the object as copied (the process may be gone by now) */
		if (mangled[0] && c.obj_ok && c.uid != UINT32_MAX && may_learn(m, c.uid)) {
			midname__learn_copy(m->mn, e->pid, mangled, &c);
			learned(m);
		}
		return;
	}
	/* no stub: the name read through a layout from the handle's object as BPF copied it
	 * at this first sight (or, for a string it lacks, from memory while the process
	 * lives), to use once verified */
	midname__note_copy(m->mn, e->pid, e->img, e->handle, &c);
}

static void h_exit(void *ctx, const struct gp_exit_event *e)
{
	struct ct_mode *m = ctx;

	cudatrace__on_exit(m->ct, e);
	symbolizer__forget_pid(m->run->sym, (int)e->pid);
	/* the budget samples the launches: the process's life ends here (node-wide, no other
	 * exit record may come: its account ran on to the period's end, and a short job gone
	 * before its own probes were armed had a few ms of window extrapolated over it) */
	gp_run__exited(m->run, e->pid, e->ts_ns);
}

/* An exec ends the image's record; the new image starts its own. */
static void h_proc(void *ctx, const struct gp_proc_event *e)
{
	struct ct_mode *m = ctx;

	if (e->type != GP_EV_EXEC)
		return;
	cudatrace__on_exec(m->ct, e);
	if (m->pid_build) /* the new image may map another libcuda */
		u64map__del(m->pid_build, e->pid);
}

static int m_start(void *st, struct gp_run *run, char *err, size_t len)
{
	struct ct_mode *m = st;
	static const struct gp_on on[] = {
		GP_ON(GP_EV_NAME, h_name), GP_ON(GP_EV_STUB, h_stub), GP_ON(GP_EV_EXIT, h_exit),
		GP_ON(GP_EV_GRAPH, h_graph), GP_ON(GP_EV_NAMECOPY, h_namecopy)
	};
	struct gp_handlers h = { .ctx = m, GP_ONS(on) };
	static const struct gp_on on_hp[] = { GP_ON_PROCS(h_proc) };
	struct gp_handlers hp = { .ctx = m, GP_ONS(on_hp) };
	int r = attach_set__auto(run->links, m->skel->progs.launch_proc_exit, err, len);

	if (r)
		return r;
	/* the run's ptree matched the processes running at start (--comm, --cgroup) before
	 * the modes start: a thread's "not followed" holds from now on (bpf/cuda_launch.bpf.c) */
	__atomic_store_n(&m->skel->bss->followed_settled, 1, __ATOMIC_RELEASE);
	cudatrace__set_start(m->ct, gp_mono_ns());
	if (!symbolizer__pin(run->sym) && (m->own_pin = procpin__new("/proc")))
		symbolizer__set_pin(run->sym, m->own_pin);
	/* -p targets: kept now, while they surely live (a program that exits right after its
	 * launches is gone before its stacks are read) */
	for (int i = 0; symbolizer__pin(run->sym) && i < run->o->nr_pids; i++)
		procpin__take(symbolizer__pin(run->sym), run->o->pids[i], 0);
	cudatrace__set_take(m->ct, take_graph_count, m);
	cudatrace__set_resolve(m->ct, resolve_name, m);
	r = gp_events__add(run->events, bpf_map__fd(m->skel->maps.names), &h);
	if (!r)
		r = gp_run__subscribe(run, &hp);
	if (r)
		snprintf(err, len, "cannot read the launch ring buffer: %s", strerror(-r));
	return r;
}

/* The in-kernel counts into the aggregator. */
static void read_maps(struct ct_mode *m, bool rates, uint64_t now_ns)
{
	int lfd = bpf_map__fd(m->skel->maps.launches), hfd = bpf_map__fd(m->skel->maps.hists);
	struct gp_launch_key k, next;
	struct gp_hist_key hk, hnext;
	struct gp_hist h;
	__u64 count;
	void *prev = NULL;

	cudatrace__snapshot_begin(m->ct);
	while (!bpf_map_get_next_key(lfd, prev, &next)) {
		if (!bpf_map_lookup_elem(lfd, &next, &count))
			cudatrace__add_launch(m->ct, &next, count);
		k = next;
		prev = &k;
	}
	/* asked after the launches were read: a record a counted launch awaits was submitted
	 * before it, and is unread if and only if a buffer still holds records */
	cudatrace__set_unread(m->ct, m->run->events &&
				     (gp_events__more(m->run->events) || gp_events__unread(m->run->events)));
	prev = NULL;
	while (!bpf_map_get_next_key(hfd, prev, &hnext)) {
		if (!bpf_map_lookup_elem(hfd, &hnext, &h))
			cudatrace__set_hist(m->ct, &hnext, &h);
		hk = hnext;
		prev = &hk;
	}
	if (rates)
		cudatrace__snapshot_end(m->ct, now_ns);
	else
		cudatrace__snapshot_end_counts(m->ct, now_ns);
}

static void fill_drops(struct ct_mode *m, struct ct_snap *s)
{
	static const int reason[GP_LDROP__COUNT] = {
		[GP_LDROP_RINGBUF] = GP_R_RINGBUF_FULL, [GP_LDROP_KEYS] = GP_R_LAUNCH_TABLE_FULL,
		[GP_LDROP_PENDING] = GP_R_PENDING_TABLE_FULL, [GP_LDROP_NORETURN] = GP_R_RETURN_WITHOUT_ENTRY,
		[GP_LDROP_PROCS] = GP_R_PROCESS_TABLE_FULL, [GP_LDROP_GRAPH] = GP_R_GRAPH_TABLE_FULL,
		[GP_LDROP_SHARE] = GP_R_PENDING_SHARE_FULL,
	};
	struct ct_proc **procs;
	size_t n = 0, np = cudatrace__procs(m->ct, &procs);

	for (int i = 0; i < GP_LDROP__COUNT; i++)
		s->drops[n++] = (struct gp_snap_drop){
			reason[i], __atomic_load_n(&m->skel->bss->ldrops[i], __ATOMIC_RELAXED) };
	/* and what user space could not keep (graphs.h bounds) */
	for (size_t i = 0; i < np; i++)
		s->drops[GP_LDROP_GRAPH].count += procs[i]->graph_overflows;
	s->drops[n++] = (struct gp_snap_drop){ GP_R_MALFORMED_RECORD, gp_events__malformed(m->run->events) };
	n += gp_run__drops(m->run, s->drops + n);
	s->hdr.drops = s->drops;
	s->hdr.nr_drops = n;
}

uint64_t ct_sampled__count(const struct ct_sampled *smp, uint64_t v)
{
	return smp && smp->on ? (uint64_t)llround((double)v * smp->ratio) : v;
}

/* A process's counts of sampled probes are estimates (--max-overhead): its ratio and the
 * intervals of its count fields. Captures are never sampled (the budget holds every call
 * seen while one is live), so captured counts stay as seen. */
static void sample_of(struct gp_run *run, const struct ct_proc *p, struct ct_sampled *out, bool settled)
{
	const uint64_t v[CT_IV__COUNT] = {
		[CT_IV_LAUNCHES] = p->launches, [CT_IV_UNNAMED] = p->unnamed_launches,
		[CT_IV_GRAPH_LAUNCHES] = p->graph_launches, [CT_IV_GRAPH_EXECUTED] = p->graph_executed,
		[CT_IV_SYNCS] = p->hist[GP_HIST_SYNC].count,
	};

	double seen = (double)(p->launches + p->graph_launches + p->hist[GP_HIST_SYNC].count), extra;

	memset(out, 0, sizeof(*out));
	if (!(settled ? gp_run__sampling_settled : gp_run__sampling)(run, p->pid, &out->s) || out->s.observed <= 0)
		return;
	/* The budget's account ends at its last period boundary; the calls seen since (in the
	 * window open now, or every call seen again) are exact, and scaled by the ratio they
	 * would count as the whole next unseen part: added as they are, so that a count never
	 * runs ahead of the calls made (a counter cannot take that back: src/out/prom.c). */
	extra = seen - out->s.observed;
	if (extra > 0) {
		out->s.observed += extra;
		out->s.estimate += extra;
		out->s.lo += extra;
		out->s.hi += extra;
		out->s.fraction = out->s.observed / out->s.estimate;
	}
	out->on = true;
	out->ratio = out->s.estimate / out->s.observed;
	for (int i = 0; i < CT_IV__COUNT; i++)
		gp_sampling__count(&out->s, v[i], out->iv[i]);
}

static const struct gp_snap *m_snapshot(void *st, struct gp_run *run, enum gp_snap_kind kind, uint32_t pid)
{
	struct ct_mode *m = st;
	struct ct_snap *s = &m->snap;
	struct ct_proc **procs;
	size_t n, k = 0;
	uint64_t per = ct_settings.latency ? 2 : 1; /* entry, and return when timed */

	read_maps(m, kind != GP_SNAP_HITS, gp_run__now(run));
	n = cudatrace__procs(m->ct, &procs);
	free(s->procs);
	free(s->pids);
	free(m->sampled);
	free(m->counted);
	s->procs = calloc(n ? n : 1, sizeof(*s->procs));
	s->pids = calloc(n ? n : 1, sizeof(*s->pids));
	m->sampled = calloc(n ? n : 1, sizeof(*m->sampled));
	m->counted = calloc(n ? n : 1, sizeof(*m->counted));
	s->sampled = m->sampled;
	s->counted = m->counted;
	if (!s->procs || !s->pids || !m->sampled || !m->counted)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const struct ct_proc *p = procs[i];

		if (pid && p->pid != pid)
			continue;
		s->procs[k] = p;
		s->pids[k] = (struct gp_snap_pid){ .pid = p->pid, .exited = p->exited, .exit_ns = p->exit_ns,
			.unnamed = p->unnamed,
			.probe_hits = per * (p->launches + p->graph_launches + p->hist[GP_HIST_SYNC].count) };
		memcpy(s->pids[k].comm, p->comm, sizeof(s->pids[k].comm));
		if (kind != GP_SNAP_HITS) { /* the probe hits are what was seen: no estimate needed */
			sample_of(run, p, &m->sampled[k], false);
			sample_of(run, p, &m->counted[k], true);
		}
		k++;
	}
	s->nr_procs = k;
	s->hdr = (struct gp_snap){ .mode = "cudatrace", .kind = kind, .now_ns = gp_run__now(run), .env = gp_run__env(run),
				   .pids = s->pids, .nr_pids = k };
	s->latency = ct_settings.latency;
	s->top_shapes = ct_settings.top_shapes < 0 ? 1000000 : ct_settings.top_shapes;
	s->max_kernel_series = ct_settings.max_kernel_series;
	fill_drops(m, s);
	return &s->hdr;
}

struct image_match {
	uint32_t pid, img;
	size_t img_at; /* where a key of this map holds the image */
};

static bool key_of_image(void *ctx, const void *key)
{
	const struct image_match *m = ctx;
	uint32_t pid, img;

	memcpy(&pid, key, sizeof(pid));
	memcpy(&img, (const char *)key + m->img_at, sizeof(img));
	return pid == m->pid && img == m->img;
}

/* The per-process BPF maps, and where the image sits in each key (every key starts with
 * the PID). */
struct pid_map {
	struct bpf_map *map;
	size_t img_at;
};

static size_t pid_maps(struct cuda_launch_bpf *s, struct pid_map out[5])
{
	const struct pid_map maps[] = {
		{ s->maps.launches, offsetof(struct gp_launch_key, img) },
		{ s->maps.hists, offsetof(struct gp_hist_key, img) },
		/* struct handle_key (cuda_launch.bpf.c): pid, img, handle */
		{ s->maps.known, sizeof(uint32_t) },
		{ s->maps.sampled, sizeof(uint32_t) },
		{ s->maps.unloaded, sizeof(uint32_t) },
	};

	memcpy(out, maps, sizeof(maps));
	return sizeof(maps) / sizeof(maps[0]);
}

/* A record's BPF entries go with it: a PID's, or one image's (see cudatrace__reap). A
 * PID's whole entries are let go together with the others of the same reap (m->doomed,
 * one walk of each map for all of them: forget_doomed); one image's at once. */
static void forget_now(struct ct_mode *cm, uint32_t pid, const uint32_t *img)
{
	struct pid_map maps[5];
	size_t n = pid_maps(cm->skel, maps);

	for (size_t i = 0; i < n; i++) {
		int fd = bpf_map__fd(maps[i].map);
		size_t ks = bpf_map__key_size(maps[i].map);
		struct image_match m = { pid, img ? *img : 0, maps[i].img_at };

		if (img)
			gp_map__delete_if(fd, ks, key_of_image, &m);
		else
			gp_map__delete_pid(fd, ks, pid);
	}
}

static void forget_pid(void *ctx, uint32_t pid, const uint32_t *img)
{
	struct ct_mode *cm = ctx;

	if (img || !cm->doomed || u64map__put(cm->doomed, pid, (void *)1))
		forget_now(cm, pid, img);
	midname__forget(cm->mn, pid, img);
	if (!img && cm->own_pin)
		procpin__release(cm->own_pin, (int)pid);
	if (!img && cm->pid_build)
		u64map__del(cm->pid_build, pid);
}

static bool is_doomed(void *ctx, uint32_t pid)
{
	return u64map__get(ctx, pid) != NULL;
}

/* The entries of every PID one reap let go, one walk of each map for all of them: a walk
 * per PID made 2,000 short processes cost 2,000 walks of maps of thousands of entries
 * (under QEMU's TCG, 3,920 launch entries were still there 82 s after the last exit). */
static void forget_doomed(struct ct_mode *m)
{
	struct pid_map maps[5];
	size_t n = pid_maps(m->skel, maps);

	if (u64map__size(m->doomed))
		for (size_t i = 0; i < n; i++)
			gp_map__delete_pids(bpf_map__fd(maps[i].map), bpf_map__key_size(maps[i].map), is_doomed,
					    m->doomed);
	u64map__free(m->doomed);
	m->doomed = NULL;
}

static void m_reap(void *st, struct gp_run *run, uint64_t cutoff_ns, uint32_t keep_pid)
{
	struct ct_mode *m = st;

	if (!run->behind) /* a process's last records may still be in the buffers */
		cudatrace__sweep(m->ct, gp_mono_ns());
	m->doomed = u64map__new(); /* NULL: each PID's own walks, as they go */
	cudatrace__reap(m->ct, cutoff_ns, keep_pid, forget_pid, st);
	if (m->doomed)
		forget_doomed(m);
}

/* Launches per process read from the BPF table itself (a snapshot would move the launch
 * rate of the next report), graph launches with those of retired graph versions, and runs
 * per kernel (launched + run inside graph launches: the report's LAUNCHES + GRAPH) as of
 * the last snapshot (gpuprobe top takes one before each tick). */
static void m_counters(void *st, struct gp_run *run, gp_counter_fn emit, void *ctx)
{
	struct ct_mode *m = st;
	int fd = bpf_map__fd(m->skel->maps.launches);
	struct gp_launch_key k, next;
	struct ct_proc **procs;
	void *prev = NULL;
	__u64 count;
	size_t n;

	(void)run;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &count))
			emit(ctx, &(struct gp_counter){ next.pid, GP_TRACK_LAUNCHES,
							next.kind == GP_LAUNCH_GRAPH ? "graphs" : "kernels",
							(double)count, GP_CTR_TOTAL });
		k = next;
		prev = &k;
	}
	n = cudatrace__procs(m->ct, &procs);
	for (size_t i = 0; i < n; i++) {
		/* graph versions no longer launched left the table (take_graph_count): their
		 * launches count as the report counts them */
		uint64_t exec, retired = 0;
		void *v;

		for (size_t it = 0; u64map__next(procs[i]->retired, &it, &exec, &v);)
			retired += ((const struct ct_graph *)v)->launches;
		if (retired)
			emit(ctx, &(struct gp_counter){ procs[i]->pid, GP_TRACK_LAUNCHES, "graphs", (double)retired,
							GP_CTR_TOTAL });
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < procs[i]->nr_kernels; j++)
			emit(ctx, &(struct gp_counter){ procs[i]->pid, GP_TRACK_KERNELS, procs[i]->kernels[j].name,
							(double)(procs[i]->kernels[j].launches +
								 procs[i]->kernels[j].graph_executed),
							GP_CTR_TOTAL | GP_CTR_DETAIL });
}

const struct gp_mode gp_mode_cudatrace = {
	.name = "cudatrace",
	.flag = "cudatrace",
	.doc = "Kernel launches by name and shape, graph launches, launch and sync latency",
	.needs = GP_NEED_LIBCUDA,
	.frontends = GP_FE_ALL,
	.probe_hits = true,
	.options = options,
	.open = m_open,
	.attach = m_attach,
	.start = m_start,
	.snapshot = m_snapshot,
	.text = ct_report__text,
	.json = ct_report__json,
	.prom = ct_report__prom,
	.reap = m_reap,
	.counters = m_counters,
	.free = m_free,
};
