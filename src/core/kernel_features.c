/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "core/attach.h"
#include "core/kernel_features.h"
#include "lib/procmaps.h"

struct feat_desc {
	const char *name, *kind, *since, *arch;
	enum gp_feat_need need;
	const char *without;
};

/* "since": the first mainline release; where only measurements say, the row says so. */
static const struct feat_desc descs[GP_FEAT__COUNT] = {
	[GP_FEAT_BTF_VMLINUX] = { "kernel BTF", "btf", "5.4", NULL, GP_NEED_REQUIRED,
		"CO-RE programs need /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF=y)" },
	[GP_FEAT_BTF_MODULES] = { "module BTF", "btf", "5.11", NULL, GP_NEED_INFO,
		"not needed: gpuprobe reads no module types (CONFIG_DEBUG_INFO_BTF_MODULES)" },
	[GP_FEAT_PROG_KPROBE] = { "kprobe/uprobe programs", "prog", "4.1", NULL, GP_NEED_REQUIRED,
		"uprobes run BPF_PROG_TYPE_KPROBE programs (CONFIG_BPF_EVENTS=y)" },
	[GP_FEAT_PROG_TRACEPOINT] = { "tracepoint programs", "prog", "4.7", NULL, GP_NEED_REQUIRED,
		"process exits (sched_process_exit) need BPF_PROG_TYPE_TRACEPOINT" },
	[GP_FEAT_MAP_HASH] = { "hash map", "map", "3.19", NULL, GP_NEED_REQUIRED,
		"per-process and per-call state live in BPF_MAP_TYPE_HASH" },
	[GP_FEAT_MAP_ARRAY] = { "array map", "map", "3.19", NULL, GP_NEED_REQUIRED,
		"settings and counters live in BPF_MAP_TYPE_ARRAY" },
	[GP_FEAT_MAP_PERCPU_ARRAY] = { "per-CPU array map", "map", "4.6", NULL, GP_NEED_REQUIRED,
		"scratch records are built in BPF_MAP_TYPE_PERCPU_ARRAY" },
	[GP_FEAT_MAP_RINGBUF] = { "ring buffer", "map", "5.8", NULL, GP_NEED_REQUIRED,
		"records reach user space through BPF_MAP_TYPE_RINGBUF" },
	[GP_FEAT_MAP_MMAPABLE] = { "mmapable array (global data)", "map", "5.5", NULL, GP_NEED_REQUIRED,
		"drop counters in .bss are read through a memory-mapped array (BPF_F_MMAPABLE)" },
	[GP_FEAT_HELPER_MAP_OPS] = { "bpf_map_{lookup,update,delete}_elem", "helper", "3.19", NULL,
		GP_NEED_REQUIRED, "every program keeps state in maps" },
	[GP_FEAT_HELPER_KTIME] = { "bpf_ktime_get_ns", "helper", "4.1", NULL, GP_NEED_REQUIRED,
		"timestamps and durations" },
	[GP_FEAT_HELPER_PID_TGID] = { "bpf_get_current_pid_tgid", "helper", "4.2", NULL,
		GP_NEED_REQUIRED, "everything is keyed by process" },
	[GP_FEAT_HELPER_COMM] = { "bpf_get_current_comm", "helper", "4.2", NULL, GP_NEED_REQUIRED,
		"process names" },
	[GP_FEAT_HELPER_TASK] = { "bpf_get_current_task", "helper", "4.8", NULL, GP_NEED_REQUIRED,
		"the leader's name, the ioctl's file" },
	[GP_FEAT_HELPER_STACK] = { "bpf_get_stack", "helper", "4.18", NULL, GP_NEED_REQUIRED,
		"allocation and launch stacks" },
	[GP_FEAT_HELPER_READ_USER] = { "bpf_probe_read_user", "helper", "5.5", NULL, GP_NEED_REQUIRED,
		"out-parameters and stack arguments of driver calls" },
	[GP_FEAT_HELPER_READ_USER_STR] = { "bpf_probe_read_user_str", "helper", "5.5", NULL,
		GP_NEED_REQUIRED, "kernel names passed to the driver" },
	[GP_FEAT_HELPER_READ_KERNEL] = { "bpf_probe_read_kernel", "helper", "5.5", NULL,
		GP_NEED_REQUIRED, "CO-RE reads of kernel structures" },
	[GP_FEAT_HELPER_RINGBUF] = { "bpf_ringbuf_{reserve,submit}", "helper", "5.8", NULL,
		GP_NEED_REQUIRED, "records reach user space through BPF ring buffers" },
	[GP_FEAT_HELPER_COOKIE] = { "bpf_get_attach_cookie (cookies)", "helper", "5.15", NULL,
		GP_NEED_REQUIRED, "one program per mode tells the probed functions apart by cookie" },
	[GP_FEAT_HELPER_LOOP] = { "bpf_loop", "helper", "5.17", NULL, GP_NEED_MODE,
		"--stacks dwarf's CPython frames (with bpf_find_vma, 5.17): --stacks auto takes frame pointers" },
	[GP_FEAT_UPROBE_PMU] = { "uprobe perf PMU", "pmu", "4.17", NULL, GP_NEED_REQUIRED,
		"uprobes are created through /sys/bus/event_source/devices/uprobe (CONFIG_UPROBE_EVENTS=y)" },
	[GP_FEAT_KPROBE_PMU] = { "kprobe perf PMU", "pmu", "4.17", NULL, GP_NEED_MODE,
		"--ioctl-backend=kprobe needs kprobes (CONFIG_KPROBE_EVENTS); --ioctl uses syscall tracepoints" },
	[GP_FEAT_LINK_PERF_EVENT] = { "perf-event BPF link", "link", "5.15", NULL, GP_NEED_REQUIRED,
		"attach cookies are set through BPF_LINK_CREATE on perf events" },
	[GP_FEAT_LINK_UPROBE_MULTI] = { "uprobe_multi link", "link", "6.6", NULL, GP_NEED_FALLBACK,
		"one perf-event uprobe per function: slower to attach, ~0.1 s each to detach" },
	[GP_FEAT_EXIT_GROUP_DEAD] = { "sched_process_exit group_dead", "btf", "<=6.16",
		NULL, GP_NEED_FALLBACK, "a process ends with its leader's exit (as bcc's exitsnoop); Debian's 6.12 lacks the field, 6.16 has it" },
	[GP_FEAT_URETPROBE_SYSCALL] = { "uretprobe system call", "syscall", "6.11", "x86_64", GP_NEED_INFO,
		"return probes trap with int3 (a little slower, nothing else)" },
	[GP_FEAT_CALLER_AT_ENTRY] = { "caller at entry in user stacks", "uprobe", "6.11", "x86_64",
		GP_NEED_FALLBACK, "gpuprobe's BPF adds the caller from the return address at entry (mainline 6.11; in 6.1.y and 6.6.y from Oct 2024)" },
	[GP_FEAT_ENTRY_PUSH_EMULATED] = { "frame prologue emulated at the trap", "uprobe", "<=6.1", "x86_64",
		GP_NEED_FALLBACK, "each probe hit single-steps the prologue out of line (~10x dearer); push is emulated since after 4.14 (measured on 6.1, 6.12, 6.18)" },
	[GP_FEAT_URETPROBE_SECCOMP] = { "uretprobe under seccomp", "uprobe", "6.14",
		"x86_64", GP_NEED_FALLBACK,
		"before 6.11 there is no uretprobe syscall; 6.11-6.13 (before 6.12.14, 6.13.3) crash a process whose seccomp filter fails it (Docker's default) when a return probe fires" },
};

struct features {
	struct gp_feature_row rows[GP_FEAT__COUNT];
	unsigned emulated;     /* bits of enum gp_insn_class */
	bool emulated_measured;
};

static void set(struct features *f, enum gp_feature id, enum gp_feat_state st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set(struct features *f, enum gp_feature id, enum gp_feat_state st, const char *fmt, ...)
{
	va_list ap;

	f->rows[id].state = st;
	va_start(ap, fmt);
	vsnprintf(f->rows[id].detail, sizeof(f->rows[id].detail), fmt, ap);
	va_end(ap);
}

static int quiet_print(enum libbpf_print_level l, const char *fmt, va_list ap)
{
	(void)l;
	(void)fmt;
	(void)ap;
	return 0;
}

static const char *machine(void)
{
#if defined(__x86_64__)
	return "x86_64";
#elif defined(__aarch64__)
	return "aarch64";
#else
	return "other";
#endif
}

/* libbpf's probes answer 1, 0, or -errno (EPERM without CAP_BPF). */
static void from_probe(struct features *f, enum gp_feature id, int r)
{
	if (r == 1)
		set(f, id, GP_FEAT_PRESENT, "loads");
	else if (r == 0)
		set(f, id, GP_FEAT_MISSING, "rejected by the kernel");
	else
		set(f, id, GP_FEAT_UNKNOWN, "cannot probe: %s", strerror(-r));
}

static void probe_helpers(struct features *f, enum gp_feature id, const enum bpf_func_id *ids, int n)
{
	int r = 1;

	for (int i = 0; i < n && r == 1; i++)
		r = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, ids[i], NULL);
	from_probe(f, id, r);
}

static void probe_bpf(struct features *f)
{
	static const enum bpf_func_id map_ops[] = { BPF_FUNC_map_lookup_elem, BPF_FUNC_map_update_elem,
						    BPF_FUNC_map_delete_elem };
	static const enum bpf_func_id rb[] = { BPF_FUNC_ringbuf_reserve, BPF_FUNC_ringbuf_submit,
					       BPF_FUNC_ringbuf_discard };
	static const struct {
		enum gp_feature id;
		enum bpf_func_id fn;
	} helpers[] = {
		{ GP_FEAT_HELPER_KTIME, BPF_FUNC_ktime_get_ns },
		{ GP_FEAT_HELPER_PID_TGID, BPF_FUNC_get_current_pid_tgid },
		{ GP_FEAT_HELPER_COMM, BPF_FUNC_get_current_comm },
		{ GP_FEAT_HELPER_TASK, BPF_FUNC_get_current_task },
		{ GP_FEAT_HELPER_STACK, BPF_FUNC_get_stack },
		{ GP_FEAT_HELPER_READ_USER, BPF_FUNC_probe_read_user },
		{ GP_FEAT_HELPER_READ_USER_STR, BPF_FUNC_probe_read_user_str },
		{ GP_FEAT_HELPER_READ_KERNEL, BPF_FUNC_probe_read_kernel },
		{ GP_FEAT_HELPER_COOKIE, BPF_FUNC_get_attach_cookie },
		{ GP_FEAT_HELPER_LOOP, BPF_FUNC_loop },
	};
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = BPF_F_MMAPABLE);
	int fd;

	from_probe(f, GP_FEAT_PROG_KPROBE, libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL));
	from_probe(f, GP_FEAT_PROG_TRACEPOINT, libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACEPOINT, NULL));
	from_probe(f, GP_FEAT_MAP_HASH, libbpf_probe_bpf_map_type(BPF_MAP_TYPE_HASH, NULL));
	from_probe(f, GP_FEAT_MAP_ARRAY, libbpf_probe_bpf_map_type(BPF_MAP_TYPE_ARRAY, NULL));
	from_probe(f, GP_FEAT_MAP_PERCPU_ARRAY, libbpf_probe_bpf_map_type(BPF_MAP_TYPE_PERCPU_ARRAY, NULL));
	from_probe(f, GP_FEAT_MAP_RINGBUF, libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL));
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "gp_feat_mmap", 4, 8, 1, &mm);
	if (fd >= 0) {
		set(f, GP_FEAT_MAP_MMAPABLE, GP_FEAT_PRESENT, "BPF_F_MMAPABLE array created");
		close(fd);
	} else if (errno == EINVAL) {
		set(f, GP_FEAT_MAP_MMAPABLE, GP_FEAT_MISSING, "BPF_F_MMAPABLE refused (EINVAL)");
	} else {
		set(f, GP_FEAT_MAP_MMAPABLE, GP_FEAT_UNKNOWN, "cannot probe: %s", strerror(errno));
	}
	probe_helpers(f, GP_FEAT_HELPER_MAP_OPS, map_ops, 3);
	probe_helpers(f, GP_FEAT_HELPER_RINGBUF, rb, 3);
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		probe_helpers(f, helpers[i].id, &helpers[i].fn, 1);
}

static void probe_btf(struct features *f)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	int id, nmod = 0, err;
	DIR *d;

	err = libbpf_get_error(btf);
	if (err) {
		btf = NULL;
		set(f, GP_FEAT_BTF_VMLINUX, GP_FEAT_MISSING, "%s",
		    access("/sys/kernel/btf/vmlinux", F_OK) ? "/sys/kernel/btf/vmlinux missing" :
							       "/sys/kernel/btf/vmlinux does not parse");
		set(f, GP_FEAT_EXIT_GROUP_DEAD, GP_FEAT_UNKNOWN, "no kernel BTF");
	} else {
		set(f, GP_FEAT_BTF_VMLINUX, GP_FEAT_PRESENT, "/sys/kernel/btf/vmlinux, %u types",
		    btf__type_cnt(btf));
		/* what bpf_core_field_exists(ctx->group_dead) in bpf/gpuprobe.h resolves */
		id = btf__find_by_name_kind(btf, "trace_event_raw_sched_process_exit", BTF_KIND_STRUCT);
		t = id > 0 ? btf__type_by_id(btf, id) : NULL;
		set(f, GP_FEAT_EXIT_GROUP_DEAD, GP_FEAT_MISSING, "%s",
		    t ? "the tracepoint has no group_dead field" :
			"sched_process_exit has no own record type (the process template's)");
		for (int i = 0; t && i < btf_vlen(t); i++)
			if (!strcmp(btf__name_by_offset(btf, btf_members(t)[i].name_off), "group_dead"))
				set(f, GP_FEAT_EXIT_GROUP_DEAD, GP_FEAT_PRESENT, "trace_event_raw_sched_process_exit.group_dead");
	}
	btf__free(btf);
	d = opendir("/sys/kernel/btf");
	for (struct dirent *e; d && (e = readdir(d));)
		if (e->d_name[0] != '.' && strcmp(e->d_name, "vmlinux"))
			nmod++;
	if (d)
		closedir(d);
	if (nmod)
		set(f, GP_FEAT_BTF_MODULES, GP_FEAT_PRESENT, "%d modules in /sys/kernel/btf", nmod);
	else
		set(f, GP_FEAT_BTF_MODULES, access("/sys/kernel/btf", F_OK) ? GP_FEAT_MISSING : GP_FEAT_UNKNOWN,
		    "no module BTF in /sys/kernel/btf (none loaded, or CONFIG_DEBUG_INFO_BTF_MODULES off)");
}

static int pmu_type(const char *pmu)
{
	char path[128];
	FILE *fp;
	int t = -1;

	snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", pmu);
	fp = fopen(path, "r");
	if (!fp)
		return -errno;
	if (fscanf(fp, "%d", &t) != 1)
		t = -EINVAL;
	fclose(fp);
	return t;
}

/* The bit of config that makes a uprobe PMU event a return probe ("config:0"). */
static int pmu_retprobe_bit(void)
{
	FILE *fp = fopen("/sys/bus/event_source/devices/uprobe/format/retprobe", "r");
	int bit = 0;

	if (!fp)
		return -errno;
	if (fscanf(fp, "config:%d", &bit) != 1 || bit < 0 || bit > 63)
		bit = -EINVAL;
	fclose(fp);
	return bit;
}

int features__uprobe_event(const char *path, unsigned long long off, int pid, bool ret)
{
	struct perf_event_attr attr;
	int type = pmu_type("uprobe"), bit = ret ? pmu_retprobe_bit() : 0, fd;

	if (type < 0)
		return type;
	if (bit < 0)
		return bit;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = (__u32)type;
	attr.config = ret ? 1ULL << bit : 0;
	attr.config1 = (__u64)(uintptr_t)path;
	attr.config2 = off;
	attr.disabled = 1;
	fd = (int)syscall(__NR_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Children that die on purpose (the seccomp probe, the uretprobe syscall) leave no core. */
static void no_core(void)
{
	struct rlimit rl = { 0, 0 };

	setrlimit(RLIMIT_CORE, &rl);
}

/* ---- functions the live probes attach to, in assembly so their first instruction is
 * exactly the one under test ---------------------------------------------------------- */
#if defined(__x86_64__)
#define FN(name, body) \
	__asm__(".text\n.globl " #name "\n.type " #name ", @function\n" #name ":\n" body \
		".size " #name ", .-" #name "\n")
FN(gp_feat_push, "\tpush %rbp\n\tmov %rsp, %rbp\n\tlea 1(%rdi), %eax\n\tpop %rbp\n\tret\n");
FN(gp_feat_endbr, "\t.byte 0xf3, 0x0f, 0x1e, 0xfa\n\tpush %rbp\n\tmov %rsp, %rbp\n\tlea 1(%rdi), %eax\n\tpop %rbp\n\tret\n");
FN(gp_feat_nop, "\tnop\n\tlea 1(%rdi), %eax\n\tret\n");
FN(gp_feat_branch, "\tjmp 1f\n1:\tlea 1(%rdi), %eax\n\tret\n");
FN(gp_feat_mov, "\tmov %rbp, %rax\n\tlea 1(%rdi), %eax\n\tret\n");
FN(gp_feat_sub, "\tsub $8, %rsp\n\tlea 1(%rdi), %eax\n\tadd $8, %rsp\n\tret\n");
FN(gp_feat_other, "\tlea 1(%rdi), %eax\n\tret\n");
#define HAVE_FNS 1
#elif defined(__aarch64__)
#define FN(name, body) \
	__asm__(".text\n.globl " #name "\n.type " #name ", %function\n.p2align 2\n" #name ":\n" body \
		".size " #name ", .-" #name "\n")
FN(gp_feat_push, "\tstp x29, x30, [sp, #-16]!\n\tmov x29, sp\n\tadd w0, w0, #1\n\tldp x29, x30, [sp], #16\n\tret\n");
FN(gp_feat_endbr, "\thint #34\n\tadd w0, w0, #1\n\tret\n"); /* bti c */
FN(gp_feat_pac, "\thint #25\n\tadd w0, w0, #1\n\thint #29\n\tret\n"); /* paciasp ... autiasp */
FN(gp_feat_nop, "\tnop\n\tadd w0, w0, #1\n\tret\n");
FN(gp_feat_branch, "\tb 1f\n1:\tadd w0, w0, #1\n\tret\n");
FN(gp_feat_mov, "\tmov x9, sp\n\tadd w0, w0, #1\n\tret\n");
FN(gp_feat_sub, "\tsub sp, sp, #16\n\tadd w0, w0, #1\n\tadd sp, sp, #16\n\tret\n");
FN(gp_feat_other, "\tadd w0, w0, #1\n\tret\n");
#define HAVE_FNS 1
#endif

#ifdef HAVE_FNS
int gp_feat_push(int x);
int gp_feat_endbr(int x);
int gp_feat_nop(int x);
int gp_feat_branch(int x);
int gp_feat_mov(int x);
int gp_feat_sub(int x);
int gp_feat_other(int x);
#if defined(__aarch64__)
int gp_feat_pac(int x);
#endif

typedef int (*feat_fn)(int);

static const struct {
	enum gp_insn_class cls;
	feat_fn fn;
} entry_fns[] = {
#if defined(__x86_64__)
	{ GP_INSN_PUSH, gp_feat_push },
#else
	{ GP_INSN_STP_FP, gp_feat_push },
	{ GP_INSN_PAC, gp_feat_pac },
#endif
	{ GP_INSN_ENDBR, gp_feat_endbr }, { GP_INSN_NOP, gp_feat_nop },
	{ GP_INSN_BRANCH, gp_feat_branch }, { GP_INSN_MOV, gp_feat_mov },
	{ GP_INSN_SUB_SP, gp_feat_sub },  { GP_INSN_OTHER, gp_feat_other },
};

/* Calls fn from a frame of its own, so the caller a stack shows is this function. */
__attribute__((noinline)) static int call_target(feat_fn fn, int x)
{
	int r = fn(x);

	__asm__ volatile("" ::: "memory"); /* not a tail call: this frame must exist */
	return r;
}

struct where {
	unsigned long long off;
	char path[4096];
};

/* The file and offset a uprobe on fn takes (fn is in gpuprobe's own text). */
static int locate(feat_fn fn, struct where *w)
{
	memset(w, 0, sizeof(*w));
	return procmaps__locate("/proc", getpid(), (uintptr_t)fn, w->path, sizeof(w->path), &w->off);
}

static int uprobe_event(const struct where *w, pid_t pid, bool ret)
{
	return features__uprobe_event(w->path, w->off, pid, ret);
}

/*
 * A child that waits for one byte on a pipe, runs what it is told, reports on another
 * pipe and waits to be killed. Children that do not hear from us within 10 s die.
 */
struct child {
	pid_t pid;
	int go, done; /* our ends */
};

enum child_job { JOB_CALL, JOB_SECCOMP_CALL };

static bool has_xol_area(pid_t pid)
{
	char path[64], line[512];
	bool found = false;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	while (fp && fgets(line, sizeof(line), fp))
		if (strstr(line, "[uprobes]"))
			found = true;
	if (fp)
		fclose(fp);
	return found;
}

/* What Docker's default profile does with a system call it does not list: fail it with
 * EPERM. Here only the uretprobe call is listed as such; everything else is allowed. */
static int seccomp_deny_uretprobe(void)
{
#if defined(__x86_64__)
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 335 /* __NR_uretprobe */, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]), .filter = insns };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return -errno;
	return 0;
#else
	return -ENOSYS;
#endif
}

static int child_start(struct child *c, feat_fn fn, enum child_job job)
{
	int go[2] = { -1, -1 }, done[2] = { -1, -1 };

	c->pid = -1;
	c->go = c->done = -1;
	if (pipe2(go, O_CLOEXEC) || pipe2(done, O_CLOEXEC)) {
		int err = -errno;

		for (int i = 0; i < 2; i++) {
			if (go[i] >= 0)
				close(go[i]);
			if (done[i] >= 0)
				close(done[i]);
		}
		return err;
	}
	fflush(NULL);
	c->pid = fork();
	if (c->pid == 0) {
		char b = 0;
		volatile int sink;

		alarm(10);
		no_core();
		close(go[1]);
		close(done[0]);
		if (job == JOB_SECCOMP_CALL && seccomp_deny_uretprobe())
			_exit(3);
		if (read(go[0], &b, 1) != 1)
			_exit(2);
		sink = call_target(fn, b);
		(void)sink;
		b = 1;
		if (write(done[1], &b, 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	if (c->pid < 0) {
		close(go[1]);
		close(done[0]);
		return -errno;
	}
	c->go = go[1];
	c->done = done[0];
	return 0;
}

/* Lets the child call its function; 0 once it says it did, or -errno / -ECHILD when it
 * died first (its wait status in *status). */
static int child_run(struct child *c, int *status)
{
	char b = 1;

	*status = 0;
	if (write(c->go, &b, 1) != 1)
		return -errno;
	if (read(c->done, &b, 1) == 1)
		return 0;
	waitpid(c->pid, status, 0);
	c->pid = -1;
	return -ECHILD;
}

static void child_end(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	if (c->go >= 0)
		close(c->go);
	if (c->done >= 0)
		close(c->done);
	c->pid = c->go = c->done = -1;
}

/* A child started for job on fn (located at w), with an enabled uprobe (ret: a return
 * probe) on fn in it that runs prog (-1: none); the probe's fd in *pfd. Whatever it
 * returns, the caller closes *pfd when >= 0 and ends the child. */
static int child_probed(struct child *c, int *pfd, const struct where *w, feat_fn fn,
			enum child_job job, bool ret, int prog)
{
	int r;

	*pfd = -1;
	r = child_start(c, fn, job);
	if (r)
		return r;
	*pfd = uprobe_event(w, c->pid, ret);
	if (*pfd < 0)
		return *pfd;
	if ((prog >= 0 && ioctl(*pfd, PERF_EVENT_IOC_SET_BPF, prog)) ||
	    ioctl(*pfd, PERF_EVENT_IOC_ENABLE, 0))
		return -errno;
	return 0;
}

/* 1: the kernel emulates fn's first instruction; 0: it single-steps it; -errno. A probed
 * instruction that is single-stepped makes the kernel map the [uprobes] slots area into
 * the process at the first hit; an emulated one never needs it. */
static int entry_emulated(feat_fn fn)
{
	struct child c = { .pid = -1, .go = -1, .done = -1 };
	struct where w;
	int r, pfd = -1, status;
	bool before;

	r = locate(fn, &w);
	if (r)
		return r;
	r = child_probed(&c, &pfd, &w, fn, JOB_CALL, false, -1);
	if (r)
		goto cleanup;
	before = has_xol_area(c.pid);
	r = child_run(&c, &status);
	if (r)
		goto cleanup;
	r = before ? -EEXIST : !has_xol_area(c.pid);
cleanup:
	if (pfd >= 0)
		close(pfd);
	child_end(&c);
	return r;
}

static void probe_emulation(struct features *f)
{
	int n = 0, r = 0;

	f->emulated = 0;
	for (size_t i = 0; i < sizeof(entry_fns) / sizeof(entry_fns[0]); i++) {
		r = entry_emulated(entry_fns[i].fn);
		if (r < 0)
			break;
		if (r)
			f->emulated |= 1U << entry_fns[i].cls;
		n++;
	}
	if (r < 0) {
		set(f, GP_FEAT_ENTRY_PUSH_EMULATED, GP_FEAT_UNKNOWN, "cannot probe: %s", strerror(-r));
		f->emulated = 0;
		return;
	}
	f->emulated_measured = true;
#if defined(__x86_64__)
	set(f, GP_FEAT_ENTRY_PUSH_EMULATED, (f->emulated >> GP_INSN_PUSH) & 1 ? GP_FEAT_PRESENT : GP_FEAT_MISSING,
#else
	set(f, GP_FEAT_ENTRY_PUSH_EMULATED, (f->emulated >> GP_INSN_STP_FP) & 1 ? GP_FEAT_PRESENT : GP_FEAT_MISSING,
#endif
	    "emulated here:%s%s%s%s%s%s%s%s%s",
	    f->emulated ? "" : " none",
	    (f->emulated >> GP_INSN_PUSH) & 1 ? " push" : "",
	    (f->emulated >> GP_INSN_STP_FP) & 1 ? " stp-fp" : "",
	    (f->emulated >> GP_INSN_ENDBR) & 1 ? " endbr/bti" : "",
	    (f->emulated >> GP_INSN_PAC) & 1 ? " pac" : "",
	    (f->emulated >> GP_INSN_NOP) & 1 ? " nop" : "",
	    (f->emulated >> GP_INSN_BRANCH) & 1 ? " branch" : "",
	    (f->emulated >> GP_INSN_MOV) & 1 ? " mov" : "",
	    (f->emulated >> GP_INSN_SUB_SP) & 1 ? " sub-sp" : "");
	(void)n;
}

/* Raw instructions: r6 = ctx; get_stack(ctx, fp-32, 32, USER) -> fp-40 = r0;
 * map[0] = fp-40..fp-1. A program fd or -errno. */
static int stack_prog(int map)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_6, .src_reg = BPF_REG_1 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -32 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = 32 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_4, .imm = BPF_F_USER_STACK },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_get_stack },
		{ .code = BPF_STX | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_0, .off = -40 },
		{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .off = -44, .imm = 0 },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1, .src_reg = BPF_PSEUDO_MAP_FD, .imm = map },
		{ 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -44 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_3, .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_3, .imm = -40 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_4, .imm = 0 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_update_elem },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "gp_feat_stack", "GPL", insns,
				 sizeof(insns) / sizeof(insns[0]), NULL);

	return prog < 0 ? -errno : prog;
}

/* What the program kept: 1 when the second frame is in call_target, 0 when not, -errno;
 * the stack's depth in *frames. */
static int read_caller(int map, long long *frames)
{
	__u64 val[5] = {};
	__u32 key = 0;
	int r = bpf_map_lookup_elem(map, &key, val) ? -errno : 0;

	if (!r && (__s64)val[0] < 16)
		r = (__s64)val[0] < 0 ? (int)(__s64)val[0] : -ENODATA;
	if (!r) {
		*frames = (long long)(val[0] / 8);
		/* the child is a fork: its addresses are ours */
		r = val[2] - (uint64_t)(uintptr_t)call_target < 64;
	}
	return r;
}

/*
 * A uprobe on fn called from call_target, whose BPF program (stack_prog) keeps the second
 * frame of bpf_get_stack(BPF_F_USER_STACK): 1 when that frame is in call_target (the
 * kernel put the caller in), 0 when not, -errno.
 */
static int caller_at_entry(feat_fn fn, long long *frames)
{
	struct where w;
	struct child c = { .pid = -1, .go = -1, .done = -1 };
	int map = -1, prog = -1, pfd = -1, r, status;

	*frames = 0;
	r = locate(fn, &w);
	if (r)
		goto cleanup;
	map = bpf_map_create(BPF_MAP_TYPE_ARRAY, "gp_feat_stack", 4, sizeof(__u64[5]), 1, NULL);
	if (map < 0) {
		r = -errno;
		goto cleanup;
	}
	r = prog = stack_prog(map);
	if (prog < 0)
		goto cleanup;
	r = child_probed(&c, &pfd, &w, fn, JOB_CALL, false, prog);
	if (!r)
		r = child_run(&c, &status);
	if (!r)
		r = read_caller(map, frames);
cleanup:
	if (pfd >= 0)
		close(pfd);
	child_end(&c);
	if (prog >= 0)
		close(prog);
	if (map >= 0)
		close(map);
	return r;
}

int features__caller_at_entry(int (*fn)(int))
{
	long long frames;

	return caller_at_entry(fn, &frames);
}

static void probe_caller_at_entry(struct features *f)
{
	long long frames;
	int r = caller_at_entry(gp_feat_push, &frames);

	if (r < 0)
		set(f, GP_FEAT_CALLER_AT_ENTRY, GP_FEAT_UNKNOWN, "cannot probe: %s", strerror(-r));
	else if (r)
		set(f, GP_FEAT_CALLER_AT_ENTRY, GP_FEAT_PRESENT, "frame 1 is the caller (%lld frames)", frames);
	else
		set(f, GP_FEAT_CALLER_AT_ENTRY, GP_FEAT_MISSING, "frame 1 skips the caller (%lld frames)", frames);
}

/* A return probe in a process whose seccomp filter fails the uretprobe system call. */
static void probe_uretprobe_seccomp(struct features *f)
{
	struct child c = { .pid = -1, .go = -1, .done = -1 };
	struct where w;
	int r, pfd = -1, status = 0;

	r = locate(gp_feat_push, &w);
	if (!r)
		r = child_probed(&c, &pfd, &w, gp_feat_push, JOB_SECCOMP_CALL, true, -1);
	if (!r)
		r = child_run(&c, &status);
	if (pfd >= 0)
		close(pfd);
	child_end(&c);
	if (r == -ECHILD && WIFSIGNALED(status))
		set(f, GP_FEAT_URETPROBE_SECCOMP, GP_FEAT_MISSING,
		    "a test process under seccomp died of signal %d when its return probe fired",
		    WTERMSIG(status));
	else if (r == -ECHILD && WIFEXITED(status) && WEXITSTATUS(status) == 3)
		set(f, GP_FEAT_URETPROBE_SECCOMP, GP_FEAT_UNKNOWN, "cannot install a seccomp filter here");
	else if (r)
		set(f, GP_FEAT_URETPROBE_SECCOMP, GP_FEAT_UNKNOWN, "cannot probe: %s", strerror(-r));
	else
		set(f, GP_FEAT_URETPROBE_SECCOMP, GP_FEAT_PRESENT,
		    "a test process under seccomp survived its return probe");
}
#else
int features__caller_at_entry(int (*fn)(int))
{
	(void)fn;
	return -ENOSYS;
}
#endif /* HAVE_FNS */

/* On x86-64 the uretprobe system call (335) kills any caller but the kernel's own
 * trampoline with SIGILL; kernels without it answer ENOSYS. Asked in a child. */
static void probe_uretprobe_syscall(struct features *f)
{
#if defined(__x86_64__)
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		long r;

		no_core();
		r = syscall(335);

		_exit(r < 0 && errno == ENOSYS ? 38 : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		set(f, GP_FEAT_URETPROBE_SYSCALL, GP_FEAT_UNKNOWN, "cannot fork to probe");
		return;
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGILL)
		set(f, GP_FEAT_URETPROBE_SYSCALL, GP_FEAT_PRESENT, "system call 335 is uretprobe");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 38)
		set(f, GP_FEAT_URETPROBE_SYSCALL, GP_FEAT_MISSING, "system call 335: ENOSYS");
	else
		set(f, GP_FEAT_URETPROBE_SYSCALL, GP_FEAT_UNKNOWN, "system call 335: wait status 0x%x", status);
#else
	set(f, GP_FEAT_URETPROBE_SYSCALL, GP_FEAT_NOT_HERE, "x86-64 only");
#endif
}

static void probe_links(struct features *f)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	const char *force = getenv("GPUPROBE_NO_UPROBE_MULTI");
	int prog, pfd = -1, link = -1, type;
	struct perf_event_attr attr;

	if (attach__has_uprobe_multi())
		set(f, GP_FEAT_LINK_UPROBE_MULTI, GP_FEAT_PRESENT, "BPF_TRACE_UPROBE_MULTI link type known");
	else
		set(f, GP_FEAT_LINK_UPROBE_MULTI, GP_FEAT_MISSING, "%s",
		    force && *force && strcmp(force, "0") ? "GPUPROBE_NO_UPROBE_MULTI is set" :
							   "link type unknown to this kernel");
	/* BPF_LINK_CREATE on a perf event: a software event is enough to ask */
	prog = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, "gp_feat_link", "GPL", insns, 2, NULL);
	if (prog < 0) {
		set(f, GP_FEAT_LINK_PERF_EVENT, GP_FEAT_UNKNOWN, "cannot load a program: %s", strerror(errno));
		return;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 1000000;
	attr.disabled = 1;
	type = 0;
	pfd = (int)syscall(__NR_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0) {
		set(f, GP_FEAT_LINK_PERF_EVENT, GP_FEAT_UNKNOWN, "cannot open a perf event: %s", strerror(errno));
		close(prog);
		return;
	}
	link = bpf_link_create(prog, pfd, BPF_PERF_EVENT, NULL);
	type = errno;
	if (link >= 0)
		set(f, GP_FEAT_LINK_PERF_EVENT, GP_FEAT_PRESENT, "BPF_LINK_CREATE on a perf event");
	else if (type == EINVAL)
		set(f, GP_FEAT_LINK_PERF_EVENT, GP_FEAT_MISSING, "BPF_LINK_CREATE refused a perf event (EINVAL)");
	else
		set(f, GP_FEAT_LINK_PERF_EVENT, GP_FEAT_UNKNOWN, "BPF_LINK_CREATE: %s", strerror(type));
	if (link >= 0)
		close(link);
	close(pfd);
	close(prog);
}

struct features *features__probe(unsigned flags)
{
	struct features *f = calloc(1, sizeof(*f));
	libbpf_print_fn_t old;

	if (!f)
		return NULL;
	for (int i = 0; i < GP_FEAT__COUNT; i++) {
		f->rows[i].name = descs[i].name;
		f->rows[i].kind = descs[i].kind;
		f->rows[i].since = descs[i].since;
		f->rows[i].arch = descs[i].arch;
		f->rows[i].need = descs[i].need;
		f->rows[i].without = descs[i].without;
		f->rows[i].state = GP_FEAT_UNKNOWN;
		snprintf(f->rows[i].detail, sizeof(f->rows[i].detail), "not probed");
	}
	old = libbpf_set_print(quiet_print);
	probe_btf(f);
	probe_bpf(f);
	set(f, GP_FEAT_UPROBE_PMU, pmu_type("uprobe") >= 0 ? GP_FEAT_PRESENT : GP_FEAT_MISSING,
	    "/sys/bus/event_source/devices/uprobe");
	set(f, GP_FEAT_KPROBE_PMU, pmu_type("kprobe") >= 0 ? GP_FEAT_PRESENT : GP_FEAT_MISSING,
	    "/sys/bus/event_source/devices/kprobe");
	probe_links(f);
	probe_uretprobe_syscall(f);
#ifdef HAVE_FNS
	if (flags & FEATURES_LIVE) {
		probe_caller_at_entry(f);
		probe_emulation(f);
		if (!strcmp(machine(), "x86_64"))
			probe_uretprobe_seccomp(f);
	}
#endif
	if (strcmp(machine(), "x86_64")) {
		/* arm64 has no uretprobe system call: its return probes are always safe */
		set(f, GP_FEAT_URETPROBE_SECCOMP, GP_FEAT_NOT_HERE, "no uretprobe system call on %s", machine());
		/* measured here too, but no mainline release has them on arm64 (none up to
		 * 6.18, the newest tried): the x86-64 versions would mislead */
		f->rows[GP_FEAT_ENTRY_PUSH_EMULATED].arch = NULL;
		f->rows[GP_FEAT_ENTRY_PUSH_EMULATED].since = "none";
		f->rows[GP_FEAT_CALLER_AT_ENTRY].arch = NULL;
		f->rows[GP_FEAT_CALLER_AT_ENTRY].since = "none";
	}
	libbpf_set_print(old);
	return f;
}

void features__free(struct features *f)
{
	free(f);
}

const struct gp_feature_row *features__row(const struct features *f, enum gp_feature id)
{
	return f && id >= 0 && id < GP_FEAT__COUNT ? &f->rows[id] : NULL;
}

bool features__has(const struct features *f, enum gp_feature id)
{
	const struct gp_feature_row *r = features__row(f, id);

	return r && r->state == GP_FEAT_PRESENT;
}

int features__check_required(const struct features *f, char *err, size_t len)
{
	for (int i = 0; i < GP_FEAT__COUNT; i++) {
		const struct gp_feature_row *r = &f->rows[i];

		if (r->need != GP_NEED_REQUIRED || r->state != GP_FEAT_MISSING)
			continue;
		snprintf(err, len, "this kernel lacks %s (Linux %s+): %s; seen: %s", r->name, r->since,
			 r->without, r->detail);
		return -ENOTSUP;
	}
	if (len)
		err[0] = '\0';
	return 0;
}

int features__check_kernel(char *err, size_t len)
{
	struct features *f = features__probe(0);
	int r;

	if (!f) {
		snprintf(err, len, "cannot probe the kernel's BPF features: out of memory");
		return -ENOMEM;
	}
	r = features__check_required(f, err, len);
	features__free(f);
	return r;
}

static const char *state_word(enum gp_feat_state s)
{
	switch (s) {
	case GP_FEAT_PRESENT: return "yes";
	case GP_FEAT_MISSING: return "no";
	case GP_FEAT_NOT_HERE: return "n/a";
	default: return "unknown";
	}
}

void features__print(const struct features *f, FILE *out)
{
	struct utsname u;
	char warn[1024];

	if (uname(&u))
		memset(&u, 0, sizeof(u));
	fprintf(out, "kernel %s %s\n", u.release, u.machine);
	fprintf(out, "%-36s %-7s %-6s %-6s %s\n", "feature", "here", "since", "arch", "seen here / without it");
	for (int i = 0; i < GP_FEAT__COUNT; i++) {
		const struct gp_feature_row *r = &f->rows[i];
		const char *effect = r->state == GP_FEAT_MISSING ?
					     (r->need == GP_NEED_REQUIRED ? "REQUIRED: " : "") : NULL;

		fprintf(out, "%-36s %-7s %-6s %-6s %s%s%s%s\n", r->name, state_word(r->state), r->since,
			r->arch ? r->arch : "all", effect ? effect : "", effect ? r->without : r->detail,
			effect ? "; seen: " : "", effect ? r->detail : "");
	}
	if (features__seccomp_warning(f, u.release, u.machine, "/", warn, sizeof(warn)))
		fprintf(out, "warning: %s\n", warn);
}

int features__print_matrix(FILE *out)
{
	struct features *f = features__probe(FEATURES_LIVE);
	char err[512];
	int r;

	if (!f)
		return -ENOMEM;
	features__print(f, out);
	r = features__check_required(f, err, sizeof(err));
	if (r)
		fprintf(out, "error: %s\n", err);
	features__free(f);
	return r;
}

int features__parse_release(const char *release, struct gp_kver *v)
{
	int n = 0;

	memset(v, 0, sizeof(*v));
	if (!release || sscanf(release, "%d.%d%n", &v->major, &v->minor, &n) != 2 || v->major < 0 ||
	    v->minor < 0)
		return -EINVAL;
	if (release[n] == '.' && sscanf(release + n + 1, "%d", &v->patch) != 1)
		v->patch = 0;
	if (v->patch < 0)
		v->patch = 0;
	return 0;
}

bool features__uretprobe_seccomp_hazard(const struct gp_kver *v, const char *mach)
{
	if (!v || !mach || strcmp(mach, "x86_64") || v->major != 6)
		return false;
	return v->minor == 11 || (v->minor == 12 && v->patch < 14) || (v->minor == 13 && v->patch < 3);
}

static bool exists_under(const char *root, const char *rel)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return lstat(path, &st) == 0;
}

static const struct {
	const char *name;
	const char *sockets[3];
	const char *comms[2];
} runtimes[] = {
	{ "docker", { "run/docker.sock", "var/run/docker.sock" }, { "dockerd" } },
	{ "containerd", { "run/containerd/containerd.sock", "var/run/containerd/containerd.sock" },
	  { "containerd" } },
	{ "cri-o", { "run/crio/crio.sock", "var/run/crio/crio.sock" }, { "crio" } },
	{ "podman", { "run/podman/podman.sock", "var/run/podman/podman.sock" }, { "podman", "conmon" } },
};
#define NR_RUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

/* A runtime without its socket where we look (rootless, other paths): its process, by
 * name, among the first 100000 of root's /proc. */
static void runtime_processes(const char *root, bool *found)
{
	char path[4096];
	int scanned = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/proc", root);
	d = opendir(path);
	for (struct dirent *e; d && (e = readdir(d)) && scanned < 100000;) {
		char comm[64] = "", cpath[4096];
		FILE *fp;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		scanned++;
		if (snprintf(cpath, sizeof(cpath), "%s/%s/comm", path, e->d_name) >= (int)sizeof(cpath))
			continue;
		fp = fopen(cpath, "re");
		if (!fp)
			continue;
		if (fgets(comm, sizeof(comm), fp))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(fp);
		for (size_t i = 0; i < NR_RUNTIMES; i++)
			for (int j = 0; j < 2 && runtimes[i].comms[j]; j++)
				if (!strcmp(comm, runtimes[i].comms[j]))
					found[i] = true;
	}
	if (d)
		closedir(d);
}

int features__container_runtimes(const char *root, char *buf, size_t len)
{
	bool found[NR_RUNTIMES] = {};
	int n = 0;
	size_t used = 0;

	for (size_t i = 0; i < NR_RUNTIMES; i++)
		for (int j = 0; j < 3 && runtimes[i].sockets[j]; j++)
			if (exists_under(root, runtimes[i].sockets[j]))
				found[i] = true;
	runtime_processes(root, found);
	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < NR_RUNTIMES; i++) {
		int w;

		if (!found[i])
			continue;
		if (used < len) {
			w = snprintf(buf + used, len - used, "%s%s", n ? ", " : "", runtimes[i].name);
			used = w < 0 ? len : used + (size_t)w;
		}
		n++;
	}
	return n;
}

int features__seccomp_warning(const struct features *f, const char *release, const char *mach,
			      const char *root, char *buf, size_t len)
{
	const struct gp_feature_row *live = features__row(f, GP_FEAT_URETPROBE_SECCOMP);
	struct gp_kver v;
	char rts[128];
	bool in_range = features__parse_release(release, &v) == 0 &&
			features__uretprobe_seccomp_hazard(&v, mach);
	bool died = live && live->state == GP_FEAT_MISSING, safe = live && live->state == GP_FEAT_PRESENT;

	if (len)
		buf[0] = '\0';
	if (!(died || (in_range && !safe)))
		return 0;
	if (features__container_runtimes(root, rts, sizeof(rts)) == 0)
		return 0;
	snprintf(buf, len,
		 "kernel %s %s: a process in a container whose seccomp profile does not allow the uretprobe "
		 "system call (Docker's default profile) is killed when one of gpuprobe's return probes fires%s "
		 "(container runtime here: %s). Remedy: a kernel with \"seccomp: passthrough uretprobe systemcall "
		 "without filtering\" (6.14, 6.13.3, 6.12.14 or later), or allow \"uretprobe\" in the containers' "
		 "seccomp profile, or run the traced containers with --security-opt seccomp=unconfined",
		 release, mach, died ? " (seen here: a test process died)" : "", rts);
	return 1;
}

const char *features__insn_class_name(enum gp_insn_class c)
{
	static const char *const names[GP_INSN__COUNT] = {
		[GP_INSN_PUSH] = "push", [GP_INSN_STP_FP] = "stp-fp", [GP_INSN_ENDBR] = "endbr/bti",
		[GP_INSN_PAC] = "pac", [GP_INSN_NOP] = "nop", [GP_INSN_BRANCH] = "branch",
		[GP_INSN_MOV] = "mov", [GP_INSN_SUB_SP] = "sub-sp", [GP_INSN_OTHER] = "other",
	};

	return c >= 0 && c < GP_INSN__COUNT ? names[c] : "?";
}

static enum gp_insn_class classify_x86(const unsigned char *p, size_t len)
{
	size_t i = 0;
	bool rex_w = false;

	if (len >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		return GP_INSN_ENDBR;
	if (len >= 1 && p[0] >= 0x50 && p[0] <= 0x57)
		return GP_INSN_PUSH;
	if (len >= 2 && p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57)
		return GP_INSN_PUSH;
	if (len >= 1 && p[0] == 0x90)
		return GP_INSN_NOP;
	while (i < len && i < 4 && p[i] == 0x66) /* operand-size prefixes of long nops */
		i++;
	if (i + 2 <= len && p[i] == 0x0f && p[i + 1] == 0x1f)
		return GP_INSN_NOP;
	if (i && i < len && p[i] == 0x90)
		return GP_INSN_NOP;
	if (len >= 1 && (p[0] == 0xe8 || p[0] == 0xe9 || p[0] == 0xeb || (p[0] >= 0x70 && p[0] <= 0x7f)))
		return GP_INSN_BRANCH;
	if (len >= 2 && p[0] == 0x0f && p[1] >= 0x80 && p[1] <= 0x8f)
		return GP_INSN_BRANCH;
	i = 0;
	if (len >= 1 && (p[0] & 0xf0) == 0x40) { /* REX */
		rex_w = p[0] & 8;
		i = 1;
	}
	/* mov r/m64, r64 or r64, r/m64 between registers (mod == 3) */
	if (rex_w && i + 2 <= len && (p[i] == 0x89 || p[i] == 0x8b) && (p[i + 1] & 0xc0) == 0xc0)
		return GP_INSN_MOV;
	/* sub $imm, %rsp: 83 /5 ib or 81 /5 id with rm = rsp */
	if (rex_w && i + 2 <= len && (p[i] == 0x83 || p[i] == 0x81) && p[i + 1] == 0xec)
		return GP_INSN_SUB_SP;
	return GP_INSN_OTHER;
}

static enum gp_insn_class classify_arm64(const unsigned char *p, size_t len)
{
	uint32_t w;

	if (len < 4)
		return GP_INSN_OTHER;
	w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if ((w & 0xffc07fff) == 0xa9807bfd) /* stp x29, x30, [sp, #imm]! */
		return GP_INSN_STP_FP;
	if (w == 0xd503233f || w == 0xd503237f) /* paciasp, pacibsp */
		return GP_INSN_PAC;
	if ((w & 0xffffff3f) == 0xd503241f) /* bti, bti c|j|jc */
		return GP_INSN_ENDBR;
	if (w == 0xd503201f)
		return GP_INSN_NOP;
	if ((w & 0x7c000000) == 0x14000000 ||  /* b, bl */
	    (w & 0xff000010) == 0x54000000 ||  /* b.cond */
	    (w & 0x7e000000) == 0x34000000 ||  /* cbz, cbnz */
	    (w & 0x7e000000) == 0x36000000 ||  /* tbz, tbnz */
	    (w & 0x1f000000) == 0x10000000 ||  /* adr, adrp */
	    (w & 0xff9ffc1f) == 0xd61f0000 ||  /* br, blr */
	    (w & 0xfffffc1f) == 0xd65f0000)    /* ret */
		return GP_INSN_BRANCH;
	if ((w & 0xffffffe0) == 0x910003e0 || (w & 0xffe0ffe0) == 0xaa0003e0) /* mov xd, sp; mov xd, xm */
		return GP_INSN_MOV;
	if ((w & 0xff0003ff) == 0xd10003ff) /* sub sp, sp, #imm */
		return GP_INSN_SUB_SP;
	return GP_INSN_OTHER;
}

enum gp_insn_class features__classify_insn(unsigned mach, const unsigned char *code, size_t len)
{
	if (mach == EM_X86_64)
		return classify_x86(code, len);
	if (mach == EM_AARCH64)
		return classify_arm64(code, len);
	return GP_INSN_OTHER;
}

unsigned features__emulated_mask(const struct features *f)
{
	if (f && f->emulated_measured)
		return f->emulated;
#if defined(__aarch64__)
	return 1U << GP_INSN_BRANCH;
#else
	return 1U << GP_INSN_PUSH | 1U << GP_INSN_NOP | 1U << GP_INSN_BRANCH;
#endif
}

int features__classify_entries(const char *path, const long long *offsets, int n,
			       unsigned emulated_mask, struct gp_entry_counts *out, char *err,
			       size_t len)
{
	unsigned char ehdr[EI_NIDENT + 4];
	struct stat st;
	unsigned mach;
	int fd, r = 0;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		snprintf(err, len, "%s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		r = -EINVAL;
		snprintf(err, len, "%s: not a regular file", path);
		goto cleanup;
	}
	if (pread(fd, ehdr, sizeof(ehdr), 0) != (ssize_t)sizeof(ehdr) || memcmp(ehdr, ELFMAG, SELFMAG) ||
	    ehdr[EI_CLASS] != ELFCLASS64 || ehdr[EI_DATA] != ELFDATA2LSB) {
		r = -ENOEXEC;
		snprintf(err, len, "%s: not a 64-bit little-endian ELF file", path);
		goto cleanup;
	}
	mach = (unsigned)ehdr[EI_NIDENT + 2] | (unsigned)ehdr[EI_NIDENT + 3] << 8; /* e_machine */
	for (int i = 0; i < n; i++) {
		unsigned char code[16];
		enum gp_insn_class c;
		ssize_t got;

		if (offsets[i] < 0)
			continue;
		out->total++;
		got = offsets[i] < st.st_size ? pread(fd, code, sizeof(code), offsets[i]) : -1;
		if (got < 1 || (mach != EM_X86_64 && mach != EM_AARCH64)) {
			out->unreadable++;
			continue;
		}
		c = features__classify_insn(mach, code, (size_t)got);
		out->by_class[c]++;
		if ((emulated_mask >> c) & 1)
			out->emulated++;
		else
			out->stepped++;
	}
cleanup:
	close(fd);
	return r;
}

/* The helpers gpuprobe's programs call and the first mainline release of each (the
 * kernel's uapi bpf.h and bcc's docs/kernel-versions.md): a program refused for calling
 * one the kernel lacks is reported with the release that has it. */
static const struct {
	const char *name, *since;
} helper_since[] = {
	{ "bpf_map_lookup_elem", "3.19" },
	{ "bpf_map_update_elem", "3.19" },
	{ "bpf_map_delete_elem", "3.19" },
	{ "bpf_ktime_get_ns", "4.1" },
	{ "bpf_get_current_pid_tgid", "4.2" },
	{ "bpf_get_current_uid_gid", "4.2" },
	{ "bpf_get_current_comm", "4.2" },
	{ "bpf_get_current_task", "4.8" },
	{ "bpf_get_stack", "4.18" },
	{ "bpf_send_signal", "5.3" },
	{ "bpf_probe_read_user", "5.5" },
	{ "bpf_probe_read_user_str", "5.5" },
	{ "bpf_probe_read_kernel", "5.5" },
	{ "bpf_probe_read_kernel_str", "5.5" },
	{ "bpf_get_current_ancestor_cgroup_id", "5.6" },
	{ "bpf_ringbuf_output", "5.8" },
	{ "bpf_ringbuf_reserve", "5.8" },
	{ "bpf_ringbuf_submit", "5.8" },
	{ "bpf_ringbuf_discard", "5.8" },
	{ "bpf_ringbuf_query", "5.8" },
	{ "bpf_get_current_task_btf", "5.11" },
	{ "bpf_task_storage_get", "5.11" },
	{ "bpf_task_storage_delete", "5.11" },
	{ "bpf_get_attach_cookie", "5.15" },
	{ "bpf_find_vma", "5.17" },
	{ "bpf_loop", "5.17" },
};

const char *features__helper_since(const char *name)
{
	for (size_t i = 0; i < sizeof(helper_since) / sizeof(helper_since[0]); i++)
		if (!strcmp(helper_since[i].name, name))
			return helper_since[i].since;
	return NULL;
}

#define GP_HELPER_NAME(x) "bpf_" #x
static const char *const helper_names[] = { __BPF_FUNC_MAPPER(GP_HELPER_NAME) };

const char *features__helper_name(int id)
{
	return id > 0 && id < (int)(sizeof(helper_names) / sizeof(helper_names[0])) ? helper_names[id] : NULL;
}
